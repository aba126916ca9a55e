//! `aci batch` through the binary, on the local runtime (fast, and it covers the host-side
//! sandbox): resume, --redo, selection flags, bad records, missing replays, usage errors.
//! The Docker side (workers, Ctrl-C, the watchdog, determinism) is in tests/full/batch_docker.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;

use std::path::Path;

use batch_support::*;

const PY: [&str; 4] = [
    "demo__inicfg-1",
    "demo__moneyfmt-1",
    "demo__ttlcache-1",
    "demo__csvreport-1",
];

/// Replays that change the README and submit: a non-empty patch in a fraction of a second.
fn touch_replays(dir: &Path, ids: &[&str]) -> String {
    let replays = write_replays(
        &dir.join("replays"),
        ids,
        &["echo '# touched' >> README.md", "submit"],
    );
    replays.display().to_string()
}

fn local_batch(instances: &Path, replays: &str, output: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "--instances",
        instances.to_str().unwrap(),
        "--replay-dir",
        replays,
        "--runtime",
        "local",
        "--output",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    batch(&args)
}

#[test]
fn a_rerun_skips_finished_instances_cleans_and_reruns_partial_ones_and_redo_reruns_all() {
    let dir = tempfile::tempdir().unwrap();
    let ids = &PY[..2];
    let instances = write_instances(dir.path(), ids, &[]);
    let replays = touch_replays(dir.path(), ids);
    let out = dir.path().join("out");

    let first = local_batch(&instances, &replays, &out, &[]);
    first.expect_code(0);
    assert_eq!(
        summary_rows(&first.stdout),
        rows(&[("submitted", 2), ("total", 2)])
    );
    assert!(
        first.stderr.contains("[1/2] demo__inicfg-1: submitted ("),
        "{}",
        first.stderr
    );
    assert!(
        first.stderr.contains("[2/2] demo__moneyfmt-1: submitted ("),
        "{}",
        first.stderr
    );
    let preds = std::fs::read(out.join("preds.json")).unwrap();
    let traj = std::fs::read(instance_file(&out, ids[1], "traj")).unwrap();
    let patch = std::fs::read_to_string(instance_file(&out, ids[0], "patch")).unwrap();
    assert!(patch.contains("+# touched\n"), "{patch}");

    // Everything finished: both are skipped and nothing on disk changes.
    let second = local_batch(&instances, &replays, &out, &[]);
    second.expect_code(0);
    assert!(
        second
            .stderr
            .contains("[1/2] demo__inicfg-1: skipped (submitted)")
    );
    assert!(
        second
            .stderr
            .contains("[2/2] demo__moneyfmt-1: skipped (submitted)")
    );
    assert_eq!(
        summary_rows(&second.stdout),
        rows(&[("skipped (submitted)", 2), ("total", 2)])
    );
    assert!(second.stdout.contains("patches submitted   0 (of 0 run)"));
    assert_eq!(std::fs::read(out.join("preds.json")).unwrap(), preds);
    assert_eq!(
        std::fs::read(instance_file(&out, ids[1], "traj")).unwrap(),
        traj
    );

    // A partial run (no final status) is removed, stray files and all, and run again.
    let partial = instance_file(&out, ids[0], "traj");
    std::fs::write(
        &partial,
        r#"{"trajectory": [], "info": {"exit_status": null}}"#,
    )
    .unwrap();
    std::fs::write(out.join(ids[0]).join("stray.txt"), "old").unwrap();
    let third = local_batch(&instances, &replays, &out, &[]);
    third.expect_code(0);
    assert!(
        third.stderr.contains("demo__inicfg-1: submitted ("),
        "{}",
        third.stderr
    );
    assert!(
        third
            .stderr
            .contains("demo__moneyfmt-1: skipped (submitted)")
    );
    assert!(!out.join(ids[0]).join("stray.txt").exists());
    assert_eq!(exit_status(&out, ids[0]), "submitted");

    // --redo runs both again.
    let fourth = local_batch(&instances, &replays, &out, &["--redo"]);
    fourth.expect_code(0);
    assert!(!fourth.stderr.contains("skipped"), "{}", fourth.stderr);
    assert!(fourth.stdout.contains("patches submitted   2 (of 2 run)"));

    // A run over part of the instances keeps the others' results in the statuses file.
    let fifth = local_batch(
        &instances,
        &replays,
        &out,
        &["--redo", "--filter", "demo__moneyfmt"],
    );
    fifth.expect_code(0);
    let statuses = std::fs::read_to_string(out.join("run_batch_exit_statuses.yaml")).unwrap();
    assert_eq!(
        statuses,
        "instances_by_exit_status:\n  submitted:\n  - demo__inicfg-1\n  - demo__moneyfmt-1\ntotal_cost: 0.0\n"
    );
    let preds = read_json(&out.join("preds.json"));
    assert_eq!(preds.as_object().unwrap().len(), 2);
}

