//! The task record: SWE-bench instance fields plus aci's own optional fields, the JSON and JSONL
//! loaders (a bad record is reported and skipped, the rest still loads), and the pure selection
//! steps behind `--shuffle`/`--seed`, `--filter`, `--slice` and `--shard`, which pick the same
//! instances in the same order as SWE-agent and mini-swe-agent.

pub mod check;
mod python_random;

pub use check::{MAX_ID_BYTES, unsafe_id};
pub use python_random::PythonRandom;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::hint::{Hint, with_hint};

/// Default seed of `--shuffle` when `--seed` is not given (the same as SWE-agent and mini-swe-agent).
pub const DEFAULT_SEED: u64 = 42;

/// One task: the SWE-bench fields, aci's optional fields, and every unknown field in
/// [`Instance::extra_fields`].
///
/// Serialising an instance gives back a record that [`parse_instances`] reads to an equal value
/// (the test lists come out as JSON lists under their uppercase SWE-bench keys).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instance {
    /// Unique id, `owner__name-PR` in SWE-bench.
    pub instance_id: String,
    /// The issue text given to the agent.
    pub problem_statement: String,
    /// `owner/name`.
    pub repo: String,
    /// The commit the repository is checked out at. Only a `repo_path` that is a plain
    /// directory (not a git repository) may go without one: its files are taken as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// The gold patch (source files only), used by `--predictions gold`.
    pub patch: Option<String>,
    /// The patch that adds or changes the tests used for grading.
    pub test_patch: Option<String>,
    /// Tests that must go from failing to passing.
    #[serde(rename = "FAIL_TO_PASS")]
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing.
    #[serde(rename = "PASS_TO_PASS")]
    pub pass_to_pass: Vec<String>,
    /// Comments from the issue thread before the fix; empty when absent.
    pub hints_text: String,
    /// Key into per-repository install specifications; empty when absent. Numbers are kept as text.
    pub version: String,
    /// Creation time of the pull request, as written in the record; empty when absent.
    pub created_at: String,
    /// Commit used to fetch environment files, when it differs from `base_commit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment_setup_commit: Option<String>,
    /// A local directory or git repository, resolved against the instances file's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo_path: Option<PathBuf>,
    /// The image to run the instance in, overriding the language image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// SWE-smith's name for `image`; `image` wins when a record has both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_name: Option<String>,
    /// `python`, `rust`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Shell commands run once per environment image; a single string in the record is one command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// The test command used by `aci eval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_cmd: Option<String>,
    /// Name of the log parser (`pytest`, `cargo`, `unittest`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_parser: Option<String>,
    /// Every field this struct does not name, kept as it was and passed to templates.
    #[serde(flatten)]
    pub extra_fields: Map<String, Value>,
}

impl Instance {
    /// The repository directory inside the container: `template` with `{repo_name}` replaced by
    /// the repo with `/` turned into `__` (`django/django` → `django__django`).
    pub fn repo_dir(&self, template: &str) -> String {
        template.replace("{repo_name}", &self.repo.replace('/', "__"))
    }

    /// The image the record itself names: `image`, else SWE-smith's `image_name`.
    pub fn own_image(&self) -> Option<&str> {
        self.image.as_deref().or(self.image_name.as_deref())
    }
}

/// Where a record sits in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordLocation {
    /// 0-based index in a JSON array (`jq '.[N]'`).
    Index(usize),
    /// 1-based line number in a JSONL file.
    Line(usize),
}

impl fmt::Display for RecordLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Index(index) => write!(f, "record [{index}]"),
            Self::Line(line) => write!(f, "line {line}"),
        }
    }
}

/// A record that could not be loaded. The other records of the file are unaffected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct InstanceError {
    /// Where the record is in the file.
    pub location: RecordLocation,
    /// The record's `instance_id`, when it has a usable one.
    pub instance_id: Option<String>,
    /// The offending field, when the problem is one field.
    pub field: Option<String>,
    /// What is wrong, naming the value.
    pub message: String,
}

