//! The OpenAI and Anthropic back ends against a local server speaking their wire formats:
//! request shapes, parsing, retries, limits, accounting, prompt caching and key hygiene.
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions: a panic is a test failure"
)]

use crate::support;

use std::time::Duration;

use aci::hint::{Hint, with_hint};
use aci::model::{
    AnthropicModel, AnyModel, ApiKey, MAX_RESPONSE_BYTES, Message, Model, ModelConfig, ModelError,
    OpenAiModel, Price, QueryRequest, ToolCall, from_spec,
};
use serde_json::{Value, json};
use support::mock_llm::{
    MockResponse, MockServer, RecordedRequest, anthropic_error, anthropic_message, anthropic_text,
    anthropic_tool_use, closed_port_url, openai_completion, openai_error,
};

const KEY: &str = "sk-test-SECRET-4242";
const MODEL: &str = "test-model";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Wire {
    OpenAi,
    Anthropic,
}

const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// Fast retries, a price for [`MODEL`], and the server as the API base.
fn config(wire: Wire, base: &str) -> ModelConfig {
    let api_base = match wire {
        Wire::OpenAi => format!("{base}/v1"),
        Wire::Anthropic => base.to_owned(),
    };
    let mut config = ModelConfig {
        api_base: Some(api_base),
        retries: 2,
        retry_min_wait_s: 0.001,
        retry_max_wait_s: 0.01,
        request_timeout_s: 10.0,
        ..ModelConfig::default()
    };
    config.prices.insert(
        MODEL.to_owned(),
        Price {
            input_per_mtok: 2.0,
            output_per_mtok: 10.0,
            cache_read_per_mtok: Some(0.2),
            cache_write_per_mtok: Some(2.5),
        },
    );
    config
}

fn model(wire: Wire, config: &ModelConfig) -> AnyModel {
    let key = Some(ApiKey::new(KEY));
    match wire {
        Wire::OpenAi => AnyModel::OpenAi(OpenAiModel::new(MODEL, config, key).unwrap()),
        Wire::Anthropic => AnyModel::Anthropic(AnthropicModel::new(MODEL, config, key).unwrap()),
    }
}

async fn server_and_model(wire: Wire, script: Vec<MockResponse>) -> (MockServer, AnyModel) {
    let server = MockServer::start(script).await;
    let model = model(wire, &config(wire, server.url()));
    (server, model)
}

fn text_answer(wire: Wire, text: &str) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => openai_completion(Some(text), &[], (100, 20, 0)),
        Wire::Anthropic => anthropic_message(vec![anthropic_text(text)], (100, 20, 0, 0)),
    };
    MockResponse::json(200, &body)
}

fn tool_answer(wire: Wire, thought: &str, name: &str, arguments: Value) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => openai_completion(
            Some(thought),
            &[("call_abc", name, &arguments.to_string())],
            (100, 20, 0),
        ),
        Wire::Anthropic => anthropic_message(
            vec![
                anthropic_text(thought),
                anthropic_tool_use("call_abc", name, arguments),
            ],
            (100, 20, 0, 0),
        ),
    };
    MockResponse::json(200, &body)
}

fn error_answer(wire: Wire, status: u16, message: &str) -> MockResponse {
    let body = match wire {
        Wire::OpenAi => openai_error(message, "server_error", None),
        Wire::Anthropic => anthropic_error("api_error", message),
    };
    MockResponse::json(status, &body)
}

/// The OpenAI-format tool list the agent passes in.
fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "goto",
            "description": "moves the window to show <line_number>",
            "parameters": {"type": "object",
                "properties": {"line_number": {"type": "integer", "description": "the line number"}},
                "required": ["line_number"]}}},
        {"type": "function", "function": {
            "name": "submit", "description": "submits your current code",
            "parameters": {"type": "object"}}}
    ])
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are an autonomous programmer."),
        Message::user("Fix the bug in a.py."),
    ]
}

