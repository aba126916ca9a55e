//! Tests for `str_replace_editor`: every message, exact, as SWE-agent 1.x's script prints it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

// The expected texts below are what SWE-agent 1.x's script printed for the same calls.

const A_PY: &str = "def f(x):\n\treturn x\n\n\nclass A:\n    pass\n";
const LONG: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n";

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|word| (*word).to_owned()).collect()
}

#[test]
fn view_numbers_every_line_as_cat_n_with_tabs_expanded_and_the_last_empty_line() {
    assert_eq!(
        view_file("/w/a.py", A_PY, None, None).unwrap(),
        "Here's the result of running `cat -n` on /w/a.py:\n     1\tdef f(x):\n     2\t        return x\n     3\t\n     4\t\n     5\tclass A:\n     6\t    pass\n     7\t\n\n"
    );
}

#[test]
fn view_range_shows_those_lines_and_minus_one_runs_to_the_end() {
    assert_eq!(
        view_file("/w/a.py", A_PY, Some([2, 3]), None).unwrap(),
        "Here's the result of running `cat -n` on /w/a.py:\n     2\t        return x\n     3\t\n\n"
    );
    assert_eq!(
        view_file("/w/a.py", A_PY, Some([5, -1]), None).unwrap(),
        "Here's the result of running `cat -n` on /w/a.py:\n     5\tclass A:\n     6\t    pass\n     7\t\n\n"
    );
}

#[test]
fn view_range_checks_say_which_element_is_wrong() {
    assert_eq!(
        view_file("/w/a.py", A_PY, Some([0, 3]), None).unwrap_err(),
        "Invalid `view_range`: [0, 3]. Its first element `0` should be within the range of lines of the file: [1, 7]\n"
    );
    assert_eq!(
        view_file("/w/a.py", A_PY, Some([2, 9]), None).unwrap_err(),
        "Invalid `view_range`: [2, 9]. Its second element `9` should be smaller than the number of lines in the file: `7`\n"
    );
    assert_eq!(
        view_file("/w/a.py", A_PY, Some([3, 2]), None).unwrap_err(),
        "Invalid `view_range`: [3, 2]. Its second element `2` should be larger or equal than its first `3`\n"
    );
}

#[test]
fn a_long_file_is_clipped_at_16000_characters_with_the_note() {
    let text = "é".repeat(MAX_RESPONSE_LEN + 5);
    let out = view_file("/w/big.txt", &text, None, None).unwrap();
    assert_eq!(
        out,
        format!(
            "Here's the result of running `cat -n` on /w/big.txt:\n     1\t{}{TRUNCATED_MESSAGE}\n\n",
            "é".repeat(MAX_RESPONSE_LEN)
        )
    );
}

#[test]
fn with_the_filemap_a_large_python_file_has_its_long_function_bodies_elided() {
    let mut text = String::from("import os\n\ndef long():\n");
    for index in 0..6 {
        text.push_str(&format!("    x{index} = {index}\n"));
    }
    text.push_str("\ndef short():\n    return 1\n");
    text.push_str(&format!("# {}\n", "p".repeat(MAX_RESPONSE_LEN)));
    let bodies = crate::lint::python_function_bodies(text.as_bytes());
    let out = view_file("/w/m.py", &text, None, Some(&bodies)).unwrap();
    let expected = format!(
        "{FILEMAP_NOTE}\n     1 import os\n     2 \n     3 def long():\n     4 ... eliding lines 4-9 ...\n    10 \n    11 def short():\n    12     return 1\n    13 # {}\n{FILEMAP_IMPORTANT}\n",
        "p".repeat(MAX_RESPONSE_LEN - 30)
    );
    // The map itself is cut at 16000 characters like any output.
    let map_start = expected.find("     1 import").unwrap();
    let cut = format!(
        "{}{TRUNCATED_MESSAGE}\n{FILEMAP_IMPORTANT}\n",
        &out[map_start..map_start + MAX_RESPONSE_LEN]
    );
    assert_eq!(&out[map_start..], cut);
    assert!(out.starts_with(&format!("{FILEMAP_NOTE}\n     1 import os\n     2 \n     3 def long():\n     4 ... eliding lines 4-9 ...\n    10 \n    11 def short():\n    12     return 1\n    13 # ppp")));
    // Without the filemap, or with a view_range, the file is numbered as usual.
    assert!(
        view_file("/w/m.py", &text, None, None)
            .unwrap()
            .starts_with("Here's the result")
    );
    assert!(
        view_file("/w/m.py", &text, Some([1, 2]), Some(&bodies))
            .unwrap()
            .starts_with("Here's the result")
    );
}

