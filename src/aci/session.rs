//! [`Aci`]: the Agent-Computer Interface on a [`Sandbox`]. It splits an action into
//! sub-actions, runs ACI commands through the pure viewer, editor, search and lint modules, and
//! everything else in the persistent shell. Each command costs at most one read of the file
//! from the sandbox (never a stale cached copy: a shell command may have changed it).

use std::time::Duration;

use crate::config::AciConfig;
use crate::lint::{self, GateOptions, Language};
use crate::sandbox::{ExecOutput, Sandbox, SandboxError, shell_quote};

use super::action::{self, SubAction};
use super::edit::{self, EditRange};
use super::registry::Registry;
use super::search;
use super::window::{self, PathKind, WindowState};

/// What one action did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutput {
    /// The observation shown to the model (empty when every sub-action printed nothing).
    pub observation: String,
    /// The patch, when the action ran `submit`.
    pub submission: Option<Vec<u8>>,
    /// A shell command ran past `env.command_timeout`.
    pub timed_out: bool,
    /// A sub-action failed (non-zero exit, usage error, rejected edit): the model is told, the
    /// run goes on.
    pub failed: bool,
    /// The lint gate rejected an edit (and the file was left as it was).
    pub lint_rejected: bool,
}

/// The trajectory's per-step state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The open file's absolute path, or `n/a`.
    pub open_file: String,
    /// The shell's working directory.
    pub working_dir: String,
}

impl State {
    /// The state as SWE-agent writes it: `{"open_file": …, "working_dir": …}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "open_file": self.open_file, "working_dir": self.working_dir })
    }
}

/// The ACI over one sandbox.
pub struct Aci<S: Sandbox> {
    sandbox: S,
    registry: Registry,
    window: WindowState,
    config: AciConfig,
    command_timeout: Duration,
    memory_mb: u64,
    test_patch: Option<String>,
    /// Keeps the last parse, so gating the next edit of the same file is incremental.
    linter: lint::Linter,
}

/// v0's timeout text, with the configured seconds.
pub fn timeout_message(seconds: f64, had_output: bool) -> String {
    if had_output {
        format!(
            "\nEXECUTION TIMED OUT BECAUSE THE COMMAND WAS RUNNING FOR MORE THAN {seconds:.1} SECONDS."
        )
    } else {
        format!(
            "\nEXECUTION TIMED OUT BECAUSE NO OUTPUT WAS PRODUCED FOR MORE THAN {seconds:.1} SECONDS.\n\
             PLEASE REFINE YOUR RUNNING COMMAND SO IT WILL PRODUCE OUTPUT IN THE SPECIFIED TIME FRAME."
        )
    }
}

/// The observation of a command that printed nothing.
pub const NO_OUTPUT: &str = "Your command ran successfully and did not produce any output.";

impl<S: Sandbox> Aci<S> {
    /// An ACI with `registry`'s commands over `sandbox`.
    pub fn new(
        sandbox: S,
        registry: Registry,
        config: AciConfig,
        command_timeout: Duration,
        memory_mb: u64,
    ) -> Self {
        let window = WindowState::new(config.window, config.overlap);
        Self {
            sandbox,
            registry,
            window,
            config,
            command_timeout,
            memory_mb,
            test_patch: None,
            linter: lint::Linter::new(),
        }
    }

    /// The enabled commands.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The sandbox underneath.
    pub fn sandbox_mut(&mut self) -> &mut S {
        &mut self.sandbox
    }

    /// Gives the sandbox back (to shut it down).
    pub fn into_sandbox(self) -> S {
        self.sandbox
    }

    /// The refusal text when `action` is on the blocklist.
    pub fn blocked(&self, action: &str) -> Option<String> {
        action::blocked(action, &self.config.blocklist)
    }

    /// Records that the evaluation's test patch was applied, so `submit` reverses it first.
    pub fn set_test_patch(&mut self, patch: Option<String>) {
        self.test_patch = patch;
    }

