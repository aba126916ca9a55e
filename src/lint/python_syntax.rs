//! Picks the one E999 that CPython (and so flake8) would report, from the tokenizer pass, the
//! indentation check, the unit walks and tree-sitter's first ERROR or MISSING node, and words
//! tree-sitter's errors the way CPython 3.11 does where that can be determined.
//!
//! CPython's order: a tokenizer error met before the parser fails wins; after a parser error
//! the rest of the file is still tokenized and a tokenizer error found there replaces it
//! (except after "unexpected indent" or "unexpected unindent"); a bracket left open at the end
//! replaces a parser error found on a later line with "'(' was never closed".

use tree_sitter::Node;

use super::python_indent::parser_problem;
use super::python_names::Units;
use super::python_tokens::{LogicalLine, OpenBracket, Scan, SyntaxProblem};
use super::syntax::{error_nodes, first_leaf};
use super::text::token_after;

/// A parser-level candidate with the last row the parser read before failing.
struct Candidate {
    problem: SyntaxProblem,
    /// Where the parser fails, for ordering: tree-sitter's generic errors start too early,
    /// so they are ordered by the end of their ERROR node.
    order: (usize, usize),
    far_row: usize,
    /// Later tokenizer errors replace it (all parser errors but an unexpected indent or
    /// unindent).
    replaceable: bool,
}

impl Candidate {
    fn simple(problem: SyntaxProblem) -> Self {
        Self {
            order: (problem.row, problem.col),
            far_row: problem.row,
            problem,
            replaceable: true,
        }
    }
}

/// The E999 problem of a Python text, if it has one.
pub(crate) fn first_syntax_error(
    root: Node<'_>,
    src: &[u8],
    scan: &Scan,
    units: &Units,
) -> Option<SyntaxProblem> {
    // Indentation first: on a tie it is the more specific message.
    let mut candidates: Vec<Candidate> = Vec::new();
    if let Some((problem, order)) = parser_problem(scan, src) {
        // CPython reports an unexpected INDENT or DEDENT token without tokenizing further.
        let replaceable = !problem.message.ends_with("unexpected indent")
            && !problem.message.ends_with("unexpected unindent");
        candidates.push(Candidate {
            replaceable,
            order,
            ..Candidate::simple(problem)
        });
    }
    candidates.extend(
        units
            .syntax_problems()
            .into_iter()
            .chain(scan.stray.clone())
            .map(Candidate::simple),
    );
    if let Some(node) = error_nodes(root, 1).first() {
        let (start, end) = (node.start_position(), node.end_position());
        let (start, end) = ((start.row, start.column), (end.row, end.column));
        // An ERROR around an exactly located problem is most likely its consequence.
        let covers_other = candidates
            .iter()
            .any(|c| start <= c.order && c.order <= end);
        if !covers_other {
            let (problem, far_row, generic) = classify(*node, src, scan);
            let order = if generic {
                end
            } else {
                (problem.row, problem.col)
            };
            candidates.push(Candidate {
                problem,
                order,
                far_row,
                replaceable: true,
            });
        }
    }
    let parser = candidates.into_iter().min_by_key(|c| c.order);
    match (scan.error.clone(), parser) {
        (Some(token), None) => Some(token),
        (None, None) => scan.unclosed.map(never_closed),
        (Some(token), Some(parser))
            if scan.error_at <= parser.order || (parser.replaceable && scan.error_replaces) =>
        {
            Some(token)
        }
        (_, Some(parser)) => Some(resolve_unclosed(parser, scan)),
    }
}

fn never_closed(bracket: OpenBracket) -> SyntaxProblem {
    let message = format!(
        "SyntaxError: '{}' was never closed",
        char::from(bracket.byte)
    );
    SyntaxProblem::new(bracket.row, bracket.col, message)
}

/// CPython replaces a parser error by "'(' was never closed" when a bracket is still open
/// at the end and the parser had read past the bracket's line.
fn resolve_unclosed(parser: Candidate, scan: &Scan) -> SyntaxProblem {
    let (Some(inner), Some(outer)) = (scan.unclosed, scan.unclosed_outer) else {
        return parser.problem;
    };
    let before_brackets = parser.order < (outer.row, outer.col) && parser.problem.row < inner.row;
    let read_past =
        parser.problem.row > inner.row || (!before_brackets && parser.far_row > inner.row);
    if parser.replaceable && read_past {
        never_closed(inner)
    } else {
        parser.problem
    }
}

