//! The Kubernetes engine: the only module that talks to a Kubernetes API server (its requests
//! all go through [`api`]).
//!
//! [`K8sRuntime`] is the cluster connection (from [`kubeconfig`]): it creates one pod per task
//! ([`manifest::pod`]: `sleep infinity` in the task's image, never restarted, with a deadline
//! and the task's limits) behind a NetworkPolicy that takes its network away, watches it until
//! it runs ([`status::StartWatch`]), and deletes it. The agent's persistent shell is one exec
//! stream held open per pod ([`PodTransport`]), over a WebSocket speaking
//! `v5.channel.k8s.io` or, from older servers, `v4.channel.k8s.io` ([`channel`]); an interrupt
//! is a second exec. Busy answers (409 on create, 429, 5xx) are retried with `Retry-After`.
//!
//! Every object carries `aci.run_id`, `aci.instance_id` and its owner's host, pid and start
//! time, so that a run deletes its own by label and the next start reaps what a dead run left.

mod api;
pub mod channel;
pub mod kubeconfig;
pub mod manifest;
pub mod status;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::hint::with_hint;

use super::docker::{LABEL_PID, LABEL_PID_START};
use super::liveness::{ProcessState, Reap, own_start_time, read_process, reap_verdict};
use super::transport::{Channel, Transport};
use super::{ExecOutput, SandboxError, SandboxSpec, ShellSandbox, repo};
use api::{Api, Method, StatusCode, WatchNext, api_error, encode, refused};
use kubeconfig::ClusterConfig;
use manifest::{CONTAINER, LABEL_HOST, LABEL_SANDBOX, Owner, PodTemplate, PullPolicy};
use status::{PodState, StartDecision, StartLimits, StartWatch};

/// The longest single watch request; the watch is renewed after it.
const WATCH_SECS: u64 = 300;
/// A NetworkPolicy whose pod is gone is reaped only when it is older than this: a run on
/// another machine creates its policy just before its pod.
const POLICY_REAP_AGE: Duration = Duration::from_secs(600);
/// Kills every process of the container but its init (`sleep`) and the killer itself
/// (`kill(-1)` spares both): what a wedged session leaves.
const RESET_SCRIPT: &str = "for round in 1 2 3; do kill -9 -1 2>/dev/null; done; exit 0";

/// The settings of `--engine k8s` that are not the cluster's own.
#[derive(Debug, Clone)]
pub struct K8sSettings {
    /// The namespace; `None`: the kubeconfig's, else `default`.
    pub namespace: Option<String>,
    /// The kubeconfig context; `None`: the current one.
    pub context: Option<String>,
    /// When the kubelet pulls task images.
    pub pull_policy: PullPolicy,
    /// How long a pod may take to be scheduled, and then to pull and start.
    pub start_limits: StartLimits,
    /// A secret for pulling images.
    pub pull_secret: Option<String>,
    /// Node labels task pods must match.
    pub node_selector: BTreeMap<String, String>,
}

/// A connection to a cluster plus the pods this process has created.
#[derive(Clone)]
pub struct K8sRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    api: Api,
    namespace: String,
    settings: K8sSettings,
    owner: Owner,
    source: String,
    /// Pods (and their policies) created and not yet deleted.
    live: Mutex<BTreeMap<String, Option<String>>>,
}

/// A key unique to one sandbox of this process: pid, time and a counter, DNS-safe.
fn sandbox_key() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() & 0xffff_ffff_ffff)
        .unwrap_or(0);
    format!("{:x}-{nanos:x}-{n}", std::process::id())
}

/// Deletes every pod and policy this process created in each of `clusters`, by the
/// process's labels (pid and host), whatever run they serve; how many pods. The panic guard
/// ([`super::guard::run_guarded`]) calls it with the clusters its work connected to, once the
/// work has ended.
pub async fn delete_pods_of_this_process(clusters: &[K8sRuntime]) -> usize {
    let mut deleted = 0;
    for runtime in clusters {
        deleted += runtime.delete_own_of_any_run().await.unwrap_or(0);
    }
    deleted
}

