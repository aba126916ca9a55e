//! The run view: one row per instance (exit status, resolved, steps, cost, tokens, episode time,
//! lint rejections, format errors, patch size) under the run's totals. The page's script sorts
//! by any column and filters by text or `column:value`; every cell is plain server-rendered
//! HTML, so the page works without the script too.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::html::{encode_segment, escape, push_escaped};
use super::source::{EvalState, Row};
use super::summary::Summary;

/// What the run view shows above its table.
#[derive(Debug, Clone, Default)]
pub struct RunHeader {
    /// The heading (the directory).
    pub title: String,
    /// Lines under it: the evaluation used, the model, the run id.
    pub notes: Vec<String>,
}

/// `12.3 s`, `4:05`, `1:02:03`.
pub fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let total = seconds.round() as u64;
    let (hours, minutes, secs) = (total / 3600, total % 3600 / 60, total % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{secs:02}")
    } else {
        format!("{minutes}:{secs:02}")
    }
}

/// `39,826`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, c) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` percent-encoded for a URL's query (everything but ASCII letters, digits, `-_.~()`
/// and `:`).
fn query_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~():".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The badge of an exit status (`running` while there is none): a submission (aci's
/// `submitted…`, mini-swe-agent's `Submitted`) or a failure.
pub fn exit_badge(status: Option<&str>) -> String {
    match status {
        None => "<span class=\"badge\">running</span>".to_owned(),
        Some(status) => {
            let class = if status.to_ascii_lowercase().starts_with("submitted") {
                "badge submitted"
            } else {
                "badge failed"
            };
            format!("<span class=\"{class}\">{}</span>", escape(status))
        }
    }
}

/// The badge of an evaluation outcome (empty when not evaluated).
pub fn eval_badge(state: &EvalState) -> String {
    let class = match state {
        EvalState::NotEvaluated => return String::new(),
        EvalState::Resolved => "resolved",
        EvalState::Unresolved | EvalState::EmptyPatch => "unresolved",
        EvalState::Error(_) => "error",
    };
    let title = match state {
        EvalState::Error(Some(reason)) => format!(" title=\"{}\"", escape(reason)),
        _ => String::new(),
    };
    format!(
        "<span class=\"badge {class}\"{title}>{}</span>",
        state.label()
    )
}

fn eval_order(state: &EvalState) -> i32 {
    match state {
        EvalState::Resolved => 3,
        EvalState::Unresolved => 2,
        EvalState::EmptyPatch => 1,
        EvalState::Error(_) => 0,
        EvalState::NotEvaluated => -1,
    }
}

/// The episode time cell (the agent's loop, without the set-up): `info.wall_time`, or at least the commands' time when a trajectory
/// does not record it (SWE-agent's).
pub fn wall_cell(summary: &Summary) -> (f64, String) {
    match summary.wall_time {
        Some(seconds) => (seconds, duration(seconds)),
        None if summary.execution_time > 0.0 => (
            summary.execution_time,
            format!(
                "<span class=\"muted\" title=\"no episode time recorded; the commands alone took this long\">≥ {}</span>",
                duration(summary.execution_time)
            ),
        ),
        None => (0.0, "—".to_owned()),
    }
}

const COLUMNS: [(&str, &str, bool); 10] = [
    ("id", "instance", false),
    ("exit", "exit status", false),
    ("resolved", "resolved", false),
    ("steps", "steps", true),
    ("cost", "cost", true),
    ("tokens", "tokens (sent / received)", true),
    ("wall", "episode time", true),
    ("lint", "lint rejections", true),
    ("format", "format errors", true),
    ("patch", "patch", true),
];

fn push_number_cell(out: &mut String, value: f64, text: &str) {
    let _ = write!(out, "<td class=\"num\" data-v=\"{value}\">{text}</td>");
}

