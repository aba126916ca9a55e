//! aci's bash-only protocol side by side with mini-swe-agent itself: mini-swe-agent 2.4.6 from
//! PyPI, installed into a virtualenv this test builds, and aci with
//! `configs/mini-swe-agent.yaml` (text mode) or `configs/mini-swe-agent-toolcall.yaml` (tool
//! calls) get the same scripted answers from a local OpenAI-compatible server, on the demo task
//! `demo__inicfg-1` (mini on a git copy of the repository on the host, aci on the local
//! runtime). They must send the model the same conversation (the repository's path aside):
//! system and instance prompts, observations, format errors, in tool-call mode the tool and
//! its calls and results too; and end with the same patch and exit status. Needs `python3`
//! with `venv` and PyPI (the host's CA bundle); without them it fails and says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::agent::*;
use crate::support::mock_llm::MockServer;

/// The mini-swe-agent release the protocol was taken from.
const MINI_VERSION: &str = "2.4.6";

/// Runs mini's `DefaultAgent` with its local environment and the model class and benchmark
/// config named (`litellm_textbased_model:LitellmTextbasedModel` with
/// `swebench_backticks.yaml`, the text mode; `litellm_model:LitellmModel` with `swebench.yaml`,
/// the tool calls), and saves the trajectory.
const DRIVER: &str = r#"
import importlib, json, os, pathlib, sys
import yaml
import minisweagent
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment

api_base, repo, task, out, config_name, model_class = sys.argv[1:7]
module, name = model_class.split(":")
Model = getattr(importlib.import_module("minisweagent.models." + module), name)
path = pathlib.Path(minisweagent.__file__).parent / "config/benchmarks" / config_name
config = yaml.safe_load(path.read_text())
env = LocalEnvironment(cwd=repo, env=config["environment"]["env"], timeout=config["environment"]["timeout"])
model_config = dict(config["model"])
kwargs = dict(model_config.get("model_kwargs", {}))
kwargs.update(api_base=api_base, api_key="unused")
model_config.update(model_name="openai/test-model", cost_tracking="ignore_errors", model_kwargs=kwargs)
agent = DefaultAgent(Model(**model_config), env, **config["agent"])
agent.run(task)
agent.save(pathlib.Path(out))
"#;

/// mini's text mode.
const TEXT_MODE: [&str; 2] = [
    "swebench_backticks.yaml",
    "litellm_textbased_model:LitellmTextbasedModel",
];

/// mini's tool-call mode.
const TOOL_CALL_MODE: [&str; 2] = ["swebench.yaml", "litellm_model:LitellmModel"];

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

