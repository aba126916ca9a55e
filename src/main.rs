//! The `aci` binary: parse the command line, resolve settings, run, and map failures to exit
//! codes (0 done, 1 run-level failure, 2 usage, 3 an evaluation regression).

#![expect(
    clippy::print_stdout,
    reason = "the binary prints its results (data) on stdout; logs go to stderr"
)]

mod cli;
mod engine_command;
mod eval_command;
mod validate_command;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use aci::batch::{self, RunContext, Runtime, output};
use aci::config::{self, Config};
use aci::image;
use aci::instance::{self, Instance};
use aci::model::ReplayInput;
use aci::sandbox::docker::DockerRuntime;
use aci::text::{escape_controls, escape_controls_in_lines};
use clap::Parser;
use cli::{AgentArgs, BatchArgs, Cli, Command, ImagesCommand, RunArgs, ShellArgs};

/// A run-level failure: one line, and maybe a hint on the next.
struct Failure {
    message: String,
    hint: Option<String>,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(error: E) -> Self {
        Self {
            message: error.to_string(),
            hint: hint_of(&error).map(str::to_owned),
        }
    }
}

/// The hint of an error that has one (its `hint()`); their messages do not repeat it.
fn hint_of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a str> {
    if let Some(error) = error.downcast_ref::<aci::model::ModelError>() {
        error.hint()
    } else if let Some(error) = error.downcast_ref::<config::ConfigError>() {
        error.hint()
    } else if let Some(error) = error.downcast_ref::<image::ImageError>() {
        error.hint()
    } else {
        None
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    // Whatever ends the work, a panic too, every container this process started is removed
    // before it exits.
    let result = match aci::sandbox::guard::run_guarded(runtime, dispatch(cli)) {
        Ok(result) => result,
        Err(panicked) => {
            eprintln!(
                "error: aci panicked ({}); removed {} container(s) it had started",
                panicked.message, panicked.removed
            );
            return ExitCode::from(101);
        }
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            // Messages quote paths, ids, image names and servers' answers: every control
            // character is written out, each line of a message kept a line.
            eprintln!("error: {}", escape_controls_in_lines(&failure.message));
            if let Some(hint) = failure.hint {
                eprintln!("hint: {}", escape_controls_in_lines(&hint));
            }
            ExitCode::from(1)
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Images(ImagesCommand::Build {
            lang,
            force,
            debian,
        }) => images_build(&lang, force, debian).await,
        Command::Run(args) => run(args).await,
        Command::Images(ImagesCommand::Push(args)) => engine_command::images_push(args).await,
        Command::Images(ImagesCommand::Prune {
            run_id,
            all,
            pulled,
        }) => eval_command::images_prune(run_id, all, pulled).await,
        Command::Eval(args) => eval_command::eval(args).await,
        Command::Validate(args) => validate_command::validate(args).await,
        Command::Batch(args) => batch_command(args).await,
        Command::Ablate(args) => ablate_command(args).await,
        Command::Shell(args) => shell(args).await,
        Command::Inspect(args) => inspect(args).await,
    }
}

async fn connect_docker() -> Result<DockerRuntime, Failure> {
    let runtime = DockerRuntime::connect().await.map_err(|e| {
        Failure::new(e.to_string())
            .hint("start the Docker daemon, or use --runtime local (no isolation)")
    })?;
    match runtime.reap_orphans().await {
        Ok(reaped) => {
            if reaped.removed > 0 {
                let n = reaped.removed;
                eprintln!("removed {n} container(s) left by aci runs that are gone");
            }
            if let Some(line) = reaped.unknown_line("container(s)") {
                eprintln!("{line}");
            }
        }
        Err(error) => eprintln!(
            "warning: could not look for leftover containers: {}",
            escape_controls(&error.to_string())
        ),
    }
    Ok(runtime)
}

async fn images_build(
    lang: &str,
    force: bool,
    debian: image::release::DebianRelease,
) -> Result<ExitCode, Failure> {
    let mut progress = |line: &str| eprintln!("{}", escape_controls(line));
    let languages =
        image::languages_in_release(image::select_languages(lang)?, debian, &mut progress)?;
    let runtime = connect_docker().await?;
    let built = image::build_release(&runtime, debian, &languages, force, &mut progress).await?;
    for image in built {
        let state = if image.built { "built" } else { "up to date" };
        println!("{}\t{}\t{state}", image.tag, image.id);
    }
    Ok(ExitCode::SUCCESS)
}

/// What `run`, `batch` and `shell` set up first.
struct RunStart {
    /// The run id: `--run-id`, or a timestamp.
    run_id: String,
    /// The output directory, created: `--output`, or `aci-runs/<run id>`.
    output: PathBuf,
    /// Where instances run, with the Docker connection when there is one.
    runtime: Runtime,
}

/// Picks the run id and the output directory (and creates it), and connects to Docker when
/// instances run there.
async fn start_run(
    run_id: Option<String>,
    output: Option<PathBuf>,
    runtime: cli::Runtime,
) -> Result<RunStart, Failure> {
    let run_id = run_id.unwrap_or_else(default_run_id);
    let output = output.unwrap_or_else(|| PathBuf::from("aci-runs").join(&run_id));
    create_output_dir(&output)?;
    let runtime = match runtime {
        cli::Runtime::Docker => Runtime::Docker(connect_docker().await?),
        cli::Runtime::Local => Runtime::Local,
    };
    Ok(RunStart {
        run_id,
        output,
        runtime,
    })
}

/// The context of a run of `model` under `config`: [`start_run`], then the templates, commands
/// and demonstrations.
async fn run_context(
    config: Config,
    dirs: Vec<PathBuf>,
    model: String,
    run_id: Option<String>,
    output: Option<PathBuf>,
    runtime: cli::Runtime,
    engine: &cli::EngineArgs,
) -> Result<RunContext, Failure> {
    let started = start_run(run_id, output, runtime).await?;
    let runtime = engine_command::attach(started.runtime, engine, &config, &started.run_id).await?;
    Ok(RunContext::new(
        config,
        dirs,
        model,
        runtime,
        started.run_id,
        started.output,
    )?)
}

/// [`run_context`] for `aci run` and `aci batch`, from their shared agent options.
async fn agent_context(
    config: Config,
    dirs: Vec<PathBuf>,
    agent: &cli::AgentArgs,
) -> Result<RunContext, Failure> {
    run_context(
        config,
        dirs,
        agent.model.clone(),
        agent.run_id.clone(),
        agent.output.clone(),
        agent.runtime,
        &agent.cluster,
    )
    .await
}

/// Creates an output directory, or fails naming it.
fn create_output_dir(output: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(output).map_err(|e| {
        Failure::new(format!(
            "cannot create the output directory {}: {e}",
            output.display()
        ))
    })
}

/// What ends `aci run` and `aci batch`: the containers still running are removed, and
/// `preds.json` and `run_batch_exit_statuses.yaml` are rebuilt from the instances' files.
async fn finish_run(
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

/// A run id from the current UTC time: `YYYYMMDD-HHMMSS-<pid>`.
fn default_run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm), for a timestamp without a date crate.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}-{}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        std::process::id()
    )
}

