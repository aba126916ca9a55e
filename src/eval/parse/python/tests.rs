//! Tests of SWE-bench's Python parsers. `testdata/swebench/sympy_pretty.txt`,
//! `django_runtests.txt` and `matplotlib_artist.txt` are excerpts of the test output in real
//! SWE-bench harness logs (sympy__sympy-14308; django__django-11742, -13321 and -13551;
//! matplotlib__matplotlib-22835), with machine paths rewritten to `/testbed` and `/opt/env`; the
//! other logs there are written here in the shape of each runner's output.
//!
//! `harness-status-maps.json` holds, for each of those logs, the status map `swebench` 5.0.2's
//! own parser reads from it (a status word it does not know written `SKIPPED`, as aci reads it;
//! the words are listed). aci must read the very same map.

use super::*;
use crate::eval::parse::ParserName;
use crate::eval::parse::TestStatus::{Failed, Passed, Skipped};

const HARNESS_MAPS: &str = include_str!("../../testdata/swebench/harness-status-maps.json");

/// The logs, by file name.
const LOGS: [(&str, &str); 11] = [
    (
        "sympy_pretty.txt",
        include_str!("../../testdata/swebench/sympy_pretty.txt"),
    ),
    (
        "sympy_same_name_two_files.txt",
        include_str!("../../testdata/swebench/sympy_same_name_two_files.txt"),
    ),
    (
        "django_runtests.txt",
        include_str!("../../testdata/swebench/django_runtests.txt"),
    ),
    (
        "django_interleavings.txt",
        include_str!("../../testdata/swebench/django_interleavings.txt"),
    ),
    (
        "pytest_v2_classic.txt",
        include_str!("../../testdata/swebench/pytest_v2_classic.txt"),
    ),
    (
        "pytest_v2_endings.txt",
        include_str!("../../testdata/swebench/pytest_v2_endings.txt"),
    ),
    (
        "matplotlib_artist.txt",
        include_str!("../../testdata/swebench/matplotlib_artist.txt"),
    ),
    (
        "matplotlib_mouse_buttons.txt",
        include_str!("../../testdata/swebench/matplotlib_mouse_buttons.txt"),
    ),
    (
        "seaborn_summary.txt",
        include_str!("../../testdata/swebench/seaborn_summary.txt"),
    ),
    (
        "pytest_options_paths.txt",
        include_str!("../../testdata/swebench/pytest_options_paths.txt"),
    ),
    (
        "pytest_nested_runs.txt",
        include_str!("../../testdata/swebench/pytest_nested_runs.txt"),
    ),
];

fn log(name: &str) -> &'static str {
    LOGS.iter()
        .find(|(file, _)| *file == name)
        .map(|(_, text)| *text)
        .unwrap_or_else(|| panic!("no log {name}"))
}

fn map(entries: &[(&str, TestStatus)]) -> StatusMap {
    entries
        .iter()
        .map(|(id, status)| ((*id).to_owned(), *status))
        .collect()
}

#[test]
fn every_parser_reads_each_log_exactly_as_the_harness_parser_does() {
    let maps: serde_json::Value = serde_json::from_str(HARNESS_MAPS).unwrap();
    let maps = maps.as_object().unwrap();
    assert_eq!(maps.len(), LOGS.len());
    for (file, text) in LOGS {
        let expected = &maps[file];
        let parser = ParserName::from_name(expected["parser"].as_str().unwrap()).unwrap();
        let harness: StatusMap = serde_json::from_value(expected["status"].clone()).unwrap();
        assert!(!harness.is_empty(), "{file}");
        assert_eq!(parser.parser()(text), harness, "{file}");
    }
}

#[test]
fn pytest_reads_a_nested_run_s_progress_as_the_tests_the_dataset_lists() {
    // A test that runs pytest inside itself with `-s`: its output splits the verbose line, so
    // the status starts a line and the progress is the "test": `[ 50%]` gives `[`, `[100%]`
    // gives `[100%]`, and the last line that names a test is the one kept (`[100%]` FAILED in
    // the inner failure's output, then PASSED).
    let parsed = parse_pytest(log("pytest_nested_runs.txt"));
    assert_eq!(
        parsed,
        map(&[
            ("[", Passed),
            ("[100%]", Passed),
            ("[100%]------------------------------", Passed),
            ("testing/test_nested.py::test_inner_failure", Failed),
            ("testing/test_nested.py::test_inner_progress_dash", Passed),
            ("testing/test_nested.py::test_inner_verbose_output", Passed),
        ])
    );
}

