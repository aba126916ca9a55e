//! SWE-bench's `parse_log_gotest` (`swebench` 5.0.2, `harness/log_parsers/go.py`): `go test -v`,
//! for caddy, terraform, prometheus, hugo and gin.

use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static RESULT: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$"));

/// `go test -v` output: each `--- PASS: <name> (<duration>)`, `--- FAIL: …` and `--- SKIP: …`
/// line, stripped (so a subtest's indented line counts, under its full `Parent/child` name),
/// gives PASSED, FAILED or SKIPPED. The name runs to the last ` (`, so it may hold spaces and
/// brackets. A name reported twice (the same test in two packages) keeps its last status.
pub fn parse_gotest(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = RESULT.captures(py_strip(line)) else {
            continue;
        };
        let status = match &captures[1] {
            "PASS" => TestStatus::Passed,
            "FAIL" => TestStatus::Failed,
            _ => TestStatus::Skipped,
        };
        set(&mut map, &captures[2], status);
    }
    map
}
