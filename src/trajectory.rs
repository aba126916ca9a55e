//! `.traj` files, compatible with SWE-agent v0.7: the types, an atomic writer, a reader, and the
//! resume rule.
//!
//! Keys are written in SWE-agent's order with an indent of 2, as `json.dumps(indent=2)` does.
//! Keys this module does not know are kept in `extra` maps, so reading and rewriting a trajectory
//! from another SWE-agent version loses nothing.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::files;
use crate::protocol::RecordedStatus;

pub mod edited_files;
mod history;
pub mod mini;

pub use history::{HistoryItem, MessageType};

/// A whole `.traj` file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trajectory {
    /// The environment's name (v0: `swe_main`; v1: `main` or the instance id).
    pub environment: String,
    /// One entry per turn.
    pub trajectory: Vec<TrajectoryStep>,
    /// The stored conversation, before any history processor ran.
    pub history: Vec<HistoryItem>,
    /// How the run ended, and what it cost.
    pub info: Info,
    /// The configuration to replay the run with (v1 writes a JSON string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_config: Option<Value>,
    /// Keys this type does not know, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One turn: `action, observation, response, thought, state, execution_time`, plus our optional
/// keys, which SWE-agent's readers ignore.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TrajectoryStep {
    /// The command that ran, as a string.
    pub action: String,
    /// What the command printed, as the model saw it.
    pub observation: String,
    /// The model's whole response.
    pub response: String,
    /// The response without the command.
    pub thought: String,
    /// `{"open_file": ..., "working_dir": ...}` after the step: aci writes it as v0.7 does, a
    /// JSON text in a string ([`v0_state`]); v1 writes an object. Both are read.
    #[serde(default)]
    pub state: Value,
    /// Seconds the command took (absent before v0.7).
    #[serde(default)]
    pub execution_time: f64,
    /// Ours: the nudge sent with the request that produced this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudge: Option<String>,
    /// Ours: the format error this response caused, when the parser rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_error: Option<String>,
    /// Keys this type does not know (e.g. v1's `query`, `extra_info`), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `info`: the outcome.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Info {
    /// `submitted`, `exit_cost`, `submitted (exit_cost)`, …; null while the run is going.
    #[serde(default)]
    pub exit_status: Option<RecordedStatus>,
    /// The patch, or null when there is none.
    #[serde(default)]
    pub submission: Option<String>,
    /// Tokens, calls and cost.
    #[serde(default)]
    pub model_stats: ModelStats,
    /// Ours: seconds from the start of the episode to this save; in a finished trajectory, the
    /// episode time (the agent's loop: the model's calls, the commands and the harness), without
    /// the set-up before it (image, clone, container start), which the batch line's
    /// `wall with set-up` includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time: Option<f64>,
    /// The edited files with 30 lines of context, SWE-agent style ([`edited_files`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_files30: Option<String>,
    /// The same with 50 lines of context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_files50: Option<String>,
    /// The same with 70 lines of context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_files70: Option<String>,
    /// Ours: the version of aci that wrote the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aci_version: Option<String>,
    /// Keys this type does not know (e.g. `swe_agent_hash`), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `info.model_stats`, in v0's key order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelStats {
    /// v0: the cost of the whole run so far. aci writes this instance's cost: instances run
    /// in parallel, so a running total would depend on the order they finish (the batch's
    /// total is `total_cost` in `run_batch_exit_statuses.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost: Option<f64>,
    /// This instance's cost in dollars.
    #[serde(default)]
    pub instance_cost: f64,
    /// Prompt tokens sent, cached ones included.
    #[serde(default)]
    pub tokens_sent: u64,
    /// Completion tokens received.
    #[serde(default)]
    pub tokens_received: u64,
    /// Model calls made.
    #[serde(default)]
    pub api_calls: u64,
    /// Ours: prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Ours: prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

/// A step's `state` as SWE-agent v0.7 writes it: its state command's output, the JSON text
/// `{"open_file": "<path or n/a>", "working_dir": "<cwd>"}`, held in a string.
pub fn v0_state(open_file: &str, working_dir: &str) -> Value {
    let quote = |text: &str| Value::String(text.to_owned()).to_string();
    Value::String(format!(
        "{{\"open_file\": {}, \"working_dir\": {}}}",
        quote(open_file),
        quote(working_dir)
    ))
}

/// Why a trajectory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    /// The file could not be read.
    #[error("failed to read trajectory {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is not a trajectory.
    #[error("failed to parse trajectory {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

/// Writes `trajectory` to `path` atomically and synced ([`files::write_atomic`]).
///
/// # Errors
///
/// Any I/O error from writing, syncing or renaming; the temporary file is removed first.
pub fn write_atomic(path: &Path, trajectory: &Trajectory) -> io::Result<()> {
    files::write_atomic(path, &to_json(trajectory)?)
}

/// [`write_atomic`] without the syncs ([`files::write_atomic_unsynced`]): the per-turn save.
///
/// # Errors
///
/// Any I/O error from writing or renaming; the temporary file is removed first.
pub fn write_atomic_unsynced(path: &Path, trajectory: &Trajectory) -> io::Result<()> {
    files::write_atomic_unsynced(path, &to_json(trajectory)?)
}

/// The file's bytes: pretty JSON with an indent of 2.
///
/// # Errors
///
/// Serialisation fails only for a non-string map key, which these types do not have.
pub fn to_json(trajectory: &Trajectory) -> io::Result<Vec<u8>> {
    serde_json::to_vec_pretty(trajectory).map_err(io::Error::other)
}

/// Reads a trajectory written by aci or by SWE-agent v0.7.
///
/// # Errors
///
/// [`TrajectoryError::Read`] when the file cannot be read, [`TrajectoryError::Parse`] when it is
/// not a trajectory.
pub fn read(path: &Path) -> Result<Trajectory, TrajectoryError> {
    let bytes = fs::read(path).map_err(|source| TrajectoryError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| TrajectoryError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// The resume rule: the instance is finished when `path` exists, is JSON, and its
/// `info.exit_status` is a string other than `early_exit` (or `submitted (early_exit)`). Only
/// that key is looked at, as SWE-agent does, so a foreign trajectory is never rerun because our
/// types would not parse it.
pub fn is_finished(path: &Path) -> bool {
    let Ok(bytes) = fs::read(path) else {
        return false;
    };
    serde_json::from_slice::<Value>(&bytes).is_ok_and(|value| is_finished_value(&value))
}

/// [`is_finished`] of a trajectory already read as JSON.
pub fn is_finished_value(value: &Value) -> bool {
    value
        .pointer("/info/exit_status")
        .and_then(Value::as_str)
        .is_some_and(|status| !RecordedStatus::from(status).reruns())
}

#[cfg(test)]
mod tests;
