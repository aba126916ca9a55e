//! SWE-bench's C and C++ parsers of the Multilingual records (`swebench` 5.0.2,
//! `harness/log_parsers/c.py`): `parse_log_redis` (redis, valkey), `parse_log_jq`,
//! `parse_log_micropython_test` and `parse_log_googletest` (fmt).

use std::sync::LazyLock;

use regex::Regex;

use super::python::{py_strip, set};
use super::{StatusMap, TestStatus};
use crate::text::literal_regex;

static REDIS: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^\[(ok|err|skip|ignore)\]:[\s\x1C-\x1F](.+?)(?:[\s\x1C-\x1F]\((\d+[\s\x1C-\x1F]*m?s)\))?$",
    )
});
static REDIS_ERR_PLACE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"[\s\x1C-\x1F]+in[\s\x1C-\x1F]+[^\s\x1C-\x1F]+$"));

/// Redis's Tcl test suite: a stripped `[ok]: <name>`, `[err]: <name>`, `[skip]: <name>` or
/// `[ignore]: <name>` line, without a trailing ` (12 ms)`, is PASSED, FAILED, SKIPPED or SKIPPED;
/// a failure's trailing ` in <file>` is cut, so it names the test its pass would.
pub fn parse_redis(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(captures) = REDIS.captures(py_strip(line)) else {
            continue;
        };
        let name = &captures[2];
        match &captures[1] {
            "ok" => set(&mut map, name, TestStatus::Passed),
            "err" => set(
                &mut map,
                &REDIS_ERR_PLACE.replace(name, ""),
                TestStatus::Failed,
            ),
            _ => set(&mut map, name, TestStatus::Skipped),
        }
    }
    map
}

/// Each stripped line of `log` that `regex` matches, as `(status word, name)` from its first two
/// groups, with the status `status` gives the word.
fn word_then_name(log: &str, regex: &Regex, status: fn(&str) -> TestStatus) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        if let Some(captures) = regex.captures(py_strip(line)) {
            set(&mut map, &captures[2], status(&captures[1]));
        }
    }
    map
}

static JQ: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^[\s\x1C-\x1F]*(PASS|FAIL):[\s\x1C-\x1F](.+)$"));

/// Automake's test driver (`make check`): a stripped `PASS: <name>` is PASSED and `FAIL: <name>`
/// FAILED; `SKIP:`, `XFAIL:` and `ERROR:` are not read.
pub fn parse_jq(log: &str) -> StatusMap {
    word_then_name(log, &JQ, |word| {
        if word == "PASS" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        }
    })
}

static MICROPYTHON: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^(pass|FAIL|skip)[\s\x1C-\x1F]+(.+)$"));

/// MicroPython's `run-tests.py`: a stripped `pass <test>`, `FAIL <test>` or `skip <test>` line is
/// PASSED, FAILED or SKIPPED.
pub fn parse_micropython_test(log: &str) -> StatusMap {
    word_then_name(log, &MICROPYTHON, |word| match word {
        "pass" => TestStatus::Passed,
        "FAIL" => TestStatus::Failed,
        _ => TestStatus::Skipped,
    })
}

static GOOGLETEST: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"^.*\[[\s\x1C-\x1F]*(OK|FAILED)[\s\x1C-\x1F]*\][\s\x1C-\x1F](.*)[\s\x1C-\x1F]\(.*\)$",
    )
});

/// GoogleTest's output (through `ctest -V`, whose `N: ` prefix may precede it): a stripped line
/// whose last `[ OK ]` or `[ FAILED ]` mark is followed by a name and ` (…)` at the end
/// (`[       OK ] Suite.Test (0 ms)`) is PASSED or FAILED; the name runs to the last ` (`.
pub fn parse_googletest(log: &str) -> StatusMap {
    word_then_name(log, &GOOGLETEST, |word| {
        if word == "OK" {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        }
    })
}
