//! Grading with SWE-bench v4 semantics: FAIL_TO_PASS and PASS_TO_PASS success and failure lists,
//! FULL / PARTIAL / NO, resolved only when FULL; plus two guards against logs that cannot be
//! trusted (a non-zero exit code with no failing test, and no sign that the suite ran).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::parse::{LogParser, LogReading, NotRunReason, StatusMap, TestStatus, read_test_log};
use crate::spec::EvalType;

/// The tests of one category that passed and failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuccessFailure {
    /// Tests graded as passing, in the order of the instance's list.
    pub success: Vec<String>,
    /// Tests graded as failing (including missing ones), in the order of the instance's list.
    pub failure: Vec<String>,
}

/// `tests_status` of a SWE-bench report.json. FAIL_TO_FAIL and PASS_TO_FAIL are always empty, as
/// in SWE-bench without `calculate_to_fail`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestsStatus {
    /// Tests that had to start passing.
    #[serde(rename = "FAIL_TO_PASS")]
    pub fail_to_pass: SuccessFailure,
    /// Tests that had to keep passing.
    #[serde(rename = "PASS_TO_PASS")]
    pub pass_to_pass: SuccessFailure,
    /// Always empty.
    #[serde(rename = "FAIL_TO_FAIL")]
    pub fail_to_fail: SuccessFailure,
    /// Always empty.
    #[serde(rename = "PASS_TO_FAIL")]
    pub pass_to_fail: SuccessFailure,
}

/// SWE-bench's `ResolvedStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Every FAIL_TO_PASS and every PASS_TO_PASS test passes.
    Full,
    /// Some but not all FAIL_TO_PASS tests pass, and every PASS_TO_PASS test passes.
    Partial,
    /// Anything else.
    No,
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Full => "RESOLVED_FULL",
            Self::Partial => "RESOLVED_PARTIAL",
            Self::No => "RESOLVED_NO",
        })
    }
}

/// The verdict on one instance's test log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grade {
    /// The patch applied and the log has gradeable results.
    pub patch_successfully_applied: bool,
    /// FULL / PARTIAL / NO from the test lists (NO when nothing ran).
    pub resolution: Resolution,
    /// FULL and the log is trustworthy.
    pub resolved: bool,
    /// The per-test lists; `None` when nothing ran.
    pub tests_status: Option<TestsStatus>,
    /// Why nothing could be graded (apply failure, timeout, …). The instance counts as an error,
    /// not as unresolved.
    pub error: Option<String>,
    /// The tests timed out.
    pub timed_out: bool,
    /// Why the log's results are not believed. The instance counts as unresolved.
    pub untrusted_reason: Option<String>,
}

impl Grade {
    /// This grade, for a log that [`super::canary::verify`] does not trust, never resolved, with
    /// the reason `untrusted test run: <detail>`: an evaluation error when the log reads as
    /// FULL (every listed test passing), since nothing in it can be believed; otherwise
    /// unresolved with that reason, since a log that cannot be believed to pass does not resolve
    /// either way, and a patch that fails to compile or to import (so that no test, canaries
    /// included, reports) is unresolved, as in SWE-bench.
    pub fn into_untrusted(self, detail: &str) -> Self {
        let reason = format!("{}: {detail}", super::canary::UNTRUSTED_TEST_RUN);
        if self.resolution == Resolution::Full {
            Self {
                resolved: false,
                error: Some(reason),
                ..self
            }
        } else {
            Self {
                resolved: false,
                untrusted_reason: Some(reason),
                ..self
            }
        }
    }
}

impl Grade {
    /// The grade as an evaluation error with `reason`: not resolved, counted as an error.
    pub fn into_error(self, reason: &str) -> Self {
        Self {
            resolved: false,
            error: Some(reason.to_owned()),
            ..self
        }
    }
}

/// Reads `log` with `parser` and grades it (see [`grade`]).
pub fn grade_log(
    log: &str,
    parser: LogParser,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
) -> Grade {
    grade(&read_test_log(log, parser), fail_to_pass, pass_to_pass)
}

/// [`grade_log`] with the record's `eval_type` ([`grade_as`]).
pub fn grade_log_as(
    log: &str,
    parser: LogParser,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    eval_type: EvalType,
) -> Grade {
    grade_as(
        &read_test_log(log, parser),
        fail_to_pass,
        pass_to_pass,
        eval_type,
    )
}

/// Grades a read log.
///
/// Nothing ran → not applied, not resolved, with `error` set. Otherwise the lists are graded
/// ([`tests_report`]) and the run is resolved when the resolution is FULL, unless one of the
/// guards fires (then `untrusted_reason` is set and it is not resolved):
/// - no test result at all and no runner summary showing that any test ran (v5);
/// - the recorded exit code is non-zero but no test is FAILED or ERROR (forged `PASSED` lines,
///   SWE-bench #601/#620/#631; v5 checks this only for a non-empty map, this checks it always).
///
/// A log without an exit-code line (an older eval script) skips the second guard.
///
/// `patch_successfully_applied` is true for a graded log, except when the first guard fires: the
/// harness (5.x, which added that guard) then reports the patch as not applied, and so does aci.
/// The instance still counts as completed and unresolved, as there.
pub fn grade(reading: &LogReading, fail_to_pass: &[String], pass_to_pass: &[String]) -> Grade {
    grade_as(reading, fail_to_pass, pass_to_pass, EvalType::PassAndFail)
}

