//! The stop decider: a pure function from one turn's outcome and the loop's counters to
//! "continue, maybe with a nudge" or "stop, with an exit status".
//!
//! The loop calls [`decide`] with the state from *before* the turn, then [`LoopState::record`] to
//! get the state for the next turn. Nothing here does I/O or reads a clock: cost and elapsed time
//! arrive in the [`TurnOutcome`].

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::config::agent::{Limits, NudgeTexts};
pub use crate::protocol::ExitStatus;
use crate::text::{Braces, fill};

/// How the model writes its actions; the no-action nudges remind it of this format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionFormat {
    /// A discussion, then the command in the last fenced code block.
    #[default]
    ThoughtAction,
    /// One tool (function) call per response.
    FunctionCalling,
}

/// Everything [`decide`] needs besides the turn and the state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StopPolicy {
    /// The thresholds.
    pub limits: Limits,
    /// The nudge wording.
    pub nudges: NudgeTexts,
    /// Which action format the no-action nudges describe.
    pub action_format: ActionFormat,
}

/// How an executed command ended. None of these stops the run by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandResult {
    /// The command ran and exited 0.
    Completed,
    /// A tool failure: non-zero exit, rejected edit, bad arguments. It is an observation for the
    /// model and never stops the run.
    Failed,
    /// The command ran past its timeout and was interrupted.
    TimedOut,
}

/// What happened in one turn, as the loop saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnKind {
    /// The response held a command and the ACI ran it.
    Executed {
        /// The model's whole response.
        response: String,
        /// How the command ended.
        result: CommandResult,
    },
    /// The response ran `submit`.
    Submitted {
        /// The model's whole response.
        response: String,
    },
    /// The parser rejected the response (malformed block, unknown tool arguments, blocked
    /// command); the loop re-asks with the `format_error` template.
    FormatError {
        /// The model's whole response.
        response: String,
    },
    /// The response was well-formed prose with no command at all, e.g. a question.
    NoAction {
        /// The model's whole response.
        response: String,
    },
    /// The turn ended the run outright: the model layer (`exit_cost`, `exit_context`,
    /// `exit_api`), the sandbox (`exit_environment_error`, `early_exit`), a harness error
    /// (`exit_error`) or a special action (`exit_forfeit`, `exit_command`, `skipped`).
    Ended {
        /// The status to stop with.
        exit_status: ExitStatus,
    },
}

/// One turn's outcome plus the running totals the limits are checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// What happened.
    pub kind: TurnKind,
    /// Instance cost in dollars so far, this turn included.
    pub instance_cost: f64,
    /// Wall-clock time since the instance started, this turn included.
    pub elapsed: Duration,
}

/// The kinds of nudge; escalation counts repeats of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NudgeKind {
    /// The model answered without a command.
    NoAction,
    /// The model answered without a command and asked a question.
    Question,
    /// The model repeated the same response.
    Stall,
    /// A budget is nearly spent.
    ApproachingLimit,
    /// One more timeout stops the run.
    Timeout,
}

/// A message sent with the next request only. The loop never stores it in the history, and only
/// the latest one is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nudge {
    /// What prompted it.
    pub kind: NudgeKind,
    /// 1 the first time this kind fires, 2 the second time in a row, and so on.
    pub level: u32,
    /// The rendered text.
    pub text: String,
}

/// The decider's answer for one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Ask the model again, with this nudge added to the next request only.
    Continue {
        /// The nudge, if any.
        nudge: Option<Nudge>,
    },
    /// End the instance; the loop then autosubmits unless the status is `submitted`.
    Stop {
        /// Why.
        exit_status: ExitStatus,
    },
}

/// The counters the decider needs, carried from turn to turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoopState {
    /// Model responses so far.
    pub steps: u32,
    /// Malformed responses since the last executed command.
    pub format_errors: u32,
    /// Responses without a command since the last executed command.
    pub no_action_turns: u32,
    /// Executed commands in a row that timed out.
    pub consecutive_timeouts: u32,
    /// The last response, whitespace-normalised.
    pub last_response: Option<String>,
    /// How many times in a row `last_response` was sent.
    pub repeats: u32,
    /// The kind of the nudge sent with the last decision, if any.
    pub last_nudge: Option<NudgeKind>,
    /// That nudge's level.
    pub nudge_streak: u32,
}

