//! Placing tripwires: pytest, Django, unittest, sympy and cargo ids; docstrings, comments,
//! classes and modules; what stays unchecked; and the verdict on the run's log.

use super::*;

const TERMS: Terms = Terms(4821, 4822);

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn texts(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
        .collect()
}

fn planted(parser: ParserName, list: &[&str], files: &[(&str, &str)]) -> TripwirePlan {
    plan(&targets(parser, &ids(list)), &texts(files), TERMS)
}

fn has_no_syntax_error(path: &str, text: &str) -> bool {
    let language = if path.ends_with(".rs") {
        Language::Rust
    } else {
        Language::Python
    };
    !new_parser(language)
        .unwrap()
        .parse(text, None)
        .unwrap()
        .root_node()
        .has_error()
}

#[test]
fn pytest_functions_methods_and_parameters_get_an_assertion_after_their_docstring() {
    let source = "import pytest\n\n\ndef test_a():\n    \"\"\"Docs.\n\n    More.\n    \"\"\"\n    # why\n    x = 1\n    assert x\n\n\n@pytest.mark.parametrize(\"v\", [1, 2])\ndef test_b(v):\n\tassert v\n\n\nclass TestC:\n    def test_d(self):\n        \"\"\"Only a docstring.\"\"\"\n\n    def test_e(self): assert True\n";
    let plan = planted(
        ParserName::Pytest,
        &[
            "tests/test_x.py::test_a",
            "tests/test_x.py::test_b[1]",
            "tests/test_x.py::test_b[2]",
            "tests/test_x.py::TestC::test_d",
            "tests/test_x.py::TestC::test_e",
            "tests/test_x.py::TestC::test_missing",
            "tests/test_x.py::test_d",
        ],
        &[("tests/test_x.py", source)],
    );
    assert_eq!(
        plan.checked,
        [
            "tests/test_x.py::test_a",
            "tests/test_x.py::test_b[1]",
            "tests/test_x.py::test_b[2]",
            "tests/test_x.py::TestC::test_d"
        ]
    );
    assert_eq!(
        plan.unchecked,
        [
            "tests/test_x.py::TestC::test_e",
            "tests/test_x.py::TestC::test_missing",
            "tests/test_x.py::test_d"
        ]
    );
    let text = &plan.files["tests/test_x.py"];
    assert_eq!(
        text,
        "import pytest\n\n\ndef test_a():\n    \"\"\"Docs.\n\n    More.\n    \"\"\"\n    # why\n    assert 4821 == 4822\n    x = 1\n    assert x\n\n\n@pytest.mark.parametrize(\"v\", [1, 2])\ndef test_b(v):\n\tassert 4821 == 4822\n\tassert v\n\n\nclass TestC:\n    def test_d(self):\n        \"\"\"Only a docstring.\"\"\"\n        assert 4821 == 4822\n\n    def test_e(self): assert True\n"
    );
    assert!(has_no_syntax_error("tests/test_x.py", text));
}

#[test]
fn unittest_style_methods_use_assert_equal_and_django_ids_name_their_module() {
    let source = "from django.test import TestCase\n\n\nclass URLFieldTest(TestCase):\n    def test_clean(self):\n        self.assertEqual(1, 1)\n\n    def test_documented(self):\n        \"\"\"\n        The table is not created if there are no migrations.\n        \"\"\"\n        self.assertTrue(True)\n";
    let plan = planted(
        ParserName::Django,
        &[
            "test_clean (forms_tests.field_tests.test_urlfield.URLFieldTest)",
            "test_clean (forms_tests.field_tests.test_urlfield.URLFieldTest.test_clean)",
            "The table is not created if there are no migrations.",
            "A docstring no test has",
            "test_clean (other.Module)",
        ],
        &[("tests/forms_tests/field_tests/test_urlfield.py", source)],
    );
    assert_eq!(plan.checked.len(), 3, "{plan:?}");
    assert_eq!(
        plan.unchecked,
        ["A docstring no test has", "test_clean (other.Module)"]
    );
    let text = &plan.files["tests/forms_tests/field_tests/test_urlfield.py"];
    assert_eq!(text.matches("self.assertEqual(4821, 4822)\n").count(), 2);
    assert!(text.contains(
        "    def test_clean(self):\n        self.assertEqual(4821, 4822)\n        self.assertEqual(1, 1)\n"
    ));
    assert!(has_no_syntax_error("t.py", text));
    // unittest's module is relative to the repository.
    assert_eq!(
        targets(ParserName::Unittest, &ids(&["test_x (pkg.tests.Case)"]))[0].file,
        Some("pkg/tests.py".to_owned())
    );
}

