//! The multilingual demo (`tests/fixtures/demo-multilingual/`) end to end on the real Docker
//! daemon, in aci's language images (`aci images build --lang all`): `aci batch` with the
//! replays solves all eight instances (Go, Java, JavaScript, TypeScript, C, C++, PHP, Ruby),
//! the Go run's first edit rejected by the lint gate and rolled back, and `aci eval` of the
//! batch's predictions resolves all eight with each runner's own parser. (`aci validate` of the
//! same records, gold and empty patches, takes twice as long and is left to the fixture's
//! README.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{aci, read_json};

/// The images the demo runs in, one per toolchain.
const IMAGES: [&str; 6] = [
    "aci-go:bookworm",
    "aci-java:bookworm",
    "aci-node:bookworm",
    "aci-php:bookworm",
    "aci-ruby:bookworm",
    "aci-c:bookworm",
];

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo-multilingual")
}

fn records() -> Vec<Value> {
    std::fs::read_to_string(demo().join("instances.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn sorted_ids() -> Vec<String> {
    let mut ids: Vec<String> = records()
        .iter()
        .map(|record| record["instance_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

/// A fresh directory under the target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("demo-ml-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Fails the test, saying how to build them, when a language image is missing.
async fn language_images() {
    let runtime = crate::support::docker().await;
    for image in IMAGES {
        assert!(
            runtime.inspect_image(image).await.unwrap().is_some(),
            "the image {image} is missing\nhint: run `cargo run -- images build --lang all`"
        );
    }
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replays_solve_all_eight_languages_and_eval_resolves_them() {
    language_images().await;
    let dir = scratch("batch");
    let instances = demo().join("instances.jsonl");
    let batch = aci(&[
        "batch",
        "--instances",
        path(&instances),
        "--model",
        "replay",
        "--replay-dir",
        path(&demo().join("replays")),
        "--run-id",
        "test-demo-ml",
        "--workers",
        "2",
        "--output",
        path(&dir.join("batch")),
    ]);
    assert_eq!(batch.status.code(), Some(0), "{}", stderr(&batch));
    // Each submission is the gold patch's change (build output is ignored or removed).
    let predictions = read_json(&dir.join("batch/preds.json"));
    for record in records() {
        let id = record["instance_id"].as_str().unwrap();
        assert_eq!(
            predictions[id]["model_patch"], record["patch"],
            "{id}: the replay's submission"
        );
    }
    // The Go run's first edit leaves a bracket open: the gate rejects it, the file is restored,
    // and the next edit lands.
    let trajectory = read_json(&dir.join("batch/demo__slugify-1/demo__slugify-1.traj"));
    let rejected: Vec<usize> = trajectory["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, step)| {
            step["observation"]
                .as_str()
                .unwrap()
                .starts_with("Your proposed edit has introduced new syntax error(s).")
        })
        .map(|(index, _)| index)
        .collect();
    assert_eq!(
        rejected,
        [2],
        "the third action, the first edit, is the one rejected"
    );

    let eval = aci(&[
        "eval",
        "--instances",
        path(&instances),
        "--predictions",
        path(&dir.join("batch/preds.json")),
        "--run-id",
        "test-demo-ml",
        "--workers",
        "2",
        "--expect",
        path(&demo().join("expected_resolved.json")),
        "--output",
        path(&dir.join("eval")),
    ]);
    assert_eq!(eval.status.code(), Some(0), "{}", stderr(&eval));
    assert!(stderr(&eval).contains("--expect: all 8 expected instance(s) are resolved"));
    let report = read_json(&dir.join("eval/report.json"));
    assert_eq!(report["resolved_ids"], serde_json::json!(sorted_ids()));
    assert_eq!(report["unresolved_ids"], serde_json::json!([]));
    assert_eq!(report["error_ids"], serde_json::json!([]));
}
