//! Tests for the model-output parsers, including round trips from a tool call to the command
//! string and back through the action splitter and the commands' argument parsers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::aci::action::{SubAction, split_action};
use crate::aci::edit::{EditRange, parse_edit_args};
use crate::aci::search::{SearchRequest, parse_search_dir};
use crate::aci::window::{OpenRequest, parse_open_args};

fn registry() -> Registry {
    let mut registry = Registry::builtin().unwrap();
    registry.add(CommandSpec::bash_tool()).unwrap();
    registry
}

fn call(name: &str, arguments: &str) -> Result<String, FormatError> {
    function_call_to_command(&registry(), name, arguments)
}

fn code(result: Result<String, FormatError>) -> (ErrorCode, String) {
    let error = result.unwrap_err();
    (error.error_code, error.message)
}

#[test]
fn the_last_fenced_block_is_the_action_and_the_rest_the_thought() {
    let text = "DISCUSSION\nFirst I look.\n```\nls -la\n```\nThen more.\n";
    let (thought, action) = thought_action(text).unwrap();
    assert_eq!(action, "ls -la\n");
    assert_eq!(thought, "DISCUSSION\nFirst I look.\nThen more.\n");
    let two = "```\nfirst\n```\nmiddle\n```bash\nsecond\n```";
    assert_eq!(
        thought_action(two).unwrap(),
        (
            "```\nfirst\n```\nmiddle\n".to_owned(),
            "second\n".to_owned()
        )
    );
}

#[test]
fn a_block_nested_in_another_is_part_of_the_outer_action() {
    let text = "x\n```\nouter\n```python\ninner\n```\n```";
    let (thought, action) = thought_action(text).unwrap();
    assert_eq!(action, "outer\n```python\ninner\n```\n");
    assert_eq!(thought, "x\n");
}

#[test]
fn the_opening_fence_eats_blank_lines_after_it() {
    let (_, action) = thought_action("```bash  \n\n  ls\n```\n").unwrap();
    assert_eq!(action, "  ls\n");
}

#[test]
fn fences_must_start_a_line_and_info_strings_have_no_spaces() {
    assert_eq!(
        code(thought_action("run ```ls``` now").map(|pair| pair.1)).0,
        ErrorCode::NoAction
    );
    assert_eq!(
        code(thought_action("```python extra\nls\n```\n").map(|pair| pair.1)).0,
        ErrorCode::NoAction
    );
}

#[test]
fn no_block_or_an_unclosed_block_is_a_no_action_error() {
    let error = thought_action("I will just talk.").unwrap_err();
    assert_eq!(
        error,
        FormatError {
            error_code: ErrorCode::NoAction,
            message: "No action found in model response.".into(),
            actions: Vec::new(),
        }
    );
    assert_eq!(error.error_code.as_str(), "no_action");
    assert!(thought_action("```\nls\n").is_err());
}

#[test]
fn an_edit_block_survives_thought_action_parsing() {
    let text = "Fix it.\n```\nedit 3:3\n    return 1\nend_of_edit\n```";
    let (_, action) = thought_action(text).unwrap();
    assert_eq!(action, "edit 3:3\n    return 1\nend_of_edit\n");
}

