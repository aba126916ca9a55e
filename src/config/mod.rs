//! The configuration schema. One YAML document with four sections — `agent`, `aci`, `model`,
//! `env` — where every field has a doc comment (the reference for users) and a default, and
//! unknown keys are errors. Layering and `--set` live in [`load`].

pub mod aci;
pub mod agent;
pub mod as_of;
pub mod k8s;
pub mod load;
pub mod model;
pub mod units;

use std::collections::BTreeMap;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use aci::Blocklist;
pub use agent::{HistoryConfig, Limits, NudgeTexts};
pub use as_of::{Cutoff, ResolveAsOf};
pub use model::ModelConfig;
pub use units::{Positive, Seconds};

pub use k8s::K8sConfig;
pub use load::{ConfigError, ConfigWarning, resolve, resolve_text, resolve_with_presets};

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Config files this one is layered over, relative to this file's directory: a path or a
    /// list of paths, each read first (with its own `extends`), then this file over them (e.g.
    /// `extends: ../mini-swe-agent.yaml`). Only in config files; not kept in the resolved
    /// configuration.
    #[serde(skip_serializing)]
    pub extends: Option<Extends>,
    /// The agent loop: prompts, parser, history, limits.
    pub agent: AgentConfig,
    /// The Agent-Computer Interface: commands, viewer, lint gate, search.
    pub aci: AciConfig,
    /// The language model.
    pub model: ModelConfig,
    /// The container each task runs in.
    pub env: EnvConfig,
}

/// `extends`: one config file or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Extends {
    /// One file.
    One(PathBuf),
    /// Several files, layered in order.
    Many(Vec<PathBuf>),
}

/// `agent`: how the loop talks to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Prompt templates (minijinja).
    pub templates: Templates,
    /// Demonstration trajectories (`.traj` files, relative to the config file that names them)
    /// shown to the model before the task; empty for none.
    pub demonstrations: Vec<PathBuf>,
    /// How the model's answer becomes an action: `thought_action` (the last fenced code
    /// block), `function_calling` (a tool call), `action_regex` (one match of
    /// `action_regex`) or `bash_tool_calls` (one or more calls of the `bash` tool).
    pub parser: ParserKind,
    /// With `function_calling`, offer v1's `bash` tool beside the ACI commands (SWE-agent's
    /// `enable_bash_tool`); without it the model can run only the enabled ACI commands.
    pub enable_bash_tool: bool,
    /// The `bash` tool as the model is told of it (with `function_calling`'s
    /// `enable_bash_tool`, and with `bash_tool_calls`).
    pub bash_tool: BashToolText,
    /// With `parser: action_regex`, the regex (Rust `regex` syntax, `.` matching newlines) whose
    /// first group is the action; an answer must match exactly once (mini-swe-agent's text mode:
    /// ```` ```mswea_bash_command\s*\n(.*?)\n``` ````).
    pub action_regex: String,
    /// Also write `<id>.traj.json` next to `<id>.traj`: the run as a mini-swe-agent trajectory
    /// (`trajectory_format: mini-swe-agent-1.1`), which mini's own tools open.
    pub mini_trajectory: bool,
    /// Keep each format error (and blocked-command) message in the stored history, without
    /// the rejected answer, so every later request carries it (mini-swe-agent's way). Off: the
    /// model is re-asked once with its answer and the message, and neither is kept.
    pub format_errors_in_history: bool,
    /// Which past observations are sent: `{type: last_n_observations, n: 5}` or `{type: full}`.
    pub history: HistoryConfig,
    /// Observations longer than this many characters are cut in the middle, with a note of how
    /// much was elided.
    pub max_observation_length: usize,
    /// What the trajectory stores of an observation: whole up to this many characters, else
    /// its head and tail around a note of how much was elided (the model's copy is cut at
    /// `max_observation_length`).
    pub max_stored_observation_length: usize,
    /// When the loop stops: steps, wall time, format errors, turns without an action, command
    /// timeouts, stalls.
    pub limits: Limits,
    /// The wording of the nudges sent (never stored) when the model stalls or answers without
    /// an action.
    pub nudges: NudgeTexts,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            templates: Templates::default(),
            demonstrations: Vec::new(),
            parser: ParserKind::ThoughtAction,
            enable_bash_tool: true,
            bash_tool: BashToolText::default(),
            action_regex: String::new(),
            mini_trajectory: false,
            format_errors_in_history: false,
            history: HistoryConfig::default(),
            max_observation_length: agent::DEFAULT_MAX_OBSERVATION_LENGTH,
            max_stored_observation_length: agent::DEFAULT_MAX_STORED_OBSERVATION_LENGTH,
            limits: Limits::default(),
            nudges: NudgeTexts::default(),
        }
    }
}

