//! `aci ablate`: run several configurations on the same instances, evaluate each, and compare
//! them in one table, as the paper's Table 3 does.
//!
//! Every configuration (the base, and each variant layered over the base) runs as an ordinary
//! `aci batch` into `OUT/<name>/r<k>/run` and is graded by `aci eval` into `OUT/<name>/r<k>/eval`,
//! through this same binary. So an ablation resumes exactly as a batch does (finished
//! instances are skipped, evaluations reused by key), and the environment images are shared:
//! they are keyed by content, not by configuration.

pub mod chart;
pub mod records;
pub mod stats;
pub mod table;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use table::{ConfigRuns, Table};

/// What to run.
#[derive(Debug, Clone)]
pub struct AblationPlan {
    /// The `aci` executable (the running one).
    pub exe: PathBuf,
    /// The instances file.
    pub instances: PathBuf,
    /// The instance ids, in order (for the records).
    pub instance_ids: Vec<String>,
    /// The base configuration file.
    pub base: PathBuf,
    /// The variant files, each layered over the base.
    pub variants: Vec<PathBuf>,
    /// The output directory.
    pub output: PathBuf,
    /// Batch and eval workers.
    pub workers: usize,
    /// How many times each configuration runs.
    pub repeats: usize,
    /// Arguments passed through to every `aci batch` (model, api base, runtime, `--set`).
    pub batch_args: Vec<String>,
    /// Arguments passed through to every `aci eval` (`--images`, the engine).
    pub eval_args: Vec<String>,
    /// The `--replay-dir` for configurations that do not set `model.replay_dir` themselves.
    pub replay_dir: Option<PathBuf>,
}

/// Why an ablation failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum AblateError {
    /// A step could not be started.
    #[error("cannot run {what}: {source}")]
    Spawn {
        /// The step.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A batch or an evaluation exited with a failure (not merely unresolved instances).
    #[error("{what} failed with {status}")]
    Step {
        /// The step.
        what: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// The results could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The name of a configuration in the table: its file's stem.
pub fn config_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".to_owned())
}

fn run_step(mut command: Command, what: &str) -> Result<(), AblateError> {
    eprintln!("ablate: {what}");
    // The steps' own summaries go to stderr: stdout carries only the comparison table.
    command.stdout(std::process::Stdio::from(std::io::stderr()));
    let status = command.status().map_err(|source| AblateError::Spawn {
        what: what.to_owned(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(AblateError::Step {
            what: what.to_owned(),
            status,
        })
    }
}

/// Whether a config file sets its own `model.replay_dir`.
fn sets_replay_dir(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_yaml::from_str::<serde_yaml::Value>(&text).ok())
        .and_then(|value| value.get("model")?.get("replay_dir").cloned())
        .is_some_and(|value| !value.is_null())
}

/// Runs one configuration (its layers in order) once: batch, then eval.
fn run_config(plan: &AblationPlan, layers: &[PathBuf], dir: &Path) -> Result<f64, AblateError> {
    let started = Instant::now();
    let name = dir.display().to_string();
    let mut batch = Command::new(&plan.exe);
    batch.arg("batch").arg("--instances").arg(&plan.instances);
    for layer in layers {
        batch.arg("--config").arg(layer);
    }
    batch
        .arg("--workers")
        .arg(plan.workers.to_string())
        .arg("--output")
        .arg(dir.join("run"));
    if let Some(replay_dir) = &plan.replay_dir
        && !layers.iter().any(|layer| sets_replay_dir(layer))
    {
        batch.arg("--replay-dir").arg(replay_dir);
    }
    batch.args(&plan.batch_args);
    run_step(batch, &format!("batch {name}"))?;
    let mut eval = Command::new(&plan.exe);
    eval.arg("eval")
        .arg("--instances")
        .arg(&plan.instances)
        .arg("--predictions")
        .arg(dir.join("run").join("preds.json"))
        .arg("--workers")
        .arg(plan.workers.to_string())
        .arg("--output")
        .arg(dir.join("eval"))
        .args(&plan.eval_args);
    run_step(eval, &format!("eval {name}"))?;
    Ok(started.elapsed().as_secs_f64())
}

/// Runs one configuration `repeats` times and reads its records.
fn run_repeats(
    plan: &AblationPlan,
    name: &str,
    path: &Path,
    layers: &[PathBuf],
) -> Result<ConfigRuns, AblateError> {
    let mut runs = ConfigRuns {
        name: name.to_owned(),
        path: path.display().to_string(),
        repeats: Vec::new(),
        wall_seconds: Vec::new(),
    };
    for repeat in 1..=plan.repeats.max(1) {
        let dir = plan.output.join(name).join(format!("r{repeat}"));
        let seconds = run_config(plan, layers, &dir)?;
        let records = plan
            .instance_ids
            .iter()
            .map(|id| records::record(&dir.join("run"), &dir.join("eval"), id))
            .collect();
        runs.repeats.push(records);
        runs.wall_seconds.push(seconds);
    }
    Ok(runs)
}

/// Runs every configuration `repeats` times, evaluates, and builds the comparison.
pub fn run(plan: &AblationPlan) -> Result<Table, AblateError> {
    let base = run_repeats(
        plan,
        &config_name(&plan.base),
        &plan.base,
        std::slice::from_ref(&plan.base),
    )?;
    let mut variants = Vec::new();
    for variant in &plan.variants {
        let layers = [plan.base.clone(), variant.clone()];
        variants.push(run_repeats(plan, &config_name(variant), variant, &layers)?);
    }
    Ok(table::compare(&base, &variants))
}

/// Writes `ablation.md`, `ablation.csv`, `ablation.json` and the chart `ablation.svg` into the
/// output directory.
pub fn write(table: &Table, output: &Path) -> Result<(), AblateError> {
    let write = |name: &str, bytes: Vec<u8>| {
        let path = output.join(name);
        crate::files::write_atomic(&path, &bytes)
            .map_err(|source| AblateError::Write { path, source })
    };
    write("ablation.md", table.to_markdown().into_bytes())?;
    write("ablation.csv", table.to_csv().into_bytes())?;
    write("ablation.svg", chart::svg(table).into_bytes())?;
    let json = serde_json::to_vec_pretty(table).map_err(|e| AblateError::Write {
        path: output.join("ablation.json"),
        source: std::io::Error::other(e),
    })?;
    write("ablation.json", json)
}