#[test]
fn a_directory_is_listed_under_its_heading_or_not_at_all_when_find_complained() {
    let listing = "/w/pkg\n/w/pkg/__init__.py\n/w/pkg/sub\n/w/pkg/sub/m.py\n";
    assert_eq!(
        view_dir("/w/pkg", None, listing, "").unwrap(),
        "Here's the files and directories up to 2 levels deep in /w/pkg, excluding hidden items:\n/w/pkg\n/w/pkg/__init__.py\n/w/pkg/sub\n/w/pkg/sub/m.py\n\n\n"
    );
    assert_eq!(view_dir("/w/pkg", None, listing, "find: x").unwrap(), "");
    assert_eq!(
        view_dir("/w/pkg", Some([1, 2]), listing, "").unwrap_err(),
        "The `view_range` parameter is not allowed when `path` points to a directory.\n"
    );
    assert_eq!(
        find_command("/w/pkg"),
        r"find /w/pkg -maxdepth 2 -not -path '*/\.*'"
    );
}

#[test]
fn path_checks_come_first_with_their_messages() {
    assert_eq!(
        check_path("view", "a.py", PathKind::File, "/tmp/sre/w").unwrap_err(),
        "The path a.py is not an absolute path, it should start with `/`. Maybe you meant /tmp/sre/w/a.py?\n"
    );
    assert_eq!(
        check_path("view", "/w/nope.py", PathKind::Missing, "/").unwrap_err(),
        "The path /w/nope.py does not exist. Please provide a valid path.\n"
    );
    assert_eq!(
        check_path("create", "/w/a.py", PathKind::File, "/").unwrap_err(),
        "File already exists at: /w/a.py. Cannot overwrite files using command `create`.\n"
    );
    assert_eq!(
        check_path("str_replace", "/w", PathKind::Dir, "/").unwrap_err(),
        "The path /w is a directory and only the `view` command can be used on directories\n"
    );
    assert_eq!(
        check_path("create", "/w/new.py", PathKind::Missing, "/"),
        Ok(())
    );
    assert_eq!(check_path("view", "/w", PathKind::Dir, "/"), Ok(()));
    assert_eq!(check_path("frob", "/w/a.py", PathKind::File, "/"), Ok(()));
}

#[test]
fn paths_are_printed_as_pathlib_prints_them() {
    assert_eq!(normalize_path("/tmp/sre/w/"), "/tmp/sre/w");
    assert_eq!(normalize_path("/a//b/./c"), "/a/b/c");
    assert_eq!(normalize_path("./a.py"), "a.py");
    assert_eq!(normalize_path(""), ".");
    assert_eq!(normalize_path("/a/../b"), "/a/../b");
    assert_eq!(normalize_path("//a"), "//a");
    assert_eq!(normalize_path("///a"), "/a");
    assert_eq!(parent_path("/w/none/b.py"), "/w/none");
    assert_eq!(parent_path("/b.py"), "/");
    assert_eq!(parent_path("b.py"), ".");
    assert_eq!(
        check_path("view", ".", PathKind::Dir, "/testbed").unwrap_err(),
        "The path . is not an absolute path, it should start with `/`. Maybe you meant /testbed?\n"
    );
}

