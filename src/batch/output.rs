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
    /// Environment image tag → its lock, for every environment resolved as of a date that an
    /// instance of this output directory ran in (its spec layer too): added as the images
    /// are known, after the instances ran, and kept by later runs into the directory.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub locks: BTreeMap<String, LockRecord>,
}

/// The lock of an environment image: what its venv holds, and as of when it was resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRecord {
    /// The image id.
    pub id: String,
    /// Its `aci.resolved_as_of` label: the cutoff, why, and the pins past it.
    pub resolved_as_of: String,
    /// Its `aci.lock` label, one distribution each (`pip freeze --all`).
    pub lock: Vec<String>,
}

impl LockRecord {
    /// The lock of the image `id` from its labels; `None` for an image built without one
    /// (not resolved as of a date, or not by aci).
    pub fn from_labels(
        id: &str,
        labels: &std::collections::HashMap<String, String>,
    ) -> Option<Self> {
        let lock = labels.get(crate::image::as_of::LABEL_LOCK)?;
        Some(Self {
            id: id.to_owned(),
            resolved_as_of: labels
                .get(crate::image::as_of::LABEL_RESOLVED_AS_OF)
                .cloned()
                .unwrap_or_default(),
            lock: lock
                .split(", ")
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// The locks of `DIR/manifest.json`, when there is one that can be read.
pub fn read_manifest_locks(output: &Path) -> BTreeMap<String, LockRecord> {
    std::fs::read(output.join("manifest.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Manifest>(&bytes).ok())
        .map(|manifest| manifest.locks)
        .unwrap_or_default()
}

/// Adds `locks` to `DIR/manifest.json` (a lock of the same tag replaced). Nothing happens
/// without a manifest that can be read.
pub fn add_manifest_locks(
    output: &Path,
    locks: BTreeMap<String, LockRecord>,
) -> std::io::Result<()> {
    let path = output.join("manifest.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(());
    };
    let mut manifest: Manifest = serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
    if locks.is_empty() {
        return Ok(());
    }
    manifest.locks.extend(locks);
    write_manifest(output, &manifest)
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
    fn a_lock_is_read_from_an_image_s_labels_and_added_to_the_manifest() {
        let labels = std::collections::HashMap::from([
            (
                "aci.lock".to_owned(),
                "atomicwrites==1.4.1, pip==20.3.4, six==1.15.0".to_owned(),
            ),
            (
                "aci.resolved_as_of".to_owned(),
                "2020-10-05T00:00:00Z (env.resolve_as_of)".to_owned(),
            ),
            ("aci.image".to_owned(), "env".to_owned()),
        ]);
        let lock = LockRecord::from_labels("sha256:1", &labels).unwrap();
        assert_eq!(
            lock,
            LockRecord {
                id: "sha256:1".to_owned(),
                resolved_as_of: "2020-10-05T00:00:00Z (env.resolve_as_of)".to_owned(),
                lock: ["atomicwrites==1.4.1", "pip==20.3.4", "six==1.15.0"]
                    .map(str::to_owned)
                    .to_vec(),
            }
        );
        assert_eq!(
            LockRecord::from_labels("sha256:2", &std::collections::HashMap::new()),
            None
        );

        let dir = tempfile::tempdir().unwrap();
        // No manifest: nothing to add to.
        add_manifest_locks(
            dir.path(),
            BTreeMap::from([("t:1".to_owned(), lock.clone())]),
        )
        .unwrap();
        assert!(!dir.path().join("manifest.json").exists());
        let manifest = Manifest {
            aci_version: "0".to_owned(),
            run_id: "r".to_owned(),
            model: "replay".to_owned(),
            runtime: "docker".to_owned(),
            instances: "i.jsonl".to_owned(),
            config_files: Vec::new(),
            config_sets: Vec::new(),
            config_hash: "h".to_owned(),
            config: serde_json::json!({}),
            images: BTreeMap::new(),
            seed: None,
            locks: BTreeMap::new(),
        };
        write_manifest(dir.path(), &manifest).unwrap();
        let text = std::fs::read_to_string(dir.path().join("manifest.json")).unwrap();
        assert!(!text.contains("\"locks\""), "{text}");
        add_manifest_locks(
            dir.path(),
            BTreeMap::from([("t:1".to_owned(), lock.clone())]),
        )
        .unwrap();
        let read: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(
            read["locks"],
            serde_json::json!({"t:1": {
                "id": "sha256:1",
                "resolved_as_of": "2020-10-05T00:00:00Z (env.resolve_as_of)",
                "lock": ["atomicwrites==1.4.1", "pip==20.3.4", "six==1.15.0"],
            }})
        );
        assert_eq!(read_manifest_locks(dir.path())["t:1"], lock);
    }

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
