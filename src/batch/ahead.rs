//! Instances prepared ahead of need in a batch. When an instance starts, the next instances of
//! the queue (as many as there are workers, or `env.k8s.ahead` on a cluster) are prepared in the
//! background, so that their pulls and builds overlap the running tasks and, when such an
//! instance's turn comes, what it needs is ready or on its way:
//!
//! - on Docker ([`DockerAhead`]) their environments are provisioned: the image pulled as
//!   `env.pull` says, the repository, the environment image built. Nothing is created ahead but
//!   images (and mirrors), so abandoning the work ahead (Ctrl-C) only aborts its tasks; an image
//!   that several instances share is pulled or built once, by the provisioner's locks.
//! - on a cluster ([`K8sRun`]) their pods are created too, environment image and all, so that the
//!   nodes' image pulls overlap the running tasks. Pods created ahead that no instance takes
//!   (Ctrl-C) are deleted with the run's other pods.
//!
//! Which instances are prepared when is [`Queue`]'s decision, the same for both.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::StartError;
use super::progress::Feed;
use crate::config::EnvConfig;
use crate::engine::Cluster;
use crate::image::pull::Notes;
use crate::instance::Instance;
use crate::provision::{ProvisionRequest, Provisioned, Provisioner, SpecUse};
use crate::sandbox::SandboxError;
use crate::sandbox::docker::DockerRuntime;
use crate::sandbox::k8s::PendingPod;
use crate::source::PrepareError;

/// Which instances are being prepared ahead, and which come next: pure bookkeeping over the
/// handles `H` of the preparations (tasks, or anything a test counts).
#[derive(Debug)]
pub struct Queue<H> {
    /// Instances not started and not being prepared, in start order.
    waiting: VecDeque<Instance>,
    /// Instances being (or done being) prepared ahead, not yet taken.
    preparing: HashMap<String, H>,
    /// How many instances may be prepared ahead at once.
    depth: usize,
    /// Nothing more is prepared ahead (the run is ending).
    closed: bool,
}

impl<H> Default for Queue<H> {
    fn default() -> Self {
        Self {
            waiting: VecDeque::new(),
            preparing: HashMap::new(),
            depth: 0,
            closed: false,
        }
    }
}

impl<H> Queue<H> {
    /// The instances that will start, in order, and how many to keep prepared ahead.
    pub fn plan(&mut self, instances: impl IntoIterator<Item = Instance>, depth: usize) {
        self.waiting = instances.into_iter().collect();
        self.depth = depth;
    }

    /// The instance `id` starts: it leaves the queue, and its preparation, if one was started
    /// ahead, is handed over. Then the next instances are prepared with `prepare`, until
    /// `depth` preparations are under way (or done and not yet taken).
    pub fn take(&mut self, id: &str, prepare: impl FnMut(Instance) -> H) -> Option<H> {
        self.waiting.retain(|waiting| waiting.instance_id != id);
        let ahead = self.preparing.remove(id);
        self.top_up(prepare);
        ahead
    }

    fn top_up(&mut self, mut prepare: impl FnMut(Instance) -> H) {
        while !self.closed && self.preparing.len() < self.depth {
            let Some(next) = self.waiting.pop_front() else {
                break;
            };
            let id = next.instance_id.clone();
            let handle = prepare(next);
            self.preparing.insert(id, handle);
        }
    }

    /// Nothing more is prepared ahead; the preparations not taken are handed back, to abort.
    pub fn close(&mut self) -> Vec<H> {
        self.closed = true;
        self.waiting.clear();
        self.preparing.drain().map(|(_, handle)| handle).collect()
    }

    /// The ids being prepared ahead, sorted.
    pub fn preparing(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.preparing.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }
}

/// A [`Queue`] of tasks, shared by the batch's workers.
struct Ahead<T> {
    queue: Mutex<Queue<JoinHandle<T>>>,
}

impl<T> Default for Ahead<T> {
    fn default() -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
        }
    }
}

