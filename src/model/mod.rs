//! The model layer: [`Model`] is all the agent loop sees of a language model.
//!
//! Four back ends implement it — [`OpenAiModel`], [`AnthropicModel`], [`ReplayModel`] and
//! [`HumanModel`] — and [`from_spec`] picks one from a `--model` spec. The two API back ends
//! are one [`HttpModel`] over a [`WireFormat`] each (`openai.rs`, `anthropic.rs`: request and
//! response shapes only); the HTTP client with its retries, accounting, limits and key handling
//! is shared (`http/`, `cost.rs`).

mod anthropic;
mod config;
mod cost;
mod http;
mod human;
mod openai;
mod replay;

use std::future::Future;

use serde::{Deserialize, Serialize};

pub use anthropic::{AnthropicModel, AnthropicWire};
pub use config::{CacheControlConfig, ModelConfig, Price};
pub use cost::{Ledger, cost_of};
pub use http::{ApiKey, MAX_RESPONSE_BYTES, RetryPolicy};
pub use http::{HttpModel, WireFormat};
pub use human::HumanModel;
pub use openai::{OpenAiModel, OpenAiWire};
pub use replay::{ReplayInput, ReplayModel, ReplayStep};

use crate::hint::Hint;
use crate::protocol::ExitStatus;
pub use crate::protocol::Role;

/// One tool (function) call the model asked for.
///
/// It serialises in the OpenAI shape SWE-agent stores in `history[].tool_calls`:
/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "WireToolCall", from = "WireToolCall")]
pub struct ToolCall {
    /// The call's id, echoed back in the [`Role::Tool`] message that answers it.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments as raw JSON text, exactly as the model sent them (possibly invalid JSON:
    /// the parser upstream turns that into a format error).
    pub arguments: String,
}

/// The OpenAI wire shape of a [`ToolCall`].
#[derive(Serialize, Deserialize)]
struct WireToolCall {
    id: String,
    #[serde(rename = "type", default = "function_type")]
    kind: String,
    function: WireFunction,
}

/// The `function` object inside a [`WireToolCall`].
#[derive(Serialize, Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

fn function_type() -> String {
    "function".to_owned()
}

impl From<ToolCall> for WireToolCall {
    fn from(call: ToolCall) -> Self {
        WireToolCall {
            id: call.id,
            kind: function_type(),
            function: WireFunction {
                name: call.name,
                arguments: call.arguments,
            },
        }
    }
}

impl From<WireToolCall> for ToolCall {
    fn from(wire: WireToolCall) -> Self {
        ToolCall {
            id: wire.id,
            name: wire.function.name,
            arguments: wire.function.arguments,
        }
    }
}

/// One message of the conversation sent to the model (and stored in the trajectory's history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
    /// Tool calls made by an assistant message (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a [`Role::Tool`] message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content.into())
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content.into())
    }

    /// An assistant message, with the tool calls it made.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls,
            ..Self::plain(Role::Assistant, content.into())
        }
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::plain(Role::Tool, content.into())
        }
    }

    fn plain(role: Role, content: String) -> Self {
        Message {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// Tokens used by one call.
///
/// The four counts are disjoint: `input_tokens` are the prompt tokens billed at the full input
/// price, so the whole prompt is [`Usage::prompt_tokens`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the prompt cache.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the prompt cache (Anthropic only).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// The whole prompt: uncached, cache-read and cache-written tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// What one [`Model::query`] returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// The answer's text (the thought, and with `thought_action` the fenced action too).
    pub text: String,
    /// Tool calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens of this call.
    pub usage: Usage,
    /// Cost of this call in dollars (0 when the price is unknown).
    pub cost: f64,
    /// Set by the replay and human models: the action itself, which bypasses the parser.
    pub raw_action: Option<String>,
}

/// Per-instance totals, stored as `info.model_stats` in the trajectory.
///
/// Field names follow SWE-agent's `model_stats`. `tokens_sent` counts the whole prompt, cached
/// parts included; `cache_read_tokens` and `cache_write_tokens` break the cached parts out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelStats {
    /// Dollars spent on this instance.
    pub instance_cost: f64,
    /// Prompt tokens sent, cached ones included.
    pub tokens_sent: u64,
    /// Completion tokens received.
    pub tokens_received: u64,
    /// Prompt tokens read from the prompt cache (a subset of `tokens_sent`).
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the prompt cache (a subset of `tokens_sent`).
    pub cache_write_tokens: u64,
    /// Successful model calls (for replay and human: actions handed out).
    pub api_calls: u64,
}

