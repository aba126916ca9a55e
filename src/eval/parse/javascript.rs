//! SWE-bench's JavaScript parsers of the Multilingual records (`swebench` 5.0.2,
//! `harness/log_parsers/javascript.py`): `parse_log_jest` (babel, docusaurus),
//! `parse_log_vitest` (vue), `parse_log_karma` (preact), `parse_log_tap` (three.js, axios), and
//! `parse_log_jest_json`, which with `parse_log_jest` `parse_log_immutable_js` picks between by
//! the record (see `provision::grading`).

use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static JEST: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^[\s\x1C-\x1F]*(✓|✕|○)[\s\x1C-\x1F](.+?)(?:[\s\x1C-\x1F]\((\d+[\s\x1C-\x1F]*m?s)\))?$",
    )
});

/// Jest `--verbose`: a stripped line starting with `✓`, `✕` or `○` and white space is the test
/// named by the rest without a trailing ` (12 ms)` and stripped, PASSED, FAILED or SKIPPED. The
/// name is the test's title only (no file, no `describe` blocks), so two tests of the same title
/// are one id, which keeps the last status; `○ skipped` and `✎ todo` lines read as written.
pub fn parse_jest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = JEST.captures(py_strip(line)) else {
            continue;
        };
        let status = match &captures[1] {
            "✓" => TestStatus::Passed,
            "✕" => TestStatus::Failed,
            _ => TestStatus::Skipped,
        };
        set(&mut map, py_strip(&captures[2]), status);
    }
    map
}

static JEST_JSON: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^\[(PASSED|FAILED)\][\s\x1C-\x1F](.+)$"));

/// Jest's `--json` report turned by `jq` into `[PASSED] <describe> > … > <title>` lines: each
/// stripped line gives the rest its status; other statuses (`[PENDING]`) are not read.
pub fn parse_jest_json(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = JEST_JSON.captures(py_strip(line)) else {
            continue;
        };
        let status = if &captures[1] == "PASSED" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        };
        set(&mut map, &captures[2], status);
    }
    map
}

static VITEST: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^[\s\x1C-\x1F]*(✓|×|↓)[\s\x1C-\x1F](.+?)(?:[\s\x1C-\x1F](\d+[\s\x1C-\x1F]*m?s?|\[skipped\]))?$",
    )
});

/// Vitest `--reporter=verbose`: a stripped line starting with `✓`, `×` or `↓` and white space is
/// the test named by the rest without a trailing ` 12ms` (or a bare number) or ` [skipped]`,
/// PASSED, FAILED or SKIPPED. The name is `<file> > <describe> > <title>` as Vitest prints it.
pub fn parse_vitest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = VITEST.captures(py_strip(line)) else {
            continue;
        };
        let status = match &captures[1] {
            "✓" => TestStatus::Passed,
            "×" => TestStatus::Failed,
            _ => TestStatus::Skipped,
        };
        set(&mut map, &captures[2], status);
    }
    map
}

static KARMA: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^([\s\x1C-\x1F]*)?([✔✖])?[\s\x1C-\x1F](.*)$"));

/// Karma with the mocha reporter, read as SWE-bench reads it. Lines count only after one that
/// contains `Starting browser`, and reading stops at the first line starting with `SUMMARY:`.
/// A line (not stripped) of leading white space then a `✔` or `✖` and a space is a test,
/// PASSED or FAILED, named `<suite> > … > <name>`; any other line with leading white space
/// names a suite by its indent (all but its last leading white-space character): deeper than the
/// current indent, it is pushed; shallower, the innermost suite is popped (one, whatever the
/// depth); the same indent changes nothing, so a sibling suite keeps its predecessor's name.
pub fn parse_karma(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut current_indent: isize = -1;
    let mut suite: Vec<String> = Vec::new();
    let mut started = false;
    for line in log.split('\n') {
        if line.starts_with("SUMMARY:") {
            return map;
        }
        if line.contains("Starting browser") {
            started = true;
            continue;
        }
        if !started {
            continue;
        }
        let Some(captures) = KARMA.captures(line) else {
            continue;
        };
        let indent = captures.get(1).map_or("", |m| m.as_str());
        let mark = captures.get(2).map(|m| m.as_str());
        let name = captures.get(3).map_or("", |m| m.as_str());
        if !indent.is_empty() && mark.is_none() {
            let new_indent = isize::try_from(indent.chars().count()).unwrap_or(isize::MAX);
            if new_indent > current_indent {
                current_indent = new_indent;
                suite.push(name.to_owned());
            } else if new_indent < current_indent {
                current_indent = new_indent;
                suite.pop();
                continue;
            }
        }
        let status = match mark {
            Some("✔") => TestStatus::Passed,
            Some(_) => TestStatus::Failed,
            None => continue,
        };
        let mut parts = suite.clone();
        parts.push(name.to_owned());
        set(&mut map, &parts.join(" > "), status);
    }
    map
}

static TAP: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(ok|not ok) (\d+) (.+)$"));

/// TAP: a stripped `ok <n> <rest>` line is PASSED and `not ok <n> <rest>` FAILED, the test
/// named by the whole rest (`- title`, a `# SKIP` directive included). Indented subtest lines
/// count too.
pub fn parse_tap(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = TAP.captures(py_strip(line)) else {
            continue;
        };
        let status = if &captures[1] == "ok" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        };
        set(&mut map, &captures[3], status);
    }
    map
}
