//! Reading the structure back out of observation and action text: the file viewer's window
//! (`[File: …]`, numbered lines), `cat -n` output (SWE-agent 1.x's editor), the lint gate's
//! rejection (its errors and its two windows), `edit` and `str_replace_editor` actions. Pure;
//! anything that does not parse is shown as plain text.

use super::summary::LINT_REJECTION;

/// A window of numbered lines out of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window<'a> {
    /// The path in the header (empty for `cat -n` output without one).
    pub path: &'a str,
    /// `N lines total`, when the header says it.
    pub total: Option<usize>,
    /// `(A more lines above)`.
    pub above: usize,
    /// `(B more lines below)`.
    pub below: usize,
    /// The numbered lines.
    pub lines: Vec<(usize, &'a str)>,
}

/// An observation split around the window it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithWindow<'a> {
    /// Text before the header.
    pub before: &'a str,
    /// The window.
    pub window: Window<'a>,
    /// Text after the window.
    pub after: &'a str,
}

fn header(line: &str) -> Option<(&str, usize)> {
    let inner = line
        .strip_prefix("[File: ")?
        .strip_suffix(" lines total)]")?;
    let (path, total) = inner.rsplit_once(" (")?;
    Some((path, total.parse().ok()?))
}

fn count_line(line: &str, suffix: &str) -> Option<usize> {
    line.strip_prefix('(')?.strip_suffix(suffix)?.parse().ok()
}

fn numbered(line: &str) -> Option<(usize, &str)> {
    let (number, text) = line.split_once(':')?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((number.parse().ok()?, text))
}

/// Byte offsets of the lines of `text` (each without its `\n`).
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (index, byte) in text.bytes().enumerate() {
        if byte == b'\n' {
            spans.push((start, index));
            start = index + 1;
        }
    }
    spans.push((start, text.len()));
    spans
}

/// The first viewer window in `text` (`[File: <path> (<N> lines total)]`, optional `(A more
/// lines above)`, numbered lines, optional `(B more lines below)`), with the text around it.
pub fn find_window(text: &str) -> Option<WithWindow<'_>> {
    let spans = line_spans(text);
    let line = |i: usize| &text[spans[i].0..spans[i].1];
    let start = (0..spans.len()).find(|&i| header(line(i)).is_some())?;
    let (path, total) = header(line(start))?;
    let mut index = start + 1;
    let mut above = 0;
    if index < spans.len()
        && let Some(n) = count_line(line(index), " more lines above)")
    {
        above = n;
        index += 1;
    }
    let mut lines = Vec::new();
    while index < spans.len() {
        match numbered(line(index)) {
            Some(numbered) => lines.push(numbered),
            None => break,
        }
        index += 1;
    }
    let mut below = 0;
    if index < spans.len()
        && let Some(n) = count_line(line(index), " more lines below)")
    {
        below = n;
        index += 1;
    }
    let before = &text[..spans[start].0];
    let after = if index < spans.len() {
        &text[spans[index].0..]
    } else {
        ""
    };
    Some(WithWindow {
        before,
        window: Window {
            path,
            total: Some(total),
            above,
            below,
            lines,
        },
        after,
    })
}

/// `cat -n` output (SWE-agent 1.x's `str_replace_editor`: `{n:6}\t{line}`), with the text
/// before its first numbered line and after its last; at least two numbered lines.
pub fn find_cat_n(text: &str) -> Option<WithWindow<'_>> {
    let spans = line_spans(text);
    let parse = |(start, end): (usize, usize)| {
        let line = &text[start..end];
        let (number, rest) = line.split_once('\t')?;
        let number = number.trim_start();
        (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
            .then(|| Some((number.parse().ok()?, rest)))
            .flatten()
    };
    let first = spans.iter().position(|&span| parse(span).is_some())?;
    let mut lines = Vec::new();
    let mut index = first;
    while index < spans.len() {
        match parse(spans[index]) {
            Some(numbered) => lines.push(numbered),
            None => break,
        }
        index += 1;
    }
    if lines.len() < 2 {
        return None;
    }
    Some(WithWindow {
        before: &text[..spans[first].0],
        window: Window {
            path: "",
            total: None,
            above: 0,
            below: 0,
            lines,
        },
        after: if index < spans.len() {
            &text[spans[index].0..]
        } else {
            ""
        },
    })
}

