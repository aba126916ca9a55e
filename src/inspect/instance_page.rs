//! The instance view: the outcome and counters, the prompts (the demonstration folded), every
//! turn, the final patch in colour, and the evaluation (FAIL_TO_PASS and PASS_TO_PASS test by
//! test, and the test output). `j`/`k` step between turns, `n`/`p` between instances. Also the
//! side-by-side view of one instance under two configurations.

use std::fmt::Write as _;

use serde_json::Value;

use super::diff::render_patch;
use super::evidence::{LogFindings, failing_tests, render_cause, render_evidence, render_failing};
use super::html::{escape, push_escaped};
use super::run_page::{duration, eval_badge, exit_badge, thousands, wall_cell};
use super::source::EvalState;
use super::summary::Summary;
use super::trajectory::{Keep, ReadError, Text, TextKey, TrajectoryView, read};
use super::turns::{push_linkified_block, push_text_block, render_turns};

/// Everything the instance view shows, as read from disk.
#[derive(Debug, Clone, Default)]
pub struct InstanceData {
    /// The instance id.
    pub id: String,
    /// The trajectory as the page shows it, when there is one and it parsed.
    pub traj: Option<TrajectoryView>,
    /// Its summary (from the same pass).
    pub summary: Option<Summary>,
    /// Why the trajectory could not be read.
    pub traj_error: Option<String>,
    /// The evaluation's outcome.
    pub eval: EvalState,
    /// The per-instance evaluation report (the entry for this instance).
    pub report: Option<Value>,
    /// The tests' output.
    pub test_output: Option<Text>,
    /// The final patch: the trajectory's submission, or the patch files beside it.
    pub patch: Option<Text>,
    /// The failing tests' and the canaries' lines of the test output.
    pub findings: Option<LogFindings>,
}

impl InstanceData {
    /// Reads the trajectory out of `bytes`.
    pub fn with_trajectory(self, bytes: &[u8]) -> Self {
        self.with_view(read(bytes, Keep::View))
    }

    /// Takes the trajectory as [`super::trajectory::read`] gave it.
    pub fn with_view(mut self, view: Result<TrajectoryView, ReadError>) -> Self {
        match view {
            Ok(view) if view.has_steps => {
                self.summary = Some(view.summary.clone());
                if self.patch.is_none() {
                    self.patch.clone_from(&view.submission);
                }
                self.traj = Some(view);
            }
            Ok(_) => {
                self.traj_error =
                    Some("not a trajectory: no `trajectory` or `messages` list".to_owned())
            }
            Err(error) => self.traj_error = Some(error.to_string()),
        }
        self
    }
}

/// Links around the instance view.
#[derive(Debug, Clone, Default)]
pub struct Nav {
    /// The previous instance's page.
    pub prev: Option<String>,
    /// The next instance's page.
    pub next: Option<String>,
    /// Raw files (label, link): only when served.
    pub raw: Vec<(String, String)>,
    /// The relative link of the instance's folder of full texts (`<id>/`).
    pub texts: String,
}

fn push_fold(out: &mut String, title: &str, open: bool, body: &str) {
    let _ = write!(
        out,
        "<details class=\"section\"{}><summary>{title}</summary><div class=\"body\">",
        if open { " open" } else { "" }
    );
    out.push_str(body);
    out.push_str("</div></details>");
}

/// A text block whose full text is the instance's text `key`.
fn text_block(text: &Text, class: &str, texts: &str, key: TextKey) -> String {
    let mut out = String::new();
    push_text_block(&mut out, text, class, &format!("{texts}{}.txt", key.name()));
    out
}

fn push_counters(out: &mut String, data: &InstanceData) {
    let eval = eval_badge(&data.eval);
    let eval = if eval.is_empty() {
        "—".to_owned()
    } else {
        eval
    };
    let mut totals = vec![("exit status", String::new()), ("evaluation", eval)];
    match &data.summary {
        Some(summary) => {
            totals[0].1 = exit_badge(summary.exit_status.as_deref());
            totals.extend([
                ("steps", summary.steps.to_string()),
                ("cost", format!("${:.2}", summary.cost)),
                (
                    "tokens sent / received",
                    format!(
                        "{} / {}",
                        thousands(summary.tokens_sent),
                        thousands(summary.tokens_received)
                    ),
                ),
                ("episode time", wall_cell(summary).1),
                ("commands' time", duration(summary.execution_time)),
                ("lint rejections", summary.lint_rejections.to_string()),
                ("format errors", summary.format_errors.to_string()),
                ("nudges", summary.nudges.to_string()),
            ]);
        }
        // No trajectory (an evaluation on its own, or one that could not be read).
        None => {
            totals.remove(0);
        }
    }
    out.push_str("<div class=\"totals\">");
    for (label, value) in totals {
        let _ = write!(out, "<div><b>{value}</b>{label}</div>");
    }
    out.push_str("</div>");
}

