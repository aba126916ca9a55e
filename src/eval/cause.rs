//! Why an evaluation did not resolve: one [`Cause`] per unresolved or errored instance, read from
//! what the grader already knows ([`Evidence`]: the apply chain's output, the build error, the
//! test log, the deadline, the untrusted reasons and the FAIL_TO_PASS / PASS_TO_PASS outcome).
//!
//! A cause is the environment's or the harness's (`infrastructure`: the environment did not
//! build, the tests could not reach the network, a module or a command the tests need is
//! missing, the evaluation itself failed) or the patch's (it did not apply, the tests timed out,
//! the run could not be trusted, the tests did not run, tests failed on their assertions). The
//! run summary counts both kinds apart and gives the resolve rate with and without the
//! infrastructure failures.
//!
//! [`classify`] is pure: it reads text and lists, and starts nothing.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::canary::UNTRUSTED_TEST_RUN;
use super::grade::TestsStatus;
use super::parse::summary::test_region;
use super::parse::{NotRunReason, recorded_exit_code};
use super::script::{APPLY_PATCH_FAIL, END_MARKER};
use crate::text::escape_controls;
use crate::text::pattern::literal_regex;

/// The kind of a [`Cause`], as `report.json` and the summary's `causes` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// The patch did not apply (or was refused: it writes inside `.git`).
    PatchNotApplied,
    /// The instance's environment could not be built.
    EnvironmentNotBuilt,
    /// The tests needed a network the grading sandbox does not have.
    Network,
    /// A module the tests import is missing.
    MissingModule,
    /// A command the tests run is missing.
    MissingCommand,
    /// The tests passed their deadline.
    TimedOut,
    /// The run's results were not believed (canaries, tripwire, the exit-code guard, a patch
    /// that reaches into the test framework).
    Untrusted,
    /// The tests did not run, or crashed before reporting (a collection error, no test output).
    TestsDidNotRun,
    /// Tests ran and failed on their own terms: the patch's failure.
    TestsFailed,
    /// The evaluation itself failed (a sandbox died, a file could not be written, no plan).
    EvaluationError,
}

impl CauseKind {
    /// Every kind, in the order of the docs.
    pub const ALL: [Self; 10] = [
        Self::PatchNotApplied,
        Self::EnvironmentNotBuilt,
        Self::Network,
        Self::MissingModule,
        Self::MissingCommand,
        Self::TimedOut,
        Self::Untrusted,
        Self::TestsDidNotRun,
        Self::TestsFailed,
        Self::EvaluationError,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PatchNotApplied => "patch_not_applied",
            Self::EnvironmentNotBuilt => "environment_not_built",
            Self::Network => "network",
            Self::MissingModule => "missing_module",
            Self::MissingCommand => "missing_command",
            Self::TimedOut => "timed_out",
            Self::Untrusted => "untrusted",
            Self::TestsDidNotRun => "tests_did_not_run",
            Self::TestsFailed => "tests_failed",
            Self::EvaluationError => "evaluation_error",
        }
    }

    /// Whether a cause of this kind is the environment's or the harness's rather than the
    /// patch's (a missing module is the patch's when it is the project's own: see
    /// `missing_module`).
    pub fn is_infrastructure(self) -> bool {
        matches!(
            self,
            Self::EnvironmentNotBuilt
                | Self::Network
                | Self::MissingModule
                | Self::MissingCommand
                | Self::EvaluationError
        )
    }
}

impl fmt::Display for CauseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one evaluation did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// What kind of failure.
    pub kind: CauseKind,
    /// The environment's or the harness's failure, not the patch's: left out of
    /// `resolve_rate_without_infrastructure`'s denominator.
    pub infrastructure: bool,
    /// One line that says why.
    pub summary: String,
    /// What the cause names: the hosts, the module or command, the failing tests, the files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The lines of the log or error it was read from (a few, never the whole log).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl Cause {
    fn new(kind: CauseKind, summary: String) -> Self {
        Self {
            kind,
            infrastructure: kind.is_infrastructure(),
            summary,
            names: Vec::new(),
            detail: String::new(),
        }
    }

    /// The SWE-bench harness's own word that an evaluation failed for its environment
    /// (`infra_failure` in its `report.json`, read by `--from-logs`).
    pub fn harness_infra_failure(reason: &str) -> Self {
        let mut cause = Self::new(
            CauseKind::EvaluationError,
            format!("the SWE-bench harness flagged an infrastructure failure ({reason})"),
        );
        cause.infrastructure = true;
        cause
    }

    fn with(mut self, names: Vec<String>, detail: String) -> Self {
        self.names = names;
        self.detail = detail;
        self
    }
}

