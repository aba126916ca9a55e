//! Tests for the search commands: argument checks, the exact shell commands, and v0's output
//! texts from raw command output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

/// What search_dir's command prints: the directory, the number of files, the counts.
fn dir_output(dir: &str, files: &[(&str, u64)]) -> Vec<u8> {
    let mut out = format!("ok\0{dir}\0{}\0", files.len()).into_bytes();
    for (path, count) in files {
        out.extend_from_slice(format!("{path}\0{count}\n").as_bytes());
    }
    out
}

#[test]
fn search_file_usage_and_no_open_file_messages_are_verbatim() {
    assert_eq!(
        parse_search_file("", Some("/a.py")),
        Err("Usage: search_file <search_term> [<file>]".to_owned())
    );
    assert_eq!(
        parse_search_file("foo", None),
        Err("No file open. Use the open command first.".to_owned())
    );
    assert_eq!(
        parse_search_file("foo \"\"", None),
        Err("No file open. Use the open command first.".to_owned())
    );
}

#[test]
fn search_file_uses_the_open_file_unless_one_is_given() {
    assert_eq!(
        parse_search_file("foo", Some("/r/a.py")),
        Ok(SearchRequest::File {
            term: "foo".into(),
            file: "/r/a.py".into(),
            typed: false
        })
    );
    assert_eq!(
        parse_search_file("'def main' \"src/my file.py\" extra", Some("/r/a.py")),
        Ok(SearchRequest::File {
            term: "def main".into(),
            file: "src/my file.py".into(),
            typed: true
        })
    );
}

#[test]
fn an_unquoted_two_word_term_makes_the_second_word_the_file() {
    let request = parse_search_file("def main", Some("/r/a.py")).unwrap();
    assert_eq!(
        request,
        SearchRequest::File {
            term: "def".into(),
            file: "main".into(),
            typed: true
        }
    );
    let out = request.format_output(b"missing\0", DEFAULT_MAX_FILES);
    assert_eq!(
        out,
        "Usage: search_file <search_term> [<file>]\nError: File name main not found. Please provide a valid file name."
    );
}

#[test]
fn search_file_lists_matching_lines_in_v0_format() {
    let request = parse_search_file("foo", Some("/r/a.py")).unwrap();
    let out = request.format_output(
        b"ok\0/r/a.py\x003:foo = 1\n10:  x = foo(2)\r\n",
        DEFAULT_MAX_FILES,
    );
    assert_eq!(
        out,
        "Found 2 matches for \"foo\" in /r/a.py:\nLine 3:foo = 1\nLine 10:  x = foo(2)\r\nEnd of matches for \"foo\" in /r/a.py"
    );
}

#[test]
fn search_file_is_never_capped() {
    let request = parse_search_file("x", Some("/r/a.py")).unwrap();
    let mut output = b"ok\0/r/a.py\0".to_vec();
    for n in 1..=150 {
        output.extend_from_slice(format!("{n}:x\n").as_bytes());
    }
    let out = request.format_output(&output, DEFAULT_MAX_FILES);
    assert!(out.starts_with("Found 150 matches for \"x\" in /r/a.py:\nLine 1:x\n"));
    assert!(out.ends_with("Line 150:x\nEnd of matches for \"x\" in /r/a.py"));
}

#[test]
fn search_file_without_matches_says_so() {
    let request = parse_search_file("nope", Some("/r/a.py")).unwrap();
    assert_eq!(
        request.format_output(b"ok\0/r/a.py\0", 100),
        "No matches found for \"nope\" in /r/a.py"
    );
    // The open file vanished: v0's grep fails quietly, so this is "no matches" too.
    assert_eq!(
        request.format_output(b"missing\0", 100),
        "No matches found for \"nope\" in /r/a.py"
    );
}

#[test]
fn search_file_reports_the_resolved_path_of_a_typed_file() {
    let request = parse_search_file("foo src/a.py", None).unwrap();
    let out = request.format_output(b"ok\0/repo/src/a.py\x001:foo\n", 100);
    assert_eq!(
        out,
        "Found 1 matches for \"foo\" in /repo/src/a.py:\nLine 1:foo\nEnd of matches for \"foo\" in /repo/src/a.py"
    );
}

#[test]
fn search_dir_and_find_file_usage_is_verbatim() {
    for args in ["", "a b c"] {
        assert_eq!(
            parse_search_dir(args),
            Err("Usage: search_dir <search_term> [<dir>]".to_owned())
        );
        assert_eq!(
            parse_find_file(args),
            Err("Usage: find_file <file_name> [<dir>]".to_owned())
        );
    }
    assert_eq!(
        parse_search_dir("x"),
        Ok(SearchRequest::Dir {
            term: "x".into(),
            dir: "./".into()
        })
    );
    assert_eq!(
        parse_search_dir("\"foo bar\" src"),
        Ok(SearchRequest::Dir {
            term: "foo bar".into(),
            dir: "src".into()
        })
    );
}

#[test]
fn search_dir_summarises_by_file_sorted_by_path() {
    let request = parse_search_dir("foo").unwrap();
    let output = dir_output(
        "/r",
        &[
            ("/r/b.py", 2),
            ("/r/a b.py", 1),
            ("/r/zero.py", 0),
            ("/r/a/c.py", 4),
        ],
    );
    assert_eq!(
        request.format_output(&output, DEFAULT_MAX_FILES),
        "Found 7 matches for \"foo\" in /r:\n/r/a b.py (1 matches)\n/r/a/c.py (4 matches)\n/r/b.py (2 matches)\nEnd of matches for \"foo\" in /r"
    );
}

