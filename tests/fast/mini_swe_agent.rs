//! `configs/mini-swe-agent.yaml`, mini-swe-agent 2.x's bash-only protocol, on the local
//! runtime: its templates render mini's exact texts, a model over the OpenAI wire is parsed,
//! run and submitted as mini does (one ```mswea_bash_command block, a fresh subshell per
//! command, the sentinel), and mini's own trajectories of formats `mini-swe-agent-1` and `-1.1`
//! replay to the gold patch, with `<id>.traj.json` written beside `<id>.traj`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::path::{Path, PathBuf};

use aci::agent::prompt::Prompts;
use aci::batch::output;
use aci::engine::Engine;
use aci::model::ReplayInput;
use minijinja::context;
use serde_json::Value;

use crate::batch_support::{batch, write_instances};
use crate::support;
use support::agent::*;
use support::mock_llm::MockServer;

/// The config file, as a YAML layer over the built-in default.
fn mini_yaml() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/mini-swe-agent.yaml"),
    )
    .unwrap()
}

fn mini_replays() -> PathBuf {
    demo_dir().join("mini-replays")
}

/// mini's long-output warning, word for word.
const WARNING: &str = "The output of your last command was too long.\nPlease try a different \
command that produces less output.\nIf you're looking at a file you can try use head, tail or \
sed to view a smaller number of lines selectively.\nIf you're using grep or find and it produced \
too much output, you can use a more selective search pattern.\nIf you really need to see \
something from the full command's output, you can redirect output to a file and then search in \
that file.";

/// mini's format error for `found` actions, word for word.
fn format_error(found: usize) -> String {
    format!(
        "Format error:\n\n<error>\nExpected exactly 1 action, found {found}.\n</error>\n\n\
         Here is general guidance on how to format your response:\n\nPlease always provide \
         EXACTLY ONE action in triple backticks, found {found} actions.\n\nPlease format your \
         action in triple backticks as shown in <response_example>.\n\n<response_example>\n\
         Here are some thoughts about why you want to perform the action.\n\n\
         ```mswea_bash_command\n<action>\n```\n</response_example>\n\nIf you have completed \
         your assignment, please consult the first message about how to\nsubmit your solution \
         (you will not be able to continue working on this task after that)."
    )
}

fn observation(prompts: &Prompts, output: &str, returncode: i32, exception_info: &str) -> String {
    let output = context! { output, returncode, exception_info };
    prompts.render("observation", &context! { output }).unwrap()
}

#[test]
fn the_observation_and_format_error_templates_render_minis_exact_texts() {
    let config = config(&mini_yaml());
    let prompts = Prompts::new(&config.agent.templates).unwrap();
    assert_eq!(
        observation(&prompts, "/testbed\n", 0, ""),
        "<returncode>0</returncode>\n<output>\n/testbed\n</output>"
    );
    assert_eq!(
        observation(
            &prompts,
            "partial\n",
            -1,
            "An error occurred while executing the command: Command 'sleep 99' timed out after 60 seconds"
        ),
        "<exception>An error occurred while executing the command: Command 'sleep 99' timed out \
         after 60 seconds</exception>\n<returncode>-1</returncode>\n<output>\npartial\n</output>"
    );
    let long: String = (0..2000).map(|i| format!("{i:05}\n")).collect();
    assert_eq!(long.len(), 12_000);
    assert_eq!(
        observation(&prompts, &long, 0, ""),
        format!(
            "<returncode>0</returncode>\n<warning>\n{WARNING}\n</warning><output_head>\n{}\n\
             </output_head>\n<elided_chars>\n2000 characters elided\n</elided_chars>\n\
             <output_tail>\n{}\n</output_tail>",
            &long[..5000],
            &long[7000..]
        )
    );
    let actions: Vec<String> = Vec::new();
    let error = "Expected exactly 1 action, found 0.";
    assert_eq!(
        prompts
            .render("format_error", &context! { error, actions })
            .unwrap(),
        format_error(0)
    );
    let instance = prompts
        .render("instance", &context! { task => "Fix the bug." })
        .unwrap();
    assert!(instance.starts_with(
        "<pr_description>\nConsider the following PR description:\nFix the bug.\n</pr_description>\n\n<instructions>\n"
    ));
    assert!(instance.ends_with("on this task after submitting.\n</CRITICAL>\n</instructions>"));
}

fn block(thought: &str, command: &str) -> String {
    format!("THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```")
}

