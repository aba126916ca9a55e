//! The Docker side of aci, and the only file that imports bollard.
//!
//! [`DockerRuntime`] is the daemon connection: it starts hardened task containers
//! ([`DockerSandbox`]), builds and finds images for [`crate::image`], and reaps containers that
//! runs which died left behind. Every container carries the labels `aci.run_id`,
//! `aci.instance_id`, and the pid and start time of the `aci` process that made it, so leftovers
//! can be told apart from containers of runs that are still alive.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, ResourcesUlimits};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, CreateImageOptionsBuilder,
    DownloadFromContainerOptionsBuilder, EventsOptionsBuilder, ListContainersOptionsBuilder,
    ListImagesOptionsBuilder, PushImageOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveImageOptionsBuilder, RestartContainerOptionsBuilder, TagImageOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::liveness::{ProcessState, Reap, Reaped, own_start_time, read_process, reap_verdict};
use super::shell::CappedBuffer;
use super::transport::{Channel, Frame, SESSION_ENV, Transport};
use super::{ExecOutput, OutputLimit, SandboxError, SandboxSpec, ShellSandbox, repo};

pub mod disk;
mod types;

pub use types::{BuildRequest, ImageInfo, ImageSummary, PullEvent, RegistryLogin};

/// Label holding the run id.
pub const LABEL_RUN_ID: &str = "aci.run_id";
/// Label holding the instance id.
pub const LABEL_INSTANCE_ID: &str = "aci.instance_id";
/// Label holding the pid of the `aci` process that started the container.
pub const LABEL_PID: &str = "aci.pid";
/// Label holding that process's start time (clock ticks since boot), against pid reuse.
pub const LABEL_PID_START: &str = "aci.pid_start";
/// Label holding the image file of the container's quota filesystem ([`disk`]), when it has one.
pub const LABEL_DISK: &str = "aci.disk_image";

/// Capabilities added back after dropping all: what root needs to unpack archives, install
/// packages and run git on files of other owners. Nothing that reaches outside the container.
const CAPABILITIES: [&str; 4] = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"];

/// An error and its causes, joined with `: `.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn docker_error(error: bollard::errors::Error) -> SandboxError {
    SandboxError::Docker(error.to_string())
}

/// A connection to the Docker daemon plus the containers this process has started.
#[derive(Clone)]
pub struct DockerRuntime {
    docker: Docker,
    live: Arc<Mutex<Vec<String>>>,
    /// How `env.disk_mb` is kept with this daemon, decided at the first start.
    disk: Arc<tokio::sync::OnceCell<disk::DiskMode>>,
}

