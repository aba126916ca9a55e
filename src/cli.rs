//! The command line (clap derive only: the doc comments are the `--help` text).

use std::path::PathBuf;

use aci::engine::Kind;
use aci::instance::{ShardSpec, SliceSpec, parse_filter, parse_shard_arg, parse_slice_arg};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use regex::Regex;

/// Run LLM coding agents on SWE-bench-style tasks through the SWE-agent Agent-Computer
/// Interface, one Docker container per task.
#[derive(Debug, Parser)]
#[command(name = "aci", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build or remove the images aci runs tasks in (no registry needed).
    #[command(subcommand)]
    Images(ImagesCommand),
    /// Run one instance: writes DIR/<id>/<id>.traj, DIR/<id>/<id>.patch, DIR/preds.json and
    /// DIR/manifest.json.
    Run(RunArgs),
    /// Grade predictions the way the SWE-bench harness does: per instance a fresh container with
    /// no network, the patch applied, the tests run and parsed. Writes DIR/<id>/{patch.diff,
    /// eval.sh, test_output.txt, report.json} and the summary DIR/report.json.
    Eval(EvalArgs),
    /// Check a dataset as the SWE-bench harness does: each instance's gold patch must resolve
    /// it, and with no patch every FAIL_TO_PASS test must fail. Writes DIR/validation.json
    /// ({id: {gold_resolved, empty_fails, seconds}}), DIR/validation.md (the table, also
    /// printed) and both evaluations in `aci eval`'s layout under DIR/gold and DIR/empty.
    Validate(ValidateArgs),
    /// Run many instances in parallel, resuming by default: writes DIR/<id>/ per instance,
    /// DIR/preds.json, DIR/run_batch_exit_statuses.yaml and DIR/manifest.json, and prints a
    /// summary table. Ctrl-C stops starting instances, autosubmits the running ones and exits
    /// 130; rerunning the same command resumes.
    Batch(BatchArgs),
    /// Run each configuration (the base, and every variant layered over it) on the same
    /// instances, evaluate them, and print and write a comparison table: DIR/ablation.{md,csv,json}
    /// and a chart of the resolve rates, DIR/ablation.svg, with each configuration's batch and
    /// evaluation under DIR/<config>/r<k>/{run,eval}.
    /// Resumes like `aci batch`.
    Ablate(AblateArgs),
    /// Browse a batch, an evaluation or an ablation in the browser: the run (one row per
    /// instance, sortable and filterable), each instance turn by turn (windows, edits as diffs
    /// with the lint verdict, the final patch, the tests), and an ablation's chart with its
    /// gained and lost instances side by side. Pages update while a batch runs. Also opens
    /// SWE-agent v0.7 and 1.x trajectories. `--static OUT` writes the same pages as a
    /// self-contained site (for CI artifacts) instead of serving them.
    Inspect(InspectArgs),
    /// Drive one instance's ACI by hand, through the same agent loop a model uses: type ACI
    /// commands (`edit` reads on until `end_of_edit`) or shell commands at the
    /// `(Open file: …) (Current directory: …) bash-$` prompt. Ctrl-D ends the session and
    /// removes the container; the trajectory and patch are written as `run` writes them.
    Shell(ShellArgs),
}