fn apply_gold(patch: &str) -> String {
    format!("git apply <<'EOF'\n{patch}EOF")
}

#[tokio::test]
async fn a_model_is_parsed_run_in_fresh_subshells_and_submits_by_the_sentinel() {
    let wire = Wire::OpenAi;
    let two = format!("{}\n\n{}", block("a", "ls"), block("b", "pwd"));
    let server = MockServer::start(vec![
        text_answer(wire, &two),
        text_answer(wire, &block("Where am I?", "cd inicfg && pwd")),
        text_answer(wire, &block("Again.", "pwd")),
        text_answer(wire, &block("Fix.", &apply_gold(&gold_patch()))),
        text_answer(
            wire,
            &block(
                "Done.",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff",
            ),
        ),
    ])
    .await;
    let run = run_http(wire, &server, &mini_yaml()).await;

    assert_eq!(run.result.exit_status.to_string(), "submitted");
    assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
    let mut executed = run.traj.clone();
    executed.trajectory.remove(0);
    let repo = repo_of(&executed);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let first = pieces(wire, &requests[0]);
    assert_eq!(
        (first[0].role.as_str(), first[0].text.as_str()),
        (
            "system",
            "You are a helpful assistant that can interact multiple times with a computer shell \
             to solve programming tasks.\nYour response must contain exactly ONE bash code block \
             with ONE command (or commands connected with && or ||).\n\nInclude a THOUGHT section \
             before your command where you explain your reasoning process.\nFormat your response \
             as shown in <format_example>.\n\n<format_example>\nTHOUGHT: Your reasoning and \
             analysis here\n\n```mswea_bash_command\nyour_command_here\n```\n</format_example>\n\n\
             Failure to follow these rules will cause your response to be rejected."
        )
    );
    assert!(first[1].text.contains(&demo_instance().problem_statement));
    assert_eq!(first.len(), 2, "no demonstration");
    let last = |index: usize| pieces(wire, &requests[index]).last().unwrap().text.clone();
    assert_eq!(last(1), format_error(2));
    assert_eq!(
        last(2),
        format!("<returncode>0</returncode>\n<output>\n{repo}/inicfg\n</output>")
    );
    assert_eq!(
        last(3),
        format!("<returncode>0</returncode>\n<output>\n{repo}\n</output>"),
        "cd does not persist"
    );
    assert_eq!(last(4), "<returncode>0</returncode>\n<output>\n</output>");
    let roles: Vec<String> = pieces(wire, &requests[4])
        .into_iter()
        .map(|p| p.role)
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ],
        "the format error stays in the history, the rejected answer does not"
    );
    assert_eq!(pieces(wire, &requests[4])[2].text, format_error(2));

    let mini = read_mini(run.output.path(), DEMO_ID);
    assert_eq!(mini["trajectory_format"], "mini-swe-agent-1.1");
    assert_eq!(mini["instance_id"], DEMO_ID);
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(
        mini["info"]["submission"].as_str(),
        Some(gold_patch().as_str())
    );
    let roles: Vec<&str> = messages(&mini)
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "exit"
        ]
    );
    assert_eq!(
        messages(&mini)[2]["content"].as_str(),
        Some(format_error(2).as_str())
    );
    assert_eq!(
        messages(&mini)[4]["extra"],
        serde_json::json!({"raw_output": format!("{repo}/inicfg\n"), "returncode": 0, "exception_info": ""})
    );
}

