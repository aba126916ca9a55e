//! What `run`, `batch` and `shell` set up first (the run id, the output directory, where
//! instances run, the run's context) and what ends `run` and `batch`.

use std::path::{Path, PathBuf};

use aci::batch::{RunContext, output};
use aci::engine::{Engine, Kind};
use aci::sandbox::docker::DockerRuntime;

use super::settings::{self, Settings};
use super::{Failure, connect_engine, create_output_dir, default_run_id, engine};
use crate::cli;

/// The settings of `aci run` and `aci batch`: [`settings::resolve`], then `--api-base`.
pub fn agent_settings(args: &cli::AgentArgs) -> Result<Settings, Failure> {
    let mut settings = settings::resolve(&args.config, None)?;
    if let Some(api_base) = &args.api_base {
        settings.config.model.api_base = Some(api_base.clone());
    }
    Ok(settings)
}

/// What `run`, `batch` and `shell` set up first.
struct RunStart {
    /// The run id: `--run-id`, or a timestamp.
    run_id: String,
    /// The output directory, created: `--output`, or `aci-runs/<run id>`.
    output: PathBuf,
    /// Where instances run, with the Docker connection when there is one.
    runtime: Engine,
}

/// Picks the run id and the output directory (and creates it), and connects to Docker (or
/// Podman, with `--engine podman`) when instances run there.
async fn start_run(
    run_id: Option<String>,
    output: Option<PathBuf>,
    runtime: Kind,
    engine: Kind,
) -> Result<RunStart, Failure> {
    let run_id = run_id.unwrap_or_else(default_run_id);
    let output = output.unwrap_or_else(|| PathBuf::from("aci-runs").join(&run_id));
    create_output_dir(&output)?;
    let runtime = match runtime {
        Kind::Local => Engine::Local,
        Kind::Docker | Kind::K8s | Kind::Podman => Engine::Docker(connect_engine(engine).await?),
    };
    Ok(RunStart {
        run_id,
        output,
        runtime,
    })
}

/// The context of a run of `model` under `settings`: [`start_run`], then the templates, commands
/// and demonstrations.
pub async fn run_context(
    settings: Settings,
    model: String,
    run_id: Option<String>,
    output: Option<PathBuf>,
    runtime: Kind,
    engine: &cli::EngineArgs,
) -> Result<RunContext, Failure> {
    let started = start_run(run_id, output, runtime, engine.engine).await?;
    let config = settings.config;
    let runtime = engine::attach(started.runtime, engine, &config.env).await?;
    Ok(RunContext::new(
        config,
        settings.dirs,
        model,
        runtime,
        started.run_id,
        started.output,
    )?)
}

/// [`run_context`] for `aci run` and `aci batch`, from their shared agent options.
pub async fn agent_context(
    settings: Settings,
    agent: &cli::AgentArgs,
) -> Result<RunContext, Failure> {
    run_context(
        settings,
        agent.model.clone(),
        agent.run_id.clone(),
        agent.output.clone(),
        agent.runtime,
        &agent.cluster,
    )
    .await
}

/// What ends `aci run` and `aci batch`: the containers still running are removed, and
/// `preds.json` and `run_batch_exit_statuses.yaml` are rebuilt from the instances' files.
pub async fn finish_run(
    docker: Option<&DockerRuntime>,
    output: &Path,
) -> Result<output::ExitStatuses, Failure> {
    if let Some(docker) = docker {
        docker.remove_all_started().await;
    }
    output::merge_predictions(output).map_err(|e| {
        Failure::new(format!(
            "cannot write {}: {e}",
            output.join("preds.json").display()
        ))
    })?;
    output::write_exit_statuses(output)
        .map_err(|e| Failure::new(format!("cannot write the exit statuses: {e}")))
}
