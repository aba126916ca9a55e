//! Outputs of `aci eval`: the per-instance report.json in SWE-bench's shape (plus optional aci
//! fields that SWE-bench readers ignore), the run summary (schema v2), the `--expect` check, and
//! the resume key.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::cause::Cause;
use super::grade::{Grade, TestsStatus};
use super::infra::ResetEntry;
use super::predictions::Prediction;
use super::reach::Reach;
use super::suspicious::TouchedFile;

/// What the tripwire run of a resolved evaluation found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripwireReport {
    /// FAIL_TO_PASS tests that carried a tripwire.
    pub checked: Vec<String>,
    /// FAIL_TO_PASS tests that could not be placed with certainty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<String>,
    /// Every checked test failed in it, its log was trusted, and a patch that reaches into the
    /// test framework had at least one test checked.
    pub confirmed: bool,
}

/// A problem reading a report or an expected-ids file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Not valid JSON of the expected shape.
    #[error("invalid {what}: {source}")]
    Json {
        /// What was being read.
        what: &'static str,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A report.json without an entry for its instance.
    #[error("report.json has no entry for instance {0:?}")]
    MissingInstance(String),
}

/// The body of a SWE-bench report.json, `{"<instance_id>": <this>}`.
///
/// The first five fields are SWE-bench's, in its order; `tests_status` is absent when nothing
/// ran, as in SWE-bench. The rest are aci's and are omitted when empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceReport {
    /// The prediction's patch was JSON null (never true here: null loads as an empty patch, and
    /// empty patches are not evaluated).
    #[serde(rename = "patch_is_None")]
    pub patch_is_none: bool,
    /// A patch was given.
    pub patch_exists: bool,
    /// The patch applied and the log had gradeable results.
    pub patch_successfully_applied: bool,
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passed, and the log is trustworthy.
    pub resolved: bool,
    /// Per-test success and failure lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_status: Option<TestsStatus>,
    /// aci: why the instance could not be graded. Such an instance counts in `error_ids`, and its
    /// report is kept in memory only: as in SWE-bench, no report.json is written for it (reports
    /// written by older versions of aci may still carry this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// aci: the tests passed their deadline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// aci: why the parsed results were not believed (see [`super::grade::grade`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_reason: Option<String>,
    /// aci: files of the patch that change test infrastructure, each with why
    /// ([`super::suspicious::test_infrastructure`]). Graded as SWE-bench grades (apart from
    /// `.git`, which is never applied); listed for review.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touches_tests: Vec<TouchedFile>,
    /// aci: files whose added lines reach into the test framework, each with how
    /// ([`super::reach::reaches_into_tests`]): resolved only when the tripwire run confirms it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reaches_into_tests: Vec<Reach>,
    /// aci: the test infrastructure the grader put back before the tests ([`super::infra`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub infrastructure_reset: Vec<ResetEntry>,
    /// aci: the tripwire run of a first run that resolved ([`super::tripwire`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tripwire: Option<TripwireReport>,
    /// aci: which spec gave the test command and parser: `record` (the record's own
    /// `eval_script`, `log_parser`, `eval_type`) or `builtin` (the spec table); absent for an
    /// instance's own `test_cmd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_source: Option<crate::spec::SpecSource>,
    /// aci: the resume key ([`eval_key`]) of the inputs this report was graded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_key: Option<String>,
    /// aci: why it did not resolve ([`super::cause::classify`]); absent when it resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// How one evaluated instance counts in the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceOutcome {
    /// Graded and resolved.
    Resolved,
    /// Graded and not resolved.
    Unresolved,
    /// Not gradeable (apply failure, timeout, infrastructure).
    Error,
}

