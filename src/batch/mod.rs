//! Running instances: one ([`run_instance`]) for `aci run`, many for `aci batch`. An instance's
//! failure (its container died, the model API kept failing, a limit was hit) ends that instance
//! with an exit status in its trajectory; only run-level failures are errors here.

pub mod output;
pub mod progress;
pub mod runner;
pub mod summary;

pub use runner::{Interrupt, InterruptHandle};

use std::path::{Path, PathBuf};

use minijinja::context;

use crate::aci::Aci;
use crate::aci::registry::Registry;
use crate::agent::demos;
use crate::agent::history::HistoryItem;
use crate::agent::prompt::Prompts;
use crate::agent::run::{Episode, SUBMISSION_ERROR, record_stop, run_episode};
use crate::agent::stop::{ActionFormat, ExitStatus, StopPolicy};
use crate::config::{Config, ParserKind};
use crate::image::pull::Notes;
use crate::instance::Instance;
use crate::model::{self, AnyModel, ReplayInput};
use crate::protocol::RecordedStatus;
use crate::sandbox::docker::DockerRuntime;
use crate::sandbox::local::LocalSandbox;
use crate::sandbox::{
    AnySandbox, OutputLimit, RepoSource, ResourceLimits, Sandbox, SandboxError, SandboxSpec,
};
use crate::source::{PrepareError, PrepareRequest, prepare};
use crate::trajectory::{self, Trajectory};
use output::Prediction;

/// Where instances run.
#[derive(Clone)]
pub enum Runtime {
    /// Containers on this daemon.
    Docker(DockerRuntime),
    /// Temporary directories on the host (not a sandbox).
    Local,
}

impl Runtime {
    /// The Docker connection, when instances run on Docker.
    pub fn docker(&self) -> Option<&DockerRuntime> {
        match self {
            Runtime::Docker(docker) => Some(docker),
            Runtime::Local => None,
        }
    }
}

/// Everything a run of instances shares.
pub struct RunContext {
    /// The resolved configuration.
    pub config: Config,
    /// The directories of the config files, in order: relative paths in them (custom commands,
    /// demonstrations) resolve against the last one that has the file; demonstrations then
    /// fall back to the built-in `configs/demos/`.
    pub config_dirs: Vec<PathBuf>,
    /// The model spec (`replay`, `openai/<name>`, …).
    pub model: String,
    /// Where instances run.
    pub runtime: Runtime,
    /// The run id labelled on containers.
    pub run_id: String,
    /// The output directory.
    pub output: PathBuf,
    /// The compiled templates.
    pub prompts: Prompts,
    /// The enabled commands.
    pub registry: Registry,
    /// Rendered demonstrations.
    pub demonstrations: Vec<HistoryItem>,
    /// Print one line per turn on stderr ([`progress::turn_line`]): `aci run` does, a batch
    /// shows its progress bar instead.
    pub turn_lines: bool,
    /// Where a batch's instances send a pull's or a clone's progress (`None`: nowhere, unless
    /// `turn_lines` prints it).
    pub feed: Option<progress::Feed>,
}

/// Why a run could not even start (tier 3).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
    /// The output directory cannot be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// How one instance ended.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceResult {
    /// The instance.
    pub instance_id: String,
    /// Its exit status (`submitted`, `submitted (exit_cost)`, `exit_environment_error`, …).
    pub exit_status: RecordedStatus,
    /// What the model cost.
    pub cost: f64,
    /// Whether a non-empty patch was submitted.
    pub has_patch: bool,
}

