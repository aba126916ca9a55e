//! [`Aci`]: the Agent-Computer Interface on a [`Sandbox`]. It splits an action into
//! sub-actions, runs ACI commands through the pure viewer, editor, search and lint modules, and
//! everything else in the persistent shell; the outputs are read back as v0 reads its shell
//! ([`super::observation`]). `open`, `goto` and the scrolls cost one exchange with the sandbox
//! each, and never use a stale copy of the file: a shell command may have changed it.

use std::time::Duration;

use crate::config::AciConfig;
use crate::lint::{self, GateOptions, Language};
use crate::sandbox::{ExecOutput, Sandbox, SandboxError, shell_quote};

use super::action::{self, SubAction};
use super::bash_only;
use super::edit::{self, EditRange};
use super::observation::{self, Transcript};
use super::registry::Registry;
use super::search;
use super::str_replace_editor::{self as editor, FileHistory, PathKind as EditorPath};
use super::submission;
use super::window::{self, PathKind, WindowState};

/// The built-in commands, each with its handler in [`Aci`]: the dispatch is an exhaustive
/// `match` on this enum, so a command cannot be listed without a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `open "<path>" [<line_number>]`
    Open,
    /// `goto <line_number>`
    Goto,
    /// `scroll_up`
    ScrollUp,
    /// `scroll_down`
    ScrollDown,
    /// `create <filename>`
    Create,
    /// `edit <start_line>:<end_line>` … `end_of_edit`
    Edit,
    /// `search_file <search_term> [<file>]`
    SearchFile,
    /// `search_dir <search_term> [<dir>]`
    SearchDir,
    /// `find_file <file_name> [<dir>]`
    FindFile,
    /// `submit`
    Submit,
    /// `str_replace_editor <command> <path> [--file_text …] [--view_range …] …` (SWE-agent 1.x)
    StrReplaceEditor,
}

impl Builtin {
    /// Every built-in command, in the order of `aci-commands/` in the docs.
    pub const ALL: [Builtin; 11] = [
        Builtin::Open,
        Builtin::Goto,
        Builtin::ScrollUp,
        Builtin::ScrollDown,
        Builtin::Create,
        Builtin::Edit,
        Builtin::SearchFile,
        Builtin::SearchDir,
        Builtin::FindFile,
        Builtin::Submit,
        Builtin::StrReplaceEditor,
    ];

    /// The name the model types (and the stem of its `aci-commands/<name>.yaml`).
    pub const fn name(self) -> &'static str {
        match self {
            Builtin::Open => "open",
            Builtin::Goto => "goto",
            Builtin::ScrollUp => "scroll_up",
            Builtin::ScrollDown => "scroll_down",
            Builtin::Create => "create",
            Builtin::Edit => "edit",
            Builtin::SearchFile => "search_file",
            Builtin::SearchDir => "search_dir",
            Builtin::FindFile => "find_file",
            Builtin::Submit => "submit",
            Builtin::StrReplaceEditor => editor::NAME,
        }
    }

    /// The built-in command called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|builtin| builtin.name() == name)
    }
}

/// The names of the commands [`Aci`] has a handler for, in [`Builtin::ALL`]'s order. A test
/// checks that they are exactly the YAML files in `aci-commands/`.
pub const HANDLED_COMMANDS: [&str; Builtin::ALL.len()] = handled_names();

const fn handled_names() -> [&'static str; Builtin::ALL.len()] {
    let mut names = [""; Builtin::ALL.len()];
    let mut index = 0;
    while index < names.len() {
        names[index] = Builtin::ALL[index].name();
        index += 1;
    }
    names
}

/// What one sub-action printed: an ACI command's text, or a shell command's output and notes.
enum Piece {
    Command(String),
    Shell { output: String, notes: String },
}

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
    /// The last shell command's exit code; -1 when it did not finish (the `observation`
    /// template's `output.returncode`).
    pub returncode: i32,
    /// The last shell command's output as printed, without aci's notes (`output.output`).
    pub raw_output: String,
    /// What went wrong running the last shell command, or empty (`output.exception_info`).
    pub exception_info: String,
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
    /// Keeps the last parse, so gating the next edit of the same file is incremental.
    linter: lint::Linter,
    /// `str_replace_editor`'s texts for `undo_edit`.
    editor_history: FileHistory,
    /// How many of `aci.submit_review_messages` `submit` has shown.
    submit_stage: usize,
}

