//! `aci run`: one instance, its trajectory, patch, predictions and manifest.

use std::process::ExitCode;

use aci::batch::{self, output};
use aci::model::ReplayInput;
use aci::text::escape_controls;

use super::context::{agent_context, agent_settings, finish_run};
use super::manifest::{record_locks, write_manifest};
use super::{Failure, Signals, engine, find_instance, load_instances, run_failure};
use crate::cli::RunArgs;

/// `aci run`: one instance, with Ctrl-C autosubmitting its changes as a batch does.
pub async fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    // Listen before anything slow, so an early Ctrl-C is an orderly stop, not a kill.
    let signals = Signals::listen()?;
    let settings = agent_settings(&args.agent)?;
    let instances = load_instances(&args.instances)?;
    let instance = match &args.id {
        Some(id) => find_instance(&instances, id, &args.instances)?,
        None if instances.len() == 1 => &instances[0],
        None => {
            return Err(Failure::new(format!(
                "{} holds {} instances",
                args.instances.display(),
                instances.len()
            ))
            .hint("choose one with --id"));
        }
    };
    let replay = args.replay.as_deref().map(ReplayInput::load).transpose()?;
    let mut ctx = agent_context(settings, &args.agent).await?;
    let output = ctx.output.clone();
    ctx.turn_lines = true;
    let docker = ctx.engine.docker().cloned();
    write_manifest(
        &ctx,
        &args.agent,
        &args.instances,
        None,
        docker.as_ref(),
        &[instance],
    )
    .await?;
    // Ctrl-C autosubmits the changes so far, as in a batch; a second one quits at once.
    let interrupt = signals.spawn(docker.clone(), ctx.ahead.clone());
    let watch = interrupt.clone();
    let result = batch::run_instance_interruptible(&ctx, instance, replay, interrupt).await;
    engine::finish(ctx.ahead.as_deref()).await;
    record_locks(&output, docker.as_ref(), &ctx.provisioner.env_images()).await;
    let finished = finish_run(docker.as_ref(), &output).await;
    let patch = output::patch_path(&output, &result.instance_id);
    println!(
        "{}\t{}\t{}",
        escape_controls(&result.instance_id),
        result.exit_status,
        escape_controls(&patch.display().to_string())
    );
    if let Some(failure) = result.run_failure {
        return Err(run_failure(failure));
    }
    finished?;
    if watch.is_set() {
        let traj = output::traj_path(&output, &instance.instance_id);
        eprintln!(
            "interrupted: the turns so far are in {}",
            escape_controls(&traj.display().to_string())
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
