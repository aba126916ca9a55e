//! A trajectory's steps as HTML, turn by turn: the nudge that came with the request, the
//! thought, the action and the observation. Windows show as a code viewer, an edit as a diff
//! with its verdict (a lint rejection in red with its messages), a submitted patch in colour,
//! and answers the parser rejected (re-asks, never in the history) apart from the turns. Long
//! outputs are folded, and each turn is laid out only when it scrolls into view, so hundreds of
//! turns stay light.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::diff::{render_line_diff, render_patch, render_window};
use super::html::{push_escaped, push_linkified};
use super::observation::{
    RangeEdit, Rejection, Window, WithWindow, find_cat_n, find_window, range_edit, rejection,
    str_replace,
};

/// Outputs longer than this many lines show their start and fold the rest.
const FOLD_LINES: usize = 40;
/// How many lines of a folded output stay visible.
const PREVIEW_LINES: usize = 12;
/// Outputs longer than this many bytes are folded whatever their line count.
const FOLD_BYTES: usize = 6_000;

/// The fields of one step, each empty when absent or of another type.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The command that ran.
    pub action: &'a str,
    /// What it printed.
    pub observation: &'a str,
    /// The model's whole answer.
    pub response: &'a str,
    /// The answer without the command.
    pub thought: &'a str,
    /// Seconds the command took.
    pub execution_time: Option<f64>,
    /// The nudge sent with the request (aci).
    pub nudge: Option<&'a str>,
    /// Why the parser rejected the answer (aci): a re-ask.
    pub format_error: Option<&'a str>,
    /// `state` (an object, or a JSON string in v0).
    pub state: &'a Value,
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl<'a> Step<'a> {
    /// The step in a trajectory's `trajectory[]` entry.
    pub fn of(value: &'a Value) -> Self {
        static NULL: Value = Value::Null;
        Step {
            action: str_field(value, "action"),
            observation: str_field(value, "observation"),
            response: str_field(value, "response"),
            thought: str_field(value, "thought"),
            execution_time: value.get("execution_time").and_then(Value::as_f64),
            nudge: value.get("nudge").and_then(Value::as_str),
            format_error: value.get("format_error").and_then(Value::as_str),
            state: value.get("state").unwrap_or(&NULL),
        }
    }

    fn state_field(&self, key: &str) -> Option<String> {
        let state = match self.state {
            Value::String(text) => serde_json::from_str(text).ok()?,
            other => other.clone(),
        };
        state
            .get(key)
            .and_then(Value::as_str)
            .filter(|v| *v != "n/a")
            .map(str::to_owned)
    }
}

/// What the trajectory has shown of each file so far (line number → text), to show an edit
/// as a diff against the lines it replaced.
#[derive(Debug, Default)]
struct Files {
    known: HashMap<String, BTreeMap<usize, String>>,
}

impl Files {
    fn see(&mut self, window: &Window<'_>) {
        if window.path.is_empty() {
            return;
        }
        let lines = self.known.entry(window.path.to_owned()).or_default();
        if let Some(total) = window.total {
            lines.retain(|number, _| *number <= total);
        }
        for (number, text) in &window.lines {
            lines.insert(*number, (*text).to_owned());
        }
    }

    fn range(&self, path: &str, start: usize, end: usize) -> Option<Vec<(usize, String)>> {
        let lines = self.known.get(path)?;
        (start..=end)
            .map(|number| Some((number, lines.get(&number)?.clone())))
            .collect()
    }

    /// Shifts what is known of `path` past an applied edit.
    fn apply(&mut self, path: &str, edit: &RangeEdit<'_>) {
        let Some(lines) = self.known.get_mut(path) else {
            return;
        };
        let removed = edit.end + 1 - edit.start.min(edit.end + 1);
        let old = std::mem::take(lines);
        for (number, text) in old {
            if number < edit.start {
                lines.insert(number, text);
            } else if number > edit.end {
                lines.insert(number - removed + edit.lines.len(), text);
            }
        }
        for (offset, text) in edit.lines.iter().enumerate() {
            lines.insert(edit.start + offset, (*text).to_owned());
        }
    }
}

/// Appends `text` as a block, folding all but its first lines when it is long.
pub fn push_text_block(out: &mut String, text: &str, class: &str) {
    let lines = text.split('\n').count();
    out.push_str("<pre class=\"");
    out.push_str(class);
    out.push_str("\">");
    if lines <= FOLD_LINES && text.len() <= FOLD_BYTES {
        push_escaped(out, text);
        out.push_str("</pre>");
        return;
    }
    let cut = text
        .match_indices('\n')
        .nth(PREVIEW_LINES - 1)
        .map_or(text.len().min(FOLD_BYTES / 4), |(i, _)| i);
    let cut = (0..=cut.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    push_escaped(out, &text[..cut]);
    out.push_str("</pre><details class=\"fold\"><summary>");
    out.push_str(&format!(
        "show all {lines} lines ({} characters)",
        text.chars().count()
    ));
    out.push_str("</summary><pre class=\"");
    out.push_str(class);
    out.push_str("\">");
    push_escaped(out, &text[cut..]);
    out.push_str("</pre></details>");
}

/// Numbered lines: `(line number, text)`.
type Lines<'w> = Vec<(usize, &'w str)>;

