//! The data types of the `agent:` section that the agent loop's parts own: which history is
//! sent ([`HistoryConfig`]), when the loop stops ([`Limits`]) and how it nudges
//! ([`NudgeTexts`]).

use serde::{Deserialize, Serialize};

/// The default for `agent.max_observation_length` (SWE-agent v1's value), in characters.
pub const DEFAULT_MAX_OBSERVATION_LENGTH: usize = 100_000;

/// The default for `agent.max_stored_observation_length`, in characters.
pub const DEFAULT_MAX_STORED_OBSERVATION_LENGTH: usize = 1_000_000;

/// `agent.history`: which processor shapes the history sent to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HistoryConfig {
    /// SWE-agent v0's `LastNObservations`: all observations but the instance prompt and the last
    /// `n` are replaced by `Old output omitted (<k> lines)`. The paper's default.
    LastNObservations {
        /// How many of the latest observations are kept whole.
        #[serde(default = "default_n")]
        n: usize,
    },
    /// Everything is sent as stored.
    Full,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig::LastNObservations { n: default_n() }
    }
}

fn default_n() -> usize {
    5
}

/// The thresholds the decider enforces. Counter limits below 1 act as 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Model responses per instance before `exit_step_limit`; 0 turns the limit off. Every
    /// response counts, including malformed ones and ones without a command.
    pub max_steps: u32,
    /// Instance cost in dollars at which the run stops with `exit_cost`; 0 turns it off. Not a
    /// config key of its own: it is taken from `model.per_instance_cost_limit`.
    #[serde(skip)]
    pub max_cost: f64,
    /// Wall-clock seconds after which the run stops with `exit_total_execution_time`; 0 turns it
    /// off.
    pub max_wall_time_secs: u64,
    /// Malformed responses since the last executed command before `exit_format`
    /// (SWE-agent's `agent.max_requeries`).
    pub max_requeries: u32,
    /// Responses without a command (prose, questions) since the last executed command before
    /// `exit_format`. Counted apart from `max_requeries`.
    pub max_no_action_turns: u32,
    /// Command timeouts in a row before `exit_command_timeout`.
    pub max_consecutive_timeouts: u32,
    /// Identical responses in a row (whitespace-normalised) that trigger the stall nudge; 0 turns
    /// stall detection off. Stalls never stop the run by themselves.
    pub stall_repeats: u32,
    /// Fraction of the step, cost or wall-time budget after which every turn carries an
    /// "approaching limits" nudge.
    pub warn_at_fraction: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 250,
            max_cost: 3.0,
            max_wall_time_secs: 3600,
            max_requeries: 3,
            max_no_action_turns: 3,
            max_consecutive_timeouts: 3,
            stall_repeats: 3,
            warn_at_fraction: 0.8,
        }
    }
}

/// The wording of every nudge, overridable from config.
///
/// Each nudge kind is a list of escalation levels: level 1 is used the first time the kind fires,
/// level 2 the second time in a row, and so on; the last entry is reused after that. An empty
/// list disables that kind. Placeholders, written `{name}`: `{action_format}` (one of the two
/// format texts below), `{count}` (responses without a command in a row), `{turns_left}` (how many
/// more of those stop the run), `{repeats}` (identical responses in a row), `{remaining}` (the
/// budget left, e.g. `2 of 10 steps`), `{timeouts}` and `{max_timeouts}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NudgeTexts {
    /// The model answered without a command.
    pub no_action: Vec<String>,
    /// The model answered without a command and asked a question.
    pub question: Vec<String>,
    /// The model sent the same response `stall_repeats` or more times in a row.
    pub stall: Vec<String>,
    /// A step, cost or wall-time budget is past `warn_at_fraction`.
    pub approaching_limit: Vec<String>,
    /// One more command timeout will stop the run.
    pub timeout: Vec<String>,
    /// `{action_format}` for `thought_action` answers.
    pub action_format_thought_action: String,
    /// `{action_format}` for `function_calling` answers.
    pub action_format_function_calling: String,
}

