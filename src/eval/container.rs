//! One evaluation in fresh sandboxes started from the instance's environment image, with no
//! network, in stages that keep the patch's code away from everything that decides the verdict
//! until the tests run:
//!
//! 1. When the evaluation reinstalls the repository (the only step before the tests that runs
//!    the patch's code), the patch is applied and the reinstall runs in a **build sandbox** of
//!    its own; its work tree is then carried as data ([`super::tree`]) into a fresh **test
//!    sandbox**, and nothing else is: not `.git`, not site-packages, not a process. Without a
//!    reinstall the patch is applied in the test sandbox, where no code of it has run.
//! 2. In the test sandbox, before the patch or the tree arrives, the untracked test
//!    infrastructure (package metadata, compiled Python) is saved; after, the test
//!    infrastructure is put back ([`super::infra`]) with the sandbox's own git.
//! 3. The test files are reset and the test patch applied, then the grader writes the canary
//!    tests ([`super::canary`]) and, in a tripwire run, the tripwires ([`super::tripwire`]):
//!    no script and no file holds their names before this point.
//! 4. The tests run under the deadline.
//!
//! Every command runs through the sandbox's session, with stderr merged into stdout inside the
//! container, so cargo's stderr lines cannot split a `test … ok` line.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::canary::{self, CanaryPlan, Placement};
use super::infra::{self, ResetAction, ResetEntry, TreeState};
use super::script::{
    APPLY_PATCH_FAIL, EvalStep, Stages, TESTS_TIMEOUT, apply_patch_script, inert_script,
    patch_applied, patch_files, quote_all, render_eval_script, shell_quote,
};
use super::suspicious::BaseFiles;
use super::tree::{WorkTree, carry, carry_where, is_own_module};
use super::tripwire::{self, Target, Terms, TripwirePlan};
use crate::engine::Engine;
use crate::sandbox::{ExecOutput, FileErrorKind, Sandbox, SandboxError, SandboxSpec};
use infrastructure::{reset_infrastructure, save_infrastructure};

mod infrastructure;

pub use crate::provision::EVAL_OUTPUT_LIMIT;
/// How long the apply chain may take.
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(300);
/// How long one of the grader's own steps (saving, resetting, carrying the tree) may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(600);
/// Where the patch is copied in the container.
pub const PATCH_PATH: &str = "/tmp/patch.diff";
/// Where the apply chain script is written in the container.
pub const APPLY_SCRIPT_PATH: &str = "/tmp/apply_patch.sh";
/// Where the grader keeps its files in the container (saved infrastructure, stage scripts).
pub const WORK_DIR: &str = "/tmp/aci-eval";
/// What `run_instance.log` says in place of the apply chain's output for an empty patch.
pub const NO_PATCH: &str = "no patch to apply: the tests run on the base commit";

/// What happened in the sandboxes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerRun {
    /// The apply chain's output.
    pub apply_output: String,
    /// Whether one method of the chain applied the patch.
    pub applied: bool,
    /// The stages' output (stdout and stderr merged), in order, when they ran.
    pub test_output: Option<String>,
    /// A stage ran past the deadline and was killed.
    pub timed_out: bool,
    /// A process was killed for running out of memory.
    pub oom_killed: bool,
    /// Bytes of test output dropped between the kept head and tail.
    pub elided_bytes: u64,
    /// The base content of the files [`ContainerJob::base_files`] names, read before the patch
    /// is applied (`None`: not readable).
    pub base_files: BaseFiles,
    /// The test infrastructure put back before the tests.
    pub reset: Vec<ResetEntry>,
    /// The tripwires planted (a tripwire run only).
    pub tripwires: Option<TripwirePlan>,
    /// What was carried from the build sandbox, when the reinstall ran in one (a tripwire run
    /// of the same patch takes it instead of building again).
    pub built: Option<Built>,
    /// What the grader did besides the stages, for `run_instance.log`.
    pub notes: Vec<String>,
}

/// What one evaluation runs.
#[derive(Debug, Clone, Copy)]
pub struct ContainerJob<'a> {
    /// The model's patch.
    pub patch: &'a str,
    /// Files (relative to the repository) to read before the patch is applied.
    pub base_files: &'a [String],
    /// The stage scripts, the canaries' directive already on the command line.
    pub stages: &'a Stages,
    /// The test patch (its files are where sympy's and cargo's tests are looked for).
    pub test_patch: Option<&'a str>,
    /// The canary tests to write.
    pub canary: &'a CanaryPlan,
    /// Tripwires to plant: a tripwire run.
    pub tripwires: Option<(&'a [Target], Terms)>,
    /// The deadline of the stages together.
    pub timeout: Duration,
    /// What this patch's first run built: no build sandbox is started.
    pub built: Option<&'a Built>,
}

