//! Unit tests of the gate's public API: language selection, verdicts, filtering, robustness
//! on odd input, and incremental re-analysis matching a fresh analysis.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn python(source: &str) -> Vec<String> {
    check(Language::Python, source.as_bytes())
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn one_line_edit(line: usize) -> EditRange {
    EditRange {
        start: line,
        end: line,
        replacement_lines: 1,
    }
}

#[test]
fn languages_are_chosen_by_extension_among_the_enabled_ones() {
    let enabled = vec!["python".to_owned(), "Rust".to_owned()];
    assert_eq!(
        Language::from_path("/repo/a/b.py", &enabled),
        Some(Language::Python)
    );
    assert_eq!(
        Language::from_path("stubs/x.pyi", &enabled),
        Some(Language::Python)
    );
    assert_eq!(
        Language::from_path("src/main.rs", &enabled),
        Some(Language::Rust)
    );
    assert_eq!(Language::from_path("README.md", &enabled), None);
    assert_eq!(Language::from_path("dir.py/Makefile", &enabled), None);
    assert_eq!(Language::from_path("a.py", &["rust".to_owned()]), None);
}

#[test]
fn a_problem_is_the_code_and_message_as_flake8_prints_them() {
    let error = LintError {
        line: 3,
        column: 5,
        code: "F821".to_owned(),
        message: "undefined name 'x'".to_owned(),
    };
    assert_eq!(error.problem(), "F821 undefined name 'x'");
    assert_eq!(error.to_string(), "3:5: F821 undefined name 'x'");
}

#[test]
fn an_edit_that_adds_an_unexpected_indent_is_blocked() {
    let before = b"def f():\n    x = 1\n    return x\n";
    let after = b"def f():\n    x = 1\n        return x\n";
    let verdict = gate(
        Language::Python,
        before,
        after,
        &one_line_edit(3),
        &GateOptions::default(),
    );
    assert!(!verdict.passed());
    assert_eq!(
        verdict.new_errors[0].problem(),
        "E999 IndentationError: unexpected indent"
    );
}

#[test]
fn errors_that_existed_before_the_edit_do_not_block_it() {
    let before = b"import os\n\nprint(missing)\n";
    let after = b"import os\nimport sys\n\nprint(missing, sys)\n";
    let edited = EditRange {
        start: 1,
        end: 1,
        replacement_lines: 2,
    };
    let verdict = gate(
        Language::Python,
        before,
        after,
        &edited,
        &GateOptions::default(),
    );
    assert!(verdict.passed(), "{verdict:?}");
    assert_eq!(
        verdict.all_errors[0].to_string(),
        "4:7: F821 undefined name 'missing'"
    );
}

#[test]
fn without_filtering_every_error_blocks() {
    let before = b"print(missing)\nx = 1\n";
    let after = b"print(missing)\nx = 2\n";
    let options = GateOptions {
        filter_preexisting: false,
        ..GateOptions::default()
    };
    let verdict = gate(Language::Python, before, after, &one_line_edit(2), &options);
    assert_eq!(verdict.new_errors, verdict.all_errors);
    assert!(!verdict.passed());
}

#[test]
fn flake8_stops_at_the_first_syntax_error_and_so_does_the_gate() {
    let errors = python("print(undefined)\nx = (\n  y = 3\n");
    assert_eq!(errors, vec!["2:6: E999 SyntaxError: '(' was never closed"]);
}

#[test]
fn names_resolve_through_real_scopes() {
    let source = "\
import os.path as osp
from typing import *

class A:
    attr = 1
    other = [attr for _ in range(2)]

    def method(self):
        return attr, __class__, osp
";
    // A star import turns F821 off, as in pyflakes.
    assert_eq!(python(source), Vec::<String>::new());
    let source = source.replace("from typing import *\n", "");
    assert_eq!(python(&source), vec!["8:16: F821 undefined name 'attr'"]);
}