#[test]
fn search_dir_over_the_cap_asks_to_narrow_the_search() {
    let request = parse_search_dir("import").unwrap();
    let names: Vec<String> = (0..101).map(|n| format!("/r/f{n:03}.py")).collect();
    let files: Vec<(&str, u64)> = names.iter().map(|name| (name.as_str(), 3)).collect();
    assert_eq!(
        request.format_output(&dir_output("/r", &files), DEFAULT_MAX_FILES),
        "More than 101 files matched for \"import\" in /r. Please narrow your search."
    );
    let listed = request.format_output(&dir_output("/r", &files[..100]), DEFAULT_MAX_FILES);
    assert!(
        listed.starts_with("Found 300 matches for \"import\" in /r:\n/r/f000.py (3 matches)\n")
    );
    assert_eq!(
        request.format_output(&dir_output("/r", &files[..11]), 10),
        "More than 11 files matched for \"import\" in /r. Please narrow your search."
    );
    // Over the cap the command prints only the number of files.
    assert_eq!(
        request.format_output(b"ok\0/r\x0012345\0", DEFAULT_MAX_FILES),
        "More than 12345 files matched for \"import\" in /r. Please narrow your search."
    );
    assert_eq!(
        request.format_output(b"ok\0/r\x000\0", DEFAULT_MAX_FILES),
        "No matches found for \"import\" in /r"
    );
}

#[test]
fn search_dir_without_matches_or_directory_says_so() {
    let request = parse_search_dir("nope sub").unwrap();
    assert_eq!(
        request.format_output(&dir_output("/r/sub", &[("/r/sub/a", 0)]), 100),
        "No matches found for \"nope\" in /r/sub"
    );
    assert_eq!(
        request.format_output(b"missing\0", 100),
        "Directory sub not found"
    );
}

#[test]
fn find_file_lists_paths_depth_first_in_name_order_without_an_end_line() {
    let request = parse_find_file("*.py").unwrap();
    let out = request.format_output(b"ok\0/r\0/r/z.py\0/r/my dir/a.py\0", 100);
    assert_eq!(
        out,
        "Found 2 matches for \"*.py\" in /r:\n/r/my dir/a.py\n/r/z.py"
    );
    // Whatever order the file system lists them in, `a/b/…` comes before `a/b.py` (as a
    // depth-first walk of sorted directories meets them), unlike a plain byte sort.
    let out = request.format_output(b"ok\0/r\0/r/a/b.py\0/r/a/x.py\0/r/a/b/c.py\0", 100);
    assert_eq!(
        out,
        "Found 3 matches for \"*.py\" in /r:\n/r/a/b/c.py\n/r/a/b.py\n/r/a/x.py"
    );
    assert_eq!(
        request.format_output(b"ok\0/r\0", 100),
        "No matches found for \"*.py\" in /r"
    );
    let request = parse_find_file("a.py nowhere").unwrap();
    assert_eq!(
        request.format_output(b"missing\0", 100),
        "Directory nowhere not found"
    );
}

#[test]
fn shell_commands_quote_terms_and_paths_with_spaces() {
    let request = parse_search_dir("\"foo bar\" 'my dir'").unwrap();
    assert_eq!(
        request.shell_command(100),
        "( export LC_ALL=C; d='my dir'; if [ -d \"$d\" ]; then CDPATH= cd -P -- \"$d\" && d=$PWD; \
         printf 'ok\\0%s\\0' \"$d\"; mapfile -d '' files < <(grep -rIlZ --exclude-dir='.*' \
         --exclude='.*' -- 'foo bar' \"$d\"); printf '%s\\0' \"${#files[@]}\"; \
         if [ \"${#files[@]}\" -gt 0 ] && [ \"${#files[@]}\" -le 100 ]; then \
         grep -cIHZ -- 'foo bar' \"${files[@]}\"; fi; else printf 'missing\\0'; fi ) 2>/dev/null"
    );
    let request = parse_search_file("\"it's\" 'a b.py'", None).unwrap();
    assert_eq!(
        request.shell_command(100),
        "( export LC_ALL=C; f='a b.py'; if [ -f \"$f\" ]; then printf 'ok\\0%s\\0' \"$(realpath \"$f\")\"; \
         grep -n -- 'it'\"'\"'s' \"$f\"; else printf 'missing\\0'; fi ) 2>/dev/null"
    );
    let request = parse_find_file("'*.py' -dir").unwrap();
    assert_eq!(
        request.shell_command(100),
        "( export LC_ALL=C; d=./-dir; if [ -d \"$d\" ]; then CDPATH= cd -P -- \"$d\" && d=$PWD; \
         printf 'ok\\0%s\\0' \"$d\"; \
         find \"$d\" -type f -name '*.py' -print0; else printf 'missing\\0'; fi ) 2>/dev/null"
    );
}

#[test]
fn unexpected_output_is_passed_through() {
    let request = parse_search_dir("x").unwrap();
    assert_eq!(request.format_output(b"bash: killed", 100), "bash: killed");
}
