//! SWE-bench's `parse_log_phpunit` (`swebench` 5.0.2, `harness/log_parsers/php.py`): PHPUnit's
//! `--testdox` output, for phpspreadsheet, laravel, php-cs-fixer and carbon.

use std::sync::LazyLock;

use regex::Regex;

use super::python::set;
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static SUITE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(\w.+) \(.+\)$"));
static TEST: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^[\s\x1C-\x1F]*([✔✘↩])[\s\x1C-\x1F]*(.*)$"));

/// PHPUnit `--testdox` output. A line (not stripped) that starts with a word character and ends
/// in ` (…)` names the suite (`Foo Bar (Tests\FooBarTest)` → `Foo Bar`); a line whose first
/// non-space is `✔`, `✘` or `↩` is a test of the current suite, PASSED, FAILED or SKIPPED, as
/// `<suite> > <text after the mark>` (the text keeps trailing white space and a `\r`). A test
/// before any suite line is under the suite `None`, as Python prints its unset name.
pub fn parse_phpunit(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut suite: Option<String> = None;
    for line in log.split('\n') {
        if let Some(captures) = SUITE.captures(line) {
            suite = Some(captures[1].to_owned());
            continue;
        }
        let Some(captures) = TEST.captures(line) else {
            continue;
        };
        let status = match &captures[1] {
            "✔" => TestStatus::Passed,
            "✘" => TestStatus::Failed,
            _ => TestStatus::Skipped,
        };
        let suite = suite.as_deref().unwrap_or("None");
        set(&mut map, &format!("{suite} > {}", &captures[2]), status);
    }
    map
}
