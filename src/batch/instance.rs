//! One instance end to end ([`run_instance_interruptible`]): its sandbox, the episode under the
//! watchdog and the interrupt, the trajectory saved after every turn, the autosubmission of an
//! episode cut short, and its patch and prediction. Its failures end it with an exit status;
//! a run-level one ([`RunFailure`]) also comes back for the caller to stop the run.

use std::path::{Path, PathBuf};

use minijinja::context;
use tokio::sync::watch;

use super::runner::{self, Interrupt};
use super::{InstanceResult, RunContext, RunFailure, StartError, output, progress};
use crate::aci::Aci;
use crate::agent::run::{Episode, SUBMISSION_ERROR, record_stop, run_episode};
use crate::agent::stop::ExitStatus;
use crate::hint::with_hint;
use crate::instance::Instance;
use crate::model::{self, AnyModel, ReplayInput};
use crate::protocol::RecordedStatus;
use crate::sandbox::{AnySandbox, Sandbox};
use crate::text::escape_controls;
use crate::trajectory::{self, Trajectory};
use output::Prediction;

/// Runs one instance end to end and writes its files: `<id>.traj` after every turn, then
/// `<id>.patch` and `<id>.pred`. Never fails for an instance-level reason; a run-level one is
/// [`InstanceResult::run_failure`].
pub async fn run_instance(
    ctx: &RunContext,
    instance: &Instance,
    replay: Option<ReplayInput>,
) -> InstanceResult {
    run_instance_interruptible(ctx, instance, replay, Interrupt::never()).await
}

/// [`run_instance`], ended early when `interrupt` is set (Ctrl-C, or a run-level failure of
/// another instance): the running turn is abandoned, the changes so far are autosubmitted and
/// the trajectory gets `early_exit` (or `submitted (early_exit)`), which resume reruns. An
/// instance whose sandbox is starting when the interrupt comes finishes starting first, so no
/// container is left half-created.
///
/// A run-level failure met here (low disk, a rejected key, the Docker daemon gone, a write to
/// the output directory that failed) also ends the instance as `early_exit`, and is returned
/// as [`InstanceResult::run_failure`] for the caller to stop the run.
pub async fn run_instance_interruptible(
    ctx: &RunContext,
    instance: &Instance,
    replay: Option<ReplayInput>,
    mut interrupt: Interrupt,
) -> InstanceResult {
    let id = instance.instance_id.clone();
    let traj_path = output::traj_path(&ctx.output, &id);
    let dir = output::instance_dir(&ctx.output, &id);
    if let Err(error) = std::fs::create_dir_all(&dir) {
        return not_finished(&id, RunFailure::write(&dir, &error));
    }
    // A trajectory left by an earlier run of this instance is not this run's: the failure and
    // early-stop paths below keep the turns saved so far, and they must be this run's turns.
    let _ = std::fs::remove_file(&traj_path);
    let mut model_config = ctx.config.model.clone();
    if model_config.name.is_empty() {
        model_config.name.clone_from(&ctx.model);
    }
    let mut model = match model::from_spec(&ctx.model, &model_config, replay) {
        Ok(model) => model,
        Err(error) => return fail(ctx, instance, error.exit_status(), &with_hint(&error)),
    };
    let (sandbox, info_extra) = match ctx.start_sandbox(instance).await {
        Ok(started) => started,
        Err(error) => return start_failed(ctx, instance, &error).await,
    };
    let env = &ctx.config.env;
    let mut aci = Aci::new(
        sandbox,
        ctx.registry.clone(),
        ctx.config.aci.clone(),
        env.command_timeout.duration(),
        env.memory_mb.get(),
    );
    let saver = Saver::start(traj_path.clone());
    let run = InstanceRun {
        ctx,
        instance,
        info_extra: &info_extra,
        traj_path: &traj_path,
    };
    let ended = drive(&run, &mut model, &mut aci, &mut interrupt, &saver).await;
    // Every save of the episode is on disk before the trajectory is read back or the
    // prediction is written.
    let save_failure = saver.finish().await;
    let mut ending = run
        .ending(ended, &mut aci, &mut model, &interrupt, save_failure)
        .await;
    if ending.run_failure.is_none()
        && ending.status.exit() == Some(ExitStatus::ExitEnvironmentError)
    {
        // The sandbox failed: when the daemon itself is gone, every instance would fail so.
        if let Some(failure) = daemon_gone(ctx).await {
            ending.rerun_later(&traj_path, failure);
        }
    }
    if ctx.config.agent.mini_trajectory
        && let Err(failure) = write_mini_trajectory(ctx, &id, &traj_path)
    {
        ending.run_failure.get_or_insert(failure);
    }
    let _ = aci.into_sandbox().shutdown().await;
    if ending.stopped_by_run_failure(&interrupt) {
        // The run is stopping for a failure named once already; this is its consequence.
        ending.submission_error = None;
    }
    if let Some(error) = &ending.submission_error {
        eprintln!("{}", escape_controls(&format!("error: {id}: {error}")));
    }
    if ctx.turn_lines
        && let Some(reason) = &ending.reason
    {
        eprintln!("{}", escape_controls(&format!("error: {id}: {reason}")));
    }
    finish(ctx, id, ending)
}