#[test]
fn command_and_parameter_messages() {
    assert_eq!(
        unrecognized_command("frob"),
        "Unrecognized command frob. The allowed commands for the str_replace_editor tool are: \"view\", \"create\", \"str_replace\", \"insert\", \"undo_edit\"\n"
    );
    assert_eq!(
        missing_parameter("file_text", "create"),
        "Parameter `file_text` is required for command: create\n"
    );
    assert_eq!(
        missing_parameter("insert_line", "insert"),
        "Parameter `insert_line` is required for command: insert\n"
    );
    assert_eq!(
        missing_parameter("new_str", "insert"),
        "Parameter `new_str` is required for command: insert\n"
    );
    assert_eq!(
        missing_parameter("old_str", "str_replace"),
        "Parameter `old_str` is required for command: str_replace\n"
    );
}

#[test]
fn create_reports_success_or_the_missing_parent() {
    assert_eq!(
        create("/w/new.py", true).unwrap(),
        "File created successfully at: /w/new.py\n"
    );
    assert_eq!(
        create("/w/none/b.py", false).unwrap_err(),
        "The parent directory /w/none does not exist. Please create it first.\n"
    );
}

#[test]
fn str_replace_shows_a_snippet_of_four_lines_around_the_new_text() {
    let edit = str_replace("/w/long.txt", LONG, "l6", Some("six\nSIX")).unwrap();
    assert_eq!(
        edit.message,
        "The file /w/long.txt has been edited. Here's the result of running `cat -n` on a snippet of /w/long.txt:\n     1\tl1\n     2\tl2\n     3\tl3\n     4\tl4\n     5\tl5\n     6\tsix\n     7\tSIX\n     8\tl7\n     9\tl8\n    10\tl9\nReview the changes and make sure they are as expected. Edit the file again if necessary.\n"
    );
    assert_eq!(
        edit.text,
        "l1\nl2\nl3\nl4\nl5\nsix\nSIX\nl7\nl8\nl9\nl10\nl11\nl12\n"
    );
    assert_eq!(edit.history, LONG);
    assert_eq!((edit.start, edit.end, edit.replacement_lines), (6, 6, 2));
}

#[test]
fn str_replace_at_the_end_and_with_nothing_stops_the_snippet_at_the_last_line() {
    let edit = str_replace("/w/long.txt", LONG, "l12", Some("")).unwrap();
    assert_eq!(
        edit.message,
        "The file /w/long.txt has been edited. Here's the result of running `cat -n` on a snippet of /w/long.txt:\n     7\tl7\n     8\tl8\n     9\tl9\n    10\tl10\n    11\tl11\n    12\t\nReview the changes and make sure they are as expected. Edit the file again if necessary.\n"
    );
    // Without new_str, nothing is put in.
    assert_eq!(
        str_replace("/w/long.txt", LONG, "l12", None).unwrap().text,
        edit.text
    );
}

#[test]
fn str_replace_expands_the_tabs_of_the_whole_file() {
    let edit = str_replace("/w/a.py", A_PY, "\treturn x", Some("\treturn  x")).unwrap();
    assert_eq!(
        edit.message,
        "The file /w/a.py has been edited. Here's the result of running `cat -n` on a snippet of /w/a.py:\n     1\tdef f(x):\n     2\t        return  x\n     3\t\n     4\t\n     5\tclass A:\nReview the changes and make sure they are as expected. Edit the file again if necessary.\n"
    );
    assert_eq!(
        edit.text,
        "def f(x):\n        return  x\n\n\nclass A:\n    pass\n"
    );
    assert_eq!(
        edit.history,
        "def f(x):\n        return x\n\n\nclass A:\n    pass\n"
    );
}

