//! SWE-bench's Python log parsers, read exactly as the harness reads them (`swebench` 5.0.2's
//! `harness/log_parsers/python.py`): pytest and its variants with options (requests, pylint,
//! pydicom), v2 (astropy, scikit-learn, sphinx), matplotlib and seaborn, Django and sympy.
//!
//! The datasets' `FAIL_TO_PASS` and `PASS_TO_PASS` lists were made with these parsers, so they
//! hold the ids these parsers read, oddities included: the first word of a parametrized id
//! whose parameters hold a space (`test_x[a`), the `[100%]` and `[` of a test that runs pytest
//! inside itself, a Django docstring line, two Django results run into one line. aci reads the
//! same ids, quirk for quirk, so a record grades as the harness grades it:
//!
//! - a log is split on `\n` only, and a line into words on Python's whitespace
//!   ([`py_words`]; `\r` is whitespace);
//! - a line is a result when it starts with a status word (`line.startswith("PASSED")`, so
//!   `PASSEDx` counts too; the status is then the first word);
//! - a test printed twice keeps its last status;
//! - a status word that SWE-bench does not know (`XPASS`, `PASSEDx`, or `XPASSED` read from the
//!   end of a v2 line) is kept, as there, and grades as neither a pass nor a failure: aci records
//!   it as [`TestStatus::Skipped`], which its grading also counts in neither list.
//!
//! Where SWE-bench 4.1.0 (the version the June 2024 Lite data names) reads differently, it is
//! said at the function: 5.0.2 drops `SKIPPED [N] file:line` summaries (4.1.0 stores `[N]`) and,
//! in v2, cuts a `FAILED` line at its first ` - ` and keeps every word of the id.

use std::sync::LazyLock;

use regex::Regex;

use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

/// SWE-bench's status words, in the order its `TestStatus` enum lists them.
const STATUS_WORDS: [&str; 5] = ["FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL"];

/// Python's `str.isspace`: Unicode white space and the separators `\x1c`–`\x1f`.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.split()`: the words between runs of white space.
pub(super) fn py_words(line: &str) -> Vec<&str> {
    line.split(is_py_space)
        .filter(|word| !word.is_empty())
        .collect()
}

/// Python's `str.strip()`.
pub(super) fn py_strip(line: &str) -> &str {
    line.trim_matches(is_py_space)
}

/// The status a word names; a word SWE-bench stores but does not grade is [`TestStatus::Skipped`].
fn status_of(word: &str) -> TestStatus {
    match word {
        "PASSED" => TestStatus::Passed,
        "FAILED" => TestStatus::Failed,
        "ERROR" => TestStatus::Error,
        "XFAIL" => TestStatus::XFail,
        _ => TestStatus::Skipped,
    }
}

/// Records `status` for `id`, replacing an earlier one: SWE-bench's parsers keep a test's last
/// status.
pub(super) fn set(map: &mut StatusMap, id: &str, status: TestStatus) {
    map.insert(id.to_owned(), status);
}

fn starts_with_status(line: &str) -> bool {
    STATUS_WORDS.iter().any(|word| line.starts_with(word))
}

/// `SKIPPED [N] path:line: reason`: pytest's summary of skips, whose `[N]` names no test (5.0.2).
fn is_skip_summary(status: &str, name: &str) -> bool {
    static COUNT: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^\[\d+\]$"));
    status == "SKIPPED" && COUNT.is_match(name)
}

/// The id and status word of a `STATUS <id> …` line, as `parse_log_pytest` reads it: a `FAILED`
/// line has every ` - ` replaced by a space, then the second word is the id.
fn pytest_line(line: &str) -> Option<(String, String)> {
    if !starts_with_status(line) {
        return None;
    }
    let line = if line.starts_with("FAILED") {
        line.replace(" - ", " ")
    } else {
        line.to_owned()
    };
    let words = py_words(&line);
    if words.len() <= 1 || is_skip_summary(words[0], words[1]) {
        return None;
    }
    Some((words[1].to_owned(), words[0].to_owned()))
}

/// pytest with `-rA`, as SWE-bench's `parse_log_pytest` reads it: a line starting with a status
/// word gives its second word that status (`PASSED tests/a.py::test_x`; a `FAILED` line's ` - `
/// is read as a space first). An id is one word, so `test_x[a b]` is read as `test_x[a`, and a
/// nested run's `PASSED [100%]` line gives the test `[100%]`, as the dataset's lists expect. No
/// colour code is removed. 4.1.0 also stores `[N]` from `SKIPPED [N] …` summary lines.
pub fn parse_pytest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if let Some((id, word)) = pytest_line(line) {
            set(&mut map, &id, status_of(&word));
        }
    }
    map
}

/// pytest, as SWE-bench's `parse_log_pytest_options` reads it: [`parse_pytest`]'s ids, with a
/// parameter that is an absolute path (`test_x[/tmp/abc/data.txt]`) cut to its last component
/// (`test_x[/data.txt]`), since the temporary directory differs from run to run. Parameters
/// starting with `//` or holding a `*` are kept; anything after the last `]` is dropped, as
/// SWE-bench's `(.*?)\[(.*)\]` does.
pub fn parse_pytest_options(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if let Some((id, word)) = pytest_line(line) {
            set(&mut map, &normalize_path_parameter(&id), status_of(&word));
        }
    }
    map
}

