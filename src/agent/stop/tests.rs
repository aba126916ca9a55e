use std::time::Duration;

use super::*;
use crate::protocol::RecordedStatus;

// ---------------------------------------------------------------------------------------------
// Turn builders

fn turn(kind: TurnKind) -> TurnOutcome {
    TurnOutcome {
        kind,
        instance_cost: 0.0,
        elapsed: Duration::ZERO,
    }
}

fn ran(response: &str) -> TurnOutcome {
    executed(response, CommandResult::Completed)
}

fn failed(response: &str) -> TurnOutcome {
    executed(response, CommandResult::Failed)
}

fn timed_out(response: &str) -> TurnOutcome {
    executed(response, CommandResult::TimedOut)
}

fn executed(response: &str, result: CommandResult) -> TurnOutcome {
    turn(TurnKind::Executed {
        response: response.to_owned(),
        result,
    })
}

fn malformed(response: &str) -> TurnOutcome {
    turn(TurnKind::FormatError {
        response: response.to_owned(),
    })
}

fn prose(response: &str) -> TurnOutcome {
    turn(TurnKind::NoAction {
        response: response.to_owned(),
    })
}

fn submit() -> TurnOutcome {
    turn(TurnKind::Submitted {
        response: "```\nsubmit\n```".to_owned(),
    })
}

fn ended(exit_status: ExitStatus) -> TurnOutcome {
    turn(TurnKind::Ended { exit_status })
}

fn costing(mut outcome: TurnOutcome, dollars: f64) -> TurnOutcome {
    outcome.instance_cost = dollars;
    outcome
}

fn after_secs(mut outcome: TurnOutcome, seconds: u64) -> TurnOutcome {
    outcome.elapsed = Duration::from_secs(seconds);
    outcome
}

/// `count` executed commands, all different.
fn distinct_commands(count: usize) -> Vec<TurnOutcome> {
    (0..count).map(|i| ran(&format!("command {i}"))).collect()
}

// ---------------------------------------------------------------------------------------------
// The table

/// A decision with the nudge text left out, so rows stay short; texts have their own tests.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expected {
    Stop(ExitStatus),
    Continue,
    Nudge(NudgeKind, u32),
}

struct Row {
    name: String,
    policy: StopPolicy,
    before: Vec<TurnOutcome>,
    turn: TurnOutcome,
    expected: Expected,
}

fn row(name: &str, before: Vec<TurnOutcome>, turn: TurnOutcome, expected: Expected) -> Row {
    Row {
        name: name.to_owned(),
        policy: StopPolicy::default(),
        before,
        turn,
        expected,
    }
}

fn with_limits(mut row: Row, change: impl FnOnce(&mut Limits)) -> Row {
    change(&mut row.policy.limits);
    row
}

/// Feeds `before` through decide + record (each must continue), then decides on `turn`.
fn run(row: &Row) -> Expected {
    let mut state = LoopState::default();
    for (index, earlier) in row.before.iter().enumerate() {
        let decision = decide(earlier, &state, &row.policy);
        assert!(
            matches!(decision, Decision::Continue { .. }),
            "row {:?}: earlier turn {index} stopped: {decision:?}",
            row.name
        );
        state = state.record(earlier, &decision);
    }
    match decide(&row.turn, &state, &row.policy) {
        Decision::Stop { exit_status } => Expected::Stop(exit_status),
        Decision::Continue { nudge: None } => Expected::Continue,
        Decision::Continue { nudge: Some(nudge) } => Expected::Nudge(nudge.kind, nudge.level),
    }
}

fn assert_rows(rows: Vec<Row>) {
    let expected: Vec<(String, Expected)> =
        rows.iter().map(|r| (r.name.clone(), r.expected)).collect();
    let actual: Vec<(String, Expected)> = rows.iter().map(|r| (r.name.clone(), run(r))).collect();
    assert_eq!(actual, expected);
}

use Expected::{Continue, Nudge, Stop};

