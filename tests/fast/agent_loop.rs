//! The agent loop end to end: `batch::run_instance` on a demo task with a local HTTP server
//! speaking the OpenAI and Anthropic wire formats (or the replay model) and a real sandbox;
//! assertions on the requests the server received and on the saved `.traj` and `.patch`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use crate::support;

use aci::agent::history::{MessageType, Role};
use aci::engine::Engine;
use serde_json::{Value, json};
use support::agent::*;
use support::mock_llm::{MockResponse, MockServer, RecordedRequest};

// ---------------------------------------------------------------------------------------------
// Happy paths

#[tokio::test]
async fn a_thought_action_model_fixes_the_bug_and_submits_over_both_wire_formats() {
    for wire in WIRES {
        let server = MockServer::start(vec![
            command(
                wire,
                "Let me look at the option pattern.",
                "open inicfg/parser.py 18",
            ),
            command(
                wire,
                "The key is greedy; it must stop at the first delimiter.",
                &fix_edit(),
            ),
            command(wire, "Fixed.", "submit"),
        ])
        .await;
        let run = run_http(wire, &server, "").await;

        assert_eq!(run.result.exit_status.to_string(), "submitted", "{wire:?}");
        assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
        assert_eq!(
            run.traj.info.submission.as_deref(),
            Some(gold_patch().as_str())
        );
        assert_eq!(
            actions(&run.traj),
            [
                "open inicfg/parser.py 18\n",
                &format!("{}\n", fix_edit()),
                "submit\n"
            ]
        );
        assert_eq!(
            run.traj.trajectory[0].thought,
            "DISCUSSION\nLet me look at the option pattern.\n\n"
        );
        let stats = &run.traj.info.model_stats;
        assert_eq!(
            (stats.api_calls, stats.tokens_sent, stats.tokens_received),
            (3, 300, 60)
        );
        // The wall time covers the model's calls and the commands, so at least the commands.
        let commands: f64 = run.traj.trajectory.iter().map(|s| s.execution_time).sum();
        let wall_time = run.traj.info.wall_time.unwrap();
        assert!(
            wall_time >= commands && commands > 0.0,
            "{wall_time} {commands}"
        );
        let cache_write = if wire == Wire::Anthropic { 30 } else { 0 };
        assert_eq!(
            (stats.cache_read_tokens, stats.cache_write_tokens),
            (90, cache_write),
            "cached tokens are counted apart, and inside tokens_sent"
        );
        // 3 × (100 tokens at $2/M + 20 tokens at $10/M): no cache prices set, so the input price.
        assert!(
            (stats.instance_cost - 0.0012).abs() < 1e-12,
            "{}",
            stats.instance_cost
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        let repo = repo_of(&run.traj);
        let first = pieces(wire, &requests[0]);
        assert_eq!(first[0].role, "system");
        assert!(
            first[0]
                .text
                .contains("COMMANDS:\nopen:\n  docstring: opens the file"),
            "{}",
            first[0].text
        );
        assert!(
            first[1].text.starts_with("Here is a demonstration"),
            "{}",
            first[1].text
        );
        assert!(first[1].text.contains("create reproduce.py"));
        assert!(first[2].text.contains(&demo_instance().problem_statement));
        assert!(
            first[2].text.ends_with(&format!(
                "(Open file: n/a)\n(Current directory: {repo})\nbash-$"
            )),
            "{}",
            first[2].text
        );
        assert_eq!(first.len(), 3);
        let second = pieces(wire, &requests[1]);
        let observation = second.last().unwrap();
        assert_eq!(observation.role, "user");
        assert!(observation.text.starts_with(&format!(
            "[File: {repo}/inicfg/parser.py (97 lines total)]\n1:\"\"\"Line-oriented INI parser."
        )));
        assert!(observation.text.ends_with(&format!(
            "97:    return sections\n(Open file: {repo}/inicfg/parser.py)\n(Current directory: {repo})\nbash-$"
        )));
        for request in &requests {
            assert!(request.json().get("tools").is_none(), "{wire:?}");
        }
        if wire == Wire::Anthropic {
            assert_anthropic_pairing(&requests[2]);
        }
    }
}

#[tokio::test]
async fn a_function_calling_model_fixes_the_bug_and_submits_over_both_wire_formats() {
    for wire in WIRES {
        let server = MockServer::start(vec![
            tool_answer(
                wire,
                "Let me look.",
                "call_1",
                "open",
                json!({"path": "inicfg/parser.py", "line_number": 18}),
            ),
            tool_answer(
                wire,
                "The key is greedy.",
                "call_2",
                "edit",
                json!({"start_line": 18, "end_line": 18, "replacement_text": FIXED_LINE}),
            ),
            tool_answer(wire, "", "call_3", "submit", json!({})),
        ])
        .await;
        let run = run_http(wire, &server, FUNCTION_CALLING).await;

        assert_eq!(run.result.exit_status.to_string(), "submitted", "{wire:?}");
        assert_eq!(String::from_utf8(run.patch.clone()).unwrap(), gold_patch());
        assert_eq!(
            actions(&run.traj),
            [
                "open \"inicfg/parser.py\" 18",
                fix_edit().as_str(),
                "submit"
            ]
        );
        let history = &run.traj.history;
        let observation = Some(MessageType::Observation);
        let action = Some(MessageType::Action);
        assert_eq!(
            shape(history)[3..],
            [
                (Role::Assistant, action.clone()),
                (Role::Tool, observation.clone()),
                (Role::Assistant, action.clone()),
                (Role::Tool, observation.clone()),
                (Role::Assistant, action),
                (Role::Tool, observation),
            ]
        );
        assert_eq!(
            history[3].content, "Let me look.",
            "the stored text has no tool-call line"
        );
        assert_eq!(history[4].tool_call_ids, Some(vec!["call_1".to_owned()]));
        assert_eq!(history[5].tool_calls.as_ref().unwrap()[0]["id"], "call_2");

        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        let tools: Vec<String> = requests[0].json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or(t["name"].as_str())
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            tools,
            [
                "open",
                "goto",
                "scroll_up",
                "scroll_down",
                "create",
                "edit",
                "search_file",
                "search_dir",
                "find_file",
                "submit",
                "bash"
            ]
        );
        let repo = repo_of(&run.traj);
        let third = pieces(wire, &requests[2]);
        let calls: Vec<(&str, Option<&str>)> = third
            .iter()
            .filter(|p| p.call_id.is_some())
            .map(|p| (p.role.as_str(), p.call_id.as_deref()))
            .collect();
        assert_eq!(
            calls,
            [
                ("tool_call", Some("call_1")),
                ("tool", Some("call_1")),
                ("tool_call", Some("call_2")),
                ("tool", Some("call_2")),
            ]
        );
        let results: Vec<&Piece> = third.iter().filter(|p| p.role == "tool").collect();
        assert!(
            results[0]
                .text
                .starts_with(&format!("[File: {repo}/inicfg/parser.py (97 lines total)]"))
        );
        assert!(results[1].text.contains(&format!("18:{FIXED_LINE}\n")));
        if wire == Wire::Anthropic {
            for request in &requests {
                assert_anthropic_pairing(request);
            }
        }
    }
}

