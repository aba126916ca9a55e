//! `--engine k8s` for the commands that start tasks: connecting to the cluster (with
//! `--namespace` and `--registry` over `env.k8s`), reaping what dead runs left there, and
//! deleting a run's pods at its end.

use std::sync::Arc;

use aci::batch::ahead::K8sRun;
use aci::config::EnvConfig;
use aci::engine::{Cluster, Engine, Kind, k8s_settings};
use aci::image::push::credentials_for;
use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::k8s::K8sRuntime;
use aci::text::escape_controls;

use super::Failure;
use crate::cli::EngineArgs;

/// `env` with `--namespace` and `--registry` applied.
pub fn with_overrides(env: &EnvConfig, args: &EngineArgs) -> EnvConfig {
    let mut env = env.clone();
    if let Some(namespace) = &args.namespace {
        env.k8s.namespace.clone_from(namespace);
    }
    if let Some(registry) = &args.registry {
        env.k8s.registry.clone_from(registry);
    }
    env
}

/// Connects to the cluster of `--engine k8s`, reaps what dead runs left there, and reads the
/// registry's credentials.
async fn connect_cluster(docker: DockerRuntime, env: &EnvConfig) -> Result<Arc<Cluster>, Failure> {
    let k8s = K8sRuntime::connect(k8s_settings(env)).await.map_err(|e| {
        Failure::new(e.to_string()).hint(
            "set KUBECONFIG (or run inside the cluster with a service account); see \
             docs/kubernetes.md",
        )
    })?;
    match k8s.reap_orphans().await {
        Ok(0) => {}
        Ok(n) => eprintln!(
            "removed {n} pod(s) left by aci runs that are gone (namespace {})",
            k8s.namespace()
        ),
        Err(error) => eprintln!(
            "warning: could not look for leftover pods: {}",
            escape_controls(&error.to_string())
        ),
    }
    let registry = (!env.k8s.registry.is_empty()).then(|| env.k8s.registry.clone());
    let credentials = match &registry {
        Some(registry) => credentials_for(registry).map_err(|e| Failure::new(e.to_string()))?,
        None => None,
    };
    eprintln!(
        "engine: k8s, namespace {}, {}, images {}",
        k8s.namespace(),
        k8s.source(),
        registry
            .as_deref()
            .map_or("as tagged here (no registry)".to_owned(), |r| format!(
                "from {r}"
            ))
    );
    Ok(Arc::new(Cluster::new(docker, k8s, registry, credentials)))
}

/// The engine of `run`, `batch` and `shell`: `runtime` (Docker or the host), turned into the
/// cluster's when `--engine k8s`.
pub async fn attach(
    runtime: Engine,
    args: &EngineArgs,
    env: &EnvConfig,
) -> Result<Engine, Failure> {
    if args.engine != Kind::K8s {
        return Ok(runtime);
    }
    let Engine::Docker(docker) = runtime else {
        return Err(Failure::new("--engine k8s cannot run with --runtime local")
            .hint("drop --runtime local: the pods are the sandboxes"));
    };
    let env = with_overrides(env, args);
    Ok(Engine::K8s(connect_cluster(docker, &env).await?))
}

/// The engine of `aci eval` and `aci validate`, its containers starting at most
/// `env.max_starting` at once.
pub async fn eval_engine(
    docker: DockerRuntime,
    args: &EngineArgs,
    env: &EnvConfig,
) -> Result<Engine, Failure> {
    let docker = docker.with_max_starting(env.max_starting);
    attach(Engine::Docker(docker), args, env).await
}

/// Deletes every pod of the run this process made (the end of a run, or Ctrl-C).
pub async fn finish(ahead: Option<&K8sRun>) {
    if let Some(run) = ahead {
        run.finish().await;
    }
}