#[test]
fn submission_and_ended_turns_stop_with_their_status() {
    let mut rows = vec![
        row(
            "a submission stops as submitted",
            vec![],
            submit(),
            Stop(ExitStatus::Submitted),
        ),
        with_limits(
            row(
                "a submission on the last step is still submitted",
                distinct_commands(2),
                submit(),
                Stop(ExitStatus::Submitted),
            ),
            |l| l.max_steps = 3,
        ),
        row(
            "a submission after two format errors is still submitted",
            vec![malformed("a"), malformed("b")],
            submit(),
            Stop(ExitStatus::Submitted),
        ),
        row(
            "an ended turn over the cost limit keeps its own status",
            vec![],
            costing(ended(ExitStatus::ExitApi), 50.0),
            Stop(ExitStatus::ExitApi),
        ),
    ];
    for status in ExitStatus::ALL {
        rows.push(row(
            &format!("an ended turn stops with {status}"),
            vec![ran("ls")],
            ended(status),
            Stop(status),
        ));
    }
    assert_rows(rows);
}

#[test]
fn tool_failures_never_stop_the_run() {
    let ten_failures: Vec<TurnOutcome> =
        (0..9).map(|i| failed(&format!("cat missing{i}"))).collect();
    assert_rows(vec![
        row("an executed command continues", vec![], ran("ls"), Continue),
        row(
            "a failed command continues",
            vec![],
            failed("cat nope"),
            Continue,
        ),
        row(
            "ten failed commands in a row continue",
            ten_failures,
            failed("cat missing9"),
            Continue,
        ),
        row(
            "nine identical failed commands only escalate the stall nudge",
            vec![failed("edit 1:2"); 8],
            failed("edit 1:2"),
            Nudge(NudgeKind::Stall, 7),
        ),
        row(
            "a failed command resets the timeout counter",
            vec![timed_out("sleep 1"), failed("false")],
            timed_out("sleep 2"),
            Continue,
        ),
    ]);
}

#[test]
fn format_errors_stop_at_max_requeries() {
    assert_rows(vec![
        row(
            "one format error continues",
            vec![],
            malformed("a"),
            Continue,
        ),
        row(
            "two format errors continue",
            vec![malformed("a")],
            malformed("b"),
            Continue,
        ),
        row(
            "the third format error stops with exit_format",
            vec![malformed("a"), malformed("b")],
            malformed("c"),
            Stop(ExitStatus::ExitFormat),
        ),
        row(
            "an executed command resets the format error counter",
            vec![malformed("a"), malformed("b"), ran("ls")],
            malformed("c"),
            Continue,
        ),
        row(
            "a failed command also resets the format error counter",
            vec![malformed("a"), malformed("b"), failed("false")],
            malformed("c"),
            Continue,
        ),
        row(
            "a response without a command does not reset the format error counter",
            vec![malformed("a"), malformed("b"), prose("hmm")],
            malformed("c"),
            Stop(ExitStatus::ExitFormat),
        ),
        row(
            "format errors do not count toward the no-action limit",
            vec![prose("hmm"), malformed("a"), malformed("b")],
            prose("well"),
            Nudge(NudgeKind::NoAction, 1),
        ),
        with_limits(
            row(
                "max_requeries 1 stops on the first format error",
                vec![],
                malformed("a"),
                Stop(ExitStatus::ExitFormat),
            ),
            |l| l.max_requeries = 1,
        ),
        with_limits(
            row(
                "max_requeries 0 acts as 1",
                vec![],
                malformed("a"),
                Stop(ExitStatus::ExitFormat),
            ),
            |l| l.max_requeries = 0,
        ),
    ]);
}

