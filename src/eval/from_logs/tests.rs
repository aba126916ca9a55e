//! Finding logs in the three layouts and grading them into aci's files, in temporary directories.

use std::path::Path;

use super::*;
use crate::instance::parse_instances;

/// A log with markers: `test_ok` passes, `test_bad` fails.
const MARKER_LOG: &str = "\
+ : '>>>>> Start Test Output'
PASSED tests/test_a.py::test_ok
FAILED tests/test_a.py::test_bad - AssertionError
======== 1 failed, 1 passed in 0.10s ========
+ : '>>>>> End Test Output'
>>>>> Test Exit Code: 1
";

/// A 1.x log of the same run.
const V1_LOG: &str = "\
Task Metadata:
\t- Instance ID: c__c-3
>>>>> Applied Patch (pred_try)
>>>>> Init Succeeded
>>>>> Applied Patch (test)
>>>>> Applied Patch (pred)
Test Script: pytest -rA tests/test_a.py;
Output:
PASSED tests/test_a.py::test_ok
FAILED tests/test_a.py::test_bad - AssertionError
>>>>> Some Tests Failed
";

const V1_EMPTY: &str = "\
Task Metadata:
\t- Instance ID: d__d-4
>>>>> Patch Apply Failed; Prediction patch is `None`
";

/// Instances `a` to `f`, each with `test_ok` to fix; `b` also needs `test_bad`.
fn instances() -> Vec<Instance> {
    let record = |id: &str, f2p: &[&str]| {
        serde_json::json!({
            "instance_id": id,
            "problem_statement": "",
            "repo": "acme/widget",
            "base_commit": "abc",
            "log_parser": "pytest",
            "test_cmd": "pytest -rA",
            "test_patch": "diff --git a/tests/test_a.py b/tests/test_a.py\n",
            "FAIL_TO_PASS": f2p,
            "PASS_TO_PASS": [],
        })
        .to_string()
    };
    let ok = ["tests/test_a.py::test_ok"];
    let text = [
        record("a__a-1", &ok),
        record(
            "b__b-2",
            &["tests/test_a.py::test_ok", "tests/test_a.py::test_bad"],
        ),
        record("c__c-3", &ok),
        record("d__d-4", &ok),
        record("e__e-5", &ok),
        record("f__f-6", &ok),
    ]
    .join("\n");
    parse_instances(&text, None).unwrap().instances
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `a` in aci's layout (with its patch), `b` in the 2.x layout, `c` and `d` as 1.x logs, and `e`
/// twice, under two models.
fn logs_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(&root.join("a__a-1/test_output.txt"), MARKER_LOG);
    write_file(
        &root.join("a__a-1/patch.diff"),
        "diff --git a/conftest.py b/conftest.py\n",
    );
    let run = root.join("logs/run_evaluation/run-1");
    write_file(&run.join("org__model/b__b-2/test_output.txt"), MARKER_LOG);
    write_file(&root.join("c__c-3.my.model.v2.eval.log"), V1_LOG);
    write_file(&root.join("d__d-4.my.model.v2.eval.log"), V1_EMPTY);
    write_file(&run.join("m1/e__e-5/test_output.txt"), MARKER_LOG);
    write_file(&run.join("m2/e__e-5/test_output.txt"), MARKER_LOG);
    write_file(&root.join("zz__zz-9/test_output.txt"), MARKER_LOG);
    dir
}

fn ids() -> BTreeSet<String> {
    instances().into_iter().map(|i| i.instance_id).collect()
}

