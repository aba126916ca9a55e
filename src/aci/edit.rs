//! `edit <start>:<end>` with SWE-agent v0.7 semantics: argument checks, the new file's bytes
//! (v0 builds it from bash arrays and rewrites it with `printf "%s\n"`), the success
//! observation, and the lint-failure observation with its two windows. The lint gate itself
//! lives elsewhere; this module only takes its problems as text.

use super::args::split_words;
use super::window::{WindowState, constrain, render_view, split_lines, to_i128};

/// What `edit` prints when no file is open (v0 quotes `open` in backticks here, unlike the
/// viewer commands).
pub const EDIT_NO_FILE_OPEN: &str = "No file open. Use the `open` command first.";

/// The usage line of v0.7 `edit`.
pub const EDIT_USAGE: &str = "Usage: edit <start_line>:<end_line>";

/// The line printed after the window when an edit was applied.
pub const FILE_UPDATED: &str = "File updated. Please review the changes and make sure they are correct (correct indentation, no duplicate lines, etc). Edit the file again if necessary.";

const RULE: &str = "-------------------------------------------------";

/// A parsed `<start_line>:<end_line>`: 1-based, inclusive, `start >= 1`. `start > end` is
/// allowed, as in v0 (see [`apply_edit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditRange {
    /// The first line replaced.
    pub start: usize,
    /// The last line replaced.
    pub end: usize,
}

/// Checks that a file is open, then parses the arguments ([`parse_edit_args`]). `Err` is the
/// observation.
pub fn plan_edit(state: &WindowState, args: &str) -> Result<EditRange, String> {
    if state.file.is_none() {
        return Err(EDIT_NO_FILE_OPEN.to_owned());
    }
    parse_edit_args(args)
}

/// Parses `edit`'s argument as v0.7 does: the first word `w` goes through `echo $w: | cut -d:`,
/// so `5:10` gives (5, 10), `5:10:x` also gives (5, 10), and a missing field is a usage error.
/// Both fields must match `^[0-9]+$`. `Err` is the observation, verbatim from v0.7.
///
/// Numbers are read as decimal (bash would read `010` as octal and reject `08`). Line 0 is
/// rejected with `Error: start_line must be at least 1`; v0 would hit a bash
/// "substring expression < 0" error there.
pub fn parse_edit_args(args: &str) -> Result<EditRange, String> {
    let first = split_words(args).into_iter().next().unwrap_or_default();
    // `echo $1:` word-splits the unquoted value and joins the words with single spaces.
    let echoed = format!("{first}:")
        .split([' ', '\t', '\n'])
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut fields = echoed.split(':');
    let start = fields.next().unwrap_or_default();
    let end = fields.next().unwrap_or_default();
    if start.is_empty() || end.is_empty() {
        return Err(EDIT_USAGE.to_owned());
    }
    let Some(start) = parse_line_number(start) else {
        return Err(format!("{EDIT_USAGE}\nError: start_line must be a number"));
    };
    let Some(end) = parse_line_number(end) else {
        return Err(format!("{EDIT_USAGE}\nError: end_line must be a number"));
    };
    if start == 0 {
        return Err(format!(
            "{EDIT_USAGE}\nError: start_line must be at least 1"
        ));
    }
    Ok(EditRange { start, end })
}

fn parse_line_number(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0_usize, |value, digit| {
        value
            .saturating_mul(10)
            .saturating_add(usize::from(digit - b'0'))
    }))
}

