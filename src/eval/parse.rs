//! Test-log parsers: the text between the start and end markers becomes a map from test id to
//! [`TestStatus`], with the sentinel checks, the whole-log fallback, the recorded exit code and
//! the "the suite ran" evidence that grading needs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::script::{
    APPLY_PATCH_FAIL, END_MARKER, EXIT_CODE_PREFIX, INERT_PREFIX, RESET_FAILED, START_MARKER,
    TESTS_ERROR, TESTS_TIMEOUT,
};
use crate::text::literal_regex;

/// The outcome of one test, as SWE-bench names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TestStatus {
    /// The test passed.
    Passed,
    /// An expected failure (counts as a pass in grading).
    #[serde(rename = "XFAIL")]
    XFail,
    /// Skipped.
    Skipped,
    /// The test failed.
    Failed,
    /// The test errored (setup, teardown, collection).
    Error,
}

impl TestStatus {
    /// The SWE-bench spelling: `PASSED`, `FAILED`, `SKIPPED`, `ERROR`, `XFAIL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "PASSED",
            Self::XFail => "XFAIL",
            Self::Skipped => "SKIPPED",
            Self::Failed => "FAILED",
            Self::Error => "ERROR",
        }
    }

    /// Whether grading counts this status as a pass (`PASSED` or `XFAIL`).
    pub fn is_pass(self) -> bool {
        matches!(self, Self::Passed | Self::XFail)
    }

    /// Whether grading counts this status as a failure (`FAILED` or `ERROR`).
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::Error)
    }
}

impl fmt::Display for TestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Test id → status.
pub type StatusMap = BTreeMap<String, TestStatus>;

/// A log parser: log text in, status map out.
pub type LogParser = fn(&str) -> StatusMap;

pub use crate::spec::ParserName;

impl ParserName {
    /// The parsing function.
    pub fn parser(self) -> LogParser {
        match self {
            Self::Pytest => parse_pytest,
            Self::PytestOptions => python::parse_pytest_options,
            Self::PytestV2 => python::parse_pytest_v2,
            Self::Matplotlib => python::parse_matplotlib,
            Self::Seaborn => python::parse_seaborn,
            Self::Django => python::parse_django,
            Self::Sympy => python::parse_sympy,
            Self::Unittest => parse_unittest,
            Self::Cargo => parse_cargo,
            Self::CargoSwebench => rust::parse_cargo_swebench,
            Self::Phpunit => php::parse_phpunit,
            Self::Gotest => go::parse_gotest,
            Self::RspecTransformedJson => ruby::parse_rspec_transformed_json,
            Self::Karma => javascript::parse_karma,
            Self::Ant => java::parse_ant,
            Self::Maven => java::parse_maven,
            Self::Redis => c::parse_redis,
            Self::RubyUnit => ruby::parse_ruby_unit,
            Self::Googletest => c::parse_googletest,
            Self::GradleCustom => java::parse_gradle_custom,
            Self::Jest => javascript::parse_jest,
            Self::JestJson => javascript::parse_jest_json,
            Self::Tap => javascript::parse_tap,
            Self::Jq => c::parse_jq,
            Self::Minitest => ruby::parse_minitest,
            Self::Cucumber => ruby::parse_cucumber,
            Self::MicropythonTest => c::parse_micropython_test,
            Self::Vitest => javascript::parse_vitest,
            Self::Doctest => c::parse_doctest,
        }
    }
}

/// The parser registered under `name` (see [`ParserName::from_name`]).
pub fn parser_by_name(name: &str) -> Option<LogParser> {
    ParserName::from_name(name).map(ParserName::parser)
}

/// Records `status` for `id`. When a test is reported twice (a teardown error after a pass, the
/// same name in two cargo test binaries, or a forged `PASSED` line next to the real `FAILED`
/// one) the worse status wins: ERROR > FAILED > SKIPPED > XFAIL > PASSED. SWE-bench keeps the
/// last line instead, which lets a later forged line override a real failure.
fn record(map: &mut StatusMap, id: &str, status: TestStatus) {
    let id = id.trim();
    if id.is_empty() {
        return;
    }
    map.entry(id.to_owned())
        .and_modify(|existing| *existing = (*existing).max(status))
        .or_insert(status);
}

