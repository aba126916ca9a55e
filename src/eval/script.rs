//! Shell scripts run inside the eval container: `eval.sh` in the SWE-bench v4 shape (plus the v5
//! exit-code line), built from a list of typed steps, and the patch apply chain; and the
//! diff-header reading they need to know which test files `test_patch` touches.

pub use crate::patch::{FileChange, HUNK_HEADER, hunk_body, hunk_header, patch_files};

/// Printed (through `set -x`) just before the test command. The parser slices after it.
pub const START_MARKER: &str = ">>>>> Start Test Output";
/// Printed (through `set -x`) just after the test command. The parser slices before it.
pub const END_MARKER: &str = ">>>>> End Test Output";
/// Prefix of the line after [`END_MARKER`] that records the test command's exit status.
pub const EXIT_CODE_PREFIX: &str = ">>>>> Test Exit Code: ";
/// Printed by the apply chain when one method applied the patch.
pub const APPLY_PATCH_PASS: &str = ">>>>> Applied Patch";
/// Printed by the apply chain when every method failed.
pub const APPLY_PATCH_FAIL: &str = ">>>>> Patch Apply Failed";
/// Printed by `eval.sh` when the test files cannot be reset to the base commit.
pub const RESET_FAILED: &str = ">>>>> Reset Failed";
/// Printed by `eval.sh` when `test_patch` does not apply (the tests are then not run).
pub const TESTS_ERROR: &str = ">>>>> Tests Errored";
/// Appended to the log by the runner when the test run passed its deadline.
pub const TESTS_TIMEOUT: &str = ">>>>> Tests Timed Out";
/// The SWE-bench heredoc delimiter; a suffix is added if the patch contains it as a line.
pub const HEREDOC_DELIMITER: &str = "EOF_114329324912";

/// Every line of output that the model's patch can influence before the start marker (the
/// header's `git status` and `git diff`, the reinstall's output) starts with this, so that no
/// parser reads it as a result line.
pub const INERT_PREFIX: &str = "| ";
/// Output of `git status` and `git diff` kept in the header, in bytes.
pub const HEADER_OUTPUT_LIMIT: usize = 1024 * 1024;
/// The shell function `eval.sh` pipes such output through: each line gets [`INERT_PREFIX`] and
/// every run of five `>` loses its last one, so neither a marker nor a sentinel can be planted.
/// The pattern is written so that the function's own `set -x` trace holds no such run either.
const INERT_FILTER: &str = r"aci_inert() { sed -e 's/>\{5\}/>>>>_/g' -e 's/^/| /'; }";

/// What `eval.sh` must do to the files `test_patch` touches so that a run (and a rerun) starts
/// from the base tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestFiles {
    /// Files that exist at the base commit: restored with `git checkout <base> -- …`.
    pub reset: Vec<String>,
    /// Files the patch creates (new files and rename targets): removed with `rm -f`, so that a
    /// model that created the same file, or an earlier run, cannot make `git apply` fail.
    pub created: Vec<String>,
}

/// Everything `eval.sh` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalScriptSpec<'a> {
    /// Repository directory in the container (`/testbed`).
    pub repo_dir: &'a str,
    /// Commit (or ref) the test files are reset to.
    pub base_ref: &'a str,
    /// The instance's test patch; `None` or empty skips the reset and apply steps.
    pub test_patch: Option<&'a str>,
    /// A shell snippet that activates the environment (`env.activate`), run first and again
    /// before the reinstall, as SWE-bench activates its conda env.
    pub activate: Option<&'a str>,
    /// Commands run before everything else (the spec's `eval_commands`).
    pub eval_commands: &'a [String],
    /// The spec's install command, run again now that the patch is applied.
    pub reinstall: Option<&'a str>,
    /// The test command, used verbatim (it may span several lines).
    pub test_cmd: &'a str,
    /// Arguments appended to the test command's last line, shell-quoted
    /// (see [`super::plan::test_directives`]).
    pub test_directives: &'a [String],
}

