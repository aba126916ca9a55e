//! `aci ablate`: run several configurations on the same instances, evaluate each, and compare
//! them in one table, as the paper's Table 3 does.
//!
//! Every configuration (the base, and each variant layered over the base) runs as an ordinary
//! `aci batch` into `OUT/<name>/r<k>/run` and is graded by `aci eval` into `OUT/<name>/r<k>/eval`,
//! through this same binary. So an ablation resumes exactly as a batch does (finished
//! instances are skipped, evaluations reused by key), and the environment images are shared:
//! they are keyed by content, not by configuration.

pub mod chart;
pub mod records;
pub mod stats;
pub mod table;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use table::{ConfigRuns, Table};

/// What to run.
#[derive(Debug, Clone)]
pub struct AblationPlan {
    /// The `aci` executable (the running one).
    pub exe: PathBuf,
    /// The instances file.
    pub instances: PathBuf,
    /// The instance ids, in order (for the records).
    pub instance_ids: Vec<String>,
    /// The base configuration file.
    pub base: PathBuf,
    /// The variant files, each layered over the base.
    pub variants: Vec<PathBuf>,
    /// The output directory.
    pub output: PathBuf,
    /// Batch and eval workers.
    pub workers: usize,
    /// How many times each configuration runs.
    pub repeats: usize,
    /// Arguments passed through to every `aci batch` (model, api base, runtime, `--set`).
    pub batch_args: Vec<String>,
    /// Arguments passed through to every `aci eval` (`--images`, the engine).
    pub eval_args: Vec<String>,
    /// The `--replay-dir` for configurations that do not set `model.replay_dir` themselves.
    pub replay_dir: Option<PathBuf>,
}

/// Why an ablation failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum AblateError {
    /// A step could not be started.
    #[error("cannot run {what}: {source}")]
    Spawn {
        /// The step.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A batch or an evaluation exited with a failure (not merely unresolved instances).
    #[error("{what} failed with {status}")]
    Step {
        /// The step.
        what: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// A signal stopped the ablation: the step it reached stopped in order, and no step after
    /// it ran.
    #[error("interrupted during {what}")]
    Interrupted {
        /// The step that was running (or would have run next).
        what: String,
    },
    /// The results could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The name of a configuration in the table: its file's stem.
pub fn config_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".to_owned())
}

/// A signal to send on to the running step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSignal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

/// The step that runs now, shared with the signal handler: [`StepControl::forward`] sends a
/// signal on to it and lets no further step start. Each step runs in a process group of its
/// own, so a Ctrl-C at the terminal reaches it once, through this, and not twice.
#[derive(Clone, Default)]
pub struct StepControl {
    state: Arc<Mutex<StepState>>,
}

#[derive(Default)]
struct StepState {
    /// The running step; only waited for under the lock, so its pid is never a reused one.
    child: Option<Child>,
    /// A signal came: no step starts any more.
    stopping: bool,
}

/// How often a running step is checked for its end.
const STEP_POLL: Duration = Duration::from_millis(100);

impl StepControl {
    fn lock(&self) -> MutexGuard<'_, StepState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `signal` on to the running step, if any (the first stops it in order, as it
    /// stops `aci batch` and `aci eval`; a second quits it at once), and stops the ablation
    /// after it.
    pub fn forward(&self, signal: StepSignal) {
        let mut state = self.lock();
        state.stopping = true;
        let Some(child) = &state.child else {
            return;
        };
        let signal = match signal {
            StepSignal::Interrupt => rustix::process::Signal::INT,
            StepSignal::Terminate => rustix::process::Signal::TERM,
        };
        if let Some(pid) = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            // A step that has just exited cannot be signalled; its end is seen next.
            let _ = rustix::process::kill_process(pid, signal);
        }
    }

    /// Whether a signal has stopped the ablation.
    pub fn is_stopping(&self) -> bool {
        self.lock().stopping
    }

    /// Runs `command` as the running step, to its end.
    fn run(
        &self,
        mut command: Command,
        what: &str,
    ) -> Result<std::process::ExitStatus, AblateError> {
        use std::os::unix::process::CommandExt;
        let interrupted = || AblateError::Interrupted {
            what: what.to_owned(),
        };
        {
            let mut state = self.lock();
            if state.stopping {
                return Err(interrupted());
            }
            // The step reads nothing, and away from the terminal's process group it would
            // be stopped if it tried.
            command.stdin(std::process::Stdio::null()).process_group(0);
            let child = command.spawn().map_err(|source| AblateError::Spawn {
                what: what.to_owned(),
                source,
            })?;
            state.child = Some(child);
        }
        loop {
            {
                let mut state = self.lock();
                let Some(child) = state.child.as_mut() else {
                    break Err(interrupted());
                };
                let waited = child.try_wait();
                match waited {
                    Ok(Some(status)) => {
                        state.child = None;
                        break if state.stopping {
                            Err(interrupted())
                        } else {
                            Ok(status)
                        };
                    }
                    Ok(None) => {}
                    Err(source) => {
                        state.child = None;
                        break Err(AblateError::Spawn {
                            what: what.to_owned(),
                            source,
                        });
                    }
                }
            }
            std::thread::sleep(STEP_POLL);
        }
    }
}