#[test]
fn sympy_ids_are_found_in_the_test_patch_files() {
    let source = "def test_latex_functions():\n    assert latex(x) == 'x'\n";
    let plan = planted(
        ParserName::Sympy,
        &["test_latex_functions", "test_elsewhere"],
        &[("sympy/printing/tests/test_latex.py", source)],
    );
    assert_eq!(plan.checked, ["test_latex_functions"]);
    assert_eq!(plan.unchecked, ["test_elsewhere"]);
    assert_eq!(
        files_to_read(
            &targets(ParserName::Sympy, &ids(&["test_latex_functions"])),
            &ids(&["sympy/printing/tests/test_latex.py", "doc/x.txt"])
        ),
        ["sympy/printing/tests/test_latex.py"]
    );
}

#[test]
fn cargo_ids_follow_module_paths_into_files_and_inline_modules() {
    let tests_rs = "use super::*;\n\n#[test]\nfn grows() {\n    assert_eq!(1, 1);\n}\n\n#[test]\n#[should_panic]\nfn panics() {\n    panic!();\n}\n";
    let lib_rs = "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn works() { assert!(true); }\n\n    #[tokio::test(flavor = \"current_thread\")]\n    async fn awaits() {}\n\n    fn helper() {}\n}\n";
    let plan = planted(
        ParserName::Cargo,
        &[
            "buffer::tests::grows",
            "buffer::tests::panics",
            "tests::works",
            "tests::awaits",
            "tests::helper",
            "other::tests::grows",
        ],
        &[("src/buffer/tests.rs", tests_rs), ("src/lib.rs", lib_rs)],
    );
    assert_eq!(
        plan.checked,
        ["buffer::tests::grows", "tests::works", "tests::awaits"]
    );
    assert_eq!(
        plan.unchecked,
        [
            "buffer::tests::panics",
            "tests::helper",
            "other::tests::grows"
        ]
    );
    assert!(
        plan.files["src/buffer/tests.rs"]
            .contains("fn grows() { assert_eq!(4821, 4822);\n    assert_eq!(1, 1);\n}")
    );
    assert!(
        plan.files["src/lib.rs"].contains("fn works() { assert_eq!(4821, 4822); assert!(true); }")
    );
    assert!(plan.files["src/lib.rs"].contains("async fn awaits() { assert_eq!(4821, 4822);}"));
    for (path, text) in &plan.files {
        assert!(has_no_syntax_error(path, text), "{path}");
    }
    assert_eq!(rust_module_path("src/lib.rs"), Vec::<String>::new());
    assert_eq!(rust_module_path("crates/x/src/a/mod.rs"), ["a"]);
    assert_eq!(rust_module_path("src/bin/tool/cli.rs"), ["cli"]);
    assert_eq!(rust_module_path("tests/it.rs"), Vec::<String>::new());
    assert_eq!(rust_module_path("tests/it/common.rs"), ["common"]);
}

