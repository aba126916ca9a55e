//! `aci batch` and `aci eval` with `--engine k8s` against the Kubernetes API stand-in
//! (`tests/support/k8s`, each pod a real Docker container): the demo gives the same report as
//! on Docker, pods are created ahead of the running tasks, Ctrl-C deletes every pod, and an
//! eviction or an image that never pulls ends its instance with the reason. Every test checks
//! that no pod, policy or container is left.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;
use crate::standin;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use batch_support::*;
use serde_json::Value;
use standin::{Options, StandIn};

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `aci <args>` against the stand-in's cluster to its end.
fn aci_k8s(standin: &StandIn, args: &[&str]) -> Run {
    aci()
        .args(args)
        .args(["--engine", "k8s"])
        .env("KUBECONFIG", standin.kubeconfig())
        .output()
        .unwrap()
        .into()
}

/// Nothing of the stand-in is left, and no container of these runs.
fn assert_nothing_left(standin: &StandIn, runs: &[&str]) {
    assert_eq!(
        standin.pod_names(),
        Vec::<(String, String)>::new(),
        "pods left"
    );
    assert!(
        standin.policies().is_empty(),
        "policies left: {:?}",
        standin.policies()
    );
    assert_eq!(
        standin.containers_settled(),
        Vec::<String>::new(),
        "stand-in containers left"
    );
    for run in runs {
        assert_eq!(
            containers_of(run),
            Vec::<String>::new(),
            "containers of {run} left"
        );
    }
}

/// The summary report without what differs between two runs of the same inputs: nothing.
fn report(dir: &Path) -> Value {
    read_json(&dir.join("report.json"))
}

