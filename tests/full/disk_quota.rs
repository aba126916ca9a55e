//! `env.disk_mb` on the real daemon: the container's writable layer on a filesystem of the
//! quota's size, which counts what its files really take (a file deleted while held open, many
//! small files), leaves sparse files and normal work alone, stops the task once over, and is
//! gone with the container. Never skipped: these need aci to run as root beside the daemon, and
//! fail when the quota would only be measured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;
use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aci::sandbox::docker::{DockerRuntime, DockerSandbox};
use aci::sandbox::{Sandbox, SandboxError};
use support::disk::{assert_released, disk_of, images_dir, mounted_at};
use support::{SHORT, docker, spec};

const QUOTA_MB: u64 = 64;

/// A sandbox with a 64 MiB quota, which must be enforced (a filesystem of its own).
async fn start(runtime: &DockerRuntime, name: &str) -> DockerSandbox {
    let mut spec = spec(name, None);
    spec.limits.disk_mb = QUOTA_MB;
    let sandbox = runtime.start(&spec).await.unwrap();
    assert!(
        sandbox.disk_usage().is_some(),
        "the disk quota is only measured here\nhint: run the tests as root on the Docker host"
    );
    sandbox
}

/// The error a task over its 64 MiB quota ends with.
fn over_quota(instance_id: &str) -> String {
    format!(
        "the container for {instance_id} wrote more than its disk quota (env.disk_mb = 64): aci \
         stopped its processes"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_deleted_while_held_open_cannot_outgrow_the_quota_and_stops_the_task() {
    let runtime = docker().await;
    let mut s = start(&runtime, "disk-held").await;
    // 192 MiB, three times the quota, into a file nobody can see any more; the command
    // would then sleep on.
    let error = s
        .run(
            "exec 3>/tmp/held; rm /tmp/held; head -c 192M /dev/zero >&3; sleep 60",
            Duration::from_secs(90),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, SandboxError::OverDiskQuota { .. }),
        "{error:?}"
    );
    assert_eq!(error.to_string(), over_quota("disk-held"));
    // Its processes were stopped (the holder too, so the blocks are free again) and its files
    // kept: the sandbox goes on, for the autosubmission.
    let out = s.run("echo alive", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"alive\n");
    assert!(s.disk_usage().unwrap() < 1024 * 1024);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_small_files_count_the_blocks_they_take() {
    let runtime = docker().await;
    let mut s = start(&runtime, "disk-small").await;
    // Two bytes each, 40 KB in all by their length; a 4 KiB block each, 78 MiB, on disk.
    let error = s
        .run(
            "mkdir /tmp/many && cd /tmp/many && for i in $(seq 20000); do echo x > f$i; done; \
             sleep 60",
            Duration::from_secs(300),
        )
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), over_quota("disk-small"));
    let out = s
        .run(
            "ls /tmp/many | wc -l; find /tmp/many -type f -size +0 | wc -l; \
             cat /tmp/many/* | wc -c",
            SHORT,
        )
        .await
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let numbers: Vec<u64> = text.lines().map(|line| line.parse().unwrap()).collect();
    let (files, written, bytes) = (numbers[0], numbers[1], numbers[2]);
    // Stopped once more than 64 MiB of blocks were taken (by the files, a 4 KiB block each,
    // and their directory's 400 KB), while the files' length was two bytes each. A file
    // created as the disk filled, or as the watchdog stopped the loop, can be empty.
    assert!(written > 16_000 && files < 20_000, "{text}");
    assert_eq!(bytes, 2 * written, "{text}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_file_of_ten_gib_with_one_byte_written_is_left_alone() {
    let runtime = docker().await;
    let mut s = start(&runtime, "disk-sparse").await;
    let out = s
        .run_merged(
            "truncate -s 10G /tmp/sparse && printf x | dd of=/tmp/sparse bs=1 seek=5368709120 \
             conv=notrunc status=none && stat -c %s /tmp/sparse && du -k /tmp/sparse",
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "10737418240\n4\t/tmp/sparse\n"
    );
    assert_eq!(out.exit_code, Some(0));
    // What the watchdog reads: the one block written, far under the quota.
    assert!(s.disk_usage().unwrap() < 1024 * 1024);
    // Several of its readings later, the task runs on.
    let out = s.run("sleep 3; echo still here", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"still here\n");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_work_under_the_quota_is_untouched() {
    let runtime = docker().await;
    let mut s = start(&runtime, "disk-normal").await;
    let out = s
        .run_merged(
            "cd /tmp && head -c 25M /dev/urandom > big && wc -c < big && \
             mkdir small && for i in $(seq 1000); do echo $i > small/$i; done && \
             cat small/1000 && cp big big.copy && cmp big big.copy && rm big.copy small/1 && \
             ls small | wc -l && sleep 3 && echo done",
            Duration::from_secs(120),
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "26214400\n1000\n999\ndone\n"
    );
    assert_eq!(out.exit_code, Some(0));
    // The container sees a filesystem of the quota's size, plus a few MiB.
    let out = s.run("stat -f -c '%b %S' /", SHORT).await.unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (blocks, size) = text.trim().split_once(' ').unwrap();
    let capacity: u64 = blocks.parse::<u64>().unwrap() * size.parse::<u64>().unwrap();
    let quota = QUOTA_MB * 1024 * 1024;
    assert!(
        capacity > quota + 1024 * 1024 && capacity < quota + 8 * 1024 * 1024,
        "{capacity}"
    );
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quota_filesystem_goes_with_its_container_at_shutdown_and_after_ctrl_c() {
    let runtime = docker().await;
    let s = start(&runtime, "disk-shutdown").await;
    let (image, layer_dir) = disk_of(s.container_id());
    assert!(image.is_file(), "{}", image.display());
    assert!(mounted_at(&layer_dir).is_some_and(|source| source.starts_with("/dev/loop")));
    s.shutdown().await.unwrap();
    assert_released(&image, &layer_dir);

    // A sandbox nobody shut down when Ctrl-C came: the run removes what it started (the
    // panic guard's sweep is tested in panic_guard.rs, alone in its process).
    let s = start(&runtime, "disk-interrupted").await;
    let id = s.container_id().to_owned();
    let (image, layer_dir) = disk_of(&id);
    std::mem::forget(s);
    assert_eq!(runtime.remove_all_started().await, 1);
    assert!(
        !runtime
            .list_aci_containers(None)
            .await
            .unwrap()
            .contains(&id)
    );
    assert_released(&image, &layer_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_deletes_image_files_of_processes_that_are_gone() {
    let runtime = docker().await;
    let images = images_dir();
    std::fs::create_dir_all(&images).unwrap();
    // Pid 1 runs, but it did not start at tick 1: the process that made these is gone.
    let leftover = images.join("1-1-0.img");
    std::fs::write(&leftover, b"").unwrap();
    let other = images.join("notes.txt");
    std::fs::write(&other, b"not aci's").unwrap();
    runtime.reap_orphans().await.unwrap();
    assert!(!leftover.exists());
    assert_eq!(std::fs::read(&other).unwrap(), b"not aci's");
    std::fs::remove_file(other).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_evaluation_container_has_the_quota_too() {
    let runtime = docker().await;
    let engine = aci::engine::Engine::Docker(runtime);
    let mut spec = spec("disk-eval", None);
    spec.limits.disk_mb = QUOTA_MB;
    let stages = aci::eval::script::Stages::new(&aci::eval::script::EvalScriptSpec {
        repo_dir: "/testbed",
        base_ref: "HEAD",
        test_patch: None,
        activate: None,
        eval_commands: &[],
        reinstall: None,
        test_cmd: "exec 3>/tmp/held; rm /tmp/held; head -c 192M /dev/zero >&3; sleep 60",
        test_directives: &[],
    });
    let canary = aci::eval::canary::CanaryPlan {
        names: aci::eval::canary::CanaryNames::from_words([1, 2, 3, 4]),
        files: Vec::new(),
        directive: None,
        no_fail_fast: false,
        name_filter: None,
        untrusted: None,
    };
    let job = aci::eval::container::ContainerJob {
        patch: "",
        base_files: &[],
        stages: &stages,
        test_patch: None,
        canary: &canary,
        tripwires: None,
        timeout: Duration::from_secs(90),
        built: None,
    };
    let error = aci::eval::container::run_in_container(&engine, &spec, &job)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), over_quota("disk-eval"));
}

/// The image files in the daemon's `aci-disk` directory, but those of pid 1, which the reaper
/// test makes.
fn image_files() -> BTreeSet<PathBuf> {
    std::fs::read_dir(images_dir())
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| {
                    let name = path.file_name().unwrap().to_string_lossy();
                    name.ends_with(".img") && !name.starts_with("1-") && !name.starts_with("probe-")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the process that made the image file `path` (`<pid>-<start>-<n>.img`) runs.
fn owner_alive(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_str().unwrap();
    let mut parts = name.trim_end_matches(".img").split('-');
    let (Some(pid), Some(start)) = (parts.next(), parts.next()) else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split_whitespace().nth(19) == Some(start)
    })
}

/// Through `aci batch`: the instance ends with `exit_disk_quota`, its last observation says
/// why, and what it changed before is autosubmitted.
#[test]
fn an_instance_over_its_quota_ends_with_the_disk_status_and_keeps_its_work() {
    use batch_support::*;
    let dir = tempfile::tempdir().unwrap();
    let id = "demo__semverkit-1";
    let instances = write_instances(dir.path(), &[id], &[]);
    let replays = write_replays(
        &dir.path().join("replays"),
        &[id],
        &[
            "echo '# work in progress' >> README.md",
            "exec 3>/tmp/held; rm /tmp/held; head -c 192M /dev/zero >&3; sleep 60",
            "submit",
        ],
    );
    let out = dir.path().join("out");
    let run = run_id("disk");
    let before = image_files();
    let result = docker_batch(
        &instances,
        &replays,
        &out,
        &run,
        &["--set", "env.disk_mb=64"],
    );
    result.expect_code(0);
    assert!(
        !result.stderr.contains("env.disk_mb is only measured"),
        "{}",
        result.stderr
    );
    assert_eq!(
        summary_rows(&result.stdout),
        rows(&[("submitted (exit_disk_quota)", 1), ("total", 1)])
    );
    let traj = read_json(&instance_file(&out, id, "traj"));
    assert_eq!(traj["info"]["exit_status"], "submitted (exit_disk_quota)");
    let steps = traj["trajectory"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[1]["observation"], over_quota(id).as_str());
    let patch = std::fs::read_to_string(instance_file(&out, id, "patch")).unwrap();
    assert!(patch.contains("\n+# work in progress\n"), "{patch}");
    assert!(containers_of(&run).is_empty());
    let left: Vec<PathBuf> = image_files()
        .difference(&before)
        .filter(|path| !owner_alive(path))
        .cloned()
        .collect();
    assert!(left.is_empty(), "image files left: {left:?}");
}