async fn ask(
    model: &mut AnyModel,
    messages: &[Message],
    tools: Option<&Value>,
) -> Result<aci::model::ModelResponse, ModelError> {
    model.query(QueryRequest { messages, tools }).await
}

fn expected_path(wire: Wire) -> &'static str {
    match wire {
        Wire::OpenAi => "/v1/chat/completions",
        Wire::Anthropic => "/v1/messages",
    }
}

#[tokio::test]
async fn a_tool_call_round_trips_in_both_wire_formats() {
    for wire in WIRES {
        let answer = tool_answer(wire, "Go to the bug.", "goto", json!({"line_number": 42}));
        let (server, mut model) = server_and_model(wire, vec![answer]).await;
        let tools = tools();
        let response = ask(&mut model, &conversation(), Some(&tools))
            .await
            .unwrap();

        assert_eq!(response.text, "Go to the bug.", "{wire:?}");
        assert_eq!(
            response.tool_calls,
            [ToolCall {
                id: "call_abc".into(),
                name: "goto".into(),
                arguments: r#"{"line_number":42}"#.into(),
            }],
            "{wire:?}"
        );
        assert_eq!(response.raw_action, None);
        // 100 input tokens at $2/M and 20 output tokens at $10/M.
        assert!(
            (response.cost - 0.0004).abs() < 1e-12,
            "{wire:?} {}",
            response.cost
        );
        let stats = model.stats();
        assert_eq!(
            (stats.api_calls, stats.tokens_sent, stats.tokens_received),
            (1, 100, 20)
        );
        assert!((stats.instance_cost - 0.0004).abs() < 1e-12);

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_tool_request_shape(wire, &requests[0], &tools);
    }
}

/// Checks path, headers and body of the first request of the tool-call test.
fn assert_tool_request_shape(wire: Wire, request: &RecordedRequest, tools: &Value) {
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, expected_path(wire));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body = request.json();
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["temperature"], json!(0.0));
    assert!(body.get("top_p").is_none(), "top_p is not sent unless set");
    match wire {
        Wire::OpenAi => {
            assert_eq!(
                request.header("authorization"),
                Some(&*format!("Bearer {KEY}"))
            );
            assert_eq!(&body["tools"], tools, "tools are sent as given");
            assert_eq!(body["max_tokens"], 4096);
            assert_eq!(
                body["messages"],
                json!([
                    {"role": "system", "content": "You are an autonomous programmer."},
                    {"role": "user", "content": "Fix the bug in a.py."}
                ])
            );
        }
        Wire::Anthropic => {
            assert_eq!(request.header("x-api-key"), Some(KEY));
            assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(request.header("authorization"), None);
            assert_eq!(body["max_tokens"], 4096);
            assert_eq!(
                body["tools"],
                json!([
                    {"name": "goto", "description": "moves the window to show <line_number>",
                     "input_schema": {"type": "object",
                        "properties": {"line_number": {"type": "integer", "description": "the line number"}},
                        "required": ["line_number"]}},
                    {"name": "submit", "description": "submits your current code",
                     "input_schema": {"type": "object"}}
                ])
            );
            assert_eq!(
                body["system"][0]["text"],
                "You are an autonomous programmer."
            );
            assert_eq!(body["messages"][0]["role"], "user");
            assert_eq!(
                body["messages"][0]["content"][0]["text"],
                "Fix the bug in a.py."
            );
        }
    }
}