impl K8sRuntime {
    /// Reads the cluster configuration ([`kubeconfig::load`]) and checks that the namespace's
    /// pods can be listed.
    pub async fn connect(settings: K8sSettings) -> Result<Self, SandboxError> {
        let config =
            kubeconfig::load(settings.context.as_deref()).map_err(|e| api_error(with_hint(&e)))?;
        Self::connect_with(config, settings).await
    }

    /// [`K8sRuntime::connect`] with a cluster configuration already read.
    pub async fn connect_with(
        config: ClusterConfig,
        settings: K8sSettings,
    ) -> Result<Self, SandboxError> {
        let namespace = settings
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .or_else(|| config.namespace.clone())
            .unwrap_or_else(|| "default".to_owned());
        let runtime = Self {
            inner: Arc::new(Inner {
                api: Api::new(&config)?,
                namespace,
                settings,
                owner: Owner {
                    host: super::liveness::host_name(),
                    pid: std::process::id(),
                    pid_start: own_start_time(),
                },
                source: config.source.clone(),
                live: Mutex::new(BTreeMap::new()),
            }),
        };
        let path = format!("/api/v1/namespaces/{}/pods?limit=1", runtime.namespace());
        runtime
            .inner
            .api
            .expect(Method::GET, &path, None, false)
            .await
            .map_err(|e| api_error(format!("cannot reach the cluster ({}): {e}", config.source)))?;
        super::guard::watch_cluster(&runtime);
        Ok(runtime)
    }

