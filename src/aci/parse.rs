//! Model output into an action: SWE-agent's `thought_action` parser (the last top-level fenced
//! code block is the action) and v1's function-calling conversion (a tool call becomes the
//! command line a `thought_action` model would have typed).

use serde_json::Value;

use super::args::{double_quote_escape, shlex_quote};
use super::registry::{CommandSpec, Registry, placeholders};

/// What kind of format error happened; the config's format-error template keys on
/// [`ErrorCode::as_str`] (v1 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// No tool call at all.
    Missing,
    /// More than one tool call.
    Multiple,
    /// A required argument is absent.
    MissingArg,
    /// An argument the command does not take.
    UnexpectedArg,
    /// The arguments are not a JSON object.
    InvalidJson,
    /// The tool name is not an enabled command.
    InvalidCommand,
    /// No fenced code block in a `thought_action` answer.
    NoAction,
    /// Not exactly one match of the `action_regex` parser.
    ActionCount,
}

impl ErrorCode {
    /// The code as SWE-agent spells it: `missing`, `multiple`, `missing_arg`,
    /// `unexpected_arg`, `invalid_json`, `invalid_command`, `no_action`; and ours,
    /// `action_count`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Multiple => "multiple",
            Self::MissingArg => "missing_arg",
            Self::UnexpectedArg => "unexpected_arg",
            Self::InvalidJson => "invalid_json",
            Self::InvalidCommand => "invalid_command",
            Self::NoAction => "no_action",
            Self::ActionCount => "action_count",
        }
    }
}

/// Model output that could not be turned into an action (tier 1: the model is asked again).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FormatError {
    /// What went wrong, for the error template.
    pub error_code: ErrorCode,
    /// SWE-agent's exception message (the template's `exception_message`).
    pub message: String,
    /// The actions found when there were too many (the template's `actions`).
    pub actions: Vec<String>,
}

impl FormatError {
    fn new(error_code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error_code,
            message: message.into(),
            actions: Vec::new(),
        }
    }
}

/// Splits a `thought_action` answer into `(thought, action)`: the action is the text of the
/// last top-level fenced block, the thought everything outside that block (fences excluded).
///
/// Fences are matched as SWE-agent's ``^```(\S*)\s*\n|^```\s*$`` (MULTILINE): a line starting
/// with three backticks and an info string opens a block; a bare fence closes the innermost
/// open block, or opens one when none is open. The opening match eats blank lines after it.
pub fn thought_action(text: &str) -> Result<(String, String), FormatError> {
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut last = None;
    let mut at = 0;
    while at < text.len() {
        match fence_at(text, at) {
            Some((end, info)) => {
                if !stack.is_empty() && info.is_none_or(str::is_empty) {
                    if let Some(open) = stack.pop()
                        && stack.is_empty()
                    {
                        last = Some((open, (at, end)));
                    }
                } else if info.is_some() {
                    stack.push((at, end));
                }
                at = if text[..end].ends_with('\n') {
                    end
                } else {
                    next_line(text, end)
                };
            }
            None => at = next_line(text, at),
        }
    }
    let ((open_start, open_end), (close_start, close_end)) = last.ok_or_else(|| {
        FormatError::new(ErrorCode::NoAction, "No action found in model response.")
    })?;
    let thought = format!("{}{}", &text[..open_start], &text[close_end..]);
    Ok((thought, text[open_end..close_start].to_owned()))
}

/// The start of the line after `at` (or the end of the text).
fn next_line(text: &str, at: usize) -> usize {
    text[at..]
        .find('\n')
        .map_or(text.len(), |offset| at + offset + 1)
}

