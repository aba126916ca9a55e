//! Canaries: where each runner gets them, how `eval.sh` writes and cleans them up, and the
//! verdict on logs recorded from real evaluations of the demo instances (the gold patches and
//! patches that fool the test runner), plus unittest runs on this machine's Python and a real
//! sympy run (`canary_sympy_basic_gold.txt`: sympy__sympy-20590's gold patch on sympy 1.7 under
//! Python 3.9, graded by aci with sympy's own runner).

use super::*;
use crate::eval::parse::{parse_sympy, parse_unittest};
use crate::eval::script::{EvalScriptSpec, eval_steps, render_eval_script};

fn names() -> CanaryNames {
    CanaryNames {
        module: "test_aaaaaaaaaaaa".to_owned(),
        pass: "test_bbbbbbbbbbbb".to_owned(),
        fail: "test_cccccccccccc".to_owned(),
        terms: (2, 3),
    }
}

fn plan(parser: ParserName, test_cmd: &str, directives: &[&str]) -> GradingPlan {
    GradingPlan {
        parser,
        test_cmd: test_cmd.to_owned(),
        test_directives: directives.iter().map(|d| (*d).to_owned()).collect(),
        eval_commands: Vec::new(),
        reinstall: None,
        spec: None,
        eval_type: crate::spec::EvalType::PassAndFail,
        spec_source: None,
    }
}

/// A test patch that changes `paths` (one line each).
fn test_patch(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|path| {
            format!(
                "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
            )
        })
        .collect()
}

#[test]
fn drawn_names_are_twelve_hex_digits_and_differ_from_draw_to_draw() {
    let first = CanaryNames::draw();
    let second = CanaryNames::draw();
    for name in [&first.module, &first.pass, &first.fail] {
        let hex = name.strip_prefix("test_").unwrap();
        assert_eq!(hex.len(), 12, "{name}");
        assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    }
    assert_ne!(first.pass, first.fail);
    assert_ne!(first, second);
    let same = CanaryNames::from_words([1, 2, 2, 7]);
    assert_ne!(same.pass, same.fail, "equal words still give two names");
    assert_eq!(
        CanaryNames::from_words([1, 2, 3, 4]).module,
        "test_000000000001"
    );
}

#[test]
fn pytest_gets_a_module_of_functions_beside_the_touched_tests_found_by_discovery() {
    let patch = test_patch(&["README.md", "tests/unit/test_parser.py"]);
    let canary = canary_plan(
        &plan(ParserName::Pytest, "python -m pytest -rA", &[]),
        Some(&patch),
        names(),
    );
    assert_eq!(
        canary.files,
        vec![CanaryFile {
            path: "tests/unit/test_aaaaaaaaaaaa.py".to_owned(),
            content: "def test_bbbbbbbbbbbb():\n    assert 2 + 3 == 5\n\n\n\
                      def test_cccccccccccc():\n    assert 2 + 3 == 6\n"
                .to_owned(),
            placement: Placement::Create,
        }]
    );
    // The command names no tests: a path would narrow the run to the canaries.
    assert_eq!(canary.directive, None);
    assert!(!canary.no_fail_fast);
}

#[test]
fn a_command_that_names_its_tests_gets_the_canary_module_too() {
    let patch = test_patch(&["tests/test_parser.py"]);
    let own = canary_plan(
        &plan(ParserName::Pytest, "pytest -rA tests/test_parser.py", &[]),
        Some(&patch),
        names(),
    );
    assert_eq!(own.directive.as_deref(), Some("tests/test_aaaaaaaaaaaa.py"));
    let spec = canary_plan(
        &plan(
            ParserName::PytestV2,
            "pytest -rA",
            &["tests/test_parser.py"],
        ),
        Some(&patch),
        names(),
    );
    assert_eq!(
        spec.directive.as_deref(),
        Some("tests/test_aaaaaaaaaaaa.py")
    );
}

#[test]
fn unittest_style_tests_get_a_test_case_and_django_a_module_label() {
    let patch = test_patch(&["tests/auth_tests/test_models.py"]);
    let django = canary_plan(
        &plan(
            ParserName::Django,
            "./tests/runtests.py --verbosity 2",
            &["auth_tests.test_models"],
        ),
        Some(&patch),
        names(),
    );
    assert_eq!(
        django.directive.as_deref(),
        Some("auth_tests.test_aaaaaaaaaaaa")
    );
    assert_eq!(
        django.files[0].path,
        "tests/auth_tests/test_aaaaaaaaaaaa.py"
    );
    assert_eq!(
        django.files[0].content,
        "import unittest\n\n\nclass Testaaaaaaaaaaaa(unittest.TestCase):\n    \
         def test_bbbbbbbbbbbb(self):\n        self.assertEqual(2 + 3, 5)\n\n    \
         def test_cccccccccccc(self):\n        self.assertEqual(2 + 3, 6)\n"
    );
    let pytest_unittest = canary_plan(
        &plan(ParserName::Pytest, "pytest -rA", &[]),
        Some(
            "diff --git a/t/test_x.py b/t/test_x.py\n--- a/t/test_x.py\n+++ b/t/test_x.py\n\
              @@ -1 +1,2 @@\n class XTest(TestCase):\n+    pass\n",
        ),
        names(),
    );
    assert!(
        pytest_unittest.files[0]
            .content
            .contains("(unittest.TestCase)")
    );
}

