//! What an evaluation's verdict rests on, for review: the verdict and its cause first, then the
//! grading evidence (the canary tests' lines of the log, why the results were not believed,
//! the files of the patch that touch test infrastructure or reach into the test framework,
//! what the grader reset, the tripwire run), then each failing test with its own lines of the
//! log. [`scan_log`] reads the log a line at a time and keeps a bounded part of it, so a test
//! output of any size gives a small page; the rest is pure rendering of `report.json`.

use std::fmt::Write as _;

use serde_json::Value;

use super::html::push_escaped;

/// At most this many failing tests are looked for in the log.
pub const MAX_TESTS: usize = 50;
/// At most this many lines of the log are kept per failing test.
pub const MAX_LINES_PER_TEST: usize = 30;
/// At most this many canary lines are kept.
const MAX_CANARY_LINES: usize = 20;
/// The first this many failing tests are shown open, the others one click away.
const OPEN_FAILING: usize = 3;
/// A kept line is cut at this many bytes.
const MAX_LINE_BYTES: usize = 300;
/// At most this many bytes of the log are kept in all.
pub const MAX_KEPT_BYTES: usize = 100_000;

/// What [`scan_log`] found in a test log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogFindings {
    /// Each failing test (in the order given) with its own lines of the log.
    pub tests: Vec<(String, Vec<String>)>,
    /// Lines that name a canary test (a module `test_<12 hex digits>`).
    pub canaries: Vec<String>,
    /// Lines read.
    pub lines: u64,
}

/// The tests the report says failed: FAIL_TO_PASS's and PASS_TO_PASS's failures, in that order.
pub fn failing_tests(report: &Value) -> Vec<String> {
    ["FAIL_TO_PASS", "PASS_TO_PASS"]
        .iter()
        .filter_map(|group| report.pointer(&format!("/tests_status/{group}/failure")))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Whether `line` names a canary test: `test_` and 12 lowercase hex digits, not followed by
/// another word character.
pub fn names_canary(line: &str) -> bool {
    let bytes = line.as_bytes();
    line.match_indices("test_").any(|(at, _)| {
        let digits = &bytes[at + 5..];
        digits.len() >= 12
            && digits[..12]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            && digits
                .get(12)
                .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
    })
}

/// The title pytest gives a failing test's section (`____ Class.test[p] ____`) for the id
/// `path::Class::test[p]`.
fn pytest_title(id: &str) -> Option<String> {
    let (_, rest) = id.split_once("::")?;
    Some(rest.replace("::", "."))
}

/// A section heading of a runner's failure report: pytest's `____ title ____`, unittest's and
/// Django's `FAIL: …`/`ERROR: …` after a line of `=`.
fn heading_title(line: &str) -> Option<&str> {
    let trimmed = line.trim();
    if trimmed.starts_with("___") && trimmed.ends_with("___") {
        let title = trimmed.trim_matches('_').trim();
        return (!title.is_empty()).then_some(title);
    }
    trimmed
        .strip_prefix("FAIL: ")
        .or_else(|| trimmed.strip_prefix("ERROR: "))
}

/// A line that ends a section: a rule of `=` (a new section or the summary).
fn ends_section(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.len() >= 5 && trimmed.bytes().all(|b| b == b'=')
        || trimmed.starts_with("=====")
        || heading_title(line).is_some()
}

/// A rule of `-`.
fn is_dash_rule(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.len() >= 5 && trimmed.bytes().all(|b| b == b'-')
}

fn cut(line: &str) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return line.to_owned();
    }
    let end = (0..=MAX_LINE_BYTES)
        .rev()
        .find(|i| line.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}…", &line[..end])
}

