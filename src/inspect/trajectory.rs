//! A trajectory read once, front to back, into what its pages show and no more: the run view's
//! [`Summary`], and for the instance view each string as a [`Text`] (whole when short, else its
//! first and last bytes) with where its full text is in the file ([`Part`]), the steps (the
//! first and the last ones when there are very many), the prompts and the patch. Memory stays
//! bounded whatever the file's size; a full text is streamed from the file when asked for
//! ([`write_full`]).
//!
//! Reads aci's trajectories and SWE-agent's v0.7 and 1.x ones alike, and mini-swe-agent's
//! (`messages` instead of `trajectory`: [`mini`]): every field is optional, and a field of an
//! unexpected type counts as absent instead of failing the file.

use std::collections::VecDeque;
use std::io::{BufRead, Read, Seek, Write};
use std::path::Path;

use serde_json::Value;

use super::bounded::{Collector, Matcher, PatchLines};
pub use super::bounded::{HEAD_BYTES, KEEP_WHOLE, Part, TAIL_BYTES, Text, read_text_file};
use super::scan::{Kind, ScanError, Scanner, string_at};
use super::summary::Summary;

/// How many of the first steps are kept.
pub const FIRST_STEPS: usize = 750;
/// How many of the last steps are kept (after the first ones).
pub const LAST_STEPS: usize = 250;
/// How many demonstration messages are kept.
const DEMO_MESSAGES: usize = 64;
/// Small values (`state`, `model_stats`) longer than this are ignored.
const SMALL_VALUE: usize = 8 * 1024;

/// One step as kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepView {
    /// Its number in the trajectory, from 1.
    pub number: usize,
    /// The command that ran.
    pub action: Text,
    /// What it printed.
    pub observation: Text,
    /// The model's whole answer.
    pub response: Text,
    /// The answer without the command.
    pub thought: Text,
    /// The nudge sent with the request (aci).
    pub nudge: Option<Text>,
    /// Why the parser rejected the answer (aci): a re-ask.
    pub format_error: Option<Text>,
    /// Seconds the command took.
    pub execution_time: Option<f64>,
    /// `state` (an object, or a JSON string in v0), when small.
    pub state: Value,
}

/// The string fields of a step, by the names their full texts are asked for with.
pub const STEP_FIELDS: [&str; 6] = [
    "action",
    "observation",
    "response",
    "thought",
    "nudge",
    "format_error",
];

impl StepView {
    /// The field named `name` (one of [`STEP_FIELDS`]).
    pub fn field(&self, name: &str) -> Option<&Text> {
        match name {
            "action" => Some(&self.action),
            "observation" => Some(&self.observation),
            "response" => Some(&self.response),
            "thought" => Some(&self.thought),
            "nudge" => self.nudge.as_ref(),
            "format_error" => self.format_error.as_ref(),
            _ => None,
        }
    }
}

/// A text of an instance page whose full version is a file of its own, `<name>.txt`, in the
/// instance's folder of texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKey {
    /// A field of a step (one of [`STEP_FIELDS`]): `t<n>-<field>`.
    Step {
        /// The step's number, from 1.
        number: usize,
        /// The field.
        field: &'static str,
    },
    /// The system prompt: `system`.
    System,
    /// The demonstration: `demo`.
    Demo,
    /// The task: `task`.
    Task,
    /// The final patch: `patch`.
    Patch,
    /// The evaluation's test output: `test_output`.
    TestOutput,
}

impl TextKey {
    /// The file name without `.txt`.
    pub fn name(&self) -> String {
        match self {
            TextKey::Step { number, field } => format!("t{number}-{field}"),
            TextKey::System => "system".to_owned(),
            TextKey::Demo => "demo".to_owned(),
            TextKey::Task => "task".to_owned(),
            TextKey::Patch => "patch".to_owned(),
            TextKey::TestOutput => "test_output".to_owned(),
        }
    }