impl Default for NudgeTexts {
    fn default() -> Self {
        let strings = |texts: &[&str]| texts.iter().map(|text| (*text).to_owned()).collect();
        NudgeTexts {
            no_action: strings(&DEFAULT_NO_ACTION),
            question: strings(&DEFAULT_QUESTION),
            stall: strings(&DEFAULT_STALL),
            approaching_limit: strings(&DEFAULT_APPROACHING_LIMIT),
            timeout: strings(&DEFAULT_TIMEOUT),
            action_format_thought_action: DEFAULT_FORMAT_THOUGHT_ACTION.to_owned(),
            action_format_function_calling: DEFAULT_FORMAT_FUNCTION_CALLING.to_owned(),
        }
    }
}

const DEFAULT_FORMAT_THOUGHT_ACTION: &str = "Every response must be a short discussion followed \
by exactly one command in a fenced code block, like this:\n\nDISCUSSION\nI will list the files \
in the repository first.\n\n```\nls -a\n```";

const DEFAULT_FORMAT_FUNCTION_CALLING: &str = "Every response must call exactly one of the \
provided tools; text without a tool call runs nothing.";

const DEFAULT_NO_ACTION: [&str; 3] = [
    "Your last response contained no command, so nothing was run. {action_format}\n\nWhen the \
task is complete, use the `submit` command.",
    "Your last {count} responses contained no command, so nothing was run. No one reads prose \
and no one will reply to it: only commands make progress. {action_format}\n\nIf the fix is \
complete, use the `submit` command now; otherwise issue the next command you need. Responses \
without a command left before the run stops: {turns_left}.",
    "Still no command ({count} responses in a row). Your next response MUST contain a command. \
{action_format}\n\nResponses without a command left before the run stops: {turns_left}. If the \
task is done, use the `submit` command.",
];

const DEFAULT_QUESTION: [&str; 3] = [
    "You asked a question, but no human is reading this conversation, so no one will answer it. \
Make the most reasonable assumption, say in one sentence what you assumed, and continue. \
{action_format}\n\nWhen the task is complete, use the `submit` command.",
    "There is still no one to answer questions: you are working alone. Pick the interpretation \
of the issue that best fits the code and its tests, and act on it now. {action_format}\n\n\
Responses without a command left before the run stops: {turns_left}.",
    "Questions will not be answered ({count} responses in a row without a command). Your next \
response MUST contain a command. {action_format}\n\nResponses without a command left before the \
run stops: {turns_left}. If the task is done, use the `submit` command.",
];

const DEFAULT_STALL: [&str; 3] = [
    "Your last {repeats} responses were identical. Repeating a response gives the same result, \
so try a different approach: re-read the last output, look at another file or function, or \
search for something else.",
    "You are still repeating yourself ({repeats} identical responses in a row). Do not send that \
response again. Choose a command you have not tried yet; if the fix is already complete, use \
the `submit` command.",
    "You are stuck in a loop: {repeats} identical responses in a row. Your next response must be \
different from the last one. Run a command you have not run before, or use the `submit` command \
if the task is done.",
];

const DEFAULT_APPROACHING_LIMIT: [&str; 3] = [
    "Budget check: {remaining} left before this run stops. Plan to finish soon: complete the \
fix, check it, and use the `submit` command.",
    "Only {remaining} left. Do not start new investigations: make the smallest change that fixes \
the issue and use the `submit` command.",
    "Almost out of budget: {remaining} left. Use the `submit` command now.",
];

const DEFAULT_TIMEOUT: [&str; 1] = [
    "Your last {timeouts} commands timed out. If the next command also times out, the run stops \
({max_timeouts} timeouts in a row end it). Run something that finishes quickly: avoid commands \
that wait for input or never end, run a single test instead of the whole suite, or bound the \
command with `timeout`.",
];