/// Reads a test log a line at a time and keeps, for each of `tests` (at most [`MAX_TESTS`]),
/// its own lines: its section of the failure report (pytest's `____ Class.test ____`,
/// unittest's `FAIL: test (module.Class)`) and every other line that names it, at most
/// [`MAX_LINES_PER_TEST`] and [`MAX_KEPT_BYTES`] in all; and the lines that name a canary
/// test.
pub fn scan_log<I, S>(lines: I, tests: &[String]) -> LogFindings
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let tests = &tests[..tests.len().min(MAX_TESTS)];
    let titles: Vec<Option<String>> = tests.iter().map(|id| pytest_title(id)).collect();
    let mut found = LogFindings {
        tests: tests.iter().map(|id| (id.clone(), Vec::new())).collect(),
        ..LogFindings::default()
    };
    let mut section: Option<usize> = None;
    let mut in_section = 0;
    let mut kept_bytes = 0;
    for line in lines {
        let line = line.as_ref();
        found.lines += 1;
        in_section += 1;
        if let Some(title) = heading_title(line) {
            section = tests
                .iter()
                .zip(&titles)
                .position(|(id, pytest)| title == id || pytest.as_deref() == Some(title));
            in_section = 0;
        } else if ends_section(line) || (in_section > 1 && is_dash_rule(line)) {
            // unittest rules off its heading with dashes, and its last traceback from the
            // tally.
            section = None;
        }
        let owner = section.or_else(|| tests.iter().position(|id| line.contains(id.as_str())));
        if let Some(index) = owner {
            let kept = &mut found.tests[index].1;
            if kept.len() < MAX_LINES_PER_TEST && kept_bytes < MAX_KEPT_BYTES {
                let line = cut(line);
                kept_bytes += line.len();
                kept.push(line);
            }
        }
        if names_canary(line) && found.canaries.len() < MAX_CANARY_LINES {
            found.canaries.push(cut(line));
        }
    }
    found
}

/// The verdict's cause as `report.json` gives it (`cause`: kind, summary, names, detail).
fn push_cause(out: &mut String, cause: &Value) {
    let text = |key: &str| cause.get(key).and_then(Value::as_str).unwrap_or_default();
    let infrastructure = cause.get("infrastructure").and_then(Value::as_bool) == Some(true);
    out.push_str("<div class=\"cause\"><b>cause</b>: <span class=\"badge");
    out.push_str(if infrastructure {
        " error\">"
    } else {
        " unresolved\">"
    });
    push_escaped(out, text("kind"));
    out.push_str("</span> ");
    if infrastructure {
        out.push_str(
            "<span class=\"muted\">(the environment's or the harness's, not the patch's)</span> ",
        );
    }
    push_escaped(out, text("summary"));
    let names: Vec<&str> = cause
        .get("names")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !names.is_empty() {
        out.push_str("<ul class=\"names\">");
        for name in names.iter().take(MAX_TESTS) {
            out.push_str("<li class=\"id\">");
            push_escaped(out, name);
            out.push_str("</li>");
        }
        if names.len() > MAX_TESTS {
            let _ = write!(out, "<li>and {} more</li>", names.len() - MAX_TESTS);
        }
        out.push_str("</ul>");
    }
    let detail = text("detail");
    if !detail.is_empty() {
        out.push_str("<pre class=\"obs\">");
        push_escaped(out, detail);
        out.push_str("</pre>");
    }
    out.push_str("</div>");
}

/// The verdict's cause, when the report has one (an unresolved or errored evaluation).
pub fn render_cause(report: &Value) -> String {
    let mut out = String::new();
    if let Some(cause) = report.get("cause").filter(|c| c.is_object()) {
        push_cause(&mut out, cause);
    }
    out
}

/// Entries `{"path", "why"}` (or bare paths, as older reports write them) as `path (why)`.
fn path_entries(report: &Value, key: &str) -> Vec<String> {
    report
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(
            |entry| match (entry.as_str(), entry.get("path").and_then(Value::as_str)) {
                (Some(path), _) => Some(path.to_owned()),
                (None, Some(path)) => {
                    let mut text = path.to_owned();
                    if let Some(action) = entry.get("action").and_then(Value::as_str) {
                        let _ = write!(text, ": {action}");
                    }
                    match entry.get("why").and_then(Value::as_str) {
                        Some(why) if !why.is_empty() => Some(format!("{text} ({why})")),
                        _ => Some(text),
                    }
                }
                (None, None) => None,
            },
        )
        .collect()
}

fn push_list(out: &mut String, class: &str, label: &str, items: &[String]) {
    let _ = write!(out, "<div class=\"evidence-item {class}\"><b>{label}</b>");
    out.push_str("<ul>");
    for item in items {
        out.push_str("<li>");
        push_escaped(out, item);
        out.push_str("</li>");
    }
    out.push_str("</ul></div>");
}