impl InstanceReport {
    /// The report of an evaluated (non-empty) patch.
    pub fn from_grade(grade: &Grade, eval_key: Option<String>) -> Self {
        Self {
            patch_is_none: false,
            patch_exists: true,
            patch_successfully_applied: grade.patch_successfully_applied,
            resolved: grade.resolved,
            tests_status: grade.tests_status.clone(),
            error: grade.error.clone(),
            timed_out: grade.timed_out,
            untrusted_reason: grade.untrusted_reason.clone(),
            touches_tests: Vec::new(),
            reaches_into_tests: Vec::new(),
            infrastructure_reset: Vec::new(),
            tripwire: None,
            spec_source: None,
            eval_key,
            cause: None,
        }
    }

    /// The report of an instance that could not be evaluated at all (the container did not
    /// start, the image is missing, …).
    pub fn from_error(reason: &str, eval_key: Option<String>) -> Self {
        Self {
            patch_is_none: false,
            patch_exists: true,
            patch_successfully_applied: false,
            resolved: false,
            tests_status: None,
            error: Some(reason.to_owned()),
            timed_out: false,
            untrusted_reason: None,
            touches_tests: Vec::new(),
            reaches_into_tests: Vec::new(),
            infrastructure_reset: Vec::new(),
            tripwire: None,
            spec_source: None,
            eval_key,
            cause: None,
        }
    }

    /// How this report counts in the summary.
    pub fn outcome(&self) -> InstanceOutcome {
        match (&self.error, self.resolved) {
            (Some(_), _) => InstanceOutcome::Error,
            (None, true) => InstanceOutcome::Resolved,
            (None, false) => InstanceOutcome::Unresolved,
        }
    }

    /// Whether a rerun may keep this report: it was graded from the same inputs (`key`) and was
    /// not an error. Errors are always retried, since most of them are transient.
    pub fn can_reuse(&self, key: &str) -> bool {
        self.error.is_none() && self.eval_key.as_deref() == Some(key)
    }
}

/// The text of `DIR/<instance_id>/report.json`: `{"<instance_id>": {…}}`, indented with four
/// spaces like SWE-bench's `json.dumps(report, indent=4)`, with a final newline.
pub fn instance_report_json(instance_id: &str, report: &InstanceReport) -> String {
    let wrapped = BTreeMap::from([(instance_id, report)]);
    to_json_4(&wrapped)
}

/// Reads a report.json and returns the entry for `instance_id`.
///
/// # Errors
/// The text is not a report.json, or it has no entry for `instance_id`.
pub fn parse_instance_report(text: &str, instance_id: &str) -> Result<InstanceReport, ReportError> {
    let mut reports: BTreeMap<String, InstanceReport> =
        serde_json::from_str(text).map_err(|source| ReportError::Json {
            what: "report.json",
            source,
        })?;
    reports
        .remove(instance_id)
        .ok_or_else(|| ReportError::MissingInstance(instance_id.to_owned()))
}

/// The run summary `DIR/report.json`, with SWE-bench's schema v2 fields in its order. Every id
/// list is sorted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Instances selected for evaluation.
    pub total_instances: usize,
    /// Predictions for selected instances.
    pub submitted_instances: usize,
    /// Graded instances (resolved or unresolved).
    pub completed_instances: usize,
    /// Resolved instances.
    pub resolved_instances: usize,
    /// Graded, not resolved.
    pub unresolved_instances: usize,
    /// Predictions with an empty patch (not evaluated).
    pub empty_patch_instances: usize,
    /// Non-empty patches without a gradeable result (apply failure, timeout, infrastructure).
    pub error_instances: usize,
    /// Ids of completed instances.
    pub completed_ids: Vec<String>,
    /// Selected instances without a prediction.
    pub incomplete_ids: Vec<String>,
    /// Ids of empty patches.
    pub empty_patch_ids: Vec<String>,
    /// Ids of predictions for selected instances.
    pub submitted_ids: Vec<String>,
    /// Ids of resolved instances.
    pub resolved_ids: Vec<String>,
    /// Ids of unresolved instances.
    pub unresolved_ids: Vec<String>,
    /// Ids of error instances.
    pub error_ids: Vec<String>,
    /// Always 2.
    pub schema_version: u32,
    /// aci: resolved instances whose patch changed test infrastructure (their reports'
    /// `touches_tests`), to review before trusting the count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved_touching_tests_ids: Vec<String>,
    /// aci: every evaluated instance whose patch changed test infrastructure, whatever its
    /// outcome (an error has no report.json; its `run_instance.log` names the files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touching_tests_ids: Vec<String>,
    /// aci: how many unresolved and error instances had each cause kind
    /// ([`super::cause::CauseKind`]), the environment's and the patch's alike.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub causes: BTreeMap<String, usize>,
    /// aci: unresolved and error instances whose cause is the environment's or the harness's
    /// (`infrastructure: true`), not the patch's.
    #[serde(default)]
    pub infrastructure_failures: usize,
    /// aci: their ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub infrastructure_failure_ids: Vec<String>,
    /// aci: `resolved_instances / total_instances`, infrastructure failures kept in the
    /// denominator (as SWE-bench 5.x counts them); 0 when nothing is selected.
    #[serde(default)]
    pub resolve_rate: f64,
    /// aci: `resolved_instances / (total_instances - infrastructure_failures)`, infrastructure
    /// failures left out (as SWE-bench Pro reports); 0 when that is no instance.
    #[serde(default)]
    pub resolve_rate_without_infrastructure: f64,
}

