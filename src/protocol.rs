//! The plain data the layers hand each other: who wrote a message ([`Role`]), how an instance
//! ended ([`ExitStatus`], [`RecordedStatus`]), and one instance's patch ([`Prediction`]).
//!
//! Nothing here imports another aci module; the model layer, the trajectory, the batch runner
//! and the grader all speak these types.

use std::fmt;

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

/// Why an instance ended: the statuses of SWE-agent (reference §8), plus `exit_step_limit`.
///
/// The loop attempts an **autosubmission after every stop except [`ExitStatus::Submitted`]**
/// (see [`ExitStatus::autosubmits`]): it takes the diff of the working tree, and when that diff
/// is non-empty the recorded status becomes [`RecordedStatus::Autosubmitted`], e.g.
/// `submitted (exit_cost)`. With an empty diff the plain status is recorded. Unlike SWE-agent v1
/// this includes `exit_command`, so no finished work is ever dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    /// The `submit` command ran (its patch may be empty).
    Submitted,
    /// The instance cost limit was reached (reported by the model layer, or seen here).
    ExitCost,
    /// The prompt no longer fits the model's context window (reported by the model layer).
    ExitContext,
    /// Too many malformed responses, or too many responses without a command.
    ExitFormat,
    /// The model API kept failing until its retries were spent.
    ExitApi,
    /// An unexpected harness error.
    ExitError,
    /// The sandbox failed (container died, exec API error).
    ExitEnvironmentError,
    /// Too many commands in a row ran past their timeout.
    ExitCommandTimeout,
    /// The instance's wall-clock budget ran out.
    ExitTotalExecutionTime,
    /// Ours, not SWE-agent's: the instance used its `max_steps` model responses. SWE-agent has no
    /// step limit (its workaround, `per_instance_call_limit`, reports `exit_cost`).
    ExitStepLimit,
    /// Ours: the sandbox's files took more than its disk quota (`env.disk_mb`), so its
    /// processes were stopped. The model's doing, not the environment's.
    ExitDiskQuota,
    /// The model gave up with the `exit_forfeit` command.
    ExitForfeit,
    /// The model's action was exactly `exit`.
    ExitCommand,
    /// Infrastructure failure (e.g. an interrupt that failed); resume reruns these instances.
    EarlyExit,
    /// The model's action was `skip`.
    Skipped,
}

impl ExitStatus {
    /// Every status, in the order of reference §8.
    pub const ALL: [ExitStatus; 15] = [
        ExitStatus::Submitted,
        ExitStatus::ExitCost,
        ExitStatus::ExitContext,
        ExitStatus::ExitFormat,
        ExitStatus::ExitApi,
        ExitStatus::ExitError,
        ExitStatus::ExitEnvironmentError,
        ExitStatus::ExitCommandTimeout,
        ExitStatus::ExitTotalExecutionTime,
        ExitStatus::ExitStepLimit,
        ExitStatus::ExitDiskQuota,
        ExitStatus::ExitForfeit,
        ExitStatus::ExitCommand,
        ExitStatus::EarlyExit,
        ExitStatus::Skipped,
    ];

    /// The status as written to `info.exit_status` and `run_batch_exit_statuses.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitStatus::Submitted => "submitted",
            ExitStatus::ExitCost => "exit_cost",
            ExitStatus::ExitContext => "exit_context",
            ExitStatus::ExitFormat => "exit_format",
            ExitStatus::ExitApi => "exit_api",
            ExitStatus::ExitError => "exit_error",
            ExitStatus::ExitEnvironmentError => "exit_environment_error",
            ExitStatus::ExitCommandTimeout => "exit_command_timeout",
            ExitStatus::ExitTotalExecutionTime => "exit_total_execution_time",
            ExitStatus::ExitStepLimit => "exit_step_limit",
            ExitStatus::ExitDiskQuota => "exit_disk_quota",
            ExitStatus::ExitForfeit => "exit_forfeit",
            ExitStatus::ExitCommand => "exit_command",
            ExitStatus::EarlyExit => "early_exit",
            ExitStatus::Skipped => "skipped",
        }
    }

    /// Whether the loop attempts an autosubmission after this stop: always, except after
    /// [`ExitStatus::Submitted`].
    pub fn autosubmits(self) -> bool {
        self != ExitStatus::Submitted
    }

    /// The status named `name` as written by [`ExitStatus::as_str`], if any.
    pub fn from_name(name: &str) -> Option<ExitStatus> {
        ExitStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// The status recorded for a finished instance: `info.exit_status` in its trajectory, its line
/// in the batch's progress and `run_batch_exit_statuses.yaml`. It becomes text only where it is
/// written or shown ([`fmt::Display`], serde).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RecordedStatus {
    /// The stop's own status, e.g. `exit_cost`: after `submit`, or when the autosubmission
    /// found nothing to submit.
    Exit(ExitStatus),
    /// The autosubmission after this stop found a non-empty diff: `submitted (exit_cost)`.
    Autosubmitted(ExitStatus),
    /// A status aci never writes, read from another tool's trajectory (e.g. SWE-agent's
    /// `exit_format_error`), kept as written.
    Other(String),
}

impl RecordedStatus {
    /// What is recorded after the stop `exit`, given whether its autosubmission found a
    /// non-empty diff (`submitted` itself is recorded as it is).
    pub fn after(exit: ExitStatus, autosubmitted_patch: bool) -> Self {
        if autosubmitted_patch && exit.autosubmits() {
            RecordedStatus::Autosubmitted(exit)
        } else {
            RecordedStatus::Exit(exit)
        }
    }

