//! `aci validate`: the SWE-bench harness's dataset check. Each instance is graded twice with the
//! evaluation's own machinery ([`crate::eval::run`]): with its gold patch, which must resolve
//! it, and with the empty patch (the tests on the base commit with only the test patch), which
//! must leave every FAIL_TO_PASS test failing. The two evaluations go to `DIR/gold/` and
//! `DIR/empty/` in `aci eval`'s layout (so a rerun reuses what it can); the verdicts go to
//! `DIR/validation.json` (`{id: {gold_resolved, empty_fails, seconds}}`, with `error` when an
//! evaluation could not be made) and `DIR/validation.md`, the table also printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::eval::cause::{Cause, CauseKind, NETWORK_SWITCH};
use crate::eval::predictions::{GOLD_MODEL_NAME, Prediction, gold_predictions};
use crate::eval::report::{InstanceReport, parse_instance_report};
use crate::eval::run::{
    EmptyPatches, EvalError, EvalSettings, InstanceDone, InstanceStatus, evaluate_with,
};
use crate::files::write_atomic;
use crate::image::env::FAILED_EARLIER;
use crate::instance::Instance;

/// The verdict on one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// The gold patch resolves the instance.
    pub gold_resolved: bool,
    /// Without a patch, no FAIL_TO_PASS test passes (a test missing from the log counts as
    /// failing, as in SWE-bench); false when there is no FAIL_TO_PASS test at all, and when no
    /// test at all passed without the patch for the environment's reason or an untrusted run
    /// (the tests did not run: their failing proves nothing).
    pub empty_fails: bool,
    /// Wall time of both evaluations in this run (image builds included), in seconds, to the
    /// millisecond.
    pub seconds: f64,
    /// Why a verdict could not be reached, or what is wrong with the instance: an evaluation's
    /// error, a FAIL_TO_PASS test that passes without the patch, a missing gold patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The table's note: the first line of `error`, which says why the gold patch did not
    /// resolve when it did not (never empty then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why the gold patch did not resolve ([`crate::eval::cause`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_cause: Option<Cause>,
    /// The gold patch's tests need a network the grading had not (rerun with `--network`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_network: bool,
}

impl Validation {
    /// Both checks hold.
    pub fn is_valid(&self) -> bool {
        self.gold_resolved && self.empty_fails
    }
}

