//! Tests for `edit`: v0.7's usage errors, the bytes v0 would write, and both observations.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::aci::window::{OpenRequest, PathKind};
use crate::config::LINT_REJECTION_V07;

fn numbered(total: usize) -> Vec<u8> {
    (1..=total)
        .map(|n| format!("line {n}\n"))
        .collect::<String>()
        .into_bytes()
}

fn lines(numbers: &[&str]) -> Vec<u8> {
    numbers
        .iter()
        .map(|n| format!("{n}\n"))
        .collect::<String>()
        .into_bytes()
}

fn state_with(path: &str, bytes: &[u8]) -> WindowState {
    let mut state = WindowState::new(100, 2);
    let request = OpenRequest {
        path: path.to_owned(),
        line: None,
    };
    state.open(
        &request,
        &PathKind::File {
            abs_path: path.to_owned(),
        },
        bytes,
    );
    state
}

#[test]
fn edit_usage_errors_are_verbatim() {
    let usage = "Usage: edit <start_line>:<end_line>";
    assert_eq!(parse_edit_args(""), Err(usage.to_owned()));
    assert_eq!(parse_edit_args("5"), Err(usage.to_owned()));
    assert_eq!(parse_edit_args(":10"), Err(usage.to_owned()));
    assert_eq!(parse_edit_args("5 10"), Err(usage.to_owned()));
    assert_eq!(parse_edit_args("5-10"), Err(usage.to_owned()));
    assert_eq!(
        parse_edit_args("a:5"),
        Err(format!("{usage}\nError: start_line must be a number"))
    );
    assert_eq!(
        parse_edit_args("5:b"),
        Err(format!("{usage}\nError: end_line must be a number"))
    );
    assert_eq!(
        parse_edit_args("-1:5"),
        Err(format!("{usage}\nError: start_line must be a number"))
    );
    assert_eq!(
        parse_edit_args("'5: 7'"),
        Err(format!("{usage}\nError: end_line must be a number"))
    );
    assert_eq!(
        parse_edit_args("0:3"),
        Err(format!("{usage}\nError: start_line must be at least 1"))
    );
}

#[test]
fn edit_arguments_are_cut_on_colons_like_v0() {
    assert_eq!(parse_edit_args("5:10"), Ok(EditRange { start: 5, end: 10 }));
    assert_eq!(
        parse_edit_args("  5:10  extra"),
        Ok(EditRange { start: 5, end: 10 })
    );
    assert_eq!(
        parse_edit_args("5:10:20"),
        Ok(EditRange { start: 5, end: 10 })
    );
    assert_eq!(
        parse_edit_args("'5:10'"),
        Ok(EditRange { start: 5, end: 10 })
    );
    assert_eq!(parse_edit_args("7:3"), Ok(EditRange { start: 7, end: 3 }));
}

#[test]
fn edit_without_an_open_file_says_so() {
    assert_eq!(
        plan_edit(&WindowState::new(100, 2), "1:2"),
        Err(EDIT_NO_FILE_OPEN.to_owned())
    );
    assert_eq!(
        EDIT_NO_FILE_OPEN,
        "No file open. Use the `open` command first."
    );
    let state = state_with("/a.py", b"x\n");
    assert_eq!(plan_edit(&state, "1:1"), Ok(EditRange { start: 1, end: 1 }));
}

#[test]
fn replacement_lines_are_read_like_read_r() {
    assert_eq!(replacement_lines(""), Vec::<&str>::new());
    assert_eq!(replacement_lines("\n"), [""]);
    assert_eq!(replacement_lines("a\n  b\\n\n"), ["a", "  b\\n"]);
    assert_eq!(replacement_lines("a\nb"), ["a", "b"]);
    assert_eq!(replacement_lines("a\r\n"), ["a\r"]);
}

#[test]
fn an_edit_replaces_the_inclusive_range() {
    let before = lines(&["1", "2", "3", "4", "5"]);
    assert_eq!(
        apply_edit(&before, 2, 3, "X\nY\nZ\n"),
        lines(&["1", "X", "Y", "Z", "4", "5"])
    );
    assert_eq!(
        apply_edit(&before, 1, 1, "A"),
        lines(&["A", "2", "3", "4", "5"])
    );
    assert_eq!(
        apply_edit(&before, 5, 5, "E\n"),
        lines(&["1", "2", "3", "4", "E"])
    );
}

#[test]
fn an_empty_replacement_deletes_the_lines() {
    let before = lines(&["1", "2", "3"]);
    assert_eq!(apply_edit(&before, 2, 2, ""), lines(&["1", "3"]));
}

#[test]
fn deleting_every_line_leaves_a_single_newline_as_printf_does() {
    assert_eq!(apply_edit(&lines(&["1", "2"]), 1, 2, ""), b"\n");
    assert_eq!(apply_edit(b"", 1, 1, ""), b"\n");
}

#[test]
fn start_after_end_inserts_and_duplicates_the_lines_in_between() {
    let before = lines(&["1", "2", "3", "4", "5", "6"]);
    // ${lines[@]:0:4} = 1..4, then X, then ${lines[@]:2} = 3..6.
    assert_eq!(
        apply_edit(&before, 5, 2, "X\n"),
        lines(&["1", "2", "3", "4", "X", "3", "4", "5", "6"])
    );
    // start = end + 1 is a plain insertion before line start.
    assert_eq!(
        apply_edit(&before, 3, 2, "X\n"),
        lines(&["1", "2", "X", "3", "4", "5", "6"])
    );
}

