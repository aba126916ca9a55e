//! `str_replace_editor`, SWE-agent 1.x's file tool (its `tools/edit_anthropic` bundle, after
//! Anthropic's text editor): `view` (a file numbered as `cat -n` prints it, or a directory two
//! levels deep), `create`, `str_replace`, `insert` and `undo_edit`, with 1.x's messages word
//! for word. Pure: the session reads the file, asks the sandbox what the path is, and writes
//! the bytes this module computes.
//!
//! 1.x runs the tool as a Python script per call, so its observable behaviour follows Python:
//! the arguments are read by `argparse` ([`parse_args`]), a path is printed as `pathlib`
//! prints it ([`normalize_path`]), a file is read in text mode (universal newlines; UTF-8, else
//! Latin-1) and `str_replace` and `insert` expand the tabs of the whole file, a length is
//! counted in characters, and every message ends with `print`'s newline.

use std::collections::BTreeMap;

use crate::text::lines::is_python_line_boundary;

/// The command's name.
pub const NAME: &str = "str_replace_editor";

/// Above this many characters, output is cut and [`TRUNCATED_MESSAGE`] appended.
pub const MAX_RESPONSE_LEN: usize = 16000;

/// The note after output cut at [`MAX_RESPONSE_LEN`].
pub const TRUNCATED_MESSAGE: &str = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>";

/// Lines of context around an edit in its confirmation.
pub const SNIPPET_LINES: usize = 4;

/// The first line of the abbreviated view of a large Python file (`aci.filemap`).
pub const FILEMAP_NOTE: &str = "<NOTE>This file is too large to display entirely. Showing abbreviated version. Please use `str_replace_editor view` with the `view_range` parameter to show selected lines next.</NOTE>";

/// The last line of the abbreviated view (1.x writes `str_replace editor` here).
pub const FILEMAP_IMPORTANT: &str = "<IMPORTANT><NOTE>The above file has been abbreviated. Please use `str_replace editor view` with `view_range` to look at relevant files in detail.</NOTE></IMPORTANT>";

/// What `argparse` prints before an error: the usage, wrapped as at 80 columns.
pub const USAGE: &str = "usage: str_replace_editor [-h] [--file_text FILE_TEXT]
                          [--view_range VIEW_RANGE VIEW_RANGE]
                          [--old_str OLD_STR] [--new_str NEW_STR]
                          [--insert_line INSERT_LINE]
                          command path
";

/// The arguments of one call, as `argparse` read them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// `view`, `create`, `str_replace`, `insert`, `undo_edit` (anything else is reported).
    pub command: String,
    /// The path as given.
    pub path: String,
    /// `--file_text`.
    pub file_text: Option<String>,
    /// `--view_range`: two integers.
    pub view_range: Option<[i64; 2]>,
    /// `--old_str`.
    pub old_str: Option<String>,
    /// `--new_str`.
    pub new_str: Option<String>,
    /// `--insert_line`.
    pub insert_line: Option<i64>,
}

/// The options, in the order of the usage line, with how many values each takes.
const OPTIONS: [(&str, usize); 5] = [
    ("--file_text", 1),
    ("--view_range", 2),
    ("--old_str", 1),
    ("--new_str", 1),
    ("--insert_line", 1),
];

/// The option a word names: the whole name or an unambiguous prefix of it (argparse's
/// abbreviations), `--name=value` included. `None` when no option matches.
fn option_of(word: &str) -> Option<(&'static str, usize, Option<String>)> {
    let (name, value) = match word.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (word, None),
    };
    if !name.starts_with("--") || name.len() < 3 {
        return None;
    }
    let mut matches = OPTIONS
        .iter()
        .filter(|(option, _)| option.starts_with(name));
    let first = matches.next()?;
    if matches.next().is_some() {
        return None;
    }
    Some((first.0, first.1, value))
}

/// Whether argparse reads `word` as an option (an `O` in its pattern) rather than a value:
/// it starts with `-`, is not a negative number, and has no space.
fn looks_like_option(word: &str) -> bool {
    if !word.starts_with('-') || word.len() < 2 {
        return false;
    }
    if option_of(word).is_some() {
        return true;
    }
    let negative_number = {
        let digits = &word[1..];
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        all_digits(whole)
            && all_digits(fraction)
            && (!whole.is_empty() && !digits.contains('.')
                || !fraction.is_empty() && digits.contains('.'))
    };
    !negative_number && !word.contains(' ')
}