/// Writes `<id>.traj.json`, the finished trajectory at `traj_path` as mini-swe-agent saves a
/// run ([`trajectory::mini::to_mini`]), with the resolved configuration as its `info.config`.
fn write_mini_trajectory(ctx: &RunContext, id: &str, traj_path: &Path) -> Result<(), RunFailure> {
    let trajectory = saved_so_far(traj_path);
    let config =
        serde_json::to_value(&ctx.config).unwrap_or_else(|_| trajectory::mini::no_config());
    let mini = trajectory::mini::to_mini(&trajectory, id, config);
    let path = output::mini_traj_path(&ctx.output, id);
    let bytes = serde_json::to_vec_pretty(&mini).map_err(std::io::Error::other);
    bytes
        .and_then(|bytes| crate::files::write_atomic(&path, &bytes))
        .map_err(|error| RunFailure::write(&path, &error))
}

/// What [`run_instance_interruptible`] shares with the steps of an instance's run.
struct InstanceRun<'a> {
    ctx: &'a RunContext,
    instance: &'a Instance,
    info_extra: &'a serde_json::Map<String, serde_json::Value>,
    traj_path: &'a Path,
}

/// How an instance that ran ended, before its prediction is written.
struct Ending {
    status: RecordedStatus,
    submission: Option<Vec<u8>>,
    cost: f64,
    /// Why it failed, for its line ([`InstanceResult::reason`]).
    reason: Option<String>,
    /// The autosubmission failed: why.
    submission_error: Option<String>,
    run_failure: Option<RunFailure>,
}

impl Ending {
    /// The instance met a run-level failure: it is recorded as `early_exit`, which the rerun
    /// runs again, with the failure as `info.error`; its own reason goes (the failure is named).
    fn rerun_later(&mut self, traj_path: &Path, failure: RunFailure) {
        let patch = self.submission.as_deref().filter(|patch| !patch.is_empty());
        self.status = RecordedStatus::after(ExitStatus::EarlyExit, patch.is_some());
        self.reason = None;
        let mut trajectory = saved_so_far(traj_path);
        trajectory.info.exit_status = Some(self.status.clone());
        set_error(&mut trajectory, &stopped_note(&failure));
        if let Err(error) = trajectory::write_atomic(traj_path, &trajectory) {
            self.run_failure = Some(RunFailure::write(traj_path, &error));
            return;
        }
        self.run_failure = Some(failure);
    }

    /// Whether the instance ended for a run-level failure, its own or another's.
    fn stopped_by_run_failure(&self, interrupt: &Interrupt) -> bool {
        self.run_failure.is_some()
            || matches!(interrupt.reason(), Some(runner::StopReason::Failure(_)))
    }
}

/// `info.error` of an instance stopped by a run-level failure.
fn stopped_note(failure: &RunFailure) -> String {
    format!("stopped: {failure}; a rerun runs this instance again")
}

