//! The Docker side of aci, and the only file that imports bollard.
//!
//! [`DockerRuntime`] is the daemon connection: it starts hardened task containers
//! ([`DockerSandbox`]), builds and finds images for [`crate::image`], and reaps containers that
//! runs which died left behind. Every container carries the labels `aci.run_id`,
//! `aci.instance_id`, and the pid and start time of the `aci` process that made it, so leftovers
//! can be told apart from containers of runs that are still alive.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, ListContainersOptionsBuilder,
    ListImagesOptionsBuilder, RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder,
    RestartContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::transport::{Channel, Frame, Transport};
use super::{ExecOutput, SandboxError, SandboxSpec, ShellSandbox, repo};

/// Label holding the run id.
pub const LABEL_RUN_ID: &str = "aci.run_id";
/// Label holding the instance id.
pub const LABEL_INSTANCE_ID: &str = "aci.instance_id";
/// Label holding the pid of the `aci` process that started the container.
pub const LABEL_PID: &str = "aci.pid";
/// Label holding that process's start time (clock ticks since boot), against pid reuse.
pub const LABEL_PID_START: &str = "aci.pid_start";

/// Capabilities added back after dropping all: what root needs to unpack archives, install
/// packages and run git on files of other owners. Nothing that reaches outside the container.
const CAPABILITIES: [&str; 4] = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"];

/// Environment of every session: no pagers, no progress bars, a fixed locale.
const SESSION_ENV: [&str; 8] = [
    "PAGER=cat",
    "MANPAGER=cat",
    "GIT_PAGER=cat",
    "LESS=-R",
    "PIP_PROGRESS_BAR=off",
    "TQDM_DISABLE=1",
    "LANG=C.UTF-8",
    "TERM=dumb",
];

fn docker_error(error: bollard::errors::Error) -> SandboxError {
    SandboxError::Docker(error.to_string())
}

/// A connection to the Docker daemon plus the containers this process has started.
#[derive(Clone)]
pub struct DockerRuntime {
    docker: Docker,
    live: Arc<Mutex<Vec<String>>>,
}

/// An image build: [`DockerRuntime::build_image`].
pub struct BuildRequest<'a> {
    /// The tag to give the image.
    pub tag: &'a str,
    /// The Dockerfile's name inside the context.
    pub dockerfile: &'a str,
    /// The build context, a tar archive.
    pub context: Vec<u8>,
    /// `ARG` values.
    pub build_args: &'a HashMap<String, String>,
    /// Labels put on the image.
    pub labels: &'a HashMap<String, String>,
    /// Whether `RUN` steps get a network (to reach package mirrors).
    pub network: bool,
}

/// One image as [`DockerRuntime::list_images_labelled`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSummary {
    /// The image id (`sha256:…`).
    pub id: String,
    /// Its tags (`repo:tag`), without the `<none>:<none>` placeholder.
    pub tags: Vec<String>,
    /// Its labels.
    pub labels: HashMap<String, String>,
    /// Its size in bytes, shared layers included.
    pub size: u64,
}