/// The prompt templates. Variables: `command_docs`, `problem_statement` (also as `task`, mini-swe-agent's name), `instance_id`, `repo`,
/// `extra_fields`, `observation`, `open_file`, `working_dir`, `WINDOW`, `OVERLAP`,
/// `demonstration`, `error_code`, `exception_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Templates {
    /// The system prompt, with the command docs.
    pub system: String,
    /// Wraps one demonstration trajectory (`{{demonstration}}`) into a user message.
    pub demonstration: String,
    /// The first user message: the problem statement.
    pub instance: String,
    /// Every later user message: the observation and the state.
    pub next_step: String,
    /// The user message after a command that printed nothing.
    pub next_step_no_output: String,
    /// The re-ask after an answer that could not be parsed (`error_code`, `exception_message`).
    pub format_error: String,
    /// The re-ask after a blocked command (`exception_message`).
    pub blocked: String,
    /// When set, every observation is this template instead of `next_step`/`next_step_no_output`,
    /// rendered with `output` = `{output, returncode, exception_info}` (mini-swe-agent's
    /// `observation_template`): the command's whole output, its exit code (-1 when it did not
    /// finish) and what went wrong running it (a timeout), or empty.
    pub observation: String,
}

/// `agent.bash_tool`: the texts of the `bash` tool's schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BashToolText {
    /// The tool's description (SWE-agent v1's by default; mini-swe-agent's is `Execute a bash
    /// command`).
    pub description: String,
    /// The description of its one argument, `command`.
    pub command_description: String,
}

impl Default for BashToolText {
    fn default() -> Self {
        Self {
            description: "runs the given command directly in bash".to_owned(),
            command_description: "The bash command to execute.".to_owned(),
        }
    }
}

/// How the model's answer becomes an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ParserKind {
    /// A discussion, then the action in the last fenced code block.
    #[default]
    ThoughtAction,
    /// One tool call per answer.
    FunctionCalling,
    /// Exactly one match of `agent.action_regex` per answer; its first group is the action.
    ActionRegex,
    /// One or more calls of the one tool `bash` per answer (mini-swe-agent's tool-call mode):
    /// each call's `command` runs in turn, and each is answered by its own tool message. A
    /// call of another tool, or without `command`, rejects the whole answer.
    BashToolCalls,
}

/// `aci.submit_sentinel_line`: where in a command's output the submit sentinel is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SentinelLine {
    /// The first line (leading whitespace skipped), after a command that exited 0; the rest of
    /// the output is the submission.
    #[default]
    First,
    /// The last line (trailing whitespace skipped), whatever the exit code of a command that
    /// finished (one that timed out does not submit); the output before that line is the
    /// submission.
    Last,
}