impl InstanceRun<'_> {
    /// The [`Ending`] of how the episode ended: its outcome, or the early stop of the
    /// watchdog, the interrupt or a failed save. `save_failure` is the saver's first failed
    /// write, if any.
    async fn ending(
        &self,
        ended: Ended,
        aci: &mut Aci<AnySandbox>,
        model: &mut AnyModel,
        interrupt: &Interrupt,
        save_failure: Option<RunFailure>,
    ) -> Ending {
        let (exit, note, run_failure) = match ended {
            Ended::Episode(result) => {
                let (mut ending, stops_run) = episode_ending(*result);
                match (stops_run, save_failure) {
                    (Some(failure), _) => ending.rerun_later(self.traj_path, failure),
                    (None, Some(failure)) => ending.run_failure = Some(failure),
                    (None, None) => {}
                }
                return ending;
            }
            Ended::Watchdog => (ExitStatus::ExitTotalExecutionTime, None, None),
            Ended::Interrupted => {
                let note = match interrupt.reason() {
                    Some(runner::StopReason::Failure(failure)) => stopped_note(&failure),
                    _ => "interrupted (Ctrl-C); a rerun runs this instance again".to_owned(),
                };
                (ExitStatus::EarlyExit, Some(note), None)
            }
            Ended::SaveFailed(failure) => {
                let note = stopped_note(&failure);
                (ExitStatus::EarlyExit, Some(note), Some(failure))
            }
        };
        let mut ending = self.stop_early(aci, model, exit, note.as_deref()).await;
        if let Some(failure) = run_failure.or(save_failure) {
            ending.run_failure = Some(failure);
        }
        ending
    }

    /// The episode was cut short (watchdog, interrupt, failed save): keep the turns saved so
    /// far, autosubmit, and record `exit` (or `submitted (<exit>)`), with `note` as
    /// `info.error` when given.
    async fn stop_early(
        &self,
        aci: &mut Aci<AnySandbox>,
        model: &mut AnyModel,
        exit: ExitStatus,
        note: Option<&str>,
    ) -> Ending {
        use crate::model::Model;
        let mut trajectory = saved_so_far(self.traj_path);
        for (key, value) in self.info_extra {
            trajectory
                .info
                .extra
                .entry(key)
                .or_insert_with(|| value.clone());
        }
        let submission = record_stop(aci, &mut trajectory.info, exit, None).await;
        if let Some(note) = note {
            set_error(&mut trajectory, note);
        }
        // The turn in flight may have made a model call that no save has recorded yet.
        crate::agent::run::record_stats(&mut trajectory.info, model.stats());
        let run_failure = trajectory::write_atomic(self.traj_path, &trajectory)
            .err()
            .map(|error| RunFailure::write(self.traj_path, &error));
        Ending {
            status: trajectory
                .info
                .exit_status
                .clone()
                .unwrap_or(RecordedStatus::Exit(exit)),
            submission,
            cost: model.stats().instance_cost,
            reason: None,
            submission_error: submission_error(&trajectory.info),
            run_failure,
        }
    }
}

/// The [`Ending`] of an episode that ended by itself, and the run-level failure that ended
/// it, if one did (a rejected key: the loop recorded it as `early_exit`).
fn episode_ending(
    result: Result<crate::agent::run::Outcome, crate::agent::run::LoopError>,
) -> (Ending, Option<RunFailure>) {
    match result {
        Ok(outcome) => {
            let info = &outcome.trajectory.info;
            let stops_run = outcome
                .stops_run()
                .then(|| outcome.failure.as_ref().map(RunFailure::of))
                .flatten();
            let ending = Ending {
                status: info
                    .exit_status
                    .clone()
                    .unwrap_or(RecordedStatus::Exit(ExitStatus::ExitError)),
                submission: outcome.submission,
                cost: info.model_stats.instance_cost,
                reason: outcome.failure.as_ref().map(with_hint),
                submission_error: submission_error(info),
                run_failure: None,
            };
            (ending, stops_run)
        }
        Err(error) => {
            let ending = Ending {
                status: RecordedStatus::Exit(ExitStatus::ExitError),
                submission: None,
                cost: 0.0,
                reason: Some(error.to_string()),
                submission_error: None,
                run_failure: None,
            };
            (ending, None)
        }
    }
}

