//! The objects aci creates in a cluster, as pure JSON: a task's pod and the NetworkPolicy that
//! takes its network away, the labels that find them again, and the pod's deadline.
//!
//! Label values must be at most 63 characters of `[A-Za-z0-9._-]`, starting and ending with a
//! letter or digit; run and instance ids that are not get a readable prefix and a hash
//! ([`label_value`]), and their full text goes in annotations of the same names.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::super::SandboxSpec;
use super::super::docker::{LABEL_INSTANCE_ID, LABEL_PID, LABEL_PID_START, LABEL_RUN_ID};
use super::super::transport::SESSION_ENV;

/// Label holding the host name of the machine whose `aci` created the pod: only that machine
/// can tell whether the process is still alive.
pub const LABEL_HOST: &str = "aci.host";
/// Label holding a key unique to one sandbox: the NetworkPolicy selects its pod by it.
pub const LABEL_SANDBOX: &str = "aci.sandbox";
/// The name of the task container in every pod.
pub const CONTAINER: &str = "task";
/// The capabilities added back after dropping all, as for Docker containers.
const CAPABILITIES: [&str; 4] = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"];
/// Seconds added to a pod's deadline beyond its task and its image pull: the set-up exchange,
/// the baseline check and the teardown.
const DEADLINE_SLACK_SECS: f64 = 120.0;

/// The `aci` process that owns a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The machine's host name.
    pub host: String,
    /// The process id.
    pub pid: u32,
    /// The process's start time (clock ticks since boot), against pid reuse.
    pub pid_start: u64,
}

impl Owner {
    /// The owner labels: host, pid and start time.
    fn labels(&self) -> [(&'static str, String); 3] {
        [
            (LABEL_HOST, label_value(&self.host)),
            (LABEL_PID, self.pid.to_string()),
            (LABEL_PID_START, self.pid_start.to_string()),
        ]
    }
}

/// When the kubelet may pull a task's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullPolicy {
    /// When the node lacks it (the default).
    IfNotPresent,
    /// Every time a pod starts.
    Always,
    /// Never: the node must have it.
    Never,
}

impl PullPolicy {
    /// The `imagePullPolicy` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IfNotPresent => "IfNotPresent",
            Self::Always => "Always",
            Self::Never => "Never",
        }
    }
}

/// What a task pod needs beyond its [`SandboxSpec`].
#[derive(Debug, Clone)]
pub struct PodTemplate<'a> {
    /// The image reference the nodes pull (with the registry).
    pub image: &'a str,
    /// When the kubelet pulls it.
    pub pull_policy: PullPolicy,
    /// `activeDeadlineSeconds`: the kubelet kills the pod after this, whatever aci does.
    pub active_deadline: u64,
    /// The `aci` process that creates it.
    pub owner: &'a Owner,
    /// The sandbox key ([`LABEL_SANDBOX`]).
    pub sandbox: &'a str,
    /// A secret for pulling the image.
    pub pull_secret: Option<&'a str>,
    /// Node labels the pod must match.
    pub node_selector: &'a BTreeMap<String, String>,
}

/// A label value for `text`: itself when it is a valid label value, else its valid characters
/// (others become `-`), cut to 50, and 12 hex digits of its SHA-256, so that different ids
/// never share a value.
pub fn label_value(text: &str) -> String {
    let valid_char = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    let edges_ok = text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric());
    if text.len() <= 63 && text.chars().all(valid_char) && edges_ok {
        return text.to_owned();
    }
    let mut clean = crate::text::safe_name(text, '-');
    clean.truncate(50);
    let clean = clean.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let digest = Sha256::digest(text.as_bytes());
    let hash = data_encoding::HEXLOWER.encode(&digest[..6]);
    if clean.is_empty() {
        hash
    } else {
        format!("{clean}-{hash}")
    }
}

/// The label selector of every object of one run, or of every run (`aci.run_id` present).
pub fn run_selector(run_id: Option<&str>) -> String {
    match run_id {
        Some(run_id) => format!("{LABEL_RUN_ID}={}", label_value(run_id)),
        None => LABEL_RUN_ID.to_owned(),
    }
}

/// The `generateName` of an instance's pod: `aci-` and the id as a DNS label (lowercase
/// letters, digits and `-`), short enough for the five characters the server appends.
pub fn name_prefix(instance_id: &str) -> String {
    let mut name = String::from("aci-");
    let mut dash = true;
    for c in instance_id.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
            dash = false;
        } else if !dash {
            name.push('-');
            dash = true;
        }
        if name.len() >= 50 {
            break;
        }
    }
    if !name.ends_with('-') {
        name.push('-');
    }
    name
}

/// A CPU quantity in millicores: `2.0` → `2000m`, `0.5` → `500m` (at least `1m`).
pub fn cpu_quantity(cpus: f64) -> String {
    let millis = (cpus * 1000.0).round().max(1.0);
    format!("{millis:.0}m")
}

