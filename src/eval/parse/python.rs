//! SWE-bench's Python log parsers beyond plain pytest and unittest, each written from the output
//! format it reads: pytest with options (requests, pylint), pytest v2 (astropy, scikit-learn,
//! sphinx), matplotlib, seaborn, Django and sympy.
//!
//! Every parser keeps SWE-bench's test ids, so a record's `FAIL_TO_PASS` and `PASS_TO_PASS` lists
//! match. Where aci reads differently, it is never more lenient than SWE-bench: a status SWE-bench
//! does not record (and so grades as a failure) is not turned into a pass here, and a test printed
//! twice keeps its worse status ([`super::record`]).

use super::{
    StatusMap, TestStatus, clean_lines, leading_pytest_status, parse_pytest, pytest_status_word,
    pytest_summary_id, record, strip_ansi, unittest_header,
};

/// pytest, as SWE-bench's `parse_log_pytest_options` reads it: [`parse_pytest`], then a
/// parameter that is an absolute path (`test_x[/tmp/abc/data.txt]`) is cut to its last component
/// (`test_x[/data.txt]`), since the temporary directory differs from run to run. Parameters
/// starting with `//` or holding a `*` are kept.
pub fn parse_pytest_options(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for (id, status) in parse_pytest(log) {
        record(&mut map, &normalize_path_parameter(&id), status);
    }
    map
}

/// `main[option]` with an absolute-path option cut to `/<last component>`; anything after the
/// last `]` is dropped, as SWE-bench's `(.*?)\[(.*)\]` does.
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

/// pytest, as SWE-bench's `parse_log_pytest_v2` reads it: colour codes and other control
/// characters are removed first (also a colour code whose escape byte was lost, `[31m`), then a
/// line is either a short-summary line (`STATUS <id>`, as in [`parse_pytest`]) or the older and
/// classic-verbose `<id> STATUS` line. In the second form the id is one word, or a parametrized id
/// whose brackets hold spaces (SWE-bench cuts that one at its first space).
pub fn parse_pytest_v2(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for raw in log.lines() {
        let line = v2_clean_line(raw);
        if let Some((status, rest)) = leading_pytest_status(&line) {
            if status == TestStatus::Skipped && rest.starts_with('[') {
                continue;
            }
            if let Some(id) = pytest_summary_id(rest) {
                record(&mut map, id, status);
            }
        } else if let Some((id, status)) = trailing_status(&line) {
            record(&mut map, id, status);
        }
    }
    map
}

