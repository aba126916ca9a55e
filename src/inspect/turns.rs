//! A trajectory's steps as HTML, turn by turn: the nudge that came with the request, the
//! thought, the action and the observation. Windows show as a code viewer, an edit as a diff
//! with its verdict (a lint rejection in red with its messages), a submitted patch in colour,
//! and answers the parser rejected (re-asks, never in the history) apart from the turns. A
//! long text shows its first and last lines, with its full text one click away (a file of its
//! own: [`TextKey`]), and each turn is laid out only when it scrolls into view, so a page stays
//! small and light whatever the trajectory's size ([`TURNS_BUDGET`]).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::diff::{render_line_diff, render_patch, render_window};
use super::html::{escape, push_escaped, push_linkified};
use super::observation::{
    RangeEdit, Rejection, Window, WithWindow, find_cat_n, find_window, range_edit, rejection,
    str_replace, target_line,
};
use super::trajectory::{StepView, Text, TextKey};

/// Texts longer than this many lines show their first and last lines only.
const FOLD_LINES: u64 = 40;
/// Texts longer than this many bytes show their first and last lines only, whatever their line
/// count.
const FOLD_BYTES: u64 = 6_000;
/// How many lines of a long text's start are shown (at most [`PREVIEW_BYTES`]).
const PREVIEW_LINES: usize = 12;
/// How many bytes of a long text's start are shown at most.
const PREVIEW_BYTES: usize = 1_500;
/// How many lines of a long text's end are shown (at most [`TAIL_PREVIEW_BYTES`]).
const TAIL_LINES: usize = 4;
/// How many bytes of a long text's end are shown at most.
const TAIL_PREVIEW_BYTES: usize = 500;
/// Once the turns' HTML is this long, the turns after it are shown in brief (their first line
/// and links to their texts), so that with the rest of the page it stays under 1 MB.
pub const TURNS_BUDGET: usize = 450 * 1024;
/// Once the turns' HTML is this long, each turn after it is only its heading and the start of
/// its action's first line.
pub const BRIEF_BUDGET: usize = 650 * 1024;

/// Whether a text of `lines` lines and `bytes` bytes shows its ends only.
pub fn is_long(lines: u64, bytes: u64) -> bool {
    lines > FOLD_LINES || bytes > FOLD_BYTES
}

/// The step's `state` field `key`, unless it is `n/a` (an object, or a JSON string in v0).
fn state_field(state: &Value, key: &str) -> Option<String> {
    let parsed;
    let state = match state {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            &parsed
        }
        other => other,
    };
    state
        .get(key)
        .and_then(Value::as_str)
        .filter(|v| *v != "n/a")
        .map(str::to_owned)
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

/// The first `lines` lines of `text`, at most `max` bytes (cut at a character).
fn first_lines(text: &str, lines: usize, max: usize) -> &str {
    let end = text
        .match_indices('\n')
        .nth(lines - 1)
        .map_or(text.len(), |(i, _)| i);
    let end = end.min(max);
    let end = (0..=end)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    &text[..end]
}

/// The last `lines` lines of `text`, at most `max` bytes (cut at a character).
fn last_lines(text: &str, lines: usize, max: usize) -> &str {
    let trimmed = text.strip_suffix('\n').unwrap_or(text);
    let start = trimmed
        .rmatch_indices('\n')
        .nth(lines - 1)
        .map_or(0, |(i, _)| i + 1);
    let start = start.max(text.len().saturating_sub(max));
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    &text[start..]
}

/// Appends `text` as a `<pre>` of `class`; a long one ([`is_long`]) shows its first and last
/// lines and a link to its full text at `href` (opened in place on a served page).
pub fn push_text_block(out: &mut String, text: &Text, class: &str, href: &str) {
    push_text_with(out, text, class, href, push_escaped);
}

/// [`push_text_block`] with the URLs in the text made links.
pub fn push_linkified_block(out: &mut String, text: &Text, class: &str, href: &str) {
    push_text_with(out, text, class, href, push_linkified);
}

