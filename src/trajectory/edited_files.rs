//! `info.edited_files30`, `edited_files50` and `edited_files70`: the files a patch modifies, as
//! they are after the patch, cut to the lines around its hunks, in the layout SWE-agent's
//! `PatchFormatter.get_files_str(original=False, context_length=N)` writes (its reviewers and
//! trajectory tools read these keys).
//!
//! Per modified file (added and removed files are left out): `[File: <path>]`, then the
//! 1-based lines `start..stop` of each hunk widened by N lines (`start = max(1, target_start -
//! N)`, `stop = target_start + target_length + N`, exclusive; overlapping ranges merged), each
//! as `{n:6}: {line}`, with `[k lines above omitted]`, a blank-line-framed `[k lines omitted]`
//! between ranges and `[k lines below omitted]`. Files are separated by a blank line. Without a
//! patch the text is [`NO_EDITED_FILES`].

use std::collections::BTreeMap;

/// The value of every `edited_filesN` key when nothing was submitted.
pub const NO_EDITED_FILES: &str = "Empty. No edited files found.";

/// The context sizes SWE-agent writes.
pub const CONTEXT_LENGTHS: [usize; 3] = [30, 50, 70];

/// One file of a unified diff: its path and its hunks' target ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifiedFile {
    /// The path relative to the repository (without `a/` or `b/`).
    pub path: String,
    /// `(target_start, target_length)` of each hunk.
    pub hunks: Vec<(usize, usize)>,
}

#[derive(Default)]
struct PatchedFile {
    source: String,
    target: String,
    renamed: bool,
    saw_source_line: bool,
    hunks: Vec<(usize, usize, usize, usize)>,
}

impl PatchedFile {
    fn is_added(&self) -> bool {
        self.source == "/dev/null" || matches!(self.hunks.as_slice(), [(0, 0, _, _)])
    }

    fn is_removed(&self) -> bool {
        self.target == "/dev/null" || matches!(self.hunks.as_slice(), [(_, _, 0, 0)])
    }

    /// The path as unidiff's `PatchedFile.path` gives it: the source path, or the target for a
    /// rename, without the `a/`/`b/` prefix.
    fn path(&self) -> String {
        let path = if self.renamed || self.source == "/dev/null" || self.source.is_empty() {
            &self.target
        } else {
            &self.source
        };
        path.strip_prefix("a/")
            .or_else(|| path.strip_prefix("b/"))
            .unwrap_or(path)
            .to_owned()
    }
}

/// The files `patch` modifies (not those it adds or removes), in the patch's order.
pub fn modified_files(patch: &str) -> Vec<ModifiedFile> {
    let mut files: Vec<PatchedFile> = Vec::new();
    let mut lines = patch.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let (source, target) = rest.split_once(" b/").map_or_else(
                || (rest.to_owned(), rest.to_owned()),
                |(source, target)| (source.to_owned(), format!("b/{target}")),
            );
            files.push(PatchedFile {
                source,
                target,
                ..PatchedFile::default()
            });
        } else if line.starts_with("new file mode") {
            if let Some(file) = files.last_mut() {
                file.source = "/dev/null".to_owned();
            }
        } else if line.starts_with("deleted file mode") {
            if let Some(file) = files.last_mut() {
                file.target = "/dev/null".to_owned();
            }
        } else if line.starts_with("rename from ") {
            if let Some(file) = files.last_mut() {
                file.renamed = true;
            }
        } else if let Some(source) = line.strip_prefix("--- ") {
            // A `---` line outside a hunk starts a file, unless a `diff --git` header just did.
            let starts_file = files
                .last()
                .is_none_or(|file| !file.hunks.is_empty() || file.saw_source_line);
            if starts_file {
                files.push(PatchedFile::default());
            }
            if let Some(file) = files.last_mut() {
                file.source = file_name(source);
                file.saw_source_line = true;
            }
        } else if let Some(target) = line.strip_prefix("+++ ") {
            if let Some(file) = files.last_mut() {
                file.target = file_name(target);
            }
        } else if let Some(hunk) = hunk_header(line) {
            let (mut source_left, mut target_left) = (hunk.1, hunk.3);
            if let Some(file) = files.last_mut() {
                file.hunks.push(hunk);
            }
            // The body is counted, so a removed line that starts with `-- ` is not a header.
            while source_left > 0 || target_left > 0 {
                let Some(body) = lines.next() else { break };
                match body.as_bytes().first() {
                    Some(b'-') => source_left = source_left.saturating_sub(1),
                    Some(b'+') => target_left = target_left.saturating_sub(1),
                    Some(b'\\') => {}
                    _ => {
                        source_left = source_left.saturating_sub(1);
                        target_left = target_left.saturating_sub(1);
                    }
                }
            }
        }
    }
    files
        .into_iter()
        .filter(|file| !file.is_added() && !file.is_removed())
        .map(|file| ModifiedFile {
            path: file.path(),
            hunks: file
                .hunks
                .iter()
                .map(|&(_, _, start, length)| (start, length))
                .collect(),
        })
        .collect()
}