const COMPOUND_KEYWORDS: &[&str] = &[
    "if", "elif", "else", "while", "for", "with", "try", "except", "finally", "def", "class",
    "async",
];
const SIMPLE_KEYWORDS: &[&str] = &[
    "import", "from", "raise", "del", "global", "nonlocal", "assert", "return", "lambda",
];

/// The logical line whose first token starts at `node`.
fn line_starting_at<'s>(scan: &'s Scan, node: Node<'_>) -> Option<&'s LogicalLine> {
    let point = node.start_position();
    let index = scan
        .lines
        .partition_point(|line| (line.row, line.col) < (point.row, point.column));
    scan.lines
        .get(index)
        .filter(|line| (line.row, line.col) == (point.row, point.column))
}

/// The position of the first token at or after `byte` on its row (the end of the row's
/// content when only whitespace or a comment follows).
fn next_token_position(src: &[u8], byte: usize, row: usize) -> (usize, usize) {
    let byte = byte.min(src.len());
    let start = src[..byte]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let rest = &src[start..];
    let line = &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut col = byte.saturating_sub(start).min(line.len());
    while col < line.len() && matches!(line[col], b' ' | b'\t' | 0x0c) {
        col += 1;
    }
    if line.get(col) == Some(&b'#') {
        col = line.len();
    }
    (row, col)
}

fn at(node: Node<'_>, message: &str) -> SyntaxProblem {
    let point = node.start_position();
    SyntaxProblem::new(point.row, point.column, message)
}

/// CPython's message and location for tree-sitter's first error node, the row of the first
/// token after it (the parser reads at least that far; `usize::MAX` at the end), and whether
/// the message is only the generic "invalid syntax" guess.
fn classify(node: Node<'_>, src: &[u8], scan: &Scan) -> (SyntaxProblem, usize, bool) {
    let far_row = token_after(src, node.end_byte()).map_or(usize::MAX, |(row, _)| row);
    if node.is_missing() {
        let (row, col) = next_token_position(src, node.start_byte(), node.start_position().row);
        let message = if node.kind() == ":" {
            "SyntaxError: expected ':'"
        } else {
            "SyntaxError: invalid syntax"
        };
        return (SyntaxProblem::new(row, col, message), far_row, false);
    }
    let (start, end) = (node.start_position(), node.end_position());
    if let Some(stray) = scan.stray.as_ref().filter(|stray| {
        (start.row, start.column) <= (stray.row, stray.col)
            && (stray.row, stray.col) < (end.row, end.column)
    }) {
        return (stray.clone(), far_row, false);
    }
    // tree-sitter often wraps complete statements into the ERROR; CPython fails after them.
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let complete = children
        .iter()
        .take_while(|c| is_complete_statement(**c))
        .count();
    if complete > 0 {
        let boundary = children[if complete < children.len() {
            complete - 1
        } else {
            0
        }];
        if let Some((row, col)) = token_after(src, boundary.end_byte()) {
            return (
                SyntaxProblem::new(row, col, "SyntaxError: invalid syntax"),
                far_row,
                true,
            );
        }
    }
    match classify_error(node, &children, src, scan) {
        Some(problem) => (problem, far_row, false),
        None => (
            at(first_leaf(node), "SyntaxError: invalid syntax"),
            far_row,
            true,
        ),
    }
}

fn is_complete_statement(node: Node<'_>) -> bool {
    let kind = node.kind();
    node.is_named()
        && !node.has_error()
        && (kind.ends_with("_statement")
            || kind.ends_with("_definition")
            || kind == "decorated_definition")
}