/// What the grader knows about one evaluation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// The evaluation resolved: there is no cause.
    pub resolved: bool,
    /// The environment could not be built: the build error (which names the step, then its
    /// last lines).
    pub build_error: Option<&'a str>,
    /// Why nothing could be graded, when the evaluation stopped before a gradeable log (the
    /// report's `error`).
    pub error: Option<&'a str>,
    /// Why the log has no gradeable results, when it has none.
    pub not_run: Option<NotRunReason>,
    /// The apply chain's output (empty when the log carries it, as a 1.x harness log does).
    pub apply_output: &'a str,
    /// The test log.
    pub test_log: &'a str,
    /// The tests passed their deadline.
    pub timed_out: bool,
    /// Why the results were not believed.
    pub untrusted_reason: Option<&'a str>,
    /// The FAIL_TO_PASS / PASS_TO_PASS outcome, when tests were graded.
    pub tests_status: Option<&'a TestsStatus>,
    /// The files the patch changes (a missing module the patch has is its own failure).
    pub patch_files: &'a [String],
    /// The grading sandboxes had a network (`--network`).
    pub network: bool,
}

/// The switch that gives grading a network, named in a network cause.
pub const NETWORK_SWITCH: &str = "--network";

/// The guard's reason for a log with nothing in it ([`super::grade::grade`]).
const NOTHING_RAN: &str = "the log has no test results";

/// How many names a summary lists before `…`.
const LISTED: usize = 3;

/// How many lines a detail keeps.
const DETAIL_LINES: usize = 12;

/// Why the evaluation did not resolve; `None` when it resolved.
pub fn classify(evidence: &Evidence<'_>) -> Option<Cause> {
    if evidence.resolved {
        return None;
    }
    if let Some(error) = evidence.build_error {
        return Some(environment_not_built(error));
    }
    if let Some(error) = evidence.error
        && let Some(cause) = refused(error)
    {
        return Some(cause);
    }
    let apply_failed = evidence.not_run.is_some_and(|reason| {
        matches!(
            reason,
            NotRunReason::PatchApplyFailed | NotRunReason::PredictionNotApplied
        )
    }) || evidence.apply_output.contains(APPLY_PATCH_FAIL);
    if apply_failed {
        let output = if evidence.apply_output.is_empty() {
            evidence.test_log
        } else {
            evidence.apply_output
        };
        return Some(patch_not_applied(output));
    }
    if evidence.not_run == Some(NotRunReason::InstallFailed) {
        return Some(environment_not_built(&last_lines(evidence.test_log)));
    }
    if evidence.timed_out || evidence.not_run == Some(NotRunReason::TimedOut) {
        return Some(Cause::new(
            CauseKind::TimedOut,
            "the tests passed their deadline (--timeout)".to_owned(),
        ));
    }
    if let Some(cause) = test_command_missing(evidence.test_log) {
        return Some(cause);
    }
    let failures = failure_text(evidence.test_log);
    if let Some(cause) = network(&failures, evidence.network) {
        return Some(cause);
    }
    if let Some(cause) = missing_module(&failures, evidence.patch_files) {
        return Some(cause);
    }
    if let Some(cause) = missing_command(&failures) {
        return Some(cause);
    }
    if let Some(reason) = evidence.untrusted_reason
        && !reason.starts_with(NOTHING_RAN)
    {
        if reason.ends_with(NO_CANARY_RESULT)
            && nothing_passed(evidence.tests_status)
            && let Some(cause) = runner_said_only(evidence.test_log)
        {
            return Some(cause);
        }
        return Some(Cause::new(CauseKind::Untrusted, reason.to_owned()));
    }
    if let Some(reason) = evidence.not_run {
        return Some(not_run(reason, evidence.test_log));
    }
    if let Some(error) = evidence.error {
        return Some(evaluation_error(error));
    }
    if evidence.untrusted_reason.is_some() {
        return Some(tests_did_not_run(
            "the log has no test results and no sign that the test suite ran",
            evidence.test_log,
        ));
    }
    Some(tests_failed(evidence.tests_status))
}

