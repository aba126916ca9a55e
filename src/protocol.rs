//! The plain data the layers hand each other: who wrote a message ([`Role`]), how an instance
//! ended ([`ExitStatus`], [`RecordedStatus`]), and one instance's patch ([`Prediction`]).
//!
//! Nothing here imports another aci module; the model layer, the trajectory, the batch runner
//! and the grader all speak these types.

use serde::{Deserialize, Serialize};

/// Who wrote a message: of the conversation sent to the model and of a trajectory's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The harness speaking for the user: the task, observations, demonstrations, format errors.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call (function calling).
    Tool,
}

/// One instance's patch, as the SWE-bench harness reads it (a line of `preds.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prediction {
    /// The instance this patch is for.
    pub instance_id: String,
    /// The model (or run, or `gold`) that made it; SWE-bench puts it in log paths with `/` →
    /// `__`.
    pub model_name_or_path: String,
    /// The patch; empty when nothing was submitted.
    pub model_patch: String,
}
