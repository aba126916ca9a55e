//! ACI commands as data: one `aci-commands/<name>.yaml` per command (signature, docstring,
//! arguments, `end_name`, and an optional `script:` for custom commands). From these come the
//! command docs in the prompt (v0 `ParseCommandDetailed` layout), the function-calling tool
//! schemas, and the set of commands a config enables.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};

use super::args::shlex_quote;
pub use crate::config::aci::BUILTIN_COMMANDS;
use crate::text::{Braces, fill};

const BUILTIN_YAML: &[(&str, &str)] = &[
    ("open", include_str!("../../aci-commands/open.yaml")),
    ("goto", include_str!("../../aci-commands/goto.yaml")),
    (
        "scroll_up",
        include_str!("../../aci-commands/scroll_up.yaml"),
    ),
    (
        "scroll_down",
        include_str!("../../aci-commands/scroll_down.yaml"),
    ),
    ("create", include_str!("../../aci-commands/create.yaml")),
    ("edit", include_str!("../../aci-commands/edit.yaml")),
    (
        "search_file",
        include_str!("../../aci-commands/search_file.yaml"),
    ),
    (
        "search_dir",
        include_str!("../../aci-commands/search_dir.yaml"),
    ),
    (
        "find_file",
        include_str!("../../aci-commands/find_file.yaml"),
    ),
    ("submit", include_str!("../../aci-commands/submit.yaml")),
    (
        "str_replace_editor",
        include_str!("../../aci-commands/str_replace_editor.yaml"),
    ),
];

/// Why command specs could not be loaded or selected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The YAML did not parse or has unknown keys.
    #[error("cannot read aci-commands/{name}.yaml: {message}")]
    Yaml {
        /// The command (file stem).
        name: String,
        /// The parser's message, with its line and column.
        message: String,
    },
    /// The spec parsed but is not usable.
    #[error("invalid command `{name}`: {reason}")]
    Invalid {
        /// The command.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Two specs have the same name.
    #[error("command `{name}` is defined twice")]
    Duplicate {
        /// The command.
        name: String,
    },
    /// A config enabled a command that no spec defines.
    #[error("unknown command `{name}` in the enabled commands\nvalid commands: {valid}")]
    Unknown {
        /// The name from the config.
        name: String,
        /// The names that exist, comma-separated.
        valid: String,
    },
}

/// One argument of a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentSpec {
    /// The name, as written in the signature (`<name>` or `[<name>]`).
    #[serde(skip)]
    pub name: String,
    /// The JSON-schema type: `string`, `integer`, ….
    #[serde(rename = "type")]
    pub kind: String,
    /// What the argument means, shown in the docs and the tool schema.
    pub description: String,
    /// Whether the argument must be given.
    pub required: bool,
    /// The values allowed, listed in the tool schema (`enum`).
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// For an `array`: the type of its items, in the tool schema (`items: {type: integer}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemsSpec>,
    /// How a given value is written into the command line, `{value}` standing for it (quoted
    /// as any value; an array's items joined by spaces), e.g. `--old_str {value}`. Without it
    /// the value alone fills its placeholder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_format: Option<String>,
}

/// The items of an `array` argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemsSpec {
    /// Their JSON-schema type.
    #[serde(rename = "type")]
    pub kind: String,
}

/// The arguments of a command, in the order of the YAML mapping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arguments(pub Vec<ArgumentSpec>);