fn push_row(out: &mut String, row: &Row, link_dir: &str) {
    let href = format!("{link_dir}{}.html", encode_segment(&row.id));
    out.push_str("<tr><td class=\"id\"><a href=\"");
    push_escaped(out, &href);
    out.push_str("\">");
    push_escaped(out, &row.id);
    out.push_str("</a></td><td>");
    match (&row.summary, &row.unreadable) {
        (_, Some(reason)) => {
            let _ = write!(
                out,
                "<span class=\"badge failed\" title=\"{}\">unreadable</span>",
                escape(reason)
            );
        }
        (Some(summary), None) => out.push_str(&exit_badge(summary.exit_status.as_deref())),
        (None, None) => {}
    }
    let _ = write!(
        out,
        "</td><td data-v=\"{}\">{}</td>",
        eval_order(&row.eval),
        eval_badge(&row.eval)
    );
    let Some(summary) = &row.summary else {
        out.push_str(&"<td class=\"num\" data-v=\"-1\"></td>".repeat(7));
        out.push_str("</tr>\n");
        return;
    };
    push_number_cell(out, summary.steps as f64, &summary.steps.to_string());
    push_number_cell(out, summary.cost, &format!("${:.2}", summary.cost));
    push_number_cell(
        out,
        (summary.tokens_sent + summary.tokens_received) as f64,
        &format!(
            "{} / {}",
            thousands(summary.tokens_sent),
            thousands(summary.tokens_received)
        ),
    );
    let (wall, wall_text) = wall_cell(summary);
    push_number_cell(out, wall, &wall_text);
    push_number_cell(
        out,
        summary.lint_rejections as f64,
        &summary.lint_rejections.to_string(),
    );
    push_number_cell(
        out,
        summary.format_errors as f64,
        &summary.format_errors.to_string(),
    );
    match summary.patch_lines {
        Some((added, removed)) => push_number_cell(
            out,
            (added + removed) as f64,
            &format!("+{added} −{removed}"),
        ),
        None => push_number_cell(out, -1.0, "none"),
    }
    out.push_str("</tr>\n");
}

fn push_total(out: &mut String, label: &str, value: &str) {
    out.push_str("<div><b>");
    out.push_str(value);
    out.push_str("</b>");
    out.push_str(label);
    out.push_str("</div>");
}

fn push_totals(out: &mut String, rows: &[Row]) {
    let summaries: Vec<&Summary> = rows.iter().filter_map(|r| r.summary.as_deref()).collect();
    let evaluated = rows
        .iter()
        .filter(|r| r.eval != EvalState::NotEvaluated)
        .count();
    let resolved = rows
        .iter()
        .filter(|r| r.eval == EvalState::Resolved)
        .count();
    out.push_str("<div class=\"totals\">");
    push_total(out, "instances", &rows.len().to_string());
    if evaluated > 0 {
        let pct = 100.0 * resolved as f64 / rows.len().max(1) as f64;
        push_total(
            out,
            &format!("resolved ({evaluated} evaluated)"),
            &format!("{resolved} ({pct:.1}%)"),
        );
    }
    let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
    for summary in &summaries {
        *statuses
            .entry(summary.exit_status.as_deref().unwrap_or("running"))
            .or_default() += 1;
    }
    let statuses: Vec<String> = statuses
        .iter()
        .map(|(status, n)| {
            format!(
                "<a href=\"?q=exit:{}\">{}</a>: {n}",
                query_encode(&status.replace(' ', "")),
                escape(status)
            )
        })
        .collect();
    push_total(out, "exit statuses", &statuses.join(", "));
    let sum = |f: fn(&Summary) -> f64| summaries.iter().map(|s| f(s)).sum::<f64>();
    push_total(out, "cost", &format!("${:.2}", sum(|s| s.cost)));
    push_total(
        out,
        "tokens sent / received",
        &format!(
            "{} / {}",
            thousands(sum(|s| s.tokens_sent as f64) as u64),
            thousands(sum(|s| s.tokens_received as f64) as u64)
        ),
    );
    let steps = sum(|s| s.steps as f64);
    push_total(
        out,
        "steps (mean)",
        &format!("{:.1}", steps / summaries.len().max(1) as f64),
    );
    let wall = sum(|s| s.wall_time.unwrap_or(s.execution_time));
    let approximate = summaries.iter().any(|s| s.wall_time.is_none());
    push_total(
        out,
        "episode time (sum)",
        &format!("{}{}", if approximate { "≥ " } else { "" }, duration(wall)),
    );
    push_total(
        out,
        "lint rejections",
        &format!("{:.0}", sum(|s| s.lint_rejections as f64)),
    );
    push_total(
        out,
        "format errors",
        &format!("{:.0}", sum(|s| s.format_errors as f64)),
    );
    out.push_str("</div>");
}