#[tokio::test]
async fn the_tool_call_and_its_result_are_sent_back_in_the_next_request() {
    for wire in WIRES {
        let (server, mut model) = server_and_model(wire, vec![text_answer(wire, "ok")]).await;
        let mut messages = conversation();
        messages.push(Message::assistant(
            "Go to the bug.",
            vec![ToolCall {
                id: "call_abc".into(),
                name: "goto".into(),
                arguments: r#"{"line_number": 42}"#.into(),
            }],
        ));
        messages.push(Message::tool("call_abc", "[File: a.py (50 lines total)]"));
        let tools = tools();
        ask(&mut model, &messages, Some(&tools)).await.unwrap();

        let body = server.requests()[0].json();
        let history = body["messages"].as_array().unwrap();
        match wire {
            Wire::OpenAi => assert_eq!(
                history[2..],
                [
                    json!({"role": "assistant", "content": "Go to the bug.", "tool_calls": [
                        {"id": "call_abc", "type": "function",
                         "function": {"name": "goto", "arguments": "{\"line_number\": 42}"}}]}),
                    json!({"role": "tool", "tool_call_id": "call_abc",
                           "content": "[File: a.py (50 lines total)]"}),
                ]
            ),
            Wire::Anthropic => {
                assert_eq!(
                    history[1],
                    json!({"role": "assistant", "content": [
                        {"type": "text", "text": "Go to the bug."},
                        {"type": "tool_use", "id": "call_abc", "name": "goto",
                         "input": {"line_number": 42}}]})
                );
                assert_eq!(history[2]["role"], "user");
                let result = &history[2]["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(result["tool_use_id"], "call_abc");
                assert_eq!(result["content"], "[File: a.py (50 lines total)]");
            }
        }
    }
}

#[tokio::test]
async fn a_plain_text_answer_needs_no_tools() {
    for wire in WIRES {
        let answer = "DISCUSSION\nLet me look.\n\n```\nls\n```";
        let (server, mut model) = server_and_model(wire, vec![text_answer(wire, answer)]).await;
        let response = ask(&mut model, &conversation(), None).await.unwrap();
        assert_eq!(response.text, answer, "{wire:?}");
        assert!(response.tool_calls.is_empty());
        assert!(
            server.requests()[0].json().get("tools").is_none(),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn one_429_with_retry_after_zero_is_retried_then_succeeds() {
    for wire in WIRES {
        let limited = error_answer(wire, 429, "rate limited").header("retry-after", "0");
        let script = vec![limited, text_answer(wire, "done")];
        let (server, mut model) = server_and_model(wire, script).await;
        let response = ask(&mut model, &conversation(), None).await.unwrap();
        assert_eq!(response.text, "done");
        assert_eq!(server.request_count(), 2, "{wire:?}");
        assert_eq!(model.stats().api_calls, 1, "failed attempts are not calls");
        let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
        assert_eq!(bodies[0], bodies[1], "a retry resends the same body");
    }
}

#[tokio::test]
async fn overloaded_529_and_502_are_retried() {
    for wire in WIRES {
        let script = vec![
            error_answer(wire, 529, "Overloaded"),
            MockResponse::text(502, "<html>Bad Gateway</html>"),
            text_answer(wire, "done"),
        ];
        let (server, mut model) = server_and_model(wire, script).await;
        assert_eq!(
            ask(&mut model, &conversation(), None).await.unwrap().text,
            "done"
        );
        assert_eq!(server.request_count(), 3);
    }
}

#[tokio::test]
async fn server_errors_until_retries_are_spent_end_with_exit_api() {
    for wire in WIRES {
        let (server, mut model) =
            server_and_model(wire, vec![error_answer(wire, 500, "internal failure")]).await;
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::Api {
                    status: Some(500),
                    attempts: 3,
                    ..
                }
            ),
            "{wire:?}: {error:?}"
        );
        assert_eq!(error.exit_status().as_str(), "exit_api");
        assert!(error.to_string().contains("internal failure"), "{error}");
        assert_eq!(server.request_count(), 3, "retries: 2 means 3 attempts");
        assert_eq!(model.stats().api_calls, 0);
    }
}

#[tokio::test]
async fn a_malformed_body_is_retried_then_ends_with_exit_api() {
    for wire in WIRES {
        let garbage =
            MockResponse::text(200, "{\"choices\": [").header("content-type", "application/json");
        let script = vec![garbage.clone(), text_answer(wire, "recovered")];
        let (_server, mut model) = server_and_model(wire, script).await;
        let response = ask(&mut model, &conversation(), None).await.unwrap();
        assert_eq!(response.text, "recovered", "{wire:?}");

        let (server, mut model) = server_and_model(wire, vec![garbage]).await;
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(error, ModelError::Malformed { attempts: 3, .. }),
            "{error:?}"
        );
        assert_eq!(error.exit_status().as_str(), "exit_api");
        assert!(error.to_string().contains("not JSON"), "{error}");
        assert_eq!(server.request_count(), 3);
    }
}

#[tokio::test]
async fn valid_json_of_the_wrong_shape_is_malformed() {
    for wire in WIRES {
        let (_server, mut model) = server_and_model(
            wire,
            vec![MockResponse::json(200, &json!({"unexpected": true}))],
        )
        .await;
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(error, ModelError::Malformed { .. }),
            "{wire:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn unparseable_tool_arguments_pass_through_as_raw_text() {
    let bad = r#"{"line_number": 42"#;
    let body = openai_completion(None, &[("call_1", "goto", bad)], (10, 5, 0));
    let (_server, mut model) =
        server_and_model(Wire::OpenAi, vec![MockResponse::json(200, &body)]).await;
    let response = ask(&mut model, &conversation(), Some(&tools()))
        .await
        .unwrap();
    assert_eq!(response.tool_calls[0].arguments, bad);
    assert_eq!(response.text, "");

    // Sent back in the history, such a call still makes a valid request in both formats.
    for wire in WIRES {
        let (server, mut model) = server_and_model(wire, vec![text_answer(wire, "ok")]).await;
        let mut messages = conversation();
        messages.push(Message::assistant("", response.tool_calls.clone()));
        messages.push(Message::tool("call_1", "Your action could not be parsed"));
        ask(&mut model, &messages, Some(&tools())).await.unwrap();
        let body = server.requests()[0].json();
        match wire {
            Wire::OpenAi => {
                let sent = &body["messages"][2];
                assert_eq!(sent["content"], Value::Null);
                assert_eq!(sent["tool_calls"][0]["function"]["arguments"], bad);
            }
            Wire::Anthropic => assert_eq!(
                body["messages"][1]["content"][0]["input"],
                json!({"raw_arguments": bad})
            ),
        }
    }
}

#[tokio::test]
async fn a_call_over_the_cost_limit_ends_with_exit_cost_after_recording_it() {
    for wire in WIRES {
        let body = match wire {
            // 200k input tokens at $2/M = $0.40 per call.
            Wire::OpenAi => openai_completion(Some("x"), &[], (200_000, 0, 0)),
            Wire::Anthropic => anthropic_message(vec![anthropic_text("x")], (200_000, 0, 0, 0)),
        };
        let server = MockServer::start(vec![MockResponse::json(200, &body)]).await;
        let config = ModelConfig {
            per_instance_cost_limit: 1.0,
            ..config(wire, server.url())
        };
        let mut model = model(wire, &config);
        ask(&mut model, &conversation(), None).await.unwrap();
        ask(&mut model, &conversation(), None).await.unwrap();
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(error, ModelError::CostLimit { .. }),
            "{wire:?}: {error:?}"
        );
        assert_eq!(error.exit_status().as_str(), "exit_cost");
        assert_eq!(model.stats().api_calls, 3);
        assert!((model.stats().instance_cost - 1.2).abs() < 1e-9);
        // Once over, no further request is made.
        let again = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert_eq!(again.exit_status().as_str(), "exit_cost");
        assert_eq!(server.request_count(), 3);
    }
}

#[tokio::test]
async fn the_call_limit_refuses_a_call_before_sending_it() {
    for wire in WIRES {
        let server = MockServer::start(vec![text_answer(wire, "x")]).await;
        let config = ModelConfig {
            per_instance_call_limit: 2,
            ..config(wire, server.url())
        };
        let mut model = model(wire, &config);
        ask(&mut model, &conversation(), None).await.unwrap();
        ask(&mut model, &conversation(), None).await.unwrap();
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(error, ModelError::CallLimit { calls: 2, limit: 2 }),
            "{error:?}"
        );
        assert_eq!(error.exit_status().as_str(), "exit_cost");
        assert_eq!(server.request_count(), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn anthropic_marks_the_system_prompt_and_last_two_user_turns_and_counts_cached_tokens() {
    let body = anthropic_message(vec![anthropic_text("ok")], (50, 10, 4000, 600));
    let (server, mut model) =
        server_and_model(Wire::Anthropic, vec![MockResponse::json(200, &body)]).await;
    let messages = vec![
        Message::system("system prompt"),
        Message::user("demonstration and task"),
        Message::assistant("step 1", vec![]),
        Message::user("observation 1"),
        Message::assistant("step 2", vec![]),
        Message::user("observation 2"),
        Message::assistant("step 3", vec![]),
        Message::user("observation 3"),
    ];
    let response = ask(&mut model, &messages, None).await.unwrap();
    ask(&mut model, &messages, None).await.unwrap();

    let sent = server.requests()[0].json();
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        sent["system"],
        json!([{"type": "text", "text": "system prompt", "cache_control": ephemeral}])
    );
    let marks: Vec<(String, bool)> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| {
            let last = turn["content"].as_array().unwrap().last().unwrap();
            (
                turn["role"].as_str().unwrap().to_owned(),
                last.get("cache_control") == Some(&ephemeral),
            )
        })
        .collect();
    let expected: Vec<(String, bool)> = [
        ("user", false),
        ("assistant", false),
        ("user", false),
        ("assistant", false),
        ("user", true),
        ("assistant", false),
        ("user", true),
    ]
    .iter()
    .map(|(role, marked)| ((*role).to_owned(), *marked))
    .collect();
    assert_eq!(marks, expected);

    // 50 × $2 + 10 × $10 + 4000 × $0.20 + 600 × $2.50, per million.
    assert!((response.cost - 0.0025).abs() < 1e-12, "{}", response.cost);
    let stats = model.stats();
    assert_eq!(stats.tokens_sent, 2 * 4650);
    assert_eq!(stats.tokens_received, 20);
    assert_eq!(stats.cache_read_tokens, 8000);
    assert_eq!(stats.cache_write_tokens, 1200);
}

#[tokio::test]
async fn anthropic_cache_marks_can_be_turned_off() {
    let server = MockServer::start(vec![text_answer(Wire::Anthropic, "ok")]).await;
    let mut config = config(Wire::Anthropic, server.url());
    config.cache_control.enabled = false;
    let mut model = model(Wire::Anthropic, &config);
    ask(&mut model, &conversation(), None).await.unwrap();
    let sent = server.requests()[0].body.clone();
    assert!(!String::from_utf8(sent).unwrap().contains("cache_control"));
}

#[tokio::test]
async fn openai_cached_prompt_tokens_are_counted_apart() {
    let body = openai_completion(Some("ok"), &[], (1000, 10, 800));
    let (_server, mut model) =
        server_and_model(Wire::OpenAi, vec![MockResponse::json(200, &body)]).await;
    let response = ask(&mut model, &conversation(), None).await.unwrap();
    assert_eq!(response.usage.input_tokens, 200);
    assert_eq!(response.usage.cache_read_tokens, 800);
    let stats = model.stats();
    assert_eq!((stats.tokens_sent, stats.cache_read_tokens), (1000, 800));
    // 200 × $2 + 800 × $0.20 + 10 × $10, per million.
    assert!(
        (stats.instance_cost - 0.00066).abs() < 1e-12,
        "{}",
        stats.instance_cost
    );
}

#[tokio::test]
async fn the_key_never_appears_in_errors_even_when_the_server_echoes_it() {
    for wire in WIRES {
        for status in [401, 500] {
            let server = MockServer::start_with(move |request, _| {
                let echoed = format!(
                    "invalid credentials: authorization={:?} x-api-key={:?}",
                    request.header("authorization"),
                    request.header("x-api-key")
                );
                error_answer(wire, status, &echoed)
            })
            .await;
            let mut model = model(wire, &config(wire, server.url()));
            let error = ask(&mut model, &conversation(), None).await.unwrap_err();
            let sent = &server.requests()[0];
            assert!(
                sent.headers.iter().any(|(_, value)| value.contains(KEY)),
                "the key was sent, so the test is meaningful"
            );
            for text in [
                error.to_string(),
                format!("{error:?}"),
                format!("{model:?}"),
            ] {
                assert!(
                    !text.contains(KEY),
                    "{wire:?} {status}: key leaked in {text}"
                );
            }
            assert!(error.to_string().contains("<redacted>"), "{error}");
        }
    }
}

/// The key echoed right where an error body is cut to its first 1,000 characters: scrubbing
/// after the cut would no longer recognise the key's head.
#[tokio::test]
async fn a_key_echoed_across_the_cut_of_a_long_error_body_is_scrubbed_first() {
    for wire in WIRES {
        for body_json in [true, false] {
            let server = MockServer::start_with(move |_, _| {
                let echoed = format!("{}{KEY} was rejected", "x".repeat(995));
                if body_json {
                    error_answer(wire, 401, &echoed)
                } else {
                    MockResponse::text(401, &echoed)
                }
            })
            .await;
            let mut model = model(wire, &config(wire, server.url()));
            let error = ask(&mut model, &conversation(), None).await.unwrap_err();
            let text = error.to_string();
            let head = &KEY[..KEY.len() / 2];
            assert!(
                !text.contains(head),
                "{wire:?} json={body_json}: the key's head leaked in {text}"
            );
            // The cut falls inside the marker that replaced the key.
            assert!(
                text.contains(&format!("{}<reda… ", "x".repeat(995))),
                "{text}"
            );
        }
    }
}

#[tokio::test]
async fn client_errors_fail_at_once_with_a_hint() {
    for wire in WIRES {
        for (status, hint) in [
            (400, ""),
            (401, "hint: check that"),
            (403, "hint:"),
            (404, "hint: check the model name"),
        ] {
            let (server, mut model) =
                server_and_model(wire, vec![error_answer(wire, status, "refused")]).await;
            let error = ask(&mut model, &conversation(), None).await.unwrap_err();
            assert!(
                matches!(error, ModelError::Api { status: Some(s), attempts: 1, .. } if s == status),
                "{wire:?} {status}: {error:?}"
            );
            assert_eq!(
                server.request_count(),
                1,
                "{wire:?} {status} is not retried"
            );
            assert!(with_hint(&error).contains(hint), "{error}");
            assert_eq!(error.exit_status().as_str(), "exit_api");
            assert_eq!(error.is_run_level(), matches!(status, 401 | 403));
        }
    }
}

#[tokio::test]
async fn context_length_errors_end_with_exit_context() {
    let cases = [
        (
            Wire::OpenAi,
            openai_error(
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                "invalid_request_error",
                Some("context_length_exceeded"),
            ),
        ),
        (
            Wire::Anthropic,
            anthropic_error(
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum",
            ),
        ),
    ];
    for (wire, body) in cases {
        let (server, mut model) =
            server_and_model(wire, vec![MockResponse::json(400, &body)]).await;
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(error, ModelError::ContextWindow { .. }),
            "{wire:?}: {error:?}"
        );
        assert_eq!(error.exit_status().as_str(), "exit_context");
        assert_eq!(server.request_count(), 1);
    }
}

