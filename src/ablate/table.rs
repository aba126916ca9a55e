//! The comparison table of `aci ablate`: one row per configuration, with the resolve rate and
//! its Wilson interval, the change against the base with the paired gains and losses and an
//! exact McNemar p-value, and what the agent did (steps, observation size, lint rejections,
//! format errors, exits, cost, wall time). Rendered as Markdown, CSV and JSON.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::protocol::Protocol;
use super::stats::{mcnemar_exact, mean_and_spread, wilson_interval};

/// What one configuration did on one instance, in one repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// The instance.
    pub instance_id: String,
    /// The evaluation resolved it.
    pub resolved: bool,
    /// The trajectory's exit status.
    pub exit_status: String,
    /// Turns the agent took (trajectory steps).
    pub steps: usize,
    /// Characters of observation over all turns.
    pub observation_chars: usize,
    /// Edits the lint gate rejected.
    pub lint_rejections: usize,
    /// Answers that could not be parsed (format errors and answers without an action).
    pub format_errors: usize,
    /// Model cost in dollars.
    pub cost: f64,
}

/// One configuration's runs: one list of records per repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRuns {
    /// The name shown in the table (the config file's stem).
    pub name: String,
    /// The config file.
    pub path: String,
    /// Its protocol (which generation of interface, and how actions are written).
    pub protocol: Protocol,
    /// Records per repeat.
    pub repeats: Vec<Vec<InstanceRecord>>,
    /// Wall-clock seconds per repeat (batch plus evaluation).
    pub wall_seconds: Vec<f64>,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The configuration.
    pub config: String,
    /// Its protocol; the table shows [`Protocol::label`].
    #[serde(default)]
    pub protocol: Protocol,
    /// Instances per repeat.
    pub instances: usize,
    /// Resolved instances (mean over repeats).
    pub resolved: f64,
    /// Resolve rate in percent (mean over repeats).
    pub resolved_pct: f64,
    /// Standard deviation of the resolve rate over repeats, in points (0 for one repeat).
    pub resolved_pct_spread: f64,
    /// The 95% Wilson interval of the pooled resolve rate, in percent.
    pub ci95_pct: (f64, f64),
    /// The change in resolve rate against the base, in points (0 for the base).
    pub delta_pct: f64,
    /// Instances resolved by this configuration but not by the base (first repeat).
    pub gained: Vec<String>,
    /// Instances resolved by the base but not by this configuration (first repeat).
    pub lost: Vec<String>,
    /// Exact McNemar p-value of gained against lost (1 for the base).
    pub mcnemar_p: f64,
    /// Mean steps per instance.
    pub mean_steps: f64,
    /// Mean observation characters per turn.
    pub mean_observation_chars: f64,
    /// Total lint rejections.
    pub lint_rejections: usize,
    /// Total format errors.
    pub format_errors: usize,
    /// Instances per exit status (all repeats).
    pub exits: BTreeMap<String, usize>,
    /// Total cost in dollars.
    pub cost: f64,
    /// Total wall time in seconds.
    pub wall_seconds: f64,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The base configuration's name.
    pub base: String,
    /// Rows, base first.
    pub rows: Vec<Row>,
}

fn resolved_set(records: &[InstanceRecord]) -> BTreeSet<&str> {
    records
        .iter()
        .filter(|r| r.resolved)
        .map(|r| r.instance_id.as_str())
        .collect()
}

