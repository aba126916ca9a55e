//! Where tasks run: containers of this machine's Docker daemon ([`Engine::Docker`]),
//! temporary directories on the host ([`Engine::Local`], not a sandbox), or pods of a
//! Kubernetes cluster ([`Engine::K8s`]). The engine starts the sandbox of a spec that was
//! prepared before it (image, repository, environment image) and removes what it started.

pub mod cluster;

use std::sync::Arc;

pub use cluster::{Cluster, k8s_settings, pod_pull_policy};

use crate::sandbox::docker::DockerRuntime;
use crate::sandbox::local::LocalSandbox;
use crate::sandbox::{AnySandbox, SandboxError, SandboxSpec};

/// Which engine: what `--runtime docker|local` and `--engine docker|podman|k8s` choose between.
/// Podman runs through the Docker engine, on Podman's socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Containers of this machine's Docker daemon.
    Docker,
    /// Temporary directories on the host.
    Local,
    /// Pods of a Kubernetes cluster.
    K8s,
    /// Containers of a Podman service, through its Docker-compatible API.
    Podman,
}

impl Kind {
    /// The name on the command line: `docker`, `local`, `k8s` or `podman`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Docker => "docker",
            Kind::Local => "local",
            Kind::K8s => "k8s",
            Kind::Podman => "podman",
        }
    }

    /// The kind named `name` ([`Kind::name`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        [Kind::Docker, Kind::Local, Kind::K8s, Kind::Podman]
            .into_iter()
            .find(|kind| kind.name() == name)
    }
}

/// Where sandboxes start.
#[derive(Clone)]
pub enum Engine {
    /// Containers of the local daemon.
    Docker(DockerRuntime),
    /// Temporary directories on the host (not a sandbox).
    Local,
    /// Pods of a cluster, their images from the local daemon.
    K8s(Arc<Cluster>),
}

impl From<DockerRuntime> for Engine {
    fn from(docker: DockerRuntime) -> Self {
        Engine::Docker(docker)
    }
}

impl Engine {
    /// Which engine this is.
    pub fn kind(&self) -> Kind {
        match self {
            Engine::Docker(_) => Kind::Docker,
            Engine::Local => Kind::Local,
            Engine::K8s(_) => Kind::K8s,
        }
    }

    /// The local daemon, which builds and finds the images for Docker and for a cluster
    /// (`None` on the host).
    pub fn docker(&self) -> Option<&DockerRuntime> {
        match self {
            Engine::Docker(docker) => Some(docker),
            Engine::Local => None,
            Engine::K8s(cluster) => Some(&cluster.docker),
        }
    }

    /// Starts a sandbox as `spec` says. `task_secs` is its task's time limit (a pod's
    /// deadline is made from it).
    pub async fn start(
        &self,
        spec: &SandboxSpec,
        task_secs: f64,
    ) -> Result<AnySandbox, SandboxError> {
        match self {
            Engine::Docker(docker) => Ok(AnySandbox::Docker(docker.start(spec).await?)),
            Engine::Local => Ok(AnySandbox::Local(LocalSandbox::start(spec).await?)),
            Engine::K8s(cluster) => Ok(AnySandbox::Pod(cluster.start(spec, task_secs).await?)),
        }
    }

    /// Removes every container or pod this process started for `run_id`.
    pub async fn remove_run(&self, run_id: &str) {
        match self {
            Engine::Docker(docker) => {
                docker.remove_all_started().await;
                if let Err(error) = docker.remove_own_containers(run_id).await {
                    eprintln!(
                        "warning: could not look for leftover containers: {}",
                        crate::text::escape_controls(&error.to_string())
                    );
                }
            }
            Engine::Local => {}
            Engine::K8s(cluster) => cluster.delete_run(run_id).await,
        }
    }
}
