//! What only a container gives: limits, isolation and clean-up. Real daemon, never skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use aci::sandbox::Sandbox;
use support::{SHORT, docker, small_repo, spec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_container_has_only_the_loopback_interface() {
    let runtime = docker().await;
    let repo = small_repo();
    let mut s = runtime
        .start(&spec("net", Some(repo.path())))
        .await
        .unwrap();
    let out = s.run("ls /sys/class/net", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"lo\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_container_is_hardened_and_labelled() {
    let runtime = docker().await;
    let repo = small_repo();
    let spec = spec("hardened", Some(repo.path()));
    let mut s = runtime.start(&spec).await.unwrap();
    let out = s
        .run(
            "cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null; \
             cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null; \
             grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; cat /proc/1/comm",
            SHORT,
        )
        .await
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "128");
    assert_eq!(lines[1], (256u64 * 1024 * 1024).to_string());
    // CHOWN, DAC_OVERRIDE, FOWNER and FSETID only: bits 0, 1, 3, 4.
    assert_eq!(lines[2], "CapEff:\t000000000000001b");
    assert_eq!(lines[3], "NoNewPrivs:\t1");
    assert_eq!(lines[4], "docker-init");
    let ids = runtime
        .list_aci_containers(Some(&spec.run_id))
        .await
        .unwrap();
    assert!(ids.contains(&s.container_id().to_owned()));
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_hog_is_killed_and_reported() {
    let runtime = docker().await;
    let mut s = runtime.start(&spec("memhog", None)).await.unwrap();
    // tail -c keeps what it is asked to keep: 1 GB against a 256 MiB limit.
    let out = s
        .run(
            "head -c 2000000000 /dev/zero | tail -c 1000000000 | wc -c",
            Duration::from_secs(120),
        )
        .await
        .unwrap();
    assert!(out.oom_killed, "{out:?}");
    let out = s.run("echo still here", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"still here\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_stopped_by_the_pids_limit() {
    let runtime = docker().await;
    let repo = small_repo();
    let mut s = runtime
        .start(&spec("forkbomb", Some(repo.path())))
        .await
        .unwrap();
    let id = s.container_id().to_owned();
    let out = s
        .run("bomb() { bomb | bomb; }; bomb", Duration::from_secs(3))
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    let processes = runtime.process_count(&id).await.unwrap();
    assert!(
        processes <= 128 + 2,
        "{processes} processes despite a limit of 128"
    );
    let out = s.run("echo survived; cat README.md", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"survived\n# demo\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_removes_the_container_and_dropping_does_too() {
    let runtime = docker().await;
    let spec = spec("cleanup", None);
    let s = runtime.start(&spec).await.unwrap();
    let id = s.container_id().to_owned();
    s.shutdown().await.unwrap();
    assert!(
        !runtime
            .list_aci_containers(None)
            .await
            .unwrap()
            .contains(&id)
    );
    let dropped = runtime.start(&spec).await.unwrap();
    let dropped_id = dropped.container_id().to_owned();
    drop(dropped);
    runtime.remove_all_started().await;
    assert!(
        !runtime
            .list_aci_containers(None)
            .await
            .unwrap()
            .contains(&dropped_id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_container_is_an_instance_failure_not_a_panic() {
    let runtime = docker().await;
    let mut s = runtime.start(&spec("dies", None)).await.unwrap();
    let id = s.container_id().to_owned();
    runtime.remove_container(&id).await.unwrap();
    let error = s.run("echo hi", SHORT).await.unwrap_err();
    assert!(
        matches!(error, aci::sandbox::SandboxError::ContainerDied { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("the container for dies died: "),
        "{error}"
    );
}

/// Lists the containers of `run_id` (any state).
async fn containers_of(runtime: &aci::sandbox::docker::DockerRuntime, run_id: &str) -> Vec<String> {
    runtime.list_aci_containers(Some(run_id)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_containers_of_a_killed_aci_are_reaped_and_build_step_containers_are_not() {
    let runtime = docker().await;
    let pid = std::process::id();
    // A task container whose aci process is killed outright, so none of its clean-up runs.
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("replay.yaml");
    std::fs::write(&replay, "- sleep 120\n- submit\n").unwrap();
    let run = format!("test-reap-{pid}");
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/demo/instances.jsonl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["run", "--id", "demo__inicfg-1", "--run-id", &run])
        .arg("--instances")
        .arg(&demo)
        .arg("--replay")
        .arg(&replay)
        .arg("--output")
        .arg(dir.path().join("out"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Its task container: one with the aci process's pid (the environment image may be built
    // first, in step containers that carry the run's label but no pid).
    let task_containers = || {
        let out = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter", &format!("label=aci.run_id={run}")])
            .args(["--filter", "label=aci.pid"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while task_containers().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no container started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // A container that carries a run's label but no aci process id, as the step containers
    // of an environment image build do.
    let build_run = format!("test-reap-build-{pid}");
    let created = std::process::Command::new("docker")
        .args(["create", "--label", &format!("aci.run_id={build_run}")])
        .args([support::test_image().as_str(), "true"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");

    runtime.reap_orphans().await.unwrap();
    assert_eq!(containers_of(&runtime, &run).await, Vec::<String>::new());
    let kept = containers_of(&runtime, &build_run).await;
    assert_eq!(kept.len(), 1, "the build step container was reaped");
    runtime.remove_container(&kept[0]).await.unwrap();
}

/// Where liveness cannot be read (no `/proc`), the reaper keeps the containers of other aci
/// processes, which may still run, and counts them for its warning; where it can, it removes
/// those of a process that is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_keeps_every_container_whose_process_it_cannot_see() {
    use aci::sandbox::liveness::{ProcessState, read_process};
    let runtime = docker().await;
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let run = format!("test-reap-unknown-{}", std::process::id());
    let created = std::process::Command::new("docker")
        .args(["create", "--label", &format!("aci.run_id={run}")])
        .args(["--label", &format!("aci.pid={dead}")])
        .args(["--label", "aci.pid_start=1"])
        .args([support::test_image().as_str(), "true"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let id = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    assert_eq!(read_process(dead), ProcessState::Absent);

    let blind = runtime
        .reap_orphans_with(&|_| ProcessState::Unknown)
        .await
        .unwrap();
    assert_eq!(containers_of(&runtime, &run).await, vec![id]);
    // Other tests' containers may be counted too.
    assert!(blind.unknown >= 1, "{blind:?}");

    let seeing = runtime.reap_orphans().await.unwrap();
    assert_eq!(containers_of(&runtime, &run).await, Vec::<String>::new());
    assert!(seeing.removed >= 1, "{seeing:?}");
}

/// A daemon shared by several machines (a remote one) holds containers of other machines' aci
/// processes: their pids mean nothing in this machine's `/proc`, so the reaper leaves them,
/// and removes only this machine's whose process is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_judges_only_this_machines_containers() {
    use aci::sandbox::liveness::{ProcessState, host_name, read_process};
    let runtime = docker().await;
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    assert_eq!(read_process(dead), ProcessState::Absent);
    let run = format!("test-reap-host-{}", std::process::id());
    let create = |host: &str| {
        let created = std::process::Command::new("docker")
            .args(["create", "--label", &format!("aci.run_id={run}")])
            .args(["--label", &format!("aci.pid={dead}")])
            .args(["--label", "aci.pid_start=1"])
            .args(["--label", &format!("aci.host={host}")])
            .args([support::test_image().as_str(), "true"])
            .output()
            .unwrap();
        assert!(created.status.success(), "{created:?}");
        String::from_utf8(created.stdout).unwrap().trim().to_owned()
    };
    let other = create("another-machine.example");
    let _ours = create(&host_name());
    runtime.reap_orphans().await.unwrap();
    assert_eq!(containers_of(&runtime, &run).await, vec![other.clone()]);
    runtime.remove_container(&other).await.unwrap();
}

/// Whether the daemon says the container is running (`None`: it is gone).
fn running(container_id: &str) -> Option<bool> {
    let out = std::process::Command::new("docker")
        .args(["inspect", "--format", "{{.State.Running}}", container_id])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim() == "true")
}

fn docker_cli(args: &[&str]) {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "docker {args:?}: {out:?}");
}

/// An operator's `docker stop` or `docker kill` ends the task; aci must not start the container
/// again and carry on, whether a command was running or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_stopped_from_outside_ends_the_task_and_stays_stopped() {
    let runtime = docker().await;
    for (name, stop) in [
        ("stopped", ["stop", "-t", "1"].as_slice()),
        ("killed", ["kill"].as_slice()),
    ] {
        // Mid-command.
        let mut s = runtime.start(&spec(name, None)).await.unwrap();
        let id = s.container_id().to_owned();
        let outside = {
            let id = id.clone();
            let stop: Vec<String> = stop.iter().map(|a| (*a).to_owned()).collect();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(500));
                let mut args: Vec<&str> = stop.iter().map(String::as_str).collect();
                args.push(&id);
                docker_cli(&args);
            })
        };
        let error = s.run("sleep 60", SHORT).await.unwrap_err();
        outside.join().unwrap();
        assert!(
            matches!(error, aci::sandbox::SandboxError::ContainerDied { .. })
                && error.to_string().contains("stopped from outside aci"),
            "{name}: {error}"
        );
        assert_eq!(
            running(&id),
            Some(false),
            "{name}: the container was started again"
        );
        s.shutdown().await.unwrap();
        assert_eq!(running(&id), None);

        // Between commands.
        let mut s = runtime.start(&spec(name, None)).await.unwrap();
        let id = s.container_id().to_owned();
        assert_eq!(s.run("echo up", SHORT).await.unwrap().stdout, b"up\n");
        let mut args = stop.to_vec();
        args.push(&id);
        docker_cli(&args);
        let error = s.run("echo again", SHORT).await.unwrap_err();
        assert!(
            error.to_string().contains("stopped from outside aci"),
            "{name}, idle: {error}"
        );
        assert_eq!(running(&id), Some(false));
        s.shutdown().await.unwrap();
    }
}

/// `env.disk_mb` where it is only measured (not as root beside the daemon; the quota
/// filesystem is tested in disk_quota.rs): no file may grow past the quota (the model is told,
/// as for any failing command), and once everything written adds up to more, the task ends and
/// says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_measured_disk_quota_stops_one_big_file_and_ends_a_task_that_writes_too_much() {
    let runtime = docker().await.measure_disk_only();
    let mut spec = spec("disk", None);
    spec.limits.disk_mb = 64;
    let mut s = runtime.start(&spec).await.unwrap();
    let big = s
        .run_merged(
            "head -c 100M /dev/zero > /tmp/big; echo \"exit $?\"; ls -l /tmp/big | cut -d' ' -f5",
            SHORT,
        )
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&big.stdout).into_owned();
    assert!(
        text.contains("File size limit exceeded")
            && text.contains(&format!("\n{}\n", 64 * 1024 * 1024)),
        "{text}"
    );
    s.run("rm /tmp/big", SHORT).await.unwrap();
    // Many files under the per-file limit: the watchdog's part. The command would sleep on.
    let error = s
        .run(
            "for i in 1 2 3 4 5 6 7 8 9 10; do head -c 10M /dev/urandom > /tmp/f$i; done; sleep 60",
            Duration::from_secs(90),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, aci::sandbox::SandboxError::OverDiskQuota { .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "the container for disk wrote more than its disk quota (env.disk_mb = 64): aci stopped \
         its processes"
    );
    assert!(s.disk_usage().is_none());
    s.shutdown().await.unwrap();
}

/// A one-shot exec (the interrupt's, beside the session) that prints more than the output
/// limit keeps the head and tail of each stream around the elision note, as a session does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_exec_that_prints_past_the_limit_is_capped_with_the_note() {
    use aci::sandbox::OutputLimit;
    let runtime = docker().await;
    let s = runtime.start(&spec("exec-cap", None)).await.unwrap();
    let script =
        "head -c 3000000 /dev/zero | tr '\\0' a; head -c 2000000 /dev/zero | tr '\\0' b >&2";
    let argv = ["sh", "-c", script].map(str::to_owned).to_vec();
    let out = runtime.exec_once(s.container_id(), argv).await.unwrap();
    let OutputLimit { head, tail } = OutputLimit::default();
    let capped = |byte: u8, total: usize| {
        let mut kept = vec![byte; head];
        let elided = total - head - tail;
        kept.extend_from_slice(format!("\n[... {elided} bytes of output elided ...]\n").as_bytes());
        kept.extend(std::iter::repeat_n(byte, tail));
        kept
    };
    assert_eq!(out.exit_code, Some(0));
    assert!(
        out.stdout == capped(b'a', 3_000_000),
        "{}",
        out.stdout.len()
    );
    assert!(
        out.stderr == capped(b'b', 2_000_000),
        "{}",
        out.stderr.len()
    );
    assert_eq!(
        out.elided_bytes,
        (3_000_000 + 2_000_000 - 2 * (head + tail)) as u64
    );
    s.shutdown().await.unwrap();
}