/// How the canary check ends its reason when a canary has no result at all.
const NO_CANARY_RESULT: &str = "has no result in the log";

/// No graded test passed (or none was graded).
fn nothing_passed(status: Option<&TestsStatus>) -> bool {
    status.is_none_or(|status| {
        status.fail_to_pass.success.is_empty() && status.pass_to_pass.success.is_empty()
    })
}

/// The runner stopped before any test, saying why in a few lines (pytest's `ERROR: tox.ini:141:
/// requires pytest-2.0, actual pytest-0.1.dev1`, a usage error): the tests did not run, in the
/// runner's words. `None` when the test region has more to say than a few lines besides the
/// shell's trace.
fn runner_said_only(log: &str) -> Option<Cause> {
    let region = test_region(log)?;
    // The region starts right after the marker, on the rest of the marker's own line.
    let said: Vec<&str> = region
        .lines()
        .skip(1)
        .map(str::trim_end)
        .filter(|line| !line.trim().is_empty() && !line.starts_with('+'))
        .collect();
    let first = said.first()?;
    if said.len() > 3 {
        return None;
    }
    let summary = format!(
        "the tests did not run: the test runner said only: {}",
        first.trim()
    );
    Some(Cause::new(CauseKind::TestsDidNotRun, summary).with(Vec::new(), said.join("\n")))
}

/// The environment's build error: its first line says the step; the detail keeps its last lines.
fn environment_not_built(error: &str) -> Cause {
    let first = error.lines().find(|line| !line.trim().is_empty());
    let summary = format!(
        "the environment did not build: {}",
        first.unwrap_or("no error text").trim()
    );
    Cause::new(CauseKind::EnvironmentNotBuilt, summary).with(Vec::new(), last_lines(error))
}

/// A patch the run refused before grading it.
fn refused(error: &str) -> Option<Cause> {
    if error.starts_with(UNTRUSTED_TEST_RUN) {
        return Some(Cause::new(CauseKind::Untrusted, error.to_owned()));
    }
    error
        .starts_with("the patch writes inside .git")
        .then(|| Cause::new(CauseKind::PatchNotApplied, error.to_owned()))
}

/// `git apply` and `patch` error lines: which file and which hunk did not apply.
static APPLY_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?m)^(?:error: (?:patch failed: (?P<failed>\S+)|(?P<file>[^:\n]+): (?:patch does not apply|No such file or directory|does not exist in index|already exists in working directory)|corrupt patch at line \d+|unrecognized input|No valid patches in input.*)|Hunk #\d+ FAILED at \d+.*|can't find file to patch at input line \d+|patch: \*\*\*\* .*)$",
    )
});

fn patch_not_applied(output: &str) -> Cause {
    let mut lines: Vec<&str> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    for found in APPLY_ERROR.captures_iter(output) {
        let line = found.get(0).map_or("", |m| m.as_str()).trim();
        if !lines.contains(&line) {
            lines.push(line);
        }
        let file = found
            .name("failed")
            .or_else(|| found.name("file"))
            .map(|m| m.as_str().trim().to_owned());
        if let Some(file) = file
            && !files.contains(&file)
        {
            files.push(file);
        }
    }
    let summary = if lines.is_empty() {
        "the patch did not apply (git apply and patch both refused it)".to_owned()
    } else {
        format!("the patch did not apply: {}", listed(&lines, LISTED))
    };
    let detail = lines.iter().take(DETAIL_LINES).copied().collect::<Vec<_>>();
    Cause::new(CauseKind::PatchNotApplied, summary).with(files, detail.join("\n"))
}

