//! The runner's summary against the result lines, on logs recorded from real runs and on every
//! log the SWE-bench harness wrote for one published Lite run (Django, sympy and pytest output of
//! many versions), where an honest run must agree.

use super::*;
use crate::eval::logs::V1_PREDICTION_APPLIED;

fn tally(items: &[(&'static str, usize)]) -> Tally {
    Tally(items.to_vec())
}

fn both(log: &str, parser: ParserName) -> (Option<Tally>, Tally) {
    (runner_tally(log, parser), line_tally(log, parser))
}

#[test]
fn pytest_counts_short_summary_lines_against_the_final_line() {
    let mixed = include_str!("../../testdata/pytest_rA_mixed.txt");
    let expected = tally(&[("passed", 3), ("failed", 3)]);
    assert_eq!(
        both(mixed, ParserName::Pytest),
        (Some(expected.clone()), expected)
    );
    // A passed test with a teardown error: pytest counts the PASSED line and the ERROR line.
    let teardown = include_str!("../../testdata/pytest_teardown_error.txt");
    let expected = tally(&[("passed", 1), ("failed", 0)]);
    assert_eq!(
        both(teardown, ParserName::Pytest),
        (Some(expected.clone()), expected)
    );
    assert_eq!(
        runner_tally(
            "==== 2 failed, 10 passed, 1 warning in 61.20s (0:01:01) ====",
            ParserName::Pytest
        ),
        Some(tally(&[("passed", 10), ("failed", 2)]))
    );
    // pytest 4.5's own suite (pytest-dev__pytest-5227), and every pytest before 5.3.
    assert_eq!(
        runner_tally(
            "===================== 1 failed, 35 passed in 1.73 seconds ======================",
            ParserName::Pytest
        ),
        Some(tally(&[("passed", 35), ("failed", 1)]))
    );
    assert_eq!(
        runner_tally(
            "============ no tests ran in 0.01s ============",
            ParserName::Pytest
        ),
        None
    );
}

#[test]
fn cargo_sums_every_binary_and_settles_lines_split_by_output() {
    for (log, passed, failed) in [
        (
            include_str!("../../testdata/cargo_two_binaries_and_doctests.txt"),
            5,
            2,
        ),
        (
            include_str!("../../testdata/cargo_nocapture_interleaved.txt"),
            5,
            2,
        ),
    ] {
        let expected = tally(&[("passed", passed), ("failed", failed)]);
        assert_eq!(
            both(log, ParserName::Cargo),
            (Some(expected.clone()), expected)
        );
    }
}

#[test]
fn unittest_counts_started_tests_and_failure_headers() {
    for log in [
        include_str!("../../testdata/eval_shop_py310.txt"),
        include_str!("../../testdata/eval_shop_py311.txt"),
    ] {
        let expected = tally(&[("ran", 9), ("failed or errored", 2)]);
        assert_eq!(
            both(log, ParserName::Unittest),
            (Some(expected.clone()), expected)
        );
    }
    let django = include_str!("../../testdata/unittest_django_interleaved.txt");
    let expected = tally(&[("ran", 5), ("failed or errored", 2)]);
    assert_eq!(
        both(django, ParserName::Django),
        (Some(expected.clone()), expected)
    );
}

#[test]
fn a_test_whose_subtests_fail_started_and_each_failed_subtest_is_counted() {
    // Python 3.11's unittest -v on a test with two failing subtests: the test's line never gets
    // an outcome, and `failures` counts the subtests.
    let log = "test_ok (m.T.test_ok) ... ok\ntest_sub (m.T.test_sub) ... \n\
               test_xf (m.T.test_xf) ... expected failure\n\
               ======================================================================\n\
               FAIL: test_sub (m.T.test_sub) (i=1)\n\
               ======================================================================\n\
               FAIL: test_sub (m.T.test_sub) (i=2)\n\
               ----------------------------------------------------------------------\n\
               Ran 3 tests in 0.004s\n\nFAILED (failures=2, expected failures=1)\n";
    let expected = tally(&[("ran", 3), ("failed or errored", 2)]);
    assert_eq!(
        both(log, ParserName::Unittest),
        (Some(expected.clone()), expected)
    );
}

#[test]
fn sympy_counts_ok_and_f_lines_against_tests_finished() {
    let log = "test_a ok\ntest_b F\ntest_c X\ntest_d f\ntest_e ok                     [FAIL]\n\n\
               ___ sympy/x/tests/test_y.py:test_b ___\n\
               ===== tests finished: 2 passed, 1 failed, 1 expected to fail, \
               1 expected to fail but passed, in 0.10 seconds =====\n";
    let expected = tally(&[("passed", 2), ("failed", 2)]);
    assert_eq!(
        both(log, ParserName::Sympy),
        (Some(expected.clone()), expected)
    );
}

#[test]
fn a_region_is_sliced_from_the_first_start_marker_to_the_last_end_marker() {
    let log = "x\n+ : '>>>>> Start Test Output'\na\n+ : '>>>>> End Test Output'\nb\n\
               + : '>>>>> End Test Output'\n";
    assert_eq!(
        test_region(log),
        Some("'\na\n+ : '>>>>> End Test Output'\nb\n+ : '")
    );
    assert_eq!(test_region("no markers"), None);
}

/// Every harness log whose test output has a runner summary: the summary agrees with the
/// result lines, as an honest run's must (else the canary check would call honest runs
/// untrusted).
#[test]
fn on_every_swe_bench_harness_log_the_runners_summary_agrees_with_the_result_lines() {
    let data = crate::eval::swebench_data_dir();
    let lite = std::fs::read_to_string(data.join("lite.jsonl")).unwrap();
    let table = crate::eval::spec::builtin();
    let records: std::collections::BTreeMap<String, serde_json::Value> = lite
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            (record["instance_id"].as_str().unwrap().to_owned(), record)
        })
        .collect();
    let listed = |record: &serde_json::Value| -> Vec<String> {
        ["FAIL_TO_PASS", "PASS_TO_PASS"]
            .iter()
            .flat_map(|field| match &record[*field] {
                serde_json::Value::String(text) => {
                    serde_json::from_str::<Vec<String>>(text).unwrap()
                }
                other => serde_json::from_value(other.clone()).unwrap(),
            })
            .collect()
    };
    let mut checked = 0;
    let mut disagree = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(data.join("harness-logs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let id = name.split('.').next().unwrap();
        let record = &records[id];
        let parser = table
            .repo(record["repo"].as_str().unwrap())
            .unwrap()
            .log_parser;
        let log = std::fs::read_to_string(&path).unwrap();
        let Some(index) = log.rfind(V1_PREDICTION_APPLIED) else {
            continue;
        };
        let region = &log[index..];
        let Some(summary) = runner_tally(region, parser) else {
            continue;
        };
        checked += 1;
        let lines = line_tally(region, parser);
        if summary != lines {
            disagree.push(format!("{id} ({parser}): summary {summary}, lines {lines}"));
        }
        if parser.is_pytest() {
            let all = (parser.parser())(region);
            let section = (parser.parser())(pytest_summary_section(region));
            let passes = |map, test: &str| {
                crate::eval::grade::lookup(map, test).is_some_and(super::TestStatus::is_pass)
            };
            for test in listed(record) {
                if passes(&all, &test) && !passes(&section, &test) {
                    disagree.push(format!(
                        "{id}: {test} passes outside the short summary only"
                    ));
                }
            }
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    assert!(checked > 100, "only {checked} logs have a summary");
}