/// `aci`: the interface the model drives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AciConfig {
    /// The ACI commands offered to the model, from `aci-commands/` (and `custom_commands`).
    /// Empty: shell only.
    pub commands: Vec<String>,
    /// YAML files defining extra commands by a shell `script:`, relative to the config file.
    pub custom_commands: Vec<PathBuf>,
    /// Lines shown by the file viewer (`open`, `goto`, `scroll_*`).
    pub window: usize,
    /// Lines kept from the previous window when scrolling.
    pub overlap: usize,
    /// From the 3rd scroll in a row, append v0.7's "Scrolling many times in a row is very
    /// inefficient" warning. Off: no warning, as before v0.7 (the paper's runs).
    pub scroll_warning: bool,
    /// When `open` is given a line number for a missing file or a directory, print first the
    /// two lines of shell noise v0's `open` script printed there (its `awk` line count fails,
    /// then bash's `[` has no number to compare): `awk: cannot open <path> (No such file or
    /// directory)` (`awk: read error (Is a directory)`), then
    /// `/root/commands/defaults.sh: line 54: [: <line>: unary operator expected`. Off: only
    /// the answer (`File <path> not found`).
    pub open_shell_noise: bool,
    /// Give the model each command's output exactly as printed, its final newline included,
    /// as v0.1–0.4 did. Off (v0.7): `\r\n` and Python's other line boundaries become `\n` and
    /// the final line break is dropped.
    pub raw_output: bool,
    /// The widest line a window shows, in characters: a longer line is cut there and ends
    /// with ` [... N more characters on this line]` (SWE-agent cuts none; real source lines
    /// are far shorter than the default, 2000).
    pub max_line_length: usize,
    /// The edit lint gate.
    pub lint: LintConfig,
    /// Search summarisation.
    pub search: SearchConfig,
    /// Commands refused before they run (interactive programs).
    pub blocklist: Blocklist,
    /// Run every shell command in a subshell of the session started from the repository's
    /// root, so `cd` and `export` do not persist from one action to the next (mini-swe-agent's
    /// fresh `bash -c` per command). The session itself stays, so nothing is started per
    /// command; an action is then one command, never split into ACI commands.
    pub subshell: bool,
    /// A line that, printed first by a command that exits 0, submits the rest of that
    /// command's output as the patch (mini-swe-agent's `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`).
    /// Null: only `submit` submits.
    pub submit_sentinel: Option<String>,
    /// Which line of the output `submit_sentinel` must be: `first` (mini-swe-agent 1.x and
    /// 2.x) or `last` (mini 2.0's pre-releases).
    pub submit_sentinel_line: SentinelLine,
    /// What `output.exception_info` says of a command past `env.command_timeout`, for the
    /// `agent.templates.observation` template: `{command}` is the command, `{seconds}` the
    /// timeout (mini-swe-agent's text by default).
    pub timeout_exception: String,
    /// `str_replace_editor view` of a whole `.py` file over 16000 characters shows it
    /// abbreviated, every function body of 5 lines or more elided (SWE-agent 1.x's
    /// `USE_FILEMAP`, on in its default config). Off: the file is cut at 16000 characters.
    pub filemap: bool,
    /// Messages `submit` prints instead of submitting, one per call, before it submits
    /// (SWE-agent 1.x's `SUBMIT_REVIEW_MESSAGES`): `{{diff}}` is the patch so far. `submit -f`
    /// submits at once. Empty: `submit` submits.
    pub submit_review_messages: Vec<String>,
    /// Replacement docstrings for commands, by name (what the prompt's docs and the tool
    /// schemas say), e.g. 1.x's `submit: submits the current file`.
    pub docstrings: BTreeMap<String, String>,
}

impl Default for AciConfig {
    fn default() -> Self {
        Self {
            commands: aci::DEFAULT_COMMANDS
                .iter()
                .map(|c| (*c).to_owned())
                .collect(),
            custom_commands: Vec::new(),
            window: 100,
            overlap: 2,
            scroll_warning: true,
            open_shell_noise: false,
            raw_output: false,
            max_line_length: aci::DEFAULT_MAX_LINE_LENGTH,
            lint: LintConfig::default(),
            search: SearchConfig::default(),
            blocklist: Blocklist::default(),
            subshell: false,
            submit_sentinel: None,
            submit_sentinel_line: SentinelLine::First,
            timeout_exception: DEFAULT_TIMEOUT_EXCEPTION.to_owned(),
            filemap: false,
            submit_review_messages: Vec::new(),
            docstrings: BTreeMap::new(),
        }
    }
}

/// The default of `aci.timeout_exception`: mini-swe-agent's words for a command that timed out.
pub const DEFAULT_TIMEOUT_EXCEPTION: &str = "An error occurred while executing the command: Command '{command}' timed out after {seconds} seconds";

/// `aci.lint`: the gate every `edit` passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LintConfig {
    /// Gate edits at all. Off: every edit lands, syntax errors included.
    pub enabled: bool,
    /// Run the built-in, in-process gate (tree-sitter syntax for every language in
    /// `languages`, plus Python indentation and name checks). Off: only `external` gates.
    pub builtin: bool,
    /// Languages gated, chosen by file extension (`python`: .py/.pyi, `rust`: .rs, `go`,
    /// `java`, `javascript`: .js/.mjs/.cjs/.jsx, `typescript`: .ts/.tsx, `c`: .c, `cpp`:
    /// .cc/.cpp/.cxx/.hpp/.hh/.h, `php`, `ruby`: .rb; all by default); files of other
    /// languages are never gated.
    pub languages: Vec<String>,
    /// An extra linter run in the container after each edit, with `{file}` replaced by the
    /// path; its flake8-format output is filtered like the built-in errors. Null for none.
    pub external: Option<String>,
    /// Only errors the edit introduced block it (v0.7). Off: any error in the file blocks.
    pub filter_preexisting: bool,
    /// The first line of a rejected edit's observation. v0.1–0.4 wrote
    /// [`LINT_REJECTION_V01`] (with its "commmand").
    pub rejection_first_line: String,
    /// Gate `str_replace_editor`'s `str_replace` and `insert` too (with `enabled`): an edit
    /// that adds a syntax error is not made, and the observation says why in v0.7's words.
    /// Off (SWE-agent 1.x): they always land.
    pub str_replace_editor: bool,
}

