//! Tests for the command registry: the embedded YAML files, the v0 docs layout, tool schemas
//! and custom commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

fn window_env() -> Vec<(String, String)> {
    vec![
        ("WINDOW".to_owned(), "100".to_owned()),
        ("OVERLAP".to_owned(), "2".to_owned()),
    ]
}

#[test]
fn the_builtin_registry_has_its_commands_in_order() {
    let registry = Registry::builtin().unwrap();
    assert_eq!(registry.names(), BUILTIN_COMMANDS);
    let embedded: Vec<&str> = BUILTIN_YAML.iter().map(|(name, _)| *name).collect();
    assert_eq!(embedded, BUILTIN_COMMANDS);
}

#[test]
fn builtin_docstrings_are_v07_verbatim_with_their_grammar() {
    let registry = Registry::builtin().unwrap();
    let docstring = |name: &str| registry.get(name).unwrap().docstring.clone().unwrap();
    assert_eq!(
        docstring("open"),
        "opens the file at the given path in the editor. If line_number is provided, the window will be move to include that line"
    );
    assert_eq!(
        docstring("scroll_up"),
        "moves the window down {WINDOW} lines"
    );
    assert_eq!(docstring("goto"), "moves the window to show <line_number>");
    assert!(
        docstring("edit").starts_with("replaces lines <start_line> through <end_line> (inclusive)")
    );
    assert!(docstring("edit").ends_with(
        "Issuing the same command a second time will just lead to the same error message again."
    ));
    let edit = registry.get("edit").unwrap();
    assert_eq!(edit.end_name.as_deref(), Some("end_of_edit"));
    assert_eq!(
        edit.signature(),
        "edit <start_line>:<end_line>\n<replacement_text>\nend_of_edit"
    );
    assert_eq!(
        registry.get("open").unwrap().signature(),
        "open \"<path>\" [<line_number>]"
    );
}

#[test]
fn docs_use_the_parse_command_detailed_layout() {
    let registry = Registry::builtin().unwrap();
    let enabled = registry
        .enabled(&names(&["open", "scroll_down", "edit", "submit"]))
        .unwrap();
    let expected = "\
open:
  docstring: opens the file at the given path in the editor. If line_number is provided, the window will be move to include that line
  signature: open \"<path>\" [<line_number>]
  arguments:
    - path (string) [required]: the path to the file to open
    - line_number (integer) [optional]: the line number to move the window to (if not provided, the window will start at the top of the file)

scroll_down:
  docstring: moves the window down 100 lines
  signature: scroll_down

edit:
  docstring: replaces lines <start_line> through <end_line> (inclusive) with the given text in the open file. The replacement text is terminated by a line with only end_of_edit on it. All of the <replacement text> will be entered, so make sure your indentation is formatted properly. Python files will be checked for syntax errors after the edit. If the system detects a syntax error, the edit will not be executed. Simply try to edit the file again, but make sure to read the error message and modify the edit command you issue accordingly. Issuing the same command a second time will just lead to the same error message again.
  signature: edit <start_line>:<end_line>
<replacement_text>
end_of_edit
  arguments:
    - start_line (integer) [required]: the line number to start the edit at
    - end_line (integer) [required]: the line number to end the edit at (inclusive)
    - replacement_text (string) [required]: the text to replace the current selection with

submit:
  docstring: submits your current code and terminates the session
  signature: submit

";
    assert_eq!(enabled.render_docs(&window_env()), expected);
}

#[test]
fn enabled_keeps_config_order_and_rejects_unknown_names() {
    let registry = Registry::builtin().unwrap();
    let enabled = registry.enabled(&names(&["submit", "open"])).unwrap();
    assert_eq!(enabled.names(), ["submit", "open"]);
    assert_eq!(
        registry
            .enabled(&names(&["open", "vim"]))
            .unwrap_err()
            .to_string(),
        "unknown command `vim` in the enabled commands\nvalid commands: open, goto, scroll_up, scroll_down, create, edit, search_file, search_dir, find_file, submit, str_replace_editor"
    );
    assert_eq!(
        registry.enabled(&names(&["open", "open"])),
        Err(RegistryError::Duplicate {
            name: "open".into()
        })
    );
}

#[test]
fn openai_tools_follow_the_v1_schema() {
    let registry = Registry::builtin()
        .unwrap()
        .enabled(&names(&["open", "scroll_up"]))
        .unwrap();
    let expected = serde_json::json!([
        {"type": "function", "function": {
            "name": "open",
            "description": "opens the file at the given path in the editor. If line_number is provided, the window will be move to include that line",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string", "description": "the path to the file to open"},
                "line_number": {"type": "integer", "description": "the line number to move the window to (if not provided, the window will start at the top of the file)"}
            }, "required": ["path"]}
        }},
        {"type": "function", "function": {
            "name": "scroll_up",
            "description": "moves the window down 100 lines",
            "parameters": {"type": "object"}
        }}
    ]);
    assert_eq!(registry.openai_tools(&window_env()), expected);
}

#[test]
fn anthropic_tools_have_name_description_and_input_schema() {
    let registry = Registry::builtin()
        .unwrap()
        .enabled(&names(&["goto"]))
        .unwrap();
    let expected = serde_json::json!([{
        "name": "goto",
        "description": "moves the window to show <line_number>",
        "input_schema": {"type": "object", "properties": {
            "line_number": {"type": "integer", "description": "the line number to move the window to"}
        }, "required": ["line_number"]}
    }]);
    assert_eq!(registry.anthropic_tools(&window_env()), expected);
}