#[test]
fn an_end_past_the_end_of_the_file_appends() {
    let before = lines(&["1", "2", "3"]);
    assert_eq!(
        apply_edit(&before, 3, 99, "C\nD\n"),
        lines(&["1", "2", "C", "D"])
    );
    assert_eq!(
        apply_edit(&before, 10, 12, "Z\n"),
        lines(&["1", "2", "3", "Z"])
    );
}

#[test]
fn an_edit_adds_the_missing_final_newline_and_keeps_crlf_and_bytes() {
    assert_eq!(apply_edit(b"a\r\nb\r\nc", 2, 2, "B\n"), b"a\r\nB\nc\n");
    assert_eq!(apply_edit(b"caf\xe9\nx", 2, 2, "y"), b"caf\xe9\ny\n");
}

#[test]
fn start_zero_is_treated_as_one() {
    assert_eq!(
        apply_edit(&lines(&["1", "2"]), 0, 1, "A\n"),
        lines(&["A", "2"])
    );
}

#[test]
fn a_successful_edit_shows_the_window_from_start_minus_one_then_the_message() {
    let before = numbered(1000);
    let mut state = state_with("/r/big.py", &before);
    let after = apply_edit(&before, 583, 583, "changed\n");
    let out = edit_success(
        &mut state,
        EditRange {
            start: 583,
            end: 583,
        },
        &after,
    );
    let mut expected = vec![
        "[File: /r/big.py (1000 lines total)]".to_owned(),
        "(532 more lines above)".into(),
    ];
    expected.extend((533..=632).map(|n| {
        if n == 583 {
            "583:changed".to_owned()
        } else {
            format!("{n}:line {n}")
        }
    }));
    expected.push("(368 more lines below)".into());
    expected.push(FILE_UPDATED.into());
    assert_eq!(out, expected.join("\n"));
    assert_eq!(state.current_line, 582);
}

#[test]
fn a_successful_edit_near_the_top_is_constrained() {
    let before = numbered(3);
    let mut state = state_with("/r/s.py", &before);
    let after = apply_edit(&before, 1, 1, "");
    let out = edit_success(&mut state, EditRange { start: 1, end: 1 }, &after);
    assert_eq!(
        out,
        format!("[File: /r/s.py (2 lines total)]\n1:line 2\n2:line 3\n{FILE_UPDATED}")
    );
}

#[test]
fn the_lint_failure_message_has_both_windows_between_49_dash_rules() {
    let before = numbered(100);
    let state = state_with("/r/m.py", &before);
    let range = EditRange { start: 50, end: 52 };
    let after = apply_edit(&before, 50, 52, "x\ny\n");
    let problems = [
        "E999 IndentationError: unexpected indent".to_owned(),
        "F821 undefined name 'q'".to_owned(),
    ];
    let out = lint_failure(
        &state,
        range,
        "x\ny\n",
        &before,
        &after,
        &problems,
        LINT_REJECTION_V07,
    );
    let rule = "-".repeat(49);
    let would_be = [
        "45:line 45",
        "46:line 46",
        "47:line 47",
        "48:line 48",
        "49:line 49",
        "50:x",
        "51:y",
    ]
    .map(str::to_owned)
    .into_iter()
    .chain((52..=56).map(|n| format!("{n}:line {}", n + 1)))
    .collect::<Vec<_>>()
    .join("\n");
    let original = (45..=57)
        .map(|n| format!("{n}:line {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    let expected = format!(
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.\n\
         \n\
         ERRORS:\n\
         - E999 IndentationError: unexpected indent\n\
         - F821 undefined name 'q'\n\
         \n\
         This is how your edit would have looked if applied\n\
         {rule}\n\
         [File: /r/m.py (99 lines total)]\n\
         (44 more lines above)\n\
         {would_be}\n\
         (43 more lines below)\n\
         {rule}\n\
         \n\
         This is the original code before your edit\n\
         {rule}\n\
         [File: /r/m.py (100 lines total)]\n\
         (44 more lines above)\n\
         {original}\n\
         (43 more lines below)\n\
         {rule}\n\
         Your changes have NOT been applied. Please fix your edit command and try again.\n\
         You either need to 1) Specify the correct start/end line arguments or 2) Correct your edit code.\n\
         DO NOT re-run the same failed edit command. Running it again will lead to the same error."
    );
    assert_eq!(out, expected);
    assert_eq!(rule.len(), 49);
}

#[test]
fn the_lint_failure_leaves_the_window_state_alone() {
    let before = numbered(100);
    let state = state_with("/r/m.py", &before);
    let saved = state.clone();
    let after = apply_edit(&before, 10, 10, "bad\n");
    lint_failure(
        &state,
        EditRange { start: 10, end: 10 },
        "bad\n",
        &before,
        &after,
        &[],
        LINT_REJECTION_V07,
    );
    assert_eq!(state, saved);
}

#[test]
fn a_lint_failure_with_start_far_after_end_uses_v0s_negative_window_maths() {
    // s0 = 29, original c = 29 + (2 - 29 + 1) / 2 = 16, WINDOW = -17: jq gives 24 above,
    // head -n 7, tail -n -17 (= 17), and round(2.5) = 3 below.
    let before = numbered(10);
    let state = state_with("/r/t.py", &before);
    let after = apply_edit(&before, 30, 2, "z\n");
    let out = lint_failure(
        &state,
        EditRange { start: 30, end: 2 },
        "z\n",
        &before,
        &after,
        &[],
        LINT_REJECTION_V07,
    );
    let original = (1..=7)
        .map(|n| format!("{n}:line {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    let block = format!(
        "[File: /r/t.py (10 lines total)]\n(24 more lines above)\n{original}\n(3 more lines below)"
    );
    assert!(out.contains(&block), "{out}");
}
