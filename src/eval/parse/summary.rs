//! The test runner's own summary of a run, set against the result lines the parsers read: the
//! check that output imitating a runner (extra `PASSED` or `test x ... ok` lines, a result line
//! printed by the code under test) does not go unnoticed.
//!
//! Both sides count lines, not distinct ids, since the runner counts every report it prints
//! (a passed test with a teardown error is `1 passed, 1 error` in pytest, two lines with one id).
//! What is compared depends on the runner:
//! - pytest (every pytest parser): `PASSED` and `FAILED` lines from the last `short test summary
//!   info` header on against the counts of the last `N passed, M failed … in 0.12s` line (what
//!   tests print in their captured output comes before the header; [`pytest_summary_section`]);
//! - cargo: `test x ... ok` and `... FAILED` lines against the sum of every binary's
//!   `test result: … N passed; M failed;`;
//! - unittest and Django: the tests started (every `… ... ` line; a test with failing subtests
//!   never prints its outcome, but it did start) against `Ran N tests`, and the `FAIL:` and
//!   `ERROR:` headers against `FAILED (failures=…, errors=…)`, which count each failed subtest;
//! - sympy: `test_x ok` and `test_x F`/`X` lines against `tests finished: N passed, M failed`
//!   (`expected to fail but passed` counts as failed, as the parser reads `X`).

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use super::python::strip_file_verdict;
use super::{
    CARGO_TEST_LINE, ParserName, TestStatus, cargo_outcome, clean_lines, leading_pytest_status,
};
use crate::eval::script::{END_MARKER, START_MARKER};
use crate::text::literal_regex;

/// Counts of one log, by what they count (`passed`, `failed`, `ran`, …), in a fixed order per
/// runner, so that two tallies of the same runner compare field by field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally(pub Vec<(&'static str, usize)>);

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(what, count)| format!("{count} {what}"))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// The text between the first start marker and the last end marker, as
/// [`super::read_test_log`] slices it; `None` when a marker is missing.
pub fn test_region(log: &str) -> Option<&str> {
    let start = log.find(START_MARKER)? + START_MARKER.len();
    let end = log.rfind(END_MARKER)?;
    (end >= start).then(|| &log[start..end])
}

/// What the runner's own summary in `region` says, in the shape of [`line_tally`]; `None` when
/// `region` has no summary of that runner, and for the parsers of the Multilingual records other
/// than SWE-bench's cargo (the same runner as aci's), whose runners' summaries are not compared
/// yet.
pub fn runner_tally(region: &str, parser: ParserName) -> Option<Tally> {
    let lines = clean_lines(region);
    match parser {
        ParserName::Cargo | ParserName::CargoSwebench => cargo_summary(&lines),
        ParserName::Unittest | ParserName::Django => unittest_summary(&lines),
        ParserName::Sympy => sympy_summary(&lines),
        ParserName::Pytest
        | ParserName::PytestOptions
        | ParserName::PytestV2
        | ParserName::Matplotlib
        | ParserName::Seaborn => pytest_summary(&lines),
        _ => None,
    }
}

/// Whether [`runner_tally`] reads `parser`'s runner: aci's Python runners and cargo. The other
/// parsers of the Multilingual records have no summary compared yet, so a log of theirs without
/// one is not held against the run.
pub fn compares_summary(parser: ParserName) -> bool {
    parser.is_pytest()
        || matches!(
            parser,
            ParserName::Cargo
                | ParserName::CargoSwebench
                | ParserName::Unittest
                | ParserName::Django
                | ParserName::Sympy
        )
}