#[test]
fn logs_are_found_in_every_layout_with_their_model_and_patch() {
    let dir = logs_dir();
    let root = dir.path();
    let found = find_logs(root, &ids()).unwrap();
    let run = root.join("logs/run_evaluation/run-1");
    let log = |path: PathBuf, model: Option<&str>, patch: Option<PathBuf>| LogFile {
        path,
        model: model.map(str::to_owned),
        patch,
        infra_failure: None,
    };
    let expected: BTreeMap<String, Vec<LogFile>> = [
        (
            "a__a-1",
            vec![log(
                root.join("a__a-1/test_output.txt"),
                None,
                Some(root.join("a__a-1/patch.diff")),
            )],
        ),
        (
            "b__b-2",
            vec![log(
                run.join("org__model/b__b-2/test_output.txt"),
                Some("org__model"),
                None,
            )],
        ),
        (
            "c__c-3",
            vec![log(
                root.join("c__c-3.my.model.v2.eval.log"),
                Some("my.model.v2"),
                None,
            )],
        ),
        (
            "d__d-4",
            vec![log(
                root.join("d__d-4.my.model.v2.eval.log"),
                Some("my.model.v2"),
                None,
            )],
        ),
        (
            "e__e-5",
            vec![
                log(run.join("m2/e__e-5/test_output.txt"), Some("m2"), None),
                log(run.join("m1/e__e-5/test_output.txt"), Some("m1"), None),
            ],
        ),
    ]
    .into_iter()
    .map(|(id, logs)| (id.to_owned(), logs))
    .collect();
    assert_eq!(found, expected);
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn without_predictions_every_instance_with_one_log_is_graded_and_the_rest_counted() {
    let logs = logs_dir();
    let out = tempfile::tempdir().unwrap();
    let settings = FromLogsSettings {
        logs: logs.path().to_path_buf(),
        output: out.path().to_path_buf(),
        spec: SpecSource::Record,
    };
    let mut seen = Vec::new();
    let summary = grade_logs(&instances(), None, &settings, &mut |done| {
        seen.push(done.describe())
    })
    .unwrap();
    let strings = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
    assert_eq!(summary.total_instances, 6);
    assert_eq!(
        summary.submitted_ids,
        strings(&["a__a-1", "b__b-2", "c__c-3", "d__d-4", "e__e-5"])
    );
    assert_eq!(summary.resolved_ids, strings(&["a__a-1", "c__c-3"]));
    assert_eq!(summary.unresolved_ids, strings(&["b__b-2"]));
    assert_eq!(summary.empty_patch_ids, strings(&["d__d-4"]));
    assert_eq!(summary.error_ids, strings(&["e__e-5"]));
    assert_eq!(summary.incomplete_ids, strings(&["f__f-6"]));
    // The patch beside a's log changes a conftest.py: named, as `aci eval` names it.
    assert_eq!(summary.resolved_touching_tests_ids, strings(&["a__a-1"]));
    assert_eq!(
        read_json(&out.path().join("report.json"))["schema_version"],
        2
    );
    let report = read_json(&out.path().join("a__a-1/report.json"));
    assert_eq!(report["a__a-1"]["resolved"], true);
    assert_eq!(report["a__a-1"]["patch_successfully_applied"], true);
    assert_eq!(
        report["a__a-1"]["touches_tests"],
        serde_json::json!([{"path": "conftest.py", "why": "pytest loads it as a plugin"}])
    );
    assert_eq!(
        std::fs::read_to_string(out.path().join("c__c-3/test_output.txt")).unwrap(),
        V1_LOG
    );
    assert_eq!(
        std::fs::read_to_string(out.path().join("c__c-3/run_instance.log")).unwrap(),
        format!(
            "graded from {} (SWE-bench harness 1.x log)\nparser: pytest\n",
            logs.path().join("c__c-3.my.model.v2.eval.log").display()
        )
    );
    // An error and an empty patch have no report.json; the error is in run_instance.log.
    assert!(!out.path().join("e__e-5/report.json").exists());
    assert!(!out.path().join("d__d-4/report.json").exists());
    let error = std::fs::read_to_string(out.path().join("e__e-5/run_instance.log")).unwrap();
    assert!(
        error.starts_with("error: several logs of this instance, "),
        "{error}"
    );
    assert!(
        error.ends_with("; point --from-logs at one run's directory\n"),
        "{error}"
    );
    assert!(!out.path().join("f__f-6").exists());
    assert_eq!(seen.len(), 6);
}

#[test]
fn with_predictions_the_log_of_the_predictions_model_is_graded_and_a_missing_log_is_an_error() {
    let logs = logs_dir();
    let out = tempfile::tempdir().unwrap();
    let settings = FromLogsSettings {
        logs: logs.path().to_path_buf(),
        output: out.path().to_path_buf(),
        spec: SpecSource::Record,
    };
    let prediction = |id: &str, model: &str, patch: &str| Prediction {
        instance_id: id.to_owned(),
        model_name_or_path: model.to_owned(),
        model_patch: patch.to_owned(),
    };
    let predictions = vec![
        prediction("b__b-2", "org/model", "diff b"),
        prediction("c__c-3", "my.model.v2", ""),
        prediction("d__d-4", "my.model.v2", "diff d"),
        prediction("e__e-5", "m1", "diff e"),
        prediction("f__f-6", "m1", "diff f"),
    ];
    let summary = grade_logs(&instances(), Some(&predictions), &settings, &mut |_| {}).unwrap();
    let strings = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
    assert_eq!(summary.incomplete_ids, strings(&["a__a-1"]));
    assert_eq!(summary.empty_patch_ids, strings(&["c__c-3"]));
    assert_eq!(summary.resolved_ids, strings(&["e__e-5"]));
    assert_eq!(summary.unresolved_ids, strings(&["b__b-2"]));
    assert_eq!(summary.error_ids, strings(&["d__d-4", "f__f-6"]));
    assert_eq!(
        std::fs::read_to_string(out.path().join("b__b-2/patch.diff")).unwrap(),
        "diff b"
    );
    let d = std::fs::read_to_string(out.path().join("d__d-4/run_instance.log")).unwrap();
    assert!(
        d.ends_with(
            "error: the log is of an empty prediction, not of this patch\n\
             cause: evaluation_error (infrastructure): the evaluation failed: the log is of an \
             empty prediction, not of this patch\n  the log is of an empty prediction, not of \
             this patch\n"
        ),
        "{d}"
    );
    let f = std::fs::read_to_string(out.path().join("f__f-6/run_instance.log")).unwrap();
    assert_eq!(
        f,
        format!(
            "error: no log of this instance under {0}\ncause: evaluation_error (infrastructure): \
             the evaluation failed: no log of this instance under {0}\n  no log of this instance \
             under {0}\n",
            logs.path().display()
        )
    );
}

#[test]
fn grading_an_output_directory_in_place_keeps_its_logs_and_drops_a_stale_report() {
    let logs = logs_dir();
    let settings = FromLogsSettings {
        logs: logs.path().to_path_buf(),
        output: logs.path().to_path_buf(),
        spec: SpecSource::Record,
    };
    let stale = logs.path().join("e__e-5/report.json");
    write_file(&stale, "{}");
    let summary = grade_logs(&instances(), None, &settings, &mut |_| {}).unwrap();
    assert_eq!(summary.resolved_instances, 2);
    // Again: the copies of the 1.x logs written beside them are not taken for second logs.
    let again = grade_logs(&instances(), None, &settings, &mut |_| {}).unwrap();
    assert_eq!(again, summary);
    assert_eq!(
        std::fs::read_to_string(logs.path().join("a__a-1/test_output.txt")).unwrap(),
        MARKER_LOG
    );
    assert!(logs.path().join("a__a-1/report.json").is_file());
    assert!(!stale.exists());
}

/// A 300 MiB log: the start marker, a hole of zero bytes (sparse, so the test writes almost
/// nothing), then the results and the end marker. It is streamed: what is copied and graded is
/// the head and tail a live evaluation keeps, with the same elision note between them.
#[test]
fn a_huge_log_is_graded_and_copied_as_its_bounded_head_and_tail() {
    let logs = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let head = "+ : '>>>>> Start Test Output'\nrunning the tests\n";
    let tail = "\nPASSED tests/test_a.py::test_ok\n======== 1 passed in 0.10s ========\n\
                + : '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n";
    let total: u64 = 300 * 1024 * 1024;
    let path = logs.path().join("a__a-1/test_output.txt");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(head.as_bytes()).unwrap();
        file.seek(SeekFrom::Start(total - tail.len() as u64))
            .unwrap();
        file.write_all(tail.as_bytes()).unwrap();
    }
    let settings = FromLogsSettings {
        logs: logs.path().to_path_buf(),
        output: out.path().to_path_buf(),
        spec: SpecSource::Record,
    };
    let summary = grade_logs(&instances()[..1], None, &settings, &mut |_| {}).unwrap();
    assert_eq!(summary.resolved_ids, ["a__a-1"]);

    let (head_limit, tail_limit) = (EVAL_OUTPUT_LIMIT.head, EVAL_OUTPUT_LIMIT.tail);
    let elided = total - (head_limit + tail_limit) as u64;
    let note = format!("\n[... {elided} bytes of output elided ...]\n");
    let copied = std::fs::read(out.path().join("a__a-1/test_output.txt")).unwrap();
    assert_eq!(copied.len(), head_limit + note.len() + tail_limit);
    assert!(copied.starts_with(head.as_bytes()));
    assert!(copied[head.len()..head_limit].iter().all(|b| *b == 0));
    assert_eq!(
        &copied[head_limit..head_limit + note.len()],
        note.as_bytes()
    );
    assert!(copied.ends_with(tail.as_bytes()));
    assert_eq!(
        std::fs::read_to_string(out.path().join("a__a-1/run_instance.log")).unwrap(),
        format!(
            "graded from {} (test log with start and end markers)\n\
             {elided} bytes of the log were dropped from the middle of test_output.txt\n\
             parser: pytest\n",
            path.display()
        )
    );
}

