//! Running instances: one ([`run_instance`]) for `aci run`, many for `aci batch`. An instance's
//! failure (its container died, the model API kept failing, a limit was hit) ends that instance
//! with an exit status in its trajectory; only run-level failures are errors here.

pub mod output;

use std::path::{Path, PathBuf};
use std::time::Duration;

use minijinja::context;

use crate::aci::Aci;
use crate::aci::registry::Registry;
use crate::agent::history::{HistoryItem, MessageType, Role};
use crate::agent::prompt::Prompts;
use crate::agent::run::{Episode, run_episode};
use crate::agent::stop::{ActionFormat, ExitStatus, StopPolicy};
use crate::config::{Config, ParserKind};
use crate::instance::Instance;
use crate::model::{self, AnyModel, ReplayInput};
use crate::sandbox::docker::DockerRuntime;
use crate::sandbox::local::LocalSandbox;
use crate::sandbox::{
    AnySandbox, OutputLimit, RepoSource, ResourceLimits, Sandbox, SandboxError, SandboxSpec,
};
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

/// Everything a run of instances shares.
pub struct RunContext {
    /// The resolved configuration.
    pub config: Config,
    /// Directories that relative paths in config files are resolved against, parallel to
    /// `config.agent.demonstrations` entries' origin (the first existing match wins).
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
    pub exit_status: String,
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
        })
    }

    /// The image an instance runs in: `env.image`, else the instance's `image`, else the image
    /// of its language (Python when it names none).
    pub fn image_for(&self, instance: &Instance) -> String {
        if let Some(image) = &self.config.env.image {
            return image.clone();
        }
        if let Some(image) = &instance.image {
            return image.clone();
        }
        let language = instance.language.as_deref().unwrap_or("python");
        self.config
            .env
            .images
            .get(language)
            .cloned()
            .unwrap_or_else(|| format!("aci-{language}:bookworm"))
    }

    fn spec_for(&self, instance: &Instance) -> SandboxSpec {
        let env = &self.config.env;
        SandboxSpec {
            run_id: self.run_id.clone(),
            instance_id: instance.instance_id.clone(),
            image: self.image_for(instance),
            repo: instance.repo_path.as_ref().map(|path| RepoSource {
                path: path.clone(),
                commit: Some(instance.base_commit.clone()),
            }),
            repo_dir: instance.repo_dir(&env.repo_dir),
            limits: ResourceLimits {
                memory_mb: env.memory_mb,
                cpus: env.cpus,
                pids: env.pids,
            },
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

    /// Starts the sandbox for `instance`.
    pub async fn start_sandbox(&self, instance: &Instance) -> Result<AnySandbox, SandboxError> {
        let spec = self.spec_for(instance);
        match &self.runtime {
            Runtime::Docker(runtime) => Ok(AnySandbox::Docker(runtime.start(&spec).await?)),
            Runtime::Local => Ok(AnySandbox::Local(LocalSandbox::start(&spec).await?)),
        }
    }
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
/// message (SWE-agent's `put_demos_in_history: false` layout).
fn load_demonstrations(
    config: &Config,
    dirs: &[PathBuf],
    prompts: &Prompts,
) -> Result<Vec<HistoryItem>, RunError> {
    let mut items = Vec::new();
    for path in &config.agent.demonstrations {
        let path = find_config_file(path, dirs);
        let demo =
            trajectory::read(&path).map_err(|e| RunError::Config(format!("demonstration: {e}")))?;
        let text: Vec<&str> = demo
            .history
            .iter()
            .filter(|item| item.role != Role::System)
            .map(|item| item.content.as_str())
            .collect();
        let content = prompts
            .render(
                "demonstration",
                &context! { demonstration => text.join("\n") },
            )
            .map_err(|e| RunError::Config(e.to_string()))?;
        let mut item = HistoryItem::new(Role::User, content, MessageType::Demonstration);
        item.is_demo = true;
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
    let id = instance.instance_id.clone();
    let traj_path = output::traj_path(&ctx.output, &id);
    if let Err(error) = std::fs::create_dir_all(output::instance_dir(&ctx.output, &id)) {
        eprintln!("error: cannot create the output directory of {id}: {error}");
    }
    let mut model_config = ctx.config.model.clone();
    if model_config.name.is_empty() {
        model_config.name.clone_from(&ctx.model);
    }
    let mut model = match model::from_spec(&ctx.model, &model_config, replay) {
        Ok(model) => model,
        Err(error) => {
            return fail(
                ctx,
                instance,
                &traj_path,
                error.exit_status(),
                &error.to_string(),
            );
        }
    };
    let sandbox = match ctx.start_sandbox(instance).await {
        Ok(sandbox) => sandbox,
        Err(error) => {
            let message = format!("cannot start the sandbox: {error}");
            return fail(
                ctx,
                instance,
                &traj_path,
                ExitStatus::ExitEnvironmentError.as_str(),
                &message,
            );
        }
    };
    let env = &ctx.config.env;
    let mut aci = Aci::new(
        sandbox,
        ctx.registry.clone(),
        ctx.config.aci.clone(),
        Duration::from_secs_f64(env.command_timeout),
        env.memory_mb,
    );
    let watchdog = Duration::from_secs_f64(env.instance_timeout);
    let result = tokio::time::timeout(
        watchdog,
        episode(ctx, instance, &mut model, &mut aci, &traj_path),
    )
    .await;
    let (status, submission, cost) = match result {
        Ok(Ok(outcome)) => (
            outcome.trajectory.info.exit_status.unwrap_or_default(),
            outcome.submission,
            outcome.trajectory.info.model_stats.instance_cost,
        ),
        Ok(Err(error)) => {
            eprintln!("error: {id}: {error}");
            (ExitStatus::ExitError.as_str().to_owned(), None, 0.0)
        }
        Err(_) => watchdog_fired(&mut aci, &traj_path, &mut model).await,
    };
    let _ = aci.into_sandbox().shutdown().await;
    let patch = submission.unwrap_or_default();
    let prediction = Prediction {
        instance_id: id.clone(),
        model_name_or_path: ctx.model.clone(),
        model_patch: String::from_utf8_lossy(&patch).into_owned(),
    };
    if let Err(error) = output::write_prediction(&ctx.output, &prediction, &patch) {
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
    model: &mut AnyModel,
    aci: &mut Aci<AnySandbox>,
    traj_path: &Path,
) -> Result<crate::agent::run::Outcome, crate::agent::run::LoopError> {
    let mut save = |trajectory: &Trajectory| {
        if let Err(error) = trajectory::write_atomic(traj_path, trajectory) {
            eprintln!("error: cannot save {}: {error}", traj_path.display());
        }
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
        save: &mut save,
    };
    run_episode(&mut episode, model, aci).await
}

/// The instance ran past `env.instance_timeout`: keep the turns saved so far, autosubmit.
async fn watchdog_fired(
    aci: &mut Aci<AnySandbox>,
    traj_path: &Path,
    model: &mut AnyModel,
) -> (String, Option<Vec<u8>>, f64) {
    use crate::model::Model;
    let submission = aci.submit().await.ok().filter(|patch| !patch.is_empty());
    let exit = ExitStatus::ExitTotalExecutionTime;
    let status = if submission.is_some() {
        exit.autosubmitted()
    } else {
        exit.as_str().to_owned()
    };
    let mut trajectory = trajectory::read(traj_path).unwrap_or_default();
    trajectory.info.exit_status = Some(status.clone());
    trajectory.info.submission = submission
        .as_ref()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let _ = trajectory::write_atomic(traj_path, &trajectory);
    (status, submission, model.stats().instance_cost)
}

/// An instance that could not run at all: a trajectory with the status and the reason.
fn fail(
    ctx: &RunContext,
    instance: &Instance,
    traj_path: &Path,
    status: &str,
    message: &str,
) -> InstanceResult {
    eprintln!("error: {}: {message}", instance.instance_id);
    let mut trajectory = Trajectory {
        environment: "aci".to_owned(),
        ..Trajectory::default()
    };
    trajectory.info.exit_status = Some(status.to_owned());
    trajectory.info.extra.insert(
        "error".to_owned(),
        serde_json::Value::String(message.to_owned()),
    );
    let _ = trajectory::write_atomic(traj_path, &trajectory);
    let prediction = Prediction {
        instance_id: instance.instance_id.clone(),
        model_name_or_path: ctx.model.clone(),
        model_patch: String::new(),
    };
    let _ = output::write_prediction(&ctx.output, &prediction, b"");
    InstanceResult {
        instance_id: instance.instance_id.clone(),
        exit_status: status.to_owned(),
        cost: 0.0,
        has_patch: false,
    }
}
