//! `aci ablate` on two demo instances with the scripted replays: the no-lint variant lands the
//! broken edit the gate rejects by default, and that instance stops being resolved; the
//! 30-line window shrinks what the agent reads per turn; the paper's ACI and the bash-only
//! protocol (mini-swe-agent's) share one table. Real daemon, never skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const IDS: [&str; 2] = ["demo__inicfg-1", "demo__moneyfmt-1"];

/// The demo records for `IDS`, with `repo_path` made absolute so the file can live elsewhere.
fn instances_file(dir: &Path) -> std::path::PathBuf {
    instances_file_of(dir, &IDS)
}

/// The demo records for `ids`, as [`instances_file`] writes them.
fn instances_file_of(dir: &Path, ids: &[&str]) -> std::path::PathBuf {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo");
    let text = std::fs::read_to_string(demo.join("instances.jsonl")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut record: Value = serde_json::from_str(line).unwrap();
        if !ids.contains(&record["instance_id"].as_str().unwrap()) {
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
            .starts_with("| no-lint | paper ACI (text) | 1/2 (50.0%) |"),
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

/// The paper's ACI against the bash-only protocol on the same two instances, in one table: the
/// base replays the demo's ACI actions, the variant (`configs/ablations/bash-only.yaml`, which
/// extends `configs/mini-swe-agent.yaml`) replays mini-swe-agent trajectories of the same tasks
/// (the demo's `mini-replays`), in a fresh subshell per command, submitting with the sentinel.
/// Both resolve both; the rows name their protocols and the bash-only runs write mini's
/// trajectories too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_papers_aci_and_the_bash_only_protocol_compare_in_one_table() {
    support::docker().await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("ablation");
    // The ablation's bash-only file, with the scripted answers of its own protocol.
    let variant = dir.path().join("bash-only.yaml");
    std::fs::write(
        &variant,
        format!(
            "extends: {}\nmodel:\n  replay_dir: {}\n",
            root.join("configs/ablations/bash-only.yaml").display(),
            root.join("tests/fixtures/demo/mini-replays").display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_aci"))
        .current_dir(root)
        .args(["ablate", "--instances"])
        .arg(instances_file(dir.path()))
        .args(["--base", "configs/default.yaml", "--variant"])
        .arg(&variant)
        .args([
            "--replay-dir",
            "tests/fixtures/demo/replays",
            "--workers",
            "2",
            "--output",
        ])
        .arg(&output)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(output.join("ablation.json")).unwrap())
            .unwrap();
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let (paper, bash_only) = (&rows[0], &rows[1]);
    assert_eq!(paper["config"], "default");
    assert_eq!(
        paper["protocol"],
        serde_json::json!({"interface": "paper ACI", "parser": "thought_action",
            "shell": "persistent", "submit": "submit", "trajectory": "swe-agent"})
    );
    assert_eq!(bash_only["config"], "bash-only");
    assert_eq!(
        bash_only["protocol"],
        serde_json::json!({"interface": "bash-only", "parser": "action_regex",
            "shell": "subshell", "submit": "sentinel",
            "trajectory": "swe-agent, mini-swe-agent-1.1"})
    );
    for row in [paper, bash_only] {
        assert_eq!(row["resolved"], 2.0, "{row}");
        assert_eq!(row["exits"], serde_json::json!({"submitted": 2}), "{row}");
        assert_eq!(row["format_errors"], 0, "{row}");
    }
    assert_eq!(paper["lint_rejections"], 1);
    assert_eq!(bash_only["lint_rejections"], 0);
    assert_eq!(bash_only["gained"], serde_json::json!([]));
    assert_eq!(bash_only["lost"], serde_json::json!([]));
    // The mini replays' actions: 8 each (moneyfmt's answer with two blocks was a format
    // error there, and is not replayed).
    assert_eq!(bash_only["mean_steps"], 8.0);
    let markdown = std::fs::read_to_string(output.join("ablation.md")).unwrap();
    let lines: Vec<&str> = markdown.lines().collect();
    assert!(
        lines[0].starts_with("| config | protocol | resolved |"),
        "{markdown}"
    );
    assert!(
        lines[2].starts_with("| default | paper ACI (text) | 2/2 (100.0%) | 34.2–100.0% | — |"),
        "{markdown}"
    );
    assert!(
        lines[3].starts_with(
            "| bash-only | bash-only (text) | 2/2 (100.0%) | 34.2–100.0% | +0.0 | +0 / −0 | 1.000 | 8.0 |"
        ),
        "{markdown}"
    );
    let chart = std::fs::read_to_string(output.join("ablation.svg")).unwrap();
    assert!(chart.contains(">bash-only (text)</text>"), "{chart}");
    // The bash-only runs are mini's too: each wrote its mini-swe-agent-1.1 trajectory.
    for id in IDS {
        let mini: Value = serde_json::from_str(
            &std::fs::read_to_string(output.join(format!("bash-only/r1/run/{id}/{id}.traj.json")))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(mini["trajectory_format"], "mini-swe-agent-1.1");
        assert_eq!(mini["info"]["exit_status"], "Submitted");
    }
}

/// The three generations on one demo task, with the demo's own ablation files
/// (`tests/fixtures/demo/generations/`): the paper's ACI replays `replays/`, 1.x's tools
/// `swe-agent-1-replays/` (through function calling) and bash-only `mini-replays/`; each
/// submits the gold patch and resolves the task, and the table names the three protocols.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_three_generations_resolve_a_demo_task_in_one_table() {
    support::docker().await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("ablation");
    let id = "demo__csvreport-1";
    let out = Command::new(env!("CARGO_BIN_EXE_aci"))
        .current_dir(root)
        .args(["ablate", "--instances"])
        .arg(instances_file_of(dir.path(), &[id]))
        .args([
            "--base",
            "configs/default.yaml",
            "--variant",
            "tests/fixtures/demo/generations/swe-agent-1.yaml",
            "--variant",
            "tests/fixtures/demo/generations/bash-only.yaml",
            "--replay-dir",
            "tests/fixtures/demo/replays",
            "--output",
        ])
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(output.join("ablation.json")).unwrap())
            .unwrap();
    let rows = table["rows"].as_array().unwrap();
    let names: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["config"].as_str().unwrap(),
                r["protocol"]["interface"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("default", "paper ACI"),
            ("swe-agent-1", "1.x tools"),
            ("bash-only", "bash-only")
        ]
    );
    let gold = std::fs::read_to_string(root.join("tests/fixtures/demo/instances.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|r| r["instance_id"] == id)
        .unwrap()["patch"]
        .as_str()
        .unwrap()
        .to_owned();
    for row in rows {
        assert_eq!(row["resolved"], 1.0, "{row}");
        assert_eq!(row["exits"], serde_json::json!({"submitted": 1}), "{row}");
        let config = row["config"].as_str().unwrap();
        let patch = output.join(format!("{config}/r1/run/{id}/{id}.patch"));
        assert_eq!(std::fs::read_to_string(patch).unwrap(), gold, "{config}");
    }
}

/// The task containers made by the process `pid`, and whether one of them runs `command`.
fn containers_of_process(pid: u32, command: &str) -> (Vec<String>, bool) {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--no-trunc", "--filter"])
        .arg(format!("label=aci.pid={pid}"))
        .output()
        .unwrap();
    let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let running = ids.iter().any(|id| {
        let top = Command::new("docker").args(["top", id]).output().unwrap();
        String::from_utf8_lossy(&top.stdout)
            .lines()
            .any(|line| line.ends_with(&format!(" {command}")))
    });
    (ids, running)
}

/// SIGTERM to `aci ablate` stops the batch it runs in order (its running
/// instance autosubmitted, its container removed); the ablation waits for it, runs no step
/// after it, exits 130 and keeps what finished: the base's run and evaluation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_reaches_the_running_batch_and_the_finished_steps_stay() {
    use std::time::{Duration, Instant};
    support::docker().await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("ablation");
    let slow = dir.path().join("slow-replays");
    std::fs::create_dir_all(&slow).unwrap();
    let actions = [
        "echo '# work in progress' >> README.md",
        "sleep 900",
        "submit",
    ];
    for id in IDS {
        let path = slow.join(format!("{id}.yaml"));
        std::fs::write(path, serde_json::to_string(&actions).unwrap()).unwrap();
    }
    let variant = dir.path().join("slow.yaml");
    std::fs::write(
        &variant,
        format!(
            "model:\n  replay_dir: {}\nenv:\n  command_timeout: 1200\n",
            slow.display()
        ),
    )
    .unwrap();
    let stderr_path = dir.path().join("stderr");
    let mut ablate = Command::new(env!("CARGO_BIN_EXE_aci"))
        .current_dir(root)
        .args(["ablate", "--instances"])
        .arg(instances_file(dir.path()))
        .args(["--base", "configs/default.yaml", "--variant"])
        .arg(&variant)
        .args([
            "--replay-dir",
            "tests/fixtures/demo/replays",
            "--workers",
            "2",
        ])
        .arg("--output")
        .arg(&output)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    // The variant's batch, run by the ablation itself, with both instances in `sleep 900`.
    loop {
        assert!(
            Instant::now() < deadline,
            "the variant never reached its sleep:\n{}",
            stderr()
        );
        assert_eq!(ablate.try_wait().unwrap(), None, "{}", stderr());
        if stderr().contains("ablate: batch ")
            && stderr().contains("slow/r1")
            && containers_of_process(ablate.id(), "sleep 900").1
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let sent = Command::new("kill")
        .args(["-TERM", &ablate.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = loop {
        if let Some(status) = ablate.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = ablate.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // What is left, read before anything is cleaned up.
    let (containers, _) = containers_of_process(ablate.id(), "sleep 900");
    for id in &containers {
        let _ = Command::new("docker").args(["rm", "-f", id]).output();
    }
    let stderr = stderr();
    assert_eq!(status.and_then(|s| s.code()), Some(130), "{stderr}");
    assert_eq!(containers, Vec::<String>::new(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "interrupted during batch {}: the finished steps are in {}; rerun the same command \
             to resume",
            output.join("slow/r1").display(),
            output.display()
        )),
        "{stderr}"
    );
    // The base ran and was graded; the variant's batch kept its work; nothing ran after it.
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(output.join("default/r1/eval/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["resolved_instances"], 2, "{report}");
    for id in IDS {
        let traj: Value = serde_json::from_str(
            &std::fs::read_to_string(output.join(format!("slow/r1/run/{id}/{id}.traj"))).unwrap(),
        )
        .unwrap();
        assert_eq!(traj["info"]["exit_status"], "submitted (early_exit)");
        let patch =
            std::fs::read_to_string(output.join(format!("slow/r1/run/{id}/{id}.patch"))).unwrap();
        assert!(patch.contains("\n+# work in progress\n"), "{patch}");
    }
    assert!(!output.join("slow/r1/eval").exists());
    assert!(!output.join("ablation.json").exists());
}
