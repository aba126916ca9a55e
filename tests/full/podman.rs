//! `aci batch` and `aci eval` through Podman's Docker-compatible API (`podman system service`,
//! started here as root on a storage root of the tests' own, with aci's base image copied in
//! from Docker once): the demo gives the report it gives on Docker, and no container is left.
//! On a storage root whose overlay is fuse-overlayfs, a file of the image renamed over and then
//! deleted comes back, and aci copies a repository the image holds into the container's layer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use batch_support::*;

/// The storage of the tests' Podman, kept between runs so that images are copied in once.
const STORAGE_ROOT: &str = "/var/lib/aci-test-podman/storage";
const RUN_ROOT: &str = "/run/aci-test-podman";
/// The storage of the tests' Podman whose overlay is fuse-overlayfs (`mount_program`).
const FUSE_STORAGE: [&str; 8] = [
    "--root",
    "/var/lib/aci-test-podman/fuse-storage",
    "--runroot",
    "/run/aci-test-podman-fuse",
    "--storage-driver",
    "overlay",
    "--storage-opt",
    "overlay.mount_program=/usr/bin/fuse-overlayfs",
];
/// The base image of the Python demo instances.
const BASE_IMAGE: &str = "aci-python:bookworm";
/// The base image of the Rust demo instances.
const RUST_IMAGE: &str = "aci-rust:bookworm";

/// A `podman system service` on a socket of its own, stopped when dropped.
pub struct Podman {
    child: Child,
    socket: PathBuf,
    /// Storage options after `--root` and `--runroot`.
    storage: Vec<String>,
}

