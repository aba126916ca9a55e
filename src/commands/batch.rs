//! `aci batch`: many instances in parallel, resuming by default, with a summary table.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use aci::batch;
use aci::config::Config;
use aci::instance::{self, Instance};
use aci::text::escape_controls_in_lines;

use super::context::{agent_context, agent_settings, finish_run};
use super::manifest::{record_locks, warn_on_config_change, write_manifest};
use super::{Failure, Out, Signals, engine};
use crate::cli::BatchArgs;

/// `aci batch`.
pub async fn batch(args: BatchArgs) -> Result<ExitCode, Failure> {
    // Listen before anything slow, so an early Ctrl-C is an orderly stop, not a kill.
    let signals = Signals::listen()?;
    let end = execute(&args, Stop::Signals(signals), Out::Stdout).await?;
    Ok(match end {
        BatchEnd::Done => ExitCode::SUCCESS,
        BatchEnd::Failed => ExitCode::from(1),
        BatchEnd::Interrupted => ExitCode::from(130),
    })
}

/// What stops a batch in order.
pub enum Stop {
    /// Its own signals: the first stops it, the second quits at once.
    Signals(Signals),
    /// A flag that the caller sets (`aci ablate`, whose signals are its own).
    Given(batch::Interrupt),
}

/// How a batch ended, when it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchEnd {
    /// Every selected instance ran (or was skipped as finished).
    Done,
    /// A run-level failure stopped it; its line was printed when it happened.
    Failed,
    /// A signal stopped it in order.
    Interrupted,
}

/// Runs the batch of `args`, stopped by `stop`, with its summary table on `out`.
pub async fn execute(args: &BatchArgs, stop: Stop, out: Out) -> Result<BatchEnd, Failure> {
    let settings = agent_settings(&args.agent)?;
    if !args.plan {
        check_batch_model(args, &settings.config)?;
    }
    let (instances, invalid_records) = load_batch_instances(&args.instances)?;
    let seed = args
        .shuffle
        .then(|| args.seed.unwrap_or(instance::DEFAULT_SEED));
    let selection = instance::Selection {
        shuffle_seed: seed,
        filter: args.selection.filter.clone(),
        slice: args.selection.slice,
        shard: args.shard,
    };
    let selected = instance::select(instances, &selection);
    if args.plan {
        let on_host = args.agent.runtime == aci::engine::Kind::Local;
        super::print_plans(&selected, &settings.config.env, on_host)?;
        return Ok(BatchEnd::Done);
    }
    let ctx_replay_dir = settings.config.model.replay_dir.clone();
    let mut ctx = agent_context(settings, &args.agent).await?;
    let output = ctx.output.clone();
    let docker = ctx.engine.docker().cloned();
    let mut progress = batch::progress::Progress::stderr(selected.len());
    ctx.feed = Some(progress.feed());
    if let Some(run) = &ctx.docker_ahead {
        run.send_lines_to(progress.feed());
    }
    warn_on_config_change(&output, &ctx.config.hash(), args.redo);
    let refs: Vec<&Instance> = selected.iter().collect();
    write_manifest(
        &ctx,
        &args.agent,
        &args.instances,
        seed,
        docker.as_ref(),
        &refs,
    )
    .await?;
    let interrupt = match stop {
        Stop::Signals(signals) => signals.spawn(docker.clone(), ctx.ahead.clone()),
        Stop::Given(interrupt) => interrupt,
    };
    let ahead = ctx.ahead.clone();
    let provisioner = ctx.provisioner.clone();
    let options = batch::runner::BatchOptions {
        workers: usize::try_from(args.workers).unwrap_or(1),
        redo: args.redo,
        replay_dir: args.replay_dir.clone().or_else(|| ctx_replay_dir.clone()),
    };
    let report =
        batch::runner::run_batch(Arc::new(ctx), selected, &options, interrupt, &mut progress).await;
    engine::finish(ahead.as_deref()).await;
    record_locks(&output, docker.as_ref(), &provisioner.env_images()).await;
    let finished = finish_run(docker.as_ref(), &output).await;
    let context = batch::summary::SummaryContext {
        output: &output,
        total_cost: finished
            .as_ref()
            .map_or_else(|_| report.cost(), |statuses| statuses.total_cost),
        invalid_records,
    };
    out.print(&batch::summary::render(&report, &context));
    if report.failure.is_some() {
        // Named when it happened (`error: …; stopping the batch`); what failed after it is
        // its consequence.
        return Ok(BatchEnd::Failed);
    }
    finished?;
    Ok(if report.interrupted {
        BatchEnd::Interrupted
    } else {
        BatchEnd::Done
    })
}

/// Model settings that cannot work for a batch are run-level failures, found before anything
/// starts: every instance would fail the same way.
fn check_batch_model(args: &BatchArgs, config: &Config) -> Result<(), Failure> {
    let model = args.agent.model.trim();
    let replay_dir = args
        .replay_dir
        .as_ref()
        .or(config.model.replay_dir.as_ref());
    match (model, replay_dir) {
        ("human", _) => Err(Failure::new("aci batch cannot use --model human")
            .hint("use `aci run --model human` for one instance at a time")),
        ("replay", None) => Err(Failure::new("--model replay needs --replay-dir DIR")
            .hint("DIR holds one replay per instance: <id>.yaml, <id>.json or <id>.traj")),
        ("replay", Some(dir)) if !dir.is_dir() => Err(Failure::new(format!(
            "the replay directory {} does not exist",
            dir.display()
        ))),
        ("replay", Some(_)) => Ok(()),
        (_, Some(_)) => Err(Failure::new("--replay-dir is only for --model replay")),
        (_, None) => {
            let mut model_config = config.model.clone();
            if model_config.name.is_empty() {
                model_config.name = model.to_owned();
            }
            aci::model::from_spec(model, &model_config, None)?;
            Ok(())
        }
    }
}

/// The usable instances of the file, and how many records were not: each bad record gets an
/// error line naming the instance and the field, and the rest of the batch runs.
fn load_batch_instances(path: &Path) -> Result<(Vec<Instance>, usize), Failure> {
    let loaded = instance::load_instances_file(path)?;
    for error in &loaded.errors {
        let line = format!("{}: {error}", path.display());
        eprintln!("error: {}", escape_controls_in_lines(&line));
    }
    let mut invalid = loaded.errors.len();
    let mut instances = Vec::with_capacity(loaded.instances.len());
    for instance in loaded.instances {
        match batch::runner::unsafe_id(&instance.instance_id) {
            Some(reason) => {
                invalid += 1;
                eprintln!(
                    "error: {}: instance {:?}: field \"instance_id\": {reason}",
                    path.display(),
                    instance.instance_id
                );
            }
            None => instances.push(instance),
        }
    }
    Ok((instances, invalid))
}