#[test]
fn responses_without_a_command_are_nudged_then_stop_with_exit_format() {
    assert_rows(vec![
        row(
            "prose gets the no-action nudge",
            vec![],
            prose("I will look."),
            Nudge(NudgeKind::NoAction, 1),
        ),
        row(
            "a second prose response escalates to level 2",
            vec![prose("a")],
            prose("b"),
            Nudge(NudgeKind::NoAction, 2),
        ),
        row(
            "the third prose response stops with exit_format",
            vec![prose("a"), prose("b")],
            prose("c"),
            Stop(ExitStatus::ExitFormat),
        ),
        row(
            "a question gets the question nudge",
            vec![],
            prose("Shall I edit it?\n"),
            Nudge(NudgeKind::Question, 1),
        ),
        row(
            "a second question escalates to level 2",
            vec![prose("Which file?")],
            prose("Is it utils.py?"),
            Nudge(NudgeKind::Question, 2),
        ),
        row(
            "a question after prose starts the question nudge at level 1",
            vec![prose("thinking")],
            prose("Should I run the tests?"),
            Nudge(NudgeKind::Question, 1),
        ),
        row(
            "a question mark inside a line is not a question",
            vec![],
            prose("The regex a?b matches."),
            Nudge(NudgeKind::NoAction, 1),
        ),
        with_limits(
            row(
                "levels keep counting past the last text",
                vec![prose("a"), prose("b"), prose("c"), prose("d")],
                prose("e"),
                Nudge(NudgeKind::NoAction, 5),
            ),
            |l| l.max_no_action_turns = 6,
        ),
        row(
            "an executed command resets the no-action counter and the escalation",
            vec![prose("a"), prose("b"), ran("ls")],
            prose("c"),
            Nudge(NudgeKind::NoAction, 1),
        ),
        row(
            "format errors do not reset the no-action counter",
            vec![prose("a"), prose("b"), malformed("x")],
            prose("c"),
            Stop(ExitStatus::ExitFormat),
        ),
        row(
            "a submission after prose stops as submitted",
            vec![prose("a"), prose("b")],
            submit(),
            Stop(ExitStatus::Submitted),
        ),
        with_limits(
            row(
                "identical prose gets the no-action nudge rather than the stall nudge",
                vec![prose("same"), prose("same")],
                prose("same"),
                Nudge(NudgeKind::NoAction, 3),
            ),
            |l| l.max_no_action_turns = 5,
        ),
    ]);
}

#[test]
fn repeated_responses_get_the_stall_nudge() {
    assert_rows(vec![
        row(
            "two identical responses are not a stall",
            vec![ran("ls")],
            ran("ls"),
            Continue,
        ),
        row(
            "three identical responses get the stall nudge",
            vec![ran("ls"), ran("ls")],
            ran("ls"),
            Nudge(NudgeKind::Stall, 1),
        ),
        row(
            "a fourth identical response escalates to level 2",
            vec![ran("ls"), ran("ls"), ran("ls")],
            ran("ls"),
            Nudge(NudgeKind::Stall, 2),
        ),
        row(
            "responses that differ only in whitespace are identical",
            vec![ran("ls  -a\n"), ran("ls -a")],
            ran(" ls\t-a "),
            Nudge(NudgeKind::Stall, 1),
        ),
        row(
            "a different response resets the stall count",
            vec![ran("ls"), ran("ls"), ran("pwd")],
            ran("ls"),
            Continue,
        ),
        with_limits(
            row(
                "stall_repeats 0 turns stall detection off",
                vec![ran("ls"); 5],
                ran("ls"),
                Continue,
            ),
            |l| l.stall_repeats = 0,
        ),
        with_limits(
            row(
                "stall_repeats 2 nudges on the second identical response",
                vec![ran("ls")],
                ran("ls"),
                Nudge(NudgeKind::Stall, 1),
            ),
            |l| l.stall_repeats = 2,
        ),
    ]);
}

#[test]
fn consecutive_timeouts_warn_once_then_stop() {
    assert_rows(vec![
        row(
            "one timeout continues",
            vec![],
            timed_out("sleep 99"),
            Continue,
        ),
        row(
            "a second timeout in a row warns that one is left",
            vec![timed_out("a")],
            timed_out("b"),
            Nudge(NudgeKind::Timeout, 1),
        ),
        row(
            "the third timeout in a row stops with exit_command_timeout",
            vec![timed_out("a"), timed_out("b")],
            timed_out("c"),
            Stop(ExitStatus::ExitCommandTimeout),
        ),
        row(
            "a completed command resets the timeout counter",
            vec![timed_out("a"), timed_out("b"), ran("ls")],
            timed_out("c"),
            Continue,
        ),
        row(
            "format errors between timeouts do not reset the counter",
            vec![timed_out("a"), malformed("x")],
            timed_out("b"),
            Nudge(NudgeKind::Timeout, 1),
        ),
        with_limits(
            row(
                "with a limit of five the fourth timeout warns",
                vec![timed_out("a"), timed_out("b"), timed_out("c")],
                timed_out("d"),
                Nudge(NudgeKind::Timeout, 1),
            ),
            |l| l.max_consecutive_timeouts = 5,
        ),
        with_limits(
            row(
                "the timeout warning outranks the stall nudge",
                vec![timed_out("same"), timed_out("same")],
                timed_out("same"),
                Nudge(NudgeKind::Timeout, 1),
            ),
            |l| l.max_consecutive_timeouts = 4,
        ),
    ]);
}