/// `activeDeadlineSeconds` of a pod: counted by the kubelet from the pod's start, which comes
/// before its image pull, so it covers the pull limit, the task's own time limit and some
/// slack, and, for a pod created ahead of need, one more task time (it waits at most that long
/// for a free worker). A backstop for pods whose `aci` died: aci deletes its pods itself.
pub fn active_deadline_seconds(task_secs: f64, pull_secs: f64, created_ahead: bool) -> u64 {
    let waiting = if created_ahead { task_secs } else { 0.0 };
    let total = task_secs + pull_secs + waiting + DEADLINE_SLACK_SECS;
    if total.is_finite() && total > 0.0 {
        total.ceil().min(u64::MAX as f64) as u64
    } else {
        u64::MAX
    }
}

fn labels(spec: &SandboxSpec, owner: &Owner, sandbox: &str) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(LABEL_RUN_ID.into(), label_value(&spec.run_id).into());
    labels.insert(
        LABEL_INSTANCE_ID.into(),
        label_value(&spec.instance_id).into(),
    );
    labels.insert(LABEL_SANDBOX.into(), sandbox.into());
    for (key, value) in owner.labels() {
        labels.insert(key.into(), value.into());
    }
    Value::Object(labels)
}

fn annotations(spec: &SandboxSpec) -> Value {
    json!({ LABEL_RUN_ID: spec.run_id, LABEL_INSTANCE_ID: spec.instance_id })
}

/// The task pod: `sleep infinity` in the task's image, never restarted, with the deadline,
/// `env`'s limits (memory, CPU, disk as ephemeral storage) as both requests and limits, the owner and sandbox labels, no service
/// account token, no service links, and the Docker engine's hardening (all capabilities
/// dropped but four, no privilege escalation, the runtime's default seccomp profile).
pub fn pod(spec: &SandboxSpec, template: &PodTemplate<'_>) -> Value {
    let mut resources = json!({
        "cpu": cpu_quantity(spec.limits.cpus),
        "memory": format!("{}Mi", spec.limits.memory_mb),
    });
    if spec.limits.disk_mb > 0 {
        // What the kubelet lets the pod write beside its image before it evicts it.
        resources["ephemeral-storage"] = json!(format!("{}Mi", spec.limits.disk_mb));
    }
    let env: Vec<Value> = SESSION_ENV
        .iter()
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    let mut pod_spec = json!({
        "restartPolicy": "Never",
        "activeDeadlineSeconds": template.active_deadline,
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": 0,
        "containers": [{
            "name": CONTAINER,
            "image": template.image,
            "imagePullPolicy": template.pull_policy.as_str(),
            "command": ["sleep", "infinity"],
            "workingDir": spec.repo_dir,
            "env": env,
            "resources": {"requests": resources, "limits": resources},
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"], "add": CAPABILITIES},
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        }],
    });
    if let Some(secret) = template.pull_secret {
        pod_spec["imagePullSecrets"] = json!([{ "name": secret }]);
    }
    if !template.node_selector.is_empty() {
        pod_spec["nodeSelector"] = json!(template.node_selector);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": name_prefix(&spec.instance_id),
            "labels": labels(spec, template.owner, template.sandbox),
            "annotations": annotations(spec),
        },
        "spec": pod_spec,
    })
}

/// The name of a sandbox's NetworkPolicy.
pub fn policy_name(sandbox: &str) -> String {
    format!("aci-deny-{sandbox}")
}