pub use crate::text::strip_ansi;

/// Lines of `log` with ANSI codes and carriage returns removed.
fn clean_lines(log: &str) -> Vec<String> {
    strip_ansi(log)
        .lines()
        .map(|line| line.trim_end_matches('\r').to_owned())
        .collect()
}

fn pytest_status_word(word: &str) -> Option<TestStatus> {
    match word {
        "PASSED" => Some(TestStatus::Passed),
        "FAILED" => Some(TestStatus::Failed),
        "SKIPPED" => Some(TestStatus::Skipped),
        "ERROR" => Some(TestStatus::Error),
        "XFAIL" => Some(TestStatus::XFail),
        _ => None,
    }
}

/// `PASSED rest` → (Passed, "rest"): a status word, one space, then text.
fn leading_pytest_status(line: &str) -> Option<(TestStatus, &str)> {
    let (word, rest) = line.split_once(' ')?;
    let status = pytest_status_word(word)?;
    let rest = rest.trim_start();
    (!rest.is_empty()).then_some((status, rest))
}

/// libtest's `test <name> ... <outcome>` line.
pub(crate) static CARGO_TEST_LINE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^test (.+?) \.\.\. ?(.*)$"));

/// `cargo test` output (libtest's pretty format), over any number of test binaries and the
/// doc-tests.
///
/// `test <name> ... ok|FAILED|ignored[, reason]` give PASSED, FAILED and SKIPPED (v4 drops
/// `ignored`). Names may contain spaces (doc-tests: `src/lib.rs - add (line 5)`). When a test's
/// own output splits the line (`--nocapture`: `test a ... <output>` … `ok`), the next line that is
/// only an outcome word settles the oldest unsettled test. The `failures:` list at the end of
/// each binary marks its tests FAILED, which catches failures whose outcome line was garbled.
/// Names are not prefixed with their binary, so ids match SWE-bench's.
pub fn parse_cargo(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let test_line = &*CARGO_TEST_LINE;
    let mut pending: Vec<String> = Vec::new();
    let mut in_failure_list = false;
    for line in clean_lines(log) {
        if let Some(captures) = test_line.captures(line.trim_start()) {
            let name = captures[1].to_owned();
            match cargo_outcome(captures[2].trim()) {
                Some(status) => record(&mut map, &name, status),
                None => pending.push(name),
            }
            in_failure_list = false;
        } else if let Some(status) = cargo_outcome(line.trim()) {
            if !pending.is_empty() {
                let name = pending.remove(0);
                record(&mut map, &name, status);
            }
        } else if line.trim_end() == "failures:" {
            in_failure_list = true;
        } else if in_failure_list && line.starts_with("    ") && !line.trim().is_empty() {
            record(&mut map, &line, TestStatus::Failed);
        } else if !line.trim().is_empty() {
            in_failure_list = false;
        }
    }
    map
}

fn cargo_outcome(text: &str) -> Option<TestStatus> {
    match text {
        "ok" => Some(TestStatus::Passed),
        "FAILED" => Some(TestStatus::Failed),
        "ignored" => Some(TestStatus::Skipped),
        _ if text.starts_with("ignored, ") => Some(TestStatus::Skipped),
        _ => None,
    }
}

/// Python `unittest -v` and Django's `runtests.py --verbosity 2`, following SWE-bench's
/// `parse_log_django`: the id is the text before ` ... `, verbatim, so both the Python ≥ 3.11
/// form `test_x (module.Class.test_x)` and the older `test_x (module.Class)` are kept as printed
/// (and a test with a docstring is named by the docstring line, as in SWE-bench's Django lists).
///
/// Outcomes: `ok` → PASSED, `skipped '…'` → SKIPPED, `FAIL` → FAILED, `ERROR` → ERROR,
/// `expected failure` → XFAIL, `unexpected success` → FAILED (unittest fails the run for it).
/// When output interrupts the line (`test_x (m.C) ... <output>` then `ok`), a line that is only
/// an outcome settles it. `FAIL: <id>` / `ERROR: <id>` / `UNEXPECTED SUCCESS: <id>` headers
/// record the whole id (v4 keeps only its first word).
pub fn parse_unittest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut pending: Option<String> = None;
    for raw in clean_lines(log) {
        let line = raw.trim();
        if let Some((name, outcome)) = line.split_once(" ... ") {
            match unittest_outcome(outcome.trim()) {
                Some(status) => {
                    record(&mut map, name, status);
                    pending = None;
                }
                None => pending = Some(name.to_owned()),
            }
        } else if let Some(name) = line.strip_suffix(" ...") {
            pending = Some(name.to_owned());
        } else if let Some((status, name)) = unittest_header(line) {
            record(&mut map, name, status);
        } else if let Some(status) = unittest_outcome(line)
            && let Some(name) = pending.take()
        {
            record(&mut map, &name, status);
        }
    }
    map
}