/// One line with ANSI sequences, bare `[<digits>m` colour codes and control characters removed.
fn v2_clean_line(raw: &str) -> String {
    let stripped = strip_ansi(raw);
    let mut out = String::with_capacity(stripped.len());
    let mut rest: &str = &stripped;
    while let Some(index) = rest.find('[') {
        out.push_str(&rest[..index]);
        let after = &rest[index + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after.as_bytes().get(digits) == Some(&b'm') {
            rest = &after[digits + 1..];
        } else {
            out.push('[');
            rest = after;
        }
    }
    out.push_str(rest);
    out.retain(|c| !('\u{1}'..='\u{1f}').contains(&c));
    out
}

/// `<id> STATUS` at the end of a line: a status word after whitespace, with one word (or a
/// bracketed parametrized id) before it.
fn trailing_status(line: &str) -> Option<(&str, TestStatus)> {
    let (head, word) = line.rsplit_once(char::is_whitespace)?;
    let status = pytest_status_word(word)?;
    let id = head.trim();
    if id.is_empty() {
        return None;
    }
    let first_space = id.find(char::is_whitespace);
    let one_word = first_space.is_none();
    let bracketed = id.ends_with(']') && id.find('[').is_some_and(|open| Some(open) < first_space);
    (one_word || bracketed).then_some((id, status))
}

/// pytest with matplotlib's ids: SWE-bench's `parse_log_matplotlib` is [`parse_pytest`] after
/// `MouseButton.LEFT` and `MouseButton.RIGHT` are rewritten to `1` and `3`, the ids older runs
/// printed and the dataset's test lists use.
pub fn parse_matplotlib(log: &str) -> StatusMap {
    if log.contains("MouseButton.") {
        let rewritten = log
            .replace("MouseButton.LEFT", "1")
            .replace("MouseButton.RIGHT", "3");
        parse_pytest(&rewritten)
    } else {
        parse_pytest(log)
    }
}

/// pytest as SWE-bench's `parse_log_seaborn` reads it: `FAILED <id>` and `PASSED <id>`
/// short-summary lines and the verbose `<id> PASSED [ 10%]` lines. `ERROR <id>` lines are read
/// too (a failure either way: SWE-bench leaves the test out, which grades as failed). `XFAIL` and
/// `SKIPPED` are not recorded, as in SWE-bench, so an expected failure still grades as failed.
pub fn parse_seaborn(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in clean_lines(log) {
        if let Some((status, rest)) = leading_pytest_status(&line) {
            let kept = matches!(
                status,
                TestStatus::Passed | TestStatus::Failed | TestStatus::Error
            );
            if let Some(id) = pytest_summary_id(rest).filter(|_| kept) {
                record(&mut map, id, status);
            }
        } else if let Some(index) = line.find(" PASSED ") {
            let id = line[..index].trim();
            if !id.is_empty() && !id.contains(char::is_whitespace) {
                record(&mut map, id, TestStatus::Passed);
            }
        }
    }
    map
}

/// Django's test runner at `--verbosity 2`, as SWE-bench's `parse_log_django` reads it. The id is
/// the text before ` ... `: `test_x (module.Class)` (or `test_x (module.Class.test_x)` on Python
/// 3.11 and later), or, for a test with a docstring, the docstring's first line, which Django
/// prints on the line after the method name. Outcomes: `ok`/`OK` → PASSED, `skipped …` →
/// SKIPPED, `FAIL` → FAILED, `ERROR` → ERROR, `unexpected success` → FAILED; `expected failure`
/// is not recorded (SWE-bench grades it as failed, so aci does not count it as a pass).
///
/// When output interrupts a result line (`test_x ... Internal Server Error: /x/` or Django's
/// start-up messages, then `ok` on a line of its own), the next line starting with `ok` (or a
/// lone `FAIL`/`ERROR`) settles that test; SWE-bench's three interleaving patterns are instances
/// of this. `FAIL: <id>` and `ERROR: <id>` headers record the whole id (SWE-bench keeps only its
/// first word). A migration line run into the result (`Applying x.0002...test_y (m.C) ... ok`)
/// gives the test after the `...`.
pub fn parse_django(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    let mut pending: Option<String> = None;
    for raw in clean_lines(log) {
        let line = raw.trim();
        if let Some((name, status)) = django_result(line) {
            if let Some(status) = status {
                record(&mut map, django_name(name), status);
            }
            pending = None;
        } else if let Some((name, _output)) = line.split_once(" ... ") {
            pending = Some(django_name(name).to_owned());
        } else if let Some(name) = line.strip_suffix(" ...") {
            pending = Some(django_name(name).to_owned());
        } else if let Some((status, name)) = unittest_header(line) {
            record(&mut map, name, status);
            if let Some(parent) = subtest_parent(name) {
                record(&mut map, parent, status);
            }
        } else if let Some(status) = lone_outcome(line)
            && let Some(name) = pending.take()
        {
            record(&mut map, &name, status);
        }
    }
    map
}

/// A complete Django result line: the name and its status (`None`: seen but not recorded).
fn django_result(line: &str) -> Option<(&str, Option<TestStatus>)> {
    let ends = [
        (" ... ok", Some(TestStatus::Passed)),
        (" ... OK", Some(TestStatus::Passed)),
        (" ...  OK", Some(TestStatus::Passed)),
        (" ... FAIL", Some(TestStatus::Failed)),
        (" ... ERROR", Some(TestStatus::Error)),
        (" ... unexpected success", Some(TestStatus::Failed)),
        (" ... expected failure", None),
    ];
    if let Some(found) = ends
        .iter()
        .find_map(|(end, status)| line.strip_suffix(end).map(|name| (name, *status)))
    {
        return Some(found);
    }
    line.find(" ... skipped")
        .map(|index| (&line[..index], Some(TestStatus::Skipped)))
}

/// The test's name without what was printed in front of it on the same line: a migration
/// message (`Applying x.0002...test_y (m.C)`), or an earlier test whose outcome was never printed
/// (`test_a (m.C) ... test_b (m.C)`, as after a test whose subtests failed). SWE-bench keeps the
/// whole text, which names no test.
fn django_name(name: &str) -> &str {
    let name = match name.strip_prefix("Applying ") {
        Some(rest) => rest.split_once("...").map_or(name, |(_, test)| test.trim()),
        None => name,
    };
    match name.rsplit_once(" ... ") {
        Some((_, last)) if is_test_id(last) => last,
        _ => name,
    }
}

/// `method (dotted.path)`: the shape of a unittest test id.
fn is_test_id(text: &str) -> bool {
    let Some((method, rest)) = text.split_once(" (") else {
        return false;
    };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let Some(path) = rest.strip_suffix(')') else {
        return false;
    };
    !method.is_empty()
        && method.chars().all(word)
        && !path.is_empty()
        && path.chars().all(|c| word(c) || c == '.')
}

/// The test a subtest's failure header names (`test_x (m.C) [label] (param=1)` → `test_x (m.C)`):
/// a failed subtest fails its test.
fn subtest_parent(name: &str) -> Option<&str> {
    let close = name.find(") ")?;
    let parent = &name[..=close];
    is_test_id(parent).then_some(parent)
}

/// A line that settles an interrupted test: starting with `ok` (as SWE-bench reads it), or a lone
/// `FAIL` or `ERROR`.
fn lone_outcome(line: &str) -> Option<TestStatus> {
    match line {
        "FAIL" => Some(TestStatus::Failed),
        "ERROR" => Some(TestStatus::Error),
        _ if line.starts_with("ok") => Some(TestStatus::Passed),
        _ => None,
    }
}

/// sympy's `bin/test --verbose`, as SWE-bench's `parse_log_sympy` reads it: `test_x ok` → PASSED,
/// `test_x F` → FAILED, `test_x E` → ERROR (the id is the bare function name), and each failure or
/// exception banner `____ sympy/x/tests/test_y.py:test_z ____` → FAILED under its path-qualified
/// id. Two readings SWE-bench does not make: the last test of a file keeps its result when the
/// file's verdict follows it on the same line (`test_z ok   [OK]`, which SWE-bench misses), and
/// `test_x X` (an expected failure that passed, which sympy counts as a failure) is FAILED where
/// SWE-bench leaves it out, which grades the same. An expected failure (`f`) and a skip (`s`,
/// `w`) are not recorded, as in SWE-bench.
pub fn parse_sympy(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for raw in clean_lines(log) {
        let line = raw.trim();
        if let Some(id) = sympy_banner(&raw) {
            record(&mut map, id, TestStatus::Failed);
            continue;
        }
        if !line.starts_with("test_") {
            continue;
        }
        let line = strip_file_verdict(line);
        let status = [
            (" ok", TestStatus::Passed),
            (" F", TestStatus::Failed),
            (" E", TestStatus::Error),
            (" X", TestStatus::Failed),
        ]
        .into_iter()
        .find_map(|(end, status)| line.ends_with(end).then_some(status));
        if let (Some(status), Some(name)) = (status, line.split_whitespace().next()) {
            record(&mut map, name, status);
        }
    }
    map
}

/// `path.py:test_name` from a banner: the id with a space on each side, centred in underscores
/// (`____ sympy/a/test_b.py:test_c ____`), or with no underscores left when the id is long.
fn sympy_banner(line: &str) -> Option<&str> {
    let inner = line.trim_matches('_');
    let id = inner.strip_prefix(' ')?.strip_suffix(' ')?;
    (id.contains(".py:") && !id.contains(char::is_whitespace)).then_some(id)
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
