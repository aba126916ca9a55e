//! `search_file`, `search_dir` and `find_file` with SWE-agent v0.7 output. Each request builds
//! one bash command for the sandbox (paths quoted, NUL-separated output so any file name
//! survives) and formats that command's raw stdout into v0's observation text.

use super::args::{shlex_quote, split_words};
use super::window::{NO_FILE_OPEN, path_argument};

/// v0's limit on the number of files `search_dir` lists (`aci.search.max_files`).
pub const DEFAULT_MAX_FILES: usize = 100;

const SEARCH_FILE_USAGE: &str = "Usage: search_file <search_term> [<file>]";
const SEARCH_DIR_USAGE: &str = "Usage: search_dir <search_term> [<dir>]";
const FIND_FILE_USAGE: &str = "Usage: find_file <file_name> [<dir>]";

/// A search that passed its argument checks and is ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchRequest {
    /// `search_file <search_term> [<file>]`.
    File {
        /// The grep pattern (a basic regular expression, as in v0).
        term: String,
        /// The file to search.
        file: String,
        /// Whether `file` was typed (otherwise it is the open file).
        typed: bool,
    },
    /// `search_dir <search_term> [<dir>]`.
    Dir {
        /// The grep pattern.
        term: String,
        /// The directory as typed, or `./`.
        dir: String,
    },
    /// `find_file <file_name> [<dir>]`.
    FindFile {
        /// The `find -name` pattern (shell globs allowed).
        name: String,
        /// The directory as typed, or `./`.
        dir: String,
    },
}

/// Checks `search_file`'s arguments as v0 does: a search term is required, a given file wins,
/// otherwise the open file is searched. `Err` is the observation.
pub fn parse_search_file(args: &str, open_file: Option<&str>) -> Result<SearchRequest, String> {
    let mut words = split_words(args).into_iter();
    let term = words.next().unwrap_or_default();
    if term.is_empty() {
        return Err(SEARCH_FILE_USAGE.to_owned());
    }
    match words.next().filter(|file| !file.is_empty()) {
        Some(file) => Ok(SearchRequest::File {
            term,
            file,
            typed: true,
        }),
        None => match open_file {
            Some(file) => Ok(SearchRequest::File {
                term,
                file: file.to_owned(),
                typed: false,
            }),
            None => Err(NO_FILE_OPEN.to_owned()),
        },
    }
}

/// Checks `search_dir`'s arguments: one or two words (`./` is the default directory). `Err` is
/// the usage observation.
pub fn parse_search_dir(args: &str) -> Result<SearchRequest, String> {
    let (term, dir) = term_and_dir(args).ok_or_else(|| SEARCH_DIR_USAGE.to_owned())?;
    Ok(SearchRequest::Dir { term, dir })
}

/// Checks `find_file`'s arguments: one or two words (`./` is the default directory). `Err` is
/// the usage observation.
pub fn parse_find_file(args: &str) -> Result<SearchRequest, String> {
    let (name, dir) = term_and_dir(args).ok_or_else(|| FIND_FILE_USAGE.to_owned())?;
    Ok(SearchRequest::FindFile { name, dir })
}

fn term_and_dir(args: &str) -> Option<(String, String)> {
    let mut words = split_words(args);
    match words.len() {
        1 => Some((words.remove(0), "./".to_owned())),
        2 => {
            let dir = words.remove(1);
            Some((words.remove(0), dir))
        }
        _ => None,
    }
}

