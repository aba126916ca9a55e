//! The lines of `run_instance.log`: the image, the apply chain's output, what the grader
//! found and reset, and the tripwire run.

use super::super::infra::{ResetAction, ResetEntry};
use super::super::reach::Reach;
use super::super::report::TripwireReport;
use super::super::suspicious::TouchedFile;
use super::ContainerRun;
use crate::image::env::EnvImage;
use crate::text::{escape_controls, escape_controls_in_lines};

/// `run_instance.log`'s lines about the grader's own work: what the scan named, what the
/// sandboxes did besides the stages, and what the reset put back.
pub(super) fn grader_lines(run: &ContainerRun, reaches: &[Reach]) -> String {
    let mut lines = String::new();
    for reach in reaches {
        lines.push_str(&format!(
            "the patch reaches into the test framework: {}: {}\n",
            escape_controls(&reach.path),
            reach.why
        ));
    }
    for note in &run.notes {
        lines.push_str(&format!("{}\n", escape_controls(note)));
    }
    lines.push_str(&reset_lines("before the tests", &run.reset));
    lines
}

fn reset_lines(when: &str, reset: &[ResetEntry]) -> String {
    reset
        .iter()
        .map(|entry| {
            let action = match entry.action {
                ResetAction::Restored => "restored",
                ResetAction::Removed => "removed",
            };
            format!(
                "{when}, {action}: {}: {}\n",
                escape_controls(&entry.path),
                entry.why
            )
        })
        .collect()
}

pub(super) fn tripwire_lines(report: &TripwireReport, reset: &[ResetEntry]) -> String {
    let mut lines = format!(
        "tripwire run: {} ({} FAIL_TO_PASS test(s) carried a tripwire{}); its log is \
         tripwire_output.txt\n",
        if report.confirmed {
            "confirmed"
        } else {
            "not confirmed"
        },
        report.checked.len(),
        if report.unchecked.is_empty() {
            String::new()
        } else {
            format!(", {} could not be placed", report.unchecked.len())
        }
    );
    lines.push_str(&reset_lines("before the tripwire run's tests", reset));
    lines
}

/// One `run_instance.log` line per file of test infrastructure the patch changes:
/// `the patch changes test infrastructure: <path>: <why>`, the path's control characters
/// written out ([`escape_controls`]): the patch names it.
pub(super) fn touches_lines(touched: &[TouchedFile]) -> String {
    touched
        .iter()
        .map(|file| {
            format!(
                "the patch changes test infrastructure: {}: {}\n",
                escape_controls(&file.path),
                escape_controls(&file.why)
            )
        })
        .collect()
}

/// `run_instance.log`: the image, the apply chain's output (its control characters written
/// out, line by line: it names the patch's files) and what the container reported.
pub(super) fn run_log(
    image: &EnvImage,
    apply_output: &str,
    oom_killed: bool,
    elided: u64,
) -> String {
    let mut log = format!(
        "image: {} ({}){}\n>>>>> apply chain output\n{}",
        image.tag,
        image.id,
        if image.built {
            ", built by this run"
        } else {
            ""
        },
        escape_controls_in_lines(apply_output)
    );
    if !log.ends_with('\n') {
        log.push('\n');
    }
    if oom_killed {
        log.push_str("a process was killed for running out of memory (env.memory_mb)\n");
    }
    if elided > 0 {
        log.push_str(&format!(
            "{elided} bytes of test output were dropped from the middle of test_output.txt\n"
        ));
    }
    log
}
