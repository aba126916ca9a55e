//! The agent loop's test harness: the demo task, configs over the built-in default, runs of
//! `batch::run_instance`, model answers in both wire formats, and the requests the mock server
//! received flattened to one shape.

use std::path::{Path, PathBuf};

use aci::agent::history::{HistoryItem, MessageType, Role};
use aci::batch::{self, InstanceResult, RunContext, output};
use aci::config::{self, Config};
use aci::engine::Engine;
use aci::instance::{self, Instance};
use aci::model::ReplayInput;
use aci::trajectory::{self, Trajectory};
use serde_json::Value;

use super::mock_llm::{
    MockResponse, MockServer, RecordedRequest, anthropic_error, anthropic_message, anthropic_text,
    anthropic_tool_use, openai_completion, openai_error,
};

/// The model name the mock server serves; [`config`] prices it.
pub const MODEL: &str = "test-model";
/// The demo task every run works on: a greedy option regex in `inicfg/parser.py` line 18.
pub const DEMO_ID: &str = "demo__inicfg-1";
/// Line 18 as the gold patch fixes it.
pub const FIXED_LINE: &str =
    r#"_OPTION_RE = re.compile(r"^(?P<key>[^=:]+?)\s*[=:]\s*(?P<value>.*)$")"#;

#[derive(Debug, Clone, Copy, PartialEq)]
/// Which API the mock server speaks.
pub enum Wire {
    OpenAi,
    Anthropic,
}

/// Both wire formats.
pub const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

// ---------------------------------------------------------------------------------------------
// Set-up

/// The bundled demo dataset.
pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo")
}

/// [`DEMO_ID`] as loaded from the demo dataset.
pub fn demo_instance() -> Instance {
    let loaded = instance::load_instances_file(&demo_dir().join("instances.jsonl")).unwrap();
    loaded
        .instances
        .into_iter()
        .find(|i| i.instance_id == DEMO_ID)
        .unwrap()
}

/// [`DEMO_ID`]'s gold patch.
pub fn gold_patch() -> String {
    demo_instance().patch.unwrap()
}

/// Fast retries and a price for [`MODEL`] ($2/M in, $10/M out).
const TEST_BASE: &str = r"
model:
  retries: 2
  retry_min_wait_s: 0.001
  retry_max_wait_s: 0.01
  request_timeout_s: 20
  prices:
    test-model: {input_per_mtok: 2.0, output_per_mtok: 10.0}
";

/// [`TEST_BASE`] plus `extra` YAML over the built-in default config.
pub fn config(extra: &str) -> Config {
    config::resolve_text(
        &[
            ("configs/default.yaml", config::load::DEFAULT_CONFIG),
            ("test base", TEST_BASE),
            ("test", extra),
        ],
        &[],
    )
    .unwrap()
}

/// [`TEST_BASE`], then the repository's config `files` (with their `extends`, as the binary
/// resolves them), over the built-in default config.
pub fn config_files(files: &[&str]) -> Config {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers: Vec<PathBuf> = std::iter::once(write(dir.path(), "test-base.yaml", TEST_BASE))
        .chain(files.iter().map(|file| root.join(file)))
        .collect();
    config::resolve(&layers, &[]).unwrap()
}

/// A run of [`DEMO_ID`] and what it left on disk.
pub struct Run {
    pub result: InstanceResult,
    pub traj: Trajectory,
    pub patch: Vec<u8>,
    pub output: tempfile::TempDir,
}

/// Runs [`DEMO_ID`] through `batch::run_instance` and reads back its `.traj` and `.patch`.
pub async fn run(config: Config, model: &str, runtime: Engine, replay: Option<ReplayInput>) -> Run {
    let output = tempfile::tempdir().unwrap();
    let ctx = RunContext::new(
        config,
        Vec::new(),
        model.to_owned(),
        runtime,
        format!("test-agent-loop-{}", std::process::id()),
        output.path().to_owned(),
    )
    .unwrap();
    let result = batch::run_instance(&ctx, &demo_instance(), replay).await;
    let traj = trajectory::read(&output::traj_path(output.path(), DEMO_ID)).unwrap();
    let patch = std::fs::read(output::patch_path(output.path(), DEMO_ID)).unwrap();
    Run {
        result,
        traj,
        patch,
        output,
    }
}