#[test]
fn a_tool_call_renders_into_the_signature() {
    assert_eq!(
        call("open", r#"{"path": "src/a.py", "line_number": 10}"#).unwrap(),
        "open \"src/a.py\" 10"
    );
    assert_eq!(
        call("open", r#"{"path": "src/a.py"}"#).unwrap(),
        "open \"src/a.py\""
    );
    assert_eq!(call("goto", r#"{"line_number": 583}"#).unwrap(), "goto 583");
    assert_eq!(
        call("goto", r#"{"line_number": "583"}"#).unwrap(),
        "goto 583"
    );
    assert_eq!(
        call("search_dir", r#"{"search_term": "foo bar", "dir": "src"}"#).unwrap(),
        "search_dir 'foo bar' src"
    );
    assert_eq!(
        call("search_file", r#"{"search_term": "it's"}"#).unwrap(),
        r#"search_file 'it'"'"'s'"#
    );
    assert_eq!(call("submit", "").unwrap(), "submit");
    assert_eq!(call("scroll_down", "{}").unwrap(), "scroll_down");
    assert_eq!(
        call("search_dir", r#"{"search_term": "x", "dir": null}"#).unwrap(),
        "search_dir x"
    );
}

#[test]
fn a_quoted_placeholder_keeps_a_path_with_spaces_as_one_argument() {
    let command = call("open", r#"{"path": "my dir/a \"b\".py", "line_number": 3}"#).unwrap();
    assert_eq!(command, r#"open "my dir/a \"b\".py" 3"#);
    assert_eq!(
        parse_open_args(command.strip_prefix("open ").unwrap()).unwrap(),
        OpenRequest {
            path: "my dir/a \"b\".py".into(),
            line: Some("3".into())
        }
    );
}

#[test]
fn an_edit_call_puts_the_body_on_its_own_lines() {
    let expected = "edit 5:6\n    x = 1\n    y = 2\nend_of_edit";
    for body in [r#""    x = 1\n    y = 2""#, r#""    x = 1\n    y = 2\n""#] {
        let arguments =
            format!(r#"{{"start_line": 5, "end_line": 6, "replacement_text": {body}}}"#);
        assert_eq!(call("edit", &arguments).unwrap(), expected);
    }
    let delete = call(
        "edit",
        r#"{"start_line": 5, "end_line": 6, "replacement_text": ""}"#,
    )
    .unwrap();
    assert_eq!(delete, "edit 5:6\nend_of_edit");
    let with_end = call(
        "edit",
        r#"{"start_line": 1, "end_line": 1, "replacement_text": "a b", "end_of_edit": ""}"#,
    );
    assert_eq!(with_end.unwrap(), "edit 1:1\na b\nend_of_edit");
}

#[test]
fn the_bash_tool_is_passed_through_unquoted() {
    assert_eq!(
        call("bash", r#"{"command": "ls -la | head"}"#).unwrap(),
        "ls -la | head"
    );
}

#[test]
fn bad_tool_calls_are_format_errors_with_v1_codes() {
    assert_eq!(
        code(call("vim", "{}")),
        (
            ErrorCode::InvalidCommand,
            "Command 'vim' not found in list of available commands".into()
        )
    );
    assert_eq!(
        code(call("goto", "{bad")),
        (
            ErrorCode::InvalidJson,
            "Tool call arguments are not valid JSON.".into()
        )
    );
    assert_eq!(code(call("goto", "[1]")).0, ErrorCode::InvalidJson);
    assert_eq!(
        code(call("edit", r#"{"replacement_text": "x"}"#)),
        (
            ErrorCode::MissingArg,
            "Required argument(s) missing: start_line, end_line".into()
        )
    );
    assert_eq!(
        code(call("goto", r#"{"line_number": 1, "zoom": 2, "axis": 3}"#)),
        (
            ErrorCode::UnexpectedArg,
            "Unexpected argument(s): axis, zoom".into()
        )
    );
    assert_eq!(ErrorCode::UnexpectedArg.as_str(), "unexpected_arg");
}

#[test]
fn zero_or_several_tool_calls_are_missing_or_multiple() {
    let registry = registry();
    assert_eq!(
        function_calls_to_command(&registry, &[])
            .unwrap_err()
            .error_code,
        ErrorCode::Missing
    );
    let goto = ToolCall {
        name: "goto".into(),
        arguments: r#"{"line_number": 2}"#.into(),
    };
    let two = [goto.clone(), goto.clone()];
    let error = function_calls_to_command(&registry, &two).unwrap_err();
    assert_eq!(error.error_code, ErrorCode::Multiple);
    assert_eq!(
        error.message,
        "Expected exactly one tool call in model response - received 2 tool calls"
    );
    assert_eq!(
        function_calls_to_command(&registry, &[goto]).unwrap(),
        "goto 2"
    );
}

#[test]
fn a_tool_call_round_trips_through_the_action_splitter() {
    let registry = registry();
    let edit = call(
        "edit",
        r#"{"start_line": 5, "end_line": 6, "replacement_text": "foo\nbar"}"#,
    )
    .unwrap();
    let split = split_action(&edit, &registry);
    assert_eq!(
        split,
        [SubAction::Command {
            name: "edit".into(),
            args: "5:6".into(),
            body: Some("foo\nbar\n".into())
        }]
    );
    assert_eq!(parse_edit_args("5:6"), Ok(EditRange { start: 5, end: 6 }));

    let search = call(
        "search_dir",
        r#"{"search_term": "foo bar", "dir": "my src"}"#,
    )
    .unwrap();
    let [
        SubAction::Command {
            name,
            args,
            body: None,
        },
    ] = &split_action(&search, &registry)[..]
    else {
        panic!("not one command: {search}");
    };
    assert_eq!(name, "search_dir");
    assert_eq!(
        parse_search_dir(args),
        Ok(SearchRequest::Dir {
            term: "foo bar".into(),
            dir: "my src".into()
        })
    );

    let open = call("open", r#"{"path": "a b.py", "line_number": 7}"#).unwrap();
    let [SubAction::Command { args, .. }] = &split_action(&open, &registry)[..] else {
        panic!("not one command: {open}");
    };
    assert_eq!(
        parse_open_args(args),
        Ok(OpenRequest {
            path: "a b.py".into(),
            line: Some("7".into())
        })
    );
}

#[test]
fn a_thought_action_answer_round_trips_to_sub_actions() {
    let answer =
        "Let me fix and check.\n```\nedit 2:2\n    pass\nend_of_edit\npython -m pytest -q\n```\n";
    let (_, action) = thought_action(answer).unwrap();
    assert_eq!(
        split_action(&action, &registry()),
        [
            SubAction::Command {
                name: "edit".into(),
                args: "2:2".into(),
                body: Some("    pass\n".into())
            },
            SubAction::Shell("python -m pytest -q\n".into()),
        ]
    );
}

const MINI_REGEX: &str = r"```mswea_bash_command\s*\n(.*?)\n```";

#[test]
fn the_action_regex_parser_takes_the_one_match_trimmed_and_the_text_around_it() {
    let regex = compile_action_regex(MINI_REGEX).unwrap();
    let text = "THOUGHT: look\n\n```mswea_bash_command\n  ls -la\ncat a.py\n```\nafter";
    assert_eq!(
        action_regex(text, &regex).unwrap(),
        (
            "THOUGHT: look\n\n\nafter".to_owned(),
            "ls -la\ncat a.py".to_owned()
        )
    );
}

#[test]
fn the_action_regex_parser_refuses_zero_or_two_matches_and_counts_them() {
    let regex = compile_action_regex(MINI_REGEX).unwrap();
    let none = action_regex("```bash\nls\n```", &regex).unwrap_err();
    assert_eq!(
        none,
        FormatError {
            error_code: ErrorCode::ActionCount,
            message: "Expected exactly 1 action, found 0.".into(),
            actions: Vec::new(),
        }
    );
    let two = "```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```";
    let error = action_regex(two, &regex).unwrap_err();
    assert_eq!(error.message, "Expected exactly 1 action, found 2.");
    assert_eq!(error.actions, ["ls", "pwd"]);
    assert_eq!(error.error_code.as_str(), "action_count");
}

#[test]
fn an_empty_or_broken_action_regex_is_refused_with_its_key() {
    assert_eq!(
        compile_action_regex("").unwrap_err(),
        "agent.action_regex is empty; parser action_regex needs one"
    );
    assert_eq!(
        compile_action_regex("(").unwrap_err(),
        "agent.action_regex: `(` is not a valid regex: unclosed group"
    );
}

#[test]
fn a_str_replace_editor_call_writes_given_arguments_in_their_formats_and_reads_back() {
    let line = call(
        "str_replace_editor",
        r#"{"command": "str_replace", "path": "/testbed/a.py", "old_str": "x = 1\n  y", "new_str": "it's"}"#,
    )
    .unwrap();
    assert_eq!(
        line,
        "str_replace_editor str_replace /testbed/a.py   --old_str 'x = 1\n  y' --new_str 'it'\"'\"'s'"
    );
    let view = call(
        "str_replace_editor",
        r#"{"command": "view", "path": "/testbed", "view_range": [3, -1], "file_text": null}"#,
    )
    .unwrap();
    assert_eq!(view, "str_replace_editor view /testbed  --view_range 3 -1");
    let insert = call(
        "str_replace_editor",
        r#"{"command": "insert", "path": "/t/a.py", "insert_line": 0, "new_str": ""}"#,
    )
    .unwrap();
    assert_eq!(
        insert,
        "str_replace_editor insert /t/a.py    --new_str '' --insert_line 0"
    );
    // Through the splitter, the quoted lines stay one command, and argparse reads the values.
    let subs = split_action(&format!("{line}\nls\n"), &registry());
    let SubAction::Command { name, args, .. } = &subs[0] else {
        panic!("{subs:?}");
    };
    assert_eq!(name, "str_replace_editor");
    assert_eq!(subs[1], SubAction::Shell("ls\n".to_owned()));
    let request =
        crate::aci::str_replace_editor::parse_args(&crate::aci::args::split_words(args)).unwrap();
    assert_eq!(request.old_str.as_deref(), Some("x = 1\n  y"));
    assert_eq!(request.new_str.as_deref(), Some("it's"));
    let request = crate::aci::str_replace_editor::parse_args(&crate::aci::args::split_words(
        view.trim_start_matches("str_replace_editor"),
    ))
    .unwrap();
    assert_eq!(request.view_range, Some([3, -1]));
    assert_eq!(
        code(call("str_replace_editor", r#"{"path": "/t"}"#)),
        (
            ErrorCode::MissingArg,
            "Required argument(s) missing: command".to_owned()
        )
    );
}

fn bash_call(name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

#[test]
fn bash_tool_calls_run_every_calls_command_in_order() {
    let calls = [
        bash_call("bash", r#"{"command": "ls -la"}"#),
        bash_call("bash", r#"{"command": "cat a.py", "other": 1}"#),
        bash_call("bash", r#"{"command": 7}"#),
    ];
    assert_eq!(
        bash_tool_calls(&calls).unwrap(),
        ["ls -la", "cat a.py", "7"]
    );
}

#[test]
fn bash_tool_calls_refuse_no_call_and_a_bad_call_with_minis_words() {
    let none = bash_tool_calls(&[]).unwrap_err();
    assert_eq!(
        (none.error_code, none.message.as_str()),
        (
            ErrorCode::ActionCount,
            "No tool calls found in the response. Every response MUST include at least one tool call."
        )
    );
    let unknown = bash_tool_calls(&[
        bash_call("bash", r#"{"command": "ls"}"#),
        bash_call("edit", r#"{"path": "a"}"#),
    ])
    .unwrap_err();
    assert_eq!(
        (unknown.error_code, unknown.message.as_str()),
        (
            ErrorCode::InvalidCommand,
            "Unknown tool 'edit'.Missing 'command' argument in bash tool call."
        )
    );
    let missing = bash_tool_calls(&[bash_call("bash", r#"{"cmd": "ls"}"#)]).unwrap_err();
    assert_eq!(
        (missing.error_code, missing.message.as_str()),
        (
            ErrorCode::MissingArg,
            "Missing 'command' argument in bash tool call."
        )
    );
    let broken = bash_tool_calls(&[bash_call("bash", "{\"command\": ")]).unwrap_err();
    assert_eq!(broken.error_code, ErrorCode::InvalidJson);
    assert!(
        broken
            .message
            .starts_with("Error parsing tool call arguments: "),
        "{}",
        broken.message
    );
    assert!(
        broken
            .message
            .ends_with(".Missing 'command' argument in bash tool call."),
        "{}",
        broken.message
    );
}
