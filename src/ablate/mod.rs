//! `aci ablate`: run several configurations on the same instances, evaluate each, and compare
//! them in one table, as the paper's Table 3 does.
//!
//! Every configuration (the base, and each variant layered over it) runs as an ordinary batch
//! into `OUT/<name>/r<k>/run` and is graded as `aci eval` grades into `OUT/<name>/r<k>/eval`,
//! by [`Steps`] (the binary's batch and evaluation, in the same process). So an ablation resumes
//! exactly as a batch does (finished instances are skipped, evaluations reused by key), and the
//! environment images are shared: they are keyed by content, not by configuration.

pub mod chart;
pub mod protocol;
pub mod records;
pub mod stats;
pub mod table;

use std::path::{Path, PathBuf};
use std::time::Instant;

use protocol::Protocol;
use table::{ConfigRuns, Table};

/// What to run.
#[derive(Debug, Clone)]
pub struct AblationPlan {
    /// The instance ids, in order (for the records).
    pub instance_ids: Vec<String>,
    /// The base configuration file.
    pub base: PathBuf,
    /// The variant files, each layered over the base.
    pub variants: Vec<PathBuf>,
    /// The output directory.
    pub output: PathBuf,
    /// How many times each configuration runs.
    pub repeats: usize,
    /// The `--replay-dir` for configurations that do not set `model.replay_dir` themselves.
    pub replay_dir: Option<PathBuf>,
    /// Each configuration's protocol ([`protocol::protocol`] of its resolved config): the
    /// base's first, then the variants' in order.
    pub protocols: Vec<Protocol>,
}

/// One step of an ablation: what runs a configuration's batch and grades its predictions.
pub trait Steps {
    /// Why a step failed (an interruption among them); it ends the ablation.
    type Error;

    /// Runs the batch of the configuration `layers` (config files, in order) into `run`,
    /// with `replay_dir` for a replay model when the layers set none.
    fn batch(
        &mut self,
        layers: &[PathBuf],
        replay_dir: Option<&Path>,
        run: &Path,
    ) -> impl Future<Output = Result<(), Self::Error>>;

    /// Grades the predictions `preds` (a batch's `preds.json`) into `eval`.
    fn eval(&mut self, preds: &Path, eval: &Path) -> impl Future<Output = Result<(), Self::Error>>;
}

/// Why an ablation's results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum AblateError {
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

/// Whether a config file sets its own `model.replay_dir`, or a file it extends does.
fn sets_replay_dir(path: &Path) -> bool {
    let files = crate::config::load::expand_extends(std::slice::from_ref(&path.to_owned()))
        .unwrap_or_else(|_| vec![path.to_owned()]);
    files.iter().any(|file| {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|text| serde_yaml::from_str::<serde_yaml::Value>(&text).ok())
            .and_then(|value| value.get("model")?.get("replay_dir").cloned())
            .is_some_and(|value| !value.is_null())
    })
}

/// Runs one configuration (its layers in order) once: batch, then eval.
async fn run_config<S: Steps>(
    plan: &AblationPlan,
    steps: &mut S,
    layers: &[PathBuf],
    dir: &Path,
) -> Result<f64, S::Error> {
    let started = Instant::now();
    let replay_dir = plan
        .replay_dir
        .as_deref()
        .filter(|_| !layers.iter().any(|layer| sets_replay_dir(layer)));
    let run = dir.join("run");
    steps.batch(layers, replay_dir, &run).await?;
    steps
        .eval(&run.join("preds.json"), &dir.join("eval"))
        .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// Runs one configuration `repeats` times and reads its records.
async fn run_repeats<S: Steps>(
    plan: &AblationPlan,
    steps: &mut S,
    name: &str,
    path: &Path,
    index: usize,
    layers: &[PathBuf],
) -> Result<ConfigRuns, S::Error> {
    let mut runs = ConfigRuns {
        name: name.to_owned(),
        path: path.display().to_string(),
        protocol: plan.protocols.get(index).cloned().unwrap_or_default(),
        repeats: Vec::new(),
        wall_seconds: Vec::new(),
    };
    for repeat in 1..=plan.repeats.max(1) {
        let dir = plan.output.join(name).join(format!("r{repeat}"));
        let seconds = run_config(plan, steps, layers, &dir).await?;
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

/// Runs every configuration `repeats` times through `steps`, and builds the comparison. The
/// first step that fails ends it: what finished stays on disk, and a rerun resumes from it.
pub async fn run<S: Steps>(plan: &AblationPlan, steps: &mut S) -> Result<Table, S::Error> {
    let base = run_repeats(
        plan,
        steps,
        &config_name(&plan.base),
        &plan.base,
        0,
        std::slice::from_ref(&plan.base),
    )
    .await?;
    let mut variants = Vec::new();
    for (index, variant) in plan.variants.iter().enumerate() {
        let layers = [plan.base.clone(), variant.clone()];
        let name = config_name(variant);
        variants.push(run_repeats(plan, steps, &name, variant, index + 1, &layers).await?);
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
