//! Trajectories end to end: saved after every turn (a killed `aci run` keeps its turns),
//! replayable to the same patch, and the bundled demonstration, which replays to its own patch
//! in Docker and reaches the model from any working directory.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use crate::support;

use std::time::Duration;

use aci::agent::demos;
use aci::agent::history::{HistoryItem, MessageType};
use aci::batch::output;
use aci::engine::Engine;
use aci::model::ReplayInput;
use aci::trajectory::{self, Trajectory};
use support::agent::*;
use support::mock_llm::MockServer;

// ---------------------------------------------------------------------------------------------
// Trajectories: saved after every turn, replayable

#[tokio::test]
async fn a_killed_run_keeps_every_turn_it_finished() {
    let wire = Wire::OpenAi;
    let server = MockServer::start(vec![
        command(wire, "One.", "echo one >> README.md"),
        command(wire, "Two.", "ls"),
        command(wire, "Slow.", "submit").delayed(Duration::from_secs(120)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = std::process::Command::new(aci_bin())
        .args([
            "run",
            "--runtime",
            "local",
            "--id",
            DEMO_ID,
            "--model",
            "openai/test-model",
        ])
        .arg("--instances")
        .arg(demo_dir().join("instances.jsonl"))
        .arg("--api-base")
        .arg(format!("{}/v1", server.url()))
        .arg("--config")
        .arg(config_file(dir.path()))
        .arg("--output")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The third request arrives only after the second turn was saved.
    for _ in 0..1200 {
        if server.request_count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        server.request_count(),
        3,
        "the run reached its third request"
    );
    child.kill().unwrap(); // SIGKILL: no clean-up, no last save.
    child.wait().unwrap();

    let traj = trajectory::read(&output::traj_path(&out, DEMO_ID)).unwrap();
    assert_eq!(actions(&traj), ["echo one >> README.md\n", "ls\n"]);
    assert_eq!(traj.info.exit_status, None, "unfinished: resume reruns it");
    assert_eq!(traj.info.model_stats.api_calls, 2);
    assert_eq!(
        shape(&traj.history).len(),
        7,
        "system, demo, instance and two exchanges"
    );
    assert!(!trajectory::is_finished(&output::traj_path(&out, DEMO_ID)));
}

#[tokio::test]
async fn replaying_an_aci_trajectory_reproduces_its_patch_byte_for_byte() {
    let wire = Wire::OpenAi;
    let server = MockServer::start(vec![
        text_answer(wire, "Let me think about it first."),
        command(wire, "Edit it.", "vim README.md"),
        command(
            wire,
            "Append.",
            "printf 'line one\\n\\tline two\\n' >> README.md && printf 'new\\n' > NEW.txt",
        ),
        command(wire, "Open it.", "open inicfg/parser.py 18"),
        command(wire, "Fix it.", &fix_edit()),
        command(wire, "Done.", "submit"),
    ])
    .await;
    let first = run_http(wire, &server, "").await;
    assert_eq!(first.result.exit_status.to_string(), "submitted");
    assert_eq!(
        first.traj.trajectory.len(),
        6,
        "two rejected answers and four commands"
    );
    let traj_path = output::traj_path(first.output.path(), DEMO_ID);

    let out = first.output.path().join("replayed");
    let status = std::process::Command::new(aci_bin())
        .args(["run", "--runtime", "local", "--id", DEMO_ID])
        .arg("--instances")
        .arg(demo_dir().join("instances.jsonl"))
        .arg("--replay")
        .arg(&traj_path)
        .arg("--output")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let replayed = std::fs::read(output::patch_path(&out, DEMO_ID)).unwrap();
    assert!(!first.patch.is_empty());
    assert_eq!(replayed, first.patch);
    let traj = trajectory::read(&output::traj_path(&out, DEMO_ID)).unwrap();
    assert_eq!(
        traj.info.exit_status.clone().map(String::from).as_deref(),
        Some("submitted")
    );
    assert_eq!(actions(&traj), actions(&first.traj)[2..]);
}

// ---------------------------------------------------------------------------------------------
// The bundled demonstration

#[tokio::test]
async fn the_bundled_demonstration_replays_to_its_own_patch_in_docker() {
    let docker = support::docker().await;
    let (name, text) = demos::BUILTIN[0];
    let demo: Trajectory = serde_json::from_str(text).unwrap();
    let input = ReplayInput::parse(text).unwrap();
    let run = run(
        config(""),
        "replay",
        Engine::Docker(docker.clone()),
        Some(input),
    )
    .await;
    docker.remove_all_started().await;

    assert_eq!(run.result.exit_status.to_string(), "submitted", "{name}");
    let expected = demo.info.submission.clone().unwrap();
    assert_eq!(String::from_utf8(run.patch).unwrap(), expected);
    assert_eq!(
        expected,
        gold_patch(),
        "the demonstration solves its task as the gold patch does"
    );
    assert_eq!(actions(&run.traj), actions(&demo));
    let responses: Vec<&str> = run
        .traj
        .trajectory
        .iter()
        .map(|s| s.response.as_str())
        .collect();
    let demo_responses: Vec<&str> = demo
        .trajectory
        .iter()
        .map(|s| s.response.as_str())
        .collect();
    assert_eq!(responses, demo_responses);
}

#[tokio::test]
async fn the_default_config_carries_its_demonstration_from_any_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let replay = write(dir.path(), "actions.yaml", "- submit\n");
    let cwd = tempfile::tempdir().unwrap();
    for (sets, demos) in [(vec![], 1), (vec!["--set", "agent.demonstrations=[]"], 0)] {
        let out = dir.path().join(format!("out-{demos}"));
        let status = std::process::Command::new(aci_bin())
            .current_dir(cwd.path())
            .args(["run", "--runtime", "local", "--id", DEMO_ID])
            .args(&sets)
            .arg("--instances")
            .arg(demo_dir().join("instances.jsonl"))
            .arg("--replay")
            .arg(&replay)
            .arg("--output")
            .arg(&out)
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let traj = trajectory::read(&output::traj_path(&out, DEMO_ID)).unwrap();
        let shown: Vec<&HistoryItem> = traj.history.iter().filter(|i| i.is_demo).collect();
        assert_eq!(shown.len(), demos);
        if let Some(demo) = shown.first() {
            assert_eq!(demo.message_type, Some(MessageType::Demonstration));
            assert!(demo.content.starts_with("Here is a demonstration of how to solve a task with this interface.\n--- DEMONSTRATION ---\nWe're solving the following issue"), "{}", &demo.content[..200]);
            assert!(
                demo.content
                    .contains("```\nsearch_file \"_OPTION_RE\" inicfg/parser.py\n```")
            );
            assert!(demo.content.ends_with("--- END OF DEMONSTRATION ---"));
        }
    }
}
