//! Tests for the one-pass trajectory reader: bounded texts with their full text found again,
//! the steps kept, the prompts, and counts that do not depend on how the bytes arrive.

use serde_json::json;

use super::*;
use crate::inspect::summary::{LINT_REJECTION, summarize};

const MONEYFMT: &str = include_str!("../../tests/fixtures/inspect/demo__moneyfmt-1.traj");

fn view(value: &Value) -> TrajectoryView {
    read(value.to_string().as_bytes(), Keep::View).unwrap()
}

fn full(bytes: &[u8], text: &Text) -> String {
    let mut out = Vec::new();
    write_full(&mut std::io::Cursor::new(bytes), &text.parts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_long_string_keeps_its_ends_and_is_found_again_whole() {
    let long: String = (1..=5000).map(|i| format!("line {i} é\n")).collect();
    let traj = json!({"trajectory": [{"action": "cat x", "observation": long}]});
    let bytes = traj.to_string().into_bytes();
    let read = read(&bytes[..], Keep::View).unwrap();
    let observation = &read.steps[0].observation;
    assert_eq!(observation.whole(), None);
    assert!(observation.head().starts_with("line 1 é\nline 2 é\n"));
    assert!(observation.head().len() <= HEAD_BYTES);
    assert!(observation.tail().ends_with("line 4999 é\nline 5000 é\n"));
    assert!(observation.tail().len() <= TAIL_BYTES);
    assert_eq!(
        (observation.bytes, observation.lines, observation.chars),
        (long.len() as u64, 5001, long.chars().count() as u64)
    );
    assert_eq!(full(&bytes, observation), long);
    // A short one is kept whole, and found again the same way.
    let action = &read.steps[0].action;
    assert_eq!(action.whole(), Some("cat x"));
    assert_eq!(full(&bytes, action), "cat x");
}

#[test]
fn the_first_and_the_last_steps_are_kept_and_all_are_counted() {
    let total = FIRST_STEPS + LAST_STEPS + 10;
    let steps: Vec<Value> = (1..=total)
        .map(|n| json!({"action": format!("echo {n}"), "observation": "", "execution_time": 1}))
        .collect();
    let read = view(&json!({ "trajectory": steps }));
    assert_eq!(read.summary.steps, total);
    assert_eq!(read.summary.execution_time, total as f64);
    let numbers: Vec<usize> = read.steps.iter().map(|s| s.number).collect();
    let expected: Vec<usize> = (1..=FIRST_STEPS).chain(FIRST_STEPS + 11..=total).collect();
    assert_eq!(numbers, expected);
    assert_eq!(read.steps[FIRST_STEPS].action.whole(), Some("echo 761"));
    // Asked for one step, it keeps that one only.
    let one = read_steps_only(
        &json!({ "trajectory": (1..=5).map(|n| json!({"action": format!("a{n}")})).collect::<Vec<_>>() }),
        4,
    );
    assert_eq!(one.len(), 1);
    assert_eq!((one[0].number, one[0].action.whole()), (4, Some("a4")));
}

fn read_steps_only(value: &Value, number: usize) -> Vec<StepView> {
    read(value.to_string().as_bytes(), Keep::Step(number))
        .unwrap()
        .steps
}

#[test]
fn the_prompts_come_from_the_history_whatever_the_order_of_the_keys() {
    let traj = json!({
        "history": [
            {"content": "You are a helper.", "role": "system"},
            {"content": [{"type": "text", "text": "demo one"}, {"type": "text", "text": "demo two"}], "is_demo": true, "role": "user"},
            {"role": "assistant", "is_demo": true, "content": "ok"},
            {"role": "user", "content": "not the task"},
            {"message_type": "instance", "content": "the task", "role": "user"}
        ],
        "trajectory": []
    });
    let bytes = traj.to_string().into_bytes();
    let read = read(&bytes[..], Keep::View).unwrap();
    assert_eq!(
        read.system.as_ref().and_then(Text::whole),
        Some("You are a helper.")
    );
    let demo = read.demo.as_ref().unwrap();
    assert_eq!(
        demo.whole(),
        Some("[user]\ndemo one\ndemo two\n\n[assistant]\nok")
    );
    assert_eq!(full(&bytes, demo), demo.whole().unwrap());
    assert_eq!(read.demo_messages, 2);
    assert_eq!(read.task.as_ref().and_then(Text::whole), Some("the task"));
    // Without an `instance` message the first user message that is not a demonstration.
    let traj = json!({"history": [{"role": "user", "content": "fallback"}], "trajectory": []});
    assert_eq!(
        view(&traj).task.as_ref().and_then(Text::whole),
        Some("fallback")
    );
}

#[test]
fn counts_do_not_depend_on_where_the_bytes_are_cut() {
    let expected = summarize(MONEYFMT.as_bytes()).unwrap();
    assert_eq!(expected.lint_rejections, 1);
    assert_eq!(expected.patch_lines.map(|(a, _)| a > 0), Some(true));
    for capacity in [1, 7, 64, 4096] {
        let reader = std::io::BufReader::with_capacity(capacity, MONEYFMT.as_bytes());
        let read = read(reader, Keep::View).unwrap();
        assert_eq!(read.summary, expected, "capacity {capacity}");
        assert_eq!(read.steps.len(), 9);
    }
    let twice = format!("{LINT_REJECTION}{LINT_REJECTION}");
    let traj = json!({"trajectory": [{"observation": twice}]}).to_string();
    let reader = std::io::BufReader::with_capacity(5, traj.as_bytes());
    assert_eq!(
        read(reader, Keep::Summary).unwrap().summary.lint_rejections,
        2
    );
}

#[test]
fn a_file_that_is_not_a_trajectory_fails_with_where() {
    for (bytes, message) in [
        (
            &b"[1]"[..],
            "not a trajectory: no `trajectory` or `messages` list",
        ),
        (
            b"[1",
            "not a trajectory: EOF while parsing a value at byte 2",
        ),
        (
            b"{",
            "not a trajectory: EOF while parsing an object at byte 1",
        ),
        (b"{} x", "not a trajectory: trailing characters"),
    ] {
        let error = read(bytes, Keep::View).unwrap_err().to_string();
        assert!(error.starts_with(message), "{error}");
    }
    let view = view(&json!({"info": {}}));
    assert!(!view.has_steps);
}

const MINI_1: &str =
    include_str!("../../tests/fixtures/inspect/mini-1/demo__calc-1/demo__calc-1.traj.json");
const MINI_1_LIMIT: &str =
    include_str!("../../tests/fixtures/inspect/mini-1/demo__calc-2/demo__calc-2.traj.json");
const MINI_1_1: &str =
    include_str!("../../tests/fixtures/inspect/mini-1.1/demo__calc-1/demo__calc-1.traj.json");
const MINI_1_1_LIMIT: &str =
    include_str!("../../tests/fixtures/inspect/mini-1.1/demo__calc-2/demo__calc-2.traj.json");

const SUBMISSION: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n";
const SUBMIT: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && printf 'diff --git a/calc.py b/calc.py\\n--- a/calc.py\\n+++ b/calc.py\\n@@ -1,2 +1,2 @@\\n def add(a, b):\\n-    return a - b\\n+    return a + b\\n'";
const CAT_OUTPUT: &str =
    "<returncode>0</returncode>\n<output>\ndef add(a, b):\n    return a - b\n</output>";
const FIXED_OUTPUT: &str =
    "<returncode>0</returncode>\n<output>\ndef add(a, b):\n    return a + b\n</output>";
const FIX: &str = "sed -i 's/a - b/a + b/' calc.py && cat calc.py";

/// Each step as (action, thought, observation, format error), whole.
fn turns(view: &TrajectoryView) -> Vec<(usize, &str, &str, &str, Option<&str>)> {
    fn whole(text: &Text) -> &str {
        match text.whole() {
            Some(whole) => whole,
            None if text.is_empty() => "",
            None => "<long>",
        }
    }
    view.steps
        .iter()
        .map(|s| {
            (
                s.number,
                whole(&s.action),
                whole(&s.thought),
                whole(&s.observation),
                s.format_error.as_ref().map(whole),
            )
        })
        .collect()
}

#[test]
fn a_mini_1_trajectory_reads_as_steps_with_the_one_bash_block_as_the_action() {
    let view = read(MINI_1.as_bytes(), Keep::View).unwrap();
    assert!(view.has_steps);
    let rejected = view.steps[1].format_error.as_ref().and_then(Text::whole);
    assert!(
        rejected.is_some_and(|e| e.starts_with(
            "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.\n"
        )),
        "{rejected:?}"
    );
    assert_eq!(
        turns(&view),
        [
            (
                1,
                "cat calc.py",
                "THOUGHT: I read the file first.",
                CAT_OUTPUT,
                None
            ),
            (
                2,
                "",
                "THOUGHT: two at once.\n\n```bash\nls\n```\n\n```bash\npwd\n```",
                "",
                rejected
            ),
            (
                3,
                FIX,
                "THOUGHT: The sign is wrong; I fix it.",
                FIXED_OUTPUT,
                None
            ),
            // mini 1 answers a submission with the submission itself.
            (4, SUBMIT, "THOUGHT: Done; I submit.", SUBMISSION, None),
        ]
    );
    assert_eq!(
        view.steps[0].response.whole(),
        Some("THOUGHT: I read the file first.\n\n```bash\ncat calc.py\n```")
    );
    assert_eq!(
        view.system.as_ref().and_then(Text::whole),
        Some("You are a helpful assistant.")
    );
    assert_eq!(
        view.task.as_ref().and_then(Text::whole),
        Some("Fix add in calc.py: add subtracts")
    );
    assert_eq!(
        view.submission.as_ref().and_then(Text::whole),
        Some(SUBMISSION)
    );
    let summary = &view.summary;
    assert_eq!(summary.exit_status.as_deref(), Some("Submitted"));
    assert_eq!((summary.steps, summary.format_errors), (4, 1));
    assert_eq!((summary.cost, summary.api_calls), (1.0, 4));
    assert_eq!(summary.patch_lines, Some((1, 1)));
    // The one step asked for, and the summary alone, agree.
    let one = read(MINI_1.as_bytes(), Keep::Step(3)).unwrap();
    assert_eq!(
        turns(&one),
        [(
            3,
            FIX,
            "THOUGHT: The sign is wrong; I fix it.",
            FIXED_OUTPUT,
            None
        )]
    );
    assert_eq!(summarize(MINI_1.as_bytes()).unwrap(), view.summary);
    // A derived text is its own full text; an observation is found again in the file.
    let bytes = MINI_1.as_bytes();
    assert_eq!(full(bytes, &view.steps[0].action), "cat calc.py");
    assert_eq!(full(bytes, &view.steps[0].observation), CAT_OUTPUT);
}

#[test]
fn a_mini_1_trajectory_at_its_step_limit_ends_with_no_step_for_the_empty_message() {
    let view = read(MINI_1_LIMIT.as_bytes(), Keep::View).unwrap();
    assert_eq!(
        turns(&view),
        [(
            1,
            "cat calc.py",
            "THOUGHT: I read the file first.",
            CAT_OUTPUT,
            None
        )]
    );
    assert_eq!(view.summary.exit_status.as_deref(), Some("LimitsExceeded"));
    assert_eq!((view.summary.cost, view.summary.api_calls), (0.25, 1));
    assert_eq!((view.submission, view.summary.patch_lines), (None, None));
}

#[test]
fn a_mini_1_1_trajectory_gives_a_step_per_tool_call_and_one_per_format_error() {
    let view = read(MINI_1_1.as_bytes(), Keep::View).unwrap();
    let no_call =
        "No tool calls found in the response. Every response MUST include at least one tool call.";
    assert_eq!(
        turns(&view),
        [
            (
                1,
                "cat calc.py",
                "I read the file and list the directory.",
                CAT_OUTPUT,
                None
            ),
            (
                2,
                "ls",
                "",
                "<returncode>0</returncode>\n<output>\ncalc.py\n</output>",
                None
            ),
            (3, "", "", "", Some(no_call)),
            (4, FIX, "The sign is wrong; I fix it.", FIXED_OUTPUT, None),
            // mini 2 runs no observation for the command that submits.
            (5, SUBMIT, "Done; I submit.", "", None),
        ]
    );
    let summary = &view.summary;
    assert_eq!(summary.exit_status.as_deref(), Some("Submitted"));
    assert_eq!((summary.steps, summary.format_errors), (5, 1));
    assert_eq!((summary.cost, summary.api_calls), (1.0, 4));
    assert_eq!(
        view.submission.as_ref().and_then(Text::whole),
        Some(SUBMISSION)
    );
    assert_eq!(
        view.task.as_ref().and_then(Text::whole),
        Some("Fix add in calc.py: add subtracts")
    );
    // The commands are strings of the file: found again there.
    let bytes = MINI_1_1.as_bytes();
    assert_eq!(full(bytes, &view.steps[3].action), FIX);
    assert_eq!(
        full(bytes, &view.steps[1].observation),
        "<returncode>0</returncode>\n<output>\ncalc.py\n</output>"
    );
    let limit = read(MINI_1_1_LIMIT.as_bytes(), Keep::View).unwrap();
    assert_eq!(
        turns(&limit).iter().map(|t| t.1).collect::<Vec<_>>(),
        ["cat calc.py", "ls"]
    );
    assert_eq!(limit.summary.exit_status.as_deref(), Some("LimitsExceeded"));
    assert_eq!((limit.summary.steps, limit.summary.cost), (2, 0.25));
}

#[test]
fn a_mini_1_1_text_mode_answer_splits_like_mini_and_a_rejected_one_keeps_its_answer() {
    // mini 2's text mode (and aci's own `to_mini`): the command listed, the text with its block;
    // a format error keeps the rejected answer in its `extra`. Keys in any order.
    let traj = json!({
        "trajectory_format": "mini-swe-agent-1.1",
        "messages": [
            {"content": "sys", "role": "system"},
            {"role": "user", "content": "the task"},
            {"role": "user", "content": "Expected exactly 1 action, found 0.", "extra": {"interrupt_type": "FormatError", "model_response": "I think."}},
            {"extra": {"actions": [{"command": "ls -a"}]}, "role": "assistant", "content": "Look.\n\n```mswea_bash_command\nls -a\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n.\n</output>", "extra": {"raw_output": ".\n", "returncode": 0}},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}}
        ],
        "info": {"exit_status": "Submitted", "submission": "", "model_stats": {"instance_cost": 0.5, "api_calls": 2}}
    });
    let view = view(&traj);
    assert_eq!(
        turns(&view),
        [
            (
                1,
                "",
                "I think.",
                "",
                Some("Expected exactly 1 action, found 0.")
            ),
            (
                2,
                "ls -a",
                "Look.",
                "<returncode>0</returncode>\n<output>\n.\n</output>",
                None
            ),
        ]
    );
    assert_eq!(view.steps[0].response.whole(), Some("I think."));
    assert_eq!(view.task.as_ref().and_then(Text::whole), Some("the task"));
    assert_eq!((view.summary.format_errors, view.summary.cost), (1, 0.5));
}