/// What a failed connection prints, in the languages the harness grades.
const NETWORK_SIGNS: [&str; 17] = [
    "Failed to establish a new connection",
    "Name or service not known",
    "Temporary failure in name resolution",
    "nodename nor servname provided",
    "getaddrinfo failed",
    "getaddrinfo ENOTFOUND",
    "getaddrinfo EAI_AGAIN",
    "urlopen error",
    "Could not resolve host",
    "Network is unreachable",
    "No route to host",
    "NewConnectionError",
    "Max retries exceeded with url",
    "socket.gaierror",
    "java.net.UnknownHostException",
    "dial tcp: lookup",
    "Could not resolve hostname",
];

/// The host a connection error names.
static HOST: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r#"host='(?P<a>[^']+)'|Could not resolve host:? (?P<b>[^\s'"]+)|getaddrinfo (?:ENOTFOUND|EAI_AGAIN) (?P<c>[^\s'"]+)|dial tcp: lookup (?P<d>[^\s:]+)|UnknownHostException: (?P<e>[^\s:'"]+)|Failed to connect to (?P<f>[^\s:]+) port|[a-z][a-z0-9+.-]*://(?P<g>[A-Za-z0-9.-]+\.[A-Za-z]{2,}|\d+\.\d+\.\d+\.\d+)"#,
    )
});

/// A URL's host, a name with a dot or an IPv4 address.
static URL: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"\b(?:https?|ftp|wss?)://(?:[^@/\s]+@)?(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)",
    )
});

fn network(failures: &str, with_network: bool) -> Option<Cause> {
    let lines: Vec<&str> = failures
        .lines()
        .filter(|line| NETWORK_SIGNS.iter().any(|sign| line.contains(sign)))
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut hosts = BTreeSet::new();
    for line in &lines {
        for found in HOST.captures_iter(line) {
            let host = ["a", "b", "c", "d", "e", "f", "g"]
                .iter()
                .find_map(|name| found.name(name));
            if let Some(host) = host {
                hosts.insert(host.as_str().trim_end_matches('.').to_owned());
            }
        }
    }
    if hosts.is_empty() {
        // urllib and sockets name no host in the error; the failing source line often has the
        // URL.
        for found in URL.captures_iter(failures) {
            hosts.insert(found["host"].trim_end_matches('.').to_owned());
        }
    }
    let hosts: Vec<String> = hosts.into_iter().collect();
    let named = if hosts.is_empty() {
        "hosts not named in the log".to_owned()
    } else {
        listed(&hosts, hosts.len())
    };
    let summary = if with_network {
        format!("the tests could not reach the network they need ({named}), even with a network")
    } else {
        format!(
            "the tests could not reach the network they need ({named}): grading runs without a \
             network; {NETWORK_SWITCH} gives it one"
        )
    };
    let detail = distinct_lines(&lines);
    Some(Cause::new(CauseKind::Network, summary).with(hosts, detail))
}

/// `No module named 'x'`, as Python 3 and Python 2 print it.
static NO_MODULE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?:ModuleNotFoundError|ImportError): No module named '?(?P<module>[A-Za-z_][\w.]*)'?",
    )
});

fn missing_module(failures: &str, patch_files: &[String]) -> Option<Cause> {
    let mut modules: Vec<String> = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for line in failures.lines() {
        if let Some(found) = NO_MODULE.captures(line) {
            let module = found["module"].to_owned();
            if !modules.contains(&module) {
                modules.push(module);
            }
            lines.push(line);
        }
    }
    let first = modules.first()?;
    let top = first.split('.').next().unwrap_or(first);
    // A module the patch itself adds or moves is the patch's failure, not the environment's;
    // so is a missing submodule of a package that imports (Python names the parent only when
    // it is missing too): the project's own code, which a fix was to add.
    let submodule = first.contains('.');
    let own = submodule
        || patch_files.iter().any(|path| {
            path.split('/')
                .any(|part| part == top || part.strip_suffix(".py") == Some(top))
        });
    let summary = format!(
        "a module the tests import is missing: {} (No module named '{first}')",
        listed(&modules, LISTED)
    );
    let mut cause =
        Cause::new(CauseKind::MissingModule, summary).with(modules, distinct_lines(&lines));
    if own {
        cause.infrastructure = false;
        cause.summary.push_str(if submodule {
            "; its package imports, so the module is the project's own and counts as the patch's"
        } else {
            "; the patch changes that package, so it counts as the patch's"
        });
    }
    Some(cause)
}