/// Python's `str.isspace`, which `\s` follows (it adds U+001C..U+001F to Rust's set).
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Matches a fence at line start `at`: returns the match end and group 1 (`None` when only the
/// ``^```\s*$`` alternative matched).
fn fence_at(text: &str, at: usize) -> Option<(usize, Option<&str>)> {
    let after = at + 3;
    if !text[at..].starts_with("```") {
        return None;
    }
    let span = |from: usize, keep: fn(char) -> bool| {
        text[from..]
            .char_indices()
            .find(|&(_, c)| !keep(c))
            .map_or(text.len(), |(i, _)| from + i)
    };
    let info_end = span(after, |c| !is_python_space(c));
    let blank_end = span(info_end, is_python_space);
    if let Some(newline) = text[info_end..blank_end].rfind('\n') {
        return Some((info_end + newline + 1, Some(&text[after..info_end])));
    }
    (info_end == after && blank_end == text.len()).then_some((text.len(), None))
}

/// Splits an answer by mini-swe-agent's text-mode rule: `regex` (with `.` matching newlines)
/// must match exactly once, and its first group, trimmed, is the action; the thought is the text
/// around the match. Otherwise the error says `Expected exactly 1 action, found N.` and carries
/// the actions found.
pub fn action_regex(text: &str, regex: &regex::Regex) -> Result<(String, String), FormatError> {
    let matches: Vec<(std::ops::Range<usize>, String)> = regex
        .captures_iter(text)
        .filter_map(|captures| {
            let whole = captures.get(0)?.range();
            let action = captures.get(1).map_or("", |group| group.as_str());
            Some((whole, action.trim_matches(is_python_space).to_owned()))
        })
        .collect();
    match matches.as_slice() {
        [(range, action)] => {
            let thought = format!("{}{}", &text[..range.start], &text[range.end..]);
            Ok((thought, action.clone()))
        }
        _ => Err(FormatError {
            actions: matches.iter().map(|(_, action)| action.clone()).collect(),
            ..FormatError::new(
                ErrorCode::ActionCount,
                format!("Expected exactly 1 action, found {}.", matches.len()),
            )
        }),
    }
}

/// Compiles `agent.action_regex` with `.` matching newlines (Python's `re.DOTALL`).
///
/// # Errors
/// The pattern is empty or not a valid regex (the message says which).
pub fn compile_action_regex(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.is_empty() {
        return Err("agent.action_regex is empty; parser action_regex needs one".to_owned());
    }
    regex::RegexBuilder::new(pattern)
        .dot_matches_new_line(true)
        .build()
        .map_err(|error| {
            // The regex crate's message spans lines (the pattern, a caret, the error); the
            // last line says what is wrong.
            let text = error.to_string();
            let reason = text.lines().last().unwrap_or_default();
            let reason = reason.trim().trim_start_matches("error: ");
            format!("agent.action_regex: `{pattern}` is not a valid regex: {reason}")
        })
}

/// One tool call from a function-calling model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The function name.
    pub name: String,
    /// The arguments as the model sent them (a JSON object, as text).
    pub arguments: String,
}

/// Checks that there is exactly one tool call (else `missing`/`multiple`) and converts it with
/// [`function_call_to_command`].
pub fn function_calls_to_command(
    registry: &Registry,
    calls: &[ToolCall],
) -> Result<String, FormatError> {
    match calls {
        [call] => function_call_to_command(registry, &call.name, &call.arguments),
        _ => {
            let code = if calls.is_empty() {
                ErrorCode::Missing
            } else {
                ErrorCode::Multiple
            };
            let message = format!(
                "Expected exactly one tool call in model response - received {} tool calls",
                calls.len()
            );
            Err(FormatError::new(code, message))
        }
    }
}

/// The commands of an answer by mini-swe-agent's tool-call rules (`bash_tool_calls`): at
/// least one call; every call must be of the tool `bash`, with a JSON object of arguments that
/// has `command`; the commands in the calls' order (a `command` that is not a string is written
/// as JSON). The first call that breaks a rule rejects the whole answer with mini's words, the
/// faults of that call run together: `Error parsing tool call arguments: <why>.`,
/// `Unknown tool '<name>'.`, `Missing 'command' argument in bash tool call.` (the reason a JSON
/// text does not parse is serde's, not Python's). Other arguments are ignored, as mini does.
pub fn bash_tool_calls(calls: &[ToolCall]) -> Result<Vec<String>, FormatError> {
    if calls.is_empty() {
        return Err(FormatError::new(
            ErrorCode::ActionCount,
            "No tool calls found in the response. Every response MUST include at least one tool call.",
        ));
    }
    let mut commands = Vec::new();
    for call in calls {
        let mut message = String::new();
        let mut code = None;
        let arguments = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(value) => value,
            Err(error) => {
                message.push_str(&format!("Error parsing tool call arguments: {error}."));
                code = Some(ErrorCode::InvalidJson);
                Value::Null
            }
        };
        if call.name != "bash" {
            message.push_str(&format!("Unknown tool '{}'.", call.name));
            code = code.or(Some(ErrorCode::InvalidCommand));
        }
        let command = arguments.get("command");
        if command.is_none() {
            message.push_str("Missing 'command' argument in bash tool call.");
            code = code.or(Some(ErrorCode::MissingArg));
        }
        if let Some(code) = code {
            return Err(FormatError::new(code, message.trim().to_owned()));
        }
        commands.push(match command {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        });
    }
    Ok(commands)
}