impl Podman {
    /// Starts the service on the tests' storage root with its default storage driver.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts the service with `storage` options (a driver, a root) after the tests' root.
    pub fn start_with(storage: &[&str]) -> Self {
        let mut storage: Vec<String> = storage.iter().map(|s| (*s).to_owned()).collect();
        if !storage.iter().any(|s| s == "--root") {
            storage.splice(
                0..0,
                ["--root", STORAGE_ROOT, "--runroot", RUN_ROOT].map(str::to_owned),
            );
        }
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = PathBuf::from(format!("/tmp/aci-podman-{}-{n}.sock", std::process::id()));
        let _ = std::fs::remove_file(&socket);
        let child = Command::new("podman")
            .args(&storage)
            .args(["system", "service", "--time=0"])
            .arg(format!("unix://{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("podman is not installed (tests/host-deps.sh installs it)");
        let podman = Self {
            child,
            socket,
            storage,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !podman.answers() {
            assert!(Instant::now() < deadline, "podman's service did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        podman
    }

    fn answers(&self) -> bool {
        self.socket.exists() && self.podman(&["version"]).status.success()
    }

    /// `DOCKER_HOST` for the service.
    pub fn docker_host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// `podman <args>` on the service's storage.
    pub fn podman(&self, args: &[&str]) -> std::process::Output {
        Command::new("podman")
            .args(&self.storage)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Copies `image` from Docker when Podman's storage lacks it or has another image by
    /// that name.
    pub fn copy_from_docker(&self, image: &str) {
        static COPYING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = COPYING.lock().unwrap_or_else(|e| e.into_inner());
        let id = |output: std::process::Output| {
            let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            id.strip_prefix("sha256:").unwrap_or(&id).to_owned()
        };
        let docker = id(Command::new("docker")
            .args(["image", "inspect", "-f", "{{.Id}}", image])
            .output()
            .unwrap());
        assert!(
            !docker.is_empty(),
            "Docker has no {image}: run aci images build"
        );
        if id(self.podman(&["image", "inspect", "--format", "{{.Id}}", image])) == docker {
            return;
        }
        let mut save = Command::new("docker")
            .args(["save", image])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let load = Command::new("podman")
            .args(&self.storage)
            .arg("load")
            .stdin(save.stdout.take().unwrap())
            .output()
            .unwrap();
        assert!(save.wait().unwrap().success());
        assert!(
            load.status.success(),
            "podman load: {}",
            String::from_utf8_lossy(&load.stderr)
        );
    }

    /// The names of Podman's containers labelled with run id `run`.
    pub fn containers_of(&self, run: &str) -> Vec<String> {
        let filter = format!("label=aci.run_id={run}");
        let out = self.podman(&["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"]);
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Runs `aci <args>` with its Docker client pointed at `podman`.
fn aci_podman(podman: &Podman, args: &[&str]) -> Run {
    aci()
        .args(args)
        .env("DOCKER_HOST", podman.docker_host())
        .output()
        .unwrap()
        .into()
}

#[test]
fn the_demo_batch_and_eval_through_podman_give_the_docker_report() {
    let podman = Podman::start();
    podman.copy_from_docker(BASE_IMAGE);
    podman.copy_from_docker(RUST_IMAGE);
    let dir = tempfile::tempdir().unwrap();
    // The whole demo: five Python instances and three Rust ones.
    let records = demo_records();
    let ids: Vec<&str> = records
        .iter()
        .map(|record| record["instance_id"].as_str().unwrap())
        .collect();
    let instances = demo_dir().join("instances.jsonl");
    let instances = instances.to_str().unwrap();
    let replays = demo_dir().join("replays");
    let replays = replays.to_str().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let docker_runs = (run_id("pm-docker"), run_id("pm-docker-eval"));
    let podman_runs = (run_id("pm-podman"), run_id("pm-podman-eval"));
    let batch_args = |output: &str, run: &str| {
        [
            "batch",
            "--instances",
            instances,
            "--replay-dir",
            replays,
            "--workers",
            "2",
            "--output",
            output,
            "--run-id",
            run,
        ]
        .map(str::to_owned)
    };
    let eval_args = |preds: &str, output: &str, run: &str| {
        [
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
        .map(str::to_owned)
    };

    let (docker_run, docker_eval) = (out("docker-run"), out("docker-eval"));
    let docker_preds = format!("{docker_run}/preds.json");
    Run::from(
        aci()
            .args(batch_args(&docker_run, &docker_runs.0))
            .output()
            .unwrap(),
    )
    .expect_code(0);
    Run::from(
        aci()
            .args(eval_args(&docker_preds, &docker_eval, &docker_runs.1))
            .output()
            .unwrap(),
    )
    .expect_code(0);

    let (podman_run, podman_eval) = (out("podman-run"), out("podman-eval"));
    let podman_preds = format!("{podman_run}/preds.json");
    let batch = aci_podman(&podman, &strs(&batch_args(&podman_run, &podman_runs.0)));
    batch.expect_code(0);
    assert_eq!(
        summary_rows(&batch.stdout),
        rows(&[("submitted", 8), ("total", 8)])
    );
    // The evaluation through `--engine podman`, which finds the service by CONTAINER_HOST; a
    // DOCKER_HOST that leads nowhere shows Docker's variables are not read.
    Run::from(
        aci()
            .args(eval_args(&podman_preds, &podman_eval, &podman_runs.1))
            .args(["--engine", "podman"])
            .env("CONTAINER_HOST", podman.docker_host())
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .output()
            .unwrap(),
    )
    .expect_code(0);

    // The same patches, the same grading.
    assert_eq!(
        std::fs::read(&docker_preds).unwrap(),
        std::fs::read(&podman_preds).unwrap()
    );
    let report = |dir: &str| read_json(&Path::new(dir).join("report.json"));
    let podman_report = report(&podman_eval);
    assert_eq!(report(&docker_eval), podman_report);
    // 7 of 8, as on Docker.
    assert_eq!(
        podman_report["resolved_ids"],
        read_json(&demo_dir().join("expected_resolved.json"))
    );
    // Each instance's report is Docker's but for its evaluation key, which names the image
    // the tests ran in: Podman built its own from the same base and steps.
    for id in ids {
        let per_instance = |eval: &str| {
            let mut report = read_json(&Path::new(eval).join(id).join("report.json"));
            let key = report[id]
                .as_object_mut()
                .unwrap()
                .remove("eval_key")
                .unwrap();
            (report, key)
        };
        let ((docker, docker_key), (podman, podman_key)) =
            (per_instance(&docker_eval), per_instance(&podman_eval));
        assert_eq!(docker, podman, "{id}");
        assert_ne!(docker_key, podman_key, "{id}");
    }
    for run in [&podman_runs.0, &podman_runs.1] {
        assert_eq!(podman.containers_of(run), Vec::<String>::new(), "{run}");
    }
    for run in [
        &docker_runs.0,
        &docker_runs.1,
        &podman_runs.0,
        &podman_runs.1,
    ] {
        assert_eq!(containers_of(run), Vec::<String>::new(), "{run}");
    }
}

#[test]
fn engine_podman_refuses_a_socket_that_docker_answers() {
    let dir = tempfile::tempdir().unwrap();
    let instances = write_instances(dir.path(), &["demo__inicfg-1"], &[]);
    let output = dir.path().join("eval");
    let run = Run::from(
        aci()
            .args(["eval", "--predictions", "gold", "--instances"])
            .arg(&instances)
            .arg("--output")
            .arg(&output)
            .args(["--engine", "podman"])
            .env("CONTAINER_HOST", "unix:///var/run/docker.sock")
            .output()
            .unwrap(),
    );
    run.expect_code(1);
    assert_eq!(
        run.stderr,
        "error: docker: --engine podman: unix:///var/run/docker.sock (CONTAINER_HOST) is \
         answered by Docker, not Podman\n"
    );
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The build file of an image of `base` holding a git repository at /r whose one file, f.txt,
/// says `hello`.
fn repo_containerfile(base: &str) -> String {
    format!(
        "FROM {base}\n\
         RUN mkdir /r && cd /r && git init -q && git config user.email t@example.com && \
         git config user.name t && echo hello > f.txt && git add f.txt && git commit -qm one\n"
    )
}

/// An image of `base` holding a git repository at /r whose one file, f.txt, says `hello`.
fn build_repo_image(podman: &Podman, base: &str, tag: &str, run: &str) {
    let context = tempfile::tempdir().unwrap();
    std::fs::write(
        context.path().join("Containerfile"),
        repo_containerfile(base),
    )
    .unwrap();
    let label = format!("aci.run_id={run}");
    let built = podman.podman(&[
        "build",
        "-q",
        "--layers=false",
        "--label",
        &label,
        "-t",
        tag,
        context.path().to_str().unwrap(),
    ]);
    assert!(
        built.status.success(),
        "podman build: {}",
        String::from_utf8_lossy(&built.stderr)
    );
}

const EDIT_THEN_RESTORE: &str = "sed -i s/hello/bye/ f.txt && git checkout f.txt; echo \"exit $?\"; \
     cat f.txt; sed -i s/hello/bye/ f.txt; rm f.txt; ls";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_fuse_overlayfs_a_deleted_file_of_the_image_comes_back() {
    let podman = Podman::start_with(&FUSE_STORAGE);
    podman.copy_from_docker(support::test_image().as_str());
    let run = run_id("pm-fuse");
    let image = format!("localhost/aci-test-fuse-repo:{}", std::process::id());
    build_repo_image(&podman, &support::test_image(), &image, &run);

    // A plain container (with low ulimits: Podman as root would ask for more than a process
    // without CAP_SYS_RESOURCE can give): `git checkout` fails although the file is
    // back, and `rm` leaves it.
    let label = format!("aci.run_id={run}");
    let plain = podman.podman(&[
        "run",
        "--rm",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=1024:1024",
        "--label",
        &label,
        "-w",
        "/r",
        &image,
        "sh",
        "-c",
        EDIT_THEN_RESTORE,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout),
        "exit 255\nhello\nf.txt\n",
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert!(
        String::from_utf8_lossy(&plain.stderr)
            .contains("error: unable to create file f.txt: File exists"),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );

    assert_eq!(podman.containers_of(&run), Vec::<String>::new());
    let removed = podman.podman(&["rmi", &image]);
    assert!(removed.status.success());
}