/// `aci images …`
#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Build the base image (debootstrap + docker import) and the language images on top of it.
    /// Does nothing for images that are present and up to date.
    Build {
        /// Which language images to build: one language, `default` (python and rust) or `all`
        /// (also go, java, node, php, ruby and c, the toolchains of SWE-bench Multilingual).
        #[arg(long, default_value = "default", value_parser = aci::image::LANG_CHOICES)]
        lang: String,
        /// Rebuild even when the images are present and up to date.
        #[arg(long)]
        force: bool,
        /// The Debian release the images come from, with its Python: bullseye (3.9), bookworm
        /// (3.11) or trixie (3.13). Tags: aci-base:<release>, aci-python:<release>,
        /// aci-rust:<release> (not on bullseye, whose rustc predates the 2021 edition).
        #[arg(long, value_name = "RELEASE", default_value = "bookworm")]
        debian: aci::image::release::DebianRelease,
    },
    /// Build when missing, then push to a registry, the images the instances need: the Debian
    /// base, the language images and each instance's environment image, as
    /// R/aci-env-<lang>:<hash> and so on, skipping what the registry already has. For
    /// `--engine k8s`, whose nodes pull from R. Registry credentials come from `docker login`.
    Push(PushArgs),
    /// Remove images aci built, and nothing else: by default every environment image
    /// (`aci-env-*`, rebuilt on demand). Prints each image removed.
    Prune {
        /// Only the environment images built by this run.
        #[arg(long, value_name = "ID", conflicts_with = "all")]
        run_id: Option<String>,
        /// Everything aci built: environment, language and base images.
        #[arg(long)]
        all: bool,
        /// Also the images aci pulled from a registry (SWE-bench's, `env.image_template`'s),
        /// which are otherwise never removed.
        #[arg(long)]
        pulled: bool,
    },
}

/// `aci images push`
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The registry to push to: `host[:port][/path]`, e.g. `localhost:5000` or `ghcr.io/me`.
    #[arg(long, value_name = "R")]
    pub registry: String,
    /// The instances whose images to push (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// The configuration (its `env` section says which images).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// `--config`, `--set` and `--images`: the layers of the configuration, the same for every
/// command.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// A config file; repeat it to layer files (later files override earlier ones). The
    /// built-in configs/default.yaml is always the first layer.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// Override one config value, type-checked: `--set env.command_timeout=60`. Repeatable;
    /// applied after the config files.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Which images instances run in.
    #[arg(long, value_enum, default_value_t = Images::Local)]
    pub images: Images,
    /// Read no project config: neither aci.yaml in the working directory nor the file
    /// ACI_PROJECT_CONFIG names.
    #[arg(long)]
    pub no_project_config: bool,
}

/// `--filter` and `--slice`: which of the instances, parsed the same way for every command.
#[derive(Debug, Clone, Args)]
pub struct SelectionArgs {
    /// Only the instances whose id matches this regular expression at its start, as Python's
    /// `re.match` in SWE-agent and mini-swe-agent (`.*X` matches anywhere; end with `$` for
    /// whole ids). Applied after --shuffle.
    #[arg(long, value_name = "RE", value_parser = parse_filter)]
    pub filter: Option<Regex>,
    /// A Python slice of the instances, taken after --shuffle and --filter: 0:10, -5:, ::2.
    #[arg(long, value_name = "A:B", value_parser = parse_slice_arg)]
    pub slice: Option<SliceSpec>,
}

/// `--engine` and the cluster's options.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Where tasks run: this machine's Docker daemon, a Podman service, or pods of a Kubernetes
    /// cluster.
    #[arg(long, value_parser = engine_values(), default_value = "docker")]
    pub engine: Kind,
    /// With --engine k8s: the namespace of the pods (default: env.k8s.namespace, else the
    /// kubeconfig context's, else `default`).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// With --engine k8s: the registry the nodes pull from; images it lacks are pushed there
    /// (default: env.k8s.registry; none: the nodes have the images under their local tags).
    #[arg(long, value_name = "R")]
    pub registry: Option<String>,
}

/// `--runtime docker|local`: where the agent's commands run.
fn runtime_values() -> impl TypedValueParser<Value = Kind> {
    PossibleValuesParser::new([
        PossibleValue::new("docker").help("One hardened container per task (the default)"),
        PossibleValue::new("local").help(
            "A temporary copy of the repository on the host. NOT a sandbox: commands run with \
             your user's full access. For tests and machines without Docker",
        ),
    ])
    .map(|name| Kind::from_name(&name).unwrap_or(Kind::Docker))
}

