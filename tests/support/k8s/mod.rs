//! A Kubernetes API stand-in on loopback, for the `--engine k8s` tests.
//!
//! It speaks the real wire protocol for what aci uses: pod create (with `generateName`), get,
//! list by label, watch (chunked JSON events), delete; NetworkPolicy create, list and delete;
//! exec as a WebSocket upgrade with the `v5.channel.k8s.io` and `v4.channel.k8s.io` channel
//! protocols, and `Status` objects for refusals. Each pod is backed by a real Docker container
//! started through the daemon here (the stand-in plays the kubelet: it "pulls" by finding the
//! image locally or pulling it from a registry, and runs `command` in it, with no network when
//! a deny-all NetworkPolicy selects the pod). Faults are injected through [`StandIn`]: an image
//! that never pulls, an eviction, 429s with `Retry-After`, an exec stream cut mid-command, a
//! server that speaks v4 only, and refusals that quote the request's credential back.
//!
//! Requests need the kubeconfig's bearer token (or, with TLS, a client certificate signed by
//! the stand-in's CA).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

mod exec;
mod http;
mod kubelet;
pub mod tls;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::broadcast;

/// The label on every container a stand-in starts, valued with its id.
pub const CONTAINER_LABEL: &str = "k8s-standin.id";

/// How a stand-in is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// The exec stream protocols it speaks, in order.
    pub protocols: Vec<&'static str>,
    /// HTTPS with client certificates instead of HTTP with a bearer token.
    pub tls: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            protocols: vec!["v5.channel.k8s.io", "v4.channel.k8s.io"],
            tls: false,
        }
    }
}

/// One request the stand-in answered.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    /// The path with its query.
    pub target: String,
    pub status: u16,
    pub at: Instant,
}

/// Something that happened to a pod, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Happened {
    /// `created`, `running` or `deleted`.
    pub kind: &'static str,
    pub pod: String,
    /// Its `aci.run_id` and `aci.instance_id` labels.
    pub run: String,
    pub instance: String,
    /// The Docker network mode of its container (for `running`).
    pub network: String,
    /// The image of its container.
    pub image: String,
}

/// A 429 answer waiting for requests that match.
#[derive(Debug, Clone)]
struct Throttle {
    method: String,
    path_contains: String,
    left: usize,
    retry_after: u64,
}

#[derive(Debug, Default)]
struct Faults {
    never_pull: Vec<String>,
    throttles: Vec<Throttle>,
    /// `(method, path_contains)` of requests refused with their credential quoted back.
    echo_credential: Vec<(String, String)>,
    drop_stream_on: Vec<String>,
    evict_on: Vec<String>,
}

/// A pod and what backs it.
#[derive(Debug, Clone)]
pub(crate) struct Pod {
    pub object: Value,
    pub container: Option<String>,
    /// The Docker network mode its container got.
    pub network: String,
    /// Held while the node starts the container, so that a delete waits for it.
    pub starting: Arc<tokio::sync::Mutex<()>>,
}

/// An event for watchers: the namespace, the type and the object.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub namespace: String,
    pub kind: &'static str,
    pub object: Value,
}

/// Everything the stand-in knows.
pub(crate) struct State {
    pub id: String,
    pub options: Options,
    pub token: String,
    pub docker: bollard::Docker,
    pub pods: Mutex<BTreeMap<(String, String), Pod>>,
    pub policies: Mutex<BTreeMap<(String, String), Value>>,
    pub version: AtomicU64,
    pub events: broadcast::Sender<Event>,
    faults: Mutex<Faults>,
    log: Mutex<Vec<Logged>>,
    pub protocols_used: Mutex<Vec<String>>,
    history: Mutex<Vec<Happened>>,
}