    /// The namespace of the pods.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// Where the cluster configuration came from.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    fn api(&self) -> &Api {
        &self.inner.api
    }

    fn pods_path(&self) -> String {
        format!("/api/v1/namespaces/{}/pods", self.namespace())
    }

    fn policies_path(&self) -> String {
        format!(
            "/apis/networking.k8s.io/v1/namespaces/{}/networkpolicies",
            self.namespace()
        )
    }

    /// Starts a task pod as `spec` says (its image a reference the nodes can pull) and opens
    /// its shell. `task_secs` is the task's own time limit, for the pod's deadline.
    pub async fn start(
        &self,
        spec: &SandboxSpec,
        task_secs: f64,
    ) -> Result<PodSandbox, SandboxError> {
        self.create(spec, task_secs, false).await?.ready().await
    }

    /// Creates a task pod (and, without network, its NetworkPolicy first) and returns at once:
    /// the image pull goes on while the caller does other work. `created_ahead` lengthens the
    /// deadline by one task time, for a pod that waits for a free worker.
    pub async fn create(
        &self,
        spec: &SandboxSpec,
        task_secs: f64,
        created_ahead: bool,
    ) -> Result<PendingPod, SandboxError> {
        let sandbox = sandbox_key();
        let owner = &self.inner.owner;
        let settings = &self.inner.settings;
        let policy = if spec.network {
            None
        } else {
            let body = manifest::deny_all_policy(spec, owner, &sandbox);
            let (status, value) = self
                .api()
                .send(Method::POST, &self.policies_path(), Some(&body), false)
                .await?;
            // 409: an earlier attempt whose answer was lost made it; the name is this sandbox's.
            if !status.is_success() && status != StatusCode::CONFLICT {
                return Err(refused(
                    &Method::POST,
                    &self.policies_path(),
                    status,
                    &value,
                ));
            }
            Some(manifest::policy_name(&sandbox))
        };
        let pull_secs = settings.start_limits.pull.as_secs_f64();
        let template = PodTemplate {
            image: &spec.image,
            pull_policy: settings.pull_policy,
            active_deadline: manifest::active_deadline_seconds(task_secs, pull_secs, created_ahead),
            owner,
            sandbox: &sandbox,
            pull_secret: settings.pull_secret.as_deref(),
            node_selector: &settings.node_selector,
        };
        let body = manifest::pod(spec, &template);
        let created = self
            .api()
            .expect(Method::POST, &self.pods_path(), Some(&body), true)
            .await;
        let name = match created.map(|pod| pod["metadata"]["name"].as_str().map(str::to_owned)) {
            Ok(Some(name)) => name,
            failed => {
                if let Some(policy) = &policy {
                    let _ = self.delete_policy(policy).await;
                }
                return Err(match failed {
                    Err(error) => error,
                    _ => api_error("the created pod has no name"),
                });
            }
        };
        if let Ok(mut live) = self.inner.live.lock() {
            live.insert(name.clone(), policy.clone());
        }
        Ok(PendingPod {
            runtime: self.clone(),
            name,
            policy,
            spec: spec.clone(),
            created: Instant::now(),
            consumed: false,
        })
    }

    async fn get_pod(&self, name: &str) -> Result<Option<Value>, SandboxError> {
        let path = format!("{}/{name}", self.pods_path());
        let (status, value) = self.api().send(Method::GET, &path, None, false).await?;
        match status {
            StatusCode::NOT_FOUND => Ok(None),
            status if status.is_success() => Ok(Some(value)),
            status => Err(refused(&Method::GET, &path, status, &value)),
        }
    }

    /// Watches pod `name` until it runs, or until [`StartWatch`] gives up on it.
    async fn wait_running(&self, name: &str, created: Instant) -> Result<(), SandboxError> {
        let mut watch = StartWatch::new(created, self.inner.settings.start_limits);
        loop {
            let pod = self
                .get_pod(name)
                .await?
                .ok_or_else(|| api_error(format!("pod {name} was deleted while it started")))?;
            let mut state = status::pod_state(&pod, CONTAINER);
            let mut deadline = match watch.observe(&state, Instant::now()) {
                StartDecision::Ready => return Ok(()),
                StartDecision::Fail(why) => return Err(api_error(format!("pod {name}: {why}"))),
                StartDecision::Wait(deadline) => deadline,
            };
            let version = pod["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            let secs = deadline
                .saturating_duration_since(Instant::now())
                .as_secs()
                .clamp(1, WATCH_SECS);
            let path = format!(
                "{}?watch=true&fieldSelector=metadata.name%3D{name}&resourceVersion={version}&timeoutSeconds={secs}",
                self.pods_path()
            );
            let mut events = self.api().watch(&path).await?;
            loop {
                match events.next(deadline).await {
                    WatchNext::Ended => break,
                    WatchNext::Quiet => {}
                    WatchNext::Event(event) => match event["type"].as_str() {
                        Some("DELETED") => {
                            return Err(api_error(format!(
                                "pod {name} was deleted while it started"
                            )));
                        }
                        Some("ADDED" | "MODIFIED") => {
                            state = status::pod_state(&event["object"], CONTAINER);
                        }
                        _ => {}
                    },
                }
                match watch.observe(&state, Instant::now()) {
                    StartDecision::Ready => return Ok(()),
                    StartDecision::Fail(why) => {
                        return Err(api_error(format!("pod {name}: {why}")));
                    }
                    StartDecision::Wait(next) => deadline = next,
                }
            }
        }
    }

    /// Deletes a pod at once (no grace period); a pod already gone is fine.
    async fn delete_pod(&self, name: &str) -> Result<(), SandboxError> {
        let path = format!("{}/{name}?gracePeriodSeconds=0", self.pods_path());
        let (status, value) = self.api().send(Method::DELETE, &path, None, false).await?;
        if let Ok(mut live) = self.inner.live.lock() {
            live.remove(name);
        }
        if status.is_success() || status == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(refused(&Method::DELETE, &path, status, &value))
        }
    }

    async fn delete_policy(&self, name: &str) -> Result<(), SandboxError> {
        let path = format!("{}/{name}", self.policies_path());
        let (status, value) = self.api().send(Method::DELETE, &path, None, false).await?;
        if status.is_success() || status == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(refused(&Method::DELETE, &path, status, &value))
        }
    }

    /// Deletes a sandbox's pod, then its policy (so the pod never runs with a network).
    async fn delete_sandbox(&self, pod: &str, policy: Option<&str>) -> Result<(), SandboxError> {
        let deleted = self.delete_pod(pod).await;
        if let Some(policy) = policy {
            self.delete_policy(policy).await?;
        }
        deleted
    }

    async fn list(&self, path: &str, selector: &str) -> Result<Vec<Value>, SandboxError> {
        let path = format!("{path}?labelSelector={}", encode(selector));
        let list = self.api().expect(Method::GET, &path, None, false).await?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    /// The names of the pods of one run, or of every aci run, in any phase.
    pub async fn list_pods(&self, run_id: Option<&str>) -> Result<Vec<String>, SandboxError> {
        let pods = self
            .list(&self.pods_path(), &manifest::run_selector(run_id))
            .await?;
        Ok(pods.iter().filter_map(object_name).collect())
    }

    /// The names of the NetworkPolicies of one run, or of every aci run.
    pub async fn list_policies(&self, run_id: Option<&str>) -> Result<Vec<String>, SandboxError> {
        let policies = self
            .list(&self.policies_path(), &manifest::run_selector(run_id))
            .await?;
        Ok(policies.iter().filter_map(object_name).collect())
    }

    /// Deletes every pod and policy this process created that is still there (Ctrl-C, the end
    /// of a run).
    pub async fn delete_all_started(&self) -> usize {
        let live: Vec<(String, Option<String>)> = self
            .inner
            .live
            .lock()
            .map(|live| live.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let mut deleted = 0;
        for (pod, policy) in live {
            if self.delete_sandbox(&pod, policy.as_deref()).await.is_ok() {
                deleted += 1;
            }
        }
        deleted
    }

    /// Deletes every pod and policy of `run_id` that this process created, tracked or not (a
    /// create whose answer never came still made its pod). Returns how many pods.
    pub async fn delete_own(&self, run_id: &str) -> Result<usize, SandboxError> {
        let selector = format!(
            "{},{}",
            manifest::run_selector(Some(run_id)),
            self.owner_selector()
        );
        self.delete_selected(&selector).await
    }

    /// [`K8sRuntime::delete_own`] for every run.
    async fn delete_own_of_any_run(&self) -> Result<usize, SandboxError> {
        self.delete_selected(&self.owner_selector()).await
    }

    /// The labels of the pods this process creates: its pid and its host.
    fn owner_selector(&self) -> String {
        format!(
            "{LABEL_PID}={},{LABEL_HOST}={}",
            self.inner.owner.pid,
            manifest::label_value(&self.inner.owner.host)
        )
    }

    async fn delete_selected(&self, selector: &str) -> Result<usize, SandboxError> {
        let mut deleted = 0;
        for pod in self.list(&self.pods_path(), selector).await? {
            if let Some(name) = object_name(&pod)
                && self.delete_pod(&name).await.is_ok()
            {
                deleted += 1;
            }
        }
        for policy in self.list(&self.policies_path(), selector).await? {
            if let Some(name) = object_name(&policy) {
                let _ = self.delete_policy(&name).await;
            }
        }
        Ok(deleted)
    }

    /// Deletes what runs that are gone left: pods that ended, pods and policies whose `aci`
    /// process on this machine is gone, and policies whose pod is gone. Pods of other machines
    /// that still run are left alone (their deadline ends them). Returns how many pods.
    pub async fn reap_orphans(&self) -> Result<usize, SandboxError> {
        let mut reaped = 0;
        let mut alive = BTreeSet::new();
        for pod in self
            .list(&self.pods_path(), &manifest::run_selector(None))
            .await?
        {
            let Some(name) = object_name(&pod) else {
                continue;
            };
            let ended = matches!(
                pod["status"]["phase"].as_str(),
                Some("Succeeded" | "Failed")
            );
            if ended || self.owner_is_gone(&pod) {
                if self.delete_pod(&name).await.is_ok() {
                    reaped += 1;
                }
            } else if let Some(key) = pod["metadata"]["labels"][LABEL_SANDBOX].as_str() {
                alive.insert(key.to_owned());
            }
        }
        for policy in self
            .list(&self.policies_path(), &manifest::run_selector(None))
            .await?
        {
            let Some(name) = object_name(&policy) else {
                continue;
            };
            let key = policy["metadata"]["labels"][LABEL_SANDBOX]
                .as_str()
                .unwrap_or_default();
            let old = policy["metadata"]["creationTimestamp"]
                .as_str()
                .and_then(kubeconfig::parse_rfc3339)
                .and_then(|at| SystemTime::now().duration_since(at).ok())
                .is_some_and(|age| age > POLICY_REAP_AGE);
            if self.owner_is_gone(&policy) || (!alive.contains(key) && old) {
                let _ = self.delete_policy(&name).await;
            }
        }
        Ok(reaped)
    }

    /// Whether an object was made by an `aci` process of this machine that no longer runs.
    fn owner_is_gone(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        if labels[LABEL_HOST].as_str()
            != Some(manifest::label_value(&self.inner.owner.host).as_str())
        {
            return false;
        }
        let pid = labels[LABEL_PID]
            .as_str()
            .and_then(|p| p.parse::<u32>().ok());
        let start = labels[LABEL_PID_START]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok());
        // Where `/proc` cannot be read, no process of this machine counts as gone.
        let state = match pid {
            _ if read_process(std::process::id()) == ProcessState::Unknown => ProcessState::Unknown,
            Some(pid) => read_process(pid),
            None => ProcessState::Absent,
        };
        reap_verdict(start, state) == Reap::Remove
    }

    /// Unpacks a tar archive at `/` in `pod`, through an exec's stdin (`head -c` reads exactly
    /// the archive, so it works without closing stdin, under v4 too).
    async fn upload_tar(&self, pod: &str, tar: &[u8]) -> Result<(), SandboxError> {
        let script = format!("head -c {} | tar -x -C /", tar.len());
        let argv = ["sh", "-c", &script].map(str::to_owned);
        let out = self
            .api()
            .exec_once(self.namespace(), pod, &argv, Some(tar))
            .await?;
        if out.exit_code == Some(0) {
            Ok(())
        } else {
            Err(api_error(format!(
                "copying the repository into {pod} failed ({:?}): {}",
                out.exit_code,
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }
}

fn object_name(object: &Value) -> Option<String> {
    object["metadata"]["name"].as_str().map(str::to_owned)
}

/// A task pod created and maybe still pulling its image: [`PendingPod::ready`] waits until it
/// runs and opens its shell. Dropped unused, it deletes the pod.
pub struct PendingPod {
    runtime: K8sRuntime,
    name: String,
    policy: Option<String>,
    spec: SandboxSpec,
    created: Instant,
    consumed: bool,
}

impl PendingPod {
    /// The pod's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits until the pod runs, copies the repository in when the spec has one, and opens
    /// the shell. On failure the pod is deleted.
    pub async fn ready(mut self) -> Result<PodSandbox, SandboxError> {
        let runtime = self.runtime.clone();
        let started = async {
            runtime.wait_running(&self.name, self.created).await?;
            if let Some(source) = &self.spec.repo {
                let prefix = self.spec.repo_dir.trim_start_matches('/').to_owned();
                let source = source.clone();
                let tar =
                    tokio::task::spawn_blocking(move || repo::tar_repository(&source, &prefix))
                        .await
                        .map_err(|e| {
                            SandboxError::Session(format!("repository task failed: {e}"))
                        })??;
                runtime.upload_tar(&self.name, &tar).await?;
            }
            Ok::<(), SandboxError>(())
        }
        .await;
        if let Err(error) = started {
            let _ = runtime
                .delete_sandbox(&self.name, self.policy.as_deref())
                .await;
            self.consumed = true;
            return Err(error);
        }
        self.consumed = true;
        let transport = PodTransport {
            runtime,
            pod: self.name.clone(),
            policy: self.policy.clone(),
            instance_id: self.spec.instance_id.clone(),
            disk_mb: self.spec.limits.disk_mb,
            torn_down: false,
        };
        let baseline = repo::Baseline::for_source(self.spec.repo.as_ref());
        ShellSandbox::open(transport, &self.spec, self.spec.repo_dir.clone(), baseline).await
    }
}

impl Drop for PendingPod {
    fn drop(&mut self) {
        if !self.consumed {
            spawn_delete(&self.runtime, &self.name, self.policy.clone());
        }
    }
}

fn spawn_delete(runtime: &K8sRuntime, pod: &str, policy: Option<String>) {
    // The run's final sweep (`delete_all_started`, `delete_own`) and the reaper catch what
    // this misses.
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let runtime = runtime.clone();
        let pod = pod.to_owned();
        handle.spawn(async move {
            let _ = runtime.delete_sandbox(&pod, policy.as_deref()).await;
        });
    }
}

/// A task pod with its persistent shell.
pub type PodSandbox = ShellSandbox<PodTransport>;

impl PodSandbox {
    /// The pod's name.
    pub fn pod_name(&self) -> &str {
        &self.transport().pod
    }

    /// The runtime that created this pod.
    pub fn runtime(&self) -> &K8sRuntime {
        &self.transport().runtime
    }
}

/// The session transport of one task pod: an exec stream of bash per session, a second exec
/// beside it. It owns the pod: teardown deletes it, and so does dropping it without one.
pub struct PodTransport {
    runtime: K8sRuntime,
    pod: String,
    policy: Option<String>,
    instance_id: String,
    /// Its ephemeral-storage limit, in MiB.
    disk_mb: u64,
    torn_down: bool,
}

impl Transport for PodTransport {
    /// The container's own cgroup.
    const READS_OOM_COUNTER: bool = true;

    async fn open(&self) -> Result<Channel, SandboxError> {
        let runtime = &self.runtime;
        runtime
            .api()
            .open_session(runtime.namespace(), &self.pod)
            .await
    }

    async fn run_beside(&self, argv: Vec<String>) -> Result<ExecOutput, SandboxError> {
        let runtime = &self.runtime;
        runtime
            .api()
            .exec_once(runtime.namespace(), &self.pod, &argv, None)
            .await
    }

    async fn check_alive(&self) -> Result<(), SandboxError> {
        // The pod's status is the server's text: scrubbed as the engine's errors are.
        let died = |reason: String| SandboxError::ContainerDied {
            instance_id: self.instance_id.clone(),
            reason: crate::secret::scrub(&reason),
        };
        match self.runtime.get_pod(&self.pod).await? {
            None => Err(died(format!("the pod {} is gone", self.pod))),
            Some(pod) => match status::pod_state(&pod, CONTAINER) {
                PodState::Running => Ok(()),
                PodState::Ended(why) if status::evicted_for_its_storage(&why) => {
                    Err(SandboxError::OverDiskQuota {
                        instance_id: self.instance_id.clone(),
                        disk_mb: self.disk_mb,
                        detail: why,
                    })
                }
                PodState::Ended(why) => Err(died(why)),
                other => Err(died(format!("the pod is not running ({other:?})"))),
            },
        }
    }

    async fn reset(&self) -> Result<(), SandboxError> {
        let argv = ["sh", "-c", RESET_SCRIPT].map(str::to_owned);
        let runtime = &self.runtime;
        runtime
            .api()
            .exec_once(runtime.namespace(), &self.pod, &argv, None)
            .await
            .map(|_| ())
    }

    async fn teardown(mut self) -> Result<(), SandboxError> {
        self.torn_down = true;
        self.runtime
            .delete_sandbox(&self.pod, self.policy.as_deref())
            .await
    }
}

impl Drop for PodTransport {
    fn drop(&mut self) {
        if !self.torn_down {
            spawn_delete(&self.runtime, &self.pod, self.policy.clone());
        }
    }
}
