//! Tests for reading windows, `cat -n` output, rejections and actions back out of text.

use super::*;

const REJECTION: &str = "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.

ERRORS:
- E999 SyntaxError: '(' was never closed

This is how your edit would have looked if applied
-------------------------------------------------
[File: /testbed/moneyfmt/format.py (51 lines total)]
(32 more lines above)
33:    int_part, _, frac_part = f\"{value:f}\".partition(\".\")
34:    # strip the sign before grouping
35:    if grouping:
36:        int_part = group_digits(int_part, loc.group_sep, loc.group_size
37:
(14 more lines below)
-------------------------------------------------

This is the original code before your edit
-------------------------------------------------
[File: /testbed/moneyfmt/format.py (50 lines total)]
(32 more lines above)
33:    int_part, _, frac_part = f\"{value:f}\".partition(\".\")
34:    if grouping:
35:        int_part = group_digits(int_part, loc.group_sep, loc.group_size)
36:
(14 more lines below)
-------------------------------------------------
Your changes have NOT been applied. Please fix your edit command and try again.";

#[test]
fn a_window_is_found_with_its_counts_and_the_text_around_it() {
    let text = "Warning: x\n[File: /r/a.py (120 lines total)]\n(10 more lines above)\n11:def f():\n12:    return 1\n(108 more lines below)\nFile updated. Please review.";
    let found = find_window(text).unwrap();
    assert_eq!(found.before, "Warning: x\n");
    assert_eq!(found.after, "File updated. Please review.");
    assert_eq!(
        found.window,
        Window {
            path: "/r/a.py",
            total: Some(120),
            above: 10,
            below: 108,
            lines: vec![(11, "def f():"), (12, "    return 1")],
        }
    );
    // A whole short file: no counts, nothing after.
    let found = find_window("[File: a b.py (1 lines total)]\n1:x = 1").unwrap();
    assert_eq!(found.window.path, "a b.py");
    assert_eq!(found.window.lines, vec![(1, "x = 1")]);
    assert_eq!((found.before, found.after), ("", ""));
    assert_eq!(find_window("no window here\n12:x"), None);
}

#[test]
fn cat_n_output_reads_as_a_window() {
    let text = "Here's the result of running `cat -n` on /testbed/a.py:\n     1\timport os\n     2\t\n     3\tx = 1\nReview the changes.";
    let found = find_cat_n(text).unwrap();
    assert_eq!(
        found.window.lines,
        vec![(1, "import os"), (2, ""), (3, "x = 1")]
    );
    assert_eq!(found.after, "Review the changes.");
    assert_eq!(find_cat_n("1\tone line only"), None);
}

#[test]
fn a_rejection_gives_its_errors_and_both_windows() {
    let rejection = rejection(REJECTION).unwrap();
    assert_eq!(
        rejection.errors,
        vec!["E999 SyntaxError: '(' was never closed"]
    );
    let would_be = rejection.would_be.unwrap();
    assert_eq!((would_be.total, would_be.lines.len()), (Some(51), 5));
    assert_eq!(
        would_be.lines[3],
        (
            36,
            "        int_part = group_digits(int_part, loc.group_sep, loc.group_size"
        )
    );
    let original = rejection.original.unwrap();
    assert_eq!(
        (original.total, original.lines[1]),
        (Some(50), (34, "    if grouping:"))
    );
    assert_eq!(super::rejection("[File: a (1 lines total)]\n1:x"), None);
}

#[test]
fn edit_actions_give_their_range_and_lines() {
    assert_eq!(
        range_edit("edit 33:38\n    a = 1\n    b = 2\nend_of_edit"),
        Some(RangeEdit {
            start: 33,
            end: 38,
            lines: vec!["    a = 1", "    b = 2"]
        })
    );
    assert_eq!(
        range_edit("edit 4:5\nend_of_edit\n"),
        Some(RangeEdit {
            start: 4,
            end: 5,
            lines: vec![]
        })
    );
    assert_eq!(range_edit("edit x:5\ny\nend_of_edit"), None);
    assert_eq!(range_edit("open a.py"), None);
}

#[test]
fn shell_words_follow_posix_quoting() {
    assert_eq!(
        shell_words(r#"a 'b c' "d \"e\" \$f \x" g\ h 'it'\''s'"#).unwrap(),
        vec!["a", "b c", "d \"e\" $f \\x", "g h", "it's"]
    );
    assert_eq!(shell_words("a 'open"), None);
    assert_eq!(shell_words("  ").unwrap(), Vec::<String>::new());
    assert_eq!(shell_words("''").unwrap(), vec![""]);
}

#[test]
fn str_replace_actions_give_path_old_and_new() {
    let action = "str_replace_editor str_replace /testbed/a.py   --old_str 'return x' --new_str 'return x + 1\n'";
    assert_eq!(
        str_replace(action),
        Some((
            "/testbed/a.py".to_owned(),
            "return x".to_owned(),
            "return x + 1\n".to_owned()
        ))
    );
    assert_eq!(str_replace("str_replace_editor view /testbed/a.py"), None);
}

#[test]
fn open_and_goto_name_the_line_they_show() {
    assert_eq!(target_line("goto 428"), Some(428));
    assert_eq!(target_line("open \"src/a b.py\" 12\n"), Some(12));
    assert_eq!(target_line("open src/a.py"), None);
    assert_eq!(target_line("scroll_down"), None);
    assert_eq!(target_line("goto x"), None);
}