#[test]
fn the_demo_batch_and_eval_on_k8s_give_the_docker_report_and_leave_nothing() {
    let rt = tokio();
    let standin = rt.block_on(StandIn::start(Options::default()));
    let dir = tempfile::tempdir().unwrap();
    let instances = demo_dir().join("instances.jsonl");
    let replays = demo_dir().join("replays");
    let (instances, replays) = (instances.to_str().unwrap(), replays.to_str().unwrap());
    let docker_runs = (run_id("cmp-docker"), run_id("cmp-docker-eval"));
    let k8s_runs = (run_id("cmp-k8s"), run_id("cmp-k8s-eval"));
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();

    let common = [
        "--instances",
        instances,
        "--replay-dir",
        replays,
        "--workers",
        "2",
    ];
    batch(
        &[
            &common[..],
            &["--output", &out("docker-run"), "--run-id", &docker_runs.0],
        ]
        .concat(),
    )
    .expect_code(0);
    let eval = |preds: &str, output: &str, run: &str| {
        vec![
            "eval",
            "--instances",
            instances,
            "--predictions",
            preds,
            "--workers",
            "2",
            "--output",
            output,
            "--run-id",
            run,
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<String>>()
    };
    let docker_preds = format!("{}/preds.json", out("docker-run"));
    let args = eval(&docker_preds, &out("docker-eval"), &docker_runs.1);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Run::from(aci().args(&args).output().unwrap()).expect_code(0);

    let mut args = vec!["batch"];
    args.extend_from_slice(&common);
    let k8s_out = out("k8s-run");
    args.extend(["--output", &k8s_out, "--run-id", &k8s_runs.0]);
    let run = aci_k8s(&standin, &args);
    run.expect_code(0);
    assert!(
        run.stderr.contains("engine: k8s, namespace aci-test"),
        "{}",
        run.stderr
    );
    let k8s_preds = format!("{k8s_out}/preds.json");
    let args = eval(&k8s_preds, &out("k8s-eval"), &k8s_runs.1);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    aci_k8s(&standin, &args).expect_code(0);

    // The same patches, the same grading.
    assert_eq!(
        std::fs::read(&docker_preds).unwrap(),
        std::fs::read(&k8s_preds).unwrap()
    );
    let k8s_report = report(Path::new(&out("k8s-eval")));
    assert_eq!(report(Path::new(&out("docker-eval"))), k8s_report);
    let expected = read_json(&demo_dir().join("expected_resolved.json"));
    assert_eq!(k8s_report["resolved_ids"], expected);
    assert_eq!(k8s_report["resolved_instances"], 7);
    assert_eq!(k8s_report["total_instances"], 8);
    let mut ids: Vec<String> = demo_records()
        .iter()
        .map(|r| r["instance_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    for id in &ids {
        let per_instance =
            |eval: &str| read_json(&Path::new(&out(eval)).join(id).join("report.json"));
        assert_eq!(
            per_instance("docker-eval"),
            per_instance("k8s-eval"),
            "{id}"
        );
        let image = |run: &str| {
            read_json(&instance_file(Path::new(&out(run)), id, "traj"))["info"]["env_image"].clone()
        };
        assert_eq!(image("docker-run"), image("k8s-run"), "{id}");
    }
    let manifest = read_json(&Path::new(&k8s_out).join("manifest.json"));
    assert_eq!(manifest["runtime"], "k8s");

    // One pod per instance for the batch and for the evaluation, and one more for the tripwire
    // run of each instance the evaluation resolved, each without a network.
    let history = standin.history();
    let resolved: Vec<String> = serde_json::from_value(
        read_json(&Path::new(&out("k8s-eval")).join("report.json"))["resolved_ids"].clone(),
    )
    .unwrap();
    assert_eq!(resolved.len(), 7);
    for (run, again) in [(&k8s_runs.0, &[][..]), (&k8s_runs.1, &resolved[..])] {
        let mut ran: Vec<&str> = history
            .iter()
            .filter(|h| h.kind == "running" && &h.run == run)
            .map(|h| h.instance.as_str())
            .collect();
        ran.sort_unstable();
        let mut expected: Vec<&str> = ids.iter().chain(again).map(String::as_str).collect();
        expected.sort_unstable();
        assert_eq!(ran, expected, "{run}");
        assert!(
            history
                .iter()
                .filter(|h| h.kind == "running")
                .all(|h| h.network == "none")
        );
    }
    // Pods are created ahead: the third instance's pod exists before the first one's is gone.
    let batch: Vec<_> = history.iter().filter(|h| h.run == k8s_runs.0).collect();
    let first = batch.iter().find(|h| h.kind == "created").unwrap();
    let first_deleted = batch
        .iter()
        .position(|h| h.kind == "deleted" && h.pod == first.pod)
        .unwrap();
    let created_before = batch[..first_deleted]
        .iter()
        .filter(|h| h.kind == "created")
        .count();
    assert!(created_before >= 3, "{batch:#?}");
    assert_nothing_left(
        &standin,
        &[&docker_runs.0, &docker_runs.1, &k8s_runs.0, &k8s_runs.1],
    );
}

#[test]
fn ctrl_c_on_k8s_autosubmits_and_deletes_every_pod_including_those_created_ahead() {
    let rt = tokio();
    let standin = rt.block_on(StandIn::start(Options::default()));
    let dir = tempfile::tempdir().unwrap();
    let ids = [
        "demo__inicfg-1",
        "demo__csvreport-1",
        "demo__ttlcache-1",
        "demo__pathnorm-1",
    ];
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
    let run = run_id("k8s-ctrl-c");
    let (stdout_path, stderr_path) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = aci()
        .args(["batch", "--instances", instances.to_str().unwrap()])
        .args(["--replay-dir", slow.to_str().unwrap(), "--engine", "k8s"])
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
        .env("KUBECONFIG", standin.kubeconfig())
        .stdout(Stdio::from(std::fs::File::create(&stdout_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).unwrap()))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    for id in &ids[..2] {
        wait_for_steps(&instance_file(&out, id, "traj"), 1, deadline, &stderr_path);
    }
    // The two instances after them have their pods created ahead.
    while standin
        .history()
        .iter()
        .filter(|h| h.kind == "created")
        .count()
        < 4
    {
        assert!(
            Instant::now() < deadline,
            "no pods created ahead: {:#?}",
            standin.history()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    let stdout = std::fs::read_to_string(&stdout_path).unwrap();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(
        summary_rows(&stdout),
        rows(&[
            ("submitted (early_exit)", 2),
            ("not started (interrupted)", 2),
            ("total", 4)
        ])
    );
    for id in &ids[..2] {
        let patch = std::fs::read_to_string(instance_file(&out, id, "patch")).unwrap();
        assert!(patch.contains("\n+# work in progress\n"), "{patch}");
    }
    assert_nothing_left(&standin, &[&run]);
}

/// Waits until the trajectory at `path` has `steps` steps.
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

#[test]
fn an_eviction_or_an_image_that_never_pulls_ends_that_instance_with_the_reason() {
    let rt = tokio();
    let standin = rt.block_on(StandIn::start(Options::default()));
    standin.evict_on("ACI-EVICT-NOW");
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1", "demo__ringbuf-1", "demo__csvreport-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let replays = dir.path().join("replays");
    write_replays(&replays, &ids[..1], &["echo ACI-EVICT-NOW", "submit"]);
    write_replays(
        &replays,
        &ids[1..],
        &["echo '# fine' >> README.md", "submit"],
    );
    // Every Rust image (ringbuf's) never pulls.
    standin.never_pull("aci-env-rust");
    let out = dir.path().join("out");
    let run = run_id("k8s-faults");
    let result = aci_k8s(
        &standin,
        &[
            "batch",
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            replays.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
            "--set",
            "env.k8s.pull_timeout=2",
        ],
    );
    result.expect_code(0);
    assert_eq!(
        summary_rows(&result.stdout),
        rows(&[
            ("exit_environment_error", 2),
            ("submitted", 1),
            ("total", 3)
        ])
    );
    let error = |id: &str| {
        read_json(&instance_file(&out, id, "traj"))["info"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // Evicted mid-task: the turn that was running says why, and the instance ends.
    assert_eq!(exit_status(&out, ids[0]), "exit_environment_error");
    let traj = read_json(&instance_file(&out, ids[0], "traj"));
    let steps = traj["trajectory"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["action"], "echo ACI-EVICT-NOW");
    assert_eq!(
        steps[0]["observation"],
        "the container for demo__inicfg-1 died: the pod was evicted: The node was low on \
         resource: memory. Threshold quantity: 100Mi, available: 12Mi."
    );
    assert_eq!(exit_status(&out, ids[1]), "exit_environment_error");
    assert!(
        error(ids[1]).starts_with("cannot start the sandbox: kubernetes: pod aci-demo-ringbuf-1-")
            && error(ids[1]).contains(
                "the pod's image was not pulled and started in 2 s (env.k8s.pull_timeout)"
            ),
        "{}",
        error(ids[1])
    );
    assert_eq!(exit_status(&out, ids[2]), "submitted");
    assert_nothing_left(&standin, &[&run]);
}

#[test]
fn aci_run_on_k8s_submits_and_a_missing_cluster_or_local_runtime_is_one_clear_error() {
    let rt = tokio();
    let standin = rt.block_on(StandIn::start(Options::default()));
    let dir = tempfile::tempdir().unwrap();
    let id = "demo__semverkit-1";
    let instances = write_instances(dir.path(), &[id], &[]);
    let replay = demo_dir().join("replays").join(format!("{id}.yaml"));
    let out = dir.path().join("out");
    let run = run_id("k8s-run");
    let args = [
        "run",
        "--instances",
        instances.to_str().unwrap(),
        "--replay",
        replay.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--run-id",
        &run,
    ];
    let result = aci_k8s(&standin, &args);
    result.expect_code(0);
    assert_eq!(
        result.stdout,
        format!(
            "{id}\tsubmitted\t{}\n",
            instance_file(&out, id, "patch").display()
        )
    );
    assert_nothing_left(&standin, &[&run]);

    let missing = aci()
        .args(args)
        .args(["--engine", "k8s"])
        .env("KUBECONFIG", dir.path().join("nope"))
        .output()
        .unwrap();
    let missing = Run::from(missing);
    missing.expect_code(1);
    assert!(
        missing.stderr.contains(&format!(
            "error: kubernetes: kubeconfig: none of the files KUBECONFIG names exists: {}",
            dir.path().join("nope").display()
        )),
        "{}",
        missing.stderr
    );
    let local = aci_k8s(&standin, &[&args[..], &["--runtime", "local"]].concat());
    local.expect_code(1);
    assert!(
        local
            .stderr
            .contains("error: --engine k8s cannot run with --runtime local"),
        "{}",
        local.stderr
    );
}

#[test]
fn aci_validate_on_k8s_grades_gold_and_empty_patches_in_pods_and_leaves_nothing() {
    let rt = tokio();
    let standin = rt.block_on(StandIn::start(Options::default()));
    let dir = tempfile::tempdir().unwrap();
    let instances = demo_dir().join("instances.jsonl");
    let output = dir.path().join("validation");
    let run = run_id("validate-k8s");
    let args = [
        "validate",
        "--instances",
        instances.to_str().unwrap(),
        "--id",
        "demo__inicfg-1",
        "--id",
        "demo__moneyfmt-1",
        "--workers",
        "2",
        "--output",
        output.to_str().unwrap(),
        "--run-id",
        &run,
    ];
    aci_k8s(&standin, &args).expect_code(0);
    let verdicts = read_json(&output.join("validation.json"));
    for id in ["demo__inicfg-1", "demo__moneyfmt-1"] {
        assert_eq!(verdicts[id]["gold_resolved"], true, "{verdicts}");
        assert_eq!(verdicts[id]["empty_fails"], true, "{verdicts}");
    }
    // Each evaluation of each instance ran in a pod of its own, and so did the tripwire run of
    // each gold patch (which resolved).
    let ran = standin
        .history()
        .iter()
        .filter(|h| h.kind == "running" && h.run.starts_with(&run))
        .count();
    assert_eq!(ran, 6);
    assert_nothing_left(&standin, &[&format!("{run}-gold"), &format!("{run}-empty")]);
}

/// Every file under `dir`, recursively, with its bytes.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files
}

/// An API server that refuses pod creation quoting the request's bearer token back: the
/// instance ends with the refusal, and the token is in none of stderr, stdout, the `.traj`,
/// the statuses, the predictions or `aci eval`'s reports; `<redacted>` stands in its place.
#[test]
fn a_bearer_token_an_api_server_quotes_back_is_in_no_output_of_batch_or_eval() {
    let rt = tokio();
    let standin = rt.block_on(StandIn::start(Options::default()));
    standin.echo_credential_on("POST", "/pods");
    let token = standin.token().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let replays = dir.path().join("replays");
    write_replays(&replays, &ids, &["submit"]);
    let out = dir.path().join("out");
    let runs = (run_id("k8s-echo"), run_id("k8s-echo-eval"));
    let batch = aci_k8s(
        &standin,
        &[
            "batch",
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            replays.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &runs.0,
        ],
    );
    batch.expect_code(0);
    assert_eq!(exit_status(&out, ids[0]), "exit_environment_error");
    let error = read_json(&instance_file(&out, ids[0], "traj"))["info"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains("sent Authorization: Bearer <redacted> (token <redacted>)"),
        "{error}"
    );
    let eval_out = dir.path().join("eval");
    let eval = aci_k8s(
        &standin,
        &[
            "eval",
            "--instances",
            instances.to_str().unwrap(),
            "--predictions",
            "gold",
            "--output",
            eval_out.to_str().unwrap(),
            "--run-id",
            &runs.1,
        ],
    );
    eval.expect_code(0);
    let report = read_json(&eval_out.join("report.json"));
    assert_eq!(report["error_ids"], serde_json::json!(ids));
    for run in [&batch, &eval] {
        for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(!text.contains(&token), "the token is in {name}: {text}");
        }
    }
    let files = [files_under(&out), files_under(&eval_out)].concat();
    assert!(files.len() >= 5, "{files:?}");
    for (path, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&token), "the token is in {}", path.display());
    }
    assert!(eval.stderr.contains("<redacted>"), "{}", eval.stderr);
    assert_nothing_left(&standin, &[&runs.0, &runs.1]);
}