/// Runs the demo task locally against `server` speaking `wire`.
pub async fn run_http(wire: Wire, server: &MockServer, extra: &str) -> Run {
    run_http_with(wire, server, config(extra)).await
}

/// [`run_http`] with a whole configuration.
pub async fn run_http_with(wire: Wire, server: &MockServer, mut config: Config) -> Run {
    config.model.api_base = Some(match wire {
        Wire::OpenAi => format!("{}/v1", server.url()),
        Wire::Anthropic => server.url().to_owned(),
    });
    let spec = match wire {
        Wire::OpenAi => format!("openai/{MODEL}"),
        Wire::Anthropic => format!("anthropic/{MODEL}"),
    };
    run(config, &spec, Engine::Local, None).await
}

/// The config layer that switches the parser to function calling.
pub const FUNCTION_CALLING: &str = "agent: {parser: function_calling}";

// ---------------------------------------------------------------------------------------------
// Answers

/// A text answer. Each answer's prompt is 100 tokens, 30 of them read from the provider's cache
/// (and for Anthropic 10 written to it), plus 20 completion tokens.
pub fn text_answer(wire: Wire, text: &str) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => openai_completion(Some(text), &[], (100, 20, 30)),
        Wire::Anthropic => anthropic_message(vec![anthropic_text(text)], (60, 20, 30, 10)),
    };
    MockResponse::json(200, &body)
}

/// An answer with `thought` (none when empty) and the tool calls `(id, name, arguments)`.
pub fn tool_calls_answer(wire: Wire, thought: &str, calls: &[(&str, &str, Value)]) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => {
            let arguments: Vec<String> = calls.iter().map(|(_, _, a)| a.to_string()).collect();
            let calls: Vec<(&str, &str, &str)> = calls
                .iter()
                .zip(&arguments)
                .map(|((id, name, _), a)| (*id, *name, a.as_str()))
                .collect();
            let content = (!thought.is_empty()).then_some(thought);
            openai_completion(content, &calls, (100, 20, 0))
        }
        Wire::Anthropic => {
            let text = (!thought.is_empty()).then(|| anthropic_text(thought));
            let blocks = text
                .into_iter()
                .chain(
                    calls
                        .iter()
                        .map(|(id, name, a)| anthropic_tool_use(id, name, a.clone())),
                )
                .collect();
            anthropic_message(blocks, (100, 20, 0, 0))
        }
    };
    MockResponse::json(200, &body)
}

/// An answer with `thought` and one tool call.
pub fn tool_answer(
    wire: Wire,
    thought: &str,
    id: &str,
    name: &str,
    arguments: Value,
) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => openai_completion(
            Some(thought),
            &[(id, name, &arguments.to_string())],
            (100, 20, 0),
        ),
        Wire::Anthropic => anthropic_message(
            vec![
                anthropic_text(thought),
                anthropic_tool_use(id, name, arguments),
            ],
            (100, 20, 0, 0),
        ),
    };
    MockResponse::json(200, &body)
}

/// An error body with `status`.
pub fn error_answer(wire: Wire, status: u16, message: &str) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => openai_error(message, "server_error", None),
        Wire::Anthropic => anthropic_error("api_error", message),
    };
    MockResponse::json(status, &body)
}

/// A `thought_action` answer running `command` (the parser keeps the newline before the closing
/// fence, as SWE-agent's does, so the recorded action is `command` plus `\n`).
pub fn command(wire: Wire, thought: &str, command: &str) -> MockResponse {
    text_answer(
        wire,
        &format!("DISCUSSION\n{thought}\n\n```\n{command}\n```"),
    )
}

/// The `edit` that applies the gold fix.
pub fn fix_edit() -> String {
    format!("edit 18:18\n{FIXED_LINE}\nend_of_edit")
}

// ---------------------------------------------------------------------------------------------
// The requests as the server saw them, flattened to one shape for both wire formats

/// One piece of a request's conversation: `system`, `user`, `assistant`, `tool_call` (with
/// its id) or `tool` (a result, with the id of the call it answers).
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub role: String,
    pub text: String,
    pub call_id: Option<String>,
}

/// A [`Piece`].
pub fn piece(role: &str, text: &str, call_id: Option<&str>) -> Piece {
    Piece {
        role: role.to_owned(),
        text: text.to_owned(),
        call_id: call_id.map(str::to_owned),
    }
}

