//! Harness overhead per turn: the whole agent loop (`run_episode`: replay model, history
//! processor, templates, parser, ACI rendering, lint gate, stop decider, trajectory saved
//! atomically after every turn) driving `open`/`goto`/`scroll_*`/`edit` on a 5,000-line Python
//! file, without the command's own run time.
//!
//! Two ways to leave the command out, reported side by side:
//! - `turn/instant_sandbox`: a test double of `trait Sandbox` that answers at once, so all
//!   that is measured is the harness;
//! - `turn/docker_*`: a real container, with every sandbox call timed; `docker_whole_turn` is
//!   the turn as a user waits for it, `docker_harness_only` the same turns minus the time spent
//!   inside the sandbox.
//!
//! Each reported iteration is one turn: an episode of [`TURNS`] turns, divided by [`TURNS`].
//! Needs the Docker daemon and the base image (`aci images build`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a panic is a failure"
)]

use std::time::{Duration, Instant};

use aci::aci::Aci;
use aci::aci::registry::Registry;
use aci::agent::demos;
use aci::agent::history::HistoryItem;
use aci::agent::prompt::Prompts;
use aci::agent::run::{Episode, run_episode};
use aci::agent::stop::{ActionFormat, StopPolicy};
use aci::config::{self, Config};
use aci::model::{ReplayInput, ReplayModel};
use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::{ExecOutput, Sandbox, SandboxError, SandboxSpec};
use aci::trajectory::{self, Trajectory};
use criterion::{Criterion, criterion_group, criterion_main};
use minijinja::context;

/// Turns per episode (the last one is `submit`).
const TURNS: u32 = 50;
const FILE: &str = "big.py";
const REPO: &str = "/testbed";

/// A 5,000-line Python module: 1,250 small functions.
fn big_file() -> Vec<u8> {
    (0..1250)
        .flat_map(|i| {
            format!("def function_{i}(value):\n    total = value * {i}\n    return total\n\n")
                .into_bytes()
        })
        .collect()
}

/// Cheap viewer commands and lint-gated edits, cycling over the file, then `submit`.
fn actions() -> Vec<String> {
    let mut actions = vec![format!("open {FILE} 2500")];
    let cycle = [
        "scroll_down".to_owned(),
        "scroll_down".to_owned(),
        "scroll_up".to_owned(),
        "goto 1000".to_owned(),
        "edit 1002:1002\n    total = value * 7\nend_of_edit".to_owned(),
        "goto 4000".to_owned(),
        "scroll_down".to_owned(),
        "goto 10".to_owned(),
    ];
    while actions.len() < (TURNS - 1) as usize {
        actions.push(cycle[actions.len() % cycle.len()].clone());
    }
    actions
}

/// A sandbox that answers at once: the file lives in memory, the probe says it is a file, `pwd`
/// says `/testbed`, and everything else prints nothing.
struct InstantSandbox {
    file: Vec<u8>,
}

fn output(stdout: &[u8]) -> ExecOutput {
    ExecOutput {
        stdout: stdout.to_vec(),
        exit_code: Some(0),
        ..ExecOutput::default()
    }
}

impl Sandbox for InstantSandbox {
    async fn run(&mut self, command: &str, _timeout: Duration) -> Result<ExecOutput, SandboxError> {
        Ok(if command.contains("printf 'file\\0'") {
            output(format!("file\0{REPO}/{FILE}\n").as_bytes())
        } else if command == "pwd" {
            output(format!("{REPO}\n").as_bytes())
        } else {
            output(b"")
        })
    }

    async fn run_merged(
        &mut self,
        _command: &str,
        _timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        Ok(output(b""))
    }

    async fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        Ok(if path.ends_with(FILE) {
            self.file.clone()
        } else {
            Vec::new()
        })
    }

    async fn write_file(&mut self, path: &str, content: &[u8]) -> Result<(), SandboxError> {
        if path.ends_with(FILE) {
            self.file = content.to_vec();
        }
        Ok(())
    }

    fn repo_dir(&self) -> &str {
        REPO
    }

    fn baseline(&self) -> &str {
        "HEAD"
    }

    async fn shutdown(self) -> Result<(), SandboxError> {
        Ok(())
    }
}

/// Another sandbox with the time spent inside it added up.
struct Timed<S> {
    inner: S,
    spent: Duration,
}

impl<S: Sandbox> Timed<S> {
    fn add(&mut self, started: Instant) {
        self.spent += started.elapsed();
    }
}

impl<S: Sandbox> Sandbox for Timed<S> {
    async fn run(&mut self, command: &str, timeout: Duration) -> Result<ExecOutput, SandboxError> {
        let started = Instant::now();
        let result = self.inner.run(command, timeout).await;
        self.add(started);
        result
    }

    async fn run_merged(
        &mut self,
        command: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        let started = Instant::now();
        let result = self.inner.run_merged(command, timeout).await;
        self.add(started);
        result
    }