/// [`push_text_block`], each shown piece of text written by `push`.
fn push_text_with(
    out: &mut String,
    text: &Text,
    class: &str,
    href: &str,
    push: fn(&mut String, &str),
) {
    let open = |out: &mut String| {
        if class.is_empty() {
            out.push_str("<pre>");
        } else {
            out.push_str("<pre class=\"");
            out.push_str(class);
            out.push_str("\">");
        }
    };
    if !is_long(text.lines, text.bytes) {
        open(out);
        push(out, text.head());
        out.push_str("</pre>");
        return;
    }
    out.push_str("<div class=\"folded\">");
    open(out);
    push(out, first_lines(text.head(), PREVIEW_LINES, PREVIEW_BYTES));
    out.push_str("</pre><div class=\"elided\">⋯ <a class=\"full-text\" href=\"");
    push_escaped(out, href);
    out.push_str(&format!(
        "\" data-bytes=\"{}\">show all {} lines ({} characters)</a></div>",
        text.bytes, text.lines, text.chars
    ));
    open(out);
    push(out, last_lines(text.tail(), TAIL_LINES, TAIL_PREVIEW_BYTES));
    out.push_str("</pre></div>");
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

/// The whole observation, folded: inline when short, else a link to its full text.
fn push_folded_raw(out: &mut String, observation: &str, label: &str, href: &str) {
    if is_long(
        observation.split('\n').count() as u64,
        observation.len() as u64,
    ) {
        out.push_str("<div class=\"elided\"><a class=\"full-text\" href=\"");
        push_escaped(out, href);
        out.push_str(&format!(
            "\" data-bytes=\"{}\">{label}</a></div>",
            observation.len()
        ));
        return;
    }
    out.push_str("<details class=\"fold\"><summary>");
    out.push_str(label);
    out.push_str("</summary><pre class=\"obs\">");
    push_escaped(out, observation);
    out.push_str("</pre></details>");
}

/// A step as it is rendered: its fields, and where its full texts are.
struct Turn<'a> {
    step: &'a StepView,
    /// The relative link of the instance's folder of full texts, ending in `/`.
    texts: &'a str,
}

impl Turn<'_> {
    /// The link to the full text of the step's field `field`.
    fn href(&self, field: &'static str) -> String {
        let key = TextKey::Step {
            number: self.step.number,
            field,
        };
        format!("{}{}.txt", self.texts, key.name())
    }
}

/// A rejected edit: the verdict with the gate's errors, and the two windows as a diff.
fn push_rejection(
    out: &mut String,
    turn: &Turn<'_>,
    observation: &str,
    rejected: &Rejection<'_>,
    files: &mut Files,
) {
    push_verdict(
        out,
        "rejected",
        "Edit rejected by the lint gate: not applied",
        &rejected.errors,
    );
    if let (Some(original), Some(would_be)) = (&rejected.original, &rejected.would_be) {
        let edit = turn.step.action.whole().and_then(range_edit);
        let (old, new) = aligned(original, would_be, edit.as_ref());
        out.push_str("<div class=\"code-head\">");
        push_escaped(out, original.path);
        out.push_str(" · the edit as it would have been applied</div>");
        out.push_str(&render_line_diff(&old, &new));
        files.see(original);
    }
    push_folded_raw(
        out,
        observation,
        "the whole observation",
        &turn.href("observation"),
    );
}

/// An applied line-range edit: the verdict, the replaced lines against the new ones (when an
/// earlier window showed them), and the window after the edit, folded.
fn push_applied_edit(
    out: &mut String,
    edit: &RangeEdit<'_>,
    found: &WithWindow<'_>,
    files: &mut Files,
    href: &str,
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
    let mark = (!edit.lines.is_empty()).then(|| (edit.start, edit.start + edit.lines.len() - 1));
    push_window_block(out, found, href, mark);
    out.push_str("</details>");
}