/// What a shell prints when it cannot start a command: `x: command not found` (bash), `sh: 1: x:
/// not found` (dash); for a command given as a path that is not there, `tests.sh: line 9:
/// bin/test: No such file or directory` (bash in a script) or `bash: bin/test: No such file or
/// directory`; and `/usr/bin/env: 'python': No such file or directory` for a script whose `#!`
/// names a missing interpreter. Only the shell's own line shapes: `cat: a/b: No such file or
/// directory` names a file, not a command.
static NO_COMMAND: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?m)(?:^|: )(?P<command>[\w./+-]+): command not found|^(?:/bin/)?(?:ba|da)?sh: (?:\d+: |line \d+: )?(?P<dash>[\w./+-]+): not found|^(?:[^\s:]+: line \d+|(?:/bin/|/usr/bin/)?bash(?:: line \d+)?): (?P<path>[\w.+-]*/[\w./+-]*): No such file or directory\s*$|^(?:/usr)?/bin/env: ['\x{2018}](?P<env>[\w./+-]+)['\x{2019}]: No such file or directory\s*$",
    )
});

fn missing_command(failures: &str) -> Option<Cause> {
    let mut commands: Vec<String> = Vec::new();
    let mut first_reason = "";
    let mut lines: Vec<&str> = Vec::new();
    for line in failures.lines() {
        let Some(found) = NO_COMMAND.captures(line) else {
            continue;
        };
        let (command, reason) = if let Some(path) = found.name("path") {
            (path.as_str(), "No such file or directory")
        } else if let Some(env) = found.name("env") {
            (env.as_str(), "No such file or directory")
        } else {
            let command = found.name("command").or_else(|| found.name("dash"));
            (command.map_or("", |m| m.as_str()), "command not found")
        };
        if commands.is_empty() {
            first_reason = reason;
        }
        if !commands.iter().any(|known| known == command) {
            commands.push(command.to_owned());
        }
        lines.push(line);
    }
    let first = commands.first()?;
    // A relative path is resolved in the repository, where the test command runs.
    let in_repository = if first.contains('/') && !first.starts_with('/') {
        format!("; the repository has no {first}")
    } else {
        String::new()
    };
    let summary = format!(
        "a command the tests run is missing: {} ({first}: {first_reason}{in_repository})",
        listed(&commands, LISTED)
    );
    Some(Cause::new(CauseKind::MissingCommand, summary).with(commands, distinct_lines(&lines)))
}

/// The test command itself could not start: it exited 127 (the shell's status for a command it
/// cannot find) and the test region has the shell's line for it. Nothing ran, so whatever else
/// the log shows (a reinstall that could not reach the index, say) did not stop the tests.
fn test_command_missing(log: &str) -> Option<Cause> {
    let region = test_region(log)?;
    let exit_code = log
        .rfind(END_MARKER)
        .and_then(|index| recorded_exit_code(&log[index..]))?;
    if exit_code != 127 {
        return None;
    }
    missing_command(region)
}

fn not_run(reason: NotRunReason, log: &str) -> Cause {
    if reason == NotRunReason::ResetFailed {
        return Cause::new(
            CauseKind::EvaluationError,
            format!("the tests did not run: {reason}"),
        )
        .with(Vec::new(), last_lines(log));
    }
    tests_did_not_run(&reason.to_string(), log)
}

/// A collection error, or the last lines of a log that reported nothing.
fn tests_did_not_run(reason: &str, log: &str) -> Cause {
    let collection = log
        .lines()
        .find(|line| line.contains("ERROR collecting") || line.contains("error during collection"))
        .or_else(|| {
            log.lines()
                .find(|line| line.contains("errors during collection"))
        });
    let summary = match collection {
        Some(line) => format!(
            "the tests did not run: a collection error ({})",
            line.trim_matches(|c: char| c == '=' || c == '_' || c.is_whitespace())
        ),
        None => format!("the tests did not run: {reason}"),
    };
    Cause::new(CauseKind::TestsDidNotRun, summary).with(Vec::new(), last_lines(log))
}