#[test]
fn a_custom_command_comes_from_a_script_and_defaults_its_name_to_the_stem() {
    let yaml = "docstring: counts lines\nscript: wc -l \"$1\"\narguments:\n  file:\n    type: string\n    description: the file\n    required: true\n";
    let spec = CommandSpec::from_yaml("count_lines", yaml).unwrap();
    assert_eq!(spec.name, "count_lines");
    assert_eq!(spec.signature(), "count_lines <file>");
    assert_eq!(
        spec.script_command(&["my file.py".to_owned()], None)
            .unwrap(),
        "bash -c 'wc -l \"$1\"' count_lines 'my file.py'"
    );
    let named = CommandSpec::from_yaml("stem", "name: other\ndocstring: x\n").unwrap();
    assert_eq!(named.name, "other");
    assert_eq!(
        Registry::builtin()
            .unwrap()
            .get("open")
            .unwrap()
            .script_command(&[], None),
        None
    );
}

#[test]
fn a_custom_multi_line_command_gets_its_body_on_stdin() {
    let yaml = "signature: note <title>\ndocstring: x\nend_name: end_of_note\nscript: cat\narguments:\n  title:\n    type: string\n    description: t\n    required: true\n";
    let spec = CommandSpec::from_yaml("note", yaml).unwrap();
    assert_eq!(
        spec.script_command(&["a".to_owned()], Some("line 1\nline 2"))
            .unwrap(),
        "bash -c cat note a << 'end_of_note'\nline 1\nline 2\nend_of_note"
    );
}

#[test]
fn bad_specs_are_rejected_with_the_reason() {
    let unknown_key = CommandSpec::from_yaml("x", "docstring: a\nsignatur: x\n").unwrap_err();
    assert!(
        matches!(unknown_key, RegistryError::Yaml { ref name, .. } if name == "x"),
        "{unknown_key}"
    );
    assert!(
        unknown_key.to_string().contains("unknown field `signatur`"),
        "{unknown_key}"
    );
    let missing = CommandSpec::from_yaml("x", "signature: x <a>\n").unwrap_err();
    assert!(
        missing.to_string().contains("must name each argument once"),
        "{missing}"
    );
    let order = "arguments:\n  a:\n    type: string\n    description: a\n    required: false\n  b:\n    type: string\n    description: b\n    required: true\n";
    let order = CommandSpec::from_yaml("x", order).unwrap_err();
    assert_eq!(
        order.to_string(),
        "invalid command `x`: required argument `b` follows an optional one"
    );
    let no_body = CommandSpec::from_yaml("x", "end_name: done\n").unwrap_err();
    assert!(no_body.to_string().contains("needs a body argument"));
    let bad_name = CommandSpec::from_yaml("x", "name: a b\n").unwrap_err();
    assert!(bad_name.to_string().contains("the name must be"));
}

#[test]
fn specs_serialize_back_to_equivalent_yaml() {
    let registry = Registry::builtin().unwrap();
    for spec in registry.commands() {
        let text = serde_yaml::to_string(spec).unwrap();
        assert_eq!(
            &CommandSpec::from_yaml(&spec.name, &text).unwrap(),
            spec,
            "{text}"
        );
    }
}

#[test]
fn the_bash_tool_matches_v1() {
    let tool = CommandSpec::bash_tool().openai_tool(&window_env());
    assert_eq!(tool["function"]["name"], "bash");
    assert_eq!(
        tool["function"]["description"],
        "runs the given command directly in bash"
    );
    assert_eq!(
        tool["function"]["parameters"]["required"],
        serde_json::json!(["command"])
    );
}

#[test]
fn the_str_replace_editor_tool_has_1x_schema_with_its_enum_and_integer_array() {
    let registry = Registry::builtin().unwrap();
    let tool = registry
        .get("str_replace_editor")
        .unwrap()
        .openai_tool(&window_env());
    let parameters = &tool["function"]["parameters"];
    assert_eq!(
        parameters["required"],
        serde_json::json!(["command", "path"])
    );
    assert_eq!(
        parameters["properties"]["command"]["enum"],
        serde_json::json!(["view", "create", "str_replace", "insert", "undo_edit"])
    );
    assert_eq!(
        parameters["properties"]["view_range"],
        serde_json::json!({
            "type": "array",
            "items": {"type": "integer"},
            "description": "Optional parameter of `view` command when `path` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to the end of the file."
        })
    );
    assert_eq!(parameters["properties"]["insert_line"]["type"], "integer");
    let keys: Vec<&String> = parameters["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys.len(), 7);
    let description = tool["function"]["description"].as_str().unwrap();
    assert!(description.starts_with("Custom editing tool for viewing, creating and editing files * State is persistent across command calls and discussions with the user * If `path` is a file,"));
    assert!(
        description
            .contains("at `path`\nNotes for using the `str_replace` command: * The `old_str`")
    );
    assert!(description.ends_with("or error message if operation fails.\n"));
    let anthropic = registry
        .get("str_replace_editor")
        .unwrap()
        .anthropic_tool(&window_env());
    assert_eq!(&anthropic["input_schema"], parameters);
}

#[test]
fn a_docstring_can_be_replaced_by_name() {
    let mut registry = Registry::builtin().unwrap();
    assert!(registry.set_docstring("submit", "submits the current file"));
    assert_eq!(
        registry.get("submit").unwrap().docstring.as_deref(),
        Some("submits the current file")
    );
    assert!(!registry.set_docstring("nope", "x"));
}
