//! A run's plots as inline SVG (no script, no external asset): the distribution of steps, cost
//! and episode time as histograms, resolved against steps as dots, and the exit statuses as
//! bars. Pure: numbers in, markup out; every bar and dot carries a `<title>` with its numbers.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::html::push_escaped;
use super::run_page::{duration, wall_cell};
use super::source::{EvalState, Row};

const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 34.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 30.0;
/// At most this many bins in a histogram.
pub const MAX_BINS: usize = 12;

fn open_svg(out: &mut String, class: &str, title: &str, height: f64) {
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot {class}\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" role=\"img\" aria-label=\""
    );
    push_escaped(out, title);
    let _ = write!(
        out,
        "\"><text x=\"{LEFT:.0}\" y=\"14\" font-size=\"12\" font-weight=\"600\" fill=\"#1b1f24\">"
    );
    push_escaped(out, title);
    out.push_str("</text>");
}

/// The bins of `values`: `(low, high, count)`, at most [`MAX_BINS`], each as wide; one bin
/// when every value is the same.
pub fn bins(values: &[f64]) -> Vec<(f64, f64, usize)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (Some(low), Some(high)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) else {
        return Vec::new();
    };
    if high <= low {
        return vec![(low, high, finite.len())];
    }
    let count = finite.len().clamp(1, MAX_BINS);
    let width = (high - low) / count as f64;
    let mut out: Vec<(f64, f64, usize)> = (0..count)
        .map(|i| (low + width * i as f64, low + width * (i + 1) as f64, 0))
        .collect();
    for value in finite {
        let index = (((value - low) / width) as usize).min(count - 1);
        out[index].2 += 1;
    }
    out
}

/// A histogram of `values` titled `title`, each bin's range written by `label`.
pub fn histogram(class: &str, title: &str, values: &[f64], label: fn(f64) -> String) -> String {
    let mut out = String::new();
    open_svg(&mut out, class, title, HEIGHT);
    let bins = bins(values);
    let top = bins.iter().map(|b| b.2).max().unwrap_or(0).max(1);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let base = TOP + plot_h;
    let _ = write!(
        out,
        "<line x1=\"{LEFT:.0}\" y1=\"{base:.0}\" x2=\"{:.0}\" y2=\"{base:.0}\" stroke=\"#8c959f\"/>\
         <text x=\"{:.0}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"end\" fill=\"#5d6670\">{top}</text>",
        WIDTH - RIGHT,
        LEFT - 4.0,
        TOP + 8.0
    );
    if bins.is_empty() {
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" font-size=\"11\" fill=\"#5d6670\">no data</text></svg>",
            LEFT + 8.0,
            TOP + plot_h / 2.0
        );
        return out;
    }
    let bar_w = plot_w / bins.len() as f64;
    for (index, (low, high, count)) in bins.iter().enumerate() {
        let h = plot_h * *count as f64 / top as f64;
        let x = LEFT + bar_w * index as f64;
        let _ = write!(
            out,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#3b6ea8\"><title>",
            x + 1.0,
            base - h,
            (bar_w - 2.0).max(1.0)
        );
        let range = if bins.len() == 1 {
            label(*low)
        } else {
            format!("{}–{}", label(*low), label(*high))
        };
        push_escaped(&mut out, &format!("{range}: {count} instances"));
        out.push_str("</title></rect>");
    }
    let (first, last) = (bins[0].0, bins[bins.len() - 1].1);
    let _ = write!(
        out,
        "<text x=\"{LEFT:.0}\" y=\"{:.0}\" font-size=\"10\" fill=\"#5d6670\">",
        base + 14.0
    );
    push_escaped(&mut out, &label(first));
    let _ = write!(
        out,
        "</text><text x=\"{:.0}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"end\" fill=\"#5d6670\">",
        WIDTH - RIGHT,
        base + 14.0
    );
    push_escaped(&mut out, &label(last));
    out.push_str("</text></svg>");
    out
}

