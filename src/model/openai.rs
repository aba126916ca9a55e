//! `openai/<name>`: the Chat Completions API, with function calling or plain text. With
//! `model.api_base` it talks to any OpenAI-compatible server (vLLM, Ollama, llama.cpp,
//! LiteLLM).

use serde_json::{Map, Value, json};

use super::config::merge_extra;
use super::http::{HttpModel, WireFormat};
use super::{
    Message, ModelConfig, ModelResponse, OPENAI_API_KEY, QueryRequest, Role, ToolCall, Usage,
};

/// OpenAI's own endpoint, used when `model.api_base` is unset.
const DEFAULT_API_BASE: &str = "https://api.openai.com/v1";

/// A model behind the Chat Completions API.
pub type OpenAiModel = HttpModel<OpenAiWire>;

/// The Chat Completions wire format, with the request fields that come from the config.
#[derive(Debug, Clone)]
pub struct OpenAiWire {
    temperature: f64,
    top_p: Option<f64>,
    max_output_tokens: u32,
    /// `max_completion_tokens` for OpenAI itself (its newer models refuse `max_tokens`),
    /// `max_tokens` for compatible servers (some know only that one).
    max_tokens_field: &'static str,
    extra_body: Map<String, Value>,
}

impl WireFormat for OpenAiWire {
    const PROVIDER: &'static str = "openai";
    const KEY_VAR: &'static str = OPENAI_API_KEY;
    const KEY_HEADER: (&'static str, &'static str) = ("authorization", "Bearer ");
    const HEADERS: &'static [(&'static str, &'static str)] = &[];

    fn url(api_base: Option<&str>) -> String {
        let base = api_base.unwrap_or(DEFAULT_API_BASE);
        format!("{}/chat/completions", base.trim_end_matches('/'))
    }

    fn from_config(config: &ModelConfig) -> Self {
        OpenAiWire {
            temperature: config.temperature,
            top_p: config.top_p,
            max_output_tokens: config.max_output_tokens,
            max_tokens_field: if config.api_base.is_none() {
                "max_completion_tokens"
            } else {
                "max_tokens"
            },
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

/// The Chat Completions request body.
fn request_body(model: &str, settings: &OpenAiWire, request: QueryRequest<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
    body.insert("messages".into(), Value::Array(messages));
    body.insert("temperature".into(), json!(settings.temperature));
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    body.insert(
        settings.max_tokens_field.into(),
        json!(settings.max_output_tokens),
    );
    if let Some(tools) = request.tools {
        body.insert("tools".into(), tools.clone());
    }
    merge_extra(&mut body, &settings.extra_body);
    Value::Object(body)
}

/// One message in the Chat Completions shape.
fn wire_message(message: &Message) -> Value {
    match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Assistant if message.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": message.content})
        }
        Role::Assistant => {
            // Content may be null only when there are tool calls.
            let content = if message.content.is_empty() {
                Value::Null
            } else {
                json!(message.content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": message.tool_calls})
        }
    }
}

/// Reads `choices[0].message` and `usage` from a 2xx body.
fn parse_response(value: Value) -> Result<ModelResponse, String> {
    if let Some(error) = value.get("error").filter(|error| !error.is_null()) {
        return Err(format!("the response carries an error: {error}"));
    }
    let message = value
        .pointer("/choices/0/message")
        .ok_or("the response has no choices[0].message")?;
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        // Some servers send content parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        Some(other) => return Err(format!("message.content is not text: {other}")),
    };
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(index, call)| parse_tool_call(index, call))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("message.tool_calls is not a list: {other}")),
    };
    Ok(ModelResponse {
        text,
        tool_calls,
        usage: parse_usage(value.get("usage")),
        cost: 0.0,
        raw_action: None,
    })
}

/// One `tool_calls[]` entry. Arguments stay raw text, even when they are not valid JSON.
fn parse_tool_call(index: usize, call: &Value) -> Result<ToolCall, String> {
    let name = call
        .pointer("/function/name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("tool_calls[{index}] has no function.name"))?;
    let arguments = match call.pointer("/function/arguments") {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        // Some compatible servers send an object instead of JSON text.
        Some(other) => other.to_string(),
    };
    let id = match call.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("call_{index}"),
    };
    Ok(ToolCall {
        id,
        name: name.to_owned(),
        arguments,
    })
}