#[test]
fn sympy_gets_plain_functions_passed_by_path() {
    let patch = test_patch(&["sympy/core/tests/test_basic.py"]);
    let canary = canary_plan(
        &plan(
            ParserName::Sympy,
            "bin/test -C --verbose",
            &["sympy/core/tests/test_basic.py"],
        ),
        Some(&patch),
        names(),
    );
    assert_eq!(
        canary.directive.as_deref(),
        Some("sympy/core/tests/test_aaaaaaaaaaaa.py")
    );
    assert!(
        canary.files[0]
            .content
            .starts_with("def test_bbbbbbbbbbbb():")
    );
}

#[test]
fn cargo_gets_two_tests_appended_to_a_touched_test_file_and_no_fail_fast() {
    let patch = test_patch(&["benches/speed.rs", "crates/core/src/buffer/tests.rs"]);
    let canary = canary_plan(
        &plan(ParserName::Cargo, "cargo test --offline", &[]),
        Some(&patch),
        names(),
    );
    assert_eq!(
        canary.files,
        vec![CanaryFile {
            path: "crates/core/src/buffer/tests.rs".to_owned(),
            content: "\n#[test]\nfn test_bbbbbbbbbbbb() {\n    assert_eq!(2 + 3, 5);\n}\n\n\
                      #[test]\nfn test_cccccccccccc() {\n    assert_eq!(2 + 3, 6);\n}\n"
                .to_owned(),
            placement: Placement::Append,
        }]
    );
    assert_eq!(canary.directive, None);
    assert!(canary.no_fail_fast);
    let swebench = canary_plan(
        &plan(ParserName::CargoSwebench, "cargo test --offline", &[]),
        Some(&patch),
        names(),
    );
    assert_eq!(
        swebench, canary,
        "SWE-bench's cargo parser reads the same runner"
    );
    let without = canary_plan(&plan(ParserName::Cargo, "cargo test", &[]), None, names());
    assert_eq!(without.files[0].path, "tests/test_aaaaaaaaaaaa.rs");
    assert_eq!(without.files[0].placement, Placement::Create);
    assert!(without.files[0].content.starts_with("#[test]\n"));
}

#[test]
fn no_fail_fast_goes_after_the_first_cargo_test_word() {
    assert_eq!(
        with_no_fail_fast("cargo test --offline -- --test-threads=1"),
        "cargo test --no-fail-fast --offline -- --test-threads=1"
    );
    assert_eq!(
        with_no_fail_fast("cd x && cargo test"),
        "cd x && cargo test --no-fail-fast"
    );
    assert_eq!(
        with_no_fail_fast("cargo test --no-fail-fast -p a"),
        "cargo test --no-fail-fast -p a"
    );
    assert_eq!(with_no_fail_fast("mycargo tests"), "mycargo tests");
}

#[test]
fn eval_sh_writes_the_canaries_right_before_the_start_marker_and_removes_them_after() {
    let spec = EvalScriptSpec {
        repo_dir: "/testbed",
        base_ref: "HEAD",
        test_patch: None,
        activate: None,
        eval_commands: &[],
        reinstall: None,
        test_cmd: "pytest -rA",
        test_directives: &["tests/test_a.py".to_owned()],
    };
    let mut steps = eval_steps(&spec);
    let canary = canary_plan(
        &plan(ParserName::Pytest, "pytest -rA", &["tests/test_a.py"]),
        Some(&test_patch(&["tests/test_a.py"])),
        names(),
    );
    add_canaries(&mut steps, &canary);
    let script = render_eval_script(&steps);
    let tail = &script[script.find("mkdir -p").unwrap()..];
    assert_eq!(
        tail,
        "mkdir -p -- tests && cat > tests/test_aaaaaaaaaaaa.py <<'ACI_CANARY_EOF'\n\
         def test_bbbbbbbbbbbb():\n    assert 2 + 3 == 5\n\n\n\
         def test_cccccccccccc():\n    assert 2 + 3 == 6\n\
         ACI_CANARY_EOF\n\
         : '>>>>> Start Test Output'\n\
         (\npytest -rA tests/test_a.py tests/test_aaaaaaaaaaaa.py\n)\n\
         ACI_TEST_EXIT_CODE=$?\n\
         : '>>>>> End Test Output'\n\
         echo \">>>>> Test Exit Code: ${ACI_TEST_EXIT_CODE}\"\n\
         rm -f -- tests/test_aaaaaaaaaaaa.py\n"
    );
}

/// Names of the canaries in the recorded logs `canary_<instance>_<case>.txt`.
fn recorded(pass: &str, fail: &str) -> CanaryNames {
    CanaryNames {
        module: String::new(),
        pass: pass.to_owned(),
        fail: fail.to_owned(),
        terms: (0, 0),
    }
}

const INICFG_GOLD: &str = include_str!("../testdata/canary_inicfg_gold.txt");
const SYMPY_GOLD: &str = include_str!("../testdata/canary_sympy_basic_gold.txt");
const RINGBUF_GOLD: &str = include_str!("../testdata/canary_ringbuf_gold.txt");

#[test]
fn gold_runs_with_their_canaries_are_trusted() {
    let inicfg = recorded("test_43a2ae36cddd", "test_8119dc57bd69");
    assert_eq!(
        verify(INICFG_GOLD, ParserName::Pytest, &inicfg, &[]),
        Ok(())
    );
    let ringbuf = recorded("test_9fc4c8e9e891", "test_5bcb34358d00");
    assert_eq!(
        verify(RINGBUF_GOLD, ParserName::Cargo, &ringbuf, &[]),
        Ok(())
    );
    // A Multilingual record's cargo parser reads the same runner: the same canaries and summary.
    assert_eq!(
        verify(RINGBUF_GOLD, ParserName::CargoSwebench, &ringbuf, &[]),
        Ok(())
    );
}