/// v0's timeout text, with the configured seconds written as Python writes a float (v0 reads
/// the timeout with `float(…)` and formats it with an f-string: `25.0`, `2.5`, `0.1`).
pub fn timeout_message(seconds: f64, had_output: bool) -> String {
    // Rust's `Debug` for f64 is the shortest text that reads back to the same value, with a
    // `.0` on whole numbers: Python's `repr` below 1e16.
    if had_output {
        format!(
            "\nEXECUTION TIMED OUT BECAUSE THE COMMAND WAS RUNNING FOR MORE THAN {seconds:?} SECONDS."
        )
    } else {
        format!(
            "\nEXECUTION TIMED OUT BECAUSE NO OUTPUT WAS PRODUCED FOR MORE THAN {seconds:?} SECONDS.\n\
             PLEASE REFINE YOUR RUNNING COMMAND SO IT WILL PRODUCE OUTPUT IN THE SPECIFIED TIME FRAME."
        )
    }
}

/// Where `submit` writes the patch, relative to the repository: inside its `.git`, so the
/// file is never part of a diff and two sandboxes on one host (`--runtime local`) never share
/// it.
const SUBMISSION_FILE: &str = ".git/aci-submission.patch";
/// The attribute lines `submit` adds to `.git/info/attributes` for one diff.
const ATTRIBUTES_FILE: &str = ".git/aci-binary-attributes";
/// Where `submit` keeps the repository's own `.git/info/attributes` meanwhile.
const SAVED_ATTRIBUTES: &str = ".git/aci-attributes.saved";

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
        let mut window = WindowState::new(config.window, config.overlap);
        window.scroll_warning = config.scroll_warning;
        window.max_line_length = config.max_line_length;
        window.open_shell_noise = config.open_shell_noise;
        Self {
            sandbox,
            registry,
            window,
            config,
            command_timeout,
            memory_mb,
            linter: lint::Linter::new(),
            editor_history: FileHistory::default(),
            submit_stage: 0,
        }
    }

    /// The enabled commands.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The values of the placeholders in command docstrings: `WINDOW` and `OVERLAP`.
    pub fn placeholders(&self) -> Vec<(String, String)> {
        vec![
            ("WINDOW".to_owned(), self.config.window.to_string()),
            ("OVERLAP".to_owned(), self.config.overlap.to_string()),
        ]
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

    /// Runs one action: its sub-actions in order, outputs joined as one shell would have
    /// printed them; stops after `submit`.
    pub async fn execute(&mut self, action: &str) -> Result<StepOutput, SandboxError> {
        let mut step = StepOutput::default();
        let mut transcript = Transcript::default();
        let sub_actions = if self.config.subshell {
            vec![SubAction::Shell(action.to_owned())]
        } else {
            action::split_action(action, &self.registry)
        };
        for sub_action in sub_actions {
            let piece = match sub_action {
                SubAction::Shell(command) => self.shell(&command, &mut step).await?,
                SubAction::Command { name, args, body } => match self.builtin(&name) {
                    Some(builtin) => {
                        self.run_builtin(builtin, &args, body.as_deref(), &mut step)
                            .await?
                    }
                    None => {
                        self.custom(&name, &args, body.as_deref(), &mut step)
                            .await?
                    }
                },
            };
            match piece {
                Piece::Command(text) => transcript.push_command(&text),
                Piece::Shell { output, notes } => transcript.push_shell(&output, &notes),
            }
            if step.submission.is_some() {
                break;
            }
        }
        self.window.end_action(action);
        step.observation = if self.config.raw_output {
            transcript.raw().to_owned()
        } else {
            transcript.finish()
        };
        Ok(step)
    }

    /// The built-in handler for `name`, unless the registry defines it by a `script:`.
    fn builtin(&self, name: &str) -> Option<Builtin> {
        self.registry
            .get(name)
            .filter(|spec| spec.script.is_none())
            .and_then(|_| Builtin::from_name(name))
    }

    async fn shell(&mut self, command: &str, step: &mut StepOutput) -> Result<Piece, SandboxError> {
        let wrapped;
        let run = if self.config.subshell {
            wrapped = bash_only::subshell_command(self.sandbox.repo_dir(), command);
            wrapped.as_str()
        } else {
            command
        };
        let out = self.sandbox.run_merged(run, self.command_timeout).await?;
        self.record_raw(command, &out, step);
        let mut piece = self.describe(&out, step);
        if let Piece::Shell { output, notes } = &mut piece
            && out.exit_code == Some(127)
            && let Some(name) = action::misplaced_command(output, &self.registry)
        {
            notes.push_str(&action::misplaced_command_note(name));
        }
        Ok(piece)
    }

    /// What the `observation` template and `aci.submit_sentinel` read of a shell command: its
    /// output as printed (invalid UTF-8 replaced), exit code and timeout; the submission when
    /// the output has the sentinel on its first or last line (`aci.submit_sentinel_line`). A
    /// submission whose output was cut by the output limit is refused with a note, as it would
    /// not be the patch the model printed.
    fn record_raw(&self, command: &str, out: &ExecOutput, step: &mut StepOutput) {
        step.raw_output = String::from_utf8_lossy(&out.stdout).into_owned();
        // A command killed at its timeout did not finish: mini reports -1, and the shell's
        // notice of the kill is the harness's doing, not the command's output.
        step.returncode = if out.timed_out {
            step.raw_output = observation::strip_kill_notices(&step.raw_output);
            -1
        } else {
            out.exit_code.unwrap_or(-1)
        };
        step.exception_info = if out.timed_out {
            bash_only::timeout_exception(
                &self.config.timeout_exception,
                command,
                self.command_timeout.as_secs_f64(),
            )
        } else {
            String::new()
        };
        let Some(sentinel) = self.config.submit_sentinel.as_deref() else {
            return;
        };
        let Some(patch) = bash_only::sentinel_submission(
            &step.raw_output,
            out.exit_code,
            sentinel,
            self.config.submit_sentinel_line,
        ) else {
            return;
        };
        if out.elided_bytes > 0 {
            step.exception_info = format!(
                "The submission was not accepted: the output was over the output limit \
                 ({} bytes cut), so it is not the whole patch. Write the patch to a file and \
                 submit a shorter one.",
                out.elided_bytes
            );
            step.failed = true;
            return;
        }
        step.submission = Some(patch.into_bytes());
    }

    /// A shell command's output and notes: v0's timeout text, and what happened when the
    /// command ran out of memory or the session had to be restarted.
    fn describe(&self, out: &ExecOutput, step: &mut StepOutput) -> Piece {
        step.failed |= out.exit_code != Some(0);
        let mut output = observation::decode(&out.stdout);
        let mut notes = String::new();
        if out.timed_out {
            step.timed_out = true;
            output = observation::strip_kill_notices(&output);
            notes.push_str(&timeout_message(
                self.command_timeout.as_secs_f64(),
                !output.is_empty(),
            ));
        }
        if out.oom_killed {
            notes.push_str(&format!(
                "\nThe command was killed because it ran out of memory (the limit is {} MiB).",
                self.memory_mb
            ));
        }
        if out.session_restarted && !out.timed_out {
            notes.push_str(
                "\nThe shell session ended and a new one was started: the working directory and \
                 exported variables were reset.",
            );
        }
        Piece::Shell { output, notes }
    }

    async fn run_builtin(
        &mut self,
        builtin: Builtin,
        args: &str,
        body: Option<&str>,
        step: &mut StepOutput,
    ) -> Result<Piece, SandboxError> {
        let result = match builtin {
            Builtin::Open => self.open(args).await?,
            Builtin::Goto => self.view(|window, bytes| window.goto(args, bytes)).await?,
            Builtin::ScrollDown => self.view(WindowState::scroll_down).await?,
            Builtin::ScrollUp => self.view(WindowState::scroll_up).await?,
            Builtin::Create => self.create(args).await?,
            Builtin::Edit => self.edit(args, body.unwrap_or_default(), step).await?,
            Builtin::SearchFile => {
                match search::parse_search_file(args, self.window.file.as_deref()) {
                    Ok(request) => self.search(&request).await?,
                    Err(usage) => Err(usage),
                }
            }
            Builtin::SearchDir => match search::parse_search_dir(args) {
                Ok(request) => self.search(&request).await?,
                Err(usage) => Err(usage),
            },
            Builtin::FindFile => match search::parse_find_file(args) {
                Ok(request) => self.search(&request).await?,
                Err(usage) => Err(usage),
            },
            Builtin::StrReplaceEditor => {
                // 1.x runs the tool as a program in the shell: its output is read as any
                // command's output is (`aci.raw_output`).
                let output = self
                    .str_replace_editor(args, step)
                    .await?
                    .unwrap_or_else(|text| {
                        step.failed = true;
                        text
                    });
                return Ok(Piece::Shell {
                    output,
                    notes: String::new(),
                });
            }
            Builtin::Submit => {
                let forced = matches!(args.trim(), "-f" | "--force");
                if let Some(review) = self
                    .config
                    .submit_review_messages
                    .get(self.submit_stage)
                    .filter(|_| !forced)
                    .cloned()
                {
                    let patch = self.submit().await?;
                    self.submit_stage += 1;
                    let diff = String::from_utf8_lossy(&patch);
                    return Ok(Piece::Shell {
                        output: format!("{}\n", review.replace("{{diff}}", &diff)),
                        notes: String::new(),
                    });
                }
                let patch = self.submit().await?;
                let output = observation::decode(&patch);
                step.submission = Some(patch);
                return Ok(Piece::Shell {
                    output,
                    notes: String::new(),
                });
            }
        };
        Ok(Piece::Command(result.unwrap_or_else(|text| {
            step.failed = true;
            text
        })))
    }

    /// A command defined by a `script:` in its YAML: run in the session with its arguments.
    async fn custom(
        &mut self,
        name: &str,
        args: &str,
        body: Option<&str>,
        step: &mut StepOutput,
    ) -> Result<Piece, SandboxError> {
        let words = super::args::split_words(args);
        let Some(command) = self
            .registry
            .get(name)
            .and_then(|spec| spec.script_command(&words, body))
        else {
            step.failed = true;
            return Ok(Piece::Command(format!(
                "{name}: no handler for this command"
            )));
        };
        self.shell(&command, step).await
    }

    /// The file bytes a probe printed ([`window::parse_probe`]), or, when the sandbox capped
    /// the probe's output (a very large file), the file read again without the cap.
    async fn probed_bytes(
        &mut self,
        out: &ExecOutput,
        kind: &PathKind,
        content: &[u8],
    ) -> Result<Vec<u8>, SandboxError> {
        match kind {
            PathKind::File { abs_path } if out.elided_bytes > 0 || out.timed_out => {
                self.sandbox.read_file(abs_path).await
            }
            _ => Ok(content.to_vec()),
        }
    }

    async fn open(&mut self, args: &str) -> Result<Result<String, String>, SandboxError> {
        let request = match window::parse_open_args(args) {
            Ok(request) => request,
            Err(usage) => return Ok(Err(usage)),
        };
        let out = self
            .sandbox
            .run(&window::probe_command(&request.path), self.command_timeout)
            .await?;
        let (kind, content) = window::parse_probe(&out.stdout);
        let bytes = self.probed_bytes(&out, &kind, content).await?;
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
        let (existed, kind, content) = window::parse_create_output(&out.stdout);
        let bytes = self.probed_bytes(&out, &kind, content).await?;
        let text = self.window.create(&filename, existed, &kind, &bytes);
        Ok(if existed { Err(text) } else { Ok(text) })
    }

    async fn search(
        &mut self,
        request: &search::SearchRequest,
    ) -> Result<Result<String, String>, SandboxError> {
        let out = self
            .sandbox
            .run(
                &request.shell_command(self.config.search.max_files),
                self.command_timeout,
            )
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
        let edited = lint_range(range, body);
        let problems = self.lint(&path, &before, &after, &edited).await?;
        let rejection = |window: &WindowState, first_line: &str, problems: &[String]| {
            edit::lint_failure(window, range, body, &before, &after, problems, first_line)
        };
        if !problems.is_empty() {
            step.lint_rejected = true;
            // The file was never written, so it is exactly as it was; so is the window.
            return Ok(Err(rejection(
                &self.window,
                &self.config.lint.rejection_first_line,
                &problems,
            )));
        }
        self.sandbox.write_file(&path, &after).await?;
        if let Some(problems) = self.external_lint(&path, &before, &after, &edited).await? {
            self.sandbox.write_file(&path, &before).await?;
            step.lint_rejected = true;
            return Ok(Err(rejection(
                &self.window,
                &self.config.lint.rejection_first_line,
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
        edited: &lint::EditRange,
    ) -> Result<Vec<String>, SandboxError> {
        let lint = &self.config.lint;
        let gated = lint.enabled && lint.builtin;
        let Some(language) = gated
            .then(|| Language::from_path(path, &lint.languages))
            .flatten()
        else {
            return Ok(Vec::new());
        };
        let options = GateOptions {
            filter_preexisting: lint.filter_preexisting,
            package_init: path.ends_with("/__init__.py") || path == "__init__.py",
        };
        let verdict = self.linter.gate(language, before, after, edited, &options);
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
        edited: &lint::EditRange,
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
        let new = lint::filter_new(&before_errors, after_errors, edited);
        Ok((!new.is_empty()).then(|| new.iter().map(lint::LintError::problem).collect()))
    }

    /// `str_replace_editor`: reads its arguments, asks the sandbox what the path is (and the
    /// shell's directory, for a relative path), then runs the command through the pure
    /// [`editor`] functions, reading and writing the file here.
    async fn str_replace_editor(
        &mut self,
        args: &str,
        step: &mut StepOutput,
    ) -> Result<Result<String, String>, SandboxError> {
        let words = super::args::split_words(args);
        let request = match editor::parse_args(&words) {
            Ok(request) => request,
            Err(usage) => return Ok(Err(usage)),
        };
        let path = editor::normalize_path(&request.path);
        // In a subshell, so that the session's variables are left alone.
        let probe = format!(
            "( p={}; if [ -d \"$p\" ]; then echo dir; elif [ -e \"$p\" ]; then echo file; else \
             echo missing; fi; if [ -d \"$(dirname -- \"$p\")\" ]; then echo parent; else echo \
             none; fi; pwd )",
            shell_quote(&path)
        );
        let out = self.sandbox.run(&probe, self.command_timeout).await?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let kind = match lines.next() {
            Some("dir") => EditorPath::Dir,
            Some("file") => EditorPath::File,
            _ => EditorPath::Missing,
        };
        let parent_exists = lines.next() == Some("parent");
        let cwd = lines.next().unwrap_or("/").to_owned();
        if let Err(message) = editor::check_path(&request.command, &path, kind, &cwd) {
            return Ok(Err(message));
        }
        match request.command.as_str() {
            "view" if kind == EditorPath::Dir => {
                let out = self
                    .sandbox
                    .run(&editor::find_command(&path), self.command_timeout)
                    .await?;
                Ok(editor::view_dir(
                    &path,
                    request.view_range,
                    &String::from_utf8_lossy(&out.stdout),
                    &String::from_utf8_lossy(&out.stderr),
                ))
            }
            "view" => {
                let (text, _, _) = match self.editor_read(&path).await? {
                    Ok(read) => read,
                    Err(message) => return Ok(Err(message)),
                };
                let bodies = (self.config.filemap && path.ends_with(".py"))
                    .then(|| lint::python_function_bodies(text.as_bytes()));
                Ok(editor::view_file(
                    &path,
                    &text,
                    request.view_range,
                    bodies.as_deref(),
                ))
            }
            "create" => {
                let Some(file_text) = request.file_text else {
                    return Ok(Err(editor::missing_parameter("file_text", "create")));
                };
                let message = match editor::create(&path, parent_exists) {
                    Ok(message) => message,
                    Err(message) => return Ok(Err(message)),
                };
                self.sandbox.write_file(&path, file_text.as_bytes()).await?;
                self.editor_history.push(&path, file_text);
                Ok(Ok(message))
            }
            "str_replace" => {
                let Some(old_str) = request.old_str else {
                    return Ok(Err(editor::missing_parameter("old_str", "str_replace")));
                };
                let (text, encoding, original) = match self.editor_read(&path).await? {
                    Ok(read) => read,
                    Err(message) => return Ok(Err(message)),
                };
                match editor::str_replace(&path, &text, &old_str, request.new_str.as_deref()) {
                    Ok(edit) => {
                        self.editor_write(&path, edit, encoding, &original, step)
                            .await
                    }
                    Err(message) => Ok(Err(message)),
                }
            }
            "insert" => {
                let Some(insert_line) = request.insert_line else {
                    return Ok(Err(editor::missing_parameter("insert_line", "insert")));
                };
                let Some(new_str) = request.new_str else {
                    return Ok(Err(editor::missing_parameter("new_str", "insert")));
                };
                let (text, encoding, original) = match self.editor_read(&path).await? {
                    Ok(read) => read,
                    Err(message) => return Ok(Err(message)),
                };
                match editor::insert(&path, &text, insert_line, &new_str) {
                    Ok(edit) => {
                        self.editor_write(&path, edit, encoding, &original, step)
                            .await
                    }
                    Err(message) => Ok(Err(message)),
                }
            }
            "undo_edit" => {
                let Some(text) = self.editor_history.pop(&path) else {
                    return Ok(Err(editor::no_history(&path)));
                };
                self.sandbox.write_file(&path, text.as_bytes()).await?;
                Ok(Ok(editor::undone(&path, &text)))
            }
            other => Ok(Err(editor::unrecognized_command(other))),
        }
    }

    /// A file as `str_replace_editor` reads it (its text, encoding and bytes), or the message
    /// when it cannot be read.
    async fn editor_read(
        &mut self,
        path: &str,
    ) -> Result<Result<(String, editor::Encoding, Vec<u8>), String>, SandboxError> {
        match self.sandbox.read_file(path).await {
            Ok(bytes) => {
                let (text, encoding) = editor::decode(&bytes);
                Ok(Ok((text, encoding, bytes)))
            }
            Err(SandboxError::File { message, .. }) => Ok(Err(format!(
                "Ran into {message} while trying to read {path}\n"
            ))),
            Err(error) => Err(error),
        }
    }

    /// Writes an edit's text, unless the lint gate (`aci.lint.str_replace_editor`) rejects it:
    /// the built-in gate before writing, an external one after (the file is then put back).
    async fn editor_write(
        &mut self,
        path: &str,
        edit: editor::Edit,
        encoding: editor::Encoding,
        original: &[u8],
        step: &mut StepOutput,
    ) -> Result<Result<String, String>, SandboxError> {
        let after = match editor::encode(&edit.text, encoding, path) {
            Ok(bytes) => bytes,
            Err(message) => return Ok(Err(message)),
        };
        let gated = self.config.lint.enabled && self.config.lint.str_replace_editor;
        if gated {
            let before = editor::encode(&edit.history, encoding, path).unwrap_or_default();
            let edited = lint::EditRange {
                start: edit.start,
                end: edit.end,
                replacement_lines: edit.replacement_lines,
            };
            let mut problems = self.lint(path, &before, &after, &edited).await?;
            if problems.is_empty() {
                self.sandbox.write_file(path, &after).await?;
                if let Some(external) = self.external_lint(path, &before, &after, &edited).await? {
                    self.sandbox.write_file(path, original).await?;
                    problems = external;
                }
            }
            if !problems.is_empty() {
                step.lint_rejected = true;
                return Ok(Err(editor::lint_rejection(
                    &self.config.lint.rejection_first_line,
                    &problems,
                    path,
                    &edit,
                )));
            }
        } else {
            self.sandbox.write_file(path, &after).await?;
        }
        let message = edit.message.clone();
        self.editor_history.push(path, edit.history);
        Ok(Ok(message))
    }

    /// `submit`: stages everything and diffs against the baseline. Binary files are included
    /// (`--binary`), so that the patch applies; the prefixes and the quoting of names are given,
    /// so that no user setting (`diff.noprefix`, `diff.mnemonicPrefix`, `core.quotePath`) can
    /// change them. A file whose content is not UTF-8 is diffed again in git's binary format
    /// (ASCII), so the patch is always UTF-8 and reproduces every byte
    /// ([`super::submission`]).
    pub async fn submit(&mut self) -> Result<Vec<u8>, SandboxError> {
        let patch = self.staged_diff(None).await?;
        if std::str::from_utf8(&patch).is_ok() {
            return Ok(patch);
        }
        let paths = submission::non_utf8_paths(&patch);
        let patch = self
            .staged_diff(Some(&submission::binary_attributes(&paths)))
            .await?;
        if std::str::from_utf8(&patch).is_ok() {
            return Ok(patch);
        }
        self.staged_diff(Some(submission::ALL_BINARY)).await
    }

    /// `git add -A` and the diff of the index against the baseline, read back whole; with
    /// `binary`, those lines are added to `.git/info/attributes` for the diff and taken out again.
    async fn staged_diff(&mut self, binary: Option<&str>) -> Result<Vec<u8>, SandboxError> {
        let repo_dir = self.sandbox.repo_dir().to_owned();
        let repo = shell_quote(&repo_dir);
        let baseline = self.sandbox.baseline().to_owned();
        let (mark, unmark) = match binary {
            Some(lines) => {
                self.sandbox
                    .write_file(&format!("{repo_dir}/{ATTRIBUTES_FILE}"), lines.as_bytes())
                    .await?;
                (
                    format!(
                        "mkdir -p .git/info && {{ if [ -e .git/info/attributes ]; then cp \
                         .git/info/attributes {SAVED_ATTRIBUTES}; fi; cat {ATTRIBUTES_FILE} >> \
                         .git/info/attributes; }} && "
                    ),
                    format!(
                        "if [ -e {SAVED_ATTRIBUTES} ]; then mv {SAVED_ATTRIBUTES} \
                         .git/info/attributes; else rm -f .git/info/attributes; fi; rm -f \
                         {ATTRIBUTES_FILE}; "
                    ),
                )
            }
            None => (String::new(), String::new()),
        };
        // The patch goes to a file and is read back whole: the shell's output limit must not
        // cut it. The subshell leaves the session's working directory alone.
        let script = format!(
            "( cd {repo} && git add -A && {mark}git -c core.quotePath=true diff --cached --binary \
             --no-color --no-ext-diff --src-prefix=a/ --dst-prefix=b/ {baseline} > \
             {SUBMISSION_FILE}; status=$?; {unmark}exit $status )"
        );
        let out = self.sandbox.run(&script, Duration::from_secs(600)).await?;
        if out.exit_code != Some(0) {
            return Err(SandboxError::Session(format!(
                "submit could not make the patch: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        self.sandbox
            .read_file(&format!("{repo_dir}/{SUBMISSION_FILE}"))
            .await
    }

    /// A file of the repository, by its path relative to the repository's root.
    pub async fn read_repo_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let repo_dir = self.sandbox.repo_dir().trim_end_matches('/').to_owned();
        self.sandbox.read_file(&format!("{repo_dir}/{path}")).await
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aci::registry::BUILTIN_COMMANDS;

    #[test]
    fn every_builtin_has_a_name_and_is_found_by_it() {
        assert_eq!(HANDLED_COMMANDS, BUILTIN_COMMANDS);
        for builtin in Builtin::ALL {
            assert_eq!(Builtin::from_name(builtin.name()), Some(builtin));
        }
        assert_eq!(Builtin::from_name("bash"), None);
    }

    #[test]
    fn the_default_prompt_after_a_silent_command_starts_with_the_no_output_text() {
        let config = crate::config::resolve(&[], &[]).unwrap();
        assert!(
            config
                .agent
                .templates
                .next_step_no_output
                .starts_with(&format!("{NO_OUTPUT}\n")),
            "{}",
            config.agent.templates.next_step_no_output
        );
    }

    #[test]
    fn the_timeout_text_writes_the_seconds_as_python_writes_a_float() {
        assert_eq!(
            timeout_message(25.0, true),
            "\nEXECUTION TIMED OUT BECAUSE THE COMMAND WAS RUNNING FOR MORE THAN 25.0 SECONDS."
        );
        assert_eq!(
            timeout_message(2.5, false),
            "\nEXECUTION TIMED OUT BECAUSE NO OUTPUT WAS PRODUCED FOR MORE THAN 2.5 SECONDS.\n\
             PLEASE REFINE YOUR RUNNING COMMAND SO IT WILL PRODUCE OUTPUT IN THE SPECIFIED TIME FRAME."
        );
        assert!(timeout_message(0.25, true).contains(" 0.25 SECONDS."));
        assert!(timeout_message(1.0, true).contains(" 1.0 SECONDS."));
    }
}