    /// Runs one action: its sub-actions in order, outputs joined; stops after `submit`.
    pub async fn execute(&mut self, action: &str) -> Result<StepOutput, SandboxError> {
        let mut step = StepOutput::default();
        let mut outputs = Vec::new();
        for sub_action in action::split_action(action, &self.registry) {
            let output = match sub_action {
                SubAction::Shell(command) => {
                    self.window.reset_scrolls();
                    self.shell(&command, &mut step).await?
                }
                SubAction::Command { name, args, body } => {
                    if name != "scroll_up" && name != "scroll_down" {
                        self.window.reset_scrolls();
                    }
                    if name == action::SUBMIT_COMMAND
                        && self.registry.get(&name).is_some_and(|c| c.script.is_none())
                    {
                        let patch = self.submit().await?;
                        outputs.push(String::from_utf8_lossy(&patch).into_owned());
                        step.submission = Some(patch);
                        break;
                    }
                    self.command(&name, &args, body.as_deref(), &mut step)
                        .await?
                }
            };
            outputs.push(output);
        }
        step.observation = action::join_outputs(&outputs);
        Ok(step)
    }

    async fn shell(
        &mut self,
        command: &str,
        step: &mut StepOutput,
    ) -> Result<String, SandboxError> {
        let out = self
            .sandbox
            .run_merged(command, self.command_timeout)
            .await?;
        Ok(self.describe(out, step))
    }

    /// The observation text of a shell command, with v0's timeout text and notes for a killed
    /// or restarted session.
    fn describe(&self, out: ExecOutput, step: &mut StepOutput) -> String {
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        step.failed |= out.exit_code != Some(0);
        if out.timed_out {
            step.timed_out = true;
            text.push_str(&timeout_message(
                self.command_timeout.as_secs_f64(),
                !out.stdout.is_empty(),
            ));
        }
        if out.oom_killed {
            text.push_str(&format!(
                "\nThe command was killed because it ran out of memory (the limit is {} MiB).",
                self.memory_mb
            ));
        }
        if out.session_restarted && !out.timed_out {
            text.push_str(
                "\nThe shell session ended and a new one was started: the working directory and \
                 exported variables were reset.",
            );
        }
        text
    }

    async fn command(
        &mut self,
        name: &str,
        args: &str,
        body: Option<&str>,
        step: &mut StepOutput,
    ) -> Result<String, SandboxError> {
        let result = match name {
            "open" => self.open(args).await,
            "goto" => self.view(|window, bytes| window.goto(args, bytes)).await,
            "scroll_down" => self.view(WindowState::scroll_down).await,
            "scroll_up" => self.view(WindowState::scroll_up).await,
            "create" => self.create(args).await,
            "edit" => self.edit(args, body.unwrap_or_default(), step).await,
            "search_file" => match search::parse_search_file(args, self.window.file.as_deref()) {
                Ok(request) => self.search(&request).await,
                Err(usage) => Ok(Err(usage)),
            },
            "search_dir" => match search::parse_search_dir(args) {
                Ok(request) => self.search(&request).await,
                Err(usage) => Ok(Err(usage)),
            },
            "find_file" => match search::parse_find_file(args) {
                Ok(request) => self.search(&request).await,
                Err(usage) => Ok(Err(usage)),
            },
            _ => return self.custom(name, args, body, step).await,
        };
        match result? {
            Ok(text) => Ok(text),
            Err(text) => {
                step.failed = true;
                Ok(text)
            }
        }
    }

    async fn custom(
        &mut self,
        name: &str,
        args: &str,
        body: Option<&str>,
        step: &mut StepOutput,
    ) -> Result<String, SandboxError> {
        let words = super::args::split_words(args);
        let Some(command) = self
            .registry
            .get(name)
            .and_then(|spec| spec.script_command(&words, body))
        else {
            step.failed = true;
            return Ok(format!("{name}: no handler for this command"));
        };
        self.shell(&command, step).await
    }

    /// Reads what `path` is and, for a file, its bytes, in one exchange.
    async fn probe_and_read(&mut self, path: &str) -> Result<(PathKind, Vec<u8>), SandboxError> {
        let out = self
            .sandbox
            .run(&window::probe_command(path), self.command_timeout)
            .await?;
        let kind = window::parse_probe(&out.stdout);
        let bytes = match &kind {
            PathKind::File { abs_path } => self.sandbox.read_file(abs_path).await?,
            _ => Vec::new(),
        };
        Ok((kind, bytes))
    }

