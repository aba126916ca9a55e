//! Running instances: one ([`run_instance`]) for `aci run`, many for `aci batch`. An instance's
//! failure (its container died, the model API kept failing, a limit was hit) ends that instance
//! with an exit status in its trajectory; only run-level failures are errors here.

pub mod ahead;
mod instance;
pub mod output;
pub mod progress;
pub mod runner;
pub mod summary;

pub use instance::{run_instance, run_instance_interruptible};
pub use runner::{Interrupt, InterruptHandle};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::aci::registry::Registry;
use crate::agent::demos;
use crate::agent::history::HistoryItem;
use crate::agent::prompt::Prompts;
use crate::agent::stop::{ActionFormat, StopPolicy};
use crate::config::{Config, ParserKind};
use crate::engine::Engine;
use crate::hint::Hint;
use crate::image::pull::Notes;
use crate::instance::Instance;
use crate::protocol::RecordedStatus;
use crate::provision::{EnvPlan, ProvisionRequest, Provisioned, Provisioner, SpecUse};
use crate::sandbox::local::LocalSandbox;
use crate::sandbox::{AnySandbox, SandboxError};
use crate::source::PrepareError;
use crate::spec::SpecError;

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
    pub engine: Engine,
    /// With a cluster: its pods created ahead of need.
    pub ahead: Option<Arc<ahead::K8sRun>>,
    /// On Docker: the environments provisioned ahead of need (a batch plans them; `aci run`
    /// provisions its one instance when it starts).
    pub docker_ahead: Option<Arc<ahead::DockerAhead>>,
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
    /// Plans and provisions the instances' environments (the cluster's, with `--engine k8s`).
    pub provisioner: Arc<Provisioner>,
}

/// Why a run could not even start (tier 3).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
    /// A demonstration cannot be loaded or rendered.
    #[error("{0}")]
    Demonstration(#[from] demos::DemoError),
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
    /// Why it failed (the model API, the sandbox, a template), when no line has said so yet:
    /// the batch shows it in the instance's line. Its hint, if any, is on the lines after the
    /// first.
    pub reason: Option<String>,
    /// A failure that stops the whole run, met by this instance; the instance itself was
    /// recorded as `early_exit`, so the rerun runs it again.
    pub run_failure: Option<RunFailure>,
}

