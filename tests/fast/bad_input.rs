//! Bad input through the `aci` binary, each answered with one clear line and the right exit
//! code, losing nothing: a config nested too deep, an empty predictions file, a missing instances
//! or predictions file (with a hint), an instances file with a line that is not UTF-8, and
//! control characters in the model's action on the terminal, and names holding control characters (an instance folder, a patch's file names)
//! written out on stderr and in run_instance.log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn demo_instances() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/instances.jsonl")
}

fn aci(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aci"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What is in `dir`, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_config_nested_100000_levels_deep_is_one_line_and_exit_1_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!(
        "agent:\n  limits: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    std::fs::write(dir.path().join("deep.yaml"), deep).unwrap();
    let instances = demo_instances();
    let out = aci(
        dir.path(),
        &[
            "run",
            "--instances",
            instances.to_str().unwrap(),
            "--id",
            "demo__inicfg-1",
            "--runtime",
            "local",
            "--config",
            "deep.yaml",
            "--output",
            "out",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: deep.yaml:2: nested more than 32 levels deep; no configuration key is\n"
    );
    assert_eq!(entries(dir.path()), ["deep.yaml"]);
}

#[test]
fn an_empty_predictions_file_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let instances = demo_instances();
    for (name, text) in [
        ("empty.json", ""),
        ("list.json", "[]\n"),
        ("dict.json", "{}\n"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let out = aci(
            dir.path(),
            &[
                "eval",
                "--instances",
                instances.to_str().unwrap(),
                "--predictions",
                name,
                "--output",
                "eval",
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!("error: {name}: the predictions file holds no prediction\n"),
            "{name}"
        );
    }
    assert_eq!(
        entries(dir.path()),
        ["dict.json", "empty.json", "list.json"]
    );
}

/// One line of the instances file that is not UTF-8 costs that line only: the batch runs the
/// others (here on the local runtime) and names the bad line.
#[test]
fn an_instances_line_that_is_not_utf8_fails_alone_and_the_batch_runs_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(demo_instances()).unwrap();
    let first = demo.lines().next().unwrap();
    let record: serde_json::Value = serde_json::from_str(first).unwrap();
    let id = record["instance_id"].as_str().unwrap().to_owned();
    let mut bytes = b"{\"instance_id\": \"broken\xff\", \"problem_statement\": \"p\"}\n".to_vec();
    // repo_path is relative to the instances file: point it at the demo's repositories.
    let mut record = record;
    let repo = record["repo_path"].as_str().unwrap().to_owned();
    record["repo_path"] = serde_json::json!(demo_instances().parent().unwrap().join(repo));
    bytes.extend_from_slice(format!("{record}\n").as_bytes());
    std::fs::write(dir.path().join("instances.jsonl"), bytes).unwrap();
    std::fs::write(dir.path().join("replay.yaml"), "- submit\n").unwrap();
    std::fs::create_dir(dir.path().join("replays")).unwrap();
    std::fs::write(
        dir.path().join("replays").join(format!("{id}.yaml")),
        "- submit\n",
    )
    .unwrap();
    let out = aci(
        dir.path(),
        &[
            "batch",
            "--instances",
            "instances.jsonl",
            "--runtime",
            "local",
            "--replay-dir",
            "replays",
            "--output",
            "out",
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("error: instances.jsonl: line 1: the line is not valid UTF-8\n"),
        "{text}"
    );
    let statuses =
        std::fs::read_to_string(dir.path().join("out/run_batch_exit_statuses.yaml")).unwrap();
    assert!(statuses.contains(&id), "{statuses}");
}

/// An ESC (or any control character) in the model's action reaches the terminal written out,
/// so it cannot recolour, move or clear what the user sees.
#[test]
fn control_characters_in_the_models_action_are_written_out_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("replay.yaml"),
        "- \"echo \\e[2J\\e]0;owned\\a done\"\n- submit\n",
    )
    .unwrap();
    let instances = demo_instances();
    let out = aci(
        dir.path(),
        &[
            "run",
            "--instances",
            instances.to_str().unwrap(),
            "--id",
            "demo__inicfg-1",
            "--runtime",
            "local",
            "--replay",
            "replay.yaml",
            "--output",
            "out",
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(
        text.contains("[demo__inicfg-1] step 1: echo \\x1b[2J\\x1b]0;owned\\x07 done → "),
        "{text}"
    );
}

/// An instance folder under `--from-logs` whose name holds an OSC title sequence (its id
/// does too), a patch whose diff headers name a conftest.py through git's C quoting of ESC and
/// BEL and through raw ESC bytes, and an instance with two logs under folders holding ESC:
/// every name reaches stderr and run_instance.log written out, never as raw control bytes.
#[test]
fn control_characters_in_log_folders_and_patch_names_are_written_out_on_stderr_and_in_logs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Ids with control characters are refused at load; the folders above them, which no record
    // checks, carry them instead.
    let (graded, twice) = ("esc__x-1", "two__y-2");
    let (m1, m2) = ("m\u{1b}]0;pwned\u{7}1", "m\u{1b}[2J2");
    let record = |id: &str| {
        serde_json::json!({
            "instance_id": id, "problem_statement": "", "repo": "acme/widget",
            "base_commit": "abc", "log_parser": "pytest", "test_cmd": "pytest -rA",
            "FAIL_TO_PASS": ["tests/test_a.py::test_ok"], "PASS_TO_PASS": [],
        })
        .to_string()
    };
    std::fs::write(
        root.join("instances.jsonl"),
        format!("{}\n{}\n", record(graded), record(twice)),
    )
    .unwrap();
    let log = "+ : '>>>>> Start Test Output'\nPASSED tests/test_a.py::test_ok\n\
               ======== 1 passed in 0.10s ========\n+ : '>>>>> End Test Output'\n\
               >>>>> Test Exit Code: 0\n";
    let patch = "diff --git \"a/t/\\033]0;pwned\\007/conftest.py\" \"b/t/\\033]0;pwned\\007/conftest.py\"\n\
                 --- \"a/t/\\033]0;pwned\\007/conftest.py\"\n\
                 +++ \"b/t/\\033]0;pwned\\007/conftest.py\"\n\
                 @@ -1 +1 @@\n-a\n+b\n\
                 diff --git a/t/\u{1b}[2J/conftest.py b/t/\u{1b}[2J/conftest.py\n\
                 --- a/t/\u{1b}[2J/conftest.py\n\
                 +++ b/t/\u{1b}[2J/conftest.py\n\
                 @@ -1 +1 @@\n-a\n+b\n";
    let logs = root.join("logs");
    let write = |path: PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(logs.join(graded).join("test_output.txt"), log);
    write(logs.join(graded).join("patch.diff"), patch);
    write(
        logs.join("run")
            .join(m1)
            .join(twice)
            .join("test_output.txt"),
        log,
    );
    write(
        logs.join("run")
            .join(m2)
            .join(twice)
            .join("test_output.txt"),
        log,
    );

    let out = aci(
        root,
        &[
            "eval",
            "--instances",
            "instances.jsonl",
            "--from-logs",
            "logs",
            "--output",
            "out",
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    let line = |start: &str| {
        text.lines()
            .find(|line| line.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in {text}"))
    };
    let resolved = line("esc__x-1: resolved (");
    assert!(
        resolved.ends_with(
            " s); the patch changes test infrastructure: t/\\x1b]0;pwned\\x07/conftest.py \
             (pytest loads it as a plugin), t/\\x1b[2J/conftest.py (pytest loads it as a plugin)"
        ),
        "{resolved}"
    );
    let two = |model: &str| format!("logs/run/{model}/two__y-2/test_output.txt");
    let error = line("two__y-2: error: several logs of this instance, ");
    assert!(
        error.starts_with(&format!(
            "two__y-2: error: several logs of this instance, {}, {}; point \
             --from-logs at one run's directory (",
            two("m\\x1b]0;pwned\\x071"),
            two("m\\x1b[2J2")
        )),
        "{error}"
    );
    assert_eq!(
        line("warning: "),
        "warning: 1 resolved instance(s) changed test infrastructure, so the tests that \
         resolved them did not run as given: esc__x-1"
    );
    let run_log = |id: &str| {
        std::fs::read_to_string(root.join("out").join(id).join("run_instance.log")).unwrap()
    };
    assert_eq!(
        run_log(graded),
        "graded from logs/esc__x-1/test_output.txt (test log with start and end markers)\nparser: pytest\n"
    );
    let error = format!(
        "several logs of this instance, {}, {}; point --from-logs at one run's directory",
        two("m\\x1b]0;pwned\\x071"),
        two("m\\x1b[2J2")
    );
    assert_eq!(
        run_log(twice),
        format!(
            "error: {error}\ncause: evaluation_error (infrastructure): the evaluation failed: \
             {error}\n  {error}\n"
        )
    );
}

#[test]
fn a_missing_instances_or_predictions_file_says_what_to_give_instead() {
    let dir = tempfile::tempdir().unwrap();
    let out = aci(
        dir.path(),
        &[
            "eval",
            "--instances",
            "nope.jsonl",
            "--predictions",
            "gold",
            "--output",
            "out",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: failed to read instances file nope.jsonl: No such file or directory (os error 2)\n\
         hint: --instances takes a JSONL or JSON file of task records (SWE-bench's fields: \
         instance_id, repo, base_commit, problem_statement, …), e.g. a SWE-bench split exported \
         to lite.jsonl\n"
    );
    let instances = demo_instances();
    let out = aci(
        dir.path(),
        &[
            "eval",
            "--instances",
            instances.to_str().unwrap(),
            "--predictions",
            "preds.json",
            "--output",
            "out",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: cannot read the predictions preds.json: No such file or directory (os error 2)\n\
         hint: aci batch writes its predictions to <output>/preds.json; --predictions gold \
         evaluates each record's own patch\n"
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}
