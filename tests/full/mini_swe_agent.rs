//! `configs/mini-swe-agent.yaml` on the real Docker daemon: mini-swe-agent's own trajectories
//! (formats `mini-swe-agent-1.1` and `mini-swe-agent-1`) replayed through the bash-only
//! protocol solve two demo instances with the gold patch, every command in a fresh subshell
//! from `/testbed` (`cd` and `export` do not persist), with mini's environment variables; the
//! run leaves no container behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;

use crate::batch_support::*;

const IDS: [&str; 2] = ["demo__inicfg-1", "demo__moneyfmt-1"];

fn raw_outputs(mini: &Value) -> Vec<String> {
    mini["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.pointer("/extra/raw_output").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

#[test]
fn mini_trajectories_replay_to_the_gold_patches_in_docker_with_a_fresh_subshell_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let instances = write_instances(dir.path(), &IDS, &[]);
    let replays = demo_dir().join("mini-replays");
    let out = dir.path().join("out");
    let run = run_id("mini");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/mini-swe-agent.yaml");
    let result = docker_batch(
        &instances,
        &replays,
        &out,
        &run,
        &["--config", config.to_str().unwrap(), "--workers", "2"],
    );
    result.expect_code(0);
    assert_eq!(
        summary_rows(&result.stdout),
        rows(&[("submitted", 2), ("total", 2)])
    );
    for (id, package) in IDS.iter().zip(["inicfg", "moneyfmt"]) {
        assert_eq!(exit_status(&out, id), "submitted");
        let gold = demo_record(id)["patch"].as_str().unwrap().to_owned();
        assert_eq!(
            std::fs::read_to_string(instance_file(&out, id, "patch")).unwrap(),
            gold,
            "{id}"
        );
        let mini = read_json(&instance_file(&out, id, "traj.json"));
        assert_eq!(mini["trajectory_format"], "mini-swe-agent-1.1");
        assert_eq!(mini["info"]["exit_status"], "Submitted");
        assert_eq!(mini["info"]["submission"].as_str(), Some(gold.as_str()));
        assert_eq!(
            raw_outputs(&mini)[..4],
            [
                format!("/testbed/{package}\n"),
                "/testbed\n".to_owned(),
                "MINI_VAR=1\n".to_owned(),
                "MINI_VAR=\n".to_owned()
            ],
            "{id}: cd and export do not persist"
        );
    }
    assert!(containers_of(&run).is_empty(), "{:?}", containers_of(&run));
}

#[test]
fn the_bash_only_session_has_minis_environment_variables_and_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let id = IDS[0];
    let instances = write_instances(dir.path(), &[id], &[]);
    let probe = "echo \"$PAGER $MANPAGER $LESS $PIP_PROGRESS_BAR $TQDM_DISABLE\" && pwd";
    let replays = write_replays(
        &dir.path().join("replays"),
        &[id],
        &[probe, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"],
    );
    let out = dir.path().join("out");
    let run = run_id("mini-env");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/mini-swe-agent.yaml");
    docker_batch(
        &instances,
        &replays,
        &out,
        &run,
        &["--config", config.to_str().unwrap()],
    )
    .expect_code(0);
    let mini = read_json(&instance_file(&out, id, "traj.json"));
    assert_eq!(raw_outputs(&mini), ["cat cat -R off 1\n/testbed\n"]);
    let manifest = read_json(&out.join("manifest.json"));
    let text = manifest.to_string();
    assert!(text.contains("\"command_timeout\":60"), "{text}");
    assert!(containers_of(&run).is_empty());
}