#[test]
fn odd_inputs_never_panic() {
    let inputs: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\n".to_vec(),
        b"\xff\xfe\x00 invalid utf-8 \x80\n".to_vec(),
        b"x = 1\r\ny = 2\r\n".to_vec(),
        b"x = 1\ry = 2".to_vec(),
        b"\xef\xbb\xbfprint(1)\n".to_vec(),
        b"\t\t\x0c  x\n\\".to_vec(),
        b"f'{'".to_vec(),
        b"'''".to_vec(),
        b"((((((((((((((((((((((((((((".to_vec(),
        format!("x = {}1\n", "1 + ".repeat(20_000)).into_bytes(),
        format!("x = {}{}\n", "[".repeat(3_000), "]".repeat(3_000)).into_bytes(),
    ];
    for input in &inputs {
        for language in [Language::Python, Language::Rust] {
            let errors = check(language, input);
            let verdict = gate(
                language,
                input,
                b"",
                &one_line_edit(1),
                &GateOptions::default(),
            );
            let back = gate(
                language,
                b"",
                input,
                &one_line_edit(1),
                &GateOptions::default(),
            );
            assert!(errors.iter().all(|e| e.line >= 1 && e.column >= 1));
            assert!(verdict.all_errors.is_empty());
            assert_eq!(back.all_errors, errors);
        }
    }
}

#[test]
fn crlf_files_are_checked_like_lf_files() {
    let lf = python("def f():\n    return missing\n");
    let crlf = python("def f():\r\n    return missing\r\n");
    assert_eq!(lf, crlf);
}

/// A small deterministic generator (no external crates) for the edit sequences below and the
/// tokenizer's rescan tests.
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

const PYTHON_SAMPLE: &str = "\
import os


class Base:
    limit = 3

    def run(self, items):
        total = 0
        for item in items:
            if item > self.limit:
                total += helper(item)
        return total

    def name(self):
        return os.sep + NAME


def helper(value):
    return [v for v in range(value) if v % 2]


NAME = 'base'
__all__ = ['Base', 'helper']
";

const RUST_SAMPLE: &str = "\
fn helper(value: i32) -> i32 {
    value * 2
}

struct Base {
    limit: i32,
}

impl Base {
    fn run(&self, items: &[i32]) -> i32 {
        let mut total = 0;
        for item in items {
            if *item > self.limit {
                total += helper(*item);
            }
        }
        total
    }
}
";

const SNIPPETS: &[&str] = &[
    "        total = 0",
    "            if item > self.limit",
    "        return missing_name",
    "    def extra(self, a, a):",
    "NAME = 'renamed'",
    "x = (",
    ")",
    "        pass",
    "  misindented = 1",
    "class Other:",
    "def helper(value):",
    "__all__ = ['Base', 'nothing']",
    "    let x = 1",
    "    }",
    "fn extra() {",
    "        total += 1;",
    "",
    "\"\"\"",
    "# flake8: noqa",
];

fn random_edit(text: &str, random: &mut Lcg) -> (String, EditRange) {
    let lines: Vec<&str> = text.lines().collect();
    let start = random.next(lines.len()) + 1;
    let end = (start + random.next(3)).min(lines.len()).max(start);
    let count = random.next(3);
    let replacement: Vec<&str> = (0..count)
        .map(|_| SNIPPETS[random.next(SNIPPETS.len())])
        .collect();
    let mut out: Vec<&str> = lines[..start - 1].to_vec();
    out.extend(&replacement);
    out.extend(&lines[end..]);
    let mut after = out.join("\n");
    after.push('\n');
    (
        after,
        EditRange {
            start,
            end,
            replacement_lines: count,
        },
    )
}