impl fmt::Display for InstanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance_id {
            Some(id) => write!(f, "instance {id:?} ({})", self.location)?,
            None => write!(f, "{}", self.location)?,
        }
        if let Some(field) = &self.field {
            write!(f, ": field {field:?}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A whole-file failure: nothing could be loaded.
#[derive(Debug, thiserror::Error)]
pub enum InstanceFileError {
    /// The file could not be read.
    #[error("failed to read instances file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A JSON array file holds bytes that are not UTF-8.
    #[error("instances file is not valid UTF-8 (first bad byte on line {line})")]
    NotUtf8 {
        /// The 1-based line of the first bad byte.
        line: usize,
    },
    /// The file starts with `[` but is not a JSON array.
    #[error("instances file is not a valid JSON array: {source}")]
    NotJsonArray {
        /// The JSON error, with its line and column.
        source: serde_json::Error,
    },
}

/// The result of loading an instances file: the good records in file order, and one error per
/// bad record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedInstances {
    /// Records that loaded, in file order.
    pub instances: Vec<Instance>,
    /// Records that did not, in file order.
    pub errors: Vec<InstanceError>,
}

/// Reads an instances file (JSON array or JSONL, told apart by content) and resolves `repo_path`
/// against the file's directory.
///
/// A JSONL line that is not UTF-8 is an error for that line only; a JSON array that is not
/// UTF-8 is an error naming the line of the first bad byte.
pub fn load_instances_file(path: &Path) -> Result<LoadedInstances, InstanceFileError> {
    let bytes = std::fs::read(path).map_err(|source| InstanceFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base_dir = path.parent().unwrap_or_else(|| Path::new(""));
    match String::from_utf8(bytes) {
        Ok(text) => parse_instances(&text, Some(base_dir)),
        Err(error) => parse_non_utf8(error.as_bytes(), error.utf8_error(), base_dir),
    }
}

/// An instances file with bytes that are not UTF-8: JSONL loads line by line, each bad line
/// an error of its own; anything else fails whole, at the line of the first bad byte.
fn parse_non_utf8(
    bytes: &[u8],
    error: std::str::Utf8Error,
    base_dir: &Path,
) -> Result<LoadedInstances, InstanceFileError> {
    let first_bad_line = 1 + bytes[..error.valid_up_to()]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    let starts_as_array = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'[');
    if starts_as_array {
        return Err(InstanceFileError::NotUtf8 {
            line: first_bad_line,
        });
    }
    let mut text = String::with_capacity(bytes.len());
    let mut bad_lines = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        match std::str::from_utf8(line) {
            Ok(line) => text.push_str(line),
            // Kept as a blank line, so the line numbers of the others stay right.
            Err(_) => bad_lines.push(index + 1),
        }
        text.push('\n');
    }
    let mut loaded = parse_instances(&text, Some(base_dir))?;
    loaded
        .errors
        .extend(bad_lines.into_iter().map(|line| InstanceError {
            location: RecordLocation::Line(line),
            instance_id: None,
            field: None,
            message: "the line is not valid UTF-8".to_owned(),
        }));
    loaded.errors.sort_by_key(|error| match error.location {
        RecordLocation::Line(line) | RecordLocation::Index(line) => line,
    });
    Ok(loaded)
}

/// Parses instances text. When the first non-space character is `[` the text is one JSON array;
/// otherwise it is JSONL, one record per line, blank lines skipped. A relative `repo_path` is
/// joined onto `base_dir` when one is given. A duplicate `instance_id` is an error for the later
/// record.
pub fn parse_instances(
    text: &str,
    base_dir: Option<&Path>,
) -> Result<LoadedInstances, InstanceFileError> {
    let records: Vec<(RecordLocation, Result<Value, String>)> =
        if text.trim_start().starts_with('[') {
            let values: Vec<Value> = serde_json::from_str(text)
                .map_err(|source| InstanceFileError::NotJsonArray { source })?;
            values
                .into_iter()
                .enumerate()
                .map(|(index, value)| (RecordLocation::Index(index), Ok(value)))
                .collect()
        } else {
            text.lines()
                .enumerate()
                .filter(|(_, line)| !line.trim().is_empty())
                .map(|(number, line)| {
                    let value = serde_json::from_str(line)
                        .map_err(|error| format!("invalid JSON: {error}"));
                    (RecordLocation::Line(number + 1), value)
                })
                .collect()
        };
    let mut loaded = LoadedInstances::default();
    let mut seen = BTreeSet::new();
    for (location, value) in records {
        let result = value
            .map_err(|message| InstanceError {
                location,
                instance_id: None,
                field: None,
                message,
            })
            .and_then(|value| instance_from_value(value, base_dir, location));
        match result {
            Ok(instance) if !seen.insert(instance.instance_id.clone()) => {
                loaded.errors.push(InstanceError {
                    location,
                    instance_id: Some(instance.instance_id),
                    field: Some("instance_id".to_owned()),
                    message: "duplicate instance_id: an earlier record has the same id".to_owned(),
                });
            }
            Ok(instance) => loaded.instances.push(instance),
            Err(error) => loaded.errors.push(error),
        }
    }
    Ok(loaded)
}