/// A run in SWE-bench 5.x's layout, as its harness writes it: `run.json` beside the model's
/// directory, and per instance `report.json`, `test_output.txt`, `run_instance.log` and
/// `patch.diff`. `a` ran and passed; `b`'s container never started, which the harness's
/// report flags as an infrastructure failure.
fn harness_v5_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("logs/run_evaluation/nightly-7");
    write_file(
        &run.join("run.json"),
        "{\n  \"dataset\": \"acme/widget-bench\",\n  \"split\": \"test\",\n  \"task_repo\": null,\n  \
         \"created_at\": \"2026-11-30T04:00:00+00:00\"\n}\n",
    );
    let a = run.join("org__model-9b/a__a-1");
    write_file(&a.join("test_output.txt"), MARKER_LOG);
    write_file(&a.join("patch.diff"), "diff --git a/src/w.py b/src/w.py\n");
    write_file(&a.join("run_instance.log"), "Intermediate patch written\n");
    write_file(
        &a.join("report.json"),
        r#"{"a__a-1": {"patch_is_None": false, "patch_exists": true,
            "patch_successfully_applied": true, "resolved": true, "infra_failure": false}}"#,
    );
    let b = run.join("org__model-9b/b__b-2");
    write_file(
        &b.join("test_output.txt"),
        "Error response from daemon: cannot start container: no space left on device\n",
    );
    write_file(&b.join("patch.diff"), "diff --git a/src/w.py b/src/w.py\n");
    write_file(&b.join("run_instance.log"), "Container failed to start\n");
    write_file(
        &b.join("report.json"),
        r#"{"b__b-2": {"patch_is_None": false, "patch_exists": true,
            "patch_successfully_applied": false, "resolved": false, "infra_failure": true,
            "infra_failure_reason": "container_unavailable"}}"#,
    );
    dir
}