/// The observation as the model saw it, with its structure shown; returns the turn's tag. An
/// observation too long to be kept whole shows its first and last lines only.
fn push_observation(out: &mut String, turn: &Turn<'_>, files: &mut Files) -> &'static str {
    let href = turn.href("observation");
    let Some(observation) = turn.step.observation.whole() else {
        push_text_block(out, &turn.step.observation, "obs", &href);
        return "";
    };
    let action = turn.step.action.whole().unwrap_or_default();
    if let Some(rejected) = rejection(observation) {
        push_rejection(out, turn, observation, &rejected, files);
        return "lint rejected";
    }
    let found = find_window(observation);
    if let (Some(edit), Some(found)) = (range_edit(action), &found)
        && observation.contains("File updated.")
    {
        push_applied_edit(out, &edit, found, files, &href);
        return "edit";
    }
    if let Some((path, old, new)) = str_replace(action) {
        push_verdict(out, "accepted", "str_replace", &[]);
        out.push_str("<div class=\"code-head\">");
        push_escaped(out, &path);
        out.push_str("</div>");
        out.push_str(&render_line_diff(&numbered(&old), &numbered(&new)));
    }
    let mark = target_line(action).map(|line| (line, line));
    if let Some(found) = found {
        files.see(&found.window);
        push_window_block(out, &found, &href, mark);
        return "";
    }
    if let Some(found) = find_cat_n(observation) {
        push_window_block(out, &found, &href, mark);
        return "";
    }
    let trimmed = observation.trim_start();
    if trimmed.starts_with("diff --git") {
        out.push_str(&render_patch(trimmed));
        return "patch";
    }
    push_text_block(out, &turn.step.observation, "obs", &href);
    ""
}

/// The lines of `text`, numbered from 1.
fn numbered(text: &str) -> Vec<(usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect()
}

/// A window with the text around it, the lines `mark` names highlighted; `href` is the whole
/// observation's full text.
fn push_window_block(
    out: &mut String,
    found: &WithWindow<'_>,
    href: &str,
    mark: Option<(usize, usize)>,
) {
    if !found.before.trim().is_empty() {
        push_text_block(out, &Text::of(found.before.trim_end()), "obs", href);
    }
    out.push_str(&render_window(&found.window, mark));
    if !found.after.trim().is_empty() {
        push_text_block(out, &Text::of(found.after.trim()), "obs", href);
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

fn push_meta(out: &mut String, step: &StepView) {
    out.push_str("<span class=\"meta\">");
    let mut parts = Vec::new();
    if let Some(dir) = state_field(&step.state, "working_dir") {
        parts.push(format!("in {dir}"));
    }
    if let Some(file) = state_field(&step.state, "open_file") {
        parts.push(format!("open: {file}"));
    }
    if let Some(seconds) = step.execution_time.filter(|s| *s > 0.0) {
        parts.push(format!("{seconds:.2} s"));
    }
    push_escaped(out, &parts.join(" · "));
    out.push_str("</span>");
}

/// A text trimmed at its end as the turn shows it (a long one is shown by its ends anyway).
fn trimmed_end(text: &Text) -> Text {
    match text.whole() {
        Some(whole) if whole.trim_end().len() != whole.len() => {
            let mut trimmed = Text::of(whole.trim_end());
            trimmed.parts.clone_from(&text.parts);
            trimmed
        }
        _ => text.clone(),
    }
}

/// The opening of a turn's section, with ids `{prefix}t{n}`; returns where a tag goes.
fn push_head(out: &mut String, prefix: &str, step: &StepView, reask: bool) -> usize {
    out.push_str(&format!(
        "<section class=\"turn{}\" id=\"{prefix}t{}\"><div class=\"head\"><span class=\"n\">{} {}</span>",
        if reask { " reask" } else { "" },
        step.number,
        if reask { "Re-ask" } else { "Turn" },
        step.number,
    ));
    let tag_at = out.len();
    push_meta(out, step);
    out.push_str("</div>");
    tag_at
}

/// One step as a turn (or a re-ask), with ids `{prefix}t{n}`.
fn push_step(out: &mut String, prefix: &str, turn: &Turn<'_>, files: &mut Files) {
    let step = turn.step;
    let reask = step.format_error.is_some();
    let tag_at = push_head(out, prefix, step, reask);
    if let Some(nudge) = &step.nudge {
        out.push_str(
            "<div class=\"nudge\"><b>Nudge</b> sent with this request (not kept in the history)",
        );
        push_text_block(out, nudge, "", &turn.href("nudge"));
        out.push_str("</div>");
    }
    if let Some(message) = &step.format_error {
        push_part(
            out,
            "thought",
            "the answer the parser rejected (not kept in the history)",
            |out| push_text_block(out, &step.response, "", &turn.href("response")),
        );
        push_part(out, "obs", "asked again with", |out| {
            push_text_block(out, message, "obs", &turn.href("format_error"));
        });
        out.push_str("</section>\n");
        return;
    }
    if !step.thought.head().trim().is_empty() {
        push_part(out, "thought", "thought", |out| {
            push_text_with(
                out,
                &trimmed_end(&step.thought),
                "",
                &turn.href("thought"),
                push_linkified,
            );
        });
    }
    push_part(out, "action", "action", |out| {
        push_text_block(out, &trimmed_end(&step.action), "", &turn.href("action"));
    });
    let mut tag = "";
    push_part(out, "observation", "observation", |out| {
        tag = push_observation(out, turn, files);
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

/// A step in brief, past the page's budget: the first line of its action and links to each of
/// its long texts.
fn push_brief_step(out: &mut String, prefix: &str, turn: &Turn<'_>) {
    let step = turn.step;
    push_head(out, prefix, step, step.format_error.is_some());
    out.push_str("<div class=\"part action\"><div class=\"label\">action</div><pre>");
    push_escaped(out, first_lines(step.action.head(), 1, 200));
    out.push_str("</pre></div><div class=\"part\"><div class=\"elided\">this page is long: ");
    let mut links = Vec::new();
    for field in super::trajectory::STEP_FIELDS {
        if let Some(text) = step.field(field).filter(|t| is_long(t.lines, t.bytes)) {
            links.push(format!(
                "<a class=\"full-text\" href=\"{}\" data-bytes=\"{}\">{field}</a>",
                escape(&turn.href(field)),
                text.bytes
            ));
        }
    }
    out.push_str(&links.join(" · "));
    out.push_str("</div></div></section>\n");
}

/// A step past [`BRIEF_BUDGET`]: its heading and the start of its action's first line.
fn push_bare_step(out: &mut String, prefix: &str, step: &StepView) {
    out.push_str(&format!(
        "<section class=\"turn bare\" id=\"{prefix}t{}\"><div class=\"head\"><span class=\"n\">{} {}</span><code>",
        step.number,
        if step.format_error.is_some() { "Re-ask" } else { "Turn" },
        step.number,
    ));
    push_escaped(out, first_lines(step.action.head(), 1, 80));
    out.push_str("</code></div></section>\n");
}

/// Every kept step of a trajectory of `total` steps as turns, with ids `{prefix}t{n}`; `texts`
/// is the relative link of the instance's folder of full texts. A gap in the numbers (a very
/// long trajectory keeps only its first and last steps) is said where it is, and past
/// [`TURNS_BUDGET`] the turns are brief, and past [`BRIEF_BUDGET`] bare.
pub fn render_turns(steps: &[StepView], total: usize, prefix: &str, texts: &str) -> String {
    let mut out = String::new();
    let mut files = Files::default();
    let mut expected = 1;
    for step in steps {
        if step.number > expected {
            out.push_str(&format!(
                "<p class=\"muted gap\">turns {expected}–{} of {total} are not shown here: only the first and the last ones are</p>\n",
                step.number - 1
            ));
        }
        expected = step.number + 1;
        let turn = Turn { step, texts };
        if out.len() > BRIEF_BUDGET {
            push_bare_step(&mut out, prefix, step);
        } else if out.len() > TURNS_BUDGET {
            push_brief_step(&mut out, prefix, &turn);
        } else {
            push_step(&mut out, prefix, &turn, &mut files);
        }
    }
    out
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
