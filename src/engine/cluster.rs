//! A Kubernetes cluster as an engine ([`super::Engine::K8s`]): its pods, and the local daemon
//! that builds its images.
//!
//! The engine runs what the provisioner prepared and prepares nothing: images are built and
//! hashed by the local daemon either way, and for a cluster published by the provisioner
//! ([`crate::provision::Provisioner::publish`]): pushed as `<registry>/<tag>` when the registry
//! lacks them, so that the nodes can pull them. Without a registry the nodes are expected to
//! have the images under their local tags (`kind load docker-image`).

use crate::config::EnvConfig;
use crate::sandbox::docker::{DockerRuntime, RegistryLogin};
use crate::sandbox::k8s::manifest::PullPolicy;
use crate::sandbox::k8s::status::StartLimits;
use crate::sandbox::k8s::{K8sRuntime, K8sSettings, PendingPod, PodSandbox};
use crate::sandbox::{SandboxError, SandboxSpec};

/// The pods' `imagePullPolicy` for `env.pull`: the kubelet pulls as aci would.
pub fn pod_pull_policy(pull: crate::config::PullPolicy) -> PullPolicy {
    match pull {
        crate::config::PullPolicy::Missing => PullPolicy::IfNotPresent,
        crate::config::PullPolicy::Always => PullPolicy::Always,
        crate::config::PullPolicy::Never => PullPolicy::Never,
    }
}

/// The engine's view of `env.k8s` (with `--namespace` and `--registry` applied) and of
/// `env.pull`.
pub fn k8s_settings(env: &EnvConfig) -> K8sSettings {
    let k8s = &env.k8s;
    let nonempty = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    K8sSettings {
        namespace: nonempty(&k8s.namespace),
        context: nonempty(&k8s.context),
        pull_policy: pod_pull_policy(env.pull),
        start_limits: StartLimits {
            pull: k8s.pull_timeout.duration(),
            schedule: k8s.schedule_timeout.duration(),
        },
        pull_secret: nonempty(&k8s.image_pull_secret),
        node_selector: k8s.node_selector.clone(),
    }
}

/// A cluster with the local daemon that builds and pushes its images.
pub struct Cluster {
    /// The local daemon: it builds, hashes and pushes the images.
    pub docker: DockerRuntime,
    /// The cluster.
    pub k8s: K8sRuntime,
    /// `env.k8s.registry` (or `--registry`); `None`: the nodes have the local tags.
    pub registry: Option<String>,
    /// Credentials for the registry, from `docker login`.
    pub credentials: Option<RegistryLogin>,
}

impl Cluster {
    /// A cluster over `k8s` whose images come from `docker`, published to `registry`.
    pub fn new(
        docker: DockerRuntime,
        k8s: K8sRuntime,
        registry: Option<String>,
        credentials: Option<RegistryLogin>,
    ) -> Self {
        Self {
            docker,
            k8s,
            registry: registry
                .map(|r| r.trim_end_matches('/').to_owned())
                .filter(|r| !r.is_empty()),
            credentials,
        }
    }

    /// The reference the nodes pull for local `tag`.
    pub fn reference(&self, tag: &str) -> String {
        match &self.registry {
            Some(registry) => format!("{registry}/{tag}"),
            None => tag.to_owned(),
        }
    }

    /// Creates the pod of `spec` without waiting for it. Its image is the reference the nodes
    /// pull, published by the provisioner ([`crate::provision::Provisioner::publish`]).
    pub async fn create(
        &self,
        spec: &SandboxSpec,
        task_secs: f64,
        created_ahead: bool,
    ) -> Result<PendingPod, SandboxError> {
        self.k8s.create(spec, task_secs, created_ahead).await
    }

    /// Starts the pod of `spec` and opens its shell.
    pub async fn start(
        &self,
        spec: &SandboxSpec,
        task_secs: f64,
    ) -> Result<PodSandbox, SandboxError> {
        self.create(spec, task_secs, false).await?.ready().await
    }

    /// Deletes every pod this process made for `run_id`, tracked or not.
    pub async fn delete_run(&self, run_id: &str) {
        self.k8s.delete_all_started().await;
        if let Err(error) = self.k8s.delete_own(run_id).await {
            let line =
                format!("warning: could not look for leftover pods of run {run_id}: {error}");
            eprintln!("{}", crate::text::escape_controls(&line));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::units::Seconds;

    #[test]
    fn env_pull_becomes_the_pods_pull_policy_and_the_limits_their_start_limits() {
        let mut env = EnvConfig::default();
        assert_eq!(k8s_settings(&env).pull_policy, PullPolicy::IfNotPresent);
        env.pull = crate::config::PullPolicy::Always;
        assert_eq!(k8s_settings(&env).pull_policy, PullPolicy::Always);
        env.pull = crate::config::PullPolicy::Never;
        env.k8s.pull_timeout = Seconds::whole(30);
        env.k8s.schedule_timeout = Seconds::whole(45);
        env.k8s.namespace = "swe".to_owned();
        let settings = k8s_settings(&env);
        assert_eq!(settings.pull_policy, PullPolicy::Never);
        assert_eq!(
            settings.start_limits,
            StartLimits {
                pull: Duration::from_secs(30),
                schedule: Duration::from_secs(45)
            }
        );
        assert_eq!(settings.namespace.as_deref(), Some("swe"));
        assert_eq!(settings.context, None);
    }
}
