//! Runs side by side (`aci inspect DIR1 DIR2 …`): one table with a column per run (instances,
//! resolved, steps, cost, exit statuses), the spread of the resolve rate over the runs with the
//! pooled 95% Wilson interval, the instances gained and lost between any two runs, each run's
//! plots, and per instance every run's outcome linked to its trajectory, with the trajectories
//! side by side one click away. Pure: rows in, HTML out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::ablate::stats::wilson_interval;

use super::html::{encode_segment, escape, push_escaped};
use super::plots::run_plots;
use super::run_page::{eval_badge, exit_badge};
use super::source::{EvalState, Row};

/// One run of the comparison: its name and its rows.
#[derive(Debug, Clone)]
pub struct RunColumn {
    /// The run's name (its directory's, made unique).
    pub name: String,
    /// The directory, as given.
    pub dir: String,
    /// Its instances.
    pub rows: Vec<Row>,
}

/// The link of a run's page, from the comparison page.
pub fn run_link(name: &str) -> String {
    format!("c/{}/r1/index.html", encode_segment(name))
}

/// The link of an instance's page in one run, from the comparison page.
pub fn instance_link(name: &str, id: &str) -> String {
    format!(
        "c/{}/r1/i/{}.html",
        encode_segment(name),
        encode_segment(id)
    )
}

/// The link of an instance's runs side by side, from the comparison page.
pub fn across_link(id: &str) -> String {
    format!("across/{}.html", encode_segment(id))
}

/// What the table says of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunTotals {
    /// Instances.
    pub instances: usize,
    /// Graded (resolved, unresolved or an empty patch).
    pub evaluated: usize,
    /// Resolved.
    pub resolved: usize,
    /// Steps, summed.
    pub steps: usize,
    /// Cost, summed.
    pub cost: f64,
    /// Exit statuses and how many.
    pub exits: BTreeMap<String, usize>,
}

/// The totals of one run's rows.
pub fn totals(rows: &[Row]) -> RunTotals {
    let mut out = RunTotals {
        instances: rows.len(),
        ..RunTotals::default()
    };
    for row in rows {
        match row.eval {
            EvalState::Resolved => {
                out.resolved += 1;
                out.evaluated += 1;
            }
            EvalState::Unresolved | EvalState::EmptyPatch => out.evaluated += 1,
            EvalState::NotEvaluated | EvalState::Error(_) => {}
        }
        if let Some(summary) = &row.summary {
            out.steps += summary.steps;
            out.cost += summary.cost;
            let status = summary.exit_status.as_deref().unwrap_or("running");
            *out.exits.entry(status.to_owned()).or_default() += 1;
        }
    }
    out
}

/// The spread of the resolve rate over runs: (lowest, highest, mean) of the rates of the runs
/// that graded anything, and the pooled 95% Wilson interval of all their gradings; `None` when
/// no run graded anything.
pub fn spread(totals: &[RunTotals]) -> Option<(f64, f64, f64, (f64, f64))> {
    let rates: Vec<f64> = totals
        .iter()
        .filter(|t| t.evaluated > 0)
        .map(|t| t.resolved as f64 / t.evaluated as f64)
        .collect();
    if rates.is_empty() {
        return None;
    }
    let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let high = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let resolved = totals.iter().map(|t| t.resolved).sum();
    let evaluated = totals.iter().map(|t| t.evaluated).sum();
    Some((low, high, mean, wilson_interval(resolved, evaluated)))
}

fn resolved_ids(rows: &[Row]) -> BTreeSet<&str> {
    rows.iter()
        .filter(|row| row.eval == EvalState::Resolved)
        .map(|row| row.id.as_str())
        .collect()
}

/// The instances resolved by `b` and not by `a` (gained), and by `a` and not by `b` (lost),
/// among those both runs hold.
pub fn gained_lost(a: &[Row], b: &[Row]) -> (Vec<String>, Vec<String>) {
    let ids_a: BTreeSet<&str> = a.iter().map(|r| r.id.as_str()).collect();
    let ids_b: BTreeSet<&str> = b.iter().map(|r| r.id.as_str()).collect();
    let (ra, rb) = (resolved_ids(a), resolved_ids(b));
    let gained = rb
        .difference(&ra)
        .filter(|id| ids_a.contains(*id))
        .map(|id| (*id).to_owned())
        .collect();
    let lost = ra
        .difference(&rb)
        .filter(|id| ids_b.contains(*id))
        .map(|id| (*id).to_owned())
        .collect();
    (gained, lost)
}

fn percent(value: f64) -> String {
    format!("{:.1}%", value * 100.0)
}