/// Why the validation stopped.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// An evaluation stopped the run (low disk, an unwritable summary).
    #[error("{0}")]
    Eval(#[from] EvalError),
    /// `validation.json` or `validation.md` could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The verdict from the two evaluations of one instance: `gold` and `empty` as they ended,
/// `empty_report` the empty evaluation's report (when it completed), and the instance's
/// FAIL_TO_PASS list.
pub fn verdict(
    gold: Option<&InstanceDone>,
    empty: Option<&InstanceDone>,
    empty_report: Option<&InstanceReport>,
    fail_to_pass: &[String],
) -> Validation {
    let seconds: f64 = [gold, empty]
        .iter()
        .flatten()
        .map(|done| done.elapsed.as_secs_f64())
        .sum();
    let seconds = (seconds * 1000.0).round() / 1000.0;
    let mut errors = Vec::new();
    let gold_resolved = match gold.map(|done| &done.status) {
        Some(InstanceStatus::Resolved) => true,
        Some(InstanceStatus::Error(reason)) => {
            errors.push(format!("gold: {reason}"));
            false
        }
        Some(InstanceStatus::EmptyPatch) => {
            errors.push("the record has no gold patch".to_owned());
            false
        }
        Some(InstanceStatus::Unresolved(_)) => {
            // Why, from the cause; never an empty note.
            let why = gold.and_then(|done| done.cause.as_ref()).map_or(
                "the gold patch did not resolve (no cause was recorded)",
                |cause| cause.summary.as_str(),
            );
            errors.push(format!("gold: {why}"));
            false
        }
        _ => false,
    };
    let gold_cause = gold
        .filter(|done| done.status != InstanceStatus::Resolved)
        .and_then(|done| done.cause.clone());
    let needs_network = gold_cause
        .as_ref()
        .is_some_and(|cause| cause.kind == CauseKind::Network);
    let passing: Vec<&String> = empty_report
        .and_then(|report| report.tests_status.as_ref())
        .map(|status| status.fail_to_pass.success.iter().collect())
        .unwrap_or_default();
    let empty_fails = match empty.map(|done| &done.status) {
        Some(InstanceStatus::Error(reason)) => {
            // The same reason twice (an environment that cannot be built, the second time
            // without trying it again) is said once.
            let line = format!("empty: {reason}");
            let reason = reason.replacen(FAILED_EARLIER, "", 1);
            if !errors
                .iter()
                .any(|e| e.strip_prefix("gold: ") == Some(reason.as_str()))
            {
                errors.push(line);
            }
            false
        }
        Some(InstanceStatus::Resolved | InstanceStatus::Unresolved(_))
            if let Some(cause) = no_test_verdict(empty, empty_report) =>
        {
            // Not one test passed, for a reason that is not the missing fix: the FAIL_TO_PASS
            // tests' failing says nothing.
            if !errors
                .iter()
                .any(|e| e.strip_prefix("gold: ") == Some(cause.summary.as_str()))
            {
                errors.push(format!("empty: {}", cause.summary));
            }
            false
        }
        Some(InstanceStatus::Resolved | InstanceStatus::Unresolved(_)) => {
            if fail_to_pass.is_empty() {
                errors.push("FAIL_TO_PASS is empty".to_owned());
            } else if !passing.is_empty() {
                let names: Vec<&str> = passing.iter().map(|name| name.as_str()).collect();
                errors.push(format!(
                    "FAIL_TO_PASS tests pass without the patch: {}",
                    names.join(", ")
                ));
            }
            !fail_to_pass.is_empty() && passing.is_empty()
        }
        _ => false,
    };
    let error = (!errors.is_empty()).then(|| errors.join("; "));
    Validation {
        gold_resolved,
        empty_fails,
        seconds,
        note: error.as_deref().and_then(note_of),
        error,
        gold_cause,
        needs_network,
    }
}

/// The cause of the empty evaluation when no test passed in it (none of FAIL_TO_PASS and
/// PASS_TO_PASS) and that cause is the environment's, an untrusted run or tests that did not run
/// (a test command that is not there, a runner that stopped before any test, canaries without
/// results): then its FAIL_TO_PASS tests did not fail for want of the fix.
fn no_test_verdict<'a>(
    empty: Option<&'a InstanceDone>,
    empty_report: Option<&InstanceReport>,
) -> Option<&'a Cause> {
    let cause = empty?.cause.as_ref()?;
    let nothing_passed = empty_report
        .and_then(|report| report.tests_status.as_ref())
        .is_none_or(|status| {
            status.fail_to_pass.success.is_empty() && status.pass_to_pass.success.is_empty()
        });
    let not_the_fix = cause.infrastructure
        || matches!(cause.kind, CauseKind::Untrusted | CauseKind::TestsDidNotRun);
    (nothing_passed && not_the_fix).then_some(cause)
}

/// The note of the table: the first line of `error`, with the first hint line's advice after it.
fn note_of(error: &str) -> Option<String> {
    let first = error.lines().next()?;
    Some(
        match error.lines().find_map(|line| line.strip_prefix("hint: ")) {
            Some(hint) => format!("{first} (hint: {hint})"),
            None => first.to_owned(),
        },
    )
}