fn classify_error(
    node: Node<'_>,
    children: &[Node<'_>],
    src: &[u8],
    scan: &Scan,
) -> Option<SyntaxProblem> {
    let first = *children.first()?;
    let line = line_starting_at(scan, node);
    let open_in_line = |line: &LogicalLine| scan.unclosed_outer.is_some_and(|b| b.row >= line.row);
    if COMPOUND_KEYWORDS.contains(&first.kind())
        && let Some(line) = line.filter(|line| !line.has_colon && !open_in_line(line))
    {
        let message = "SyntaxError: expected ':'";
        return Some(SyntaxProblem::new(line.end_row, line.end_col, message));
    }
    let parent = node.parent().map(|p| p.kind()).unwrap_or_default();
    if matches!(parent, "if_statement" | "elif_clause" | "while_statement") {
        let message = "SyntaxError: invalid syntax. Maybe you meant '==' or ':=' instead of '='?";
        if first.kind() == "=" {
            let condition = node
                .parent()
                .and_then(|p| p.child_by_field_name("condition"))?;
            return Some(at(condition, message));
        }
        if first.is_named() && children.get(1).is_some_and(|c| c.kind() == "=") {
            return Some(at(first, message));
        }
    }
    if children.get(1).is_some_and(|c| c.kind() == "=")
        && let Some(message) = assignment_target_message(first.kind())
    {
        return Some(at(first, &message));
    }
    if parent == "dictionary" && first.is_named() {
        let end = first.end_position();
        let message = "SyntaxError: ':' expected after dictionary key";
        return Some(SyntaxProblem::new(
            end.row,
            end.column.saturating_sub(1),
            message,
        ));
    }
    if inside_brackets(node)
        && first.is_named()
        && !first.kind().ends_with("_statement")
        && let Some(previous) = node.prev_named_sibling()
    {
        return Some(at(
            previous,
            "SyntaxError: invalid syntax. Perhaps you forgot a comma?",
        ));
    }
    // `position` on the skipped iterator is the index of the child just before `if`.
    if let Some(if_index) = children.iter().skip(1).position(|c| c.kind() == "if")
        && !children.iter().any(|c| c.kind() == "else")
    {
        let message = "SyntaxError: expected 'else' after 'if' expression";
        return Some(at(children[if_index], message));
    }
    if children.last().is_some_and(|c| c.kind() == "decorator") {
        let (row, col) = token_after(src, node.end_byte())?;
        return Some(SyntaxProblem::new(row, col, "SyntaxError: invalid syntax"));
    }
    if SIMPLE_KEYWORDS.contains(&first.kind()) {
        let end = node.end_position();
        if let Some(line) =
            line.filter(|line| (line.end_row, line.end_col) == (end.row, end.column))
        {
            return Some(SyntaxProblem::new(
                line.end_row,
                line.end_col,
                "SyntaxError: invalid syntax",
            ));
        }
    }
    None
}

/// Whether `node` sits inside a bracketed expression of its statement.
fn inside_brackets(node: Node<'_>) -> bool {
    let mut current = node.parent();
    while let Some(ancestor) = current {
        let kind = ancestor.kind();
        if matches!(
            kind,
            "argument_list"
                | "list"
                | "tuple"
                | "set"
                | "parenthesized_expression"
                | "subscript"
                | "dictionary"
        ) {
            return true;
        }
        if kind.ends_with("_statement") || matches!(kind, "module" | "block" | "ERROR") {
            return false;
        }
        current = ancestor.parent();
    }
    false
}

/// CPython's "cannot assign to …" message for an assignment target of `kind`.
fn assignment_target_message(kind: &str) -> Option<String> {
    let what = match kind {
        "true" => return Some("SyntaxError: cannot assign to True".to_owned()),
        "false" => return Some("SyntaxError: cannot assign to False".to_owned()),
        "none" => return Some("SyntaxError: cannot assign to None".to_owned()),
        "integer" | "float" | "string" | "concatenated_string" => "literal",
        "call" => "function call",
        "binary_operator"
        | "unary_operator"
        | "boolean_operator"
        | "comparison_operator"
        | "not_operator" => "expression",
        "conditional_expression" => "conditional expression",
        "await" => "await expression",
        _ => return None,
    };
    Some(format!(
        "SyntaxError: cannot assign to {what} here. Maybe you meant '==' instead of '='?"
    ))
}
