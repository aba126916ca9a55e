//! A record is input, not code, through the `aci` binary: a field that git would read as an
//! option (`--upload-pack=CMD` with a `file://` mirror, `--output=FILE`) or that cannot name a
//! file is one error line naming the instance and the field; nothing of it runs, no host file
//! changes, and the other records still run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;

use std::path::Path;
use std::process::Command;

use batch_support::*;
use serde_json::{Value, json};

/// The demo instance that runs beside the hostile records.
const GOOD: &str = "demo__inicfg-1";

/// A git repository at `dir` with one commit, a stand-in for `env.repo_url`'s clone.
fn source_repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for args in [
        &["init", "-q"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "one",
        ][..],
    ] {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

/// A record that has no `repo_path`, so on the local runtime its repository comes from the
/// mirror of `env.repo_url`, with `field` set to `value`.
fn hostile_record(id: &str, field: &str, value: &str) -> Value {
    let mut record = json!({
        "instance_id": id, "problem_statement": "p", "repo": "o/n",
        "base_commit": "8ec2d1f0e2f39b4b52b1f5f1f3f0b6c4fb5b8d0a",
        "environment_setup_commit": "8ec2d1f0e2f39b4b52b1f5f1f3f0b6c4fb5b8d0a",
    });
    record[field] = json!(value);
    record
}

/// The `error:` lines of a run's stderr.
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("error:"))
        .collect()
}

#[test]
fn a_hostile_commit_or_repo_is_one_line_and_runs_or_writes_nothing_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("mirrors/o/n");
    source_repository(&source);
    let marker = dir.path().join("marker");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let cache = dir.path().join("cache");
    let upload_pack = format!("--upload-pack=touch {}", marker.display());
    let output_file = format!("--output={}", victim.display());
    let cases = [
        ("base_commit", upload_pack.as_str()),
        ("base_commit", output_file.as_str()),
        ("environment_setup_commit", output_file.as_str()),
        ("repo", "--upload-pack=touch/n"),
    ];
    let url = format!(
        "env.repo_url=file://{}/{{repo}}",
        dir.path().join("mirrors").display()
    );
    let cache_set = format!("env.repo_cache={}", cache.display());
    std::fs::write(dir.path().join("replay.yaml"), "- submit\n").unwrap();
    for (index, (field, value)) in cases.iter().enumerate() {
        let id = format!("o__n-{index}");
        let hostile = hostile_record(&id, field, value).to_string();
        let instances = write_instances(dir.path(), &[GOOD], &[&hostile]);
        let run: Run = aci()
            .current_dir(dir.path())
            .args([
                "run",
                "--instances",
                instances.to_str().unwrap(),
                "--id",
                GOOD,
            ])
            .args(["--runtime", "local", "--replay", "replay.yaml"])
            .args([
                "--output",
                dir.path().join(format!("out-{index}")).to_str().unwrap(),
            ])
            .args(["--set", &url, "--set", &cache_set])
            .output()
            .unwrap()
            .into();
        run.expect_code(0);
        let what = if *field == "repo" {
            format!(
                "{value:?} is not `owner/name` (ASCII letters, digits, `.`, `_` and `-` on each \
                 side of one `/`, neither side starting with `-` or holding `..`)"
            )
        } else {
            format!(
                "{value:?} is neither a commit id (7 to 64 hex digits) nor a branch or tag name \
                 git accepts (git check-ref-format, not starting with `-`)"
            )
        };
        assert_eq!(
            error_lines(&run.stderr),
            [format!(
                "error: {}: instance \"{id}\" (line 2): field \"{field}\": {what}",
                instances.display()
            )],
            "{}",
            run.stderr
        );

        // aci eval reads the same record the same way, and writes nothing.
        let alone = dir.path().join(format!("alone-{index}.jsonl"));
        std::fs::write(&alone, format!("{hostile}\n")).unwrap();
        let eval_out = dir.path().join(format!("eval-{index}"));
        let eval: Run = aci()
            .current_dir(dir.path())
            .args(["eval", "--instances", alone.to_str().unwrap()])
            .args([
                "--predictions",
                "gold",
                "--output",
                eval_out.to_str().unwrap(),
            ])
            .args(["--set", &url, "--set", &cache_set])
            .output()
            .unwrap()
            .into();
        eval.expect_code(1);
        assert_eq!(
            eval.stderr.lines().next().unwrap(),
            format!(
                "error: {}: instance \"{id}\" (line 1): field \"{field}\": {what}",
                alone.display()
            )
        );
        assert!(!eval_out.exists(), "{}", eval.stderr);
    }
    assert!(!marker.exists(), "the command ran");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    assert!(!cache.exists(), "nothing was cloned");
}

/// An id one byte too long for the longest file aci names after it failed the batch when its
/// first file was written; it is refused at load, and the longest id that fits runs.
#[test]
fn an_id_too_long_for_a_file_name_fails_at_load_and_the_batch_runs_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut longest = demo_record(GOOD);
    let repo = demo_dir().join(longest["repo_path"].as_str().unwrap());
    longest["repo_path"] = json!(repo);
    let longest_id = "l".repeat(aci::instance::MAX_ID_BYTES);
    longest["instance_id"] = json!(longest_id);
    let mut too_long = longest.clone();
    let too_long_id = "t".repeat(aci::instance::MAX_ID_BYTES + 1);
    too_long["instance_id"] = json!(too_long_id);
    let instances = write_instances(
        dir.path(),
        &[GOOD],
        &[&too_long.to_string(), &longest.to_string()],
    );
    let replays = write_replays(
        &dir.path().join("replays"),
        &[GOOD, &longest_id],
        &["submit"],
    );
    let output = dir.path().join("out");
    let run = batch(&[
        "--instances",
        instances.to_str().unwrap(),
        "--runtime",
        "local",
        "--replay-dir",
        replays.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert_eq!(
        error_lines(&run.stderr),
        [format!(
            "error: {}: instance \"{too_long_id}\" (line 2): field \"instance_id\": is 213 bytes \
             long, more than the 212 that leave room in a file name (255 bytes) for the longest \
             name aci makes from an id, `.<id>.patch.<pid>.<n>.tmp`",
            instances.display()
        )]
    );
    assert_eq!(
        instance_dirs(&output),
        [GOOD.to_owned(), longest_id.clone()]
    );
    assert_eq!(exit_status(&output, &longest_id), "submitted");
    assert!(instance_file(&output, &longest_id, "patch").is_file());
    let preds = read_json(&output.join("preds.json"));
    assert!(
        preds.get(&longest_id).is_some() && preds.get(GOOD).is_some(),
        "{preds}"
    );
}