impl RunContext {
    /// Builds the shared parts from a resolved config: templates, commands, demonstrations.
    pub fn new(
        config: Config,
        config_dirs: Vec<PathBuf>,
        model: String,
        runtime: Runtime,
        run_id: String,
        output: PathBuf,
    ) -> Result<Self, RunError> {
        let prompts =
            Prompts::new(&config.agent.templates).map_err(|e| RunError::Config(e.to_string()))?;
        let mut registry = Registry::builtin().map_err(|e| RunError::Config(e.to_string()))?;
        for path in &config.aci.custom_commands {
            let path = find_config_file(path, &config_dirs);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                RunError::Config(format!(
                    "cannot read custom command {}: {e}",
                    path.display()
                ))
            })?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            registry
                .add_yaml(&name, &text)
                .map_err(|e| RunError::Config(e.to_string()))?;
        }
        let registry = registry
            .enabled(&config.aci.commands)
            .map_err(|e| RunError::Config(e.to_string()))?;
        let demonstrations = load_demonstrations(&config, &config_dirs, &prompts)?;
        Ok(Self {
            config,
            config_dirs,
            model,
            runtime,
            run_id,
            output,
            prompts,
            registry,
            demonstrations,
            turn_lines: false,
            feed: None,
        })
    }

    /// The image an instance runs in: `env.image`, else the instance's `image`, else the image
    /// of its language (Python when it names none).
    pub fn image_for(&self, instance: &Instance) -> String {
        crate::image::env::base_image(instance, &self.config.env)
    }

    fn spec_for(&self, instance: &Instance) -> SandboxSpec {
        let env = &self.config.env;
        SandboxSpec {
            run_id: self.run_id.clone(),
            instance_id: instance.instance_id.clone(),
            image: self.image_for(instance),
            repo: instance.repo_path.as_ref().map(|path| RepoSource {
                path: path.clone(),
                commit: instance.base_commit.clone(),
            }),
            repo_dir: instance.repo_dir(&env.repo_dir),
            limits: ResourceLimits::from_env(env),
            network: env.network,
            env: env
                .variables
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            output_limit: OutputLimit {
                head: env.output_head_bytes,
                tail: env.output_tail_bytes,
            },
            checkout: None,
            activate: env.activate.clone(),
        }
    }

    fn policy(&self) -> StopPolicy {
        let mut limits = self.config.agent.limits.clone();
        limits.max_cost = self.config.model.per_instance_cost_limit;
        StopPolicy {
            limits,
            nudges: self.config.agent.nudges.clone(),
            action_format: match self.config.agent.parser {
                ParserKind::ThoughtAction => ActionFormat::ThoughtAction,
                ParserKind::FunctionCalling => ActionFormat::FunctionCalling,
            },
        }
    }

    /// Starts the sandbox for `instance`: its image (pulled when `env.pull` says so), its
    /// repository ([`crate::source`]: `repo_path`, the image, or a mirror clone) and, on
    /// Docker, its environment image (built once per content hash and shared with `aci eval`),
    /// so no repository is copied per run. The second value is the trajectory's extra `info`:
    /// `env_image` and `repository`.
    pub async fn start_sandbox(
        &self,
        instance: &Instance,
    ) -> Result<(AnySandbox, serde_json::Map<String, serde_json::Value>), StartError> {
        let id = instance.instance_id.as_str();
        // `aci run` shows a build's steps and a pull's layers (they can take minutes); a
        // batch sends them to its progress display.
        let show = |line: &str| eprintln!("{line}");
        let quiet = |_: &str| {};
        let feed_line = |line: &str| {
            if let Some(feed) = &self.feed {
                feed.line(line);
            }
        };
        let activity = |text: Option<&str>| {
            if let Some(feed) = &self.feed {
                feed.activity(id, text);
            }
        };
        let line: &(dyn Fn(&str) + Send + Sync) = if self.turn_lines { &show } else { &feed_line };
        let on_step: &(dyn Fn(&str) + Send + Sync) = if self.turn_lines { &show } else { &quiet };
        let notes = Notes {
            line,
            activity: &activity,
        };
        let request = PrepareRequest {
            env: &self.config.env,
            run_id: &self.run_id,
            on_step,
            notes: &notes,
        };
        let docker = match &self.runtime {
            Runtime::Docker(runtime) => Some(runtime),
            Runtime::Local => None,
        };
        let prepared = prepare(docker, instance, &request)
            .await
            .map_err(StartError::Prepare)?;
        let mut spec = self.spec_for(&prepared.instance);
        spec.checkout.clone_from(&prepared.checkout);
        let mut info = serde_json::Map::new();
        info.insert(
            "repository".to_owned(),
            prepared
                .origin
                .record(prepared.instance.base_commit.as_deref()),
        );
        let sandbox = match (&self.runtime, &prepared.env_image) {
            (Runtime::Docker(runtime), Some(env_image)) => {
                env_image.apply_to(&mut spec);
                info.insert(
                    "env_image".to_owned(),
                    serde_json::json!({
                        "tag": env_image.tag,
                        "id": env_image.id,
                        "env_hash": env_image.env_hash,
                        "base_image": env_image.base_image,
                    }),
                );
                AnySandbox::Docker(runtime.start(&spec).await?)
            }
            _ => AnySandbox::Local(LocalSandbox::start(&spec).await?),
        };
        Ok((sandbox, info))
    }
}

