//! `aci eval --from-logs DIR`: grading test logs that already exist, with no container. The logs
//! are found by layout: aci's (`DIR/<id>/test_output.txt`), the SWE-bench harness's 2.x and later
//! (`logs/run_evaluation/<run_id>/<model>/<id>/test_output.txt`, found at any depth under `DIR`)
//! and its 1.x (`<id>.<model>.eval.log`). Each is read in its own format ([`super::logs`]) and
//! graded as `aci eval` grades; the same files come out.
//!
//! A log is streamed, never read whole: its head and tail are kept as a live evaluation keeps a
//! test run's output ([`EVAL_OUTPUT_LIMIT`], 8 MiB each, a note of what was dropped between
//! them), and that bounded text is what is graded and copied into the output, so memory stays
//! bounded by the limit whatever the log's size.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::cause::{Cause, CauseKind, Evidence, classify, run_log_line};
use super::container::EVAL_OUTPUT_LIMIT;
use super::grade::grade_as;
use super::logs::{AnyReading, LogFormat, log_format, read_any_log};
use super::parse::LogReading;
use super::plan::{eval_type_for, log_parser_for};
use super::predictions::Prediction;
use super::report::{
    InstanceOutcome, InstanceReport, RunSummary, add_causes, instance_report_json,
    model_path_component, run_summary_from, run_summary_json,
};
use super::run::{EvalError, InstanceDone, InstanceStatus};
use super::spec::{self, SpecSource};
use super::suspicious::{BaseFiles, TouchedFile, test_infrastructure};
use crate::files::write_atomic;
use crate::instance::Instance;
use crate::patch::patch_paths;
use crate::sandbox::shell::CappedBuffer;
use crate::text::escape_controls;

/// How deep under `DIR` logs are looked for (the 2.x layout needs four levels).
pub const MAX_DEPTH: usize = 8;

/// One log found for an instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    /// The log.
    pub path: PathBuf,
    /// The model its layout names (the 2.x run directory's model, or the 1.x file name's),
    /// as a path component (`/` written `__`).
    pub model: Option<String>,
    /// The `patch.diff` beside it, if any.
    pub patch: Option<PathBuf>,
    /// The reason, when the SWE-bench 5.x harness's `report.json` beside it says
    /// `"infra_failure": true` (its `infra_failure_reason`, or `unknown`): the environment
    /// broke, not the patch ([`harness_infra_failure`]).
    pub infra_failure: Option<String>,
}

/// The largest harness `report.json` read for its `infra_failure` flag.
const HARNESS_REPORT_LIMIT: u64 = 1024 * 1024;

/// Whether the SWE-bench 5.x harness's per-instance `report.json` at `path`
/// (`{"<id>": {"resolved": …, "infra_failure": true, "infra_failure_reason": "…"}}`) flags an
/// infrastructure failure: its reason, or `unknown` when it gives none. aci's own `report.json`
/// has no such flag, and a file that is missing, too big or not JSON flags nothing.
pub fn harness_infra_failure(path: &Path, id: &str) -> Option<String> {
    let size = std::fs::metadata(path).ok()?.len();
    if size > HARNESS_REPORT_LIMIT {
        return None;
    }
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let entry = report.get(id)?;
    (entry.get("infra_failure")? == true).then(|| {
        entry
            .get("infra_failure_reason")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("unknown")
            .to_owned()
    })
}

/// Finds the logs of the instances `ids` under `dir`, without following symbolic links: every
/// `<id>/test_output.txt` and every `<id>.<model>.eval.log`.
///
/// # Errors
/// A directory cannot be read.
pub fn find_logs(
    dir: &Path,
    ids: &BTreeSet<String>,
) -> Result<BTreeMap<String, Vec<LogFile>>, EvalError> {
    let mut found: BTreeMap<String, Vec<LogFile>> = BTreeMap::new();
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    while let Some((current, depth)) = pending.pop() {
        let unreadable = |source| EvalError::Logs {
            path: current.clone(),
            source,
        };
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&current).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            let kind = entry.file_type().map_err(unreadable)?;
            entries.push((entry.path(), kind));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, kind) in entries {
            if kind.is_dir() && depth < MAX_DEPTH {
                pending.push((path, depth + 1));
            } else if kind.is_file()
                && let Some((id, log)) = log_file(dir, &path, ids)
            {
                found.entry(id).or_default().push(log);
            }
        }
    }
    Ok(found)
}

