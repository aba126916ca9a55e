//! Indentation checks tree-sitter cannot make: CPython's parser-level "unexpected indent",
//! "unexpected unindent" after a decorator and "expected an indented block after …", and
//! pycodestyle's E111, E112 and E113.

use super::python_tokens::{IndentMove, LogicalLine, Scan, SyntaxProblem};
use super::text::end_of_file;

/// A pycodestyle diagnostic at a 0-based row and byte column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StyleDiagnostic {
    pub row: usize,
    pub col: usize,
    pub code: &'static str,
    pub message: &'static str,
}

/// What CPython 3.11 calls the statement a block belongs to, from its first two tokens.
fn block_owner(line: &LogicalLine) -> Option<&'static str> {
    let owner = match (line.first_word.as_str(), line.second_word.as_str()) {
        ("if", _) => "'if' statement",
        ("elif", _) => "'elif' statement",
        ("else", _) => "'else' statement",
        ("while", _) => "'while' statement",
        ("for", _) | ("async", "for") => "'for' statement",
        ("with", _) | ("async", "with") => "'with' statement",
        ("try", _) => "'try' statement",
        ("except", "*") => "'except*' statement",
        ("except", _) => "'except' statement",
        ("finally", _) => "'finally' statement",
        ("def", _) | ("async", "def") => "function definition",
        ("class", _) => "class definition",
        ("match", _) => "'match' statement",
        ("case", _) => "'case' statement",
        _ => return None,
    };
    Some(owner)
}

fn expected_block(header: &LogicalLine, row: usize, col: usize) -> Option<SyntaxProblem> {
    let owner = block_owner(header)?;
    Some(SyntaxProblem::new(
        row,
        col,
        format!(
            "IndentationError: expected an indented block after {owner} on line {}",
            header.row + 1
        ),
    ))
}

/// The first indentation error CPython's parser would report, if any, and where the parser
/// fails (for ordering against other parser errors; past the problem's position only when
/// the problem is reported at the end of the file).
pub(crate) fn parser_problem(scan: &Scan, src: &[u8]) -> Option<(SyntaxProblem, (usize, usize))> {
    let problem = first_parser_problem(scan, src)?;
    let fails_at = match scan.lines.last() {
        Some(last) if is_decorator(last) && problem.row > last.end_row => {
            (last.end_row, last.end_col)
        }
        _ => (problem.row, problem.col),
    };
    Some((problem, fails_at))
}

fn first_parser_problem(scan: &Scan, src: &[u8]) -> Option<SyntaxProblem> {
    let mut previous: Option<&LogicalLine> = None;
    for line in &scan.lines {
        let expects_block = previous.is_some_and(|p| p.ends_with_colon);
        if let Some(header) =
            previous.filter(|p| line.movement == IndentMove::Indent && !p.has_colon)
        {
            // A header that lost its colon: CPython fails at the header's NEWLINE.
            if block_owner(header).is_some()
                && !matches!(header.first_word.as_str(), "match" | "case")
            {
                let message = "SyntaxError: expected ':'";
                return Some(SyntaxProblem::new(header.end_row, header.end_col, message));
            }
        }
        if previous.is_some_and(is_decorator) && line.movement == IndentMove::Dedent {
            // The parser needs a `def` or `class` and meets the DEDENT token.
            return Some(
                SyntaxProblem::new(line.row, line.col, UNEXPECTED_UNINDENT).shifted_left(),
            );
        }
        if line.movement == IndentMove::Indent && !expects_block {
            let message = "IndentationError: unexpected indent";
            return Some(SyntaxProblem::new(line.row, line.col, message).shifted_left());
        }
        if let Some(header) =
            previous.filter(|_| expects_block && line.movement != IndentMove::Indent)
            && let Some(problem) = expected_block(header, line.row, line.col)
        {
            // After a DEDENT, CPython points at the DEDENT token, one column left.
            let dedent = line.movement == IndentMove::Dedent;
            return Some(if dedent {
                problem.shifted_left()
            } else {
                problem
            });
        }
        if line.movement == IndentMove::Same
            && is_clause(line)
            && !previous.is_some_and(is_inline_compound)
        {
            // `else:` and its kin inside a block (not after a one-line compound statement at
            // their level): the parser fails at the keyword.
            return Some(SyntaxProblem::new(
                line.row,
                line.col,
                "SyntaxError: invalid syntax",
            ));
        }
        previous = Some(line);
    }
    let last = previous?;
    let (row, col) = end_of_file(src);
    if is_decorator(last) {
        // A tokenizer error ended the scan: the parser meets that error first.
        if scan.error.is_some() {
            return None;
        }
        // At the end the parser meets a DEDENT inside a block, or the ENDMARKER at module
        // level, which CPython places at the start of the last line.
        return Some(if last.stack_top.0 > 0 {
            SyntaxProblem::new(row, col, UNEXPECTED_UNINDENT)
        } else {
            SyntaxProblem::new(row, 0, "SyntaxError: invalid syntax").shifted_left()
        });
    }
    expected_block(last.ends_with_colon.then_some(last)?, row, col)
}

const UNEXPECTED_UNINDENT: &str = "IndentationError: unexpected unindent";

/// A line that continues a compound statement: `elif`, `else`, `except` or `finally`.
fn is_clause(line: &LogicalLine) -> bool {
    matches!(
        line.first_word.as_str(),
        "elif" | "else" | "except" | "finally"
    )
}

/// A compound statement with its body on the header's line (`if x: pass`), which a clause
/// at the same indentation may continue.
fn is_inline_compound(line: &LogicalLine) -> bool {
    line.has_colon
        && !line.ends_with_colon
        && matches!(
            (line.first_word.as_str(), line.second_word.as_str()),
            (
                "if" | "elif" | "else" | "for" | "while" | "try" | "except" | "finally",
                _
            ) | ("async", "for")
        )
}

/// A decorator line, which must be followed by a `def` or `class` at the same indentation.
fn is_decorator(line: &LogicalLine) -> bool {
    line.first_word.as_str() == "@"
}

/// pycodestyle's `indentation` check for the selected codes (comment lines, which give
/// E114–E116, are not logical lines here).
pub(crate) fn style_diagnostics(scan: &Scan) -> Vec<StyleDiagnostic> {
    let mut out = Vec::new();
    let (mut previous_indent, mut previous_colon) = (0usize, false);
    for line in &scan.lines {
        let at = |code, message| StyleDiagnostic {
            row: line.row,
            col: line.col,
            code,
            message,
        };
        if line.indent % 4 != 0 {
            out.push(at("E111", "indentation is not a multiple of 4"));
        }
        if previous_colon && line.indent <= previous_indent {
            out.push(at("E112", "expected an indented block"));
        } else if !previous_colon && line.indent > previous_indent {
            out.push(at("E113", "unexpected indentation"));
        }
        previous_indent = line.indent;
        previous_colon = line.ends_with_colon;
    }
    out
}
