//! No future for a repository that comes from an image, on the real Docker daemon: an image
//! whose repository is past `base_commit` (later commits, a branch, tags, a stash, a remote,
//! packed refs, `ORIG_HEAD`, `FETCH_HEAD`, reflog entries, a dangling object; see
//! `tests/fixtures/history/make-future.sh`) shows none of it to the agent's sandbox or to the
//! evaluation container, where a patch's code could read a fix at test time; `HEAD` is
//! `base_commit` itself, and the gold patch still resolves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use batch_support::*;
use serde_json::json;

/// `tests/fixtures/history`.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/history")
}

/// Runs `program args…` in `dir`; its stdout, trimmed, after asserting success.
fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// An image this test built, removed when the test ends, passed or failed.
struct TestImage(String);

impl Drop for TestImage {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

/// The image of this test: aci's Python image, the repository of `make-future.sh` at
/// `/testbed` (`HEAD` two commits past base), and `show-history` on the `PATH`. Returns the
/// image and the base commit.
fn build_image(scratch: &Path) -> (TestImage, String) {
    let context = scratch.join("context");
    let testbed = context.join("testbed");
    std::fs::create_dir_all(&testbed).unwrap();
    let base = run(
        &testbed,
        "sh",
        &[fixtures().join("make-future.sh").to_str().unwrap()],
    );
    std::fs::copy(
        fixtures().join("show-history.sh"),
        context.join("show-history"),
    )
    .unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        "FROM aci-python:bookworm\nCOPY testbed /testbed\n\
         COPY show-history /usr/local/bin/show-history\n\
         RUN chmod 755 /usr/local/bin/show-history\nWORKDIR /testbed\n",
    )
    .unwrap();
    let tag = format!("aci-test-history:{}", std::process::id());
    run(
        &context,
        "docker",
        &["build", "-q", "-t", &tag, context.to_str().unwrap()],
    );
    (TestImage(tag), base)
}

/// What `show-history` prints of a repository that holds `base` alone, on `main`: `objects`
/// are `<id> <type> <size>` lines, sorted.
fn history_of_base_alone(base: &str, objects: &str) -> String {
    format!(
        "== git log --all --format=%H\n{base}\n== git reflog\n== git tag\n\
         == git stash list\n== git remote\n== git fsck --lost-found\n\
         == git cat-file --batch-all-objects --batch-check\n{objects}\
         == git for-each-ref --format=%(refname)\nrefs/heads/main\n== files\n\
         == FUTURE objects\n0\n"
    )
}

/// The objects `base` reaches in the host's copy of the repository, as `--batch-check` lists
/// them.
fn base_objects(testbed: &Path, base: &str) -> String {
    let listed = run(testbed, "git", &["rev-list", "--objects", "-n", "1", base]);
    let mut lines: Vec<String> = listed
        .lines()
        .map(|line| {
            let id = line.split(' ').next().unwrap();
            let kind = run(testbed, "git", &["cat-file", "-t", id]);
            let size = run(testbed, "git", &["cat-file", "-s", id]);
            format!("{id} {kind} {size}\n")
        })
        .collect();
    lines.sort();
    lines.concat()
}

#[test]
fn an_image_repository_past_base_commit_shows_no_future_to_the_agent_or_to_the_tests() {
    let dir = tempfile::tempdir().unwrap();
    let (built, base) = build_image(dir.path());
    let image = built.0.as_str();
    let testbed = dir.path().join("context/testbed");
    let expected = history_of_base_alone(&base, &base_objects(&testbed, &base));
    // The image does hold the future: the test can fail.
    let before = run(
        dir.path(),
        "docker",
        &["run", "--rm", image, "show-history"],
    );
    assert!(
        before.contains("refs/tags/future-tag") && before.contains("\norigin\n"),
        "{before}"
    );
    let id = "t__history-1";
    let gold = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n \
                def sub(a, b):\n-    return b - a\n+    return a - b\n";
    let record = json!({
        "instance_id": id, "repo": "t/history", "problem_statement": "sub is backwards",
        "base_commit": base, "image": image, "language": "python",
        "patch": gold, "FAIL_TO_PASS": ["test_calc.py::test_sub"], "PASS_TO_PASS": [],
        "test_cmd": "show-history; python -m pytest -rA -p no:cacheprovider",
        "log_parser": "pytest",
    });
    let instances = dir.path().join("instances.jsonl");
    std::fs::write(&instances, format!("{record}\n")).unwrap();

    // The agent's sandbox.
    let replays = write_replays(
        &dir.path().join("replays"),
        &[id],
        &[
            "show-history",
            "echo \"HEAD=$(git rev-parse HEAD)\"",
            "submit",
        ],
    );
    let output = dir.path().join("run");
    let agent_run = run_id("history-run");
    docker_batch(&instances, &replays, &output, &agent_run, &[]).expect_code(0);
    let traj = read_json(&instance_file(&output, id, "traj"));
    let observations: Vec<&str> = traj["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["observation"].as_str().unwrap())
        .collect();
    assert_eq!(observations[0], expected.trim_end());
    assert_eq!(observations[1], format!("HEAD={base}"));
    assert_eq!(traj["info"]["repository"]["source"], "image");
    assert!(containers_of(&agent_run).is_empty());

    // The evaluation container: the test command prints the history before the tests run,
    // with the gold patch applied.
    let eval_out = dir.path().join("eval");
    let eval_run = run_id("history-eval");
    let eval: Run = aci()
        .args(["eval", "--instances", instances.to_str().unwrap()])
        .args([
            "--predictions",
            "gold",
            "--output",
            eval_out.to_str().unwrap(),
        ])
        .args(["--run-id", &eval_run])
        .output()
        .unwrap()
        .into();
    eval.expect_code(0);
    let report = read_json(&eval_out.join("report.json"));
    assert_eq!(report["resolved_ids"], json!([id]), "{}", eval.stderr);
    let log = std::fs::read_to_string(eval_out.join(id).join("test_output.txt")).unwrap();
    assert!(log.contains(&expected), "{log}");
    assert!(containers_of(&eval_run).is_empty());
}
