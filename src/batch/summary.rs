//! The end-of-run summary of `aci batch`, printed on stdout: instances per exit status (this
//! run's, then the skipped ones under `skipped (<old status>)`, then those an interrupt kept from
//! starting), patches, cost, wall time and where the outputs are.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use super::progress::format_duration;
use super::runner::{BatchReport, Outcome};

/// What the summary needs besides the report.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryContext<'a> {
    /// The output directory.
    pub output: &'a Path,
    /// `total_cost` of `run_batch_exit_statuses.yaml`: every instance in the directory.
    pub total_cost: f64,
    /// Records of the instances file that could not be used (reported on stderr already).
    pub invalid_records: usize,
}

/// Renders the summary table.
pub fn render(report: &BatchReport, context: &SummaryContext<'_>) -> String {
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let (mut not_started, mut run, mut patches, mut cost) = (0, 0, 0, 0.0);
    for item in &report.outcomes {
        match &item.outcome {
            Outcome::Ran { result, .. } => {
                *ran.entry(result.exit_status.to_string()).or_default() += 1;
                run += 1;
                patches += usize::from(result.has_patch);
                cost += result.cost;
            }
            Outcome::Skipped(previous) => {
                let label = format!("skipped ({})", previous.exit_status);
                *skipped.entry(label).or_default() += 1;
            }
            Outcome::NotStarted => not_started += 1,
        }
    }
    let mut rows: Vec<(String, usize)> = ran.into_iter().collect();
    rows.extend(skipped);
    if not_started > 0 {
        let why = if report.failure.is_some() {
            "stopped"
        } else {
            "interrupted"
        };
        rows.push((format!("not started ({why})"), not_started));
    }
    rows.push(("total".to_owned(), report.outcomes.len()));
    let width = rows
        .iter()
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0)
        .max(11)
        + 2;
    let mut out = String::new();
    let _ = writeln!(out, "{:<width$}{:>9}", "exit status", "instances");
    for (label, count) in &rows {
        let _ = writeln!(out, "{label:<width$}{count:>9}");
    }
    let dir = context.output.display();
    let _ = writeln!(out);
    let _ = writeln!(out, "patches submitted   {patches} (of {run} run)");
    let _ = writeln!(
        out,
        "cost                ${cost:.2} this run, ${:.2} for everything in {dir}",
        context.total_cost
    );
    let _ = writeln!(
        out,
        "wall (with set-up)  {}",
        format_duration(report.wall_time)
    );
    if context.invalid_records > 0 {
        let _ = writeln!(
            out,
            "invalid records     {} (not run; see the errors above)",
            context.invalid_records
        );
    }
    if let Some(failure) = &report.failure {
        let _ = writeln!(out, "stopped             {failure}");
        let _ = writeln!(
            out,
            "                    rerun with --output {dir} to resume once it is fixed: stopped \
             and unstarted instances run, finished ones are skipped"
        );
    } else if report.interrupted {
        let _ = writeln!(
            out,
            "interrupted         rerun with --output {dir} to resume: interrupted and unstarted \
             instances run, finished ones are skipped"
        );
    }
    let _ = writeln!(out, "outputs             {dir}/preds.json");
    let _ = writeln!(
        out,
        "                    {dir}/run_batch_exit_statuses.yaml"
    );
    let _ = writeln!(out, "                    {dir}/manifest.json");
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::batch::InstanceResult;
    use crate::batch::runner::{InstanceOutcome, Previous};

    fn ran(id: &str, status: &str, has_patch: bool, cost: f64) -> InstanceOutcome {
        InstanceOutcome {
            instance_id: id.to_owned(),
            outcome: Outcome::Ran {
                result: InstanceResult {
                    instance_id: id.to_owned(),
                    exit_status: status.into(),
                    cost,
                    has_patch,
                    reason: None,
                    run_failure: None,
                },
                elapsed: Duration::from_secs(1),
            },
        }
    }

    #[test]
    fn the_table_counts_statuses_then_skipped_then_unstarted_instances() {
        let skipped = InstanceOutcome {
            instance_id: "d".to_owned(),
            outcome: Outcome::Skipped(Previous {
                exit_status: "submitted".into(),
                has_patch: true,
                cost: 1.0,
            }),
        };
        let report = BatchReport {
            outcomes: vec![
                ran("a", "submitted", true, 0.5),
                ran("b", "submitted (early_exit)", true, 0.25),
                ran("c", "submitted", false, 0.0),
                skipped,
                InstanceOutcome {
                    instance_id: "e".to_owned(),
                    outcome: Outcome::NotStarted,
                },
            ],
            interrupted: true,
            failure: None,
            wall_time: Duration::from_secs(75),
        };
        let context = SummaryContext {
            output: Path::new("runs/x"),
            total_cost: 1.75,
            invalid_records: 1,
        };
        let expected = "\
exit status                instances
submitted                          2
submitted (early_exit)             1
skipped (submitted)                1
not started (interrupted)          1
total                              5

patches submitted   2 (of 3 run)
cost                $0.75 this run, $1.75 for everything in runs/x
wall (with set-up)  1:15
invalid records     1 (not run; see the errors above)
interrupted         rerun with --output runs/x to resume: interrupted and unstarted instances run, finished ones are skipped
outputs             runs/x/preds.json
                    runs/x/run_batch_exit_statuses.yaml
                    runs/x/manifest.json
";
        assert_eq!(render(&report, &context), expected);
    }

    #[test]
    fn a_batch_stopped_by_a_run_level_failure_names_it_and_how_to_resume() {
        let report = BatchReport {
            outcomes: vec![
                ran("a", "early_exit", false, 0.0),
                InstanceOutcome {
                    instance_id: "b".to_owned(),
                    outcome: Outcome::NotStarted,
                },
            ],
            interrupted: true,
            failure: Some(crate::batch::RunFailure {
                message: "the Docker daemon went away (docker: gone)".to_owned(),
                hint: None,
            }),
            wall_time: Duration::from_secs(3),
        };
        let context = SummaryContext {
            output: Path::new("runs/x"),
            total_cost: 0.0,
            invalid_records: 0,
        };
        let expected = "\
exit status            instances
early_exit                     1
not started (stopped)          1
total                          2

patches submitted   0 (of 1 run)
cost                $0.00 this run, $0.00 for everything in runs/x
wall (with set-up)  0:03
stopped             the Docker daemon went away (docker: gone)
                    rerun with --output runs/x to resume once it is fixed: stopped and unstarted instances run, finished ones are skipped
outputs             runs/x/preds.json
                    runs/x/run_batch_exit_statuses.yaml
                    runs/x/manifest.json
";
        assert_eq!(render(&report, &context), expected);
    }
}
