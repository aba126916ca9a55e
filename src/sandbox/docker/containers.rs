//! Task containers: creating a hardened one for a [`SandboxSpec`], starting it with the
//! repository copied in, tracking it, removing it, and running one command in it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, ResourcesUlimits};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bytes::Bytes;
use futures_util::StreamExt;

use super::super::liveness::{host_name, own_start_time};
use super::super::shell::CappedBuffer;
use super::super::{ExecOutput, OutputLimit, SandboxError, SandboxSpec, ShellSandbox, repo};
use super::transport::{DockerSandbox, DockerTransport};
use super::{
    DockerErrorKind, DockerRuntime, Engine, LABEL_DISK, LABEL_HOST, LABEL_INSTANCE_ID, LABEL_PID,
    LABEL_PID_START, LABEL_RUN_ID, disk, docker_error, docker_error_in, error, other, podman,
};

/// Capabilities added back after dropping all: what root needs to unpack archives, install
/// packages and run git on files of other owners. Nothing that reaches outside the container.
const CAPABILITIES: [&str; 4] = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"];

impl DockerRuntime {
    /// Starts a task container as `spec` says and opens its shell, waiting first for a turn
    /// when `env.max_starting` containers are starting already
    /// ([`DockerRuntime::with_max_starting`]).
    pub async fn start(&self, spec: &SandboxSpec) -> Result<DockerSandbox, SandboxError> {
        let _starting = self.starting.enter().await;
        self.start_now(spec).await
    }

    /// [`DockerRuntime::start`] once its turn came.
    async fn start_now(&self, spec: &SandboxSpec) -> Result<DockerSandbox, SandboxError> {
        let image = match self.disk_mode().await {
            disk::DiskMode::Enforced { images } => Some(disk::next_image(&images)),
            disk::DiskMode::Measured { .. } => None,
        };
        let container_id = self.create_container(spec, image.as_deref()).await?;
        self.track(&container_id, true);
        let prepared = match self
            .check_honoured(spec, &container_id, image.is_some())
            .await
        {
            Ok(()) => self.prepare(spec, &container_id, image.as_deref()).await,
            Err(error) => Err(error),
        };
        let meter = match prepared {
            Ok(meter) => meter,
            Err(error) => {
                let _ = self.remove_container(&container_id).await;
                return Err(error);
            }
        };
        // From here on the transport owns the container: it removes it at teardown, and when
        // the sandbox is dropped without one.
        let quota = Arc::new(tokio::sync::watch::Sender::new(disk::QuotaState::Watching));
        let own_restart_at = Arc::new(Mutex::new(unix_now()));
        let disk_usage = match &meter {
            disk::Meter::Filesystem(layer) => Some(Arc::clone(layer)),
            disk::Meter::Daemon => None,
        };
        let disk_watchdog = tokio::spawn(disk::watch(
            self.clone(),
            container_id.clone(),
            spec.limits.disk_mb,
            meter,
            Arc::clone(&quota),
            Arc::clone(&own_restart_at),
        ));
        let transport = DockerTransport {
            runtime: self.clone(),
            container_id,
            instance_id: spec.instance_id.clone(),
            workdir: spec.repo_dir.clone(),
            torn_down: false,
            own_restart_at,
            disk_mb: spec.limits.disk_mb,
            quota,
            disk_usage,
            disk_watchdog,
        };
        let baseline = repo::Baseline::for_source(spec.repo.as_ref());
        ShellSandbox::open(transport, spec, spec.repo_dir.clone(), baseline).await
    }

    /// Puts the container's writable layer on its quota filesystem when `image` is given,
    /// starts the container and copies the repository in. Returns what the disk watchdog reads.
    async fn prepare(
        &self,
        spec: &SandboxSpec,
        container_id: &str,
        image: Option<&std::path::Path>,
    ) -> Result<disk::Meter, SandboxError> {
        let quota_error = |reason: String| {
            other(format!(
                "cannot give the container for {} its disk quota: {reason}",
                spec.instance_id
            ))
        };
        let meter = match image {
            Some(image) => disk::Meter::Filesystem(Arc::new(
                self.attach_disk(container_id, image, spec.limits.disk_mb)
                    .await
                    .map_err(quota_error)?,
            )),
            None => disk::Meter::Daemon,
        };
        self.docker
            .start_container(container_id, None)
            .await
            .map_err(docker_error)?;
        if let disk::Meter::Filesystem(layer) = &meter
            && !layer.seen_by_daemon()
        {
            return Err(quota_error(
                "the daemon mounted the container's root beside its quota filesystem, not on it \
                 (does it run in a mount namespace of its own?)"
                    .to_owned(),
            ));
        }
        if let Some(source) = &spec.repo {
            let prefix = spec.repo_dir.trim_start_matches('/').to_owned();
            let source = source.clone();
            let tar = tokio::task::spawn_blocking(move || repo::tar_repository(&source, &prefix))
                .await
                .map_err(|e| SandboxError::Session(format!("repository task failed: {e}")))??;
            let options = UploadToContainerOptionsBuilder::default().path("/").build();
            self.docker
                .upload_to_container(
                    container_id,
                    Some(options),
                    bollard::body_full(Bytes::from(tar)),
                )
                .await
                .map_err(docker_error)?;
        }
        Ok(meter)
    }

