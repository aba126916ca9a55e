//! Reading SWE-bench harness 1.x logs. `testdata/swebench/v1_*.eval.log` are three real logs of
//! that harness (django__django-16816, sympy__sympy-15346, mwaskom__seaborn-3010) with machine
//! paths rewritten to `/testbed` and `/opt/miniconda3`.

use super::*;
use crate::eval::parse::TestStatus::{Failed, Passed};
use crate::eval::parse::{StatusMap, parse_pytest};

const APPLY_FAILED: &str = include_str!("../testdata/swebench/v1_apply_failed.eval.log");
const EMPTY_PATCH: &str = include_str!("../testdata/swebench/v1_empty_patch.eval.log");
const RESOLVED: &str = include_str!("../testdata/swebench/v1_seaborn_resolved.eval.log");
const MARKERS: &str = include_str!("../testdata/eval_calc_gold.txt");

fn ran(status: &[(&str, crate::eval::parse::TestStatus)], suite_ran: bool) -> AnyReading {
    AnyReading::Reading(LogReading::Ran(TestRun {
        status: status
            .iter()
            .map(|(id, status)| ((*id).to_owned(), *status))
            .collect(),
        exit_code: None,
        suite_ran,
        used_whole_log: false,
    }))
}

fn not_run(reason: NotRunReason) -> AnyReading {
    AnyReading::Reading(LogReading::NotRun(reason))
}

#[test]
fn the_format_is_told_by_the_content() {
    assert_eq!(log_format(MARKERS), LogFormat::Markers);
    for log in [APPLY_FAILED, EMPTY_PATCH, RESOLVED] {
        assert_eq!(log_format(log), LogFormat::HarnessV1);
    }
    assert_eq!(log_format(""), LogFormat::Markers);
    assert_eq!(
        read_any_log("", parse_pytest),
        not_run(NotRunReason::MissingStartMarker)
    );
}

#[test]
fn a_v1_log_is_read_after_the_prediction_was_applied() {
    let test = "tests/_stats/test_regression.py::TestPolyFit";
    assert_eq!(
        read_any_log(RESOLVED, parse_pytest),
        ran(
            &[
                (&format!("{test}::test_no_grouper"), Passed),
                (&format!("{test}::test_one_grouper"), Passed),
                (&format!("{test}::test_missing_data"), Passed),
            ],
            true
        )
    );
    assert_eq!(
        v1_test_script(RESOLVED),
        Some(
            "source /opt/miniconda3/bin/activate mwaskom__seaborn__0.12 && echo 'activate \
             successful' && pytest --no-header -rA tests/_stats/test_regression.py;"
        )
    );
}

#[test]
fn v1_logs_that_ran_no_test_say_why() {
    assert_eq!(
        read_any_log(APPLY_FAILED, parse_pytest),
        not_run(NotRunReason::PatchApplyFailed)
    );
    assert_eq!(
        read_any_log(EMPTY_PATCH, parse_pytest),
        AnyReading::EmptyPatch
    );
    let head = "Task Metadata:\n\t- Instance ID: a__b-1\n";
    let cases = [
        (
            format!(
                "{head}>>>>> Applied Patch (pred_try)\n>>>>> Init Failed: Command 'pip' returned 1.\n"
            ),
            NotRunReason::InstallFailed,
        ),
        (
            format!(
                "{head}>>>>> Applied Patch (pred)\nTest Script: pytest -rA a.py;\nOutput:\n\
                 >>>>> Tests Timed Out after 900 seconds\n"
            ),
            NotRunReason::TimedOut,
        ),
        (
            format!("{head}>>>>> Init Succeeded\n>>>>> Applied Patch (test)\n"),
            NotRunReason::PredictionNotApplied,
        ),
    ];
    for (log, reason) in cases {
        assert_eq!(read_any_log(&log, parse_pytest), not_run(reason), "{log}");
    }
}

#[test]
fn results_printed_before_the_prediction_was_applied_are_not_read() {
    let log = "\
Task Metadata:
\t- Instance ID: a__b-1
>>>>> Applied Patch (pred_try)
Installation Command: pip install -e .
Std. Output: PASSED tests/test_a.py::test_fixed
>>>>> Init Succeeded
>>>>> Applied Patch (test)
>>>>> Applied Patch (pred)
Test Script: pytest -rA tests/test_a.py;
Output:
FAILED tests/test_a.py::test_fixed - AssertionError
>>>>> Some Tests Failed
";
    let expected: StatusMap = [("tests/test_a.py::test_fixed".to_owned(), Failed)]
        .into_iter()
        .collect();
    match read_any_log(log, parse_pytest) {
        AnyReading::Reading(LogReading::Ran(run)) => {
            assert_eq!(run.status, expected);
            assert_eq!(run.exit_code, None);
        }
        other => panic!("{other:?}"),
    }
}