fn unittest_outcome(text: &str) -> Option<TestStatus> {
    match text {
        "ok" | "OK" => Some(TestStatus::Passed),
        "FAIL" => Some(TestStatus::Failed),
        "ERROR" => Some(TestStatus::Error),
        "expected failure" => Some(TestStatus::XFail),
        "unexpected success" => Some(TestStatus::Failed),
        _ if text == "skipped" || text.starts_with("skipped ") => Some(TestStatus::Skipped),
        _ => None,
    }
}

fn unittest_header(line: &str) -> Option<(TestStatus, &str)> {
    let headers = [
        ("FAIL: ", TestStatus::Failed),
        ("ERROR: ", TestStatus::Error),
        ("UNEXPECTED SUCCESS: ", TestStatus::Failed),
    ];
    headers.iter().find_map(|(prefix, status)| {
        line.strip_prefix(prefix)
            .map(|name| (*status, name))
            .filter(|(_, name)| !name.trim().is_empty())
    })
}

/// Why a log has no gradeable test results. Every reason counts as an evaluation error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRunReason {
    /// The runner appended `>>>>> Tests Timed Out`.
    TimedOut,
    /// The apply chain printed `>>>>> Patch Apply Failed`.
    PatchApplyFailed,
    /// `eval.sh` printed `>>>>> Reset Failed`.
    ResetFailed,
    /// `eval.sh` printed `>>>>> Tests Errored` (the test patch did not apply).
    TestsErrored,
    /// No `>>>>> Start Test Output`: the script stopped before the tests.
    MissingStartMarker,
    /// No `>>>>> End Test Output` after the start marker: the run was cut off.
    MissingEndMarker,
    /// A SWE-bench 1.x log: the environment's install step failed (`>>>>> Init Failed`).
    InstallFailed,
    /// A SWE-bench 1.x log without `>>>>> Applied Patch (pred)`: the prediction was not applied.
    PredictionNotApplied,
}

impl fmt::Display for NotRunReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TimedOut => "tests timed out",
            Self::PatchApplyFailed => "patch apply failed",
            Self::ResetFailed => "could not reset the test files to the base commit",
            Self::TestsErrored => "the test patch did not apply, so the tests did not run",
            Self::MissingStartMarker => "the log has no start-of-tests marker",
            Self::MissingEndMarker => "the log has no end-of-tests marker",
            Self::InstallFailed => "the environment's install step failed",
            Self::PredictionNotApplied => "the log does not show the prediction applied",
        })
    }
}

/// What a gradeable log says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// Test id → status.
    pub status: StatusMap,
    /// The `>>>>> Test Exit Code: N` recorded after the end marker, if any.
    pub exit_code: Option<i32>,
    /// Whether a runner summary with a non-zero count (`3 passed`, `Ran 5 tests`,
    /// `running 4 tests`, …) appears anywhere in the log.
    pub suite_ran: bool,
    /// Whether the slice between the markers gave no results and the whole log was parsed.
    pub used_whole_log: bool,
}

/// The reading of one `test_output.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogReading {
    /// No results can be graded.
    NotRun(NotRunReason),
    /// Results to grade.
    Ran(TestRun),
}