#[test]
fn the_step_limit_warns_from_80_percent_and_stops_at_the_limit() {
    let ten = |l: &mut Limits| l.max_steps = 10;
    let mut eight_then_malformed = distinct_commands(8);
    eight_then_malformed.push(malformed("x"));
    assert_rows(vec![
        with_limits(
            row(
                "step 7 of 10 continues",
                distinct_commands(6),
                ran("go"),
                Continue,
            ),
            ten,
        ),
        with_limits(
            row(
                "step 8 of 10 warns",
                distinct_commands(7),
                ran("go"),
                Nudge(NudgeKind::ApproachingLimit, 1),
            ),
            ten,
        ),
        with_limits(
            row(
                "step 9 of 10 escalates the warning",
                distinct_commands(8),
                ran("go"),
                Nudge(NudgeKind::ApproachingLimit, 2),
            ),
            ten,
        ),
        with_limits(
            row(
                "step 10 of 10 stops with exit_step_limit",
                distinct_commands(9),
                ran("go"),
                Stop(ExitStatus::ExitStepLimit),
            ),
            ten,
        ),
        with_limits(
            row(
                "format errors count as steps",
                eight_then_malformed,
                malformed("y"),
                Stop(ExitStatus::ExitStepLimit),
            ),
            ten,
        ),
        with_limits(
            row(
                "the no-action nudge outranks the step warning",
                distinct_commands(8),
                prose("hm"),
                Nudge(NudgeKind::NoAction, 1),
            ),
            ten,
        ),
        with_limits(
            row(
                "a third format error on the last step stops with exit_format",
                vec![malformed("a"), malformed("b")],
                malformed("c"),
                Stop(ExitStatus::ExitFormat),
            ),
            |l| l.max_steps = 3,
        ),
        with_limits(
            row(
                "max_steps 0 means no step limit",
                distinct_commands(299),
                ran("go"),
                Continue,
            ),
            |l| l.max_steps = 0,
        ),
    ]);
}

#[test]
fn the_cost_limit_warns_from_80_percent_and_stops_at_the_limit() {
    let ten_dollars = |l: &mut Limits| l.max_cost = 10.0;
    assert_rows(vec![
        with_limits(
            row(
                "cost under 80 percent continues",
                vec![],
                costing(ran("ls"), 7.99),
                Continue,
            ),
            ten_dollars,
        ),
        with_limits(
            row(
                "cost at 80 percent warns",
                vec![],
                costing(ran("ls"), 8.0),
                Nudge(NudgeKind::ApproachingLimit, 1),
            ),
            ten_dollars,
        ),
        with_limits(
            row(
                "cost exactly at the limit stops with exit_cost",
                vec![],
                costing(ran("ls"), 10.0),
                Stop(ExitStatus::ExitCost),
            ),
            ten_dollars,
        ),
        with_limits(
            row(
                "cost over the limit stops with exit_cost",
                vec![],
                costing(ran("ls"), 12.5),
                Stop(ExitStatus::ExitCost),
            ),
            ten_dollars,
        ),
        with_limits(
            row(
                "max_cost 0 means no cost limit",
                vec![],
                costing(ran("ls"), 1000.0),
                Continue,
            ),
            |l| l.max_cost = 0.0,
        ),
    ]);
}

#[test]
fn the_wall_time_limit_warns_from_80_percent_and_stops_at_the_limit() {
    assert_rows(vec![
        row(
            "2879 of 3600 seconds continues",
            vec![],
            after_secs(ran("ls"), 2879),
            Continue,
        ),
        row(
            "2880 of 3600 seconds warns",
            vec![],
            after_secs(ran("ls"), 2880),
            Nudge(NudgeKind::ApproachingLimit, 1),
        ),
        row(
            "3600 of 3600 seconds stops with exit_total_execution_time",
            vec![],
            after_secs(ran("ls"), 3600),
            Stop(ExitStatus::ExitTotalExecutionTime),
        ),
        with_limits(
            row(
                "max_wall_time_secs 0 means no wall-time limit",
                vec![],
                after_secs(ran("ls"), 99_999),
                Continue,
            ),
            |l| l.max_wall_time_secs = 0,
        ),
    ]);
}