/// One step of `eval.sh`. Each carries what it needs, so a caller can insert its own steps (for
/// example around the tests) before [`render_eval_script`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalStep {
    /// `#!/bin/bash`, `exec 2>&1` (so that the `set -x` trace lines such as
    /// `+ : '>>>>> Start Test Output'` land in the same stream as the test output, in order,
    /// whatever the runner does with stderr), `set -uxo pipefail` (no `-e`), `cd`,
    /// `safe.directory`, and the inert filter.
    Preamble {
        /// The repository directory.
        repo_dir: String,
    },
    /// The activation snippet.
    Activate(String),
    /// A command from the spec.
    Command(String),
    /// SWE-bench's informational header: `git status`, `git show` (the commit only, since aci's
    /// baseline commit holds the whole tree) and `git diff` against the base, through the inert
    /// filter, status and diff cut at [`HEADER_OUTPUT_LIMIT`] bytes.
    GitHeader {
        /// The base commit.
        base_ref: String,
    },
    /// The install command again, its output through the inert filter.
    Reinstall(String),
    /// Commands of the grader's own whose trace names files the patch chose (the test
    /// infrastructure reset), through the inert filter.
    Inert(String),
    /// `git checkout <base> -- <files>` and `rm -f -- <created>`; with `check`, a failed
    /// checkout prints [`RESET_FAILED`] and stops.
    ResetTestFiles {
        /// The base commit.
        base_ref: String,
        /// The files.
        files: TestFiles,
        /// Stop when the checkout fails.
        check: bool,
    },
    /// `git apply -v -` of the test patch from a quoted heredoc; failure prints [`TESTS_ERROR`].
    ApplyTestPatch(String),
    /// The start marker.
    StartMarker,
    /// The test command in a subshell (a stray `exit` or `cd` cannot skip the end marker), its
    /// status kept in `ACI_TEST_EXIT_CODE`.
    RunTests {
        /// The whole command, directives included.
        command_line: String,
    },
    /// The end marker, then `>>>>> Test Exit Code: N`.
    EndMarker,
}

/// The steps of `eval.sh` in SWE-bench's order: activation, `eval_commands`, the git header,
/// (activation again and) the reinstall, reset of the test files, removal of files the test
/// patch creates, the test patch, the start marker, the tests, the end marker and exit code, and
/// the same reset again so the script can be rerun.
pub fn eval_steps(spec: &EvalScriptSpec<'_>) -> Vec<EvalStep> {
    let mut steps = vec![EvalStep::Preamble {
        repo_dir: spec.repo_dir.to_owned(),
    }];
    let activate = spec.activate.filter(|snippet| !snippet.trim().is_empty());
    steps.extend(activate.map(|snippet| EvalStep::Activate(snippet.to_owned())));
    steps.extend(spec.eval_commands.iter().cloned().map(EvalStep::Command));
    steps.push(EvalStep::GitHeader {
        base_ref: spec.base_ref.to_owned(),
    });
    if let Some(install) = spec.reinstall.filter(|cmd| !cmd.trim().is_empty()) {
        steps.extend(activate.map(|snippet| EvalStep::Activate(snippet.to_owned())));
        steps.push(EvalStep::Reinstall(install.to_owned()));
    }
    let test_patch = spec.test_patch.filter(|patch| !patch.trim().is_empty());
    let files = test_patch.map(test_files).unwrap_or_default();
    let reset = |check| EvalStep::ResetTestFiles {
        base_ref: spec.base_ref.to_owned(),
        files: files.clone(),
        check,
    };
    steps.push(reset(true));
    steps.extend(test_patch.map(|patch| EvalStep::ApplyTestPatch(patch.to_owned())));
    let mut command_line = spec.test_cmd.trim_end().to_owned();
    for directive in spec.test_directives {
        command_line.push(' ');
        command_line.push_str(&shell_quote(directive));
    }
    steps.extend([
        EvalStep::StartMarker,
        EvalStep::RunTests { command_line },
        EvalStep::EndMarker,
        reset(false),
    ]);
    steps
}

/// The steps of one evaluation cut where the grader works between them (see
/// [`super::container`]): no step of the patch's code, nor a file it could read, runs or exists
/// before [`Stages::tests`] but what [`Stages::prepare`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stages {
    /// The activation, `eval_commands`, the git header and the reinstall: everything before
    /// the test files are reset.
    pub prepare: Vec<EvalStep>,
    /// The reset of the test patch's files and the test patch.
    pub test_files: Vec<EvalStep>,
    /// The activation and `eval_commands` again, the markers around the test command and its
    /// exit status, and the reset after.
    pub tests: Vec<EvalStep>,
}

impl Stages {
    /// The stages of [`eval_steps`]`(spec)`, each a script of its own (with its own preamble).
    pub fn new(spec: &EvalScriptSpec<'_>) -> Self {
        let mut all = eval_steps(spec);
        let preamble = all.first().cloned();
        let again: Vec<EvalStep> = all
            .iter()
            .skip(1)
            .take_while(|step| matches!(step, EvalStep::Activate(_) | EvalStep::Command(_)))
            .cloned()
            .collect();
        let start = all
            .iter()
            .position(|step| *step == EvalStep::StartMarker)
            .unwrap_or(all.len());
        let mut tests: Vec<EvalStep> = preamble.iter().cloned().chain(again).collect();
        tests.extend(all.drain(start..));
        let reset = all
            .iter()
            .position(|step| matches!(step, EvalStep::ResetTestFiles { check: true, .. }))
            .unwrap_or(all.len());
        let mut test_files: Vec<EvalStep> = preamble.into_iter().collect();
        test_files.extend(all.drain(reset..));
        Self {
            prepare: all,
            test_files,
            tests,
        }
    }