/// A failure that every instance of the run would meet: too little disk for the environment
/// images, an API key the model API rejects (HTTP 401 or 403), a Docker daemon that went
/// away, an output file that cannot be written. It stops the run like Ctrl-C, with one line
/// naming it, and the exit code 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    /// What happened, one line.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl RunFailure {
    /// The failure of an error: its message and its hint.
    pub fn of<E: std::fmt::Display + Hint + ?Sized>(error: &E) -> Self {
        RunFailure {
            message: error.to_string(),
            hint: error.hint(),
        }
    }

    /// A file of the output directory that could not be written.
    pub fn write(path: &Path, error: &std::io::Error) -> Self {
        RunFailure {
            message: format!("cannot write {}: {error}", path.display()),
            hint: Some(
                "make room in (or fix) the output directory, then rerun the same command: \
                 finished instances are kept"
                    .to_owned(),
            ),
        }
    }

    /// The Docker daemon stopped answering.
    pub fn daemon_gone(error: &SandboxError) -> Self {
        let detail = match error {
            SandboxError::Docker(detail) => detail.message.clone(),
            other => other.to_string(),
        };
        RunFailure {
            message: format!("the Docker daemon went away: {detail}"),
            hint: Some(
                "start the Docker daemon again, then rerun the same command: the run resumes \
                 and removes the containers left behind"
                    .to_owned(),
            ),
        }
    }
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl RunContext {
    /// Builds the shared parts from a resolved config: templates, commands, demonstrations.
    pub fn new(
        config: Config,
        config_dirs: Vec<PathBuf>,
        model: String,
        engine: Engine,
        run_id: String,
        output: PathBuf,
    ) -> Result<Self, RunError> {
        let prompts =
            Prompts::new(&config.agent.templates).map_err(|e| RunError::Config(e.to_string()))?;
        if config.agent.parser == ParserKind::ActionRegex {
            crate::aci::parse::compile_action_regex(&config.agent.action_regex)
                .map_err(RunError::Config)?;
        }
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
        for (name, docstring) in &config.aci.docstrings {
            if !registry.set_docstring(name, docstring) {
                return Err(RunError::Config(format!(
                    "aci.docstrings: unknown command `{name}`\nvalid commands: {}",
                    registry.names().join(", ")
                )));
            }
        }
        let registry = registry
            .enabled(&config.aci.commands)
            .map_err(|e| RunError::Config(e.to_string()))?;
        let demonstrations = load_demonstrations(&config, &config_dirs, &prompts)?;
        // Every container of the run starts through the same gate (`env.max_starting`).
        let engine = match engine {
            Engine::Docker(runtime) => {
                Engine::Docker(runtime.with_max_starting(config.env.max_starting))
            }
            other => other,
        };
        let ahead = match &engine {
            Engine::K8s(cluster) => Some(Arc::new(ahead::K8sRun::new(
                Arc::clone(cluster),
                config.env.clone(),
                run_id.clone(),
            ))),
            Engine::Docker(_) | Engine::Local => None,
        };
        let provisioner = match &ahead {
            Some(run) => Arc::clone(&run.provisioner),
            None => Arc::new(Provisioner::new()),
        };
        let docker_ahead = match &engine {
            Engine::Docker(runtime) => Some(Arc::new(ahead::DockerAhead::new(
                runtime.clone(),
                Arc::clone(&provisioner),
                config.env.clone(),
                run_id.clone(),
            ))),
            Engine::K8s(_) | Engine::Local => None,
        };
        Ok(Self {
            config,
            config_dirs,
            model,
            engine,
            ahead,
            docker_ahead,
            run_id,
            output,
            prompts,
            registry,
            demonstrations,
            turn_lines: false,
            feed: None,
            provisioner,
        })
    }

    /// The environment plan of `instance` under this run's configuration.
    ///
    /// # Errors
    /// A spec file of `env.specs` cannot be read or is invalid.
    pub fn plan(&self, instance: &Instance) -> Result<EnvPlan, SpecError> {
        let mut plan = self.provisioner.plan(instance, &self.config.env)?;
        if matches!(self.engine, Engine::Local) {
            plan.repository = plan.repository.on_host();
        }
        Ok(plan)
    }

    /// Stops preparing instances ahead and abandons what was not taken (the end of a batch,
    /// or its interrupt). Pods created ahead are deleted by [`ahead::K8sRun::finish`].
    pub fn close_ahead(&self) {
        if let Some(run) = &self.ahead {
            run.close();
        }
        if let Some(run) = &self.docker_ahead {
            run.close();
        }
    }

    /// After [`Self::close_ahead`]: waits for the daemon to remove what the image builds it
    /// aborted left ([`ahead::DockerAhead::settle`]), saying so when some is still there.
    pub async fn settle_ahead(&self) {
        if let Some(run) = &self.docker_ahead {
            let left = run.settle().await;
            if left > 0 {
                eprintln!(
                    "warning: {left} container(s) of image builds stopped by the interrupt are \
                     still being removed by the daemon (label aci.run_id={})",
                    self.run_id
                );
            }
        }
    }

    fn policy(&self) -> StopPolicy {
        let mut limits = self.config.agent.limits.clone();
        limits.max_cost = self.config.model.per_instance_cost_limit;
        StopPolicy {
            limits,
            nudges: self.config.agent.nudges.clone(),
            action_format: match self.config.agent.parser {
                ParserKind::ThoughtAction | ParserKind::ActionRegex => ActionFormat::ThoughtAction,
                ParserKind::FunctionCalling | ParserKind::BashToolCalls => {
                    ActionFormat::FunctionCalling
                }
            },
        }
    }

    /// Starts the sandbox for `instance`: its image (pulled when `env.pull` says so), its
    /// repository ([`crate::source`]: `repo_path`, the image, or a mirror clone) and, on
    /// Docker, its environment image (built once per content hash and shared with `aci eval`),
    /// so no repository is copied per run. In a batch on Docker (after the first wave) these
    /// were provisioned ahead ([`ahead`]) when an earlier instance started, and this start
    /// sets the next instances' going. The container then starts when `env.max_starting`
    /// lets it. The second value is the trajectory's extra `info`: `env_image` and
    /// `repository`.
    pub async fn start_sandbox(
        &self,
        instance: &Instance,
    ) -> Result<(AnySandbox, serde_json::Map<String, serde_json::Value>), StartError> {
        let id = instance.instance_id.as_str();
        // `aci run` shows a build's steps and a pull's layers (they can take minutes); a
        // batch sends them to its progress display.
        let show = |line: &str| eprintln!("{}", crate::text::escape_controls(line));
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
        let request = ProvisionRequest {
            env: &self.config.env,
            run_id: &self.run_id,
            on_step,
            notes: &notes,
        };
        let (env, run_id) = (&self.config.env, self.run_id.as_str());
        match &self.engine {
            Engine::Docker(runtime) => {
                let provisioned = match &self.docker_ahead {
                    Some(run) => run.take(instance, &request).await,
                    None => {
                        self.provisioner
                            .provision(runtime, instance, &request)
                            .await
                    }
                }
                .map_err(StartError::Prepare)?;
                let spec = provisioned.sandbox_spec(env, run_id, SpecUse::Agent);
                let mut info = repository_info(&provisioned);
                info.insert(
                    "env_image".to_owned(),
                    env_image_record(&provisioned.env_image),
                );
                // The bar says why an instance is not starting yet (the count may change
                // meanwhile: it is only what the display shows).
                let max = runtime.max_starting();
                let waits = max > 0 && runtime.start_counts().now >= max;
                if waits {
                    activity(Some("waiting for a turn to start (env.max_starting)"));
                }
                let started = runtime.start(&spec).await;
                if waits {
                    activity(None);
                }
                Ok((AnySandbox::Docker(started?), info))
            }
            Engine::Local => {
                let provisioned = self
                    .provisioner
                    .provision_on_host(instance, &request)
                    .await
                    .map_err(StartError::Prepare)?;
                let spec = provisioned.sandbox_spec(env, run_id, SpecUse::Agent);
                let info = repository_info(&provisioned);
                Ok((AnySandbox::Local(LocalSandbox::start(&spec).await?), info))
            }
            Engine::K8s(_) => {
                let run = self.ahead.as_ref().ok_or_else(|| {
                    SandboxError::Session("the cluster's run was not set up".to_owned())
                })?;
                let ahead = run.take(instance, &request).await?;
                let mut info = repository_info(&ahead.provisioned);
                info.insert(
                    "env_image".to_owned(),
                    env_image_record(&ahead.provisioned.env_image),
                );
                Ok((AnySandbox::Pod(ahead.pod.ready().await?), info))
            }
        }
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

impl Hint for StartError {
    fn hint(&self) -> Option<String> {
        match self {
            StartError::Prepare(error) => error.hint(),
            StartError::Sandbox(_) => None,
        }
    }
}

impl StartError {
    /// Whether the run must stop rather than only this instance fail (low disk).
    pub fn is_run_level(&self) -> bool {
        match self {
            StartError::Prepare(error) => error.is_run_level(),
            StartError::Sandbox(_) => false,
        }
    }
}

/// What `info.repository` of a trajectory says: where the tree came from, at which commit.
fn repository_info<E>(prepared: &Provisioned<E>) -> serde_json::Map<String, serde_json::Value> {
    let commit = prepared.plan.commit.as_deref();
    let mut info = serde_json::Map::new();
    info.insert("repository".to_owned(), prepared.origin.record(commit));
    info
}

/// What `info.env_image` of a trajectory says about the image its sandbox started from.
fn env_image_record(env_image: &crate::image::env::EnvImage) -> serde_json::Value {
    serde_json::json!({
        "tag": env_image.tag,
        "id": env_image.id,
        "env_hash": env_image.env_hash,
        "base_image": env_image.base_image,
    })
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
        let demo = demos::load(path, dirs)?;
        let item = demos::render(&demo, prompts).map_err(demos::DemoError::Template)?;
        items.push(item);
    }
    Ok(items)
}