/// The configuration and the directories its relative paths resolve against.
fn resolve_config(args: &AgentArgs) -> Result<(Config, Vec<PathBuf>), Failure> {
    let mut config = resolve_images_config(args.images, &args.configs, &args.sets)?;
    for warning in config.warnings() {
        eprintln!("warning: {}\nhint: {}", warning.message, warning.hint);
    }
    if let Some(api_base) = &args.api_base {
        config.model.api_base = Some(api_base.clone());
    }
    // The built-in default's relative paths (its demonstration) resolve against the files
    // compiled into the binary, so only the user's config files are listed here.
    let dirs = args
        .configs
        .iter()
        .map(|path| path.parent().map(Path::to_owned).unwrap_or_default())
        .collect();
    Ok((config, dirs))
}

/// The configuration with the `--images` preset layered under the config files and `--set`.
fn resolve_images_config(
    images: cli::Images,
    files: &[PathBuf],
    sets: &[String],
) -> Result<Config, Failure> {
    let preset = match images {
        cli::Images::Local => None,
        cli::Images::Swebench => Some(image::pull::swebench_preset()),
    };
    let presets: Vec<(&str, &str)> = preset
        .iter()
        .map(|text| ("--images swebench", text.as_str()))
        .collect();
    Ok(config::resolve_with_presets(&presets, files, sets)?)
}

