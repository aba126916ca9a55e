//! tree-sitter plumbing shared by all languages: parsers, line-granular incremental edits,
//! the `has_error()`-pruned walk to ERROR and MISSING nodes, and the syntax messages of every
//! language but Python (whose messages are CPython's, in `python_syntax`).

use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

use super::text::LineIndex;
use super::{Language, LintError};

/// The code every syntax error carries, in every language (flake8's code for Python).
pub(crate) const SYNTAX_CODE: &str = "E999";

/// A parser for `language`, or None if the grammar cannot be loaded (an ABI mismatch).
pub(crate) fn new_parser(language: Language) -> Option<Parser> {
    let grammar: tree_sitter::Language = match language {
        Language::Python => tree_sitter_python::LANGUAGE.into(),
        Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        Language::Go => tree_sitter_go::LANGUAGE.into(),
        Language::Java => tree_sitter_java::LANGUAGE.into(),
        Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Language::C => tree_sitter_c::LANGUAGE.into(),
        Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        Language::Php => tree_sitter_php::LANGUAGE_PHP.into(),
        Language::Ruby => tree_sitter_ruby::LANGUAGE.into(),
    };
    let mut parser = Parser::new();
    parser.set_language(&grammar).ok()?;
    Some(parser)
}

/// The point of `byte`, knowing the point of an earlier byte `from`.
fn point_after(text: &[u8], from: (usize, Point), byte: usize) -> Point {
    let (start, point) = from;
    let span = &text[start.min(byte)..byte.min(text.len())];
    let newlines = span.iter().filter(|&&b| b == b'\n').count();
    match span.iter().rposition(|&b| b == b'\n') {
        Some(last) => Point {
            row: point.row + newlines,
            column: span.len() - last - 1,
        },
        None => Point {
            row: point.row,
            column: point.column + span.len(),
        },
    }
}

/// Length of the common prefix of two byte strings, comparing 64-byte blocks first.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let blocks = a
        .chunks(64)
        .zip(b.chunks(64))
        .take_while(|(x, y)| x == y)
        .count();
    let start = (blocks * 64).min(a.len()).min(b.len());
    start
        + a[start..]
            .iter()
            .zip(&b[start..])
            .take_while(|(x, y)| x == y)
            .count()
}

/// Length of the common suffix of two byte strings, at most `limit`.
fn common_suffix(a: &[u8], b: &[u8], limit: usize) -> usize {
    let (a, b) = (&a[a.len() - limit..], &b[b.len() - limit..]);
    let blocks = a
        .rchunks(64)
        .zip(b.rchunks(64))
        .take_while(|(x, y)| x == y)
        .count();
    let matched = (blocks * 64).min(limit);
    let (a, b) = (&a[..limit - matched], &b[..limit - matched]);
    matched
        + a.iter()
            .rev()
            .zip(b.iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
}

/// The smallest line-granular edit turning `before` into `after`, or None if they are equal.
///
/// The edited range always covers whole lines *including* their trailing newline: an edit
/// ending just before a newline makes tree-sitter-python re-parse the rest of the file.
pub(crate) fn line_edit(before: &[u8], after: &[u8]) -> Option<InputEdit> {
    if before == after {
        return None;
    }
    let prefix = common_prefix(before, after);
    let start = before[..prefix]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let max_suffix = before.len().min(after.len()) - prefix;
    let suffix = common_suffix(before, after, max_suffix);
    // The common suffix must start at a line start in both texts; otherwise shrink it so it
    // starts just after a newline inside it.
    let at_line_start =
        |text: &[u8]| suffix == 0 || suffix >= text.len() || text[text.len() - suffix - 1] == b'\n';
    let suffix = if at_line_start(before) && at_line_start(after) {
        suffix
    } else {
        let tail = &before[before.len() - suffix..];
        tail.iter()
            .position(|&b| b == b'\n')
            .map_or(0, |newline| suffix - newline - 1)
    };
    let (old_end, new_end) = (before.len() - suffix, after.len() - suffix);
    let (old_end, new_end) = (old_end.max(start), new_end.max(start));
    let start_position = point_after(before, (0, Point { row: 0, column: 0 }), start);
    Some(InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position,
        old_end_position: point_after(before, (start, start_position), old_end),
        new_end_position: point_after(after, (start, start_position), new_end),
    })
}

/// Parses `after` incrementally from `old` (the tree of `before`).
///
/// tree-sitter's `changed_ranges` is not computed: it costs about a tenth of a gate, and
/// the unit cache only reuses a statement whose byte range and text are unchanged, which a
/// top-level statement (or class member) parses the same way in any context.
pub(crate) fn reparse(
    parser: &mut Parser,
    old: &Tree,
    edit: &InputEdit,
    after: &[u8],
) -> Option<Tree> {
    let mut edited = old.clone();
    edited.edit(edit);
    parser.parse(after, Some(&edited))
}

