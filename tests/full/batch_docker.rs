//! `aci batch` on the real Docker daemon: several workers, the demo replays, determinism,
//! Ctrl-C, and the watchdog under concurrency. Every test checks that the run left no
//! container behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use batch_support::*;
use regex::Regex;
use serde_json::Value;

/// Five Python instances the demo replays solve, and the Rust one they fail on purpose.
const DETERMINISM_IDS: [&str; 6] = [
    "demo__inicfg-1",
    "demo__moneyfmt-1",
    "demo__ttlcache-1",
    "demo__csvreport-1",
    "demo__semverkit-1",
    "demo__pathnorm-1",
];

/// A trajectory with the timings zeroed: `execution_time`, `info.wall_time`, and the durations
/// test runners print in their summaries (`20 passed in 0.28s`, `finished in 0.02s`).
fn without_timings(path: &Path) -> String {
    let mut value = read_json(path);
    assert!(value["info"]["wall_time"].as_f64().unwrap() > 0.0);
    value["info"]["wall_time"] = Value::from(0.0);
    for step in value["trajectory"].as_array_mut().unwrap() {
        step["execution_time"] = Value::from(0.0);
    }
    let text = serde_json::to_string_pretty(&value).unwrap();
    let durations = Regex::new(r"in \d+\.\d+s").unwrap();
    durations.replace_all(&text, "in <T>s").into_owned()
}