/// Builds the summary the way SWE-bench's `make_run_report` buckets instances, over the selected
/// `instance_ids`: no prediction → incomplete; empty patch → empty patch; an outcome of
/// resolved / unresolved → completed and that bucket; an error outcome or no outcome → error.
///
/// One deliberate difference: `submitted_*` count only predictions for selected instances
/// (SWE-bench counts the whole predictions file, so with `-i` it can exceed the total). Without a
/// selection the two agree, since every prediction must name a known instance.
pub fn run_summary(
    instance_ids: &[String],
    predictions: &[Prediction],
    outcomes: &BTreeMap<String, InstanceOutcome>,
) -> RunSummary {
    let submitted: BTreeMap<String, bool> = predictions
        .iter()
        .map(|prediction| {
            (
                prediction.instance_id.clone(),
                prediction.model_patch.is_empty(),
            )
        })
        .collect();
    run_summary_from(instance_ids, &submitted, outcomes)
}

/// [`run_summary`] from what is known of each submission: instance id → whether its patch is
/// empty (ids that are not selected are ignored).
pub fn run_summary_from(
    instance_ids: &[String],
    submitted: &BTreeMap<String, bool>,
    outcomes: &BTreeMap<String, InstanceOutcome>,
) -> RunSummary {
    let selected: BTreeSet<&str> = instance_ids.iter().map(String::as_str).collect();
    let mut summary = RunSummary {
        total_instances: selected.len(),
        submitted_ids: submitted
            .keys()
            .filter(|id| selected.contains(id.as_str()))
            .cloned()
            .collect(),
        schema_version: 2,
        ..RunSummary::default()
    };
    for id in &selected {
        let owned = (*id).to_owned();
        match (submitted.get(*id), outcomes.get(*id)) {
            (None, _) => summary.incomplete_ids.push(owned),
            (Some(true), _) => summary.empty_patch_ids.push(owned),
            (Some(false), Some(InstanceOutcome::Resolved)) => {
                summary.completed_ids.push(owned.clone());
                summary.resolved_ids.push(owned);
            }
            (Some(false), Some(InstanceOutcome::Unresolved)) => {
                summary.completed_ids.push(owned.clone());
                summary.unresolved_ids.push(owned);
            }
            (Some(false), Some(InstanceOutcome::Error) | None) => summary.error_ids.push(owned),
        }
    }
    summary.submitted_instances = summary.submitted_ids.len();
    summary.completed_instances = summary.completed_ids.len();
    summary.resolved_instances = summary.resolved_ids.len();
    summary.unresolved_instances = summary.unresolved_ids.len();
    summary.empty_patch_instances = summary.empty_patch_ids.len();
    summary.error_instances = summary.error_ids.len();
    summary.resolve_rate = rate(summary.resolved_instances, summary.total_instances);
    summary.resolve_rate_without_infrastructure = summary.resolve_rate;
    summary
}