/// What a build sandbox hands to the test sandbox: the repository's work tree, and the project's
/// own modules as a non-editable reinstall (`setup.py install`, `pip install .`) left them in
/// each site-packages directory ([`is_own_module`]: never metadata, `.pth` files or another
/// package).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The work tree.
    pub tree: WorkTree,
    /// Per site-packages directory (absolute), the project's modules there.
    pub installed: Vec<(String, WorkTree)>,
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

    fn record(&mut self, out: &ExecOutput) {
        self.test_output
            .get_or_insert_with(String::new)
            .push_str(&out.text());
        self.timed_out |= out.timed_out;
        self.oom_killed |= out.oom_killed;
        self.elided_bytes += out.elided_bytes;
    }
}

/// Runs `job` as the module says: a build sandbox when the stages reinstall and no tree is
/// given, then the test sandbox. Every sandbox is removed whatever happens.
///
/// # Errors
/// A sandbox could not be started, died, or its session failed: an infrastructure error.
pub async fn run_in_container(
    engine: &Engine,
    spec: &SandboxSpec,
    job: &ContainerJob<'_>,
) -> Result<ContainerRun, SandboxError> {
    let task_secs = (job.timeout + APPLY_TIMEOUT + STEP_TIMEOUT).as_secs_f64();
    let deadline = Instant::now() + job.timeout;
    let mut run = ContainerRun::default();
    let built = match job.built {
        Some(built) => {
            run.applied = true;
            Some(built.clone())
        }
        None if job.stages.runs_patch_code() => {
            let mut build = engine.start(spec, task_secs).await?;
            let result = build_apart(&mut build, &spec.repo_dir, job, deadline, &mut run).await;
            let removed = build.shutdown().await;
            let built = result?;
            removed?;
            if !run.applied || run.timed_out {
                return Ok(run);
            }
            run.built.clone_from(&built);
            built
        }
        None => None,
    };
    let mut sandbox = engine.start(spec, task_secs).await?;
    let result = test(
        &mut sandbox,
        &spec.repo_dir,
        job,
        built.as_ref(),
        deadline,
        &mut run,
    )
    .await;
    let removed = sandbox.shutdown().await;
    result?;
    removed?;
    Ok(run)
}