    /// The stop behind this status, when it is one of ours.
    pub fn exit(&self) -> Option<ExitStatus> {
        match self {
            RecordedStatus::Exit(exit) | RecordedStatus::Autosubmitted(exit) => Some(*exit),
            RecordedStatus::Other(_) => None,
        }
    }

    /// Whether the harness, the environment or the API failed, rather than the agent ending its
    /// own way: `exit_error`, `exit_environment_error`, `exit_api`, `early_exit`, alone or
    /// autosubmitted (`submitted (exit_api)`).
    pub fn is_error(&self) -> bool {
        matches!(
            self.exit(),
            Some(
                ExitStatus::ExitError
                    | ExitStatus::ExitEnvironmentError
                    | ExitStatus::ExitApi
                    | ExitStatus::EarlyExit
            )
        )
    }

    /// The resume rule's exception (reference §7): `early_exit` is an infrastructure failure,
    /// so resume runs the instance again, also when its changes were autosubmitted.
    pub fn reruns(&self) -> bool {
        self.exit() == Some(ExitStatus::EarlyExit)
    }
}

impl From<ExitStatus> for RecordedStatus {
    fn from(exit: ExitStatus) -> Self {
        RecordedStatus::Exit(exit)
    }
}

impl From<&str> for RecordedStatus {
    fn from(text: &str) -> Self {
        if let Some(exit) = ExitStatus::from_name(text) {
            return RecordedStatus::Exit(exit);
        }
        text.strip_prefix("submitted (")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(ExitStatus::from_name)
            .map_or_else(
                || RecordedStatus::Other(text.to_owned()),
                RecordedStatus::Autosubmitted,
            )
    }
}

impl From<String> for RecordedStatus {
    fn from(text: String) -> Self {
        match RecordedStatus::from(text.as_str()) {
            RecordedStatus::Other(_) => RecordedStatus::Other(text),
            known => known,
        }
    }
}

impl From<RecordedStatus> for String {
    fn from(status: RecordedStatus) -> Self {
        match status {
            RecordedStatus::Other(text) => text,
            known => known.to_string(),
        }
    }
}

impl fmt::Display for RecordedStatus {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordedStatus::Exit(exit) => formatter.write_str(exit.as_str()),
            RecordedStatus::Autosubmitted(exit) => write!(formatter, "submitted ({exit})"),
            RecordedStatus::Other(text) => formatter.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recorded_status_reads_back_from_the_text_it_writes() {
        let mut statuses: Vec<RecordedStatus> = ExitStatus::ALL
            .into_iter()
            .flat_map(|exit| {
                [
                    RecordedStatus::Exit(exit),
                    RecordedStatus::Autosubmitted(exit),
                ]
            })
            .collect();
        statuses.push(RecordedStatus::Other("exit_format_error".to_owned()));
        for status in statuses {
            let text = serde_json::to_string(&status).unwrap();
            assert_eq!(
                serde_json::from_str::<RecordedStatus>(&text).unwrap(),
                status,
                "{text}"
            );
        }
    }

    #[test]
    fn statuses_of_other_tools_are_kept_as_written() {
        for text in [
            "exit_format_error",
            "submitted (exit_unknown)",
            "submitted (",
            "",
        ] {
            assert_eq!(
                (
                    RecordedStatus::from(text),
                    String::from(RecordedStatus::from(text))
                ),
                (RecordedStatus::Other(text.to_owned()), text.to_owned())
            );
        }
        assert_eq!(
            [
                RecordedStatus::from("submitted (exit_cost)"),
                RecordedStatus::from("exit_context"),
                RecordedStatus::from("early_exit"),
            ],
            [
                RecordedStatus::Autosubmitted(ExitStatus::ExitCost),
                RecordedStatus::Exit(ExitStatus::ExitContext),
                RecordedStatus::Exit(ExitStatus::EarlyExit),
            ]
        );
    }

    #[test]
    fn an_autosubmitted_patch_changes_every_status_but_submitted() {
        assert_eq!(
            [
                RecordedStatus::after(ExitStatus::ExitCost, true).to_string(),
                RecordedStatus::after(ExitStatus::ExitCost, false).to_string(),
                RecordedStatus::after(ExitStatus::Submitted, true).to_string(),
            ],
            ["submitted (exit_cost)", "exit_cost", "submitted"]
        );
    }

    #[test]
    fn errors_are_harness_environment_and_api_failures_even_when_autosubmitted() {
        for status in [
            "exit_error",
            "exit_environment_error",
            "exit_api",
            "early_exit",
            "submitted (exit_api)",
            "submitted (early_exit)",
        ] {
            assert!(RecordedStatus::from(status).is_error(), "{status}");
        }
        for status in [
            "submitted",
            "exit_cost",
            "submitted (exit_cost)",
            "exit_format",
            "exit_total_execution_time",
            "exit_format_error",
        ] {
            assert!(!RecordedStatus::from(status).is_error(), "{status}");
        }
    }

    #[test]
    fn resume_reruns_only_early_exits() {
        let reruns: Vec<&str> = [
            "early_exit",
            "submitted (early_exit)",
            "submitted",
            "exit_cost",
            "skipped",
            "exit_format_error",
        ]
        .into_iter()
        .filter(|text| RecordedStatus::from(*text).reruns())
        .collect();
        assert_eq!(reruns, ["early_exit", "submitted (early_exit)"]);
    }
}
