//! `env.k8s`: where and how `--engine k8s` runs tasks, one pod each.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::units::Seconds;

/// `env.k8s`: the cluster side of `--engine k8s`. The cluster itself comes from `KUBECONFIG`
/// (or `~/.kube/config`, or the in-cluster service account).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct K8sConfig {
    /// The namespace of the pods and network policies (`--namespace`); empty: the kubeconfig
    /// context's namespace, else the service account's, else `default`.
    pub namespace: String,
    /// The registry the cluster pulls images from (`--registry`, e.g. `ghcr.io/me` or
    /// `localhost:5000`): images are pushed there as `<registry>/<tag>` when it lacks them.
    /// Empty: the nodes already have the images under their local tags (`kind load
    /// docker-image`, or a node that shares the Docker daemon).
    pub registry: String,
    /// The kubeconfig context; empty: its current context.
    pub context: String,
    /// Seconds a scheduled pod may take to pull its image and start before its instance ends
    /// with `exit_environment_error`.
    pub pull_timeout: Seconds,
    /// Seconds a pod may stay unschedulable (no node has room) before its instance ends with
    /// `exit_environment_error`.
    pub schedule_timeout: Seconds,
    /// Pods created ahead of the running ones, so that their image pulls overlap the running
    /// tasks; 0: as many as `--workers`.
    pub ahead: usize,
    /// A secret in the namespace for pulling from a private registry (`imagePullSecrets`).
    pub image_pull_secret: String,
    /// Node labels a task pod must match (`nodeSelector`).
    pub node_selector: BTreeMap<String, String>,
}

impl Default for K8sConfig {
    fn default() -> Self {
        Self {
            namespace: String::new(),
            registry: String::new(),
            context: String::new(),
            pull_timeout: Seconds::whole(600),
            schedule_timeout: Seconds::whole(600),
            ahead: 0,
            image_pull_secret: String::new(),
            node_selector: BTreeMap::new(),
        }
    }
}
