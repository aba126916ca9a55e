//! The Docker side of aci, and the only module that imports bollard.
//!
//! [`DockerRuntime`] is the daemon connection (this file): it starts hardened task containers
//! ([`DockerSandbox`], in `containers.rs` and `transport.rs`), builds, pulls, pushes and finds
//! images and asks registries for digests for [`crate::image`] (`images.rs`), and reaps
//! containers that runs which died left behind (`reap.rs`). Every container carries the labels
//! `aci.run_id`, `aci.instance_id`, and the pid and start time of the `aci` process that made
//! it, so leftovers can be told apart from containers of runs that are still alive. Bollard's
//! errors become a [`DockerError`] of a kind callers match (`error.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;

use super::SandboxError;
use super::endpoint::{Endpoint, Resolved};

mod containers;
pub mod disk;
mod error;
mod images;
mod podman;
mod reap;
mod ssh;
mod storage;
mod transport;
mod types;

pub use error::{DockerError, DockerErrorKind};
pub use images::split_reference;
pub use podman::Engine;
pub use transport::{DockerSandbox, DockerTransport};
pub use types::{BuildRequest, ImageInfo, ImageSummary, PullEvent, RegistryLogin};

use containers::unix_now;

/// The read and write timeout of each of the client's connections, as bollard's defaults.
const CLIENT_TIMEOUT_SECS: u64 = 120;

/// Label holding the run id.
pub const LABEL_RUN_ID: &str = "aci.run_id";
/// Label holding the instance id.
pub const LABEL_INSTANCE_ID: &str = "aci.instance_id";
/// Label holding the pid of the `aci` process that started the container.
pub const LABEL_PID: &str = "aci.pid";
/// Label holding that process's start time (clock ticks since boot), against pid reuse.
pub const LABEL_PID_START: &str = "aci.pid_start";
/// Label holding the host name of the machine whose `aci` process started the container: a
/// shared or remote daemon holds other machines' containers, whose pids mean nothing here.
pub const LABEL_HOST: &str = "aci.host";
/// Label holding the image file of the container's quota filesystem ([`disk`]), when it has one.
pub const LABEL_DISK: &str = "aci.disk_image";

/// A bollard error of a request about the daemon's own objects, as a [`SandboxError`].
fn docker_error(error: bollard::errors::Error) -> SandboxError {
    SandboxError::Docker(error::from_bollard(&error))
}

/// A bollard error with `context: ` before its message, keeping its kind.
fn docker_error_in(
    context: impl std::fmt::Display,
) -> impl FnOnce(bollard::errors::Error) -> SandboxError {
    move |error| SandboxError::Docker(error::from_bollard(&error).context(context))
}

/// An error of aci's own about the daemon's work, of no particular kind.
fn other(message: impl Into<String>) -> SandboxError {
    SandboxError::Docker(DockerError::other(message))
}

/// A connection to the Docker daemon plus the containers this process has started through
/// it. Clones share both.
#[derive(Clone)]
pub struct DockerRuntime {
    docker: Docker,
    /// Docker or Podman, by the daemon's version reply.
    engine: Engine,
    /// With Podman, the ulimits its containers are given: its service's own.
    podman_ulimits: Arc<Vec<bollard::models::ResourcesUlimits>>,
    live: Arc<Mutex<Vec<String>>>,
    /// How `env.disk_mb` is kept with this daemon, decided at the first start.
    disk: Arc<tokio::sync::OnceCell<disk::DiskMode>>,
    /// Set by [`DockerRuntime::close_creation`]: from then on no container is created through
    /// this connection.
    closed: Arc<AtomicBool>,
    /// The daemon's URL when it is not reached through a local socket: its files are not
    /// this machine's, so nothing of aci's mounts or deletes them.
    remote: Option<String>,
    /// The daemon's size inspections of the disk watchdogs, shared by this connection's
    /// containers so that their cost stays bounded however many run.
    sizes: Arc<disk::SizeMeter>,
    /// The bridge to a daemon reached through ssh; it ends with the last clone.
    ssh: Option<Arc<ssh::SshBridge>>,
    /// `env.max_starting`: the containers in their start phase at once, and their peak.
    starting: Arc<super::starting::StartGate>,
}