/// Reads a test log the way SWE-bench's `get_logs_eval` does, with two hardenings.
///
/// A failure sentinel anywhere, or a missing marker, means nothing ran. The parsed region runs
/// from the first start marker to the last end marker (v4: first to first), so a test that prints
/// a fake end marker cannot hide the real results after it. If the region yields no results the
/// whole log is parsed (v4/v5 fallback, for runners whose output lands outside the markers). The
/// exit code is the last `>>>>> Test Exit Code: N` after the last end marker.
pub fn read_test_log(log: &str, parser: LogParser) -> LogReading {
    let sentinels = [
        (TESTS_TIMEOUT, NotRunReason::TimedOut),
        (APPLY_PATCH_FAIL, NotRunReason::PatchApplyFailed),
        (RESET_FAILED, NotRunReason::ResetFailed),
        (TESTS_ERROR, NotRunReason::TestsErrored),
    ];
    if let Some((_, reason)) = sentinels.iter().find(|(text, _)| log.contains(text)) {
        return LogReading::NotRun(*reason);
    }
    let Some(start) = log.find(START_MARKER) else {
        return LogReading::NotRun(NotRunReason::MissingStartMarker);
    };
    let body_start = start + START_MARKER.len();
    let end = match log.rfind(END_MARKER) {
        Some(end) if end >= body_start => end,
        _ => return LogReading::NotRun(NotRunReason::MissingEndMarker),
    };
    let mut status = parser(&log[body_start..end]);
    let used_whole_log = status.is_empty();
    if used_whole_log {
        status = parser(log);
    }
    LogReading::Ran(TestRun {
        status,
        exit_code: recorded_exit_code(&log[end..]),
        suite_ran: suite_ran(log),
        used_whole_log,
    })
}

/// The last `>>>>> Test Exit Code: N` in `text`.
pub fn recorded_exit_code(text: &str) -> Option<i32> {
    text.lines()
        .filter_map(|line| {
            let index = line.find(EXIT_CODE_PREFIX)?;
            let digits: String = line[index + EXIT_CODE_PREFIX.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            digits.parse().ok()
        })
        .next_back()
}

/// Evidence that a test runner ran at least one test ([`suite_ran`]).
pub(crate) static SUITE_RAN: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(concat!(
        r"(?m)\b[1-9]\d* (?:passed|failed|errors?|skipped|xfailed|xpassed)\b",
        r"|^Ran [1-9]\d* tests? in ",
        r"|^running [1-9]\d* tests?\s*$",
        r"|Executed [1-9]\d* of \d+",
        r"|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)",
        r"|[1-9]\d* passing",
        r"|Tests:\s+[1-9]\d*",
        r"|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total",
        r"|^# tests [1-9]\d*",
        r"|[1-9]\d* specs?, \d+ failures?",
        r"|': ok$",
    ))
});

/// Whether `log` shows a test runner ran at least one test (v5's `SUITE_RAN`: karma, Jest, TAP,
/// jasmine, mocha, openlayers' `'<case>': ok` lines; plus the pytest, unittest and cargo
/// summaries). Every count must be non-zero: `no tests ran`, `Ran 0 tests`
/// and `running 0 tests` are not evidence.
/// Lines written through `eval.sh`'s inert filter (the header, the reinstall) are not evidence.
pub fn suite_ran(log: &str) -> bool {
    let regex = &*SUITE_RAN;
    strip_ansi(log)
        .lines()
        .filter(|line| !line.starts_with(INERT_PREFIX))
        .any(|line| regex.is_match(line))
}

mod c;
mod go;
mod java;
mod javascript;
mod php;
mod python;
mod ruby;
mod rust;
pub mod summary;

pub use c::{parse_doctest, parse_googletest, parse_jq, parse_micropython_test, parse_redis};
pub use go::parse_gotest;
pub use java::{parse_ant, parse_gradle_custom, parse_maven};
pub use javascript::{parse_jest, parse_jest_json, parse_karma, parse_tap, parse_vitest};
pub use php::parse_phpunit;
pub use python::{
    parse_django, parse_matplotlib, parse_pytest, parse_pytest_options, parse_pytest_v2,
    parse_seaborn, parse_sympy,
};
pub use ruby::{parse_cucumber, parse_minitest, parse_rspec_transformed_json, parse_ruby_unit};
pub use rust::parse_cargo_swebench;

#[cfg(test)]
mod harness_tests;
#[cfg(test)]
mod tests;
