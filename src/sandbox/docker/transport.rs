//! The session transport of a task container ([`DockerTransport`]): an attached `docker exec`
//! of bash per session, a second exec beside it, and the container's health (died, stopped
//! from outside, over its disk quota) read from the daemon.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::query_parameters::{EventsOptionsBuilder, RestartContainerOptionsBuilder};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::super::transport::{Channel, Frame, SESSION_ENV, Transport};
use super::super::{ExecOutput, SandboxError, ShellSandbox};
use super::containers::{self, unix_now};
use super::{DockerRuntime, disk, docker_error};

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
    pub(super) runtime: DockerRuntime,
    pub(super) container_id: String,
    pub(super) instance_id: String,
    pub(super) workdir: String,
    pub(super) torn_down: bool,
    /// When aci last restarted the container itself (Unix seconds): kills and stops the
    /// daemon logged before then were aci's own (the disk watchdog's restart too).
    pub(super) own_restart_at: Arc<Mutex<f64>>,
    /// The quota, in MiB.
    pub(super) disk_mb: u64,
    /// Whether the disk watchdog stopped the task.
    pub(super) quota: Arc<tokio::sync::watch::Sender<disk::QuotaState>>,
    /// The quota filesystem, when there is one.
    pub(super) disk_usage: Option<Arc<disk::LayerDisk>>,
    pub(super) disk_watchdog: tokio::task::JoinHandle<()>,
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
        containers::exec_once(&self.runtime.docker, &self.container_id, argv).await
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