/// The links to the previous and next instance, the keys, and the raw files.
pub fn render_nav(nav: &Nav) -> String {
    let mut out = String::new();
    push_nav(&mut out, nav);
    out
}

fn push_nav(out: &mut String, nav: &Nav) {
    out.push_str("<div class=\"keys\">");
    match &nav.prev {
        Some(href) => {
            let _ = write!(
                out,
                "<a id=\"prev-instance\" href=\"{}\">← previous</a>",
                escape(href)
            );
        }
        None => out.push_str("<span class=\"muted\">← previous</span>"),
    }
    out.push_str(" · ");
    match &nav.next {
        Some(href) => {
            let _ = write!(
                out,
                "<a id=\"next-instance\" href=\"{}\">next →</a>",
                escape(href)
            );
        }
        None => out.push_str("<span class=\"muted\">next →</span>"),
    }
    out.push_str(
        " · keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous turn, <kbd>n</kbd>/<kbd>p</kbd> next/previous instance",
    );
    for (label, href) in &nav.raw {
        let _ = write!(out, " · <a href=\"{}\">{}</a>", escape(href), escape(label));
    }
    out.push_str("</div>");
}

/// The tests table lists every failure, and passed tests until it has this many rows.
const MAX_TEST_ROWS: usize = 300;

fn tests_table(report: &Value) -> String {
    let mut out = String::from(
        "<table class=\"grid tests\"><thead><tr><th>group</th><th>test</th><th>result</th></tr></thead><tbody>",
    );
    let mut rows = 0;
    let mut passed_left = 0;
    for group in [
        "FAIL_TO_PASS",
        "PASS_TO_PASS",
        "FAIL_TO_FAIL",
        "PASS_TO_FAIL",
    ] {
        let Some(status) = report.pointer(&format!("/tests_status/{group}")) else {
            continue;
        };
        for (key, class, label) in [("failure", "fail", "failed"), ("success", "pass", "passed")] {
            for test in status
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if class == "pass" && rows >= MAX_TEST_ROWS {
                    passed_left += 1;
                    continue;
                }
                let _ = write!(
                    out,
                    "<tr><td>{group}</td><td class=\"id\">{}</td><td class=\"{class}\">{label}</td></tr>",
                    escape(test)
                );
                rows += 1;
            }
        }
    }
    out.push_str("</tbody></table>");
    if rows == 0 {
        return "<p class=\"muted\">no test results in the report</p>".to_owned();
    }
    if passed_left > 0 {
        let _ = write!(
            out,
            "<p class=\"muted\">and {passed_left} more passed tests, listed in the evaluation's report.json</p>"
        );
    }
    out
}

fn push_evaluation(out: &mut String, data: &InstanceData, texts: &str) {
    out.push_str("<h2>Evaluation</h2>");
    if data.eval == EvalState::NotEvaluated && data.report.is_none() {
        out.push_str("<p class=\"muted\">not evaluated (no report for this instance)</p>");
        return;
    }
    let _ = write!(out, "<p>{}", eval_badge(&data.eval));
    let Some(report) = &data.report else {
        out.push_str(" <span class=\"muted\">no per-instance report.json; the outcome comes from the evaluation's summary</span></p>");
        if let EvalState::Error(Some(reason)) = &data.eval {
            let _ = write!(out, "<div class=\"error-box\">{}</div>", escape(reason));
        }
        return;
    };
    let flag = |key: &str| report.get(key).and_then(Value::as_bool);
    if flag("patch_successfully_applied") == Some(false) {
        out.push_str(" <span class=\"badge error\">patch not applied</span>");
    }
    if flag("timed_out") == Some(true) {
        out.push_str(" <span class=\"badge error\">timed out</span>");
    }
    out.push_str("</p>");
    out.push_str(&render_cause(report));
    if let Some(text) = report.get("error").and_then(Value::as_str) {
        let _ = write!(
            out,
            "<div class=\"error-box\"><b>error</b>: {}</div>",
            escape(text)
        );
    }
    out.push_str(&render_evidence(report, data.findings.as_ref()));
    if let Some(findings) = &data.findings {
        out.push_str(&render_failing(findings, failing_tests(report).len()));
    }
    out.push_str(&tests_table(report));
    if let Some(output) = &data.test_output {
        // Lines as `str::lines` counts them: a final newline ends the last line.
        let lines = output.lines - u64::from(output.tail().ends_with('\n'));
        push_fold(
            out,
            &format!("test output ({lines} lines)"),
            false,
            &text_block(output, "obs", texts, TextKey::TestOutput),
        );
    }
}