/// `main[option]` with an absolute-path option cut to `/<last component>`.
fn normalize_path_parameter(id: &str) -> String {
    let (Some(open), Some(close)) = (id.find('['), id.rfind(']')) else {
        return id.to_owned();
    };
    if close < open {
        return id.to_owned();
    }
    let option = &id[open + 1..close];
    if option.starts_with('/') && !option.starts_with("//") && !option.contains('*') {
        let last = option.rsplit('/').next().unwrap_or(option);
        format!("{}[/{last}]", &id[..open])
    } else {
        format!("{}[{option}]", &id[..open])
    }
}

/// A colour code whose escape byte may be gone: `[31m`, as SWE-bench's `\[(\d+)m` matches it.
static BARE_COLOUR: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"\[(\d+)m"));

/// pytest, as SWE-bench's `parse_log_pytest_v2` reads it: each line loses its `[<digits>m`
/// colour codes, then its control characters (`\x01`–`\x1f`, the escape byte and tab included);
/// a line starting with a status word gives that status to the rest of its words joined by one
/// space (a `FAILED` line is cut at its first ` - ` first); else a line ending with a status word
/// (the older and classic-verbose `<id> STATUS`) gives its last word as the status of the words
/// before it. So `test_x XPASSED` stores the unknown status `XPASSED`. 4.1.0 instead replaces a
/// `FAILED` line's every ` - ` by a space and keeps only the second word (or, at the end, the
/// first).
pub fn parse_pytest_v2(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for raw in log.split('\n') {
        let mut line = BARE_COLOUR.replace_all(raw, "").into_owned();
        line.retain(|c| !('\u{1}'..='\u{1f}').contains(&c));
        if starts_with_status(&line) {
            let head = if line.starts_with("FAILED") {
                line.split_once(" - ")
                    .map_or(line.as_str(), |(head, _)| head)
            } else {
                line.as_str()
            };
            let words = py_words(head);
            if words.len() >= 2 && !is_skip_summary(words[0], words[1]) {
                set(&mut map, &words[1..].join(" "), status_of(words[0]));
            }
        } else if STATUS_WORDS.iter().any(|word| line.ends_with(word)) {
            let words = py_words(&line);
            if let [id @ .., status] = words.as_slice()
                && !id.is_empty()
            {
                set(&mut map, &id.join(" "), status_of(status));
            }
        }
    }
    map
}

/// pytest with matplotlib's ids: SWE-bench's `parse_log_matplotlib` is [`parse_pytest`] on each
/// line after `MouseButton.LEFT` and `MouseButton.RIGHT` are rewritten to `1` and `3`, the ids
/// older runs printed and the dataset's test lists use.
pub fn parse_matplotlib(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let line = line
            .replace("MouseButton.LEFT", "1")
            .replace("MouseButton.RIGHT", "3");
        if let Some((id, word)) = pytest_line(&line) {
            set(&mut map, &id, status_of(&word));
        }
    }
    map
}

/// pytest as SWE-bench's `parse_log_seaborn` reads it: of lines of two words or more, one
/// starting with `FAILED` fails its second word; else one holding ` PASSED ` whose second word
/// is `PASSED` passes its first (the verbose `<id> PASSED [ 10%]`); else one starting with
/// `PASSED` passes its second word. `ERROR`, `XFAIL` and `SKIPPED` lines are not read, so such a
/// test is missing, which grades as failed.
pub fn parse_seaborn(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let words = py_words(line);
        if words.len() < 2 {
            continue;
        }
        if line.starts_with("FAILED") {
            set(&mut map, words[1], TestStatus::Failed);
        } else if line.contains(" PASSED ") {
            if words[1] == "PASSED" {
                set(&mut map, words[0], TestStatus::Passed);
            }
        } else if line.starts_with("PASSED") {
            set(&mut map, words[1], TestStatus::Passed);
        }
    }
    map
}

/// The three interleavings SWE-bench's Django parser reads across lines, over the whole log.
static DJANGO_INTERRUPTED: LazyLock<[Regex; 3]> = LazyLock::new(|| {
    [
        literal_regex(
            r"(?m)^(.*?)\s\.\.\.\sTesting against Django installed in ((?s:.*?)) silenced\)\.\nok$",
        ),
        literal_regex(r"(?m)^(.*?)\s\.\.\.\sInternal Server Error: /(.*)/\nok$"),
        literal_regex(r"(?m)^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$"),
    ]
});

/// The one migration line SWE-bench's Django parser cuts off a result (django__django-7188).
const DJANGO_7188: &str = "Applying sites.0002_alter_domain_unique...test_no_migrations";

