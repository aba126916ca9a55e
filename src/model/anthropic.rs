//! `anthropic/<name>`: the Messages API, with `tool_use` / `tool_result` blocks and prompt
//! caching (`cache_control` marks on the system prompt and the last user turns).

use serde_json::{Map, Value, json};

use super::config::merge_extra;
use super::http::{HttpModel, WireFormat};
use super::{
    ANTHROPIC_API_KEY, CacheControlConfig, Message, ModelConfig, ModelResponse, QueryRequest, Role,
    ToolCall, Usage,
};

/// Anthropic's own endpoint, used when `model.api_base` is unset.
const DEFAULT_API_BASE: &str = "https://api.anthropic.com";
/// The `anthropic-version` header.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Stands in for empty text, which the API refuses in a text block.
const EMPTY_TEXT: &str = "(empty)";

/// A model behind the Messages API.
pub type AnthropicModel = HttpModel<AnthropicWire>;

/// The Messages wire format, with the request fields that come from the config.
#[derive(Debug, Clone)]
pub struct AnthropicWire {
    temperature: f64,
    top_p: Option<f64>,
    max_output_tokens: u32,
    cache_control: CacheControlConfig,
    extra_body: Map<String, Value>,
}

impl WireFormat for AnthropicWire {
    const PROVIDER: &'static str = "anthropic";
    const KEY_VAR: &'static str = ANTHROPIC_API_KEY;
    const KEY_HEADER: (&'static str, &'static str) = ("x-api-key", "");
    const HEADERS: &'static [(&'static str, &'static str)] =
        &[("anthropic-version", ANTHROPIC_VERSION)];

    /// Accepts a base that already ends in `/v1`, as proxies are often written.
    fn url(api_base: Option<&str>) -> String {
        let base = api_base.unwrap_or(DEFAULT_API_BASE).trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }

    fn from_config(config: &ModelConfig) -> Self {
        AnthropicWire {
            temperature: config.temperature,
            top_p: config.top_p,
            max_output_tokens: config.max_output_tokens,
            cache_control: config.cache_control.clone(),
            extra_body: config.extra_body.clone(),
        }
    }

    fn request_body(&self, model: &str, request: QueryRequest<'_>) -> Value {
        request_body(model, self, request)
    }

    fn parse_response(value: Value) -> Result<ModelResponse, String> {
        parse_response(value)
    }
}

/// One conversation turn in the Messages shape: a role and its content blocks.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The Messages request body.
fn request_body(model: &str, settings: &AnthropicWire, request: QueryRequest<'_>) -> Value {
    let (mut system, mut turns) = convert_messages(request.messages);
    if settings.cache_control.enabled {
        mark_cache_breakpoints(
            &mut system,
            &mut turns,
            settings.cache_control.last_n_user_turns,
        );
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(settings.max_output_tokens));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let messages = turns
        .into_iter()
        .map(|turn| json!({"role": turn.role, "content": turn.blocks}))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    body.insert("temperature".into(), json!(settings.temperature));
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if let Some(tools) = request.tools {
        body.insert("tools".into(), convert_tools(tools));
    }
    merge_extra(&mut body, &settings.extra_body);
    Value::Object(body)
}

/// Splits out the system prompt and turns the rest into alternating turns: tool results go
/// into user turns as `tool_result` blocks, and consecutive messages of one side merge.
fn convert_messages(messages: &[Message]) -> (Vec<Value>, Vec<Turn>) {
    let mut system = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System => {
                system.push(text_block(&message.content));
                continue;
            }
            Role::User => ("user", vec![text_block(&message.content)]),
            Role::Tool => ("user", vec![tool_result_block(message)]),
            Role::Assistant => ("assistant", assistant_blocks(message)),
        };
        match turns.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    (system, turns)
}

fn text_block(text: &str) -> Value {
    let text = if text.trim().is_empty() {
        EMPTY_TEXT
    } else {
        text
    };
    json!({"type": "text", "text": text})
}

