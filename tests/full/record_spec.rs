//! `aci eval` on the real Docker daemon over a record that carries its own SWE-bench spec
//! (`eval_script`, `log_parser`, `eval_type`, as the 5.x exports do): the demo's
//! `demo__inicfg-1` with its `test_cmd` replaced by such a script. The gold patch resolves with
//! the script's test command (not aci's own), run inside aci's `eval.sh` with its canaries and
//! tripwire, `report.json` says `spec_source: record`, and a record whose parser aci lacks is
//! one line saying so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use crate::support::aci;
use serde_json::Value;

/// The test command of the record's script: names none of the test patch's files, and adds
/// `-q`, which aci's own commands for the demo never pass.
const OWN_COMMAND: &str = "python -m pytest -rA -q -p no:cacheprovider tests";

fn own_script(base: &str) -> String {
    format!(
        "#!/bin/bash\nset -uxo pipefail\nsource /opt/miniconda3/bin/activate\nconda activate \
         testbed\ncd /testbed\ngit checkout {base} tests/test_interpolate.py \
         tests/test_parser.py\n: '>>>>> Start Test Output'\n{OWN_COMMAND}\n: '>>>>> End Test \
         Output'\ngit checkout {base} tests/test_interpolate.py tests/test_parser.py\n"
    )
}

fn demo_record(id: &str) -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/instances.jsonl");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|record| record["instance_id"] == id)
        .unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_record_s_own_spec_grades_it_inside_aci_s_eval_script() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("record-spec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo");
    let mut own = demo_record("demo__inicfg-1");
    let object = own.as_object_mut().unwrap();
    object.remove("test_cmd");
    object.insert("instance_id".into(), "demo__inicfg-own".into());
    object.insert(
        "repo_path".into(),
        demo.join("repos/inicfg").display().to_string().into(),
    );
    object.insert("eval_script".into(), own_script("HEAD").into());
    object.insert("log_parser".into(), "parse_log_pytest".into());
    object.insert("eval_type".into(), "pass_and_fail".into());
    let mut js = own.clone();
    js["instance_id"] = "demo__inicfg-js".into();
    js["log_parser"] = "parse_log_chart_js".into();
    let instances = dir.join("instances.jsonl");
    std::fs::write(&instances, format!("{own}\n{js}\n")).unwrap();
    let out = dir.join("eval");
    let output = aci(&[
        "eval",
        "--instances",
        instances.to_str().unwrap(),
        "--predictions",
        "gold",
        "--run-id",
        "test-record-spec",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let report: Value =
        serde_json::from_str(&read(&out.join("demo__inicfg-own/report.json"))).unwrap();
    let own_report = &report["demo__inicfg-own"];
    assert_eq!(own_report["resolved"], true, "{report}");
    assert_eq!(own_report["spec_source"], "record");
    assert_eq!(own_report["tripwire"]["confirmed"], true, "{report}");
    let script = read(&out.join("demo__inicfg-own/eval.sh"));
    let command_lines: Vec<&str> = script
        .lines()
        .filter(|line| line.contains("python -m pytest"))
        .collect();
    assert_eq!(command_lines.len(), 1, "{script}");
    assert!(
        command_lines[0].contains(OWN_COMMAND),
        "the record's command runs: {}",
        command_lines[0]
    );
    assert!(
        !script.contains("conda activate"),
        "the script's activation is not run here"
    );

    let log = read(&out.join("demo__inicfg-js/run_instance.log"));
    assert_eq!(
        log.lines()
            .rev()
            .find_map(|line| line.strip_prefix("error: ")),
        Some(
            "SWE-bench's log parser \"parse_log_chart_js\" is not supported yet (aci reads: \
             parse_log_pytest, parse_log_pytest_options, parse_log_pytest_v2, \
             parse_log_matplotlib, parse_log_seaborn, parse_log_django, parse_log_sympy and \
             their per-repository names; parse_log_cargo, parse_log_phpunit, parse_log_gotest, \
             parse_log_rspec_transformed_json, parse_log_karma, parse_log_ant, parse_log_maven, \
             parse_log_redis, parse_log_ruby_unit, parse_log_googletest, \
             parse_log_gradle_custom, parse_log_jest, parse_log_jest_json, parse_log_tap, \
             parse_log_jq, parse_log_minitest, parse_log_cucumber, parse_log_jekyll, \
             parse_log_micropython_test, parse_log_vitest, parse_log_immutable_js, parse_log_doctest)"
        ),
        "{log}"
    );
    assert!(!out.join("demo__inicfg-js/report.json").exists());
    let summary: Value = serde_json::from_str(&read(&out.join("report.json"))).unwrap();
    assert_eq!(
        summary["resolved_ids"],
        serde_json::json!(["demo__inicfg-own"]),
        "{summary}"
    );
    assert_eq!(
        summary["error_ids"],
        serde_json::json!(["demo__inicfg-js"]),
        "{summary}"
    );
}
