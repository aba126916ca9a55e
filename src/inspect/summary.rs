//! What the run view needs of one trajectory, read in one pass that keeps nothing else
//! ([`super::trajectory`]): the history (the bulk of a `.traj`) is skipped without being
//! built, and an observation is only searched for the lint gate's rejection as it streams by.
//!
//! Reads aci's trajectories, SWE-agent's v0.7 and 1.x ones and mini-swe-agent's alike: every
//! field is optional, and a field of an unexpected type counts as absent instead of failing the
//! file.

use serde::Serialize;

/// How a rejected edit's observation starts (the v0.7 wording, `aci::edit::lint_failure`).
pub const LINT_REJECTION: &str = "Your proposed edit has introduced new syntax error(s).";

/// The run view's facts about one trajectory.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Summary {
    /// `info.exit_status`; `None` while the instance runs.
    pub exit_status: Option<String>,
    /// Trajectory steps (turns, re-asks included).
    pub steps: usize,
    /// `info.model_stats.instance_cost`.
    pub cost: f64,
    /// Prompt tokens sent.
    pub tokens_sent: u64,
    /// Completion tokens received.
    pub tokens_received: u64,
    /// Model calls.
    pub api_calls: u64,
    /// `info.wall_time` (aci), seconds.
    pub wall_time: Option<f64>,
    /// The steps' `execution_time`, summed: the commands' share of the wall time.
    pub execution_time: f64,
    /// Edits the lint gate rejected.
    pub lint_rejections: usize,
    /// Answers the parser rejected (re-asks).
    pub format_errors: usize,
    /// Turns that came with a nudge.
    pub nudges: usize,
    /// Lines the submitted patch adds and removes; `None` without a patch.
    pub patch_lines: Option<(usize, usize)>,
    /// `info.error`: why the instance failed, when it did.
    pub error: Option<String>,
}

/// Lines a unified diff adds and removes (file headers excluded).
pub fn patch_lines(patch: &str) -> (usize, usize) {
    let mut added = 0;
    let mut removed = 0;
    for line in patch.lines() {
        if line.starts_with('+') && !line.starts_with("+++ ") {
            added += 1;
        } else if line.starts_with('-') && !line.starts_with("--- ") {
            removed += 1;
        }
    }
    (added, removed)
}

/// The summary of a `.traj` file's bytes ([`super::trajectory::read`], keeping nothing else).
///
/// # Errors
///
/// The bytes are not a JSON object with the shape of a trajectory.
pub fn summarize(bytes: &[u8]) -> Result<Summary, super::trajectory::ReadError> {
    Ok(super::trajectory::read(bytes, super::trajectory::Keep::Summary)?.summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const V0_7: &str = include_str!("../../tests/fixtures/sweagent_v0_7.traj");

    #[test]
    fn an_aci_trajectory_gives_every_column_of_the_run_view() {
        let traj = serde_json::json!({
            "environment": "aci",
            "trajectory": [
                {"action": "open a.py", "observation": "[File: a.py (1 lines total)]\n1:x", "execution_time": 0.5},
                {"action": "edit 1:1\ny(\nend_of_edit", "observation": format!("{LINT_REJECTION} Please read"), "execution_time": 0.25, "nudge": "2 steps left"},
                {"action": "", "observation": "no command", "format_error": "no command", "execution_time": 0.0},
                {"action": "submit", "observation": "diff", "execution_time": 0.25}
            ],
            "history": [{"role": "system", "content": "long"}],
            "info": {
                "exit_status": "submitted",
                "submission": "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n-x\n+y\n+z\n",
                "model_stats": {"instance_cost": 0.5, "tokens_sent": 1000, "tokens_received": 50, "api_calls": 4},
                "wall_time": 12.5
            }
        });
        let summary = summarize(traj.to_string().as_bytes()).unwrap();
        assert_eq!(
            summary,
            Summary {
                exit_status: Some("submitted".to_owned()),
                steps: 4,
                cost: 0.5,
                tokens_sent: 1000,
                tokens_received: 50,
                api_calls: 4,
                wall_time: Some(12.5),
                execution_time: 1.0,
                lint_rejections: 1,
                format_errors: 1,
                nudges: 1,
                patch_lines: Some((2, 1)),
                error: None,
            }
        );
    }

    #[test]
    fn a_sweagent_v0_7_trajectory_reads_with_its_stats() {
        let summary = summarize(V0_7.as_bytes()).unwrap();
        assert_eq!(summary.exit_status.as_deref(), Some("submitted"));
        assert_eq!(summary.steps, 3);
        assert_eq!((summary.tokens_sent, summary.tokens_received), (39826, 493));
        assert_eq!(summary.cost, 0.41306);
        assert_eq!(summary.patch_lines, Some((1, 1)));
        assert_eq!(summary.wall_time, None);
    }

    #[test]
    fn fields_of_unexpected_types_count_as_absent() {
        let traj = r#"{"trajectory": [{"observation": ["a"], "execution_time": "1", "format_error": null, "query": [{"role": "user"}]}],
                       "info": {"exit_status": 3, "submission": {"x": 1}, "model_stats": {"instance_cost": "free", "api_calls": -1}, "wall_time": null}}"#;
        let summary = summarize(traj.as_bytes()).unwrap();
        assert_eq!(summary.steps, 1);
        assert_eq!(summary.exit_status, None);
        assert_eq!(summary.patch_lines, None);
        assert_eq!(
            (summary.cost, summary.api_calls, summary.format_errors),
            (0.0, 0, 0)
        );
        // A running instance: no info yet.
        let summary = summarize(br#"{"trajectory": []}"#).unwrap();
        assert_eq!(summary, Summary::default());
        assert!(summarize(b"[1, 2]").is_err());
        assert!(summarize(b"{\"trajectory\": [").is_err());
    }
}