#[tokio::test]
async fn tool_descriptions_give_the_configured_window_as_the_prompt_does() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let server =
            MockServer::start(vec![tool_answer(wire, "", "call_1", "submit", json!({}))]).await;
        let extra = "agent: {parser: function_calling}\naci: {window: 30}";
        let run = run_http(wire, &server, extra).await;
        assert_eq!(run.result.exit_status.to_string(), "submitted", "{wire:?}");
        let request = server.requests()[0].json();
        let description = |name: &str| -> String {
            let tool = request["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["function"]["name"] == name || t["name"] == name)
                .unwrap();
            tool["function"]["description"]
                .as_str()
                .or(tool["description"].as_str())
                .unwrap()
                .to_owned()
        };
        // v0's scroll_up docstring says "down" too; only the placeholder is filled in.
        for name in ["scroll_up", "scroll_down"] {
            assert_eq!(
                description(name),
                "moves the window down 30 lines",
                "{wire:?} {name}"
            );
        }
        let system = request.to_string();
        assert!(
            system.contains("  docstring: moves the window down 30 lines\\n"),
            "the prompt's command docs say the same ({wire:?})"
        );
    }
}

#[tokio::test]
async fn without_the_bash_tool_a_function_calling_model_gets_only_the_aci_commands() {
    let wire = Wire::OpenAi;
    let server = MockServer::start(vec![
        tool_answer(wire, "List.", "call_1", "bash", json!({"command": "ls"})),
        tool_answer(wire, "", "call_2", "submit", json!({})),
    ])
    .await;
    let extra = "agent: {parser: function_calling, enable_bash_tool: false}";
    let run = run_http(wire, &server, extra).await;

    assert_eq!(run.result.exit_status.to_string(), "submitted");
    let requests = server.requests();
    let tools: Vec<String> = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools.last().map(String::as_str), Some("submit"));
    assert!(!tools.iter().any(|name| name == "bash"), "{tools:?}");
    // A bash call is then a format error the model is told about, and nothing runs.
    let refused = &run.traj.trajectory[0];
    assert_eq!(
        (refused.action.as_str(), refused.format_error.as_deref()),
        (
            "",
            Some(
                "Your action could not be parsed: Command 'bash' not found in list of available \
                 commands. Please fix it and try again."
            )
        )
    );
}

