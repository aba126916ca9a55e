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

use super::canary::{CANARY_SCHEME, CanaryNames, CanaryPlan, add_canaries, canary_plan, verify};
use super::container::{ContainerJob, ContainerRun, EVAL_OUTPUT_LIMIT, run_in_container};
use super::grade::grade_log;
use super::plan::{GradingPlan, grading_plan};
use super::predictions::Prediction;
use super::report::{
    InstanceOutcome, InstanceReport, RunSummary, eval_key, instance_report_json,
    parse_instance_report, run_summary, run_summary_json,
};
use super::script::{EvalScriptSpec, eval_steps, render_eval_script};
use super::spec;
use super::suspicious::{
    BaseFiles, TouchedFile, base_files_needed, git_dir_paths, test_infrastructure,
};
use crate::cluster::Engine;
use crate::config::EnvConfig;
use crate::files::write_atomic;
use crate::image::env::{EnvImage, EnvImageError};
use crate::image::pull::Notes;
use crate::instance::Instance;
use crate::sandbox::{ResourceLimits, SandboxSpec};
use crate::source::{PrepareError, PrepareRequest, prepare};

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
        format!("{}: {status}{when}{tests}", self.instance_id)
    }
}

/// Why the run stopped.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Environment images cannot be built (low disk).
    #[error(transparent)]
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
    let done = |status, reused, touches_tests| InstanceDone {
        instance_id: instance.instance_id.clone(),
        status,
        reused,
        elapsed: started.elapsed(),
        touches_tests,
    };
    let dir = shared.settings.output.join(&instance.instance_id);
    let Some(prediction) = prediction else {
        return done(InstanceStatus::NoPrediction, false, Vec::new());
    };
    if prediction.model_patch.is_empty() && shared.empty_patches == EmptyPatches::Skip {
        // A report from an earlier, non-empty patch no longer describes this prediction.
        let _ = std::fs::remove_file(dir.join("report.json"));
        return done(InstanceStatus::EmptyPatch, false, Vec::new());
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
            done(status, reused, report.touches_tests)
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
            done(InstanceStatus::Error(reason), false, Vec::new())
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
        if let Some(refused) = self.refuse_git_dir() {
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
        let request = PrepareRequest {
            env: &settings.env,
            run_id: &settings.run_id,
            on_step: &*on_step,
            notes: &notes,
        };
        let prepared = match prepare(self.shared.engine.docker(), self.instance, &request).await {
            Ok(prepared) => prepared,
            Err(PrepareError::Env(error)) if error.is_run_level() => return Err(error),
            Err(error) => return Ok((self.error_report(&error.to_string(), None), false)),
        };
        let image = prepared.env_image;
        let repo_dir = self.instance.repo_dir(&settings.env.repo_dir);
        let mut steps = eval_steps(&EvalScriptSpec {
            repo_dir: &repo_dir,
            base_ref: BASE_REF,
            test_patch: self.instance.test_patch.as_deref(),
            activate: settings.env.activate.as_deref(),
            eval_commands: &plan.eval_commands,
            reinstall: plan.reinstall.as_deref(),
            test_cmd: &plan.test_cmd,
            test_directives: &plan.test_directives,
        });
        // The key covers the script without the canaries, whose names change every run.
        let key_script = format!("{}# {CANARY_SCHEME}\n", render_eval_script(&steps));
        let key = eval_key(id, self.patch, &key_script, &image.id);
        if let Some(report) = self.reusable_report(&key) {
            return Ok((report, true));
        }
        let canary = canary_plan(
            &plan,
            self.instance.test_patch.as_deref(),
            CanaryNames::draw(),
        );
        add_canaries(&mut steps, &canary);
        let script = render_eval_script(&steps);
        let written = self
            .write("patch.diff", self.patch)
            .and_then(|()| self.write("eval.sh", &script));
        if let Err(reason) = written {
            return Ok((self.error_report(&reason, Some(key)), false));
        }
        let mut spec = self.sandbox_spec(&image, repo_dir);
        spec.checkout = prepared.checkout;
        let job = ContainerJob {
            patch: self.patch,
            base_files: &base_files_needed(self.patch),
            eval_script: &script,
            timeout: settings.timeout,
        };
        match run_in_container(&self.shared.engine, &spec, &job).await {
            Ok(run) => Ok((self.finish(&plan, &canary, &image, key, &run), false)),
            Err(error) => {
                let reason = format!("the evaluation container failed: {error}");
                Ok((self.error_report(&reason, Some(key)), false))
            }
        }
    }

    /// Grades what ran in the container (the canaries checked) and writes the instance's files.
    fn finish(
        &self,
        plan: &GradingPlan,
        canary: &CanaryPlan,
        image: &EnvImage,
        key: String,
        run: &ContainerRun,
    ) -> InstanceReport {
        let id = &self.instance.instance_id;
        let log = run.test_log(self.shared.settings.timeout);
        let graded: Vec<&String> = self
            .instance
            .fail_to_pass
            .iter()
            .chain(&self.instance.pass_to_pass)
            .collect();
        let mut grade = grade_log(
            &log,
            plan.parser.parser(),
            &self.instance.fail_to_pass,
            &self.instance.pass_to_pass,
        );
        if grade.error.is_none()
            && let Err(detail) = verify(&log, plan.parser, &canary.names, &graded)
        {
            grade = grade.into_untrusted(&detail);
        }
        let mut report = InstanceReport::from_grade(&grade, Some(key));
        report.touches_tests = test_infrastructure(
            self.patch,
            self.instance.test_patch.as_deref(),
            &run.base_files,
        );
        let mut run_log = run_log(image, &run.apply_output, run.oom_killed, run.elided_bytes);
        run_log.push_str(&touches_lines(&report.touches_tests));
        if let Some(error) = &report.error {
            run_log.push_str(&format!("error: {error}\n"));
        }
        let written = self
            .write("run_instance.log", &run_log)
            .and_then(|()| self.write("test_output.txt", &log));
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
        let table = spec::table(&self.shared.settings.env.specs).map_err(|e| e.to_string())?;
        grading_plan(self.instance, &table).map_err(|error| error.to_string())
    }

    fn sandbox_spec(&self, image: &EnvImage, repo_dir: String) -> SandboxSpec {
        let env = &self.shared.settings.env;
        let mut spec = SandboxSpec {
            run_id: self.shared.settings.run_id.clone(),
            instance_id: self.instance.instance_id.clone(),
            image: String::new(),
            repo: None,
            repo_dir,
            limits: ResourceLimits::from_env(env),
            // Tests never get a network, whatever env.network says for agent runs.
            network: false,
            env: env
                .variables
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            output_limit: EVAL_OUTPUT_LIMIT,
            checkout: None,
            // eval.sh activates the environment itself, as SWE-bench's does.
            activate: None,
        };
        image.apply_to(&mut spec);
        spec
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
        let mut report = InstanceReport::from_error(reason, key);
        report.touches_tests = test_infrastructure(
            self.patch,
            self.instance.test_patch.as_deref(),
            &BaseFiles::new(),
        );
        self.remove_report();
        let log = format!("{}error: {reason}\n", touches_lines(&report.touches_tests));
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

/// One `run_instance.log` line per file of test infrastructure the patch changes:
/// `the patch changes test infrastructure: <path>: <why>`.
fn touches_lines(touched: &[TouchedFile]) -> String {
    touched
        .iter()
        .map(|file| {
            format!(
                "the patch changes test infrastructure: {}: {}\n",
                file.path, file.why
            )
        })
        .collect()
}

/// `run_instance.log`: the image, the apply chain's output and what the container reported.
fn run_log(image: &EnvImage, apply_output: &str, oom_killed: bool, elided: u64) -> String {
    let mut log = format!(
        "image: {} ({}){}\n>>>>> apply chain output\n{apply_output}",
        image.tag,
        image.id,
        if image.built {
            ", built by this run"
        } else {
            ""
        }
    );
    if !log.ends_with('\n') {
        log.push('\n');
    }
    if oom_killed {
        log.push_str("a process was killed for running out of memory (env.memory_mb)\n");
    }
    if elided > 0 {
        log.push_str(&format!(
            "{elided} bytes of test output were dropped from the middle of test_output.txt\n"
        ));
    }
    log
}