    async fn open(&mut self, args: &str) -> Result<Result<String, String>, SandboxError> {
        let request = match window::parse_open_args(args) {
            Ok(request) => request,
            Err(usage) => return Ok(Err(usage)),
        };
        let (kind, bytes) = self.probe_and_read(&request.path).await?;
        let text = self.window.open(&request, &kind, &bytes);
        Ok(if matches!(kind, PathKind::File { .. }) {
            Ok(text)
        } else {
            Err(text)
        })
    }

    /// goto / scroll: reads the open file afresh, then lets the viewer render.
    async fn view(
        &mut self,
        render: impl FnOnce(&mut WindowState, &[u8]) -> String,
    ) -> Result<Result<String, String>, SandboxError> {
        let Some(path) = self.window.file.clone() else {
            return Ok(Err(render(&mut self.window, b"")));
        };
        match self.sandbox.read_file(&path).await {
            Ok(bytes) => Ok(Ok(render(&mut self.window, &bytes))),
            Err(SandboxError::File { .. }) => Ok(Err(format!("File {path} not found"))),
            Err(error) => Err(error),
        }
    }

    async fn create(&mut self, args: &str) -> Result<Result<String, String>, SandboxError> {
        let filename = match window::parse_create_args(args) {
            Ok(filename) => filename,
            Err(usage) => return Ok(Err(usage)),
        };
        let out = self
            .sandbox
            .run(&window::create_command(&filename), self.command_timeout)
            .await?;
        let (existed, kind) = window::parse_create_output(&out.stdout);
        let bytes = match &kind {
            PathKind::File { abs_path } => self.sandbox.read_file(abs_path).await?,
            _ => Vec::new(),
        };
        let text = self.window.create(&filename, existed, &kind, &bytes);
        Ok(if existed { Err(text) } else { Ok(text) })
    }

    async fn search(
        &mut self,
        request: &search::SearchRequest,
    ) -> Result<Result<String, String>, SandboxError> {
        let out = self
            .sandbox
            .run(&request.shell_command(), self.command_timeout)
            .await?;
        if out.timed_out {
            return Ok(Err(timeout_message(
                self.command_timeout.as_secs_f64(),
                false,
            )));
        }
        Ok(Ok(
            request.format_output(&out.stdout, self.config.search.max_files)
        ))
    }

    async fn edit(
        &mut self,
        args: &str,
        body: &str,
        step: &mut StepOutput,
    ) -> Result<Result<String, String>, SandboxError> {
        let range = match edit::plan_edit(&self.window, args) {
            Ok(range) => range,
            Err(usage) => return Ok(Err(usage)),
        };
        let Some(path) = self.window.file.clone() else {
            return Ok(Err(edit::EDIT_NO_FILE_OPEN.to_owned()));
        };
        let before = match self.sandbox.read_file(&path).await {
            Ok(bytes) => bytes,
            Err(SandboxError::File { .. }) => return Ok(Err(format!("File {path} not found"))),
            Err(error) => return Err(error),
        };
        let after = edit::apply_edit(&before, range.start, range.end, body);
        let problems = self.lint(&path, &before, &after, range, body).await?;
        if !problems.is_empty() {
            step.lint_rejected = true;
            // The file was never written, so it is exactly as it was; so is the window.
            return Ok(Err(edit::lint_failure(
                &self.window,
                range,
                body,
                &before,
                &after,
                &problems,
            )));
        }
        self.sandbox.write_file(&path, &after).await?;
        if let Some(problems) = self
            .external_lint(&path, &before, &after, range, body)
            .await?
        {
            self.sandbox.write_file(&path, &before).await?;
            step.lint_rejected = true;
            return Ok(Err(edit::lint_failure(
                &self.window,
                range,
                body,
                &before,
                &after,
                &problems,
            )));
        }
        Ok(Ok(edit::edit_success(&mut self.window, range, &after)))
    }

    /// The built-in gate's new errors, as `- <problem>` lines want them (empty: accepted).
    async fn lint(
        &mut self,
        path: &str,
        before: &[u8],
        after: &[u8],
        range: EditRange,
        body: &str,
    ) -> Result<Vec<String>, SandboxError> {
        let lint = &self.config.lint;
        let gated = lint.enabled && lint.builtin;
        let Some(language) = gated
            .then(|| Language::from_path(path, &lint.languages))
            .flatten()
        else {
            return Ok(Vec::new());
        };
        let edited = lint_range(range, body);
        let options = GateOptions {
            filter_preexisting: lint.filter_preexisting,
            package_init: path.ends_with("/__init__.py") || path == "__init__.py",
        };
        let verdict = self.linter.gate(language, before, after, &edited, &options);
        Ok(verdict
            .new_errors
            .iter()
            .map(lint::LintError::problem)
            .collect())
    }

