//! `aci batch`: the selected instances, at most `--workers` at a time, resuming by default.
//!
//! - **Resume**: an instance whose `<id>.traj` has a final `exit_status`
//!   ([`trajectory::is_finished`]) is skipped and reported as `skipped (<old status>)`; any other
//!   instance directory (a partial run) is removed before the instance runs again. `--redo`
//!   reruns everything.
//! - **Isolation**: each instance is a task of a [`JoinSet`]; its failures end as an exit status
//!   inside [`run_instance_interruptible`], and a panic of its task is caught here and recorded
//!   as `exit_error`. The batch goes on either way.
//! - **Interrupt**: once the [`Interrupt`] is set no instance starts; the running ones autosubmit
//!   and record `early_exit` / `submitted (early_exit)`, which resume reruns.
//! - **Run-level failures** ([`RunFailure`]: low disk, a rejected API key, the Docker daemon
//!   gone, an output write that failed) stop the batch the same way, after one line naming the
//!   first of them.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::instance::fail;
use super::progress::Progress;
use super::{InstanceResult, RunContext, RunFailure, output, run_instance_interruptible};
use crate::hint::with_hint;
use crate::instance::Instance;
use crate::model::ReplayInput;
use crate::protocol::{ExitStatus, RecordedStatus};
use crate::trajectory;

/// Why a run stops before its queue is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// Ctrl-C or SIGTERM.
    Signal,
    /// A failure every instance would meet ([`RunFailure`]).
    Failure(RunFailure),
}

/// A one-way flag that Ctrl-C (or a run-level failure) sets, seen by the scheduler and by every
/// running instance. It keeps the first reason it was set for.
#[derive(Debug, Clone)]
pub struct Interrupt {
    set: watch::Receiver<Option<StopReason>>,
}

/// The side of an [`Interrupt`] that sets it.
#[derive(Debug)]
pub struct InterruptHandle {
    set: watch::Sender<Option<StopReason>>,
}

impl Interrupt {
    /// A new flag, not set, and the handle that sets it.
    pub fn new() -> (InterruptHandle, Interrupt) {
        let (sender, receiver) = watch::channel(None);
        (InterruptHandle { set: sender }, Interrupt { set: receiver })
    }

    /// A flag that is never set.
    pub fn never() -> Interrupt {
        Interrupt::new().1
    }

    /// Whether the flag is set.
    pub fn is_set(&self) -> bool {
        self.set.borrow().is_some()
    }

    /// Why the flag was set, if it is.
    pub fn reason(&self) -> Option<StopReason> {
        self.set.borrow().clone()
    }

    /// Waits until the flag is set (forever for [`Interrupt::never`]).
    pub async fn wait(&mut self) {
        if self.set.wait_for(Option::is_some).await.is_err() {
            // The handle is gone without setting the flag: it never will be.
            std::future::pending::<()>().await;
        }
    }
}

impl InterruptHandle {
    /// Sets the flag for Ctrl-C (unless it is set already).
    pub fn trigger(&self) {
        self.set_once(StopReason::Signal);
    }

    /// Sets the flag for a run-level failure (unless it is set already).
    pub fn stop(&self, failure: RunFailure) {
        self.set_once(StopReason::Failure(failure));
    }

    fn set_once(&self, reason: StopReason) {
        self.set.send_if_modified(|set| {
            if set.is_some() {
                return false;
            }
            *set = Some(reason);
            true
        });
    }
}

/// The options of `aci batch` that shape the run (selection is done before).
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Instances run at the same time (at least 1).
    pub workers: usize,
    /// Rerun instances that are already finished.
    pub redo: bool,
    /// `--replay-dir`: one replay file per instance.
    pub replay_dir: Option<PathBuf>,
}

/// What happened to one selected instance.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It ran (to its end, to an instance failure, or until the interrupt).
    Ran {
        /// How it ended.
        result: InstanceResult,
        /// Wall time from its start.
        elapsed: Duration,
    },
    /// Resume skipped it: an earlier run finished it.
    Skipped(Previous),
    /// The run was interrupted before it started.
    NotStarted,
}