fn tool_result_block(message: &Message) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
    });
    if !message.content.is_empty() {
        block["content"] = json!(message.content);
    }
    block
}

/// Text (when there is any) followed by one `tool_use` block per call.
fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !message.content.trim().is_empty() || message.tool_calls.is_empty() {
        blocks.push(text_block(&message.content));
    }
    for call in &message.tool_calls {
        blocks.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": tool_input(&call.arguments),
        }));
    }
    blocks
}

/// `tool_use.input` must be an object: arguments that are not a JSON object are kept as
/// `{"raw_arguments": <text>}`.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({"raw_arguments": arguments}),
    }
}

/// Marks the last system block and the last block of each of the last `last_n_user_turns`
/// user turns with `cache_control: {"type": "ephemeral"}`.
fn mark_cache_breakpoints(system: &mut [Value], turns: &mut [Turn], last_n_user_turns: usize) {
    let mark = |block: Option<&mut Value>| {
        if let Some(Value::Object(block)) = block {
            block.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    };
    mark(system.last_mut());
    turns
        .iter_mut()
        .rev()
        .filter(|turn| turn.role == "user")
        .take(last_n_user_turns)
        .for_each(|turn| mark(turn.blocks.last_mut()));
}

/// OpenAI-format tools (`{"type":"function","function":{name,description,parameters}}`) to
/// Anthropic's `{name, description, input_schema}`; entries in another shape pass unchanged.
fn convert_tools(tools: &Value) -> Value {
    let Some(list) = tools.as_array() else {
        return tools.clone();
    };
    let converted = list
        .iter()
        .map(|tool| {
            let Some(function) = tool.get("function") else {
                return tool.clone();
            };
            let mut out = Map::new();
            out.insert(
                "name".into(),
                function.get("name").cloned().unwrap_or_default(),
            );
            if let Some(description) = function.get("description") {
                out.insert("description".into(), description.clone());
            }
            let schema = function
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            out.insert("input_schema".into(), schema);
            Value::Object(out)
        })
        .collect();
    Value::Array(converted)
}

/// Reads `content[]` and `usage` from a 2xx body.
fn parse_response(value: Value) -> Result<ModelResponse, String> {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(format!("the response is an error: {value}"));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the response has no content list")?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (index, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => tool_calls.push(parse_tool_use(index, block)?),
            // thinking, redacted_thinking and future block types carry no action.
            _ => {}
        }
    }
    Ok(ModelResponse {
        text: texts.join("\n"),
        tool_calls,
        usage: parse_usage(value.get("usage")),
        cost: 0.0,
        raw_action: None,
    })
}

fn parse_tool_use(index: usize, block: &Value) -> Result<ToolCall, String> {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    let name = field("name").ok_or_else(|| format!("content[{index}] tool_use has no name"))?;
    let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
    Ok(ToolCall {
        id: field("id").unwrap_or_default().to_owned(),
        name: name.to_owned(),
        arguments: input.to_string(),
    })
}