impl DockerRuntime {
    /// Connects to the local daemon and negotiates the API version.
    pub async fn connect() -> Result<Self, SandboxError> {
        let docker = Docker::connect_with_local_defaults().map_err(docker_error)?;
        let docker = docker
            .negotiate_version()
            .await
            .map_err(|e| SandboxError::Docker(format!("cannot reach the Docker daemon: {e}")))?;
        Ok(Self {
            docker,
            live: Arc::new(Mutex::new(Vec::new())),
            disk: Arc::new(tokio::sync::OnceCell::new()),
        })
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

    /// Starts a task container as `spec` says and opens its shell.
    pub async fn start(&self, spec: &SandboxSpec) -> Result<DockerSandbox, SandboxError> {
        let image = match self.disk_mode().await {
            disk::DiskMode::Enforced { images } => Some(disk::next_image(&images)),
            disk::DiskMode::Measured { .. } => None,
        };
        let container_id = self.create_container(spec, image.as_deref()).await?;
        self.track(&container_id, true);
        let meter = match self.prepare(spec, &container_id, image.as_deref()).await {
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
            SandboxError::Docker(format!(
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
        check_creation_open()?;
        remember_client(&self.docker);
        let mut labels = HashMap::from([
            (LABEL_RUN_ID.to_owned(), spec.run_id.clone()),
            (LABEL_INSTANCE_ID.to_owned(), spec.instance_id.clone()),
            (LABEL_PID.to_owned(), std::process::id().to_string()),
            (LABEL_PID_START.to_owned(), own_start_time().to_string()),
        ]);
        if let Some(image) = disk_image {
            labels.insert(LABEL_DISK.to_owned(), image.display().to_string());
        }
        // Without a quota filesystem, no file may grow past the quota (RLIMIT_FSIZE, in bytes),
        // and the watchdog ([`disk::watch`]) bounds what all files add up to. With one, the
        // filesystem bounds everything, and a sparse file's length costs nothing.
        let ulimits = disk_image.is_none().then(|| {
            vec![ResourcesUlimits {
                name: Some("fsize".to_owned()),
                soft: Some(disk_bytes(spec.limits.disk_mb)),
                hard: Some(disk_bytes(spec.limits.disk_mb)),
            }]
        });
        let memory =
            i64::try_from(spec.limits.memory_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX);
        let host_config = HostConfig {
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some((spec.limits.cpus * 1e9) as i64),
            pids_limit: Some(spec.limits.pids),
            network_mode: Some(if spec.network { "bridge" } else { "none" }.to_owned()),
            cap_drop: Some(vec!["ALL".to_owned()]),
            cap_add: Some(CAPABILITIES.iter().map(|c| (*c).to_owned()).collect()),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            ulimits,
            init: Some(true),
            ..Default::default()
        };
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
            .map_err(|e| {
                SandboxError::Docker(format!(
                    "cannot create a container from {}: {e}",
                    spec.image
                ))
            })?;
        Ok(created.id)
    }

    /// The started containers' ids. A thread that panicked while holding the lock left the
    /// list whole (each change is one push or retain), so a poisoned lock is used as it is:
    /// tracking must go on, or the containers started after the panic would be left behind.
    fn live_ids(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn track(&self, container_id: &str, live: bool) {
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
        match result {
            Ok(()) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            // Another task is already removing it: wait until it is gone.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => {
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
                Err(SandboxError::Docker(format!(
                    "container {container_id} is still being removed"
                )))
            }
            Err(error) => Err(docker_error(error)),
        }
    }

    /// Removes every container this process started that is still there (for Ctrl-C and for
    /// the end of a run, whatever happened before).
    pub async fn remove_all_started(&self) -> usize {
        let ids: Vec<String> = self.live_ids().clone();
        let mut removed = 0;
        for id in ids {
            if self.remove_container(&id).await.is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Checks that the daemon still answers (within 10 s).
    pub async fn ping(&self) -> Result<(), SandboxError> {
        match tokio::time::timeout(Duration::from_secs(10), self.docker.ping()).await {
            Ok(Ok(_)) => Ok(()),
            // The causes say why (`Connection refused`, `No such file or directory`).
            Ok(Err(error)) => Err(SandboxError::Docker(error_chain(&error))),
            Err(_) => Err(SandboxError::Docker(
                "no answer to a ping within 10 s".to_owned(),
            )),
        }
    }

    /// Lists the ids of containers carrying `aci.run_id` (any run, or one run).
    pub async fn list_aci_containers(
        &self,
        run_id: Option<&str>,
    ) -> Result<Vec<String>, SandboxError> {
        Ok(self
            .list_labelled(run_id)
            .await?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    async fn list_labelled(
        &self,
        run_id: Option<&str>,
    ) -> Result<Vec<(String, HashMap<String, String>)>, SandboxError> {
        let label = match run_id {
            Some(run_id) => format!("{LABEL_RUN_ID}={run_id}"),
            None => LABEL_RUN_ID.to_owned(),
        };
        let filters = HashMap::from([("label".to_owned(), vec![label])]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let containers = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(docker_error)?;
        Ok(containers
            .into_iter()
            .filter_map(|c| Some((c.id?, c.labels.unwrap_or_default())))
            .collect())
    }

    /// Removes containers left by `aci` processes that are gone, reading liveness from
    /// `/proc` ([`Self::reap_orphans_with`]).
    pub async fn reap_orphans(&self) -> Result<Reaped, SandboxError> {
        self.reap_orphans_with(&read_process).await
    }

    /// Removes containers left by `aci` processes that are gone, as `read` tells liveness;
    /// those whose process's liveness cannot be read are kept and counted
    /// ([`super::liveness::reap_verdict`]).
    ///
    /// Only task containers, which carry the `aci.pid` of the process that created them, are
    /// candidates: the step containers of an environment image build inherit the image's
    /// `aci.run_id` label but belong to the daemon's builder, which removes them itself.
    pub async fn reap_orphans_with(
        &self,
        read: &(dyn Fn(u32) -> ProcessState + Sync),
    ) -> Result<Reaped, SandboxError> {
        // Without its own entry, `/proc` tells nothing of any process (not even a bad label's).
        let readable = read(std::process::id()) != ProcessState::Unknown;
        let mut reaped = Reaped::default();
        for (id, labels) in self.list_labelled(None).await? {
            let Some(pid) = labels.get(LABEL_PID) else {
                continue;
            };
            let state = match pid.parse::<u32>() {
                _ if !readable => ProcessState::Unknown,
                Ok(pid) => read(pid),
                Err(_) => ProcessState::Absent,
            };
            let start = labels
                .get(LABEL_PID_START)
                .and_then(|s| s.parse::<u64>().ok());
            let verdict = reap_verdict(start, state);
            let removed = verdict == Reap::Remove && self.remove_container(&id).await.is_ok();
            reaped.count(verdict, removed);
        }
        self.reap_disk_images().await;
        Ok(reaped)
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

    /// Inspects an image by name or id; `None` when it does not exist.
    pub async fn inspect_image(&self, name: &str) -> Result<Option<ImageInfo>, SandboxError> {
        match self.docker.inspect_image(name).await {
            Ok(image) => Ok(Some(ImageInfo {
                id: image.id.unwrap_or_default(),
                digests: image.repo_digests.unwrap_or_default(),
                labels: image.config.and_then(|c| c.labels).unwrap_or_default(),
            })),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(error) => Err(docker_error(error)),
        }
    }

    /// Pulls `image` (`name:tag` or `name@digest`) from its registry, with `login` when given,
    /// passing each progress message to `on_event`.
    ///
    /// # Errors
    /// The daemon's message: the registry cannot be reached, the image is not there, access
    /// was denied.
    pub async fn pull_image(
        &self,
        image: &str,
        login: Option<&RegistryLogin>,
        mut on_event: impl FnMut(PullEvent) + Send,
    ) -> Result<(), SandboxError> {
        let options = CreateImageOptionsBuilder::default()
            .from_image(image)
            .build();
        let mut stream = self
            .docker
            .create_image(Some(options), None, login.map(to_bollard));
        while let Some(item) = stream.next().await {
            let info = item.map_err(|error| match error {
                bollard::errors::Error::DockerStreamError { error } => SandboxError::Docker(error),
                bollard::errors::Error::DockerResponseServerError { message, .. } => {
                    SandboxError::Docker(message)
                }
                other => docker_error(other),
            })?;
            let detail = info.progress_detail.unwrap_or_default();
            on_event(PullEvent {
                id: info.id,
                status: info.status.unwrap_or_default(),
                current: detail.current.and_then(|n| u64::try_from(n).ok()),
                total: detail.total.and_then(|n| u64::try_from(n).ok()),
            });
        }
        Ok(())
    }

    /// The bytes of the file at `path` in `image`, read from a container that is created and
    /// never started (nothing in the image runs); `None` when the image has no such file.
    pub async fn image_file(
        &self,
        image: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, SandboxError> {
        check_creation_open()?;
        remember_client(&self.docker);
        let labels = HashMap::from([
            (LABEL_RUN_ID.to_owned(), "probe".to_owned()),
            (LABEL_PID.to_owned(), std::process::id().to_string()),
            (LABEL_PID_START.to_owned(), own_start_time().to_string()),
        ]);
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            cmd: Some(vec!["true".to_owned()]),
            entrypoint: Some(vec![]),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                network_mode: Some("none".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
            .map_err(|e| {
                SandboxError::Docker(format!("cannot create a container from {image}: {e}"))
            })?;
        self.track(&created.id, true);
        let options = DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let mut stream = self
            .docker
            .download_from_container(&created.id, Some(options));
        let mut tar = Vec::new();
        let mut missing = false;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => tar.extend_from_slice(&bytes),
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => {
                    missing = true;
                    break;
                }
                Err(error) => {
                    let _ = self.remove_container(&created.id).await;
                    return Err(docker_error(error));
                }
            }
        }
        self.remove_container(&created.id).await?;
        if missing {
            return Ok(None);
        }
        first_file_of_tar(&tar)
            .map(Some)
            .map_err(|e| SandboxError::Docker(format!("cannot read {path} from {image}: {e}")))
    }

    /// Builds an image from a tar build context with the classic builder. `on_step` receives
    /// each `Step N/M : …` line. Returns the image id.
    pub async fn build_image(
        &self,
        request: BuildRequest<'_>,
        mut on_step: impl FnMut(&str) + Send,
    ) -> Result<String, SandboxError> {
        self.build_image_logged(request, |line| {
            if line.starts_with("Step ") {
                on_step(line.trim_end());
            }
        })
        .await
    }

    /// [`Self::build_image`], with every piece of the build's output (each ending in its own
    /// newline, as the daemon sends it) given to `on_output`: the whole build log.
    pub async fn build_image_logged(
        &self,
        request: BuildRequest<'_>,
        mut on_output: impl FnMut(&str) + Send,
    ) -> Result<String, SandboxError> {
        let BuildRequest {
            tag,
            dockerfile,
            context,
            build_args,
            labels,
            network,
        } = request;
        let options = BuildImageOptionsBuilder::default()
            .dockerfile(dockerfile)
            .t(tag)
            .rm(true)
            .forcerm(true)
            .buildargs(build_args)
            .labels(labels)
            .networkmode(if network { "default" } else { "none" })
            .build();
        let mut stream = self.docker.build_image(
            options,
            None,
            Some(bollard::body_full(Bytes::from(context))),
        );
        let mut log_tail: Vec<String> = Vec::new();
        while let Some(item) = stream.next().await {
            // A failed step arrives as a stream error: keep the output that led to it.
            let info = item.map_err(|e| {
                SandboxError::Docker(format!("building {tag}: {e}\n{}", log_tail.join("")))
            })?;
            if let Some(detail) = info.error_detail {
                let message = detail.message.unwrap_or_default();
                return Err(SandboxError::Docker(format!(
                    "building {tag} failed: {message}\n{}",
                    log_tail.join("")
                )));
            }
            if let Some(line) = info.stream {
                on_output(&line);
                log_tail.push(line);
                let excess = log_tail.len().saturating_sub(30);
                log_tail.drain(..excess);
            }
        }
        let image = self
            .inspect_image(tag)
            .await?
            .ok_or_else(|| SandboxError::Docker(format!("the build of {tag} produced no image")))?;
        Ok(image.id)
    }

    /// The manifest digest the registry holds for `reference` (`registry/repo:tag`), asked
    /// through the daemon; `None` when the registry has no such tag.
    pub async fn registry_digest(
        &self,
        reference: &str,
        credentials: Option<&RegistryLogin>,
    ) -> Result<Option<String>, SandboxError> {
        match self
            .docker
            .inspect_registry_image(reference, credentials.map(to_bollard))
            .await
        {
            Ok(inspect) => Ok(Some(inspect.descriptor.digest.unwrap_or_default())),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code,
                message,
            }) if status_code == 404
                || message.contains("manifest unknown")
                || message.contains("not found") =>
            {
                Ok(None)
            }
            Err(error) => Err(SandboxError::Docker(format!(
                "cannot ask the registry about {reference}: {error}"
            ))),
        }
    }

    /// Tags the local image `local` as `reference` (`registry/repo:tag`) and pushes it. Returns
    /// the digest the registry reported.
    pub async fn push_image(
        &self,
        local: &str,
        reference: &str,
        credentials: Option<&RegistryLogin>,
    ) -> Result<String, SandboxError> {
        let (repo, tag) = split_reference(reference);
        let options = TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag)
            .build();
        self.docker
            .tag_image(local, Some(options))
            .await
            .map_err(|e| SandboxError::Docker(format!("cannot tag {local} as {reference}: {e}")))?;
        let options = PushImageOptionsBuilder::default().tag(tag).build();
        let mut stream = self
            .docker
            .push_image(repo, Some(options), credentials.map(to_bollard));
        let mut digest = String::new();
        while let Some(item) = stream.next().await {
            let info =
                item.map_err(|e| SandboxError::Docker(format!("pushing {reference} failed: {e}")))?;
            if let Some(detail) = info.error_detail {
                return Err(SandboxError::Docker(format!(
                    "pushing {reference} failed: {}",
                    detail.message.unwrap_or_default()
                )));
            }
            if let Some(found) = info
                .status
                .as_deref()
                .and_then(|s| s.split("digest: ").nth(1))
                .and_then(|s| s.split_whitespace().next())
            {
                digest = found.to_owned();
            }
        }
        Ok(digest)
    }

    /// Removes an image by id or tag (forcing, so tags pointing to it go too).
    pub async fn remove_image(&self, name: &str) -> Result<(), SandboxError> {
        let options = RemoveImageOptionsBuilder::default().force(true).build();
        self.docker
            .remove_image(name, Some(options), None)
            .await
            .map_err(docker_error)?;
        Ok(())
    }

    /// The daemon's data directory (`docker info`'s `DockerRootDir`), where images are stored.
    pub async fn docker_root_dir(&self) -> Result<Option<String>, SandboxError> {
        let info = self.docker.info().await.map_err(docker_error)?;
        Ok(info.docker_root_dir.filter(|dir| !dir.is_empty()))
    }

    /// Lists the images that carry every one of `labels` (each `key` or `key=value`).
    pub async fn list_images_labelled(
        &self,
        labels: &[String],
    ) -> Result<Vec<ImageSummary>, SandboxError> {
        let filters = HashMap::from([("label".to_owned(), labels.to_vec())]);
        let options = ListImagesOptionsBuilder::default()
            .all(false)
            .filters(&filters)
            .build();
        let images = self
            .docker
            .list_images(Some(options))
            .await
            .map_err(docker_error)?;
        Ok(images
            .into_iter()
            .map(|image| ImageSummary {
                id: image.id,
                tags: image
                    .repo_tags
                    .into_iter()
                    .filter(|tag| tag != "<none>:<none>")
                    .collect(),
                labels: image.labels,
                size: u64::try_from(image.size).unwrap_or(0),
            })
            .collect())
    }

    /// Removes an image by tag or id without forcing: a tag is untagged (and the image deleted
    /// when it was the last one). Returns `Ok(false)`, removing nothing, when a container uses
    /// the image or an id still has several tags.
    pub async fn remove_image_unless_used(&self, name: &str) -> Result<bool, SandboxError> {
        let options = RemoveImageOptionsBuilder::default().force(false).build();
        match self.docker.remove_image(name, Some(options), None).await {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(false),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(true),
            Err(error) => Err(docker_error(error)),
        }
    }

    /// Removes every container of `run_id` that this process started, tracked or not: after
    /// tasks were aborted mid-request, a container can exist that no task recorded.
    pub async fn remove_own_containers(&self, run_id: &str) -> Result<usize, SandboxError> {
        let pid = std::process::id().to_string();
        let mut removed = 0;
        for (id, labels) in self.list_labelled(Some(run_id)).await? {
            if labels.get(LABEL_PID) == Some(&pid) && self.remove_container(&id).await.is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
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

async fn exec_once(
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

/// A registry login as bollard sends it (the `X-Registry-Auth` header).
fn to_bollard(credentials: &RegistryLogin) -> bollard::auth::DockerCredentials {
    bollard::auth::DockerCredentials {
        username: credentials.username.clone(),
        password: credentials.password.clone(),
        serveraddress: Some(credentials.server.clone()),
        identitytoken: credentials.identity_token.clone(),
        ..Default::default()
    }
}

/// `registry/repo:tag` as `(registry/repo, tag)`; the tag defaults to `latest`. A `:` before
/// the last `/` is a registry port, not a tag.
pub fn split_reference(reference: &str) -> (&str, &str) {
    match reference.rfind(':') {
        Some(at) if !reference[at..].contains('/') => (&reference[..at], &reference[at + 1..]),
        _ => (reference, "latest"),
    }
}

/// The content of the first regular file in a tar archive (the daemon's archive of one file).
fn first_file_of_tar(tar: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type().is_file() {
            let mut content = Vec::new();
            entry.read_to_end(&mut content)?;
            return Ok(content);
        }
    }
    Err(std::io::Error::other("the archive holds no regular file"))
}

fn disk_bytes(disk_mb: u64) -> i64 {
    i64::try_from(disk_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX)
}

/// Seconds since the Unix epoch, as the daemon's event filters take them.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// A container name people can read in `docker ps`: `aci-<instance>-<run>-<pid>-<n>`. The pid
/// and counter keep it unique when two `aci` processes share a run id (a rerun while the first
/// is still going), and are kept when a long id is shortened.
fn container_name(instance_id: &str, run_id: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = format!("aci-{}-{}", clean(instance_id), clean(run_id));
    name.truncate(100);
    name.push_str(&format!("-{}-{n}", std::process::id()));
    name
}

/// The daemon connection of the first container this process created, kept for
/// [`remove_containers_of_this_process`]: `None` while it has created none.
static CLIENT: Mutex<Option<Docker>> = Mutex::new(None);

/// Set by [`close_creation`]: from then on this process creates no container.
static CREATION_CLOSED: AtomicBool = AtomicBool::new(false);

/// From now on this process creates no container: for a sweep of a process that is about to
/// exit while its tasks still run, so that none appears after the sweep has listed them.
pub fn close_creation() {
    CREATION_CLOSED.store(true, Ordering::SeqCst);
}

/// Fails once [`close_creation`] has been called.
fn check_creation_open() -> Result<(), SandboxError> {
    if CREATION_CLOSED.load(Ordering::SeqCst) {
        return Err(SandboxError::Docker(
            "aci is quitting: no container is created any more".to_owned(),
        ));
    }
    Ok(())
}

fn remember_client(docker: &Docker) {
    let mut client = CLIENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if client.is_none() {
        *client = Some(docker.clone());
    }
}

/// Removes every task container this process created that still exists, found by the labels
/// `aci.pid` and `aci.pid_start` (so also one whose creation was cut short before it was
/// tracked). Returns how many were removed; does nothing when the process created none.
/// This is the last sweep before the process exits, whatever ended its work (a panic too).
///
/// # Errors
/// [`SandboxError::Docker`] when the containers cannot be listed.
pub async fn remove_containers_of_this_process() -> Result<usize, SandboxError> {
    let client = CLIENT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some(docker) = client else {
        return Ok(0);
    };
    let filters = HashMap::from([(
        "label".to_owned(),
        vec![
            format!("{LABEL_PID}={}", std::process::id()),
            format!("{LABEL_PID_START}={}", own_start_time()),
        ],
    )]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(docker_error)?;
    let runtime = DockerRuntime {
        docker,
        live: Arc::new(Mutex::new(Vec::new())),
        disk: Arc::new(tokio::sync::OnceCell::new()),
    };
    let mut removed = 0;
    for id in containers.into_iter().filter_map(|c| c.id) {
        if runtime.remove_container(&id).await.is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// A task container with its persistent shell.
pub type DockerSandbox = ShellSandbox<DockerTransport>;

impl DockerSandbox {
    /// The container's id.
    pub fn container_id(&self) -> &str {
        &self.transport().container_id
    }

    /// The runtime that started this container.
    pub fn runtime(&self) -> &DockerRuntime {
        &self.transport().runtime
    }

    /// The bytes the container's files take on its quota filesystem, as the disk watchdog
    /// reads them; `None` when the quota is only measured ([`disk::DiskMode::Measured`]).
    pub fn disk_usage(&self) -> Option<u64> {
        let layer = self.transport().disk_usage.as_ref()?;
        layer.usage().ok()
    }
}

/// The session transport of one task container: an attached `docker exec` of bash per
/// session, a second `docker exec` beside it. It owns the container: teardown removes it, and
/// so does dropping it without a teardown (in the background).
pub struct DockerTransport {
    runtime: DockerRuntime,
    container_id: String,
    instance_id: String,
    workdir: String,
    torn_down: bool,
    /// When aci last restarted the container itself (Unix seconds): kills and stops the
    /// daemon logged before then were aci's own (the disk watchdog's restart too).
    own_restart_at: Arc<Mutex<f64>>,
    /// The quota, in MiB.
    disk_mb: u64,
    /// Whether the disk watchdog stopped the task.
    quota: Arc<tokio::sync::watch::Sender<disk::QuotaState>>,
    /// The quota filesystem, when there is one.
    disk_usage: Option<Arc<disk::LayerDisk>>,
    disk_watchdog: tokio::task::JoinHandle<()>,
}

impl DockerTransport {
    /// [`SandboxError::OverDiskQuota`] once, after the disk watchdog stopped the task's
    /// processes (waiting for its restart of the container to end); `None` before and after.
    async fn quota_stop(&self) -> Option<SandboxError> {
        let mut state = self.quota.subscribe();
        let settled = state.wait_for(|state| *state != disk::QuotaState::Stopping);
        let stopped = match tokio::time::timeout(Duration::from_secs(60), settled).await {
            Ok(Ok(state)) => *state == disk::QuotaState::Stopped,
            Ok(Err(_)) => false,
            Err(_) => true,
        };
        if !stopped {
            return None;
        }
        self.quota.send_replace(disk::QuotaState::Reported);
        Some(SandboxError::OverDiskQuota {
            instance_id: self.instance_id.clone(),
            disk_mb: self.disk_mb,
            detail: "aci stopped its processes".to_owned(),
        })
    }

    /// Whether someone other than aci (`docker stop`, `docker kill`, the daemon) stopped or
    /// killed the container since aci last restarted it, as the daemon's event log says.
    async fn stopped_from_outside(&self) -> bool {
        let since = *self
            .own_restart_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let filters = HashMap::from([
            ("container".to_owned(), vec![self.container_id.clone()]),
            ("type".to_owned(), vec!["container".to_owned()]),
            (
                "event".to_owned(),
                vec!["kill".to_owned(), "stop".to_owned()],
            ),
        ]);
        let options = EventsOptionsBuilder::default()
            .since(&format!("{since:.9}"))
            .until(&format!("{:.9}", unix_now()))
            .filters(&filters)
            .build();
        let mut events = self.runtime.docker.events(Some(options));
        matches!(events.next().await, Some(Ok(_)))
    }

    async fn death_reason(&self) -> Option<String> {
        let inspected = self
            .runtime
            .docker
            .inspect_container(&self.container_id, None)
            .await;
        let state = match inspected {
            Ok(container) => container.state?,
            Err(e) => return Some(format!("the container is gone ({e})")),
        };
        if state.running == Some(true) {
            return None;
        }
        let mut reason = format!(
            "the container stopped with exit code {}",
            state.exit_code.unwrap_or(-1)
        );
        if state.oom_killed == Some(true) {
            reason.push_str(" after running out of memory");
        } else if self.stopped_from_outside().await {
            reason.push_str(": it was stopped from outside aci (docker stop or docker kill)");
        }
        Some(reason)
    }
}

impl Transport for DockerTransport {
    /// The container's own cgroup.
    const READS_OOM_COUNTER: bool = true;

    async fn open(&self) -> Result<Channel, SandboxError> {
        let docker = &self.runtime.docker;
        let options = CreateExecOptions {
            cmd: Some(vec![
                "bash".to_owned(),
                "--noprofile".to_owned(),
                "--norc".to_owned(),
            ]),
            attach_stdin: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            env: Some(SESSION_ENV.iter().map(|v| (*v).to_owned()).collect()),
            working_dir: Some(self.workdir.clone()),
            ..Default::default()
        };
        let exec = docker
            .create_exec(&self.container_id, options)
            .await
            .map_err(docker_error)?;
        let StartExecResults::Attached { mut output, input } = docker
            .start_exec(&exec.id, None)
            .await
            .map_err(docker_error)?
        else {
            return Err(SandboxError::Session("the exec did not attach".to_owned()));
        };
        let (sender, frames) = mpsc::channel(64);
        tokio::spawn(async move {
            while let Some(Ok(item)) = output.next().await {
                let frame = match item {
                    bollard::container::LogOutput::StdOut { message } => Frame::Stdout(message),
                    bollard::container::LogOutput::StdErr { message } => Frame::Stderr(message),
                    _ => continue,
                };
                if sender.send(frame).await.is_err() {
                    break;
                }
            }
        });
        Ok(Channel { input, frames })
    }

    async fn run_beside(&self, argv: Vec<String>) -> Result<ExecOutput, SandboxError> {
        exec_once(&self.runtime.docker, &self.container_id, argv).await
    }

    async fn check_alive(&self) -> Result<(), SandboxError> {
        if let Some(error) = self.quota_stop().await {
            return Err(error);
        }
        match self.death_reason().await {
            None => Ok(()),
            // The disk watchdog may have begun its restart since.
            Some(reason) => {
                Err(self
                    .quota_stop()
                    .await
                    .unwrap_or_else(|| SandboxError::ContainerDied {
                        instance_id: self.instance_id.clone(),
                        reason,
                    }))
            }
        }
    }

    async fn reset(&self) -> Result<(), SandboxError> {
        // A restart would also bring back a container an operator stopped (its session can
        // end before the daemon marks it stopped): that ends the task instead.
        let died = |reason: String| SandboxError::ContainerDied {
            instance_id: self.instance_id.clone(),
            reason,
        };
        if let Some(error) = self.quota_stop().await {
            return Err(error);
        }
        if self.stopped_from_outside().await {
            // The kill may be the disk watchdog's restart, begun since.
            if let Some(error) = self.quota_stop().await {
                return Err(error);
            }
            return Err(died(
                "the container was stopped from outside aci (docker stop or docker kill)"
                    .to_owned(),
            ));
        }
        // Kill every process but init: a wedged session, or a fork bomb the interrupt could
        // not even start beside. The file system, and so the repository, stays as it is.
        let options = RestartContainerOptionsBuilder::default().t(0).build();
        self.runtime
            .docker
            .restart_container(&self.container_id, Some(options))
            .await
            .map_err(docker_error)?;
        *self
            .own_restart_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = unix_now();
        Ok(())
    }

    async fn teardown(mut self) -> Result<(), SandboxError> {
        self.torn_down = true;
        self.disk_watchdog.abort();
        self.runtime.remove_container(&self.container_id).await
    }
}

impl Drop for DockerTransport {
    fn drop(&mut self) {
        self.disk_watchdog.abort();
        if self.torn_down {
            return;
        }
        // Dropped without teardown (an error path or a panic): remove it in the background.
        // The run's final sweep (`remove_all_started`) and the reaper catch anything this misses.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let runtime = self.runtime.clone();
            let id = self.container_id.clone();
            handle.spawn(async move {
                let _ = runtime.remove_container(&id).await;
            });
        }
    }
}

#[cfg(test)]
mod tests;