/// A NetworkPolicy that selects one sandbox's pod and allows it no traffic either way: the pod
/// has no network, as a Docker container with `network: none`. (Exec streams do not pass
/// through the pod's network.)
pub fn deny_all_policy(spec: &SandboxSpec, owner: &Owner, sandbox: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": policy_name(sandbox),
            "labels": labels(spec, owner, sandbox),
            "annotations": annotations(spec),
        },
        "spec": {
            "podSelector": {"matchLabels": {LABEL_SANDBOX: sandbox}},
            "policyTypes": ["Ingress", "Egress"],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::ResourceLimits;

    fn owner() -> Owner {
        Owner {
            host: "build-7".to_owned(),
            pid: 4242,
            pid_start: 99,
        }
    }

    #[test]
    fn label_values_keep_valid_ids_and_hash_the_rest() {
        assert_eq!(label_value("django__django-11099"), "django__django-11099");
        assert_eq!(label_value("20240101-120000-77"), "20240101-120000-77");
        let digest =
            |text: &str| data_encoding::HEXLOWER.encode(&Sha256::digest(text.as_bytes())[..6]);
        assert_eq!(
            label_value("owner/repo:1"),
            format!("owner-repo-1-{}", digest("owner/repo:1"))
        );
        assert_eq!(label_value("-x-"), format!("x-{}", digest("-x-")));
        assert_eq!(label_value("///"), digest("///"));
        let long = "a".repeat(64);
        assert_eq!(
            label_value(&long),
            format!("{}-{}", "a".repeat(50), digest(&long))
        );
        // Two ids that clean to the same text keep apart.
        assert_ne!(label_value("a/b"), label_value("a:b"));
        for text in ["owner/repo:1", "-x-", "///", &long, "é"] {
            let value = label_value(text);
            assert!(value.len() <= 63, "{value}");
            assert!(
                value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            );
        }
    }

    #[test]
    fn pod_names_are_dns_labels_with_room_for_the_suffix() {
        assert_eq!(
            name_prefix("django__django-11099"),
            "aci-django-django-11099-"
        );
        assert_eq!(name_prefix("Demo.Calc_1"), "aci-demo-calc-1-");
        assert_eq!(name_prefix("___"), "aci-");
        let long = name_prefix(&"x".repeat(200));
        assert_eq!(long, format!("aci-{}-", "x".repeat(46)));
        assert!(long.len() + 5 <= 63);
    }

    #[test]
    fn quantities_and_deadlines() {
        assert_eq!(cpu_quantity(2.0), "2000m");
        assert_eq!(cpu_quantity(0.25), "250m");
        assert_eq!(cpu_quantity(0.0), "1m");
        assert_eq!(active_deadline_seconds(3900.0, 600.0, false), 4620);
        assert_eq!(active_deadline_seconds(3900.0, 600.0, true), 8520);
        assert_eq!(active_deadline_seconds(0.5, 0.0, false), 121);
        assert_eq!(
            active_deadline_seconds(f64::INFINITY, 600.0, false),
            u64::MAX
        );
    }

    #[test]
    fn the_pod_runs_sleep_with_the_limits_labels_and_no_token() {
        let spec = SandboxSpec {
            limits: ResourceLimits {
                memory_mb: 512,
                cpus: 1.5,
                pids: 64,
                disk_mb: 2048,
            },
            repo_dir: "/work/repo".to_owned(),
            ..SandboxSpec::new("run/1", "demo__calc-1", "aci-env-rust:abc")
        };
        let selector = BTreeMap::from([("pool".to_owned(), "swe".to_owned())]);
        let owner = owner();
        let template = PodTemplate {
            image: "reg.example/aci-env-rust:abc",
            pull_policy: PullPolicy::IfNotPresent,
            active_deadline: 4620,
            owner: &owner,
            sandbox: "1092-7",
            pull_secret: Some("regcred"),
            node_selector: &selector,
        };
        let pod = pod(&spec, &template);
        let run_label = label_value("run/1");
        let env: Vec<Value> = SESSION_ENV
            .iter()
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap();
                json!({"name": name, "value": value})
            })
            .collect();
        let limits = json!({"cpu": "1500m", "memory": "512Mi", "ephemeral-storage": "2048Mi"});
        assert_eq!(
            pod,
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "generateName": "aci-demo-calc-1-",
                    "labels": {
                        "aci.run_id": run_label,
                        "aci.instance_id": "demo__calc-1",
                        "aci.sandbox": "1092-7",
                        "aci.host": "build-7",
                        "aci.pid": "4242",
                        "aci.pid_start": "99",
                    },
                    "annotations": {"aci.run_id": "run/1", "aci.instance_id": "demo__calc-1"},
                },
                "spec": {
                    "restartPolicy": "Never",
                    "activeDeadlineSeconds": 4620,
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "terminationGracePeriodSeconds": 0,
                    "imagePullSecrets": [{"name": "regcred"}],
                    "nodeSelector": {"pool": "swe"},
                    "containers": [{
                        "name": "task",
                        "image": "reg.example/aci-env-rust:abc",
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sleep", "infinity"],
                        "workingDir": "/work/repo",
                        "env": env,
                        "resources": {"requests": limits, "limits": limits},
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "capabilities": {
                                "drop": ["ALL"],
                                "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"],
                            },
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                    }],
                },
            })
        );
        assert!(run_label.starts_with("run-1-"), "{run_label}");
    }

    #[test]
    fn the_policy_selects_only_its_sandbox_and_allows_nothing() {
        let spec = SandboxSpec::new("r1", "demo__calc-1", "img");
        let policy = deny_all_policy(&spec, &owner(), "1092-7");
        assert_eq!(policy["metadata"]["name"], "aci-deny-1092-7");
        assert_eq!(policy["metadata"]["labels"]["aci.run_id"], "r1");
        assert_eq!(
            policy["spec"],
            json!({
                "podSelector": {"matchLabels": {"aci.sandbox": "1092-7"}},
                "policyTypes": ["Ingress", "Egress"],
            })
        );
        assert_eq!(run_selector(Some("r1")), "aci.run_id=r1");
        assert_eq!(run_selector(None), "aci.run_id");
    }
}
