//! The data types of the `aci:` section that the interface's parts own: the built-in command
//! names ([`BUILTIN_COMMANDS`]) and the actions refused before they run ([`Blocklist`]).

use serde::{Deserialize, Serialize};

/// The default of `aci.max_line_length`: the widest line a window shows, in characters. A
/// longer line (minified code, a data file) is cut there and ends with [`crate::aci::window::cut_marker`], so a
/// window of 100 lines stays a few hundred kilobytes at most. SWE-agent cuts no line.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 2000;

/// The built-in commands, one YAML file and one Rust handler each: the paper's ten
/// ([`DEFAULT_COMMANDS`]) and SWE-agent 1.x's `str_replace_editor`.
pub const BUILTIN_COMMANDS: &[&str] = &[
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "search_file",
    "search_dir",
    "find_file",
    "submit",
    "str_replace_editor",
];

/// The commands enabled by default (`aci.commands`): the paper's ACI.
pub const DEFAULT_COMMANDS: &[&str] = &[
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "search_file",
    "search_dir",
    "find_file",
    "submit",
];

/// Which actions are refused before they run (v0.7 `blocklist` and `blocklist_standalone`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Blocklist {
    /// Refused when the action's first word is one of these.
    pub first_word: Vec<String>,
    /// Refused when the whole action (trimmed) is one of these.
    pub standalone: Vec<String>,
}

impl Blocklist {
    /// SWE-agent v0.7's lists.
    pub fn v07_default() -> Self {
        let list = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
        Self {
            first_word: list(&["vim", "vi", "emacs", "nano", "nohup", "git", "gdb"]),
            standalone: list(&[
                "python",
                "python3",
                "ipython",
                "bash",
                "sh",
                "exit",
                "/bin/bash",
                "/bin/sh",
                "nohup",
                "vi",
                "vim",
                "emacs",
                "nano",
                "su",
            ]),
        }
    }
}

impl Default for Blocklist {
    fn default() -> Self {
        Self::v07_default()
    }
}
