//! `aci shell`: a person drives one instance's ACI through the agent loop a model uses.

use std::process::ExitCode;

use aci::batch::{self, output};
use aci::text::escape_controls;

use super::context::run_context;
use super::{Failure, find_instance, load_instances, settings};
use aci::engine::Kind;

use crate::cli::{self, ShellArgs};

/// The config layer under a shell's config files: a person sets the pace, so no step, time,
/// stall or timeout limit ends the session.
const SHELL_DEFAULTS: &str = "agent:
  limits:
    max_steps: 0
    max_wall_time_secs: 0
    stall_repeats: 0
    max_consecutive_timeouts: 4294967295
env:
  instance_timeout: 31536000
";

/// `aci shell`: the `human` model drives one instance through `run_instance`, exactly the path
/// a model's run takes (the same loop, ACI and sandbox), reading actions from stdin.
pub async fn shell(args: ShellArgs) -> Result<ExitCode, Failure> {
    // SIGTERM ends the session as the end of input does; listen before anything slow.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Failure::new(format!("cannot listen for signals: {e}")))?;
    let settings = settings::resolve(&args.config, Some(("aci shell defaults", SHELL_DEFAULTS)))?;
    let instances = load_instances(&args.instances)?;
    let instance = find_instance(&instances, &args.id, &args.instances)?;
    let (run_id, out) = (args.run_id.clone(), args.output.clone());
    let human = "human".to_owned();
    let docker_only = cli::EngineArgs {
        engine: Kind::Docker,
        namespace: None,
        registry: None,
    };
    let ctx = run_context(settings, human, run_id, out, args.runtime, &docker_only).await?;
    let output = ctx.output.clone();
    eprintln!(
        "aci shell: {} in {}; type ACI or shell commands, Ctrl-D to end",
        escape_controls(&instance.instance_id),
        escape_controls(&ctx.plan(instance)?.image.describe())
    );
    let (end, interrupt) = batch::Interrupt::new();
    let session = batch::run_instance_interruptible(&ctx, instance, None, interrupt);
    tokio::pin!(session);
    let mut terminated = false;
    let result = loop {
        tokio::select! {
            result = &mut session => break Some(result),
            _ = tokio::signal::ctrl_c() => break None,
            Some(()) = terminate.recv(), if !terminated => {
                // The session autosubmits its changes and removes its container.
                terminated = true;
                end.trigger();
            }
        }
    };
    if let Some(docker) = ctx.engine.docker() {
        docker.remove_all_started().await;
    }
    let traj = output::traj_path(&output, &instance.instance_id);
    let Some(result) = result else {
        eprintln!(
            "interrupted: the session so far is in {}",
            escape_controls(&traj.display().to_string())
        );
        return Ok(ExitCode::from(130));
    };
    eprintln!(
        "session ended ({}): {}",
        result.exit_status,
        escape_controls(&traj.display().to_string())
    );
    println!(
        "{}\t{}\t{}",
        escape_controls(&result.instance_id),
        result.exit_status,
        escape_controls(
            &output::patch_path(&output, &result.instance_id)
                .display()
                .to_string()
        )
    );
    Ok(if terminated {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