/// The lint gate's rejection of an edit, read from its observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection<'a> {
    /// The errors it lists (`E999 SyntaxError: …`).
    pub errors: Vec<&'a str>,
    /// The window of the file as the edit would have left it.
    pub would_be: Option<Window<'a>>,
    /// The window of the file as it is.
    pub original: Option<Window<'a>>,
}

const WOULD_BE: &str = "This is how your edit would have looked if applied";
const ORIGINAL: &str = "This is the original code before your edit";

/// The rejection in an observation that starts with the lint gate's message.
pub fn rejection(observation: &str) -> Option<Rejection<'_>> {
    if !observation.starts_with(LINT_REJECTION) {
        return None;
    }
    let errors = observation
        .split_once("ERRORS:\n")
        .map(|(_, rest)| {
            rest.lines()
                .map_while(|line| line.strip_prefix("- "))
                .collect()
        })
        .unwrap_or_default();
    let section = |marker: &str| {
        let (_, rest) = observation.split_once(marker)?;
        find_window(rest).map(|found| found.window)
    };
    Some(Rejection {
        errors,
        would_be: section(WOULD_BE),
        original: section(ORIGINAL),
    })
}

/// An `edit <start>:<end>` action: the range and the replacement lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeEdit<'a> {
    /// First replaced line (1-based).
    pub start: usize,
    /// Last replaced line.
    pub end: usize,
    /// The replacement's lines.
    pub lines: Vec<&'a str>,
}

/// The line-range edit in an action (`edit 33:38\n…\nend_of_edit`).
pub fn range_edit(action: &str) -> Option<RangeEdit<'_>> {
    let action = action.trim_start();
    let (first, body) = action.split_once('\n').unwrap_or((action, ""));
    let range = first.strip_prefix("edit ")?.trim();
    let (start, end) = range.split_once(':')?;
    let (start, end) = (start.trim().parse().ok()?, end.trim().parse().ok()?);
    let body = body.trim_end_matches('\n');
    let body = body.strip_suffix("end_of_edit").unwrap_or(body);
    let body = body.strip_suffix('\n').unwrap_or(body);
    let lines = if body.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    Some(RangeEdit { start, end, lines })
}

/// The line an `open <path> <N>` or `goto <N>` action asks for: the line the window it shows
/// is centred on.
pub fn target_line(action: &str) -> Option<usize> {
    let line = action.trim().lines().next()?;
    let words = shell_words(line)?;
    match words.as_slice() {
        [command, n] if command == "goto" => n.parse().ok(),
        [command, _, n] if command == "open" => n.parse().ok(),
        _ => None,
    }
}

/// Splits a command line into words as a POSIX shell would for quoting (`'…'`, `"…"` with
/// `\` escapes, `\` outside quotes); `None` for an unterminated quote.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            '\n' => {}
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// A `str_replace_editor str_replace <path> --old_str … --new_str …` action (SWE-agent 1.x):
/// the path, the old text and the new one.
pub fn str_replace(action: &str) -> Option<(String, String, String)> {
    let words = shell_words(action.trim())?;
    if words.first().map(String::as_str) != Some("str_replace_editor")
        || words.get(1).map(String::as_str) != Some("str_replace")
    {
        return None;
    }
    let path = words.get(2)?.clone();
    let value = |flag: &str| {
        let index = words.iter().position(|w| w == flag)?;
        words.get(index + 1).cloned()
    };
    Some((
        path,
        value("--old_str")?,
        value("--new_str").unwrap_or_default(),
    ))
}

#[cfg(test)]
#[path = "observation_tests.rs"]
mod tests;