#[test]
fn str_replace_refuses_missing_repeated_and_unchanged_strings() {
    let dup = "x = 1\ny = 2\nx = 1\n";
    assert_eq!(
        str_replace("/w/dup.py", dup, "x = 1", Some("x")).unwrap_err(),
        "No replacement was performed. Multiple occurrences of old_str `x = 1` in lines [1, 3]. Please ensure it is unique\n"
    );
    assert_eq!(
        str_replace("/w/long.txt", LONG, "l1", Some("L1")).unwrap_err(),
        "No replacement was performed. Multiple occurrences of old_str `l1` in lines [1, 10, 11, 12]. Please ensure it is unique\n"
    );
    assert_eq!(
        str_replace("/w/dup.py", dup, "z", Some("x")).unwrap_err(),
        "No replacement was performed, old_str `z` did not appear verbatim in /w/dup.py.\n"
    );
    assert_eq!(
        str_replace("/w/dup.py", dup, "y = 2", Some("y = 2")).unwrap_err(),
        "No replacement was performed, old_str `y = 2` is the same as new_str `y = 2`.\n"
    );
    // A multi-line old_str found twice is in no single line.
    assert_eq!(
        str_replace("/w/d", "a\nb\na\nb\n", "a\nb", Some("c")).unwrap_err(),
        "No replacement was performed. Multiple occurrences of old_str `a\nb` in lines []. Please ensure it is unique\n"
    );
}

#[test]
fn emptying_a_file_ends_in_the_assertion_1x_fails_with_but_the_edit_is_made() {
    let edit = str_replace("/w/one.txt", "only", "only", Some("")).unwrap();
    assert_eq!(edit.text, "");
    assert_eq!(
        edit.message,
        "Traceback (most recent call last):\nAssertionError: (1, 0, 1)\n"
    );
}

#[test]
fn insert_puts_the_lines_after_insert_line_and_shows_them_with_context() {
    let after_six = "l1\nl2\nl3\nl4\nl5\nsix\nSIX\nl7\nl8\nl9\nl10\nl11\nl12\n";
    let edit = insert("/w/long.txt", after_six, 2, "ins1\nins2").unwrap();
    assert_eq!(
        edit.message,
        "The file /w/long.txt has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\tl1\n     2\tl2\n     3\tins1\n     4\tins2\n     5\tl3\n     6\tl4\n     7\tl5\n     8\tsix\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n"
    );
    assert_eq!(
        edit.text,
        "l1\nl2\nins1\nins2\nl3\nl4\nl5\nsix\nSIX\nl7\nl8\nl9\nl10\nl11\nl12\n"
    );
    let top = insert("/w/long.txt", &edit.text, 0, "top").unwrap();
    assert_eq!(
        top.message,
        "The file /w/long.txt has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\ttop\n     2\tl1\n     3\tl2\n     4\tins1\n     5\tins2\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n"
    );
    assert_eq!((top.start, top.end, top.replacement_lines), (1, 0, 1));
}

#[test]
fn insert_refuses_a_line_outside_the_file() {
    assert_eq!(
        insert("/w/dup.py", "x = 1\ny = 2\nx = 1\n", 9, "q").unwrap_err(),
        "Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 4]\n"
    );
    assert_eq!(
        insert("/w/dup.py", "x = 1\n", -1, "q").unwrap_err(),
        "Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 2]\n"
    );
}

#[test]
fn undo_shows_the_restored_file_and_the_history_is_a_stack_per_path() {
    assert_eq!(
        undone("/w/new.py", "a\tb\n"),
        "Last edit to /w/new.py undone successfully. Here's the result of running `cat -n` on /w/new.py:\n     1\ta       b\n     2\t\n\n"
    );
    assert_eq!(
        no_history("/w/dup.py"),
        "No edit history found for /w/dup.py.\n"
    );
    let mut history = FileHistory::default();
    history.push("/w/a", "one".to_owned());
    history.push("/w/a", "two".to_owned());
    history.push("/w/b", "other".to_owned());
    assert_eq!(history.pop("/w/a").as_deref(), Some("two"));
    assert_eq!(history.pop("/w/a").as_deref(), Some("one"));
    assert_eq!(history.pop("/w/a"), None);
    assert_eq!(history.pop("/w/c"), None);
}