/// Runs mini in `mode` against a server with `script`, on a git copy of the demo repository
/// under `dir`; returns its trajectory, the server and the copy.
async fn run_mini(
    dir: &Path,
    venv: &Path,
    mode: [&str; 2],
    script: Vec<crate::support::mock_llm::MockResponse>,
) -> (Value, MockServer, std::path::PathBuf) {
    let repo = git_copy(dir);
    let server = MockServer::start(script).await;
    let driver = dir.join("driver.py");
    std::fs::write(&driver, DRIVER).unwrap();
    let out = dir.join("mini.traj.json");
    let api_base = format!("{}/v1", server.url());
    let task = demo_instance().problem_statement;
    let mut command = Command::new(venv.join("bin/python"));
    command
        .arg(&driver)
        .args([api_base.as_str(), repo.to_str().unwrap(), task.as_str()])
        .arg(&out)
        .args(mode)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    let mini_run = tokio::task::spawn_blocking(move || run_checked(&mut command, "mini-swe-agent"));
    mini_run.await.unwrap();
    let mini: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (mini, server, repo)
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
    let script = || {
        answers()
            .iter()
            .map(|answer| text_answer(Wire::OpenAi, answer))
            .collect::<Vec<_>>()
    };
    let (mini, _mini_server, repo) = run_mini(dir.path(), &venv, TEXT_MODE, script()).await;

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

/// The scripted tool-call answers: two calls in one answer (a `cd` that must not persist), an
/// `export` that must not persist either, an answer without a call and one calling another
/// tool (two tool-call errors), a failing command, a long output, the fix, the patch, and the
/// submission.
fn tool_call_answers() -> Vec<crate::support::mock_llm::MockResponse> {
    let bash =
        |id: &'static str, command: &str| (id, "bash", serde_json::json!({ "command": command }));
    let wire = Wire::OpenAi;
    vec![
        tool_calls_answer(
            wire,
            "Where am I?",
            &[bash("t1", "cd inicfg && pwd"), bash("t2", "pwd")],
        ),
        tool_calls_answer(
            wire,
            "",
            &[
                bash("t3", "export MINI_VAR=1 && echo \"MINI_VAR=$MINI_VAR\""),
                bash("t4", "echo \"MINI_VAR=$MINI_VAR\""),
            ],
        ),
        text_answer(wire, "I will look at the parser next."),
        tool_calls_answer(
            wire,
            "Edit.",
            &[(
                "t5",
                "edit",
                serde_json::json!({"path": "inicfg/parser.py"}),
            )],
        ),
        tool_calls_answer(
            wire,
            "Fail.",
            &[bash("t6", "printf 'a\\tb\\n' && echo oops >&2 && exit 3")],
        ),
        tool_calls_answer(wire, "Long.", &[bash("t7", "seq 1 3000")]),
        tool_calls_answer(
            wire,
            "Fix.",
            &[bash(
                "t8",
                &format!("git apply <<'EOF'\n{}EOF", gold_patch()),
            )],
        ),
        tool_calls_answer(wire, "Patch.", &[bash("t9", "git diff > patch.txt")]),
        tool_calls_answer(
            wire,
            "Submit.",
            &[bash(
                "t10",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt",
            )],
        ),
    ]
}

#[tokio::test]
async fn in_tool_call_mode_mini_swe_agent_and_aci_send_the_same_conversation_and_patch() {
    let dir = tempfile::tempdir().unwrap();
    let venv = mini_venv(dir.path());
    let (mini, mini_server, repo) =
        run_mini(dir.path(), &venv, TOOL_CALL_MODE, tool_call_answers()).await;

    let aci_server = MockServer::start(tool_call_answers()).await;
    let config = config_files(&["configs/mini-swe-agent-toolcall.yaml"]);
    let run = run_http_with(Wire::OpenAi, &aci_server, config).await;
    let aci: Value = serde_json::from_slice(
        &std::fs::read(aci::batch::output::mini_traj_path(
            run.output.path(),
            DEMO_ID,
        ))
        .unwrap(),
    )
    .unwrap();
    let aci_repo = repo_of(&run.traj);

    // What each sent the model, request by request: the same tool, and the same conversation,
    // calls, ids and tool results included.
    let (theirs, ours) = (mini_server.requests(), aci_server.requests());
    assert_eq!(ours.len(), tool_call_answers().len());
    assert_eq!(theirs.len(), ours.len());
    assert_eq!(ours[0].json()["tools"], theirs[0].json()["tools"]);
    let conversation = |request: &crate::support::mock_llm::RecordedRequest, repo: &str| {
        pieces(Wire::OpenAi, request)
            .into_iter()
            .map(|piece| {
                (
                    piece.role,
                    piece.text.replace(repo, "<repo>"),
                    piece.call_id,
                )
            })
            .collect::<Vec<_>>()
    };
    for (index, (mine, their)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(
            conversation(mine, &aci_repo),
            conversation(their, repo.to_str().unwrap()),
            "request {index}"
        );
    }
    let their_observations = observations(&mini, repo.to_str().unwrap());
    assert_eq!(their_observations.len(), 8);
    assert_eq!(observations(&aci, &aci_repo), their_observations);
    let roles = |value: &Value| -> Vec<String> {
        messages(value)
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(roles(&aci), roles(&mini));
    assert_eq!(format_errors(&aci), format_errors(&mini));
    assert_eq!(format_errors(&mini).len(), 2);
    let actions = |value: &Value| -> Vec<Value> {
        messages(value)
            .iter()
            .filter_map(|m| m.pointer("/extra/actions").cloned())
            .map(|actions| {
                Value::from(
                    actions
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| serde_json::json!([a["command"], a["tool_call_id"]]))
                        .collect::<Vec<_>>(),
                )
            })
            .collect()
    };
    assert_eq!(actions(&aci), actions(&mini));
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(aci["info"]["exit_status"], "Submitted");
    assert_eq!(
        mini["info"]["submission"].as_str(),
        Some(gold_patch().as_str())
    );
    assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
    assert_eq!(run.result.exit_status.to_string(), "submitted");
}