/// An earlier run's result, read from its trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Previous {
    /// Its `info.exit_status`.
    pub exit_status: RecordedStatus,
    /// Whether it has a non-empty submission.
    pub has_patch: bool,
    /// Its `info.model_stats.instance_cost`.
    pub cost: f64,
}

/// One selected instance and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceOutcome {
    /// The instance.
    pub instance_id: String,
    /// What happened.
    pub outcome: Outcome,
}

/// The whole batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchReport {
    /// One entry per selected instance, in selection order.
    pub outcomes: Vec<InstanceOutcome>,
    /// Whether the run stopped before its queue was done (Ctrl-C or a run-level failure).
    pub interrupted: bool,
    /// The run-level failure that stopped it, if one did (the first, when there were several).
    pub failure: Option<RunFailure>,
    /// Wall time of the batch.
    pub wall_time: Duration,
}

impl BatchReport {
    /// The model cost of the selected instances: of those run now, and what the skipped ones
    /// cost when they ran.
    pub fn cost(&self) -> f64 {
        self.outcomes
            .iter()
            .map(|item| match &item.outcome {
                Outcome::Ran { result, .. } => result.cost,
                Outcome::Skipped(previous) => previous.cost,
                Outcome::NotStarted => 0.0,
            })
            .sum()
    }
}

/// Why an instance id cannot name an output directory, if it cannot
/// ([`crate::instance::unsafe_id`]).
pub fn unsafe_id(id: &str) -> Option<String> {
    crate::instance::unsafe_id(id)
}

/// The replay file of `instance_id` in `dir`: `<id>.yaml`, `<id>.yml`, `<id>.json` or
/// `<id>.traj`, else `<id>/<id>.traj` (so an earlier run's output directory replays as it is).
pub fn find_replay(dir: &Path, instance_id: &str) -> Option<PathBuf> {
    ["yaml", "yml", "json", "traj", "traj.json"]
        .iter()
        .map(|ext| dir.join(format!("{instance_id}.{ext}")))
        .chain(std::iter::once(output::traj_path(dir, instance_id)))
        .chain(std::iter::once(output::mini_traj_path(dir, instance_id)))
        .find(|path| path.is_file())
}

/// The earlier result of a finished instance, else `None`. Finished means the resume rule
/// holds for its trajectory ([`trajectory::is_finished`]) and its `<id>.pred` was written (the
/// prediction is written last, so a run killed in between is not finished). Only the keys
/// needed are read, so a foreign trajectory counts too.
pub fn previous_result(output: &Path, instance_id: &str) -> Option<Previous> {
    if !output::pred_path(output, instance_id).is_file() {
        return None;
    }
    let path = output::traj_path(output, instance_id);
    let value: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    if !trajectory::is_finished_value(&value) {
        return None;
    }
    Some(Previous {
        exit_status: RecordedStatus::from(value.pointer("/info/exit_status")?.as_str()?),
        has_patch: value
            .pointer("/info/submission")
            .and_then(Value::as_str)
            .is_some_and(|patch| !patch.is_empty()),
        cost: value
            .pointer("/info/model_stats/instance_cost")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
    })
}

/// [`previous_result`] of every id, in order: read on blocking threads, a share of the ids
/// each (one per core), so resuming a large run neither stalls the async runtime nor reads its
/// trajectories one after another. An id whose reader panicked counts as not finished.
pub async fn previous_results(output: &Path, ids: Vec<String>) -> Vec<Option<Previous>> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let share = ids.len().div_ceil(threads).max(1);
    let mut readers = Vec::new();
    for part in ids.chunks(share) {
        let (output, part) = (output.to_owned(), part.to_vec());
        let count = part.len();
        let reader = tokio::task::spawn_blocking(move || {
            part.iter()
                .map(|id| previous_result(&output, id))
                .collect::<Vec<_>>()
        });
        readers.push((reader, count));
    }
    let mut results = Vec::with_capacity(ids.len());
    for (reader, count) in readers {
        match reader.await {
            Ok(part) => results.extend(part),
            Err(_) => results.extend(std::iter::repeat_n(None, count)),
        }
    }
    results
}

