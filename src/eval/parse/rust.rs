//! SWE-bench's `parse_log_cargo` (`swebench` 5.0.2, `harness/log_parsers/rust.py`), which grades
//! the Multilingual records of ripgrep, bat, ruff, tokio, coreutils, nushell and axum.
//!
//! It is not aci's own [`super::parse_cargo`]: it reads only whole `test <name> ... ok` and
//! `test <name> ... FAILED` lines (stripped of white space at both ends), with a name of one word;
//! `ignored` tests, a result split by the test's own output, the `failures:` list and doc-tests
//! (whose names hold spaces) are not read. A test printed twice keeps its last status.

use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static RESULT: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"^test[\s\x1C-\x1F]+([^\s\x1C-\x1F]+)[\s\x1C-\x1F]+\.\.\.[\s\x1C-\x1F]+(\w+)$")
});

/// `cargo test` output as SWE-bench's `parse_log_cargo` reads it: `test <name> ... ok` is
/// PASSED, `test <name> ... FAILED` is FAILED, any other word (`ignored`) is not recorded.
pub fn parse_cargo_swebench(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = RESULT.captures(py_strip(line)) else {
            continue;
        };
        let status = match &captures[2] {
            "ok" => TestStatus::Passed,
            "FAILED" => TestStatus::Failed,
            _ => continue,
        };
        set(&mut map, &captures[1], status);
    }
    map
}