/// An instance whose sandbox did not start: a run-level failure (low disk, the daemon gone)
/// stops the run and leaves the instance to the rerun; any other ends it with
/// `exit_environment_error`.
async fn start_failed(ctx: &RunContext, instance: &Instance, error: &StartError) -> InstanceResult {
    let message = with_hint(error);
    let failure = if error.is_run_level() {
        Some(RunFailure::of(error))
    } else {
        daemon_gone(ctx).await
    };
    let Some(failure) = failure else {
        return fail(ctx, instance, ExitStatus::ExitEnvironmentError, &message);
    };
    let traj_path = output::traj_path(&ctx.output, &instance.instance_id);
    let mut trajectory = saved_so_far(&traj_path);
    trajectory.info.exit_status = Some(RecordedStatus::Exit(ExitStatus::EarlyExit));
    set_error(&mut trajectory, &stopped_note(&failure));
    // The run stops for `failure` either way: a note that cannot be written changes nothing.
    let _ = trajectory::write_atomic(&traj_path, &trajectory);
    not_finished(&instance.instance_id, failure)
}

/// The result of an instance left for the rerun by a run-level failure (nothing of it, or only
/// its `early_exit` trajectory, is on disk).
fn not_finished(id: &str, failure: RunFailure) -> InstanceResult {
    InstanceResult {
        instance_id: id.to_owned(),
        exit_status: RecordedStatus::Exit(ExitStatus::EarlyExit),
        cost: 0.0,
        has_patch: false,
        reason: None,
        run_failure: Some(failure),
    }
}

/// The run-level failure when the run's Docker daemon no longer answers.
async fn daemon_gone(ctx: &RunContext) -> Option<RunFailure> {
    let docker = ctx.engine.docker()?;
    docker
        .ping()
        .await
        .err()
        .map(|error| RunFailure::daemon_gone(&error))
}

/// Runs the episode under the watchdog (`env.instance_timeout`) until it ends, `interrupt` is
/// set or a save fails.
async fn drive(
    run: &InstanceRun<'_>,
    model: &mut AnyModel,
    aci: &mut Aci<AnySandbox>,
    interrupt: &mut Interrupt,
    saver: &Saver,
) -> Ended {
    if interrupt.is_set() {
        return Ended::Interrupted;
    }
    let watchdog = run.ctx.config.env.instance_timeout.duration();
    let mut failed = saver.failed.clone();
    tokio::select! {
        // A failed save stops the episode before it goes on (and spends more).
        biased;
        failure = first_failure(&mut failed) => Ended::SaveFailed(failure),
        () = interrupt.wait() => Ended::Interrupted,
        result = tokio::time::timeout(watchdog, episode(run, model, aci, saver)) => {
            match result {
                Ok(result) => Ended::Episode(Box::new(result)),
                Err(_) => Ended::Watchdog,
            }
        }
    }
}

/// Waits for the saver's first failed write (forever when there is none).
async fn first_failure(failed: &mut watch::Receiver<Option<RunFailure>>) -> RunFailure {
    let failure = match failed.wait_for(Option::is_some).await {
        Ok(failure) => failure.clone(),
        Err(_) => None,
    };
    match failure {
        Some(failure) => failure,
        // The writer is gone without a failure: there will be none.
        None => std::future::pending().await,
    }
}

/// Saves an instance's trajectory after every turn on a blocking thread, so serialising and
/// writing a long trajectory never holds up the async runtime. Saves are written in order, each
/// atomically; when the writer falls behind, only the latest waiting state is written (each
/// save holds the whole trajectory). The final save (with the exit status) is also synced.
/// The first save that fails is reported in `failed` (a run-level failure: the output
/// directory cannot be written), and nothing more is written.
struct Saver {
    queue: std::sync::mpsc::Sender<Trajectory>,
    writer: tokio::task::JoinHandle<()>,
    failed: watch::Receiver<Option<RunFailure>>,
}

impl Saver {
    fn start(path: PathBuf) -> Self {
        let (queue, saves) = std::sync::mpsc::channel::<Trajectory>();
        let (report, failed) = watch::channel(None);
        let writer = tokio::task::spawn_blocking(move || {
            while let Ok(mut latest) = saves.recv() {
                // The final save is the last one sent, so it is never skipped.
                while let Ok(newer) = saves.try_recv() {
                    latest = newer;
                }
                if report.borrow().is_some() {
                    continue;
                }
                let written = if latest.info.exit_status.is_some() {
                    trajectory::write_atomic(&path, &latest)
                } else {
                    trajectory::write_atomic_unsynced(&path, &latest)
                };
                if let Err(error) = written {
                    report.send_replace(Some(RunFailure::write(&path, &error)));
                }
            }
        });
        Saver {
            queue,
            writer,
            failed,
        }
    }

