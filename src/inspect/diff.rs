//! Diffs as HTML: a unified diff (a submitted patch) coloured line by line with old and new
//! line numbers, a diff computed between two versions of some lines (an edit), and the code
//! viewer for a window of numbered lines.

use similar::{ChangeTag, TextDiff};

use super::html::push_escaped;
use super::observation::Window;

/// One line of a rendered diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// `diff --git` and the file's name.
    File,
    /// `---`, `+++`, `index`, mode lines, `\ No newline at end of file`.
    Meta,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    /// Unchanged.
    Context,
    /// Added.
    Add,
    /// Removed.
    Del,
}

impl LineKind {
    fn class(self) -> &'static str {
        match self {
            LineKind::File => "l file",
            LineKind::Meta => "l meta",
            LineKind::Hunk => "l hunk",
            LineKind::Context => "l",
            LineKind::Add => "l add",
            LineKind::Del => "l del",
        }
    }

    fn sign(self) -> &'static str {
        match self {
            LineKind::Add => "+",
            LineKind::Del => "-",
            LineKind::Context => " ",
            _ => "",
        }
    }
}

fn push_line(out: &mut String, kind: LineKind, old: Option<usize>, new: Option<usize>, text: &str) {
    out.push_str("<span class=\"");
    out.push_str(kind.class());
    out.push_str("\">");
    if !matches!(kind, LineKind::File | LineKind::Meta | LineKind::Hunk) {
        out.push_str("<span class=\"o\">");
        if let Some(old) = old {
            out.push_str(&old.to_string());
        }
        out.push_str("</span><span class=\"n\">");
        if let Some(new) = new {
            out.push_str(&new.to_string());
        }
        out.push_str("</span>");
    }
    out.push_str(kind.sign());
    push_escaped(out, text);
    out.push_str("</span>");
}

/// `@@ -a[,b] +c[,d] @@` → (a, c).
fn hunk_starts(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(' ')?;
    let new = rest.strip_prefix('+')?.split(' ').next()?;
    let first = |range: &str| range.split(',').next()?.parse().ok();
    Some((first(old)?, first(new)?))
}

/// A unified diff (a patch) as a coloured block with old and new line numbers.
pub fn render_patch(patch: &str) -> String {
    let mut out = String::with_capacity(patch.len() * 2 + 64);
    out.push_str("<pre class=\"diff patch\">");
    let (mut old, mut new) = (0usize, 0usize);
    let mut in_hunk = false;
    for line in patch.lines() {
        if line.starts_with("diff --git ") {
            in_hunk = false;
            push_line(&mut out, LineKind::File, None, None, line);
        } else if let Some((a, c)) = hunk_starts(line) {
            (old, new, in_hunk) = (a, c, true);
            push_line(&mut out, LineKind::Hunk, None, None, line);
        } else if in_hunk && let Some(text) = line.strip_prefix('+') {
            push_line(&mut out, LineKind::Add, None, Some(new), text);
            new += 1;
        } else if in_hunk && let Some(text) = line.strip_prefix('-') {
            push_line(&mut out, LineKind::Del, Some(old), None, text);
            old += 1;
        } else if in_hunk && (line.starts_with(' ') || line.is_empty()) {
            let text = line.strip_prefix(' ').unwrap_or(line);
            push_line(&mut out, LineKind::Context, Some(old), Some(new), text);
            old += 1;
            new += 1;
        } else {
            push_line(&mut out, LineKind::Meta, None, None, line);
        }
    }
    out.push_str("</pre>");
    out
}

/// The diff between two runs of numbered lines (`old` and `new`, each `(line number, text)`),
/// every line of both shown, changes coloured.
pub fn render_line_diff(old: &[(usize, &str)], new: &[(usize, &str)]) -> String {
    let old_text: Vec<&str> = old.iter().map(|(_, text)| *text).collect();
    let new_text: Vec<&str> = new.iter().map(|(_, text)| *text).collect();
    let diff = TextDiff::from_slices(&old_text, &new_text);
    let mut out = String::from("<pre class=\"diff edit\">");
    for change in diff.iter_all_changes() {
        let old_no = change.old_index().and_then(|i| old.get(i)).map(|(n, _)| *n);
        let new_no = change.new_index().and_then(|i| new.get(i)).map(|(n, _)| *n);
        let kind = match change.tag() {
            ChangeTag::Equal => LineKind::Context,
            ChangeTag::Insert => LineKind::Add,
            ChangeTag::Delete => LineKind::Del,
        };
        push_line(&mut out, kind, old_no, new_no, change.value());
    }
    out.push_str("</pre>");
    out
}

