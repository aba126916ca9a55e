//! SWE-bench's Java parsers (`swebench` 5.0.2, `harness/log_parsers/java.py`): `parse_log_maven`
//! (gson, druid, javaparser), `parse_log_ant` (lombok) and `parse_log_gradle_custom` (lucene,
//! RxJava).

use std::collections::VecDeque;
use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static MAVEN_TEST: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^.*-Dtest=([^\s\x1C-\x1F]+).*$"));
static MAVEN_RESULT: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^.*BUILD (SUCCESS|FAILURE)$"));

fn build_status(word: &str) -> TestStatus {
    if word == "SUCCESS" {
        TestStatus::Passed
    } else {
        TestStatus::Failed
    }
}

/// Maven, one `mvn test -Dtest=<name>` per test, traced by `set -x`: Maven prints no line per
/// passing test, so a test is named by the last `-Dtest=<name>` of a (stripped) line, and its
/// status is the next `BUILD SUCCESS` (PASSED) or `BUILD FAILURE` (FAILED) line, first named
/// first served. A result before any pending name waits, and after the log the waiting names and
/// results are paired in order; a name left without a result is not recorded.
pub fn parse_maven(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut unmatched: VecDeque<TestStatus> = VecDeque::new();
    for line in log.split('\n') {
        let line = py_strip(line);
        if let Some(captures) = MAVEN_TEST.captures(line) {
            pending.push_back(captures[1].to_owned());
        }
        if let Some(captures) = MAVEN_RESULT.captures(line) {
            let status = build_status(&captures[1]);
            match pending.pop_front() {
                Some(name) => set(&mut map, &name, status),
                None => unmatched.push_back(status),
            }
        }
    }
    while let (Some(name), Some(status)) = (pending.pop_front(), unmatched.pop_front()) {
        set(&mut map, &name, status);
    }
    map
}

static ANT_RESULT: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"^[\s\x1C-\x1F]*\[junit\][\s\x1C-\x1F]+\[(PASS|FAIL|ERR)\][\s\x1C-\x1F]+(.*)$")
});

/// Ant's `junit` task with a formatter that prints `[PASS] <name>`, `[FAIL] <name>` or
/// `[ERR] <name>` per test (lombok's): a stripped `[junit] [PASS] <name>` line is PASSED, `FAIL`
/// and `ERR` are FAILED.
pub fn parse_ant(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = ANT_RESULT.captures(py_strip(line)) else {
            continue;
        };
        let status = if &captures[1] == "PASS" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        };
        set(&mut map, &captures[2], status);
    }
    map
}

static GRADLE_FULL: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^([^>].+)[\s\x1C-\x1F]+(PASSED|FAILED)$"));
static GRADLE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"^([^>][^\s\x1C-\x1F]*[\s\x1C-\x1F]+>[\s\x1C-\x1F]+[^\s\x1C-\x1F]+)$")
});

fn gradle_status(word: &str) -> TestStatus {
    if word == "PASSED" {
        TestStatus::Passed
    } else {
        TestStatus::Failed
    }
}

/// Gradle with the test logging SWE-bench's setup adds (`<Class> > <method> PASSED`): a stripped
/// line that does not start with `>` and ends in white space and `PASSED` or `FAILED` gives the
/// text before that white space (its last run only: earlier trailing spaces stay) that status. A
/// line that is only `<Class> > <method>` waits for a later line that is only `PASSED` or
/// `FAILED` (output of another process may come between); a full line or another name replaces
/// it. `SKIPPED` is not read.
pub fn parse_gradle_custom(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut pending: Option<String> = None;
    for line in log.split('\n') {
        let line = py_strip(line);
        if let Some(captures) = GRADLE_FULL.captures(line) {
            set(&mut map, &captures[1], gradle_status(&captures[2]));
            pending = None;
            continue;
        }
        if let Some(captures) = GRADLE_NAME.captures(line) {
            pending = Some(captures[1].to_owned());
            continue;
        }
        if matches!(line, "PASSED" | "FAILED")
            && let Some(name) = pending.take()
        {
            set(&mut map, &name, gradle_status(line));
        }
    }
    map
}