/// The replacement's lines as v0's `while IFS= read -r line` reads the heredoc: split on `\n`,
/// nothing trimmed, a final newline optional, and an empty text has no lines.
pub fn replacement_lines(replacement: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = replacement.split('\n').collect();
    if replacement.is_empty() || replacement.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// The file after `edit start:end` with `replacement`, exactly as v0 writes it.
///
/// v0 reads the file with `mapfile -t lines` and writes
/// `printf "%s\n" "${lines[@]:0:start-1}" "${replacement[@]}" "${lines[@]:end}"`. So:
/// - lines `start..=end` are replaced; an empty replacement deletes them;
/// - `end` past the end of the file, or `start` past it, appends;
/// - `start > end` deletes nothing: the replacement goes before line `start`, and lines
///   `end+1..=start-1` appear both before and after it (with `start = end + 1` this is a
///   plain insertion before line `start`);
/// - every line ends with `\n` afterwards, and `\r`s and invalid UTF-8 are kept;
/// - deleting every line leaves `"\n"`, because `printf "%s\n"` with no arguments prints one.
///
/// `start = 0` is treated as 1 (v0 fails with a bash error; [`parse_edit_args`] rejects it).
pub fn apply_edit(before: &[u8], start: usize, end: usize, replacement: &str) -> Vec<u8> {
    let lines = split_lines(before);
    let head = start.saturating_sub(1).min(lines.len());
    let tail = end.min(lines.len());
    let new_lines: Vec<&[u8]> = lines[..head]
        .iter()
        .copied()
        .chain(
            replacement_lines(replacement)
                .into_iter()
                .map(str::as_bytes),
        )
        .chain(lines[tail..].iter().copied())
        .collect();
    if new_lines.is_empty() {
        return b"\n".to_vec();
    }
    let mut after = Vec::with_capacity(before.len() + replacement.len() + 1);
    for line in new_lines {
        after.extend_from_slice(line);
        after.push(b'\n');
    }
    after
}

/// The observation of an applied edit: the window recentred as v0 does (`CURRENT_LINE =
/// start - 1`, then constrained, on the edited file `after`), then [`FILE_UPDATED`]. Updates
/// `state`'s centre.
pub fn edit_success(state: &mut WindowState, range: EditRange, after: &[u8]) -> String {
    let lines = split_lines(after);
    let window = to_i128(state.window);
    let centre2 = 2 * (to_i128(range.start) - 1);
    state.set_centre2(constrain(centre2, window, lines.len()));
    let path = state.file.clone().unwrap_or_default();
    let view = render_view(
        &path,
        &lines,
        state.centre2(),
        window,
        state.max_line_length,
    );
    format!("{view}\n{FILE_UPDATED}")
}

/// The v0.7 observation of an edit the lint gate rejected, starting with `first_line`
/// (`aci.lint.rejection_first_line`). `before` is the original file, `after` what
/// [`apply_edit`] produced, and `problems` the new errors, each printed as `- <problem>`.
/// `state` is not changed: the caller restores the file and keeps the window.
///
/// The would-be window is centred on `s0 + r/2` with `WINDOW = r + 10` on `after`, and the
/// original one on `s0 + (end - s0 + 1)/2` with `WINDOW = end - s0 + 10` on `before`, where
/// `s0 = start - 1`, `r` is the number of replacement lines and `/` is bash's truncating
/// division.
pub fn lint_failure(
    state: &WindowState,
    range: EditRange,
    replacement: &str,
    before: &[u8],
    after: &[u8],
    problems: &[String],
    first_line: &str,
) -> String {
    let path = state.file.as_deref().unwrap_or_default();
    let s0 = to_i128(range.start) - 1;
    let end = to_i128(range.end);
    let replaced = to_i128(replacement_lines(replacement).len());
    let width = state.max_line_length;
    let would_be = lint_view(path, after, s0 + replaced / 2, replaced + 10, width);
    let original = lint_view(path, before, s0 + (end - s0 + 1) / 2, end - s0 + 10, width);
    rejection_text(
        first_line,
        problems,
        &would_be,
        &original,
        Some(
            "You either need to 1) Specify the correct start/end line arguments or 2) Correct your edit code.",
        ),
    )
}

/// The text of an edit the lint gate rejected, as v0.7's `edit` words it: the first line, the
/// errors, the lines the edit would have given and the original ones (`would_be`, `original`),
/// that nothing was changed, `advice` (v0.7's line on the edit's arguments, where they apply),
/// and not to run it again. Shared by `edit` and the lint switch of `str_replace_editor`.
pub fn rejection_text(
    first_line: &str,
    problems: &[String],
    would_be: &str,
    original: &str,
    advice: Option<&str>,
) -> String {
    let mut out = vec![first_line.to_owned(), String::new(), "ERRORS:".to_owned()];
    out.extend(problems.iter().map(|problem| format!("- {problem}")));
    out.extend(
        [
            "",
            "This is how your edit would have looked if applied",
            RULE,
            would_be,
            RULE,
            "",
            "This is the original code before your edit",
            RULE,
            original,
            RULE,
            "Your changes have NOT been applied. Please fix your edit command and try again.",
        ]
        .map(str::to_owned),
    );
    out.extend(advice.map(str::to_owned));
    out.push(
        "DO NOT re-run the same failed edit command. Running it again will lead to the same error."
            .to_owned(),
    );
    out.join("\n")
}

fn lint_view(path: &str, bytes: &[u8], centre: i128, window: i128, max_line: usize) -> String {
    let lines = split_lines(bytes);
    render_view(
        path,
        &lines,
        constrain(2 * centre, window, lines.len()),
        window,
        max_line,
    )
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
