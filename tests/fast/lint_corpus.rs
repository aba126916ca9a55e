//! Runs every case of `tests/corpus/` through the gate and compares the new errors with
//! `expected.txt`. Each case directory holds `before.py|rs`, `after.py|rs`, `edit.txt`
//! ("start end replacement_lines"), `expected.txt` (one "line:col CODE message" per new
//! error), optionally `options.txt`, and for Python `flake8.txt`: flake8 7.1.2's new errors
//! for the same edit under the v0.7 filter, for a differential test against a container.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use aci::lint::{EditRange, GateOptions, Language, Linter, check, gate};

struct Case {
    dir: PathBuf,
    language: Language,
    before: Vec<u8>,
    after: Vec<u8>,
    edited: EditRange,
    options: GateOptions,
    expected: Vec<String>,
    flake8: Option<Vec<String>>,
}

fn lines_of(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn load(dir: &Path) -> Case {
    let (extension, language) = if dir.join("before.rs").exists() {
        ("rs", Language::Rust)
    } else {
        ("py", Language::Python)
    };
    let numbers: Vec<usize> = fs::read_to_string(dir.join("edit.txt"))
        .expect("edit.txt")
        .split_whitespace()
        .map(|n| n.parse().expect("a number"))
        .collect();
    let options_text = fs::read_to_string(dir.join("options.txt")).unwrap_or_default();
    let flake8_path = dir.join("flake8.txt");
    Case {
        dir: dir.to_path_buf(),
        language,
        before: fs::read(dir.join(format!("before.{extension}"))).expect("before"),
        after: fs::read(dir.join(format!("after.{extension}"))).expect("after"),
        edited: EditRange {
            start: numbers[0],
            end: numbers[1],
            replacement_lines: numbers[2],
        },
        options: GateOptions {
            filter_preexisting: !options_text.contains("filter_preexisting=false"),
            package_init: options_text.contains("package_init=true"),
        },
        expected: lines_of(&dir.join("expected.txt")),
        flake8: flake8_path.exists().then(|| lines_of(&flake8_path)),
    }
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/corpus");
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .expect("corpus")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.iter()
        .filter(|d| d.is_dir())
        .map(|d| load(d))
        .collect()
}

fn render(errors: &[aci::lint::LintError]) -> Vec<String> {
    errors
        .iter()
        .map(|e| format!("{}:{} {} {}", e.line, e.column, e.code, e.message))
        .collect()
}

/// What a case's name promises, independently of its `expected.txt`: `NNN_py_ok_…` and
/// `NNN_rs_ok_…` pass; `NNN_py_f821_…` (or `f822`, `f831`, `e111`) is blocked by that code
/// first; `…_filter_off_blocks_preexisting` turns the pre-existing filter off and is blocked by
/// an error the file had before the edit; any other blocked case is a syntax error (E999).
#[derive(Debug, PartialEq)]
enum Promise {
    Passes,
    BlockedBy(String),
    BlockedByPreexisting,
}

fn promise(case: &Case) -> Promise {
    let name = case.dir.file_name().unwrap().to_string_lossy().into_owned();
    let words: Vec<&str> = name.split('_').collect();
    match words.get(2).copied() {
        Some("ok") => Promise::Passes,
        _ if name.contains("_filter_off_blocks_preexisting") => Promise::BlockedByPreexisting,
        Some(code) if code.len() == 4 && code[1..].bytes().all(|b| b.is_ascii_digit()) => {
            Promise::BlockedBy(code.to_uppercase())
        }
        _ => Promise::BlockedBy("E999".to_owned()),
    }
}

#[test]
fn every_case_is_judged_as_its_name_says_with_messages_of_that_kind() {
    let cases = cases();
    assert!(!cases.is_empty(), "the corpus is empty");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.dir.file_name().unwrap().to_string_lossy().into_owned();
        let verdict = gate(
            case.language,
            &case.before,
            &case.after,
            &case.edited,
            &case.options,
        );
        let got = render(&verdict.new_errors);
        let first_code = got.first().and_then(|line| line.split(' ').nth(1));
        let kept = match promise(case) {
            Promise::Passes => verdict.passed() && got.is_empty(),
            Promise::BlockedByPreexisting => {
                // The same code and message as one of the errors of the file before the edit.
                let message = |line: &String| line.split_once(' ').map(|(_, m)| m.to_owned());
                let before: Vec<Option<String>> = render(&check(case.language, &case.before))
                    .iter()
                    .map(message)
                    .collect();
                !verdict.passed()
                    && got
                        .first()
                        .map(message)
                        .is_some_and(|m| before.contains(&m))
            }
            Promise::BlockedBy(code) => {
                // A syntax error names its kind the way the language's own tools do.
                let worded = match (code.as_str(), case.language) {
                    ("E999", Language::Python) => got.first().is_some_and(|line| {
                        ["SyntaxError: ", "IndentationError: ", "TabError: "]
                            .iter()
                            .any(|kind| line.contains(&format!("E999 {kind}")))
                    }),
                    ("E999", Language::Rust) => got
                        .first()
                        .is_some_and(|line| line.contains("E999 syntax error: ")),
                    _ => true,
                };
                !verdict.passed() && first_code == Some(code.as_str()) && worded
            }
        };
        if !kept {
            failures.push(format!("{name}: promised {:?}, got {got:?}", promise(case)));
        }
        if name.contains("_filter_off_") == case.options.filter_preexisting {
            failures.push(format!(
                "{name}: the pre-existing filter is not as the name says"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_corpus_case_gives_its_expected_new_errors() {
    let mut failures = Vec::new();
    for case in cases() {
        let verdict = gate(
            case.language,
            &case.before,
            &case.after,
            &case.edited,
            &case.options,
        );
        let got = render(&verdict.new_errors);
        if got != case.expected {
            failures.push(format!(
                "{}:\n  expected {:?}\n  got      {:?}",
                case.dir.display(),
                case.expected,
                got
            ));
        }
        assert_eq!(
            verdict.passed(),
            case.expected.is_empty(),
            "{}",
            case.dir.display()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn incremental_and_full_parses_give_the_same_errors_on_every_case() {
    for case in cases() {
        let mut linter = Linter::new();
        let options = GateOptions {
            filter_preexisting: true,
            ..case.options
        };
        linter.check(case.language, &case.before, &options);
        let incremental = linter.gate(
            case.language,
            &case.before,
            &case.after,
            &case.edited,
            &options,
        );
        let fresh = Linter::new().check(case.language, &case.after, &options);
        assert_eq!(incremental.all_errors, fresh, "{}", case.dir.display());
        if !options.package_init {
            assert_eq!(
                check(case.language, &case.after),
                fresh,
                "{}",
                case.dir.display()
            );
        }
    }
}

#[test]
fn the_gate_reports_what_flake8_reported_except_where_notes_explain_why() {
    let mut unexplained = Vec::new();
    let mut agreeing = 0;
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.flake8.is_some()).collect();
    for case in &cases {
        let flake8 = case.flake8.as_ref().expect("python case");
        let verdict = gate(
            case.language,
            &case.before,
            &case.after,
            &case.edited,
            &case.options,
        );
        let got = render(&verdict.new_errors);
        if got == *flake8 {
            agreeing += 1;
        } else if !case.dir.join("notes.txt").exists() {
            unexplained.push(format!(
                "{}:\n  flake8 {flake8:?}\n  gate   {got:?}",
                case.dir.display()
            ));
        }
    }
    assert!(
        unexplained.is_empty(),
        "disagreements with flake8 without notes.txt:\n{}",
        unexplained.join("\n")
    );
    assert!(
        agreeing * 10 >= cases.len() * 9,
        "{agreeing} of {} agree",
        cases.len()
    );
}
