//! aci's grading against the SWE-bench harness on real data: the 138 evaluation logs the harness
//! (1.x) wrote when it graded one published SWE-bench Lite run, and the verdicts that run
//! published (`../shared/swebench/`, or `ACI_SWEBENCH_DATA`; the tests fail when it is missing).
//!
//! - `aci eval --from-logs` on all 138 gives the published `resolved` verdict on 137; the one
//!   disagreement, `scikit-learn__scikit-learn-13241`, is the published run's: its log shows
//!   every FAIL_TO_PASS and PASS_TO_PASS test passed, and `swebench` 4.1.0's own parsers also
//!   grade it resolved.
//! - The test command aci builds for each logged record is the one the harness ran: the same
//!   test directives, after the same base command, apart from the activation and the flags
//!   SWE-bench changed between its 1.x tables and 4.1.0's (listed below, from 4.1.0's constants).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use aci::eval::logs::v1_test_script;
use aci::eval::plan::grading_plan;
use aci::eval::spec::builtin;
use aci::instance::{Instance, load_instances_file};
use serde_json::Value;

/// The SWE-bench data directory.
fn data_dir() -> PathBuf {
    let dir = std::env::var_os("ACI_SWEBENCH_DATA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
        PathBuf::from,
    );
    assert!(
        dir.join("harness-logs").is_dir() && dir.join("lite.jsonl").is_file(),
        "the SWE-bench data is missing: {} has no lite.jsonl or harness-logs/\nhint: set \
         ACI_SWEBENCH_DATA to the directory that holds lite.jsonl, harness-logs/ and \
         harness-verdicts.json",
        dir.display()
    );
    dir
}

fn lite() -> BTreeMap<String, Instance> {
    let loaded = load_instances_file(&data_dir().join("lite.jsonl")).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    loaded
        .instances
        .into_iter()
        .map(|instance| (instance.instance_id.clone(), instance))
        .collect()
}

/// `(instance id, log text)` of every harness log.
fn harness_logs() -> Vec<(String, String)> {
    let mut logs: Vec<(String, String)> = std::fs::read_dir(data_dir().join("harness-logs"))
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let id = name.split('.').next().unwrap().to_owned();
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            (id, text)
        })
        .collect();
    logs.sort();
    logs
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn grading_the_harness_logs_gives_the_published_verdict_on_137_of_138() {
    let data = data_dir();
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("swebench-logs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["eval", "--instances"])
        .arg(data.join("lite.jsonl"))
        .arg("--from-logs")
        .arg(data.join("harness-logs"))
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout.lines().next(),
        Some(
            "resolved 43 of 300 instances (unresolved 71, errors 10, empty patches 14, without \
             prediction 162); resolve rate 14.3%, 14.3% without the 0 infrastructure failure(s)"
        )
    );
    // Every unresolved log has a cause read from it, as `aci eval` gives them.
    assert_eq!(
        stdout.lines().nth(1),
        Some("causes: patch_not_applied 9, tests_did_not_run 4, tests_failed 67, timed_out 1")
    );
    let verdicts = read_json(&data.join("harness-verdicts.json"));
    let verdicts = verdicts.as_object().unwrap();
    assert_eq!(verdicts.len(), 138);
    let mut agree = 0;
    let mut disagreements = Vec::new();
    for (id, verdict) in verdicts {
        let report = out.join(id).join("report.json");
        // No report.json: an error or an empty patch, neither of which is resolved.
        let resolved = report.is_file() && read_json(&report)[id]["resolved"] == true;
        if Some(resolved) == verdict["resolved"].as_bool() {
            agree += 1;
        } else {
            disagreements.push(id.clone());
        }
    }
    assert_eq!(disagreements, vec!["scikit-learn__scikit-learn-13241"]);
    assert!(agree >= 137, "{agree} of 138 agree");
    // The disagreement: the log shows every listed test passed.
    let sklearn = read_json(&out.join("scikit-learn__scikit-learn-13241/report.json"));
    let status = &sklearn["scikit-learn__scikit-learn-13241"]["tests_status"];
    assert_eq!(status["FAIL_TO_PASS"]["failure"], serde_json::json!([]));
    assert_eq!(status["PASS_TO_PASS"]["failure"], serde_json::json!([]));
    let summary = read_json(&out.join("report.json"));
    assert_eq!(summary["submitted_instances"], 138);
    assert_eq!(summary["error_instances"], 10);
    assert_eq!(summary["schema_version"], 2);
}

/// Base commands of SWE-bench's 1.x tables (what these logs ran) and the 4.1.0 ones aci uses.
const HARNESS_COMMAND_CHANGES: [(&str, &str); 4] = [
    // 4.1.0 assigns TEST_PYTEST twice; the second, plain value is the one its specs use.
    (
        "pytest --no-header -rA --tb=no -p no:cacheprovider",
        "pytest -rA",
    ),
    // Old astropy versions got TEST_ASTROPY_PYTEST.
    (
        "pytest --no-header -rA --tb=no -p no:cacheprovider",
        "pytest -rA -vv -o console_output_style=classic --tb=no",
    ),
    // Django runs with its SQLite settings and one process (1.9 keeps the plain command).
    (
        "./tests/runtests.py --verbosity 2",
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1",
    ),
    // sympy silences two warning classes.
    (
        "bin/test -C --verbose",
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose",
    ),
];

#[test]
fn the_test_command_of_each_logged_record_is_the_one_the_harness_ran() {
    let instances = lite();
    let table = builtin();
    let (mut same, mut without_script) = (0, 0);
    let mut changed: BTreeMap<usize, usize> = BTreeMap::new();
    for (id, log) in harness_logs() {
        let Some(script) = v1_test_script(&log) else {
            without_script += 1;
            continue;
        };
        // `source …/activate <env> && echo 'activate successful' && <command>;`
        let (_activation, logged) = script
            .rsplit_once(" && echo 'activate successful' && ")
            .unwrap_or_else(|| panic!("{id}: no activation in {script:?}"));
        let logged = logged.strip_suffix(';').unwrap_or(logged);
        let plan = grading_plan(&instances[&id], table).unwrap();
        let directives = plan.test_directives.join(" ");
        let logged_base = logged
            .strip_suffix(&format!(" {directives}"))
            .unwrap_or_else(|| {
                panic!("{id}: the harness ran {logged:?}, aci's directives are {directives:?}")
            });
        assert_eq!(
            plan.command_line(),
            format!("{} {directives}", plan.test_cmd)
        );
        if logged_base == plan.test_cmd {
            same += 1;
        } else {
            let change = HARNESS_COMMAND_CHANGES
                .iter()
                .position(|known| *known == (logged_base, plan.test_cmd.as_str()))
                .unwrap_or_else(|| {
                    panic!(
                        "{id}: the harness ran {logged_base:?}, aci runs {:?}",
                        plan.test_cmd
                    )
                });
            *changed.entry(change).or_default() += 1;
        }
    }
    // 116 logs ran tests (the other 22 stopped at the patch, an empty prediction or the
    // install): 7 with the very command aci runs (seaborn, pytest), 109 with the 1.x flags.
    assert_eq!((same, without_script), (7, 22));
    assert_eq!(changed, BTreeMap::from([(0, 22), (1, 1), (2, 53), (3, 33)]));
}