/// A problem with one field of a record.
struct FieldError {
    field: &'static str,
    message: String,
}

fn field_error(field: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        field,
        message: message.into(),
    }
}

/// Builds an [`Instance`] from one JSON record, naming the record and field on failure.
fn instance_from_value(
    value: Value,
    base_dir: Option<&Path>,
    location: RecordLocation,
) -> Result<Instance, InstanceError> {
    let Value::Object(map) = value else {
        return Err(InstanceError {
            location,
            instance_id: None,
            field: None,
            message: format!("expected a JSON object, found {}", json_type(&value)),
        });
    };
    let id_hint = match map.get("instance_id") {
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        _ => None,
    };
    let mut record = Record { map };
    read_instance(&mut record, base_dir).map_err(|error| InstanceError {
        location,
        instance_id: id_hint,
        field: Some(error.field.to_owned()),
        message: error.message,
    })
}

fn read_instance(record: &mut Record, base_dir: Option<&Path>) -> Result<Instance, FieldError> {
    let instance_id = record.required_string("instance_id")?;
    if instance_id.trim().is_empty() {
        return Err(field_error("instance_id", "must not be empty"));
    }
    if let Some(reason) = unsafe_id(&instance_id) {
        return Err(field_error("instance_id", reason));
    }
    let repo_path = record.optional_string("repo_path")?.map(|raw| {
        let path = PathBuf::from(raw);
        match base_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path,
        }
    });
    let problem_statement = record.required_string("problem_statement")?;
    let repo = record.checked_string("repo", check::check_repo)?;
    let base_commit = record.checked_optional("base_commit", check::check_commit)?;
    if base_commit.is_none() {
        check_plain_directory(repo_path.as_deref())?;
    }
    let version = record.version("version")?;
    check::check_one_line(&version).map_err(|message| field_error("version", message))?;
    Ok(Instance {
        instance_id,
        problem_statement,
        repo,
        base_commit,
        patch: record.optional_string("patch")?,
        test_patch: record.optional_string("test_patch")?,
        fail_to_pass: record.test_list("FAIL_TO_PASS", "fail_to_pass")?,
        pass_to_pass: record.test_list("PASS_TO_PASS", "pass_to_pass")?,
        hints_text: record.optional_string("hints_text")?.unwrap_or_default(),
        version,
        created_at: record.optional_string("created_at")?.unwrap_or_default(),
        environment_setup_commit: record
            .checked_optional("environment_setup_commit", check::check_commit)?,
        repo_path,
        image: record.checked_optional("image", check::check_image)?,
        image_name: record.checked_optional("image_name", check::check_image)?,
        language: record.checked_optional("language", check::check_language)?,
        setup: record.setup("setup")?,
        test_cmd: record.optional_string("test_cmd")?,
        log_parser: record.optional_string("log_parser")?,
        extra_fields: std::mem::take(&mut record.map),
    })
}