#[test]
fn files_are_read_as_python_reads_text_and_written_back_in_their_encoding() {
    assert_eq!(
        decode(b"a\r\nb\rc\n"),
        ("a\nb\nc\n".to_owned(), Encoding::Utf8)
    );
    assert_eq!(
        decode(b"caf\xe9\n"),
        ("caf\u{e9}\n".to_owned(), Encoding::Latin1)
    );
    assert_eq!(
        encode("caf\u{e9}\n", Encoding::Latin1, "/w/l").unwrap(),
        b"caf\xe9\n"
    );
    assert_eq!(
        encode("caf\u{e9}\n", Encoding::Utf8, "/w/l").unwrap(),
        "caf\u{e9}\n".as_bytes()
    );
    assert_eq!(
        encode("a\u{2013}", Encoding::Latin1, "/w/l").unwrap_err(),
        "Ran into 'latin-1' codec can't encode character '\\u2013' in position 1: ordinal not in range(256) while trying to write to /w/l\n"
    );
}

#[test]
fn tabs_expand_to_stops_of_eight_and_lines_split_as_python_splits_them() {
    assert_eq!(
        expand_tabs("a\tb\n\tc\r12345678\td"),
        "a       b\n        c\r12345678        d"
    );
    assert_eq!(
        python_splitlines("a\nb\r\nc\x0cd\n"),
        vec!["a", "b", "c", "d"]
    );
    assert_eq!(python_splitlines(""), Vec::<&str>::new());
    assert_eq!(python_splitlines("a\n\n"), vec!["a", ""]);
}

#[test]
fn the_arguments_are_read_as_argparse_reads_them() {
    let request = parse_args(&words(&[
        "str_replace",
        "/w/a.py",
        "--old_str",
        "a b",
        "--new_str=-x",
        "--insert_line",
        "3",
        "--view_range",
        "1",
        "-1",
    ]))
    .unwrap();
    assert_eq!(
        request,
        Request {
            command: "str_replace".to_owned(),
            path: "/w/a.py".to_owned(),
            file_text: None,
            view_range: Some([1, -1]),
            old_str: Some("a b".to_owned()),
            new_str: Some("-x".to_owned()),
            insert_line: Some(3),
        }
    );
    // Abbreviations, options before the positionals, a value with a space that starts with `-`.
    let request = parse_args(&words(&["--old", "-x y", "view", "/w"])).unwrap();
    assert_eq!(request.old_str.as_deref(), Some("-x y"));
    assert_eq!(
        (request.command.as_str(), request.path.as_str()),
        ("view", "/w")
    );
}

#[test]
fn argparse_errors_are_the_usage_and_the_error() {
    let error = |list: &[&str]| parse_args(&words(list)).unwrap_err();
    assert_eq!(
        error(&[]),
        format!(
            "{USAGE}str_replace_editor: error: the following arguments are required: command, path\n"
        )
    );
    assert!(USAGE.starts_with("usage: str_replace_editor [-h] [--file_text FILE_TEXT]\n                          [--view_range VIEW_RANGE VIEW_RANGE]\n"));
    assert_eq!(
        error(&["view"]),
        format!("{USAGE}str_replace_editor: error: the following arguments are required: path\n")
    );
    assert_eq!(
        error(&["view", "/a", "b"]),
        format!("{USAGE}str_replace_editor: error: unrecognized arguments: b\n")
    );
    assert_eq!(
        error(&["view", "/a", "--zzz"]),
        format!("{USAGE}str_replace_editor: error: unrecognized arguments: --zzz\n")
    );
    assert_eq!(
        error(&["view", "/a", "--view_range", "1"]),
        format!("{USAGE}str_replace_editor: error: argument --view_range: expected 2 arguments\n")
    );
    assert_eq!(
        error(&["view", "/a", "--view_range", "x", "2"]),
        format!(
            "{USAGE}str_replace_editor: error: argument --view_range: invalid int value: 'x'\n"
        )
    );
    assert_eq!(
        error(&["view", "/a", "--insert_line", "1.5"]),
        format!(
            "{USAGE}str_replace_editor: error: argument --insert_line: invalid int value: '1.5'\n"
        )
    );
    assert_eq!(
        error(&["view", "/a", "--old_str", "-x"]),
        format!("{USAGE}str_replace_editor: error: argument --old_str: expected one argument\n")
    );
    assert_eq!(
        error(&["view", "/a", "--new_str", "--old_str", "x"]),
        format!("{USAGE}str_replace_editor: error: argument --new_str: expected one argument\n")
    );
    // A negative number is a value.
    assert_eq!(
        parse_args(&words(&["view", "/a", "--old_str", "-1"]))
            .unwrap()
            .old_str
            .as_deref(),
        Some("-1")
    );
}