/// `--plan`: each instance's environment plan as one JSON line on stdout; nothing starts.
fn print_plans(
    instances: &[Instance],
    env: &config::EnvConfig,
    on_host: bool,
) -> Result<ExitCode, Failure> {
    for line in aci::provision::plan_lines(instances, env, on_host)? {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn load_instances(path: &Path) -> Result<Vec<Instance>, Failure> {
    let loaded = instance::load_instances_file(path)?;
    for error in &loaded.errors {
        let line = format!("{}: {error}", path.display());
        eprintln!("error: {}", escape_controls_in_lines(&line));
    }
    Ok(loaded.instances)
}

async fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    // Listen before anything slow, so an early Ctrl-C is an orderly stop, not a kill.
    let signals = Signals::listen()?;
    let (config, dirs) = resolve_config(&args.agent)?;
    let instances = load_instances(&args.instances)?;
    let instance = match &args.id {
        Some(id) => instances
            .iter()
            .find(|i| &i.instance_id == id)
            .ok_or_else(|| {
                Failure::new(format!(
                    "no instance `{id}` in {}",
                    args.instances.display()
                ))
                .hint(format!("the file holds {} instance(s)", instances.len()))
            })?,
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
    let mut ctx = agent_context(config, dirs, &args.agent).await?;
    let output = ctx.output.clone();
    ctx.turn_lines = true;
    let docker = ctx.runtime.docker().cloned();
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
    let interrupt = signals.spawn(docker.clone(), ctx.runtime.clone());
    let watch = interrupt.clone();
    let result = batch::run_instance_interruptible(&ctx, instance, replay, interrupt).await;
    engine_command::finish(&ctx.runtime).await;
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

// ---- aci batch -------------------------------------------------------------------------------

async fn batch_command(args: BatchArgs) -> Result<ExitCode, Failure> {
    // Listen before anything slow, so an early Ctrl-C is an orderly stop, not a kill.
    let signals = Signals::listen()?;
    let (config, dirs) = resolve_config(&args.agent)?;
    if !args.plan {
        check_batch_model(&args, &config)?;
    }
    let (instances, invalid_records) = load_batch_instances(&args.instances)?;
    let seed = args
        .shuffle
        .then(|| args.seed.unwrap_or(instance::DEFAULT_SEED));
    let selection = instance::Selection {
        shuffle_seed: seed,
        filter: args.filter.clone(),
        slice: args.slice,
        shard: args.shard,
    };
    let selected = instance::select(instances, &selection);
    if args.plan {
        let on_host = args.agent.runtime == cli::Runtime::Local;
        return print_plans(&selected, &config.env, on_host);
    }
    let ctx_replay_dir = config.model.replay_dir.clone();
    let mut ctx = agent_context(config, dirs, &args.agent).await?;
    let output = ctx.output.clone();
    let docker = ctx.runtime.docker().cloned();
    let mut progress = batch::progress::Progress::stderr(selected.len());
    ctx.feed = Some(progress.feed());
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
    let interrupt = signals.spawn(docker.clone(), ctx.runtime.clone());
    let engine = ctx.runtime.clone();
    let options = batch::runner::BatchOptions {
        workers: usize::try_from(args.workers).unwrap_or(1),
        redo: args.redo,
        replay_dir: args.replay_dir.clone().or_else(|| ctx_replay_dir.clone()),
    };
    let report =
        batch::runner::run_batch(Arc::new(ctx), selected, &options, interrupt, &mut progress).await;
    engine_command::finish(&engine).await;
    let finished = finish_run(docker.as_ref(), &output).await;
    let context = batch::summary::SummaryContext {
        output: &output,
        total_cost: finished
            .as_ref()
            .map_or_else(|_| report.cost(), |statuses| statuses.total_cost),
        invalid_records,
    };
    print!("{}", batch::summary::render(&report, &context));
    if report.failure.is_some() {
        // Named when it happened (`error: …; stopping the batch`); what failed after it is
        // its consequence.
        return Ok(ExitCode::from(1));
    }
    finished?;
    Ok(if report.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The exit of a run stopped by a run-level failure: its line, its hint, exit code 1.
fn run_failure(failure: batch::RunFailure) -> Failure {
    Failure {
        message: failure.message,
        hint: failure.hint,
    }
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

/// Resuming into a directory written with another configuration mixes results: say so.
fn warn_on_config_change(output: &Path, hash: &str, redo: bool) {
    let Ok(text) = std::fs::read(output.join("manifest.json")) else {
        return;
    };
    let old = serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("config_hash")?.as_str().map(str::to_owned));
    if let Some(old) = old
        && old != hash
        && !redo
    {
        eprintln!(
            "warning: {} was written with another configuration (hash {old}); instances it \
             finished are skipped and keep their results\nhint: use --redo, or a new --output",
            output.display()
        );
    }
}

/// SIGINT (Ctrl-C) and SIGTERM: the first one stops the batch in order, the second quits at
/// once, after removing every container and pod this process created (bounded in time).
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> Result<Self, Failure> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| {
            signal(kind).map_err(|e| Failure::new(format!("cannot listen for signals: {e}")))
        };
        Ok(Self {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    /// Waits for the first SIGINT or SIGTERM.
    async fn first(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }

    /// Sends every SIGINT and SIGTERM on to the running step of `aci ablate`, which stops in
    /// order on the first and quits on the second, as a batch does.
    fn forward_to_steps(mut self) -> aci::ablate::StepControl {
        use aci::ablate::StepSignal;
        let control = aci::ablate::StepControl::default();
        let forward = control.clone();
        tokio::spawn(async move {
            loop {
                let signal = tokio::select! {
                    Some(()) = self.interrupt.recv() => StepSignal::Interrupt,
                    Some(()) = self.terminate.recv() => StepSignal::Terminate,
                    else => break,
                };
                forward.forward(signal);
            }
        });
        control
    }

    fn spawn(mut self, docker: Option<DockerRuntime>, runtime: Runtime) -> batch::Interrupt {
        let (handle, interrupt) = batch::Interrupt::new();
        tokio::spawn(async move {
            let mut count = 0;
            loop {
                self.first().await;
                count += 1;
                if count == 1 {
                    handle.trigger();
                    continue;
                }
                eprintln!("interrupted again: removing the containers and quitting");
                // The run's own clean-up, then the guard's sweep by label (which also finds a
                // container whose creation had not returned yet), each bounded in time.
                aci::sandbox::docker::close_creation();
                let limit = aci::sandbox::guard::QUIT_SWEEP_LIMIT;
                let own = async {
                    if let Some(docker) = &docker {
                        docker.remove_all_started().await;
                    }
                    engine_command::finish(&runtime).await;
                };
                let _ = tokio::time::timeout(limit, own).await;
                aci::sandbox::guard::sweep_before_exit().await;
                std::process::exit(130);
            }
        });
        interrupt
    }
}

async fn write_manifest(
    ctx: &RunContext,
    args: &AgentArgs,
    instances_file: &Path,
    seed: Option<u64>,
    docker: Option<&DockerRuntime>,
    instances: &[&Instance],
) -> Result<(), Failure> {
    let mut images = std::collections::BTreeMap::new();
    if let Some(docker) = docker {
        for instance in instances {
            let plan = ctx.plan(instance)?;
            // The image the instance starts from: for a spec's environment, the Python image
            // of its release that it is built on.
            let Some(tag) = plan.image.base() else {
                continue;
            };
            if images.contains_key(&tag) {
                continue;
            }
            let Some(info) = docker.inspect_image(&tag).await? else {
                // An image from a registry is pulled (or fails) with its instance, and a
                // spec's environment without its release's image fails with a hint; the
                // trajectory records the id it ran in.
                if !matches!(plan.image, aci::provision::ImagePlan::Built { .. }) {
                    continue;
                }
                return Err(Failure::new(format!("the image {tag} does not exist"))
                    .hint("run `aci images build`"));
            };
            images.insert(
                tag,
                output::ImageRecord {
                    id: info.id,
                    digests: info.digests,
                },
            );
        }
    }
    let config = serde_json::to_value(&ctx.config).map_err(|e| {
        Failure::new(format!(
            "cannot record the configuration in {}: {e}",
            ctx.output.join("manifest.json").display()
        ))
    })?;
    let mut config_files = vec!["configs/default.yaml (built in)".to_owned()];
    config_files.extend(args.configs.iter().map(|p| p.display().to_string()));
    let manifest = output::Manifest {
        aci_version: env!("CARGO_PKG_VERSION").to_owned(),
        run_id: ctx.run_id.clone(),
        model: ctx.model.clone(),
        runtime: match (&ctx.runtime, args.runtime) {
            (Runtime::K8s(_), _) => "k8s",
            (_, cli::Runtime::Docker) => "docker",
            (_, cli::Runtime::Local) => "local",
        }
        .to_owned(),
        instances: instances_file.display().to_string(),
        config_files,
        config_sets: args.sets.clone(),
        config_hash: ctx.config.hash(),
        config,
        images,
        seed,
    };
    output::write_manifest(&ctx.output, &manifest).map_err(|e| {
        Failure::new(format!(
            "cannot write {}: {e}",
            ctx.output.join("manifest.json").display()
        ))
    })
}

async fn ablate_command(args: cli::AblateArgs) -> Result<ExitCode, Failure> {
    // Listen before any step starts: a signal is sent on to the running step.
    let signals = Signals::listen()?;
    // Check every configuration before anything runs: a typo fails now, not after an hour.
    for variant in std::iter::once(&args.base).chain(&args.variants) {
        config::resolve(&[args.base.clone(), variant.clone()], &args.sets)?;
    }
    let instances = load_instances(&args.instances)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("aci-ablations").join(default_run_id()));
    let images_args = match args.images {
        cli::Images::Local => Vec::new(),
        cli::Images::Swebench => vec!["--images".to_owned(), "swebench".to_owned()],
    };
    let mut batch_args = vec!["--model".to_owned(), args.model.clone()];
    batch_args.extend(images_args.iter().cloned());
    if let Some(api_base) = &args.api_base {
        batch_args.extend(["--api-base".to_owned(), api_base.clone()]);
    }
    if args.runtime == cli::Runtime::Local {
        batch_args.extend(["--runtime".to_owned(), "local".to_owned()]);
    }
    for set in &args.sets {
        batch_args.extend(["--set".to_owned(), set.clone()]);
    }
    batch_args.extend(args.cluster.to_args());
    let plan = aci::ablate::AblationPlan {
        exe: std::env::current_exe()
            .map_err(|e| Failure::new(format!("cannot find the aci executable: {e}")))?,
        instances: args.instances.clone(),
        instance_ids: instances.iter().map(|i| i.instance_id.clone()).collect(),
        base: args.base.clone(),
        variants: args.variants.clone(),
        output: output.clone(),
        workers: usize::try_from(args.workers).unwrap_or(1),
        repeats: usize::try_from(args.repeats).unwrap_or(1),
        batch_args,
        eval_args: [images_args, args.cluster.to_args()].concat(),
        replay_dir: args.replay_dir.clone(),
    };
    let control = signals.forward_to_steps();
    let ran = tokio::task::spawn_blocking(move || aci::ablate::run(&plan, &control))
        .await
        .map_err(|e| Failure::new(format!("the ablation stopped: {e}")))?;
    let table = match ran {
        Err(aci::ablate::AblateError::Interrupted { what }) => {
            eprintln!(
                "interrupted during {what}: the finished steps are in {}; rerun the same \
                 command to resume",
                output.display()
            );
            return Ok(ExitCode::from(130));
        }
        ran => ran?,
    };
    aci::ablate::write(&table, &output)?;
    print!("{}", table.to_markdown());
    eprintln!("wrote {}/ablation.{{md,csv,json,svg}}", output.display());
    Ok(ExitCode::SUCCESS)
}

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
async fn shell(args: ShellArgs) -> Result<ExitCode, Failure> {
    // SIGTERM ends the session as the end of input does; listen before anything slow.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Failure::new(format!("cannot listen for signals: {e}")))?;
    let mut layers = vec![
        (
            "configs/default.yaml (built in)".to_owned(),
            config::load::DEFAULT_CONFIG.to_owned(),
        ),
        ("aci shell defaults".to_owned(), SHELL_DEFAULTS.to_owned()),
    ];
    if args.images == cli::Images::Swebench {
        layers.push((
            "--images swebench".to_owned(),
            image::pull::swebench_preset(),
        ));
    }
    for path in &args.configs {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))?;
        layers.push((path.display().to_string(), text));
    }
    let layers: Vec<(&str, &str)> = layers
        .iter()
        .map(|(o, t)| (o.as_str(), t.as_str()))
        .collect();
    let config = config::resolve_text(&layers, &args.sets)?;
    let mut dirs = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs")];
    dirs.extend(
        args.configs
            .iter()
            .map(|p| p.parent().map(Path::to_owned).unwrap_or_default()),
    );
    let instances = load_instances(&args.instances)?;
    let instance = instances
        .iter()
        .find(|i| i.instance_id == args.id)
        .ok_or_else(|| {
            Failure::new(format!(
                "no instance `{}` in {}",
                args.id,
                args.instances.display()
            ))
            .hint(format!("the file holds {} instance(s)", instances.len()))
        })?;
    let (run_id, out) = (args.run_id.clone(), args.output.clone());
    let human = "human".to_owned();
    let docker_only = cli::EngineArgs {
        engine: cli::Engine::Docker,
        namespace: None,
        registry: None,
    };
    let ctx = run_context(config, dirs, human, run_id, out, args.runtime, &docker_only).await?;
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
    if let Some(docker) = ctx.runtime.docker() {
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

/// `aci inspect`: serve the pages of DIR until Ctrl-C, or write them as a static site.
async fn inspect(args: cli::InspectArgs) -> Result<ExitCode, Failure> {
    let site = aci::inspect::Site::open(&args.dir, args.eval.as_deref()).map_err(|e| {
        Failure::new(e.to_string()).hint(
            "DIR is the --output of aci batch, aci eval or aci ablate, SWE-agent trajectories, or a .traj file",
        )
    })?;
    match (site.eval_dir(), &args.eval) {
        (Some(eval), None) => eprintln!("evaluation: {}", eval.display()),
        (None, None) if !args.dir.join("ablation.json").is_file() => {
            eprintln!(
                "no evaluation found next to {}; pass --eval DIR to show one",
                args.dir.display()
            );
        }
        _ => {}
    }
    let site = Arc::new(site);
    if let Some(out) = args.static_out {
        let exporter = Arc::clone(&site);
        let target = out.clone();
        let pages = tokio::task::spawn_blocking(move || exporter.export(&target))
            .await
            .map_err(|e| Failure::new(format!("the export stopped: {e}")))??;
        println!("wrote {pages} pages to {}", out.display());
        eprintln!("open {} in a browser", out.join("index.html").display());
        return Ok(ExitCode::SUCCESS);
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .map_err(|e| {
            Failure::new(format!("cannot listen on {}:{}: {e}", args.host, args.port))
                .hint("choose another port with --port N (0 picks a free one)")
        })?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::new(format!("cannot read the listening address: {e}")))?;
    if !address.ip().is_loopback() {
        eprintln!(
            "warning: listening on {address}: whoever can reach it can read these trajectories"
        );
    }
    // Read the summaries now, so the first page of a big run comes from the cache.
    let warm = Arc::clone(&site);
    tokio::task::spawn_blocking(move || warm.warm());
    let url = format!("http://{address}/");
    println!("serving {} at {url}", site.root().display());
    eprintln!("press Ctrl-C to stop");
    if args.open {
        open_in_browser(&url);
    }
    tokio::select! {
        served = aci::inspect::server::serve(site, listener) => {
            served.map_err(|e| Failure::new(format!("the server stopped: {e}")))?;
        }
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with `$BROWSER`, else the desktop's opener; a failure is a warning only.
fn open_in_browser(url: &str) {
    let opener = std::env::var("BROWSER").unwrap_or_else(|_| {
        if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        }
        .to_owned()
    });
    let started = std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = started {
        eprintln!("warning: cannot start {opener} to open {url}: {error}");
    }
}