fn incremental_matches_fresh(language: Language, sample: &str, seed: u64) {
    let mut random = Lcg(seed);
    let mut linter = Linter::new();
    let options = GateOptions::default();
    let mut current = sample.to_owned();
    for step in 0..150 {
        let (after, edited) = random_edit(&current, &mut random);
        let verdict = linter.gate(
            language,
            current.as_bytes(),
            after.as_bytes(),
            &edited,
            &options,
        );
        let fresh = check(language, after.as_bytes());
        assert_eq!(
            verdict.all_errors, fresh,
            "step {step}\n--- before\n{current}\n--- after\n{after}"
        );
        // Accept the edit most of the time, and drift back to the sample now and then.
        if step % 7 == 6 {
            current = sample.to_owned();
        } else if random.next(4) != 0 {
            current = after;
        }
    }
}

#[test]
fn incremental_python_analysis_matches_a_fresh_one_over_random_edits() {
    for seed in 1..=12 {
        incremental_matches_fresh(Language::Python, PYTHON_SAMPLE, seed);
    }
}

#[test]
fn incremental_rust_analysis_matches_a_fresh_one_over_random_edits() {
    for seed in 1..=8 {
        incremental_matches_fresh(Language::Rust, RUST_SAMPLE, seed);
    }
}

#[test]
fn a_binding_added_at_module_level_resolves_names_in_untouched_functions() {
    let before = "def f():\n    return later\n\n\ndef g():\n    return 1\n";
    let after = "def f():\n    return later\n\n\ndef g():\n    return 1\nlater = 2\n";
    let mut linter = Linter::new();
    let options = GateOptions::default();
    assert_eq!(
        linter
            .check(Language::Python, before.as_bytes(), &options)
            .len(),
        1
    );
    let edited = EditRange {
        start: 7,
        end: 6,
        replacement_lines: 1,
    };
    let verdict = linter.gate(
        Language::Python,
        before.as_bytes(),
        after.as_bytes(),
        &edited,
        &options,
    );
    assert!(verdict.all_errors.is_empty(), "{verdict:?}");
}

#[test]
fn known_tree_sitter_rust_false_positives_are_not_reported() {
    let source = b"unsafe extern \"C\" {\n    pub safe fn sqrt(x: f64) -> f64;\n}\n\nfn f() { m!(=> ; @ # $ ~); }\n";
    assert_eq!(check(Language::Rust, source), Vec::<LintError>::new());
}

#[test]
fn rust_errors_say_what_is_missing_or_unexpected() {
    let errors = check(
        Language::Rust,
        b"fn main() {\n    let x = 1\n    let y = 2;\n}\n",
    );
    assert_eq!(
        errors[0].to_string(),
        "2:14: E999 syntax error: missing `;`"
    );
}

/// Checks that the fixture `tests/fixtures/lint/languages/<file>` (read as `language` by its
/// extension) has no error, and that replacing its line `line` with `broken` gives exactly
/// `expected`, both from scratch and through the gate.
fn assert_syntax_checked(file: &str, line: usize, broken: &str, expected: &[&str]) {
    let path = format!(
        "{}/tests/fixtures/lint/languages/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let all: Vec<String> = Language::NAMES.iter().map(|&n| n.to_owned()).collect();
    let language = Language::from_path(&path, &all).unwrap();
    let valid = std::fs::read_to_string(&path).unwrap();
    assert_eq!(check(language, valid.as_bytes()), Vec::<LintError>::new());
    let edited: String = valid
        .split_inclusive('\n')
        .enumerate()
        .map(|(index, text)| {
            if index + 1 == line {
                format!("{broken}\n")
            } else {
                text.to_owned()
            }
        })
        .collect();
    let errors: Vec<String> = check(language, edited.as_bytes())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors, expected);
    let verdict = gate(
        language,
        valid.as_bytes(),
        edited.as_bytes(),
        &one_line_edit(line),
        &GateOptions::default(),
    );
    let gated: Vec<String> = verdict.new_errors.iter().map(ToString::to_string).collect();
    assert_eq!(gated, expected);
}

