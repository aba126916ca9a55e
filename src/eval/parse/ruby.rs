//! SWE-bench's Ruby parsers (`swebench` 5.0.2, `harness/log_parsers/ruby.py`):
//! `parse_log_ruby_unit` (fluentd, faker), `parse_log_rspec_transformed_json` (fastlane, fpm,
//! rubocop), and `parse_log_minitest` and `parse_log_cucumber`, between which
//! `parse_log_jekyll` picks by the record (see `provision::grading`).

use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

/// Each stripped line of `log` that `regex` matches, as its first two groups, with the status
/// `status` gives the second (`None`: not recorded).
fn two_groups(log: &str, regex: &Regex, status: fn(&str) -> Option<TestStatus>) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = regex.captures(py_strip(line)) else {
            continue;
        };
        if let Some(status) = status(&captures[2]) {
            set(&mut map, &captures[1], status);
        }
    }
    map
}

static MINITEST: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(.+)\. .*=.*(\.|F|E).*$"));

/// minitest `-v` (jekyll's shoulda names): a stripped line with `. ` then a `=` then `.`, `F` or
/// `E` is the test named by the text before its last `. ` that leaves both after it; the outcome
/// is the last of those marks after a `=`: `.` PASSED, `F` and `E` FAILED.
pub fn parse_minitest(log: &str) -> StatusMap {
    two_groups(log, &MINITEST, |outcome| match outcome {
        "." => Some(TestStatus::Passed),
        _ => Some(TestStatus::Failed),
    })
}

static CUCUMBER: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(.*) \.+(\.|F)"));

/// Cucumber's `--format progress` as SWE-bench reads it: a stripped line with ` ` and a run of
/// dots followed by `.` or `F` names the test before it (its last such run); `.` is PASSED and
/// `F` FAILED.
pub fn parse_cucumber(log: &str) -> StatusMap {
    two_groups(log, &CUCUMBER, |outcome| match outcome {
        "." => Some(TestStatus::Passed),
        _ => Some(TestStatus::Failed),
    })
}

static RUBY_UNIT: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"^[\s\x1C-\x1F]*(?:test: )?(.+):[\s\x1C-\x1F]+(\.|E\b|F\b|O\b)")
});

/// test-unit's verbose output (`test_x(TestFoo): .`, or `test: name(TestFoo): .`): the text
/// before the last `:` that white space and an outcome follow, without a leading `test: `; `.`
/// is PASSED, `E` and `F` FAILED, `O` (omitted) SKIPPED. Pending (`P`) and notifications are
/// not read.
pub fn parse_ruby_unit(log: &str) -> StatusMap {
    two_groups(log, &RUBY_UNIT, |outcome| match outcome {
        "." => Some(TestStatus::Passed),
        "E" | "F" => Some(TestStatus::Failed),
        _ => Some(TestStatus::Skipped),
    })
}

static RSPEC: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(.+) - (passed|failed)"));

/// RSpec's `--format json` turned by `jq` into `<description> - <id> - <status>` lines: a
/// stripped line is the test named by the text before its last ` - passed` or ` - failed` (so
/// `<description> - <id>`), PASSED or FAILED. Nothing need follow the word, and `pending`
/// examples are not read.
pub fn parse_rspec_transformed_json(log: &str) -> StatusMap {
    two_groups(log, &RSPEC, |outcome| match outcome {
        "passed" => Some(TestStatus::Passed),
        _ => Some(TestStatus::Failed),
    })
}
