//! Parser tests on logs recorded from real runs (pytest 9.2, Python 3.10 and 3.11 unittest,
//! cargo 1.95, each through the generated eval.sh where the name starts with `eval_`), with
//! machine paths rewritten to `/testbed`. `unittest_django_interleaved.txt` is written by hand in
//! the shape of Django's runner output.

use super::*;
use TestStatus::{Error, Failed, Passed, Skipped, XFail};

const PYTEST_MIXED: &str = include_str!("../testdata/pytest_rA_mixed.txt");
const PYTEST_COLOR: &str = include_str!("../testdata/pytest_rA_color.txt");
const PYTEST_TEARDOWN: &str = include_str!("../testdata/pytest_teardown_error.txt");
const CARGO_TWO_BINARIES: &str = include_str!("../testdata/cargo_two_binaries_and_doctests.txt");
const CARGO_NOCAPTURE: &str = include_str!("../testdata/cargo_nocapture_interleaved.txt");
const UNITTEST_PY310: &str = include_str!("../testdata/eval_shop_py310.txt");
const UNITTEST_PY311: &str = include_str!("../testdata/eval_shop_py311.txt");
const DJANGO: &str = include_str!("../testdata/unittest_django_interleaved.txt");
const EVAL_CALC_GOLD: &str = include_str!("../testdata/eval_calc_gold.txt");
const EVAL_SPLIT_STREAMS: &str = include_str!("../testdata/eval_calc_gold_split_streams.txt");
const EVAL_COMMAND_MISSING: &str = include_str!("../testdata/eval_shop_command_missing.txt");
const APPLY_FAILED: &str = include_str!("../testdata/apply_failed_calc_missing.txt");

fn map(entries: &[(&str, TestStatus)]) -> StatusMap {
    entries
        .iter()
        .map(|(id, status)| ((*id).to_owned(), *status))
        .collect()
}

/// `pytest_rA_mixed.txt` as SWE-bench's `parse_log_pytest` reads it (checked against `swebench`
/// 5.0.2): an id is one word, so a parametrized id with a space is cut at it.
fn mixed_pytest_map() -> StatusMap {
    map(&[
        ("tests/test_calc.py::test_add", Passed),
        ("tests/test_calc.py::test_eval[1", Passed),
        ("tests/test_calc.py::test_eval[2", Passed),
        ("tests/test_calc.py::test_eval[a", Failed),
        ("tests/test_calc.py::test_prints_then_fails", Failed),
        ("tests/test_calc.py::test_round", XFail),
        ("tests/test_calc.py::test_sub_is_broken", Failed),
        ("tests/test_calc.py::test_uses_fixture", Error),
    ])
}

/// The gold run's results as SWE-bench's `parse_log_pytest` reads them (checked against
/// `swebench` 5.0.2).
fn calc_gold_map() -> StatusMap {
    map(&[
        ("tests/test_calc.py::test_add", Passed),
        ("tests/test_calc.py::test_div", Passed),
        ("tests/test_calc.py::test_div_by_zero_returns_none", Passed),
        ("tests/test_calc.py::test_fmt[1", Passed),
        ("tests/test_calc.py::test_fmt[[1,", Passed),
        ("tests/test_calc.py::test_round", XFail),
        ("tests/test_describe.py::test_describe", Passed),
    ])
}

fn cargo_map() -> StatusMap {
    map(&[
        ("ledger_balances", Passed),
        ("ledger_prints_report", Passed),
        ("src/lib.rs - restock (line 5)", Passed),
        ("src/lib.rs - take (line 14)", Failed),
        ("tests::noisy_but_fine", Passed),
        ("tests::restock_adds", Passed),
        ("tests::stress_many_items", Skipped),
        ("tests::take_saturates_at_zero", Failed),
    ])
}

#[test]
fn pytest_reads_one_word_ids_and_the_last_line_of_a_test_printed_twice() {
    // The log also holds a `PASSED tests/test_calc.py::test_sub_is_broken` in a test's captured
    // stdout; the short summary's FAILED line comes after it, so it is the one kept.
    assert_eq!(parse_pytest(PYTEST_MIXED), mixed_pytest_map());
}

#[test]
fn pytest_reads_no_line_that_a_colour_code_starts_as_swe_bench_does() {
    // With colour, only the captured stdout's plain `PASSED` line starts with a status word.
    assert!(PYTEST_COLOR.contains("\x1b[32mPASSED\x1b[0m"));
    assert_eq!(
        parse_pytest(PYTEST_COLOR),
        map(&[("tests/test_calc.py::test_sub_is_broken", Passed)])
    );
}

#[test]
fn pytest_teardown_error_after_a_pass_counts_as_error() {
    assert_eq!(
        parse_pytest(PYTEST_TEARDOWN),
        map(&[("tests/test_td.py::test_teardown", Error)])
    );
}