#[test]
fn a_real_sympy_run_reads_both_canaries_and_is_trusted() {
    let names = recorded("test_a7d5aa0e41b9", "test_f3a9602e60c4");
    let region = test_region(SYMPY_GOLD).unwrap();
    let status = parse_sympy(region);
    // The passing canary by its `ok` line; the failing one, whose line ends with its file's
    // `[FAIL]` and is not read (as by SWE-bench's parser), by its traceback banner.
    assert_eq!(
        (
            status.get("test_a7d5aa0e41b9"),
            status.get("test_f3a9602e60c4"),
            status.get("sympy/core/tests/test_9d3e941aea71.py:test_f3a9602e60c4"),
            status.get("test_immutable"),
        ),
        (
            Some(&TestStatus::Passed),
            None,
            Some(&TestStatus::Failed),
            Some(&TestStatus::Passed)
        )
    );
    assert_eq!(verify(SYMPY_GOLD, ParserName::Sympy, &names, &[]), Ok(()));
    // The same run with the canary module left out (a runner that was not given it, or did not
    // collect it): its summary no longer counts them either.
    let without: String = SYMPY_GOLD
        .lines()
        .filter(|line| !line.contains("test_a7d5aa0e41b9") && !line.contains("9d3e941aea71"))
        .map(|line| format!("{line}\n"))
        .collect::<String>()
        .replace("24 passed, 1 failed", "23 passed");
    assert_eq!(
        verify(&without, ParserName::Sympy, &names, &[]),
        Err(
            "the canary test that must pass (test_a7d5aa0e41b9) has no result in the log"
                .to_owned()
        )
    );
}

#[test]
fn a_patch_that_makes_test_calls_no_ops_passes_the_failing_canary() {
    let log = include_str!("../testdata/canary_inicfg_noop_runtest.txt");
    let names = recorded("test_977dd9705d30", "test_e019458700aa");
    assert_eq!(
        verify(log, ParserName::Pytest, &names, &[]),
        Err("the canary test that must fail (test_e019458700aa) is reported PASSED".to_owned())
    );
}

#[test]
fn forged_result_lines_and_an_early_exit_leave_the_canaries_out() {
    let python = include_str!("../testdata/canary_semverkit_forged_exit.txt");
    let names = recorded("test_a07d80fa102f", "test_37abd5af0279");
    assert_eq!(
        verify(python, ParserName::Pytest, &names, &[]),
        Err(
            "the canary test that must pass (test_a07d80fa102f) has no result in the log"
                .to_owned()
        )
    );
    let rust = include_str!("../testdata/canary_calc_constructor.txt");
    let names = recorded("test_be57918204eb", "test_d503f02e3ced");
    assert_eq!(
        verify(rust, ParserName::Cargo, &names, &[]),
        Err(
            "the canary test that must pass (test_be57918204eb) has no result in the log"
                .to_owned()
        )
    );
}

#[test]
fn a_forged_result_line_beside_the_real_run_disagrees_with_the_runners_summary() {
    let names = recorded("test_43a2ae36cddd", "test_8119dc57bd69");
    let forged = INICFG_GOLD.replace(
        "PASSED tests/test_writer.py::test_dump_to_file_object\n",
        "PASSED tests/test_writer.py::test_dump_to_file_object\nPASSED tests/test_x.py::test_y\n",
    );
    assert_ne!(forged, INICFG_GOLD);
    assert_eq!(
        verify(&forged, ParserName::Pytest, &names, &[]),
        Err(
            "the runner's summary counts 23 passed, 1 failed, but the log's result lines count \
             24 passed, 1 failed"
                .to_owned()
        )
    );
    let rust = recorded("test_9fc4c8e9e891", "test_5bcb34358d00");
    let forged = RINGBUF_GOLD.replace(
        "test buffer::tests::test_9fc4c8e9e891 ... ok\n",
        "test buffer::tests::test_9fc4c8e9e891 ... ok\ntest window::tests::forged ... ok\n",
    );
    assert_ne!(forged, RINGBUF_GOLD);
    assert_eq!(
        verify(&forged, ParserName::Cargo, &rust, &[]),
        Err(
            "the runner's summary counts 23 passed, 1 failed, but the log's result lines count \
             24 passed, 1 failed"
                .to_owned()
        )
    );
}

#[test]
fn a_passed_line_in_captured_output_for_a_graded_test_is_not_trusted() {
    let names = recorded("test_43a2ae36cddd", "test_8119dc57bd69");
    let header = "=========================== short test summary info";
    let forged = INICFG_GOLD.replacen(
        header,
        &format!("PASSED tests/test_x.py::test_y\n{header}"),
        1,
    );
    assert_ne!(forged, INICFG_GOLD);
    let graded = "tests/test_x.py::test_y".to_owned();
    let listed = "tests/test_parser.py::test_continuation_lines".to_owned();
    assert_eq!(
        verify(&forged, ParserName::Pytest, &names, &[&listed]),
        Ok(())
    );
    assert_eq!(
        verify(&forged, ParserName::Pytest, &names, &[&listed, &graded]),
        Err(
            "tests/test_x.py::test_y is reported passed only outside pytest's short test summary"
                .to_owned()
        )
    );
    // The ids SWE-bench's parser reads from nested runs' status lines name no node: no short
    // summary can hold them, so the parser's reading stands.
    let nested = INICFG_GOLD.replacen(header, &format!("PASSED [100%]\nPASSED [\n{header}"), 1);
    let (percent, bracket) = ("[100%]".to_owned(), "[".to_owned());
    assert_eq!(
        verify(
            &nested,
            ParserName::Pytest,
            &names,
            &[&listed, &percent, &bracket]
        ),
        Ok(())
    );
}