impl Arguments {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Arguments {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for argument in &self.0 {
            map.serialize_entry(&argument.name, argument)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedArguments;
        impl<'de> Visitor<'de> for OrderedArguments {
            type Value = Arguments;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a mapping from argument name to {type, description, required}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arguments, A::Error> {
                let mut arguments = Vec::new();
                while let Some((name, mut argument)) = map.next_entry::<String, ArgumentSpec>()? {
                    argument.name = name;
                    arguments.push(argument);
                }
                Ok(Arguments(arguments))
            }
        }
        deserializer.deserialize_map(OrderedArguments)
    }
}

/// One command, as written in `aci-commands/<name>.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The command name the model types; defaults to the file stem.
    #[serde(default)]
    pub name: String,
    /// How to call it, e.g. `open "<path>" [<line_number>]`; derived from the arguments when
    /// absent (see [`CommandSpec::signature`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// What it does; `{NAME}` placeholders are filled from the env in the docs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docstring: Option<String>,
    /// The arguments, in order.
    #[serde(default, skip_serializing_if = "Arguments::is_empty")]
    pub arguments: Arguments,
    /// For a multi-line command: the line that ends its body (`end_of_edit`). The last
    /// argument is then the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_name: Option<String>,
    /// For a custom command: a bash script run in the container with the arguments as `$1…`
    /// (and the body, if any, on stdin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The arguments may go on over the following lines while a quote is open, as the shell
    /// reads them (a multi-line `--old_str '…'`). Off: a command is its first line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quoted_lines: bool,
}

impl CommandSpec {
    /// Parses and validates one YAML spec; `name` is the file stem.
    pub fn from_yaml(name: &str, text: &str) -> Result<Self, RegistryError> {
        let mut spec: Self = serde_yaml::from_str(text).map_err(|error| RegistryError::Yaml {
            name: name.to_owned(),
            message: error.to_string(),
        })?;
        if spec.name.is_empty() {
            spec.name = name.to_owned();
        }
        spec.validate()?;
        Ok(spec)
    }

    /// The v1 built-in `bash` tool (for function calling): its one argument is never quoted.
    pub fn bash_tool() -> Self {
        let text = crate::config::BashToolText::default();
        Self::bash_tool_with(&text.description, &text.command_description)
    }

    /// The `bash` tool described as `description`, its `command` as `command_description`
    /// (`agent.bash_tool`).
    pub fn bash_tool_with(description: &str, command_description: &str) -> Self {
        Self {
            name: "bash".to_owned(),
            signature: Some("<command>".to_owned()),
            docstring: Some(description.to_owned()),
            arguments: Arguments(vec![ArgumentSpec {
                name: "command".to_owned(),
                kind: "string".to_owned(),
                description: command_description.to_owned(),
                required: true,
                allowed: None,
                items: None,
                argument_format: None,
            }]),
            end_name: None,
            script: None,
            quoted_lines: false,
        }
    }

    fn validate(&self) -> Result<(), RegistryError> {
        let invalid = |reason: String| RegistryError::Invalid {
            name: self.name.clone(),
            reason,
        };
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if self.name.is_empty() || !self.name.chars().all(word) {
            return Err(invalid(
                "the name must be letters, digits, `_` or `-`".to_owned(),
            ));
        }
        let mut seen_optional = false;
        for (index, argument) in self.arguments.0.iter().enumerate() {
            if !is_identifier(&argument.name) {
                return Err(invalid(format!(
                    "argument name `{}` is not an identifier",
                    argument.name
                )));
            }
            if self.arguments.0[..index]
                .iter()
                .any(|other| other.name == argument.name)
            {
                return Err(invalid(format!(
                    "argument `{}` is listed twice",
                    argument.name
                )));
            }
            if seen_optional && argument.required {
                return Err(invalid(format!(
                    "required argument `{}` follows an optional one",
                    argument.name
                )));
            }
            seen_optional |= !argument.required;
        }
        if self.end_name.as_deref().is_some_and(str::is_empty)
            || self.end_name.is_some() && self.arguments.is_empty()
        {
            return Err(invalid(
                "a command with an end_name needs a body argument".to_owned(),
            ));
        }
        if let Some(signature) = &self.signature {
            let mut placeholders: Vec<&str> = placeholders(signature).map(|p| p.name).collect();
            let mut names: Vec<&str> = self.arguments.0.iter().map(|a| a.name.as_str()).collect();
            placeholders.sort_unstable();
            names.sort_unstable();
            if placeholders != names {
                return Err(invalid(format!(
                    "the signature `{signature}` must name each argument once as <name> or [<name>]"
                )));
            }
        }
        Ok(())
    }