/// The build sandbox: base files, the patch, the prepare stage (with the reinstall), and the
/// work tree and the project's installed modules out. `None` when the patch did not apply or the
/// stage timed out.
async fn build_apart(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    job: &ContainerJob<'_>,
    deadline: Instant,
    run: &mut ContainerRun,
) -> Result<Option<Built>, SandboxError> {
    run.base_files = read_base_files(sandbox, repo_dir, job.base_files).await;
    let before = processes(sandbox).await?;
    // Read before the patch is applied, while nothing of it has run.
    let modules = project_modules(sandbox, repo_dir).await?;
    let sites = site_dirs(sandbox, job.stages).await?;
    apply_patch(sandbox, repo_dir, job.patch, run).await?;
    if !run.applied {
        return Ok(None);
    }
    let out = run_stage(
        sandbox,
        "prepare.sh",
        &render_eval_script(&job.stages.prepare),
        deadline,
    )
    .await?;
    run.record(&out);
    if out.timed_out {
        return Ok(None);
    }
    // What the reinstall left running goes first; GNU tar's status 1 is a file that changed
    // as it was read.
    let export = format!(
        "{}\ntar -C {} --exclude=./.git -cf - .",
        kill_all_but(&before),
        shell_quote(repo_dir)
    );
    let out = sandbox.run_trusted(&export, STEP_TIMEOUT).await?;
    if out.elided_bytes > 0 || !matches!(out.exit_code, Some(0 | 1)) {
        return Err(SandboxError::Session(format!(
            "cannot carry the work tree out of the build sandbox (tar exit {:?}, {} bytes dropped \
             over the read limit): {}",
            out.exit_code,
            out.elided_bytes,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let tree = carry(&out.stdout).map_err(|e| SandboxError::Session(e.to_string()))?;
    run.notes.push(format!(
        "the reinstall ran in a build sandbox; its work tree ({} entries) was carried into a \
         fresh sandbox for the tests",
        tree.entries
    ));
    run.notes
        .extend(tree.dropped.iter().map(|why| format!("not carried: {why}")));
    let mut installed = Vec::new();
    for site in sites {
        let modules_there = installed_modules(sandbox, &site, &modules).await?;
        if modules_there.entries > 0 {
            run.notes.push(format!(
                "the project's installed modules in {site} ({} entries) were carried too",
                modules_there.entries
            ));
            installed.push((site, modules_there));
        }
    }
    Ok(Some(Built { tree, installed }))
}

/// The project's top-level modules at the base commit: each `X/__init__.py` at the root or
/// under `src/` or `lib/`, and each `X.py` at the root but the packaging and test files.
async fn project_modules(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
) -> Result<Vec<String>, SandboxError> {
    let files = trusted(
        sandbox,
        repo_dir,
        "list the repository's files",
        &format!("{GIT} ls-files -z"),
    )
    .await?;
    let mut names = BTreeSet::new();
    for path in nul_list(&files) {
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            [name, "__init__.py"] | ["src" | "lib", name, "__init__.py"] => {
                names.insert((*name).to_owned());
            }
            [file] if file.ends_with(".py") && infra::class_of(file).is_none() => {
                let stem = file.trim_end_matches(".py");
                if !matches!(stem, "setup" | "conftest" | "noxfile" | "fabfile") {
                    names.insert(stem.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(names.into_iter().collect())
}

/// The environment's site-packages directories, as its Python reports them after the
/// activation (none when there is no Python).
async fn site_dirs(
    sandbox: &mut impl Sandbox,
    stages: &Stages,
) -> Result<Vec<String>, SandboxError> {
    let activate: Vec<&str> = stages
        .prepare
        .iter()
        .filter_map(|step| match step {
            EvalStep::Activate(snippet) => Some(snippet.as_str()),
            _ => None,
        })
        .take(1)
        .collect();
    let script = format!(
        "( {} \npython -c 'import site; print(\"\\n\".join(site.getsitepackages()))' ) 2>/dev/null",
        activate.join("\n")
    );
    let out = sandbox.run_trusted(&script, STEP_TIMEOUT).await?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| line.starts_with('/') && !line.contains(".."))
        .map(str::to_owned)
        .collect())
}

/// The project's `modules` in the site-packages directory `site`, as a tar rebuilt by
/// [`carry_where`].
async fn installed_modules(
    sandbox: &mut impl Sandbox,
    site: &str,
    modules: &[String],
) -> Result<WorkTree, SandboxError> {
    let site_quoted = shell_quote(site);
    let listed = sandbox
        .run_trusted(
            &format!("find {site_quoted} -mindepth 1 -maxdepth 1 -printf '%f\\0' 2>/dev/null"),
            STEP_TIMEOUT,
        )
        .await?;
    let own: Vec<String> = nul_list(&listed.stdout)
        .into_iter()
        .filter(|name| !name.contains('/') && is_own_module(std::path::Path::new(name), modules))
        .collect();
    if own.is_empty() {
        return Ok(WorkTree {
            tar: Vec::new(),
            entries: 0,
            dropped: Vec::new(),
        });
    }
    let out = sandbox
        .run_trusted(
            &format!("tar -C {site_quoted} -cf - -- {}", quote_all(&own)),
            STEP_TIMEOUT,
        )
        .await?;
    if out.elided_bytes > 0 || !matches!(out.exit_code, Some(0 | 1)) {
        return Err(SandboxError::Session(format!(
            "cannot carry the project's modules out of {site} (tar exit {:?})",
            out.exit_code
        )));
    }
    carry_where(&out.stdout, |path| is_own_module(path, modules))
        .map_err(|e| SandboxError::Session(e.to_string()))
}

/// The pids of the sandbox's processes now (its init, its main process, the session).
async fn processes(sandbox: &mut impl Sandbox) -> Result<Vec<u32>, SandboxError> {
    let out = sandbox
        .run_trusted("cd /proc && printf '%s\\n' [0-9]*", STEP_TIMEOUT)
        .await?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect())
}

/// A script that kills every process of the sandbox but `keep`, the shell that runs it and
/// that shell's ancestors (read from `/proc`: a process's parent is the second field after its
/// name's closing parenthesis).
fn kill_all_but(keep: &[u32]) -> String {
    let keep: String = keep.iter().map(|pid| format!("{pid} ")).collect();
    format!(
        "__aci_keep=\" {keep}$$ \"; __aci_p=$$; \
         while [ \"$__aci_p\" -gt 1 ] && [ -r /proc/$__aci_p/stat ]; do \
         __aci_s=$(cat /proc/$__aci_p/stat); __aci_s=${{__aci_s##*) }}; \
         __aci_p=$(printf '%s' \"$__aci_s\" | cut -d' ' -f2); __aci_keep=\"$__aci_keep$__aci_p \"; done; \
         for __aci_d in /proc/[0-9]*; do __aci_pid=${{__aci_d#/proc/}}; \
         case \"$__aci_keep\" in *\" $__aci_pid \"*) ;; *) kill -KILL \"$__aci_pid\" 2>/dev/null;; esac; done"
    )
}

/// The test sandbox, steps 2 to 4.
async fn test(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    job: &ContainerJob<'_>,
    built: Option<&Built>,
    deadline: Instant,
    run: &mut ContainerRun,
) -> Result<(), SandboxError> {
    let saved = save_infrastructure(sandbox, repo_dir).await?;
    match built {
        Some(built) => {
            import_tree(sandbox, repo_dir, &built.tree).await?;
            for (site, modules) in &built.installed {
                import_installed(sandbox, site, modules).await?;
            }
        }
        None => {
            run.base_files = read_base_files(sandbox, repo_dir, job.base_files).await;
            apply_patch(sandbox, repo_dir, job.patch, run).await?;
            if !run.applied {
                return Ok(());
            }
            let prepare = render_eval_script(&job.stages.prepare);
            let out = run_stage(sandbox, "prepare.sh", &prepare, deadline).await?;
            run.record(&out);
            if out.timed_out {
                return Ok(());
            }
        }
    }
    run.reset = reset_infrastructure(sandbox, repo_dir, &saved, run).await?;
    let files = render_eval_script(&job.stages.test_files);
    let out = run_stage(sandbox, "test_files.sh", &files, deadline).await?;
    run.record(&out);
    if out.exit_code != Some(0) {
        // The reset failed or the test patch did not apply: the log carries the sentinel.
        return Ok(());
    }
    if let Some((targets, terms)) = job.tripwires {
        run.tripwires =
            Some(plant_tripwires(sandbox, repo_dir, job.test_patch, targets, terms).await?);
    }
    write_canaries(sandbox, repo_dir, job.canary).await?;
    let tests = render_eval_script(&job.stages.tests);
    let out = run_stage(sandbox, "tests.sh", &tests, deadline).await?;
    run.record(&out);
    Ok(())
}

/// Writes a stage's script under [`WORK_DIR`] and runs it until `deadline`.
async fn run_stage(
    sandbox: &mut impl Sandbox,
    name: &str,
    script: &str,
    deadline: Instant,
) -> Result<ExecOutput, SandboxError> {
    let path = format!("{WORK_DIR}/{name}");
    sandbox.write_file(&path, script.as_bytes()).await?;
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    sandbox.run_merged(&format!("bash {path}"), left).await
}

async fn read_base_files(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    paths: &[String],
) -> BaseFiles {
    let mut base_files = BaseFiles::new();
    for path in paths {
        let read = sandbox
            .read_file(&format!("{}/{path}", repo_dir.trim_end_matches('/')))
            .await;
        let text = read
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        base_files.insert(path.clone(), text);
    }
    base_files
}

/// The apply chain on `patch` (nothing for an empty one: the tests run on the base commit).
async fn apply_patch(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    patch: &str,
    run: &mut ContainerRun,
) -> Result<(), SandboxError> {
    if patch.is_empty() {
        run.apply_output = format!("{NO_PATCH}\n");
        run.applied = true;
        return Ok(());
    }
    sandbox.write_file(PATCH_PATH, patch.as_bytes()).await?;
    let apply = apply_patch_script(repo_dir, PATCH_PATH);
    sandbox
        .write_file(APPLY_SCRIPT_PATH, apply.as_bytes())
        .await?;
    let applied = sandbox
        .run_merged(&format!("bash {APPLY_SCRIPT_PATH}"), APPLY_TIMEOUT)
        .await?;
    run.apply_output = applied.text();
    run.applied = patch_applied(&run.apply_output) && applied.exit_code == Some(0);
    run.oom_killed |= applied.oom_killed;
    Ok(())
}

/// Runs one of the grader's own scripts in the repository and returns its stdout, failing
/// when it exits non-zero.
async fn trusted(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    what: &str,
    script: &str,
) -> Result<Vec<u8>, SandboxError> {
    let out = sandbox
        .run_trusted(
            &format!("cd {} && {{ {script}\n}}", shell_quote(repo_dir)),
            STEP_TIMEOUT,
        )
        .await?;
    if out.exit_code != Some(0) || out.elided_bytes > 0 {
        return Err(SandboxError::Session(format!(
            "cannot {what} (exit {:?}): {}",
            out.exit_code,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

fn nul_list(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|item| !item.is_empty())
        .map(|item| String::from_utf8_lossy(item).into_owned())
        .collect()
}

const GIT: &str = "git -c core.quotePath=false";

/// Empties the work tree (all but `.git`) and unpacks `tree` there.
async fn import_tree(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    tree: &WorkTree,
) -> Result<(), SandboxError> {
    let path = format!("{WORK_DIR}/tree.tar");
    sandbox.write_file(&path, &tree.tar).await?;
    let script = format!(
        "find . -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf -- {{}} + && \
         tar --no-same-owner -xf {path} && rm -f {path}"
    );
    trusted(sandbox, repo_dir, "unpack the carried work tree", &script).await?;
    Ok(())
}

/// Replaces the project's modules in the site-packages directory `site` with `modules`.
async fn import_installed(
    sandbox: &mut impl Sandbox,
    site: &str,
    modules: &WorkTree,
) -> Result<(), SandboxError> {
    let mut tops = BTreeSet::new();
    for entry in tar::Archive::new(modules.tar.as_slice())
        .entries()
        .map_err(|e| SandboxError::Session(format!("cannot read the carried modules: {e}")))?
    {
        let entry = entry
            .map_err(|e| SandboxError::Session(format!("cannot read the carried modules: {e}")))?;
        if let Ok(path) = entry.path()
            && let Some(std::path::Component::Normal(first)) = path.components().next()
        {
            tops.insert(first.to_string_lossy().into_owned());
        }
    }
    let tops: Vec<String> = tops.into_iter().collect();
    let path = format!("{WORK_DIR}/installed.tar");
    sandbox.write_file(&path, &modules.tar).await?;
    let script = format!(
        "rm -rf -- {} && tar --no-same-owner -xf {path} && rm -f {path}",
        quote_all(&tops)
    );
    trusted(
        sandbox,
        site,
        "unpack the project's installed modules",
        &script,
    )
    .await?;
    Ok(())
}

/// Reads the files the tripwires go in, plants them ([`tripwire::plan`]) and writes them.
async fn plant_tripwires(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    test_patch: Option<&str>,
    targets: &[Target],
    terms: Terms,
) -> Result<TripwirePlan, SandboxError> {
    let left: Vec<String> = patch_files(test_patch.unwrap_or_default())
        .into_iter()
        .filter_map(|change| change.new_path)
        .collect();
    let mut texts = BTreeMap::new();
    for path in tripwire::files_to_read(targets, &left) {
        if let Ok(bytes) = sandbox.read_file(&format!("{repo_dir}/{path}")).await
            && let Ok(text) = String::from_utf8(bytes)
        {
            texts.insert(path, text);
        }
    }
    let plan = tripwire::plan(targets, &texts, terms);
    for (path, text) in &plan.files {
        sandbox
            .write_file(&format!("{repo_dir}/{path}"), text.as_bytes())
            .await?;
    }
    Ok(plan)
}

/// Writes the canary files where their placement puts them ([`canary::placed`]). A file that
/// cannot take them (no closing brace to put them before) is left as it is: the canaries then
/// have no result, and the run is not trusted.
async fn write_canaries(
    sandbox: &mut impl Sandbox,
    repo_dir: &str,
    canary: &CanaryPlan,
) -> Result<(), SandboxError> {
    for file in &canary.files {
        let path = format!("{repo_dir}/{}", file.path);
        let current = if file.placement == Placement::Create {
            None
        } else {
            match sandbox.read_file(&path).await {
                Ok(bytes) => Some(bytes),
                Err(SandboxError::File {
                    kind: FileErrorKind::NotFound,
                    ..
                }) => None,
                Err(error) => return Err(error),
            }
        };
        if let Ok(text) = canary::placed(current.as_deref(), file) {
            sandbox.write_file(&path, &text).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