/// Windows longer than this many lines show some of their lines, the rest folded.
pub const WINDOW_FOLD_LINES: usize = 30;
/// Lines shown around the marked lines of a folded window.
const MARK_CONTEXT: usize = 5;
/// Lines shown at the start and at the end of a folded window without a mark.
const WINDOW_HEAD: usize = 8;
const WINDOW_TAIL: usize = 4;

/// Which lines of a window of `count` lines are shown (the rest folded): all of a short one;
/// else the marked lines (by index, `first..=last`) with some lines around them, or the first
/// and last lines when nothing is marked.
pub fn shown_lines(count: usize, mark: Option<(usize, usize)>) -> Vec<bool> {
    if count <= WINDOW_FOLD_LINES {
        return vec![true; count];
    }
    let mut shown = vec![false; count];
    match mark {
        Some((first, last)) => {
            let low = first.saturating_sub(MARK_CONTEXT);
            let high = (last + MARK_CONTEXT).min(count - 1);
            for flag in &mut shown[low..=high] {
                *flag = true;
            }
        }
        None => {
            for flag in shown.iter_mut().take(WINDOW_HEAD) {
                *flag = true;
            }
            for flag in shown.iter_mut().skip(count - WINDOW_TAIL) {
                *flag = true;
            }
        }
    }
    shown
}

/// Numbered lines as the code viewer's gutter and source, `mark` (line numbers `first..=last`)
/// highlighted.
fn push_code(out: &mut String, lines: &[(usize, &str)], mark: Option<(usize, usize)>) {
    let marked = |n: usize| mark.is_some_and(|(first, last)| n >= first && n <= last);
    out.push_str("<div class=\"code\"><pre class=\"gutter\">");
    for (number, _) in lines {
        if marked(*number) {
            out.push_str(&format!("<span class=\"mark\">{number}</span>\n"));
        } else {
            out.push_str(&number.to_string());
            out.push('\n');
        }
    }
    out.push_str("</pre><pre class=\"src\">");
    for (number, text) in lines {
        if marked(*number) {
            out.push_str("<span class=\"mark\">");
            push_escaped(out, text);
            out.push_str("</span>\n");
        } else {
            push_escaped(out, text);
            out.push('\n');
        }
    }
    out.push_str("</pre></div>");
}

