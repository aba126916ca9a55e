//! `aci batch|eval|validate --plan`, through the real binary with no Docker daemon: each
//! selected instance's environment plan is one JSON line (its image and how it is had, its
//! repository, the layer, its test command and log parser), and nothing starts: no daemon is
//! asked, no output directory is made.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const NO_DAEMON: &str = "unix:///nonexistent/docker.sock";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn aci(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(args)
        .env("DOCKER_HOST", NO_DAEMON)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "aci {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The plans printed, by instance id, in the order printed.
fn plans(output: &Output) -> Vec<(String, Value)> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            let plan: Value = serde_json::from_str(line).unwrap();
            for key in [
                "instance_id",
                "language",
                "image",
                "repository",
                "layer",
                "test_cmd",
                "test_cmd_source",
                "log_parser",
            ] {
                assert!(plan.get(key).is_some(), "no {key} in {line}");
            }
            (plan["instance_id"].as_str().unwrap().to_owned(), plan)
        })
        .collect()
}

fn find<'a>(plans: &'a [(String, Value)], id: &str) -> &'a Value {
    &plans.iter().find(|(found, _)| found == id).unwrap().1
}

/// Real Lite records: one on its bullseye spec environment, one whose spec aci cannot build.
fn lite_file(dir: &Path) -> PathBuf {
    let data = std::env::var_os("ACI_SWEBENCH_DATA")
        .map_or_else(|| root().join("../shared/swebench"), PathBuf::from);
    let text = std::fs::read_to_string(data.join("lite.jsonl"))
        .expect("the SWE-bench data is missing: set ACI_SWEBENCH_DATA to the dir of lite.jsonl");
    let wanted = ["sympy__sympy-20590", "django__django-11099"];
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| {
            let record: Value = serde_json::from_str(line).unwrap();
            wanted.contains(&record["instance_id"].as_str().unwrap())
        })
        .collect();
    assert_eq!(lines.len(), 2);
    let path = dir.join("lite.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[test]
fn batch_plan_prints_the_demo_tasks_plans_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output_dir = dir.path().join("run");
    let out = aci(&[
        "batch",
        "--plan",
        "--instances",
        "tests/fixtures/demo/instances.jsonl",
        "--model",
        "replay",
        "--output",
        output_dir.to_str().unwrap(),
    ]);
    let demo = plans(&out);
    assert_eq!(demo.len(), 8);
    let inicfg = find(&demo, "demo__inicfg-1");
    assert_eq!(inicfg["language"], "python");
    assert_eq!(inicfg["image"]["obtained"], "built");
    assert_eq!(inicfg["image"]["reference"], "aci-python:bookworm");
    assert_eq!(inicfg["image"]["debian_base"], "aci-base:bookworm");
    assert_eq!(inicfg["repository"]["source"], "repo_path");
    assert!(
        inicfg["repository"]["path"]
            .as_str()
            .unwrap()
            .ends_with("tests/fixtures/demo/repos/inicfg"),
        "{inicfg}"
    );
    assert_eq!(inicfg["layer"]["kind"], "none");
    assert_eq!(
        inicfg["test_cmd"],
        "python -m pytest -rA -p no:cacheprovider"
    );
    assert_eq!(inicfg["test_cmd_source"], "record");
    assert_eq!(inicfg["log_parser"], "pytest");
    let ringbuf = find(&demo, "demo__ringbuf-1");
    assert_eq!(ringbuf["language"], "rust");
    assert_eq!(ringbuf["image"]["reference"], "aci-rust:bookworm");
    assert_eq!(ringbuf["log_parser"], "cargo");
    assert!(!output_dir.exists(), "--plan made the output directory");

    // The selection flags select the plans printed; --runtime local looks into no image.
    let out = aci(&[
        "batch",
        "--plan",
        "--instances",
        "tests/fixtures/demo/instances.jsonl",
        "--filter",
        "demo__calc",
        "--runtime",
        "local",
    ]);
    let selected = plans(&out);
    assert_eq!(selected.len(), 1);
    assert_eq!(selected[0].0, "demo__calc-1");
}

#[test]
fn eval_and_validate_plan_real_lite_records_on_their_spec_environment_or_say_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let lite = lite_file(dir.path());
    let lite = lite.to_str().unwrap();
    let eval = plans(&aci(&["eval", "--plan", "--instances", lite]));
    let validate_output = dir.path().join("validation");
    let validate = plans(&aci(&[
        "validate",
        "--plan",
        "--instances",
        lite,
        "--output",
        validate_output.to_str().unwrap(),
    ]));
    assert_eq!(eval, validate);
    assert!(
        !validate_output.exists(),
        "--plan made the output directory"
    );
    // --plan starts nothing and writes nothing: it needs no --output.
    let without_output = plans(&aci(&["validate", "--plan", "--instances", lite]));
    assert_eq!(eval, without_output);

    let sympy = find(&eval, "sympy__sympy-20590");
    assert_eq!(sympy["language"], "python");
    assert_eq!(sympy["image"]["obtained"], "spec");
    assert_eq!(sympy["image"]["base"], "aci-python:bullseye");
    assert_eq!(sympy["image"]["release"], "bullseye");
    assert_eq!(sympy["image"]["spec"], "sympy/sympy 1.7");
    assert_eq!(sympy["repository"]["source"], "image_else_mirror");
    assert_eq!(sympy["repository"]["image"], "aci-python:bullseye");
    assert_eq!(sympy["repository"]["repo_dir"], "/testbed");
    assert_eq!(
        sympy["repository"]["commit"],
        "cffd4e0f86fefd4802349a9f9b19ed70934ea354"
    );
    assert_eq!(
        sympy["repository"]["mirror"]["url"],
        "https://github.com/sympy/sympy.git"
    );
    assert_eq!(sympy["layer"]["kind"], "spec");
    assert_eq!(sympy["test_cmd_source"], "spec");
    assert!(
        sympy["test_cmd"]
            .as_str()
            .unwrap()
            .contains("bin/test -C --verbose"),
        "{sympy}"
    );
    assert_eq!(sympy["log_parser"], "sympy");

    let django = find(&eval, "django__django-11099");
    assert_eq!(django["image"]["obtained"], "none");
    assert!(
        django["image"]["error"]
            .as_str()
            .unwrap()
            .contains("asks for Python 3.6"),
        "{django}"
    );
    assert_eq!(django["repository"]["source"], "mirror");
    assert_eq!(django["log_parser"], "django");

    // With SWE-bench's prebuilt images, the image is pulled and holds the repository.
    let swebench = plans(&aci(&[
        "eval",
        "--plan",
        "--images",
        "swebench",
        "--instances",
        lite,
    ]));
    let django = find(&swebench, "django__django-11099");
    assert_eq!(django["image"]["obtained"], "pull");
    assert_eq!(
        django["image"]["reference"],
        "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    );
    assert_eq!(django["image"]["pull"], "missing");
    assert_eq!(django["image"]["from"], "env.image_template");
    assert_eq!(django["repository"]["source"], "image_else_mirror");
    assert_eq!(django["layer"]["kind"], "none");
    assert!(
        django["activate"]
            .as_str()
            .unwrap()
            .contains("conda activate testbed")
    );
}
