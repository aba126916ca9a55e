//! The ACI over a real sandbox, built the way `aci run` builds it: a config resolved over the
//! built-in default, the registry of a [`RunContext`] (custom commands and `aci.commands`
//! included), a sandbox with the config's `env` limits, and [`Aci::new`] with the config's
//! `aci` and `env`. On Docker the repository is copied into a container of [`IMAGE`] rather
//! than baked into an environment image, so a new fixture costs no image build.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aci::aci::Aci;
use aci::batch::RunContext;
use aci::config::Config;
use aci::engine::Engine;
use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::local::LocalSandbox;
use aci::sandbox::{
    AnySandbox, OutputLimit, RepoSource, ResourceLimits, Sandbox, SandboxSpec, shell_quote,
};

use super::Kind;

/// The image the ACI tests run in.
pub const IMAGE: &str = "aci-python:bookworm";

/// Connects to Docker and checks that [`IMAGE`] is there, or fails the test loudly.
pub async fn docker() -> DockerRuntime {
    let runtime = DockerRuntime::connect().await.unwrap_or_else(|e| {
        panic!("this test needs the Docker daemon and it is not reachable: {e}\nhint: start dockerd, or run .ci/run")
    });
    assert!(
        runtime.inspect_image(IMAGE).await.unwrap().is_some(),
        "the image {IMAGE} is missing\nhint: run `cargo run -- images build --lang python`"
    );
    runtime
}

/// An [`Aci`] on a fresh sandbox, with what it was built from.
pub struct AciRun {
    /// The ACI.
    pub aci: Aci<AnySandbox>,
    /// The run context (its registry is the ACI's).
    pub ctx: RunContext,
    /// The repository's path inside the sandbox.
    pub repo_dir: String,
    /// The Docker runtime, for Docker runs.
    pub docker: Option<DockerRuntime>,
    _output: tempfile::TempDir,
}

impl AciRun {
    /// Shuts the sandbox down (removing the container).
    pub async fn shutdown(self) {
        self.aci.into_sandbox().shutdown().await.unwrap();
    }

    /// Replaces the sandbox's repository path in `text` with `{repo}`, so that local and
    /// Docker runs read alike.
    pub fn normalize(&self, text: &str) -> String {
        normalize_repo(text, &self.repo_dir)
    }
}

/// Replaces `repo_dir` (and, for a local sandbox behind a symlink, its canonical path) with
/// `{repo}`.
pub fn normalize_repo(text: &str, repo_dir: &str) -> String {
    let mut text = text.to_owned();
    if let Ok(canonical) = std::fs::canonicalize(repo_dir) {
        let canonical = canonical.display().to_string();
        if canonical != repo_dir {
            text = text.replace(&canonical, "{repo}");
        }
    }
    text.replace(repo_dir, "{repo}")
}

/// Resolves `config_files` over the built-in default, as `aci run --config …` does.
pub fn config(config_files: &[PathBuf], sets: &[&str]) -> Config {
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
    aci::config::resolve(config_files, &sets).unwrap()
}

/// Starts the ACI of `config` over a copy of `repo` on `kind`. Relative paths in the config
/// (custom commands) resolve against `config_dir`.
pub async fn start_aci(
    kind: Kind,
    id: &str,
    repo: &Path,
    config: Config,
    config_dir: &Path,
) -> AciRun {
    let (runtime, docker) = match kind {
        Kind::Docker => {
            let docker = docker().await;
            (Engine::Docker(docker.clone()), Some(docker))
        }
        Kind::Local => (Engine::Local, None),
    };
    let output = tempfile::tempdir().unwrap();
    let ctx = RunContext::new(
        config,
        vec![config_dir.to_owned()],
        "replay".to_owned(),
        runtime,
        format!("test-aci-{}", std::process::id()),
        output.path().to_owned(),
    )
    .unwrap();
    let env = &ctx.config.env;
    let spec = SandboxSpec {
        run_id: ctx.run_id.clone(),
        instance_id: id.to_owned(),
        image: IMAGE.to_owned(),
        repo: Some(RepoSource {
            path: repo.to_owned(),
            commit: None,
        }),
        repo_dir: env.repo_dir.clone(),
        limits: ResourceLimits::from_env(env),
        network: env.network,
        env: env.variables.clone().into_iter().collect(),
        output_limit: OutputLimit {
            head: env.output_head_bytes,
            tail: env.output_tail_bytes,
        },
        checkout: None,
        activate: env.activate.clone(),
    };
    let sandbox = match &docker {
        Some(docker) => AnySandbox::Docker(docker.start(&spec).await.unwrap()),
        None => AnySandbox::Local(LocalSandbox::start(&spec).await.unwrap()),
    };
    let repo_dir = sandbox.repo_dir().to_owned();
    let env = &ctx.config.env;
    let aci = Aci::new(
        sandbox,
        ctx.registry.clone(),
        ctx.config.aci.clone(),
        env.command_timeout.duration(),
        env.memory_mb.get(),
    );
    AciRun {
        aci,
        ctx,
        repo_dir,
        docker,
        _output: output,
    }
}

/// Every file of the sandbox's repository (`.git` aside), by relative path, with its bytes.
pub async fn repo_tree(aci: &mut Aci<AnySandbox>) -> BTreeMap<String, Vec<u8>> {
    let sandbox = aci.sandbox_mut();
    let repo = sandbox.repo_dir().to_owned();
    let list = format!(
        "( cd {} && find . -path ./.git -prune -o -type f -print0 )",
        shell_quote(&repo)
    );
    let out = sandbox.run(&list, Duration::from_secs(60)).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.text());
    let mut tree = BTreeMap::new();
    for path in out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let relative = String::from_utf8(path.strip_prefix(b"./").unwrap().to_vec()).unwrap();
        let bytes = sandbox
            .read_file(&format!("{repo}/{relative}"))
            .await
            .unwrap();
        tree.insert(relative, bytes);
    }
    tree
}

/// Every file under `dir` on the host, by relative path, with its bytes.
pub fn host_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut tree = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                tree.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    tree
}

/// Writes `tree` under `dir` (which must not exist yet).
pub fn write_tree(dir: &Path, tree: &BTreeMap<String, Vec<u8>>) {
    for (relative, bytes) in tree {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Copies a host directory tree into a new temporary directory.
pub fn copy_to_temp(dir: &Path) -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    write_tree(temp.path(), &host_tree(dir));
    temp
}

/// A short description of how two trees differ (empty when they are equal).
pub fn tree_diff(
    expected: &BTreeMap<String, Vec<u8>>,
    actual: &BTreeMap<String, Vec<u8>>,
) -> String {
    let mut lines = Vec::new();
    for (path, bytes) in expected {
        match actual.get(path) {
            None => lines.push(format!("  missing: {path}")),
            Some(got) if got != bytes => lines.push(format!(
                "  differs: {path}\n    expected {:?}\n    actual   {:?}",
                String::from_utf8_lossy(bytes),
                String::from_utf8_lossy(got)
            )),
            Some(_) => {}
        }
    }
    for path in actual.keys().filter(|p| !expected.contains_key(*p)) {
        lines.push(format!("  unexpected: {path}"));
    }
    lines.join("\n")
}