/// Anthropic counts cache reads and writes apart from `input_tokens` already.
fn parse_usage(usage: Option<&Value>) -> Usage {
    let count = |name: &str| {
        usage
            .and_then(|usage| usage.get(name))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cache_read_tokens: count("cache_read_input_tokens"),
        cache_write_tokens: count("cache_creation_input_tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(cache: bool) -> AnthropicWire {
        AnthropicWire {
            temperature: 0.0,
            top_p: None,
            max_output_tokens: 64,
            cache_control: CacheControlConfig {
                enabled: cache,
                last_n_user_turns: 2,
            },
            extra_body: Map::new(),
        }
    }

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "edit".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn tool_calls_become_tool_use_and_results_merge_into_one_user_turn() {
        let messages = [
            Message::system("sys"),
            Message::user("task"),
            Message::assistant(
                "two edits",
                vec![call("t1", r#"{"a":1}"#), call("t2", "{}")],
            ),
            Message::tool("t1", "done 1"),
            Message::tool("t2", ""),
            Message::user("next step"),
        ];
        let body = request_body(
            "claude",
            &settings(false),
            QueryRequest {
                messages: &messages,
                tools: None,
            },
        );
        assert_eq!(
            body,
            json!({
                "model": "claude",
                "max_tokens": 64,
                "temperature": 0.0,
                "system": [{"type": "text", "text": "sys"}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "task"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "two edits"},
                        {"type": "tool_use", "id": "t1", "name": "edit", "input": {"a": 1}},
                        {"type": "tool_use", "id": "t2", "name": "edit", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "done 1"},
                        {"type": "tool_result", "tool_use_id": "t2"},
                        {"type": "text", "text": "next step"}]},
                ],
            })
        );
    }

    #[test]
    fn cache_marks_go_on_the_system_prompt_and_the_last_two_user_turns() {
        let messages = [
            Message::system("sys"),
            Message::user("u1"),
            Message::assistant("a1", vec![]),
            Message::user("u2"),
            Message::assistant("a2", vec![]),
            Message::user("u3"),
        ];
        let body = request_body(
            "claude",
            &settings(true),
            QueryRequest {
                messages: &messages,
                tools: None,
            },
        );
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(body["system"][0]["cache_control"], ephemeral);
        let marked: Vec<bool> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|turn| turn["content"][0].get("cache_control").is_some())
            .collect();
        assert_eq!(marked, [false, false, true, false, true]);
    }

    #[test]
    fn empty_text_and_unparseable_arguments_still_make_a_valid_request() {
        let messages = [
            Message::user("  "),
            Message::assistant("", vec![]),
            Message::assistant("", vec![call("t1", "{not json")]),
        ];
        let (_, turns) = convert_messages(&messages);
        assert_eq!(
            turns[0].blocks,
            [json!({"type": "text", "text": EMPTY_TEXT})]
        );
        assert_eq!(
            turns[1].blocks,
            [
                json!({"type": "text", "text": EMPTY_TEXT}),
                json!({"type": "tool_use", "id": "t1", "name": "edit",
                       "input": {"raw_arguments": "{not json"}}),
            ]
        );
    }

    #[test]
    fn openai_tools_convert_to_input_schema() {
        let tools = json!([
            {"type": "function", "function": {"name": "goto", "description": "go",
              "parameters": {"type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}}},
            {"type": "function", "function": {"name": "submit", "description": ""}},
            {"name": "native", "input_schema": {"type": "object"}},
        ]);
        assert_eq!(
            convert_tools(&tools),
            json!([
                {"name": "goto", "description": "go", "input_schema":
                    {"type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}},
                {"name": "submit", "description": "", "input_schema": {"type": "object"}},
                {"name": "native", "input_schema": {"type": "object"}},
            ])
        );
    }

    #[test]
    fn responses_with_text_tool_use_and_cache_usage_parse() {
        let body = json!({
            "type": "message", "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "open", "input": {"path": "a.py"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 12, "output_tokens": 30,
                      "cache_read_input_tokens": 900, "cache_creation_input_tokens": 100}
        });
        let response = parse_response(body).unwrap();
        assert_eq!(response.text, "Let me look.");
        assert_eq!(
            response.tool_calls,
            [ToolCall {
                id: "toolu_1".into(),
                name: "open".into(),
                arguments: r#"{"path":"a.py"}"#.into()
            }]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 30,
                cache_read_tokens: 900,
                cache_write_tokens: 100
            }
        );
        assert!(parse_response(json!({"type": "error", "error": {}})).is_err());
        assert!(parse_response(json!({"type": "message"})).is_err());
    }

    #[test]
    fn a_base_ending_in_v1_is_not_doubled() {
        let config = ModelConfig {
            api_base: Some("http://localhost:4000/v1/".into()),
            ..ModelConfig::default()
        };
        let model = AnthropicModel::new("c", &config, None).unwrap();
        assert_eq!(model.url(), "http://localhost:4000/v1/messages");
        let model = AnthropicModel::new("c", &ModelConfig::default(), None).unwrap();
        assert_eq!(model.url(), "https://api.anthropic.com/v1/messages");
    }
}
