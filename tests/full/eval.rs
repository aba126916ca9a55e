//! `aci eval` end to end on the real Docker daemon, over the demo dataset: gold patches resolve
//! all eight instances with their canaries, empty patches none; a patch that does not apply is an
//! error; patches that fool the test runner (`tests/fixtures/attacks/`, forged `PASSED` lines, a
//! conftest that passes everything) are untrusted runs, and a patch into `.git` is never applied;
//! reruns reuse reports graded from the same inputs; `--expect` gates on the resolved set; a
//! full disk stops the run; a patch to files that are not UTF-8 goes through `preds.json` intact.
//!
//! The gold run happens once per test binary and builds the demo's environment images (reused
//! by later runs of the suite); the other tests reuse it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::support::{aci, read_json};
use serde_json::{Value, json};

const RUN_ID: &str = "test-eval";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn demo_instances() -> PathBuf {
    manifest_dir().join("tests/fixtures/demo/instances.jsonl")
}

/// The demo records, as JSON, in file order.
fn demo_records() -> Vec<Value> {
    std::fs::read_to_string(demo_instances())
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn record(id: &str) -> Value {
    demo_records()
        .into_iter()
        .find(|r| r["instance_id"] == id)
        .unwrap()
}

/// A test list field, which the demo writes as a list or as a JSON-encoded string.
fn test_list(record: &Value, field: &str) -> Vec<String> {
    match &record[field] {
        Value::String(text) => serde_json::from_str(text).unwrap(),
        other => serde_json::from_value(other.clone()).unwrap(),
    }
}

fn sorted_ids() -> Vec<String> {
    let mut ids: Vec<String> = demo_records()
        .iter()
        .map(|r| r["instance_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// A fresh directory under the target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("eval-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `aci eval --instances <demo> --run-id test-eval --workers 2 --output DIR <extra…>`.
fn eval(output: &Path, extra: &[&str]) -> Output {
    let instances = demo_instances();
    let mut args = vec![
        "eval",
        "--instances",
        instances.to_str().unwrap(),
        "--run-id",
        RUN_ID,
        "--workers",
        "2",
        "--output",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    aci(&args)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write_predictions(dir: &Path, predictions: &Value) -> PathBuf {
    let path = dir.join("predictions.json");
    std::fs::write(&path, predictions.to_string()).unwrap();
    path
}

struct GoldRun {
    dir: PathBuf,
    output: Output,
}

/// The gold run over all eight instances, once per test binary (with `--expect` listing all
/// eight, which must pass).
fn gold() -> &'static GoldRun {
    static GOLD: OnceLock<GoldRun> = OnceLock::new();
    GOLD.get_or_init(|| {
        let dir = scratch("gold");
        let expect = dir.join("expected.json");
        std::fs::write(&expect, serde_json::to_string(&sorted_ids()).unwrap()).unwrap();
        let output = eval(
            &dir.join("out"),
            &[
                "--predictions",
                "gold",
                "--expect",
                expect.to_str().unwrap(),
            ],
        );
        GoldRun {
            dir: dir.join("out"),
            output,
        }
    })
}

/// The summary every field of which a test expects.
/// A run summary without aci's cause counts and resolve rates (checked in `causes.rs` and in
/// the report's unit tests), so the comparisons here stay about SWE-bench's buckets.
fn swe_bench_fields(mut summary: Value) -> Value {
    if let Some(fields) = summary.as_object_mut() {
        for name in [
            "causes",
            "infrastructure_failures",
            "infrastructure_failure_ids",
            "resolve_rate",
            "resolve_rate_without_infrastructure",
        ] {
            fields.remove(name);
        }
    }
    summary
}

fn summary(buckets: &[(&str, Vec<String>)], submitted: Vec<String>) -> Value {
    let list = |name: &str| {
        buckets
            .iter()
            .find(|(bucket, _)| *bucket == name)
            .map(|(_, ids)| ids.clone())
            .unwrap_or_default()
    };
    let (resolved, unresolved, errors, empty, incomplete) = (
        list("resolved"),
        list("unresolved"),
        list("error"),
        list("empty"),
        list("incomplete"),
    );
    let mut completed: Vec<String> = resolved.iter().chain(&unresolved).cloned().collect();
    completed.sort();
    json!({
        "total_instances": resolved.len() + unresolved.len() + errors.len() + empty.len() + incomplete.len(),
        "submitted_instances": submitted.len(),
        "completed_instances": completed.len(),
        "resolved_instances": resolved.len(),
        "unresolved_instances": unresolved.len(),
        "empty_patch_instances": empty.len(),
        "error_instances": errors.len(),
        "completed_ids": completed,
        "incomplete_ids": incomplete,
        "empty_patch_ids": empty,
        "submitted_ids": submitted,
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "error_ids": errors,
        "schema_version": 2,
    })
}

#[test]
fn gold_patches_resolve_all_eight_demo_instances_with_swe_bench_files() {
    let run = gold();
    assert_eq!(run.output.status.code(), Some(0), "{}", stderr(&run.output));
    assert!(stderr(&run.output).contains("--expect: all 8 expected instance(s) are resolved"));
    assert_eq!(
        String::from_utf8_lossy(&run.output.stdout),
        format!(
            "resolved 8 of 8 instances (unresolved 0, errors 0, empty patches 0, without \
             prediction 0); resolve rate 100.0%, 100.0% without the 0 infrastructure \
             failure(s)\nsummary: {}\n",
            run.dir.join("report.json").display()
        )
    );
    assert_eq!(
        swe_bench_fields(read_json(&run.dir.join("report.json"))),
        summary(&[("resolved", sorted_ids())], sorted_ids())
    );
    for record in demo_records() {
        let id = record["instance_id"].as_str().unwrap();
        let dir = run.dir.join(id);
        assert_eq!(
            std::fs::read_to_string(dir.join("patch.diff")).unwrap(),
            record["patch"].as_str().unwrap()
        );
        let script = std::fs::read_to_string(dir.join("eval.sh")).unwrap();
        assert!(script.starts_with("#!/bin/bash\nexec 2>&1\nset -uxo pipefail\n"));
        assert!(script.contains(record["test_patch"].as_str().unwrap()));
        let rust = record["language"] == "rust";
        let test_cmd = record["test_cmd"].as_str().unwrap();
        let command = if rust {
            test_cmd.replacen("cargo test", "cargo test --no-fail-fast", 1)
        } else {
            test_cmd.to_owned()
        };
        assert!(
            script.contains(&format!("(\n{command}\n)\n")),
            "{id}: {script}"
        );
        // The grader's own work goes between the stages: the infrastructure reset after the
        // header, the canaries after the test patch and before the start marker; no script
        // holds the canaries' text.
        let reset = script
            .find("# ---- aci: the test infrastructure is put back")
            .unwrap();
        let canaries = script
            .find("# ---- aci: the canary tests are written")
            .unwrap();
        assert!(script.find("git status 2>&1").unwrap() < reset, "{id}");
        assert!(reset < script.find("git apply -v -").unwrap(), "{id}");
        assert!(script.find("git apply -v -").unwrap() < canaries, "{id}");
        assert!(canaries < script.find(": '>>>>> Start Test Output'").unwrap());
        assert!(!script.contains("ACI_CANARY_EOF"), "{id}");
        let log = std::fs::read_to_string(dir.join("test_output.txt")).unwrap();
        // The header shows the applied patch, each line behind the inert prefix.
        let start = log.find("+ : '>>>>> Start Test Output'").unwrap();
        let first = record["patch"].as_str().unwrap().lines().next().unwrap();
        assert!(
            log[..start].contains(&format!("\n| {first}\n")),
            "{id}: {log}"
        );
        assert!(!log[..start].lines().any(|line| line == first), "{id}");
        assert!(log.contains("+ : '>>>>> End Test Output'"), "{id}");
        // The failing canary is the only failure, so the test command failed.
        let failed = canary_failures(&log);
        assert_eq!(failed.len(), 1, "{id}: {failed:?}");
        let name = failed[0].rsplit("::").next().unwrap();
        assert!(
            name.len() == 17 && name.starts_with("test_") && !script.contains(name),
            "{id}: {name} is not a canary, or eval.sh names it"
        );
        let exit = if rust { 101 } else { 1 };
        assert!(
            log.contains(&format!("\n>>>>> Test Exit Code: {exit}\n")),
            "{id}"
        );
        let report = read_json(&dir.join("report.json"));
        let body = &report[id];
        assert_eq!(report.as_object().unwrap().len(), 1);
        assert_eq!(body["patch_is_None"], false);
        assert_eq!(body["patch_exists"], true);
        assert_eq!(body["patch_successfully_applied"], true);
        assert_eq!(body["resolved"], true, "{id}: {body}");
        let status = &body["tests_status"];
        assert_eq!(
            status["FAIL_TO_PASS"],
            json!({"success": test_list(&record, "FAIL_TO_PASS"), "failure": []})
        );
        assert_eq!(
            status["PASS_TO_PASS"],
            json!({"success": test_list(&record, "PASS_TO_PASS"), "failure": []})
        );
        assert_eq!(
            status["FAIL_TO_FAIL"],
            json!({"success": [], "failure": []})
        );
        assert_eq!(
            status["PASS_TO_FAIL"],
            json!({"success": [], "failure": []})
        );
        assert_eq!(body["eval_key"].as_str().unwrap().len(), 64);
        assert!(body.get("error").is_none() && body.get("untrusted_reason").is_none());
        // Resolved, so confirmed by a tripwire run in which every FAIL_TO_PASS test carried a
        // failing first statement and failed; gold touches no test infrastructure.
        assert_eq!(
            body["tripwire"],
            json!({"checked": test_list(&record, "FAIL_TO_PASS"), "confirmed": true}),
            "{id}"
        );
        assert!(body.get("infrastructure_reset").is_none(), "{id}");
        assert!(body.get("reaches_into_tests").is_none(), "{id}");
        let tripwire_log = std::fs::read_to_string(dir.join("tripwire_output.txt")).unwrap();
        let failed_there = canary_failures(&tripwire_log);
        for test in test_list(&record, "FAIL_TO_PASS") {
            assert!(
                failed_there.contains(&test),
                "{id}: {test} did not fail: {failed_there:?}"
            );
        }
        assert_eq!(
            failed_there.len(),
            test_list(&record, "FAIL_TO_PASS").len() + 1,
            "{id}"
        );
        assert!(
            std::fs::read_to_string(dir.join("run_instance.log"))
                .unwrap()
                .contains(&format!(
                    "\ntripwire run: confirmed ({} FAIL_TO_PASS test(s) carried a tripwire); its \
                     log is tripwire_output.txt\n",
                    test_list(&record, "FAIL_TO_PASS").len()
                )),
            "{id}"
        );
    }
}

/// The test ids a log reports failed (pytest's `FAILED <id>` and libtest's `test <id> ... FAILED`).
fn canary_failures(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|line| {
            line.strip_prefix("FAILED ")
                .map(|rest| rest.split(' ').next().unwrap_or(rest))
                .or_else(|| {
                    line.strip_prefix("test ")
                        .and_then(|rest| rest.strip_suffix(" ... FAILED"))
                })
                .map(str::to_owned)
        })
        .collect()
}

/// Copies `from` (files and one level of directories) into a fresh scratch directory.
fn copy_run(from: &Path, name: &str) -> PathBuf {
    let to = scratch(name).join("out");
    for entry in walk(from) {
        let target = to.join(entry.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &target).unwrap();
    }
    to
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// A patch that adds a comment line at the top of `file` in the demo repository `repo`: it
/// applies, and fixes nothing.
fn comment_patch(repo: &str, file: &str) -> String {
    prepend_patch(repo, file, "# a comment that fixes nothing")
}

/// A patch that adds `line` at the top of `file` in the demo repository `repo`.
fn prepend_patch(repo: &str, file: &str, line: &str) -> String {
    let path = manifest_dir()
        .join("tests/fixtures/demo/repos")
        .join(repo)
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let context: Vec<&str> = text.lines().take(3).collect();
    let mut patch = format!(
        "diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n@@ -1,3 +1,4 @@\n+{line}\n"
    );
    for line in context {
        patch.push_str(&format!(" {line}\n"));
    }
    patch
}

#[test]
fn a_rerun_reuses_reports_from_the_same_inputs_and_reevaluates_a_changed_patch() {
    let run = gold();
    assert_eq!(run.output.status.code(), Some(0));
    let dir = copy_run(&run.dir, "resume");
    let before: Vec<(PathBuf, Vec<u8>)> = walk(&dir)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    let again = eval(&dir, &["--predictions", "gold"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(
        stderr(&again)
            .matches("resolved (reused: same patch, eval script and image)")
            .count(),
        8,
        "{}",
        stderr(&again)
    );
    for (path, bytes) in &before {
        assert_eq!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} changed",
            path.display()
        );
    }

    let changed = comment_patch("inicfg", "inicfg/parser.py");
    let mut predictions: Vec<Value> = demo_records()
        .iter()
        .map(|r| {
            json!({"instance_id": r["instance_id"], "model_name_or_path": "gold", "model_patch": r["patch"]})
        })
        .collect();
    predictions[0]["model_patch"] = json!(changed);
    assert_eq!(predictions[0]["instance_id"], "demo__inicfg-1");
    let file = write_predictions(dir.parent().unwrap(), &Value::Array(predictions));
    let third = eval(&dir, &["--predictions", file.to_str().unwrap()]);
    assert_eq!(third.status.code(), Some(0));
    let log = stderr(&third);
    assert_eq!(log.matches("(reused: same patch").count(), 7, "{log}");
    assert!(log.contains("] demo__inicfg-1: unresolved ("), "{log}");
    let inicfg = dir.join("demo__inicfg-1");
    assert_eq!(
        std::fs::read_to_string(inicfg.join("patch.diff")).unwrap(),
        changed
    );
    let body = &read_json(&inicfg.join("report.json"))["demo__inicfg-1"];
    assert_eq!(body["resolved"], false);
    assert_eq!(body["patch_successfully_applied"], true);
    assert_eq!(
        body["tests_status"]["FAIL_TO_PASS"]["failure"],
        json!(test_list(&record("demo__inicfg-1"), "FAIL_TO_PASS"))
    );
    let mut resolved = sorted_ids();
    resolved.retain(|id| id != "demo__inicfg-1");
    assert_eq!(
        swe_bench_fields(read_json(&dir.join("report.json"))),
        summary(
            &[
                ("resolved", resolved),
                ("unresolved", vec!["demo__inicfg-1".to_owned()])
            ],
            sorted_ids()
        )
    );
}

#[test]
fn empty_patches_are_counted_as_empty_and_never_evaluated() {
    let dir = scratch("empty");
    let lines: Vec<String> = demo_records()
        .iter()
        .map(|r| {
            json!({"instance_id": r["instance_id"], "model_name_or_path": "m", "model_patch": ""})
                .to_string()
        })
        .collect();
    let file = dir.join("preds.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = dir.join("out");
    let output = eval(&out, &["--predictions", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        swe_bench_fields(read_json(&out.join("report.json"))),
        summary(&[("empty", sorted_ids())], sorted_ids())
    );
    let entries: Vec<PathBuf> = walk(&out);
    assert_eq!(entries, vec![out.join("report.json")]);
}

#[test]
fn expect_exits_3_and_names_each_expected_instance_that_is_not_resolved() {
    let dir = scratch("expect");
    let predictions = json!({
        "demo__calc-1": {"model_name_or_path": "m", "model_patch": ""},
        "demo__inicfg-1": {"instance_id": "demo__inicfg-1", "model_name_or_path": "m", "model_patch": ""},
    });
    let file = write_predictions(&dir, &predictions);
    let expect = dir.join("expected.json");
    std::fs::write(
        &expect,
        r#"["demo__inicfg-1", "demo__calc-1", "demo__ringbuf-1"]"#,
    )
    .unwrap();
    let output = eval(
        &dir.join("out"),
        &[
            "--predictions",
            file.to_str().unwrap(),
            "--expect",
            expect.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).ends_with(
        "regression: 3 of 3 expected instance(s) are not resolved:\n  demo__calc-1: empty patch\n  \
         demo__inicfg-1: empty patch\n  demo__ringbuf-1: no prediction\n"
    ));
    let mut incomplete = sorted_ids();
    incomplete.retain(|id| id != "demo__calc-1" && id != "demo__inicfg-1");
    let submitted = vec!["demo__calc-1".to_owned(), "demo__inicfg-1".to_owned()];
    assert_eq!(
        swe_bench_fields(read_json(&dir.join("out/report.json"))),
        summary(
            &[("empty", submitted.clone()), ("incomplete", incomplete)],
            submitted
        )
    );
}

#[test]
fn a_patch_that_does_not_apply_is_an_error_and_is_retried_on_a_rerun() {
    assert_eq!(gold().output.status.code(), Some(0));
    let dir = scratch("noapply");
    let gold_patch = record("demo__moneyfmt-1")["patch"]
        .as_str()
        .unwrap()
        .to_owned();
    // The same hunk, removing a line the file does not have.
    let broken = gold_patch.replacen("-    if grouping:\n", "-    if grouping and amount:\n", 1);
    assert_ne!(broken, gold_patch);
    let file = write_predictions(
        &dir,
        &json!([{"instance_id": "demo__moneyfmt-1", "model_name_or_path": "m", "model_patch": broken}]),
    );
    let out = dir.join("out");
    let args = [
        "--predictions",
        file.to_str().unwrap(),
        "--id",
        "demo__moneyfmt-1",
    ];
    // A report left by an earlier run of another patch.
    let instance = out.join("demo__moneyfmt-1");
    std::fs::create_dir_all(&instance).unwrap();
    std::fs::copy(
        gold().dir.join("demo__moneyfmt-1/report.json"),
        instance.join("report.json"),
    )
    .unwrap();
    let output = eval(&out, &args);
    assert_eq!(output.status.code(), Some(0));
    let ids = vec!["demo__moneyfmt-1".to_owned()];
    assert_eq!(
        swe_bench_fields(read_json(&out.join("report.json"))),
        summary(&[("error", ids.clone())], ids)
    );
    // As in the SWE-bench harness, only a completed evaluation has a report.json; the error is
    // in run_instance.log.
    assert!(!instance.join("report.json").exists());
    let run_log = std::fs::read_to_string(instance.join("run_instance.log")).unwrap();
    assert!(run_log.contains("Hunk #1 FAILED at 31."), "{run_log}");
    assert!(
        run_log.ends_with(
            "error: patch apply failed\n\
             cause: patch_not_applied (the patch's): the patch did not apply: error: patch \
             failed: moneyfmt/format.py:31, error: moneyfmt/format.py: patch does not apply, \
             Hunk #1 FAILED at 31.\n  \
             error: patch failed: moneyfmt/format.py:31\n  \
             error: moneyfmt/format.py: patch does not apply\n  \
             Hunk #1 FAILED at 31.\n"
        ),
        "{run_log}"
    );
    let log = std::fs::read_to_string(instance.join("test_output.txt")).unwrap();
    // All three methods were tried: git apply, git apply --reject, patch --fuzz.
    assert_eq!(
        log.matches("error: patch failed: moneyfmt/format.py:31")
            .count(),
        2
    );
    assert!(log.contains("Rejected hunk #1."));
    assert!(log.contains("Hunk #1 FAILED at 31."));
    assert!(log.ends_with(">>>>> Patch Apply Failed\n"));
    assert!(!log.contains("Start Test Output"));
    let again = eval(&out, &args);
    assert!(stderr(&again).contains("] demo__moneyfmt-1: error: patch apply failed ("));
}

/// A `conftest.py` that deselects every test and prints a `PASSED` line for each listed one:
/// pytest then exits with status 5 (no tests ran).
fn forging_patch(ids: &[String]) -> String {
    let mut body = vec!["FORGED = [".to_owned()];
    body.extend(ids.iter().map(|id| format!("    {id:?},")));
    body.extend(
        [
            "]",
            "",
            "",
            "def pytest_collection_modifyitems(session, config, items):",
            "    items.clear()",
            "",
            "",
            "def pytest_terminal_summary(terminalreporter):",
            "    for test_id in FORGED:",
            "        terminalreporter.write_line(\"PASSED \" + test_id)",
        ]
        .map(str::to_owned),
    );
    let mut patch = format!(
        "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n\
         +++ b/conftest.py\n@@ -0,0 +1,{} @@\n",
        body.len()
    );
    for line in body {
        patch.push('+');
        patch.push_str(&line);
        patch.push('\n');
    }
    patch
}

/// Evaluates `predictions` (instance id → patch) into a fresh `DIR` named `name`; returns `DIR`.
fn eval_patches(name: &str, predictions: &[(&str, String)]) -> (PathBuf, Output) {
    let dir = scratch(name);
    let list: Vec<Value> = predictions
        .iter()
        .map(|(id, patch)| json!({"instance_id": id, "model_name_or_path": "m", "model_patch": patch}))
        .collect();
    let file = write_predictions(&dir, &Value::Array(list));
    let out = dir.join("out");
    let mut args = vec!["--predictions", file.to_str().unwrap()];
    for (id, _) in predictions {
        args.extend(["--id", id]);
    }
    let output = eval(&out, &args);
    (out, output)
}

/// The error line of an instance's `run_instance.log`, without `error: `.
fn run_error(out: &Path, id: &str) -> String {
    let log = std::fs::read_to_string(out.join(id).join("run_instance.log")).unwrap();
    log.lines()
        .rev()
        .find_map(|line| line.strip_prefix("error: "))
        .unwrap_or_else(|| panic!("{id}: no error in\n{log}"))
        .to_owned()
}

/// An untrusted run: an error (no report.json) whose reason says which check failed.
fn assert_untrusted(out: &Path, id: &str, detail: &str) {
    let error = run_error(out, id);
    let rest = error
        .strip_prefix("untrusted test run: ")
        .unwrap_or_else(|| panic!("{id}: {error}"));
    let canary = rest
        .split(['(', ')'])
        .nth(1)
        .unwrap_or_else(|| panic!("{id}: {rest}"));
    let script = std::fs::read_to_string(out.join(id).join("eval.sh")).unwrap();
    assert!(
        canary.len() == 17 && canary.starts_with("test_") && !script.contains(canary),
        "{id}: {canary} is not a canary, or eval.sh names it"
    );
    assert_eq!(rest.replace(canary, "NAME"), detail, "{id}");
    assert!(!out.join(id).join("report.json").exists(), "{id}");
}

/// The report of an instance whose patch was unresolved once `conftest.py` was removed.
fn assert_conftest_removed(out: &Path, id: &str) {
    let body = &read_json(&out.join(id).join("report.json"))[id];
    assert_eq!(body["resolved"], false, "{body}");
    assert!(body.get("untrusted_reason").is_none(), "{body}");
    assert_eq!(
        body["infrastructure_reset"],
        json!([{"path": "conftest.py", "action": "removed", "why": "pytest loads it as a plugin"}])
    );
    assert_eq!(
        body["touches_tests"],
        json!([{"path": "conftest.py", "why": "pytest loads it as a plugin"}])
    );
    assert_eq!(
        body["tests_status"]["FAIL_TO_PASS"]["failure"],
        json!(test_list(&record(id), "FAIL_TO_PASS"))
    );
    let run_log = std::fs::read_to_string(out.join(id).join("run_instance.log")).unwrap();
    assert!(
        run_log.contains(
            "\nthe patch changes test infrastructure: conftest.py: pytest loads it as a plugin\n\
         the patch reaches into the test framework: conftest.py: implements or registers a pytest \
         hook or plugin\nbefore the tests, removed: conftest.py: pytest loads it as a plugin\n"
        ),
        "{run_log}"
    );
    let ids = vec![id.to_owned()];
    let mut expected = summary(&[("unresolved", ids.clone())], ids.clone());
    expected["touching_tests_ids"] = json!(ids);
    assert_eq!(
        swe_bench_fields(read_json(&out.join("report.json"))),
        expected
    );
}

#[test]
fn forged_passed_lines_from_a_conftest_that_deselects_every_test_are_removed_with_it() {
    assert_eq!(gold().output.status.code(), Some(0));
    let id = "demo__inicfg-1";
    let record = record(id);
    let mut ids = test_list(&record, "FAIL_TO_PASS");
    ids.extend(test_list(&record, "PASS_TO_PASS"));
    let (out, output) = eval_patches("forged", &[(id, forging_patch(&ids))]);
    assert_eq!(output.status.code(), Some(0));
    let log = std::fs::read_to_string(out.join(id).join("test_output.txt")).unwrap();
    assert!(!log.contains("\nPASSED tests/test_interpolate.py::test_cross_section_reference\n"));
    assert!(log.contains("\nFAILED tests/test_interpolate.py::test_cross_section_reference"));
    assert_conftest_removed(&out, id);
}

#[test]
fn a_conftest_that_passes_every_test_is_removed_before_the_tests_and_is_named() {
    assert_eq!(gold().output.status.code(), Some(0));
    let id = "demo__inicfg-1";
    let body = [
        "import pytest",
        "",
        "",
        "@pytest.hookimpl(hookwrapper=True)",
        "def pytest_runtest_makereport(item, call):",
        "    outcome = yield",
        "    report = outcome.get_result()",
        "    report.outcome = \"passed\"",
        "    report.longrepr = None",
    ];
    let mut patch = format!(
        "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n\
         +++ b/conftest.py\n@@ -0,0 +1,{} @@\n",
        body.len()
    );
    for line in body {
        patch.push_str(&format!("+{line}\n"));
    }
    let (out, output) = eval_patches("conftest", &[(id, patch)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = stderr(&output);
    assert!(
        log.contains(&format!("] {id}: unresolved (")) && log.contains(
            "; the patch changes test infrastructure: conftest.py (pytest loads it as a plugin)\n"
        ),
        "{log}"
    );
    assert_conftest_removed(&out, id);
}

#[test]
fn a_patch_that_does_not_compile_or_import_is_unresolved_not_an_error() {
    assert_eq!(gold().output.status.code(), Some(0));
    let (out, output) = eval_patches(
        "broken",
        &[
            (
                "demo__inicfg-1",
                prepend_patch("inicfg", "inicfg/parser.py", "def broken(:"),
            ),
            (
                "demo__calc-1",
                prepend_patch("calc", "src/parser.rs", "fn broken( {"),
            ),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for id in ["demo__calc-1", "demo__inicfg-1"] {
        // No test reported, the canaries neither; a log that cannot pass is unresolved.
        let body = &read_json(&out.join(id).join("report.json"))[id];
        assert_eq!(body["resolved"], false, "{id}");
        assert_eq!(
            body["untrusted_reason"]
                .as_str()
                .unwrap()
                .split(" (")
                .next()
                .unwrap(),
            "untrusted test run: the canary test that must pass",
            "{id}"
        );
        assert!(body.get("error").is_none(), "{id}");
    }
    let ids = vec!["demo__calc-1".to_owned(), "demo__inicfg-1".to_owned()];
    assert_eq!(
        swe_bench_fields(read_json(&out.join("report.json"))),
        summary(&[("unresolved", ids.clone())], ids)
    );
}

/// The patch of `tests/fixtures/attacks/<id>.diff`.
fn attack(id: &str) -> String {
    std::fs::read_to_string(manifest_dir().join(format!("tests/fixtures/attacks/{id}.diff")))
        .unwrap()
}

/// Every attack class of `tests/fixtures/attacks/` (each resolved before canary-verified
/// grading), in one run over the eight demo instances.
#[test]
fn patches_that_fool_the_test_runner_are_untrusted_reset_or_never_run_and_named() {
    assert_eq!(gold().output.status.code(), Some(0));
    let ids = sorted_ids();
    let predictions: Vec<(&str, String)> = ids.iter().map(|id| (id.as_str(), attack(id))).collect();
    let (out, output) = eval_patches("attacks", &predictions);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let no_pass = "the canary test that must pass (NAME) has no result in the log";
    let fail_passed = "the canary test that must fail (NAME) is reported PASSED";
    // The source module's no-op makes the failing canary pass; the imitated output ends the run
    // before the canaries report.
    for (id, detail) in [
        ("demo__inicfg-1", fail_passed),
        ("demo__semverkit-1", no_pass),
    ] {
        assert_untrusted(&out, id, detail);
    }
    // The imitation did print every listed test as passed.
    let semverkit = std::fs::read_to_string(out.join("demo__semverkit-1/test_output.txt")).unwrap();
    assert!(semverkit.contains("\nPASSED tests/test_version.py::test_bumps\n"));
    assert!(semverkit.contains("\n>>>>> Test Exit Code: 0\n"));
    // The three plugins are loaded from configuration that the reset puts back: the tests run
    // for real, the bug is still there, and the instance is unresolved (trusted).
    let reset = |id: &str| -> Vec<String> {
        let body = &read_json(&out.join(id).join("report.json"))[id];
        assert_eq!(body["resolved"], false, "{id}");
        assert!(body.get("untrusted_reason").is_none(), "{id}: {body}");
        assert!(
            body["tests_status"]["FAIL_TO_PASS"]["success"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{id}"
        );
        body["infrastructure_reset"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                format!(
                    "{} {}",
                    entry["path"].as_str().unwrap(),
                    entry["action"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(reset("demo__moneyfmt-1"), ["pyproject.toml restored"]);
    assert_eq!(
        reset("demo__ttlcache-1"),
        ["pyproject.toml restored", "tox.ini removed"]
    );
    assert_eq!(
        reset("demo__csvreport-1"),
        ["pyproject.toml restored", "setup.cfg removed"]
    );
    let moneyfmt = std::fs::read_to_string(out.join("demo__moneyfmt-1/run_instance.log")).unwrap();
    assert!(moneyfmt.contains(
        "\nbefore the tests, restored: pyproject.toml: changes pyproject.toml's [tool.pytest] \
         tables or its pytest11 entry points\n"
    ));
    // A build script that writes assertion macros, and a constructor that imitates libtest, are
    // forms no fix needs: refused before any container starts.
    for (id, what) in [
        (
            "demo__ringbuf-1",
            "build.rs defines a macro named like a std assertion",
        ),
        (
            "demo__calc-1",
            "src/lib.rs writes text that imitates a test runner's result lines; runs code before \
             main (a constructor section)",
        ),
    ] {
        assert_eq!(
            run_error(&out, id),
            format!(
                "untrusted test run: the patch reaches into the test framework in a way no fix \
                 needs ({what}), so it is not evaluated"
            )
        );
        assert!(!out.join(id).join("test_output.txt").exists(), "{id}");
    }
    // The .git patch is refused before any container starts, so its hook never runs.
    let pathnorm = out.join("demo__pathnorm-1");
    assert_eq!(
        run_error(&out, "demo__pathnorm-1"),
        "the patch writes inside .git (.git/hooks/post-checkout), so it is not applied"
    );
    assert!(!pathnorm.join("test_output.txt").exists());
    assert!(!pathnorm.join("report.json").exists());
    // Test infrastructure is named, with why.
    let named = |id: &str| -> Vec<String> {
        std::fs::read_to_string(out.join(id).join("run_instance.log"))
            .unwrap()
            .lines()
            .filter_map(|line| line.strip_prefix("the patch changes test infrastructure: "))
            .map(str::to_owned)
            .collect()
    };
    let pytest_table = "pyproject.toml: changes [tool.pytest.ini_options], which configures pytest";
    assert_eq!(named("demo__moneyfmt-1"), [pytest_table]);
    assert_eq!(
        named("demo__ttlcache-1"),
        [pytest_table, "tox.ini: pytest reads its [pytest] section"]
    );
    assert_eq!(
        named("demo__csvreport-1"),
        [
            pytest_table,
            "setup.cfg: pytest reads its [tool:pytest] section"
        ]
    );
    assert_eq!(
        named("demo__ringbuf-1"),
        ["build.rs: a Cargo build script: it runs before the tests compile"]
    );
    assert_eq!(
        named("demo__pathnorm-1"),
        [".git/hooks/post-checkout: inside .git: never applied"]
    );
    for id in ["demo__inicfg-1", "demo__semverkit-1", "demo__calc-1"] {
        assert!(named(id).is_empty(), "{id}: source files only");
    }
    let errors = [
        "demo__calc-1",
        "demo__inicfg-1",
        "demo__pathnorm-1",
        "demo__ringbuf-1",
        "demo__semverkit-1",
    ];
    let unresolved = ["demo__csvreport-1", "demo__moneyfmt-1", "demo__ttlcache-1"];
    let mut expected = summary(
        &[
            ("error", errors.map(str::to_owned).to_vec()),
            ("unresolved", unresolved.map(str::to_owned).to_vec()),
        ],
        ids.clone(),
    );
    expected["touching_tests_ids"] = json!([
        "demo__csvreport-1",
        "demo__moneyfmt-1",
        "demo__pathnorm-1",
        "demo__ringbuf-1",
        "demo__ttlcache-1"
    ]);
    assert_eq!(
        swe_bench_fields(read_json(&out.join("report.json"))),
        expected
    );
}

#[test]
fn the_run_stops_with_a_hint_when_the_docker_root_is_short_of_space() {
    let dir = scratch("disk");
    // A repository seen for the first time, so its environment image must be built.
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("pkg")).unwrap();
    std::fs::write(
        repo.join("pkg/__init__.py"),
        format!("# {}\n", dir.display()),
    )
    .unwrap();
    let instances = dir.join("instances.json");
    std::fs::write(
        &instances,
        json!([{
            "instance_id": "disk-1", "problem_statement": "", "repo": "t/disk",
            "base_commit": "0", "repo_path": "repo", "test_cmd": "true",
            "patch": "diff --git a/x b/x\n",
        }])
        .to_string(),
    )
    .unwrap();
    let output = aci(&[
        "eval",
        "--instances",
        instances.to_str().unwrap(),
        "--predictions",
        "gold",
        "--output",
        dir.join("out").to_str().unwrap(),
        "--set",
        "env.min_free_disk_gb=1000000000",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let log = stderr(&output);
    let lines: Vec<&str> = log.lines().collect();
    let error = lines[lines.len() - 2];
    assert!(
        error.starts_with("error: only ") && error.contains(" GB free on "),
        "{log}"
    );
    assert!(error.ends_with(
        "(the Docker root); building environment images needs env.min_free_disk_gb = 1000000000 GB"
    ));
    assert_eq!(
        lines[lines.len() - 1],
        "hint: free space with `aci images prune` (one run's images: --run-id ID), or lower \
         env.min_free_disk_gb"
    );
    assert!(!dir.join("out/report.json").exists());
}

/// A fresh git checkout of `repo` (its files committed) in `dir`.
fn checkout(repo: &Path, dir: &Path) {
    for entry in walk(repo) {
        let target = dir.join(entry.strip_prefix(repo).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &target).unwrap();
    }
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
}

#[test]
fn a_patch_to_files_that_are_not_utf8_goes_through_preds_json_applies_and_resolves() {
    let dir = scratch("bytes");
    let repo = dir.join("repo");
    let files: [(&str, &[u8]); 4] = [
        (
            "pyproject.toml",
            b"[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        ),
        ("data/latin1.txt", b"caf\xe9\n"),
        ("data/blob.bin", b"\x00\x01\x02old"),
        (
            "tests/test_data.py",
            b"def test_files_exist():\n    assert open(\"data/latin1.txt\", \"rb\").read()\n",
        ),
    ];
    for (path, bytes) in files {
        std::fs::create_dir_all(repo.join(path).parent().unwrap()).unwrap();
        std::fs::write(repo.join(path), bytes).unwrap();
    }
    let test_patch = r#"diff --git a/tests/test_data.py b/tests/test_data.py
--- a/tests/test_data.py
+++ b/tests/test_data.py
@@ -1,2 +1,10 @@
 def test_files_exist():
     assert open("data/latin1.txt", "rb").read()
+
+
+def test_latin1_text_is_extended():
+    assert open("data/latin1.txt", "rb").read() == b"caf\xe9\ncr\xe8me\n"
+
+
+def test_binary_file_is_replaced():
+    assert open("data/blob.bin", "rb").read() == b"\x00\xff\xfenew\x00"
"#;
    let instances = dir.join("instances.jsonl");
    let record = json!({
        "instance_id": "bytes-1", "problem_statement": "extend the data files", "repo": "t/bytes",
        "repo_path": "repo", "language": "python", "log_parser": "pytest",
        "test_cmd": "python -m pytest -rA -p no:cacheprovider",
        "test_patch": test_patch,
        "FAIL_TO_PASS": ["tests/test_data.py::test_latin1_text_is_extended",
                         "tests/test_data.py::test_binary_file_is_replaced"],
        "PASS_TO_PASS": ["tests/test_data.py::test_files_exist"],
    });
    std::fs::write(&instances, format!("{record}\n")).unwrap();
    // The agent's edits: Latin-1 text appended (no NUL byte, so git diffs it as text) and a
    // binary file rewritten.
    let replays = dir.join("replays");
    std::fs::create_dir_all(&replays).unwrap();
    std::fs::write(
        replays.join("bytes-1.yaml"),
        "- |-\n  printf 'cr\\350me\\n' >> data/latin1.txt\n\
         - |-\n  printf '\\000\\377\\376new\\000' > data/blob.bin\n- submit\n",
    )
    .unwrap();
    let run = dir.join("run");
    let batch = aci(&[
        "batch",
        "--instances",
        instances.to_str().unwrap(),
        "--replay-dir",
        replays.to_str().unwrap(),
        "--run-id",
        RUN_ID,
        "--output",
        run.to_str().unwrap(),
    ]);
    assert_eq!(batch.status.code(), Some(0), "{}", stderr(&batch));
    let preds = read_json(&run.join("preds.json"));
    let model_patch = preds["bytes-1"]["model_patch"].as_str().unwrap().to_owned();
    assert_eq!(
        std::fs::read(run.join("bytes-1/bytes-1.patch")).unwrap(),
        model_patch.as_bytes(),
        "the .patch file and preds.json agree"
    );
    assert!(!model_patch.contains('\u{fffd}'), "{model_patch}");
    assert_eq!(
        model_patch.matches("GIT binary patch").count(),
        2,
        "{model_patch}"
    );

    let fresh = dir.join("fresh");
    checkout(&repo, &fresh);
    let patch_file = dir.join("model.patch");
    std::fs::write(&patch_file, &model_patch).unwrap();
    let applied = Command::new("git")
        .arg("-C")
        .arg(&fresh)
        .args(["apply", patch_file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(applied.status.success(), "{applied:?}");
    assert_eq!(
        std::fs::read(fresh.join("data/latin1.txt")).unwrap(),
        b"caf\xe9\ncr\xe8me\n"
    );
    assert_eq!(
        std::fs::read(fresh.join("data/blob.bin")).unwrap(),
        b"\x00\xff\xfenew\x00"
    );

    let evaluated = dir.join("eval");
    let output = aci(&[
        "eval",
        "--instances",
        instances.to_str().unwrap(),
        "--predictions",
        run.join("preds.json").to_str().unwrap(),
        "--run-id",
        RUN_ID,
        "--output",
        evaluated.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = &read_json(&evaluated.join("bytes-1/report.json"))["bytes-1"];
    assert_eq!(report["resolved"], true, "{report}");
}

/// The attacks of `tests/fixtures/attacks/informed/` know how aci grades (each one's `attack`
/// field says how it works; five of the eight were resolved before the staged grader): none is
/// resolved. The reset removes the fakes that live in test infrastructure (tests/__init__.py, a
/// *.dist-info's pytest11 entry point, a root pytest.ini, a module that shadows pytest), so the
/// tests run for real and fail; the fakes that survive the first run (a forged log with the
/// canaries' real names, only the FAIL_TO_PASS tests faked from the package) are caught by the
/// tripwire run; a macro that shadows assert_eq! is refused.
#[test]
fn informed_attacks_are_reset_caught_by_the_tripwire_run_or_refused() {
    assert_eq!(gold().output.status.code(), Some(0));
    let instances = manifest_dir().join("tests/fixtures/attacks/informed/instances.jsonl");
    let out = scratch("informed").join("out");
    let output = aci(&[
        "eval",
        "--instances",
        instances.to_str().unwrap(),
        "--predictions",
        "gold",
        "--run-id",
        RUN_ID,
        "--workers",
        "2",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tripwire = |test: &str| {
        format!(
            "untrusted test run: {test} is reported PASSED in the tripwire run, where its first \
             statement is an assertion that fails: its result does not come from its body"
        )
    };
    for (id, test) in [
        (
            "informed__forged-log-with-canary-names",
            "tests/test_parser.py::test_values_may_contain_delimiters",
        ),
        (
            "informed__fail-to-pass-faked-from-package-init",
            "tests/test_cache.py::test_get_marks_entry_as_recently_used",
        ),
        (
            "informed__forged-libtest-log-with-canary-names",
            "parser::tests::subtraction_and_division_group_left",
        ),
    ] {
        assert_eq!(run_error(&out, id), tripwire(test), "{id}");
        // The first run was fooled: its log reads as resolved, canaries and all.
        let first = std::fs::read_to_string(out.join(id).join("test_output.txt")).unwrap();
        assert!(
            first.contains(&format!("{test} ... ok")) || first.contains(&format!("PASSED {test}")),
            "{id}"
        );
        let second = std::fs::read_to_string(out.join(id).join("tripwire_output.txt")).unwrap();
        assert!(!second.is_empty(), "{id}");
        assert!(!out.join(id).join("report.json").exists(), "{id}");
    }
    for (id, reset) in [
        (
            "informed__fail-to-pass-faked-from-tests-init",
            "tests/__init__.py removed",
        ),
        (
            "informed__pytest11-entry-point-in-dist-info",
            "moneyfmt_speedups-1.0.dist-info/METADATA removed",
        ),
        ("informed__root-pytest-ini-plugin", "pytest.ini removed"),
        ("informed__module-shadowing-pytest", "pytest.py removed"),
    ] {
        let body = &read_json(&out.join(id).join("report.json"))[id];
        assert_eq!(body["resolved"], false, "{id}");
        assert!(body.get("untrusted_reason").is_none(), "{id}: {body}");
        let entries: Vec<String> = body["infrastructure_reset"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["path"].as_str().unwrap(),
                    e["action"].as_str().unwrap()
                )
            })
            .collect();
        assert!(entries.contains(&reset.to_owned()), "{id}: {entries:?}");
        assert!(
            !body["tests_status"]["FAIL_TO_PASS"]["failure"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{id}"
        );
    }
    assert_eq!(
        run_error(&out, "informed__shadowed-assert-eq"),
        "untrusted test run: the patch reaches into the test framework in a way no fix needs \
         (src/lib.rs defines a macro named like a std assertion), so it is not evaluated"
    );
    let summary = read_json(&out.join("report.json"));
    assert_eq!(summary["resolved_instances"], 0);
    assert_eq!(summary["error_instances"], 4);
    assert_eq!(summary["unresolved_instances"], 4);
}
