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

/// The step key under which the loop keeps which tool call of its answer a command came from:
/// `{index, tool_call_id}`, and on the answer's first command the answer itself
/// (`message: {content, tool_calls}`).
const CALL_KEY: &str = "mini_call";

/// Records on `step` that its command was the `index`th of the answer `text` with `tool_calls`
/// (`(id, name, arguments)`; none for a text answer), for [`to_mini`].
pub fn record_call(
    step: &mut TrajectoryStep,
    index: usize,
    text: &str,
    tool_calls: &[(&str, &str, &str)],
) {
    let mut call = json!({ "index": index });
    if let Some((id, _, _)) = tool_calls.get(index) {
        call["tool_call_id"] = json!(id);
    }
    if index == 0 && !tool_calls.is_empty() {
        let calls: Vec<Value> = tool_calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({
                    "id": id,
                    "type": "function",
                    "function": { "name": name, "arguments": arguments },
                })
            })
            .collect();
        let content = if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        };
        call["message"] = json!({ "content": content, "tool_calls": calls });
    }
    step.extra.insert(CALL_KEY.to_owned(), call);
}

/// The position of `step`'s command in its answer (0 for the first, or when not recorded).
fn call_index(step: &TrajectoryStep) -> u64 {
    step.extra
        .get(CALL_KEY)
        .and_then(|call| call.get("index"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The id of the tool call `step`'s command came from.
fn tool_call_id(step: &TrajectoryStep) -> Option<&Value> {
    step.extra.get(CALL_KEY)?.get("tool_call_id")
}

/// mini's `extra.actions` of the OpenAI `tool_calls`: each call's `command` and id.
fn call_actions(calls: &Value) -> Value {
    let actions: Vec<Value> = calls
        .as_array()
        .into_iter()
        .flatten()
        .map(|call| {
            let arguments = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str::<Value>(text).ok());
            let command = match arguments.as_ref().and_then(|a| a.get("command")) {
                Some(Value::String(text)) => Value::String(text.clone()),
                Some(other) => Value::String(other.to_string()),
                None => Value::String(String::new()),
            };
            json!({ "command": command, "tool_call_id": call.get("id").cloned().unwrap_or(Value::Null) })
        })
        .collect();
    Value::Array(actions)
}

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
/// assistant message (`extra.actions`, and its `tool_calls` in tool-call mode) and an
/// observation per action (`extra.raw_output`, `returncode`, `exception_info`; a `tool`
/// message with its `tool_call_id` in tool-call mode), or for a rejected answer only the format
/// error (`extra.interrupt_type`, `extra.model_response`), and an `exit` message with the exit
/// status and the submission; the turn that submits has no observations, as in mini. `config`
/// is stored as `info.config`.
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
    let submitted = trajectory
        .info
        .exit_status
        .as_ref()
        .and_then(RecordedStatus::exit)
        == Some(ExitStatus::Submitted);
    let steps = &trajectory.trajectory;
    let mut at = 0;
    while at < steps.len() {
        let step = &steps[at];
        if let Some(error) = &step.format_error {
            // mini keeps only the format error, with the rejected answer in its `extra`.
            messages.push(json!({
                "role": "user",
                "content": error,
                "extra": { "interrupt_type": "FormatError", "model_response": step.response },
            }));
            at += 1;
            continue;
        }
        if !step.extra.contains_key(OUTPUT_KEY) {
            at += 1;
            continue;
        }
        // The steps of one answer: this one and the later calls of the same answer.
        let mut next = at + 1;
        while next < steps.len()
            && call_index(&steps[next]) > 0
            && steps[next].extra.contains_key(OUTPUT_KEY)
        {
            next += 1;
        }
        let group = &steps[at..next];
        let actions: Vec<Value> = group
            .iter()
            .map(|step| {
                let mut action = json!({ "command": step.action });
                if let Some(id) = tool_call_id(step) {
                    action["tool_call_id"] = id.clone();
                }
                action
            })
            .collect();
        let mut assistant = json!({
            "role": "assistant",
            "content": step.response,
            "extra": { "actions": actions },
        });
        if let Some(message) = step.extra.get(CALL_KEY).and_then(|c| c.get("message")) {
            let calls = message.get("tool_calls").cloned().unwrap_or(Value::Null);
            // mini lists every call of the answer, also those a submission kept from running.
            assistant["extra"]["actions"] = call_actions(&calls);
            assistant["content"] = message.get("content").cloned().unwrap_or(Value::Null);
            assistant["tool_calls"] = calls;
        }
        messages.push(assistant);
        let observations: Vec<Option<&HistoryItem>> = group.iter().map(|_| pairs.next()).collect();
        at = next;
        if at == steps.len() && submitted {
            continue;
        }
        for (step, observation) in group.iter().zip(observations) {
            let extra = step
                .extra
                .get(OUTPUT_KEY)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut message = json!({
                "role": "user",
                "content": observation.map_or("", |item: &HistoryItem| item.content.as_str()),
                "extra": extra,
            });
            if let Some(id) = tool_call_id(step) {
                message["role"] = json!("tool");
                message["tool_call_id"] = id.clone();
            }
            messages.push(message);
        }
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

/// Whether `value` is a mini-swe-agent trajectory: its `trajectory_format` is
/// `mini-swe-agent-1` or `mini-swe-agent-1.1`, or it has `messages` and no `trajectory`, or it
/// is a bare list of messages (objects with a `role`), as mini's pre-releases and its test data
/// save `agent.messages`.
pub fn is_mini(value: &Value) -> bool {
    if let Some(items) = value.as_array() {
        return !items.is_empty() && items.iter().all(|item| item.get("role").is_some());
    }
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
/// The value is a trajectory's `messages` list, or the bare list itself.
///
/// # Errors
/// The value is neither a list nor has a `messages` list.
pub fn replay_actions(value: &Value) -> Result<Vec<(String, Option<String>)>, String> {
    let messages = value
        .as_array()
        .or_else(|| value.get("messages").and_then(Value::as_array))
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
        if let Some((_, action)) = split_action(&text) {
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

/// mini 1.x's rule, also mini 2.x's text mode: the one ```` ```bash\s*\n(.*?)\n``` ```` (or
/// ```` ```mswea_bash_command ````) block of an answer, trimmed, and the answer without that
/// block, trimmed (the thought). `None` when the answer has no such block or more than one:
/// mini rejected it as a format error.
pub fn split_action(text: &str) -> Option<(String, String)> {
    let found = ["bash", "mswea_bash_command"]
        .iter()
        .map(|tag| blocks(text, tag))
        .find(|blocks| !blocks.is_empty())
        .unwrap_or_default();
    match found.as_slice() {
        [(range, command)] => {
            let thought = format!("{}{}", &text[..range.start], &text[range.end..]);
            Some((thought.trim().to_owned(), command.clone()))
        }
        _ => None,
    }
}

/// Every ```` ```<tag>\s*\n(.*?)\n``` ```` match of `text`, non-overlapping: where the whole
/// block is, and its command trimmed.
fn blocks(text: &str, tag: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let pattern = format!("```{tag}\\s*\\n(.*?)\\n```");
    let Ok(regex) = regex::RegexBuilder::new(&pattern)
        .dot_matches_new_line(true)
        .build()
    else {
        return Vec::new();
    };
    regex
        .captures_iter(text)
        .filter_map(|captures| Some((captures.get(0)?.range(), captures.get(1)?)))
        .map(|(range, group)| (range, group.as_str().trim().to_owned()))
        .collect()
}

/// An empty JSON object, for a `config` nobody gave.
pub fn no_config() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests;