#[tokio::test]
async fn a_timeout_is_an_exception_with_returncode_minus_1_and_export_does_not_persist() {
    let wire = Wire::OpenAi;
    let server = MockServer::start(vec![
        text_answer(
            wire,
            &block("Set.", "export MINI_VAR=1 && echo \"MINI_VAR=$MINI_VAR\""),
        ),
        text_answer(wire, &block("Read.", "echo \"MINI_VAR=$MINI_VAR\"")),
        text_answer(wire, &block("Wait.", "echo started && sleep 30")),
        text_answer(
            wire,
            &block("Give up.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        ),
    ])
    .await;
    let extra = mini_yaml().replace("  command_timeout: 60\n", "  command_timeout: 1\n");
    assert_ne!(extra, mini_yaml());
    let run = run_http(wire, &server, &extra).await;

    assert_eq!(run.result.exit_status.to_string(), "submitted");
    assert!(
        run.patch.is_empty(),
        "the sentinel with nothing after it submits an empty patch"
    );
    let requests = server.requests();
    let last = |index: usize| pieces(wire, &requests[index]).last().unwrap().text.clone();
    assert_eq!(
        last(1),
        "<returncode>0</returncode>\n<output>\nMINI_VAR=1\n</output>"
    );
    assert_eq!(
        last(2),
        "<returncode>0</returncode>\n<output>\nMINI_VAR=\n</output>"
    );
    assert_eq!(
        last(3),
        "<exception>An error occurred while executing the command: Command 'echo started && \
         sleep 30' timed out after 1 seconds</exception>\n<returncode>-1</returncode>\n\
         <output>\nstarted\n</output>"
    );
}

fn read_mini(output: &Path, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(output::mini_traj_path(output, id)).unwrap()).unwrap()
}

fn messages(mini: &Value) -> &Vec<Value> {
    mini["messages"].as_array().unwrap()
}

/// The observations of a mini trajectory's user and tool messages after the instance prompt.
fn raw_outputs(mini: &Value) -> Vec<String> {
    messages(mini)
        .iter()
        .skip(2)
        .filter_map(|m| m.pointer("/extra/raw_output").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_mini_1_1_trajectory_replays_to_the_gold_patch_through_the_config() {
    let replay = ReplayInput::load(&mini_replays().join(format!("{DEMO_ID}.traj.json"))).unwrap();
    assert_eq!(replay.steps.len(), 8);
    let run = run(config(&mini_yaml()), "replay", Engine::Local, Some(replay)).await;

    assert_eq!(run.result.exit_status.to_string(), "submitted");
    assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
    let repo = repo_of(&run.traj);
    let mini = read_mini(run.output.path(), DEMO_ID);
    let outputs = raw_outputs(&mini);
    assert_eq!(
        outputs[..4],
        [
            format!("{repo}/inicfg\n"),
            format!("{repo}\n"),
            "MINI_VAR=1\n".to_owned(),
            "MINI_VAR=\n".to_owned()
        ]
    );
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(
        messages(&mini)[2]["content"],
        "Step 1.",
        "the recorded response is kept"
    );
}

#[test]
fn batch_replays_a_mini_1_trajectory_from_the_replay_dir_to_the_gold_patch() {
    let dir = tempfile::tempdir().unwrap();
    let id = "demo__moneyfmt-1";
    let instances = write_instances(dir.path(), &[id], &[]);
    let out = dir.path().join("out");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/mini-swe-agent.yaml");
    let run = batch(&[
        "--instances",
        instances.to_str().unwrap(),
        "--replay-dir",
        mini_replays().to_str().unwrap(),
        "--runtime",
        "local",
        "--config",
        config.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let gold = crate::batch_support::demo_record(id)["patch"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read_to_string(output::patch_path(&out, id)).unwrap(),
        gold
    );
    let mini = read_mini(&out, id);
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(mini["info"]["submission"].as_str(), Some(gold.as_str()));
    let outputs = raw_outputs(&mini);
    assert!(outputs[0].ends_with("/moneyfmt\n"), "{outputs:?}");
    assert!(!outputs[1].ends_with("/moneyfmt\n"), "{outputs:?}");
    assert_eq!(outputs[2..4], ["MINI_VAR=1\n", "MINI_VAR=\n"]);
}

/// `configs/mini-swe-agent-toolcall.yaml` with the test base, as the binary resolves it (it
/// extends `configs/mini-swe-agent.yaml`).
fn toolcall_config() -> aci::config::Config {
    config_files(&["configs/mini-swe-agent-toolcall.yaml"])
}

/// mini's tool-call error for `error`, word for word.
fn tool_call_error(error: &str) -> String {
    format!(
        "Tool call error:\n\n<error>\n{error}\n</error>\n\nHere is general guidance on how to \
         submit correct toolcalls:\n\nEvery response needs to use the 'bash' tool at least once \
         to execute commands.\n\nCall the bash tool with your command as the argument:\n\
         - Tool: bash\n- Arguments: {{\"command\": \"your_command_here\"}}\n\nIf you have \
         completed your assignment, please consult the first message about how to\nsubmit your \
         solution (you will not be able to continue working on this task after that)."
    )
}

const NO_TOOL_CALLS: &str =
    "No tool calls found in the response. Every response MUST include at least one tool call.";

#[test]
fn the_toolcall_config_is_the_text_config_with_minis_tool_templates() {
    let config = toolcall_config();
    let text = config_files(&["configs/mini-swe-agent.yaml"]);
    assert_eq!(config.agent.parser, aci::config::ParserKind::BashToolCalls);
    assert_eq!(
        config.agent.templates.observation,
        text.agent.templates.observation
    );
    assert_eq!(config.aci, text.aci);
    assert_eq!(config.agent.limits, text.agent.limits);
    assert_eq!(
        config.env.variables.get("BASH_ENV").map(String::as_str),
        Some("/root/.bashrc")
    );
    assert_eq!(
        config.env.variables.get("PAGER").map(String::as_str),
        Some("cat")
    );
    let prompts = Prompts::new(&config.agent.templates).unwrap();
    assert_eq!(
        prompts.render("system", &context! {}).unwrap(),
        "You are a helpful assistant that can interact with a computer shell to solve \
         programming tasks."
    );
    let actions: Vec<String> = Vec::new();
    assert_eq!(
        prompts
            .render(
                "format_error",
                &context! { error => NO_TOOL_CALLS, actions, has_tool_calls => false }
            )
            .unwrap(),
        tool_call_error(NO_TOOL_CALLS)
    );
    let instance = prompts
        .render("instance", &context! { task => "Fix the bug." })
        .unwrap();
    assert!(instance.contains(
        "<IMPORTANT>This is an interactive process where you will think and issue AT LEAST ONE \
         command, see the result, then think and issue your next command(s).</important>"
    ));
}

#[tokio::test]
async fn tool_calls_run_in_order_each_answered_by_a_tool_message_and_the_sentinel_submits() {
    let wire = Wire::OpenAi;
    let bash =
        |id: &'static str, command: &str| (id, "bash", serde_json::json!({ "command": command }));
    let server = MockServer::start(vec![
        tool_calls_answer(
            wire,
            "Look around.",
            &[bash("c1", "cd inicfg && pwd"), bash("c2", "pwd")],
        ),
        text_answer(wire, "I think I am done."),
        tool_calls_answer(
            wire,
            "",
            &[("c3", "edit", serde_json::json!({"path": "x"}))],
        ),
        tool_calls_answer(wire, "Fix.", &[bash("c4", &apply_gold(&gold_patch()))]),
        tool_calls_answer(wire, "Patch.", &[bash("c5", "git diff > patch.txt")]),
        tool_calls_answer(
            wire,
            "Submit.",
            &[
                bash(
                    "c6",
                    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt",
                ),
                bash("c7", "echo never > never.txt"),
            ],
        ),
    ])
    .await;
    let run = run_http_with(wire, &server, toolcall_config()).await;

    assert_eq!(run.result.exit_status.to_string(), "submitted");
    assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
    let repo = repo_of(&run.traj);
    assert!(
        !Path::new(&repo).join("never.txt").exists(),
        "a call after the submission does not run"
    );
    assert_eq!(
        actions(&run.traj),
        [
            "cd inicfg && pwd",
            "pwd",
            "",
            "",
            apply_gold(&gold_patch()).as_str(),
            "git diff > patch.txt",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(
        requests[0].json()["tools"],
        serde_json::json!([{
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Execute a bash command",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The bash command to execute"}
                    },
                    "required": ["command"]
                }
            }
        }])
    );
    let output = |text: &str| format!("<returncode>0</returncode>\n<output>\n{text}</output>");
    let second = pieces(wire, &requests[1]);
    assert_eq!(
        second[2..],
        [
            piece("assistant", "Look around.", None),
            piece(
                "tool_call",
                r#"bash({"command":"cd inicfg && pwd"})"#,
                Some("c1")
            ),
            piece("tool_call", r#"bash({"command":"pwd"})"#, Some("c2")),
            piece("tool", &output(&format!("{repo}/inicfg\n")), Some("c1")),
            piece("tool", &output(&format!("{repo}\n")), Some("c2")),
        ],
        "each call answered in order; cd does not persist"
    );
    let last = |index: usize| pieces(wire, &requests[index]).last().unwrap().clone();
    assert_eq!(
        last(2),
        piece("user", &tool_call_error(NO_TOOL_CALLS), None)
    );
    assert_eq!(
        last(3),
        piece(
            "user",
            &tool_call_error("Unknown tool 'edit'.Missing 'command' argument in bash tool call."),
            None
        )
    );
    assert_eq!(
        pieces(wire, &requests[3]).len(),
        9,
        "rejected answers are not kept"
    );
    assert_eq!(last(5), piece("tool", &output(""), Some("c5")));

    let mini = read_mini(run.output.path(), DEMO_ID);
    let roles: Vec<&str> = messages(&mini)
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "exit"
        ]
    );
    let first = &messages(&mini)[2];
    assert_eq!(first["content"], "Look around.");
    assert_eq!(
        first["extra"]["actions"],
        serde_json::json!([
            {"command": "cd inicfg && pwd", "tool_call_id": "c1"},
            {"command": "pwd", "tool_call_id": "c2"}
        ])
    );
    assert_eq!(first["tool_calls"][1]["id"], "c2");
    assert_eq!(
        first["tool_calls"][1]["function"],
        serde_json::json!({"name": "bash", "arguments": "{\"command\":\"pwd\"}"})
    );
    let tool = &messages(&mini)[3];
    assert_eq!(tool["tool_call_id"], "c1");
    assert_eq!(tool["content"], output(&format!("{repo}/inicfg\n")));
    assert_eq!(
        tool["extra"],
        serde_json::json!({"raw_output": format!("{repo}/inicfg\n"), "returncode": 0, "exception_info": ""})
    );
    assert_eq!(messages(&mini)[5]["extra"]["interrupt_type"], "FormatError");
    // The submitting answer lists both its calls, as mini's does; neither has a tool message.
    let submit = &messages(&mini)[11];
    assert_eq!(submit["extra"]["actions"][1]["tool_call_id"], "c7");
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(
        mini["info"]["submission"].as_str(),
        Some(gold_patch().as_str())
    );
}

#[tokio::test]
async fn a_mini_tool_call_trajectory_replays_every_call_to_the_same_patch() {
    let wire = Wire::OpenAi;
    let bash =
        |id: &'static str, command: &str| (id, "bash", serde_json::json!({ "command": command }));
    let server = MockServer::start(vec![
        tool_calls_answer(
            wire,
            "Fix and write the patch.",
            &[
                bash("a", &apply_gold(&gold_patch())),
                bash("b", "git diff > patch.txt"),
            ],
        ),
        tool_calls_answer(
            wire,
            "",
            &[bash(
                "c",
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt",
            )],
        ),
    ])
    .await;
    let first = run_http_with(wire, &server, toolcall_config()).await;
    let dir = tempfile::tempdir().unwrap();
    let traj = dir.path().join(format!("{DEMO_ID}.traj.json"));
    std::fs::copy(output::mini_traj_path(first.output.path(), DEMO_ID), &traj).unwrap();
    let replay = ReplayInput::load(&traj).unwrap();
    assert_eq!(replay.steps.len(), 3);
    let again = run(toolcall_config(), "replay", Engine::Local, Some(replay)).await;
    assert_eq!(again.result.exit_status.to_string(), "submitted");
    assert_eq!(again.patch, first.patch);
    assert_eq!(String::from_utf8(again.patch).unwrap(), gold_patch());
}

#[tokio::test]
async fn over_the_anthropic_wire_several_calls_are_answered_in_one_user_turn() {
    let wire = Wire::Anthropic;
    let bash =
        |id: &'static str, command: &str| (id, "bash", serde_json::json!({ "command": command }));
    let server = MockServer::start(vec![
        tool_calls_answer(
            wire,
            "Two at once.",
            &[bash("u1", "echo one"), bash("u2", "echo two")],
        ),
        tool_calls_answer(
            wire,
            "Done.",
            &[bash("u3", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")],
        ),
    ])
    .await;
    let run = run_http_with(wire, &server, toolcall_config()).await;
    assert_eq!(run.result.exit_status.to_string(), "submitted");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_anthropic_pairing(&requests[1]);
    let output = |text: &str| format!("<returncode>0</returncode>\n<output>\n{text}\n</output>");
    assert_eq!(
        pieces(wire, &requests[1])[3..],
        [
            piece("tool_call", r#"bash({"command":"echo one"})"#, Some("u1")),
            piece("tool_call", r#"bash({"command":"echo two"})"#, Some("u2")),
            piece("tool", &output("one"), Some("u1")),
            piece("tool", &output("two"), Some("u2")),
        ]
    );
    assert_eq!(
        requests[0].json()["tools"][0]["description"],
        "Execute a bash command"
    );
}
