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

/// A window as a code viewer: the header (path, lines above and below) and the numbered lines
/// beside their numbers.
pub fn render_window(window: &Window<'_>) -> String {
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
    out.push_str("</div><div class=\"code\"><pre class=\"gutter\">");
    for (number, _) in &window.lines {
        out.push_str(&number.to_string());
        out.push('\n');
    }
    out.push_str("</pre><pre class=\"src\">");
    for (_, text) in &window.lines {
        push_escaped(&mut out, text);
        out.push('\n');
    }
    out.push_str("</pre></div>");
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
        let html = render_window(&window);
        assert!(html.contains("/r/&lt;a&gt;.py · 40 lines · showing 10–11 · 9 above · 29 below"));
        assert!(html.contains("<pre class=\"gutter\">10\n11\n</pre>"));
        assert!(html.contains("<pre class=\"src\">x = &#39;&lt;script&gt;&#39;\n\n</pre>"));
    }
}