#[test]
fn new_languages_are_chosen_by_extension() {
    let all: Vec<String> = Language::NAMES.iter().map(|&n| n.to_owned()).collect();
    let cases = [
        ("main.go", Language::Go),
        ("src/Main.java", Language::Java),
        ("a.js", Language::JavaScript),
        ("a.mjs", Language::JavaScript),
        ("a.cjs", Language::JavaScript),
        ("a.jsx", Language::JavaScript),
        ("a.ts", Language::TypeScript),
        ("a.tsx", Language::Tsx),
        ("a.c", Language::C),
        ("a.h", Language::Cpp),
        ("a.cc", Language::Cpp),
        ("a.cpp", Language::Cpp),
        ("a.cxx", Language::Cpp),
        ("a.hpp", Language::Cpp),
        ("a.hh", Language::Cpp),
        ("index.php", Language::Php),
        ("lib/a.rb", Language::Ruby),
    ];
    for (path, language) in cases {
        assert_eq!(Language::from_path(path, &all), Some(language), "{path}");
    }
    assert_eq!(Language::from_path("Gemfile", &all), None);
    assert_eq!(
        Language::from_path("a.tsx", &["TypeScript".to_owned()]),
        Some(Language::Tsx)
    );
    assert_eq!(Language::from_path("a.h", &["c".to_owned()]), None);
}

#[test]
fn go_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.go",
        14,
        "\tout := make([]U, 0, len(xs)))",
        &["14:2: E999 syntax error: unexpected `out`"],
    );
}

#[test]
fn java_syntax_errors_are_reported() {
    assert_syntax_checked(
        "Valid.java",
        11,
        "    public Main(List<T> items) { this.items = items }",
        &["11:52: E999 syntax error: missing `;`"],
    );
}

#[test]
fn javascript_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.js",
        8,
        "    const text = await readFile(path, 'utf8';",
        &["8:45: E999 syntax error: missing `)`"],
    );
}

#[test]
fn typescript_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.ts",
        17,
        "  const n = <number>(v as any;",
        &["17:30: E999 syntax error: missing `)`"],
    );
}

#[test]
fn tsx_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.tsx",
        9,
        "      {items.map((item) => <li key={item}>{item}</li>}",
        &["9:54: E999 syntax error: missing `)`"],
    );
}

#[test]
fn c_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.c",
        14,
        "        total += n->value",
        &["14:26: E999 syntax error: missing `;`"],
    );
}

#[test]
fn cpp_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.cpp",
        11,
        "    void push(T value) { items_.push_back(std::move(value); }",
        &["11:59: E999 syntax error: missing `)`"],
    );
}

#[test]
fn header_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.h",
        5,
        "extern int x_sum(const x_t *x, size_t n;",
        &["5:40: E999 syntax error: missing `)`"],
    );
}

#[test]
fn a_c_header_using_cpp_keywords_as_names_passes() {
    let header = b"struct s { int class; };\nvoid f(int *new, int this);\n";
    assert_eq!(check(Language::Cpp, header), Vec::<LintError>::new());
}

#[test]
fn php_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.php",
        15,
        "        $square = fn(float $x): float => $x ** ;",
        &["15:45: E999 syntax error: unexpected `**`"],
    );
}

#[test]
fn ruby_syntax_errors_are_reported() {
    assert_syntax_checked(
        "valid.rb",
        14,
        "    def push(item) = (@items << item).tap { @on_push&.call(item) ",
        &["23:8: E999 syntax error: missing `}`"],
    );
}

#[test]
fn a_construct_left_open_to_the_end_of_the_file_is_named() {
    let errors = check(
        Language::Ruby,
        b"class Stack\n  def push(item)\n    @items << item\nend\n",
    );
    assert_eq!(
        errors[0].to_string(),
        "1:1: E999 syntax error: `class` is not closed before the end of the file"
    );
}
