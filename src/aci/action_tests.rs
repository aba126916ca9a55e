//! Tests for splitting actions into sub-actions, and for the blocklist.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn registry() -> Registry {
    Registry::builtin().unwrap()
}

fn command(name: &str, args: &str, body: Option<&str>) -> SubAction {
    SubAction::Command {
        name: name.into(),
        args: args.into(),
        body: body.map(str::to_owned),
    }
}

fn shell(text: &str) -> SubAction {
    SubAction::Shell(text.into())
}

#[test]
fn a_single_command_is_one_sub_action() {
    assert_eq!(
        split_action("open src/a.py 40\n", &registry()),
        [command("open", "src/a.py 40", None)]
    );
    assert_eq!(
        split_action("scroll_down", &registry()),
        [command("scroll_down", "", None)]
    );
}

#[test]
fn an_edit_block_and_the_shell_lines_around_it_run_in_order() {
    let action = "ls -la\ncd src\nedit 5:6\n    return x\nend_of_edit\npython a.py\ngoto 3\n";
    assert_eq!(
        split_action(action, &registry()),
        [
            shell("ls -la\ncd src\n"),
            command("edit", "5:6", Some("    return x\n")),
            shell("python a.py\n"),
            command("goto", "3", None),
        ]
    );
}

#[test]
fn two_edit_blocks_are_two_commands() {
    let action = "edit 1:1\na\nend_of_edit\nedit 3:2\nb\nc\nend_of_edit";
    assert_eq!(
        split_action(action, &registry()),
        [
            command("edit", "1:1", Some("a\n")),
            command("edit", "3:2", Some("b\nc\n"))
        ]
    );
}

#[test]
fn an_empty_edit_body_deletes() {
    assert_eq!(
        split_action("edit 4:9\nend_of_edit\n", &registry()),
        [command("edit", "4:9", Some(""))]
    );
}

#[test]
fn the_end_line_may_carry_trailing_whitespace_and_crlf_but_not_indentation() {
    let action = "edit 1:1\r\nx\r\n  end_of_edit\r\nend_of_edit  \r\nls";
    assert_eq!(
        split_action(action, &registry()),
        [
            command("edit", "1:1", Some("x\r\n  end_of_edit\r\n")),
            shell("ls")
        ]
    );
}

#[test]
fn an_indented_edit_line_is_still_an_edit() {
    assert_eq!(
        split_action("  edit 2:2\nz\nend_of_edit", &registry()),
        [command("edit", "2:2", Some("z\n"))]
    );
}

#[test]
fn a_guarded_first_line_loses_its_heredoc_marker() {
    for first in [
        "edit 2:3 << 'end_of_edit'",
        "edit 2:3 <<end_of_edit",
        "edit 2:3 << \"end_of_edit\"",
    ] {
        let action = format!("{first}\nq\nend_of_edit\n");
        assert_eq!(
            split_action(&action, &registry()),
            [command("edit", "2:3", Some("q\n"))],
            "{first}"
        );
    }
}

#[test]
fn an_edit_without_its_end_line_takes_the_rest_of_the_action() {
    assert_eq!(
        split_action("edit 1:2\nfoo\nls\n", &registry()),
        [command("edit", "1:2", Some("foo\nls\n"))]
    );
}

#[test]
fn submit_ends_the_list() {
    let action = "rm reproduce.py\nsubmit\nls\nedit 1:1\nx\nend_of_edit";
    assert_eq!(
        split_action(action, &registry()),
        [shell("rm reproduce.py\n"), command("submit", "", None)]
    );
}

#[test]
fn submit_inside_an_edit_body_is_body_text() {
    let action = "edit 1:1\nsubmit\nend_of_edit\n";
    assert_eq!(
        split_action(action, &registry()),
        [command("edit", "1:1", Some("submit\n"))]
    );
}

#[test]
fn only_enabled_commands_are_commands() {
    let only_open = registry().enabled(&["open".to_owned()]).unwrap();
    assert_eq!(
        split_action("goto 5\nopen a.py", &only_open),
        [shell("goto 5\n"), command("open", "a.py", None)]
    );
    assert_eq!(split_action("submit", &only_open), [shell("submit")]);
}

#[test]
fn a_longer_word_is_not_a_command() {
    assert_eq!(
        split_action("editor a.py\nopenssl version", &registry()),
        [shell("editor a.py\nopenssl version")]
    );
}

#[test]
fn lines_inside_shell_constructs_are_never_commands() {
    let heredoc = "cat <<'EOF' > notes.txt\nopen this\nedit 1:2\nEOF\ngoto 4";
    assert_eq!(
        split_action(heredoc, &registry()),
        [
            shell("cat <<'EOF' > notes.txt\nopen this\nedit 1:2\nEOF\n"),
            command("goto", "4", None)
        ]
    );
    let looped = "for f in a b; do\n  open $f\ndone\nscroll_up";
    assert_eq!(
        split_action(looped, &registry()),
        [
            shell("for f in a b; do\n  open $f\ndone\n"),
            command("scroll_up", "", None)
        ]
    );
    let quoted = "python -c \"\nsubmit\n\"\n";
    assert_eq!(split_action(quoted, &registry()), [shell(quoted)]);
}

#[test]
fn blank_shell_input_is_dropped() {
    assert_eq!(
        split_action("\n  \nopen a\n\n\n", &registry()),
        [command("open", "a", None)]
    );
    assert_eq!(split_action("", &registry()), []);
}

#[test]
fn outputs_are_joined_without_empty_ones() {
    let outputs = ["a".to_owned(), String::new(), "b\nc".to_owned()];
    assert_eq!(join_outputs(&outputs), "a\nb\nc");
}

#[test]
fn the_v07_blocklist_refuses_interactive_programs() {
    let blocklist = Blocklist::v07_default();
    assert_eq!(
        blocked("vim src/a.py", &blocklist).as_deref(),
        Some("Interactive operation 'vim' is not supported by this environment")
    );
    assert_eq!(
        blocked("  git log\n", &blocklist).as_deref(),
        Some("Interactive operation 'git' is not supported by this environment")
    );
    assert!(blocked("gdb ./a.out", &blocklist).is_some());
    assert!(blocked("python", &blocklist).is_some());
    assert!(blocked(" su \n", &blocklist).is_some());
    assert!(blocked("exit", &blocklist).is_some());
    assert_eq!(blocked("python reproduce.py", &blocklist), None);
    assert_eq!(blocked("ls\nvim a", &blocklist), None);
    assert_eq!(blocked("   ", &blocklist), None);
}

#[test]
fn the_blocklist_is_configurable() {
    let blocklist: Blocklist = serde_yaml::from_str("first_word: [make]\n").unwrap();
    assert!(blocked("make test", &blocklist).is_some());
    assert!(blocked("vim a", &blocklist).is_none());
    assert_eq!(blocklist.standalone, Blocklist::v07_default().standalone);
    assert!(serde_yaml::from_str::<Blocklist>("first: [x]\n").is_err());
}

#[test]
fn an_aci_command_bash_could_not_find_is_named() {
    let registry = registry();
    let find = |output: &str| misplaced_command(output, &registry);
    assert_eq!(find("bash: line 1: open: command not found"), Some("open"));
    assert_eq!(
        find("x\nbash: search_dir: command not found\n"),
        Some("search_dir")
    );
    assert_eq!(find("bash: line 1: vimx: command not found"), None);
    assert_eq!(find("open: command not found here"), None);
    assert_eq!(find(""), None);
    let subset = registry.enabled(&["goto".to_owned()]).unwrap();
    assert_eq!(
        misplaced_command("bash: open: command not found", &subset),
        None
    );
}