impl SearchRequest {
    /// The bash command to run in the session (it runs in a subshell, so the session's
    /// directory and variables are untouched). Its stdout goes to
    /// [`SearchRequest::format_output`] with the same `max_files`. Standard error is discarded,
    /// and the tools run in the C locale.
    ///
    /// `search_dir` lists the matching files with one `grep -rIlZ` that skips hidden files and
    /// directories (`.git` is never walked) and binary files, prints how many there are, and,
    /// when that is at most `max_files`, counts the matching lines of just those files. So the
    /// output stays small in any repository, and the work is one recursive grep plus a count of
    /// at most `max_files` files. These are the files of v0's
    /// `find DIR -type f ! -path '*/.*' -exec grep -nIH …`, except when DIR itself lies under a
    /// hidden directory (v0 then found nothing).
    pub fn shell_command(&self, max_files: usize) -> String {
        let script = match self {
            Self::File { term, file, .. } => format!(
                "f={}; if [ -f \"$f\" ]; then printf 'ok\\0%s\\0' \"$(realpath \"$f\")\"; \
                 grep -n -- {} \"$f\"; else printf 'missing\\0'; fi",
                shlex_quote(&path_argument(file)),
                shlex_quote(term)
            ),
            Self::Dir { term, dir } => format!(
                "{}mapfile -d '' files < <(grep -rIlZ --exclude-dir='.*' --exclude='.*' -- {term} \
                 \"$d\"); printf '%s\\0' \"${{#files[@]}}\"; if [ \"${{#files[@]}}\" -gt 0 ] && \
                 [ \"${{#files[@]}}\" -le {max_files} ]; then grep -cIHZ -- {term} \"${{files[@]}}\"; \
                 fi; else printf 'missing\\0'; fi",
                resolve_dir(dir),
                term = shlex_quote(term)
            ),
            Self::FindFile { name, dir } => format!(
                "{}find \"$d\" -type f -name {} -print0; else printf 'missing\\0'; fi",
                resolve_dir(dir),
                shlex_quote(name)
            ),
        };
        // The C locale, as in v0's containers: grep matches bytes, and `-I` skips only files
        // with NUL bytes, not every file that is not valid UTF-8.
        format!("( export LC_ALL=C; {script} ) 2>/dev/null")
    }

    /// Turns the stdout of [`SearchRequest::shell_command`] into v0's observation. `max_files`
    /// is `search_dir`'s cap (v0: 100; above it only the "Please narrow your search." line is
    /// printed). Output that does not come from the command (say, it was interrupted) is
    /// returned as it is.
    pub fn format_output(&self, stdout: &[u8], max_files: usize) -> String {
        let Some((status, rest)) = split_field(stdout) else {
            return super::observation::decode(stdout);
        };
        let payload = if status == b"ok" {
            split_field(rest)
        } else {
            None
        };
        match (self, payload) {
            (Self::File { term, file, typed }, None) => {
                if *typed {
                    format!(
                        "{SEARCH_FILE_USAGE}\nError: File name {file} not found. Please provide a valid file name."
                    )
                } else {
                    no_matches(term, file)
                }
            }
            (Self::Dir { dir, .. } | Self::FindFile { dir, .. }, None) => {
                format!("Directory {dir} not found")
            }
            (Self::File { term, .. }, Some((path, output))) => {
                format_search_file(term, &lossy(path), output)
            }
            (Self::Dir { term, .. }, Some((dir, output))) => {
                format_search_dir(term, &lossy(dir), output, max_files)
            }
            (Self::FindFile { name, .. }, Some((dir, output))) => {
                format_find_file(name, &lossy(dir), output)
            }
        }
    }
}

/// The start of the directory commands: if `dir` is a directory, `d` is set to its physical
/// absolute path (what v0's `realpath` printed, here without running a program), which is
/// printed as the header.
fn resolve_dir(dir: &str) -> String {
    format!(
        "d={}; if [ -d \"$d\" ]; then CDPATH= cd -P -- \"$d\" && d=$PWD; printf 'ok\\0%s\\0' \"$d\"; ",
        shlex_quote(&path_argument(dir))
    )
}

/// Splits off the bytes before the first NUL.
fn split_field(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let nul = bytes.iter().position(|&byte| byte == 0)?;
    Some((&bytes[..nul], &bytes[nul + 1..]))
}

fn lossy(bytes: &[u8]) -> String {
    super::observation::decode(bytes)
}