    /// Whether the patch's code runs before the tests (a reinstall step).
    pub fn runs_patch_code(&self) -> bool {
        self.prepare
            .iter()
            .any(|step| matches!(step, EvalStep::Reinstall(_)))
    }

    /// The test command's line, to add the canaries' directive to.
    pub fn command_line_mut(&mut self) -> Option<&mut String> {
        self.tests.iter_mut().find_map(|step| match step {
            EvalStep::RunTests { command_line } => Some(command_line),
            _ => None,
        })
    }

    /// The whole evaluation as one text, for `eval.sh` in the output: each stage's script, and
    /// where the grader's own work goes between them.
    pub fn record(&self) -> String {
        [
            render_eval_script(&self.prepare),
            format!("{STAGE_SEPARATOR} the test infrastructure is put back (run_instance.log lists what)
"),
            render_eval_script(&self.test_files),
            format!("{STAGE_SEPARATOR} the canary tests are written (and the tripwires, in a tripwire run)
"),
            render_eval_script(&self.tests),
        ]
        .concat()
    }
}

/// Starts the comment lines of [`Stages::record`] that say where the grader works.
pub const STAGE_SEPARATOR: &str = "# ---- aci:";

/// A script of the grader's own commands in `repo_dir`: the preamble, then `commands` with their
/// output (and trace) through the inert filter.
pub fn inert_script(repo_dir: &str, commands: &str) -> String {
    render_eval_script(&[
        EvalStep::Preamble {
            repo_dir: repo_dir.to_owned(),
        },
        EvalStep::Inert(commands.to_owned()),
    ])
}

/// Builds `eval.sh` from [`eval_steps`].
///
/// Everything before the start marker that the model's patch decides (the header, the
/// reinstall's output) goes through the inert filter, so a patch can plant neither markers nor
/// result lines ahead of the real ones.
pub fn eval_script(spec: &EvalScriptSpec<'_>) -> String {
    render_eval_script(&eval_steps(spec))
}

/// The text of `eval.sh` for `steps`.
pub fn render_eval_script(steps: &[EvalStep]) -> String {
    let mut lines = Vec::new();
    for step in steps {
        render_step(step, &mut lines);
    }
    let mut script = lines.join("\n");
    script.push('\n');
    script
}

fn render_step(step: &EvalStep, lines: &mut Vec<String>) {
    match step {
        EvalStep::Preamble { repo_dir } => {
            let dir = shell_quote(repo_dir);
            lines.extend([
                "#!/bin/bash".to_owned(),
                "exec 2>&1".to_owned(),
                "set -uxo pipefail".to_owned(),
                format!("cd {dir} || {{ echo '{RESET_FAILED}'; exit 1; }}"),
                format!("git config --global --add safe.directory {dir}"),
                INERT_FILTER.to_owned(),
            ]);
        }
        EvalStep::Activate(snippet) | EvalStep::Command(snippet) => lines.push(snippet.clone()),
        EvalStep::GitHeader { base_ref } => lines.extend([
            format!("git status 2>&1 | head -c {HEADER_OUTPUT_LIMIT} | aci_inert"),
            "git show -s 2>&1 | aci_inert".to_owned(),
            format!(
                "git -c core.fileMode=false diff {} 2>&1 | head -c {HEADER_OUTPUT_LIMIT} | aci_inert",
                shell_quote(base_ref)
            ),
        ]),
        EvalStep::Reinstall(commands) | EvalStep::Inert(commands) => {
            lines.extend(["{".to_owned(), commands.trim_end().to_owned()]);
            lines.push("} 2>&1 | aci_inert".to_owned());
        }
        EvalStep::ResetTestFiles {
            base_ref,
            files,
            check,
        } => lines.extend(reset_lines(base_ref, files, *check)),
        EvalStep::ApplyTestPatch(patch) => {
            let delimiter = heredoc_delimiter(patch);
            lines.push(format!(
                "git apply -v - <<'{delimiter}' || {{ echo '{TESTS_ERROR}: test_patch did not apply'; exit 1; }}"
            ));
            lines.push(patch.strip_suffix('\n').unwrap_or(patch).to_owned());
            lines.push(delimiter);
        }
        EvalStep::StartMarker => lines.push(format!(": '{START_MARKER}'")),
        EvalStep::RunTests { command_line } => lines.extend([
            "(".to_owned(),
            command_line.clone(),
            ")".to_owned(),
            "ACI_TEST_EXIT_CODE=$?".to_owned(),
        ]),
        EvalStep::EndMarker => lines.extend([
            format!(": '{END_MARKER}'"),
            format!("echo \"{EXIT_CODE_PREFIX}${{ACI_TEST_EXIT_CODE}}\""),
        ]),
    }
}

/// `git checkout <base> -- <files>` and `rm -f -- <created>`; before the tests a failed checkout
/// prints [`RESET_FAILED`] and stops.
fn reset_lines(base_ref: &str, files: &TestFiles, check: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if !files.reset.is_empty() {
        let paths = quote_all(&files.reset);
        let mut line = format!("git checkout {} -- {paths}", shell_quote(base_ref));
        if check {
            line.push_str(" || { echo '");
            line.push_str(RESET_FAILED);
            line.push_str("'; exit 1; }");
        }
        lines.push(line);
    }
    if !files.created.is_empty() {
        lines.push(format!("rm -f -- {}", quote_all(&files.created)));
    }
    lines
}

/// The apply chain of the SWE-bench harness for the patch at `patch_path`, run in `repo_dir`:
/// `git apply --verbose`, then `git apply --verbose --reject`, then
/// `patch --batch --fuzz=5 -p1 -i`. After a failed try the tree is reset
/// (`git checkout -- .` and `git clean -fd`, which also removes untracked files that are not
/// ignored). Success prints `>>>>> Applied Patch (<method>)` and exits 0; failure prints
/// `>>>>> Patch Apply Failed` and exits 1. An empty patch is never applied: the caller counts it
/// as an empty patch, as SWE-bench does.
pub fn apply_patch_script(repo_dir: &str, patch_path: &str) -> String {
    let dir = shell_quote(repo_dir);
    let patch = shell_quote(patch_path);
    let mut lines = vec![
        "#!/bin/bash".to_owned(),
        "exec 2>&1".to_owned(),
        "set -uo pipefail".to_owned(),
        format!("cd {dir} || {{ echo '{APPLY_PATCH_FAIL}'; exit 1; }}"),
        format!("git config --global --add safe.directory {dir}"),
    ];
    let methods = [
        "git apply --verbose",
        "git apply --verbose --reject",
        "patch --batch --fuzz=5 -p1 -i",
    ];
    for method in methods {
        lines.push(format!(
            "if {method} {patch}; then echo '{APPLY_PATCH_PASS} ({method})'; exit 0; fi"
        ));
        lines.push("git checkout -- . && git clean -fd".to_owned());
    }
    lines.push(format!("echo '{APPLY_PATCH_FAIL}'"));
    lines.push("exit 1".to_owned());
    let mut script = lines.join("\n");
    script.push('\n');
    script
}

/// Whether the output of [`apply_patch_script`] says the patch applied.
pub fn patch_applied(apply_output: &str) -> bool {
    apply_output.contains(APPLY_PATCH_PASS) && !apply_output.contains(APPLY_PATCH_FAIL)
}

/// Which files `test_patch` resets and which it creates (see [`TestFiles`]). v4 resets only the
/// files whose source is not `/dev/null` and never removes created ones; removing them is what
/// makes a rerun, or a model that created the same test file, apply cleanly.
pub fn test_files(test_patch: &str) -> TestFiles {
    let mut files = TestFiles::default();
    let changes = patch_files(test_patch);
    for change in &changes {
        if let Some(old) = &change.old_path {
            push_unique(&mut files.reset, old);
        }
    }
    for change in &changes {
        if let Some(new) = &change.new_path
            && change.old_path.as_ref() != Some(new)
            && !files.reset.contains(new)
        {
            push_unique(&mut files.created, new);
        }
    }
    files
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|existing| existing == item) {
        list.push(item.to_owned());
    }
}

/// A heredoc delimiter that does not occur as a line of `body`.
fn heredoc_delimiter(body: &str) -> String {
    let mut delimiter = HEREDOC_DELIMITER.to_owned();
    let mut suffix = 0;
    while body.lines().any(|line| line == delimiter) {
        suffix += 1;
        delimiter = format!("{HEREDOC_DELIMITER}_{suffix}");
    }
    delimiter
}

/// Quotes `text` for bash: left bare when it is only safe characters, otherwise single-quoted.
pub fn shell_quote(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:@%+=,".contains(c));
    if safe {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

pub(crate) fn quote_all(paths: &[String]) -> String {
    paths
        .iter()
        .map(|path| shell_quote(path))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
