//! `aci eval`, the effectful part: each selected instance with a prediction is graded in its own
//! fresh container (at most `workers` at once), its files are written to `DIR/<id>/`, and the
//! summary to `DIR/report.json`. An instance whose report was graded from the same inputs (same
//! eval key) is not run again. An instance's failure is an error in the summary; only a full
//! disk stops the run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::canary::{
    CanaryNames, CanaryPlan, UNTRUSTED_TEST_RUN, add_to_command_line, canary_plan, check,
    random_word,
};
use super::cause::{Cause, Evidence, classify, run_log_line};
use super::container::{ContainerJob, ContainerRun, run_in_container};
use super::grade::{Grade, grade_as};
use super::infra::ResetEntry;
use super::parse::{LogReading, NotRunReason, read_test_log};
use super::plan::GradingPlan;
use super::predictions::Prediction;
use super::reach::reaches_into_tests;
use super::report::{
    InstanceOutcome, InstanceReport, RunSummary, TripwireReport, add_causes, eval_key,
    instance_report_json, parse_instance_report, run_summary, run_summary_json,
};
use super::script::{EvalScriptSpec, Stages};
use super::suspicious::{
    BaseFiles, TouchedFile, base_files_needed, git_dir_paths, test_infrastructure,
};
use super::tripwire::{self, Target, Terms};
use crate::config::EnvConfig;
use crate::engine::Engine;
use crate::files::write_atomic;
use crate::hint::with_hint;
use crate::image::env::{EnvImage, EnvImageError};
use crate::image::pull::Notes;
use crate::instance::Instance;
use crate::patch::patch_paths;
use crate::provision::{ProvisionRequest, Provisioner, SpecUse};
use crate::sandbox::SandboxSpec;
use crate::source::PrepareError;
use crate::spec::{EvalType, SpecSource};
use crate::text::{escape_controls, escape_controls_in_lines};
use lines::{grader_lines, run_log, touches_lines, tripwire_lines};

mod lines;

/// Folded into the resume key, so that a report graded under another scheme (before the staged
/// sandboxes, the infrastructure reset, the canaries or the tripwire run) is evaluated again.
pub const GRADING_SCHEME: &str = "aci grading v2: build apart, reset, canaries, tripwire run";

/// The commit `eval.sh` resets test files to: the environment image's baseline, which is the
/// repository at `base_commit` (the model's patch is applied to the work tree, never committed).
pub const BASE_REF: &str = "HEAD";

/// Everything one `aci eval` run shares.
pub struct EvalSettings {
    /// Labels the containers and the environment images built by this run.
    pub run_id: String,
    /// `DIR`.
    pub output: PathBuf,
    /// Instances evaluated at once.
    pub workers: usize,
    /// Deadline of one `eval.sh` run.
    pub timeout: Duration,
    /// Images, repo_dir, limits and the disk threshold.
    pub env: EnvConfig,
    /// Receives environment image build steps.
    pub on_step: Arc<dyn Fn(&str) + Send + Sync>,
    /// Plans and provisions the instances' environments (shared by the runs of `aci
    /// validate`).
    pub provisioner: Arc<Provisioner>,
    /// Give the grading sandboxes a network (`--network`). Off by default: they have only
    /// `lo`, whatever `env.network` says for agent runs.
    pub network: bool,
}

/// How one selected instance ended in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstanceStatus {
    /// Graded and resolved.
    Resolved,
    /// Graded and not resolved; the reason when the log was not believed.
    Unresolved(Option<String>),
    /// Not gradeable: the patch did not apply, the tests timed out, the image could not be built…
    Error(String),
    /// The prediction's patch is empty: not evaluated (SWE-bench's `empty_patch`).
    EmptyPatch,
    /// No prediction names this instance.
    NoPrediction,
}

/// One instance done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceDone {
    /// The instance.
    pub instance_id: String,
    /// Its status.
    pub status: InstanceStatus,
    /// Its report was kept from an earlier run with the same eval key.
    pub reused: bool,
    /// Wall time spent on it in this run.
    pub elapsed: Duration,
    /// Test infrastructure its patch changes (see [`InstanceReport::touches_tests`]).
    pub touches_tests: Vec<TouchedFile>,
    /// Why it did not resolve (see [`InstanceReport::cause`]).
    pub cause: Option<Cause>,
}

