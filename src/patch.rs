//! Reading a git diff: the files it changes and its hunks, with no other knowledge of what it
//! is for (grading, the scans of a patch, the test directives).

use std::sync::LazyLock;

use regex::Regex;

use crate::text::{git_unquote, literal_regex};

/// One file of a git diff: its path before and after, `None` for `/dev/null`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Path in the base tree (`a/` stripped), `None` when the patch creates the file.
    pub old_path: Option<String>,
    /// Path after the patch (`b/` stripped), `None` when the patch deletes the file.
    pub new_path: Option<String>,
}

/// Every path a git diff names, in order: each file's path before the patch, then after it
/// (a rename or copy names both; `/dev/null` none).
pub fn patch_paths(patch: &str) -> Vec<String> {
    patch_files(patch)
        .into_iter()
        .flat_map(|change| change.old_path.into_iter().chain(change.new_path))
        .collect()
}

/// A hunk header, with the old start and the old and new line counts.
pub static HUNK_HEADER: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@"));

/// The files of a git diff, in order. Paths come from the `--- `/`+++ ` lines (quoted paths
/// unescaped, `a/`/`b/` and git's trailing tab stripped), else from `rename`/`copy` lines, else
/// from the `diff --git` header. Hunk bodies are skipped by their line counts, so a removed line
/// that reads `-- x` is not taken for a header.
pub fn patch_files(patch: &str) -> Vec<FileChange> {
    let mut files: Vec<FileChange> = Vec::new();
    let mut current: Option<SectionPaths> = None;
    let mut lines = patch.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            if let Some(section) = current.take() {
                files.push(section.finish());
            }
            current = Some(SectionPaths::from_header(rest));
        } else if line.starts_with("--- ")
            && current
                .as_ref()
                .is_none_or(|section| section.plus.is_some())
        {
            // A plain unified diff (no `diff --git` lines): each `--- ` outside a hunk after a
            // complete `---`/`+++` pair starts the next file.
            if let Some(section) = current.take() {
                files.push(section.finish());
            }
            let mut section = SectionPaths::default();
            section.read_line(line);
            current = Some(section);
        } else if let Some(section) = current.as_mut() {
            section.read_line(line);
        }
        if let Some((_, old, new)) = hunk_header(line) {
            hunk_body(&mut lines, (old, new));
        }
    }
    if let Some(section) = current {
        files.push(section.finish());
    }
    files
}

/// A hunk header's numbers: `@@ -a[,b] +c[,d] @@` → (a, b, d), a count left out being 1.
pub fn hunk_header(line: &str) -> Option<(usize, usize, usize)> {
    let captures = HUNK_HEADER.captures(line)?;
    let number = |index: usize, default: Option<usize>| match captures.get(index) {
        Some(m) => m.as_str().parse().ok(),
        None => default,
    };
    Some((number(1, None)?, number(2, Some(1))?, number(3, Some(1))?))
}

/// The body of a hunk whose header gave `old` and `new` line counts, taken from `lines` (fewer
/// lines when they end first).
pub fn hunk_body<'a>(
    lines: &mut impl Iterator<Item = &'a str>,
    (mut old, mut new): (usize, usize),
) -> Vec<&'a str> {
    let mut body = Vec::new();
    while old > 0 || new > 0 {
        let Some(line) = lines.next() else { break };
        match line.as_bytes().first() {
            Some(b'-') => old = old.saturating_sub(1),
            Some(b'+') => new = new.saturating_sub(1),
            Some(b'\\') => {}
            _ => {
                old = old.saturating_sub(1);
                new = new.saturating_sub(1);
            }
        }
        body.push(line);
    }
    body
}

/// The paths one file section of a diff announces, by source.
#[derive(Debug, Default)]
struct SectionPaths {
    header: Option<(Option<String>, Option<String>)>,
    rename: (Option<String>, Option<String>),
    minus: Option<Option<String>>,
    plus: Option<Option<String>>,
    created: bool,
    deleted: bool,
}

impl SectionPaths {
    fn from_header(rest: &str) -> Self {
        let header = split_header(rest).map(|(a, b)| {
            (
                Some(strip_prefix_dir(&a, "a/")),
                Some(strip_prefix_dir(&b, "b/")),
            )
        });
        Self {
            header,
            ..Self::default()
        }
    }

    fn read_line(&mut self, line: &str) {
        if let Some(path) = line.strip_prefix("--- ") {
            if self.minus.is_none() {
                self.minus = Some(marker_path(path, "a/"));
            }
        } else if let Some(path) = line.strip_prefix("+++ ") {
            if self.plus.is_none() {
                self.plus = Some(marker_path(path, "b/"));
            }
        } else if let Some(path) = line
            .strip_prefix("rename from ")
            .or_else(|| line.strip_prefix("copy from "))
        {
            self.rename.0 = Some(git_unquote(path));
        } else if let Some(path) = line
            .strip_prefix("rename to ")
            .or_else(|| line.strip_prefix("copy to "))
        {
            self.rename.1 = Some(git_unquote(path));
        } else if line.starts_with("new file mode") {
            self.created = true;
        } else if line.starts_with("deleted file mode") {
            self.deleted = true;
        }
    }

    fn finish(self) -> FileChange {
        let (header_old, header_new) = self.header.unwrap_or((None, None));
        let old = self.minus.unwrap_or_else(|| self.rename.0.or(header_old));
        let new = self.plus.unwrap_or_else(|| self.rename.1.or(header_new));
        FileChange {
            old_path: if self.created { None } else { old },
            new_path: if self.deleted { None } else { new },
        }
    }
}

/// The path of a `--- `/`+++ ` line: `None` for `/dev/null`, otherwise unquoted with git's
/// trailing tab (added to names with spaces) and the `a/`/`b/` prefix removed.
fn marker_path(raw: &str, prefix: &str) -> Option<String> {
    let raw = raw.trim_end_matches(['\t', '\r']);
    let raw = match raw.split_once('\t') {
        Some((path, _timestamp)) if !raw.starts_with('"') => path,
        _ => raw,
    };
    let path = git_unquote(raw);
    (path != "/dev/null").then(|| strip_prefix_dir(&path, prefix))
}

fn strip_prefix_dir(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_owned()
}

/// Splits `a/X b/Y` from a `diff --git` header. Quoted names are unescaped; unquoted names with
/// spaces are split where both halves name the same file, else at the first ` b/`.
fn split_header(rest: &str) -> Option<(String, String)> {
    if rest.starts_with('"') {
        let (first, remainder) = take_quoted(rest)?;
        return Some((first, git_unquote(remainder.trim_start())));
    }
    if let Some(index) = rest.find(" \"") {
        return Some((rest[..index].to_owned(), git_unquote(&rest[index + 1..])));
    }
    let half = rest.len().checked_sub(1)? / 2;
    if rest.is_char_boundary(half) && rest.get(half..=half) == Some(" ") {
        let (a, b) = (&rest[..half], &rest[half + 1..]);
        if a.get(2..) == b.get(2..) {
            return Some((a.to_owned(), b.to_owned()));
        }
    }
    let index = rest.find(" b/")?;
    Some((rest[..index].to_owned(), rest[index + 1..].to_owned()))
}

/// Reads one C-quoted name at the start of `text`, returning it and the rest of the text.
fn take_quoted(text: &str) -> Option<(String, &str)> {
    let bytes = text.as_bytes();
    let mut index = 1;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'"' => return Some((git_unquote(&text[..=index]), &text[index + 1..])),
            _ => index += 1,
        }
    }
    None
}