/// Why an instance's sandbox did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Its repository, image or environment image could not be had.
    #[error("{0}")]
    Prepare(PrepareError),
    /// The sandbox failed to start (the container, the checkout, the activation).
    #[error("cannot start the sandbox: {0}")]
    Sandbox(#[from] SandboxError),
}

/// Resolves a path from a config file against the config files' directories.
fn find_config_file(path: &Path, dirs: &[PathBuf]) -> PathBuf {
    if path.is_absolute() {
        return path.to_owned();
    }
    dirs.iter()
        .rev()
        .map(|dir| dir.join(path))
        .find(|p| p.exists())
        .unwrap_or_else(|| path.to_owned())
}

/// Each demonstration trajectory rendered through the `demonstration` template into one user
/// message. Relative paths resolve against the config files' directories, then the built-in
/// `configs/demos/` ([`demos::load`]).
fn load_demonstrations(
    config: &Config,
    dirs: &[PathBuf],
    prompts: &Prompts,
) -> Result<Vec<HistoryItem>, RunError> {
    let mut items = Vec::new();
    for path in &config.agent.demonstrations {
        let demo = demos::load(path, dirs).map_err(|e| RunError::Config(e.to_string()))?;
        let item = demos::render(&demo, prompts).map_err(|e| RunError::Config(e.to_string()))?;
        items.push(item);
    }
    Ok(items)
}

/// Runs one instance end to end and writes its files: `<id>.traj` after every turn, then
/// `<id>.patch` and `<id>.pred`. Never fails for an instance-level reason.
pub async fn run_instance(
    ctx: &RunContext,
    instance: &Instance,
    replay: Option<ReplayInput>,
) -> InstanceResult {
    run_instance_interruptible(ctx, instance, replay, Interrupt::never()).await
}