/// ERROR and MISSING nodes in document order, descending only into nodes with errors.
pub(crate) fn error_nodes(root: Node<'_>, limit: usize) -> Vec<Node<'_>> {
    let mut found = Vec::new();
    if !root.has_error() {
        return found;
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let is_problem = node.is_error() || node.is_missing();
        if is_problem {
            found.push(node);
            if found.len() >= limit {
                return found;
            }
        }
        if !is_problem && node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return found;
            }
        }
    }
}

/// The first leaf token of `node`.
pub(crate) fn first_leaf(node: Node<'_>) -> Node<'_> {
    let mut current = node;
    while let Some(child) = current.child(0) {
        current = child;
    }
    current
}

fn snippet(src: &[u8], node: Node<'_>) -> String {
    let bytes = &src[node.byte_range()];
    let line = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.chars().count() > 30 {
        format!("{}…", text.chars().take(30).collect::<String>())
    } else {
        text.to_owned()
    }
}

/// tree-sitter-rust reports errors on two constructs rustc accepts (see rust-crates.md
/// pitfall 12): a `~` inside macro input, and `safe` items in an `unsafe extern` block.
fn is_known_rust_false_positive(node: Node<'_>, src: &[u8]) -> bool {
    let text = src.get(node.byte_range()).unwrap_or_default();
    let parent = node.parent().map(|p| p.kind()).unwrap_or_default();
    (text == b"~" && parent == "token_tree")
        || (text == b"safe"
            && matches!(
                parent,
                "function_signature_item" | "static_item" | "declaration_list"
            ))
}

/// True when the ERROR `node` starts a line, spans lines and takes the rest of the text: the
/// parser found no way to close the construct starting there (a `class` without its `end`, a
/// function whose `{` is never matched), so that construct is the one to name.
fn runs_to_the_end(node: Node<'_>, src: &[u8]) -> bool {
    let start = node.start_byte();
    let line_start = src[..start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let indent = src.get(line_start..start).unwrap_or_default();
    let rest = src.get(node.end_byte()..).unwrap_or_default();
    node.start_position().row < node.end_position().row
        && indent.iter().all(u8::is_ascii_whitespace)
        && rest.iter().all(u8::is_ascii_whitespace)
}

/// Every syntax error of a tree of `language` (any but Python), worded
/// "syntax error: missing `;`" or "syntax error: unexpected `foo`", with 1-based character
/// columns.
pub(crate) fn syntax_errors(language: Language, root: Node<'_>, src: &[u8]) -> Vec<LintError> {
    let index = LineIndex::new(src);
    let mut errors: Vec<LintError> = Vec::new();
    for node in error_nodes(root, 1000) {
        if language == Language::Rust && is_known_rust_false_positive(node, src) {
            continue;
        }
        let message = if node.is_missing() {
            let kind = node.kind();
            if node.is_named() {
                format!("syntax error: missing {}", kind.replace('_', " "))
            } else {
                format!("syntax error: missing `{kind}`")
            }
        } else {
            let token = snippet(src, first_leaf(node));
            if token.is_empty() {
                "syntax error: unexpected end of file".to_owned()
            } else if runs_to_the_end(node, src) {
                format!("syntax error: `{token}` is not closed before the end of the file")
            } else {
                format!("syntax error: unexpected `{token}`")
            }
        };
        let point = node.start_position();
        let error = LintError {
            line: point.row + 1,
            column: index.char_col(src, point.row, point.column) + 1,
            code: SYNTAX_CODE.to_owned(),
            message,
        };
        if !errors.contains(&error) {
            errors.push(error);
        }
    }
    errors
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn line_edit_covers_whole_lines_with_their_newline() {
        let edit = line_edit(b"a\nbb\nc\n", b"a\nbX\nc\n").unwrap();
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (2, 5, 5)
        );
        assert_eq!(edit.start_position, Point { row: 1, column: 0 });
        assert_eq!(edit.old_end_position, Point { row: 2, column: 0 });
    }

    #[test]
    fn line_edit_handles_inserted_and_deleted_lines() {
        let edit = line_edit(b"a\nc\n", b"a\nb\nc\n").unwrap();
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (2, 2, 4)
        );
        let edit = line_edit(b"a\nb\nc\n", b"a\nc\n").unwrap();
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (2, 4, 2)
        );
    }

    #[test]
    fn line_edit_of_equal_texts_is_none() {
        assert!(line_edit(b"same\n", b"same\n").is_none());
    }

    #[test]
    fn line_edit_without_trailing_newline_reaches_the_end() {
        let edit = line_edit(b"a\nb", b"a\nc").unwrap();
        assert_eq!(
            (edit.start_byte, edit.old_end_byte, edit.new_end_byte),
            (2, 3, 3)
        );
        assert_eq!(edit.old_end_position, Point { row: 1, column: 1 });
    }
}
