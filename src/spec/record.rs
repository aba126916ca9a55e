//! The evaluation spec a SWE-bench record carries itself (the 5.x exports: Verified, dev,
//! multilingual, multimodal): its `eval_script`, `log_parser` and `eval_type`. aci never runs
//! the script; it reads from it the test command (the lines between the script's
//! `: '>>>>> Start Test Output'` and `: '>>>>> End Test Output'`), the test files its
//! `git checkout <commit> <files>` line resets, and its activation lines, and runs the command in
//! its own `eval.sh`, between its own reset, tripwire and canaries.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The script line just before the test command.
pub const START_LINE: &str = ": '>>>>> Start Test Output'";
/// The script line just after the test command.
pub const END_LINE: &str = ": '>>>>> End Test Output'";
/// The same markers as a few multilingual records write them (`echo` instead of `:`).
const ECHO_START_LINE: &str = "echo '>>>>> Start Test Output'";
const ECHO_END_LINE: &str = "echo '>>>>> End Test Output'";

/// Which spec grades a record that carries its own and that the built-in table also has
/// (`env.spec_source`, `--spec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SpecSource {
    /// The record's own `eval_script`, `log_parser` and `eval_type` (the default).
    #[default]
    Record,
    /// The built-in table (`specs/swebench.yaml` and `env.specs`).
    Builtin,
}

impl SpecSource {
    /// `record` or `builtin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Builtin => "builtin",
        }
    }
}

impl fmt::Display for SpecSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How FAIL_TO_PASS and PASS_TO_PASS are read from the status map (SWE-bench's `eval_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvalType {
    /// A test succeeds when it passed (or xfailed), fails when it failed, errored or is missing;
    /// a skipped test is in neither list.
    #[default]
    PassAndFail,
    /// A test fails only when the log reports it FAILED; anything else (passed, errored,
    /// skipped, missing) is a success. For runners whose logs name only failing tests.
    FailOnly,
}

impl EvalType {
    /// The record's name: `pass_and_fail` or `fail_only`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PassAndFail => "pass_and_fail",
            Self::FailOnly => "fail_only",
        }
    }

    /// The eval type called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::PassAndFail, Self::FailOnly]
            .into_iter()
            .find(|eval_type| eval_type.as_str() == name)
    }
}

/// What aci takes from a record's `eval_script`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSpec {
    /// The test command: every line between [`START_LINE`] and [`END_LINE`] (or the same markers
    /// written with `echo`), joined by `\n`.
    pub test_cmd: String,
    /// The files the script resets before applying the test patch (its
    /// `git checkout <commit> <files>` line before [`START_LINE`]), in its order.
    pub test_files: Vec<String>,
    /// The activation lines before the script's first `cd` (`source …/activate`,
    /// `conda activate …`), joined by ` && `; `None` when it has none.
    pub activation: Option<String>,
}

/// A record's whole spec: its script's parts, its `log_parser` and its `eval_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSpec {
    /// From `eval_script`.
    pub script: ScriptSpec,
    /// `log_parser`, as the record names it (`parse_log_pytest`, `parse_log_gotest`, …).
    pub log_parser: Option<String>,
    /// `eval_type` (`pass_and_fail` when the record has none).
    pub eval_type: EvalType,
}

/// Why a record's spec cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordSpecError {
    /// A marker line is missing.
    #[error("the record's eval_script has no line {0:?}")]
    NoMarker(&'static str),
    /// The markers are out of order or repeated.
    #[error(
        "the record's eval_script does not have exactly one {START_LINE:?} line before one {END_LINE:?} line"
    )]
    Markers,
    /// Nothing between the markers.
    #[error("the record's eval_script has no test command between its markers")]
    EmptyCommand,
    /// `eval_type` is neither `pass_and_fail` nor `fail_only`.
    #[error("the record's eval_type {0:?} is neither pass_and_fail nor fail_only")]
    EvalType(String),
}

/// The parts of `eval_script` aci uses (see [`ScriptSpec`]).
///
/// # Errors
/// The script lacks one of the markers, has either twice, has them out of order, or has nothing
/// between them.
pub fn parse_eval_script(eval_script: &str) -> Result<ScriptSpec, RecordSpecError> {
    let lines = outside_heredocs(eval_script);
    let find = |marker: &'static str, echoed: &str| {
        let at: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i] == marker || lines[i] == echoed)
            .collect();
        match at.as_slice() {
            [] => Err(RecordSpecError::NoMarker(marker)),
            [one] => Ok(*one),
            _ => Err(RecordSpecError::Markers),
        }
    };
    let start = find(START_LINE, ECHO_START_LINE)?;
    let end = find(END_LINE, ECHO_END_LINE)?;
    if end <= start {
        return Err(RecordSpecError::Markers);
    }
    let test_cmd = lines[start + 1..end].join("\n");
    if test_cmd.trim().is_empty() {
        return Err(RecordSpecError::EmptyCommand);
    }
    Ok(ScriptSpec {
        test_cmd,
        test_files: reset_files(&lines[..start]),
        activation: activation(&lines),
    })
}

/// A record's spec from its fields: `eval_script` (required), `log_parser` and `eval_type`.
///
/// # Errors
/// The script cannot be read ([`parse_eval_script`]), or `eval_type` is unknown.
pub fn record_spec(
    eval_script: &str,
    log_parser: Option<&str>,
    eval_type: Option<&str>,
) -> Result<RecordSpec, RecordSpecError> {
    let eval_type = match eval_type {
        None => EvalType::PassAndFail,
        Some(name) => {
            EvalType::from_name(name).ok_or_else(|| RecordSpecError::EvalType(name.to_owned()))?
        }
    };
    Ok(RecordSpec {
        script: parse_eval_script(eval_script)?,
        log_parser: log_parser.map(str::to_owned),
        eval_type,
    })
}

/// The script's lines, without the bodies of its quoted heredocs (`<<'EOF_…'` … `EOF_…`), so
/// that a test patch holding a marker line cannot move the test command.
fn outside_heredocs(eval_script: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut delimiter: Option<&str> = None;
    for line in eval_script.lines() {
        if let Some(end) = delimiter {
            if line == end {
                delimiter = None;
            }
            continue;
        }
        lines.push(line);
        delimiter = line
            .strip_suffix('\'')
            .and_then(|head| head.rsplit_once("<<'"))
            .map(|(_, name)| name)
            .filter(|name| !name.is_empty());
    }
    lines
}

/// The files of the last `git checkout <commit> <files…>` line before the test run, up to a shell
/// operator (`&& rm -f <new files>` in some multilingual records): the reset SWE-bench's script
/// makes before it applies the test patch (the one after the tests is the same line again).
fn reset_files(before_start: &[&str]) -> Vec<String> {
    before_start
        .iter()
        .rev()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            let is_checkout = words.next() == Some("git") && words.next() == Some("checkout");
            let _commit = words.next()?;
            let files: Vec<String> = words
                .take_while(|word| !matches!(*word, "&&" | "||" | ";" | "|"))
                .map(str::to_owned)
                .collect();
            (is_checkout && !files.is_empty()).then_some(files)
        })
        .unwrap_or_default()
}

/// The activation lines before the first `cd`.
fn activation(lines: &[&str]) -> Option<String> {
    let steps: Vec<&str> = lines
        .iter()
        .take_while(|line| !line.starts_with("cd "))
        .copied()
        .filter(|line| {
            let line = line.trim();
            (line.starts_with("source ") && line.ends_with("/activate"))
                || line.starts_with("conda activate ")
        })
        .collect();
    (!steps.is_empty()).then(|| steps.join(" && "))
}

#[cfg(test)]
mod tests;