/// A record without `base_commit` must name a `repo_path` that is a plain directory: a git
/// repository (or a repository found elsewhere) needs the commit to check out.
fn check_plain_directory(repo_path: Option<&Path>) -> Result<(), FieldError> {
    match repo_path {
        None => Err(field_error(
            "base_commit",
            "missing (only a repo_path that is a plain directory can do without one)",
        )),
        Some(path) if path.join(".git").exists() => Err(field_error(
            "base_commit",
            format!(
                "missing: repo_path {} is a git repository, so the commit to check out must be given",
                path.display()
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// A JSON record whose known fields are taken out one by one; what is left is `extra_fields`.
struct Record {
    map: Map<String, Value>,
}

impl Record {
    fn required_string(&mut self, field: &'static str) -> Result<String, FieldError> {
        match self.map.remove(field) {
            None => Err(field_error(field, "missing")),
            Some(Value::Null) => Err(field_error(field, "missing (null)")),
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(field_error(
                field,
                format!("expected a string, found {}", json_type(&other)),
            )),
        }
    }

    /// A required string that `check` accepts.
    fn checked_string(
        &mut self,
        field: &'static str,
        check: fn(&str) -> Result<(), String>,
    ) -> Result<String, FieldError> {
        let value = self.required_string(field)?;
        check(&value).map_err(|message| field_error(field, message))?;
        Ok(value)
    }

    /// An optional string that `check` accepts when it is there.
    fn checked_optional(
        &mut self,
        field: &'static str,
        check: fn(&str) -> Result<(), String>,
    ) -> Result<Option<String>, FieldError> {
        let value = self.optional_string(field)?;
        if let Some(value) = &value {
            check(value).map_err(|message| field_error(field, message))?;
        }
        Ok(value)
    }

    fn optional_string(&mut self, field: &'static str) -> Result<Option<String>, FieldError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(field_error(
                field,
                format!("expected a string, found {}", json_type(&other)),
            )),
        }
    }

    /// A string, or a number turned into text as serde_json prints it (`0.12` → `"0.12"`).
    fn version(&mut self, field: &'static str) -> Result<String, FieldError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text),
            Some(Value::Number(number)) => Ok(number.to_string()),
            Some(other) => Err(field_error(
                field,
                format!("expected a string or number, found {}", json_type(&other)),
            )),
        }
    }

    /// A list of test ids, written either as a JSON list or as a string holding a JSON-encoded
    /// list (the SWE-bench dataset form). The lowercase key is accepted as an alias.
    fn test_list(
        &mut self,
        field: &'static str,
        alias: &'static str,
    ) -> Result<Vec<String>, FieldError> {
        let value = match (self.map.remove(field), self.map.remove(alias)) {
            (Some(_), Some(_)) => {
                return Err(field_error(
                    field,
                    format!("given twice, as {field} and as {alias}; keep one"),
                ));
            }
            (Some(value), None) | (None, Some(value)) => value,
            (None, None) => return Ok(Vec::new()),
        };
        let value = match value {
            Value::String(text) => serde_json::from_str(&text).map_err(|error| {
                field_error(
                    field,
                    format!("a string must hold a JSON list of test ids: {error}"),
                )
            })?,
            other => other,
        };
        match value {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(id) => Ok(id),
                    other => Err(field_error(
                        field,
                        format!(
                            "item {index}: expected a string test id, found {}",
                            json_type(&other)
                        ),
                    )),
                })
                .collect(),
            other => Err(field_error(
                field,
                format!(
                    "expected a list of test ids (or a JSON string of one), found {}",
                    json_type(&other)
                ),
            )),
        }
    }

    /// One command as a string, or a list of commands. A blank string means no commands.
    fn setup(&mut self, field: &'static str) -> Result<Vec<String>, FieldError> {
        match self.map.remove(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(command)) if command.trim().is_empty() => Ok(Vec::new()),
            Some(Value::String(command)) => Ok(vec![command]),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(command) => Ok(command),
                    other => Err(field_error(
                        field,
                        format!(
                            "item {index}: expected a string command, found {}",
                            json_type(&other)
                        ),
                    )),
                })
                .collect(),
            Some(other) => Err(field_error(
                field,
                format!(
                    "expected a string or a list of strings, found {}",
                    json_type(&other)
                ),
            )),
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A bad `--filter`, `--slice` or `--shard` value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectionError {
    /// `--filter` is not a valid regular expression.
    #[error("invalid --filter {input:?}: {reason}")]
    Filter {
        /// What the user wrote.
        input: String,
        /// The regex error.
        reason: String,
    },
    /// `--slice` is not `A:B` or `A:B:STEP`.
    #[error("invalid --slice {input:?}: {reason}")]
    Slice {
        /// What the user wrote.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// `--shard` is not `I/N` with `1 <= I <= N`.
    #[error("invalid --shard {input:?}: {reason}")]
    Shard {
        /// What the user wrote.
        input: String,
        /// What is wrong.
        reason: String,
    },
}

impl Hint for SelectionError {
    fn hint(&self) -> Option<String> {
        let hint = match self {
            SelectionError::Filter { .. } => return None,
            SelectionError::Slice { .. } => "use Python slice syntax, e.g. 0:10, -5:, ::2",
            SelectionError::Shard { .. } => "write I/N with shards numbered 1..=N, e.g. 1/4",
        };
        Some(hint.to_owned())
    }
}

/// Parses `--slice A:B[:STEP]` on the command line, where the parser's error is one text: the
/// message with its hint on the next line.
pub fn parse_slice_arg(input: &str) -> Result<SliceSpec, String> {
    input.parse().map_err(|error| with_hint(&error))
}

/// Parses `--shard I/N` on the command line, as [`parse_slice_arg`] does `--slice`.
pub fn parse_shard_arg(input: &str) -> Result<ShardSpec, String> {
    input.parse().map_err(|error| with_hint(&error))
}

/// Parses `--filter RE`. The regex must match at the start of the instance id, as Python's
/// `re.match` does in SWE-agent and mini-swe-agent (`django` selects `django__django-11099`,
/// `11099` selects nothing; write `.*11099` to match anywhere, and end with `$` to match the
/// whole id).
pub fn parse_filter(input: &str) -> Result<Regex, SelectionError> {
    let invalid = |error: regex::Error| SelectionError::Filter {
        input: input.to_owned(),
        reason: error.to_string(),
    };
    // Checked alone first, so an error quotes what the user wrote.
    Regex::new(input).map_err(invalid)?;
    Regex::new(&format!(r"\A(?:{input})")).map_err(invalid)
}

/// `--slice A:B[:STEP]` with Python slice semantics: negative indices count from the end, omitted
/// ends default by the step's sign, out-of-range ends are clamped, and a negative step walks
/// backwards. A step of 0 is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceSpec {
    /// First index (`A`), or `None` when omitted.
    pub start: Option<i64>,
    /// End index, exclusive (`B`), or `None` when omitted.
    pub stop: Option<i64>,
    /// Step, never 0; 1 when omitted.
    pub step: i64,
}