fn row(runs: &ConfigRuns, base: Option<&ConfigRuns>) -> Row {
    let all: Vec<&InstanceRecord> = runs.repeats.iter().flatten().collect();
    let instances = runs.repeats.first().map_or(0, Vec::len);
    let rates: Vec<f64> = runs
        .repeats
        .iter()
        .map(|records| {
            100.0 * records.iter().filter(|r| r.resolved).count() as f64
                / records.len().max(1) as f64
        })
        .collect();
    let (resolved_pct, resolved_pct_spread) = mean_and_spread(&rates);
    let resolved_total = all.iter().filter(|r| r.resolved).count();
    let (lo, hi) = wilson_interval(resolved_total, all.len());
    let (gained, lost, delta_pct, mcnemar_p) = match (base, runs.repeats.first()) {
        (Some(base), Some(first)) => {
            let mine = resolved_set(first);
            let theirs = base
                .repeats
                .first()
                .map(|r| resolved_set(r))
                .unwrap_or_default();
            let gained: Vec<String> = mine.difference(&theirs).map(|s| (*s).to_owned()).collect();
            let lost: Vec<String> = theirs.difference(&mine).map(|s| (*s).to_owned()).collect();
            let base_rates: Vec<f64> = base
                .repeats
                .iter()
                .map(|records| {
                    100.0 * records.iter().filter(|r| r.resolved).count() as f64
                        / records.len().max(1) as f64
                })
                .collect();
            let p = mcnemar_exact(gained.len(), lost.len());
            (
                gained,
                lost,
                resolved_pct - mean_and_spread(&base_rates).0,
                p,
            )
        }
        _ => (Vec::new(), Vec::new(), 0.0, 1.0),
    };
    let steps: usize = all.iter().map(|r| r.steps).sum();
    let chars: usize = all.iter().map(|r| r.observation_chars).sum();
    let mut exits = BTreeMap::new();
    for record in &all {
        *exits.entry(record.exit_status.clone()).or_insert(0) += 1;
    }
    Row {
        config: runs.name.clone(),
        protocol: runs.protocol.clone(),
        instances,
        resolved: resolved_total as f64 / runs.repeats.len().max(1) as f64,
        resolved_pct,
        resolved_pct_spread,
        ci95_pct: (100.0 * lo, 100.0 * hi),
        delta_pct,
        gained,
        lost,
        mcnemar_p,
        mean_steps: steps as f64 / all.len().max(1) as f64,
        mean_observation_chars: chars as f64 / steps.max(1) as f64,
        lint_rejections: all.iter().map(|r| r.lint_rejections).sum(),
        format_errors: all.iter().map(|r| r.format_errors).sum(),
        exits,
        cost: all.iter().map(|r| r.cost).sum(),
        wall_seconds: runs.wall_seconds.iter().sum(),
    }
}

/// Compares every variant with the base.
pub fn compare(base: &ConfigRuns, variants: &[ConfigRuns]) -> Table {
    let mut rows = vec![row(base, None)];
    rows.extend(variants.iter().map(|variant| row(variant, Some(base))));
    Table {
        base: base.name.clone(),
        rows,
    }
}

fn exits_text(exits: &BTreeMap<String, usize>) -> String {
    exits
        .iter()
        .map(|(status, n)| format!("{status}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Table {
    /// The Markdown table.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from(
            "| config | protocol | resolved | 95% CI | Δ vs base | gained / lost | McNemar p | mean steps | obs chars / turn | lint rejections | format errors | exits | cost | wall time |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for row in &self.rows {
            let spread = if row.resolved_pct_spread > 0.0 {
                format!(" ± {:.1}", row.resolved_pct_spread)
            } else {
                String::new()
            };
            let (delta, pairs, p) = if row.config == self.base {
                ("—".to_owned(), "—".to_owned(), "—".to_owned())
            } else {
                (
                    format!("{:+.1}", row.delta_pct),
                    format!("+{} / −{}", row.gained.len(), row.lost.len()),
                    format!("{:.3}", row.mcnemar_p),
                )
            };
            out.push_str(&format!(
                "| {} | {} | {}/{} ({:.1}%{spread}) | {:.1}–{:.1}% | {delta} | {pairs} | {p} | {:.1} | {:.0} | {} | {} | {} | ${:.2} | {:.0} s |\n",
                row.config,
                row.protocol.label(),
                fmt_count(row.resolved),
                row.instances,
                row.resolved_pct,
                row.ci95_pct.0,
                row.ci95_pct.1,
                row.mean_steps,
                row.mean_observation_chars,
                row.lint_rejections,
                row.format_errors,
                exits_text(&row.exits),
                row.cost,
                row.wall_seconds,
            ));
        }
        out
    }

    /// The CSV table (one header line, one line per row).
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "config,protocol,instances,resolved,resolved_pct,resolved_pct_spread,ci95_low_pct,ci95_high_pct,delta_pct,gained,lost,mcnemar_p,mean_steps,mean_observation_chars,lint_rejections,format_errors,exits,cost,wall_seconds\n",
        );
        for row in &self.rows {
            out.push_str(&format!(
                "{},\"{}\",{},{},{:.2},{:.2},{:.2},{:.2},{:.2},{},{},{:.4},{:.2},{:.1},{},{},\"{}\",{:.4},{:.1}\n",
                row.config,
                row.protocol.label(),
                row.instances,
                fmt_count(row.resolved),
                row.resolved_pct,
                row.resolved_pct_spread,
                row.ci95_pct.0,
                row.ci95_pct.1,
                row.delta_pct,
                row.gained.len(),
                row.lost.len(),
                row.mcnemar_p,
                row.mean_steps,
                row.mean_observation_chars,
                row.lint_rejections,
                row.format_errors,
                exits_text(&row.exits),
                row.cost,
                row.wall_seconds,
            ));
        }
        out
    }
}