/// The file name of a `---`/`+++` line: up to a tab (a timestamp may follow).
fn file_name(text: &str) -> String {
    text.split('\t')
        .next()
        .unwrap_or(text)
        .trim_end()
        .to_owned()
}

/// `@@ -a[,b] +c[,d] @@` as `(a, b, c, d)`, a missing length being 1.
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (source, target) = ranges.split_once(" +")?;
    let range = |text: &str| -> Option<(usize, usize)> {
        match text.split_once(',') {
            Some((start, length)) => Some((start.parse().ok()?, length.parse().ok()?)),
            None => Some((text.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(source)?;
    let (c, d) = range(target)?;
    Some((a, b, c, d))
}

/// The `edited_filesN` text for `patch` with `context` lines around each hunk; `contents` holds
/// each modified file's text after the patch, by path (a file missing there is left out).
pub fn edited_files(patch: &str, contents: &BTreeMap<String, String>, context: usize) -> String {
    if patch.trim().is_empty() {
        return NO_EDITED_FILES.to_owned();
    }
    let mut sections = Vec::new();
    for file in modified_files(patch) {
        let Some(text) = contents.get(&file.path) else {
            continue;
        };
        let ranges: Vec<(usize, usize)> = file
            .hunks
            .iter()
            .map(|&(start, length)| {
                (
                    start.saturating_sub(context).max(1),
                    start + length + context,
                )
            })
            .collect();
        sections.push(format!(
            "[File: {}]\n{}",
            file.path,
            format_file(text, ranges)
        ));
    }
    sections.join("\n\n")
}

/// The lines of `text` in `ranges` (1-based, stop exclusive), merged, with omission markers.
fn format_file(text: &str, mut ranges: Vec<(usize, usize)>) -> String {
    if ranges.is_empty() {
        return String::new();
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, stop) in ranges {
        match merged.last_mut() {
            Some(last) if last.1 >= start => last.1 = last.1.max(stop),
            _ => merged.push((start, stop)),
        }
    }
    let lines = split_lines(text);
    let mut out: Vec<String> = Vec::new();
    if merged[0].0 > 1 {
        out.push(format!("[{} lines above omitted]", merged[0].0 - 1));
    }
    let mut last_stop: Option<usize> = None;
    for &(start, stop) in &merged {
        if let Some(last) = last_stop
            && start > last
        {
            out.push(format!("\n[{} lines omitted]\n", start - last));
        }
        let shown: Vec<String> = lines
            .iter()
            .enumerate()
            .skip(start - 1)
            .take(stop - start)
            .map(|(index, line)| format!("{:6}: {line}", index + 1))
            .collect();
        out.push(shown.join("\n"));
        last_stop = Some(stop);
    }
    if let Some(last) = last_stop
        && last <= lines.len()
    {
        out.push(format!("[{} lines below omitted]", lines.len() - last + 1));
    }
    out.join("\n")
}

/// Python's `str.splitlines()`.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if !crate::text::is_python_line_boundary(c) {
            continue;
        }
        lines.push(&text[start..index]);
        let mut end = index + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            end += 1;
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests;
