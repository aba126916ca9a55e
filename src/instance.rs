//! The task record: SWE-bench instance fields plus aci's own optional fields, and the JSON and
//! JSONL loaders (a bad record is reported and skipped, the rest still loads). Which instances
//! run, and in which order, is [`selection`]'s.

pub mod check;
mod python_random;
pub mod selection;

pub use check::{MAX_ID_BYTES, unsafe_id};
pub use python_random::PythonRandom;
pub use selection::{
    DEFAULT_SEED, Selection, SelectionError, ShardSpec, SliceSpec, parse_filter, parse_shard_arg,
    parse_slice_arg, select, shuffle,
};

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

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

impl crate::hint::Hint for InstanceFileError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => Some(
                "--instances takes a JSONL or JSON file of task records (SWE-bench's fields: \
                 instance_id, repo, base_commit, problem_statement, …), e.g. a SWE-bench split \
                 exported to lite.jsonl"
                    .to_owned(),
            ),
            _ => None,
        }
    }
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

#[cfg(test)]
mod tests;