impl FromStr for SliceSpec {
    type Err = SelectionError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| SelectionError::Slice {
            input: input.to_owned(),
            reason: reason.to_owned(),
        };
        let parts: Vec<&str> = input.split(':').map(str::trim).collect();
        if parts.len() < 2 {
            return Err(fail("expected a colon, as in A:B"));
        }
        if parts.len() > 3 {
            return Err(fail("expected at most two colons, as in A:B:STEP"));
        }
        let number = |part: &str| -> Result<Option<i64>, SelectionError> {
            if part.is_empty() {
                return Ok(None);
            }
            part.parse::<i64>()
                .map(Some)
                .map_err(|_| fail(&format!("{part:?} is not an integer")))
        };
        let step = match parts.get(2) {
            Some(part) => number(part)?.unwrap_or(1),
            None => 1,
        };
        if step == 0 {
            return Err(fail("the step must not be zero"));
        }
        Ok(Self {
            start: number(parts[0])?,
            stop: number(parts[1])?,
            step,
        })
    }
}

impl SliceSpec {
    /// The indices this slice selects from a sequence of `len` items, in order
    /// (CPython's `PySlice_AdjustIndices`).
    pub fn indices(&self, len: usize) -> Vec<usize> {
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        let clamp = |value: i64, low: i64, high: i64| {
            let value = if value < 0 {
                value.saturating_add(len)
            } else {
                value
            };
            value.clamp(low, high)
        };
        let mut indices = Vec::new();
        if self.step > 0 {
            let start = self.start.map_or(0, |s| clamp(s, 0, len));
            let stop = self.stop.map_or(len, |s| clamp(s, 0, len));
            let mut index = start;
            while index < stop {
                indices.push(index);
                let Some(next) = index.checked_add(self.step) else {
                    break;
                };
                index = next;
            }
        } else {
            let start = self.start.map_or(len - 1, |s| clamp(s, -1, len - 1));
            let stop = self.stop.map_or(-1, |s| clamp(s, -1, len - 1));
            let mut index = start;
            while index > stop {
                indices.push(index);
                let Some(next) = index.checked_add(self.step) else {
                    break;
                };
                index = next;
            }
        }
        indices
            .into_iter()
            .filter_map(|index| usize::try_from(index).ok())
            .collect()
    }
}