/// A window as a code viewer: the header (path, lines above and below) and the numbered lines
/// beside their numbers, the lines `mark` names (`first..=last`, line numbers) highlighted. A
/// window of more than [`WINDOW_FOLD_LINES`] lines shows the marked lines and some around them
/// (or its first and last lines), each run of other lines folded one click away.
pub fn render_window(window: &Window<'_>, mark: Option<(usize, usize)>) -> String {
    let mut out = String::new();
    out.push_str("<div class=\"code-head\">");
    if !window.path.is_empty() {
        push_escaped(&mut out, window.path);
    }
    if let Some(total) = window.total {
        out.push_str(&format!(" · {total} lines"));
    }
    if let (Some((first, _)), Some((last, _))) = (window.lines.first(), window.lines.last()) {
        out.push_str(&format!(" · showing {first}–{last}"));
    }
    if window.above > 0 {
        out.push_str(&format!(" · {} above", window.above));
    }
    if window.below > 0 {
        out.push_str(&format!(" · {} below", window.below));
    }
    if let Some((first, last)) = mark {
        if first == last {
            out.push_str(&format!(" · line {first} marked"));
        } else {
            out.push_str(&format!(" · lines {first}–{last} marked"));
        }
    }
    out.push_str("</div>");
    let index_mark = mark.and_then(|(first, last)| {
        let low = window.lines.iter().position(|(n, _)| *n >= first)?;
        let high = window.lines.iter().rposition(|(n, _)| *n <= last)?;
        (low <= high).then_some((low, high))
    });
    let shown = shown_lines(window.lines.len(), index_mark);
    let mut start = 0;
    while start < window.lines.len() {
        let visible = shown[start];
        let end = (start..window.lines.len())
            .find(|&i| shown[i] != visible)
            .unwrap_or(window.lines.len());
        let run = &window.lines[start..end];
        if visible {
            push_code(&mut out, run, mark);
        } else {
            out.push_str(&format!(
                "<details class=\"fold lines\"><summary>{} more lines ({}–{})</summary>",
                run.len(),
                run[0].0,
                run[run.len() - 1].0
            ));
            push_code(&mut out, run, mark);
            out.push_str("</details>");
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_coloured_with_line_numbers_from_its_hunks() {
        let patch = "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -10,3 +10,3 @@ def f():\n     a = 1\n-    b = <2>\n+    b = 3\n \\ No newline at end of file\n";
        let html = render_patch(patch);
        assert!(html.contains("<span class=\"l file\">diff --git a/x.py b/x.py</span>"));
        assert!(html.contains("<span class=\"l meta\">--- a/x.py</span>"));
        assert!(html.contains("<span class=\"l hunk\">@@ -10,3 +10,3 @@ def f():</span>"));
        assert!(html.contains(
            "<span class=\"l\"><span class=\"o\">10</span><span class=\"n\">10</span>     a = 1</span>"
        ));
        assert!(html.contains(
            "<span class=\"l del\"><span class=\"o\">11</span><span class=\"n\"></span>-    b = &lt;2&gt;</span>"
        ));
        assert!(html.contains(
            "<span class=\"l add\"><span class=\"o\"></span><span class=\"n\">11</span>+    b = 3</span>"
        ));
    }

    #[test]
    fn a_line_diff_numbers_both_sides() {
        let html = render_line_diff(&[(5, "a"), (6, "b")], &[(5, "a"), (6, "c"), (7, "d")]);
        assert_eq!(
            html,
            "<pre class=\"diff edit\">\
             <span class=\"l\"><span class=\"o\">5</span><span class=\"n\">5</span> a</span>\
             <span class=\"l del\"><span class=\"o\">6</span><span class=\"n\"></span>-b</span>\
             <span class=\"l add\"><span class=\"o\"></span><span class=\"n\">6</span>+c</span>\
             <span class=\"l add\"><span class=\"o\"></span><span class=\"n\">7</span>+d</span></pre>"
        );
    }

    #[test]
    fn a_window_shows_its_numbers_beside_the_escaped_code() {
        let window = Window {
            path: "/r/<a>.py",
            total: Some(40),
            above: 9,
            below: 29,
            lines: vec![(10, "x = '<script>'"), (11, "")],
        };
        let html = render_window(&window, None);
        assert!(html.contains("/r/&lt;a&gt;.py · 40 lines · showing 10–11 · 9 above · 29 below"));
        assert!(html.contains("<pre class=\"gutter\">10\n11\n</pre>"));
        assert!(html.contains("<pre class=\"src\">x = &#39;&lt;script&gt;&#39;\n\n</pre>"));
    }

    #[test]
    fn a_long_window_shows_its_ends_and_folds_the_middle() {
        let texts: Vec<String> = (1..=100).map(|n| format!("line {n}")).collect();
        let window = Window {
            path: "/r/a.py",
            total: Some(100),
            above: 0,
            below: 0,
            lines: texts
                .iter()
                .enumerate()
                .map(|(i, t)| (i + 1, t.as_str()))
                .collect(),
        };
        let html = render_window(&window, None);
        assert!(html.contains("<pre class=\"gutter\">1\n2\n3\n4\n5\n6\n7\n8\n</pre>"));
        assert!(html.contains(
            "<details class=\"fold lines\"><summary>88 more lines (9–96)</summary><div class=\"code\"><pre class=\"gutter\">9\n"
        ));
        assert!(html.ends_with("<pre class=\"gutter\">97\n98\n99\n100\n</pre><pre class=\"src\">line 97\nline 98\nline 99\nline 100\n</pre></div>"));
    }

    #[test]
    fn a_marked_line_is_shown_with_its_neighbours_and_highlighted() {
        let texts: Vec<String> = (1..=100).map(|n| format!("line {n}")).collect();
        let window = Window {
            path: "/r/a.py",
            total: Some(900),
            above: 377,
            below: 423,
            lines: texts
                .iter()
                .enumerate()
                .map(|(i, t)| (i + 378, t.as_str()))
                .collect(),
        };
        let html = render_window(&window, Some((428, 428)));
        assert!(
            html.contains(" · showing 378–477 · 377 above · 423 below · line 428 marked</div>")
        );
        assert!(html.contains("<summary>45 more lines (378–422)</summary>"));
        assert!(html.contains(
            "<pre class=\"gutter\">423\n424\n425\n426\n427\n<span class=\"mark\">428</span>\n429\n430\n431\n432\n433\n</pre>"
        ));
        assert!(html.contains("line 50\n<span class=\"mark\">line 51</span>\nline 52\n"));
        assert!(html.contains("<summary>44 more lines (434–477)</summary>"));
    }

    #[test]
    fn a_short_window_is_never_folded() {
        assert_eq!(shown_lines(30, None), vec![true; 30]);
        let shown = shown_lines(40, Some((0, 0)));
        assert_eq!(shown.iter().filter(|s| **s).count(), 6);
    }
}