    /// The key [`TextKey::name`] wrote, or `None` for any other name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "system" => return Some(TextKey::System),
            "demo" => return Some(TextKey::Demo),
            "task" => return Some(TextKey::Task),
            "patch" => return Some(TextKey::Patch),
            "test_output" => return Some(TextKey::TestOutput),
            _ => {}
        }
        let (number, field) = name.strip_prefix('t')?.split_once('-')?;
        let field = STEP_FIELDS.into_iter().find(|f| *f == field)?;
        let number: usize = number.parse().ok().filter(|n| *n > 0)?;
        let key = TextKey::Step { number, field };
        (key.name() == name).then_some(key)
    }
}

/// A trajectory as its pages show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrajectoryView {
    /// The run view's facts.
    pub summary: Summary,
    /// Whether the file has a `trajectory` list (or mini-swe-agent's `messages`).
    pub has_steps: bool,
    /// The steps kept, in order: the first [`FIRST_STEPS`] and the last [`LAST_STEPS`].
    pub steps: Vec<StepView>,
    /// The system prompt.
    pub system: Option<Text>,
    /// The demonstration's messages, each as `[role]` and its text.
    pub demo: Option<Text>,
    /// How many demonstration messages there are.
    pub demo_messages: usize,
    /// The task.
    pub task: Option<Text>,
    /// `info.submission`, when not blank.
    pub submission: Option<Text>,
}

impl TrajectoryView {
    /// The text of `key`, when it is one of the trajectory's and was kept.
    pub fn text(&self, key: &TextKey) -> Option<&Text> {
        match key {
            TextKey::Step { number, field } => self
                .steps
                .iter()
                .find(|step| step.number == *number)?
                .field(field),
            TextKey::System => self.system.as_ref(),
            TextKey::Demo => self.demo.as_ref(),
            TextKey::Task => self.task.as_ref(),
            TextKey::Patch => self.submission.as_ref(),
            TextKey::TestOutput => None,
        }
    }

    /// Every text kept, with its key.
    pub fn texts(&self) -> Vec<(TextKey, &Text)> {
        let mut texts = Vec::new();
        for step in &self.steps {
            for field in STEP_FIELDS {
                if let Some(text) = step.field(field) {
                    texts.push((
                        TextKey::Step {
                            number: step.number,
                            field,
                        },
                        text,
                    ));
                }
            }
        }
        for key in [
            TextKey::System,
            TextKey::Demo,
            TextKey::Task,
            TextKey::Patch,
        ] {
            if let Some(text) = self.text(&key) {
                texts.push((key, text));
            }
        }
        texts
    }
}

/// What to keep while reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The summary only.
    Summary,
    /// Everything the instance view shows.
    View,
    /// The one step of this number: reading stops there, so the summary counts only the
    /// steps up to it.
    Step(usize),
}

/// Why a trajectory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened.
    #[error("cannot read {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// It is not a trajectory.
    #[error("not a trajectory: {0}")]
    Malformed(String),
    /// It is JSON, but not an object.
    #[error("not a trajectory: no `trajectory` or `messages` list")]
    NotAnObject,
}

impl From<ScanError> for ReadError {
    fn from(error: ScanError) -> Self {
        ReadError::Malformed(error.to_string())
    }
}

/// Reads the trajectory at `path` once, keeping what `keep` says.
///
/// # Errors
/// [`ReadError`]: the file cannot be read or is not a trajectory.
pub fn read_file(path: &Path, keep: Keep) -> Result<TrajectoryView, ReadError> {
    let file = std::fs::File::open(path).map_err(|source| ReadError::Open {
        path: path.display().to_string(),
        source,
    })?;
    read(std::io::BufReader::with_capacity(256 * 1024, file), keep)
}