#[test]
fn pytest_reads_usage_errors_as_swe_bench_does_and_ignores_xpass_and_lone_status_words() {
    let log = "\
XPASS tests/test_a.py::test_fixed - now passes
ERROR: file or directory not found: tests/test_gone.py
PASSED
SKIPPED [2] tests/test_a.py:9: slow
ERROR tests/test_b.py
FAILED tests/test_a.py::test_x[unbalanced[ - AssertionError
";
    assert_eq!(
        parse_pytest(log),
        map(&[
            // `ERROR: file or …`: the status word `ERROR:`, which grades as neither.
            ("file", Skipped),
            ("tests/test_b.py", Error),
            ("tests/test_a.py::test_x[unbalanced[", Failed),
        ])
    );
}

#[test]
fn cargo_reads_two_test_binaries_doc_tests_and_ignored_tests() {
    assert_eq!(parse_cargo(CARGO_TWO_BINARIES), cargo_map());
}

#[test]
fn cargo_with_interleaved_nocapture_output_gives_the_same_results() {
    assert!(CARGO_NOCAPTURE.contains("test tests::noisy_but_fine ... checking the ledger\n"));
    assert_eq!(parse_cargo(CARGO_NOCAPTURE), cargo_map());
}

#[test]
fn cargo_failure_list_marks_a_test_whose_outcome_line_was_lost() {
    let log = "\
running 2 tests
test tests::a ... ok
test tests::b ... partial output without newline

failures:
    tests::b

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out
";
    assert_eq!(
        parse_cargo(log),
        map(&[("tests::a", Passed), ("tests::b", Failed)])
    );
}

#[test]
fn unittest_keeps_the_pre_3_11_class_form_verbatim() {
    assert_eq!(
        parse_unittest(UNITTEST_PY310),
        map(&[
            ("Totals ignore removed items.", Passed),
            ("test_checkout (shop.test_cart.CartTests)", Skipped),
            ("test_currency (shop.test_cart.CartTests)", Error),
            ("test_discount (shop.test_cart.CartTests)", Failed),
            (
                "test_discount_rounds_down (shop.test_cart.DiscountTests)",
                Passed
            ),
            ("test_fixed_now (shop.test_cart.CartTests)", Failed),
            ("test_noisy (shop.test_cart.CartTests)", Passed),
            ("test_rounding (shop.test_cart.CartTests)", XFail),
            ("test_total (shop.test_cart.CartTests)", Passed),
        ])
    );
}

#[test]
fn unittest_keeps_the_3_11_method_form_verbatim() {
    assert_eq!(
        parse_unittest(UNITTEST_PY311),
        map(&[
            ("Totals ignore removed items.", Passed),
            (
                "test_checkout (shop.test_cart.CartTests.test_checkout)",
                Skipped
            ),
            (
                "test_currency (shop.test_cart.CartTests.test_currency)",
                Error
            ),
            (
                "test_discount (shop.test_cart.CartTests.test_discount)",
                Failed
            ),
            (
                "test_discount_rounds_down (shop.test_cart.DiscountTests.test_discount_rounds_down)",
                Passed
            ),
            (
                "test_fixed_now (shop.test_cart.CartTests.test_fixed_now)",
                Failed
            ),
            ("test_noisy (shop.test_cart.CartTests.test_noisy)", Passed),
            (
                "test_rounding (shop.test_cart.CartTests.test_rounding)",
                XFail
            ),
            ("test_total (shop.test_cart.CartTests.test_total)", Passed),
        ])
    );
}

#[test]
fn unittest_settles_a_django_test_interrupted_by_server_error_output() {
    assert_eq!(
        parse_unittest(DJANGO),
        map(&[
            ("Saving as new keeps the original object.", Failed),
            (
                "test_changelist_view (admin_views.tests.AdminViewBasicTest)",
                Passed
            ),
            (
                "test_login_redirect (admin_views.tests.AdminViewBasicTest)",
                Passed
            ),
            (
                "test_password_change (admin_views.tests.AdminViewPermissionsTest)",
                Error
            ),
            ("test_save_as_new (admin_views.tests.SaveAsTests)", Failed),
            (
                "test_unicode_delete (admin_views.tests.AdminViewUnicodeTest)",
                Skipped
            ),
        ])
    );
}

#[test]
fn parsers_are_found_by_name() {
    // The unittest parser takes everything before ` ... ` as the id, as SWE-bench's does.
    let log = "test tests::a ... ok\n";
    let found: Vec<Option<StatusMap>> = ["pytest", "cargo", "unittest", "django", "mocha"]
        .iter()
        .map(|name| parser_by_name(name).map(|parser| parser(log)))
        .collect();
    assert_eq!(
        found,
        vec![
            Some(StatusMap::new()),
            Some(map(&[("tests::a", Passed)])),
            Some(map(&[("test tests::a", Passed)])),
            Some(map(&[("test tests::a", Passed)])),
            None,
        ]
    );
}

#[test]
fn a_full_eval_log_reads_the_region_between_the_markers_and_the_exit_code_after_it() {
    assert_eq!(
        read_test_log(EVAL_CALC_GOLD, parse_pytest),
        LogReading::Ran(TestRun {
            status: calc_gold_map(),
            exit_code: Some(0),
            suite_ran: true,
            used_whole_log: false,
        })
    );
}

#[test]
fn an_empty_slice_falls_back_to_the_whole_log() {
    // stdout and stderr captured apart and concatenated: the `set -x` markers end up together
    // after all the test output, so the region between them holds no results.
    assert_eq!(
        read_test_log(EVAL_SPLIT_STREAMS, parse_pytest),
        LogReading::Ran(TestRun {
            status: calc_gold_map(),
            exit_code: Some(0),
            suite_ran: true,
            used_whole_log: true,
        })
    );
}

#[test]
fn a_run_whose_test_command_was_not_found_has_no_results_and_no_evidence() {
    assert_eq!(
        read_test_log(EVAL_COMMAND_MISSING, parse_unittest),
        LogReading::Ran(TestRun {
            status: StatusMap::new(),
            exit_code: Some(127),
            suite_ran: false,
            used_whole_log: true,
        })
    );
}

#[test]
fn sentinels_and_missing_markers_mean_nothing_ran() {
    let timed_out = format!("{EVAL_CALC_GOLD}\n>>>>> Tests Timed Out after 1800 s\n");
    let end = EVAL_CALC_GOLD.find(">>>>> End Test Output").unwrap();
    let cut_off = &EVAL_CALC_GOLD[..end - 10];
    let no_start = EVAL_CALC_GOLD.replace(">>>>> Start Test Output", "start");
    let cases = [
        (APPLY_FAILED, NotRunReason::PatchApplyFailed),
        (timed_out.as_str(), NotRunReason::TimedOut),
        (cut_off, NotRunReason::MissingEndMarker),
        (no_start.as_str(), NotRunReason::MissingStartMarker),
        (
            "+ echo '>>>>> Reset Failed'\n>>>>> Reset Failed\n",
            NotRunReason::ResetFailed,
        ),
        (
            ">>>>> Tests Errored: test_patch did not apply\n",
            NotRunReason::TestsErrored,
        ),
    ];
    for (log, reason) in cases {
        assert_eq!(read_test_log(log, parse_pytest), LogReading::NotRun(reason));
    }
}

#[test]
fn a_fake_end_marker_and_exit_code_printed_by_a_test_do_not_hide_the_real_results() {
    let log = "\
+ : '>>>>> Start Test Output'
+ pytest -rA
PASSED tests/test_a.py::test_f2p
+ : '>>>>> End Test Output'
>>>>> Test Exit Code: 0
FAILED tests/test_a.py::test_f2p - assert 1 == 2
+ ACI_TEST_EXIT_CODE=1
+ : '>>>>> End Test Output'
+ echo '>>>>> Test Exit Code: 1'
>>>>> Test Exit Code: 1
";
    assert_eq!(
        read_test_log(log, parse_pytest),
        LogReading::Ran(TestRun {
            status: map(&[("tests/test_a.py::test_f2p", Failed)]),
            exit_code: Some(1),
            suite_ran: false,
            used_whole_log: false,
        })
    );
}

#[test]
fn suite_evidence_needs_a_non_zero_count() {
    let cases = [
        ("=== 3 passed in 0.1s ===", true),
        ("==== 1 failed, 2 errors in 0.3s ====", true),
        ("Ran 5 tests in 0.412s", true),
        ("running 4 tests", true),
        ("Executed 3 of 3 SUCCESS", true),
        ("============================ no tests ran in 0.00s", false),
        ("Ran 0 tests in 0.000s", false),
        ("running 0 tests", false),
        ("\x1b[32m3 passed\x1b[0m", true),
        ("Test Suites: 1 failed, 2 passed, 3 total", true),
        ("Test Suites: 0 total", false),
        ("# tests 8", true),
        ("# tests 0", false),
        ("12 specs, 0 failures", true),
        ("case 'rendering': ok", true),
    ];
    let results: Vec<(&str, bool)> = cases
        .iter()
        .map(|(log, _)| (*log, suite_ran(log)))
        .collect();
    assert_eq!(results, cases.to_vec());
}

#[test]
fn the_recorded_exit_code_is_the_last_one() {
    assert_eq!(
        recorded_exit_code("+ echo '>>>>> Test Exit Code: 2'\n>>>>> Test Exit Code: 2\n"),
        Some(2)
    );
    assert_eq!(recorded_exit_code("no code here"), None);
}

#[test]
fn strip_ansi_removes_colour_and_cursor_sequences() {
    assert_eq!(
        strip_ansi("\x1b[31mFAILED\x1b[0m x \x1b[2K\x1b[1Gdone"),
        "FAILED x done"
    );
}