    /// Creates the task container; `disk_image` is its quota filesystem's image file, when the
    /// quota is enforced.
    async fn create_container(
        &self,
        spec: &SandboxSpec,
        disk_image: Option<&std::path::Path>,
    ) -> Result<String, SandboxError> {
        self.check_creation_open()?;
        let mut labels = HashMap::from([
            (LABEL_RUN_ID.to_owned(), spec.run_id.clone()),
            (LABEL_INSTANCE_ID.to_owned(), spec.instance_id.clone()),
            (LABEL_PID.to_owned(), std::process::id().to_string()),
            (LABEL_PID_START.to_owned(), own_start_time().to_string()),
            (LABEL_HOST.to_owned(), host_name()),
        ]);
        if let Some(image) = disk_image {
            labels.insert(LABEL_DISK.to_owned(), image.display().to_string());
        }
        let host_config = self.host_config(spec, disk_image.is_some());
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd: Some(vec!["sleep".to_owned(), "infinity".to_owned()]),
            entrypoint: Some(vec![]),
            working_dir: Some(spec.repo_dir.clone()),
            labels: Some(labels),
            network_disabled: Some(!spec.network),
            host_config: Some(host_config),
            ..Default::default()
        };
        let name = container_name(&spec.instance_id, &spec.run_id);
        let options = CreateContainerOptionsBuilder::default().name(&name).build();
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(docker_error_in(format_args!(
                "cannot create a container from {}",
                spec.image
            )))?;
        Ok(created.id)
    }

    /// The hardening and limits of a task container; `quota_filesystem` when its writable
    /// layer gets a filesystem of its own.
    fn host_config(&self, spec: &SandboxSpec, quota_filesystem: bool) -> HostConfig {
        // Without a quota filesystem, no file may grow past the quota (RLIMIT_FSIZE, in bytes),
        // and the watchdog ([`disk::watch`]) bounds what all files add up to. With one, the
        // filesystem bounds everything, and a sparse file's length costs nothing.
        let mut ulimits = Vec::new();
        if !quota_filesystem {
            ulimits.push(ResourcesUlimits {
                name: Some("fsize".to_owned()),
                soft: Some(disk_bytes(spec.limits.disk_mb)),
                hard: Some(disk_bytes(spec.limits.disk_mb)),
            });
        }
        if self.engine == Engine::Podman {
            ulimits.extend(self.podman_ulimits.iter().cloned());
        }
        let memory =
            i64::try_from(spec.limits.memory_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX);
        HostConfig {
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some((spec.limits.cpus * 1e9) as i64),
            pids_limit: Some(spec.limits.pids),
            network_mode: Some(if spec.network { "bridge" } else { "none" }.to_owned()),
            cap_drop: Some(vec!["ALL".to_owned()]),
            cap_add: Some(CAPABILITIES.iter().map(|c| (*c).to_owned()).collect()),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            ulimits: (!ulimits.is_empty()).then_some(ulimits),
            init: Some(true),
            ..Default::default()
        }
    }

    /// With Podman, fails naming every setting of [`DockerRuntime::host_config`] the created
    /// container does not have: its compatible API may accept an option and not apply it.
    async fn check_honoured(
        &self,
        spec: &SandboxSpec,
        container_id: &str,
        quota_filesystem: bool,
    ) -> Result<(), SandboxError> {
        if self.engine != Engine::Podman {
            return Ok(());
        }
        let inspected = self
            .docker
            .inspect_container(container_id, None)
            .await
            .map_err(docker_error)?;
        let asked = self.host_config(spec, quota_filesystem);
        let missing = podman::unhonoured(&asked, &inspected.host_config.unwrap_or_default());
        if missing.is_empty() {
            return Ok(());
        }
        Err(other(format!(
            "Podman did not give the container for {} its {}: aci does not run a task without them",
            spec.instance_id,
            missing.join(", ")
        )))
    }

    /// The started containers' ids. A thread that panicked while holding the lock left the
    /// list whole (each change is one push or retain), so a poisoned lock is used as it is:
    /// tracking must go on, or the containers started after the panic would be left behind.
    pub(super) fn live_ids(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn track(&self, container_id: &str, live: bool) {
        let mut ids = self.live_ids();
        if live {
            ids.push(container_id.to_owned());
        } else {
            ids.retain(|id| id != container_id);
        }
    }

    /// Force-removes one container, and its quota filesystem when it has one (unmounted
    /// before, its image file deleted after).
    pub async fn remove_container(&self, container_id: &str) -> Result<(), SandboxError> {
        let disk_image = self.release_disk(container_id).await;
        let removed = self.remove_container_only(container_id).await;
        if removed.is_ok()
            && let Some(image) = disk_image
        {
            let _ = std::fs::remove_file(image);
        }
        removed
    }

    async fn remove_container_only(&self, container_id: &str) -> Result<(), SandboxError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        let result = self
            .docker
            .remove_container(container_id, Some(options))
            .await;
        self.track(container_id, false);
        let Err(error) = result else {
            return Ok(());
        };
        match error::from_bollard(&error).kind {
            DockerErrorKind::NotFound => Ok(()),
            // Another task is already removing it: wait until it is gone.
            DockerErrorKind::Conflict => {
                for _ in 0..100 {
                    if self
                        .docker
                        .inspect_container(container_id, None)
                        .await
                        .is_err()
                    {
                        return Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(other(format!(
                    "container {container_id} is still being removed"
                )))
            }
            _ => Err(docker_error(error)),
        }
    }

    /// Number of processes running in a container, as the daemon sees them.
    pub async fn process_count(&self, container_id: &str) -> Result<usize, SandboxError> {
        let top = self
            .docker
            .top_processes(container_id, None)
            .await
            .map_err(docker_error)?;
        Ok(top.processes.map(|p| p.len()).unwrap_or(0))
    }

    /// Runs one command in a running container with a fresh `docker exec` (about 50 ms): for
    /// work outside the session. Output is capped as a session's is ([`OutputLimit::default`]).
    pub async fn exec_once(
        &self,
        container_id: &str,
        cmd: Vec<String>,
    ) -> Result<ExecOutput, SandboxError> {
        exec_once(&self.docker, container_id, cmd).await
    }
}

pub(super) async fn exec_once(
    docker: &Docker,
    container_id: &str,
    cmd: Vec<String>,
) -> Result<ExecOutput, SandboxError> {
    let options = CreateExecOptions {
        cmd: Some(cmd),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        ..Default::default()
    };
    let exec = docker
        .create_exec(container_id, options)
        .await
        .map_err(docker_error)?;
    // Capped as a session's output is: the container decides what its commands print.
    let mut stdout = CappedBuffer::new(OutputLimit::default());
    let mut stderr = CappedBuffer::new(OutputLimit::default());
    if let StartExecResults::Attached { mut output, .. } = docker
        .start_exec(&exec.id, None)
        .await
        .map_err(docker_error)?
    {
        while let Some(item) = output.next().await {
            match item.map_err(docker_error)? {
                bollard::container::LogOutput::StdOut { message } => stdout.push(&message),
                bollard::container::LogOutput::StdErr { message } => stderr.push(&message),
                _ => {}
            }
        }
    }
    let inspected = docker.inspect_exec(&exec.id).await.map_err(docker_error)?;
    let ((stdout, stdout_elided), (stderr, stderr_elided)) = (stdout.finish(0), stderr.finish(0));
    Ok(ExecOutput {
        stdout,
        stderr,
        exit_code: inspected.exit_code.map(|c| c as i32),
        elided_bytes: stdout_elided + stderr_elided,
        ..ExecOutput::default()
    })
}

fn disk_bytes(disk_mb: u64) -> i64 {
    i64::try_from(disk_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX)
}

/// Seconds since the Unix epoch, as the daemon's event filters take them.
pub(super) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// A container name people can read in `docker ps`: `aci-<instance>-<run>-<pid>-<n>`. The pid
/// and counter keep it unique when two `aci` processes share a run id (a rerun while the first
/// is still going), and are kept when a long id is shortened.
pub(super) fn container_name(instance_id: &str, run_id: &str) -> String {
    let clean = |s: &str| crate::text::safe_name(s, '_');
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = format!("aci-{}-{}", clean(instance_id), clean(run_id));
    name.truncate(100);
    name.push_str(&format!("-{}-{n}", std::process::id()));
    name
}