/// Python's `int()` of a command-line word: optional whitespace and sign, digits
/// (underscores between them allowed).
fn python_int(word: &str) -> Option<i64> {
    let trimmed = word.trim();
    let (negative, digits) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let value: i64 = digits.replace('_', "").parse().ok()?;
    Some(if negative { -value } else { value })
}

/// A string as Python's `repr` writes it (single quotes unless it holds one and no double).
fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn usage_error(message: &str) -> String {
    format!("{USAGE}{NAME}: error: {message}\n")
}

/// Reads the words of a call (after the command name) as 1.x's `argparse` parser does: two
/// positionals, `command` and `path`, and the options `--file_text`, `--view_range` (two
/// integers), `--old_str`, `--new_str`, `--insert_line` (an integer), abbreviations and
/// `--name=value` accepted. `Err` is what argparse prints (the usage and the error).
///
/// Left out: `-h` (read as an unknown option) and argparse's `--` separator.
pub fn parse_args(words: &[String]) -> Result<Request, String> {
    let mut request = Request::default();
    let mut positionals: Vec<String> = Vec::new();
    let mut extras: Vec<String> = Vec::new();
    let mut index = 0;
    while index < words.len() {
        let word = &words[index];
        index += 1;
        if !looks_like_option(word) {
            if positionals.len() < 2 {
                positionals.push(word.clone());
            } else {
                extras.push(word.clone());
            }
            continue;
        }
        let Some((option, arity, inline)) = option_of(word) else {
            extras.push(word.clone());
            continue;
        };
        let values: Vec<String> = match inline {
            Some(value) if arity == 1 => vec![value],
            Some(_) => {
                return Err(usage_error(&format!(
                    "argument {option}: expected {arity} arguments"
                )));
            }
            None => {
                let available = words[index..]
                    .iter()
                    .take(arity)
                    .take_while(|word| !looks_like_option(word))
                    .count();
                if available < arity {
                    let expected = if arity == 1 {
                        "expected one argument".to_owned()
                    } else {
                        format!("expected {arity} arguments")
                    };
                    return Err(usage_error(&format!("argument {option}: {expected}")));
                }
                let values = words[index..index + arity].to_vec();
                index += arity;
                values
            }
        };
        let int = |word: &String| {
            python_int(word).ok_or_else(|| {
                usage_error(&format!(
                    "argument {option}: invalid int value: {}",
                    python_repr(word)
                ))
            })
        };
        match option {
            "--file_text" => request.file_text = Some(values[0].clone()),
            "--old_str" => request.old_str = Some(values[0].clone()),
            "--new_str" => request.new_str = Some(values[0].clone()),
            "--insert_line" => request.insert_line = Some(int(&values[0])?),
            _ => request.view_range = Some([int(&values[0])?, int(&values[1])?]),
        }
    }
    let mut positionals = positionals.into_iter();
    match (positionals.next(), positionals.next()) {
        (None, _) => {
            return Err(usage_error(
                "the following arguments are required: command, path",
            ));
        }
        (Some(_), None) => {
            return Err(usage_error("the following arguments are required: path"));
        }
        (Some(command), Some(path)) => {
            request.command = command;
            request.path = path;
        }
    }
    if !extras.is_empty() {
        return Err(usage_error(&format!(
            "unrecognized arguments: {}",
            extras.join(" ")
        )));
    }
    Ok(request)
}

/// A path as Python's `str(pathlib.Path(path))` writes it: repeated slashes and `.` parts
/// dropped, no trailing slash, `.` for an empty path (two leading slashes stay, as POSIX
/// allows).
pub fn normalize_path(path: &str) -> String {
    let root = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let joined = format!("{root}{}", parts.join("/"));
    if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

/// `pathlib`'s `parent` of a normalized path.
pub fn parent_path(path: &str) -> String {
    match path.rfind('/') {
        Some(0) => "/".to_owned(),
        Some(1) if path.starts_with("//") => "//".to_owned(),
        Some(index) => path[..index].to_owned(),
        None => ".".to_owned(),
    }
}

/// What the path names in the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// Nothing (or a dangling link).
    Missing,
    /// A file (anything that exists and is not a directory).
    File,
    /// A directory.
    Dir,
}

