//! Splitting one model action into sub-actions as SWE-agent v0 runs them: multi-line command
//! blocks (`edit …` to `end_of_edit`), one-line ACI commands, and the shell input between them,
//! in order, stopping after `submit`. Also v0.7's blocklist of interactive programs.

pub use crate::config::aci::Blocklist;

use super::args::continues_on_next_line;
use super::registry::Registry;

/// The command that ends an episode; sub-actions after it are dropped, as in v0.
pub const SUBMIT_COMMAND: &str = "submit";

/// One piece of an action, to run in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubAction {
    /// An enabled ACI command.
    Command {
        /// The command name (the line's first word).
        name: String,
        /// The rest of the command's first line, trimmed; for a multi-line command without
        /// v0's `<< 'end_name'` guard if the model wrote one.
        args: String,
        /// For a command with an `end_name`: the lines between the first line and the
        /// `end_name` line, each ending in `\n` (empty when there are none). When the
        /// `end_name` line is missing, the body runs to the end of the action.
        body: Option<String>,
    },
    /// Shell input for the persistent session, sent as one input as v0 sends it.
    Shell(String),
}

/// Splits `action` into sub-actions.
///
/// A line whose first word is a command of `registry` is that command (v0 ran these as bash
/// functions); a command with an `end_name` takes the following lines up to the first line
/// that is the `end_name` alone (v0's `^\s*(name)\s*(.*?)^(end_name)\s*$`, DOTALL|MULTILINE).
/// Other lines are shell input; consecutive ones stay together, and a line that continues
/// shell input (an open quote, a heredoc, a loop, a trailing `|`) is never read as a command.
/// Whitespace-only shell input is dropped. The list ends after `submit`.
///
/// A command whose spec has `quoted_lines` takes the following lines too while a quote (or
/// anything else that makes bash read on) is open, so that a quoted argument may span lines.
///
/// Differences from v0, on purpose: the command name must be followed by whitespace or the end
/// of the line (v0's pattern also matched `editor`), and `submit` inside an edit body is body
/// text (v0 split on it).
pub fn split_action(action: &str, registry: &Registry) -> Vec<SubAction> {
    let mut sub_actions = Vec::new();
    let mut shell_start: Option<usize> = None;
    let mut pos = 0;
    while pos < action.len() {
        let line_end = action[pos..]
            .find('\n')
            .map_or(action.len(), |offset| pos + offset);
        let next = (line_end + 1).min(action.len());
        let in_shell = shell_start.is_some_and(|start| continues_on_next_line(&action[start..pos]));
        let command = if in_shell {
            None
        } else {
            command_on_line(&action[pos..line_end], registry)
        };
        let Some((name, args)) = command else {
            shell_start.get_or_insert(pos);
            pos = next;
            continue;
        };
        if let Some(start) = shell_start.take() {
            push_shell(&mut sub_actions, &action[start..pos]);
        }
        let end_name = registry.get(name).and_then(|spec| spec.end_name.as_deref());
        let (args, body) = match end_name {
            Some(end_name) => {
                let (body_end, after) = find_end_line(action, next, end_name);
                pos = after;
                (
                    strip_heredoc_guard(args, end_name),
                    Some(action[next..body_end].to_owned()),
                )
            }
            None if registry.get(name).is_some_and(|spec| spec.quoted_lines) => {
                let start = pos;
                let mut end = line_end;
                while end < action.len() && continues_on_next_line(&action[start..end]) {
                    end = action[end + 1..]
                        .find('\n')
                        .map_or(action.len(), |offset| end + 1 + offset);
                }
                pos = (end + 1).min(action.len());
                let text = action[start..end].trim_start();
                (text[name.len()..].trim().to_owned(), None)
            }
            None => {
                pos = next;
                (args.to_owned(), None)
            }
        };
        let is_submit = name == SUBMIT_COMMAND;
        sub_actions.push(SubAction::Command {
            name: name.to_owned(),
            args,
            body,
        });
        if is_submit {
            return sub_actions;
        }
    }
    if let Some(start) = shell_start {
        push_shell(&mut sub_actions, &action[start..]);
    }
    sub_actions
}

