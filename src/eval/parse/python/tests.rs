//! Tests of SWE-bench's Python parsers. `testdata/swebench/sympy_pretty.txt`,
//! `django_runtests.txt` and `matplotlib_artist.txt` are excerpts of the test output in real
//! SWE-bench harness logs (sympy__sympy-14308; django__django-11742, -13321 and -13551;
//! matplotlib__matplotlib-22835), with machine paths rewritten to `/testbed` and `/opt/env`;
//! `pytest_v2_classic.txt` and the inline logs are written here in the shape of each runner's
//! output.

use super::*;
use crate::eval::parse::ParserName;
use crate::eval::parse::TestStatus::{Error, Failed, Passed, Skipped, XFail};

const SYMPY: &str = include_str!("../../testdata/swebench/sympy_pretty.txt");
const DJANGO: &str = include_str!("../../testdata/swebench/django_runtests.txt");
const MATPLOTLIB: &str = include_str!("../../testdata/swebench/matplotlib_artist.txt");
const PYTEST_V2: &str = include_str!("../../testdata/swebench/pytest_v2_classic.txt");

fn map(entries: &[(&str, TestStatus)]) -> StatusMap {
    entries
        .iter()
        .map(|(id, status)| ((*id).to_owned(), *status))
        .collect()
}

#[test]
fn sympy_reads_ok_f_e_x_lines_failure_banners_and_the_last_test_of_each_file() {
    let pretty = "sympy/printing/pretty/tests/test_pretty.py";
    let vector = "sympy/vector/tests/test_printing.py";
    let banner = |file: &str, test: &str| format!("{file}:{test}");
    let mut expected = map(&[
        ("test_pretty_ascii_str", Passed),
        ("test_pretty_unicode_str", Passed),
        ("test_upretty_greek", Passed),
        ("test_upretty_multiindex", Passed),
        ("test_upretty_sub_super", Passed),
        ("test_upretty_subs_missing_in_24", Passed),
        // `X`: an expected failure that passed, which sympy counts as a failure.
        ("test_missing_in_2X_issue_9047", Failed),
        ("test_pretty_relational", Passed),
        ("test_pretty_matrix", Passed),
        ("test_pretty_ImageSet", Passed),
        ("test_pretty_Domain", Passed),
        ("test_meijerg", Passed),
        ("test_pretty_geometry", Error),
        ("test_Tr", Passed),
        ("test_issue_8292", Error),
        ("test_issue_8344", Error),
        ("test_pretty_Mod", Passed),
        ("test_issue_12675", Failed),
        // The last test of each file, with the file's `[FAIL]` after it.
        ("test_vector_expr_pretty_printing", Passed),
        ("test_pretty_print_unicode", Failed),
        ("test_custom_names", Passed),
        // `test_pretty_printing_ascii f` (an expected failure) is not recorded.
    ]);
    for (file, test) in [
        (pretty, "test_pretty_geometry"),
        (pretty, "test_issue_8292"),
        (pretty, "test_issue_8344"),
        (pretty, "test_issue_12675"),
        (vector, "test_pretty_print_unicode"),
    ] {
        expected.insert(banner(file, test), Failed);
    }
    assert_eq!(parse_sympy(SYMPY), expected);
}

#[test]
fn sympy_reads_a_banner_without_underscores_and_keeps_the_worse_of_a_name_printed_twice() {
    // Two files with a test of the same name: the bare id is shared, the worse result wins.
    let log = "\
sympy/printing/tests/test_latex.py[2] 
test_print_basic F
test_other ok                                                               [FAIL]

sympy/printing/tests/test_str.py[1] 
test_print_basic ok                                                         [OK]

test_image_interval - Took 62.004 seconds
 sympy/printing/tests/test_latex.py:test_print_basic_with_a_name_too_long_for_underscores 
";
    assert_eq!(
        parse_sympy(log),
        map(&[
            ("test_print_basic", Failed),
            ("test_other", Passed),
            (
                "sympy/printing/tests/test_latex.py:test_print_basic_with_a_name_too_long_for_underscores",
                Failed
            ),
        ])
    );
}