/// Every FAIL_TO_PASS test of the demo set is found in its repository's files with the test
/// patch applied, and the files still parse.
#[test]
fn every_fail_to_pass_test_of_the_demo_set_carries_a_tripwire() {
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo");
    let loaded = crate::instance::load_instances_file(&demo.join("instances.jsonl")).unwrap();
    for instance in &loaded.instances {
        let parser = ParserName::from_name(instance.log_parser.as_deref().unwrap()).unwrap();
        let repo = demo.join(instance.repo_path.as_ref().unwrap());
        let test_patch = instance.test_patch.as_deref().unwrap();
        let files: Vec<String> = crate::eval::script::patch_files(test_patch)
            .into_iter()
            .filter_map(|change| change.new_path)
            .collect();
        let wanted = targets(parser, &instance.fail_to_pass);
        let mut read = BTreeMap::new();
        for path in files_to_read(&wanted, &files) {
            // The test patch's files as the patch leaves them: the demo's test patches only
            // add tests, so the added functions are appended to the base text for this check.
            if let Ok(base) = std::fs::read_to_string(repo.join(&path)) {
                read.insert(path.clone(), base);
            }
        }
        let applied = apply_added_functions(&read, test_patch);
        let plan = plan(&wanted, &applied, TERMS);
        assert_eq!(
            plan.checked, instance.fail_to_pass,
            "{}",
            instance.instance_id
        );
        for (path, text) in &plan.files {
            assert!(has_no_syntax_error(path, text), "{path}");
        }
    }
}

/// The demo test patches add whole tests: their added lines are appended to each file (enough
/// for the functions to be found; the files need not be byte-exact for this check).
fn apply_added_functions(
    read: &BTreeMap<String, String>,
    test_patch: &str,
) -> BTreeMap<String, String> {
    let mut out = read.clone();
    let mut current: Option<String> = None;
    for line in test_patch.lines() {
        if let Some(path) = line.strip_prefix("+++ b/") {
            current = Some(path.to_owned());
            out.entry(path.to_owned()).or_default();
        } else if let Some(added) = line.strip_prefix('+')
            && let Some(path) = &current
        {
            let text = out.entry(path.clone()).or_default();
            text.push_str(added);
            text.push('\n');
        }
    }
    out
}

#[test]
fn the_run_is_confirmed_only_when_every_checked_test_that_passed_first_fails_now() {
    let status: StatusMap = [
        ("a".to_owned(), TestStatus::Failed),
        ("b".to_owned(), TestStatus::Error),
        ("c".to_owned(), TestStatus::XFail),
        ("d".to_owned(), TestStatus::Passed),
        ("e".to_owned(), TestStatus::Skipped),
    ]
    .into_iter()
    .collect();
    let checked = ids(&["a", "b", "c", "d", "e", "f"]);
    assert_eq!(judge(&status, &checked, &ids(&["a", "b", "c"])), Ok(()));
    assert_eq!(
        judge(&status, &checked, &ids(&["a", "d"])),
        Err(
            "d is reported PASSED in the tripwire run, where its first statement is an assertion \
             that fails: its result does not come from its body"
                .to_owned()
        )
    );
    assert!(
        judge(&status, &checked, &ids(&["e"]))
            .unwrap_err()
            .starts_with("e is reported SKIPPED")
    );
    assert!(
        judge(&status, &checked, &ids(&["f"]))
            .unwrap_err()
            .starts_with("f has no result")
    );
    // A test that is not checked, or did not pass first, is not judged.
    assert_eq!(judge(&status, &ids(&["a"]), &ids(&["d"])), Ok(()));
    // An errored enclosing node (a collection error) counts as the test failing.
    let collection: StatusMap = [("tests/test_x.py".to_owned(), TestStatus::Error)]
        .into_iter()
        .collect();
    let id = ids(&["tests/test_x.py::test_a"]);
    assert_eq!(judge(&collection, &id, &id), Ok(()));
}

#[test]
fn terms_always_differ() {
    for word in [0, 1, u64::MAX, 0xdead_beef, 1 << 40] {
        let Terms(a, b) = Terms::from_word(word);
        assert!(
            a != b && (1000..20000).contains(&a) && b > a,
            "{word}: {a} {b}"
        );
    }
}