#[test]
fn pytest_cuts_an_id_at_its_first_space_and_reads_unknown_status_words_as_neither() {
    let log = "\
PASSED tests/a.py::test_x[a b] extra
FAILED tests/a.py::test_y[1 - 2] - assert 0
XPASS tests/a.py::test_z - now passes
ERROR: file or directory not found: tests/gone.py
SKIPPED [2] tests/a.py:9: slow
PASSED
PASSEDtests/a.py::test_w ok\r
";
    assert_eq!(
        parse_pytest(log),
        map(&[
            ("tests/a.py::test_x[a", Passed),
            ("tests/a.py::test_y[1", Failed),
            ("file", Skipped),
            ("ok", Skipped),
        ])
    );
}

#[test]
fn django_reads_the_text_before_the_dots_as_the_id_however_it_looks() {
    let parsed = parse_django(log("django_runtests.txt"));
    let cf = "invalid_models_tests.test_ordinary_fields.CharFieldTests";
    // Two results run into one line: the whole text is the id.
    assert_eq!(
        parsed.get(&format!(
            "test_choices_in_max_length ({cf}) ... test_choices_named_group ({cf})"
        )),
        Some(&Passed)
    );
    assert_eq!(
        parsed.get(&format!("test_choices_named_group ({cf})")),
        None
    );
    // A docstring's first line names its test.
    assert_eq!(
        parsed.get("Two letters isn't a valid choice pair."),
        Some(&Passed)
    );
    // A `FAIL:` header gives its second word.
    assert_eq!(parsed.get("test_choices_in_max_length"), Some(&Failed));
    // A stray `ok` after a failure passes the last test seen.
    assert_eq!(
        parse_django(log("django_interleavings.txt")).get("test_h (app.tests.T)"),
        Some(&Passed)
    );
}

#[test]
fn sympy_misses_a_result_whose_line_ends_with_the_file_s_verdict() {
    assert_eq!(
        parse_sympy(log("sympy_same_name_two_files.txt")),
        map(&[
            ("test_print_basic", Failed),
            (
                "sympy/printing/tests/test_latex.py:test_print_basic_with_a_name_too_long_for_underscores",
                Failed
            ),
        ])
    );
}

#[test]
fn pytest_options_cuts_an_absolute_path_parameter_to_its_last_component() {
    let parsed = parse_pytest_options(log("pytest_options_paths.txt"));
    assert_eq!(
        parsed.get("tests/test_lint.py::test_file[/module.py]"),
        Some(&Passed)
    );
    assert_eq!(
        parsed.get("tests/test_lint.py::test_glob[/tmp/a/*.py]"),
        Some(&Passed)
    );
    assert_eq!(
        parsed.get("tests/test_lint.py::test_url[//example.org/x]"),
        Some(&Passed)
    );
}

#[test]
fn matplotlib_rewrites_mouse_buttons_to_the_numbers_the_lists_use() {
    assert_eq!(
        parse_matplotlib(log("matplotlib_mouse_buttons.txt")),
        map(&[
            (
                "lib/matplotlib/tests/test_widgets.py::test_lasso[3]",
                Failed
            ),
            (
                "lib/matplotlib/tests/test_widgets.py::test_span_selector_onselect[1]",
                Passed
            ),
        ])
    );
}

#[test]
fn parsers_are_found_by_aci_names_and_swe_bench_names() {
    let cases = [
        ("pytest", ParserName::Pytest),
        ("parse_log_pytest", ParserName::Pytest),
        ("parse_log_xarray", ParserName::Pytest),
        ("flask", ParserName::Pytest),
        ("pytest_options", ParserName::PytestOptions),
        ("parse_log_requests", ParserName::PytestOptions),
        ("parse_log_pylint", ParserName::PytestOptions),
        ("parse_log_pytest_v2", ParserName::PytestV2),
        ("parse_log_astropy", ParserName::PytestV2),
        ("parse_log_scikit", ParserName::PytestV2),
        ("parse_log_sphinx", ParserName::PytestV2),
        ("parse_log_matplotlib", ParserName::Matplotlib),
        ("parse_log_seaborn", ParserName::Seaborn),
        ("parse_log_django", ParserName::Django),
        ("django", ParserName::Django),
        ("parse_log_sympy", ParserName::Sympy),
        ("unittest", ParserName::Unittest),
        ("parse_log_cargo", ParserName::Cargo),
    ];
    for (name, parser) in cases {
        assert_eq!(ParserName::from_name(name), Some(parser), "{name}");
    }
    for unknown in ["mocha", "parse_log_mocha", "PYTEST", ""] {
        assert_eq!(ParserName::from_name(unknown), None, "{unknown}");
    }
    for parser in ParserName::ALL {
        assert_eq!(ParserName::from_name(parser.as_str()), Some(parser));
    }
    assert_eq!(
        ParserName::names(),
        "pytest, pytest_options, pytest_v2, matplotlib, seaborn, django, sympy, unittest, cargo, \
         cargo_swebench, phpunit, gotest, rspec_transformed_json, karma, ant, maven, redis, \
         ruby_unit, googletest, gradle_custom, jest, jest_json, tap, jq, minitest, cucumber, \
         micropython_test, vitest, doctest"
    );
}