fn push_table(out: &mut String, runs: &[RunColumn], totals: &[RunTotals]) {
    out.push_str("<table class=\"grid\" id=\"compare\"><thead><tr><th></th>");
    for run in runs {
        let _ = write!(
            out,
            "<th><a href=\"{}\">{}</a></th>",
            escape(&run_link(&run.name)),
            escape(&run.name)
        );
    }
    out.push_str("</tr></thead><tbody>");
    let mut line = |label: &str, cell: &dyn Fn(&RunTotals) -> String| {
        let _ = write!(out, "<tr><th>{label}</th>");
        for total in totals {
            let _ = write!(out, "<td class=\"num\">{}</td>", cell(total));
        }
        out.push_str("</tr>");
    };
    line("instances", &|t| t.instances.to_string());
    line("resolved", &|t| {
        if t.evaluated == 0 {
            "—".to_owned()
        } else {
            format!(
                "{} / {} ({})",
                t.resolved,
                t.evaluated,
                percent(t.resolved as f64 / t.evaluated as f64)
            )
        }
    });
    line("steps", &|t| t.steps.to_string());
    line("cost", &|t| format!("${:.2}", t.cost));
    line("exit status", &|t| {
        t.exits
            .iter()
            .map(|(status, n)| format!("{}: {n}", escape(status)))
            .collect::<Vec<_>>()
            .join("<br>")
    });
    out.push_str("</tbody></table>");
}

fn push_ids(out: &mut String, ids: &[String]) {
    if ids.is_empty() {
        out.push_str("<span class=\"muted\">none</span>");
        return;
    }
    for (index, id) in ids.iter().enumerate() {
        if index > 0 {
            out.push_str(" · ");
        }
        let _ = write!(
            out,
            "<a class=\"pair\" href=\"{}\">{}</a>",
            escape(&across_link(id)),
            escape(id)
        );
    }
}

fn push_pairs(out: &mut String, runs: &[RunColumn]) {
    out.push_str("<h2>Gained and lost</h2><table class=\"grid\" id=\"gained-lost\"><thead><tr><th>from</th><th>to</th><th>gained</th><th>lost</th></tr></thead><tbody>");
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let (gained, lost) = gained_lost(&a.rows, &b.rows);
            out.push_str("<tr><td>");
            push_escaped(out, &a.name);
            out.push_str("</td><td>");
            push_escaped(out, &b.name);
            let _ = write!(out, "</td><td class=\"gained\">{} ", gained.len());
            push_ids(out, &gained);
            let _ = write!(out, "</td><td class=\"lost\">{} ", lost.len());
            push_ids(out, &lost);
            out.push_str("</td></tr>");
        }
    }
    out.push_str("</tbody></table>");
}

