//! Reading what one configuration did from its output directories: the trajectories of its
//! batch (steps, observation sizes, lint rejections, format errors, exit status, cost) and the
//! per-instance `report.json` of its evaluation (resolved or not).

use std::path::Path;

use super::table::InstanceRecord;
use crate::trajectory;

/// How a rejected edit's observation starts (v0.7 wording, see `aci::edit::lint_failure`).
const LINT_REJECTION: &str = "Your proposed edit has introduced new syntax error(s).";

/// Whether the evaluation report `eval_dir/<id>/report.json` says resolved. A missing or
/// unreadable report counts as not resolved.
pub fn resolved(eval_dir: &Path, instance_id: &str) -> bool {
    let path = eval_dir.join(instance_id).join("report.json");
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|report| report.get(instance_id)?.get("resolved")?.as_bool())
        .unwrap_or(false)
}

/// The record of one instance from its trajectory under `run_dir` and its report under
/// `eval_dir`. An instance without a trajectory is recorded with status `missing`.
pub fn record(run_dir: &Path, eval_dir: &Path, instance_id: &str) -> InstanceRecord {
    let path = run_dir
        .join(instance_id)
        .join(format!("{instance_id}.traj"));
    let mut record = InstanceRecord {
        instance_id: instance_id.to_owned(),
        resolved: resolved(eval_dir, instance_id),
        exit_status: "missing".to_owned(),
        steps: 0,
        observation_chars: 0,
        lint_rejections: 0,
        format_errors: 0,
        cost: 0.0,
    };
    let Ok(trajectory) = trajectory::read(&path) else {
        return record;
    };
    record.exit_status = trajectory
        .info
        .exit_status
        .as_ref()
        .map_or_else(|| "unfinished".to_owned(), ToString::to_string);
    record.cost = trajectory.info.model_stats.instance_cost;
    record.steps = trajectory.trajectory.len();
    for step in &trajectory.trajectory {
        record.observation_chars += step.observation.chars().count();
        if step.format_error.is_some() {
            record.format_errors += 1;
        }
        record.lint_rejections += step.observation.matches(LINT_REJECTION).count();
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::{Trajectory, TrajectoryStep};

    #[test]
    fn records_count_steps_rejections_and_format_errors_from_the_trajectory() {
        let run = tempfile::tempdir().unwrap();
        let eval = tempfile::tempdir().unwrap();
        let mut trajectory = Trajectory::default();
        trajectory.info.exit_status = Some("submitted".into());
        trajectory.info.model_stats.instance_cost = 0.25;
        for observation in [
            "abc",
            "Your proposed edit has introduced new syntax error(s). Please…",
            "de",
        ] {
            trajectory.trajectory.push(TrajectoryStep {
                observation: observation.to_owned(),
                ..TrajectoryStep::default()
            });
        }
        trajectory.trajectory.push(TrajectoryStep {
            format_error: Some("no block".to_owned()),
            ..TrajectoryStep::default()
        });
        let dir = run.path().join("x");
        std::fs::create_dir_all(&dir).unwrap();
        trajectory::write_atomic(&dir.join("x.traj"), &trajectory).unwrap();
        std::fs::create_dir_all(eval.path().join("x")).unwrap();
        std::fs::write(
            eval.path().join("x/report.json"),
            r#"{"x": {"resolved": true}}"#,
        )
        .unwrap();
        let record = record(run.path(), eval.path(), "x");
        assert_eq!(
            (
                record.steps,
                record.lint_rejections,
                record.format_errors,
                record.resolved,
                record.cost
            ),
            (4, 1, 1, true, 0.25)
        );
        assert_eq!(record.observation_chars, 3 + 62 + 2);
        assert_eq!(
            super::record(run.path(), eval.path(), "y").exit_status,
            "missing"
        );
    }
}
