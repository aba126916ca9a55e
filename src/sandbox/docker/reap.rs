//! Reaping: the containers carrying aci's labels, those whose `aci` process is gone
//! removed, and this process's own swept before it exits.

use std::collections::HashMap;
use std::time::Duration;

use bollard::query_parameters::ListContainersOptionsBuilder;

use super::super::SandboxError;
use super::super::liveness::{
    ProcessState, Reap, Reaped, host_name, own_start_time, read_process, reap_verdict,
};
use super::{DockerRuntime, LABEL_HOST, LABEL_PID, LABEL_PID_START, LABEL_RUN_ID, docker_error};

impl DockerRuntime {
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
        self.list_with_labels(vec![label]).await
    }

    /// The containers (any state) that carry every one of `labels` (each `key` or
    /// `key=value`), with their labels.
    async fn list_with_labels(
        &self,
        labels: Vec<String>,
    ) -> Result<Vec<(String, HashMap<String, String>)>, SandboxError> {
        let filters = HashMap::from([("label".to_owned(), labels)]);
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

    /// Waits, at most `limit`, until no container carries `aci.run_id=run_id`; returns how
    /// many still do (none also when the daemon cannot be asked).
    pub async fn wait_for_no_containers_of(&self, run_id: &str, limit: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = self
                .list_with_labels(vec![format!("{LABEL_RUN_ID}={run_id}")])
                .await
                .map_or(0, |containers| containers.len());
            if left == 0 || tokio::time::Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Removes containers left by `aci` processes that are gone, reading liveness from
    /// `/proc` ([`Self::reap_orphans_with`]).
    pub async fn reap_orphans(&self) -> Result<Reaped, SandboxError> {
        self.reap_orphans_with(&read_process).await
    }

    /// Removes containers left by `aci` processes that are gone, as `read` tells liveness;
    /// those whose process's liveness cannot be read are kept and counted
    /// ([`crate::sandbox::liveness::reap_verdict`]).
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
        let host = host_name();
        for (id, labels) in self.list_labelled(None).await? {
            let Some(pid) = labels.get(LABEL_PID) else {
                continue;
            };
            // Another machine's process, whose pid this machine's `/proc` cannot judge.
            if labels.get(LABEL_HOST).is_some_and(|label| *label != host) {
                continue;
            }
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

    /// Removes every container of `run_id` that this process started, tracked or not: after
    /// tasks were aborted mid-request, a container can exist that no task recorded.
    pub async fn remove_own_containers(&self, run_id: &str) -> Result<usize, SandboxError> {
        let (pid, host) = (std::process::id().to_string(), host_name());
        let mut removed = 0;
        for (id, labels) in self.list_labelled(Some(run_id)).await? {
            let ours = labels.get(LABEL_PID) == Some(&pid)
                && labels.get(LABEL_HOST).is_none_or(|label| *label == host);
            if ours && self.remove_container(&id).await.is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes every task container this process created through this daemon that still
    /// exists, found by the labels `aci.pid` and `aci.pid_start` (so also one whose creation
    /// was cut short before it was tracked). Returns how many were removed. This is the last
    /// sweep before the process exits, whatever ended its work (a panic too):
    /// [`super::super::guard::run_guarded`].
    ///
    /// # Errors
    /// [`SandboxError::Docker`] when the containers cannot be listed.
    pub async fn remove_containers_of_this_process(&self) -> Result<usize, SandboxError> {
        let labels = vec![
            format!("{LABEL_PID}={}", std::process::id()),
            format!("{LABEL_PID_START}={}", own_start_time()),
            format!("{LABEL_HOST}={}", host_name()),
        ];
        let mut removed = 0;
        for (id, _) in self.list_with_labels(labels).await? {
            if self.remove_container(&id).await.is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}
