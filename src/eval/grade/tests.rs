//! Grading tests on recorded eval logs (see `../testdata`).

use super::*;
use crate::eval::parse::{LogReading, TestRun, parse_cargo, parse_pytest, parse_unittest};

const CALC_GOLD: &str = include_str!("../testdata/eval_calc_gold.txt");
const CALC_NOOP: &str = include_str!("../testdata/eval_calc_noop.txt");
const CALC_SPOOF_EXIT: &str = include_str!("../testdata/eval_calc_spoof_exit.txt");
const CALC_SPOOF_LATE: &str = include_str!("../testdata/eval_calc_spoof_late.txt");
const CALC_SPLIT_STREAMS: &str = include_str!("../testdata/eval_calc_gold_split_streams.txt");
const INVENTORY_GOLD: &str = include_str!("../testdata/eval_inventory_gold_nocapture.txt");
const INVENTORY_NOOP: &str = include_str!("../testdata/eval_inventory_noop.txt");
const SHOP_PY310: &str = include_str!("../testdata/eval_shop_py310.txt");
const SHOP_COMMAND_MISSING: &str = include_str!("../testdata/eval_shop_command_missing.txt");
const APPLY_FAILED: &str = include_str!("../testdata/apply_failed_calc_missing.txt");

fn ids(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn calc_f2p() -> Vec<String> {
    ids(&[
        "tests/test_calc.py::test_div_by_zero_returns_none",
        "tests/test_describe.py::test_describe",
    ])
}

/// The PASS_TO_PASS list as SWE-bench's parser names the tests: a parametrized id with a space
/// is cut at its first space.
fn calc_p2p() -> Vec<String> {
    ids(&[
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_div",
        "tests/test_calc.py::test_fmt[1",
        "tests/test_calc.py::test_fmt[[1,",
        "tests/test_calc.py::test_round",
    ])
}

fn lists(success: &[&str], failure: &[&str]) -> SuccessFailure {
    SuccessFailure {
        success: ids(success),
        failure: ids(failure),
    }
}

fn status(f2p: SuccessFailure, p2p: SuccessFailure) -> Option<TestsStatus> {
    Some(TestsStatus {
        fail_to_pass: f2p,
        pass_to_pass: p2p,
        ..TestsStatus::default()
    })
}

fn graded(resolution: Resolution, tests_status: Option<TestsStatus>) -> Grade {
    Grade {
        patch_successfully_applied: true,
        resolution,
        resolved: resolution == Resolution::Full,
        tests_status,
        error: None,
        timed_out: false,
        untrusted_reason: None,
    }
}

#[test]
fn the_gold_patch_resolves_with_xfail_counted_as_a_pass() {
    let f2p = calc_f2p();
    let p2p = calc_p2p();
    assert_eq!(
        grade_log(CALC_GOLD, parse_pytest, &f2p, &p2p),
        graded(
            Resolution::Full,
            status(lists(&ids_ref(&f2p), &[]), lists(&ids_ref(&p2p), &[]))
        )
    );
}

fn ids_ref(items: &[String]) -> Vec<&str> {
    items.iter().map(String::as_str).collect()
}

#[test]
fn a_coloured_collection_error_reads_as_no_results_and_every_test_fails() {
    let f2p = calc_f2p();
    let p2p = calc_p2p();
    // The run was coloured, and SWE-bench's parser reads no line a colour code starts: no
    // result at all, with exit status 2, so nothing is trusted and every test fails.
    assert_eq!(
        grade_log(CALC_NOOP, parse_pytest, &f2p, &p2p),
        Grade {
            untrusted_reason: Some(
                "the test command exited with status 2 but the log reports no failed or \
                 errored test, so its results cannot be trusted"
                    .to_owned()
            ),
            ..graded(
                Resolution::No,
                status(lists(&[], &ids_ref(&f2p)), lists(&[], &ids_ref(&p2p)))
            )
        }
    );
}

#[test]
fn forged_passed_lines_with_a_non_zero_exit_code_are_not_trusted() {
    let f2p = calc_f2p();
    let p2p = ids(&[
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_div",
    ]);
    assert_eq!(
        grade_log(CALC_SPOOF_EXIT, parse_pytest, &f2p, &p2p),
        Grade {
            resolved: false,
            untrusted_reason: Some(
                "the test command exited with status 1 but the log reports no failed or \
                 errored test, so its results cannot be trusted"
                    .to_owned()
            ),
            ..graded(
                Resolution::Full,
                status(lists(&ids_ref(&f2p), &[]), lists(&ids_ref(&p2p), &[]))
            )
        }
    );
}

#[test]
fn forged_passes_after_a_collection_error_cannot_resolve_the_errored_file() {
    // The forged lines come after pytest's summary. The file whose collection failed is caught
    // through its ERROR entry; test_round, which the forger left out, is missing.
    let f2p = calc_f2p();
    let p2p = calc_p2p();
    let grade = grade_log(CALC_SPOOF_LATE, parse_pytest, &f2p, &p2p);
    assert_eq!(
        grade,
        graded(
            Resolution::No,
            status(
                lists(
                    &["tests/test_calc.py::test_div_by_zero_returns_none"],
                    &["tests/test_describe.py::test_describe"]
                ),
                lists(
                    &[
                        "tests/test_calc.py::test_add",
                        "tests/test_calc.py::test_div",
                        "tests/test_calc.py::test_fmt[1",
                        "tests/test_calc.py::test_fmt[[1,",
                    ],
                    &["tests/test_calc.py::test_round"]
                )
            )
        )
    );
}

#[test]
fn results_outside_the_markers_still_resolve_through_the_whole_log_fallback() {
    let grade = grade_log(CALC_SPLIT_STREAMS, parse_pytest, &calc_f2p(), &calc_p2p());
    assert_eq!((grade.resolution, grade.resolved), (Resolution::Full, true));
}

#[test]
fn cargo_gold_resolves_with_an_ignored_p2p_test_in_neither_list() {
    let f2p = ids(&[
        "ledger_never_goes_negative",
        "tests::take_saturates_at_zero",
        "src/lib.rs - take (line 14)",
    ]);
    let p2p = ids(&[
        "ledger_balances",
        "tests::stress_many_items",
        "src/lib.rs - restock (line 5)",
    ]);
    assert_eq!(
        grade_log(INVENTORY_GOLD, parse_cargo, &f2p, &p2p),
        graded(
            Resolution::Full,
            status(
                lists(&ids_ref(&f2p), &[]),
                lists(&["ledger_balances", "src/lib.rs - restock (line 5)"], &[])
            )
        )
    );
}

#[test]
fn cargo_without_the_fix_is_not_resolved_and_one_passing_f2p_test_is_partial() {
    let p2p = ids(&["ledger_balances"]);
    let none = grade_log(
        INVENTORY_NOOP,
        parse_cargo,
        &ids(&["ledger_never_goes_negative"]),
        &p2p,
    );
    let partial = grade_log(
        INVENTORY_NOOP,
        parse_cargo,
        &ids(&["ledger_never_goes_negative", "ledger_prints_report"]),
        &p2p,
    );
    assert_eq!(
        (none.resolution, none.resolved, none.untrusted_reason),
        (Resolution::No, false, None)
    );
    assert_eq!(
        (partial.resolution, partial.resolved),
        (Resolution::Partial, false)
    );
}

#[test]
fn an_all_skipped_fail_to_pass_list_resolves_as_in_swe_bench_v4() {
    // v4 puts a SKIPPED test in neither list, so the F2P ratio is 1 (v5 changed this).
    let f2p = ids(&["test_checkout (shop.test_cart.CartTests)"]);
    let p2p = ids(&["test_total (shop.test_cart.CartTests)"]);
    assert_eq!(
        grade_log(SHOP_PY310, parse_unittest, &f2p, &p2p),
        graded(
            Resolution::Full,
            status(
                lists(&[], &[]),
                lists(&["test_total (shop.test_cart.CartTests)"], &[])
            )
        )
    );
}

#[test]
fn a_missing_test_counts_as_a_failure() {
    let f2p = ids(&[
        "test_discount_rounds_down (shop.test_cart.DiscountTests)",
        "test_refund (shop.test_cart.CartTests)",
    ]);
    assert_eq!(
        grade_log(SHOP_PY310, parse_unittest, &f2p, &[]),
        graded(
            Resolution::Partial,
            status(
                lists(
                    &["test_discount_rounds_down (shop.test_cart.DiscountTests)"],
                    &["test_refund (shop.test_cart.CartTests)"]
                ),
                lists(&[], &[])
            )
        )
    );
}

#[test]
fn an_empty_log_with_no_sign_the_suite_ran_is_not_resolved_even_with_empty_lists() {
    // As the harness (5.x) reports it: not applied, completed, unresolved.
    assert_eq!(
        grade_log(SHOP_COMMAND_MISSING, parse_unittest, &[], &[]),
        Grade {
            patch_successfully_applied: false,
            resolved: false,
            untrusted_reason: Some(
                "the log has no test results and no sign that the test suite ran".to_owned()
            ),
            ..graded(Resolution::Full, status(lists(&[], &[]), lists(&[], &[])))
        }
    );
}

#[test]
fn a_patch_apply_failure_is_an_error_not_an_unresolved_run() {
    assert_eq!(
        grade_log(APPLY_FAILED, parse_pytest, &calc_f2p(), &calc_p2p()),
        Grade {
            patch_successfully_applied: false,
            resolution: Resolution::No,
            resolved: false,
            tests_status: None,
            error: Some("patch apply failed".to_owned()),
            timed_out: false,
            untrusted_reason: None,
        }
    );
}

#[test]
fn a_timeout_is_an_error_flagged_as_timed_out() {
    let log = format!("{CALC_GOLD}>>>>> Tests Timed Out after 1800 s\n");
    let grade = grade_log(&log, parse_pytest, &calc_f2p(), &calc_p2p());
    assert_eq!(
        (grade.error.as_deref(), grade.timed_out, grade.resolved),
        (Some("tests timed out"), true, false)
    );
}

#[test]
fn a_log_without_an_exit_code_line_skips_the_exit_code_check() {
    let reading = LogReading::Ran(TestRun {
        status: [("t::a".to_owned(), TestStatus::Passed)].into(),
        exit_code: None,
        suite_ran: true,
        used_whole_log: false,
    });
    assert!(grade(&reading, &ids(&["t::a"]), &[]).resolved);
}

#[test]
fn a_truncated_parametrized_id_matches_by_prefix_when_the_candidates_agree() {
    let status: StatusMap = [
        ("t.py::test_x[a b-1]", TestStatus::Passed),
        ("t.py::test_x[a b-2]", TestStatus::XFail),
        ("t.py::test_y[c d-1]", TestStatus::Passed),
        ("t.py::test_y[c d-2]", TestStatus::Failed),
    ]
    .into_iter()
    .map(|(id, found)| (id.to_owned(), found))
    .collect();
    assert_eq!(lookup(&status, "t.py::test_x[a"), Some(TestStatus::Passed));
    assert_eq!(lookup(&status, "t.py::test_y[c"), None);
    assert_eq!(lookup(&status, "t.py::test_x"), None);
    assert_eq!(lookup(&status, "t.py::test_z[q"), None);
}

#[test]
fn resolution_follows_the_swe_bench_ratios() {
    let cases = [
        (lists(&[], &[]), lists(&[], &[]), Resolution::Full),
        (lists(&["a"], &[]), lists(&["b"], &[]), Resolution::Full),
        (
            lists(&["a"], &["c"]),
            lists(&["b"], &[]),
            Resolution::Partial,
        ),
        (lists(&["a"], &["c"]), lists(&[], &["b"]), Resolution::No),
        (lists(&[], &["c"]), lists(&["b"], &[]), Resolution::No),
        (lists(&["a"], &[]), lists(&["b"], &["d"]), Resolution::No),
    ];
    for (f2p, p2p, expected) in cases {
        let tests_status = TestsStatus {
            fail_to_pass: f2p,
            pass_to_pass: p2p,
            ..TestsStatus::default()
        };
        assert_eq!(resolution(&tests_status), expected, "{tests_status:?}");
    }
    assert_eq!(Resolution::Partial.to_string(), "RESOLVED_PARTIAL");
}

#[test]
fn an_untrusted_log_that_reads_as_resolved_is_an_error_and_any_other_is_unresolved() {
    let reason =
        "untrusted test run: the canary test that must pass (test_x) has no result in the log";
    let full = graded(Resolution::Full, None)
        .into_untrusted("the canary test that must pass (test_x) has no result in the log");
    assert_eq!(
        full,
        Grade {
            resolved: false,
            error: Some(reason.to_owned()),
            ..graded(Resolution::Full, None)
        }
    );
    // A patch that does not compile: nothing reported, canaries included.
    for resolution in [Resolution::Partial, Resolution::No] {
        assert_eq!(
            graded(resolution, None)
                .into_untrusted("the canary test that must pass (test_x) has no result in the log"),
            Grade {
                resolved: false,
                untrusted_reason: Some(reason.to_owned()),
                ..graded(resolution, None)
            }
        );
    }
}

#[test]
fn fail_only_counts_only_failed_tests_as_failures_as_the_harness_does() {
    let status: StatusMap = [
        ("a", TestStatus::Passed),
        ("b", TestStatus::Failed),
        ("c", TestStatus::Error),
        ("d", TestStatus::Skipped),
    ]
    .into_iter()
    .map(|(id, status)| (id.to_owned(), status))
    .collect();
    let f2p = ids(&["a", "b", "c", "d", "missing"]);
    let p2p = ids(&["b", "c"]);
    let report = tests_report_as(&status, &f2p, &p2p, EvalType::FailOnly);
    assert_eq!(
        report.fail_to_pass.success,
        ids(&["a", "c", "d", "missing"])
    );
    assert_eq!(report.fail_to_pass.failure, ids(&["b"]));
    assert_eq!(report.pass_to_pass.success, ids(&["c"]));
    assert_eq!(report.pass_to_pass.failure, ids(&["b"]));
    assert_eq!(
        tests_report_as(&status, &f2p, &p2p, EvalType::PassAndFail),
        tests_report(&status, &f2p, &p2p)
    );
    let only_passing: StatusMap = [("a".to_owned(), TestStatus::Error)].into_iter().collect();
    let ran = LogReading::Ran(TestRun {
        status: only_passing,
        exit_code: Some(1),
        suite_ran: true,
        used_whole_log: false,
    });
    let graded = grade_as(&ran, &ids(&["a", "missing"]), &[], EvalType::FailOnly);
    assert_eq!(graded.resolution, Resolution::Full);
    assert!(graded.resolved);
    assert_eq!(
        grade(&ran, &ids(&["a", "missing"]), &[]).resolution,
        Resolution::No
    );
    let nothing = LogReading::Ran(TestRun {
        status: StatusMap::new(),
        exit_code: Some(0),
        suite_ran: false,
        used_whole_log: true,
    });
    let graded = grade_as(&nothing, &ids(&["a"]), &[], EvalType::FailOnly);
    assert!(!graded.resolved, "no sign that the suite ran");
    assert!(!graded.patch_successfully_applied);
}

#[test]
fn a_nested_pytest_run_s_progress_ids_in_pass_to_pass_resolve_as_the_harness_grades_them() {
    // PASS_TO_PASS holds what SWE-bench's parser reads from a nested run's `PASSED [100%]`
    // lines (as pytest-dev__pytest-5227's does): `[100%]` (FAILED in the inner failure's output,
    // PASSED last), `[` and `[100%]------------------------------`.
    let log = include_str!("../testdata/swebench/pytest_nested_runs.txt");
    let f2p = ids(&[
        "testing/test_nested.py::test_inner_verbose_output",
        "testing/test_nested.py::test_inner_progress_dash",
    ]);
    let p2p = ids(&["[100%]", "[", "[100%]------------------------------"]);
    let reading = LogReading::Ran(TestRun {
        status: parse_pytest(log),
        exit_code: Some(1),
        suite_ran: true,
        used_whole_log: false,
    });
    assert_eq!(
        grade(&reading, &f2p, &p2p),
        graded(
            Resolution::Full,
            status(lists(&ids_ref(&f2p), &[]), lists(&ids_ref(&p2p), &[]))
        )
    );
}