#[test]
fn an_exit_status_of_zero_after_a_failing_canary_is_not_trusted() {
    let names = recorded("test_43a2ae36cddd", "test_8119dc57bd69");
    let exited = INICFG_GOLD.replace(">>>>> Test Exit Code: 1", ">>>>> Test Exit Code: 0");
    assert_ne!(exited, INICFG_GOLD);
    assert_eq!(
        verify(&exited, ParserName::Pytest, &names, &[]),
        Err("the test command exited with status 0 although a canary test failed".to_owned())
    );
    let cut = &INICFG_GOLD[..INICFG_GOLD.find("=== 1 failed").unwrap()];
    let cut = format!("{cut}\n+ : '>>>>> End Test Output'\n>>>>> Test Exit Code: 1\n");
    assert_eq!(
        verify(&cut, ParserName::Pytest, &names, &[]),
        Err("the log has no summary line of the pytest runner".to_owned())
    );
}

/// Runs the eval script of `test_cmd` over a unittest project in a fresh directory with this
/// machine's bash and python3: `tests/test_calc.py`, and `calc.py` followed by `source_tail`.
fn run_unittest_project(source_tail: &str) -> (CanaryNames, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(root.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        root.join("tests/test_calc.py"),
        "import unittest\n\nimport calc\n\n\nclass CalcTests(unittest.TestCase):\n    \
         def test_add(self):\n        self.assertEqual(calc.add(2, 2), 4)\n\n    \
         def test_broken(self):\n        self.assertEqual(calc.add(2, 2), 5)\n",
    )
    .unwrap();
    std::fs::write(
        root.join("calc.py"),
        format!("def add(a, b):\n    return a + b\n{source_tail}"),
    )
    .unwrap();
    let test_cmd = "python3 -m unittest discover -v -t . -s tests";
    let names = CanaryNames::draw();
    let dir_text = root.to_str().unwrap().to_owned();
    let spec = EvalScriptSpec {
        repo_dir: &dir_text,
        base_ref: "HEAD",
        test_patch: None,
        activate: None,
        eval_commands: &[],
        reinstall: None,
        test_cmd,
        test_directives: &[],
    };
    let mut steps = eval_steps(&spec);
    steps.retain(|step| !matches!(step, EvalStep::GitHeader { .. }));
    let canary = canary_plan(
        &plan(ParserName::Unittest, test_cmd, &[]),
        Some(&test_patch(&["tests/test_calc.py"])),
        names.clone(),
    );
    add_canaries(&mut steps, &canary);
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(render_eval_script(&steps))
        .current_dir(root)
        .env("HOME", root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    assert!(
        !root.join(format!("tests/{}.py", names.module)).exists(),
        "the canary module is removed after the run"
    );
    (names, log)
}

#[test]
fn a_real_unittest_run_with_its_canaries_is_trusted_and_a_no_op_test_case_is_not() {
    let (names, log) = run_unittest_project("");
    let status = parse_unittest(test_region(&log).unwrap());
    assert!(
        status.contains_key(&format!(
            "{} (tests.{}.{}.{})",
            names.pass,
            names.module,
            names.module.replacen("test_", "Test", 1),
            names.pass
        )),
        "{log}"
    );
    assert_eq!(
        verify(&log, ParserName::Unittest, &names, &[]),
        Ok(()),
        "{log}"
    );

    // A source module the tests import that turns every test into a no-op.
    let (names, log) = run_unittest_project(
        "\nimport unittest\n\nunittest.TestCase.run = lambda self, result=None: \
         (result.startTest(self), result.addSuccess(self), result.stopTest(self))\n",
    );
    assert_eq!(
        verify(&log, ParserName::Unittest, &names, &[]),
        Err(format!(
            "the canary test that must fail ({}) is reported PASSED",
            names.fail
        )),
        "{log}"
    );
}

/// The canaries of `parser` for a record whose test command is `test_cmd` and whose test patch
/// changes `paths`.
fn language(parser: ParserName, test_cmd: &str, paths: &[&str]) -> CanaryPlan {
    canary_plan(
        &plan(parser, test_cmd, &[]),
        Some(&test_patch(paths)),
        names(),
    )
}

/// The command line `eval.sh` runs for `canary`.
fn widened(test_cmd: &str, canary: &CanaryPlan) -> String {
    let mut line = test_cmd.to_owned();
    add_to_command_line(&mut line, canary);
    line
}

#[test]
fn go_gets_two_test_functions_appended_to_the_tested_packages_file_and_run_widened() {
    let cmd = "(go test -v ./hugolib -run \"^Test.*Pages\") | cat";
    let canary = language(
        ParserName::Gotest,
        cmd,
        &["common/herrors/errors_test.go", "hugolib/pages_test.go"],
    );
    assert_eq!(
        canary.files,
        vec![CanaryFile {
            path: "hugolib/pages_test.go".to_owned(),
            content: "\nfunc Test_bbbbbbbbbbbb(t *testing.T) {\n\ta, b := 2, 3\n\
                      \tif a+b != 5 {\n\t\tt.Errorf(\"%d + %d = %d, want 5\", a, b, a+b)\n\t}\n}\n\
                      \nfunc Test_cccccccccccc(t *testing.T) {\n\ta, b := 2, 3\n\
                      \tif a+b != 6 {\n\t\tt.Errorf(\"%d + %d = %d, want 6\", a, b, a+b)\n\t}\n}\n"
                .to_owned(),
            placement: Placement::Append,
        }]
    );
    assert_eq!(
        (canary.names.pass.as_str(), canary.names.fail.as_str()),
        ("Test_bbbbbbbbbbbb", "Test_cccccccccccc")
    );
    assert_eq!(
        canary.name_filter,
        Some(NameFilter {
            flag: "-run".to_owned(),
            value: "^Test.*Pages".to_owned(),
            widened: "^Test.*Pages|^Test_bbbbbbbbbbbb$|^Test_cccccccccccc$".to_owned(),
        })
    );
    assert_eq!(
        widened(cmd, &canary),
        "(go test -v ./hugolib -run '^Test.*Pages|^Test_bbbbbbbbbbbb$|^Test_cccccccccccc$') | cat"
    );
    // The root package, `.`, and no filter.
    let root = language(
        ParserName::Gotest,
        "(go test -v .) | cat",
        &["binding/binding_test.go", "gin_test.go"],
    );
    assert_eq!(root.files[0].path, "gin_test.go");
    assert_eq!(root.name_filter, None);
    assert_eq!(
        widened("(go test -v .) | cat", &root),
        "(go test -v .) | cat"
    );
}

#[test]
fn java_gets_two_methods_inside_the_class_gradle_runs_in_junit_4_or_5() {
    let cmd =
        "(./gradlew test --tests org.apache.lucene.queries.intervals.TestIntervalBuilder) | cat";
    let canary = language(
        ParserName::GradleCustom,
        cmd,
        &[
            "lucene/queries/src/test/org/apache/lucene/queries/intervals/TestIntervals.java",
            "lucene/queries/src/test/org/apache/lucene/queries/intervals/TestIntervalBuilder.java",
        ],
    );
    assert_eq!(
        canary.files,
        vec![CanaryFile {
            path: "lucene/queries/src/test/org/apache/lucene/queries/intervals/\
                   TestIntervalBuilder.java"
                .to_owned(),
            content: "\n    @org.junit.Test\n    public void test_bbbbbbbbbbbb() {\n        \
                      org.junit.Assert.assertEquals(5, 2 + 3);\n    }\n\
                      \n    @org.junit.Test\n    public void test_cccccccccccc() {\n        \
                      org.junit.Assert.assertEquals(6, 2 + 3);\n    }\n"
                .to_owned(),
            placement: Placement::BeforeLastBrace,
        }]
    );
    assert_eq!(canary.untrusted, None);
    assert_eq!(
        widened(cmd, &canary),
        cmd,
        "the class filter already runs them"
    );

    let jupiter = canary_plan(
        &plan(ParserName::GradleCustom, "./gradlew test", &[]),
        Some(
            "diff --git a/src/test/java/a/FooTest.java b/src/test/java/a/FooTest.java\n\
             --- a/src/test/java/a/FooTest.java\n+++ b/src/test/java/a/FooTest.java\n\
             @@ -1 +1,2 @@\n import org.junit.jupiter.api.Test;\n+import java.util.List;\n",
        ),
        names(),
    );
    assert_eq!(
        jupiter.files[0].content,
        "\n    @org.junit.jupiter.api.Test\n    public void test_bbbbbbbbbbbb() {\n        \
         org.junit.jupiter.api.Assertions.assertEquals(5, 2 + 3);\n    }\n\
         \n    @org.junit.jupiter.api.Test\n    public void test_cccccccccccc() {\n        \
         org.junit.jupiter.api.Assertions.assertEquals(6, 2 + 3);\n    }\n"
    );
    let ant = language(
        ParserName::Ant,
        "(ant test) | cat",
        &["test/core/src/lombok/ValTest.java"],
    );
    assert_eq!(ant.files[0].placement, Placement::BeforeLastBrace);
    assert_eq!(ant.files[0].path, "test/core/src/lombok/ValTest.java");
}

#[test]
fn phpunit_gets_two_methods_testdox_prints_whole_inside_the_named_class() {
    let cmd = "(vendor/bin/phpunit --testdox --colors=never tests/Carbon/RoundTest.php) | cat";
    let canary = language(
        ParserName::Phpunit,
        cmd,
        &[
            "tests/CarbonImmutable/RoundTest.php",
            "tests/Carbon/RoundTest.php",
        ],
    );
    // 0–f become a–p: `--testdox` prints `test_canary_bbbbbbbbbbbb` as `Canary bbbbbbbbbbbb`.
    assert_eq!(
        canary.files,
        vec![CanaryFile {
            path: "tests/Carbon/RoundTest.php".to_owned(),
            content: "\n    public function test_canary_llllllllllll()\n    {\n        \
                      $this->assertSame(5, 2 + 3);\n    }\n\
                      \n    public function test_canary_mmmmmmmmmmmm()\n    {\n        \
                      $this->assertSame(6, 2 + 3);\n    }\n"
                .to_owned(),
            placement: Placement::BeforeLastBrace,
        }]
    );
    assert_eq!(
        (canary.names.pass.as_str(), canary.names.fail.as_str()),
        ("llllllllllll", "mmmmmmmmmmmm")
    );
}

#[test]
fn javascript_runners_get_blocks_appended_to_the_named_test_file_and_filters_widened() {
    let jest = language(
        ParserName::Jest,
        "(yarn test packages/docusaurus/src/server/__tests__/brokenLinks.test.ts --verbose) | cat",
        &[
            "packages/docusaurus/src/server/__tests__/__fixtures__/a.md",
            "packages/docusaurus/src/server/__tests__/brokenLinks.test.ts",
        ],
    );
    assert_eq!(
        jest.files,
        vec![CanaryFile {
            path: "packages/docusaurus/src/server/__tests__/brokenLinks.test.ts".to_owned(),
            content: "\nit('test_bbbbbbbbbbbb', () => {\n  if (2 + 3 !== 5) {\n    \
                      throw new Error('2 + 3 is ' + (2 + 3) + ', not 5');\n  }\n});\n\
                      \nit('test_cccccccccccc', () => {\n  if (2 + 3 !== 6) {\n    \
                      throw new Error('2 + 3 is ' + (2 + 3) + ', not 6');\n  }\n});\n"
                .to_owned(),
            placement: Placement::Append,
        }]
    );
    assert_eq!(jest.name_filter, None);

    let cmd = "(yarn jest packages/x -t \"arrow\" --verbose) | cat";
    let filtered = language(ParserName::Jest, cmd, &["packages/x/test/index.js"]);
    assert_eq!(
        widened(cmd, &filtered),
        "(yarn jest packages/x -t '(?:arrow)|test_bbbbbbbbbbbb|test_cccccccccccc' --verbose) | cat"
    );

    let vitest = language(
        ParserName::Vitest,
        "(pnpm run test packages/runtime-core/__tests__/apiWatch.spec.ts --no-watch \
         --reporter=verbose) | cat",
        &["packages/runtime-core/__tests__/apiWatch.spec.ts"],
    );
    assert_eq!(
        vitest.files[0].content,
        "\nimport * as aci_aaaaaaaaaaaa from 'vitest';\n\
         \naci_aaaaaaaaaaaa.test('test_bbbbbbbbbbbb', () => {\n  \
         aci_aaaaaaaaaaaa.expect(2 + 3).toBe(5);\n});\n\
         \naci_aaaaaaaaaaaa.test('test_cccccccccccc', () => {\n  \
         aci_aaaaaaaaaaaa.expect(2 + 3).toBe(6);\n});\n"
    );

    let cmd = "(npx qunit test/unit/src/core/Object3D.tests.js -f \"/json|clone|copy/i\") | cat";
    let qunit = language(
        ParserName::Tap,
        cmd,
        &["test/unit/src/core/Object3D.tests.js"],
    );
    assert_eq!(
        qunit.files[0].content,
        "\nQUnit.test('test_bbbbbbbbbbbb', (assert) => {\n  assert.strictEqual(2 + 3, 5);\n});\n\
         \nQUnit.test('test_cccccccccccc', (assert) => {\n  assert.strictEqual(2 + 3, 6);\n});\n"
    );
    assert_eq!(
        widened(cmd, &qunit),
        "(npx qunit test/unit/src/core/Object3D.tests.js -f \
         '/(?:json|clone|copy)|test_bbbbbbbbbbbb|test_cccccccccccc/i') | cat"
    );
    let plain = language(
        ParserName::Tap,
        "npx qunit t.js --filter=Object3D.copy",
        &["test/t.js"],
    );
    assert_eq!(
        widened("npx qunit t.js --filter=Object3D.copy", &plain),
        "npx qunit t.js '--filter=/(?:Object3D\\.copy)|test_bbbbbbbbbbbb|test_cccccccccccc/i'"
    );

    // Node's own runner: a CommonJS file of its own beside the test file, which a TypeScript
    // project's tsc (allowJs) compiles into the directory node runs.
    let node = language(
        ParserName::Tap,
        "tsc -p . && node --test --test-reporter=tap dist/test/",
        &["test/intervals.test.ts"],
    );
    assert_eq!(node.files[0].path, "test/test_aaaaaaaaaaaa.test.js");
    assert_eq!(node.files[0].placement, Placement::Create);
    assert_eq!(
        node.files[0].content,
        "'use strict';\nconst aci_aaaaaaaaaaaa = require('node:test');\n\
         \naci_aaaaaaaaaaaa('test_bbbbbbbbbbbb', () => {\n  if (2 + 3 !== 5) {\n    \
         throw new Error('2 + 3 is ' + (2 + 3) + ', not 5');\n  }\n});\n\
         \naci_aaaaaaaaaaaa('test_cccccccccccc', () => {\n  if (2 + 3 !== 6) {\n    \
         throw new Error('2 + 3 is ' + (2 + 3) + ', not 6');\n  }\n});\n"
    );

    let cmd = "(npx mocha -R tap test/unit/adapters/http.js -g 'body length') | cat";
    let mocha = language(ParserName::Tap, cmd, &["test/unit/adapters/http.js"]);
    assert!(
        mocha.files[0]
            .content
            .starts_with("\nit('test_bbbbbbbbbbbb', () => {")
    );
    assert_eq!(
        widened(cmd, &mocha),
        "(npx mocha -R tap test/unit/adapters/http.js -g \
         '(?:body length)|test_bbbbbbbbbbbb|test_cccccccccccc') | cat"
    );

    let karma = language(
        ParserName::Karma,
        "(COVERAGE=false npx karma start karma.conf.js --single-run \
         --grep=\"test/browser/render.test.js\") | cat",
        &["test/browser/focus.test.js", "test/browser/render.test.js"],
    );
    assert_eq!(karma.files[0].path, "test/browser/render.test.js");
    assert_eq!(karma.name_filter, None, "karma's --grep picks files");
}

#[test]
fn ruby_runners_get_a_test_class_or_describe_block_appended_and_dash_n_widened() {
    let cmd = "(bundle exec ruby -I test test/test_filters.rb -v -n \"/where_exp filter/\") | cat";
    let minitest = language(
        ParserName::Minitest,
        cmd,
        &["test/source/_posts/a.md", "test/test_filters.rb"],
    );
    assert_eq!(
        minitest.files,
        vec![CanaryFile {
            path: "test/test_filters.rb".to_owned(),
            content:
                "\nclass AciCanary_aaaaaaaaaaaa < (defined?(Minitest::Test) ? Minitest::Test : \
                      MiniTest::Unit::TestCase)\n  define_method(:'test_bbbbbbbbbbbb.') do\n    \
                      assert_equal(5, 2 + 3)\n  end\n\n  define_method(:'test_cccccccccccc.') do\n    \
                      assert_equal(6, 2 + 3)\n  end\nend\n"
                    .to_owned(),
            placement: Placement::Append,
        }]
    );
    assert_eq!(
        widened(cmd, &minitest),
        "(bundle exec ruby -I test test/test_filters.rb -v -n \
         '/(?:where_exp filter)|test_bbbbbbbbbbbb|test_cccccccccccc/') | cat"
    );
    let cmd = "(bundle exec ruby test/plugin/test_in_tail.rb -v -n test_ENOENT_error) | cat";
    let unit = language(ParserName::RubyUnit, cmd, &["test/plugin/test_in_tail.rb"]);
    assert!(
        unit.files[0]
            .content
            .starts_with("\nclass AciCanary_aaaaaaaaaaaa < Test::Unit::TestCase\n")
    );
    assert_eq!(
        widened(cmd, &unit),
        "(bundle exec ruby test/plugin/test_in_tail.rb -v -n \
         '/\\A(?:test_ENOENT_error)\\z|test_bbbbbbbbbbbb|test_cccccccccccc/') | cat"
    );
    let cmd = "(bundle exec rspec spec/fpm/package/deb_spec.rb --no-color --format json | \
               sed -n '/^{/,$p' | jq -r '.examples[] | \"\\(.description) - \\(.status)\"') | cat";
    let rspec = language(
        ParserName::RspecTransformedJson,
        cmd,
        &["spec/fixtures/deb/a.txt", "spec/fpm/package/deb_spec.rb"],
    );
    assert_eq!(
        rspec.files[0].content,
        "\nRSpec.describe 'AciCanary_aaaaaaaaaaaa' do\n  it 'test_bbbbbbbbbbbb' do\n    \
         expect(2 + 3).to eq(5)\n  end\n\n  it 'test_cccccccccccc' do\n    \
         expect(2 + 3).to eq(6)\n  end\nend\n"
    );
    assert_eq!(rspec.files[0].path, "spec/fpm/package/deb_spec.rb");
    assert_eq!(widened(cmd, &rspec), cmd, "sed's -n is not RSpec's");
}

#[test]
fn cpp_tests_are_appended_only_when_the_test_command_compiles_them() {
    let cmd =
        "cmake --build build --target printf-test && ctest --test-dir build -V -R printf-test";
    let gtest = language(ParserName::Googletest, cmd, &["test/printf-test.cc"]);
    assert_eq!(
        gtest.files,
        vec![CanaryFile {
            path: "test/printf-test.cc".to_owned(),
            content: "\nTEST(AciCanary_aaaaaaaaaaaa, test_bbbbbbbbbbbb) {\n    \
                      EXPECT_EQ(2 + 3, 5);\n}\n\
                      \nTEST(AciCanary_aaaaaaaaaaaa, test_cccccccccccc) {\n    \
                      EXPECT_EQ(2 + 3, 6);\n}\n"
                .to_owned(),
            placement: Placement::Append,
        }]
    );
    let doctest = language(
        ParserName::Doctest,
        "make -C build test-udt && ./build/tests/test-udt -s -r=xml",
        &["tests/src/unit-udt.cpp"],
    );
    assert_eq!(
        doctest.files[0].content,
        "\nTEST_CASE(\"AciCanary_aaaaaaaaaaaa\") {\n    SUBCASE(\"test_bbbbbbbbbbbb\") {\n        \
         CHECK(2 + 3 == 5);\n    }\n    SUBCASE(\"test_cccccccccccc\") {\n        \
         CHECK(2 + 3 == 6);\n    }\n}\n"
    );
    let prebuilt = language(
        ParserName::Googletest,
        "(ctest --test-dir build -V -R printf-test) | cat",
        &["test/printf-test.cc"],
    );
    assert_eq!(prebuilt.files, Vec::new());
    assert_eq!(
        prebuilt.untrusted.as_deref(),
        Some(
            "the test command runs test binaries built before it ((ctest --test-dir build -V -R \
             printf-test) | cat), so canaries written before it are not compiled in"
        )
    );
}

#[test]
fn runners_whose_canaries_cannot_be_placed_with_certainty_are_never_trusted() {
    let cases = [
        (
            ParserName::Maven,
            "(mvnd test -B -pl gson -Dtest=com.google.gson.FooTest#testA) | cat",
            "gson/src/test/java/com/google/gson/FooTest.java",
            "Maven runs only the tests its -Dtest options name (surefire's includes), so no \
             canary can run beside them",
        ),
        (
            ParserName::Redis,
            "(TERM=dumb ./runtest --durable --single unit/type/stream) | cat",
            "tests/unit/type/stream.tcl",
            "redis's Tcl suite runs the test units its runtest options name, and a new unit is \
             not among them",
        ),
        (
            ParserName::Jq,
            "(make check) | cat",
            "tests/jq.test",
            "jq's `make check` runs the test scripts its Makefile lists, and a new one is not \
             among them",
        ),
        (
            ParserName::MicropythonTest,
            "(cd tests && ./run-tests.py -i basics/fun) | cat",
            "tests/basics/fun_name.py",
            "MicroPython's run-tests.py runs the test directories it is given and judges each \
             test by its expected output, so no canary can be placed with certainty",
        ),
        (
            ParserName::Cucumber,
            "(bundle exec cucumber --format progress features/a.feature) | cat",
            "features/a.feature",
            "Cucumber runs feature files through the project's step definitions, so no canary \
             can be placed with certainty",
        ),
        (
            ParserName::Ant,
            "(ant test.instance) | cat",
            "test/transform/resource/before/ValInLambda.java",
            "the test patch leaves no JUnit test class (*Test.java, Test*.java) to hold the \
             canaries",
        ),
        (
            ParserName::GradleCustom,
            "(./gradlew test --tests io.reactivex.ObservableSwitchTest) | cat",
            "src/test/java/io/reactivex/ObservableConcatTest.java",
            "the test patch leaves no JUnit class that --tests io.reactivex.ObservableSwitchTest \
             names",
        ),
        (
            ParserName::Jest,
            "(yarn jest babel-parser -t \"arrow\" --verbose) | cat",
            "packages/babel-parser/test/fixtures/es2015/yield/input.js",
            "the test patch leaves no JavaScript or TypeScript test file to hold the canaries",
        ),
        (
            ParserName::Tap,
            "(npx tap test/a.js) | cat",
            "test/a.js",
            "its TAP comes from a producer other than Mocha, QUnit or node --test, whose tests need the \
             producer's own module",
        ),
        (
            ParserName::Gotest,
            "(go test -v ./...) | cat",
            "testdata/a.golden",
            "the test patch leaves no _test.go file to hold the canaries",
        ),
    ];
    for (parser, cmd, path, reason) in cases {
        let canary = language(parser, cmd, &[path]);
        assert_eq!(canary.files, Vec::new(), "{parser}");
        assert_eq!(canary.untrusted.as_deref(), Some(reason), "{parser}");
        assert_eq!(
            check(GO_LOG, parser, &canary, &[]),
            Err(format!("no canary could be placed: {reason}")),
            "{parser}"
        );
    }
}

/// A `go test -v` run of two tests and the canaries, between the markers.
const GO_LOG: &str = "+ : '>>>>> Start Test Output'\n\
    === RUN   TestRouter\n--- PASS: TestRouter (0.00s)\n\
    === RUN   Test_bbbbbbbbbbbb\n--- PASS: Test_bbbbbbbbbbbb (0.00s)\n\
    === RUN   Test_cccccccccccc\n    x_test.go:9: 2 + 3 = 5, want 6\n\
    --- FAIL: Test_cccccccccccc (0.00s)\nFAIL\nFAIL\texample.com/x\t0.003s\nFAIL\n\
    + : '>>>>> End Test Output'\n>>>>> Test Exit Code: 1\n";

#[test]
fn a_multilingual_run_is_trusted_on_its_canaries_and_exit_status_without_a_summary_compared() {
    let canary = language(ParserName::Gotest, "go test -v .", &["x_test.go"]);
    assert_eq!(check(GO_LOG, ParserName::Gotest, &canary, &[]), Ok(()));
    let passed = GO_LOG.replace("--- FAIL: Test_cccccccccccc", "--- PASS: Test_cccccccccccc");
    assert_eq!(
        check(&passed, ParserName::Gotest, &canary, &[]),
        Err("the canary test that must fail (Test_cccccccccccc) is reported PASSED".to_owned())
    );
    let exited = GO_LOG.replace("Exit Code: 1", "Exit Code: 0");
    assert_eq!(
        check(&exited, ParserName::Gotest, &canary, &[]),
        Err("the test command exited with status 0 although a canary test failed".to_owned())
    );
}

#[test]
fn each_placement_puts_the_canaries_where_it_says_and_the_script_does_the_same() {
    let file = |placement| CanaryFile {
        path: "src/FooTest.php".to_owned(),
        content: "\n    // canary\n".to_owned(),
        placement,
    };
    let class = "<?php\nclass FooTest {\n    function testA() {}\n}\n// end\n";
    assert_eq!(
        placed(Some(class.as_bytes()), &file(Placement::BeforeLastBrace)).unwrap(),
        b"<?php\nclass FooTest {\n    function testA() {}\n\n    // canary\n}\n// end\n"
    );
    assert_eq!(
        placed(Some(b"a\n"), &file(Placement::Append)).unwrap(),
        b"a\n\n    // canary\n"
    );
    assert_eq!(
        placed(None, &file(Placement::Create)).unwrap(),
        b"\n    // canary\n"
    );
    assert_eq!(
        placed(Some(b"no brace\n"), &file(Placement::BeforeLastBrace)),
        Err("src/FooTest.php has no closing brace".to_owned())
    );
    assert_eq!(
        placed(None, &file(Placement::BeforeLastBrace)),
        Err("src/FooTest.php does not exist".to_owned())
    );
    // The shell form of `eval.sh` writes the same bytes.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/FooTest.php"), class).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(write_command(&[file(Placement::BeforeLastBrace)]))
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read(dir.path().join("src/FooTest.php")).unwrap(),
        placed(Some(class.as_bytes()), &file(Placement::BeforeLastBrace)).unwrap()
    );
}