fn no_matches(term: &str, place: &str) -> String {
    format!("No matches found for \"{term}\" in {place}")
}

/// `grep -n` output (`N:text` per matching line) into v0's `Line N:text` list. v0 checks for
/// more than 100 matched lines by counting unique file names, so the cap never fires; neither
/// does it here.
fn format_search_file(term: &str, file: &str, grep_output: &[u8]) -> String {
    let matches: Vec<(&[u8], &[u8])> = grep_output
        .split(|&byte| byte == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|&byte| byte == b':')?;
            let number = &line[..colon];
            let is_number = !number.is_empty() && number.iter().all(u8::is_ascii_digit);
            is_number.then(|| (number, &line[colon + 1..]))
        })
        .collect();
    if matches.is_empty() {
        return no_matches(term, file);
    }
    let mut out = vec![format!(
        "Found {} matches for \"{term}\" in {file}:",
        matches.len()
    )];
    out.extend(
        matches
            .iter()
            .map(|(number, text)| format!("Line {}:{}", lossy(number), lossy(text))),
    );
    out.push(format!("End of matches for \"{term}\" in {file}"));
    out.join("\n")
}

/// `search_dir`'s output after the directory: the number of matching files, then (when it is
/// at most `max_files`) `grep -cHZ` output, `path\0count\n` per file. v0's per-file summary,
/// sorted by path bytes (v0 pipes through `sort`, which is byte order in the C locale of its
/// containers).
fn format_search_dir(term: &str, dir: &str, output: &[u8], max_files: usize) -> String {
    let Some((count, mut rest)) = split_field(output) else {
        return no_matches(term, dir);
    };
    let matched_files = std::str::from_utf8(count)
        .ok()
        .and_then(|count| count.parse::<usize>().ok())
        .unwrap_or(0);
    if matched_files > max_files {
        return format!(
            "More than {matched_files} files matched for \"{term}\" in {dir}. Please narrow your search."
        );
    }
    let mut files: Vec<(&[u8], u64)> = Vec::new();
    while let Some((path, after_path)) = split_field(rest) {
        let line_end = after_path
            .iter()
            .position(|&byte| byte == b'\n')
            .unwrap_or(after_path.len());
        let count = std::str::from_utf8(&after_path[..line_end])
            .ok()
            .and_then(|count| count.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if count > 0 {
            files.push((path, count));
        }
        rest = after_path.get(line_end + 1..).unwrap_or_default();
    }
    if files.is_empty() {
        return no_matches(term, dir);
    }
    files.sort_unstable();
    let total: u64 = files.iter().map(|(_, count)| count).sum();
    let mut out = vec![format!("Found {total} matches for \"{term}\" in {dir}:")];
    out.extend(
        files
            .iter()
            .map(|(path, count)| format!("{} ({count} matches)", lossy(path))),
    );
    out.push(format!("End of matches for \"{term}\" in {dir}"));
    out.join("\n")
}

/// `find -print0` output into v0's list: no end line, no cap. v0 prints paths in the order
/// `find` meets them, which is the order directories list their entries on disk: it differs
/// between file systems (ext4 orders by a per-file-system hash), so no two machines agree.
/// Here the paths come in the order `find` gives on a file system that lists names in byte
/// order (depth first, each directory's entries sorted), the same on every machine.
fn format_find_file(name: &str, dir: &str, find_output: &[u8]) -> String {
    let mut paths: Vec<&[u8]> = find_output
        .split(|&byte| byte == 0)
        .filter(|path| !path.is_empty())
        .collect();
    if paths.is_empty() {
        return no_matches(name, dir);
    }
    paths.sort_by(|a, b| {
        a.split(|&byte| byte == b'/')
            .cmp(b.split(|&byte| byte == b'/'))
    });
    let mut out = vec![format!(
        "Found {} matches for \"{name}\" in {dir}:",
        paths.len()
    )];
    out.extend(paths.into_iter().map(lossy));
    out.join("\n")
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
