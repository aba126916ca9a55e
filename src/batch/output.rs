//! Files a run writes, each atomically (a temporary file in the same directory, then a
//! rename), so a killed process never leaves half a file behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::write_atomic;
pub use crate::protocol::Prediction;

/// Where an instance's files go: `DIR/<id>/`.
pub fn instance_dir(output: &Path, instance_id: &str) -> PathBuf {
    output.join(instance_id)
}

/// `DIR/<id>/<id>.traj`
pub fn traj_path(output: &Path, instance_id: &str) -> PathBuf {
    instance_dir(output, instance_id).join(format!("{instance_id}.traj"))
}

/// `DIR/<id>/<id>.traj.json`: the run as a mini-swe-agent trajectory (`agent.mini_trajectory`),
/// where mini's own batch runs put theirs.
pub fn mini_traj_path(output: &Path, instance_id: &str) -> PathBuf {
    instance_dir(output, instance_id).join(format!("{instance_id}.traj.json"))
}

/// `DIR/<id>/<id>.patch`
pub fn patch_path(output: &Path, instance_id: &str) -> PathBuf {
    instance_dir(output, instance_id).join(format!("{instance_id}.patch"))
}

/// `DIR/<id>/<id>.pred`: the instance's prediction, merged into `preds.json` at the end.
pub fn pred_path(output: &Path, instance_id: &str) -> PathBuf {
    instance_dir(output, instance_id).join(format!("{instance_id}.pred"))
}

/// A file of the output directory that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Writing (or renaming into place) failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Writes the instance's patch and prediction files.
///
/// # Errors
/// [`OutputError::Write`] naming the first file that could not be written.
pub fn write_prediction(
    output: &Path,
    prediction: &Prediction,
    patch: &[u8],
) -> Result<(), OutputError> {
    let write = |path: PathBuf, bytes: &[u8]| {
        write_atomic(&path, bytes).map_err(|source| OutputError::Write { path, source })
    };
    write(patch_path(output, &prediction.instance_id), patch)?;
    let pred = pred_path(output, &prediction.instance_id);
    let json = serde_json::to_vec_pretty(prediction).map_err(|error| OutputError::Write {
        path: pred.clone(),
        source: std::io::Error::other(error),
    })?;
    write(pred, &json)
}

/// Rebuilds `DIR/preds.json` (a dict keyed by instance id, sorted) from every `<id>.pred` under
/// `DIR`, so the file always agrees with what is on disk, whatever ran before.
pub fn merge_predictions(output: &Path) -> std::io::Result<BTreeMap<String, Prediction>> {
    let mut predictions = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(output) {
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            let Ok(text) = std::fs::read(pred_path(output, &id)) else {
                continue;
            };
            if let Ok(prediction) = serde_json::from_slice::<Prediction>(&text) {
                predictions.insert(prediction.instance_id.clone(), prediction);
            }
        }
    }
    let json = serde_json::to_vec_pretty(&predictions).map_err(std::io::Error::other)?;
    write_atomic(&output.join("preds.json"), &json)?;
    Ok(predictions)
}

/// `DIR/run_batch_exit_statuses.yaml`, as SWE-agent writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExitStatuses {
    /// Instance ids per exit status, sorted.
    pub instances_by_exit_status: BTreeMap<String, Vec<String>>,
    /// The summed instance cost.
    pub total_cost: f64,
}

/// Rebuilds `run_batch_exit_statuses.yaml` from the trajectories under `DIR`.
pub fn write_exit_statuses(output: &Path) -> std::io::Result<ExitStatuses> {
    let mut statuses = ExitStatuses::default();
    if let Ok(entries) = std::fs::read_dir(output) {
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            let Ok(trajectory) = crate::trajectory::read(&traj_path(output, &id)) else {
                continue;
            };
            let status = trajectory
                .info
                .exit_status
                .map_or_else(|| "unfinished".to_owned(), String::from);
            statuses
                .instances_by_exit_status
                .entry(status)
                .or_default()
                .push(id);
            statuses.total_cost += trajectory.info.model_stats.instance_cost;
        }
    }
    for ids in statuses.instances_by_exit_status.values_mut() {
        ids.sort();
    }
    let yaml = serde_yaml::to_string(&statuses).map_err(std::io::Error::other)?;
    write_atomic(
        &output.join("run_batch_exit_statuses.yaml"),
        yaml.as_bytes(),
    )?;
    Ok(statuses)
}

/// `DIR/manifest.json`: what produced the outputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// aci's version.
    pub aci_version: String,
    /// The run id labelled on containers.
    pub run_id: String,
    /// The model spec.
    pub model: String,
    /// `docker` or `local`.
    pub runtime: String,
    /// The instances file.
    pub instances: String,
    /// The config files, in layering order (the built-in default first).
    pub config_files: Vec<String>,
    /// The `--set` overrides.
    pub config_sets: Vec<String>,
    /// SHA-256 of the resolved configuration.
    pub config_hash: String,
    /// The resolved configuration.
    pub config: serde_json::Value,
    /// Image tag → `{id, digests}` for every image used.
    pub images: BTreeMap<String, ImageRecord>,
    /// The shuffle seed, when one was used.
    pub seed: Option<u64>,
}

/// An image used by a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRecord {
    /// The image id.
    pub id: String,
    /// Registry digests (empty for images built here).
    pub digests: Vec<String>,
}

/// Writes `DIR/manifest.json`.
pub fn write_manifest(output: &Path, manifest: &Manifest) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(manifest).map_err(std::io::Error::other)?;
    write_atomic(&output.join("manifest.json"), &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predictions_merge_from_per_instance_files_sorted_by_id() {
        let dir = tempfile::tempdir().unwrap();
        for id in ["b", "a"] {
            let prediction = Prediction {
                instance_id: id.to_owned(),
                model_name_or_path: "m".to_owned(),
                model_patch: format!("patch {id}\n"),
            };
            write_prediction(dir.path(), &prediction, prediction.model_patch.as_bytes()).unwrap();
        }
        let merged = merge_predictions(dir.path()).unwrap();
        assert_eq!(merged.keys().collect::<Vec<_>>(), ["a", "b"]);
        let text = std::fs::read_to_string(dir.path().join("preds.json")).unwrap();
        let parsed: BTreeMap<String, Prediction> = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["b"].model_patch, "patch b\n");
        assert_eq!(
            std::fs::read(patch_path(dir.path(), "a")).unwrap(),
            b"patch a\n"
        );
    }
}