/// The first line of a rejected edit's observation in SWE-agent v0.7 (the default).
pub const LINT_REJECTION_V07: &str = "Your proposed edit has introduced new syntax error(s). \
Please read this error message carefully and then retry editing the file.";

/// The first line of a rejected edit's observation in SWE-agent v0.1–0.4, as the paper shows it.
pub const LINT_REJECTION_V01: &str = "Your proposed edit has introduced new syntax error(s). \
Please understand the fixes and retry your edit commmand.";

impl Default for LintConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            builtin: true,
            languages: crate::lint::Language::NAMES
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
            external: None,
            filter_preexisting: true,
            rejection_first_line: LINT_REJECTION_V07.to_owned(),
            str_replace_editor: false,
        }
    }
}

/// `aci.search`: summarised search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// Above this many matching files, `search_dir` asks the model to narrow the search.
    pub max_files: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self { max_files: 100 }
    }
}

/// `env`: the container each task runs in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvConfig {
    /// An image for every instance, overriding `images` and the instances' own `image`.
    pub image: Option<String>,
    /// The image per instance `language`, when the instance names no `image`.
    pub images: BTreeMap<String, String>,
    /// Where the repository is checked out in the container; `{repo_name}` is the instance's
    /// `repo` with `/` replaced by `__`.
    pub repo_dir: String,
    /// Seconds a single command may run before it is killed (the model is told). Like every
    /// duration here: above 0 and at most 365 days.
    pub command_timeout: Seconds,
    /// Seconds a whole instance may run (agent loop and all) before the watchdog stops it and
    /// autosubmits. A backstop: keep it above `agent.limits.max_wall_time_secs`, the limit the
    /// model is warned about and that the loop itself enforces between turns.
    pub instance_timeout: Seconds,
    /// Seconds an environment image build (repository, baseline and `setup`) may take before
    /// it fails that instance. Apart from `instance_timeout`: a short watchdog for quick runs
    /// must not fail a long `pip install`.
    pub build_timeout: Seconds,
    /// Container memory limit in MiB (no swap on top); above 0.
    pub memory_mb: Positive<u64>,
    /// Container CPU limit in cores (fractions allowed); above 0.
    pub cpus: Positive<f64>,
    /// Maximum number of processes in the container; above 0.
    pub pids: Positive<i64>,
    /// Disk quota per container in MiB: what a task's files may take on top of its image;
    /// above 0. Counted in blocks on a filesystem of its own where aci can make one (as root
    /// beside the daemon), else measured by the daemon; the task ends (`exit_disk_quota`) once
    /// it is over (checked every second, or every 3 s when measured).
    pub disk_mb: Positive<u64>,
    /// Give the container a network. Off by default: the container has only `lo`.
    pub network: bool,
    /// Bytes of a command's output kept from the start while it streams.
    pub output_head_bytes: usize,
    /// Bytes of a command's output kept from the end while it streams.
    pub output_tail_bytes: usize,
    /// Environment variables exported in the task's shell.
    pub variables: BTreeMap<String, String>,
    /// Free space (GB) the Docker root must have before aci builds an environment image; under
    /// it the run stops with a hint to `aci images prune`.
    pub min_free_disk_gb: f64,
    /// Where a repository is cloned from when neither `repo_path` nor the instance's image holds
    /// it: `{repo}` is the instance's `repo` (`owner/name`). A `file://` URL or a local path
    /// works too.
    pub repo_url: String,
    /// The directory of the bare mirrors cloned from `repo_url`, one per repository, shared by
    /// every run. Null: `$XDG_CACHE_HOME/aci/repos`, else `~/.cache/aci/repos`.
    pub repo_cache: Option<PathBuf>,
    /// The image of every instance that names none (`image`, `image_name`):
    /// `{instance_id}`, `{repo}`, and `{id_docker}` (the id as SWE-bench's image names spell
    /// it: lower-case, `__` → `_1776_`). Null: the language image (`images`).
    pub image_template: Option<String>,
    /// When an image is pulled from its registry: `missing` (only when it is not here),
    /// `always` (before every instance), `never`.
    pub pull: PullPolicy,
    /// A shell snippet run at the start of the agent's session (and of every new session) and
    /// of every evaluation script, e.g. `source /opt/miniconda3/bin/activate && conda activate
    /// testbed`. When it fails the instance ends with `exit_environment_error`. Null: none.
    pub activate: Option<String>,
    /// How many Docker containers may be in their start phase at once (create, disk quota,
    /// start, repository copy, shell ready), across a batch's workers and an evaluation's;
    /// the others wait their turn. 0 (the default): no cap beyond `--workers`, as before the
    /// cap existed. Apart from the workers: many tasks can run at once on a daemon that cannot
    /// start as many at once within their start limits. Pods have `k8s`'s limits instead.
    #[serde(deserialize_with = "units::count")]
    pub max_starting: usize,
    /// `--engine k8s`: the namespace, the registry, and how long pods may take to start.
    pub k8s: K8sConfig,
    /// Extra SWE-bench spec files, in the format of the built-in `specs/swebench.yaml`, read
    /// after it in order: a repository a file names replaces the built-in entry of that name.
    /// Grading and environment images both use them. Relative paths resolve against the
    /// working directory.
    pub specs: Vec<PathBuf>,
    /// Which spec grades a SWE-bench record that carries its own (`eval_script`, `log_parser`,
    /// `eval_type`, as the 5.x exports do) and that the spec table also has: `record` (the
    /// default) or `builtin`. A record without its own spec always uses the table. `--spec`
    /// sets it for `aci eval` and `aci validate`.
    pub spec_source: crate::spec::SpecSource,
    /// The directory where the whole log of each environment image build is kept, one file
    /// per image (`<tag>.log`). Null: `$XDG_CACHE_HOME/aci/build-logs`, else
    /// `~/.cache/aci/build-logs`.
    pub build_logs: Option<PathBuf>,
    /// As of when pip resolves the packages of the environments aci builds from SWE-bench
    /// specs: `created_at` (each layer as of its record's date, never before its Python's
    /// release; see docs/swebench.md),
    /// `today` (no filter), or a date / RFC 3339 time for every instance.
    pub resolve_as_of: ResolveAsOf,
}

