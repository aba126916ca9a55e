//! One evaluation in a fresh container started from the instance's environment image, with no
//! network: the base content of the `pyproject.toml`/`Cargo.toml` files the patch changes is read,
//! the patch is copied in and applied by the apply chain, then `eval.sh` runs under a
//! deadline. Both run through the sandbox's session with stderr merged into stdout inside the
//! container, so cargo's stderr lines cannot split a `test … ok` line.

use std::time::Duration;

use super::script::{APPLY_PATCH_FAIL, TESTS_TIMEOUT, apply_patch_script, patch_applied};
use super::suspicious::BaseFiles;
use crate::cluster::Engine;
use crate::sandbox::{OutputLimit, Sandbox, SandboxError, SandboxSpec};

/// Output kept per command: the head and the tail around an elision note. Far above the
/// agent's limit, so that a long test log keeps its start marker, its results and its end
/// marker and exit code (the log is held in memory only up to this bound).
pub const EVAL_OUTPUT_LIMIT: OutputLimit = OutputLimit {
    head: 8 * 1024 * 1024,
    tail: 8 * 1024 * 1024,
};
/// How long the apply chain may take.
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(300);
/// Where the patch is copied in the container.
pub const PATCH_PATH: &str = "/tmp/patch.diff";
/// Where the apply chain script is written in the container.
pub const APPLY_SCRIPT_PATH: &str = "/tmp/apply_patch.sh";
/// Where `eval.sh` is written in the container (as in SWE-bench).
pub const EVAL_SCRIPT_PATH: &str = "/eval.sh";

/// What happened in the container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerRun {
    /// The apply chain's output.
    pub apply_output: String,
    /// Whether one method of the chain applied the patch.
    pub applied: bool,
    /// `eval.sh`'s output (stdout and stderr merged), when it ran.
    pub test_output: Option<String>,
    /// `eval.sh` ran past its deadline and was killed.
    pub timed_out: bool,
    /// A process was killed for running out of memory.
    pub oom_killed: bool,
    /// Bytes of test output dropped between the kept head and tail.
    pub elided_bytes: u64,
    /// The base content of the files [`ContainerJob::base_files`] names, read before the patch
    /// is applied (`None`: not readable).
    pub base_files: BaseFiles,
}

/// What one evaluation runs in its container.
#[derive(Debug, Clone, Copy)]
pub struct ContainerJob<'a> {
    /// The model's patch.
    pub patch: &'a str,
    /// Files (relative to the repository) to read before the patch is applied.
    pub base_files: &'a [String],
    /// `eval.sh`.
    pub eval_script: &'a str,
    /// Deadline of `eval.sh`.
    pub timeout: Duration,
}

impl ContainerRun {
    /// The text of `test_output.txt`, which is what gets graded: the test log, with SWE-bench's
    /// timeout lines appended when the deadline passed; or, when the patch did not apply, the
    /// apply chain's output (which carries `>>>>> Patch Apply Failed`).
    pub fn test_log(&self, timeout: Duration) -> String {
        let Some(output) = &self.test_output else {
            let mut log = self.apply_output.clone();
            if !log.contains(APPLY_PATCH_FAIL) {
                log.push_str(&format!("\n{APPLY_PATCH_FAIL}\n"));
            }
            return log;
        };
        let mut log = output.clone();
        if self.timed_out {
            if !log.ends_with('\n') {
                log.push('\n');
            }
            log.push_str(&format!(
                "{TESTS_TIMEOUT}\nTimeout error: {} seconds exceeded.\n",
                timeout.as_secs()
            ));
        }
        log
    }
}

/// Starts a container (or pod) as `spec` says, reads the job's base files, applies its patch
/// and, when it applied, runs its `eval.sh` under its deadline. The sandbox is removed whatever
/// happens.
///
/// # Errors
/// The container could not be started, died, or its session failed: an infrastructure error.
pub async fn run_in_container(
    engine: &Engine,
    spec: &SandboxSpec,
    job: &ContainerJob<'_>,
) -> Result<ContainerRun, SandboxError> {
    let task_secs = (job.timeout + APPLY_TIMEOUT).as_secs_f64();
    let mut sandbox = engine.start(spec, task_secs).await?;
    let result = apply_and_test(&mut sandbox, &spec.repo_dir, job).await;
    let removed = sandbox.shutdown().await;
    let run = result?;
    removed?;
    Ok(run)
}

async fn apply_and_test(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    job: &ContainerJob<'_>,
) -> Result<ContainerRun, SandboxError> {
    let mut base_files = BaseFiles::new();
    for path in job.base_files {
        let read = sandbox
            .read_file(&format!("{}/{path}", repo_dir.trim_end_matches('/')))
            .await;
        let text = read
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        base_files.insert(path.clone(), text);
    }
    let (patch, eval_script, timeout) = (job.patch, job.eval_script, job.timeout);
    sandbox.write_file(PATCH_PATH, patch.as_bytes()).await?;
    let apply = apply_patch_script(repo_dir, PATCH_PATH);
    sandbox
        .write_file(APPLY_SCRIPT_PATH, apply.as_bytes())
        .await?;
    let applied = sandbox
        .run_merged(&format!("bash {APPLY_SCRIPT_PATH}"), APPLY_TIMEOUT)
        .await?;
    let apply_output = applied.text();
    let mut run = ContainerRun {
        applied: patch_applied(&apply_output) && applied.exit_code == Some(0),
        apply_output,
        oom_killed: applied.oom_killed,
        base_files,
        ..ContainerRun::default()
    };
    if !run.applied {
        return Ok(run);
    }
    sandbox
        .write_file(EVAL_SCRIPT_PATH, eval_script.as_bytes())
        .await?;
    let tested = sandbox
        .run_merged(&format!("bash {EVAL_SCRIPT_PATH}"), timeout)
        .await?;
    run.test_output = Some(tested.text());
    run.timed_out = tested.timed_out;
    run.oom_killed |= tested.oom_killed;
    run.elided_bytes = tested.elided_bytes;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_out_log_ends_with_the_timeout_sentinel() {
        let run = ContainerRun {
            applied: true,
            test_output: Some("+ : '>>>>> Start Test Output'\nrunning".to_owned()),
            timed_out: true,
            ..ContainerRun::default()
        };
        assert_eq!(
            run.test_log(Duration::from_secs(60)),
            "+ : '>>>>> Start Test Output'\nrunning\n>>>>> Tests Timed Out\n\
             Timeout error: 60 seconds exceeded.\n"
        );
    }

    #[test]
    fn a_patch_that_did_not_apply_is_graded_from_the_apply_output() {
        let run = ContainerRun {
            apply_output: "error: corrupt patch at line 3\n>>>>> Patch Apply Failed\n".to_owned(),
            ..ContainerRun::default()
        };
        assert_eq!(
            run.test_log(Duration::from_secs(60)),
            "error: corrupt patch at line 3\n>>>>> Patch Apply Failed\n"
        );
        let killed = ContainerRun {
            apply_output: "Checking patch a.py...".to_owned(),
            ..ContainerRun::default()
        };
        assert!(
            killed
                .test_log(Duration::from_secs(1))
                .ends_with(">>>>> Patch Apply Failed\n")
        );
    }
}