/// Runs a batch: resume decisions, then the instances to run under [`schedule`].
pub async fn run_batch(
    ctx: Arc<RunContext>,
    instances: Vec<Instance>,
    options: &BatchOptions,
    interrupt: Interrupt,
    progress: &mut Progress,
) -> BatchReport {
    let started = Instant::now();
    let ids: Vec<String> = instances.iter().map(|i| i.instance_id.clone()).collect();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; instances.len()];
    let mut queue = VecDeque::new();
    let previous = if options.redo {
        vec![None; instances.len()]
    } else {
        previous_results(&ctx.output, ids.clone()).await
    };
    for ((index, instance), previous) in instances.into_iter().enumerate().zip(previous) {
        match previous {
            Some(previous) => {
                progress.skipped(&instance.instance_id, &previous);
                outcomes[index] = Some(Outcome::Skipped(previous));
            }
            None => queue.push_back((index, instance)),
        }
    }
    if let Some(run) = &ctx.ahead {
        run.plan(queue.iter().map(|(_, i)| i.clone()), options.workers);
    }
    if let Some(run) = &ctx.docker_ahead {
        // The first `workers` start at once, each provisioning its own (with its progress
        // lines); the work ahead is for the instances after them.
        let later = queue.iter().skip(options.workers.max(1));
        run.plan(later.map(|(_, i)| i.clone()), options.workers);
    }
    // Ctrl-C abandons the work ahead at once; the running instances wind down meanwhile.
    let abandon = {
        let ctx = Arc::clone(&ctx);
        let mut interrupt = interrupt.clone();
        tokio::spawn(async move {
            interrupt.wait().await;
            ctx.close_ahead();
        })
    };
    let task_ctx = Arc::clone(&ctx);
    let replay_dir = options.replay_dir.clone();
    let task = move |instance: Instance, interrupt: Interrupt| {
        let ctx = Arc::clone(&task_ctx);
        let replay_dir = replay_dir.clone();
        async move { run_one(&ctx, &instance, replay_dir.as_deref(), interrupt).await }
    };
    let on_panic = |instance: &Instance, message: String| {
        let message = format!("the instance's task panicked: {message}");
        fail(&ctx, instance, ExitStatus::ExitError, &message)
    };
    let scheduled = schedule(queue, options.workers, interrupt, task, on_panic, progress).await;
    abandon.abort();
    ctx.close_ahead();
    ctx.settle_ahead().await;
    for (index, outcome) in scheduled.outcomes {
        outcomes[index] = Some(outcome);
    }
    progress.finish();
    BatchReport {
        outcomes: ids
            .into_iter()
            .zip(outcomes)
            .map(|(instance_id, outcome)| InstanceOutcome {
                instance_id,
                outcome: outcome.unwrap_or(Outcome::NotStarted),
            })
            .collect(),
        interrupted: scheduled.interrupted,
        failure: scheduled.failure,
        wall_time: started.elapsed(),
    }
}

/// One instance of a batch: clean what a partial run left, find its replay, run it.
async fn run_one(
    ctx: &RunContext,
    instance: &Instance,
    replay_dir: Option<&Path>,
    interrupt: Interrupt,
) -> InstanceResult {
    let id = &instance.instance_id;
    let dir = output::instance_dir(&ctx.output, id);
    // Off the async runtime: a partial run's directory can hold a large trajectory.
    if tokio::fs::try_exists(&dir).await.unwrap_or(false)
        && let Err(error) = tokio::fs::remove_dir_all(&dir).await
    {
        let line = format!(
            "warning: {id}: cannot remove the partial run in {}: {error}",
            dir.display()
        );
        eprintln!("{}", crate::text::escape_controls(&line));
    }
    let replay = match replay_dir {
        None => None,
        Some(replay_dir) => {
            let Some(path) = find_replay(replay_dir, id) else {
                let message = format!(
                    "no replay file for this instance in {} (looked for {id}.yaml, {id}.yml, \
                     {id}.json, {id}.traj and {id}/{id}.traj)",
                    replay_dir.display()
                );
                return fail(ctx, instance, ExitStatus::ExitError, &message);
            };
            match ReplayInput::load(&path) {
                Ok(replay) => Some(replay),
                Err(error) => return fail(ctx, instance, error.exit_status(), &with_hint(&error)),
            }
        }
    };
    run_instance_interruptible(ctx, instance, replay, interrupt).await
}