/// A request's conversation in order, flattened to [`Piece`]s.
pub fn pieces(wire: Wire, request: &RecordedRequest) -> Vec<Piece> {
    let body = request.json();
    let mut out = Vec::new();
    match wire {
        Wire::OpenAi => {
            for message in body["messages"].as_array().unwrap() {
                let role = message["role"].as_str().unwrap();
                let text = message["content"].as_str().unwrap_or_default();
                match role {
                    "tool" => out.push(piece("tool", text, message["tool_call_id"].as_str())),
                    _ if !text.is_empty() || message.get("tool_calls").is_none() => {
                        out.push(piece(role, text, None));
                    }
                    _ => {}
                }
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    let text = format!(
                        "{}({})",
                        call["function"]["name"].as_str().unwrap(),
                        call["function"]["arguments"].as_str().unwrap()
                    );
                    out.push(piece("tool_call", &text, call["id"].as_str()));
                }
            }
        }
        Wire::Anthropic => {
            for block in body["system"].as_array().into_iter().flatten() {
                out.push(piece("system", block["text"].as_str().unwrap(), None));
            }
            for message in body["messages"].as_array().unwrap() {
                let role = message["role"].as_str().unwrap();
                for block in message["content"].as_array().unwrap() {
                    out.push(match block["type"].as_str().unwrap() {
                        "text" => piece(role, block["text"].as_str().unwrap(), None),
                        "tool_use" => {
                            let text =
                                format!("{}({})", block["name"].as_str().unwrap(), block["input"]);
                            piece("tool_call", &text, block["id"].as_str())
                        }
                        "tool_result" => piece(
                            "tool",
                            block["content"].as_str().unwrap_or_default(),
                            block["tool_use_id"].as_str(),
                        ),
                        other => panic!("unexpected block type {other}"),
                    });
                }
            }
        }
    }
    out
}

/// Anthropic's rules: turns alternate, starting with `user`; every `tool_use` is answered by a
/// `tool_result` with its id at the start of the very next (user) turn.
pub fn assert_anthropic_pairing(request: &RecordedRequest) {
    let body = request.json();
    let messages = body["messages"].as_array().unwrap();
    for (index, message) in messages.iter().enumerate() {
        let expected = if index % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(message["role"], expected, "turn {index} of {body}");
        let uses: Vec<&Value> = message["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| &b["id"])
            .collect();
        if uses.is_empty() {
            continue;
        }
        let next = messages.get(index + 1).expect("a tool_use is answered");
        let results: Vec<&Value> = next["content"]
            .as_array()
            .unwrap()
            .iter()
            .take(uses.len())
            .map(|b| {
                assert_eq!(b["type"], "tool_result", "{next}");
                &b["tool_use_id"]
            })
            .collect();
        assert_eq!(results, uses, "tool_result ids answer the tool_use ids");
    }
}

/// The stored history without the system prompt, as (role, message type) pairs.
pub fn shape(history: &[HistoryItem]) -> Vec<(Role, Option<MessageType>)> {
    history
        .iter()
        .map(|item| (item.role, item.message_type.clone()))
        .collect()
}

/// The trajectory's actions, in order.
pub fn actions(traj: &Trajectory) -> Vec<&str> {
    traj.trajectory.iter().map(|s| s.action.as_str()).collect()
}

/// The repository directory, from the first step's state (v0.7's JSON text in a string).
pub fn repo_of(traj: &Trajectory) -> String {
    let state: serde_json::Value =
        serde_json::from_str(traj.trajectory[0].state.as_str().unwrap()).unwrap();
    state["working_dir"].as_str().unwrap().to_owned()
}

/// Bare actions for the replay model.
pub fn replay(actions: &[&str]) -> Option<ReplayInput> {
    Some(ReplayInput::from_actions(actions.iter().copied()))
}

/// The `aci` binary under test.
pub fn aci_bin() -> &'static str {
    env!("CARGO_BIN_EXE_aci")
}

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Fast retries for the binary, as a config file.
pub fn config_file(dir: &Path) -> PathBuf {
    write(
        dir,
        "fast.yaml",
        "model:\n  retries: 1\n  retry_min_wait_s: 0.001\n  retry_max_wait_s: 0.01\n",
    )
}