#[test]
fn django_reads_docstring_descriptions_run_together_lines_and_subtest_failures() {
    let cf = "invalid_models_tests.test_ordinary_fields.CharFieldTests";
    let session = "sessions_tests.tests.CookieSessionTests";
    let tokens = "auth_tests.test_tokens.TokenGeneratorTest";
    let models = "auth_tests.test_models.UserWithPermTestCase";
    let id = |test: &str, class: &str| format!("{test} ({class})");
    let mut expected = StatusMap::new();
    for test in [
        "test_choices_containing_non_pairs",
        // Printed after `test_choices_in_max_length (…) ... ` on the same line.
        "test_choices_named_group",
        "test_choices_named_group_bad_structure",
        "test_choices_named_group_lazy",
        "test_choices_named_group_non_pairs",
        "test_iterable_of_iterable_choices",
        "test_lazy_choices",
        "test_missing_max_length",
        "test_negative_max_length",
        "test_non_iterable_choices",
        "test_str_max_length_type",
        "test_str_max_length_value",
        "test_valid_field",
    ] {
        expected.insert(id(test, cf), Passed);
    }
    // A test with a docstring is named by the docstring's first line, as in SWE-bench's lists.
    expected.insert("Two letters isn't a valid choice pair.".to_owned(), Passed);
    expected.insert(id("test_too_long_char_field_under_mysql", cf), Skipped);
    // Its subtests failed: the headers name them, and the test itself.
    expected.insert(id("test_choices_in_max_length", cf), Failed);
    expected.insert(
        format!("{} [field]", id("test_choices_in_max_length", cf)),
        Failed,
    );
    expected.insert(
        format!("{} [group]", id("test_choices_in_max_length", cf)),
        Failed,
    );
    // `test_actual_expiry ... expected failure` is not recorded.
    for test in [
        "test_clear",
        "test_custom_expiry_datetime",
        "test_custom_expiry_reset",
        "test_custom_expiry_seconds",
        "test_custom_expiry_timedelta",
        "test_cycle",
        "test_cycle_with_no_session_cache",
        "test_decode",
        "test_decode_legacy",
    ] {
        expected.insert(id(test, session), Passed);
    }
    for test in [
        "test_10265",
        "test_check_token_with_nonexistent_token_and_user",
        "test_legacy_token_validation",
        "test_make_token",
        "test_token_default_hashing_algorithm",
        "test_token_with_different_secret",
        "test_token_with_different_email",
    ] {
        expected.insert(id(test, tokens), Error);
    }
    expected.insert(
        "The token is valid after n seconds, but no greater.".to_owned(),
        Error,
    );
    expected.insert(
        format!(
            "{} [<object object at 0x7f059b178b40>] (email=None, model='CustomEmailField')",
            id("test_token_with_different_email", tokens)
        ),
        Error,
    );
    expected.insert(id("test_backend_without_with_perm", models), Passed);
    expected.insert(id("test_basic", models), Passed);
    assert_eq!(parse_django(DJANGO), expected);
}

#[test]
fn django_settles_a_result_interrupted_by_output_on_the_line_that_starts_with_ok() {
    // SWE-bench's three interleavings, a migration message run into a result, a lone FAIL, and
    // outcomes SWE-bench does not record as passes.
    let log = "\
test_a (app.tests.T) ... Testing against Django installed in '/testbed/django' with up to 4 processes
Importing application app
System check identified no issues (0 silenced).
ok
test_b (app.tests.T) ... Internal Server Error: /admin/x/
ok
test_c (app.tests.T) ... System check identified no issues (0 silenced)
ok
Applying sites.0002_alter_domain_unique...test_d (migrations.tests.T) ... ok
test_e (app.tests.T) ... printed output
FAIL
test_f (app.tests.T) ... expected failure
test_g (app.tests.T) ... unexpected success
test_h (app.tests.T) ... FAIL
ok
----------------------------------------------------------------------
Ran 8 tests in 0.1s

OK
";
    assert_eq!(
        parse_django(log),
        map(&[
            ("test_a (app.tests.T)", Passed),
            ("test_b (app.tests.T)", Passed),
            ("test_c (app.tests.T)", Passed),
            ("test_d (migrations.tests.T)", Passed),
            ("test_e (app.tests.T)", Failed),
            ("test_g (app.tests.T)", Failed),
            // A stray `ok` after a result does not turn a failure into a pass (SWE-bench's does).
            ("test_h (app.tests.T)", Failed),
        ])
    );
}

#[test]
fn pytest_v2_reads_colour_codes_classic_verbose_lines_and_a_test_printed_twice() {
    assert!(PYTEST_V2.contains("\x1b[32mPASSED\x1b[0m"));
    assert!(PYTEST_V2.contains("[31mFAILED[0m"));
    let file = "astropy/units/tests/test_quantity.py";
    let id = |test: &str| format!("{file}::{test}");
    let expected: StatusMap = [
        (id("test_quantity_creation"), Passed),
        (id("test_unit_in_name[m s]"), Passed),
        (id("test_unit_in_name[km / h]"), Failed),
        (id("test_repr_latex"), XFail),
        (id("test_pickle"), Skipped),
        // PASSED, then ERROR at teardown: the worse status.
        (id("test_teardown"), Error),
    ]
    .into_iter()
    .collect();
    assert_eq!(parse_pytest_v2(PYTEST_V2), expected);
}