fn run_step(control: &StepControl, mut command: Command, what: &str) -> Result<(), AblateError> {
    eprintln!("ablate: {what}");
    // The steps' own summaries go to stderr: stdout carries only the comparison table.
    command.stdout(std::process::Stdio::from(std::io::stderr()));
    let status = control.run(command, what)?;
    if status.success() {
        Ok(())
    } else {
        Err(AblateError::Step {
            what: what.to_owned(),
            status,
        })
    }
}

/// Whether a config file sets its own `model.replay_dir`.
fn sets_replay_dir(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_yaml::from_str::<serde_yaml::Value>(&text).ok())
        .and_then(|value| value.get("model")?.get("replay_dir").cloned())
        .is_some_and(|value| !value.is_null())
}

/// Runs one configuration (its layers in order) once: batch, then eval.
fn run_config(
    plan: &AblationPlan,
    control: &StepControl,
    layers: &[PathBuf],
    dir: &Path,
) -> Result<f64, AblateError> {
    let started = Instant::now();
    let name = dir.display().to_string();
    let mut batch = Command::new(&plan.exe);
    batch.arg("batch").arg("--instances").arg(&plan.instances);
    for layer in layers {
        batch.arg("--config").arg(layer);
    }
    batch
        .arg("--workers")
        .arg(plan.workers.to_string())
        .arg("--output")
        .arg(dir.join("run"));
    if let Some(replay_dir) = &plan.replay_dir
        && !layers.iter().any(|layer| sets_replay_dir(layer))
    {
        batch.arg("--replay-dir").arg(replay_dir);
    }
    batch.args(&plan.batch_args);
    run_step(control, batch, &format!("batch {name}"))?;
    let mut eval = Command::new(&plan.exe);
    eval.arg("eval")
        .arg("--instances")
        .arg(&plan.instances)
        .arg("--predictions")
        .arg(dir.join("run").join("preds.json"))
        .arg("--workers")
        .arg(plan.workers.to_string())
        .arg("--output")
        .arg(dir.join("eval"))
        .args(&plan.eval_args);
    run_step(control, eval, &format!("eval {name}"))?;
    Ok(started.elapsed().as_secs_f64())
}

/// Runs one configuration `repeats` times and reads its records.
fn run_repeats(
    plan: &AblationPlan,
    control: &StepControl,
    name: &str,
    path: &Path,
    layers: &[PathBuf],
) -> Result<ConfigRuns, AblateError> {
    let mut runs = ConfigRuns {
        name: name.to_owned(),
        path: path.display().to_string(),
        repeats: Vec::new(),
        wall_seconds: Vec::new(),
    };
    for repeat in 1..=plan.repeats.max(1) {
        let dir = plan.output.join(name).join(format!("r{repeat}"));
        let seconds = run_config(plan, control, layers, &dir)?;
        let records = plan
            .instance_ids
            .iter()
            .map(|id| records::record(&dir.join("run"), &dir.join("eval"), id))
            .collect();
        runs.repeats.push(records);
        runs.wall_seconds.push(seconds);
    }
    Ok(runs)
}

/// Runs every configuration `repeats` times, evaluates, and builds the comparison. A signal
/// sent on through `control` ends it after the running step, with
/// [`AblateError::Interrupted`]: what finished stays on disk, and a rerun resumes from it.
pub fn run(plan: &AblationPlan, control: &StepControl) -> Result<Table, AblateError> {
    let base = run_repeats(
        plan,
        control,
        &config_name(&plan.base),
        &plan.base,
        std::slice::from_ref(&plan.base),
    )?;
    let mut variants = Vec::new();
    for variant in &plan.variants {
        let layers = [plan.base.clone(), variant.clone()];
        variants.push(run_repeats(
            plan,
            control,
            &config_name(variant),
            variant,
            &layers,
        )?);
    }
    Ok(table::compare(&base, &variants))
}

/// Writes `ablation.md`, `ablation.csv`, `ablation.json` and the chart `ablation.svg` into the
/// output directory.
pub fn write(table: &Table, output: &Path) -> Result<(), AblateError> {
    let write = |name: &str, bytes: Vec<u8>| {
        let path = output.join(name);
        crate::files::write_atomic(&path, &bytes)
            .map_err(|source| AblateError::Write { path, source })
    };
    write("ablation.md", table.to_markdown().into_bytes())?;
    write("ablation.csv", table.to_csv().into_bytes())?;
    write("ablation.svg", chart::svg(table).into_bytes())?;
    let json = serde_json::to_vec_pretty(table).map_err(|e| AblateError::Write {
        path: output.join("ablation.json"),
        source: std::io::Error::other(e),
    })?;
    write("ablation.json", json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_step_starts_after_a_signal() {
        let control = StepControl::default();
        control.forward(StepSignal::Terminate);
        let error = control.run(Command::new("true"), "batch x").unwrap_err();
        assert_eq!(error.to_string(), "interrupted during batch x");
    }

    #[test]
    fn a_signal_reaches_the_running_step_and_ends_it() {
        let control = StepControl::default();
        let forward = control.clone();
        let sender = std::thread::spawn(move || {
            while forward.lock().child.is_none() {
                std::thread::sleep(Duration::from_millis(10));
            }
            forward.forward(StepSignal::Interrupt);
        });
        let mut sleep = Command::new("sleep");
        sleep.arg("600");
        let error = control.run(sleep, "eval y");
        sender.join().unwrap();
        assert_eq!(error.unwrap_err().to_string(), "interrupted during eval y");
        assert!(control.lock().child.is_none());
        assert!(control.is_stopping());
    }
}