/// The instances `aci batch` ran, in the order their progress lines came.
fn ran_in_order(run: &Run) -> Vec<String> {
    run.stderr
        .lines()
        .filter_map(|line| line.split_once("] ")?.1.split_once(": submitted"))
        .map(|(id, _)| id.to_owned())
        .collect()
}

#[test]
fn filter_slice_shuffle_and_shard_pick_the_instances_swe_agent_would() {
    let dir = tempfile::tempdir().unwrap();
    let instances = write_instances(dir.path(), &PY, &[]);
    let replays = touch_replays(dir.path(), &PY);
    // PY in file order: inicfg, moneyfmt, ttlcache, csvreport.
    let cases: [(&[&str], &[&str]); 5] = [
        // re.match: `ttl` does not match at the start of demo__ttlcache-1.
        (&["--filter", "ttl|demo__csv"], &["demo__csvreport-1"]),
        (
            &["--filter", "demo__(ttl|csv)"],
            &["demo__ttlcache-1", "demo__csvreport-1"],
        ),
        (
            &["--slice", "1:3"],
            &["demo__moneyfmt-1", "demo__ttlcache-1"],
        ),
        // Four instances in three shards of 2, 1 and 1.
        (&["--shard", "2/3"], &["demo__ttlcache-1"]),
        // python3 -c 'import random; x = sorted(["demo__inicfg-1", "demo__moneyfmt-1",
        //   "demo__ttlcache-1", "demo__csvreport-1"]); random.seed(7); random.shuffle(x); print(x[:3])'
        (
            &["--shuffle", "--seed", "7", "--slice", ":3"],
            &["demo__ttlcache-1", "demo__inicfg-1", "demo__csvreport-1"],
        ),
    ];
    for (index, (flags, expected)) in cases.into_iter().enumerate() {
        let out = dir.path().join(format!("out{index}"));
        let run = local_batch(&instances, &replays, &out, flags);
        run.expect_code(0);
        assert_eq!(ran_in_order(&run), expected, "{flags:?}\n{}", run.stderr);
        let mut sorted: Vec<String> = expected.iter().map(|id| (*id).to_owned()).collect();
        sorted.sort();
        assert_eq!(instance_dirs(&out), sorted, "{flags:?}");
    }
}

