//! `aci ablate` on two demo instances with the scripted replays: the no-lint variant lands the
//! broken edit the gate rejects by default, and that instance stops being resolved; the
//! 30-line window shrinks what the agent reads per turn. Real daemon, never skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const IDS: [&str; 2] = ["demo__inicfg-1", "demo__moneyfmt-1"];

/// The demo records for `IDS`, with `repo_path` made absolute so the file can live elsewhere.
fn instances_file(dir: &Path) -> std::path::PathBuf {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo");
    let text = std::fs::read_to_string(demo.join("instances.jsonl")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut record: Value = serde_json::from_str(line).unwrap();
        if !IDS.contains(&record["instance_id"].as_str().unwrap()) {
            continue;
        }
        let repo = demo.join(record["repo_path"].as_str().unwrap());
        record["repo_path"] = Value::String(repo.display().to_string());
        out.push_str(&serde_json::to_string(&record).unwrap());
        out.push('\n');
    }
    let path = dir.join("instances.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_lint_loses_the_rejected_edit_instance_and_window_30_shrinks_observations() {
    support::docker().await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("ablation");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_aci"))
            .current_dir(root)
            .args(["ablate", "--instances"])
            .arg(instances_file(dir.path()))
            .args([
                "--base",
                "configs/default.yaml",
                "--variant",
                "configs/ablations/no-lint.yaml",
                "--variant",
                "configs/ablations/window-30.yaml",
                "--replay-dir",
                "tests/fixtures/demo/replays",
                "--workers",
                "2",
                "--output",
            ])
            .arg(&output)
            .output()
            .unwrap()
    };
    let first = run();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(output.join("ablation.json")).unwrap())
            .unwrap();
    let rows = table["rows"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["config"] == name).unwrap();
    let (base, no_lint, window_30) = (row("default"), row("no-lint"), row("window-30"));
    assert_eq!(base["resolved"], 2.0);
    assert_eq!(base["lint_rejections"], 1);
    assert_eq!(no_lint["resolved"], 1.0);
    assert_eq!(no_lint["lint_rejections"], 0);
    assert_eq!(no_lint["lost"], serde_json::json!(["demo__moneyfmt-1"]));
    assert_eq!(no_lint["gained"], serde_json::json!([]));
    assert_eq!(window_30["resolved"], 2.0);
    let chars = |row: &Value| row["mean_observation_chars"].as_f64().unwrap();
    assert!(
        chars(window_30) < chars(base),
        "{} vs {}",
        chars(window_30),
        chars(base)
    );
    let markdown = std::fs::read_to_string(output.join("ablation.md")).unwrap();
    assert_eq!(String::from_utf8_lossy(&first.stdout), markdown);
    assert!(
        markdown
            .lines()
            .nth(3)
            .unwrap()
            .starts_with("| no-lint | 1/2 (50.0%) |"),
        "{markdown}"
    );
    assert_eq!(
        std::fs::read_to_string(output.join("ablation.csv"))
            .unwrap()
            .lines()
            .count(),
        4
    );
    // The chart: a bar and a label per configuration, no-lint at 1 of 2.
    let chart = std::fs::read_to_string(output.join("ablation.svg")).unwrap();
    assert_eq!(chart.matches("<g class=\"config\">").count(), 3, "{chart}");
    assert!(
        chart.contains(">50.0% (1/2) · 95% CI 9.5–90.5%</text>"),
        "{chart}"
    );
    // A rerun resumes: every batch skips its finished instances, every evaluation is reused,
    // and the table is the same but for the wall times.
    let second = run();
    assert!(second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(
        stderr.matches(": skipped (submitted)").count(),
        6,
        "{stderr}"
    );
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(output.join("ablation.json")).unwrap())
            .unwrap();
    let without_time = |table: &Value| {
        let mut table = table.clone();
        for row in table["rows"].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("wall_seconds");
        }
        table
    };
    assert_eq!(without_time(&again), without_time(&table));
}
