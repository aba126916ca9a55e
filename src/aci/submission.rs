//! What makes `submit`'s patch lossless as text: git writes the changes of a file it takes for
//! text as raw bytes, and a file that is not UTF-8 (Latin-1, Shift JIS, …) but has no NUL byte is
//! such a file, so its section of the patch is not UTF-8 and JSON (`preds.json`, the `.traj`)
//! cannot carry it. Those files are diffed again as binary (git's binary patch format is ASCII
//! and reproduces the exact bytes), marked through `.git/info/attributes`, which outranks every
//! attribute file of the repository.

use crate::text::git_unquote;

/// Every path (before and after) of the file sections of `patch` whose bytes are not UTF-8, each
/// once, in patch order. Names are read as git quotes them (`core.quotePath`), so a section's
/// header is ASCII even when its content is not.
pub fn non_utf8_paths(patch: &[u8]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for section in sections(patch) {
        if std::str::from_utf8(section).is_ok() {
            continue;
        }
        for path in header_paths(&String::from_utf8_lossy(section)) {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// The names a text section of `git diff` gives before its first hunk: `--- a/X`, `+++ b/Y`
/// (with git's tab after a name with a space), `rename`/`copy` `from`/`to`; quoted names
/// unquoted, `/dev/null` left out.
fn header_paths(section: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for line in section.lines() {
        if line.starts_with("@@ ") {
            break;
        }
        let (raw, prefix) = if let Some(rest) = line.strip_prefix("--- ") {
            (rest, "a/")
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            (rest, "b/")
        } else if let Some(rest) = ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .find_map(|marker| line.strip_prefix(marker))
        {
            (rest, "")
        } else {
            continue;
        };
        let name = git_unquote(raw.trim_end_matches('\t'));
        if name == "/dev/null" {
            continue;
        }
        let name = name.strip_prefix(prefix).unwrap_or(&name).to_owned();
        if !paths.contains(&name) {
            paths.push(name);
        }
    }
    paths
}

/// The patch cut at each `diff --git ` line.
fn sections(patch: &[u8]) -> Vec<&[u8]> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in patch.split_inclusive(|byte| *byte == b'\n') {
        if line.starts_with(b"diff --git ") {
            starts.push(offset);
        }
        offset += line.len();
    }
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts.push(patch.len());
    starts
        .windows(2)
        .map(|pair| &patch[pair[0]..pair[1]])
        .filter(|section| !section.is_empty())
        .collect()
}

/// Lines for `.git/info/attributes` that mark each of `paths` `binary` (`-diff -merge -text`):
/// each pattern anchored at the repository's root, its glob characters (`*?[\`) escaped, and the
/// whole C-quoted (`"/a b.txt" binary`), so spaces, quotes and bytes outside ASCII match
/// literally.
pub fn binary_attributes(paths: &[String]) -> String {
    let mut text = String::new();
    for path in paths {
        text.push_str("\"/");
        for byte in path.bytes() {
            match byte {
                b'*' | b'?' | b'[' => {
                    text.push_str("\\\\");
                    text.push(char::from(byte));
                }
                b'\\' => text.push_str("\\\\\\\\"),
                b'"' => text.push_str("\\\""),
                b' '..=b'~' => text.push(char::from(byte)),
                other => text.push_str(&format!("\\{other:03o}")),
            }
        }
        text.push_str("\" binary\n");
    }
    text
}

/// What marks every file binary: the last resort when a path could not be matched by name.
pub const ALL_BINARY: &str = "* binary\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sections_that_are_not_utf8_are_named_with_both_sides_of_a_rename() {
        let mut patch = b"diff --git a/ok.txt b/ok.txt\n--- a/ok.txt\n+++ b/ok.txt\n@@ -1 +1 @@\n\
                          -caf\xc3\xa9\n+tea\n"
            .to_vec();
        patch.extend_from_slice(
            b"diff --git a/old name.txt b/new name.txt\nsimilarity index 80%\nrename from old \
              name.txt\nrename to new name.txt\n--- a/old name.txt\n+++ b/new name.txt\t\n\
              @@ -1 +1 @@\n-caf\xe9\n+caf\xe9!\n",
        );
        patch.extend_from_slice(
            b"diff --git \"a/\\303\\251.txt\" \"b/\\303\\251.txt\"\n--- \"a/\\303\\251.txt\"\n\
              +++ \"b/\\303\\251.txt\"\n@@ -1 +1 @@\n-\xff\n+\xfe\n",
        );
        assert_eq!(
            non_utf8_paths(&patch),
            ["old name.txt", "new name.txt", "é.txt"]
        );
        assert!(non_utf8_paths(&patch[..patch.len() / 4]).is_empty());
    }

    #[test]
    fn attribute_patterns_are_anchored_quoted_and_match_glob_characters_literally() {
        let paths = ["a b/c.txt", "x*?[1].txt", "q\"\\.txt", "é.txt"].map(str::to_owned);
        assert_eq!(
            binary_attributes(&paths),
            "\"/a b/c.txt\" binary\n\"/x\\\\*\\\\?\\\\[1].txt\" binary\n\
             \"/q\\\"\\\\\\\\.txt\" binary\n\"/\\303\\251.txt\" binary\n"
        );
    }
}