impl State {
    /// Records what happened to a pod.
    pub fn happened(&self, kind: &'static str, object: &Value, network: &str) {
        let label = |key: &str| {
            object["metadata"]["labels"][key]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        self.history.lock().unwrap().push(Happened {
            kind,
            pod: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            run: label("aci.run_id"),
            instance: label("aci.instance_id"),
            network: network.to_owned(),
            image: object["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        });
    }

    /// The next resourceVersion.
    pub fn next_version(&self) -> String {
        (self.version.fetch_add(1, Ordering::SeqCst) + 1).to_string()
    }

    /// Stores a pod's new object (with a new resourceVersion) and tells the watchers.
    pub fn update_pod(&self, namespace: &str, name: &str, change: impl FnOnce(&mut Pod)) {
        let mut pods = self.pods.lock().unwrap();
        let Some(pod) = pods.get_mut(&(namespace.to_owned(), name.to_owned())) else {
            return;
        };
        change(pod);
        pod.object["metadata"]["resourceVersion"] = Value::String(self.next_version());
        let _ = self.events.send(Event {
            namespace: namespace.to_owned(),
            kind: "MODIFIED",
            object: pod.object.clone(),
        });
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<Pod> {
        self.pods
            .lock()
            .unwrap()
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    pub fn record(&self, method: &str, target: &str, status: u16) {
        self.log.lock().unwrap().push(Logged {
            method: method.to_owned(),
            target: target.to_owned(),
            status,
            at: Instant::now(),
        });
    }

    /// A pending 429 for this request, consumed: its `Retry-After`.
    pub fn throttled(&self, method: &str, target: &str) -> Option<u64> {
        let mut faults = self.faults.lock().unwrap();
        let throttle = faults
            .throttles
            .iter_mut()
            .find(|t| t.left > 0 && t.method == method && target.contains(&t.path_contains))?;
        throttle.left -= 1;
        Some(throttle.retry_after)
    }

    /// Whether this request is refused with its credential quoted back.
    pub fn echoes_credential(&self, method: &str, target: &str) -> bool {
        let faults = self.faults.lock().unwrap();
        faults
            .echo_credential
            .iter()
            .any(|(m, part)| m == method && target.contains(part.as_str()))
    }

    pub fn never_pulls(&self, image: &str) -> bool {
        let faults = self.faults.lock().unwrap();
        faults.never_pull.iter().any(|part| image.contains(part))
    }

    /// Which fault, if any, `output` of an exec triggers.
    pub fn stream_fault(&self, output: &[u8]) -> Option<StreamFault> {
        let text = String::from_utf8_lossy(output);
        let faults = self.faults.lock().unwrap();
        if faults.evict_on.iter().any(|m| text.contains(m.as_str())) {
            Some(StreamFault::Evict)
        } else if faults
            .drop_stream_on
            .iter()
            .any(|m| text.contains(m.as_str()))
        {
            Some(StreamFault::Drop)
        } else {
            None
        }
    }
}

/// What an exec's output made the stand-in do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamFault {
    /// Cut the connection, as a load balancer or a restarting API server does.
    Drop,
    /// Evict the pod, as a kubelet under memory pressure does.
    Evict,
}

/// A running stand-in.
pub struct StandIn {
    state: Arc<State>,
    url: String,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl StandIn {
    /// Starts a stand-in on a free loopback port, with a kubeconfig for it.
    pub async fn start(options: Options) -> StandIn {
        let docker = bollard::Docker::connect_with_local_defaults()
            .expect("the Kubernetes stand-in needs the Docker daemon");
        let docker = docker
            .negotiate_version()
            .await
            .expect("the Kubernetes stand-in needs the Docker daemon\nhint: start dockerd");
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let id = format!(
            "{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::SeqCst)
        );
        let token = format!("standin-token-{id}");
        let (events, _) = broadcast::channel(1024);
        let tls = options.tls;
        let state = Arc::new(State {
            id,
            options,
            token: token.clone(),
            docker,
            pods: Mutex::new(BTreeMap::new()),
            policies: Mutex::new(BTreeMap::new()),
            version: AtomicU64::new(1000),
            events,
            faults: Mutex::new(Faults::default()),
            log: Mutex::new(Vec::new()),
            protocols_used: Mutex::new(Vec::new()),
            history: Mutex::new(Vec::new()),
        });
        let (url, kubeconfig_text, acceptor) = if tls {
            let certs = tls::make(dir.path());
            let url = format!("https://127.0.0.1:{port}");
            let b64 = |pem: &[u8]| data_encoding::BASE64.encode(pem);
            let text = format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: standin\nclusters:\n- name: standin\n  \
                 cluster:\n    server: {url}\n    certificate-authority-data: {}\ncontexts:\n\
                 - name: standin\n  context:\n    cluster: standin\n    user: standin\n\
                 users:\n- name: standin\n  user:\n    client-certificate-data: {}\n    \
                 client-key-data: {}\n",
                b64(&certs.ca),
                b64(&certs.client_cert),
                b64(&certs.client_key)
            );
            (url, text, Some(tls::acceptor(&certs)))
        } else {
            let url = format!("http://127.0.0.1:{port}");
            let text = format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: standin\nclusters:\n- name: standin\n  \
                 cluster:\n    server: {url}\ncontexts:\n- name: standin\n  context:\n    \
                 cluster: standin\n    user: standin\n    namespace: aci-test\nusers:\n\
                 - name: standin\n  user:\n    token: {token}\n"
            );
            (url, text, None)
        };
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_text).unwrap();
        let server = tokio::spawn(http::serve(listener, Arc::clone(&state), acceptor));
        StandIn {
            state,
            url,
            kubeconfig,
            _dir: dir,
            server,
        }
    }

    /// The API server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig for it (namespace `aci-test` without TLS, none with TLS).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The bearer token requests need (without TLS).
    pub fn token(&self) -> &str {
        &self.state.token
    }

    /// The stand-in's id, the value of [`CONTAINER_LABEL`] on its containers.
    pub fn id(&self) -> &str {
        &self.state.id
    }

    /// Pods whose image contains `image_part` never get their image: their container waits in
    /// `ErrImagePull` / `ImagePullBackOff`.
    pub fn never_pull(&self, image_part: &str) {
        let mut faults = self.state.faults.lock().unwrap();
        faults.never_pull.push(image_part.to_owned());
    }

    /// The next `times` requests with `method` whose path contains `path_contains` get 429 Too
    /// Many Requests with `Retry-After: retry_after`.
    pub fn throttle(&self, method: &str, path_contains: &str, times: usize, retry_after: u64) {
        let mut faults = self.state.faults.lock().unwrap();
        faults.throttles.push(Throttle {
            method: method.to_owned(),
            path_contains: path_contains.to_owned(),
            left: times,
            retry_after,
        });
    }

    /// Requests with `method` whose path contains `path_contains` are refused with 403, the
    /// message quoting the request's `Authorization` header (as a misconfigured admission
    /// webhook or proxy does).
    pub fn echo_credential_on(&self, method: &str, path_contains: &str) {
        let mut faults = self.state.faults.lock().unwrap();
        faults
            .echo_credential
            .push((method.to_owned(), path_contains.to_owned()));
    }

    /// An exec whose stdout shows `marker` has its connection cut, with no close frame.
    pub fn drop_stream_on(&self, marker: &str) {
        let mut faults = self.state.faults.lock().unwrap();
        faults.drop_stream_on.push(marker.to_owned());
    }

    /// A pod whose exec prints `marker` on stdout is evicted: its container killed, the pod
    /// `Failed` with reason `Evicted`.
    pub fn evict_on(&self, marker: &str) {
        let mut faults = self.state.faults.lock().unwrap();
        faults.evict_on.push(marker.to_owned());
    }

    /// The pods that exist, as `(namespace, name)`.
    pub fn pod_names(&self) -> Vec<(String, String)> {
        self.state.pods.lock().unwrap().keys().cloned().collect()
    }

    /// A pod's object.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        self.state.pod(namespace, name).map(|pod| pod.object)
    }

    /// The Docker network mode of a pod's container (`none` under a deny-all policy).
    pub fn pod_network(&self, namespace: &str, name: &str) -> Option<String> {
        self.state.pod(namespace, name).map(|pod| pod.network)
    }

    /// The NetworkPolicies that exist.
    pub fn policies(&self) -> Vec<Value> {
        self.state
            .policies
            .lock()
            .unwrap()
            .values()
            .cloned()
            .collect()
    }

    /// Every request answered so far, in order.
    pub fn requests(&self) -> Vec<Logged> {
        self.state.log.lock().unwrap().clone()
    }

    /// What happened to the pods, in order.
    pub fn history(&self) -> Vec<Happened> {
        self.state.history.lock().unwrap().clone()
    }

    /// The stream protocol each exec spoke, in order.
    pub fn exec_protocols(&self) -> Vec<String> {
        self.state.protocols_used.lock().unwrap().clone()
    }

    /// The Docker containers backing this stand-in's pods, in any state.
    pub fn containers(&self) -> Vec<String> {
        containers_labelled(&self.state.id)
    }

    /// [`StandIn::containers`] once the kubelet has removed the containers of deleted pods,
    /// which it does a moment after the API server forgets a pod, as a real kubelet does: waits
    /// up to 30 s for none to be left, then says what is.
    pub fn containers_settled(&self) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let left = self.containers();
            if left.is_empty() || std::time::Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// Creates a pod directly, as another client (or an earlier run) would: `object` is a pod
    /// manifest with a `metadata.name`. It is not backed by a container.
    pub fn insert_pod(&self, namespace: &str, mut object: Value) {
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        object["metadata"]["namespace"] = Value::String(namespace.to_owned());
        object["metadata"]["resourceVersion"] = Value::String(self.state.next_version());
        let pod = Pod {
            object,
            container: None,
            network: String::new(),
            starting: Arc::default(),
        };
        self.state
            .pods
            .lock()
            .unwrap()
            .insert((namespace.to_owned(), name), pod);
    }
}

impl StandIn {
    /// Creates a NetworkPolicy directly, as another client would.
    pub fn insert_policy(&self, namespace: &str, mut object: Value) {
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        object["metadata"]["namespace"] = Value::String(namespace.to_owned());
        self.state
            .policies
            .lock()
            .unwrap()
            .insert((namespace.to_owned(), name), object);
    }
}

/// The ids of the containers labelled with a stand-in's id, through the docker CLI.
pub fn containers_labelled(id: &str) -> Vec<String> {
    let out = std::process::Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label={CONTAINER_LABEL}={id}"),
        ])
        .output()
        .expect("the docker CLI");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.abort();
        // A failed test must not leave containers behind either.
        let ids = containers_labelled(&self.state.id);
        if !ids.is_empty() {
            let _ = std::process::Command::new("docker")
                .args(["rm", "-f"])
                .args(&ids)
                .output();
        }
    }
}