/// What [`schedule`] did with its queue.
#[derive(Debug)]
pub struct Scheduled {
    /// `(index in the selection, outcome)` for every queued instance, in finishing order
    /// (those not started last).
    pub outcomes: Vec<(usize, Outcome)>,
    /// Whether the interrupt (or a run-level failure) came before the queue was done.
    pub interrupted: bool,
    /// The first run-level failure a task reported ([`InstanceResult::run_failure`]).
    pub failure: Option<RunFailure>,
}

/// Runs `task` for each queued instance, at most `workers` at once, in queue order. Once
/// `interrupt` is set, or a task reports a run-level failure ([`InstanceResult::run_failure`]),
/// nothing more starts, and the running tasks (which hold an interrupt that is then set, with
/// its reason) are waited for. A task that panics is turned into a result by `on_panic`; the
/// others go on.
pub async fn schedule<F, Fut>(
    mut queue: VecDeque<(usize, Instance)>,
    workers: usize,
    mut interrupt: Interrupt,
    task: F,
    on_panic: impl Fn(&Instance, String) -> InstanceResult,
    progress: &mut Progress,
) -> Scheduled
where
    F: Fn(Instance, Interrupt) -> Fut,
    Fut: Future<Output = InstanceResult> + Send + 'static,
{
    progress.plan(queue.len());
    // What the tasks see: set on Ctrl-C and on a run-level failure.
    let (stop, tasks_interrupt) = Interrupt::new();
    let mut tasks = JoinSet::new();
    let mut running: HashMap<tokio::task::Id, (usize, Instance, Instant)> = HashMap::new();
    let mut outcomes = Vec::new();
    let mut interrupted = false;
    let mut failure: Option<RunFailure> = None;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        // The flag may have been set while a result was being handled.
        if !interrupted && interrupt.is_set() {
            interrupted = true;
            stop.trigger();
            progress.interrupted(running.len(), queue.len());
        }
        while !interrupted && tasks.len() < workers.max(1) {
            let Some((index, instance)) = queue.pop_front() else {
                break;
            };
            progress.started(&instance.instance_id);
            let handle = tasks.spawn(task(instance.clone(), tasks_interrupt.clone()));
            running.insert(handle.id(), (index, instance, Instant::now()));
        }
        if tasks.is_empty() {
            break;
        }
        tokio::select! {
            joined = tasks.join_next_with_id() => {
                let (task_id, result) = match joined {
                    Some(Ok((task_id, result))) => (task_id, Ok(result)),
                    Some(Err(error)) => (error.id(), Err(error)),
                    None => break,
                };
                let Some((index, instance, started)) = running.remove(&task_id) else {
                    continue;
                };
                let result = result.unwrap_or_else(|error| on_panic(&instance, panic_text(error)));
                let elapsed = started.elapsed();
                progress.finished(&result, elapsed);
                if failure.is_none()
                    && let Some(first) = &result.run_failure
                {
                    // Only the first is named: the others are its consequences.
                    progress.stopping(first);
                    stop.stop(first.clone());
                    failure = Some(first.clone());
                    interrupted = true;
                }
                outcomes.push((index, Outcome::Ran { result, elapsed }));
            }
            // Wakes the loop, which then marks the interrupt (above).
            () = interrupt.wait(), if !interrupted => {}
            _ = ticker.tick() => progress.tick(),
        }
    }
    outcomes.extend(
        queue
            .into_iter()
            .map(|(index, _)| (index, Outcome::NotStarted)),
    );
    Scheduled {
        outcomes,
        interrupted,
        failure,
    }
}

/// The message of a panicked task.
fn panic_text(error: tokio::task::JoinError) -> String {
    if !error.is_panic() {
        return error.to_string();
    }
    crate::sandbox::guard::panic_message(error.into_panic().as_ref())
}

#[cfg(test)]
mod tests;