/// `prompt_tokens` includes the cached ones, which are counted apart.
fn parse_usage(usage: Option<&Value>) -> Usage {
    let Some(usage) = usage else {
        return Usage::default();
    };
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let prompt = count("/prompt_tokens");
    let cached = count("/prompt_tokens_details/cached_tokens").min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: count("/completion_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ApiKey;

    fn settings() -> OpenAiWire {
        OpenAiWire {
            temperature: 0.0,
            top_p: None,
            max_output_tokens: 100,
            max_tokens_field: "max_tokens",
            extra_body: Map::new(),
        }
    }

    #[test]
    fn the_request_carries_messages_tool_calls_and_tool_results() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "open".into(),
            arguments: r#"{"path":"a.py"}"#.into(),
        };
        let messages = [
            Message::system("sys"),
            Message::user("task"),
            Message::assistant("", vec![call]),
            Message::tool("call_1", "[File: a.py]"),
        ];
        let tools = json!([{"type": "function", "function": {"name": "open"}}]);
        let body = request_body(
            "m",
            &settings(),
            QueryRequest {
                messages: &messages,
                tools: Some(&tools),
            },
        );
        assert_eq!(
            body,
            json!({
                "model": "m",
                "temperature": 0.0,
                "max_tokens": 100,
                "tools": tools,
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "task"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "open", "arguments": "{\"path\":\"a.py\"}"}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "[File: a.py]"},
                ],
            })
        );
    }

    #[test]
    fn top_p_and_extra_body_are_applied_and_null_removes_a_field() {
        let mut settings = settings();
        settings.top_p = Some(0.9);
        settings
            .extra_body
            .insert("temperature".into(), Value::Null);
        settings.extra_body.insert("seed".into(), json!(7));
        let body = request_body(
            "m",
            &settings,
            QueryRequest {
                messages: &[],
                tools: None,
            },
        );
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["seed"], json!(7));
        assert!(body.get("temperature").is_none());
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn responses_with_text_tool_calls_and_cached_usage_parse() {
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "goto", "arguments": "{\"line\": 3"}},
                {"type": "function", "function": {"name": "submit", "arguments": {"x": 1}}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7,
                      "prompt_tokens_details": {"cached_tokens": 60}}
        });
        let response = parse_response(body).unwrap();
        assert_eq!(response.text, "");
        assert_eq!(response.tool_calls[0].arguments, "{\"line\": 3");
        assert_eq!(response.tool_calls[1].id, "call_1");
        assert_eq!(response.tool_calls[1].arguments, "{\"x\":1}");
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 40,
                output_tokens: 7,
                cache_read_tokens: 60,
                cache_write_tokens: 0
            }
        );
    }

    #[test]
    fn bodies_without_a_message_are_malformed() {
        assert!(parse_response(json!({"choices": []})).is_err());
        assert!(parse_response(json!({"error": {"message": "x"}})).is_err());
        let plain = parse_response(json!({"choices": [{"message": {"content": "hi"}}]})).unwrap();
        assert_eq!(plain.text, "hi");
        assert_eq!(plain.usage, Usage::default());
    }

    #[test]
    fn the_default_endpoint_uses_max_completion_tokens_and_a_base_uses_max_tokens() {
        let key = Some(ApiKey::new("sk-x"));
        let model = OpenAiModel::new("gpt-4o", &ModelConfig::default(), key).unwrap();
        assert_eq!(model.url(), "https://api.openai.com/v1/chat/completions");
        assert_eq!(model.wire().max_tokens_field, "max_completion_tokens");
        assert!(!format!("{model:?}").contains("sk-x"));
        let config = ModelConfig {
            api_base: Some("http://localhost:11434/v1/".into()),
            ..ModelConfig::default()
        };
        let model = OpenAiModel::new("llama3", &config, None).unwrap();
        assert_eq!(model.url(), "http://localhost:11434/v1/chat/completions");
        assert_eq!(model.wire().max_tokens_field, "max_tokens");
    }
}