/// `--engine docker|podman|k8s`: where tasks run.
fn engine_values() -> impl TypedValueParser<Value = Kind> {
    PossibleValuesParser::new([
        PossibleValue::new("docker")
            .help("Containers of this machine's Docker daemon (the default)"),
        PossibleValue::new("podman").help(
            "Containers of a Podman service, through its Docker-compatible API: CONTAINER_HOST, \
             else /run/podman/podman.sock as root, $XDG_RUNTIME_DIR/podman/podman.sock rootless",
        ),
        PossibleValue::new("k8s").help(
            "One pod per task in a Kubernetes cluster: KUBECONFIG (or ~/.kube/config, or the \
             in-cluster service account) says which; images are built here and pushed to \
             --registry",
        ),
    ])
    .map(|name| Kind::from_name(&name).unwrap_or(Kind::Docker))
}

/// Options shared by `run` and `batch`.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The configuration.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The model: `replay`, `human`, `openai/<name>` or `anthropic/<name>`. API keys come from
    /// OPENAI_API_KEY and ANTHROPIC_API_KEY only.
    #[arg(long, default_value = "replay")]
    pub model: String,
    /// The API's base URL, for OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LiteLLM).
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,
    /// Where commands run.
    #[arg(long, value_parser = runtime_values(), default_value = "docker")]
    pub runtime: Kind,
    /// The output directory (default: aci-runs/<run id>).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The run id labelled on containers and recorded in the manifest (default: a timestamp).
    #[arg(long)]
    pub run_id: Option<String>,
    /// The engine.
    #[command(flatten)]
    pub cluster: EngineArgs,
}

/// `--spec`: which spec grades a record that carries its own and that the spec table has too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpecArg {
    /// The record's own `eval_script` (its test command), `log_parser` and `eval_type`.
    Record,
    /// The built-in table (`specs/swebench.yaml`, with `env.specs`).
    Builtin,
}

impl SpecArg {
    /// The `env.spec_source` it sets.
    pub fn source(self) -> aci::spec::SpecSource {
        match self {
            Self::Record => aci::spec::SpecSource::Record,
            Self::Builtin => aci::spec::SpecSource::Builtin,
        }
    }
}

/// `--images`: which images instances run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Images {
    /// aci's own: the language image, with the repository (from repo_path or a mirror clone)
    /// built into an environment image. The record's own `image` still wins.
    Local,
    /// SWE-bench's prebuilt instance images (swebench/sweb.eval.x86_64.<id>:latest, pulled
    /// when missing, the repository at /testbed) with their conda env `testbed` activated:
    /// shorthand for env.image_template and env.activate, which config files and --set
    /// override.
    Swebench,
}

