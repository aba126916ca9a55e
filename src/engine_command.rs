//! `--engine k8s` for the commands that start tasks, and `aci images push`: connecting to the
//! cluster (with `--namespace` and `--registry` over `env.k8s`), reaping what dead runs left
//! there, and deleting a run's pods at its end.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use aci::batch::Runtime;
use aci::batch::ahead::K8sRun;
use aci::cluster::{Cluster, Engine, k8s_settings};
use aci::config::{self, Config, EnvConfig};
use aci::image::pull::Notes;
use aci::image::push::{Published, base_images, credentials_for, push_images};
use aci::provision::{ProvisionRequest, Provisioner};
use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::k8s::K8sRuntime;
use aci::text::escape_controls;

use crate::cli::{self, EngineArgs, PushArgs};
use crate::{Failure, connect_docker, load_instances};

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
            "set KUBECONFIG (or run inside the cluster with a service account); see the \
             README's Kubernetes section",
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

/// Turns the Docker runtime of `run` or `batch` into the cluster's when `--engine k8s`.
pub async fn attach(
    runtime: Runtime,
    args: &EngineArgs,
    config: &Config,
    run_id: &str,
) -> Result<Runtime, Failure> {
    if args.engine == cli::Engine::Docker {
        return Ok(runtime);
    }
    let Runtime::Docker(docker) = runtime else {
        return Err(Failure::new("--engine k8s cannot run with --runtime local")
            .hint("drop --runtime local: the pods are the sandboxes"));
    };
    let env = with_overrides(&config.env, args);
    let cluster = connect_cluster(docker, &env).await?;
    Ok(Runtime::K8s(Arc::new(K8sRun::new(
        cluster,
        env,
        run_id.to_owned(),
    ))))
}

/// The engine of `aci eval`.
pub async fn eval_engine(
    docker: DockerRuntime,
    args: &EngineArgs,
    env: &EnvConfig,
) -> Result<Engine, Failure> {
    match args.engine {
        cli::Engine::Docker => Ok(Engine::Docker(docker)),
        cli::Engine::K8s => {
            let env = with_overrides(env, args);
            Ok(Engine::K8s(connect_cluster(docker, &env).await?))
        }
    }
}

/// Deletes every pod of the run this process made (the end of a run, or Ctrl-C).
pub async fn finish(runtime: &Runtime) {
    if let Runtime::K8s(run) = runtime {
        run.finish().await;
    }
}

/// `aci images push`: each instance prepared as a run prepares it (its image pulled as
/// `env.pull` says, its repository found, its environment image built when missing), then the
/// base, language and environment images pushed.
pub async fn images_push(args: PushArgs) -> Result<ExitCode, Failure> {
    let config = config::resolve(&args.configs, &args.sets)?;
    let env = &config.env;
    let instances = load_instances(&args.instances)?;
    if instances.is_empty() {
        return Err(Failure::new(format!(
            "{} holds no usable instance",
            args.instances.display()
        )));
    }
    let docker = connect_docker().await?;
    let credentials = credentials_for(&args.registry).map_err(|e| Failure::new(e.to_string()))?;
    let mut progress = |line: &str| eprintln!("{}", escape_controls(line));
    // Each instance's base image (for a spec's environment, its release's Python image) and
    // the Debian base under it, as its plan says.
    let provisioner = Provisioner::new();
    let mut bases = BTreeMap::new();
    for instance in &instances {
        let image = provisioner.plan(instance, env)?.image;
        if let Some(base) = image.base() {
            bases.insert(base, image.debian_base());
        }
    }
    let mut tags = base_images(&docker, &bases, &mut progress).await?;
    let mut failed = Vec::new();
    let quiet = |_: &str| {};
    let notes = Notes::quiet();
    let request = ProvisionRequest {
        env,
        run_id: "aci-images-push",
        on_step: &quiet,
        notes: &notes,
    };
    for instance in &instances {
        match provisioner.provision(&docker, instance, &request).await {
            Ok(prepared) => {
                if !tags.contains(&prepared.env_image.tag) {
                    tags.push(prepared.env_image.tag);
                }
            }
            Err(error) => failed.push((instance.instance_id.clone(), error.to_string())),
        }
    }
    let images = push_images(
        &docker,
        &tags,
        &args.registry,
        credentials.as_ref(),
        &mut progress,
    )
    .await
    .map_err(|e| {
        Failure::new(e.to_string())
            .hint("is the registry reachable, and `docker login` done for it?")
    })?;
    for image in &images {
        let state = match image.state {
            Published::Pushed => "pushed",
            Published::Present => "present",
        };
        println!("{}\t{state}", escape_controls(&image.reference));
    }
    for (id, error) in &failed {
        eprintln!("{}", escape_controls(&format!("error: {id}: {error}")));
    }
    let pushed = images
        .iter()
        .filter(|image| image.state == Published::Pushed)
        .count();
    eprintln!(
        "{} image(s) in {}: {pushed} pushed, {} already there",
        images.len(),
        args.registry,
        images.len() - pushed
    );
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(Failure::new(format!(
            "{} instance(s) of {} have no environment image; the others were pushed",
            failed.len(),
            display(&args.instances)
        )))
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