/// One request to a model.
#[derive(Debug, Clone, Copy)]
pub struct QueryRequest<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// Tools in the OpenAI format, `[{"type":"function","function":{name,description,parameters}}]`,
    /// or `None` for a plain-text answer. The Anthropic back end converts them.
    pub tools: Option<&'a serde_json::Value>,
}

/// A language model, or something that stands in for one.
///
/// Create one per instance: [`Model::stats`] and the limits are per instance.
pub trait Model: Send {
    /// The model's spec, e.g. `openai/gpt-4o` or `replay`.
    fn name(&self) -> &str;

    /// Asks for the next answer. Retries transient failures itself; an `Err` ends the instance
    /// with [`ModelError::exit_status`].
    ///
    /// The call limit is checked before a request is sent. A call that takes the instance over
    /// its cost limit is counted in [`Model::stats`] and then returns
    /// [`ModelError::CostLimit`] instead of its answer, as SWE-agent does.
    fn query(
        &mut self,
        request: QueryRequest<'_>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + Send;

    /// Totals so far for this instance.
    fn stats(&self) -> &ModelStats;
}

/// Why a model could not answer. Messages never contain an API key.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The instance's cost limit was exceeded (the call's cost is already in the stats).
    #[error("instance cost ${cost:.4} exceeds the limit of ${limit:.2}")]
    CostLimit {
        /// Dollars spent so far.
        cost: f64,
        /// `model.per_instance_cost_limit`.
        limit: f64,
    },
    /// The instance already made `model.per_instance_call_limit` calls.
    #[error("instance made {calls} model calls, the limit is {limit}")]
    CallLimit {
        /// Calls made so far.
        calls: u64,
        /// `model.per_instance_call_limit`.
        limit: u64,
    },
    /// The prompt no longer fits the model's context window.
    #[error("context window exceeded: {message}")]
    ContextWindow {
        /// What the API said.
        message: String,
    },
    /// The API kept failing (retries spent) or refused the request (a non-retryable 4xx).
    #[error("model API request failed ({}) after {attempts} attempt(s): {message}", status_text(*.status))]
    Api {
        /// The last HTTP status, or `None` for a timeout or connection error.
        status: Option<u16>,
        /// What went wrong.
        message: String,
        /// Requests made.
        attempts: u32,
        /// What to do about it, where that is known ([`Hint`](crate::hint::Hint)).
        hint: Option<String>,
    },
    /// The API's answers could not be understood, on every attempt.
    #[error("model API returned an unreadable response after {attempts} attempt(s): {message}")]
    Malformed {
        /// What could not be parsed.
        message: String,
        /// Requests made.
        attempts: u32,
    },
    /// The model cannot be set up: bad spec, missing key, invalid config.
    #[error("{message}")]
    Config {
        /// What is wrong.
        message: String,
        /// What to do about it ([`Hint`](crate::hint::Hint)).
        hint: Option<String>,
    },
    /// Input ended or the run was interrupted before an answer came (e.g. the human model's
    /// stdin closed).
    #[error("interrupted: {message}")]
    Interrupted {
        /// What happened.
        message: String,
    },
}

fn status_text(status: Option<u16>) -> String {
    match status {
        Some(code) => format!("HTTP {code}"),
        None => "no HTTP response".to_owned(),
    }
}