#[test]
fn an_empty_text_list_disables_a_nudge_and_the_next_candidate_is_used() {
    let mut disabled = with_limits(
        row(
            "no-action disabled falls through to the step warning",
            distinct_commands(7),
            prose("hm"),
            Nudge(NudgeKind::ApproachingLimit, 1),
        ),
        |l| l.max_steps = 10,
    );
    disabled.policy.nudges.no_action = Vec::new();
    let mut all_disabled = row(
        "no texts at all gives no nudge",
        vec![],
        prose("hm"),
        Continue,
    );
    all_disabled.policy.nudges.no_action = Vec::new();
    assert_rows(vec![disabled, all_disabled]);
}

// ---------------------------------------------------------------------------------------------
// State

#[test]
fn record_counts_the_turn_and_keeps_the_nudge_kind_and_level() {
    let policy = StopPolicy::default();
    let turn = prose("I am  not sure.");
    let decision = decide(&turn, &LoopState::default(), &policy);
    let state = LoopState::default().record(&turn, &decision);
    assert_eq!(
        state,
        LoopState {
            steps: 1,
            format_errors: 0,
            no_action_turns: 1,
            consecutive_timeouts: 0,
            last_response: Some("I am not sure.".to_owned()),
            repeats: 1,
            last_nudge: Some(NudgeKind::NoAction),
            nudge_streak: 1,
        }
    );
}

