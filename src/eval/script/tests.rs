use super::*;

/// A test patch that modifies, creates and deletes test files, touches a data file, and removes
/// a SQL comment line (`--- ...` inside a hunk).
const TEST_PATCH: &str = "\
diff --git a/tests/test_calc.py b/tests/test_calc.py
index 1111111..2222222 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,3 +1,6 @@
 from calc import div
 
 def test_div():
     assert div(4, 2) == 2
+
+def test_div_zero():
+    assert div(1, 0) is None
diff --git a/tests/test_new.py b/tests/test_new.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/tests/test_new.py
@@ -0,0 +1,2 @@
+def test_new():
+    assert True
diff --git a/tests/test_old.py b/tests/test_old.py
deleted file mode 100644
index 4444444..0000000
--- a/tests/test_old.py
+++ /dev/null
@@ -1 +0,0 @@
-def test_old(): pass
diff --git a/tests/fixtures/schema.sql b/tests/fixtures/schema.sql
index 5555555..6666666 100644
--- a/tests/fixtures/schema.sql
+++ b/tests/fixtures/schema.sql
@@ -1,2 +1 @@
--- drop me
 CREATE TABLE t (x int);
diff --git a/tests/data.json b/tests/data.json
index 7777777..8888888 100644
--- a/tests/data.json
+++ b/tests/data.json
@@ -1 +1 @@
-{}
+{\"a\": 1}
";

fn change(old: Option<&str>, new: Option<&str>) -> FileChange {
    FileChange {
        old_path: old.map(str::to_owned),
        new_path: new.map(str::to_owned),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn patch_files_reads_created_deleted_and_modified_files_and_skips_hunk_bodies() {
    assert_eq!(
        patch_files(TEST_PATCH),
        vec![
            change(Some("tests/test_calc.py"), Some("tests/test_calc.py")),
            change(None, Some("tests/test_new.py")),
            change(Some("tests/test_old.py"), None),
            change(
                Some("tests/fixtures/schema.sql"),
                Some("tests/fixtures/schema.sql")
            ),
            change(Some("tests/data.json"), Some("tests/data.json")),
        ]
    );
}

#[test]
fn patch_files_handles_spaces_renames_and_quoted_names_as_git_writes_them() {
    // Recorded from `git diff --cached` (headers only; hunk bodies trimmed to match counts).
    let patch = "\
diff --git a/brand new.py b/brand new.py
new file mode 100644
index 0000000..8ba3a16
--- /dev/null
+++ b/brand new.py\t
@@ -0,0 +1 @@
+n
diff --git a/sp ace.py b/new sp.py
similarity index 50%
rename from sp ace.py
rename to new sp.py
index 7898192..422c2b7 100644
--- a/sp ace.py\t
+++ b/new sp.py\t
@@ -1 +1,2 @@
 a
+b
diff --git \"a/tab\\tname.py\" \"b/tab\\tname.py\"
index 718f4d2..393b55b 100644
--- \"a/tab\\tname.py\"
+++ \"b/tab\\tname.py\"
@@ -1 +1,2 @@
 t
+u
diff --git \"a/\\303\\251.py\" \"b/\\303\\251.py\"
index c1b0730..5aad937 100644
--- \"a/\\303\\251.py\"
+++ \"b/\\303\\251.py\"
@@ -1 +1 @@
-x
\\ No newline at end of file
+xy
diff --git a/pure move.py b/moved/pure move.py
similarity index 100%
rename from pure move.py
rename to moved/pure move.py
";
    assert_eq!(
        patch_files(patch),
        vec![
            change(None, Some("brand new.py")),
            change(Some("sp ace.py"), Some("new sp.py")),
            change(Some("tab\tname.py"), Some("tab\tname.py")),
            change(Some("é.py"), Some("é.py")),
            change(Some("pure move.py"), Some("moved/pure move.py")),
        ]
    );
}

#[test]
fn patch_files_reads_a_plain_unified_diff_without_git_headers() {
    let patch = "\
--- a/one.py\t2024-01-01 00:00:00
+++ b/one.py\t2024-01-02 00:00:00
@@ -1 +1 @@
-x
+y
--- a/two.py
+++ b/two.py
@@ -1 +1 @@
-x
+y
";
    assert_eq!(
        patch_files(patch),
        vec![
            change(Some("one.py"), Some("one.py")),
            change(Some("two.py"), Some("two.py")),
        ]
    );
}

#[test]
fn test_files_resets_what_exists_at_base_and_removes_what_the_patch_creates() {
    assert_eq!(
        test_files(TEST_PATCH),
        TestFiles {
            reset: strings(&[
                "tests/test_calc.py",
                "tests/test_old.py",
                "tests/fixtures/schema.sql",
                "tests/data.json",
            ]),
            created: strings(&["tests/test_new.py"]),
        }
    );
}

/// A spec with the given test patch and command, and nothing else.
fn plain_spec<'a>(
    repo_dir: &'a str,
    base_ref: &'a str,
    test_patch: Option<&'a str>,
    test_cmd: &'a str,
    test_directives: &'a [String],
) -> EvalScriptSpec<'a> {
    EvalScriptSpec {
        repo_dir,
        base_ref,
        test_patch,
        activate: None,
        eval_commands: &[],
        reinstall: None,
        test_cmd,
        test_directives,
    }
}

/// The lines every script starts with, for `repo_dir` (already quoted) and `base`.
fn preamble_and_header(dir: &str, base: &str) -> String {
    format!(
        "\
#!/bin/bash
exec 2>&1
set -uxo pipefail
cd {dir} || {{ echo '>>>>> Reset Failed'; exit 1; }}
git config --global --add safe.directory {dir}
aci_inert() {{ sed -e 's/>\\{{5\\}}/>>>>_/g' -e 's/^/| /'; }}
git status 2>&1 | head -c 1048576 | aci_inert
git show -s 2>&1 | aci_inert
git -c core.fileMode=false diff {base} 2>&1 | head -c 1048576 | aci_inert
"
    )
}

#[test]
fn eval_script_has_swe_bench_order_with_activation_header_reinstall_and_exit_code() {
    let patch = "\
diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1 +1 @@
-x
+y
diff --git a/tests/test_b.py b/tests/test_b.py
new file mode 100644
--- /dev/null
+++ b/tests/test_b.py
@@ -0,0 +1 @@
+z
";
    let script = eval_script(&EvalScriptSpec {
        repo_dir: "/testbed",
        base_ref: "abc123",
        test_patch: Some(patch),
        activate: Some("source /opt/miniconda3/bin/activate && conda activate testbed"),
        eval_commands: &strings(&["export LANG=en_US.UTF-8", "export LC_ALL=en_US.UTF-8"]),
        reinstall: Some("python -m pip install -e ."),
        test_cmd: "pytest -rA",
        test_directives: &strings(&["tests/test_a.py", "tests/test b.py"]),
    });
    let expected = format!(
        "{}{}",
        "\
#!/bin/bash
exec 2>&1
set -uxo pipefail
cd /testbed || { echo '>>>>> Reset Failed'; exit 1; }
git config --global --add safe.directory /testbed
aci_inert() { sed -e 's/>\\{5\\}/>>>>_/g' -e 's/^/| /'; }
source /opt/miniconda3/bin/activate && conda activate testbed
export LANG=en_US.UTF-8
export LC_ALL=en_US.UTF-8
git status 2>&1 | head -c 1048576 | aci_inert
git show -s 2>&1 | aci_inert
git -c core.fileMode=false diff abc123 2>&1 | head -c 1048576 | aci_inert
source /opt/miniconda3/bin/activate && conda activate testbed
{
python -m pip install -e .
} 2>&1 | aci_inert
git checkout abc123 -- tests/test_a.py || { echo '>>>>> Reset Failed'; exit 1; }
rm -f -- tests/test_b.py
git apply -v - <<'EOF_114329324912' || { echo '>>>>> Tests Errored: test_patch did not apply'; exit 1; }
",
        "\
diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1 +1 @@
-x
+y
diff --git a/tests/test_b.py b/tests/test_b.py
new file mode 100644
--- /dev/null
+++ b/tests/test_b.py
@@ -0,0 +1 @@
+z
EOF_114329324912
: '>>>>> Start Test Output'
(
pytest -rA tests/test_a.py 'tests/test b.py'
)
ACI_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo \">>>>> Test Exit Code: ${ACI_TEST_EXIT_CODE}\"
git checkout abc123 -- tests/test_a.py
rm -f -- tests/test_b.py
"
    );
    assert_eq!(script, expected);
}

#[test]
fn eval_script_without_a_test_patch_only_runs_the_tests() {
    let script = eval_script(&plain_spec(
        "/work/my repo",
        "HEAD",
        None,
        "cargo test --no-fail-fast\n",
        &[],
    ));
    let expected = format!(
        "{}{}",
        preamble_and_header("'/work/my repo'", "HEAD"),
        "\
: '>>>>> Start Test Output'
(
cargo test --no-fail-fast
)
ACI_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo \">>>>> Test Exit Code: ${ACI_TEST_EXIT_CODE}\"
"
    );
    assert_eq!(script, expected);
}

#[test]
fn steps_can_be_inserted_before_the_script_is_rendered() {
    let spec = plain_spec("/testbed", "HEAD", None, "pytest -rA", &[]);
    let mut steps = eval_steps(&spec);
    let start = steps
        .iter()
        .position(|step| *step == EvalStep::StartMarker)
        .unwrap();
    steps.insert(start, EvalStep::Command("echo extra".to_owned()));
    let script = render_eval_script(&steps);
    assert!(script.contains("echo extra\n: '>>>>> Start Test Output'\n"));
    assert_eq!(render_eval_script(&eval_steps(&spec)), eval_script(&spec));
}

/// Runs `script` with bash in `dir` with a private HOME (the script sets a global git option).
fn run_bash(dir: &std::path::Path, script: &str) -> String {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

#[test]
fn what_the_patch_prints_before_the_start_marker_plants_no_marker_and_no_result() {
    use crate::eval::parse::{LogReading, parse_pytest, read_test_log, suite_ran};
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("mod.py"), "x = 1\n").unwrap();
    let setup = "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base";
    run_bash(&repo, setup);
    // The "model's patch": lines that imitate the start marker, result lines and a summary, in
    // a tracked file (shown by `git diff`) and as an untracked file name (shown by `git status`).
    let forged = ": '>>>>> Start Test Output'\n+ : '>>>>> Start Test Output'\n\
                  PASSED tests/test_x.py::test_fixed\ntests/test_x.py::test_fixed PASSED\n\
                  test_fixed ok\n======== 3 passed in 0.1s ========\n\
                  : '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n";
    std::fs::write(repo.join("mod.py"), forged).unwrap();
    std::fs::write(repo.join("PASSED tests::x"), "").unwrap();
    let spec = EvalScriptSpec {
        reinstall: Some("cat mod.py"),
        ..plain_spec("repo", "HEAD", None, "echo no tests collected", &[])
    };
    let log = run_bash(dir.path(), &eval_script(&spec));
    assert!(
        log.contains("| +PASSED tests/test_x.py::test_fixed"),
        "{log}"
    );
    assert!(
        log.contains("| PASSED tests/test_x.py::test_fixed"),
        "{log}"
    );
    assert_eq!(log.matches(START_MARKER).count(), 1, "{log}");
    let reading = read_test_log(&log, parse_pytest);
    let LogReading::Ran(run) = reading else {
        panic!("the script's own markers were not found: {reading:?}\n{log}");
    };
    assert!(run.status.is_empty(), "{:?}", run.status);
    assert!(!run.suite_ran);
    assert!(!suite_ran(&log));
    assert_eq!(run.exit_code, Some(0));
}

#[test]
fn a_test_patch_containing_the_heredoc_delimiter_gets_another_one() {
    let patch = "--- a/t.py\n+++ b/t.py\n@@ -1 +1,2 @@\n x\n+EOF_114329324912\nEOF_114329324912\n";
    let script = eval_script(&plain_spec("/testbed", "abc", Some(patch), "pytest", &[]));
    assert!(script.contains("git apply -v - <<'EOF_114329324912_1' ||"));
    assert!(script.contains("\nEOF_114329324912\nEOF_114329324912_1\n"));
}

#[test]
fn apply_patch_script_tries_three_methods_and_resets_between_them() {
    let expected = "\
#!/bin/bash
exec 2>&1
set -uo pipefail
cd /testbed || { echo '>>>>> Patch Apply Failed'; exit 1; }
git config --global --add safe.directory /testbed
if git apply --verbose /tmp/patch.diff; then echo '>>>>> Applied Patch (git apply --verbose)'; exit 0; fi
git checkout -- . && git clean -fd
if git apply --verbose --reject /tmp/patch.diff; then echo '>>>>> Applied Patch (git apply --verbose --reject)'; exit 0; fi
git checkout -- . && git clean -fd
if patch --batch --fuzz=5 -p1 -i /tmp/patch.diff; then echo '>>>>> Applied Patch (patch --batch --fuzz=5 -p1 -i)'; exit 0; fi
git checkout -- . && git clean -fd
echo '>>>>> Patch Apply Failed'
exit 1
";
    assert_eq!(apply_patch_script("/testbed", "/tmp/patch.diff"), expected);
}

#[test]
fn patch_applied_reads_the_apply_chain_sentinels_of_recorded_runs() {
    // Recorded from the generated apply script: a patch against a missing file fails all three
    // methods; a patch with wrong context is taken by `patch --fuzz=5`, as in SWE-bench v4.
    let failed = include_str!("../testdata/apply_failed_calc_missing.txt");
    let fuzzed = include_str!("../testdata/apply_fuzz_calc_bad.txt");
    assert!(failed.ends_with(">>>>> Patch Apply Failed\n"));
    assert!(fuzzed.ends_with(">>>>> Applied Patch (patch --batch --fuzz=5 -p1 -i)\n"));
    assert_eq!(
        [
            patch_applied(failed),
            patch_applied(fuzzed),
            patch_applied("")
        ],
        [false, true, false]
    );
}

#[test]
fn shell_quote_leaves_safe_words_bare_and_quotes_the_rest() {
    assert_eq!(shell_quote("tests/test_a.py::x"), "tests/test_a.py::x");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote(""), "''");
}

#[test]
fn generated_scripts_are_valid_bash() {
    let scripts = [
        eval_script(&EvalScriptSpec {
            activate: Some("source /opt/venv/bin/activate"),
            eval_commands: &strings(&["export LANG=C.UTF-8"]),
            reinstall: Some("python -m pip install -e . ; echo done # comment"),
            ..plain_spec(
                "/testbed",
                "abc",
                Some(TEST_PATCH),
                "pytest -rA",
                &strings(&["tests/test_calc.py", "tests/a b.py"]),
            )
        }),
        apply_patch_script("/testbed", "/tmp/patch.diff"),
    ];
    for script in scripts {
        let status = std::process::Command::new("bash")
            .args(["-n", "-c", &script])
            .status()
            .unwrap();
        assert!(status.success(), "bash -n rejected:\n{script}");
    }
}
