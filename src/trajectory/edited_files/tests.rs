//! The `edited_filesN` layout, checked against SWE-agent's formatter run on the same patch
//! (unidiff 0.7.5 for the parsing).

use super::*;

/// `git diff` of a change to b.txt (one hunk, with a removed line that starts with `--`) and
/// pkg/a.py (two hunks), a removed file and an added file.
const PATCH: &str = "diff --git a/b.txt b/b.txt\n\
index 645a30a..784d3e9 100644\n\
--- a/b.txt\n\
+++ b/b.txt\n\
@@ -1,4 +1,4 @@\n\
 one\n\
 two\n\
--- three\n\
 four\n\
+five\n\
diff --git a/gone.txt b/gone.txt\n\
deleted file mode 100644\n\
index b023018..0000000\n\
--- a/gone.txt\n\
+++ /dev/null\n\
@@ -1 +0,0 @@\n\
-bye\n\
diff --git a/new.txt b/new.txt\n\
new file mode 100644\n\
index 0000000..ce01362\n\
--- /dev/null\n\
+++ b/new.txt\n\
@@ -0,0 +1 @@\n\
+hello\n\
diff --git a/pkg/a.py b/pkg/a.py\n\
index bab081f..fce5989 100644\n\
--- a/pkg/a.py\n\
+++ b/pkg/a.py\n\
@@ -2,7 +2,7 @@ line 1\n\
 line 2\n\
 line 3\n\
 line 4\n\
-line 5\n\
+line 5 changed\n\
 line 6\n\
 line 7\n\
 line 8\n\
@@ -28,8 +28,9 @@ line 27\n\
 line 28\n\
 line 29\n\
 line 30\n\
-line 31\n\
+line 31 changed\n\
 line 32\n\
+inserted\n\
 line 33\n\
 line 34\n\
 line 35\n\
";

fn contents() -> BTreeMap<String, String> {
    let a: String = (1..=40)
        .map(|n| match n {
            5 => "line 5 changed\n".to_owned(),
            31 => "line 31 changed\n".to_owned(),
            32 => "line 32\ninserted\n".to_owned(),
            n => format!("line {n}\n"),
        })
        .collect();
    BTreeMap::from([
        ("b.txt".to_owned(), "one\ntwo\nfour\nfive\n".to_owned()),
        ("pkg/a.py".to_owned(), a),
    ])
}

fn numbered(range: std::ops::RangeInclusive<usize>) -> Vec<String> {
    range
        .map(|n| {
            let text = match n {
                5 => "line 5 changed".to_owned(),
                31 => "line 31 changed".to_owned(),
                33 => "inserted".to_owned(),
                n if n > 33 => format!("line {}", n - 1),
                n => format!("line {n}"),
            };
            format!("{n:6}: {text}")
        })
        .collect()
}

#[test]
fn only_modified_files_are_listed_with_their_hunks_target_ranges() {
    assert_eq!(
        modified_files(PATCH),
        [
            ModifiedFile {
                path: "b.txt".to_owned(),
                hunks: vec![(1, 4)],
            },
            ModifiedFile {
                path: "pkg/a.py".to_owned(),
                hunks: vec![(2, 7), (28, 9)],
            },
        ]
    );
}

#[test]
fn hunks_get_context_far_apart_ranges_an_omission_marker_and_the_end_a_count() {
    let b_txt = "[File: b.txt]\n     1: one\n     2: two\n     3: four\n     4: five";
    let expected = format!(
        "{b_txt}\n\n[File: pkg/a.py]\n{}\n\n[13 lines omitted]\n\n{}\n[2 lines below omitted]",
        numbered(1..=11).join("\n"),
        numbered(25..=39).join("\n")
    );
    assert_eq!(edited_files(PATCH, &contents(), 3), expected);
    // With 30 lines of context the two ranges of pkg/a.py merge and reach its end.
    let expected = format!(
        "{b_txt}\n\n[File: pkg/a.py]\n{}",
        numbered(1..=41).join("\n")
    );
    assert_eq!(edited_files(PATCH, &contents(), 30), expected);
}

#[test]
fn a_range_starting_below_the_top_says_how_many_lines_are_above() {
    let patch = "--- a/x.py\n+++ b/x.py\n@@ -10,1 +10,1 @@\n-old\n+new\n";
    let text: String = (1..=12).map(|n| format!("l{n}\n")).collect();
    let contents = BTreeMap::from([("x.py".to_owned(), text)]);
    assert_eq!(
        edited_files(patch, &contents, 2),
        "[File: x.py]\n[7 lines above omitted]\n     8: l8\n     9: l9\n    10: l10\n    11: l11\n    12: l12"
    );
}

#[test]
fn no_patch_is_the_empty_text() {
    assert_eq!(edited_files("", &BTreeMap::new(), 30), NO_EDITED_FILES);
    assert_eq!(NO_EDITED_FILES, "Empty. No edited files found.");
}