fn push_patch(out: &mut String, patch: Option<&Text>, texts: &str) {
    out.push_str("<h2>Final patch</h2>");
    match patch {
        Some(patch) => match patch.whole() {
            Some(whole) => out.push_str(&render_patch(whole)),
            None => out.push_str(&text_block(patch, "diff patch", texts, TextKey::Patch)),
        },
        None => out.push_str("<p class=\"muted\">no patch</p>"),
    }
}

fn push_prompts(out: &mut String, traj: &TrajectoryView, texts: &str) {
    if let Some(system) = &traj.system {
        push_fold(
            out,
            "system prompt",
            false,
            &text_block(system, "obs", texts, TextKey::System),
        );
    }
    if let Some(demo) = &traj.demo {
        push_fold(
            out,
            &format!("demonstration ({} messages)", traj.demo_messages),
            false,
            &text_block(demo, "obs", texts, TextKey::Demo),
        );
    }
    if let Some(task) = &traj.task {
        let mut body = String::new();
        let href = format!("{texts}{}.txt", TextKey::Task.name());
        push_linkified_block(&mut body, task, "obs", &href);
        push_fold(out, "task", true, &body);
    }
}

/// The body of the instance view.
pub fn render(data: &InstanceData, nav: &Nav) -> String {
    let mut out = String::new();
    out.push_str("<h1>");
    push_escaped(&mut out, &data.id);
    out.push_str("</h1>");
    push_nav(&mut out, nav);
    push_counters(&mut out, data);
    if let Some(error) = &data.traj_error {
        let _ = write!(out, "<div class=\"error-box\">{}</div>", escape(error));
    }
    if let Some(error) = data.summary.as_ref().and_then(|s| s.error.as_deref()) {
        let _ = write!(
            out,
            "<div class=\"error-box\"><b>instance error</b>: {}</div>",
            escape(error)
        );
    }
    if let Some(traj) = &data.traj {
        push_prompts(&mut out, traj, &nav.texts);
        let _ = write!(out, "<h2>Turns ({})</h2>", traj.summary.steps);
        out.push_str(&render_turns(
            &traj.steps,
            traj.summary.steps,
            "",
            &nav.texts,
        ));
    }
    push_patch(&mut out, data.patch.as_ref(), &nav.texts);
    push_evaluation(&mut out, data, &nav.texts);
    out
}

/// One side of the comparison view: a configuration's run of the instance; `texts` is the
/// relative link of that run's folder of the instance's full texts.
pub fn render_column(
    data: &InstanceData,
    config: &str,
    link: &str,
    prefix: &str,
    texts: &str,
) -> String {
    let mut out = String::new();
    let summary = data.summary.clone().unwrap_or_default();
    let _ = write!(
        out,
        "<h2><a href=\"{}\">{}</a></h2><p>{} {} · {} steps · {} lint rejections</p>",
        escape(link),
        escape(config),
        exit_badge(summary.exit_status.as_deref()),
        eval_badge(&data.eval),
        summary.steps,
        summary.lint_rejections
    );
    if let Some(error) = &data.traj_error {
        let _ = write!(out, "<div class=\"error-box\">{}</div>", escape(error));
    }
    if let Some(traj) = &data.traj {
        out.push_str(&render_turns(
            &traj.steps,
            traj.summary.steps,
            prefix,
            texts,
        ));
    }
    push_patch(&mut out, data.patch.as_ref(), texts);
    out
}

#[cfg(test)]
#[path = "instance_page_tests.rs"]
mod tests;