#[test]
fn two_demo_batches_give_identical_outputs_and_aci_eval_resolves_the_solved_instances() {
    let dir = tempfile::tempdir().unwrap();
    let instances = write_instances(dir.path(), &DETERMINISM_IDS, &[]);
    let replays = demo_dir().join("replays");
    let (out_a, out_b) = (dir.path().join("a"), dir.path().join("b"));
    let (run_a, run_b) = (run_id("det-a"), run_id("det-b"));
    let a = docker_batch(&instances, &replays, &out_a, &run_a, &["--workers", "2"]);
    a.expect_code(0);
    let b = docker_batch(&instances, &replays, &out_b, &run_b, &["--workers", "2"]);
    b.expect_code(0);
    assert_eq!(
        summary_rows(&a.stdout),
        rows(&[("submitted", 6), ("total", 6)])
    );

    for file in ["preds.json", "run_batch_exit_statuses.yaml"] {
        let bytes = std::fs::read(out_a.join(file)).unwrap();
        assert_eq!(bytes, std::fs::read(out_b.join(file)).unwrap(), "{file}");
    }
    for id in DETERMINISM_IDS {
        for ext in ["patch", "pred"] {
            let bytes = std::fs::read(instance_file(&out_a, id, ext)).unwrap();
            assert_eq!(
                bytes,
                std::fs::read(instance_file(&out_b, id, ext)).unwrap(),
                "{id}.{ext}"
            );
        }
        assert_eq!(
            without_timings(&instance_file(&out_a, id, "traj")),
            without_timings(&instance_file(&out_b, id, "traj")),
            "{id}.traj"
        );
        // Each trajectory names the environment image its container started from.
        let env_image = &read_json(&instance_file(&out_a, id, "traj"))["info"]["env_image"];
        let tag = env_image["tag"].as_str().unwrap();
        let hash = env_image["env_hash"].as_str().unwrap();
        assert!(
            tag.starts_with("aci-env-") && tag.ends_with(&hash[..12]),
            "{env_image}"
        );
        assert_eq!(
            env_image["id"].as_str(),
            Some(image_id(tag).as_str()),
            "{env_image}"
        );
    }
    let mut manifest_a = read_json(&out_a.join("manifest.json"));
    let mut manifest_b = read_json(&out_b.join("manifest.json"));
    assert_eq!(manifest_a["run_id"], run_a.as_str());
    manifest_a["run_id"] = Value::Null;
    manifest_b["run_id"] = Value::Null;
    assert_eq!(manifest_a, manifest_b);
    assert!(
        manifest_a["images"]["aci-python:bookworm"]["id"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        manifest_a["images"]["aci-rust:bookworm"]["id"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    // The solving replays submit exactly the gold patch; pathnorm's wrong fix does not.
    let preds = read_json(&out_a.join("preds.json"));
    for id in DETERMINISM_IDS {
        let gold = demo_record(id)["patch"].clone();
        let patch = &preds[id]["model_patch"];
        assert_eq!(preds[id]["model_name_or_path"], "replay");
        if id == "demo__pathnorm-1" {
            assert_ne!(*patch, gold);
            assert!(
                patch
                    .as_str()
                    .unwrap()
                    .contains("None => stack.push(\"..\"),")
            );
        } else {
            assert_eq!(*patch, gold, "{id}");
        }
    }
    // The rejected-then-fixed edit: the lint gate rolls back the edit that leaves a parenthesis
    // open, and the next edit of the same lines lands.
    let traj = read_json(&instance_file(&out_a, "demo__moneyfmt-1", "traj"));
    let edits: Vec<(&str, &str)> = traj["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["action"].as_str().unwrap().starts_with("edit 33:38"))
        .map(|step| {
            let observation = step["observation"].as_str().unwrap();
            (step["action"].as_str().unwrap(), observation)
        })
        .collect();
    assert_eq!(edits.len(), 2);
    assert!(edits[0].0.contains("loc.group_size\nend_of_edit"));
    assert!(
        edits[0]
            .1
            .starts_with("Your proposed edit has introduced new syntax error(s)."),
        "{}",
        edits[0].1
    );
    assert!(
        edits[0]
            .1
            .contains("E999 SyntaxError: '(' was never closed")
    );
    assert!(
        edits[1].1.ends_with("Edit the file again if necessary."),
        "{}",
        edits[1].1
    );
    assert!(containers_of(&run_a).is_empty() && containers_of(&run_b).is_empty());

    // Graded by aci eval: the five Python replays resolve their instance, pathnorm does not,
    // and --expect gates on it.
    let solved = &DETERMINISM_IDS[..5];
    let expect = dir.path().join("expect.json");
    std::fs::write(&expect, serde_json::to_string(solved).unwrap()).unwrap();
    let eval_out = dir.path().join("eval");
    let eval = |expect: &Path| -> Run {
        aci()
            .args(["eval", "--instances", instances.to_str().unwrap()])
            .args(["--predictions", out_a.join("preds.json").to_str().unwrap()])
            .args(["--output", eval_out.to_str().unwrap(), "--workers", "2"])
            .args([
                "--run-id",
                &run_id("det-eval"),
                "--expect",
                expect.to_str().unwrap(),
            ])
            .output()
            .unwrap()
            .into()
    };
    eval(&expect).expect_code(0);
    let report = read_json(&eval_out.join("report.json"));
    let mut resolved: Vec<&str> = solved.to_vec();
    resolved.sort_unstable();
    assert_eq!(report["resolved_ids"], serde_json::json!(resolved));
    assert_eq!(
        report["unresolved_ids"],
        serde_json::json!(["demo__pathnorm-1"])
    );
    std::fs::write(&expect, serde_json::to_string(&DETERMINISM_IDS).unwrap()).unwrap();
    let gated = eval(&expect);
    gated.expect_code(3);
    assert!(
        gated.stderr.contains("  demo__pathnorm-1: unresolved"),
        "{}",
        gated.stderr
    );
}

/// Waits until `path` holds a trajectory with at least `steps` steps.
fn wait_for_steps(path: &Path, steps: usize, deadline: Instant, log: &Path) {
    loop {
        let done = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|v| Some(v["trajectory"].as_array()?.len() >= steps))
            .unwrap_or(false);
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got {steps} step(s); stderr so far:\n{}",
            path.display(),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sends SIGINT (Ctrl-C) to `child`, waits until it exits, checks that it exited with 130 and
/// returns what it printed.
fn interrupt_and_expect_130(
    child: &mut std::process::Child,
    deadline: Instant,
    stdout_path: &Path,
    stderr_path: &Path,
) -> (String, String) {
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("aci did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = std::fs::read_to_string(stdout_path).unwrap();
    let stderr = std::fs::read_to_string(stderr_path).unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

#[test]
fn ctrl_c_autosubmits_the_running_instances_removes_their_containers_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1", "demo__csvreport-1", "demo__ttlcache-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let slow = write_replays(
        &dir.path().join("slow"),
        &ids,
        &[
            "echo '# work in progress' >> README.md",
            LONG_SLEEP,
            "submit",
        ],
    );
    let out = dir.path().join("out");
    let run = run_id("ctrl-c");
    let (stdout_path, stderr_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = aci()
        .args(["batch", "--instances", instances.to_str().unwrap()])
        .args(["--replay-dir", slow.to_str().unwrap()])
        .args([
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
            "--workers",
            "2",
            "--set",
            LONG_SLEEP_TIMEOUT,
        ])
        .stdout(Stdio::from(std::fs::File::create(&stdout_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).unwrap()))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    for id in &ids[..2] {
        wait_for_steps(&instance_file(&out, id, "traj"), 1, deadline, &stderr_path);
    }
    let (stdout, stderr) =
        interrupt_and_expect_130(&mut child, deadline, &stdout_path, &stderr_path);
    assert!(
        stderr.contains("interrupted: no new instances start (1 not started)"),
        "{stderr}"
    );
    assert_eq!(
        summary_rows(&stdout),
        rows(&[
            ("submitted (early_exit)", 2),
            ("not started (interrupted)", 1),
            ("total", 3)
        ])
    );
    let preds = read_json(&out.join("preds.json"));
    for id in &ids[..2] {
        assert_eq!(exit_status(&out, id), "submitted (early_exit)");
        let traj = read_json(&instance_file(&out, id, "traj"));
        assert!(
            traj["info"]["error"]
                .as_str()
                .unwrap()
                .starts_with("interrupted (Ctrl-C)")
        );
        let patch = std::fs::read_to_string(instance_file(&out, id, "patch")).unwrap();
        assert!(patch.contains("\n+# work in progress\n"), "{patch}");
        assert_eq!(preds[id]["model_patch"], patch.as_str());
    }
    assert!(!out.join(ids[2]).exists());
    assert!(
        containers_of(&run).is_empty(),
        "containers left: {:?}",
        containers_of(&run)
    );

    // Interrupted instances are not finished: the rerun runs all three.
    let fast = write_replays(&dir.path().join("fast"), &ids, &["submit"]);
    let rerun = docker_batch(&instances, &fast, &out, &run, &["--workers", "2"]);
    rerun.expect_code(0);
    assert_eq!(
        summary_rows(&rerun.stdout),
        rows(&[("submitted", 3), ("total", 3)])
    );
    assert!(containers_of(&run).is_empty());
}

#[test]
fn ctrl_c_in_aci_run_autosubmits_the_work_so_far_removes_the_container_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let id = "demo__inicfg-1";
    let instances = write_instances(dir.path(), &[id], &[]);
    let slow = write_replays(
        &dir.path().join("slow"),
        &[id],
        &[
            "echo '# work in progress' >> README.md",
            LONG_SLEEP,
            "submit",
        ],
    );
    let out = dir.path().join("out");
    let run = run_id("run-ctrl-c");
    let (stdout_path, stderr_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = aci()
        .args([
            "run",
            "--instances",
            instances.to_str().unwrap(),
            "--id",
            id,
        ])
        .args(["--model", "replay", "--replay"])
        .arg(slow.join(format!("{id}.yaml")))
        .args(["--output", out.to_str().unwrap(), "--run-id", &run])
        .args(["--set", LONG_SLEEP_TIMEOUT])
        .stdout(Stdio::from(std::fs::File::create(&stdout_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).unwrap()))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    wait_for_steps(&instance_file(&out, id, "traj"), 1, deadline, &stderr_path);
    let (stdout, stderr) =
        interrupt_and_expect_130(&mut child, deadline, &stdout_path, &stderr_path);
    let patch_path = instance_file(&out, id, "patch");
    assert_eq!(
        stdout,
        format!("{id}\tsubmitted (early_exit)\t{}\n", patch_path.display())
    );
    assert!(
        stderr.contains("interrupted: the turns so far are in"),
        "{stderr}"
    );
    assert_eq!(exit_status(&out, id), "submitted (early_exit)");
    let env_image = &read_json(&instance_file(&out, id, "traj"))["info"]["env_image"];
    assert!(
        env_image["tag"]
            .as_str()
            .unwrap()
            .starts_with("aci-env-python:")
    );
    // One saved turn, and the call for the turn that was running (`sleep 900`) is counted too.
    let traj = read_json(&instance_file(&out, id, "traj"));
    assert_eq!(traj["trajectory"].as_array().unwrap().len(), 1);
    assert_eq!(traj["info"]["model_stats"]["api_calls"], 2);
    let patch = std::fs::read_to_string(&patch_path).unwrap();
    assert!(patch.contains("\n+# work in progress\n"), "{patch}");
    assert_eq!(
        read_json(&out.join("preds.json"))[id]["model_patch"],
        patch.as_str()
    );
    assert!(
        containers_of(&run).is_empty(),
        "containers left: {:?}",
        containers_of(&run)
    );
}

/// The task containers of `run` whose processes include `command`, as `docker top` lists them.
fn containers_running(run: &str, command: &str) -> Vec<String> {
    containers_of(run)
        .into_iter()
        .filter(|id| {
            let top = std::process::Command::new("docker")
                .args(["top", id])
                .output()
                .unwrap();
            // The command is the last column.
            String::from_utf8_lossy(&top.stdout)
                .lines()
                .any(|line| line.ends_with(&format!(" {command}")))
        })
        .collect()
}

/// Sends `signal` (`INT`, `TERM`) to `child`.
fn send(child: &std::process::Child, signal: &str) {
    let kill = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
}

/// Waits until the file at `path` holds `text`.
fn wait_for_text(path: &Path, text: &str, deadline: Instant) {
    while !std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(text)
    {
        assert!(
            Instant::now() < deadline,
            "{} never said {text:?}:\n{}",
            path.display(),
            std::fs::read_to_string(path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_second_signal_quits_at_once_and_leaves_no_container_of_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1", "demo__csvreport-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let slow = write_replays(&dir.path().join("slow"), &ids, &[LONG_SLEEP, "submit"]);
    let out = dir.path().join("out");
    let run = run_id("twice");
    let (stdout_path, stderr_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = aci()
        .args(["batch", "--instances", instances.to_str().unwrap()])
        .args(["--replay-dir", slow.to_str().unwrap()])
        .args(["--output", out.to_str().unwrap(), "--run-id", &run])
        .args(["--workers", "2", "--set", LONG_SLEEP_TIMEOUT])
        .stdout(Stdio::from(std::fs::File::create(&stdout_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).unwrap()))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while containers_running(&run, LONG_SLEEP).len() < ids.len() {
        assert!(
            Instant::now() < deadline,
            "the instances never reached `{LONG_SLEEP}`:\n{}",
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    send(&child, "INT");
    wait_for_text(
        &stderr_path,
        "interrupted: no new instances start",
        deadline,
    );
    send(&child, "TERM");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("aci did not quit after the second signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted again: removing the containers and quitting"),
        "{stderr}"
    );
    assert_eq!(containers_of(&run), Vec::<String>::new(), "{stderr}");
}

#[test]
fn the_watchdog_stops_each_of_several_concurrent_instances_and_keeps_their_work() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__semverkit-1", "demo__moneyfmt-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let replays = write_replays(
        &dir.path().join("replays"),
        &ids,
        &[
            "echo '# work in progress' >> README.md",
            "sleep 60",
            "submit",
        ],
    );
    let out = dir.path().join("out");
    let run = run_id("watchdog");
    let extra = ["--workers", "2", "--set", "env.instance_timeout=4"];
    let result = docker_batch(&instances, &replays, &out, &run, &extra);
    result.expect_code(0);
    assert_eq!(
        summary_rows(&result.stdout),
        rows(&[("submitted (exit_total_execution_time)", 2), ("total", 2)])
    );
    for id in ids {
        let traj = read_json(&instance_file(&out, id, "traj"));
        assert_eq!(
            traj["trajectory"][0]["action"],
            "echo '# work in progress' >> README.md"
        );
        let patch = std::fs::read_to_string(instance_file(&out, id, "patch")).unwrap();
        assert!(patch.contains("\n+# work in progress\n"), "{patch}");
    }
    assert!(containers_of(&run).is_empty());
}

/// The id of a local image.
fn image_id(tag: &str) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let docker = aci::sandbox::docker::DockerRuntime::connect()
            .await
            .expect("this test needs the Docker daemon");
        docker.inspect_image(tag).await.unwrap().unwrap().id
    })
}

/// What [`batch_in_process`] saw.
struct InProcess {
    /// Each instance's result, in selection order.
    results: Vec<(String, aci::batch::InstanceResult)>,
    /// The runtime's count of containers starting at once.
    counts: aci::sandbox::starting::StartCounts,
    /// The runtime's cap on them.
    max_starting: usize,
    /// How many instances started from an environment provisioned ahead.
    taken_ahead: usize,
}

/// The demo batch of [`DETERMINISM_IDS`] in this process on Docker with `--workers 3` and
/// `sets`.
fn batch_in_process(dir: &Path, name: &str, sets: &[&str]) -> InProcess {
    use aci::batch::progress::{Progress, Style};
    use aci::batch::runner::{BatchOptions, Interrupt, Outcome, run_batch};
    std::fs::create_dir_all(dir.join(name)).unwrap();
    let instances = write_instances(&dir.join(name), &DETERMINISM_IDS, &[]);
    let instances = aci::instance::load_instances_file(&instances)
        .unwrap()
        .instances;
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    let config = aci::config::resolve(&[], &sets).unwrap();
    let run = run_id(name);
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let seen = tokio.block_on(async {
        let docker = aci::sandbox::docker::DockerRuntime::connect()
            .await
            .expect("this test needs the Docker daemon");
        let ctx = aci::batch::RunContext::new(
            config,
            Vec::new(),
            "replay".to_owned(),
            aci::engine::Engine::Docker(docker),
            run.clone(),
            dir.join(name).join("out"),
        )
        .unwrap();
        let ctx = std::sync::Arc::new(ctx);
        let options = BatchOptions {
            workers: 3,
            redo: true,
            replay_dir: Some(demo_dir().join("replays")),
        };
        let mut progress = Progress::new(Box::new(std::io::sink()), Style::Lines, 6);
        let report = run_batch(
            std::sync::Arc::clone(&ctx),
            instances,
            &options,
            Interrupt::never(),
            &mut progress,
        )
        .await;
        assert!(!report.interrupted, "{report:?}");
        let results: Vec<_> = report
            .outcomes
            .into_iter()
            .map(|item| match item.outcome {
                Outcome::Ran { result, .. } => (item.instance_id, result),
                other => panic!("{}: {other:?}", item.instance_id),
            })
            .collect();
        let docker = ctx.engine.docker().unwrap();
        InProcess {
            results,
            counts: docker.start_counts(),
            max_starting: docker.max_starting(),
            taken_ahead: ctx.docker_ahead.as_ref().unwrap().taken_ahead(),
        }
    });
    assert!(containers_of(&run).is_empty());
    seen
}

#[test]
fn three_workers_provision_ahead_and_with_max_starting_1_start_one_container_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let capped = batch_in_process(dir.path(), "cap-1", &["env.max_starting=1"]);
    assert_eq!(capped.max_starting, 1);
    // Six containers started, never two at once, and none is still starting.
    let counts = capped.counts;
    assert_eq!(counts.peak, 1, "{counts:?}");
    assert_eq!(counts.now, 0, "{counts:?}");
    // The first three provisioned their own; when the first started, the other three's
    // environments were provisioned ahead, and each took its own.
    assert_eq!(capped.taken_ahead, 3);
    let statuses: Vec<(&str, String)> = capped
        .results
        .iter()
        .map(|(id, result)| (id.as_str(), result.exit_status.to_string()))
        .collect();
    let expected: Vec<(&str, String)> = DETERMINISM_IDS
        .iter()
        .map(|id| (*id, "submitted".to_owned()))
        .collect();
    assert_eq!(statuses, expected);

    let uncapped = batch_in_process(dir.path(), "no-cap", &[]);
    assert_eq!(uncapped.max_starting, 0);
    let counts = uncapped.counts;
    assert!((1..=3).contains(&counts.peak), "{counts:?}");
    assert_eq!(counts.now, 0, "{counts:?}");
    assert_eq!(uncapped.taken_ahead, 3);
    assert_eq!(uncapped.results, capped.results);
}
