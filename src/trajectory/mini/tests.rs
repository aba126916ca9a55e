#![allow(clippy::unwrap_used)]
use super::*;
use crate::protocol::Role;

fn item(role: Role, content: &str, message_type: MessageType) -> HistoryItem {
    let mut item = HistoryItem::new(role, content.to_owned(), message_type);
    item.role = role;
    item
}

fn step(action: &str, response: &str, output: Option<(&str, i32)>) -> TrajectoryStep {
    let mut step = TrajectoryStep {
        action: action.to_owned(),
        response: response.to_owned(),
        ..TrajectoryStep::default()
    };
    if let Some((raw, code)) = output {
        record_output(&mut step, raw, code, "");
    }
    step
}

#[test]
fn a_submitted_run_becomes_mini_messages_with_a_format_error_and_an_exit_message() {
    let mut trajectory = Trajectory {
        history: vec![
            item(Role::System, "SYS", MessageType::SystemPrompt),
            item(Role::User, "TASK", MessageType::Instance),
            item(Role::Assistant, "A1", MessageType::Action),
            item(
                Role::User,
                "<returncode>0</returncode>",
                MessageType::Observation,
            ),
            item(Role::Assistant, "A2", MessageType::Action),
            item(Role::User, "unused", MessageType::Observation),
        ],
        trajectory: vec![
            TrajectoryStep {
                format_error: Some("Format error: ...".to_owned()),
                ..step("", "two blocks", None)
            },
            step("pwd", "A1", Some(("/testbed\n", 0))),
            step(
                "echo SENTINEL && cat p",
                "A2",
                Some(("SENTINEL\ndiff\n", 0)),
            ),
        ],
        ..Trajectory::default()
    };
    trajectory.info.exit_status = Some(RecordedStatus::from("submitted"));
    trajectory.info.submission = Some("diff\n".to_owned());
    trajectory.info.model_stats.api_calls = 3;
    let mini = to_mini(&trajectory, "x__y-1", json!({"agent": {}}));
    assert_eq!(
        mini["messages"],
        json!([
            {"role": "system", "content": "SYS"},
            {"role": "user", "content": "TASK"},
            {"role": "user", "content": "Format error: ...",
             "extra": {"interrupt_type": "FormatError", "model_response": "two blocks"}},
            {"role": "assistant", "content": "A1", "extra": {"actions": [{"command": "pwd"}]}},
            {"role": "user", "content": "<returncode>0</returncode>",
             "extra": {"raw_output": "/testbed\n", "returncode": 0, "exception_info": ""}},
            {"role": "assistant", "content": "A2",
             "extra": {"actions": [{"command": "echo SENTINEL && cat p"}]}},
            {"role": "exit", "content": "diff\n",
             "extra": {"exit_status": "Submitted", "submission": "diff\n"}},
        ])
    );
    assert_eq!(mini["trajectory_format"], "mini-swe-agent-1.1");
    assert_eq!(mini["instance_id"], "x__y-1");
    assert_eq!(mini["info"]["exit_status"], "Submitted");
    assert_eq!(mini["info"]["submission"], "diff\n");
    assert_eq!(
        mini["info"]["model_stats"],
        json!({"instance_cost": 0.0, "api_calls": 3})
    );
    assert_eq!(mini["info"]["config"], json!({"agent": {}}));
}

#[test]
fn aci_exit_statuses_take_minis_names_where_mini_has_one() {
    let name = |status: &str| mini_exit_status(&RecordedStatus::from(status));
    assert_eq!(name("submitted"), "Submitted");
    assert_eq!(name("exit_step_limit"), "LimitsExceeded");
    assert_eq!(name("submitted (exit_cost)"), "LimitsExceeded");
    assert_eq!(name("exit_total_execution_time"), "TimeExceeded");
    assert_eq!(name("exit_format"), "RepeatedFormatError");
    assert_eq!(name("exit_environment_error"), "exit_environment_error");
}

#[test]
fn a_limit_ends_with_the_status_as_the_exit_content_and_the_last_observation_kept() {
    let mut trajectory = Trajectory {
        history: vec![
            item(Role::Assistant, "A1", MessageType::Action),
            item(Role::User, "OBS", MessageType::Observation),
        ],
        trajectory: vec![step("ls", "A1", Some(("a\n", 0)))],
        ..Trajectory::default()
    };
    trajectory.info.exit_status = Some(RecordedStatus::from("exit_step_limit"));
    let mini = to_mini(&trajectory, "i", no_config());
    let messages = mini["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], "OBS");
    assert_eq!(
        messages[2],
        json!({"role": "exit", "content": "LimitsExceeded",
               "extra": {"exit_status": "LimitsExceeded", "submission": ""}})
    );
}

#[test]
fn replays_read_tool_call_actions_of_1_1_and_the_one_bash_block_of_1() {
    let v2 = json!({"trajectory_format": "mini-swe-agent-1.1", "messages": [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": "Two calls.", "extra": {"actions": [
            {"command": "ls", "tool_call_id": "a"}, {"command": "pwd", "tool_call_id": "b"}]}},
        {"role": "tool", "content": "x", "tool_call_id": "a"},
        {"role": "assistant", "content": "One.", "extra": {"actions": [{"command": "cat f"}]}},
        {"role": "assistant", "content": "Format error.", "extra": {"actions": []}},
    ]});
    assert!(is_mini(&v2));
    assert_eq!(
        replay_actions(&v2).unwrap(),
        [
            ("ls".to_owned(), None),
            ("pwd".to_owned(), None),
            ("cat f".to_owned(), Some("One.".to_owned()))
        ]
    );
    let v1 = json!({"trajectory_format": "mini-swe-agent-1", "messages": [
        {"role": "assistant", "content": "T\n```bash\n ls -a \n```"},
        {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "assistant", "content": [{"type": "text", "text": "```bash\necho hi\n```"}]},
        {"role": "assistant", "content": "no block"},
    ]});
    assert_eq!(
        replay_actions(&v1).unwrap(),
        [
            (
                "ls -a".to_owned(),
                Some("T\n```bash\n ls -a \n```".to_owned())
            ),
            (
                "echo hi".to_owned(),
                Some("```bash\necho hi\n```".to_owned())
            )
        ]
    );
    assert!(!is_mini(&json!({"trajectory": [], "history": []})));
    assert_eq!(
        replay_actions(&json!({"trajectory_format": "mini-swe-agent-1"})).unwrap_err(),
        "a mini-swe-agent trajectory needs a `messages` list"
    );
}