/// The grading evidence: the canary check (its lines of the log, or why the results were not
/// believed), the files that touch test infrastructure or reach into the test framework, what
/// the grader reset, and the tripwire run. Empty when the report holds none of it and the log
/// names no canary.
pub fn render_evidence(report: &Value, findings: Option<&LogFindings>) -> String {
    let mut out = String::new();
    let untrusted = report.get("untrusted_reason").and_then(Value::as_str);
    let canaries = findings.map(|f| f.canaries.as_slice()).unwrap_or_default();
    match untrusted {
        Some(reason) => {
            out.push_str(
                "<div class=\"evidence-item bad\"><b>results not believed</b>: ",
            );
            push_escaped(&mut out, reason);
            out.push_str("</div>");
        }
        None if !canaries.is_empty() => out.push_str(
            "<div class=\"evidence-item good\"><b>canary check passed</b>: the test that must pass passed and the one that must fail failed</div>",
        ),
        None => {}
    }
    if !canaries.is_empty() {
        out.push_str("<div class=\"evidence-item canaries\"><b>canary tests in the log</b><pre class=\"obs\">");
        push_escaped(&mut out, &canaries.join("\n"));
        out.push_str("</pre></div>");
    }
    for (key, class, label) in [
        (
            "touches_tests",
            "bad",
            "the patch changes test infrastructure",
        ),
        (
            "reaches_into_tests",
            "bad",
            "the patch reaches into the test framework",
        ),
        (
            "infrastructure_reset",
            "",
            "test infrastructure the grader put back",
        ),
    ] {
        let items = path_entries(report, key);
        if !items.is_empty() {
            push_list(&mut out, class, label, &items);
        }
    }
    if let Some(tripwire) = report.get("tripwire").filter(|t| t.is_object()) {
        let count = |key: &str| {
            tripwire
                .get(key)
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        };
        let confirmed = tripwire.get("confirmed").and_then(Value::as_bool) == Some(true);
        let _ = write!(
            out,
            "<div class=\"evidence-item {}\"><b>tripwire run</b>: {} ({} tests checked, {} could not be placed)</div>",
            if confirmed { "good" } else { "bad" },
            if confirmed {
                "confirmed: every checked test failed without the fix"
            } else {
                "not confirmed"
            },
            count("checked"),
            count("unchecked")
        );
    }
    if out.is_empty() {
        return out;
    }
    format!("<div class=\"evidence\"><h3>Grading evidence</h3>{out}</div>")
}