/// [`run_instance`], ended early when `interrupt` is set (Ctrl-C): the running turn is
/// abandoned, the changes so far are autosubmitted and the trajectory gets `early_exit` (or
/// `submitted (early_exit)`), which resume reruns. An instance whose sandbox is starting when
/// the interrupt comes finishes starting first, so no container is left half-created.
pub async fn run_instance_interruptible(
    ctx: &RunContext,
    instance: &Instance,
    replay: Option<ReplayInput>,
    mut interrupt: Interrupt,
) -> InstanceResult {
    let id = instance.instance_id.clone();
    let traj_path = output::traj_path(&ctx.output, &id);
    if let Err(error) = std::fs::create_dir_all(output::instance_dir(&ctx.output, &id)) {
        eprintln!("error: cannot create the output directory of {id}: {error}");
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
        Err(error) => return fail(ctx, instance, error.exit_status(), &error.with_hint()),
    };
    let (sandbox, info_extra) = match ctx.start_sandbox(instance).await {
        Ok(started) => started,
        Err(error) => {
            let status = ExitStatus::ExitEnvironmentError;
            return fail(ctx, instance, status, &error.to_string());
        }
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
    let ended = drive(
        ctx,
        instance,
        &info_extra,
        &mut model,
        &mut aci,
        &mut interrupt,
        &saver,
    )
    .await;
    // Every save of the episode is on disk before the trajectory is read back or the
    // prediction is written.
    saver.finish().await;
    let (status, submission, cost) = match ended {
        Ended::Episode(result) => match *result {
            Ok(outcome) => {
                report_submission_error(&id, &outcome.trajectory.info);
                (
                    outcome
                        .trajectory
                        .info
                        .exit_status
                        .unwrap_or(RecordedStatus::Exit(ExitStatus::ExitError)),
                    outcome.submission,
                    outcome.trajectory.info.model_stats.instance_cost,
                )
            }
            Err(error) => {
                eprintln!("error: {id}: {error}");
                (RecordedStatus::Exit(ExitStatus::ExitError), None, 0.0)
            }
        },
        Ended::Watchdog => {
            let exit = ExitStatus::ExitTotalExecutionTime;
            stop_early(
                &id,
                &mut aci,
                &traj_path,
                &mut model,
                &info_extra,
                exit,
                None,
            )
            .await
        }
        Ended::Interrupted => {
            let note = "interrupted (Ctrl-C); a rerun runs this instance again";
            let exit = ExitStatus::EarlyExit;
            let extra = &info_extra;
            stop_early(
                &id,
                &mut aci,
                &traj_path,
                &mut model,
                extra,
                exit,
                Some(note),
            )
            .await
        }
    };
    let _ = aci.into_sandbox().shutdown().await;
    finish(ctx, id, status, submission, cost)
}

/// Runs the episode under the watchdog (`env.instance_timeout`) until it ends or `interrupt`
/// is set.
async fn drive(
    ctx: &RunContext,
    instance: &Instance,
    info_extra: &serde_json::Map<String, serde_json::Value>,
    model: &mut AnyModel,
    aci: &mut Aci<AnySandbox>,
    interrupt: &mut Interrupt,
    saver: &Saver,
) -> Ended {
    if interrupt.is_set() {
        return Ended::Interrupted;
    }
    let watchdog = ctx.config.env.instance_timeout.duration();
    tokio::select! {
        result = tokio::time::timeout(watchdog, episode(ctx, instance, info_extra, model, aci, saver)) => {
            match result {
                Ok(result) => Ended::Episode(Box::new(result)),
                Err(_) => Ended::Watchdog,
            }
        }
        () = interrupt.wait() => Ended::Interrupted,
    }
}

/// Saves an instance's trajectory after every turn on a blocking thread, so serialising and
/// writing a long trajectory never holds up the async runtime. Saves are written in order, each
/// atomically; when the writer falls behind, only the latest waiting state is written (each
/// save holds the whole trajectory). The final save (with the exit status) is also synced.
struct Saver {
    queue: std::sync::mpsc::Sender<Trajectory>,
    writer: tokio::task::JoinHandle<()>,
}

impl Saver {
    fn start(path: PathBuf) -> Self {
        let (queue, saves) = std::sync::mpsc::channel::<Trajectory>();
        let writer = tokio::task::spawn_blocking(move || {
            while let Ok(mut latest) = saves.recv() {
                // The final save is the last one sent, so it is never skipped.
                while let Ok(newer) = saves.try_recv() {
                    latest = newer;
                }
                let written = if latest.info.exit_status.is_some() {
                    trajectory::write_atomic(&path, &latest)
                } else {
                    trajectory::write_atomic_unsynced(&path, &latest)
                };
                if let Err(error) = written {
                    eprintln!("error: cannot save {}: {error}", path.display());
                }
            }
        });
        Saver { queue, writer }
    }

    /// Queues `trajectory` to be written.
    fn save(&self, trajectory: &Trajectory) {
        // The writer only stops once the queue is closed, in `finish`.
        let _ = self.queue.send(trajectory.clone());
    }

    /// Waits until every queued save is written.
    async fn finish(self) {
        drop(self.queue);
        // The writer reports its own errors and does not panic; were it to, the saves written
        // before stay on disk, and the instance still ends with its prediction.
        let _ = self.writer.await;
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
}

/// Writes the patch and the prediction of a finished instance.
fn finish(
    ctx: &RunContext,
    id: String,
    status: RecordedStatus,
    submission: Option<Vec<u8>>,
    cost: f64,
) -> InstanceResult {
    let patch = submission.unwrap_or_default();
    // `submit` makes a UTF-8 patch (files that are not UTF-8 in git's binary format); the
    // `.patch` file is written from the same text as `preds.json`, so the two always agree.
    let prediction = Prediction {
        instance_id: id.clone(),
        model_name_or_path: ctx.model.clone(),
        model_patch: String::from_utf8_lossy(&patch).into_owned(),
    };
    let patch = prediction.model_patch.as_bytes();
    if let Err(error) = output::write_prediction(&ctx.output, &prediction, patch) {
        eprintln!("error: cannot write the prediction of {id}: {error}");
    }
    InstanceResult {
        instance_id: id,
        exit_status: status,
        cost,
        has_patch: !patch.is_empty(),
    }
}

async fn episode(
    ctx: &RunContext,
    instance: &Instance,
    info_extra: &serde_json::Map<String, serde_json::Value>,
    model: &mut AnyModel,
    aci: &mut Aci<AnySandbox>,
    saver: &Saver,
) -> Result<crate::agent::run::Outcome, crate::agent::run::LoopError> {
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
        info_extra: info_extra.clone(),
        save: &mut save,
    };
    run_episode(&mut episode, model, aci).await
}

/// The episode was cut short (watchdog or interrupt): keep the turns saved so far, autosubmit,
/// and record `exit` (or `submitted (<exit>)`), with `note` as `info.error` when given.
async fn stop_early(
    id: &str,
    aci: &mut Aci<AnySandbox>,
    traj_path: &Path,
    model: &mut AnyModel,
    info_extra: &serde_json::Map<String, serde_json::Value>,
    exit: ExitStatus,
    note: Option<&str>,
) -> (RecordedStatus, Option<Vec<u8>>, f64) {
    use crate::model::Model;
    let mut trajectory = saved_so_far(traj_path);
    for (key, value) in info_extra {
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
    save_ending(traj_path, &trajectory);
    report_submission_error(id, &trajectory.info);
    let status = trajectory
        .info
        .exit_status
        .unwrap_or(RecordedStatus::Exit(exit));
    (status, submission, model.stats().instance_cost)
}

/// An instance that could not run at all (or whose task died): its trajectory gets `status`
/// and `message` as `info.error`, keeping any turns already saved, and an empty prediction.
fn fail(
    ctx: &RunContext,
    instance: &Instance,
    status: ExitStatus,
    message: &str,
) -> InstanceResult {
    let line = format!("error: {}: {message}", instance.instance_id);
    // Through the feed, a batch prints it after the instance's pull and clone lines.
    match &ctx.feed {
        Some(feed) => feed.line(&line),
        None => eprintln!("{line}"),
    }
    let traj_path = output::traj_path(&ctx.output, &instance.instance_id);
    let _ = std::fs::create_dir_all(output::instance_dir(&ctx.output, &instance.instance_id));
    let mut trajectory = saved_so_far(&traj_path);
    trajectory.info.exit_status = Some(RecordedStatus::Exit(status));
    trajectory.info.submission = None;
    set_error(&mut trajectory, message);
    save_ending(&traj_path, &trajectory);
    finish(
        ctx,
        instance.instance_id.clone(),
        RecordedStatus::Exit(status),
        None,
        0.0,
    )
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

/// Writes an instance's final trajectory (synced); a failure is reported, not returned: the
/// instance's prediction is still written.
fn save_ending(traj_path: &Path, trajectory: &Trajectory) {
    if let Err(error) = trajectory::write_atomic(traj_path, trajectory) {
        eprintln!("error: cannot save {}: {error}", traj_path.display());
    }
}

/// The stderr line of a failed autosubmission ([`SUBMISSION_ERROR`] in the trajectory).
fn report_submission_error(id: &str, info: &crate::trajectory::Info) {
    if let Some(error) = info.extra.get(SUBMISSION_ERROR).and_then(|v| v.as_str()) {
        eprintln!("error: {id}: {error}");
    }
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
    async fn the_saver_leaves_the_last_save_on_disk_once_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.traj");
        let saver = Saver::start(path.clone());
        for steps in 0..50 {
            saver.save(&with_steps(steps, None));
        }
        let last = with_steps(50, Some(ExitStatus::Submitted.into()));
        saver.save(&last);
        saver.finish().await;
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
