//! mini-swe-agent's trajectories (`<id>.traj.json`), both ways: an aci run written as
//! `trajectory_format: mini-swe-agent-1.1` (mini 2.x's shape: `info`, `messages`,
//! `trajectory_format`, `instance_id`), and the actions of mini's own trajectories read back
//! for a replay, from format `mini-swe-agent-1` (1.x: the action is the one ```` ```bash ````
//! block of an assistant message) and `mini-swe-agent-1.1` (2.x: `extra.actions[].command`).

use serde_json::{Map, Value, json};

use super::{HistoryItem, MessageType, Trajectory, TrajectoryStep};
use crate::protocol::{ExitStatus, RecordedStatus};

/// The format this module writes.
pub const FORMAT: &str = "mini-swe-agent-1.1";

/// The step key under which the loop keeps what the mini trajectory needs of an executed
/// command: `{raw_output, returncode, exception_info}`.
const OUTPUT_KEY: &str = "mini_output";

/// Records on `step` the command's output as printed, its exit code and what went wrong, for
/// [`to_mini`].
pub fn record_output(
    step: &mut TrajectoryStep,
    raw_output: &str,
    returncode: i32,
    exception: &str,
) {
    step.extra.insert(
        OUTPUT_KEY.to_owned(),
        json!({ "raw_output": raw_output, "returncode": returncode, "exception_info": exception }),
    );
}

/// mini's name for how a run ended: `Submitted`, `LimitsExceeded` (steps or cost),
/// `TimeExceeded`, `RepeatedFormatError`; aci's own name for the rest.
pub fn mini_exit_status(status: &RecordedStatus) -> String {
    match status.exit() {
        Some(ExitStatus::Submitted) => "Submitted".to_owned(),
        Some(ExitStatus::ExitStepLimit | ExitStatus::ExitCost) => "LimitsExceeded".to_owned(),
        Some(ExitStatus::ExitTotalExecutionTime) => "TimeExceeded".to_owned(),
        Some(ExitStatus::ExitFormat) => "RepeatedFormatError".to_owned(),
        _ => status.to_string(),
    }
}

/// `trajectory` as mini 2.x saves a run: the system and instance messages, then per turn the
/// assistant message (`extra.actions`) and the observation (`extra.raw_output`, `returncode`,
/// `exception_info`), or for a rejected answer only the format error (`extra.interrupt_type`,
/// `extra.model_response`), and an `exit` message with
/// the exit status and the submission. `config` is stored as `info.config`.
pub fn to_mini(trajectory: &Trajectory, instance_id: &str, config: Value) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut pairs = trajectory
        .history
        .iter()
        .filter(|item| matches!(item.message_type, Some(MessageType::Observation)));
    for item in &trajectory.history {
        if let Some(MessageType::SystemPrompt | MessageType::Instance) = item.message_type {
            messages.push(json!({ "role": item.role, "content": item.content }));
        }
    }
    let last = trajectory.trajectory.len().saturating_sub(1);
    let submitted = trajectory
        .info
        .exit_status
        .as_ref()
        .and_then(RecordedStatus::exit)
        == Some(ExitStatus::Submitted);
    for (index, step) in trajectory.trajectory.iter().enumerate() {
        if let Some(error) = &step.format_error {
            // mini keeps only the format error, with the rejected answer in its `extra`.
            messages.push(json!({
                "role": "user",
                "content": error,
                "extra": { "interrupt_type": "FormatError", "model_response": step.response },
            }));
            continue;
        }
        let Some(output) = step.extra.get(OUTPUT_KEY) else {
            continue;
        };
        let observation = pairs.next();
        messages.push(json!({
            "role": "assistant",
            "content": step.response,
            "extra": { "actions": [{ "command": step.action }] },
        }));
        if index == last && submitted {
            continue;
        }
        let extra = output.as_object().cloned().unwrap_or_default();
        messages.push(json!({
            "role": "user",
            "content": observation.map_or("", |item: &HistoryItem| item.content.as_str()),
            "extra": extra,
        }));
    }
    let status = trajectory
        .info
        .exit_status
        .as_ref()
        .map(mini_exit_status)
        .unwrap_or_default();
    let submission = trajectory.info.submission.clone().unwrap_or_default();
    let content = if submitted {
        submission.clone()
    } else {
        status.clone()
    };
    messages.push(json!({
        "role": "exit",
        "content": content,
        "extra": { "exit_status": status, "submission": submission },
    }));
    let stats = &trajectory.info.model_stats;
    json!({
        "info": {
            "model_stats": { "instance_cost": stats.instance_cost, "api_calls": stats.api_calls },
            "config": config,
            "mini_version": format!("aci {}", env!("CARGO_PKG_VERSION")),
            "exit_status": status,
            "submission": submission,
        },
        "messages": messages,
        "trajectory_format": FORMAT,
        "instance_id": instance_id,
    })
}

/// Whether `value` is a mini-swe-agent trajectory (its `trajectory_format` is
/// `mini-swe-agent-1` or `mini-swe-agent-1.1`, or it has `messages` and no `trajectory`).
pub fn is_mini(value: &Value) -> bool {
    match value.get("trajectory_format").and_then(Value::as_str) {
        Some(format) => format.starts_with("mini-swe-agent-1"),
        None => value.get("messages").is_some() && value.get("trajectory").is_none(),
    }
}

/// The actions of a mini trajectory, in order, to replay, each with the assistant message's
/// text when the message had that one action: for each assistant message, its
/// `extra.actions[].command` (2.x; several tool calls give several actions), else the one
/// ```` ```bash ```` (or ```` ```mswea_bash_command ````) block of its text (1.x). A message
/// with no action or more than one block was a format error and is skipped.
///
/// # Errors
/// The value has no `messages` list.
pub fn replay_actions(value: &Value) -> Result<Vec<(String, Option<String>)>, String> {
    let messages = value
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| "a mini-swe-agent trajectory needs a `messages` list".to_owned())?;
    let mut actions = Vec::new();
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        let text = content_text(message.get("content"));
        if let Some(listed) = message.pointer("/extra/actions").and_then(Value::as_array) {
            let commands: Vec<String> = listed
                .iter()
                .filter_map(|action| action.get("command").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            let response = (commands.len() == 1).then(|| text.clone());
            actions.extend(
                commands
                    .into_iter()
                    .map(|command| (command, response.clone())),
            );
            continue;
        }
        if let Some(action) = text_action(&text) {
            actions.push((action, Some(text)));
        }
    }
    Ok(actions)
}

/// A message's text: a string, or the `text` parts of a list of content parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// mini 1.x's rule: exactly one ```` ```bash\s*\n(.*?)\n``` ```` block, trimmed.
fn text_action(text: &str) -> Option<String> {
    let found: Vec<String> = ["bash", "mswea_bash_command"]
        .iter()
        .map(|tag| blocks(text, tag))
        .find(|blocks| !blocks.is_empty())
        .unwrap_or_default();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// Every ```` ```<tag>\s*\n(.*?)\n``` ```` match of `text`, non-overlapping, trimmed.
fn blocks(text: &str, tag: &str) -> Vec<String> {
    let pattern = format!("```{tag}\\s*\\n(.*?)\\n```");
    let Ok(regex) = regex::RegexBuilder::new(&pattern)
        .dot_matches_new_line(true)
        .build()
    else {
        return Vec::new();
    };
    regex
        .captures_iter(text)
        .filter_map(|captures| captures.get(1))
        .map(|group| group.as_str().trim().to_owned())
        .collect()
}

/// An empty JSON object, for a `config` nobody gave.
pub fn no_config() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests;
