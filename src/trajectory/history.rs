//! A trajectory's `history`: the stored conversation, one [`HistoryItem`] per message, as
//! SWE-agent writes it. The agent loop appends to it; history processors shape what is sent.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::Role;

/// What a history entry is, as SWE-agent v1's `message_type`. Unknown values read from other
/// tools' trajectories are kept as [`MessageType::Other`] and written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum MessageType {
    /// `system_prompt`
    SystemPrompt,
    /// `demonstration`
    Demonstration,
    /// `instance`: the first user message, with the problem statement.
    Instance,
    /// `observation`: a command's output.
    Observation,
    /// `action`: the model's response with its command.
    Action,
    /// `thought`: a model response without a command.
    Thought,
    /// `format_error`: the format error message sent on a re-ask.
    FormatError,
    /// Any other value, kept as written.
    Other(String),
}

impl MessageType {
    /// The value as written in `message_type`.
    pub fn as_str(&self) -> &str {
        match self {
            MessageType::SystemPrompt => "system_prompt",
            MessageType::Demonstration => "demonstration",
            MessageType::Instance => "instance",
            MessageType::Observation => "observation",
            MessageType::Action => "action",
            MessageType::Thought => "thought",
            MessageType::FormatError => "format_error",
            MessageType::Other(other) => other,
        }
    }
}

impl From<String> for MessageType {
    fn from(value: String) -> Self {
        match value.as_str() {
            "system_prompt" => MessageType::SystemPrompt,
            "demonstration" => MessageType::Demonstration,
            "instance" => MessageType::Instance,
            "observation" => MessageType::Observation,
            "action" => MessageType::Action,
            "thought" => MessageType::Thought,
            "format_error" => MessageType::FormatError,
            _ => MessageType::Other(value),
        }
    }
}

impl From<MessageType> for String {
    fn from(value: MessageType) -> Self {
        match value {
            MessageType::Other(other) => other,
            known => known.as_str().to_owned(),
        }
    }
}

/// One entry of the history, serialised like SWE-agent's: `role, content, agent, message_type,
/// is_demo?, thought?, action?, tool_calls?, tool_call_ids?`, then any unknown keys read in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryItem {
    /// Who wrote it.
    pub role: Role,
    /// The message text.
    pub content: String,
    /// The agent's name; SWE-agent writes `primary`.
    #[serde(default = "primary")]
    pub agent: String,
    /// What it is. SWE-agent v0 trajectories have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_type: Option<MessageType>,
    /// Part of a demonstration; history processors leave these alone.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_demo: bool,
    /// For model responses: the text around the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// For model responses: the command string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// For function calling: the tool calls, in the provider's shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
    /// For tool results: the ids of the calls they answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_ids: Option<Vec<String>>,
    /// Keys this type does not know (e.g. v1's `thinking_blocks`, `cache_control`), kept so a
    /// read-then-write loses nothing.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HistoryItem {
    /// An entry from agent `primary` with no optional fields set.
    pub fn new(role: Role, content: impl Into<String>, message_type: MessageType) -> Self {
        HistoryItem {
            role,
            content: content.into(),
            agent: primary(),
            message_type: Some(message_type),
            is_demo: false,
            thought: None,
            action: None,
            tool_calls: None,
            tool_call_ids: None,
            extra: Map::new(),
        }
    }
}

fn primary() -> String {
    "primary".to_owned()
}

fn is_false(value: &bool) -> bool {
    !*value
}
