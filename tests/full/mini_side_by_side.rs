//! aci's bash-only protocol side by side with mini-swe-agent itself: mini-swe-agent 2.4.6 from
//! PyPI, installed into a virtualenv this test builds, and aci with
//! `configs/mini-swe-agent.yaml` get the same scripted answers from a local OpenAI-compatible
//! server, on the demo task `demo__inicfg-1` (mini on a git copy of the repository on the host,
//! aci on the local runtime). They must send the model the same conversation (the
//! repository's path aside): system and instance prompts, observations, format error; and end
//! with the same patch and exit status. Needs `python3` with `venv` and PyPI (the host's CA
//! bundle); without them it fails and says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::agent::*;
use crate::support::mock_llm::MockServer;

/// The mini-swe-agent release the protocol was taken from.
const MINI_VERSION: &str = "2.4.6";

/// Runs mini's `DefaultAgent` with its text-mode model and its local environment, configured
/// from mini's own `benchmarks/swebench_backticks.yaml`, and saves the trajectory.
const DRIVER: &str = r#"
import json, os, pathlib, sys
import yaml
import minisweagent
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

api_base, repo, task, out = sys.argv[1:5]
path = pathlib.Path(minisweagent.__file__).parent / "config/benchmarks/swebench_backticks.yaml"
config = yaml.safe_load(path.read_text())
env = LocalEnvironment(cwd=repo, env=config["environment"]["env"], timeout=config["environment"]["timeout"])
model_config = dict(config["model"])
model_config.update(model_name="openai/test-model", cost_tracking="ignore_errors",
                    model_kwargs={"api_base": api_base, "api_key": "unused"})
agent = DefaultAgent(LitellmTextbasedModel(**model_config), env, **config["agent"])
agent.run(task)
agent.save(pathlib.Path(out))
"#;

fn block(command: &str) -> String {
    format!("THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```")
}

/// The scripted answers: `cd` and `export` that must not persist, a format error, a failing
/// command, a long output, the fix, and the submission.
fn answers() -> Vec<String> {
    vec![
        block("cd inicfg && pwd"),
        block("pwd"),
        block("export MINI_VAR=1 && echo \"MINI_VAR=$MINI_VAR\""),
        block("echo \"MINI_VAR=$MINI_VAR\""),
        format!("{}\n{}", block("ls"), block("pwd")),
        block("printf 'a\\tb\\n' && echo oops >&2 && exit 3"),
        block("seq 1 3000"),
        block(&format!("git apply <<'EOF'\n{}EOF", gold_patch())),
        block("git diff > patch.txt"),
        block("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"),
    ]
}

fn run_checked(command: &mut Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A virtualenv with mini-swe-agent from PyPI.
fn mini_venv(dir: &Path) -> std::path::PathBuf {
    let venv = dir.join("venv");
    run_checked(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv (install python3-venv)",
    );
    run_checked(
        Command::new(venv.join("bin/pip"))
            .args(["install", "-q", &format!("mini-swe-agent=={MINI_VERSION}")])
            .env("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt"),
        "pip install mini-swe-agent from PyPI",
    );
    venv
}

/// The demo repository copied and committed, as a SWE-bench image holds it.
fn git_copy(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("testbed");
    run_checked(
        Command::new("cp")
            .arg("-r")
            .arg(demo_dir().join("repos/inicfg"))
            .arg(&repo),
        "cp",
    );
    let git = |args: &[&str]| {
        run_checked(
            Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&repo),
            "git",
        );
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    repo
}

fn messages(value: &Value) -> Vec<Value> {
    value["messages"].as_array().unwrap().clone()
}

/// The observations (the messages with `extra.raw_output`), `repo` written `<repo>`.
fn observations(value: &Value, repo: &str) -> Vec<String> {
    messages(value)
        .iter()
        .filter(|m| m.pointer("/extra/raw_output").is_some())
        .map(|m| m["content"].as_str().unwrap().replace(repo, "<repo>"))
        .collect()
}

fn format_errors(value: &Value) -> Vec<String> {
    messages(value)
        .iter()
        .filter(|m| m.pointer("/extra/interrupt_type").is_some())
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn mini_swe_agent_and_aci_send_the_same_conversation_and_end_with_the_same_patch() {
    let dir = tempfile::tempdir().unwrap();
    let venv = mini_venv(dir.path());
    let repo = git_copy(dir.path());
    let script = || {
        answers()
            .iter()
            .map(|answer| text_answer(Wire::OpenAi, answer))
            .collect::<Vec<_>>()
    };

    let mini_server = MockServer::start(script()).await;
    let driver = dir.path().join("driver.py");
    std::fs::write(&driver, DRIVER).unwrap();
    let mini_out = dir.path().join("mini.traj.json");
    let api_base = format!("{}/v1", mini_server.url());
    let task = demo_instance().problem_statement;
    let mut command = Command::new(venv.join("bin/python"));
    command
        .arg(&driver)
        .args([api_base.as_str(), repo.to_str().unwrap(), task.as_str()])
        .arg(&mini_out)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    let mini_run = tokio::task::spawn_blocking(move || run_checked(&mut command, "mini-swe-agent"));
    mini_run.await.unwrap();
    let mini: Value = serde_json::from_slice(&std::fs::read(&mini_out).unwrap()).unwrap();

    let aci_server = MockServer::start(script()).await;
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/mini-swe-agent.yaml"),
    )
    .unwrap();
    let run = run_http(Wire::OpenAi, &aci_server, &yaml).await;
    let aci: Value = serde_json::from_slice(
        &std::fs::read(aci::batch::output::mini_traj_path(
            run.output.path(),
            DEMO_ID,
        ))
        .unwrap(),
    )
    .unwrap();
    let aci_repo = repo_of(&run.traj);

    let first = pieces(Wire::OpenAi, &aci_server.requests()[0]);
    let mini_messages = messages(&mini);
    assert_eq!(
        first[0].text,
        mini_messages[0]["content"].as_str().unwrap(),
        "system"
    );
    assert_eq!(
        first[1].text,
        mini_messages[1]["content"].as_str().unwrap(),
        "instance"
    );
    // The last request carries the whole conversation: the same messages as mini's before its
    // last answer (format error included, rejected answer left out).
    let requests = aci_server.requests();
    assert_eq!(requests.len(), answers().len());
    let sent: Vec<(String, String)> = pieces(Wire::OpenAi, requests.last().unwrap())
        .into_iter()
        .map(|piece| (piece.role, piece.text.replace(&aci_repo, "<repo>")))
        .collect();
    let mini_sent: Vec<(String, String)> = mini_messages[..mini_messages.len() - 2]
        .iter()
        .map(|m| {
            let text = m["content"].as_str().unwrap();
            (
                m["role"].as_str().unwrap().to_owned(),
                text.replace(repo.to_str().unwrap(), "<repo>"),
            )
        })
        .collect();
    assert_eq!(sent, mini_sent);
    let theirs = observations(&mini, repo.to_str().unwrap());
    assert_eq!(theirs.len(), 8);
    assert_eq!(observations(&aci, &aci_repo), theirs);
    assert_eq!(format_errors(&aci), format_errors(&mini));
    assert_eq!(format_errors(&mini).len(), 1);
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(aci["info"]["exit_status"], "Submitted");
    assert_eq!(
        mini["info"]["submission"].as_str(),
        Some(gold_patch().as_str())
    );
    assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
    assert_eq!(run.result.exit_status.to_string(), "submitted");
}