/// `env.pull`: when an image is pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PullPolicy {
    /// Pull only an image that is not here (the default).
    #[default]
    Missing,
    /// Pull before every use, so a moved tag is followed.
    Always,
    /// Never pull: a missing image fails its instance.
    Never,
}

impl EnvConfig {
    /// `repo_cache`, or its default under [`cache_root`]; `None` when there is no home either.
    pub fn repo_cache_dir(&self) -> Option<PathBuf> {
        self.repo_cache
            .clone()
            .or_else(|| cache_root().map(|root| root.join("repos")))
    }
}

/// aci's cache directory: `$XDG_CACHE_HOME/aci`, else `~/.cache/aci`; `None` without either.
pub fn cache_root() -> Option<PathBuf> {
    let from = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    from("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| from("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .map(|dir| dir.join("aci"))
}

/// `env.repo_url` when no config sets it.
pub const DEFAULT_REPO_URL: &str = "https://github.com/{repo}.git";

impl Default for EnvConfig {
    fn default() -> Self {
        Self {
            image: None,
            images: BTreeMap::from([
                ("python".to_owned(), "aci-python:bookworm".to_owned()),
                ("rust".to_owned(), "aci-rust:bookworm".to_owned()),
                ("go".to_owned(), "aci-go:bookworm".to_owned()),
                ("java".to_owned(), "aci-java:bookworm".to_owned()),
                ("node".to_owned(), "aci-node:bookworm".to_owned()),
                ("php".to_owned(), "aci-php:bookworm".to_owned()),
                ("ruby".to_owned(), "aci-ruby:bookworm".to_owned()),
                ("c".to_owned(), "aci-c:bookworm".to_owned()),
            ]),
            repo_dir: "/testbed".to_owned(),
            command_timeout: Seconds::whole(25),
            instance_timeout: Seconds::whole(3900),
            build_timeout: Seconds::whole(1800),
            memory_mb: Positive(4096),
            cpus: Positive(2.0),
            pids: Positive(1024),
            disk_mb: Positive(8192),
            network: false,
            output_head_bytes: 512 * 1024,
            output_tail_bytes: 512 * 1024,
            variables: BTreeMap::new(),
            min_free_disk_gb: 10.0,
            repo_url: DEFAULT_REPO_URL.to_owned(),
            repo_cache: None,
            image_template: None,
            pull: PullPolicy::Missing,
            activate: None,
            max_starting: 0,
            k8s: K8sConfig::default(),
            specs: Vec::new(),
            spec_source: crate::spec::SpecSource::Record,
            build_logs: None,
            resolve_as_of: ResolveAsOf::Today,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lint::Language;

    #[test]
    fn every_language_is_gated_by_default() {
        let defaults = super::LintConfig::default().languages;
        for language in Language::ALL {
            assert!(
                defaults.iter().any(|name| name == language.name()),
                "{language:?}"
            );
        }
    }
}