impl ModelError {
    /// The trajectory's `exit_status` for an instance that ends with this error
    /// (reference §8).
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            ModelError::CostLimit { .. } | ModelError::CallLimit { .. } => ExitStatus::ExitCost,
            ModelError::ContextWindow { .. } => ExitStatus::ExitContext,
            ModelError::Api { .. } | ModelError::Malformed { .. } => ExitStatus::ExitApi,
            ModelError::Config { .. } => ExitStatus::ExitError,
            ModelError::Interrupted { .. } => ExitStatus::EarlyExit,
        }
    }

    /// True when every other instance of the run would fail the same way (bad spec, missing
    /// or rejected key), so a batch should stop instead of going on.
    pub fn is_run_level(&self) -> bool {
        match self {
            ModelError::Config { .. } => true,
            ModelError::Api { status, .. } => matches!(status, Some(401 | 403)),
            _ => false,
        }
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        ModelError::Config {
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn config_with_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        ModelError::Config {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

impl Hint for ModelError {
    fn hint(&self) -> Option<String> {
        match self {
            ModelError::Api { hint, .. } | ModelError::Config { hint, .. } => hint.clone(),
            _ => None,
        }
    }
}

/// Any of the four back ends, chosen at run time by [`from_spec`].
#[derive(Debug)]
pub enum AnyModel {
    /// `openai/<name>`.
    OpenAi(OpenAiModel),
    /// `anthropic/<name>`.
    Anthropic(AnthropicModel),
    /// `replay`.
    Replay(ReplayModel),
    /// `human`.
    Human(HumanModel),
}

impl Model for AnyModel {
    fn name(&self) -> &str {
        match self {
            AnyModel::OpenAi(model) => model.name(),
            AnyModel::Anthropic(model) => model.name(),
            AnyModel::Replay(model) => model.name(),
            AnyModel::Human(model) => model.name(),
        }
    }

    async fn query(&mut self, request: QueryRequest<'_>) -> Result<ModelResponse, ModelError> {
        match self {
            AnyModel::OpenAi(model) => model.query(request).await,
            AnyModel::Anthropic(model) => model.query(request).await,
            AnyModel::Replay(model) => model.query(request).await,
            AnyModel::Human(model) => model.query(request).await,
        }
    }

    fn stats(&self) -> &ModelStats {
        match self {
            AnyModel::OpenAi(model) => model.stats(),
            AnyModel::Anthropic(model) => model.stats(),
            AnyModel::Replay(model) => model.stats(),
            AnyModel::Human(model) => model.stats(),
        }
    }
}

/// The environment variable holding the OpenAI (or OpenAI-compatible server's) key.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// The environment variable holding the Anthropic key.
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";

/// Builds the model a `--model` spec names: `replay`, `human`, `openai/<name>` or
/// `anthropic/<name>`.
///
/// Keys come from [`OPENAI_API_KEY`] / [`ANTHROPIC_API_KEY`] only. A key is required for the
/// provider's own endpoint; with `config.api_base` set it is optional (local servers such as
/// vLLM, Ollama or llama.cpp need none) and sent only when the variable is set. `replay` needs
/// `replay`; `human` reads stdin.
pub fn from_spec(
    spec: &str,
    config: &ModelConfig,
    replay: Option<ReplayInput>,
) -> Result<AnyModel, ModelError> {
    config.validate()?;
    let spec = spec.trim();
    if spec == "replay" {
        let input = replay.ok_or_else(|| {
            ModelError::config_with_hint(
                "the replay model needs actions to replay",
                "pass --replay FILE (or --replay-dir DIR for batch)",
            )
        })?;
        return Ok(AnyModel::Replay(ReplayModel::new(input, config)));
    }
    if spec == "human" {
        return Ok(AnyModel::Human(HumanModel::stdin(config)));
    }
    match spec.split_once('/') {
        Some(("openai", name)) if !name.is_empty() => {
            Ok(AnyModel::OpenAi(OpenAiModel::from_env(name, config)?))
        }
        Some(("anthropic", name)) if !name.is_empty() => {
            Ok(AnyModel::Anthropic(AnthropicModel::from_env(name, config)?))
        }
        _ => Err(ModelError::config_with_hint(
            format!("unknown model spec `{spec}`"),
            format!(
                "use `replay`, `human`, `openai/<name>` or `anthropic/<name>` (e.g. `openai/{spec}`)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_a_reference_exit_status() {
        let cases = [
            (
                ModelError::CostLimit {
                    cost: 3.5,
                    limit: 3.0,
                },
                "exit_cost",
            ),
            (ModelError::CallLimit { calls: 5, limit: 5 }, "exit_cost"),
            (
                ModelError::ContextWindow {
                    message: "too long".into(),
                },
                "exit_context",
            ),
            (
                ModelError::Api {
                    status: Some(500),
                    message: "boom".into(),
                    attempts: 7,
                    hint: None,
                },
                "exit_api",
            ),
            (
                ModelError::Malformed {
                    message: "eof".into(),
                    attempts: 7,
                },
                "exit_api",
            ),
            (ModelError::config("bad"), "exit_error"),
            (
                ModelError::Interrupted {
                    message: "eof".into(),
                },
                "early_exit",
            ),
        ];
        for (error, status) in cases {
            assert_eq!(error.exit_status().as_str(), status, "{error}");
        }
    }

    #[test]
    fn api_error_display_names_status_and_attempts() {
        let error = ModelError::Api {
            status: Some(503),
            message: "overloaded".into(),
            attempts: 3,
            hint: None,
        };
        assert_eq!(
            error.to_string(),
            "model API request failed (HTTP 503) after 3 attempt(s): overloaded"
        );
        let error = ModelError::Api {
            status: None,
            message: "timed out".into(),
            attempts: 1,
            hint: None,
        };
        assert!(error.to_string().contains("no HTTP response"));
    }

    #[test]
    fn tool_calls_serialise_in_the_openai_history_shape() {
        let message = Message::assistant(
            "thinking",
            vec![ToolCall {
                id: "call_1".into(),
                name: "open".into(),
                arguments: r#"{"path":"a.py"}"#.into(),
            }],
        );
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "role": "assistant",
                "content": "thinking",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "open", "arguments": "{\"path\":\"a.py\"}"}}]
            })
        );
        let back: Message = serde_json::from_value(value).unwrap();
        assert_eq!(back, message);
        let tool = serde_json::to_value(Message::tool("call_1", "ok")).unwrap();
        assert_eq!(
            tool,
            serde_json::json!({"role": "tool", "content": "ok", "tool_call_id": "call_1"})
        );
    }

    #[test]
    fn model_stats_use_swe_agent_field_names() {
        let value = serde_json::to_value(ModelStats::default()).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "instance_cost",
            "tokens_sent",
            "tokens_received",
            "api_calls",
        ] {
            assert!(keys.contains(&key), "missing {key}");
        }
    }

    #[test]
    fn unknown_specs_are_config_errors_with_a_hint() {
        let config = ModelConfig::default();
        for spec in ["gpt-4o", "openai/", "bedrock/claude", ""] {
            let error = from_spec(spec, &config, None).unwrap_err();
            assert!(matches!(error, ModelError::Config { .. }), "{spec}");
            assert_eq!(
                (error.hint().is_some(), error.to_string().contains("hint")),
                (true, false),
                "{error}"
            );
        }
    }

    #[test]
    fn replay_spec_without_input_is_a_config_error() {
        let error = from_spec("replay", &ModelConfig::default(), None).unwrap_err();
        assert_eq!(
            (error.to_string(), error.hint().as_deref()),
            (
                "the replay model needs actions to replay".to_owned(),
                Some("pass --replay FILE (or --replay-dir DIR for batch)")
            )
        );
        assert!(error.is_run_level());
    }

    #[test]
    fn replay_spec_with_input_builds_a_replay_model() {
        let input = ReplayInput::parse("[\"ls\"]").unwrap();
        let model = from_spec("replay", &ModelConfig::default(), Some(input)).unwrap();
        assert!(matches!(model, AnyModel::Replay(_)));
        assert_eq!(model.name(), "replay");
    }

    #[test]
    fn openai_spec_with_an_api_base_needs_no_key() {
        let config = ModelConfig {
            api_base: Some("http://127.0.0.1:9/v1".into()),
            ..ModelConfig::default()
        };
        let model = from_spec("openai/qwen2.5-coder", &config, None).unwrap();
        assert_eq!(model.name(), "openai/qwen2.5-coder");
    }
}