impl<T> Ahead<T> {
    fn plan(&self, instances: impl IntoIterator<Item = Instance>, depth: usize) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.plan(instances, depth);
        }
    }

    fn take(
        &self,
        id: &str,
        prepare: impl FnMut(Instance) -> JoinHandle<T>,
    ) -> Option<JoinHandle<T>> {
        self.queue
            .lock()
            .ok()
            .and_then(|mut queue| queue.take(id, prepare))
    }

    /// Closes the queue and aborts its tasks; returns how many were still running.
    fn close(&self) -> usize {
        let Ok(mut queue) = self.queue.lock() else {
            return 0;
        };
        let mut running = 0;
        for handle in queue.close() {
            if !handle.is_finished() {
                running += 1;
            }
            handle.abort();
        }
        running
    }
}

/// How many instances to prepare ahead: `configured` when above 0, else one per worker.
pub fn depth(configured: usize, workers: usize) -> usize {
    if configured > 0 {
        configured
    } else {
        workers.max(1)
    }
}

/// A batch on Docker and the environments provisioned ahead for it.
pub struct DockerAhead {
    runtime: DockerRuntime,
    provisioner: Arc<Provisioner>,
    env: EnvConfig,
    run_id: String,
    ahead: Ahead<Result<Provisioned, PrepareError>>,
    /// How many instances took an environment provisioned ahead.
    taken_ahead: AtomicUsize,
    /// How many provisionings were aborted while they ran (an image build among them, maybe).
    aborted: AtomicUsize,
    /// Where the work ahead's pull and clone lines go: the batch's progress display.
    lines: std::sync::OnceLock<Feed>,
}

impl DockerAhead {
    /// A run on `runtime` whose environments `provisioner` makes as `env` says.
    pub fn new(
        runtime: DockerRuntime,
        provisioner: Arc<Provisioner>,
        env: EnvConfig,
        run_id: String,
    ) -> Self {
        Self {
            runtime,
            provisioner,
            env,
            run_id,
            ahead: Ahead::default(),
            taken_ahead: AtomicUsize::new(0),
            aborted: AtomicUsize::new(0),
            lines: std::sync::OnceLock::new(),
        }
    }

    /// Sends the work ahead's pull and clone lines to `feed` (the first feed given stays).
    pub fn send_lines_to(&self, feed: Feed) {
        let _ = self.lines.set(feed);
    }

    /// How many instances so far took an environment provisioned ahead (rather than
    /// provisioning their own when they started).
    pub fn taken_ahead(&self) -> usize {
        self.taken_ahead.load(Ordering::Relaxed)
    }

    /// The instances that will start, in order; as many as there are `workers` are kept
    /// provisioned ahead.
    pub fn plan(&self, instances: impl IntoIterator<Item = Instance>, workers: usize) {
        self.ahead.plan(instances, depth(0, workers));
    }

    /// The environment of `instance`: the one provisioned ahead, else one provisioned now (with
    /// `request`'s progress lines). Before waiting for it, the next instances' environments
    /// start being provisioned ahead.
    ///
    /// # Errors
    /// Its image, repository or environment image could not be had.
    pub async fn take(
        &self,
        instance: &Instance,
        request: &ProvisionRequest<'_>,
    ) -> Result<Provisioned, PrepareError> {
        let ahead = self
            .ahead
            .take(&instance.instance_id, |next| self.provision_ahead(next));
        if let Some(handle) = ahead {
            // A preparation that was aborted or panicked is done again, now.
            if let Ok(provisioned) = handle.await {
                self.taken_ahead.fetch_add(1, Ordering::Relaxed);
                return provisioned;
            }
        }
        self.provisioner
            .provision(&self.runtime, instance, request)
            .await
    }

    fn provision_ahead(&self, next: Instance) -> JoinHandle<Result<Provisioned, PrepareError>> {
        let runtime = self.runtime.clone();
        let provisioner = Arc::clone(&self.provisioner);
        let env = self.env.clone();
        let run_id = self.run_id.clone();
        let feed = self.lines.get().cloned();
        tokio::spawn(async move {
            let line = move |text: &str| {
                if let Some(feed) = &feed {
                    feed.line(text);
                }
            };
            let notes = Notes {
                line: &line,
                activity: &|_| {},
            };
            let request = ProvisionRequest {
                env: &env,
                run_id: &run_id,
                on_step: &|_: &str| {},
                notes: &notes,
            };
            provisioner.provision(&runtime, &next, &request).await
        })
    }