fn fmt_count(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, resolved: bool, steps: usize) -> InstanceRecord {
        InstanceRecord {
            instance_id: id.to_owned(),
            resolved,
            exit_status: "submitted".to_owned(),
            steps,
            observation_chars: steps * 100,
            lint_rejections: 0,
            format_errors: 0,
            cost: 0.0,
        }
    }

    fn runs(name: &str, resolved: &[bool]) -> ConfigRuns {
        let records = resolved
            .iter()
            .enumerate()
            .map(|(i, r)| record(&format!("i{i}"), *r, 4))
            .collect();
        ConfigRuns {
            name: name.to_owned(),
            path: format!("{name}.yaml"),
            protocol: Protocol {
                interface: "paper ACI".to_owned(),
                parser: "thought_action".to_owned(),
                ..Protocol::default()
            },
            repeats: vec![records],
            wall_seconds: vec![10.0],
        }
    }

    #[test]
    fn a_variant_row_pairs_its_outcomes_with_the_base() {
        let base = runs("default", &[true, true, false, true]);
        let variant = runs("no-lint", &[true, false, true, false]);
        let table = compare(&base, &[variant]);
        let row = &table.rows[1];
        assert_eq!(
            (row.gained.clone(), row.lost.clone()),
            (
                vec!["i2".to_owned()],
                vec!["i1".to_owned(), "i3".to_owned()]
            )
        );
        assert!((row.delta_pct - -25.0).abs() < 1e-9);
        assert_eq!(row.mcnemar_p, 1.0);
        assert_eq!(row.mean_observation_chars, 100.0);
        let markdown = table.to_markdown();
        let lines: Vec<&str> = markdown.lines().collect();
        assert_eq!(
            lines[2],
            "| default | paper ACI (text) | 3/4 (75.0%) | 30.1–95.4% | — | — | — | 4.0 | 100 | 0 | 0 | submitted: 4 | $0.00 | 10 s |"
        );
        assert_eq!(
            lines[3],
            "| no-lint | paper ACI (text) | 2/4 (50.0%) | 15.0–85.0% | -25.0 | +1 / −2 | 1.000 | 4.0 | 100 | 0 | 0 | submitted: 4 | $0.00 | 10 s |"
        );
    }

    #[test]
    fn repeats_report_the_mean_and_spread() {
        let mut variant = runs("window-30", &[true, false]);
        variant
            .repeats
            .push(vec![record("i0", true, 2), record("i1", true, 2)]);
        variant.wall_seconds.push(5.0);
        let table = compare(&runs("default", &[true, true]), &[variant]);
        let row = &table.rows[1];
        assert!((row.resolved_pct - 75.0).abs() < 1e-9);
        assert!((row.resolved_pct_spread - 35.355_339).abs() < 1e-4);
        assert_eq!(row.resolved, 1.5);
        assert_eq!(row.wall_seconds, 15.0);
        assert!(table.to_markdown().contains("1.5/2 (75.0% ± 35.4)"));
        assert_eq!(table.to_csv().lines().count(), 3);
    }
}
