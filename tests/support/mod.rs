//! Shared test harness: sandboxes on the real Docker daemon and on the host.
//!
//! Docker tests never skip: without a daemon or without the base image they fail with a line
//! that says what to do.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::local::LocalSandbox;
use aci::sandbox::{AnySandbox, OutputLimit, RepoSource, ResourceLimits, SandboxSpec};

/// The image the sandbox tests run in (the offline base image by default).
pub fn test_image() -> String {
    std::env::var("ACI_TEST_IMAGE").unwrap_or_else(|_| "aci-base:bookworm".to_owned())
}

/// Connects to Docker, or fails the test loudly.
pub async fn docker() -> DockerRuntime {
    let runtime = DockerRuntime::connect().await.unwrap_or_else(|e| {
        panic!("this test needs the Docker daemon and it is not reachable: {e}\nhint: start dockerd, or run .ci/run")
    });
    let image = test_image();
    assert!(
        runtime.inspect_image(&image).await.unwrap().is_some(),
        "the test image {image} is missing\nhint: run `cargo run -- images build` (or .ci/run)"
    );
    runtime
}

/// A spec with small limits over `repo`.
pub fn spec(instance_id: &str, repo: Option<&Path>) -> SandboxSpec {
    let run_id = format!("test-{}", std::process::id());
    SandboxSpec {
        repo: repo.map(RepoSource::directory),
        limits: ResourceLimits {
            memory_mb: 256,
            cpus: 1.0,
            pids: 128,
            disk_mb: 1024,
        },
        env: vec![("ACI_TEST".to_owned(), "yes".to_owned())],
        output_limit: OutputLimit {
            head: 64 * 1024,
            tail: 64 * 1024,
        },
        ..SandboxSpec::new(run_id, instance_id, test_image())
    }
}

/// Which sandbox a behavioural test runs on.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Docker,
    Local,
}

/// Starts a sandbox of `kind` over a small repository.
pub async fn start(kind: Kind, name: &str) -> (AnySandbox, tempfile::TempDir) {
    let repo = small_repo();
    let spec = spec(name, Some(repo.path()));
    let sandbox = match kind {
        Kind::Docker => AnySandbox::Docker(docker().await.start(&spec).await.unwrap()),
        Kind::Local => AnySandbox::Local(LocalSandbox::start(&spec).await.unwrap()),
    };
    (sandbox, repo)
}

/// A small repository: a package, a test and a README.
pub fn small_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("README.md", "# demo\n");
    write("pkg/__init__.py", "");
    write("pkg/calc.py", "def add(a, b):\n    return a + b\n");
    write(
        "tests/test_calc.py",
        "from pkg.calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    dir
}

pub mod aci_run;
pub mod agent;
pub mod disk;
pub mod mock_llm;

pub const SHORT: Duration = Duration::from_secs(30);

/// Runs the `aci` binary with `args`, its output echoed to stderr for the test's log.
pub fn aci(args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "$ aci {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The JSON file at `path`; a missing file fails the test naming it.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}
