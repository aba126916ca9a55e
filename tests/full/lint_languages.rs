//! The lint gate of every language in a real container: in one sandbox, an `edit` that breaks
//! the syntax of a Go, Java, JavaScript, TypeScript, TSX, C, C++ (and header), PHP or Ruby file
//! is rejected with the tree-sitter message, and the file keeps its bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

use aci::config::LINT_REJECTION_V07;
use aci::sandbox::Sandbox;
use support::Kind;
use support::aci_run::{config, start_aci};

/// Fixture file, line replaced, the broken line, the problem the gate reports.
const BROKEN_EDITS: [(&str, usize, &str, &str); 10] = [
    (
        "valid.go",
        14,
        "\tout := make([]U, 0, len(xs)))",
        "E999 syntax error: unexpected `out`",
    ),
    (
        "Valid.java",
        11,
        "    public Main(List<T> items) { this.items = items }",
        "E999 syntax error: missing `;`",
    ),
    (
        "valid.js",
        8,
        "    const text = await readFile(path, 'utf8';",
        "E999 syntax error: missing `)`",
    ),
    (
        "valid.ts",
        17,
        "  const n = <number>(v as any;",
        "E999 syntax error: missing `)`",
    ),
    (
        "valid.tsx",
        9,
        "      {items.map((item) => <li key={item}>{item}</li>}",
        "E999 syntax error: missing `)`",
    ),
    (
        "valid.c",
        14,
        "        total += n->value",
        "E999 syntax error: missing `;`",
    ),
    (
        "valid.cpp",
        11,
        "    void push(T value) { items_.push_back(std::move(value); }",
        "E999 syntax error: missing `)`",
    ),
    (
        "valid.h",
        5,
        "extern int x_sum(const x_t *x, size_t n;",
        "E999 syntax error: missing `)`",
    ),
    (
        "valid.php",
        15,
        "        $square = fn(float $x): float => $x ** ;",
        "E999 syntax error: unexpected `**`",
    ),
    (
        "valid.rb",
        14,
        "    def push(item) = (@items << item).tap { @on_push&.call(item) ",
        "E999 syntax error: missing `}`",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syntax_error_in_every_language_is_rejected_and_the_file_restored_byte_for_byte() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/languages");
    let repo = tempfile::tempdir().unwrap();
    for (file, ..) in BROKEN_EDITS {
        std::fs::copy(fixtures.join(file), repo.path().join(file)).unwrap();
    }
    let config_dir = tempfile::tempdir().unwrap();
    let mut run = start_aci(
        Kind::Docker,
        "lint-languages",
        repo.path(),
        config(&[], &[]),
        config_dir.path(),
    )
    .await;
    let mut failures = Vec::new();
    for (file, line, broken, problem) in BROKEN_EDITS {
        let original = std::fs::read(fixtures.join(file)).unwrap();
        let opened = run.aci.execute(&format!("open {file}")).await.unwrap();
        assert!(!opened.lint_rejected, "{file}: {}", opened.observation);
        let step = run
            .aci
            .execute(&format!("edit {line}:{line}\n{broken}\nend_of_edit"))
            .await
            .unwrap();
        let head = format!("{LINT_REJECTION_V07}\n\nERRORS:\n- {problem}\n\n");
        if !step.lint_rejected || !step.observation.starts_with(&head) {
            failures.push(format!("{file}: expected\n{head}got\n{}", step.observation));
        }
        let path = format!("{}/{file}", run.repo_dir);
        let after = run.aci.sandbox_mut().read_file(&path).await.unwrap();
        if after != original {
            failures.push(format!("{file}: not restored byte for byte"));
        }
    }
    run.shutdown().await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