    /// The external linter's new errors (`aci.lint.external`), run in the sandbox on the file
    /// before and after the edit. `None`: accepted (or no external linter).
    async fn external_lint(
        &mut self,
        path: &str,
        before: &[u8],
        after: &[u8],
        range: EditRange,
        body: &str,
    ) -> Result<Option<Vec<String>>, SandboxError> {
        let Some(command) = self
            .config
            .lint
            .external
            .clone()
            .filter(|_| self.config.lint.enabled)
        else {
            return Ok(None);
        };
        if !self.config.lint.languages.is_empty()
            && Language::from_path(path, &self.config.lint.languages).is_none()
        {
            return Ok(None);
        }
        let command = command.replace("{file}", &shell_quote(path));
        let after_out = self.sandbox.run(&command, self.command_timeout).await?;
        let after_errors = lint::parse_flake8(&String::from_utf8_lossy(&after_out.stdout));
        if after_errors.is_empty() {
            return Ok(None);
        }
        let before_errors = if self.config.lint.filter_preexisting {
            self.sandbox.write_file(path, before).await?;
            let out = self.sandbox.run(&command, self.command_timeout).await?;
            self.sandbox.write_file(path, after).await?;
            lint::parse_flake8(&String::from_utf8_lossy(&out.stdout))
        } else {
            Vec::new()
        };
        let new = lint::filter_new(&before_errors, after_errors, &lint_range(range, body));
        Ok((!new.is_empty()).then(|| new.iter().map(lint::LintError::problem).collect()))
    }

    /// `submit`: stages everything and diffs against the baseline, after reversing the test
    /// patch if one was applied. Binary files are included (`--binary`).
    pub async fn submit(&mut self) -> Result<Vec<u8>, SandboxError> {
        let repo = shell_quote(self.sandbox.repo_dir());
        if let Some(patch) = self.test_patch.take() {
            let delimiter = "ACI_TEST_PATCH_EOF";
            let reverse =
                format!("cd {repo} && git apply -R <<'{delimiter}'\n{patch}\n{delimiter}");
            self.sandbox.run(&reverse, self.command_timeout).await?;
        }
        let baseline = self.sandbox.baseline().to_owned();
        // The patch goes to a file outside the repository and is read back whole: the shell's
        // output limit must not cut it, and nothing of the harness's lands in the diff.
        // In a subshell, so the agent's working directory stays where it was; into a fresh
        // temporary file, so sandboxes sharing a /tmp (the local runtime) never read each
        // other's patch.
        let script = format!(
            "( cd {repo} && git add -A && f=$(mktemp /tmp/aci_submission.XXXXXX) && \
             git diff --cached --binary --no-color --no-ext-diff {baseline} > \"$f\" && printf %s \"$f\" )"
        );
        let out = self.sandbox.run(&script, Duration::from_secs(600)).await?;
        let file = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.exit_code != Some(0) || file.is_empty() {
            return Err(SandboxError::Session(format!(
                "submit could not make the patch: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let patch = self.sandbox.read_file(&file).await;
        let _ = self
            .sandbox
            .run(
                &format!("rm -f {}", shell_quote(&file)),
                self.command_timeout,
            )
            .await;
        patch
    }

    /// The open file and the shell's working directory.
    pub async fn state(&mut self) -> Result<State, SandboxError> {
        let out = self.sandbox.run("pwd", self.command_timeout).await?;
        Ok(State {
            open_file: self.window.open_file_or_na().to_owned(),
            working_dir: String::from_utf8_lossy(&out.stdout)
                .trim_end_matches('\n')
                .to_owned(),
        })
    }
}

/// The lint module's view of an edit: lines `start..=end` replaced by the body's lines.
fn lint_range(range: EditRange, body: &str) -> lint::EditRange {
    lint::EditRange {
        start: range.start,
        end: range.end,
        replacement_lines: edit::replacement_lines(body).len(),
    }
}