impl LoopState {
    /// The state after `turn` and the `decision` [`decide`] made for it.
    #[must_use]
    pub fn record(&self, turn: &TurnOutcome, decision: &Decision) -> LoopState {
        let mut next = self.after_turn(turn);
        match decision {
            Decision::Continue { nudge: Some(nudge) } => {
                next.last_nudge = Some(nudge.kind);
                next.nudge_streak = nudge.level;
            }
            Decision::Continue { nudge: None } | Decision::Stop { .. } => {
                next.last_nudge = None;
                next.nudge_streak = 0;
            }
        }
        next
    }

    /// The counters after `turn`, with the nudge streak untouched.
    fn after_turn(&self, turn: &TurnOutcome) -> LoopState {
        let mut next = self.clone();
        let response = match &turn.kind {
            TurnKind::Ended { .. } => return next,
            TurnKind::Executed { response, result } => {
                next.format_errors = 0;
                next.no_action_turns = 0;
                next.consecutive_timeouts = match result {
                    CommandResult::TimedOut => self.consecutive_timeouts.saturating_add(1),
                    CommandResult::Completed | CommandResult::Failed => 0,
                };
                response
            }
            TurnKind::Submitted { response } => {
                next.format_errors = 0;
                next.no_action_turns = 0;
                response
            }
            TurnKind::FormatError { response } => {
                next.format_errors = self.format_errors.saturating_add(1);
                response
            }
            TurnKind::NoAction { response } => {
                next.no_action_turns = self.no_action_turns.saturating_add(1);
                response
            }
        };
        next.steps = self.steps.saturating_add(1);
        let normalised = normalise_whitespace(response);
        if next.last_response.as_deref() == Some(normalised.as_str()) {
            next.repeats = self.repeats.saturating_add(1);
        } else {
            next.last_response = Some(normalised);
            next.repeats = 1;
        }
        next
    }
}

/// Decides what follows `turn`, given the `state` from before it.
///
/// Stop checks, first match wins: the turn ended the run; `submitted`; `max_requeries` format
/// errors; `max_no_action_turns` responses without a command (`exit_format`);
/// `max_consecutive_timeouts`; `max_steps`; `max_cost`; `max_wall_time_secs` (each limit is
/// reached when the count equals it). Otherwise at most one nudge, first match wins: one timeout
/// left; no action (or a question); stall; approaching limits. Tool failures never stop the run.
#[must_use]
pub fn decide(turn: &TurnOutcome, state: &LoopState, policy: &StopPolicy) -> Decision {
    let after = state.after_turn(turn);
    if let Some(exit_status) = stop_status(turn, &after, &policy.limits) {
        return Decision::Stop { exit_status };
    }
    let variables = variables(turn, &after, policy);
    let nudge = nudge_candidates(turn, &after, &policy.limits)
        .into_iter()
        .find_map(|kind| {
            let level = match state.last_nudge {
                Some(last) if last == kind => state.nudge_streak.saturating_add(1),
                _ => 1,
            };
            let template = level_text(texts_for(kind, &policy.nudges), level)?;
            let text = fill(template, &variables, Braces::Literal);
            Some(Nudge { kind, level, text })
        });
    Decision::Continue { nudge }
}

/// The status to stop with after `turn`, if any; `after` holds the counters including `turn`.
fn stop_status(turn: &TurnOutcome, after: &LoopState, limits: &Limits) -> Option<ExitStatus> {
    match turn.kind {
        TurnKind::Ended { exit_status } => return Some(exit_status),
        TurnKind::Submitted { .. } => return Some(ExitStatus::Submitted),
        _ => {}
    }
    let checks = [
        (
            after.format_errors >= limits.max_requeries.max(1),
            ExitStatus::ExitFormat,
        ),
        (
            after.no_action_turns >= limits.max_no_action_turns.max(1),
            ExitStatus::ExitFormat,
        ),
        (
            after.consecutive_timeouts >= limits.max_consecutive_timeouts.max(1),
            ExitStatus::ExitCommandTimeout,
        ),
        (
            limits.max_steps > 0 && after.steps >= limits.max_steps,
            ExitStatus::ExitStepLimit,
        ),
        (
            limits.max_cost > 0.0 && turn.instance_cost >= limits.max_cost,
            ExitStatus::ExitCost,
        ),
        (
            limits.max_wall_time_secs > 0
                && turn.elapsed >= Duration::from_secs(limits.max_wall_time_secs),
            ExitStatus::ExitTotalExecutionTime,
        ),
    ];
    checks
        .into_iter()
        .find_map(|(reached, status)| reached.then_some(status))
}