    /// Queues `trajectory` to be written.
    fn save(&self, trajectory: &Trajectory) {
        // The writer only stops once the queue is closed, in `finish`.
        let _ = self.queue.send(trajectory.clone());
    }

    /// Waits until every queued save is written; returns the first that failed, if one did.
    async fn finish(self) -> Option<RunFailure> {
        drop(self.queue);
        // The writer does not panic; were it to, the saves written before stay on disk, and
        // the instance still ends with its prediction.
        let _ = self.writer.await;
        self.failed.borrow().clone()
    }
}

/// How the episode of [`run_instance_interruptible`] ended.
enum Ended {
    /// The loop stopped by itself (or a template failed).
    Episode(Box<Result<crate::agent::run::Outcome, crate::agent::run::LoopError>>),
    /// `env.instance_timeout` ran out.
    Watchdog,
    /// The run was interrupted.
    Interrupted,
    /// A save of the trajectory failed.
    SaveFailed(RunFailure),
}

/// Writes the patch and the prediction of a finished instance. A write that fails is a
/// run-level failure (the first one of the instance is kept).
fn finish(ctx: &RunContext, id: String, ending: Ending) -> InstanceResult {
    let patch = ending.submission.unwrap_or_default();
    // `submit` makes a UTF-8 patch (files that are not UTF-8 in git's binary format); the
    // `.patch` file is written from the same text as `preds.json`, so the two always agree.
    let prediction = Prediction {
        instance_id: id.clone(),
        model_name_or_path: ctx.model.clone(),
        model_patch: String::from_utf8_lossy(&patch).into_owned(),
    };
    let patch = prediction.model_patch.as_bytes();
    let mut run_failure = ending.run_failure;
    let mut has_patch = !patch.is_empty();
    if let Err(output::OutputError::Write { path, source }) =
        output::write_prediction(&ctx.output, &prediction, patch)
    {
        run_failure.get_or_insert_with(|| RunFailure::write(&path, &source));
        has_patch = false;
    }
    // An instance that met a run-level failure is not finished, whatever its episode
    // recorded (that record may not even be on disk): the rerun runs it again.
    let exit_status = if run_failure.is_some() {
        RecordedStatus::after(ExitStatus::EarlyExit, has_patch)
    } else {
        ending.status
    };
    InstanceResult {
        instance_id: id,
        exit_status,
        cost: ending.cost,
        has_patch,
        reason: ending.reason,
        run_failure,
    }
}

async fn episode(
    run: &InstanceRun<'_>,
    model: &mut AnyModel,
    aci: &mut Aci<AnySandbox>,
    saver: &Saver,
) -> Result<crate::agent::run::Outcome, crate::agent::run::LoopError> {
    let (ctx, instance) = (run.ctx, run.instance);
    let mut shown = 0;
    let mut save = |trajectory: &Trajectory| {
        if ctx.turn_lines {
            let cost = trajectory.info.model_stats.instance_cost;
            for (index, step) in trajectory.trajectory.iter().enumerate().skip(shown) {
                eprintln!(
                    "{}",
                    progress::turn_line(&instance.instance_id, index + 1, step, cost)
                );
            }
            shown = trajectory.trajectory.len();
        }
        saver.save(trajectory);
    };
    let config = &ctx.config;
    let variables = context! {
        problem_statement => instance.problem_statement.clone(),
        task => instance.problem_statement.clone(),
        instance_id => instance.instance_id.clone(),
        repo => instance.repo.clone(),
        extra_fields => minijinja::Value::from(minijinja::value::Serde(&instance.extra_fields)),
        command_docs => ctx.registry.render_docs(&[
            ("WINDOW".to_owned(), config.aci.window.to_string()),
            ("OVERLAP".to_owned(), config.aci.overlap.to_string()),
        ]),
        WINDOW => config.aci.window,
        OVERLAP => config.aci.overlap,
    };
    let policy = ctx.policy();
    let mut episode = Episode {
        config: &config.agent,
        prompts: &ctx.prompts,
        policy: &policy,
        variables,
        demonstrations: ctx.demonstrations.clone(),
        info_extra: run.info_extra.clone(),
        save: &mut save,
    };
    run_episode(&mut episode, model, aci).await
}

