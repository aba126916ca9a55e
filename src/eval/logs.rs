//! Reading a test log whatever wrote it: aci's `test_output.txt` and the SWE-bench harness's
//! 2.x-and-later one (both have the start and end markers, read by
//! [`super::parse::read_test_log`]), and the harness's 1.x `<id>.<model>.eval.log`, told apart by
//! their content.
//!
//! A 1.x log is one file per instance: a `Task Metadata:` block, the apply attempts
//! (`>>>>> Applied Patch (pred_try)`, `>>>>> Patch Apply Failed; …`), the install step's output
//! (`>>>>> Init Succeeded` or `>>>>> Init Failed`), `>>>>> Applied Patch (test)`,
//! `>>>>> Applied Patch (pred)`, then `Test Script: <command>`, `Output:` and the tests' output,
//! and a closing `>>>>> All Tests Passed`, `>>>>> Some Tests Failed` or
//! `>>>>> Tests Timed Out after N seconds`. It has no start or end marker and no exit code.

use super::parse::{LogParser, LogReading, NotRunReason, TestRun, read_test_log, suite_ran};
use super::script::{APPLY_PATCH_FAIL, RESET_FAILED, START_MARKER, TESTS_ERROR, TESTS_TIMEOUT};

/// The line the 1.x harness writes once the prediction is applied; the tests' output follows.
pub const V1_PREDICTION_APPLIED: &str = ">>>>> Applied Patch (pred)";
/// The 1.x harness's note for a prediction whose patch is empty (`None`).
pub const V1_EMPTY_PATCH: &str = "Prediction patch is `None`";
/// The 1.x harness's sentinel for a failed install step.
pub const V1_INSTALL_FAILED: &str = ">>>>> Init Failed";
/// The line the 1.x harness writes before the test command it ran.
pub const V1_TEST_SCRIPT: &str = "Test Script: ";

/// Which harness wrote a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// aci, or the SWE-bench harness 2.x and later: start and end markers.
    Markers,
    /// The SWE-bench harness 1.x.
    HarnessV1,
}

/// What a log says, whatever its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyReading {
    /// The prediction had no patch, so nothing was evaluated (SWE-bench's empty patch).
    EmptyPatch,
    /// A reading to grade.
    Reading(LogReading),
}

/// The format of `log`: markers when it has a start marker, 1.x when it starts with
/// `Task Metadata:` or shows a 1.x apply line, markers otherwise (which then reads as not run).
pub fn log_format(log: &str) -> LogFormat {
    if log.contains(START_MARKER) {
        return LogFormat::Markers;
    }
    let v1 = log.trim_start().starts_with("Task Metadata:")
        || log.contains(V1_PREDICTION_APPLIED)
        || log.contains(V1_EMPTY_PATCH);
    if v1 {
        LogFormat::HarnessV1
    } else {
        LogFormat::Markers
    }
}

/// Reads `log` in its format (see [`log_format`]) with `parser`.
pub fn read_any_log(log: &str, parser: LogParser) -> AnyReading {
    match log_format(log) {
        LogFormat::Markers => AnyReading::Reading(read_test_log(log, parser)),
        LogFormat::HarnessV1 => read_v1_log(log, parser),
    }
}

/// Reads a 1.x log as the 1.x harness graded it: an empty prediction is an empty patch; any
/// failure sentinel (apply failed, reset failed, tests errored, timed out) or a failed install
/// means nothing ran; otherwise the text after the last `>>>>> Applied Patch (pred)` is parsed.
/// There is no exit code, so the exit-code guard does not apply.
pub fn read_v1_log(log: &str, parser: LogParser) -> AnyReading {
    if log.contains(V1_EMPTY_PATCH) {
        return AnyReading::EmptyPatch;
    }
    let sentinels = [
        (TESTS_TIMEOUT, NotRunReason::TimedOut),
        (APPLY_PATCH_FAIL, NotRunReason::PatchApplyFailed),
        (RESET_FAILED, NotRunReason::ResetFailed),
        (TESTS_ERROR, NotRunReason::TestsErrored),
        (V1_INSTALL_FAILED, NotRunReason::InstallFailed),
    ];
    if let Some((_, reason)) = sentinels.iter().find(|(text, _)| log.contains(text)) {
        return AnyReading::Reading(LogReading::NotRun(*reason));
    }
    let Some(index) = log.rfind(V1_PREDICTION_APPLIED) else {
        return AnyReading::Reading(LogReading::NotRun(NotRunReason::PredictionNotApplied));
    };
    let region = &log[index + V1_PREDICTION_APPLIED.len()..];
    AnyReading::Reading(LogReading::Ran(TestRun {
        status: parser(region),
        exit_code: None,
        suite_ran: suite_ran(region),
        used_whole_log: false,
    }))
}

/// The command a 1.x log says it ran: the rest of its `Test Script:` line, if any.
pub fn v1_test_script(log: &str) -> Option<&str> {
    log.lines()
        .find_map(|line| line.strip_prefix(V1_TEST_SCRIPT))
        .map(str::trim)
}

#[cfg(test)]
mod tests;