// ---------------------------------------------------------------------------------------------
// The API misbehaves

#[tokio::test]
async fn one_429_is_retried_and_the_run_goes_on() {
    for wire in WIRES {
        let limited = error_answer(wire, 429, "rate limited").header("retry-after", "0");
        let server = MockServer::start(vec![limited, command(wire, "Done.", "submit")]).await;
        let run = run_http(wire, &server, "").await;

        assert_eq!(run.result.exit_status.to_string(), "submitted", "{wire:?}");
        assert_eq!(server.request_count(), 2);
        let bodies: Vec<Value> = server
            .requests()
            .iter()
            .map(RecordedRequest::json)
            .collect();
        assert_eq!(bodies[0], bodies[1], "the retry resends the same request");
        assert_eq!(
            run.traj.info.model_stats.api_calls, 1,
            "a failed attempt is not a call"
        );
        assert_eq!(actions(&run.traj), ["submit\n"]);
    }
}

#[tokio::test]
async fn server_errors_until_the_retries_are_spent_end_with_exit_api_and_the_diff_so_far() {
    for wire in WIRES {
        let server = MockServer::start(vec![
            command(wire, "Note it.", "echo 'edited' >> README.md"),
            error_answer(wire, 500, "internal error"),
        ])
        .await;
        let run = run_http(wire, &server, "").await;

        assert_eq!(
            run.result.exit_status.to_string(),
            "submitted (exit_api)",
            "{wire:?}"
        );
        // One answer, then 1 + 2 retries of the second request.
        assert_eq!(server.request_count(), 4);
        let patch = String::from_utf8(run.patch.clone()).unwrap();
        assert!(
            patch.starts_with("diff --git a/README.md b/README.md\n"),
            "{patch}"
        );
        assert!(patch.ends_with("+edited\n"), "{patch}");
        assert_eq!(
            run.traj
                .info
                .exit_status
                .clone()
                .map(String::from)
                .as_deref(),
            Some("submitted (exit_api)")
        );
        assert_eq!(run.traj.info.submission.as_deref(), Some(patch.as_str()));
        let last = run.traj.trajectory.last().unwrap();
        assert_eq!(last.action, "");
        assert!(
            last.observation
                .starts_with("model API request failed (HTTP 500) after 3 attempt(s)"),
            "{}",
            last.observation
        );
        assert_eq!(last.format_error, None);
        let preds: Value = serde_json::from_slice(
            &std::fs::read(
                run.output
                    .path()
                    .join(DEMO_ID)
                    .join(format!("{DEMO_ID}.pred")),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(preds["model_patch"], patch);
    }
}

#[tokio::test]
async fn a_malformed_json_body_is_retried_like_a_server_error() {
    for wire in WIRES {
        let broken =
            MockResponse::text(200, "{\"choices\": [").header("content-type", "application/json");
        let server = MockServer::start(vec![broken, command(wire, "Done.", "submit")]).await;
        let run = run_http(wire, &server, "").await;
        assert_eq!(run.result.exit_status.to_string(), "submitted", "{wire:?}");
        assert_eq!(server.request_count(), 2);
    }
}

#[tokio::test]
async fn malformed_bodies_on_every_attempt_end_with_exit_api() {
    let broken =
        MockResponse::text(200, "not json at all").header("content-type", "application/json");
    let server = MockServer::start(vec![broken]).await;
    let run = run_http(Wire::OpenAi, &server, "").await;
    assert_eq!(run.result.exit_status.to_string(), "exit_api");
    assert_eq!(server.request_count(), 3);
    assert!(run.patch.is_empty());
    assert_eq!(run.traj.info.submission, None);
    let last = run.traj.trajectory.last().unwrap();
    assert!(
        last.observation
            .starts_with("model API returned an unreadable response after 3 attempt(s)"),
        "{}",
        last.observation
    );
}

// ---------------------------------------------------------------------------------------------
// The model misbehaves

#[tokio::test]
async fn a_tool_call_with_an_unknown_argument_is_answered_with_a_format_error_that_is_never_stored()
{
    for wire in WIRES {
        let server = MockServer::start(vec![
            tool_answer(
                wire,
                "Open it.",
                "call_bad",
                "open",
                json!({"path": "README.md", "colour": "red"}),
            ),
            tool_answer(wire, "Submit.", "call_ok", "submit", json!({})),
        ])
        .await;
        let run = run_http(wire, &server, FUNCTION_CALLING).await;

        assert_eq!(run.result.exit_status.to_string(), "submitted", "{wire:?}");
        let error = "Your action could not be parsed: Unexpected argument(s): colour. Please fix it and try again.";
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let second = pieces(wire, &requests[1]);
        let n = second.len();
        assert_eq!(second[n - 2].role, "tool_call");
        assert_eq!(second[n - 2].call_id.as_deref(), Some("call_bad"));
        assert_eq!(second[n - 1], piece("tool", error, Some("call_bad")));
        if wire == Wire::Anthropic {
            assert_anthropic_pairing(&requests[1]);
        }

        let stored = &run.traj.history;
        assert!(
            stored
                .iter()
                .all(|item| !item.content.contains("Unexpected argument"))
        );
        assert!(stored.iter().all(|item| {
            item.tool_calls
                .as_ref()
                .is_none_or(|c| c[0]["id"] != "call_bad")
        }));
        assert_eq!(
            shape(stored).len(),
            5,
            "system, demo, instance, submit and its result"
        );
        let failed = &run.traj.trajectory[0];
        assert_eq!(
            (failed.action.as_str(), failed.format_error.as_deref()),
            ("", Some(error))
        );
        assert!(
            failed.response.contains("[tool call] open("),
            "{}",
            failed.response
        );
    }
}

#[tokio::test]
async fn three_malformed_answers_in_a_row_end_with_exit_format_and_each_reask_carries_only_the_latest()
 {
    let wire = Wire::OpenAi;
    let server = MockServer::start_with(move |_, index| {
        let arguments = json!({"line_number": "not a number", "extra": index});
        tool_answer(wire, "Go.", &format!("call_{index}"), "goto", arguments)
    })
    .await;
    let run = run_http(wire, &server, FUNCTION_CALLING).await;

    assert_eq!(run.result.exit_status.to_string(), "exit_format");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "agent.limits.max_requeries is 3");
    let first = pieces(wire, &requests[0]);
    let error = "Your action could not be parsed: Unexpected argument(s): extra. Please fix it and try again.";
    for (index, request) in requests.iter().enumerate().skip(1) {
        let sent = pieces(wire, request);
        let id = format!("call_{}", index - 1);
        assert_eq!(
            sent[..first.len()],
            first[..],
            "the stored history is unchanged"
        );
        let added: Vec<(&str, Option<&str>)> = sent[first.len()..]
            .iter()
            .map(|p| (p.role.as_str(), p.call_id.as_deref()))
            .collect();
        assert_eq!(
            added,
            [
                ("assistant", None),
                ("tool_call", Some(id.as_str())),
                ("tool", Some(id.as_str()))
            ]
        );
        assert_eq!(sent.last().unwrap().text, error);
    }
    assert_eq!(shape(&run.traj.history).len(), 3);
    assert_eq!(run.traj.trajectory.len(), 3);
    assert!(
        run.traj
            .trajectory
            .iter()
            .all(|s| s.format_error.as_deref() == Some(error))
    );
}

#[tokio::test]
async fn a_model_that_only_writes_prose_is_nudged_without_storing_the_nudges_then_exits_with_exit_format()
 {
    let cases = [(Wire::OpenAi, ""), (Wire::Anthropic, FUNCTION_CALLING)];
    for (wire, parser) in cases {
        let prose = "I think the bug is in the parser. Should I change the regular expression?";
        let server = MockServer::start(vec![text_answer(wire, prose)]).await;
        let run = run_http(wire, &server, parser).await;

        assert_eq!(
            run.result.exit_status.to_string(),
            "exit_format",
            "{wire:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "max_no_action_turns is 3");
        let nudges: Vec<String> = run
            .traj
            .trajectory
            .iter()
            .map(|s| s.nudge.clone().unwrap_or_default())
            .collect();
        assert_eq!(nudges[0], "");
        assert!(
            nudges[1]
                .starts_with("You asked a question, but no human is reading this conversation"),
            "{}",
            nudges[1]
        );
        assert!(
            nudges[2].starts_with("There is still no one to answer questions"),
            "{}",
            nudges[2]
        );
        assert!(
            nudges[2].contains("Responses without a command left before the run stops: 1."),
            "{}",
            nudges[2]
        );

        let first = pieces(wire, &requests[0]);
        for (index, nudge) in [(1, &nudges[1]), (2, &nudges[2])] {
            let sent = pieces(wire, &requests[index]);
            // The stored history, then the prose answer and the latest nudge, nothing else.
            assert_eq!(sent[..first.len()], first[..]);
            assert_eq!(
                sent[first.len()..],
                [piece("assistant", prose, None), piece("user", nudge, None)]
            );
        }
        let third = requests[2].json().to_string();
        assert!(
            !third.contains("You asked a question, but no human"),
            "only the latest nudge is sent"
        );
        assert!(
            !third.contains("Your output was not formatted correctly"),
            "the nudge replaces the format error"
        );

        assert_eq!(
            shape(&run.traj.history).len(),
            3,
            "system, demo, instance: nothing else was stored"
        );
        let stored = serde_json::to_string(&run.traj.history).unwrap();
        assert!(!stored.contains("no human is reading") && !stored.contains(prose));
        assert!(
            run.traj
                .trajectory
                .iter()
                .all(|s| s.action.is_empty() && s.format_error.is_some())
        );
    }
}

#[tokio::test]
async fn the_call_that_crosses_the_cost_limit_ends_the_run_with_exit_cost_and_the_diff() {
    // 100 input tokens at $5,000/M are $0.50 a call: the third call crosses $1.20.
    let extra = "model:\n  per_instance_cost_limit: 1.2\n  prices:\n    test-model: {input_per_mtok: 5000.0, output_per_mtok: 0.0}\n";
    for wire in WIRES {
        let server = MockServer::start(vec![
            command(wire, "One.", "echo one >> README.md"),
            command(wire, "Two.", "echo two >> README.md"),
            command(wire, "Three.", "echo three >> README.md"),
            command(wire, "Done.", "submit"),
        ])
        .await;
        let run = run_http(wire, &server, extra).await;

        assert_eq!(
            run.result.exit_status.to_string(),
            "submitted (exit_cost)",
            "{wire:?}"
        );
        assert_eq!(server.request_count(), 3);
        assert_eq!(
            actions(&run.traj),
            ["echo one >> README.md\n", "echo two >> README.md\n", ""]
        );
        let stats = &run.traj.info.model_stats;
        assert_eq!((stats.api_calls, stats.tokens_sent), (3, 300));
        assert!(
            (stats.instance_cost - 1.5).abs() < 1e-9,
            "{}",
            stats.instance_cost
        );
        assert!((run.result.cost - 1.5).abs() < 1e-9);
        let patch = String::from_utf8(run.patch.clone()).unwrap();
        assert!(
            patch.ends_with("+one\n+two\n"),
            "the third answer never ran: {patch}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// What the model is shown

#[tokio::test]
async fn long_observations_are_cut_with_a_note_of_how_much_was_elided() {
    let wire = Wire::OpenAi;
    let server = MockServer::start(vec![
        command(
            wire,
            "Print a lot.",
            "printf 'a%.0s' $(seq 1 300); printf 'z'",
        ),
        command(wire, "Done.", "submit"),
    ])
    .await;
    let run = run_http(wire, &server, "agent: {max_observation_length: 100}").await;

    let sent = pieces(wire, &server.requests()[1]);
    let observation = &sent.last().unwrap().text;
    let expected_head = format!(
        "{}\n<response clipped><NOTE>Observations should not exceed 100 characters. 201 characters were elided from the middle of this output.",
        "a".repeat(50)
    );
    assert!(observation.starts_with(&expected_head), "{observation}");
    assert!(
        observation.contains(&format!("</NOTE>\n{}z\n(Open file: n/a)", "a".repeat(49))),
        "{observation}"
    );
    assert_eq!(
        run.traj.history[4].content, *observation,
        "the history holds what was sent"
    );
    assert_eq!(
        run.traj.trajectory[0].observation.len(),
        301,
        "the trajectory keeps the whole output"
    );
}

#[tokio::test]
async fn last_n_observations_hides_old_outputs_in_requests_but_never_in_the_stored_history() {
    let wire = Wire::OpenAi;
    let script = vec![
        command(wire, "1", "echo out-1"),
        command(wire, "2", "echo out-2"),
        command(wire, "3", "echo out-3"),
        command(wire, "Done.", "submit"),
    ];
    for (history, hidden) in [
        ("{type: last_n_observations, n: 2}", true),
        ("{type: full}", false),
    ] {
        let server = MockServer::start(script.clone()).await;
        let run = run_http(wire, &server, &format!("agent: {{history: {history}}}")).await;
        assert_eq!(run.result.exit_status.to_string(), "submitted");

        let stored: Vec<&str> = run
            .traj
            .history
            .iter()
            .filter(|i| i.message_type == Some(MessageType::Observation))
            .map(|i| i.content.as_str())
            .collect();
        assert!(stored[0].starts_with("out-1\n"), "{history}: {}", stored[0]);
        assert!(stored[0].ends_with("\nbash-$"), "{history}: {}", stored[0]);
        let last = pieces(wire, &server.requests()[3]);
        let observations: Vec<&str> = last
            .iter()
            .filter(|p| p.role == "user")
            .skip(2)
            .map(|p| p.text.as_str())
            .collect();
        let first = if hidden {
            format!("Old output omitted ({} lines)", stored[0].lines().count())
        } else {
            stored[0].to_owned()
        };
        assert_eq!(
            observations,
            [first.as_str(), stored[1], stored[2]],
            "{history}"
        );
        assert!(stored[1].starts_with("out-2\n") && stored[2].starts_with("out-3\n"));
    }
}

// ---------------------------------------------------------------------------------------------
// Special exits and failures in the middle of a run (replay model: no server needed)

#[tokio::test]
async fn exit_ends_the_run_with_exit_command_after_autosubmitting() {
    let run = run(
        config(""),
        "replay",
        Engine::Local,
        replay(&["echo x >> README.md", "exit"]),
    )
    .await;
    assert_eq!(
        run.result.exit_status.to_string(),
        "submitted (exit_command)"
    );
    assert!(String::from_utf8(run.patch).unwrap().ends_with("+x\n"));
    assert_eq!(run.traj.trajectory[1].observation, "Exited");
}

#[tokio::test]
async fn a_template_that_breaks_mid_run_ends_the_instance_with_exit_error_and_keeps_the_diff() {
    let extra = "agent:\n  templates:\n    next_step_no_output: '{{ no_such_variable }}'\n";
    let run = run(
        config(extra),
        "replay",
        Engine::Local,
        replay(&["echo x >> README.md"]),
    )
    .await;
    assert_eq!(run.result.exit_status.to_string(), "submitted (exit_error)");
    assert!(String::from_utf8(run.patch).unwrap().ends_with("+x\n"));
    let last = run.traj.trajectory.last().unwrap();
    assert!(
        last.observation
            .starts_with("template agent.templates.next_step_no_output: "),
        "{}",
        last.observation
    );
}