    /// Stops provisioning ahead and aborts what was not taken (nothing but images and
    /// mirrors is made ahead, so nothing is left to remove).
    pub fn close(&self) {
        let running = self.ahead.close();
        self.aborted.fetch_add(running, Ordering::Relaxed);
    }

    /// After [`Self::close`]: when it aborted provisionings that were running, waits (at most
    /// [`SETTLE_LIMIT`]) until the daemon has removed the containers of the image builds they
    /// left (the builder removes a cancelled step's container on its own, after the client is
    /// gone). Returns how many are still there.
    pub async fn settle(&self) -> usize {
        if self.aborted.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.runtime
            .wait_for_no_containers_of(&self.run_id, SETTLE_LIMIT)
            .await
    }
}

/// How long [`DockerAhead::settle`] waits for the daemon.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A pod created for an instance, and what was provisioned for it.
pub struct AheadPod {
    /// The pod, maybe still pulling.
    pub pod: PendingPod,
    /// Its repository's origin and its environment image, for the trajectory.
    pub provisioned: Provisioned,
}

/// A batch's cluster and its pods created ahead.
pub struct K8sRun {
    /// The cluster and the daemon that builds its images.
    pub cluster: Arc<Cluster>,
    /// Provisions the instances' environments and publishes their images to the cluster.
    pub provisioner: Arc<Provisioner>,
    env: EnvConfig,
    run_id: String,
    ahead: Ahead<Result<AheadPod, StartError>>,
}

impl K8sRun {
    /// A run on `cluster` whose sandboxes follow `env`, labelled `run_id`.
    pub fn new(cluster: Arc<Cluster>, env: EnvConfig, run_id: String) -> Self {
        Self {
            cluster,
            provisioner: Arc::new(Provisioner::new()),
            env,
            run_id,
            ahead: Ahead::default(),
        }
    }

    /// The instances that will start, in order, and how many pods to keep created ahead
    /// (`env.k8s.ahead`, else `workers`).
    pub fn plan(&self, instances: impl IntoIterator<Item = Instance>, workers: usize) {
        self.ahead
            .plan(instances, depth(self.env.k8s.ahead, workers));
    }

    /// The pod of `instance`: the one created ahead, else one created now. Before waiting for
    /// it, the pods of the next instances are created ahead.
    pub async fn take(
        &self,
        instance: &Instance,
        request: &ProvisionRequest<'_>,
    ) -> Result<AheadPod, StartError> {
        let ahead = self
            .ahead
            .take(&instance.instance_id, |next| self.create_ahead(next));
        match ahead {
            Some(handle) => handle.await.map_err(|e| {
                StartError::Sandbox(SandboxError::Session(format!(
                    "creating the pod ahead failed: {e}"
                )))
            })?,
            None => create_pod(&self.cluster, &self.provisioner, instance, request, false).await,
        }
    }

    fn create_ahead(&self, next: Instance) -> JoinHandle<Result<AheadPod, StartError>> {
        let cluster = Arc::clone(&self.cluster);
        let provisioner = Arc::clone(&self.provisioner);
        let env = self.env.clone();
        let run_id = self.run_id.clone();
        tokio::spawn(async move {
            let notes = Notes::quiet();
            let request = ProvisionRequest {
                env: &env,
                run_id: &run_id,
                on_step: &|_: &str| {},
                notes: &notes,
            };
            create_pod(&cluster, &provisioner, &next, &request, true).await
        })
    }