#[test]
fn a_rejected_edit_says_why_shows_both_versions_and_that_nothing_changed() {
    let edit = str_replace("/w/long.txt", LONG, "l6", Some("six\nSIX")).unwrap();
    let text = lint_rejection(
        "FIRST",
        &["E999 IndentationError: unexpected indent".to_owned()],
        "/w/long.txt",
        &edit,
    );
    assert_eq!(
        text,
        "FIRST\n\nERRORS:\n- E999 IndentationError: unexpected indent\n\nThis is how your edit would have looked if applied\n-------------------------------------------------\nHere's the result of running `cat -n` on /w/long.txt:\n     2\tl2\n     3\tl3\n     4\tl4\n     5\tl5\n     6\tsix\n     7\tSIX\n     8\tl7\n     9\tl8\n    10\tl9\n    11\tl10\n-------------------------------------------------\n\nThis is the original code before your edit\n-------------------------------------------------\nHere's the result of running `cat -n` on /w/long.txt:\n     2\tl2\n     3\tl3\n     4\tl4\n     5\tl5\n     6\tl6\n     7\tl7\n     8\tl8\n     9\tl9\n    10\tl10\n-------------------------------------------------\nYour changes have NOT been applied. Please fix your edit command and try again.\nDO NOT re-run the same failed edit command. Running it again will lead to the same error.\n"
    );
}

#[test]
fn crlf_and_latin_1_files_are_edited_as_1x_edits_them() {
    let (text, encoding) = decode(b"a\r\nb\tc\r\nd\n");
    assert_eq!(
        view_file("/e/crlf.txt", &text, None, None).unwrap(),
        "Here's the result of running `cat -n` on /e/crlf.txt:\n     1\ta\n     2\tb       c\n     3\td\n     4\t\n\n"
    );
    let edit = str_replace("/e/crlf.txt", &text, "b", Some("B")).unwrap();
    assert_eq!(
        edit.message,
        "The file /e/crlf.txt has been edited. Here's the result of running `cat -n` on a snippet of /e/crlf.txt:\n     1\ta\n     2\tB       c\n     3\td\nReview the changes and make sure they are as expected. Edit the file again if necessary.\n"
    );
    assert_eq!(
        encode(&edit.text, encoding, "/e/crlf.txt").unwrap(),
        b"a\nB       c\nd\n"
    );
    let (text, encoding) = decode(b"caf\xe9\nx\n");
    let edit = str_replace("/e/lat.txt", &text, "x", Some("\u{e9}2")).unwrap();
    assert_eq!(
        edit.message,
        "The file /e/lat.txt has been edited. Here's the result of running `cat -n` on a snippet of /e/lat.txt:\n     1\tcaf\u{e9}\n     2\t\u{e9}2\nReview the changes and make sure they are as expected. Edit the file again if necessary.\n"
    );
    assert_eq!(
        encode(&edit.text, encoding, "/e/lat.txt").unwrap(),
        b"caf\xe9\n\xe92\n"
    );
}

#[test]
fn an_empty_old_str_occurs_everywhere() {
    assert_eq!(
        str_replace("/e/m.txt", "x\ny\nx\ny\n", "", Some("z")).unwrap_err(),
        "No replacement was performed. Multiple occurrences of old_str `` in lines [1, 2, 3, 4, 5]. Please ensure it is unique\n"
    );
    assert_eq!(
        str_replace("/e/m.txt", "x\ny\nx\ny\n", "x\ny\n", Some("z")).unwrap_err(),
        "No replacement was performed. Multiple occurrences of old_str `x\ny\n` in lines []. Please ensure it is unique\n"
    );
    assert_eq!(
        view_file("/e/m.txt", "x\ny\nx\ny\n", Some([2, 2]), None).unwrap(),
        "Here's the result of running `cat -n` on /e/m.txt:\n     2\ty\n\n"
    );
}