    /// The signature as written, or v0's derived one: the name, then ` <arg>` for each required
    /// and ` [<arg>]` for each optional argument.
    pub fn signature(&self) -> String {
        if let Some(signature) = &self.signature {
            return signature.clone();
        }
        let mut signature = self.name.clone();
        for argument in &self.arguments.0 {
            if argument.required {
                signature.push_str(&format!(" <{}>", argument.name));
            } else {
                signature.push_str(&format!(" [<{}>]", argument.name));
            }
        }
        signature
    }

    /// The OpenAI function tool for this command (v1 `get_function_calling_tool`). The
    /// description is the docstring with its placeholders filled from `env` as in the prompt's
    /// command docs (v1 leaves `{WINDOW}` literal; the model should read the real number).
    pub fn openai_tool(&self, env: &[(String, String)]) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description(env),
                "parameters": self.parameters_schema(),
            }
        })
    }

    /// The Anthropic tool for this command: `{name, description, input_schema}`, the
    /// description filled from `env` as for [`CommandSpec::openai_tool`].
    pub fn anthropic_tool(&self, env: &[(String, String)]) -> Value {
        json!({
            "name": self.name,
            "description": self.description(env),
            "input_schema": self.parameters_schema(),
        })
    }

    fn description(&self, env: &[(String, String)]) -> String {
        self.docstring
            .as_deref()
            .map(|docstring| fill(docstring, env, Braces::Escaped))
            .unwrap_or_default()
    }

    fn parameters_schema(&self) -> Value {
        if self.arguments.is_empty() {
            return json!({"type": "object"});
        }
        let mut properties = serde_json::Map::new();
        for argument in &self.arguments.0 {
            let mut property = json!({"type": argument.kind, "description": argument.description});
            if let Some(allowed) = &argument.allowed {
                property["enum"] = json!(allowed);
            }
            if let Some(items) = &argument.items {
                property["items"] = json!({"type": items.kind});
            }
            properties.insert(argument.name.clone(), property);
        }
        let required: Vec<&str> = self
            .arguments
            .0
            .iter()
            .filter(|argument| argument.required)
            .map(|argument| argument.name.as_str())
            .collect();
        json!({"type": "object", "properties": properties, "required": required})
    }

    /// For a custom command: the bash command that runs its `script` with `args` as `$1…` (in
    /// a child bash, like v0's command scripts) and `body`, if any, on stdin as a quoted
    /// here-document. `None` for a built-in command.
    pub fn script_command(&self, args: &[String], body: Option<&str>) -> Option<String> {
        let script = self.script.as_deref()?;
        let mut command = format!(
            "bash -c {} {}",
            shlex_quote(script),
            shlex_quote(&self.name)
        );
        for arg in args {
            command.push(' ');
            command.push_str(&shlex_quote(arg));
        }
        if let Some(body) = body {
            let end = self.end_name.as_deref().unwrap_or("end_of_input");
            let newline = if body.is_empty() || body.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            command.push_str(&format!(" << '{end}'\n{body}{newline}{end}"));
        }
        Some(command)
    }
}

/// A placeholder `<name>` in a signature, with the span to replace (which takes in the
/// brackets of `[<name>]`, as v1's `\[?<(name)>\]?` does).
pub(crate) struct Placeholder<'a> {
    pub(crate) name: &'a str,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// The placeholders of `signature`, left to right.
pub(crate) fn placeholders(signature: &str) -> impl Iterator<Item = Placeholder<'_>> {
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let open = from + signature.get(from..)?.find('<')?;
            let close = open + signature[open..].find('>')?;
            let name = &signature[open + 1..close];
            if !is_identifier(name) {
                from = open + 1;
                continue;
            }
            from = close + 1;
            let start = if signature[..open].ends_with('[') {
                open - 1
            } else {
                open
            };
            let end = if signature[close + 1..].starts_with(']') {
                close + 2
            } else {
                close + 1
            };
            return Some(Placeholder { name, start, end });
        }
    })
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The command specs a run can use, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    commands: Vec<CommandSpec>,
}

