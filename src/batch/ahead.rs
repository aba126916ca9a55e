//! `--engine k8s` in a batch: pods are created ahead of need. When an instance starts, the
//! pods of the next instances of the queue (as many as there are workers, or
//! `env.k8s.ahead`) are created in the background, environment image and all, so that their
//! image pulls overlap the running tasks; when such an instance's turn comes, its pod is
//! already pulling or running. Pods created ahead that no instance takes (Ctrl-C) are deleted
//! with the run's other pods.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::StartError;
use crate::config::EnvConfig;
use crate::engine::Cluster;
use crate::image::pull::Notes;
use crate::instance::Instance;
use crate::provision::{ProvisionRequest, Provisioned, Provisioner, SpecUse};
use crate::sandbox::SandboxError;
use crate::sandbox::k8s::PendingPod;

/// A pod created for an instance, and what was provisioned for it.
pub struct AheadPod {
    /// The pod, maybe still pulling.
    pub pod: PendingPod,
    /// Its repository's origin and its environment image, for the trajectory.
    pub provisioned: Provisioned,
}

type Preparing = JoinHandle<Result<AheadPod, StartError>>;

#[derive(Default)]
struct Queue {
    /// Instances not started and not being prepared, in start order.
    waiting: VecDeque<Instance>,
    /// Instances whose pods are being (or were) created ahead.
    preparing: HashMap<String, Preparing>,
    /// How many pods may be created ahead.
    depth: usize,
    /// No more pods are created ahead (the run is ending).
    closed: bool,
}

/// A batch's cluster and its pods created ahead.
pub struct K8sRun {
    /// The cluster and the daemon that builds its images.
    pub cluster: Arc<Cluster>,
    /// Provisions the instances' environments and publishes their images to the cluster.
    pub provisioner: Arc<Provisioner>,
    env: EnvConfig,
    run_id: String,
    queue: Mutex<Queue>,
}

impl K8sRun {
    /// A run on `cluster` whose sandboxes follow `env`, labelled `run_id`.
    pub fn new(cluster: Arc<Cluster>, env: EnvConfig, run_id: String) -> Self {
        Self {
            cluster,
            provisioner: Arc::new(Provisioner::new()),
            env,
            run_id,
            queue: Mutex::new(Queue::default()),
        }
    }

    /// The instances that will start, in order, and how many pods to keep created ahead
    /// (`env.k8s.ahead`, else `workers`).
    pub fn plan(&self, instances: impl IntoIterator<Item = Instance>, workers: usize) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.waiting = instances.into_iter().collect();
            queue.depth = if self.env.k8s.ahead > 0 {
                self.env.k8s.ahead
            } else {
                workers.max(1)
            };
        }
    }

    /// The pod of `instance`: the one created ahead, else one created now. Before waiting for
    /// it, the pods of the next instances are created ahead.
    pub async fn take(
        &self,
        instance: &Instance,
        request: &ProvisionRequest<'_>,
    ) -> Result<AheadPod, StartError> {
        let id = &instance.instance_id;
        let ahead = match self.queue.lock() {
            Ok(mut queue) => {
                queue.waiting.retain(|waiting| &waiting.instance_id != id);
                let ahead = queue.preparing.remove(id);
                self.top_up(&mut queue);
                ahead
            }
            Err(_) => None,
        };
        match ahead {
            Some(handle) => handle.await.map_err(|e| {
                StartError::Sandbox(SandboxError::Session(format!(
                    "creating the pod ahead failed: {e}"
                )))
            })?,
            None => create_pod(&self.cluster, &self.provisioner, instance, request, false).await,
        }
    }

    fn top_up(&self, queue: &mut Queue) {
        while !queue.closed && queue.preparing.len() < queue.depth {
            let Some(next) = queue.waiting.pop_front() else {
                break;
            };
            let cluster = Arc::clone(&self.cluster);
            let provisioner = Arc::clone(&self.provisioner);
            let env = self.env.clone();
            let run_id = self.run_id.clone();
            let id = next.instance_id.clone();
            let handle = tokio::spawn(async move {
                let notes = Notes::quiet();
                let request = ProvisionRequest {
                    env: &env,
                    run_id: &run_id,
                    on_step: &|_: &str| {},
                    notes: &notes,
                };
                create_pod(&cluster, &provisioner, &next, &request, true).await
            });
            queue.preparing.insert(id, handle);
        }
    }

    /// Stops creating pods ahead and abandons those not taken (their pods are deleted when
    /// dropped, and by the run's final sweep).
    pub fn close(&self) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.closed = true;
            queue.waiting.clear();
            for (_, handle) in queue.preparing.drain() {
                handle.abort();
            }
        }
    }

    /// Closes, then deletes every pod this process made for the run.
    pub async fn finish(&self) {
        self.close();
        self.cluster.delete_run(&self.run_id).await;
    }
}

/// Provisions the instance as for Docker (its image, its repository, its environment image),
/// publishes the environment image to the cluster, and creates the pod.
async fn create_pod(
    cluster: &Cluster,
    provisioner: &Provisioner,
    instance: &Instance,
    request: &ProvisionRequest<'_>,
    created_ahead: bool,
) -> Result<AheadPod, StartError> {
    let provisioned = provisioner
        .provision(&cluster.docker, instance, request)
        .await
        .map_err(StartError::Prepare)?;
    let mut spec = provisioned.sandbox_spec(request.env, request.run_id, SpecUse::Agent);
    spec.image = provisioner.publish_to(cluster, &spec.image).await?;
    let pod = cluster
        .create(&spec, request.env.instance_timeout.get(), created_ahead)
        .await?;
    Ok(AheadPod { pod, provisioned })
}