#[test]
fn a_swe_bench_5_run_is_graded_and_keeps_the_harness_s_infrastructure_failures() {
    let logs = harness_v5_dir();
    let out = tempfile::tempdir().unwrap();
    let settings = FromLogsSettings {
        logs: logs.path().to_path_buf(),
        output: out.path().to_path_buf(),
        spec: SpecSource::Record,
    };
    let found = find_logs(logs.path(), &ids()).unwrap();
    assert_eq!(found["a__a-1"][0].infra_failure, None);
    assert_eq!(
        found["b__b-2"][0].infra_failure.as_deref(),
        Some("container_unavailable")
    );
    assert_eq!(found["b__b-2"][0].model.as_deref(), Some("org__model-9b"));
    let summary = grade_logs(&instances(), None, &settings, &mut |_| {}).unwrap();
    let strings = |ids: &[&str]| ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
    assert_eq!(summary.resolved_ids, strings(&["a__a-1"]));
    assert_eq!(summary.error_ids, strings(&["b__b-2"]));
    assert_eq!(summary.infrastructure_failure_ids, strings(&["b__b-2"]));
    let report = read_json(&out.path().join("a__a-1/report.json"));
    assert_eq!(report["a__a-1"]["resolved"], true);
    assert_eq!(report["a__a-1"].get("infra_failure"), None);
    // No test output: an error whose run_instance.log keeps the harness's flag and reason.
    assert!(!out.path().join("b__b-2/report.json").exists());
    assert_eq!(
        std::fs::read_to_string(out.path().join("b__b-2/run_instance.log")).unwrap(),
        format!(
            "graded from {}\nerror: the log has no start-of-tests marker\ninfra_failure: true \
             (container_unavailable, from the SWE-bench harness's report.json)\ncause: \
             evaluation_error (infrastructure): the SWE-bench harness flagged an infrastructure \
             failure (container_unavailable)\n",
            logs.path()
                .join("logs/run_evaluation/nightly-7/org__model-9b/b__b-2/test_output.txt")
                .display()
        )
    );
}

#[test]
fn a_flagged_instance_whose_log_graded_keeps_the_flag_in_its_report() {
    let json = "{\n    \"a__a-1\": {\n        \"patch_is_None\": false\n    }\n}\n".to_owned();
    let flagged = with_infra_failure(json.clone(), "a__a-1", Some("out_of_memory"));
    let value: serde_json::Value = serde_json::from_str(&flagged).unwrap();
    assert_eq!(value["a__a-1"]["infra_failure"], true);
    assert_eq!(value["a__a-1"]["infra_failure_reason"], "out_of_memory");
    assert_eq!(
        flagged.replace(
            "        \"infra_failure\": true,\n        \"infra_failure_reason\": \"out_of_memory\",\n",
            ""
        ),
        json
    );
    assert_eq!(with_infra_failure(json.clone(), "a__a-1", None), json);
}
