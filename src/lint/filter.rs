//! SWE-agent v0.7's rule for errors that existed before an edit (`_split_string.py`), and a
//! parser for flake8's `path:line:col: CODE message` output so an external linter's errors
//! can be filtered the same way.

use std::collections::HashSet;

use super::{EditRange, LintError};

/// Drops from `after_errors` every error that already existed before the edit.
///
/// Errors of `before_errors` above the edited range are kept as they are, those inside it
/// are dropped (so they count as new if they come back), and those below it are shifted by
/// `replacement_lines - (end - start + 1)`. An error of `after_errors` equal to an adjusted
/// old error in line, column, code and message is removed.
pub fn filter_new(
    before_errors: &[LintError],
    after_errors: Vec<LintError>,
    edited: &EditRange,
) -> Vec<LintError> {
    let (start, end) = (edited.start as i64, edited.end as i64);
    let shift = edited.replacement_lines as i64 - (end - start + 1);
    let previous: HashSet<(i64, usize, &str, &str)> = before_errors
        .iter()
        .filter_map(|error| {
            let line = error.line as i64;
            let line = if line < start {
                line
            } else if line <= end {
                return None;
            } else {
                line + shift
            };
            Some((
                line,
                error.column,
                error.code.as_str(),
                error.message.as_str(),
            ))
        })
        .collect();
    after_errors
        .into_iter()
        .filter(|error| {
            let key = (
                error.line as i64,
                error.column,
                error.code.as_str(),
                error.message.as_str(),
            );
            !previous.contains(&key)
        })
        .collect()
}

/// Parses flake8's default output format, one `path:line:col: CODE message` per line.
///
/// The path may itself contain colons; lines that do not have this shape are skipped.
pub fn parse_flake8(output: &str) -> Vec<LintError> {
    output.lines().filter_map(parse_flake8_line).collect()
}

fn parse_flake8_line(line: &str) -> Option<LintError> {
    let line = line.trim();
    let (location, problem) = line.split_once(": ")?;
    let mut parts = location.rsplitn(3, ':');
    let column = parts.next()?.trim().parse().ok()?;
    let line_number = parts.next()?.trim().parse().ok()?;
    parts.next()?;
    let (code, message) = problem.split_once(' ').unwrap_or((problem, ""));
    Some(LintError {
        line: line_number,
        column,
        code: code.to_owned(),
        message: message.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: usize, column: usize, code: &str, message: &str) -> LintError {
        LintError {
            line,
            column,
            code: code.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn errors_above_the_edit_are_kept_and_below_it_shifted() {
        let before = vec![
            error(2, 1, "F821", "undefined name 'a'"),
            error(10, 5, "F821", "undefined name 'b'"),
        ];
        let after = vec![
            error(2, 1, "F821", "undefined name 'a'"),
            error(11, 5, "F821", "undefined name 'b'"),
        ];
        let edited = EditRange {
            start: 5,
            end: 5,
            replacement_lines: 2,
        };
        assert_eq!(filter_new(&before, after, &edited), Vec::<LintError>::new());
    }

    #[test]
    fn errors_inside_the_edit_count_as_new_when_they_reappear() {
        let before = vec![error(5, 1, "F821", "undefined name 'a'")];
        let after = vec![error(5, 1, "F821", "undefined name 'a'")];
        let edited = EditRange {
            start: 5,
            end: 6,
            replacement_lines: 2,
        };
        assert_eq!(filter_new(&before, after.clone(), &edited), after);
    }

    #[test]
    fn a_changed_message_or_column_is_a_new_error() {
        let before = vec![error(9, 1, "F821", "undefined name 'a'")];
        let after = vec![
            error(9, 2, "F821", "undefined name 'a'"),
            error(9, 1, "F821", "undefined name 'b'"),
        ];
        let edited = EditRange {
            start: 1,
            end: 1,
            replacement_lines: 1,
        };
        assert_eq!(filter_new(&before, after.clone(), &edited), after);
    }

    #[test]
    fn start_after_end_inserts_without_deleting() {
        let before = vec![error(4, 1, "E111", "indentation is not a multiple of 4")];
        let after = vec![error(7, 1, "E111", "indentation is not a multiple of 4")];
        let edited = EditRange {
            start: 3,
            end: 2,
            replacement_lines: 3,
        };
        assert_eq!(filter_new(&before, after, &edited), Vec::<LintError>::new());
    }

    #[test]
    fn flake8_output_is_parsed_even_with_colons_in_the_path() {
        let output = "/a/b.py:3:5: E999 SyntaxError: invalid syntax\nC:/x:y.py:1:1: F821 undefined name 'z'\n\nnoise\n";
        assert_eq!(
            parse_flake8(output),
            vec![
                error(3, 5, "E999", "SyntaxError: invalid syntax"),
                error(1, 1, "F821", "undefined name 'z'"),
            ]
        );
    }
}