/// An instance that could not run at all (or whose task died): its trajectory gets `status`
/// and `message` as `info.error`, keeping any turns already saved, and an empty prediction.
/// `message` is printed as the instance's error line here.
pub(super) fn fail(
    ctx: &RunContext,
    instance: &Instance,
    status: ExitStatus,
    message: &str,
) -> InstanceResult {
    let line = format!("error: {}: {message}", instance.instance_id);
    // Through the feed, a batch prints it after the instance's pull and clone lines.
    match &ctx.feed {
        Some(feed) => feed.line(&line),
        None => eprintln!("{}", escape_controls(&line)),
    }
    let traj_path = output::traj_path(&ctx.output, &instance.instance_id);
    let _ = std::fs::create_dir_all(output::instance_dir(&ctx.output, &instance.instance_id));
    let mut trajectory = saved_so_far(&traj_path);
    trajectory.info.exit_status = Some(RecordedStatus::Exit(status));
    trajectory.info.submission = None;
    set_error(&mut trajectory, message);
    let run_failure = trajectory::write_atomic(&traj_path, &trajectory)
        .err()
        .map(|error| RunFailure::write(&traj_path, &error));
    let ending = Ending {
        status: RecordedStatus::Exit(status),
        submission: None,
        cost: 0.0,
        reason: None,
        submission_error: None,
        run_failure,
    };
    finish(ctx, instance.instance_id.clone(), ending)
}

/// The trajectory saved so far of an instance that ends outside the loop, or an empty one.
fn saved_so_far(traj_path: &Path) -> Trajectory {
    trajectory::read(traj_path).unwrap_or_else(|_| Trajectory {
        environment: "aci".to_owned(),
        ..Trajectory::default()
    })
}

/// `info.error`: why the instance ended outside the loop.
fn set_error(trajectory: &mut Trajectory, message: &str) {
    trajectory.info.extra.insert(
        "error".to_owned(),
        serde_json::Value::String(message.to_owned()),
    );
}

/// Why the autosubmission failed ([`SUBMISSION_ERROR`] in the trajectory), if it did.
fn submission_error(info: &crate::trajectory::Info) -> Option<String> {
    info.extra
        .get(SUBMISSION_ERROR)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_steps(steps: usize, exit_status: Option<RecordedStatus>) -> Trajectory {
        let mut trajectory = Trajectory {
            environment: "aci".to_owned(),
            ..Trajectory::default()
        };
        trajectory.trajectory = (0..steps)
            .map(|n| trajectory::TrajectoryStep {
                action: format!("echo {n}"),
                ..trajectory::TrajectoryStep::default()
            })
            .collect();
        trajectory.info.exit_status = exit_status;
        trajectory
    }

    #[tokio::test]
    async fn a_save_that_fails_is_reported_once_with_its_path_and_nothing_more_is_written() {
        let dir = tempfile::tempdir().unwrap();
        // A directory that cannot be made: its parent is a file.
        std::fs::write(dir.path().join("file"), "").unwrap();
        let path = dir.path().join("file/x/x.traj");
        let saver = Saver::start(path.clone());
        let mut failed = saver.failed.clone();
        saver.save(&with_steps(1, None));
        let first = first_failure(&mut failed).await;
        saver.save(&with_steps(2, Some(ExitStatus::Submitted.into())));
        let failure = saver.finish().await;
        assert_eq!(failure.as_ref(), Some(&first));
        assert_eq!(
            first.message,
            format!(
                "cannot write {}: Not a directory (os error 20)",
                path.display()
            )
        );
    }

    #[tokio::test]
    async fn the_saver_leaves_the_last_save_on_disk_once_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.traj");
        let saver = Saver::start(path.clone());
        for steps in 0..50 {
            saver.save(&with_steps(steps, None));
        }
        let last = with_steps(50, Some(ExitStatus::Submitted.into()));
        saver.save(&last);
        assert_eq!(saver.finish().await, None);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(
            (trajectory::read(&path).unwrap(), names),
            (last, vec![std::ffi::OsString::from("x.traj")])
        );
    }
}