fn evaluation_error(error: &str) -> Cause {
    let first = error.lines().next().unwrap_or_default();
    Cause::new(
        CauseKind::EvaluationError,
        format!("the evaluation failed: {first}"),
    )
    .with(Vec::new(), last_lines(error))
}

/// The patch's failure: which graded tests failed.
fn tests_failed(status: Option<&TestsStatus>) -> Cause {
    let Some(status) = status else {
        return Cause::new(CauseKind::TestsFailed, "tests failed".to_owned());
    };
    let f2p = &status.fail_to_pass;
    let p2p = &status.pass_to_pass;
    let count = |failed: usize, passed: usize, name: &str| {
        format!("{failed} of {} {name}", failed + passed)
    };
    let mut parts = Vec::new();
    if !f2p.failure.is_empty() {
        parts.push(count(f2p.failure.len(), f2p.success.len(), "FAIL_TO_PASS"));
    }
    if !p2p.failure.is_empty() {
        parts.push(count(p2p.failure.len(), p2p.success.len(), "PASS_TO_PASS"));
    }
    let failing: Vec<String> = f2p.failure.iter().chain(&p2p.failure).cloned().collect();
    let summary = if failing.is_empty() {
        "the tests did not pass (no graded test failed, yet the run did not resolve)".to_owned()
    } else {
        format!(
            "tests failed: {} ({})",
            parts.join(", "),
            listed(&failing, LISTED)
        )
    };
    Cause::new(CauseKind::TestsFailed, summary).with(failing, String::new())
}

/// A pytest `FAILURES` / `ERRORS` section header, a unittest failure header, the end of the
/// sections.
static SECTION: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^=+ (?:FAILURES|ERRORS) =+$|^(?:ERROR|FAIL): \S"));
static SECTION_END: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^=+ (?:short test summary info|warnings summary|PASSES|.* in [\d.]+s.*) =+$|^Ran \d+ tests? in ",
    )
});

/// The part of a test log that reports failures: pytest's `FAILURES` and `ERRORS` sections
/// and its `FAILED` / `ERROR` summary lines, unittest's `ERROR:` / `FAIL:` blocks; the whole log
/// when it has none of them (a log that stopped before any test). A test that expects a
/// connection error and passes is not in it.
pub fn failure_text(log: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut any = false;
    for line in log.lines() {
        let trimmed = line.trim_end();
        if SECTION.is_match(trimmed) {
            inside = true;
            any = true;
        } else if SECTION_END.is_match(trimmed) {
            inside = false;
        }
        let summary_line = trimmed.starts_with("FAILED ") || trimmed.starts_with("ERROR ");
        any |= summary_line;
        if inside || summary_line {
            out.push_str(line);
            out.push('\n');
        }
    }
    if any { out } else { log.to_owned() }
}

/// The last non-empty lines of `text`.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(DETAIL_LINES);
    lines[start..].join("\n")
}

/// The first few distinct lines, trimmed.
fn distinct_lines(lines: &[&str]) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for line in lines {
        let line = line.trim();
        if !kept.contains(&line) && kept.len() < DETAIL_LINES {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// `a, b, c` or `a, b, c, … (N in all)`.
fn listed<T: AsRef<str>>(items: &[T], shown: usize) -> String {
    let names: Vec<&str> = items.iter().take(shown).map(AsRef::as_ref).collect();
    if items.len() > shown {
        format!("{}, … ({} in all)", names.join(", "), items.len())
    } else {
        names.join(", ")
    }
}

/// `cause: <kind> (infrastructure|the patch's): <summary>` for `run_instance.log`, with the
/// detail's lines indented under it.
pub fn run_log_line(cause: Option<&Cause>) -> String {
    let Some(cause) = cause else {
        return String::new();
    };
    let whose = if cause.infrastructure {
        "infrastructure"
    } else {
        "the patch's"
    };
    let mut text = format!(
        "cause: {} ({whose}): {}\n",
        cause.kind,
        escape_controls(&cause.summary)
    );
    for line in cause.detail.lines() {
        text.push_str(&format!("  {}\n", escape_controls(line)));
    }
    text
}

#[cfg(test)]
mod tests;