/// The table of `validation.md` and of stdout: one row per instance (the note is the first
/// line of its error), then the count of valid ones.
pub fn table(verdicts: &BTreeMap<String, Validation>) -> String {
    let yes_no = |value: bool| if value { "yes" } else { "no" };
    let mut text = String::from(
        "| instance | resolved with gold | failing without | time | note |\n|---|---|---|---|---|\n",
    );
    for (id, verdict) in verdicts {
        // The first line; validation.json has the whole text (build logs, hints).
        let note = verdict
            .note
            .as_deref()
            .or_else(|| {
                verdict
                    .error
                    .as_deref()
                    .and_then(|error| error.lines().next())
            })
            .unwrap_or_default()
            .replace('|', "\\|");
        text.push_str(&format!(
            "| {id} | {} | {} | {:.1} s | {note} |\n",
            yes_no(verdict.gold_resolved),
            yes_no(verdict.empty_fails),
            verdict.seconds
        ));
    }
    let valid = verdicts.values().filter(|v| v.is_valid()).count();
    text.push_str(&format!(
        "\n{valid} of {} instance(s) valid: resolved with the gold patch, FAIL_TO_PASS failing \
         without it\n",
        verdicts.len()
    ));
    let offline: Vec<&str> = verdicts
        .iter()
        .filter(|(_, verdict)| verdict.needs_network)
        .map(|(id, _)| id.as_str())
        .collect();
    if !offline.is_empty() {
        text.push_str(&format!(
            "{} instance(s) need a network to resolve with gold: {} (rerun them with \
             {NETWORK_SWITCH})\n",
            offline.len(),
            offline.join(", ")
        ));
    }
    text
}