/// [`grade`], the lists read as `eval_type` says ([`tests_report_as`]). The guards are the
/// same: with `fail_only` a log with no result and no sign that the suite ran is not applied,
/// as in the harness (5.x), rather than every test counting as passed.
pub fn grade_as(
    reading: &LogReading,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    eval_type: EvalType,
) -> Grade {
    let run = match reading {
        LogReading::NotRun(reason) => {
            return Grade {
                patch_successfully_applied: false,
                resolution: Resolution::No,
                resolved: false,
                tests_status: None,
                error: Some(reason.to_string()),
                timed_out: *reason == NotRunReason::TimedOut,
                untrusted_reason: None,
            };
        }
        LogReading::Ran(run) => run,
    };
    let tests_status = tests_report_as(&run.status, fail_to_pass, pass_to_pass, eval_type);
    let resolution = resolution(&tests_status);
    let any_failure = run.status.values().any(|status| status.is_failure());
    let nothing_ran = run.status.is_empty() && !run.suite_ran;
    let untrusted_reason = match run.exit_code {
        _ if nothing_ran => {
            Some("the log has no test results and no sign that the test suite ran".to_owned())
        }
        Some(code) if code != 0 && !any_failure => Some(format!(
            "the test command exited with status {code} but the log reports no failed or \
             errored test, so its results cannot be trusted"
        )),
        _ => None,
    };
    Grade {
        patch_successfully_applied: !nothing_ran,
        resolution,
        resolved: resolution == Resolution::Full && untrusted_reason.is_none(),
        tests_status: Some(tests_status),
        error: None,
        timed_out: false,
        untrusted_reason,
    }
}

/// SWE-bench v4 `get_eval_tests_report` (`pass_and_fail`): a test is a success when PASSED or
/// XFAIL, a failure when FAILED, ERROR or missing, and in neither list when SKIPPED (so a
/// FAIL_TO_PASS list that is all skipped counts as fully passing, as in v4; v5 fails it).
pub fn tests_report(
    status: &StatusMap,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
) -> TestsStatus {
    let grade_list = |tests: &[String]| {
        let mut lists = SuccessFailure::default();
        for test in tests {
            match lookup(status, test) {
                Some(found) if found.is_pass() => lists.success.push(test.clone()),
                Some(TestStatus::Skipped) => {}
                _ => lists.failure.push(test.clone()),
            }
        }
        lists
    };
    TestsStatus {
        fail_to_pass: grade_list(fail_to_pass),
        pass_to_pass: grade_list(pass_to_pass),
        ..TestsStatus::default()
    }
}

/// [`tests_report`] for `eval_type`: with `fail_only` (SWE-bench's `check_fail_only`, for both
/// lists) a test is a failure only when the log reports it FAILED, by its exact id, and a
/// success otherwise (passed, errored, skipped or missing).
pub fn tests_report_as(
    status: &StatusMap,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    eval_type: EvalType,
) -> TestsStatus {
    if eval_type == EvalType::PassAndFail {
        return tests_report(status, fail_to_pass, pass_to_pass);
    }
    let grade_list = |tests: &[String]| {
        let mut lists = SuccessFailure::default();
        for test in tests {
            if status.get(test) == Some(&TestStatus::Failed) {
                lists.failure.push(test.clone());
            } else {
                lists.success.push(test.clone());
            }
        }
        lists
    };
    TestsStatus {
        fail_to_pass: grade_list(fail_to_pass),
        pass_to_pass: grade_list(pass_to_pass),
        ..TestsStatus::default()
    }
}

/// The status of `test` in `status`:
/// 1. its exact id;
/// 2. else, for an id truncated inside its parameters (more `[` than `]`, SWE-bench #290), the
///    status shared by every id it prefixes, when they agree on pass versus fail (v5);
/// 3. and in either case a FAILED or ERROR entry for an enclosing pytest node (`file.py` or
///    `file.py::Class`, as written for a collection error) makes the test ERROR: none of its tests
///    ran, so a `PASSED` line for one of them was not written by pytest.
pub fn lookup(status: &StatusMap, test: &str) -> Option<TestStatus> {
    let own = status
        .get(test)
        .copied()
        .or_else(|| truncated_lookup(status, test));
    let enclosing_failure = test.match_indices("::").any(|(index, _)| {
        status
            .get(&test[..index])
            .is_some_and(|found| found.is_failure())
    });
    if enclosing_failure {
        Some(TestStatus::Error)
    } else {
        own
    }
}

fn truncated_lookup(status: &StatusMap, test: &str) -> Option<TestStatus> {
    if test.matches('[').count() <= test.matches(']').count() {
        return None;
    }
    let mut candidates = status
        .range(test.to_owned()..)
        .take_while(|(id, _)| id.starts_with(test))
        .map(|(_, found)| *found);
    let first = candidates.next()?;
    candidates
        .all(|other| other.is_pass() == first.is_pass())
        .then_some(first)
}

/// SWE-bench v4 `get_resolution_status`: F2P and P2P ratios (1 when a list grades empty); FULL
/// when both are 1, PARTIAL when 0 < F2P < 1 and P2P is 1, else NO.
pub fn resolution(tests_status: &TestsStatus) -> Resolution {
    let f2p = &tests_status.fail_to_pass;
    let p2p_full = tests_status.pass_to_pass.failure.is_empty();
    match (f2p.success.is_empty(), f2p.failure.is_empty(), p2p_full) {
        (_, true, true) => Resolution::Full,
        (false, false, true) => Resolution::Partial,
        _ => Resolution::No,
    }
}

#[cfg(test)]
mod tests;
