use serde_json::json;

use super::*;
use crate::protocol::Role;

const SWE_AGENT_V0_7: &str = include_str!("../../tests/fixtures/sweagent_v0_7.traj");

/// A directory under the system temp dir, named after the test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let path = std::env::temp_dir().join(format!("agentscratch-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.0)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn step(action: &str, observation: &str) -> TrajectoryStep {
    TrajectoryStep {
        action: action.to_owned(),
        observation: observation.to_owned(),
        response: format!("I run it.\n```\n{action}\n```"),
        thought: "I run it.\n".to_owned(),
        state: json!({"open_file": "n/a", "working_dir": "/testbed"}),
        execution_time: 0.25,
        nudge: None,
        format_error: None,
        extra: Map::new(),
    }
}

/// A trajectory with every field of ours set.
fn ours() -> Trajectory {
    let nudged = TrajectoryStep {
        nudge: Some("Your last response contained no command.".to_owned()),
        format_error: Some("Your output was not formatted correctly.".to_owned()),
        ..step("submit", "diff --git a/x b/x\n")
    };
    Trajectory {
        environment: "django__django-11099".to_owned(),
        trajectory: vec![step("ls", "a.py\nb.py"), nudged],
        history: vec![
            HistoryItem::new(Role::System, "You are an agent.", MessageType::SystemPrompt),
            HistoryItem::new(Role::User, "Fix the bug.", MessageType::Instance),
            HistoryItem {
                thought: Some("I run it.\n".to_owned()),
                action: Some("ls".to_owned()),
                ..HistoryItem::new(
                    Role::Assistant,
                    "I run it.\n```\nls\n```",
                    MessageType::Action,
                )
            },
        ],
        info: Info {
            exit_status: Some("submitted (exit_cost)".into()),
            submission: Some("diff --git a/x b/x\n".to_owned()),
            model_stats: ModelStats {
                total_cost: None,
                instance_cost: 0.125,
                tokens_sent: 1200,
                tokens_received: 80,
                api_calls: 2,
                cache_read_tokens: 900,
                cache_write_tokens: 300,
            },
            wall_time: Some(12.5),
            edited_files30: Some("Empty. No edited files found.".to_owned()),
            edited_files50: None,
            edited_files70: None,
            aci_version: Some("0.1.0".to_owned()),
            extra: Map::new(),
        },
        replay_config: Some(json!({"agent": {"parser": "thought_action"}})),
        extra: Map::new(),
    }
}

#[test]
fn a_trajectory_survives_a_write_and_read_round_trip() {
    let dir = TempDir::new("round-trip");
    let path = dir.0.join("x.traj");
    write_atomic(&path, &ours()).unwrap();
    assert_eq!(read(&path).unwrap(), ours());
}

#[test]
fn the_json_layout_uses_indent_2_and_sweagent_key_order() {
    let trajectory = Trajectory {
        environment: "main".to_owned(),
        trajectory: vec![step("ls", "a.py")],
        history: vec![HistoryItem::new(
            Role::User,
            "Fix it.",
            MessageType::Instance,
        )],
        info: Info::default(),
        replay_config: None,
        extra: Map::new(),
    };
    let expected = r#"{
  "environment": "main",
  "trajectory": [
    {
      "action": "ls",
      "observation": "a.py",
      "response": "I run it.\n```\nls\n```",
      "thought": "I run it.\n",
      "state": {
        "open_file": "n/a",
        "working_dir": "/testbed"
      },
      "execution_time": 0.25
    }
  ],
  "history": [
    {
      "role": "user",
      "content": "Fix it.",
      "agent": "primary",
      "message_type": "instance"
    }
  ],
  "info": {
    "exit_status": null,
    "submission": null,
    "model_stats": {
      "instance_cost": 0.0,
      "tokens_sent": 0,
      "tokens_received": 0,
      "api_calls": 0,
      "cache_read_tokens": 0,
      "cache_write_tokens": 0
    }
  }
}"#;
    assert_eq!(serde_json::to_string_pretty(&trajectory).unwrap(), expected);
}