/// `validation.json`: the verdicts keyed by instance id, in id order.
pub fn validation_json(verdicts: &BTreeMap<String, Validation>) -> String {
    let mut text = serde_json::to_string_pretty(verdicts).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

/// Validates `instances`: the gold evaluation into `settings.output/gold`, the empty one into
/// `settings.output/empty`, then `validation.json` and `validation.md` in `settings.output`.
/// `progress` gets one line per evaluation finished.
///
/// # Errors
/// A run-level failure of an evaluation (the disk is too full to build images), or an output
/// file cannot be written.
pub async fn validate(
    engine: Engine,
    instances: Vec<Instance>,
    settings: EvalSettings,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<BTreeMap<String, Validation>, ValidateError> {
    let output = settings.output.clone();
    let fail_to_pass: BTreeMap<String, Vec<String>> = instances
        .iter()
        .map(|i| (i.instance_id.clone(), i.fail_to_pass.clone()))
        .collect();
    let gold = gold_predictions(&instances);
    let empty: Vec<Prediction> = instances
        .iter()
        .map(|instance| Prediction {
            instance_id: instance.instance_id.clone(),
            model_name_or_path: format!("{GOLD_MODEL_NAME}-empty"),
            model_patch: String::new(),
        })
        .collect();
    let mut gold_done = BTreeMap::new();
    let gold_settings = part(&settings, "gold");
    let mut on_gold = |done: &InstanceDone| {
        progress(&format!("[gold] {}", done.describe()));
        gold_done.insert(done.instance_id.clone(), done.clone());
    };
    let skip = EmptyPatches::Skip;
    let gold_run = evaluate_with(
        engine.clone(),
        instances.clone(),
        &gold,
        gold_settings,
        skip,
        &mut on_gold,
    );
    gold_run.await?;
    let mut empty_done = BTreeMap::new();
    let empty_settings = part(&settings, "empty");
    let empty_dir = empty_settings.output.clone();
    let mut on_empty = |done: &InstanceDone| {
        progress(&format!("[empty] {}", done.describe()));
        empty_done.insert(done.instance_id.clone(), done.clone());
    };
    let grade = EmptyPatches::Grade;
    let empty_run = evaluate_with(
        engine,
        instances,
        &empty,
        empty_settings,
        grade,
        &mut on_empty,
    );
    empty_run.await?;
    let verdicts: BTreeMap<String, Validation> = fail_to_pass
        .iter()
        .map(|(id, tests)| {
            let report = read_report(&empty_dir, id);
            let verdict = verdict(
                gold_done.get(id),
                empty_done.get(id),
                report.as_ref(),
                tests,
            );
            (id.clone(), verdict)
        })
        .collect();
    write(&output.join("validation.json"), &validation_json(&verdicts))?;
    write(&output.join("validation.md"), &table(&verdicts))?;
    Ok(verdicts)
}

/// The settings of one of the two evaluations: the same, into `output/<name>`, with the run
/// id suffixed so their containers are told apart.
fn part(settings: &EvalSettings, name: &str) -> EvalSettings {
    EvalSettings {
        run_id: format!("{}-{name}", settings.run_id),
        output: settings.output.join(name),
        workers: settings.workers,
        timeout: settings.timeout,
        env: settings.env.clone(),
        on_step: Arc::clone(&settings.on_step),
        provisioner: Arc::clone(&settings.provisioner),
        network: settings.network,
    }
}

fn read_report(dir: &Path, id: &str) -> Option<InstanceReport> {
    let text = std::fs::read_to_string(dir.join(id).join("report.json")).ok()?;
    parse_instance_report(&text, id).ok()
}

fn write(path: &Path, text: &str) -> Result<(), ValidateError> {
    write_atomic(path, text.as_bytes()).map_err(|source| ValidateError::Output {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::eval::grade::{SuccessFailure, TestsStatus};

    fn done(status: InstanceStatus, seconds: u64) -> InstanceDone {
        InstanceDone {
            instance_id: "a-1".to_owned(),
            status,
            reused: false,
            elapsed: Duration::from_secs(seconds),
            touches_tests: Vec::new(),
            cause: None,
        }
    }

    fn report(passing: &[&str], failing: &[&str]) -> InstanceReport {
        let list = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        InstanceReport {
            patch_is_none: false,
            patch_exists: true,
            patch_successfully_applied: true,
            resolved: false,
            tests_status: Some(TestsStatus {
                fail_to_pass: SuccessFailure {
                    success: list(passing),
                    failure: list(failing),
                },
                pass_to_pass: SuccessFailure::default(),
                fail_to_fail: SuccessFailure::default(),
                pass_to_fail: SuccessFailure::default(),
            }),
            error: None,
            timed_out: false,
            untrusted_reason: None,
            touches_tests: Vec::new(),
            reaches_into_tests: Vec::new(),
            infrastructure_reset: Vec::new(),
            tripwire: None,
            spec_source: None,
            eval_key: None,
            cause: None,
        }
    }

    fn tests(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn a_valid_instance_resolves_with_gold_and_fails_every_fail_to_pass_test_without() {
        let gold = done(InstanceStatus::Resolved, 3);
        let empty = done(InstanceStatus::Unresolved(None), 2);
        let verdict = verdict(
            Some(&gold),
            Some(&empty),
            Some(&report(&[], &["t::a", "t::b"])),
            &tests(&["t::a", "t::b"]),
        );
        assert_eq!(
            verdict,
            Validation {
                gold_resolved: true,
                empty_fails: true,
                seconds: 5.0,
                error: None,
                note: None,
                gold_cause: None,
                needs_network: false,
            }
        );
        assert!(verdict.is_valid());
    }

    #[test]
    fn a_fail_to_pass_test_that_passes_without_the_patch_is_named() {
        let verdict = verdict(
            Some(&done(InstanceStatus::Resolved, 1)),
            Some(&done(InstanceStatus::Unresolved(None), 1)),
            Some(&report(&["t::b"], &["t::a"])),
            &tests(&["t::a", "t::b"]),
        );
        assert!(!verdict.empty_fails);
        assert_eq!(
            verdict.error.as_deref(),
            Some("FAIL_TO_PASS tests pass without the patch: t::b")
        );
    }

    #[test]
    fn a_build_not_tried_again_is_said_once_and_the_note_carries_its_hint() {
        let gold = "a-1: building the environment image e:1 failed: failed at step `setup 1 of \
                    1: python -m pip install -e .`\nhint: --set env.resolve_as_of=created_at";
        let empty = gold.replacen("failed: ", &format!("failed: {FAILED_EARLIER}"), 1);
        let verdict = verdict(
            Some(&done(InstanceStatus::Error(gold.to_owned()), 0)),
            Some(&done(InstanceStatus::Error(empty), 0)),
            None,
            &tests(&["t::a"]),
        );
        assert_eq!(verdict.error, Some(format!("gold: {gold}")));
        assert_eq!(
            verdict.note.as_deref(),
            Some(
                "gold: a-1: building the environment image e:1 failed: failed at step `setup 1 \
                 of 1: python -m pip install -e .` (hint: --set env.resolve_as_of=created_at)"
            )
        );
    }

    #[test]
    fn an_environment_error_is_said_once_and_fails_both_checks() {
        let reason = "a-1: no Python 3.10";
        let verdict = verdict(
            Some(&done(InstanceStatus::Error(reason.to_owned()), 0)),
            Some(&done(InstanceStatus::Error(reason.to_owned()), 0)),
            None,
            &tests(&["t::a"]),
        );
        assert_eq!(
            verdict,
            Validation {
                gold_resolved: false,
                empty_fails: false,
                seconds: 0.0,
                error: Some("gold: a-1: no Python 3.10".to_owned()),
                note: Some("gold: a-1: no Python 3.10".to_owned()),
                gold_cause: None,
                needs_network: false,
            }
        );
    }

    #[test]
    fn no_gold_patch_or_no_fail_to_pass_test_is_no_valid_instance() {
        let verdict = verdict(
            Some(&done(InstanceStatus::EmptyPatch, 0)),
            Some(&done(InstanceStatus::Unresolved(None), 1)),
            Some(&report(&[], &[])),
            &[],
        );
        assert!(!verdict.gold_resolved && !verdict.empty_fails);
        assert_eq!(
            verdict.error.as_deref(),
            Some("the record has no gold patch; FAIL_TO_PASS is empty")
        );
    }

    #[test]
    fn a_gold_patch_that_does_not_resolve_says_why_and_names_the_network_switch() {
        let cause = crate::eval::cause::classify(&crate::eval::cause::Evidence {
            test_log: "FAILED t.py::test_get - requests.exceptions.ConnectionError: \
                       HTTPConnectionPool(host='httpbin.org', port=80): Max retries exceeded \
                       with url: /get\n",
            ..crate::eval::cause::Evidence::default()
        });
        let gold = InstanceDone {
            cause,
            ..done(InstanceStatus::Unresolved(None), 4)
        };
        let verdict = verdict(
            Some(&gold),
            Some(&done(InstanceStatus::Unresolved(None), 1)),
            Some(&report(&[], &["t.py::test_get"])),
            &tests(&["t.py::test_get"]),
        );
        let note = "gold: the tests could not reach the network they need (httpbin.org): \
                    grading runs without a network; --network gives it one";
        assert_eq!(verdict.note.as_deref(), Some(note));
        assert_eq!(verdict.error.as_deref(), Some(note));
        assert!(verdict.needs_network);
        assert_eq!(
            verdict.gold_cause.as_ref().unwrap().names,
            vec!["httpbin.org"]
        );
        let verdicts = BTreeMap::from([("psf__requests-2317".to_owned(), verdict)]);
        assert_eq!(
            table(&verdicts),
            format!(
                "| instance | resolved with gold | failing without | time | note |\n\
                 |---|---|---|---|---|\n\
                 | psf__requests-2317 | no | yes | 5.0 s | {note} |\n\
                 \n0 of 1 instance(s) valid: resolved with the gold patch, FAIL_TO_PASS failing \
                 without it\n\
                 1 instance(s) need a network to resolve with gold: psf__requests-2317 (rerun \
                 them with --network)\n"
            )
        );
        let unexplained = verdict_without_cause();
        assert_eq!(
            unexplained.note.as_deref(),
            Some("gold: the gold patch did not resolve (no cause was recorded)")
        );
    }

    #[test]
    fn an_empty_run_where_no_test_ran_does_not_count_as_failing_without() {
        let log = ">>>>> Start Test Output\n/tmp/aci-eval/tests.sh: line 9: bin/test: No such \
                   file or directory\n>>>>> End Test Output\n>>>>> Test Exit Code: 127\n";
        let cause = crate::eval::cause::classify(&crate::eval::cause::Evidence {
            test_log: log,
            untrusted_reason: Some(
                "untrusted test run: the canary test that must pass (test_d4787f063026) has no \
                 result in the log",
            ),
            ..crate::eval::cause::Evidence::default()
        });
        let unresolved = InstanceDone {
            cause,
            ..done(InstanceStatus::Unresolved(None), 2)
        };
        let summary = "a command the tests run is missing: bin/test (bin/test: No such file or \
                       directory; the repository has no bin/test)";
        let verdict = verdict(
            Some(&unresolved),
            Some(&unresolved),
            Some(&report(&[], &["test_immutable"])),
            &tests(&["test_immutable"]),
        );
        assert!(!verdict.empty_fails);
        // Said once, for both evaluations.
        assert_eq!(
            verdict.error.as_deref(),
            Some(format!("gold: {summary}").as_str())
        );
        let only_empty = super::verdict(
            Some(&done(InstanceStatus::Resolved, 1)),
            Some(&unresolved),
            Some(&report(&[], &["test_immutable"])),
            &tests(&["test_immutable"]),
        );
        assert!(!only_empty.empty_fails);
        assert_eq!(
            only_empty.error.as_deref(),
            Some(format!("empty: {summary}").as_str())
        );
        // A test that passed without the patch shows the suite ran: the failing FAIL_TO_PASS
        // tests count, whatever else the run lacked.
        let mut ran = report(&[], &["test_immutable"]);
        if let Some(status) = ran.tests_status.as_mut() {
            status.pass_to_pass.success = vec!["test_equality".to_owned()];
        }
        let some_ran = super::verdict(
            Some(&done(InstanceStatus::Resolved, 1)),
            Some(&unresolved),
            Some(&ran),
            &tests(&["test_immutable"]),
        );
        assert!(some_ran.empty_fails);
        assert_eq!(some_ran.error, None);
        // A runner that stopped before any test: the tests did not run either.
        let refused = InstanceDone {
            cause: crate::eval::cause::classify(&crate::eval::cause::Evidence {
                test_log: "+ : '>>>>> Start Test Output'\n+ pytest -rA t.py\nERROR: \
                           /testbed/tox.ini:141: requires pytest-2.0, actual pytest-0.1.dev1\n+ \
                           : '>>>>> End Test Output'\n>>>>> Test Exit Code: 4\n",
                untrusted_reason: Some(
                    "untrusted test run: the canary test that must pass (test_3b9112bb4686) \
                     has no result in the log",
                ),
                ..crate::eval::cause::Evidence::default()
            }),
            ..done(InstanceStatus::Unresolved(None), 2)
        };
        let stopped = super::verdict(
            Some(&done(InstanceStatus::Resolved, 1)),
            Some(&refused),
            Some(&report(&[], &["t.py::test_a"])),
            &tests(&["t.py::test_a"]),
        );
        assert!(!stopped.empty_fails);
        assert_eq!(
            stopped.error.as_deref(),
            Some(
                "empty: the tests did not run: the test runner said only: ERROR: \
                 /testbed/tox.ini:141: requires pytest-2.0, actual pytest-0.1.dev1"
            )
        );
    }

    fn verdict_without_cause() -> Validation {
        verdict(
            Some(&done(InstanceStatus::Unresolved(None), 1)),
            Some(&done(InstanceStatus::Unresolved(None), 1)),
            Some(&report(&[], &["t::a"])),
            &tests(&["t::a"]),
        )
    }

    #[test]
    fn the_table_has_a_row_per_instance_and_counts_the_valid_ones() {
        let verdicts = BTreeMap::from([
            (
                "a-1".to_owned(),
                Validation {
                    gold_resolved: true,
                    empty_fails: true,
                    seconds: 12.34,
                    error: None,
                    note: None,
                    gold_cause: None,
                    needs_network: false,
                },
            ),
            (
                "b-2".to_owned(),
                Validation {
                    gold_resolved: false,
                    empty_fails: false,
                    seconds: 0.0,
                    error: Some("gold: x | y\nhint: z".to_owned()),
                    note: None,
                    gold_cause: None,
                    needs_network: false,
                },
            ),
        ]);
        assert_eq!(
            table(&verdicts),
            "| instance | resolved with gold | failing without | time | note |\n\
             |---|---|---|---|---|\n\
             | a-1 | yes | yes | 12.3 s |  |\n\
             | b-2 | no | no | 0.0 s | gold: x \\| y |\n\
             \n1 of 2 instance(s) valid: resolved with the gold patch, FAIL_TO_PASS failing \
             without it\n"
        );
        let json: serde_json::Value = serde_json::from_str(&validation_json(&verdicts)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "a-1": {"gold_resolved": true, "empty_fails": true, "seconds": 12.34},
                "b-2": {"gold_resolved": false, "empty_fails": false, "seconds": 0.0,
                        "error": "gold: x | y\nhint: z"},
            })
        );
    }
}