/// Adds the causes of the selected instances that did not resolve (`causes`: instance id → its
/// cause) to `summary`: the count per kind, the infrastructure failures, and both resolve rates.
/// Causes of instances the summary does not count as unresolved or error are ignored.
pub fn add_causes(summary: &mut RunSummary, causes: &BTreeMap<String, Cause>) {
    let counted: BTreeSet<&str> = summary
        .unresolved_ids
        .iter()
        .chain(&summary.error_ids)
        .map(String::as_str)
        .collect();
    summary.causes.clear();
    summary.infrastructure_failure_ids.clear();
    for (id, cause) in causes {
        if !counted.contains(id.as_str()) {
            continue;
        }
        *summary
            .causes
            .entry(cause.kind.as_str().to_owned())
            .or_default() += 1;
        if cause.infrastructure {
            summary.infrastructure_failure_ids.push(id.clone());
        }
    }
    summary.infrastructure_failures = summary.infrastructure_failure_ids.len();
    summary.resolve_rate = rate(summary.resolved_instances, summary.total_instances);
    summary.resolve_rate_without_infrastructure = rate(
        summary.resolved_instances,
        summary
            .total_instances
            .saturating_sub(summary.infrastructure_failures),
    );
}

/// `part / whole` rounded to four decimals; 0 for an empty whole.
fn rate(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    let ratio = part as f64 / whole as f64;
    (ratio * 10_000.0).round() / 10_000.0
}

/// The text of the summary file, four-space indented, with a final newline.
pub fn run_summary_json(summary: &RunSummary) -> String {
    to_json_4(summary)
}

/// Reads an `--expect` file: a JSON list of instance ids; a run summary (an object with
/// `resolved_ids`) is accepted too, so a previous run's report.json can be the baseline.
///
/// # Errors
/// The text is neither of those shapes.
pub fn parse_expected(text: &str) -> Result<Vec<String>, ReportError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Expected {
        List(Vec<String>),
        Summary { resolved_ids: Vec<String> },
    }
    let expected: Expected = serde_json::from_str(text).map_err(|source| ReportError::Json {
        what: "--expect file (expected a JSON list of instance ids)",
        source,
    })?;
    Ok(match expected {
        Expected::List(ids) | Expected::Summary { resolved_ids: ids } => ids,
    })
}

/// The `--expect` check: the expected ids that the summary does not list as resolved, sorted and
/// without duplicates. The caller exits 3 when this is not empty.
pub fn expected_but_unresolved(expected: &[String], summary: &RunSummary) -> Vec<String> {
    let resolved: BTreeSet<&str> = summary.resolved_ids.iter().map(String::as_str).collect();
    expected
        .iter()
        .map(String::as_str)
        .filter(|id| !resolved.contains(id))
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The resume key of one evaluation: lowercase hex SHA-256 over a version tag and the
/// length-prefixed instance id, patch, eval script and image id. A rerun reuses a report only
/// when its stored key equals the key of the new inputs, so a changed patch, test command or
/// image is re-evaluated (SWE-bench reuses any existing report.json).
pub fn eval_key(instance_id: &str, patch: &str, eval_script: &str, image_id: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"aci-eval-key-v1\0");
    for field in [instance_id, patch, eval_script, image_id] {
        let length = u64::try_from(field.len()).unwrap_or(u64::MAX);
        hasher.update(length.to_le_bytes());
        hasher.update(field.as_bytes());
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut key = String::with_capacity(64);
    for byte in hasher.finalize() {
        key.push(char::from(HEX[usize::from(byte >> 4)]));
        key.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    key
}

/// `model_name_or_path` as a path component, as SWE-bench writes it (`/` → `__`).
pub fn model_path_component(model_name_or_path: &str) -> String {
    model_name_or_path.replace('/', "__")
}

/// Pretty JSON with SWE-bench's four-space indent and a final newline.
fn to_json_4<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Serialising plain structs, maps and strings into memory cannot fail.
    if value.serialize(&mut serializer).is_err() {
        return String::new();
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;