#[test]
fn a_sweagent_v0_7_trajectory_reads_with_its_fields_in_place() {
    let trajectory: Trajectory = serde_json::from_str(SWE_AGENT_V0_7).unwrap();
    let submission = trajectory.trajectory[2].observation.clone();
    let info_extra: Map<String, Value> = serde_json::from_value(json!({
        "swe_agent_hash": "2a6f5c1e5b7c9a8d3f4e6b0c1d2e3f4a5b6c7d8e",
        "swe_agent_version": "0.7.0",
    }))
    .unwrap();
    assert_eq!(
        trajectory.info,
        Info {
            exit_status: Some("submitted".into()),
            submission: Some(submission),
            model_stats: ModelStats {
                total_cost: Some(1.8461),
                instance_cost: 0.41306,
                tokens_sent: 39826,
                tokens_received: 493,
                api_calls: 3,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
            },
            wall_time: None,
            edited_files30: trajectory.info.edited_files30.clone(),
            edited_files50: trajectory.info.edited_files50.clone(),
            edited_files70: trajectory.info.edited_files70.clone(),
            aci_version: None,
            extra: info_extra,
        }
    );
    assert_eq!(
        trajectory.trajectory[2],
        TrajectoryStep {
            action: "submit\n".to_owned(),
            observation: trajectory.trajectory[2].observation.clone(),
            response: "The fix is in place.\n```\nsubmit\n```".to_owned(),
            thought: "The fix is in place.\n".to_owned(),
            state: json!(
                "{\"open_file\": \"/marshmallow-code__marshmallow/src/marshmallow/fields.py\", \
\"working_dir\": \"/marshmallow-code__marshmallow\"}"
            ),
            execution_time: 0.2149,
            nudge: None,
            format_error: None,
            extra: Map::new(),
        }
    );
    let shape: Vec<(Role, bool, Option<MessageType>, bool)> = trajectory
        .history
        .iter()
        .map(|item| {
            (
                item.role,
                item.is_demo,
                item.message_type.clone(),
                item.action.is_some(),
            )
        })
        .collect();
    assert_eq!(
        (
            trajectory.environment.as_str(),
            trajectory.replay_config.clone(),
            shape
        ),
        (
            "swe_main",
            None,
            vec![
                (Role::System, false, None, false),
                (Role::User, true, None, false),
                (Role::User, false, None, false),
                (Role::Assistant, false, None, true),
                (Role::User, false, None, false),
                (Role::Assistant, false, None, true),
                (Role::User, false, None, false),
                (Role::Assistant, false, None, true),
            ]
        )
    );
}

#[test]
fn rewriting_a_sweagent_v0_7_trajectory_loses_nothing_and_adds_only_cache_counts() {
    let mut expected: Value = serde_json::from_str(SWE_AGENT_V0_7).unwrap();
    let stats = &mut expected["info"]["model_stats"];
    stats["cache_read_tokens"] = json!(0);
    stats["cache_write_tokens"] = json!(0);
    let trajectory: Trajectory = serde_json::from_str(SWE_AGENT_V0_7).unwrap();
    assert_eq!(serde_json::to_value(&trajectory).unwrap(), expected);
}

#[test]
fn an_atomic_write_leaves_only_the_target_file() {
    let dir = TempDir::new("atomic");
    let path = dir.0.join("x.traj");
    write_atomic(&path, &ours()).unwrap();
    let mut second = ours();
    second.info.exit_status = Some("submitted".into());
    write_atomic(&path, &second).unwrap();
    assert_eq!(
        (dir.names(), read(&path).unwrap()),
        (vec!["x.traj".to_owned()], second)
    );
}

#[test]
fn a_failed_atomic_write_leaves_no_temporary_file() {
    let dir = TempDir::new("atomic-failure");
    let target = dir.0.join("x.traj");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("keep"), "").unwrap();
    let result = write_atomic(&target, &ours());
    assert_eq!(
        (result.is_err(), dir.names()),
        (true, vec!["x.traj".to_owned()])
    );
}

#[test]
fn read_errors_name_the_file() {
    let dir = TempDir::new("read-errors");
    let missing = dir.0.join("missing.traj");
    let broken = dir.0.join("broken.traj");
    fs::write(&broken, "{\"environment\": 1}").unwrap();
    let messages = [
        read(&missing).map(|_| ()).map_err(|e| e.to_string()),
        read(&broken).map(|_| ()).map_err(|e| e.to_string()),
    ];
    assert_eq!(
        messages,
        [
            Err(format!(
                "failed to read trajectory {}: No such file or directory (os error 2)",
                missing.display()
            )),
            Err(format!(
                "failed to parse trajectory {}: invalid type: integer `1`, expected a string at line 1 column 17",
                broken.display()
            )),
        ]
    );
}

#[test]
fn is_finished_follows_the_resume_rule() {
    let dir = TempDir::new("is-finished");
    let cases: Vec<(&str, Option<&str>, bool)> = vec![
        ("missing", None, false),
        ("empty", Some(""), false),
        ("not json", Some("{\"info\": "), false),
        ("no info", Some("{}"), false),
        (
            "null status",
            Some(r#"{"info": {"exit_status": null}}"#),
            false,
        ),
        (
            "non-string status",
            Some(r#"{"info": {"exit_status": 3}}"#),
            false,
        ),
        (
            "early exit",
            Some(r#"{"info": {"exit_status": "early_exit"}}"#),
            false,
        ),
        (
            "autosubmitted early exit",
            Some(r#"{"info": {"exit_status": "submitted (early_exit)"}}"#),
            false,
        ),
        (
            "submitted",
            Some(r#"{"info": {"exit_status": "submitted"}}"#),
            true,
        ),
        (
            "exit cost",
            Some(r#"{"info": {"exit_status": "exit_cost"}}"#),
            true,
        ),
        (
            "autosubmitted exit format",
            Some(r#"{"info": {"exit_status": "submitted (exit_format)"}}"#),
            true,
        ),
        ("sweagent v0.7 file", Some(SWE_AGENT_V0_7), true),
    ];
    let actual: Vec<(&str, Option<&str>, bool)> = cases
        .iter()
        .enumerate()
        .map(|(index, (name, contents, _))| {
            let path = dir.0.join(format!("{index}.traj"));
            if let Some(contents) = contents {
                fs::write(&path, contents).unwrap();
            }
            (*name, *contents, is_finished(&path))
        })
        .collect();
    assert_eq!(actual, cases);
}