impl Registry {
    /// The built-in commands ([`BUILTIN_COMMANDS`]) from the embedded YAML files.
    pub fn builtin() -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        for (name, text) in BUILTIN_YAML {
            registry.add(CommandSpec::from_yaml(name, text)?)?;
        }
        Ok(registry)
    }

    /// Adds a command; its name must be new.
    pub fn add(&mut self, spec: CommandSpec) -> Result<(), RegistryError> {
        if self.get(&spec.name).is_some() {
            return Err(RegistryError::Duplicate { name: spec.name });
        }
        self.commands.push(spec);
        Ok(())
    }

    /// Parses a YAML spec ([`CommandSpec::from_yaml`]) and adds it.
    pub fn add_yaml(&mut self, name: &str, text: &str) -> Result<(), RegistryError> {
        self.add(CommandSpec::from_yaml(name, text)?)
    }

    /// The commands named in `names` (the config's `aci.commands`), in that order.
    pub fn enabled(&self, names: &[String]) -> Result<Self, RegistryError> {
        let mut enabled = Self::default();
        for name in names {
            let spec = self.get(name).ok_or_else(|| RegistryError::Unknown {
                name: name.clone(),
                valid: self.names().join(", "),
            })?;
            enabled.add(spec.clone())?;
        }
        Ok(enabled)
    }

    /// Replaces the docstring of the command called `name` (`aci.docstrings`); false when
    /// there is no such command.
    pub fn set_docstring(&mut self, name: &str, docstring: &str) -> bool {
        match self.commands.iter_mut().find(|spec| spec.name == name) {
            Some(spec) => {
                spec.docstring = Some(docstring.to_owned());
                true
            }
            None => false,
        }
    }

    /// The command called `name`.
    pub fn get(&self, name: &str) -> Option<&CommandSpec> {
        self.commands.iter().find(|spec| spec.name == name)
    }

    /// The command names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.commands
            .iter()
            .map(|spec| spec.name.as_str())
            .collect()
    }

    /// The commands, in order.
    pub fn commands(&self) -> &[CommandSpec] {
        &self.commands
    }

    /// The command docs for the prompt in v0's `ParseCommandDetailed` layout: per command
    /// `name:`, `  docstring: …` (placeholders like `{WINDOW}` filled from `env` as Python's
    /// `str.format` would; unknown ones stay as written), `  signature: …`, then
    /// `  arguments:` with `    - name (type) [required|optional]: description` lines if
    /// there are arguments, and a blank line.
    pub fn render_docs(&self, env: &[(String, String)]) -> String {
        let mut docs = String::new();
        for spec in &self.commands {
            docs.push_str(&format!("{}:\n", spec.name));
            if let Some(docstring) = &spec.docstring {
                docs.push_str(&format!(
                    "  docstring: {}\n",
                    fill(docstring, env, Braces::Escaped)
                ));
            }
            docs.push_str(&format!("  signature: {}\n", spec.signature()));
            if !spec.arguments.is_empty() {
                docs.push_str("  arguments:\n");
                for argument in &spec.arguments.0 {
                    let required = if argument.required {
                        "required"
                    } else {
                        "optional"
                    };
                    docs.push_str(&format!(
                        "    - {} ({}) [{required}]: {}\n",
                        argument.name, argument.kind, argument.description
                    ));
                }
            }
            docs.push('\n');
        }
        docs
    }

    /// The OpenAI `tools` array, placeholders in the descriptions filled from `env`.
    pub fn openai_tools(&self, env: &[(String, String)]) -> Value {
        Value::Array(
            self.commands
                .iter()
                .map(|spec| spec.openai_tool(env))
                .collect(),
        )
    }

    /// The Anthropic `tools` array, placeholders in the descriptions filled from `env`.
    pub fn anthropic_tools(&self, env: &[(String, String)]) -> Value {
        Value::Array(
            self.commands
                .iter()
                .map(|spec| spec.anthropic_tool(env))
                .collect(),
        )
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