#[test]
fn record_clears_the_nudge_streak_when_no_nudge_was_sent() {
    let state = LoopState {
        last_nudge: Some(NudgeKind::Stall),
        nudge_streak: 4,
        ..LoopState::default()
    };
    let turn = ran("ls");
    let next = state.record(&turn, &Decision::Continue { nudge: None });
    assert_eq!(
        next,
        LoopState {
            steps: 1,
            last_response: Some("ls".to_owned()),
            repeats: 1,
            ..LoopState::default()
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Texts

fn nudge_text(policy: &StopPolicy, before: &[TurnOutcome], last: &TurnOutcome) -> Option<String> {
    let mut state = LoopState::default();
    for earlier in before {
        let decision = decide(earlier, &state, policy);
        state = state.record(earlier, &decision);
    }
    match decide(last, &state, policy) {
        Decision::Continue { nudge } => nudge.map(|n| n.text),
        Decision::Stop { .. } => None,
    }
}

#[test]
fn the_no_action_nudge_shows_the_fenced_block_format_for_thought_action() {
    let text = nudge_text(&StopPolicy::default(), &[], &prose("Let me think."));
    assert_eq!(
        text.as_deref(),
        Some(
            "Your last response contained no command, so nothing was run. Every response must be \
a short discussion followed by exactly one command in a fenced code block, like this:\n\n\
DISCUSSION\nI will list the files in the repository first.\n\n```\nls -a\n```\n\nWhen the task \
is complete, use the `submit` command."
        )
    );
}

#[test]
fn the_no_action_nudge_asks_for_a_tool_call_for_function_calling() {
    let policy = StopPolicy {
        action_format: ActionFormat::FunctionCalling,
        ..StopPolicy::default()
    };
    let text = nudge_text(&policy, &[], &prose("Let me think."));
    assert_eq!(
        text.as_deref(),
        Some(
            "Your last response contained no command, so nothing was run. Every response must \
call exactly one of the provided tools; text without a tool call runs nothing.\n\nWhen the task \
is complete, use the `submit` command."
        )
    );
}

#[test]
fn the_second_no_action_nudge_names_the_count_and_the_turns_left() {
    let policy = StopPolicy {
        action_format: ActionFormat::FunctionCalling,
        ..StopPolicy::default()
    };
    let text = nudge_text(&policy, &[prose("a")], &prose("b"));
    assert_eq!(
        text.as_deref(),
        Some(
            "Your last 2 responses contained no command, so nothing was run. No one reads prose \
and no one will reply to it: only commands make progress. Every response must call exactly one \
of the provided tools; text without a tool call runs nothing.\n\nIf the fix is complete, use the \
`submit` command now; otherwise issue the next command you need. Responses without a command \
left before the run stops: 1."
        )
    );
}

#[test]
fn the_question_nudge_says_no_one_will_answer() {
    let policy = StopPolicy {
        action_format: ActionFormat::FunctionCalling,
        ..StopPolicy::default()
    };
    let text = nudge_text(&policy, &[], &prose("Do you want me to add a test?"));
    assert_eq!(
        text.as_deref(),
        Some(
            "You asked a question, but no human is reading this conversation, so no one will \
answer it. Make the most reasonable assumption, say in one sentence what you assumed, and \
continue. Every response must call exactly one of the provided tools; text without a tool call \
runs nothing.\n\nWhen the task is complete, use the `submit` command."
        )
    );
}

#[test]
fn the_stall_nudge_names_the_repeats_and_escalates() {
    let policy = StopPolicy::default();
    let first = nudge_text(&policy, &[ran("ls"), ran("ls")], &ran("ls"));
    let second = nudge_text(&policy, &[ran("ls"), ran("ls"), ran("ls")], &ran("ls"));
    assert_eq!(
        (first.as_deref(), second.as_deref()),
        (
            Some(
                "Your last 3 responses were identical. Repeating a response gives the same \
result, so try a different approach: re-read the last output, look at another file or function, \
or search for something else."
            ),
            Some(
                "You are still repeating yourself (4 identical responses in a row). Do not send \
that response again. Choose a command you have not tried yet; if the fix is already complete, \
use the `submit` command."
            ),
        )
    );
}

#[test]
fn the_approaching_limit_nudge_lists_every_budget_past_the_warning() {
    let policy = StopPolicy {
        limits: Limits {
            max_steps: 10,
            max_cost: 10.0,
            ..Limits::default()
        },
        ..StopPolicy::default()
    };
    let eighth = nudge_text(&policy, &distinct_commands(7), &costing(ran("go"), 8.5));
    let ninth = nudge_text(&policy, &distinct_commands(8), &ran("go"));
    assert_eq!(
        (eighth.as_deref(), ninth.as_deref()),
        (
            Some(
                "Budget check: 2 of 10 steps and $1.50 of the $10.00 cost budget left before \
this run stops. Plan to finish soon: complete the fix, check it, and use the `submit` command."
            ),
            Some(
                "Only 1 of 10 steps left. Do not start new investigations: make the smallest \
change that fixes the issue and use the `submit` command."
            ),
        )
    );
}

#[test]
fn the_approaching_limit_nudge_describes_wall_time_in_seconds() {
    let text = nudge_text(&StopPolicy::default(), &[], &after_secs(ran("go"), 3000));
    assert_eq!(
        text.as_deref(),
        Some(
            "Budget check: 600 of 3600 seconds of wall-clock time left before this run stops. \
Plan to finish soon: complete the fix, check it, and use the `submit` command."
        )
    );
}

#[test]
fn the_timeout_nudge_says_one_more_timeout_stops_the_run() {
    let text = nudge_text(
        &StopPolicy::default(),
        &[timed_out("pytest")],
        &timed_out("pytest -x"),
    );
    assert_eq!(
        text.as_deref(),
        Some(
            "Your last 2 commands timed out. If the next command also times out, the run stops \
(3 timeouts in a row end it). Run something that finishes quickly: avoid commands that wait for \
input or never end, run a single test instead of the whole suite, or bound the command with \
`timeout`."
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Exit statuses and config

#[test]
fn exit_statuses_have_the_sweagent_names() {
    let names: Vec<&str> = ExitStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "submitted",
            "exit_cost",
            "exit_context",
            "exit_format",
            "exit_api",
            "exit_error",
            "exit_environment_error",
            "exit_command_timeout",
            "exit_total_execution_time",
            "exit_step_limit",
            "exit_disk_quota",
            "exit_forfeit",
            "exit_command",
            "early_exit",
            "skipped",
        ]
    );
}

#[test]
fn every_status_but_submitted_autosubmits_as_submitted_with_the_status() {
    let autosubmitting: Vec<String> = ExitStatus::ALL
        .iter()
        .filter(|s| s.autosubmits())
        .map(|s| RecordedStatus::after(*s, true).to_string())
        .collect();
    assert_eq!(autosubmitting.len(), ExitStatus::ALL.len() - 1);
    assert_eq!(
        (
            RecordedStatus::after(ExitStatus::ExitCost, true).to_string(),
            ExitStatus::Submitted.autosubmits(),
            ExitStatus::ExitStepLimit.to_string(),
        ),
        (
            "submitted (exit_cost)".to_owned(),
            false,
            "exit_step_limit".to_owned()
        )
    );
}

#[test]
fn an_empty_config_object_gives_the_documented_limits() {
    let limits: Limits = serde_json::from_str("{}").unwrap();
    assert_eq!(
        limits,
        Limits {
            max_steps: 250,
            // Not read from config (it comes from model.per_instance_cost_limit, $3 by default).
            max_cost: 3.0,
            max_wall_time_secs: 3600,
            // SWE-agent's agent.max_requeries.
            max_requeries: 3,
            max_no_action_turns: 3,
            max_consecutive_timeouts: 3,
            stall_repeats: 3,
            warn_at_fraction: 0.8,
        }
    );
    let error = serde_json::from_str::<Limits>(r#"{"max_cost": 9.0}"#).unwrap_err();
    assert!(
        error.to_string().contains("unknown field `max_cost`"),
        "max_cost is not a config key: {error}"
    );
}

#[test]
fn an_empty_config_object_gives_the_documented_nudge_texts() {
    let texts: NudgeTexts = serde_json::from_str("{}").unwrap();
    let levels = [
        ("no_action", &texts.no_action),
        ("question", &texts.question),
        ("stall", &texts.stall),
        ("approaching_limit", &texts.approaching_limit),
        ("timeout", &texts.timeout),
    ]
    .map(|(name, levels)| (name, levels.len()));
    assert_eq!(
        levels,
        [
            ("no_action", 3),
            ("question", 3),
            ("stall", 3),
            ("approaching_limit", 3),
            ("timeout", 1)
        ]
    );
    // Each kind's first level, with the placeholders it documents.
    let starts = |text: &str, prefix: &str, placeholders: &[&str]| {
        assert!(text.starts_with(prefix), "{text}");
        for placeholder in placeholders {
            assert!(
                text.contains(placeholder),
                "{placeholder} missing in {text}"
            );
        }
    };
    starts(
        &texts.no_action[0],
        "Your last response contained no command, so nothing was run. ",
        &["{action_format}"],
    );
    starts(
        &texts.no_action[1],
        "Your last {count} responses contained no command",
        &["{action_format}", "{turns_left}"],
    );
    starts(
        &texts.question[0],
        "You asked a question, but no human is reading this conversation",
        &["{action_format}"],
    );
    starts(
        &texts.stall[0],
        "Your last {repeats} responses were identical.",
        &[],
    );
    starts(
        &texts.approaching_limit[0],
        "Budget check: {remaining} left before this run stops.",
        &[],
    );
    assert!(
        texts
            .action_format_thought_action
            .ends_with("```\nls -a\n```"),
        "{}",
        texts.action_format_thought_action
    );
    assert_eq!(
        texts.action_format_function_calling,
        "Every response must call exactly one of the provided tools; text without a tool call \
         runs nothing."
    );
}

#[test]
fn a_config_overrides_only_the_texts_it_names() {
    let texts: NudgeTexts = serde_json::from_str(r#"{"stall": ["Stop repeating."]}"#).unwrap();
    assert_eq!(
        texts,
        NudgeTexts {
            stall: vec!["Stop repeating.".to_owned()],
            ..NudgeTexts::default()
        }
    );
}

#[test]
fn unknown_config_keys_are_rejected() {
    let texts = serde_json::from_str::<NudgeTexts>(r#"{"stal": []}"#).map_err(|e| e.to_string());
    let limits = serde_json::from_str::<Limits>(r#"{"max_step": 3}"#).map_err(|e| e.to_string());
    assert_eq!(
        (
            texts.err().map(|e| e.contains("unknown field `stal`")),
            limits.err().map(|e| e.contains("unknown field `max_step`"))
        ),
        (Some(true), Some(true))
    );
}

#[test]
fn action_formats_use_the_parser_names() {
    let formats: Vec<ActionFormat> =
        serde_json::from_str(r#"["thought_action", "function_calling"]"#).unwrap();
    assert_eq!(
        formats,
        vec![ActionFormat::ThoughtAction, ActionFormat::FunctionCalling]
    );
}