/// The three rows of the resolved-against-steps plot, top to bottom.
const OUTCOMES: [(&str, &str); 3] = [
    ("resolved", "#1a7f37"),
    ("unresolved", "#b42318"),
    ("not graded", "#8c959f"),
];

fn outcome_row(state: &EvalState) -> usize {
    match state {
        EvalState::Resolved => 0,
        EvalState::Unresolved | EvalState::EmptyPatch => 1,
        EvalState::NotEvaluated | EvalState::Error(_) => 2,
    }
}

/// Each instance as a dot: its steps across, resolved, unresolved or not graded down.
pub fn resolved_vs_steps(points: &[(&str, usize, &EvalState)]) -> String {
    let mut out = String::new();
    open_svg(&mut out, "resolved-steps", "resolved against steps", HEIGHT);
    let high = points.iter().map(|p| p.1).max().unwrap_or(0).max(1);
    let plot_w = WIDTH - LEFT - RIGHT - 40.0;
    let left = LEFT + 40.0;
    let row_h = (HEIGHT - TOP - BOTTOM) / 3.0;
    for (index, (label, colour)) in OUTCOMES.iter().enumerate() {
        let y = TOP + row_h * (index as f64 + 0.5);
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"{colour}\">{label}</text>\
             <line x1=\"{left:.0}\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" stroke=\"#d8dde3\"/>",
            left - 4.0,
            y + 3.0,
            WIDTH - RIGHT
        );
    }
    for (id, steps, state) in points {
        let row = outcome_row(state);
        let x = left + plot_w * *steps as f64 / high as f64;
        let y = TOP + row_h * (row as f64 + 0.5);
        let _ = write!(
            out,
            "<circle class=\"dot\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.6\"><title>",
            OUTCOMES[row].1
        );
        push_escaped(
            &mut out,
            &format!("{id}: {steps} steps, {}", OUTCOMES[row].0),
        );
        out.push_str("</title></circle>");
    }
    let base = HEIGHT - BOTTOM;
    let _ = write!(
        out,
        "<text x=\"{left:.0}\" y=\"{:.0}\" font-size=\"10\" fill=\"#5d6670\">0</text>\
         <text x=\"{:.0}\" y=\"{:.0}\" font-size=\"10\" text-anchor=\"end\" fill=\"#5d6670\">{high} steps</text></svg>",
        base + 14.0,
        WIDTH - RIGHT,
        base + 14.0
    );
    out
}

/// Horizontal bars, one per `(label, count)`.
pub fn bars(class: &str, title: &str, counts: &[(String, usize)]) -> String {
    let mut out = String::new();
    let row_h = 18.0;
    let height = TOP + row_h * counts.len().max(1) as f64 + 8.0;
    open_svg(&mut out, class, title, height);
    let top = counts.iter().map(|c| c.1).max().unwrap_or(0).max(1);
    let left = 110.0;
    let plot_w = WIDTH - left - RIGHT - 30.0;
    for (index, (label, count)) in counts.iter().enumerate() {
        let y = TOP + row_h * index as f64;
        let w = plot_w * *count as f64 / top as f64;
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#1b1f24\">",
            left - 4.0,
            y + 12.0
        );
        push_escaped(&mut out, label);
        let _ = write!(
            out,
            "</text><rect class=\"bar\" x=\"{left:.0}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"#3b6ea8\"><title>",
            y + 2.0,
            row_h - 4.0
        );
        push_escaped(&mut out, &format!("{label}: {count}"));
        let _ = write!(
            out,
            "</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#5d6670\">{count}</text>",
            left + w + 4.0,
            y + 12.0
        );
    }
    out.push_str("</svg>");
    out
}

fn steps_label(value: f64) -> String {
    format!("{value:.0}")
}

fn cost_label(value: f64) -> String {
    format!("${value:.2}")
}