#[tokio::test]
async fn openai_insufficient_quota_is_not_retried() {
    let body = openai_error(
        "You exceeded your current quota",
        "insufficient_quota",
        Some("insufficient_quota"),
    );
    let (server, mut model) =
        server_and_model(Wire::OpenAi, vec![MockResponse::json(429, &body)]).await;
    let error = ask(&mut model, &conversation(), None).await.unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::Api {
                status: Some(429),
                attempts: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.hint().as_deref(),
        Some("the account is out of quota; retrying will not help")
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn connection_errors_are_retried_then_end_with_exit_api() {
    for wire in WIRES {
        let base = closed_port_url().await;
        let mut model = model(wire, &config(wire, &base));
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::Api {
                    status: None,
                    attempts: 3,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("cannot connect"), "{error}");
        assert_eq!(error.exit_status().as_str(), "exit_api");
    }
}

#[tokio::test]
async fn timeouts_are_retried_then_end_with_exit_api() {
    for wire in WIRES {
        let slow = text_answer(wire, "late").delayed(Duration::from_secs(30));
        let server = MockServer::start(vec![slow]).await;
        let config = ModelConfig {
            request_timeout_s: 0.2,
            retries: 1,
            ..config(wire, server.url())
        };
        let mut model = model(wire, &config);
        let error = ask(&mut model, &conversation(), None).await.unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::Api {
                    status: None,
                    attempts: 2,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("timed out"), "{error}");
        assert_eq!(server.request_count(), 2);
    }
}

#[tokio::test]
async fn top_p_and_extra_body_reach_the_request() {
    for wire in WIRES {
        let server = MockServer::start(vec![text_answer(wire, "ok")]).await;
        let mut config = config(wire, server.url());
        config.top_p = Some(0.95);
        config.temperature = 0.5;
        config.max_output_tokens = 123;
        config.extra_body.insert("temperature".into(), Value::Null);
        config
            .extra_body
            .insert("metadata".into(), json!({"user_id": "u1"}));
        let mut model = model(wire, &config);
        ask(&mut model, &conversation(), None).await.unwrap();
        let body = server.requests()[0].json();
        assert_eq!(body["top_p"], json!(0.95));
        assert!(
            body.get("temperature").is_none(),
            "null in extra_body removes a field"
        );
        assert_eq!(body["metadata"], json!({"user_id": "u1"}));
        // With an api_base, OpenAI-compatible servers get `max_tokens` too.
        assert_eq!(body["max_tokens"], json!(123));
    }
}

#[tokio::test]
async fn from_spec_reaches_an_openai_compatible_server_through_api_base() {
    let server = MockServer::start(vec![text_answer(Wire::OpenAi, "local model")]).await;
    let config = config(Wire::OpenAi, server.url());
    let mut model = from_spec("openai/qwen2.5-coder", &config, None).unwrap();
    assert_eq!(model.name(), "openai/qwen2.5-coder");
    let response = ask(&mut model, &conversation(), None).await.unwrap();
    assert_eq!(response.text, "local model");
    assert_eq!(server.requests()[0].json()["model"], "qwen2.5-coder");
}

#[tokio::test]
async fn an_unpriced_model_costs_nothing_and_does_not_fail() {
    let server = MockServer::start(vec![text_answer(Wire::Anthropic, "ok")]).await;
    let mut config = config(Wire::Anthropic, server.url());
    config.prices.clear();
    let mut model = model(Wire::Anthropic, &config);
    let response = ask(&mut model, &conversation(), None).await.unwrap();
    assert_eq!(response.cost, 0.0);
    assert_eq!(model.stats().instance_cost, 0.0);
    assert_eq!(model.stats().tokens_sent, 100);
}

/// A body four times [`MAX_RESPONSE_BYTES`], streamed with no `content-length` (the server
/// holds 64 KiB of it): the client stops reading at the limit, and the attempt fails as an
/// answer that cannot be read (retried) or, for an error status, as that status says.
#[tokio::test]
async fn a_response_body_over_the_limit_is_one_clear_error_retried_as_its_status_says() {
    let over = 4 * MAX_RESPONSE_BYTES as u64;
    let limit_message = format!(
        "the response body is larger than {MAX_RESPONSE_BYTES} bytes, aci's limit on a model \
         API response"
    );
    for wire in WIRES {
        for (status, attempts, expected) in [
            (
                200,
                3,
                format!(
                    "model API returned an unreadable response after 3 attempt(s): {limit_message}"
                ),
            ),
            (
                500,
                3,
                format!("model API request failed (HTTP 500) after 3 attempt(s): {limit_message}"),
            ),
            (
                400,
                1,
                format!("model API request failed (HTTP 400) after 1 attempt(s): {limit_message}"),
            ),
        ] {
            let server = MockServer::start(vec![MockResponse::streamed(
                status,
                "{\"choices\": [{\"message\": {\"content\": \"",
                &[b'x'; 64 * 1024],
                over,
            )])
            .await;
            let mut model = model(wire, &config(wire, server.url()));
            let error = ask(&mut model, &conversation(), None).await.unwrap_err();
            assert_eq!(error.to_string(), expected, "{wire:?} {status}");
            assert_eq!(server.request_count(), attempts, "{wire:?} {status}");
        }
    }
}

/// Every file under `dir`, recursively, with its text.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                files.push((path, text));
            }
        }
    }
    files
}