impl InstanceDone {
    /// The summary bucket of a graded or errored instance.
    fn outcome(&self) -> Option<InstanceOutcome> {
        match self.status {
            InstanceStatus::Resolved => Some(InstanceOutcome::Resolved),
            InstanceStatus::Unresolved(_) => Some(InstanceOutcome::Unresolved),
            InstanceStatus::Error(_) => Some(InstanceOutcome::Error),
            InstanceStatus::EmptyPatch | InstanceStatus::NoPrediction => None,
        }
    }

    /// One line for the progress log: `<id>: resolved (12.3 s)`.
    pub fn describe(&self) -> String {
        let status = match &self.status {
            InstanceStatus::Resolved => "resolved".to_owned(),
            InstanceStatus::Unresolved(None) => "unresolved".to_owned(),
            InstanceStatus::Unresolved(Some(reason)) => format!("unresolved: {reason}"),
            InstanceStatus::Error(reason) => format!("error: {reason}"),
            InstanceStatus::EmptyPatch => "empty patch, not evaluated".to_owned(),
            InstanceStatus::NoPrediction => "no prediction".to_owned(),
        };
        let when = if self.reused {
            " (reused: same patch, eval script and image)".to_owned()
        } else {
            format!(" ({:.1} s)", self.elapsed.as_secs_f64())
        };
        // The cause, unless the status already says it (an untrusted reason, an error).
        let cause = match (&self.cause, &self.status) {
            (Some(cause), InstanceStatus::Unresolved(Some(said)) | InstanceStatus::Error(said))
                if said.lines().next() == Some(cause.summary.as_str()) =>
            {
                String::new()
            }
            (Some(cause), _) => format!("; cause: {}", cause.summary),
            (None, _) => String::new(),
        };
        let tests = if self.touches_tests.is_empty() {
            String::new()
        } else {
            let files: Vec<String> = self
                .touches_tests
                .iter()
                .map(|file| format!("{} ({})", file.path, file.why))
                .collect();
            format!(
                "; the patch changes test infrastructure: {}",
                files.join(", ")
            )
        };
        // Printed as one line on a terminal: the id, the patch's file names and the reason
        // (which quotes paths and server messages) come from outside.
        escape_controls_in_lines(&format!(
            "{}: {status}{when}{cause}{tests}",
            self.instance_id
        ))
    }
}

