//! The command line (clap derive only: the doc comments are the `--help` text).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
}

/// `aci images …`
#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Build the base image (debootstrap + docker import) and the language images on top of it.
    /// Does nothing for images that are present and up to date.
    Build {
        /// Which language images to build.
        #[arg(long, default_value = "all", value_parser = ["python", "rust", "all"])]
        lang: String,
        /// Rebuild even when the images are present and up to date.
        #[arg(long)]
        force: bool,
    },
}

/// Where the agent's commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Runtime {
    /// One hardened container per task (the default).
    Docker,
    /// A temporary copy of the repository on the host. NOT a sandbox: commands run with your
    /// user's full access. For tests and machines without Docker.
    Local,
}

/// Options shared by `run`, `batch` and `ablate`.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// A config file; repeat it to layer files (later files override earlier ones). The
    /// built-in configs/default.yaml is always the first layer.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// Override one config value, type-checked: `--set env.command_timeout=60`. Repeatable;
    /// applied after the config files.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The model: `replay`, `human`, `openai/<name>` or `anthropic/<name>`. API keys come from
    /// OPENAI_API_KEY and ANTHROPIC_API_KEY only.
    #[arg(long, default_value = "replay")]
    pub model: String,
    /// The API's base URL, for OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LiteLLM).
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,
    /// Where commands run.
    #[arg(long, value_enum, default_value_t = Runtime::Docker)]
    pub runtime: Runtime,
    /// The output directory (default: aci-runs/<run id>).
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The run id labelled on containers and recorded in the manifest (default: a timestamp).
    #[arg(long)]
    pub run_id: Option<String>,
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