/// The instance and the log that `path` is, if it is one.
fn log_file(root: &Path, path: &Path, ids: &BTreeSet<String>) -> Option<(String, LogFile)> {
    let name = path.file_name()?.to_str()?;
    if name == "test_output.txt" {
        let instance_dir = path.parent()?;
        let id = instance_dir.file_name()?.to_str()?;
        if !ids.contains(id) {
            return None;
        }
        let model = instance_dir
            .parent()
            .filter(|parent| *parent != root)
            .and_then(Path::file_name)
            .and_then(|model| model.to_str())
            .map(str::to_owned);
        let patch = Some(instance_dir.join("patch.diff")).filter(|patch| patch.is_file());
        let log = LogFile {
            path: path.to_path_buf(),
            model,
            patch,
            infra_failure: harness_infra_failure(&instance_dir.join("report.json"), id),
        };
        return Some((id.to_owned(), log));
    }
    let stem = name.strip_suffix(".eval.log")?;
    let id = ids
        .iter()
        .filter(|id| stem == id.as_str() || stem.starts_with(&format!("{id}.")))
        .max_by_key(|id| id.len())?;
    let model = stem[id.len()..].strip_prefix('.').map(str::to_owned);
    let log = LogFile {
        path: path.to_path_buf(),
        model: model.filter(|model| !model.is_empty()),
        patch: None,
        infra_failure: None,
    };
    Some((id.clone(), log))
}

/// Where the logs are and where the reports go.
#[derive(Debug, Clone)]
pub struct FromLogsSettings {
    /// `--from-logs DIR`.
    pub logs: PathBuf,
    /// `--output OUT`.
    pub output: PathBuf,
    /// Which spec grades a record that carries its own (`--spec`, `env.spec_source`): it
    /// chooses the parser and how the lists are read (`eval_type`).
    pub spec: SpecSource,
}

/// Grades the logs of `instances` (the selection) found under `settings.logs` and writes the
/// same files as `aci eval` into `settings.output`: per instance `test_output.txt` (the log),
/// `patch.diff` (when known), `run_instance.log` (which log, which parser, any error) and, for a
/// completed evaluation only, `report.json`; then the summary `report.json`.
///
/// With `predictions`, an instance without one is incomplete, an empty patch is not evaluated,
/// and a missing log is an error. Without, every instance with a log counts as submitted (a 1.x
/// log of an empty prediction as an empty patch) and the others as incomplete.
///
/// # Errors
/// A directory under `settings.logs` cannot be read, or the summary cannot be written.
pub fn grade_logs(
    instances: &[Instance],
    predictions: Option<&[Prediction]>,
    settings: &FromLogsSettings,
    progress: &mut dyn FnMut(&InstanceDone),
) -> Result<RunSummary, EvalError> {
    let ids: BTreeSet<String> = instances.iter().map(|i| i.instance_id.clone()).collect();
    let mut logs = find_logs(&settings.logs, &ids)?;
    let by_id: Option<HashMap<&str, &Prediction>> = predictions.map(|predictions| {
        predictions
            .iter()
            .map(|p| (p.instance_id.as_str(), p))
            .collect()
    });
    let mut submitted = BTreeMap::new();
    let mut outcomes = BTreeMap::new();
    let mut resolved_touching_tests = Vec::new();
    let mut touching_tests = Vec::new();
    let mut causes = BTreeMap::new();
    for instance in instances {
        let started = Instant::now();
        let id = instance.instance_id.clone();
        let prediction = by_id.as_ref().map(|map| map.get(id.as_str()).copied());
        let job = Job {
            instance,
            prediction,
            logs: logs.remove(&id).unwrap_or_default(),
            settings,
        };
        let (status, touches_tests, cause) = job.run();
        match (&status, prediction) {
            (InstanceStatus::NoPrediction, _) => {}
            (InstanceStatus::EmptyPatch, _) => {
                submitted.insert(id.clone(), true);
            }
            (_, Some(Some(prediction))) => {
                submitted.insert(id.clone(), prediction.model_patch.is_empty());
            }
            _ => {
                submitted.insert(id.clone(), false);
            }
        }
        let done = InstanceDone {
            instance_id: id.clone(),
            status,
            reused: false,
            elapsed: started.elapsed(),
            touches_tests,
            cause,
        };
        if let Some(cause) = &done.cause {
            causes.insert(id.clone(), cause.clone());
        }
        if let Some(outcome) = outcome(&done.status) {
            outcomes.insert(id.clone(), outcome);
        }
        if !done.touches_tests.is_empty() {
            touching_tests.push(id.clone());
            if done.status == InstanceStatus::Resolved {
                resolved_touching_tests.push(id);
            }
        }
        progress(&done);
    }
    let all: Vec<String> = ids.into_iter().collect();
    let mut summary = run_summary_from(&all, &submitted, &outcomes);
    summary.resolved_touching_tests_ids = resolved_touching_tests;
    summary.touching_tests_ids = touching_tests;
    add_causes(&mut summary, &causes);
    let path = settings.output.join("report.json");
    write_atomic(&path, run_summary_json(&summary).as_bytes())
        .map_err(|source| EvalError::Output { path, source })?;
    Ok(summary)
}