/// The body of the run view over `rows`, linking each instance to `{link_dir}<id>.html`.
pub fn render(header: &RunHeader, rows: &[Row], link_dir: &str) -> String {
    let mut out = String::with_capacity(600 * rows.len() + 4096);
    out.push_str("<h1>");
    push_escaped(&mut out, &header.title);
    out.push_str("</h1>");
    for note in &header.notes {
        out.push_str("<div class=\"muted\">");
        push_escaped(&mut out, note);
        out.push_str("</div>");
    }
    push_totals(&mut out, rows);
    if rows.iter().any(|row| row.summary.is_some()) {
        out.push_str(
            "<details class=\"section\" open><summary>plots</summary><div class=\"body\">",
        );
        out.push_str(&super::plots::run_plots(rows));
        out.push_str("</div></details>");
    }
    let _ = write!(
        out,
        "<div class=\"controls\"><input id=\"filter\" type=\"search\" placeholder=\"filter: text, or column:value (exit:submitted resolved:unresolved)\" \
         aria-label=\"filter\"><span class=\"muted\"><span id=\"shown\">{}</span> of {} shown · click a heading to sort</span></div>",
        rows.len(),
        rows.len()
    );
    out.push_str("<table class=\"grid\" id=\"runs\"><thead><tr>");
    for (key, label, numeric) in COLUMNS {
        let _ = write!(
            out,
            "<th data-col=\"{key}\"{}>{label}</th>",
            if numeric { " class=\"num\"" } else { "" }
        );
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in rows {
        push_row(&mut out, row, link_dir);
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn row(id: &str, summary: Option<Summary>, eval: EvalState) -> Row {
        Row {
            id: id.to_owned(),
            summary: summary.map(Arc::new),
            unreadable: None,
            eval,
        }
    }

    #[test]
    fn numbers_read_the_way_people_write_them() {
        assert_eq!(duration(5.04), "5.0 s");
        assert_eq!(duration(245.0), "4:05");
        assert_eq!(duration(3723.4), "1:02:03");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(39826), "39,826");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn a_row_holds_every_column_and_links_its_instance() {
        let summary = Summary {
            exit_status: Some("submitted".to_owned()),
            steps: 9,
            cost: 0.41306,
            tokens_sent: 39826,
            tokens_received: 493,
            api_calls: 3,
            wall_time: Some(17.25),
            execution_time: 1.0,
            lint_rejections: 1,
            format_errors: 2,
            nudges: 0,
            patch_lines: Some((3, 2)),
            error: None,
        };
        let rows = vec![
            row("demo__moneyfmt-1", Some(summary), EvalState::Resolved),
            row(
                "<img src=x onerror=alert(1)>",
                None,
                EvalState::Error(Some("apply \"failed\"".to_owned())),
            ),
        ];
        let header = RunHeader {
            title: "runs/<demo>".to_owned(),
            notes: vec!["evaluation: eval".to_owned()],
        };
        let html = render(&header, &rows, "i/");
        assert!(html.contains("<h1>runs/&lt;demo&gt;</h1>"));
        assert!(html.contains(
            "<tr><td class=\"id\"><a href=\"i/demo__moneyfmt-1.html\">demo__moneyfmt-1</a></td>\
             <td><span class=\"badge submitted\">submitted</span></td>\
             <td data-v=\"3\"><span class=\"badge resolved\">resolved</span></td>\
             <td class=\"num\" data-v=\"9\">9</td><td class=\"num\" data-v=\"0.41306\">$0.41</td>\
             <td class=\"num\" data-v=\"40319\">39,826 / 493</td><td class=\"num\" data-v=\"17.25\">17.2 s</td>\
             <td class=\"num\" data-v=\"1\">1</td><td class=\"num\" data-v=\"2\">2</td>\
             <td class=\"num\" data-v=\"5\">+3 −2</td></tr>"
        ), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("href=\"i/~3Cimg~20src~3Dx~20onerror~3Dalert~281~29~3E.html\">&lt;img src=x onerror=alert(1)&gt;</a>"));
        assert!(html.contains("title=\"apply &quot;failed&quot;\">error</span>"));
        // Totals: one of two resolved, one exit status.
        assert!(
            html.contains("<div><b>1 (50.0%)</b>resolved (2 evaluated)</div>"),
            "{html}"
        );
        assert!(html.contains("<a href=\"?q=exit:submitted\">submitted</a>: 1"));
        assert!(html.contains("<span id=\"shown\">2</span> of 2 shown"));
    }

    #[test]
    fn a_trajectory_without_wall_time_shows_its_commands_time_as_a_lower_bound() {
        let summary = Summary {
            execution_time: 3.5,
            ..Summary::default()
        };
        assert_eq!(wall_cell(&summary).0, 3.5);
        assert!(wall_cell(&summary).1.contains("≥ 3.5 s"));
        assert_eq!(wall_cell(&Summary::default()).1, "—");
    }
}