fn push_instances(out: &mut String, runs: &[RunColumn]) {
    let mut ids: BTreeSet<&str> = BTreeSet::new();
    let mut cells: Vec<BTreeMap<&str, &Row>> = Vec::new();
    for run in runs {
        let mut by_id = BTreeMap::new();
        for row in &run.rows {
            ids.insert(&row.id);
            by_id.insert(row.id.as_str(), row);
        }
        cells.push(by_id);
    }
    out.push_str(
        "<h2>Instances</h2><table class=\"grid\" id=\"instances\"><thead><tr><th>instance</th>",
    );
    for run in runs {
        out.push_str("<th>");
        push_escaped(out, &run.name);
        out.push_str("</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for id in ids {
        let _ = write!(
            out,
            "<tr><td class=\"id\"><a href=\"{}\">{}</a></td>",
            escape(&across_link(id)),
            escape(id)
        );
        for (run, by_id) in runs.iter().zip(&cells) {
            match by_id.get(id) {
                Some(row) => {
                    let exit =
                        exit_badge(row.summary.as_ref().and_then(|s| s.exit_status.as_deref()));
                    let steps = row.summary.as_ref().map_or(0, |s| s.steps);
                    let _ = write!(
                        out,
                        "<td><a href=\"{}\">{} {} · {steps} steps</a></td>",
                        escape(&instance_link(&run.name, id)),
                        eval_badge(&row.eval),
                        exit
                    );
                }
                None => out.push_str("<td class=\"muted\">not in this run</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>");
}

/// The comparison page's body.
pub fn render(runs: &[RunColumn]) -> String {
    let mut out = format!("<h1>{} runs side by side</h1>", runs.len());
    for run in runs {
        out.push_str("<div class=\"muted\">");
        push_escaped(&mut out, &run.name);
        out.push_str(": ");
        push_escaped(&mut out, &run.dir);
        out.push_str("</div>");
    }
    let totals: Vec<RunTotals> = runs.iter().map(|run| totals(&run.rows)).collect();
    push_table(&mut out, runs, &totals);
    match spread(&totals) {
        Some((low, high, mean, (ci_low, ci_high))) => {
            let _ = write!(
                out,
                "<p class=\"spread\">resolve rate over the runs: {}–{} (mean {}); pooled: {} · 95% Wilson interval {}–{}</p>",
                percent(low),
                percent(high),
                percent(mean),
                percent(
                    totals.iter().map(|t| t.resolved).sum::<usize>() as f64
                        / totals.iter().map(|t| t.evaluated).sum::<usize>() as f64
                ),
                percent(ci_low),
                percent(ci_high)
            );
        }
        None => out.push_str("<p class=\"muted spread\">no run is evaluated: no resolve rate</p>"),
    }
    push_pairs(&mut out, runs);
    out.push_str("<h2>Plots</h2>");
    for run in runs {
        out.push_str("<details class=\"section run-plots\" open><summary>");
        push_escaped(&mut out, &run.name);
        out.push_str("</summary><div class=\"body\">");
        out.push_str(&run_plots(&run.rows));
        out.push_str("</div></details>");
    }
    push_instances(&mut out, runs);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::inspect::summary::Summary;

    fn row(id: &str, steps: usize, eval: EvalState) -> Row {
        Row {
            id: id.to_owned(),
            summary: Some(Arc::new(Summary {
                exit_status: Some("submitted".to_owned()),
                steps,
                cost: 0.5,
                ..Summary::default()
            })),
            unreadable: None,
            eval,
        }
    }

    fn runs() -> Vec<RunColumn> {
        vec![
            RunColumn {
                name: "a".to_owned(),
                dir: "runs/a".to_owned(),
                rows: vec![
                    row("x", 3, EvalState::Resolved),
                    row("y", 5, EvalState::Unresolved),
                ],
            },
            RunColumn {
                name: "b".to_owned(),
                dir: "runs/b".to_owned(),
                rows: vec![
                    row("x", 4, EvalState::Unresolved),
                    row("y", 6, EvalState::Resolved),
                    row("z", 1, EvalState::Resolved),
                ],
            },
        ]
    }

    #[test]
    fn gained_and_lost_count_only_instances_both_runs_hold() {
        let runs = runs();
        assert_eq!(
            gained_lost(&runs[0].rows, &runs[1].rows),
            (vec!["y".to_owned()], vec!["x".to_owned()])
        );
    }

    #[test]
    fn the_spread_is_over_runs_and_the_interval_pooled() {
        let runs = runs();
        let totals: Vec<RunTotals> = runs.iter().map(|r| totals(&r.rows)).collect();
        assert_eq!(totals[1].resolved, 2);
        assert_eq!(totals[1].evaluated, 3);
        assert_eq!(totals[1].steps, 11);
        let (low, high, mean, (ci_low, ci_high)) = spread(&totals).unwrap();
        assert_eq!((low, high), (0.5, 2.0 / 3.0));
        assert!((mean - 7.0 / 12.0).abs() < 1e-12);
        assert_eq!((ci_low, ci_high), wilson_interval(3, 5));
        assert_eq!(spread(&[RunTotals::default()]), None);
    }

    #[test]
    fn the_page_has_a_column_per_run_and_a_row_per_instance() {
        let html = render(&runs());
        assert!(html.starts_with("<h1>2 runs side by side</h1>"));
        assert!(html.contains("<tr><th>resolved</th><td class=\"num\">1 / 2 (50.0%)</td><td class=\"num\">2 / 3 (66.7%)</td></tr>"));
        assert!(
            html.contains(
                "<tr><th>steps</th><td class=\"num\">8</td><td class=\"num\">11</td></tr>"
            )
        );
        assert!(html.contains(
            "<tr><th>cost</th><td class=\"num\">$1.00</td><td class=\"num\">$1.50</td></tr>"
        ));
        assert!(html.contains("<p class=\"spread\">resolve rate over the runs: 50.0%–66.7% (mean 58.3%); pooled: 60.0% · 95% Wilson interval 23.1%–88.2%</p>"), "{html}");
        assert!(html.contains("<td class=\"gained\">1 <a class=\"pair\" href=\"across/y.html\">y</a></td><td class=\"lost\">1 <a class=\"pair\" href=\"across/x.html\">x</a></td>"));
        assert!(html.contains("<td class=\"muted\">not in this run</td>"));
        assert!(html.contains("<a href=\"c/b/r1/i/z.html\">"));
        assert_eq!(html.matches("<div class=\"plots\">").count(), 2);
    }
}