/// Django's test runner at `--verbosity 2`, as SWE-bench's `parse_log_django` reads it, each
/// stripped line in turn:
///
/// - the text before the first ` ... ` is remembered as the last test seen;
/// - ending ` ... ok`, ` ... OK` or ` ...  OK`: the text before it PASSED (the text before the
///   first `...` is dropped only from the line starting with [`DJANGO_7188`]'s migration);
/// - holding ` ... skipped`: the text before it SKIPPED; ending ` ... FAIL`: FAILED; ending
///   ` ... ERROR`: ERROR; `FAIL: <id>` and `ERROR: <id>` headers: the header's second word
///   (the method name alone) FAILED or ERROR;
/// - starting with `ok`: the last test seen PASSED (output between `...` and `ok`);
/// - holding `--version is equivalent to version`: that text PASSED.
///
/// Then, over the whole log, a result interrupted by `Testing against Django installed in …
/// silenced).`, `Internal Server Error: /…/` or `System check identified no issues (0
/// silenced)` with `ok` on the next line passes the text before its ` ... `.
///
/// So a test with a docstring is named by its docstring's first line (on the line after the
/// method name), two results run into one line (`test_a (m.C) ... test_b (m.C) ... ok`) give the
/// whole text, and `expected failure` and `unexpected success` are not read. A `FAIL:` header
/// with nothing after it, on which SWE-bench's parser raises, is skipped.
pub fn parse_django(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut previous: Option<String> = None;
    for raw in log.split('\n') {
        let mut line = py_strip(raw);
        if line.contains("--version is equivalent to version") {
            set(
                &mut map,
                "--version is equivalent to version",
                TestStatus::Passed,
            );
        }
        if let Some((name, _)) = line.split_once(" ... ") {
            previous = Some(name.to_owned());
        }
        for suffix in [" ... ok", " ... OK", " ...  OK"] {
            if line.ends_with(suffix) {
                if py_strip(line).starts_with(DJANGO_7188) {
                    line = line
                        .split_once("...")
                        .map_or(line, |(_, rest)| py_strip(rest));
                }
                let test = line.rsplit_once(suffix).map_or(line, |(test, _)| test);
                set(&mut map, test, TestStatus::Passed);
                break;
            }
        }
        if let Some((test, _)) = line.split_once(" ... skipped") {
            set(&mut map, test, TestStatus::Skipped);
        }
        if line.ends_with(" ... FAIL") {
            let test = line.split(" ... FAIL").next().unwrap_or(line);
            set(&mut map, test, TestStatus::Failed);
        }
        if line.starts_with("FAIL:")
            && let Some(test) = py_words(line).get(1)
        {
            set(&mut map, py_strip(test), TestStatus::Failed);
        }
        if line.ends_with(" ... ERROR") {
            let test = line.split(" ... ERROR").next().unwrap_or(line);
            set(&mut map, test, TestStatus::Error);
        }
        if line.starts_with("ERROR:")
            && let Some(test) = py_words(line).get(1)
        {
            set(&mut map, py_strip(test), TestStatus::Error);
        }
        if line.trim_start_matches(is_py_space).starts_with("ok")
            && let Some(test) = &previous
        {
            set(&mut map, test, TestStatus::Passed);
        }
    }
    for pattern in DJANGO_INTERRUPTED.iter() {
        for captures in pattern.captures_iter(log) {
            set(&mut map, &captures[1], TestStatus::Passed);
        }
    }
    map
}

/// A sympy failure or exception banner, as SWE-bench's `(_*) (.*)\.py:(.*) (_*)` finds it
/// anywhere in the log.
static SYMPY_BANNER: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"(_*) (.*)\.py:(.*) (_*)"));

/// sympy's `bin/test --verbose`, as SWE-bench's `parse_log_sympy` reads it: every match of
/// [`SYMPY_BANNER`] in the log (`____ sympy/x/tests/test_y.py:test_z ____`) fails
/// `sympy/x/tests/test_y.py:test_z`; then each stripped line starting with `test_` and ending
/// ` E`, ` F` or ` ok` gives its first word ERROR, FAILED or PASSED. So the last test of a file,
/// whose line ends with the file's `[OK]` or `[FAIL]`, is not read, nor are `f`, `X`, `s` and
/// `w` results.
pub fn parse_sympy(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for captures in SYMPY_BANNER.captures_iter(log) {
        let id = format!("{}.py:{}", &captures[2], &captures[3]);
        set(&mut map, &id, TestStatus::Failed);
    }
    for raw in log.split('\n') {
        let line = py_strip(raw);
        if !line.starts_with("test_") {
            continue;
        }
        let Some(first) = py_words(line).first().copied() else {
            continue;
        };
        for (end, status) in [
            (" E", TestStatus::Error),
            (" F", TestStatus::Failed),
            (" ok", TestStatus::Passed),
        ] {
            if line.ends_with(end) {
                set(&mut map, first, status);
            }
        }
    }
    map
}

/// The line without a trailing `[OK]` or `[FAIL]` (the file's verdict) and the spaces before it.
pub(super) fn strip_file_verdict(line: &str) -> &str {
    for verdict in ["[OK]", "[FAIL]"] {
        if let Some(head) = line.strip_suffix(verdict)
            && head.ends_with(char::is_whitespace)
        {
            return head.trim_end();
        }
    }
    line
}

#[cfg(test)]
mod tests;