fn push_shell(sub_actions: &mut Vec<SubAction>, text: &str) {
    if !text.trim().is_empty() {
        sub_actions.push(SubAction::Shell(text.to_owned()));
    }
}

/// The enabled command a line starts with, and the rest of the line (trimmed).
fn command_on_line<'a>(line: &'a str, registry: &Registry) -> Option<(&'a str, &'a str)> {
    let trimmed = line.trim_start();
    let name_end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
    let name = &trimmed[..name_end];
    registry.get(name)?;
    Some((name, trimmed[name_end..].trim()))
}

/// Finds the first line at or after `from` that is `end_name` followed only by whitespace.
/// Returns where the body ends and where the next sub-action starts; without such a line, the
/// body runs to the end of the action.
fn find_end_line(action: &str, from: usize, end_name: &str) -> (usize, usize) {
    let mut pos = from;
    while pos < action.len() {
        let line_end = action[pos..]
            .find('\n')
            .map_or(action.len(), |offset| pos + offset);
        let line = &action[pos..line_end];
        if line
            .strip_prefix(end_name)
            .is_some_and(|rest| rest.trim().is_empty())
        {
            return (pos, (line_end + 1).min(action.len()));
        }
        pos = line_end + 1;
    }
    (action.len(), action.len())
}

/// Drops a trailing `<< 'end_name'` (or `<<end_name`, `<< "end_name"`) from a first line.
fn strip_heredoc_guard(args: &str, end_name: &str) -> String {
    let Some(index) = args.rfind("<<") else {
        return args.to_owned();
    };
    let delimiter = args[index + 2..].trim();
    let unquoted = delimiter.trim_matches(|c| c == '\'' || c == '"');
    if unquoted == end_name {
        args[..index].trim_end().to_owned()
    } else {
        args.to_owned()
    }
}

/// Joins sub-action outputs into one observation. Empty outputs are skipped, because v0 ran
/// the pieces as one bash input where a silent command adds nothing.
pub fn join_outputs(outputs: &[String]) -> String {
    outputs
        .iter()
        .filter(|output| !output.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The refusal message if `command` is blocked, as v0's `should_block_action`: its first word
/// is in [`Blocklist::first_word`], or the whole trimmed command is in
/// [`Blocklist::standalone`]. v0 checks the whole action, not each sub-action.
pub fn blocked(command: &str, blocklist: &Blocklist) -> Option<String> {
    let trimmed = command.trim();
    let name = trimmed.split_whitespace().next()?;
    let is_blocked = blocklist.first_word.iter().any(|word| word == name)
        || (name == trimmed && blocklist.standalone.iter().any(|word| word == name));
    is_blocked
        .then(|| format!("Interactive operation '{name}' is not supported by this environment"))
}

/// The ACI command that bash could not find in a shell command's output (`bash: line 1:
/// open: command not found`), if any: the model put it inside a shell command line (after
/// `&&`, `;` or `|`, in a subshell or a script), where only bash runs.
pub fn misplaced_command<'a>(output: &str, registry: &'a Registry) -> Option<&'a str> {
    output.lines().find_map(|line| {
        let head = line.strip_suffix(": command not found")?;
        let name = head.rsplit(": ").next()?;
        registry.get(name).map(|spec| spec.name.as_str())
    })
}

/// The note added to such an output.
pub fn misplaced_command_note(name: &str) -> String {
    format!(
        "\n`{name}` is a command of this interface, not a shell program: it only runs at the \
         start of an action, so give it as an action (or a line) of its own, not after `&&`, \
         `;` or `|`."
    )
}

#[cfg(test)]
#[path = "action_tests.rs"]
mod tests;