/// Reads a trajectory from `reader` once, keeping what `keep` says.
///
/// # Errors
/// [`ReadError::Malformed`]: it is not a JSON object, or a value in it is malformed.
pub fn read<R: BufRead>(reader: R, keep: Keep) -> Result<TrajectoryView, ReadError> {
    let mut scanner = Scanner::new(reader, 0);
    let mut reading = Reading {
        keep,
        view: TrajectoryView::default(),
        last: VecDeque::new(),
    };
    if scanner.peek_kind()? != Kind::Object {
        scanner.skip()?;
        return Err(ReadError::NotAnObject);
    }
    scanner.begin_object()?;
    let mut first = true;
    while let Some(key) = scanner.next_key(&mut first)? {
        match key.as_str() {
            "trajectory" if scanner.peek_kind()? == Kind::Array => {
                reading.view.has_steps = true;
                if reading.steps(&mut scanner)? {
                    // The one step asked for is read: the rest of the file is not needed.
                    return Ok(reading.view);
                }
            }
            "messages" if scanner.peek_kind()? == Kind::Array && !reading.view.has_steps => {
                reading.view.has_steps = true;
                reading.messages(&mut scanner)?;
            }
            "history" if scanner.peek_kind()? == Kind::Array && keep == Keep::View => {
                reading.history(&mut scanner)?;
            }
            "info" if scanner.peek_kind()? == Kind::Object => reading.info(&mut scanner)?,
            _ => scanner.skip()?,
        }
    }
    if !scanner.at_end()? {
        return Err(ReadError::Malformed(format!(
            "trailing characters at byte {}",
            scanner.offset()
        )));
    }
    let Reading { mut view, last, .. } = reading;
    view.steps.extend(last);
    Ok(view)
}

struct Reading {
    keep: Keep,
    view: TrajectoryView,
    /// The last steps read after the first [`FIRST_STEPS`].
    last: VecDeque<StepView>,
}

/// What a string value gave.
struct StringRead {
    text: Text,
    /// Lint rejections in it (when counted).
    lint: usize,
    /// The lines it adds and removes as a patch (when counted).
    patch_lines: Option<(usize, usize)>,
    /// Whether it is empty or only whitespace.
    blank: bool,
}

/// A string value read through `collector` (`None` when the value is of another type: then
/// it is skipped).
fn string_value<R: BufRead>(
    scanner: &mut Scanner<R>,
    mut collector: Collector,
) -> Result<Option<StringRead>, ScanError> {
    if scanner.peek_kind()? != Kind::String {
        scanner.skip()?;
        return Ok(None);
    }
    let at = scanner.string(&mut |bytes| collector.feed(bytes))?;
    let lint = collector.lint.as_ref().map_or(0, |m| m.count);
    let patch_lines = collector.patch.take().map(PatchLines::finish);
    let blank = collector.blank;
    let mut text = collector.finish();
    text.parts = vec![Part::At(at)];
    Ok(Some(StringRead {
        text,
        lint,
        patch_lines,
        blank,
    }))
}

/// A string value as a [`Text`] (kept or only counted).
fn text<R: BufRead>(scanner: &mut Scanner<R>, keep: bool) -> Result<Option<Text>, ScanError> {
    Ok(string_value(scanner, Collector::new(keep))?.map(|read| read.text))
}

/// A number, or `None` (skipped) when the value is of another type.
fn number_value<R: BufRead>(scanner: &mut Scanner<R>) -> Result<Option<f64>, ScanError> {
    if scanner.peek_kind()? == Kind::Number {
        Ok(Some(scanner.number()?))
    } else {
        scanner.skip()?;
        Ok(None)
    }
}

/// A small value parsed, or `Null` when it is longer than [`SMALL_VALUE`].
fn small<R: BufRead>(scanner: &mut Scanner<R>) -> Result<Value, ScanError> {
    Ok(scanner
        .capture(SMALL_VALUE)?
        .and_then(|raw| serde_json::from_slice(&raw).ok())
        .unwrap_or(Value::Null))
}