/// 1.x's checks of the path before any command (`validate_path`): it must be absolute (the
/// suggestion joins it to `cwd`, the shell's directory), exist (except for `create`), not
/// exist for `create`, and be a file unless the command is `view`. `path` is normalized.
pub fn check_path(command: &str, path: &str, kind: PathKind, cwd: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        let suggested = normalize_path(&format!("{cwd}/{path}"));
        return Err(format!(
            "The path {path} is not an absolute path, it should start with `/`. Maybe you meant {suggested}?\n"
        ));
    }
    match (kind, command) {
        (PathKind::Missing, "create") => Ok(()),
        (PathKind::Missing, _) => Err(format!(
            "The path {path} does not exist. Please provide a valid path.\n"
        )),
        (_, "create") => Err(format!(
            "File already exists at: {path}. Cannot overwrite files using command `create`.\n"
        )),
        (PathKind::Dir, command) if command != "view" => Err(format!(
            "The path {path} is a directory and only the `view` command can be used on directories\n"
        )),
        _ => Ok(()),
    }
}

/// The message for a command that is not one of the five.
pub fn unrecognized_command(command: &str) -> String {
    format!(
        "Unrecognized command {command}. The allowed commands for the {NAME} tool are: \"view\", \"create\", \"str_replace\", \"insert\", \"undo_edit\"\n"
    )
}

/// The message for a parameter a command needs and did not get.
pub fn missing_parameter(parameter: &str, command: &str) -> String {
    format!("Parameter `{parameter}` is required for command: {command}\n")
}

/// The encoding a file was read with, and is written back with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 (the default).
    Utf8,
    /// Latin-1, for a file that is not UTF-8.
    Latin1,
}

/// A file as Python reads it in text mode: UTF-8, else Latin-1 (which reads any bytes), with
/// `\r\n` and `\r` read as `\n`.
pub fn decode(bytes: &[u8]) -> (String, Encoding) {
    let (text, encoding) = match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), Encoding::Utf8),
        Err(_) => (
            bytes.iter().map(|&b| char::from(b)).collect(),
            Encoding::Latin1,
        ),
    };
    (text.replace("\r\n", "\n").replace('\r', "\n"), encoding)
}

/// The bytes Python writes for `text` in `encoding`. `Err` is 1.x's message when a character
/// has no Latin-1 byte.
pub fn encode(text: &str, encoding: Encoding, path: &str) -> Result<Vec<u8>, String> {
    match encoding {
        Encoding::Utf8 => Ok(text.as_bytes().to_vec()),
        Encoding::Latin1 => {
            let mut bytes = Vec::with_capacity(text.len());
            for (position, c) in text.chars().enumerate() {
                let Ok(byte) = u8::try_from(u32::from(c)) else {
                    return Err(format!(
                        "Ran into 'latin-1' codec can't encode character '\\u{:04x}' in position {position}: ordinal not in range(256) while trying to write to {path}\n",
                        u32::from(c)
                    ));
                };
                bytes.push(byte);
            }
            Ok(bytes)
        }
    }
}

/// Python's `str.expandtabs()`: tab stops every 8 columns, the column reset by `\n` and `\r`.
pub fn expand_tabs(text: &str) -> String {
    if !text.contains('\t') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut column = 0;
    for c in text.chars() {
        match c {
            '\t' => {
                let spaces = 8 - column % 8;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            '\n' | '\r' => {
                out.push(c);
                column = 0;
            }
            _ => {
                out.push(c);
                column += 1;
            }
        }
    }
    out
}

/// The lines of `text` as Python's `str.splitlines()` gives them.
pub fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if !is_python_line_boundary(c) {
            continue;
        }
        lines.push(&text[start..index]);
        let mut end = index + c.len_utf8();
        if c == '\r' && chars.next_if(|&(_, next)| next == '\n').is_some() {
            end += 1;
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// 1.x's `maybe_truncate`: the first [`MAX_RESPONSE_LEN`] characters and [`TRUNCATED_MESSAGE`].
fn maybe_truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_RESPONSE_LEN) {
        Some((cut, _)) => format!("{}{TRUNCATED_MESSAGE}", &text[..cut]),
        None => text.to_owned(),
    }
}