#[test]
fn pytest_v2_ignores_lines_that_only_end_with_a_status_word() {
    let log = "\
all tests PASSED
collected 3 items / 1 ERROR
PASSED
x::t XPASS
";
    assert_eq!(parse_pytest_v2(log), StatusMap::new());
}

#[test]
fn matplotlib_keeps_parametrized_ids_with_spaces_and_brackets_and_rewrites_mouse_buttons() {
    let parsed = parse_matplotlib(MATPLOTLIB);
    let file = "lib/matplotlib/tests/test_artist.py";
    assert_eq!(parsed.len(), 29);
    assert_eq!(
        parsed.get(&format!(
            "{file}::test_artist_inspector_get_valid_values[ACCEPTS: [ '-' | '--' | '-.' ]-[ '-' | '--' | '-.' ]]"
        )),
        Some(&Passed)
    );
    assert_eq!(
        parsed.get(&format!(
            "{file}::test_artist_inspector_get_valid_values[arg : int\\nACCEPTS: Something else.-Something else. ]"
        )),
        Some(&Passed)
    );
    assert_eq!(
        parsed.get(&format!("{file}::test_format_cursor_data_BoundaryNorm")),
        Some(&Failed)
    );
    let buttons = "\
PASSED lib/matplotlib/tests/test_widgets.py::test_span_selector_onselect[MouseButton.LEFT]
FAILED lib/matplotlib/tests/test_widgets.py::test_lasso[MouseButton.RIGHT] - assert 0
";
    assert_eq!(
        parse_matplotlib(buttons),
        map(&[
            (
                "lib/matplotlib/tests/test_widgets.py::test_span_selector_onselect[1]",
                Passed
            ),
            (
                "lib/matplotlib/tests/test_widgets.py::test_lasso[3]",
                Failed
            ),
        ])
    );
}

#[test]
fn seaborn_reads_passes_and_failures_but_not_expected_failures() {
    let log = "\
tests/test_core.py::TestHueMapping::test_init_from_map PASSED            [ 10%]
tests/test_core.py::TestHueMapping::test_plotter_default_init FAILED     [ 20%]
=========================== short test summary info ============================
PASSED tests/test_core.py::TestHueMapping::test_init_from_map
XFAIL tests/test_core.py::TestHueMapping::test_hue_map_null - pandas bug
SKIPPED [1] tests/test_core.py:88: needs scipy
FAILED tests/test_core.py::TestHueMapping::test_plotter_default_init - AssertionError
ERROR tests/test_relational.py - ImportError: cannot import name 'x'
";
    assert_eq!(
        parse_seaborn(log),
        map(&[
            (
                "tests/test_core.py::TestHueMapping::test_init_from_map",
                Passed
            ),
            (
                "tests/test_core.py::TestHueMapping::test_plotter_default_init",
                Failed
            ),
            ("tests/test_relational.py", Error),
        ])
    );
}

#[test]
fn pytest_options_cuts_an_absolute_path_parameter_to_its_last_component() {
    let log = "\
PASSED tests/test_lint.py::test_file[/tmp/pytest-of-root/pytest-3/test_file0/module.py]
PASSED tests/test_lint.py::test_glob[/tmp/a/*.py]
PASSED tests/test_lint.py::test_url[//example.org/x]
ERROR tests/test_requests.py::TestRequests::test_unicode_get[/get-params0]
FAILED tests/test_requests.py::TestTimeout::test_invalid_timeout[foo-must be an int or float] - x
";
    assert_eq!(
        parse_pytest_options(log),
        map(&[
            ("tests/test_lint.py::test_file[/module.py]", Passed),
            ("tests/test_lint.py::test_glob[/tmp/a/*.py]", Passed),
            ("tests/test_lint.py::test_url[//example.org/x]", Passed),
            (
                "tests/test_requests.py::TestRequests::test_unicode_get[/get-params0]",
                Error
            ),
            (
                "tests/test_requests.py::TestTimeout::test_invalid_timeout[foo-must be an int or float]",
                Failed
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
    for unknown in ["jest", "parse_log_jest", "PYTEST", ""] {
        assert_eq!(ParserName::from_name(unknown), None, "{unknown}");
    }
    for parser in ParserName::ALL {
        assert_eq!(ParserName::from_name(parser.as_str()), Some(parser));
    }
    assert_eq!(
        ParserName::names(),
        "pytest, pytest_options, pytest_v2, matplotlib, seaborn, django, sympy, unittest, cargo"
    );
}