/// The result lines of `region`, counted as [`runner_tally`] counts them (nothing for the
/// parsers [`runner_tally`] has no summary for).
pub fn line_tally(region: &str, parser: ParserName) -> Tally {
    let lines = clean_lines(region);
    match parser {
        ParserName::Cargo | ParserName::CargoSwebench => cargo_lines(&lines),
        ParserName::Unittest | ParserName::Django => unittest_lines(&lines),
        ParserName::Sympy => sympy_lines(&lines),
        ParserName::Pytest
        | ParserName::PytestOptions
        | ParserName::PytestV2
        | ParserName::Matplotlib
        | ParserName::Seaborn => pytest_lines(&lines),
        _ => Tally(Vec::new()),
    }
}

fn passed_failed(passed: usize, failed: usize) -> Tally {
    Tally(vec![("passed", passed), ("failed", failed)])
}

pub(crate) static PYTEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    // pytest 5.3 and later end the line with `in 1.73s`, every release before with `in 1.73 seconds`.
    literal_regex(
        r"^=*\s*(\d+ [a-z]+(?:, \d+ [a-z]+)*) in \d+(?:\.\d+)?(?:s| seconds)(?: \([0-9:.]+\))?\s*=*$",
    )
});

pub(crate) static COUNT: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"(\d+) ([a-z][a-z ]*[a-z])"));

/// `word → count` for `N word, M other` text.
fn counts(text: &str) -> Vec<(String, usize)> {
    let regex = &*COUNT;
    text.split(',')
        .filter_map(|part| {
            let captures = regex.captures(part.trim())?;
            Some((captures[2].to_owned(), captures[1].parse().ok()?))
        })
        .collect()
}

fn count_of(counts: &[(String, usize)], word: &str) -> usize {
    counts
        .iter()
        .filter(|(what, _)| what == word)
        .map(|(_, count)| count)
        .sum()
}

fn pytest_summary(lines: &[String]) -> Option<Tally> {
    let regex = &*PYTEST_SUMMARY;
    let line = lines
        .iter()
        .rev()
        .find_map(|line| regex.captures(line.trim()))?;
    let found = counts(&line[1]);
    Some(passed_failed(
        count_of(&found, "passed"),
        count_of(&found, "failed"),
    ))
}

/// The header pytest prints above its short test summary (`-rA`).
const PYTEST_SHORT_SUMMARY: &str = " short test summary info ";

/// The part of `region` from pytest's last `short test summary info` header on (all of it
/// without one): the runner's own account of every test, where the `PASSED`/`FAILED` lines that
/// tests print in their captured output (pytest's own suite runs pytest inside its tests) are
/// not.
pub fn pytest_summary_section(region: &str) -> &str {
    region
        .rfind(PYTEST_SHORT_SUMMARY)
        .map_or(region, |index| &region[index..])
}

fn pytest_lines(lines: &[String]) -> Tally {
    let (mut passed, mut failed) = (0, 0);
    let start = lines
        .iter()
        .rposition(|line| line.contains(PYTEST_SHORT_SUMMARY))
        .unwrap_or(0);
    for line in &lines[start..] {
        match leading_pytest_status(line) {
            Some((TestStatus::Passed, _)) => passed += 1,
            // pytest before 5 lists a module that failed to collect as `FAILED path.py - why`
            // and counts it as an error in its final line, not as a failed test.
            Some((TestStatus::Failed, rest)) if !collection_failure(rest) => failed += 1,
            _ => {}
        }
    }
    passed_failed(passed, failed)
}

/// Whether a short-summary entry names a file rather than a test (`testing/test_x.py - Error`).
fn collection_failure(rest: &str) -> bool {
    let id = rest.split(" - ").next().unwrap_or(rest).trim_end();
    !id.contains("::") && id.ends_with(".py")
}

pub(crate) static CARGO_RESULT: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; "));

fn cargo_summary(lines: &[String]) -> Option<Tally> {
    let regex = &*CARGO_RESULT;
    let mut found = None;
    for line in lines {
        if let Some(captures) = regex.captures(line.trim()) {
            let (passed, failed) = found.unwrap_or((0, 0));
            let count = |index: usize| captures[index].parse::<usize>().unwrap_or(0);
            found = Some((passed + count(1), failed + count(2)));
        }
    }
    found.map(|(passed, failed)| passed_failed(passed, failed))
}

