//! The stand-in's node: pods become Docker containers. A created pod is scheduled at once,
//! waits in `ContainerCreating` while its image is found (or pulled from a registry), and runs
//! its container's `command` with the pod's memory and CPU limits and, when a deny-all
//! NetworkPolicy selects it, no network. It ends at its `activeDeadlineSeconds`, on eviction,
//! or when deleted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::http::status;
use super::{CONTAINER_LABEL, Event, Pod, State};

/// Now as RFC 3339, UTC, seconds.
pub(crate) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Five characters as the API server appends to a `generateName`.
fn suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(7)
        ^ u64::from(std::process::id()).rotate_left(32);
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    seed = seed.wrapping_add(COUNTER.fetch_add(0x9e37_79b9, std::sync::atomic::Ordering::SeqCst));
    (0..5)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            char::from(ALPHABET[(seed % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// `POST …/pods`.
pub(crate) async fn create_pod(state: &Arc<State>, ns: &str, body: &[u8]) -> (u16, Value) {
    let Ok(mut object) = serde_json::from_slice::<Value>(body) else {
        return (400, status(400, "BadRequest", "the body is not JSON"));
    };
    if object["kind"] != "Pod"
        || object["spec"]["containers"]
            .as_array()
            .is_none_or(Vec::is_empty)
    {
        return (
            422,
            status(422, "Invalid", "spec.containers: Required value"),
        );
    }
    let name = match (
        object["metadata"]["name"].as_str(),
        object["metadata"]["generateName"].as_str(),
    ) {
        (Some(name), _) => name.to_owned(),
        (None, Some(prefix)) => format!("{prefix}{}", suffix()),
        (None, None) => {
            return (422, status(422, "Invalid", "metadata.name: Required value"));
        }
    };
    let key = (ns.to_owned(), name.clone());
    {
        let mut pods = state.pods.lock().unwrap();
        if pods.contains_key(&key) {
            let message = format!("pods \"{name}\" already exists");
            return (409, status(409, "AlreadyExists", &message));
        }
        let metadata = &mut object["metadata"];
        metadata["name"] = Value::String(name.clone());
        metadata["namespace"] = Value::String(ns.to_owned());
        metadata["uid"] = Value::String(format!("{}-{name}", state.id));
        metadata["resourceVersion"] = Value::String(state.next_version());
        metadata["creationTimestamp"] = Value::String(now_rfc3339());
        object["status"] = json!({"phase": "Pending", "qosClass": "Guaranteed"});
        pods.insert(
            key,
            Pod {
                object: object.clone(),
                container: None,
                network: String::new(),
                starting: Arc::default(),
            },
        );
        let _ = state.events.send(Event {
            namespace: ns.to_owned(),
            kind: "ADDED",
            object: object.clone(),
        });
        state.happened("created", &object, "");
    }
    tokio::spawn(run_pod(Arc::clone(state), ns.to_owned(), name));
    (201, object)
}

fn waiting(reason: &str, message: Option<&str>, image: &str) -> Value {
    let mut state = json!({"reason": reason});
    if let Some(message) = message {
        state["message"] = Value::String(message.to_owned());
    }
    json!([{"name": "task", "image": image, "ready": false, "restartCount": 0,
            "state": {"waiting": state}}])
}

/// Parses `512Mi`, `1Gi`, `1000000` into bytes.
fn memory_bytes(quantity: &str) -> Option<i64> {
    let units = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("k", 1000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ];
    for (suffix, factor) in units {
        if let Some(number) = quantity.strip_suffix(suffix) {
            return number.parse::<i64>().ok().map(|n| n * factor);
        }
    }
    quantity.parse().ok()
}

/// Parses `1500m` or `2` into nano-CPUs.
fn nano_cpus(quantity: &str) -> Option<i64> {
    match quantity.strip_suffix('m') {
        Some(millis) => millis.parse::<i64>().ok().map(|m| m * 1_000_000),
        None => quantity.parse::<f64>().ok().map(|c| (c * 1e9) as i64),
    }
}

/// Whether a NetworkPolicy of the namespace takes egress away from a pod with `labels`.
fn denied_egress(state: &State, ns: &str, labels: &Value) -> bool {
    let policies = state.policies.lock().unwrap();
    policies.iter().any(|((n, _), policy)| {
        n == ns
            && policy["spec"]["policyTypes"]
                .as_array()
                .is_some_and(|types| types.iter().any(|t| t == "Egress"))
            && policy["spec"]["egress"]
                .as_array()
                .is_none_or(Vec::is_empty)
            && policy["spec"]["podSelector"]["matchLabels"]
                .as_object()
                .is_some_and(|wanted| wanted.iter().all(|(k, v)| &labels[k] == v))
    })
}

/// Finds the image on the "node" (the local daemon), or pulls it. `Err((reason, message))`.
async fn ensure_image(state: &State, image: &str, policy: &str) -> Result<(), (String, String)> {
    let present = state.docker.inspect_image(image).await.is_ok();
    if present && policy != "Always" {
        return Ok(());
    }
    if policy == "Never" {
        let message =
            format!("Container image \"{image}\" is not present with pull policy of Never");
        return Err(("ErrImageNeverPull".to_owned(), message));
    }
    let options = CreateImageOptionsBuilder::default()
        .from_image(image)
        .build();
    let mut stream = state.docker.create_image(Some(options), None, None);
    while let Some(item) = stream.next().await {
        if let Err(error) = item {
            let message = format!("failed to pull and unpack image \"{image}\": {error}");
            return Err(("ErrImagePull".to_owned(), message));
        }
    }
    Ok(())
}

/// The pod's life on the node.
async fn run_pod(state: Arc<State>, ns: String, name: String) {
    let Some(pod) = state.pod(&ns, &name) else {
        return;
    };
    let container = pod.object["spec"]["containers"][0].clone();
    let image = container["image"].as_str().unwrap_or_default().to_owned();
    let policy = container["imagePullPolicy"]
        .as_str()
        .unwrap_or("IfNotPresent")
        .to_owned();
    state.update_pod(&ns, &name, |pod| {
        pod.object["spec"]["nodeName"] = json!("standin-node");
        pod.object["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "True"}]);
        pod.object["status"]["startTime"] = Value::String(now_rfc3339());
        pod.object["status"]["containerStatuses"] = waiting("ContainerCreating", None, &image);
    });
    if !pull(&state, &ns, &name, &image, &policy).await {
        return;
    }
    let labels = pod.object["metadata"]["labels"].clone();
    let network = if denied_egress(&state, &ns, &labels) {
        "none"
    } else {
        "bridge"
    };
    let starting = Arc::clone(&pod.starting);
    let _starting = starting.lock().await;
    if state.pod(&ns, &name).is_none() {
        return;
    }
    let started = start_container(&state, &ns, &name, &container, network).await;
    let id = match started {
        Ok(id) => id,
        Err(message) => {
            state.update_pod(&ns, &name, |pod| {
                pod.object["status"]["containerStatuses"] =
                    waiting("CreateContainerError", Some(&message), &image);
            });
            return;
        }
    };
    let kept = mark_running(&state, &ns, &name, &id, network, &image);
    if !kept {
        // Deleted while its container started.
        remove_container(&state, &id).await;
        return;
    }
    state.happened("running", &pod.object, network);
    if let Some(deadline) = pod.object["spec"]["activeDeadlineSeconds"].as_u64() {
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(deadline)).await;
            fail(
                &state,
                &ns,
                &name,
                "DeadlineExceeded",
                "Pod was active on the node longer than the specified deadline",
            )
            .await;
        });
    }
}

/// Gets the pod's image, as a kubelet does: waiting `ErrImagePull` / `ImagePullBackOff`
/// between attempts. `false` when the pod was deleted meanwhile.
async fn pull(state: &State, ns: &str, name: &str, image: &str, policy: &str) -> bool {
    let mut backoff = false;
    loop {
        if state.pod(ns, name).is_none() {
            return false;
        }
        let failure = if state.never_pulls(image) {
            Err((
                "ErrImagePull".to_owned(),
                format!(
                    "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": not found"
                ),
            ))
        } else {
            ensure_image(state, image, policy).await
        };
        let Err((reason, message)) = failure else {
            return true;
        };
        let (reason, message) = if backoff && reason == "ErrImagePull" {
            (
                "ImagePullBackOff".to_owned(),
                format!("Back-off pulling image \"{image}\""),
            )
        } else {
            (reason, message)
        };
        backoff = !backoff;
        state.update_pod(ns, name, |pod| {
            pod.object["status"]["containerStatuses"] = waiting(&reason, Some(&message), image);
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Records the pod as running in container `id`; `false` when it was deleted meanwhile.
fn mark_running(state: &State, ns: &str, name: &str, id: &str, network: &str, image: &str) -> bool {
    let mut kept = false;
    state.update_pod(ns, name, |pod| {
        kept = true;
        pod.container = Some(id.to_owned());
        pod.network = network.to_owned();
        let now = now_rfc3339();
        pod.object["status"] = json!({
            "phase": "Running",
            "qosClass": "Guaranteed",
            "startTime": pod.object["status"]["startTime"],
            "podIP": "10.244.0.2",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
            "containerStatuses": [{"name": "task", "image": image, "ready": true, "started": true,
                "restartCount": 0, "state": {"running": {"startedAt": now}}}],
        });
    });
    kept
}

async fn start_container(
    state: &State,
    ns: &str,
    name: &str,
    container: &Value,
    network: &str,
) -> Result<String, String> {
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let mut cmd = strings(&container["command"]);
    cmd.extend(strings(&container["args"]));
    let env: Vec<String> = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            format!(
                "{}={}",
                e["name"].as_str().unwrap_or_default(),
                e["value"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let limits = &container["resources"]["limits"];
    let security = &container["securityContext"];
    let host_config = HostConfig {
        memory: limits["memory"].as_str().and_then(memory_bytes),
        nano_cpus: limits["cpu"].as_str().and_then(nano_cpus),
        network_mode: Some(network.to_owned()),
        cap_drop: Some(strings(&security["capabilities"]["drop"])),
        cap_add: Some(strings(&security["capabilities"]["add"])),
        security_opt: (security["allowPrivilegeEscalation"] == false)
            .then(|| vec!["no-new-privileges".to_owned()]),
        ..Default::default()
    };
    let labels = HashMap::from([
        (CONTAINER_LABEL.to_owned(), state.id.clone()),
        ("k8s-standin.pod".to_owned(), format!("{ns}/{name}")),
    ]);
    let body = ContainerCreateBody {
        image: container["image"].as_str().map(str::to_owned),
        cmd: (!cmd.is_empty()).then_some(cmd),
        entrypoint: Some(vec![]),
        env: Some(env),
        working_dir: container["workingDir"].as_str().map(str::to_owned),
        labels: Some(labels),
        host_config: Some(host_config),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::default()
        .name(&format!("standin-{}-{ns}-{name}", state.id))
        .build();
    let created = state
        .docker
        .create_container(Some(options), body)
        .await
        .map_err(|e| e.to_string())?;
    if let Err(error) = state.docker.start_container(&created.id, None).await {
        remove_container(state, &created.id).await;
        return Err(error.to_string());
    }
    Ok(created.id)
}

/// Removes a pod's container, as a kubelet does, trying again while the daemon refuses (a
/// removal already in progress, a busy storage driver); a container that is gone is done.
async fn remove_container(state: &State, id: &str) {
    for _ in 0..20 {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match state.docker.remove_container(id, Some(options)).await {
            Ok(()) => return,
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Ends a running pod: its container goes, it stays `Failed` with `reason`.
async fn fail(state: &State, ns: &str, name: &str, reason: &str, message: &str) {
    let Some(pod) = state.pod(ns, name) else {
        return;
    };
    if let Some(id) = &pod.container {
        remove_container(state, id).await;
    }
    state.update_pod(ns, name, |pod| {
        pod.container = None;
        let image = pod.object["spec"]["containers"][0]["image"].clone();
        pod.object["status"]["phase"] = json!("Failed");
        pod.object["status"]["reason"] = json!(reason);
        pod.object["status"]["message"] = json!(message);
        pod.object["status"]["conditions"] = json!([
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message},
            {"type": "Ready", "status": "False"},
        ]);
        pod.object["status"]["containerStatuses"] = json!([{"name": "task", "image": image, "ready": false,
            "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]);
    });
}

/// Evicts a pod as a kubelet under memory pressure does.
pub(crate) async fn evict(state: &State, ns: &str, name: &str) {
    fail(
        state,
        ns,
        name,
        "Evicted",
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 12Mi.",
    )
    .await;
}

/// `DELETE …/pods/NAME`: the container goes at once (grace period 0), the pod with it.
pub(crate) async fn delete_pod(state: &State, ns: &str, name: &str) -> (u16, Value) {
    // A container being started is waited for, then removed with its pod.
    let starting = state.pod(ns, name).map(|pod| pod.starting);
    let _starting = match &starting {
        Some(lock) => Some(lock.lock().await),
        None => None,
    };
    let removed = state
        .pods
        .lock()
        .unwrap()
        .remove(&(ns.to_owned(), name.to_owned()));
    let Some(mut pod) = removed else {
        return (
            404,
            status(404, "NotFound", &format!("pods \"{name}\" not found")),
        );
    };
    if let Some(id) = &pod.container {
        remove_container(state, id).await;
    }
    pod.object["metadata"]["deletionTimestamp"] = Value::String(now_rfc3339());
    pod.object["metadata"]["resourceVersion"] = Value::String(state.next_version());
    let _ = state.events.send(Event {
        namespace: ns.to_owned(),
        kind: "DELETED",
        object: pod.object.clone(),
    });
    state.happened("deleted", &pod.object, "");
    (200, pod.object)
}