impl Reading {
    /// Reads the `trajectory` list; `true` when it stopped at the step [`Keep::Step`] asks for.
    fn steps<R: BufRead>(&mut self, scanner: &mut Scanner<R>) -> Result<bool, ScanError> {
        scanner.begin_array()?;
        let mut first = true;
        while scanner.next_element(&mut first)? {
            let number = self.view.summary.steps + 1;
            let keep = match self.keep {
                Keep::Summary => false,
                Keep::View => true,
                Keep::Step(wanted) => wanted == number,
            };
            let step = self.step(scanner, number, keep)?;
            self.view.summary.steps = number;
            if keep && self.keep_step(step) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Keeps `step` as [`Keep`] says: among the first or the last ones, or as the one asked
    /// for (then `true`).
    fn keep_step(&mut self, step: StepView) -> bool {
        match self.keep {
            Keep::Summary => false,
            Keep::Step(wanted) => {
                let found = step.number == wanted;
                if found {
                    self.view.steps.push(step);
                }
                found
            }
            Keep::View => {
                if self.view.steps.len() < FIRST_STEPS {
                    self.view.steps.push(step);
                } else {
                    self.last.push_back(step);
                    if self.last.len() > LAST_STEPS {
                        self.last.pop_front();
                    }
                }
                false
            }
        }
    }

    fn step<R: BufRead>(
        &mut self,
        scanner: &mut Scanner<R>,
        number: usize,
        keep: bool,
    ) -> Result<StepView, ScanError> {
        let mut step = StepView {
            number,
            ..StepView::default()
        };
        if scanner.peek_kind()? != Kind::Object {
            scanner.skip()?;
            return Ok(step);
        }
        scanner.begin_object()?;
        let mut first = true;
        while let Some(key) = scanner.next_key(&mut first)? {
            match key.as_str() {
                "action" => step.action = text(scanner, keep)?.unwrap_or_default(),
                "observation" => {
                    let mut collector = Collector::new(keep);
                    collector.lint = Some(Matcher::new());
                    if let Some(read) = string_value(scanner, collector)? {
                        self.view.summary.lint_rejections += read.lint;
                        step.observation = read.text;
                    }
                }
                "response" => step.response = text(scanner, keep)?.unwrap_or_default(),
                "thought" => step.thought = text(scanner, keep)?.unwrap_or_default(),
                "nudge" => {
                    step.nudge = text(scanner, keep)?;
                    if step.nudge.is_some() {
                        self.view.summary.nudges += 1;
                    }
                }
                "format_error" => {
                    step.format_error = text(scanner, keep)?;
                    if step.format_error.is_some() {
                        self.view.summary.format_errors += 1;
                    }
                }
                "execution_time" => {
                    step.execution_time = number_value(scanner)?;
                    self.view.summary.execution_time += step.execution_time.unwrap_or(0.0);
                }
                "state" if keep => step.state = small(scanner)?,
                _ => scanner.skip()?,
            }
        }
        Ok(step)
    }

    fn history<R: BufRead>(&mut self, scanner: &mut Scanner<R>) -> Result<(), ScanError> {
        let mut demo = Vec::new();
        let mut first_user = None;
        scanner.begin_array()?;
        let mut first = true;
        while scanner.next_element(&mut first)? {
            if scanner.peek_kind()? != Kind::Object {
                scanner.skip()?;
                continue;
            }
            let message = message(scanner)?;
            if message.role == "system" && self.view.system.is_none() {
                self.view.system = Some(message.content.clone());
            }
            if message.is_demo {
                self.view.demo_messages += 1;
                if demo.len() < DEMO_MESSAGES {
                    demo.push(Text::join(
                        &[Text::of(&format!("[{}]", message.role)), message.content],
                        "\n",
                    ));
                }
                continue;
            }
            if message.message_type == "instance" && self.view.task.is_none() {
                self.view.task = Some(message.content);
            } else if message.role == "user" && first_user.is_none() {
                first_user = Some(message.content);
            }
        }
        if !demo.is_empty() {
            self.view.demo = Some(Text::join(&demo, "\n\n"));
        }
        if self.view.task.is_none() {
            self.view.task = first_user;
        }
        Ok(())
    }

    fn info<R: BufRead>(&mut self, scanner: &mut Scanner<R>) -> Result<(), ScanError> {
        let keep_patch = self.keep == Keep::View;
        scanner.begin_object()?;
        let mut first = true;
        while let Some(key) = scanner.next_key(&mut first)? {
            match key.as_str() {
                "exit_status" => {
                    self.view.summary.exit_status =
                        text(scanner, true)?.map(|t| t.head().to_owned());
                }
                "submission" => {
                    let mut collector = Collector::new(keep_patch);
                    collector.patch = Some(PatchLines::new());
                    let read = string_value(scanner, collector)?.filter(|read| !read.blank);
                    self.view.summary.patch_lines = read.as_ref().and_then(|r| r.patch_lines);
                    if keep_patch {
                        self.view.submission = read.map(|read| read.text);
                    }
                }
                "model_stats" => {
                    let stats = small(scanner)?;
                    let count = |key: &str| {
                        stats
                            .get(key)
                            .and_then(Value::as_f64)
                            .filter(|n| *n >= 0.0)
                            .map_or(0, |n| n as u64)
                    };
                    self.view.summary.cost = stats
                        .get("instance_cost")
                        .and_then(Value::as_f64)
                        .unwrap_or(0.0);
                    self.view.summary.tokens_sent = count("tokens_sent");
                    self.view.summary.tokens_received = count("tokens_received");
                    self.view.summary.api_calls = count("api_calls");
                }
                "wall_time" => self.view.summary.wall_time = number_value(scanner)?,
                "error" => {
                    self.view.summary.error = text(scanner, true)?.map(|t| match t.whole() {
                        Some(whole) => whole.to_owned(),
                        None => format!("{} […]", t.head()),
                    });
                }
                _ => scanner.skip()?,
            }
        }
        Ok(())
    }
}

/// One message of the history.
struct Message {
    role: String,
    message_type: String,
    is_demo: bool,
    content: Text,
}

fn message<R: BufRead>(scanner: &mut Scanner<R>) -> Result<Message, ScanError> {
    let mut message = Message {
        role: String::new(),
        message_type: String::new(),
        is_demo: false,
        content: Text::default(),
    };
    let short = |text: Option<Text>| text.map(|t| t.head().to_owned()).unwrap_or_default();
    scanner.begin_object()?;
    let mut first = true;
    while let Some(key) = scanner.next_key(&mut first)? {
        match key.as_str() {
            "role" => message.role = short(text(scanner, true)?),
            "message_type" => message.message_type = short(text(scanner, true)?),
            "is_demo" if scanner.peek_kind()? == Kind::Bool => {
                message.is_demo = scanner.capture(5)?.as_deref() == Some(b"true");
            }
            "content" => message.content = content(scanner)?,
            _ => scanner.skip()?,
        }
    }
    Ok(message)
}

/// A message's content: a string, or the `text` of each of its parts joined by newlines.
fn content<R: BufRead>(scanner: &mut Scanner<R>) -> Result<Text, ScanError> {
    match scanner.peek_kind()? {
        Kind::String => Ok(text(scanner, true)?.unwrap_or_default()),
        Kind::Array => {
            let mut texts = Vec::new();
            scanner.begin_array()?;
            let mut first = true;
            while scanner.next_element(&mut first)? {
                if scanner.peek_kind()? != Kind::Object {
                    scanner.skip()?;
                    continue;
                }
                scanner.begin_object()?;
                let mut first_key = true;
                while let Some(key) = scanner.next_key(&mut first_key)? {
                    match key.as_str() {
                        "text" if texts.len() < DEMO_MESSAGES => {
                            if let Some(part) = text(scanner, true)? {
                                texts.push(part);
                            }
                        }
                        _ => scanner.skip()?,
                    }
                }
            }
            Ok(Text::join(&texts, "\n"))
        }
        _ => {
            scanner.skip()?;
            Ok(Text::default())
        }
    }
}

/// Writes the full text of `parts` (of the trajectory in `file`) to `out`.
///
/// # Errors
/// The file cannot be read, holds no string at a part's offset, or `out` cannot be written.
pub fn write_full<F: Read + Seek>(
    file: &mut F,
    parts: &[Part],
    out: &mut dyn Write,
) -> std::io::Result<u64> {
    let mut written = 0;
    for part in parts {
        match part {
            Part::Literal(text) => {
                out.write_all(text.as_bytes())?;
                written += text.len() as u64;
            }
            Part::At(offset) => written += string_at(file, *offset, out)?,
        }
    }
    Ok(written)
}

#[path = "trajectory_mini.rs"]
mod mini;

#[cfg(test)]
#[path = "trajectory_tests.rs"]
mod tests;