impl DockerRuntime {
    /// Connects to the local daemon and negotiates the API version. Under
    /// [`super::guard::run_guarded`], the guard's final sweep knows the connection.
    pub async fn connect() -> Result<Self, SandboxError> {
        let env = super::endpoint::DockerEnv::from_process();
        let read = |path: &std::path::Path| std::fs::read_to_string(path).ok();
        let resolved = super::endpoint::resolve(&env, &read).map_err(other)?;
        Self::connect_to(&resolved).await
    }

    /// Connects to the Podman service `--engine podman` names: `CONTAINER_HOST`, else this
    /// user's Podman socket ([`super::endpoint::resolve_podman`]); refuses a Docker daemon
    /// found there, so that a run asked of Podman never lands on Docker.
    ///
    /// # Errors
    /// No service answers, it is not Podman, or it cannot keep aci's limits.
    pub async fn connect_podman() -> Result<Self, SandboxError> {
        let env = super::endpoint::PodmanEnv::from_process();
        let resolved = super::endpoint::resolve_podman(&env).map_err(other)?;
        Self::connect_expecting(&resolved, Some(Engine::Podman)).await
    }

    /// Connects to the daemon listening on the Unix socket `socket`, as [`Self::connect`] does
    /// to the one `DOCKER_HOST` names.
    pub async fn connect_to_socket(socket: &std::path::Path) -> Result<Self, SandboxError> {
        let resolved = Resolved {
            endpoint: Endpoint::Unix {
                path: socket.to_string_lossy().into_owned(),
            },
            source: "the caller".to_owned(),
        };
        Self::connect_to(&resolved).await
    }

    /// Connects to the daemon `resolved` names: its socket, plain TCP, TCP with TLS client
    /// certificates, or ssh (through an [`ssh::SshBridge`]); then tells Docker from Podman and
    /// reads what differs.
    ///
    /// # Errors
    /// The certificates cannot be loaded, the daemon does not answer (through ssh: the last
    /// line ssh wrote, such as `Permission denied (publickey).`), or it is a Podman that cannot
    /// keep aci's limits.
    pub async fn connect_to(resolved: &Resolved) -> Result<Self, SandboxError> {
        Self::connect_expecting(resolved, None).await
    }