    async fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let started = Instant::now();
        let result = self.inner.read_file(path).await;
        self.add(started);
        result
    }

    async fn write_file(&mut self, path: &str, content: &[u8]) -> Result<(), SandboxError> {
        let started = Instant::now();
        let result = self.inner.write_file(path, content).await;
        self.add(started);
        result
    }

    fn repo_dir(&self) -> &str {
        self.inner.repo_dir()
    }

    fn baseline(&self) -> &str {
        self.inner.baseline()
    }

    async fn shutdown(self) -> Result<(), SandboxError> {
        self.inner.shutdown().await
    }
}

/// What every episode shares, built as `batch::RunContext` builds it: the built-in default
/// config (with its demonstration), its prompts, commands and stop policy.
struct Setup {
    config: Config,
    prompts: Prompts,
    registry: Registry,
    policy: StopPolicy,
    demonstrations: Vec<HistoryItem>,
    traj_dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let config = config::resolve(&[], &[]).unwrap();
        let prompts = Prompts::new(&config.agent.templates).unwrap();
        let registry = Registry::builtin()
            .unwrap()
            .enabled(&config.aci.commands)
            .unwrap();
        let mut limits = config.agent.limits.clone();
        limits.max_cost = config.model.per_instance_cost_limit;
        let policy = StopPolicy {
            limits,
            nudges: config.agent.nudges.clone(),
            action_format: ActionFormat::ThoughtAction,
        };
        let demonstrations = config
            .agent
            .demonstrations
            .iter()
            .map(|path| demos::render(&demos::load(path, &[]).unwrap(), &prompts).unwrap())
            .collect();
        Setup {
            config,
            prompts,
            registry,
            policy,
            demonstrations,
            traj_dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs one episode of [`TURNS`] turns on `sandbox`, saving the trajectory atomically after
    /// every turn as `aci run` does, and gives the sandbox back.
    async fn episode<S: Sandbox>(&self, sandbox: S) -> S {
        let mut aci = Aci::new(
            sandbox,
            self.registry.clone(),
            self.config.aci.clone(),
            Duration::from_secs(25),
            4096,
        );
        let mut model = ReplayModel::new(ReplayInput::from_actions(actions()), &self.config.model);
        let path = self.traj_dir.path().join("bench.traj");
        // As `batch::run_instance` saves: atomically after every turn, synced at the end.
        let mut save = |trajectory: &Trajectory| {
            if trajectory.info.exit_status.is_some() {
                trajectory::write_atomic(&path, trajectory).unwrap();
            } else {
                trajectory::write_atomic_unsynced(&path, trajectory).unwrap();
            }
        };
        let variables = context! {
            problem_statement => "function_1000 multiplies by the wrong factor.",
            instance_id => "bench__big-1",
            repo => "bench/big",
            extra_fields => context! {},
            command_docs => self.registry.render_docs(&[("WINDOW".to_owned(), "100".to_owned())]),
            WINDOW => 100,
            OVERLAP => 2,
        };
        let mut episode = Episode {
            config: &self.config.agent,
            prompts: &self.prompts,
            policy: &self.policy,
            variables,
            demonstrations: self.demonstrations.clone(),
            info_extra: serde_json::Map::new(),
            save: &mut save,
        };
        let outcome = run_episode(&mut episode, &mut model, &mut aci)
            .await
            .unwrap();
        assert_eq!(outcome.trajectory.trajectory.len(), TURNS as usize);
        aci.into_sandbox()
    }
}

fn spec(repo: &std::path::Path) -> SandboxSpec {
    let image = std::env::var("ACI_TEST_IMAGE").unwrap_or_else(|_| "aci-base:bookworm".to_owned());
    let run_id = format!("bench-agent-{}", std::process::id());
    SandboxSpec {
        repo: Some(aci::sandbox::RepoSource::directory(repo)),
        repo_dir: REPO.to_owned(),
        ..SandboxSpec::new(run_id, "bench-agent", image)
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let setup = Setup::new();
    let mut group = c.benchmark_group("turn");
    group.sample_size(20);

    let mut instant = Some(InstantSandbox { file: big_file() });
    group.bench_function("instant_sandbox", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    let sandbox = instant.take().unwrap();
                    instant = Some(setup.episode(sandbox).await);
                }
                started.elapsed() / TURNS
            })
        })
    });

    let runtime = rt
        .block_on(DockerRuntime::connect())
        .expect("the benchmark needs the Docker daemon");
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join(FILE), big_file()).unwrap();
    let sandbox = rt.block_on(runtime.start(&spec(repo.path()))).unwrap();
    let mut docker = Some(Timed {
        inner: sandbox,
        spent: Duration::ZERO,
    });
    group.sample_size(10);
    for harness_only in [false, true] {
        let name = if harness_only {
            "docker_harness_only"
        } else {
            "docker_whole_turn"
        };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut sandbox = docker.take().unwrap();
                    sandbox.spent = Duration::ZERO;
                    let started = Instant::now();
                    for _ in 0..iters {
                        sandbox = setup.episode(sandbox).await;
                    }
                    let total = started.elapsed();
                    let measured = if harness_only {
                        total.saturating_sub(sandbox.spent)
                    } else {
                        total
                    };
                    docker = Some(sandbox);
                    measured / TURNS
                })
            })
        });
    }
    group.finish();
    rt.block_on(docker.take().unwrap().inner.shutdown())
        .unwrap();
}

criterion_group!(agent_benches, benches);
criterion_main!(agent_benches);