/// The lines `test x ... ok|FAILED` (and, as in [`super::parse_cargo`], a test whose line its
/// own output split, settled by the next line that is only an outcome).
fn cargo_lines(lines: &[String]) -> Tally {
    let (mut passed, mut failed) = (0, 0);
    let test_line = &*CARGO_TEST_LINE;
    let mut pending = 0usize;
    let mut add = |status| match status {
        TestStatus::Passed => passed += 1,
        TestStatus::Failed => failed += 1,
        _ => {}
    };
    for line in lines {
        if let Some(captures) = test_line.captures(line.trim_start()) {
            match cargo_outcome(captures[2].trim()) {
                Some(status) => add(status),
                None => pending += 1,
            }
        } else if let Some(status) = cargo_outcome(line.trim())
            && pending > 0
        {
            pending -= 1;
            add(status);
        }
    }
    passed_failed(passed, failed)
}

pub(crate) static UNITTEST_RAN: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^Ran (\d+) tests? in "));

fn unittest_summary(lines: &[String]) -> Option<Tally> {
    let regex = &*UNITTEST_RAN;
    let (index, ran) = lines.iter().enumerate().rev().find_map(|(index, line)| {
        let captures = regex.captures(line.trim())?;
        Some((index, captures[1].parse::<usize>().ok()?))
    })?;
    let verdict = lines[index + 1..]
        .iter()
        .map(|line| line.trim())
        .find(|line| line.starts_with("OK") || line.starts_with("FAILED"))?;
    let details = verdict
        .split_once('(')
        .map_or("", |(_, rest)| rest.trim_end_matches(')'));
    let number = |key: &str| {
        details
            .split(',')
            .filter_map(|part| part.trim().split_once('='))
            .filter(|(name, _)| *name == key)
            .filter_map(|(_, value)| value.parse::<usize>().ok())
            .sum::<usize>()
    };
    Some(Tally(vec![
        ("ran", ran),
        ("failed or errored", number("failures") + number("errors")),
    ]))
}

/// Tests started (each ` ... `, and a line ending in ` ...`, follows the name of the test being
/// run) and the `FAIL:`/`ERROR:` headers.
fn unittest_lines(lines: &[String]) -> Tally {
    let mut started = 0;
    let mut failed = 0;
    for line in lines {
        let line = line.trim();
        if line.starts_with("FAIL: ") || line.starts_with("ERROR: ") {
            failed += 1;
        } else {
            // Django's runner can print a test with failing subtests and the next one on one
            // line (`test_a (m.C) ... test_b (m.C) ... ok`): each ` ... ` starts a test.
            started += line.matches(" ... ").count() + usize::from(line.ends_with(" ..."));
        }
    }
    Tally(vec![("ran", started), ("failed or errored", failed)])
}

pub(crate) static SYMPY_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"tests finished: (.*?),? in \d+(?:\.\d+)? seconds"));

fn sympy_summary(lines: &[String]) -> Option<Tally> {
    let regex = &*SYMPY_SUMMARY;
    let line = lines.iter().rev().find_map(|line| regex.captures(line))?;
    let found = counts(&line[1]);
    Some(passed_failed(
        count_of(&found, "passed"),
        count_of(&found, "failed") + count_of(&found, "expected to fail but passed"),
    ))
}

fn sympy_lines(lines: &[String]) -> Tally {
    let (mut passed, mut failed) = (0, 0);
    for line in lines {
        let line = line.trim();
        if !line.starts_with("test_") {
            continue;
        }
        let line = strip_file_verdict(line);
        if line.ends_with(" ok") {
            passed += 1;
        } else if line.ends_with(" F") || line.ends_with(" X") {
            failed += 1;
        }
    }
    passed_failed(passed, failed)
}

#[cfg(test)]
mod tests;