/// `aci run`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The instances file (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// The instance to run; may be left out when the file holds exactly one.
    #[arg(long)]
    pub id: Option<String>,
    /// With `--model replay`: a YAML or JSON list of actions, or a SWE-agent .traj file.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Shared options.
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// `aci eval`
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The instances file (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// The predictions: a JSON list, a JSON dict keyed by instance_id (the preds.json of
    /// `aci batch`), or JSONL; `gold` grades the instances' own patches. An instance named twice
    /// keeps its last prediction, with a warning. Optional with --from-logs.
    #[arg(
        long,
        value_name = "FILE|gold",
        required_unless_present_any = ["from_logs", "plan"]
    )]
    pub predictions: Option<String>,
    /// Grade test logs that already exist, with no container: aci's layout
    /// (DIR/<id>/test_output.txt), the SWE-bench harness's 2.x and later
    /// (logs/run_evaluation/<run_id>/<model>/<id>/test_output.txt) or its 1.x
    /// (<id>.<model>.eval.log). Without --predictions, each instance with a log counts as
    /// submitted.
    #[arg(long, value_name = "DIR")]
    pub from_logs: Option<PathBuf>,
    /// How many instances are evaluated at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,
    /// The run id labelled on containers and on the environment images this run builds
    /// (default: a timestamp).
    #[arg(long)]
    pub run_id: Option<String>,
    /// The output directory (default: aci-eval/<run id>). Rerunning into the same directory
    /// keeps every report graded from the same patch, eval script and image.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Seconds the tests of one instance may run; past that the instance is an error.
    #[arg(long, value_name = "S", default_value_t = 1800.0)]
    pub timeout: f64,
    /// A JSON list of instance ids expected to be resolved (or an earlier summary report.json):
    /// exit with status 3, naming them, when any of them is not.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Give the grading sandboxes a network (Docker's bridge) for tests that need a host
    /// (off by default: only `lo`). The rest of the hardening stays; a report graded without
    /// it is graded again.
    #[arg(long)]
    pub network: bool,
    /// Evaluate only this instance; repeatable.
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Which of the instances (after --id).
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Which spec grades a SWE-bench record that carries its own (`eval_script`, `log_parser`,
    /// `eval_type`) and that the spec table has too: sets env.spec_source (default `record`).
    /// A record without its own spec always uses the table.
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub spec: Option<SpecArg>,
    /// The configuration (its `env` section: images, repo_dir, limits, min_free_disk_gb).
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The engine.
    #[command(flatten)]
    pub cluster: EngineArgs,
    /// Print each selected instance's environment plan as one JSON line (its image and how it
    /// is had, where its repository comes from, the layer on top, its test command and log
    /// parser) and start nothing; needs no Docker daemon.
    #[arg(long)]
    pub plan: bool,
}

