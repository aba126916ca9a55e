//! The commands of the binary, one file each, and what they share: the failure they return,
//! the signals they listen to, the configuration layers ([`settings`]), the Docker connection,
//! the instances file and the output directory.

#![expect(
    clippy::print_stdout,
    reason = "the commands print their results (data) on stdout; logs go to stderr"
)]

pub mod ablate;
pub mod batch;
mod clock;
mod context;
mod engine;
pub mod eval;
mod failure;
pub mod images;
pub mod inspect;
mod manifest;
pub mod run;
pub mod settings;
pub mod shell;
mod signals;
pub mod validate;

use std::path::Path;

use aci::instance::{self, Instance};
use aci::sandbox::docker::{DockerErrorKind, DockerRuntime};
use aci::text::{escape_controls, escape_controls_in_lines};

pub use clock::default_run_id;
pub use failure::{Failure, run_failure};
pub use signals::Signals;

/// Connects to the Docker daemon and removes the containers of aci runs that are gone.
pub async fn connect_docker() -> Result<DockerRuntime, Failure> {
    let runtime = DockerRuntime::connect().await.map_err(|e| {
        let unreachable = is_unreachable(&e);
        let failure = Failure::new(e.to_string());
        // A daemon that answered and is refused (rootless Podman on cgroups v1) says why.
        if !unreachable {
            return failure;
        }
        match ssh_target() {
            Some(target) => failure.hint(format!(
                "`ssh {}` must work without a prompt: a key of ~/.ssh/config or the agent, the \
                 host in known_hosts, docker on the remote PATH (docs/runtimes.md, \"A remote \
                 daemon\")",
                shell_words(&target.probe())
            )),
            None => failure.hint(
                "start the Docker daemon, or use --runtime local (no isolation); DOCKER_HOST or \
                 DOCKER_CONTEXT choose another daemon (docs/runtimes.md, \"A remote daemon\")",
            ),
        }
    })?;
    reap(&runtime).await;
    Ok(runtime)
}

/// The daemon of `--engine`: the Docker daemon ([`connect_docker`]), or with `podman` the
/// Podman service `CONTAINER_HOST` or this user's Podman socket names.
pub async fn connect_engine(engine: aci::engine::Kind) -> Result<DockerRuntime, Failure> {
    if engine != aci::engine::Kind::Podman {
        return connect_docker().await;
    }
    let runtime = DockerRuntime::connect_podman().await.map_err(|e| {
        let unreachable = is_unreachable(&e);
        let failure = Failure::new(e.to_string());
        if !unreachable {
            return failure;
        }
        failure.hint(
            "start Podman's API service (as root `systemctl start podman.socket`, rootless              `systemctl --user start podman.socket`, or `podman system service --time=0`), or              name its socket in CONTAINER_HOST (docs/runtimes.md, \"Podman\")",
        )
    })?;
    reap(&runtime).await;
    Ok(runtime)
}

/// Whether `error` says no daemon answered (rather than one that answered and refused).
fn is_unreachable(error: &aci::sandbox::SandboxError) -> bool {
    matches!(
        error,
        aci::sandbox::SandboxError::Docker(error) if error.kind == DockerErrorKind::Connect
    )
}

/// Removes the containers of aci runs that are gone, saying how many.
async fn reap(runtime: &DockerRuntime) {
    match runtime.reap_orphans().await {
        Ok(reaped) => {
            if reaped.removed > 0 {
                let n = reaped.removed;
                eprintln!("removed {n} container(s) left by aci runs that are gone");
            }
            if let Some(line) = reaped.unknown_line("container(s)") {
                eprintln!("{line}");
            }
        }
        Err(error) => eprintln!(
            "warning: could not look for leftover containers: {}",
            escape_controls(&error.to_string())
        ),
    }
}

/// The ssh target `DOCKER_HOST` or the context names, if it is one.
fn ssh_target() -> Option<aci::sandbox::endpoint::SshTarget> {
    let env = aci::sandbox::endpoint::DockerEnv::from_process();
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    match aci::sandbox::endpoint::resolve(&env, &read).ok()?.endpoint {
        aci::sandbox::endpoint::Endpoint::Ssh(target) => Some(target),
        _ => None,
    }
}

/// `args` joined by spaces, each with a space or quote in it single-quoted.
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c))
            {
                format!("'{}'", arg.replace('\'', "'\\''"))
            } else {
                arg.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Creates an output directory, or fails naming it.
pub fn create_output_dir(output: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(output).map_err(|e| {
        Failure::new(format!(
            "cannot create the output directory {}: {e}",
            output.display()
        ))
    })
}

/// The usable instances of the file; each bad record gets an error line.
pub fn load_instances(path: &Path) -> Result<Vec<Instance>, Failure> {
    let loaded = instance::load_instances_file(path)?;
    for error in &loaded.errors {
        let line = format!("{}: {error}", path.display());
        eprintln!("error: {}", escape_controls_in_lines(&line));
    }
    Ok(loaded.instances)
}

/// The instance `id` of `instances` (read from `file`), or a failure saying how many it holds.
pub fn find_instance<'a>(
    instances: &'a [Instance],
    id: &str,
    file: &Path,
) -> Result<&'a Instance, Failure> {
    instances
        .iter()
        .find(|i| i.instance_id == id)
        .ok_or_else(|| {
            Failure::new(format!("no instance `{id}` in {}", file.display()))
                .hint(format!("the file holds {} instance(s)", instances.len()))
        })
}

/// The instances of `--id` (exact, repeatable; all when none is given), in file order, or a
/// failure naming the ids the file lacks.
pub fn keep_ids(
    mut instances: Vec<Instance>,
    ids: &[String],
    file: &Path,
) -> Result<Vec<Instance>, Failure> {
    if ids.is_empty() {
        return Ok(instances);
    }
    let missing: Vec<&str> = ids
        .iter()
        .filter(|id| !instances.iter().any(|i| &&i.instance_id == id))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(Failure::new(format!(
            "no instance {} in {}",
            missing.join(", "),
            file.display()
        )));
    }
    instances.retain(|i| ids.contains(&i.instance_id));
    Ok(instances)
}

/// Where a command's results go: stdout, or stderr when they are a step of `aci ablate`
/// (whose stdout carries only its comparison table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    /// The standard output.
    Stdout,
    /// The standard error.
    Stderr,
}

impl Out {
    /// Writes `text` as it is.
    pub fn print(self, text: &str) {
        match self {
            Out::Stdout => print!("{text}"),
            Out::Stderr => eprint!("{text}"),
        }
    }
}

/// A path as printed: its control characters written out ([`escape_controls`]).
pub fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string())
}

/// `--plan`: each instance's environment plan as one JSON line on stdout; nothing starts.
pub fn print_plans(
    instances: &[aci::instance::Instance],
    env: &aci::config::EnvConfig,
    on_host: bool,
) -> Result<std::process::ExitCode, Failure> {
    for line in aci::provision::plan_lines(instances, env, on_host)? {
        println!("{line}");
    }
    Ok(std::process::ExitCode::SUCCESS)
}