/// 1.x's `_make_output`: `Here's the result of running `cat -n` on <descriptor>:`, then each
/// line of `content` (cut at [`MAX_RESPONSE_LEN`], tabs expanded) numbered from `first_line`
/// in six columns and a tab, and a newline.
pub fn numbered(content: &str, descriptor: &str, first_line: i64) -> String {
    let content = expand_tabs(&maybe_truncate(content));
    let mut out = format!("Here's the result of running `cat -n` on {descriptor}:\n");
    for (offset, line) in content.split('\n').enumerate() {
        if offset > 0 {
            out.push('\n');
        }
        let number = first_line.saturating_add(i64::try_from(offset).unwrap_or(i64::MAX));
        out.push_str(&format!("{number:>6}\t{line}"));
    }
    out.push('\n');
    out
}

/// The find command whose output [`view_dir`] shows (1.x's, with the path quoted).
pub fn find_command(path: &str) -> String {
    format!(
        r"find {} -maxdepth 2 -not -path '*/\.*'",
        crate::sandbox::shell_quote(path)
    )
}

/// `view` of a directory: `find`'s listing under 1.x's heading; nothing when `find` wrote to
/// stderr (1.x prints nothing then). `Err` when a `view_range` was given.
pub fn view_dir(
    path: &str,
    view_range: Option<[i64; 2]>,
    find_stdout: &str,
    find_stderr: &str,
) -> Result<String, String> {
    if view_range.is_some() {
        return Err(
            "The `view_range` parameter is not allowed when `path` points to a directory.\n"
                .to_owned(),
        );
    }
    if !find_stderr.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{find_stdout}\n\n"
    ))
}

