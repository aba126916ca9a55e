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

#[test]
fn the_corpus_has_at_least_eighty_cases_of_both_kinds_in_both_languages() {
    let cases = cases();
    assert!(cases.len() >= 80, "{} cases", cases.len());
    for language in [Language::Python, Language::Rust] {
        let of_language: Vec<&Case> = cases.iter().filter(|c| c.language == language).collect();
        assert!(
            of_language.iter().any(|c| c.expected.is_empty()),
            "{language:?} has no passing case"
        );
        assert!(
            of_language.iter().any(|c| !c.expected.is_empty()),
            "{language:?} has no blocked case"
        );
    }
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
fn python_cases_agree_with_flake8_except_where_notes_explain_why() {
    let mut unexplained = Vec::new();
    let mut agreeing = 0;
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.flake8.is_some()).collect();
    for case in &cases {
        let flake8 = case.flake8.as_ref().expect("python case");
        if *flake8 == case.expected {
            agreeing += 1;
        } else if !case.dir.join("notes.txt").exists() {
            unexplained.push(case.dir.display().to_string());
        }
    }
    assert!(
        unexplained.is_empty(),
        "disagreements without notes.txt: {unexplained:?}"
    );
    assert!(
        agreeing * 10 >= cases.len() * 9,
        "{agreeing} of {} agree",
        cases.len()
    );
}