/// Why the run stopped.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Environment images cannot be built (low disk).
    #[error("{0}")]
    Image(#[from] EnvImageError),
    /// A directory of `--from-logs` could not be read.
    #[error("cannot read the logs in {path}: {source}")]
    Logs {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The summary could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What [`evaluate_with`] does with an empty patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyPatches {
    /// Not evaluated: SWE-bench's `empty_patch` ([`evaluate`]).
    Skip,
    /// Graded like any patch, with nothing applied: the tests run on the base commit with only
    /// the test patch (`aci validate`).
    Grade,
}

struct Shared {
    engine: Engine,
    settings: EvalSettings,
    empty_patches: EmptyPatches,
    stop: AtomicBool,
    stop_error: Mutex<Option<EnvImageError>>,
}

/// Evaluates `predictions` on `instances` (the selection) and writes every file, each in a
/// fresh sandbox of `engine` (a Docker container, or a pod with no network).
/// `progress` is called as each instance finishes.
///
/// # Errors
/// A run-level failure: the disk is too full to build environment images (instances already
/// running finish and keep their files; the summary is not written), or the summary cannot be
/// written.
pub async fn evaluate(
    engine: impl Into<Engine>,
    instances: Vec<Instance>,
    predictions: &[Prediction],
    settings: EvalSettings,
    progress: &mut (dyn FnMut(&InstanceDone) + Send),
) -> Result<RunSummary, EvalError> {
    let skip = EmptyPatches::Skip;
    evaluate_with(engine, instances, predictions, settings, skip, progress).await
}

/// [`evaluate`], with empty patches skipped or graded as `empty_patches` says.
///
/// # Errors
/// As [`evaluate`].
pub async fn evaluate_with(
    engine: impl Into<Engine>,
    instances: Vec<Instance>,
    predictions: &[Prediction],
    settings: EvalSettings,
    empty_patches: EmptyPatches,
    progress: &mut (dyn FnMut(&InstanceDone) + Send),
) -> Result<RunSummary, EvalError> {
    let output = settings.output.clone();
    let workers = settings.workers.max(1);
    let shared = Arc::new(Shared {
        engine: engine.into(),
        settings,
        empty_patches,
        stop: AtomicBool::new(false),
        stop_error: Mutex::new(None),
    });
    let ids: Vec<String> = instances.iter().map(|i| i.instance_id.clone()).collect();
    let mut by_id: HashMap<&str, &Prediction> = predictions
        .iter()
        .map(|p| (p.instance_id.as_str(), p))
        .collect();
    // At most `workers` tasks exist at once, started in instance order as others finish; once
    // an image build fails for every instance (`stop`), no more start.
    let mut pending = instances.into_iter();
    let mut tasks = JoinSet::new();
    let mut outcomes = BTreeMap::new();
    let mut resolved_touching_tests = Vec::new();
    let mut causes = BTreeMap::new();
    let mut touching_tests = Vec::new();
    loop {
        while tasks.len() < workers && !shared.stop.load(Ordering::SeqCst) {
            let Some(instance) = pending.next() else {
                break;
            };
            let prediction = by_id.remove(instance.instance_id.as_str()).cloned();
            let shared = Arc::clone(&shared);
            tasks.spawn(async move { evaluate_one(&shared, instance, prediction).await });
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        // A task that panicked leaves its instance without an outcome: the summary counts it as
        // an error.
        if let Ok(done) = joined {
            progress(&done);
            if let Some(outcome) = done.outcome() {
                outcomes.insert(done.instance_id.clone(), outcome);
            }
            if let Some(cause) = &done.cause {
                causes.insert(done.instance_id.clone(), cause.clone());
            }
            if !done.touches_tests.is_empty() {
                touching_tests.push(done.instance_id.clone());
                if done.status == InstanceStatus::Resolved {
                    resolved_touching_tests.push(done.instance_id.clone());
                }
            }
        }
    }
    if let Some(error) = shared.stop_error.lock().ok().and_then(|mut e| e.take()) {
        return Err(EvalError::Image(error));
    }
    let mut summary = run_summary(&ids, predictions, &outcomes);
    resolved_touching_tests.sort();
    touching_tests.sort();
    summary.resolved_touching_tests_ids = resolved_touching_tests;
    summary.touching_tests_ids = touching_tests;
    add_causes(&mut summary, &causes);
    let path = output.join("report.json");
    write_atomic(&path, run_summary_json(&summary).as_bytes())
        .map_err(|source| EvalError::Output { path, source })?;
    Ok(summary)
}

async fn evaluate_one(
    shared: &Shared,
    instance: Instance,
    prediction: Option<Prediction>,
) -> InstanceDone {
    let started = Instant::now();
    let done = |status, reused, touches_tests, cause| InstanceDone {
        instance_id: instance.instance_id.clone(),
        status,
        reused,
        elapsed: started.elapsed(),
        touches_tests,
        cause,
    };
    let dir = shared.settings.output.join(&instance.instance_id);
    let Some(prediction) = prediction else {
        return done(InstanceStatus::NoPrediction, false, Vec::new(), None);
    };
    if prediction.model_patch.is_empty() && shared.empty_patches == EmptyPatches::Skip {
        // A report from an earlier, non-empty patch no longer describes this prediction.
        let _ = std::fs::remove_file(dir.join("report.json"));
        return done(InstanceStatus::EmptyPatch, false, Vec::new(), None);
    }
    let job = Job {
        shared,
        instance: &instance,
        patch: &prediction.model_patch,
        dir: &dir,
    };
    match job.run().await {
        Ok((report, reused)) => {
            let status = match report.outcome() {
                InstanceOutcome::Resolved => InstanceStatus::Resolved,
                InstanceOutcome::Unresolved => InstanceStatus::Unresolved(report.untrusted_reason),
                InstanceOutcome::Error => InstanceStatus::Error(report.error.unwrap_or_default()),
            };
            done(status, reused, report.touches_tests, report.cause)
        }
        Err(stop) => {
            let reason = format!(
                "not evaluated, the run stopped: {}",
                stop.to_string().lines().next().unwrap_or_default()
            );
            shared.stop.store(true, Ordering::SeqCst);
            if let Ok(mut slot) = shared.stop_error.lock() {
                slot.get_or_insert(stop);
            }
            let cause = classify(&Evidence {
                error: Some(&reason),
                ..Evidence::default()
            });
            done(InstanceStatus::Error(reason), false, Vec::new(), cause)
        }
    }
}

/// One instance's evaluation.
struct Job<'a> {
    shared: &'a Shared,
    instance: &'a Instance,
    patch: &'a str,
    dir: &'a Path,
}

impl Job<'_> {
    /// Grades the instance and writes its files. Returns its report and whether it was reused;
    /// `Err` only for a run-level failure.
    async fn run(&self) -> Result<(InstanceReport, bool), EnvImageError> {
        let settings = &self.shared.settings;
        let id = &self.instance.instance_id;
        if let Some(refused) = self.refuse_git_dir().or_else(|| self.refuse_forbidden()) {
            return Ok((refused, false));
        }
        let plan = match self.plan() {
            Ok(plan) => plan,
            Err(reason) => return Ok((self.error_report(&reason, None), false)),
        };
        let on_step = Arc::clone(&settings.on_step);
        let no_activity = |_: Option<&str>| {};
        let notes = Notes {
            line: &*on_step,
            activity: &no_activity,
        };
        let request = ProvisionRequest {
            env: &settings.env,
            run_id: &settings.run_id,
            on_step: &*on_step,
            notes: &notes,
        };
        let Some(docker) = self.shared.engine.docker() else {
            let error = "no Docker daemon builds this engine's images";
            return Ok((self.error_report(error, None), false));
        };
        let provisioner = &settings.provisioner;
        let prepared = match provisioner.provision(docker, self.instance, &request).await {
            Ok(prepared) => prepared,
            Err(PrepareError::Env(error)) if error.is_run_level() => return Err(error),
            Err(error) => {
                // No repository, no image, or an environment image that did not build.
                let report = self.failure_report(&with_hint(&error), None, true);
                return Ok((report, false));
            }
        };
        let image = &prepared.env_image;
        let repo_dir = &prepared.plan.repo_dir;
        let stages = Stages::new(&EvalScriptSpec {
            repo_dir,
            base_ref: BASE_REF,
            test_patch: self.instance.test_patch.as_deref(),
            activate: prepared.plan.activate.as_deref(),
            eval_commands: &plan.eval_commands,
            reinstall: plan.reinstall.as_deref(),
            test_cmd: &plan.test_cmd,
            test_directives: &plan.test_directives,
        });
        // The key covers the scripts without the canaries, whose names change every run.
        // With a network the same inputs may grade otherwise, so it is part of the key.
        let network = if settings.network { "# network\n" } else { "" };
        let mut key_script = format!("{}# {GRADING_SCHEME}\n{network}", stages.record());
        if plan.eval_type == EvalType::FailOnly {
            key_script.push_str("# eval_type: fail_only\n");
        }
        let key = eval_key(id, self.patch, &key_script, &image.id);
        if let Some(report) = self.reusable_report(&key) {
            return Ok((report, true));
        }
        let first = Trial::new(&plan, &stages, self.instance.test_patch.as_deref());
        let written = self
            .write("patch.diff", self.patch)
            .and_then(|()| self.write("eval.sh", &first.stages.record()));
        if let Err(reason) = written {
            return Ok((self.error_report(&reason, Some(key)), false));
        }
        let mut spec = prepared.sandbox_spec(&settings.env, &settings.run_id, SpecUse::Eval);
        spec.network = settings.network;
        spec.image = match provisioner.publish(&self.shared.engine, &spec.image).await {
            Ok(reference) => reference,
            Err(error) => {
                let reason = format!("the evaluation container failed: {error}");
                return Ok((self.error_report(&reason, Some(key)), false));
            }
        };
        let base_files = base_files_needed(self.patch);
        let run = match self.trial(&spec, &first, &base_files, None).await {
            Ok(run) => run,
            Err(reason) => return Ok((self.error_report(&reason, Some(key)), false)),
        };
        let mut outcome = self.grade(&plan, &first, &run);
        if outcome.grade.resolved {
            outcome = self.confirm(&plan, &stages, &spec, &run, outcome).await;
        }
        let graded = Graded {
            key,
            spec_source: plan.spec_source,
        };
        Ok((self.finish(image, graded, &run, outcome), false))
    }

    /// Runs one trial of the patch in fresh sandboxes; `Err` is an infrastructure failure.
    async fn trial(
        &self,
        spec: &SandboxSpec,
        trial: &Trial,
        base_files: &[String],
        tripwire: Option<(&[Target], Terms, &ContainerRun)>,
    ) -> Result<ContainerRun, String> {
        let job = ContainerJob {
            patch: self.patch,
            base_files,
            stages: &trial.stages,
            test_patch: self.instance.test_patch.as_deref(),
            canary: &trial.canary,
            tripwires: tripwire.map(|(targets, terms, _)| (targets, terms)),
            timeout: self.shared.settings.timeout,
            built: tripwire.and_then(|(_, _, first)| first.built.as_ref()),
        };
        run_in_container(&self.shared.engine, spec, &job)
            .await
            .map_err(|error| format!("the evaluation container failed: {error}"))
    }

    /// Grades what ran in the first trial, the canaries checked.
    fn grade(&self, plan: &GradingPlan, trial: &Trial, run: &ContainerRun) -> Outcome {
        let log = run.test_log(self.shared.settings.timeout);
        let reading = read_test_log(&log, plan.parser.parser());
        let not_run = match &reading {
            LogReading::NotRun(reason) => Some(*reason),
            LogReading::Ran(_) => None,
        };
        let mut grade = grade_as(
            &reading,
            &self.instance.fail_to_pass,
            &self.instance.pass_to_pass,
            plan.eval_type,
        );
        if grade.error.is_none()
            && let Err(detail) = check(&log, plan.parser, &trial.canary, &self.graded())
        {
            grade = grade.into_untrusted(&detail);
        }
        Outcome {
            grade,
            log,
            not_run,
            tripwire: None,
        }
    }

    fn graded(&self) -> Vec<&String> {
        self.instance
            .fail_to_pass
            .iter()
            .chain(&self.instance.pass_to_pass)
            .collect()
    }

    /// The tripwire run of a resolved first trial ([`super::tripwire`]): the same patch in fresh
    /// sandboxes (with the work tree the first one built), fresh canaries, and a failing first
    /// statement in each FAIL_TO_PASS test it can place. The outcome stays resolved only when
    /// that run's log is trusted and every such test fails in it; a patch that reaches into the
    /// test framework also needs at least one test placed.
    async fn confirm(
        &self,
        plan: &GradingPlan,
        stages: &Stages,
        spec: &SandboxSpec,
        first: &ContainerRun,
        mut outcome: Outcome,
    ) -> Outcome {
        let targets = tripwire::targets(plan.parser, &self.instance.fail_to_pass);
        let trial = Trial::new(plan, stages, self.instance.test_patch.as_deref());
        let terms = Terms::from_word(random_word());
        let run = match self
            .trial(spec, &trial, &[], Some((&targets, terms, first)))
            .await
        {
            Ok(run) => run,
            Err(reason) => {
                outcome.grade = outcome
                    .grade
                    .into_error(&format!("the tripwire run could not be made: {reason}"));
                return outcome;
            }
        };
        let log = run.test_log(self.shared.settings.timeout);
        let planted = run.tripwires.clone().unwrap_or_default();
        let passed_first: Vec<String> = outcome
            .grade
            .tests_status
            .as_ref()
            .map(|status| status.fail_to_pass.success.clone())
            .unwrap_or_default();
        let reading = read_test_log(&log, plan.parser.parser());
        let verdict = match &reading {
            LogReading::NotRun(reason) => {
                Err(format!("the tripwire run has no gradeable log: {reason}"))
            }
            LogReading::Ran(ran) => check(&log, plan.parser, &trial.canary, &[])
                .map_err(|detail| format!("the tripwire run cannot be trusted: {detail}"))
                .and_then(|()| tripwire::judge(&ran.status, &planted.checked, &passed_first)),
        };
        let reaches = reaches_into_tests(self.patch);
        let verdict = verdict.and_then(|()| {
            if planted.checked.is_empty() && !reaches.is_empty() {
                let files: Vec<String> = reaches
                    .iter()
                    .map(|reach| format!("{} {}", reach.path, reach.why))
                    .collect();
                Err(format!(
                    "the patch reaches into the test framework ({}) and no FAIL_TO_PASS test could \
                     carry a tripwire to confirm its results",
                    files.join("; ")
                ))
            } else {
                Ok(())
            }
        });
        if let Err(detail) = &verdict {
            outcome.grade = outcome.grade.into_untrusted(detail);
        }
        outcome.tripwire = Some(TripwireRun {
            report: TripwireReport {
                checked: planted.checked,
                unchecked: planted.unchecked,
                confirmed: verdict.is_ok(),
            },
            log,
            reset: run.reset,
        });
        outcome
    }

    /// The report of what ran (both trials), and the instance's files.
    fn finish(
        &self,
        image: &EnvImage,
        graded: Graded,
        run: &ContainerRun,
        outcome: Outcome,
    ) -> InstanceReport {
        let id = &self.instance.instance_id;
        let mut report = InstanceReport::from_grade(&outcome.grade, Some(graded.key));
        report.spec_source = graded.spec_source;
        report.touches_tests = test_infrastructure(
            self.patch,
            self.instance.test_patch.as_deref(),
            &run.base_files,
        );
        report.reaches_into_tests = reaches_into_tests(self.patch);
        report.infrastructure_reset.clone_from(&run.reset);
        let files = patch_paths(self.patch);
        report.cause = classify(&Evidence {
            resolved: report.resolved,
            build_error: None,
            error: report.error.as_deref(),
            not_run: outcome.not_run,
            apply_output: &run.apply_output,
            test_log: &outcome.log,
            timed_out: report.timed_out || run.timed_out,
            untrusted_reason: report.untrusted_reason.as_deref(),
            tests_status: report.tests_status.as_ref(),
            patch_files: &files,
            network: self.shared.settings.network,
        });
        let mut run_log = run_log(image, &run.apply_output, run.oom_killed, run.elided_bytes);
        run_log.push_str(&touches_lines(&report.touches_tests));
        run_log.push_str(&grader_lines(run, &report.reaches_into_tests));
        let mut written = Ok(());
        if let Some(tripwire) = &outcome.tripwire {
            report.tripwire = Some(tripwire.report.clone());
            run_log.push_str(&tripwire_lines(&tripwire.report, &tripwire.reset));
            written = self.write("tripwire_output.txt", &tripwire.log);
        } else {
            let _ = std::fs::remove_file(self.dir.join("tripwire_output.txt"));
        }
        if let Some(error) = &report.error {
            run_log.push_str(&format!("error: {}\n", escape_controls(error)));
        }
        run_log.push_str(&run_log_line(report.cause.as_ref()));
        let written = written
            .and_then(|()| self.write("run_instance.log", &run_log))
            .and_then(|()| self.write("test_output.txt", &outcome.log));
        // As in the SWE-bench harness, only a completed evaluation has a report.json.
        let written = match &report.error {
            None => {
                written.and_then(|()| self.write("report.json", &instance_report_json(id, &report)))
            }
            Some(_) => written.map(|()| self.remove_report()),
        };
        match written {
            Ok(()) => report,
            Err(reason) => self.error_report(&reason, None),
        }
    }

    /// The error report of a patch with a form no fix needs ([`reaches_into_tests`]'s forbidden
    /// ones): never graded resolved, so never run.
    fn refuse_forbidden(&self) -> Option<InstanceReport> {
        let forbidden: Vec<String> = reaches_into_tests(self.patch)
            .into_iter()
            .filter(|reach| reach.forbidden)
            .map(|reach| format!("{} {}", reach.path, reach.why))
            .collect();
        (!forbidden.is_empty()).then(|| {
            let reason = format!(
                "{UNTRUSTED_TEST_RUN}: the patch reaches into the test framework in a way no fix \
                 needs ({}), so it is not evaluated",
                forbidden.join("; ")
            );
            self.error_report(&reason, None)
        })
    }

    /// The error report of a patch that names a path inside `.git`, which is never applied.
    fn refuse_git_dir(&self) -> Option<InstanceReport> {
        let inside_git = git_dir_paths(self.patch);
        (!inside_git.is_empty()).then(|| {
            let reason = format!(
                "the patch writes inside .git ({}), so it is not applied",
                inside_git.join(", ")
            );
            self.error_report(&reason, None)
        })
    }

    /// The grading plan (test command, parser, commands before the tests), or why there is none.
    fn plan(&self) -> Result<GradingPlan, String> {
        let settings = &self.shared.settings;
        let plan = settings
            .provisioner
            .plan(self.instance, &settings.env)
            .map_err(|e| e.to_string())?;
        plan.grading.map_err(|error| error.to_string())
    }

    /// The stored report, when it was graded from inputs with this key and was not an error.
    fn reusable_report(&self, key: &str) -> Option<InstanceReport> {
        let text = std::fs::read_to_string(self.dir.join("report.json")).ok()?;
        let report = parse_instance_report(&text, &self.instance.instance_id).ok()?;
        report.can_reuse(key).then_some(report)
    }

    /// Records an evaluation error (best effort) and returns its in-memory report: the patch and
    /// the reason in `run_instance.log`, and no `report.json` (an earlier one is removed), since
    /// the harness counts every `report.json` as a completed evaluation.
    fn error_report(&self, reason: &str, key: Option<String>) -> InstanceReport {
        self.failure_report(reason, key, false)
    }

    /// [`Self::error_report`]; `build` says the reason is the environment's build error.
    fn failure_report(&self, reason: &str, key: Option<String>, build: bool) -> InstanceReport {
        let mut report = InstanceReport::from_error(reason, key);
        report.cause = classify(&Evidence {
            build_error: build.then_some(reason),
            error: Some(reason),
            ..Evidence::default()
        });
        report.touches_tests = test_infrastructure(
            self.patch,
            self.instance.test_patch.as_deref(),
            &BaseFiles::new(),
        );
        self.remove_report();
        let log = format!(
            "{}error: {}\n{}",
            touches_lines(&report.touches_tests),
            escape_controls(reason),
            run_log_line(report.cause.as_ref())
        );
        let _ = self
            .write("patch.diff", self.patch)
            .and_then(|()| self.write("run_instance.log", &log));
        report
    }

    /// Removes a `report.json` left by an earlier run (best effort).
    fn remove_report(&self) {
        let _ = std::fs::remove_file(self.dir.join("report.json"));
    }

    fn write(&self, name: &str, text: &str) -> Result<(), String> {
        let path = self.dir.join(name);
        write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// One trial's scripts and canaries (names drawn afresh for each).
struct Trial {
    stages: Stages,
    canary: CanaryPlan,
}

impl Trial {
    fn new(plan: &GradingPlan, stages: &Stages, test_patch: Option<&str>) -> Self {
        let canary = canary_plan(plan, test_patch, CanaryNames::draw());
        let mut stages = stages.clone();
        if let Some(command_line) = stages.command_line_mut() {
            add_to_command_line(command_line, &canary);
        }
        Self { stages, canary }
    }
}

/// What a finished evaluation's report records of its inputs: the resume key and the spec that
/// gave its test command and parser.
struct Graded {
    key: String,
    spec_source: Option<SpecSource>,
}

/// The grade of an evaluation, its log, and its tripwire run when it had one.
struct Outcome {
    grade: Grade,
    log: String,
    /// Why the first trial's log has no gradeable results, when it has none.
    not_run: Option<NotRunReason>,
    tripwire: Option<TripwireRun>,
}

/// What the tripwire run found, its log, and what it reset.
struct TripwireRun {
    report: TripwireReport,
    log: String,
    reset: Vec<ResetEntry>,
}

#[cfg(test)]
mod tests;