fn python_list(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `view` of a file: the whole text numbered, or lines `view_range` (`[start, -1]`: to the
/// end), with 1.x's checks of the range. With `filemap` (1.x's `USE_FILEMAP`), a `.py` file
/// over [`MAX_RESPONSE_LEN`] characters viewed whole is shown abbreviated: every function
/// body of 5 lines or more is elided (`bodies`: the 0-based first and last rows of each, see
/// [`crate::lint::python_function_bodies`]).
pub fn view_file(
    path: &str,
    text: &str,
    view_range: Option<[i64; 2]>,
    filemap: Option<&[(usize, usize)]>,
) -> Result<String, String> {
    let Some([first, last]) = view_range else {
        if let Some(bodies) =
            filemap.filter(|_| path.ends_with(".py") && text.chars().count() > MAX_RESPONSE_LEN)
        {
            return Ok(abbreviated(text, bodies));
        }
        return Ok(format!("{}\n", numbered(text, path, 1)));
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let count = i64::try_from(lines.len()).unwrap_or(i64::MAX);
    let range = python_list(&[first, last]);
    if first < 1 || first > count {
        return Err(format!(
            "Invalid `view_range`: {range}. Its first element `{first}` should be within the range of lines of the file: {}\n",
            python_list(&[1, count])
        ));
    }
    if last > count {
        return Err(format!(
            "Invalid `view_range`: {range}. Its second element `{last}` should be smaller than the number of lines in the file: `{count}`\n"
        ));
    }
    if last != -1 && last < first {
        return Err(format!(
            "Invalid `view_range`: {range}. Its second element `{last}` should be larger or equal than its first `{first}`\n"
        ));
    }
    let last = if last == -1 { count } else { last };
    let from = usize::try_from(first - 1).unwrap_or(0);
    let to = usize::try_from(last).unwrap_or(0);
    let shown = lines[from..to].join("\n");
    Ok(format!("{}\n", numbered(&shown, path, first)))
}

fn abbreviated(text: &str, bodies: &[(usize, usize)]) -> String {
    let elided: Vec<(usize, usize)> = bodies
        .iter()
        .copied()
        .filter(|(start, end)| end.saturating_sub(*start) >= 5)
        .collect();
    let hidden = |row: usize| {
        elided
            .iter()
            .any(|(start, end)| (*start..=*end).contains(&row))
    };
    let mut entries: Vec<(usize, String)> = elided
        .iter()
        .map(|(start, end)| {
            (
                *start,
                format!("... eliding lines {}-{} ...", start + 1, end + 1),
            )
        })
        .collect();
    entries.extend(
        python_splitlines(text)
            .into_iter()
            .enumerate()
            .filter(|(row, _)| !hidden(*row))
            .map(|(row, line)| (row, line.to_owned())),
    );
    entries.sort();
    let map: Vec<String> = entries
        .iter()
        .map(|(row, line)| format!("{:>6} {line}", row + 1))
        .collect();
    let map = maybe_truncate(&expand_tabs(&map.join("\n")));
    format!("{FILEMAP_NOTE}\n{map}\n{FILEMAP_IMPORTANT}\n")
}

/// `create`: the file's text and the message. `Err` when the parent directory is missing.
pub fn create(path: &str, parent_exists: bool) -> Result<String, String> {
    if !parent_exists {
        return Err(format!(
            "The parent directory {} does not exist. Please create it first.\n",
            parent_path(path)
        ));
    }
    Ok(format!("File created successfully at: {path}\n"))
}

/// An edit that was made: the new text, what goes on the file's history (the text before,
/// tabs expanded as 1.x keeps it), the message, and the lines it replaced for the lint gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The file's new text.
    pub text: String,
    /// Pushed on the file's history for `undo_edit`.
    pub history: String,
    /// The confirmation with its snippet.
    pub message: String,
    /// The first line replaced (1-based).
    pub start: usize,
    /// The last line replaced (inclusive; `start - 1` for an insertion).
    pub end: usize,
    /// How many lines replaced them.
    pub replacement_lines: usize,
}

/// `str_replace`: `old_str` must occur exactly once in the file (tabs expanded in both) and
/// differ from `new_str` (absent: empty). `Err` is 1.x's message.
pub fn str_replace(
    path: &str,
    text: &str,
    old_str: &str,
    new_str: Option<&str>,
) -> Result<Edit, String> {
    let content = expand_tabs(text);
    let old = expand_tabs(old_str);
    let new = new_str.map(expand_tabs).unwrap_or_default();
    let occurrences = content.matches(old.as_str()).count();
    if occurrences == 0 {
        return Err(format!(
            "No replacement was performed, old_str `{old}` did not appear verbatim in {path}.\n"
        ));
    }
    if occurrences > 1 {
        let lines: Vec<i64> = content
            .split('\n')
            .enumerate()
            .filter(|(_, line)| line.contains(old.as_str()))
            .map(|(index, _)| i64::try_from(index + 1).unwrap_or(i64::MAX))
            .collect();
        return Err(format!(
            "No replacement was performed. Multiple occurrences of old_str `{old}` in lines {}. Please ensure it is unique\n",
            python_list(&lines)
        ));
    }
    if new == old {
        return Err(format!(
            "No replacement was performed, old_str `{old}` is the same as new_str `{new}`.\n"
        ));
    }
    let at = content.find(old.as_str()).unwrap_or_default();
    let new_content = format!("{}{new}{}", &content[..at], &content[at + old.len()..]);
    let replacement_line = content[..at].matches('\n').count();
    let start_line = replacement_line.saturating_sub(SNIPPET_LINES).max(1);
    let end_line = (replacement_line + SNIPPET_LINES + new.matches('\n').count())
        .min(python_splitlines(&new_content).len());
    let new_lines: Vec<&str> = new_content.split('\n').collect();
    let message = if end_line < start_line {
        // 1.x's window check fails here (the file is then empty): its traceback's last line.
        format!(
            "Traceback (most recent call last):\nAssertionError: ({start_line}, {end_line}, {})\n",
            new_lines.len()
        )
    } else {
        let snippet = new_lines[start_line - 1..end_line.min(new_lines.len())].join("\n");
        format!(
            "The file {path} has been edited. {}Review the changes and make sure they are as expected. Edit the file again if necessary.\n",
            numbered(
                &snippet,
                &format!("a snippet of {path}"),
                i64::try_from(start_line).unwrap_or(1)
            )
        )
    };
    Ok(Edit {
        text: new_content,
        history: content,
        message,
        start: replacement_line + 1,
        end: replacement_line + old.split('\n').count(),
        replacement_lines: new.split('\n').count(),
    })
}

/// `insert`: `new_str` as lines after line `insert_line` (0: at the top). `Err` is 1.x's
/// message for a line outside the file.
pub fn insert(path: &str, text: &str, insert_line: i64, new_str: &str) -> Result<Edit, String> {
    let content = expand_tabs(text);
    let new = expand_tabs(new_str);
    let lines: Vec<&str> = content.split('\n').collect();
    let count = i64::try_from(lines.len()).unwrap_or(i64::MAX);
    let Some(at) = usize::try_from(insert_line)
        .ok()
        .filter(|_| insert_line <= count)
    else {
        return Err(format!(
            "Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of the file: {}\n",
            python_list(&[0, count])
        ));
    };
    let new_lines: Vec<&str> = new.split('\n').collect();
    let joined: Vec<&str> = lines[..at]
        .iter()
        .chain(&new_lines)
        .chain(&lines[at..])
        .copied()
        .collect();
    let snippet: Vec<&str> = lines[at.saturating_sub(SNIPPET_LINES)..at]
        .iter()
        .chain(&new_lines)
        .chain(&lines[at..(at + SNIPPET_LINES).min(lines.len())])
        .copied()
        .collect();
    let first = (insert_line - i64::try_from(SNIPPET_LINES).unwrap_or(4) + 1).max(1);
    let message = format!(
        "The file {path} has been edited. {}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.\n",
        numbered(&snippet.join("\n"), "a snippet of the edited file", first)
    );
    Ok(Edit {
        text: joined.join("\n"),
        history: content,
        message,
        start: at + 1,
        end: at,
        replacement_lines: new_lines.len(),
    })
}

/// `undo_edit`'s message after restoring `text`; [`no_history`] when there is nothing to undo.
pub fn undone(path: &str, text: &str) -> String {
    format!(
        "Last edit to {path} undone successfully. {}\n",
        numbered(text, path, 1)
    )
}

/// `undo_edit` of a file without history.
pub fn no_history(path: &str) -> String {
    format!("No edit history found for {path}.\n")
}

/// The texts each file had before its edits, last on top (1.x's `file_history`), by normalized
/// path. `create` pushes the created text, as 1.x does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileHistory(BTreeMap<String, Vec<String>>);

impl FileHistory {
    /// Remembers `text` for `path`.
    pub fn push(&mut self, path: &str, text: String) {
        self.0.entry(path.to_owned()).or_default().push(text);
    }

    /// The last text remembered for `path`, taken off.
    pub fn pop(&mut self, path: &str) -> Option<String> {
        self.0.get_mut(path)?.pop()
    }
}

/// The observation of a `str_replace` or `insert` the lint gate rejected, in the style of
/// v0.7's `edit`: the first line (`aci.lint.rejection_first_line`), the errors, the lines the
/// edit would have given and the original ones (each with 4 lines of context, numbered as
/// `view` numbers them), and that nothing was changed.
pub fn lint_rejection(first_line: &str, problems: &[String], path: &str, edit: &Edit) -> String {
    let window = |text: &str, start: usize, end: usize| {
        let lines: Vec<&str> = text.split('\n').collect();
        let first = start.saturating_sub(SNIPPET_LINES).max(1).min(lines.len());
        let last = (end + SNIPPET_LINES).min(lines.len()).max(first);
        let shown = lines[first - 1..last].join("\n");
        let text = numbered(&shown, path, i64::try_from(first).unwrap_or(1));
        text.trim_end_matches('\n').to_owned()
    };
    let would_be = window(
        &edit.text,
        edit.start,
        edit.start + edit.replacement_lines.saturating_sub(1),
    );
    let original = window(&edit.history, edit.start, edit.end.max(edit.start));
    let mut text = super::edit::rejection_text(first_line, problems, &would_be, &original, None);
    text.push('\n');
    text
}

#[cfg(test)]
#[path = "str_replace_editor_tests.rs"]
mod tests;
