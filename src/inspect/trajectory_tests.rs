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
        (&b"[1]"[..], "not a trajectory: no `trajectory` list"),
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