/// `aci run` against a server that refuses every request quoting the key back: a 401 stops the
/// run (exit 1), a 500 retried to the end ends the instance (exit 0); either way the key is in
/// none of stderr, stdout, the `.traj`, the patch, the predictions or the statuses file, and
/// `<redacted>` stands in its place.
#[tokio::test]
async fn the_key_a_server_quotes_back_is_in_no_output_of_aci_run() {
    use support::agent::{DEMO_ID, aci_bin, config_file, demo_dir};
    for (wire, status, code) in [
        (Wire::OpenAi, 401, 1),
        (Wire::Anthropic, 401, 1),
        (Wire::OpenAi, 500, 0),
        (Wire::Anthropic, 500, 0),
    ] {
        let server = MockServer::start_with(move |request, _| {
            let echoed = format!(
                "invalid credentials: authorization={:?} x-api-key={:?}",
                request.header("authorization"),
                request.header("x-api-key")
            );
            error_answer(wire, status, &echoed)
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let (spec, var, base) = match wire {
            Wire::OpenAi => (
                "openai/test-model",
                "OPENAI_API_KEY",
                format!("{}/v1", server.url()),
            ),
            Wire::Anthropic => (
                "anthropic/test-model",
                "ANTHROPIC_API_KEY",
                server.url().to_owned(),
            ),
        };
        let run = tokio::process::Command::new(aci_bin())
            .args([
                "run",
                "--runtime",
                "local",
                "--id",
                DEMO_ID,
                "--model",
                spec,
            ])
            .arg("--instances")
            .arg(demo_dir().join("instances.jsonl"))
            .arg("--api-base")
            .arg(&base)
            .arg("--config")
            .arg(config_file(dir.path()))
            .arg("--output")
            .arg(&out)
            .env(var, KEY)
            .output()
            .await
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        assert_eq!(run.status.code(), Some(code), "{wire:?} {status}: {stderr}");
        assert!(stderr.contains("<redacted>"), "{wire:?} {status}: {stderr}");
        assert!(server.request_count() > 0, "{stderr}");
        assert!(
            !stdout.contains(KEY) && !stderr.contains(KEY),
            "{wire:?}: {stderr}"
        );
        let files = files_under(&out);
        assert!(files.len() >= 3, "{files:?}");
        for (path, text) in &files {
            assert!(
                !text.contains(KEY),
                "{wire:?}: the key is in {}",
                path.display()
            );
        }
        let traj = files
            .iter()
            .find(|(path, _)| path.extension().is_some_and(|ext| ext == "traj"))
            .map(|(_, text)| text.clone())
            .unwrap();
        assert!(traj.contains("<redacted>"), "{wire:?} {status}: {traj}");
    }
}