/// What [`DockerRuntime::inspect_image`] reports.
#[derive(Debug, Clone)]
pub struct ImageInfo {
    /// The image id (`sha256:…`).
    pub id: String,
    /// Repository digests, when the image came from a registry.
    pub digests: Vec<String>,
    /// The image's labels.
    pub labels: HashMap<String, String>,
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
        })
    }

    /// Starts a task container as `spec` says and opens its shell.
    pub async fn start(&self, spec: &SandboxSpec) -> Result<DockerSandbox, SandboxError> {
        let container_id = self.create_container(spec).await?;
        self.track(&container_id, true);
        if let Err(error) = self.prepare(spec, &container_id).await {
            let _ = self.remove_container(&container_id).await;
            return Err(error);
        }
        // From here on the transport owns the container: it removes it at teardown, and when
        // the sandbox is dropped without one.
        let transport = DockerTransport {
            runtime: self.clone(),
            container_id,
            instance_id: spec.instance_id.clone(),
            workdir: spec.repo_dir.clone(),
            torn_down: false,
        };
        let baseline = repo::Baseline::for_source(spec.repo.as_ref());
        ShellSandbox::open(transport, spec, spec.repo_dir.clone(), baseline).await
    }

    /// Starts the container and copies the repository in.
    async fn prepare(&self, spec: &SandboxSpec, container_id: &str) -> Result<(), SandboxError> {
        self.docker
            .start_container(container_id, None)
            .await
            .map_err(docker_error)?;
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
        Ok(())
    }

    async fn create_container(&self, spec: &SandboxSpec) -> Result<String, SandboxError> {
        let labels = HashMap::from([
            (LABEL_RUN_ID.to_owned(), spec.run_id.clone()),
            (LABEL_INSTANCE_ID.to_owned(), spec.instance_id.clone()),
            (LABEL_PID.to_owned(), std::process::id().to_string()),
            (LABEL_PID_START.to_owned(), own_start_time().to_string()),
        ]);
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

    fn track(&self, container_id: &str, live: bool) {
        if let Ok(mut ids) = self.live.lock() {
            if live {
                ids.push(container_id.to_owned());
            } else {
                ids.retain(|id| id != container_id);
            }
        }
    }

    /// Force-removes one container.
    pub async fn remove_container(&self, container_id: &str) -> Result<(), SandboxError> {
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
        let ids: Vec<String> = self.live.lock().map(|ids| ids.clone()).unwrap_or_default();
        let mut removed = 0;
        for id in ids {
            if self.remove_container(&id).await.is_ok() {
                removed += 1;
            }
        }
        removed
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

    /// Removes containers left by `aci` processes that are gone. Returns how many.
    ///
    /// Only task containers, which carry the `aci.pid` of the process that created them, are
    /// candidates: the step containers of an environment image build inherit the image's
    /// `aci.run_id` label but belong to the daemon's builder, which removes them itself.
    pub async fn reap_orphans(&self) -> Result<usize, SandboxError> {
        let mut reaped = 0;
        for (id, labels) in self.list_labelled(None).await? {
            let Some(pid) = labels.get(LABEL_PID) else {
                continue;
            };
            let pid = pid.parse::<u32>().ok();
            let start = labels
                .get(LABEL_PID_START)
                .and_then(|s| s.parse::<u64>().ok());
            let alive = match (pid, start) {
                (Some(pid), Some(start)) => process_start_time(pid) == Some(start),
                _ => false,
            };
            if !alive && self.remove_container(&id).await.is_ok() {
                reaped += 1;
            }
        }
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
    /// work outside the session. Output is collected whole.
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
    let mut out = ExecOutput::default();
    if let StartExecResults::Attached { mut output, .. } = docker
        .start_exec(&exec.id, None)
        .await
        .map_err(docker_error)?
    {
        while let Some(item) = output.next().await {
            match item.map_err(docker_error)? {
                bollard::container::LogOutput::StdOut { message } => {
                    out.stdout.extend_from_slice(&message)
                }
                bollard::container::LogOutput::StdErr { message } => {
                    out.stderr.extend_from_slice(&message)
                }
                _ => {}
            }
        }
    }
    let inspected = docker.inspect_exec(&exec.id).await.map_err(docker_error)?;
    out.exit_code = inspected.exit_code.map(|c| c as i32);
    Ok(out)
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

/// The start time (clock ticks since boot) of a process, from `/proc/<pid>/stat`.
fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    // Fields after the command name start at field 3 (state); starttime is field 22.
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

fn own_start_time() -> u64 {
    process_start_time(std::process::id()).unwrap_or(0)
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
}

impl DockerTransport {
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
        match self.death_reason().await {
            None => Ok(()),
            Some(reason) => Err(SandboxError::ContainerDied {
                instance_id: self.instance_id.clone(),
                reason,
            }),
        }
    }

    async fn reset(&self) -> Result<(), SandboxError> {
        // Kill every process but init: a wedged session, or a fork bomb the interrupt could
        // not even start beside. The file system, and so the repository, stays as it is.
        let options = RestartContainerOptionsBuilder::default().t(0).build();
        self.runtime
            .docker
            .restart_container(&self.container_id, Some(options))
            .await
            .map_err(docker_error)
    }

    async fn teardown(mut self) -> Result<(), SandboxError> {
        self.torn_down = true;
        self.runtime.remove_container(&self.container_id).await
    }
}

impl Drop for DockerTransport {
    fn drop(&mut self) {
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
mod tests {
    use super::*;

    /// The counter at the end of a name made by [`container_name`], checking everything before
    /// it against `expected_prefix`.
    fn counter_after(name: &str, expected_prefix: &str) -> u64 {
        let rest = name
            .strip_prefix(expected_prefix)
            .unwrap_or_else(|| panic!("{name} does not start with {expected_prefix}"));
        rest.parse()
            .unwrap_or_else(|_| panic!("{name} does not end in a counter"))
    }

    #[test]
    fn container_names_keep_only_safe_characters() {
        let pid = std::process::id();
        let first = container_name("demo__calc-1", "r1");
        let n = counter_after(&first, &format!("aci-demo__calc-1-r1-{pid}-"));
        // Everything but ASCII letters, digits, `-`, `_` and `.` becomes `_`, one per character.
        let second = container_name("a/b c\u{e9}:d.e", "run:1/x");
        let m = counter_after(&second, &format!("aci-a_b_c__d.e-run_1_x-{pid}-"));
        assert!(m > n, "the counter grows: {first} then {second}");
        // A long id is cut to 100 characters before the pid and counter, which are kept whole.
        let long = container_name(&"x".repeat(300), "r");
        let k = counter_after(&long, &format!("aci-{}-{pid}-", "x".repeat(96)));
        assert!(k > m);
        assert!([&first, &second, &long].iter().all(|name| {
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        }));
    }

    /// Field 22 of `/proc/<pid>/stat`, the start time, as `cut` reads it (the process names
    /// used here have no spaces).
    fn start_time_by_cut(pid: u32) -> u64 {
        let out = std::process::Command::new("cut")
            .args(["-d", " ", "-f", "22", &format!("/proc/{pid}/stat")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn own_process_has_a_start_time() {
        let own = std::process::id();
        assert_eq!(process_start_time(own), Some(start_time_by_cut(own)));
        assert_eq!(own_start_time(), start_time_by_cut(own));
        // A process started later has a start time no earlier than this one's.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let child_start = process_start_time(child.id());
        assert_eq!(child_start, Some(start_time_by_cut(child.id())));
        assert!(child_start >= process_start_time(own));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            process_start_time(child.id()),
            None,
            "a reaped process has none"
        );
        assert_eq!(process_start_time(u32::MAX), None);
    }
}