    /// [`Self::connect_to`], refusing the daemon when it is not the engine `expected`.
    async fn connect_expecting(
        resolved: &Resolved,
        expected: Option<Engine>,
    ) -> Result<Self, SandboxError> {
        let where_ = resolved.describe();
        let mut bridge = None;
        let (docker, socket) = match &resolved.endpoint {
            Endpoint::Ssh(target) => {
                let started = ssh::SshBridge::start(target.command())
                    .map_err(|error| other(format!("{where_}: {error}")))?;
                let docker = Docker::connect_with_unix(
                    &started.socket().to_string_lossy(),
                    CLIENT_TIMEOUT_SECS,
                    bollard::API_DEFAULT_VERSION,
                );
                bridge = Some(Arc::new(started));
                (docker, None)
            }
            Endpoint::Unix { path } => (
                Docker::connect_with_unix(path, CLIENT_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION),
                Some(std::path::PathBuf::from(path)),
            ),
            Endpoint::Tcp { addr, tls: None } => (
                Docker::connect_with_http(addr, CLIENT_TIMEOUT_SECS, bollard::API_DEFAULT_VERSION),
                None,
            ),
            Endpoint::Tcp {
                addr,
                tls: Some(files),
            } => (
                Docker::connect_with_ssl(
                    addr,
                    &files.key,
                    &files.cert,
                    &files.ca,
                    CLIENT_TIMEOUT_SECS,
                    bollard::API_DEFAULT_VERSION,
                ),
                None,
            ),
        };
        let docker = docker.map_err(docker_error_in(format!(
            "cannot connect to the Docker daemon at {where_}"
        )))?;
        let unreachable = format!("cannot reach the Docker daemon at {where_}");
        let docker = match docker.negotiate_version().await {
            Ok(docker) => docker,
            Err(error) => {
                return Err(match bridge.as_ref().and_then(|bridge| bridge.failure()) {
                    Some(said) => SandboxError::Docker(DockerError::new(
                        DockerErrorKind::Connect,
                        format!("{unreachable}: ssh: {said}"),
                    )),
                    None => docker_error_in(unreachable)(error),
                });
            }
        };
        let version = docker
            .version()
            .await
            .map_err(docker_error_in("cannot read the Docker daemon's version"))?;
        let engine = podman::engine_of(&version);
        if expected == Some(Engine::Podman) && engine != Engine::Podman {
            return Err(other(format!(
                "--engine podman: {where_} is answered by Docker, not Podman"
            )));
        }
        let info = docker.info().await.map_err(docker_error_in(
            "cannot read the Docker daemon's configuration",
        ))?;
        if engine == Engine::Podman
            && let Some(refusal) = podman::refusal(&info)
        {
            return Err(other(refusal));
        }
        let mut runtime = Self::with_client(docker);
        runtime.engine = engine;
        runtime.ssh = bridge;
        if storage::loses_deletions(&info) {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("{}", storage::WARNING));
        }
        if !resolved.is_local() {
            runtime.remote = Some(resolved.url());
        }
        if engine == Engine::Podman
            && let Some(socket) = socket
        {
            let ulimits = tokio::task::spawn_blocking(move || podman::service_ulimits(&socket))
                .await
                .unwrap_or_default();
            runtime.podman_ulimits = Arc::new(ulimits);
        }
        super::guard::watch_docker(&runtime);
        Ok(runtime)
    }

    fn with_client(docker: Docker) -> Self {
        Self {
            docker,
            engine: Engine::Docker,
            podman_ulimits: Arc::default(),
            live: Arc::new(Mutex::new(Vec::new())),
            disk: Arc::new(tokio::sync::OnceCell::new()),
            closed: Arc::new(AtomicBool::new(false)),
            remote: None,
            sizes: Arc::default(),
            ssh: None,
            starting: Arc::default(),
        }
    }

    /// This connection (and its clones made from now on) with at most `max` containers in
    /// their start phase at once (create to shell ready); 0: no cap (`env.max_starting`).
    #[must_use]
    pub fn with_max_starting(mut self, max: usize) -> Self {
        self.starting = Arc::new(super::starting::StartGate::new(max));
        self
    }

    /// The containers starting now through this connection and its clones, and the most there
    /// have been at once.
    #[must_use]
    pub fn start_counts(&self) -> super::starting::StartCounts {
        self.starting.counts()
    }

    /// The cap on containers starting at once (0: none).
    #[must_use]
    pub fn max_starting(&self) -> usize {
        self.starting.max()
    }

    /// This connection with `env.disk_mb` only measured, whatever this machine supports: to
    /// compare the two ways, and to test the measured one where the other is available.
    #[must_use]
    pub fn measure_disk_only(mut self) -> Self {
        let mode = disk::DiskMode::Measured {
            reason: "asked for by the caller".to_owned(),
        };
        self.disk = Arc::new(tokio::sync::OnceCell::new_with(Some(mode)));
        self
    }

    /// The engine behind the connection.
    #[must_use]
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Checks that the daemon still answers (within 10 s).
    pub async fn ping(&self) -> Result<(), SandboxError> {
        match tokio::time::timeout(Duration::from_secs(10), self.docker.ping()).await {
            Ok(Ok(_)) => Ok(()),
            // The causes say why (`Connection refused`, `No such file or directory`).
            Ok(Err(error)) => Err(SandboxError::Docker(DockerError::new(
                error::from_bollard(&error).kind,
                crate::error_chain::error_chain(&error),
            ))),
            Err(_) => Err(SandboxError::Docker(DockerError::new(
                DockerErrorKind::Connect,
                "no answer to a ping within 10 s",
            ))),
        }
    }

    /// From now on no container is created through this connection (or its clones): for a
    /// sweep of a process that is about to exit while its tasks still run, so that none
    /// appears after the sweep has listed them.
    pub fn close_creation(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Fails once [`DockerRuntime::close_creation`] has been called.
    fn check_creation_open(&self) -> Result<(), SandboxError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(other("aci is quitting: no container is created any more"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