/// The failing tests, each with its own lines of the log (or a word that the log never names
/// it).
pub fn render_failing(findings: &LogFindings, total: usize) -> String {
    let mut out = String::new();
    if findings.tests.is_empty() {
        return out;
    }
    let _ = write!(
        out,
        "<div class=\"failing\"><h3>Failing tests ({total})</h3>"
    );
    for (index, (test, lines)) in findings.tests.iter().enumerate() {
        let _ = write!(
            out,
            "<details class=\"failing-test\"{}><summary class=\"id fail\">",
            if index < OPEN_FAILING { " open" } else { "" }
        );
        push_escaped(&mut out, test);
        let _ = write!(
            out,
            " <span class=\"muted\">({} lines)</span></summary>",
            lines.len()
        );
        if lines.is_empty() {
            out.push_str("<p class=\"muted\">no line of the log names this test</p>");
        } else {
            out.push_str("<pre class=\"obs\">");
            push_escaped(&mut out, &lines.join("\n"));
            out.push_str("</pre>");
        }
        out.push_str("</details>");
    }
    if total > findings.tests.len() {
        let _ = write!(
            out,
            "<p class=\"muted\">and {} more failing tests (in the table below)</p>",
            total - findings.tests.len()
        );
    }
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PYTEST_LOG: &str = "\
>>>>> Start Test Output
tests/test_a.py ..F.F                                                    [100%]
aci_canary/test_0123456789ab.py::test_must_pass PASSED
aci_canary/test_0123456789ab.py::test_must_fail FAILED
=================================== FAILURES ===================================
________________________________ TestA.test_x _________________________________
    def test_x(self):
>       assert f(1) == 2
E       assert 3 == 2
tests/test_a.py:10: AssertionError
____________________________________ test_y ____________________________________
E       ValueError: bad
=========================== short test summary info ============================
FAILED tests/test_a.py::TestA::test_x - assert 3 == 2
FAILED tests/test_a.py::test_y - ValueError: bad
";

    #[test]
    fn each_failing_test_gets_its_section_and_summary_line() {
        let tests = vec![
            "tests/test_a.py::TestA::test_x".to_owned(),
            "tests/test_a.py::test_y".to_owned(),
            "tests/test_a.py::test_z".to_owned(),
        ];
        let found = scan_log(PYTEST_LOG.lines(), &tests);
        assert_eq!(found.lines, 15);
        assert_eq!(
            found.tests[0].1,
            vec![
                "________________________________ TestA.test_x _________________________________",
                "    def test_x(self):",
                ">       assert f(1) == 2",
                "E       assert 3 == 2",
                "tests/test_a.py:10: AssertionError",
                "FAILED tests/test_a.py::TestA::test_x - assert 3 == 2",
            ]
        );
        assert_eq!(
            found.tests[1].1,
            vec![
                "____________________________________ test_y ____________________________________",
                "E       ValueError: bad",
                "FAILED tests/test_a.py::test_y - ValueError: bad",
            ]
        );
        assert!(found.tests[2].1.is_empty());
        assert_eq!(
            found.canaries,
            vec![
                "aci_canary/test_0123456789ab.py::test_must_pass PASSED",
                "aci_canary/test_0123456789ab.py::test_must_fail FAILED",
            ]
        );
    }

    #[test]
    fn a_unittest_failure_is_read_from_its_heading_to_the_next_rule() {
        let log = "test_a (m.T) ... FAIL\n======\nFAIL: test_a (m.T)\n------\nTraceback\nAssertionError: 1 != 2\n\n------\nRan 3 tests\n";
        let found = scan_log(log.lines(), &["test_a (m.T)".to_owned()]);
        assert_eq!(
            found.tests[0].1,
            vec![
                "test_a (m.T) ... FAIL",
                "FAIL: test_a (m.T)",
                "------",
                "Traceback",
                "AssertionError: 1 != 2",
                "",
            ]
        );
    }

    #[test]
    fn a_canary_is_twelve_hex_digits_and_no_more() {
        assert!(names_canary("x/test_00aa11bb22cc.py PASSED"));
        assert!(!names_canary("x/test_00aa11bb22cc3.py"));
        assert!(!names_canary("x/test_00AA11bb22cc.py"));
        assert!(!names_canary("test_short"));
    }

    #[test]
    fn the_evidence_names_the_canary_check_and_the_touched_files() {
        let report = json!({
            "untrusted_reason": "untrusted test run: the canary test that must fail (test_0123456789ab) is reported PASSED",
            "touches_tests": [{"path": "conftest.py", "why": "pytest reads it <first>"}, "tox.ini"],
            "infrastructure_reset": [{"path": "setup.cfg", "action": "restored", "why": "pytest's config"}],
            "tripwire": {"checked": ["a", "b"], "unchecked": [], "confirmed": true}
        });
        let html = render_evidence(&report, None);
        assert!(html.contains("<div class=\"evidence-item bad\"><b>results not believed</b>: untrusted test run: the canary test that must fail (test_0123456789ab) is reported PASSED</div>"));
        assert!(html.contains("<b>the patch changes test infrastructure</b><ul><li>conftest.py (pytest reads it &lt;first&gt;)</li><li>tox.ini</li></ul>"));
        assert!(html.contains("<li>setup.cfg: restored (pytest&#39;s config)</li>"));
        assert!(html.contains("<b>tripwire run</b>: confirmed: every checked test failed without the fix (2 tests checked, 0 could not be placed)"));
        assert_eq!(render_evidence(&json!({"resolved": true}), None), "");
    }

    #[test]
    fn the_cause_comes_with_its_names_and_detail() {
        let report = json!({"cause": {"kind": "tests_failed", "infrastructure": false,
            "summary": "2 FAIL_TO_PASS tests failed", "names": ["t::a"], "detail": "E assert <x>"}});
        assert_eq!(
            render_cause(&report),
            "<div class=\"cause\"><b>cause</b>: <span class=\"badge unresolved\">tests_failed</span> 2 FAIL_TO_PASS tests failed<ul class=\"names\"><li class=\"id\">t::a</li></ul><pre class=\"obs\">E assert &lt;x&gt;</pre></div>"
        );
    }
}