#[test]
fn a_bad_record_and_an_instance_without_a_replay_fail_alone_and_the_rest_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = r#"{"instance_id": "demo__broken-1", "problem_statement": "p", "repo": "demo/x", "base_commit": "0", "FAIL_TO_PASS": 5}"#;
    let ids = ["demo__inicfg-1", "demo__csvreport-1"];
    let instances = write_instances(dir.path(), &ids, &[bad]);
    // Only inicfg has a replay.
    let replays = touch_replays(dir.path(), &ids[..1]);
    let out = dir.path().join("out");
    let run = local_batch(&instances, &replays, &out, &["--workers", "2"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains(&format!(
            "error: {}: instance \"demo__broken-1\" (line 3): field \"FAIL_TO_PASS\": expected a list of test ids",
            instances.display()
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "error: demo__csvreport-1: no replay file for this instance in {replays} (looked for \
             demo__csvreport-1.yaml, "
        )),
        "{}",
        run.stderr
    );
    assert_eq!(exit_status(&out, "demo__inicfg-1"), "submitted");
    assert_eq!(exit_status(&out, "demo__csvreport-1"), "exit_error");
    let traj = read_json(&instance_file(&out, "demo__csvreport-1", "traj"));
    assert!(
        traj["info"]["error"]
            .as_str()
            .unwrap()
            .starts_with("no replay file")
    );
    assert_eq!(instance_dirs(&out), ["demo__csvreport-1", "demo__inicfg-1"]);
    let preds = read_json(&out.join("preds.json"));
    assert_eq!(preds["demo__csvreport-1"]["model_patch"], "");
    assert!(
        preds["demo__inicfg-1"]["model_patch"]
            .as_str()
            .unwrap()
            .contains("+# touched")
    );
    assert_eq!(
        summary_rows(&run.stdout),
        rows(&[("exit_error", 1), ("submitted", 1), ("total", 2)])
    );
    assert!(
        run.stdout.contains("invalid records     1 (not run"),
        "{}",
        run.stdout
    );
    // A finished failure is final: a rerun skips it (--redo runs it again).
    let rerun = local_batch(&instances, &replays, &out, &[]);
    assert!(
        rerun
            .stderr
            .contains("demo__csvreport-1: skipped (exit_error)")
    );
}

#[test]
fn settings_that_cannot_work_stop_the_run_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let instances = write_instances(dir.path(), &PY[..1], &[]);
    let file = instances.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();

    let run = batch(&["--instances", file, "--output", out]);
    run.expect_code(1);
    assert_eq!(
        run.stderr,
        "error: --model replay needs --replay-dir DIR\nhint: DIR holds one replay per instance: <id>.yaml, <id>.json or <id>.traj\n"
    );
    let run = batch(&["--instances", file, "--model", "human", "--output", out]);
    run.expect_code(1);
    assert!(
        run.stderr
            .starts_with("error: aci batch cannot use --model human\n")
    );
    let run = batch(&[
        "--instances",
        file,
        "--replay-dir",
        "/nonexistent",
        "--output",
        out,
    ]);
    run.expect_code(1);
    assert_eq!(
        run.stderr,
        "error: the replay directory /nonexistent does not exist\n"
    );
    // A model error's hint is its own line, printed once.
    let run = batch(&["--instances", file, "--model", "gpt-4o", "--output", out]);
    run.expect_code(1);
    assert_eq!(
        run.stderr,
        "error: unknown model spec `gpt-4o`\nhint: use `replay`, `human`, `openai/<name>` or \
         `anthropic/<name>` (e.g. `openai/gpt-4o`)\n"
    );
    let run: Run = aci()
        .arg("batch")
        .args([
            "--instances",
            file,
            "--model",
            "openai/gpt-4o",
            "--output",
            out,
        ])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
        .into();
    run.expect_code(1);
    assert_eq!(
        run.stderr,
        "error: OPENAI_API_KEY is not set\nhint: export OPENAI_API_KEY=…, or pass --api-base for \
         a server that needs no key\n"
    );
    // Usage errors exit 2 (clap).
    let run = batch(&["--instances", file, "--seed", "3"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--shuffle"), "{}", run.stderr);
    let run = batch(&["--instances", file, "--slice", "1:2:0"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("the step must not be zero"),
        "{}",
        run.stderr
    );
    let run = batch(&["--instances", file, "--workers", "0"]);
    run.expect_code(2);
    assert!(
        !Path::new(out).exists(),
        "nothing is written before the run starts"
    );
}