/// Turns one tool call into the command line a `thought_action` model would have written
/// (v1 `FunctionCallingParser`): required arguments must be there and unknown ones must not
/// (an `end_name` key is ignored); string values are `shlex.quote`d except for `bash` and for
/// commands with an `end_name`; values fill the signature's `<arg>`/`[<arg>]` placeholders
/// (absent optional ones become empty) and the result is trimmed.
///
/// Differences from v1, on purpose: a placeholder written in double quotes (`open "<path>"`)
/// gets its value escaped for double quotes instead of `shlex.quote`d, so a path with spaces
/// stays one argument (v1 produced `"'a b'"`); the body of an `end_name` command goes on its
/// own lines, ending with one newline before the `end_name` line, and an empty body adds no
/// line (so `""` deletes, as `edit` typed by hand would); JSON `null` is empty, booleans are
/// `True`/`False` as Python prints them, and arrays or objects are written as JSON. An argument
/// with an `argument_format` (`--old_str {value}`) is written in it when given (an array's
/// items joined by spaces, as 1.x's `join(' ')`) and left out when absent or null.
pub fn function_call_to_command(
    registry: &Registry,
    name: &str,
    arguments_json: &str,
) -> Result<String, FormatError> {
    let spec = registry.get(name).ok_or_else(|| {
        FormatError::new(
            ErrorCode::InvalidCommand,
            format!("Command '{name}' not found in list of available commands"),
        )
    })?;
    let values = parse_arguments(arguments_json)?;
    let missing: Vec<&str> = spec
        .arguments
        .0
        .iter()
        .filter(|argument| argument.required && !values.contains_key(&argument.name))
        .map(|argument| argument.name.as_str())
        .collect();
    if !missing.is_empty() {
        let message = format!("Required argument(s) missing: {}", missing.join(", "));
        return Err(FormatError::new(ErrorCode::MissingArg, message));
    }
    let unexpected: Vec<&str> = values
        .keys()
        .map(String::as_str)
        .filter(|key| {
            spec.arguments
                .0
                .iter()
                .all(|argument| argument.name != *key)
        })
        .filter(|key| spec.end_name.as_deref() != Some(*key))
        .collect();
    if !unexpected.is_empty() {
        let message = format!("Unexpected argument(s): {}", unexpected.join(", "));
        return Err(FormatError::new(ErrorCode::UnexpectedArg, message));
    }
    Ok(render_call(spec, &values))
}

fn parse_arguments(arguments_json: &str) -> Result<serde_json::Map<String, Value>, FormatError> {
    if arguments_json.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str::<Value>(arguments_json) {
        Ok(Value::Object(values)) => Ok(values),
        Ok(_) => Err(FormatError::new(
            ErrorCode::InvalidJson,
            "Tool call arguments are not a JSON object.",
        )),
        Err(_) => Err(FormatError::new(
            ErrorCode::InvalidJson,
            "Tool call arguments are not valid JSON.",
        )),
    }
}

fn render_call(spec: &CommandSpec, values: &serde_json::Map<String, Value>) -> String {
    let signature = spec.signature();
    let quote = spec.end_name.is_none() && spec.name != "bash";
    let body_name = spec
        .end_name
        .as_ref()
        .and_then(|_| spec.arguments.0.last())
        .map(|a| a.name.as_str());
    let first_line = match body_name {
        Some(_) => signature.lines().next().unwrap_or_default(),
        None => signature.as_str(),
    };
    let mut line = String::new();
    let mut copied = 0;
    for placeholder in placeholders(first_line) {
        line.push_str(&first_line[copied..placeholder.start]);
        copied = placeholder.end;
        if Some(placeholder.name) == body_name {
            continue;
        }
        let Some(value) = values.get(placeholder.name) else {
            continue;
        };
        let in_double_quotes = first_line[..placeholder.start].ends_with('"')
            && first_line[placeholder.end..].starts_with('"');
        let format = spec
            .arguments
            .0
            .iter()
            .find(|argument| argument.name == placeholder.name)
            .and_then(|argument| argument.argument_format.as_deref());
        let rendered = match (format, value) {
            (Some(_), Value::Null) => continue,
            (Some(format), Value::Array(items)) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|item| render_value(item, quote, false))
                    .collect();
                format.replace("{value}", &items.join(" "))
            }
            (Some(format), value) => {
                format.replace("{value}", &render_value(value, quote, in_double_quotes))
            }
            (None, value) => render_value(value, quote, in_double_quotes),
        };
        line.push_str(&rendered);
    }
    line.push_str(&first_line[copied..]);
    let line = line.trim();
    let (Some(body_name), Some(end_name)) = (body_name, spec.end_name.as_deref()) else {
        return line.to_owned();
    };
    let body = values
        .get(body_name)
        .map(|value| render_value(value, false, false))
        .unwrap_or_default();
    let newline = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{line}\n{body}{newline}{end_name}")
}

fn render_value(value: &Value, quote: bool, in_double_quotes: bool) -> String {
    match value {
        Value::String(text) if quote && in_double_quotes => double_quote_escape(text),
        Value::String(text) if quote => shlex_quote(text),
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(number) => number.to_string(),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
