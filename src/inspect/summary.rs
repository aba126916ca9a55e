//! What the run view needs of one trajectory, read in one pass that keeps nothing else: the
//! history (the bulk of a `.traj`) is skipped without being built, and an observation is only
//! searched for the lint gate's rejection, then dropped.
//!
//! Reads aci's trajectories and SWE-agent's v0.7 and 1.x ones alike: every field is optional,
//! and a field of an unexpected type counts as absent instead of failing the file.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

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

/// A string, or nothing when the value is of another type.
#[derive(Default)]
struct LenientStr<'a>(Option<Cow<'a, str>>);

/// A number, or nothing when the value is of another type.
#[derive(Default)]
struct LenientNumber(Option<f64>);

struct StrVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
    type Value = LenientStr<'a>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Self::Value, E> {
        Ok(LenientStr(Some(Cow::Borrowed(value))))
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(LenientStr(Some(Cow::Owned(value.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(LenientStr(Some(Cow::Owned(value))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LenientStr(None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LenientStr(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LenientStr(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(LenientStr(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(LenientStr(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(LenientStr(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LenientStr(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LenientStr(None))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LenientStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrVisitor(std::marker::PhantomData))
    }
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = LenientNumber;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(LenientNumber(Some(value as f64)))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(LenientNumber(Some(value as f64)))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Ok(LenientNumber(Some(value)))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(LenientNumber(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LenientNumber(None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(LenientNumber(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(LenientNumber(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(LenientNumber(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(LenientNumber(None))
    }
}

impl<'de> Deserialize<'de> for LenientNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NumberVisitor)
    }
}

#[derive(Deserialize, Default)]
struct RawStep<'a> {
    #[serde(default, borrow)]
    observation: LenientStr<'a>,
    #[serde(default, borrow)]
    format_error: LenientStr<'a>,
    #[serde(default, borrow)]
    nudge: LenientStr<'a>,
    #[serde(default)]
    execution_time: LenientNumber,
}

#[derive(Deserialize, Default)]
struct RawStats {
    #[serde(default)]
    instance_cost: LenientNumber,
    #[serde(default)]
    tokens_sent: LenientNumber,
    #[serde(default)]
    tokens_received: LenientNumber,
    #[serde(default)]
    api_calls: LenientNumber,
}

#[derive(Deserialize, Default)]
struct RawInfo<'a> {
    #[serde(default, borrow)]
    exit_status: LenientStr<'a>,
    #[serde(default, borrow)]
    submission: LenientStr<'a>,
    #[serde(default)]
    model_stats: Option<RawStats>,
    #[serde(default)]
    wall_time: LenientNumber,
    #[serde(default, borrow)]
    error: LenientStr<'a>,
}

#[derive(Deserialize)]
struct RawTrajectory<'a> {
    #[serde(default, borrow)]
    trajectory: Vec<RawStep<'a>>,
    #[serde(default, borrow)]
    info: Option<RawInfo<'a>>,
}

fn count(number: &LenientNumber) -> u64 {
    number.0.filter(|n| *n >= 0.0).map_or(0, |n| n as u64)
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

/// The summary of a `.traj` file's bytes.
///
/// # Errors
///
/// The bytes are not a JSON object with the shape of a trajectory (`trajectory` a list).
pub fn summarize(bytes: &[u8]) -> Result<Summary, serde_json::Error> {
    let raw: RawTrajectory<'_> = serde_json::from_slice(bytes)?;
    let info = raw.info.unwrap_or_default();
    let stats = info.model_stats.unwrap_or_default();
    let mut summary = Summary {
        exit_status: info.exit_status.0.map(Cow::into_owned),
        steps: raw.trajectory.len(),
        cost: stats.instance_cost.0.unwrap_or(0.0),
        tokens_sent: count(&stats.tokens_sent),
        tokens_received: count(&stats.tokens_received),
        api_calls: count(&stats.api_calls),
        wall_time: info.wall_time.0,
        patch_lines: info
            .submission
            .0
            .as_deref()
            .filter(|patch| !patch.trim().is_empty())
            .map(patch_lines),
        error: info.error.0.map(Cow::into_owned),
        ..Summary::default()
    };
    for step in &raw.trajectory {
        summary.execution_time += step.execution_time.0.unwrap_or(0.0);
        if step.format_error.0.is_some() {
            summary.format_errors += 1;
        }
        if step.nudge.0.is_some() {
            summary.nudges += 1;
        }
        if let Some(observation) = &step.observation.0 {
            summary.lint_rejections += observation.matches(LINT_REJECTION).count();
        }
    }
    Ok(summary)
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