/// `--shard I/N`: shards are numbered from 1 to N, and shard I takes the I-th of N contiguous,
/// near-equal chunks (the first `len % N` chunks hold one extra item). Contiguous chunks keep
/// instances of one repository together, so a shard reuses its images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// 1-based shard number.
    pub index: usize,
    /// Number of shards, at least 1.
    pub count: usize,
}

impl FromStr for ShardSpec {
    type Err = SelectionError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: String| SelectionError::Shard {
            input: input.to_owned(),
            reason,
        };
        let Some((index, count)) = input.split_once('/') else {
            return Err(fail("expected a slash, as in 1/4".to_owned()));
        };
        let parse = |part: &str| {
            part.trim()
                .parse::<usize>()
                .map_err(|_| fail(format!("{:?} is not a non-negative integer", part.trim())))
        };
        let (index, count) = (parse(index)?, parse(count)?);
        if count == 0 {
            return Err(fail("the shard count must be at least 1".to_owned()));
        }
        if index == 0 || index > count {
            return Err(fail(format!(
                "shard {index} is out of range: shards are numbered 1 to {count}"
            )));
        }
        Ok(Self { index, count })
    }
}

impl ShardSpec {
    /// The index range of this shard in a sequence of `len` items.
    pub fn range(&self, len: usize) -> std::ops::Range<usize> {
        let (base, extra) = (len / self.count, len % self.count);
        let chunk = |shard: usize| shard * base + shard.min(extra);
        chunk(self.index - 1)..chunk(self.index)
    }
}

/// The selection options of `aci batch`, applied in the order shuffle → filter → slice → shard
/// (SWE-agent's and mini-swe-agent's order for the first three; they have no shards).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `--shuffle --seed N`: when set, sort by id and shuffle with Python's `random` seeded
    /// with this number.
    pub shuffle_seed: Option<u64>,
    /// `--filter RE`, matched at the start of the id ([`parse_filter`]).
    pub filter: Option<Regex>,
    /// `--slice A:B[:STEP]`.
    pub slice: Option<SliceSpec>,
    /// `--shard I/N`.
    pub shard: Option<ShardSpec>,
}

/// Applies a [`Selection`]: shuffle (if asked) → filter → slice → shard. Without `--shuffle` the
/// file order is kept.
pub fn select(mut instances: Vec<Instance>, selection: &Selection) -> Vec<Instance> {
    if let Some(seed) = selection.shuffle_seed {
        instances.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        shuffle(&mut instances, seed);
    }
    if let Some(filter) = &selection.filter {
        instances.retain(|instance| filter.is_match(&instance.instance_id));
    }
    if let Some(slice) = &selection.slice {
        let mut slots: Vec<Option<Instance>> = instances.into_iter().map(Some).collect();
        instances = slice
            .indices(slots.len())
            .into_iter()
            .filter_map(|index| slots.get_mut(index).and_then(Option::take))
            .collect();
    }
    if let Some(shard) = &selection.shard {
        let range = shard.range(instances.len());
        instances = instances
            .into_iter()
            .skip(range.start)
            .take(range.len())
            .collect();
    }
    instances
}

/// Shuffles `items` in place as Python's `random.seed(seed); random.shuffle(items)` does, the
/// way SWE-agent (`sweagent/run/batch_instances.py`) and mini-swe-agent
/// (`run/benchmarks/swebench.py`) shuffle the instances they sorted by id.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    PythonRandom::new(seed).shuffle(items);
}

#[cfg(test)]
mod tests;