/// The nudge kinds that apply after `turn`, most important first.
fn nudge_candidates(turn: &TurnOutcome, after: &LoopState, limits: &Limits) -> Vec<NudgeKind> {
    let mut kinds = Vec::new();
    if let TurnKind::Executed {
        result: CommandResult::TimedOut,
        ..
    } = turn.kind
        && after.consecutive_timeouts.saturating_add(1) >= limits.max_consecutive_timeouts
    {
        kinds.push(NudgeKind::Timeout);
    }
    if let TurnKind::NoAction { response } = &turn.kind {
        kinds.push(if asks_question(response) {
            NudgeKind::Question
        } else {
            NudgeKind::NoAction
        });
    }
    if limits.stall_repeats > 0 && after.repeats >= limits.stall_repeats {
        kinds.push(NudgeKind::Stall);
    }
    if !budgets_past_warning(turn, after, limits).is_empty() {
        kinds.push(NudgeKind::ApproachingLimit);
    }
    kinds
}

/// Whether a response without a command asks something: some line ends with `?`.
fn asks_question(response: &str) -> bool {
    response.lines().any(|line| line.trim_end().ends_with('?'))
}

/// The budgets past `warn_at_fraction`, each described as what is left, e.g. `2 of 10 steps`.
fn budgets_past_warning(turn: &TurnOutcome, after: &LoopState, limits: &Limits) -> Vec<String> {
    let fraction = limits.warn_at_fraction;
    let mut left = Vec::new();
    if limits.max_steps > 0 && f64::from(after.steps) >= fraction * f64::from(limits.max_steps) {
        let steps = limits.max_steps.saturating_sub(after.steps);
        let unit = if limits.max_steps == 1 {
            "step"
        } else {
            "steps"
        };
        left.push(format!("{steps} of {} {unit}", limits.max_steps));
    }
    if limits.max_cost > 0.0 && turn.instance_cost >= fraction * limits.max_cost {
        let dollars = (limits.max_cost - turn.instance_cost).max(0.0);
        left.push(format!(
            "${dollars:.2} of the ${:.2} cost budget",
            limits.max_cost
        ));
    }
    let wall = limits.max_wall_time_secs;
    if wall > 0 && turn.elapsed.as_secs_f64() >= fraction * wall as f64 {
        let seconds = wall.saturating_sub(turn.elapsed.as_secs());
        left.push(format!("{seconds} of {wall} seconds of wall-clock time"));
    }
    left
}

/// The placeholder values available to every nudge text.
fn variables(
    turn: &TurnOutcome,
    after: &LoopState,
    policy: &StopPolicy,
) -> Vec<(&'static str, String)> {
    let limits = &policy.limits;
    let action_format = match policy.action_format {
        ActionFormat::ThoughtAction => &policy.nudges.action_format_thought_action,
        ActionFormat::FunctionCalling => &policy.nudges.action_format_function_calling,
    };
    let turns_left = limits
        .max_no_action_turns
        .max(1)
        .saturating_sub(after.no_action_turns);
    vec![
        ("action_format", action_format.clone()),
        ("count", after.no_action_turns.to_string()),
        ("turns_left", turns_left.to_string()),
        ("repeats", after.repeats.to_string()),
        (
            "remaining",
            budgets_past_warning(turn, after, limits).join(" and "),
        ),
        ("timeouts", after.consecutive_timeouts.to_string()),
        ("max_timeouts", limits.max_consecutive_timeouts.to_string()),
    ]
}

fn texts_for(kind: NudgeKind, texts: &NudgeTexts) -> &[String] {
    match kind {
        NudgeKind::NoAction => &texts.no_action,
        NudgeKind::Question => &texts.question,
        NudgeKind::Stall => &texts.stall,
        NudgeKind::ApproachingLimit => &texts.approaching_limit,
        NudgeKind::Timeout => &texts.timeout,
    }
}

/// The text for escalation `level` (1-based): the last one once the levels run out, `None` when
/// the kind has no texts.
fn level_text(levels: &[String], level: u32) -> Option<&str> {
    let index = usize::try_from(level.saturating_sub(1)).unwrap_or(usize::MAX);
    levels
        .get(index)
        .or_else(|| levels.last())
        .map(String::as_str)
}

/// Collapses every run of whitespace to one space and trims the ends, so responses that differ
/// only in spacing count as the same for stall detection.
fn normalise_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