fn outcome(status: &InstanceStatus) -> Option<InstanceOutcome> {
    match status {
        InstanceStatus::Resolved => Some(InstanceOutcome::Resolved),
        InstanceStatus::Unresolved(_) => Some(InstanceOutcome::Unresolved),
        InstanceStatus::Error(_) => Some(InstanceOutcome::Error),
        InstanceStatus::EmptyPatch | InstanceStatus::NoPrediction => None,
    }
}

/// One instance graded from its logs.
struct Job<'a> {
    instance: &'a Instance,
    /// `None`: no predictions file; `Some(None)`: the file has none for this instance.
    prediction: Option<Option<&'a Prediction>>,
    logs: Vec<LogFile>,
    settings: &'a FromLogsSettings,
}

impl Job<'_> {
    /// Grades and writes the files; returns the status, the test files the patch touches and
    /// why it did not resolve.
    fn run(self) -> Graded {
        let dir = self.settings.output.join(&self.instance.instance_id);
        match self.prediction {
            Some(None) => return (InstanceStatus::NoPrediction, Vec::new(), None),
            Some(Some(prediction)) if prediction.model_patch.is_empty() => {
                let _ = std::fs::remove_file(dir.join("report.json"));
                return (InstanceStatus::EmptyPatch, Vec::new(), None);
            }
            _ => {}
        }
        let log = match self.choose_log() {
            Ok(Some(log)) => log,
            Ok(None) => return (InstanceStatus::NoPrediction, Vec::new(), None),
            Err(reason) => return self.failed(&dir, None, &reason, Vec::new()),
        };
        let (bytes, elided) = match read_bounded(&log.path) {
            Ok(read) => read,
            Err(e) => {
                let reason = format!("cannot read {}: {e}", log.path.display());
                return self.failed(&dir, Some((&log, 0)), &reason, Vec::new());
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let patch = self.patch_text(&log);
        let written = self.copy_inputs(&dir, &log, &bytes, patch.as_deref());
        if let Err(reason) = written {
            return self.failed(&dir, Some((&log, elided)), &reason, Vec::new());
        }
        self.grade(&dir, (&log, elided), &text, patch.as_deref())
    }

    /// The log to grade: the only one, or the one under the prediction's model. `Ok(None)`:
    /// there is none and no predictions file says there should be.
    fn choose_log(&self) -> Result<Option<LogFile>, String> {
        let mut logs = self.logs.clone();
        // A copy an earlier grading wrote into the output directory, beside the log it copied.
        let own_copy = self
            .settings
            .output
            .join(&self.instance.instance_id)
            .join("test_output.txt");
        if logs.len() > 1 {
            logs.retain(|log| !same_file(&log.path, &own_copy));
        }
        if logs.len() > 1
            && let Some(Some(prediction)) = self.prediction
        {
            let model = model_path_component(&prediction.model_name_or_path);
            logs.retain(|log| log.model.as_deref() == Some(model.as_str()));
        }
        match logs.len() {
            0 if self.prediction.is_none() && self.logs.is_empty() => Ok(None),
            0 if self.logs.is_empty() => Err(format!(
                "no log of this instance under {}",
                self.settings.logs.display()
            )),
            1 => Ok(logs.pop()),
            _ => {
                let candidates = if logs.is_empty() { &self.logs } else { &logs };
                let paths: Vec<String> = candidates
                    .iter()
                    .map(|log| log.path.display().to_string())
                    .collect();
                Err(format!(
                    "several logs of this instance, {}; point --from-logs at one run's directory",
                    paths.join(", ")
                ))
            }
        }
    }

    /// The patch: the prediction's, else the `patch.diff` beside the log.
    fn patch_text(&self, log: &LogFile) -> Option<String> {
        if let Some(Some(prediction)) = self.prediction {
            return Some(prediction.model_patch.clone());
        }
        let bytes = std::fs::read(log.patch.as_ref()?).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `test_output.txt` (the bounded text read from the log, unless the log is that file
    /// itself) and `patch.diff`.
    fn copy_inputs(
        &self,
        dir: &Path,
        log: &LogFile,
        bytes: &[u8],
        patch: Option<&str>,
    ) -> Result<(), String> {
        let target = dir.join("test_output.txt");
        if !same_file(&target, &log.path) {
            write(&target, bytes)?;
        }
        let patch_target = dir.join("patch.diff");
        match patch {
            Some(patch)
                if !log
                    .patch
                    .as_ref()
                    .is_some_and(|p| same_file(p, &patch_target)) =>
            {
                write(&patch_target, patch.as_bytes())
            }
            _ => Ok(()),
        }
    }

    /// Grades `text`, read from `read` (the log and the bytes dropped from its middle).
    fn grade(&self, dir: &Path, read: (&LogFile, u64), text: &str, patch: Option<&str>) -> Graded {
        let (log, elided) = read;
        let instance = self.instance;
        let table = spec::builtin();
        let parser = match log_parser_for(instance, table, self.settings.spec) {
            Ok(parser) => parser,
            Err(e) => return self.failed(dir, Some(read), &e.to_string(), Vec::new()),
        };
        let eval_type = eval_type_for(instance, table, self.settings.spec);
        let reading = match read_any_log(text, parser.parser()) {
            AnyReading::EmptyPatch if matches!(self.prediction, Some(Some(_))) => {
                let reason = "the log is of an empty prediction, not of this patch";
                return self.failed(dir, Some(read), reason, Vec::new());
            }
            AnyReading::EmptyPatch => {
                let _ = std::fs::remove_file(dir.join("report.json"));
                let _ = write(
                    &dir.join("run_instance.log"),
                    source_line(log, Some(text), elided).as_bytes(),
                );
                return (InstanceStatus::EmptyPatch, Vec::new(), None);
            }
            AnyReading::Reading(reading) => reading,
        };
        let not_run = match &reading {
            LogReading::NotRun(reason) => Some(*reason),
            LogReading::Ran(_) => None,
        };
        let graded = grade_as(
            &reading,
            &instance.fail_to_pass,
            &instance.pass_to_pass,
            eval_type,
        );
        let mut report = InstanceReport::from_grade(&graded, None);
        report.touches_tests = patch
            .map(|patch| {
                test_infrastructure(patch, instance.test_patch.as_deref(), &BaseFiles::new())
            })
            .unwrap_or_default();
        let files = patch.map(patch_paths).unwrap_or_default();
        let cause = classify(&Evidence {
            resolved: report.resolved,
            error: report.error.as_deref(),
            not_run,
            test_log: text,
            timed_out: report.timed_out,
            untrusted_reason: report.untrusted_reason.as_deref(),
            tests_status: report.tests_status.as_ref(),
            patch_files: &files,
            ..Evidence::default()
        });
        report.cause = flagged(cause, report.resolved, log.infra_failure.as_deref());
        if let Some(error) = &report.error {
            let status = self.error(dir, Some(read), error, report.cause.as_ref());
            return (status, report.touches_tests, report.cause);
        }
        let mut run_log = source_line(log, Some(text), elided);
        run_log.push_str(&format!("parser: {parser}\n"));
        if let Some(reason) = &log.infra_failure {
            run_log.push_str(&infra_failure_line(reason));
        }
        run_log.push_str(&run_log_line(report.cause.as_ref()));
        let json = with_infra_failure(
            instance_report_json(&instance.instance_id, &report),
            &instance.instance_id,
            log.infra_failure.as_deref(),
        );
        let written = write(&dir.join("run_instance.log"), run_log.as_bytes())
            .and_then(|()| write(&dir.join("report.json"), json.as_bytes()));
        if let Err(reason) = written {
            return self.failed(dir, Some(read), &reason, report.touches_tests);
        }
        let status = if report.resolved {
            InstanceStatus::Resolved
        } else {
            InstanceStatus::Unresolved(report.untrusted_reason.clone())
        };
        (status, report.touches_tests, report.cause)
    }

    /// [`Self::error`], with the error's cause.
    fn failed(
        &self,
        dir: &Path,
        read: Option<(&LogFile, u64)>,
        reason: &str,
        touches_tests: Vec<TouchedFile>,
    ) -> Graded {
        let cause = classify(&Evidence {
            error: Some(reason),
            ..Evidence::default()
        });
        let flag = read.and_then(|(log, _)| log.infra_failure.as_deref());
        let cause = flagged(cause, false, flag);
        (
            self.error(dir, read, reason, cause.as_ref()),
            touches_tests,
            cause,
        )
    }

    /// Records an evaluation error: the reason in `run_instance.log`, no `report.json`. `read`:
    /// the log, when one was chosen, and the bytes dropped from its middle.
    fn error(
        &self,
        dir: &Path,
        read: Option<(&LogFile, u64)>,
        reason: &str,
        cause: Option<&Cause>,
    ) -> InstanceStatus {
        let _ = std::fs::remove_file(dir.join("report.json"));
        let mut text = read
            .map(|(log, elided)| source_line(log, None, elided))
            .unwrap_or_default();
        // The reason quotes paths under --from-logs, whose names come from outside.
        text.push_str(&format!("error: {}\n", escape_controls(reason)));
        if let Some(reason) = read.and_then(|(log, _)| log.infra_failure.as_deref()) {
            text.push_str(&infra_failure_line(reason));
        }
        text.push_str(&run_log_line(cause));
        let _ = write(&dir.join("run_instance.log"), text.as_bytes());
        InstanceStatus::Error(reason.to_owned())
    }
}

/// What [`Job::run`] returns: the status, the test files the patch touches, and why it did
/// not resolve.
type Graded = (InstanceStatus, Vec<TouchedFile>, Option<Cause>);

/// The cause of an evaluation the SWE-bench harness flagged as an infrastructure failure
/// (`infra_failure` in its `report.json`): the harness's word, unless aci read an
/// infrastructure cause of its own from the log.
fn flagged(cause: Option<Cause>, resolved: bool, infra_failure: Option<&str>) -> Option<Cause> {
    match (infra_failure, cause) {
        (None, cause) => cause,
        (Some(_), _) if resolved => None,
        (Some(_), Some(cause))
            if cause.infrastructure && cause.kind != CauseKind::EvaluationError =>
        {
            Some(cause)
        }
        (Some(reason), _) => Some(Cause::harness_infra_failure(reason)),
    }
}

/// The `run_instance.log` line of an infrastructure failure the harness flagged.
fn infra_failure_line(reason: &str) -> String {
    format!(
        "infra_failure: true ({}, from the SWE-bench harness's report.json)\n",
        escape_controls(reason)
    )
}

/// The instance's `report.json` with `"infra_failure": true` and `"infra_failure_reason"` first
/// under its id when the harness flagged one (named as the harness names them); the rest of the
/// text is kept as written.
fn with_infra_failure(json: String, id: &str, reason: Option<&str>) -> String {
    let Some(reason) = reason else {
        return json;
    };
    let (Ok(key), Ok(reason_json)) = (serde_json::to_string(id), serde_json::to_string(reason))
    else {
        return json;
    };
    let opening = format!("    {key}: {{\n");
    let Some(index) = json.find(&opening) else {
        return json;
    };
    let at = index + opening.len();
    let fields = format!(
        "        \"infra_failure\": true,\n        \"infra_failure_reason\": {reason_json},\n"
    );
    format!("{}{fields}{}", &json[..at], &json[at..])
}

/// `graded from <path> (<format>)`, the path's control characters written out, the format
/// read from `text` when given, and a line saying how many bytes were dropped from the log's
/// middle when some were.
fn source_line(log: &LogFile, text: Option<&str>, elided: u64) -> String {
    let format = match text.map(log_format) {
        Some(LogFormat::HarnessV1) => " (SWE-bench harness 1.x log)",
        Some(LogFormat::Markers) => " (test log with start and end markers)",
        None => "",
    };
    let path = escape_controls(&log.path.display().to_string());
    let mut line = format!("graded from {path}{format}\n");
    if elided > 0 {
        line.push_str(&format!(
            "{elided} bytes of the log were dropped from the middle of test_output.txt\n"
        ));
    }
    line
}

/// The head and tail of the file at `path` that a live evaluation keeps of a test run's output
/// ([`EVAL_OUTPUT_LIMIT`]), around the same elision note, and how many bytes were dropped:
/// the file is streamed, so memory is bounded by the limit, not by the file.
fn read_bounded(path: &Path) -> std::io::Result<(Vec<u8>, u64)> {
    let mut file = std::fs::File::open(path)?;
    let mut kept = CappedBuffer::new(EVAL_OUTPUT_LIMIT);
    let mut chunk = vec![0; 1024 * 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => kept.push(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(kept.finish(0))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_atomic(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests;
