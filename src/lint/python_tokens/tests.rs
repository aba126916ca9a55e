use super::*;
use crate::lint::syntax::line_edit;
use crate::lint::tests::Lcg;

/// Lines that move the tokenizer's state: indents and dedents, tabs, brackets and strings
/// over several lines, continuations, comments, blank lines and errors.
const PIECES: &[&str] = &[
    "def f(a,",
    "      b):",
    "    return (a +",
    "            b)",
    "class C:",
    "    x = 1",
    "        y = 2",
    "  z = 3",
    "\tw = 4",
    "    s = '''one",
    "two'''",
    "    t = 1 + \\",
    "        2",
    "    # a comment",
    "",
    "   ",
    "if x:",
    "else:",
    "    pass",
    "x = [",
    "]",
    "y = ')'",
    "\"\"\"",
    "q = $",
    "\x0c",
    "        deep = f'{a!r}'",
];

fn random_text(random: &mut Lcg, lines: usize) -> Vec<String> {
    (0..lines)
        .map(|_| PIECES[random.next(PIECES.len())].to_owned())
        .collect()
}

fn joined(lines: &[String]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn assert_rescan_matches(before: &str, after: &str) {
    let base = scan(before.as_bytes());
    let Some(edit) = line_edit(before.as_bytes(), after.as_bytes()) else {
        return;
    };
    let change = Change {
        start: edit.start_byte,
        old_end: edit.old_end_byte,
        new_end: edit.new_end_byte,
    };
    assert_eq!(
        rescan(&base, after.as_bytes(), &change),
        scan(after.as_bytes()),
        "\n--- before\n{before}\n--- after\n{after}"
    );
}

/// A valid program: nested blocks indented by spaces or a tab, with brackets, strings and
/// continuations over several lines, comments and blank lines between statements.
fn valid_program(random: &mut Lcg, depth: usize, indent: &str, out: &mut Vec<String>) {
    let unit = if random.next(5) == 0 { "\t" } else { "    " };
    for _ in 0..1 + random.next(5) {
        match random.next(9) {
            0 | 1 if depth < 4 => {
                out.push(format!("{indent}if x:  # header"));
                valid_program(random, depth + 1, &format!("{indent}{unit}"), out);
            }
            2 => out.extend([format!("{indent}y = (1,"), "  2)".to_owned()]),
            3 => out.extend([format!("{indent}s = '''a"), "b'''".to_owned()]),
            4 => out.extend([format!("{indent}t = 1 + \\"), "2".to_owned()]),
            5 => out.push(format!("{indent}# comment")),
            6 => out.push(String::new()),
            _ => out.push(format!("{indent}z = f'{{a}}'")),
        }
    }
}

#[test]
fn a_rescan_equals_a_fresh_scan_over_random_edits() {
    let mut random = Lcg(7);
    for round in 0..3000 {
        let mut lines = Vec::new();
        while lines.len() < 20 {
            valid_program(&mut random, 0, "", &mut lines);
        }
        let before = joined(&lines);
        assert!(scan(before.as_bytes()).error.is_none(), "{before}");
        // Edits that keep the text valid (a copied line) or break it (a random piece).
        let start = random.next(lines.len());
        let end = (start + random.next(4)).min(lines.len());
        let count = random.next(4);
        let replacement = if round % 2 == 0 {
            random_text(&mut random, count)
        } else {
            (0..count)
                .map(|_| lines[random.next(lines.len())].clone())
                .collect()
        };
        lines.splice(start..end, replacement);
        let after = joined(&lines);
        if round % 3 == 0 {
            // The same edit to a file with CRLF line endings.
            let crlf = |text: &str| text.replace('\n', "\r\n");
            assert_rescan_matches(&crlf(&before), &crlf(&after));
        } else {
            assert_rescan_matches(&before, &after);
        }
    }
}

#[test]
fn a_rescan_of_a_clean_file_rejoins_the_base_after_the_edit() {
    let body: String = (0..200)
        .map(|i| format!("def f{i}(a):\n    if a:\n        return {i}\n    return a\n\n"))
        .collect();
    let after = body.replacen("        return 7\n", "        return 7 + 1\n", 1);
    assert_rescan_matches(&body, &after);
    let dedented = body.replacen("        return 7\n", "    return 7\n", 1);
    assert_rescan_matches(&body, &dedented);
    let unindented = body.replacen("        return 7\n", "      return 7\n", 1);
    assert_rescan_matches(&body, &unindented);
    let opened = body.replacen("        return 7\n", "        return (7\n", 1);
    assert_rescan_matches(&body, &opened);
    let string = body.replacen("        return 7\n", "        return '''7\n", 1);
    assert_rescan_matches(&body, &string);
}
