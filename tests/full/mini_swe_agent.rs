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

/// The recorded run of `tests/fixtures/mini-recorded/` (see its README), as messages.
fn recorded_messages() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mini-recorded/github_issue.traj.json");
    read_json(&path).as_array().unwrap().clone()
}

/// The text between `<output>\n` and `</output>` of a recorded observation.
fn recorded_output(observation: &Value) -> &str {
    let text = observation["content"].as_str().unwrap();
    let start = text.find("<output>\n").unwrap() + "<output>\n".len();
    &text[start..text.rfind("</output>").unwrap()]
}

/// A git repository at the recorded run's start: `tests/missing_colon.py` as the run's
/// `cat tests/missing_colon.py` printed it, executable as its `ls -la tests/` listed it.
/// Returns the commit, the same on every run (fixed dates), so its environment image is built
/// once.
fn recorded_start_repository(dir: &Path, messages: &[Value]) -> String {
    use std::os::unix::fs::PermissionsExt;
    let listed = recorded_output(&messages[7]);
    assert!(
        listed.contains("-rwxr-xr-x 1 root root  141 Jul 17 01:31 missing_colon.py\n"),
        "{listed}"
    );
    let file = dir.join("tests/missing_colon.py");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, recorded_output(&messages[9])).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=aci", "-c", "user.email=aci@localhost"])
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_DATE", "2025-07-17T01:31:00Z")
            .env("GIT_COMMITTER_DATE", "2025-07-17T01:31:00Z")
            .output()
            .expect("this test needs git on the host\nhint: run tests/host-deps.sh");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    git(&["rev-parse", "HEAD"]).trim().to_owned()
}

#[test]
fn a_recorded_mini_swe_agent_run_replays_to_its_recorded_submission() {
    let messages = recorded_messages();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("test-repo");
    let base_commit = recorded_start_repository(&repo, &messages);
    let instance = messages[1]["content"].as_str().unwrap();
    let task = &instance["Please solve this issue: ".len()
        ..instance.find("\n\nYou can execute bash commands").unwrap()];
    let id = "SWE-agent__test-repo-1";
    let record = serde_json::json!({
        "instance_id": id, "repo": "SWE-agent/test-repo", "base_commit": base_commit,
        "problem_statement": task, "repo_path": repo, "language": "python",
    });
    let instances = dir.path().join("instances.jsonl");
    std::fs::write(&instances, format!("{record}\n")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mini-recorded");
    let out = dir.path().join("out");
    let run = run_id("mini-recorded");
    let result: Run = aci()
        .args(["run", "--instances", instances.to_str().unwrap()])
        .args([
            "--config",
            fixtures.join("mini-2.0-dev.yaml").to_str().unwrap(),
        ])
        .args(["--replay"])
        .arg(fixtures.join("github_issue.traj.json"))
        .args(["--output", out.to_str().unwrap(), "--run-id", &run])
        .output()
        .unwrap()
        .into();
    result.expect_code(0);

    let submission = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(submission.starts_with("diff --git a/tests/missing_colon.py"));
    assert_eq!(exit_status(&out, id), "submitted");
    assert_eq!(
        std::fs::read_to_string(instance_file(&out, id, "patch")).unwrap(),
        submission
    );
    let mini = read_json(&instance_file(&out, id, "traj.json"));
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(mini["info"]["submission"].as_str(), Some(submission));
    let replayed = mini["messages"].as_array().unwrap();
    assert_eq!(replayed.len(), messages.len());
    assert_eq!(
        replayed.last().unwrap()["content"].as_str(),
        Some(submission)
    );
    // Every message but the submission and the two `ls -la` listings (their dates, and the
    // files of the recorded repository no action reads) is the recorded one, word for word.
    for (index, (got, recorded)) in replayed.iter().zip(&messages).enumerate() {
        if [5, 7, messages.len() - 1].contains(&index) {
            continue;
        }
        assert_eq!(got["role"], recorded["role"], "message {index}");
        assert_eq!(got["content"], recorded["content"], "message {index}");
    }
    assert!(containers_of(&run).is_empty(), "{:?}", containers_of(&run));
}
