//! What generation of agent protocol a configuration is, for the table that compares them: the
//! paper's ACI (its viewer, editor and search commands), SWE-agent 1.x's tools
//! (`str_replace_editor` through function calling), mini-swe-agent's bash-only protocol (a
//! fresh subshell per command), or a shell with none of those (the paper's shell-only agent);
//! and how the model writes its action. Pure: a [`Config`] in, a [`Protocol`] out.

use serde::{Deserialize, Serialize};

use crate::config::aci::DEFAULT_COMMANDS;
use crate::config::{Config, ParserKind};

/// SWE-agent 1.x's editor tool.
const EDITOR_TOOL: &str = "str_replace_editor";

/// How a configuration talks to the model and the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Protocol {
    /// `paper ACI`, `1.x tools`, `bash-only` or `shell`.
    pub interface: String,
    /// The parser: `thought_action`, `action_regex`, `function_calling` or `bash_tool_calls`.
    pub parser: String,
    /// `persistent` (one shell for the whole episode) or `subshell` (a fresh one per command).
    pub shell: String,
    /// `submit` (the command), or `sentinel` (a first line of output).
    pub submit: String,
    /// The trajectories written: `swe-agent`, or also `mini-swe-agent-1.1`.
    pub trajectory: String,
}

impl Protocol {
    /// The label in the table: the interface and how the action is written, e.g.
    /// `paper ACI (text)`, `bash-only (tool calls)`.
    pub fn label(&self) -> String {
        let format = if matches!(self.parser.as_str(), "function_calling" | "bash_tool_calls") {
            "tool calls"
        } else {
            "text"
        };
        format!("{} ({format})", self.interface)
    }
}

/// The protocol of `config`.
pub fn protocol(config: &Config) -> Protocol {
    let commands = &config.aci.commands;
    let has = |name: &str| commands.iter().any(|command| command == name);
    let interface = if has(EDITOR_TOOL) {
        "1.x tools"
    } else if DEFAULT_COMMANDS
        .iter()
        .any(|name| *name != "submit" && has(name))
    {
        "paper ACI"
    } else if config.aci.subshell {
        "bash-only"
    } else {
        "shell"
    };
    let parser = match config.agent.parser {
        ParserKind::ThoughtAction => "thought_action",
        ParserKind::FunctionCalling => "function_calling",
        ParserKind::ActionRegex => "action_regex",
        ParserKind::BashToolCalls => "bash_tool_calls",
    };
    Protocol {
        interface: interface.to_owned(),
        parser: parser.to_owned(),
        shell: if config.aci.subshell {
            "subshell"
        } else {
            "persistent"
        }
        .to_owned(),
        submit: if config.aci.submit_sentinel.is_some() {
            "sentinel"
        } else {
            "submit"
        }
        .to_owned(),
        trajectory: if config.agent.mini_trajectory {
            "swe-agent, mini-swe-agent-1.1"
        } else {
            "swe-agent"
        }
        .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn config(layer: &str) -> Config {
        crate::config::resolve_text(&[("test", layer)], &[]).unwrap()
    }

    #[test]
    fn each_generation_is_named_by_its_interface_and_action_format() {
        let paper = protocol(&config(""));
        assert_eq!(
            paper,
            Protocol {
                interface: "paper ACI".to_owned(),
                parser: "thought_action".to_owned(),
                shell: "persistent".to_owned(),
                submit: "submit".to_owned(),
                trajectory: "swe-agent".to_owned(),
            }
        );
        assert_eq!(paper.label(), "paper ACI (text)");
        assert_eq!(
            protocol(&config("aci: {commands: [submit]}")).label(),
            "shell (text)"
        );
        let mini = protocol(&config(
            "agent: {parser: action_regex, action_regex: 'x(.*)', mini_trajectory: true}\n\
             aci: {commands: [], subshell: true, submit_sentinel: DONE}",
        ));
        assert_eq!(
            (mini.label(), mini.shell.as_str(), mini.submit.as_str()),
            ("bash-only (text)".to_owned(), "subshell", "sentinel")
        );
        assert_eq!(mini.trajectory, "swe-agent, mini-swe-agent-1.1");
        assert_eq!(
            protocol(&config(
                "agent: {parser: bash_tool_calls}\naci: {commands: [], subshell: true}"
            ))
            .label(),
            "bash-only (tool calls)"
        );
        assert_eq!(
            protocol(&config(
                "agent: {parser: function_calling}\naci: {commands: [str_replace_editor, submit]}"
            ))
            .label(),
            "1.x tools (tool calls)"
        );
    }
}