/// The lines of two rejection windows that can be compared: the rows both show, with the
/// lines after the edit matched by their shift (the replacement's length minus the range's).
fn aligned<'w>(
    original: &'w Window<'w>,
    would_be: &'w Window<'w>,
    edit: Option<&RangeEdit<'_>>,
) -> (Lines<'w>, Lines<'w>) {
    let (Some(edit), Some(first_o), Some(first_w), Some(last_o), Some(last_w)) = (
        edit,
        original.lines.first(),
        would_be.lines.first(),
        original.lines.last(),
        would_be.lines.last(),
    ) else {
        return (original.lines.clone(), would_be.lines.clone());
    };
    let delta = edit.lines.len() as i64 - (edit.end as i64 - edit.start as i64 + 1);
    let low = first_o.0.max(first_w.0);
    let old_high = (last_o.0 as i64).min(last_w.0 as i64 - delta);
    let new_high = (last_w.0 as i64).min(last_o.0 as i64 + delta);
    let pick = |window: &'w Window<'w>, high: i64| {
        window
            .lines
            .iter()
            .filter(|(n, _)| *n >= low && (*n as i64) <= high)
            .copied()
            .collect::<Vec<_>>()
    };
    (pick(original, old_high), pick(would_be, new_high))
}

fn push_verdict(out: &mut String, class: &str, title: &str, items: &[&str]) {
    out.push_str("<div class=\"verdict ");
    out.push_str(class);
    out.push_str("\">");
    out.push_str(title);
    if !items.is_empty() {
        out.push_str("<ul>");
        for item in items {
            out.push_str("<li>");
            push_escaped(out, item);
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    out.push_str("</div>");
}

fn push_folded_raw(out: &mut String, observation: &str, label: &str) {
    out.push_str("<details class=\"fold\"><summary>");
    out.push_str(label);
    out.push_str("</summary><pre class=\"obs\">");
    push_escaped(out, observation);
    out.push_str("</pre></details>");
}

/// A rejected edit: the verdict with the gate's errors, and the two windows as a diff.
fn push_rejection(out: &mut String, step: &Step<'_>, rejected: &Rejection<'_>, files: &mut Files) {
    push_verdict(
        out,
        "rejected",
        "Edit rejected by the lint gate: not applied",
        &rejected.errors,
    );
    if let (Some(original), Some(would_be)) = (&rejected.original, &rejected.would_be) {
        let (old, new) = aligned(original, would_be, range_edit(step.action).as_ref());
        out.push_str("<div class=\"code-head\">");
        push_escaped(out, original.path);
        out.push_str(" · the edit as it would have been applied</div>");
        out.push_str(&render_line_diff(&old, &new));
        files.see(original);
    }
    push_folded_raw(out, step.observation, "the whole observation");
}

/// An applied line-range edit: the verdict, the replaced lines against the new ones (when an
/// earlier window showed them), and the window after the edit, folded.
fn push_applied_edit(
    out: &mut String,
    edit: &RangeEdit<'_>,
    found: &WithWindow<'_>,
    files: &mut Files,
) {
    let path = found.window.path;
    push_verdict(out, "accepted", "Edit applied", &[]);
    let new: Vec<(usize, &str)> = edit
        .lines
        .iter()
        .enumerate()
        .map(|(i, text)| (edit.start + i, *text))
        .collect();
    out.push_str("<div class=\"code-head\">");
    push_escaped(out, path);
    match files.range(path, edit.start, edit.end.max(edit.start)) {
        Some(old) if edit.end >= edit.start => {
            out.push_str(&format!(
                " · lines {}–{} replaced</div>",
                edit.start, edit.end
            ));
            let old: Vec<(usize, &str)> = old.iter().map(|(n, t)| (*n, t.as_str())).collect();
            out.push_str(&render_line_diff(&old, &new));
        }
        _ => {
            out.push_str(&format!(
                " · lines {}–{} replaced (their old text was not shown earlier in this trajectory)</div>",
                edit.start, edit.end
            ));
            out.push_str(&render_line_diff(&[], &new));
        }
    }
    files.apply(path, edit);
    files.see(&found.window);
    out.push_str("<details class=\"fold\"><summary>the window after the edit</summary>");
    push_window_block(out, found);
    out.push_str("</details>");
}

/// The observation as the model saw it, with its structure shown; returns the turn's tag.
fn push_observation(out: &mut String, step: &Step<'_>, files: &mut Files) -> &'static str {
    let observation = step.observation;
    if let Some(rejected) = rejection(observation) {
        push_rejection(out, step, &rejected, files);
        return "lint rejected";
    }
    let found = find_window(observation);
    if let (Some(edit), Some(found)) = (range_edit(step.action), &found)
        && observation.contains("File updated.")
    {
        push_applied_edit(out, &edit, found, files);
        return "edit";
    }
    if let Some((path, old, new)) = str_replace(step.action) {
        push_verdict(out, "accepted", "str_replace", &[]);
        out.push_str("<div class=\"code-head\">");
        push_escaped(out, &path);
        out.push_str("</div>");
        out.push_str(&render_line_diff(&numbered(&old), &numbered(&new)));
    }
    if let Some(found) = found {
        files.see(&found.window);
        push_window_block(out, &found);
        return "";
    }
    if let Some(found) = find_cat_n(observation) {
        push_window_block(out, &found);
        return "";
    }
    let trimmed = observation.trim_start();
    if trimmed.starts_with("diff --git") {
        out.push_str(&render_patch(trimmed));
        return "patch";
    }
    push_text_block(out, observation, "obs");
    ""
}

/// The lines of `text`, numbered from 1.
fn numbered(text: &str) -> Vec<(usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect()
}

fn push_window_block(out: &mut String, found: &WithWindow<'_>) {
    if !found.before.trim().is_empty() {
        push_text_block(out, found.before.trim_end(), "obs");
    }
    out.push_str(&render_window(&found.window));
    if !found.after.trim().is_empty() {
        push_text_block(out, found.after.trim(), "obs");
    }
}

fn push_part(out: &mut String, class: &str, label: &str, body: impl FnOnce(&mut String)) {
    out.push_str("<div class=\"part ");
    out.push_str(class);
    out.push_str("\"><div class=\"label\">");
    out.push_str(label);
    out.push_str("</div>");
    body(out);
    out.push_str("</div>");
}

fn push_meta(out: &mut String, step: &Step<'_>) {
    out.push_str("<span class=\"meta\">");
    let mut parts = Vec::new();
    if let Some(dir) = step.state_field("working_dir") {
        parts.push(format!("in {dir}"));
    }
    if let Some(file) = step.state_field("open_file") {
        parts.push(format!("open: {file}"));
    }
    if let Some(seconds) = step.execution_time.filter(|s| *s > 0.0) {
        parts.push(format!("{seconds:.2} s"));
    }
    push_escaped(out, &parts.join(" · "));
    out.push_str("</span>");
}

/// One step as a turn (or a re-ask), with ids `{prefix}t{n}` (n from 1).
fn push_step(out: &mut String, prefix: &str, number: usize, step: &Step<'_>, files: &mut Files) {
    let reask = step.format_error.is_some();
    out.push_str(&format!(
        "<section class=\"turn{}\" id=\"{prefix}t{number}\"><div class=\"head\"><span class=\"n\">{} {number}</span>",
        if reask { " reask" } else { "" },
        if reask { "Re-ask" } else { "Turn" },
    ));
    let tag_at = out.len();
    push_meta(out, step);
    out.push_str("</div>");
    if let Some(nudge) = step.nudge {
        out.push_str("<div class=\"nudge\"><b>Nudge</b> sent with this request (not kept in the history)<pre>");
        push_escaped(out, nudge);
        out.push_str("</pre></div>");
    }
    if let Some(message) = step.format_error {
        push_part(
            out,
            "thought",
            "the answer the parser rejected (not kept in the history)",
            |out| {
                push_text_block(out, step.response, "");
            },
        );
        push_part(out, "obs", "asked again with", |out| {
            push_text_block(out, message, "obs")
        });
        out.push_str("</section>\n");
        return;
    }
    if !step.thought.trim().is_empty() {
        push_part(out, "thought", "thought", |out| {
            out.push_str("<pre>");
            push_linkified(out, step.thought.trim_end());
            out.push_str("</pre>");
        });
    }
    push_part(out, "action", "action", |out| {
        out.push_str("<pre>");
        push_escaped(out, step.action.trim_end());
        out.push_str("</pre>");
    });
    let mut tag = "";
    push_part(out, "observation", "observation", |out| {
        tag = push_observation(out, step, files);
    });
    if !tag.is_empty() {
        let class = if tag == "lint rejected" {
            "badge unresolved"
        } else {
            "badge"
        };
        out.insert_str(tag_at, &format!("<span class=\"{class}\">{tag}</span>"));
    }
    out.push_str("</section>\n");
}

/// Every step of `steps` (a trajectory's `trajectory[]`) as turns, with ids `{prefix}t1…`.
pub fn render_turns(steps: &[Value], prefix: &str) -> String {
    let mut out = String::new();
    let mut files = Files::default();
    for (index, value) in steps.iter().enumerate() {
        push_step(&mut out, prefix, index + 1, &Step::of(value), &mut files);
    }
    out
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