/// A run's five plots: steps, cost and episode time, resolved against steps, exit statuses.
pub fn run_plots(rows: &[Row]) -> String {
    let summaries: Vec<(&Row, &super::summary::Summary)> = rows
        .iter()
        .filter_map(|row| Some((row, row.summary.as_deref()?)))
        .collect();
    let steps: Vec<f64> = summaries.iter().map(|(_, s)| s.steps as f64).collect();
    let cost: Vec<f64> = summaries.iter().map(|(_, s)| s.cost).collect();
    let wall: Vec<f64> = summaries.iter().map(|(_, s)| wall_cell(s).0).collect();
    let points: Vec<(&str, usize, &EvalState)> = summaries
        .iter()
        .map(|(row, s)| (row.id.as_str(), s.steps, &row.eval))
        .collect();
    let mut exits: BTreeMap<String, usize> = BTreeMap::new();
    for (_, summary) in &summaries {
        let status = summary.exit_status.as_deref().unwrap_or("running");
        *exits.entry(status.to_owned()).or_default() += 1;
    }
    let mut exits: Vec<(String, usize)> = exits.into_iter().collect();
    exits.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = String::from("<div class=\"plots\">");
    out.push_str(&histogram("steps", "steps", &steps, steps_label));
    out.push_str(&histogram("cost", "cost", &cost, cost_label));
    out.push_str(&histogram("wall", "episode time", &wall, duration));
    out.push_str(&resolved_vs_steps(&points));
    out.push_str(&bars("exits", "exit statuses", &exits));
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_in_equal_bins_the_last_one_closed() {
        assert_eq!(
            bins(&[1.0, 2.0, 3.0, 4.0]),
            vec![
                (1.0, 1.75, 1),
                (1.75, 2.5, 1),
                (2.5, 3.25, 1),
                (3.25, 4.0, 1)
            ]
        );
        assert_eq!(bins(&[5.0, 5.0]), vec![(5.0, 5.0, 2)]);
        assert_eq!(bins(&[]), vec![]);
        let many: Vec<f64> = (0..100).map(f64::from).collect();
        let binned = bins(&many);
        assert_eq!(binned.len(), MAX_BINS);
        assert_eq!(binned.iter().map(|b| b.2).sum::<usize>(), 100);
    }

    #[test]
    fn a_histogram_has_a_bar_per_bin_with_its_count() {
        let svg = histogram("steps", "steps", &[3.0, 3.0, 9.0], steps_label);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot steps\""));
        assert_eq!(svg.matches("<rect class=\"bar\"").count(), 3);
        assert!(svg.contains("<title>3–5: 2 instances</title>"));
        assert!(svg.contains("<title>5–7: 0 instances</title>"));
        assert!(svg.contains("<title>7–9: 1 instances</title>"));
        // The tallest bar fills the plot's height.
        assert!(svg.contains("height=\"118.0\" fill=\"#3b6ea8\"><title>3–5"));
        assert!(svg.ends_with("</svg>"));
        let empty = histogram("cost", "cost", &[], cost_label);
        assert!(empty.contains(">no data</text>"));
    }

    #[test]
    fn each_instance_is_a_dot_in_its_outcome_row() {
        let resolved = EvalState::Resolved;
        let error = EvalState::Error(None);
        let svg = resolved_vs_steps(&[("a<b>", 10, &resolved), ("c", 5, &error)]);
        assert!(svg.contains("<title>a&lt;b&gt;: 10 steps, resolved</title>"));
        assert!(svg.contains("cx=\"310.0\" cy=\"41.7\" r=\"4\" fill=\"#1a7f37\""));
        assert!(svg.contains("<title>c: 5 steps, not graded</title>"));
        assert!(svg.contains(">10 steps</text>"));
    }

    #[test]
    fn exit_statuses_are_bars_with_their_counts() {
        let svg = bars(
            "exits",
            "exit statuses",
            &[("submitted".to_owned(), 4), ("exit_cost".to_owned(), 1)],
        );
        assert!(svg.contains("<title>submitted: 4</title>"));
        assert!(svg.contains("<title>exit_cost: 1</title>"));
        assert!(svg.contains("width=\"170.0\" height=\"14.0\" fill=\"#3b6ea8\"><title>submitted"));
        assert!(svg.contains("width=\"42.5\" height=\"14.0\" fill=\"#3b6ea8\"><title>exit_cost"));
    }
}