/// `aci validate`
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The instances file (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// How many instances are evaluated at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,
    /// The output directory (not needed with --plan). Rerunning into the same directory keeps
    /// every evaluation graded from the same patch, eval script and image.
    #[arg(long, value_name = "DIR", required_unless_present = "plan")]
    pub output: Option<PathBuf>,
    /// The run id labelled on containers and on the environment images this run builds
    /// (default: a timestamp).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Seconds the tests of one evaluation may run; past that the instance is an error.
    #[arg(long, value_name = "S", default_value_t = 1800.0)]
    pub timeout: f64,
    /// Validate only this instance; repeatable.
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Which spec grades a SWE-bench record that carries its own (`eval_script`, `log_parser`,
    /// `eval_type`) and that the spec table has too: sets env.spec_source (default `record`).
    /// A record without its own spec always uses the table.
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub spec: Option<SpecArg>,
    /// Give the grading sandboxes a network (Docker's bridge), for instances whose tests need
    /// a host (off by default: only `lo`).
    #[arg(long)]
    pub network: bool,
    /// The configuration (its `env` section: images, specs, repo_dir, limits).
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Where the evaluations run.
    #[command(flatten)]
    pub cluster: EngineArgs,
    /// Print each selected instance's environment plan as one JSON line (its image and how it
    /// is had, where its repository comes from, the layer on top, its test command and log
    /// parser) and start nothing; needs no Docker daemon.
    #[arg(long)]
    pub plan: bool,
}

/// `aci batch`
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// The instances file (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// With `--model replay`: a directory with one replay per instance, `<id>.yaml`, `.yml`,
    /// `.json` or `.traj` (an earlier run's output directory, `<id>/<id>.traj`, works too).
    #[arg(long, value_name = "DIR")]
    pub replay_dir: Option<PathBuf>,
    /// How many instances run at the same time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: u32,
    /// Which of the instances.
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Sort the instances by id and shuffle them as Python's `random.seed(SEED);
    /// random.shuffle(...)` does, before the other selection flags: the same instances in the
    /// same order as SWE-agent's and mini-swe-agent's --shuffle.
    #[arg(long)]
    pub shuffle: bool,
    /// The seed of --shuffle (default 42, as SWE-agent and mini-swe-agent).
    #[arg(long, requires = "shuffle")]
    pub seed: Option<u64>,
    /// Run shard I of N (numbered from 1): N contiguous, near-equal parts of the selection.
    #[arg(long, value_name = "I/N", value_parser = parse_shard_arg)]
    pub shard: Option<ShardSpec>,
    /// Run every selected instance again, even those an earlier run into the same --output
    /// finished (by default they are skipped).
    #[arg(long)]
    pub redo: bool,
    /// Print each selected instance's environment plan as one JSON line (its image and how it
    /// is had, where its repository comes from, the layer on top, its test command and log
    /// parser) and start nothing; needs no Docker daemon.
    #[arg(long)]
    pub plan: bool,
    /// Shared options.
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// `aci ablate`
#[derive(Debug, Args)]
pub struct AblateArgs {
    /// The instances file (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// The base configuration (e.g. configs/default.yaml).
    #[arg(long, value_name = "CONFIG")]
    pub base: PathBuf,
    /// A variant, layered over the base (e.g. configs/ablations/no-lint.yaml); repeatable.
    #[arg(long = "variant", value_name = "CONFIG", required = true)]
    pub variants: Vec<PathBuf>,
    /// Instances run (and evaluated) at the same time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: u32,
    /// Run every configuration this many times and report the mean and spread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeats: u32,
    /// The output directory (default: aci-ablations/<timestamp>).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The model: `replay`, `openai/<name>` or `anthropic/<name>`.
    #[arg(long, default_value = "replay")]
    pub model: String,
    /// With `--model replay`: one replay per instance, for every configuration that does not
    /// set its own `model.replay_dir`.
    #[arg(long, value_name = "DIR")]
    pub replay_dir: Option<PathBuf>,
    /// The API's base URL, for OpenAI-compatible servers.
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,
    /// Where commands run.
    #[arg(long, value_parser = runtime_values(), default_value = "docker")]
    pub runtime: Kind,
    /// Override one config value in every configuration; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The engine of every batch and evaluation.
    #[command(flatten)]
    pub cluster: EngineArgs,
    /// Which images instances run and are graded in (as for `aci batch`).
    #[arg(long, value_enum, default_value_t = Images::Local)]
    pub images: Images,
}

/// `aci shell`
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// The instances file (JSON array or JSONL of SWE-bench records).
    #[arg(long, value_name = "FILE")]
    pub instances: PathBuf,
    /// The instance whose container to open.
    #[arg(long)]
    pub id: String,
    /// The configuration. Step, time, stall and timeout limits are off in a shell unless a
    /// config file or `--set` turns them on.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Where commands run.
    #[arg(long, value_parser = runtime_values(), default_value = "docker")]
    pub runtime: Kind,
    /// The output directory (default: aci-runs/<run id>).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The run id labelled on the container (default: a timestamp).
    #[arg(long)]
    pub run_id: Option<String>,
}

/// `aci inspect`
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// What to show: the output of `aci batch` or `aci run`, of `aci eval`, or of `aci ablate`;
    /// a directory of SWE-agent trajectories (v0.7 or 1.x) or of mini-swe-agent's (1.x or 2.x:
    /// `<id>/<id>.traj.json`); or one .traj or .traj.json file. Several runs (batches or
    /// evaluations) are shown side by side.
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The evaluation of the run (default: `eval` next to DIR, or a sibling directory that holds
    /// an evaluation's report.json).
    #[arg(long, value_name = "DIR")]
    pub eval: Option<PathBuf>,
    /// The port to listen on (0: any free port).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 8000,
        conflicts_with = "static_out"
    )]
    pub port: u16,
    /// The address to listen on. Anything but a loopback address lets whoever reaches it read
    /// the trajectories.
    #[arg(
        long,
        value_name = "H",
        default_value = "127.0.0.1",
        conflicts_with = "static_out"
    )]
    pub host: String,
    /// Open the page in the default browser.
    #[arg(long, conflicts_with = "static_out")]
    pub open: bool,
    /// Write the pages as a static site into OUT (no server, no network; open OUT/index.html)
    /// instead of serving them.
    #[arg(long = "static", value_name = "OUT")]
    pub static_out: Option<PathBuf>,
}