    /// Stops creating pods ahead and abandons those not taken (their pods are deleted when
    /// dropped, and by the run's final sweep).
    pub fn close(&self) {
        let _running = self.ahead.close();
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::{Queue, depth};
    use crate::instance::{Instance, parse_instances};

    fn instances(ids: &[&str]) -> Vec<Instance> {
        let text: String = ids
            .iter()
            .map(|id| {
                format!(
                    "{{\"instance_id\": \"{id}\", \"problem_statement\": \"x\", \"repo\": \"o/r\", \"base_commit\": \"abc\"}}\n"
                )
            })
            .collect();
        parse_instances(&text, None).unwrap().instances
    }

    /// A queue whose preparations are the prepared ids, recorded in `started` too.
    fn take(queue: &mut Queue<String>, id: &str, started: &mut Vec<String>) -> Option<String> {
        queue.take(id, |next| {
            started.push(next.instance_id.clone());
            next.instance_id
        })
    }

    #[test]
    fn each_start_keeps_the_next_instances_prepared_up_to_the_depth_in_queue_order() {
        let mut queue = Queue::default();
        queue.plan(instances(&["a", "b", "c", "d", "e"]), 2);
        let mut started = Vec::new();
        // `a` was not prepared ahead: it provisions itself; `b` and `c` start ahead.
        assert_eq!(take(&mut queue, "a", &mut started), None);
        assert_eq!(started, ["b", "c"]);
        assert_eq!(queue.preparing(), ["b", "c"]);
        // `b`'s preparation is handed over and `d` takes its place.
        assert_eq!(take(&mut queue, "b", &mut started).as_deref(), Some("b"));
        assert_eq!(started, ["b", "c", "d"]);
        assert_eq!(queue.preparing(), ["c", "d"]);
        // A preparation done but not taken still counts: nothing more starts until one is.
        assert_eq!(take(&mut queue, "x", &mut started), None);
        assert_eq!(started, ["b", "c", "d"]);
        assert_eq!(take(&mut queue, "c", &mut started).as_deref(), Some("c"));
        assert_eq!(take(&mut queue, "d", &mut started).as_deref(), Some("d"));
        assert_eq!(started, ["b", "c", "d", "e"]);
        assert_eq!(take(&mut queue, "e", &mut started).as_deref(), Some("e"));
        assert!(queue.preparing().is_empty());
        assert_eq!(started.len(), 4, "each instance is prepared at most once");
    }

    #[test]
    fn an_instance_that_starts_before_its_turn_ahead_is_not_prepared_again() {
        let mut queue = Queue::default();
        queue.plan(instances(&["a", "b", "c", "d"]), 1);
        let mut started = Vec::new();
        // `c` starts first (its turn came before any preparation ahead reached it).
        assert_eq!(take(&mut queue, "c", &mut started), None);
        assert_eq!(started, ["a"]);
        assert_eq!(take(&mut queue, "a", &mut started).as_deref(), Some("a"));
        assert_eq!(started, ["a", "b"]);
        assert_eq!(take(&mut queue, "b", &mut started).as_deref(), Some("b"));
        // `c` is not in the queue any more: `d` comes next.
        assert_eq!(started, ["a", "b", "d"]);
    }

    #[test]
    fn closing_hands_back_what_was_not_taken_and_prepares_nothing_more() {
        let mut queue = Queue::default();
        queue.plan(instances(&["a", "b", "c", "d"]), 2);
        let mut started = Vec::new();
        take(&mut queue, "a", &mut started);
        let mut abandoned = queue.close();
        abandoned.sort();
        assert_eq!(abandoned, ["b", "c"]);
        assert_eq!(take(&mut queue, "b", &mut started), None);
        assert_eq!(started, ["b", "c"]);
        assert!(queue.preparing().is_empty());
    }

    #[test]
    fn a_queue_never_planned_prepares_nothing() {
        let mut queue = Queue::default();
        let mut started = Vec::new();
        assert_eq!(take(&mut queue, "a", &mut started), None);
        assert!(started.is_empty());
    }

    #[test]
    fn the_depth_is_the_configured_one_else_one_per_worker() {
        assert_eq!(depth(0, 8), 8);
        assert_eq!(depth(3, 8), 3);
        assert_eq!(depth(0, 0), 1);
    }
}
