//! `replay`: hands out recorded actions one per query, then `submit`. The input is a YAML or
//! JSON list of action strings, a SWE-agent `.traj` whose `trajectory[].action` is used, or a
//! mini-swe-agent trajectory (`mini-swe-agent-1` or `-1.1`) whose assistant messages' actions
//! are ([`crate::trajectory::mini::replay_actions`]).

use std::path::Path;

use serde_json::Value;

use super::cost::Ledger;
use super::{Model, ModelConfig, ModelError, ModelResponse, ModelStats, QueryRequest, Usage};
use crate::hint::Hint;

/// The action the replay model gives once its steps run out.
const SUBMIT: &str = "submit";

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayStep {
    /// The action, passed to the ACI as it is (a multi-line edit is one string).
    pub action: String,
    /// The model's original answer, when the input has it (a `.traj`'s `response`); it
    /// becomes [`ModelResponse::text`].
    pub response: Option<String>,
}

/// The steps a [`ReplayModel`] replays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayInput {
    /// The steps, in order.
    pub steps: Vec<ReplayStep>,
}

impl ReplayInput {
    /// Steps from bare action strings.
    pub fn from_actions<I, S>(actions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let steps = actions
            .into_iter()
            .map(|action| ReplayStep {
                action: action.into(),
                response: None,
            })
            .collect();
        ReplayInput { steps }
    }

    /// Reads a replay file (`.yaml`, `.yml`, `.json` or `.traj`; the content decides).
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            ModelError::config(format!(
                "cannot read replay file {}: {error}",
                path.display()
            ))
        })?;
        Self::parse(&text).map_err(|error| {
            let message = format!("invalid replay file {}: {error}", path.display());
            match error.hint() {
                Some(hint) => ModelError::config_with_hint(message, hint),
                None => ModelError::config(message),
            }
        })
    }

    /// Parses a list of action strings (JSON or YAML), a list of `{action, response?}` objects,
    /// or a `.traj` object with `trajectory[].action`.
    pub fn parse(text: &str) -> Result<Self, ModelError> {
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(_) => serde_yaml::from_str(text)
                .map_err(|error| ModelError::config(format!("not JSON or YAML: {error}")))?,
        };
        if crate::trajectory::mini::is_mini(&value) {
            let steps = crate::trajectory::mini::replay_actions(&value)
                .map_err(ModelError::config)?
                .into_iter()
                .map(|(action, response)| ReplayStep { action, response })
                .collect();
            return Ok(ReplayInput { steps });
        }
        let (items, what) = match &value {
            Value::Array(items) => (items, "item"),
            Value::Object(object) => match object.get("trajectory") {
                Some(Value::Array(items)) => (items, "trajectory"),
                _ => return Err(shape_error("an object without a trajectory list")),
            },
            _ => return Err(shape_error("neither a list nor a trajectory")),
        };
        let steps = items
            .iter()
            .enumerate()
            .filter(|(_, item)| what != "trajectory" || replayable(item))
            .map(|(index, item)| parse_step(item).ok_or_else(|| bad_step(what, index)))
            .collect::<Result<_, _>>()?;
        Ok(ReplayInput { steps })
    }
}

/// Whether a `.traj` step ran an action worth replaying. Steps that ran nothing are left out:
/// a response the parser rejected (aci writes its `format_error`) and a turn that ended the
/// instance before anything ran (the model API failed; the action is empty). Leaving them out
/// changes nothing in the repository, so the replay reproduces the patch.
fn replayable(step: &Value) -> bool {
    let rejected = step.get("format_error").is_some_and(Value::is_string);
    let empty = step
        .get("action")
        .and_then(Value::as_str)
        .is_some_and(|action| action.trim().is_empty());
    !rejected && !empty
}

/// A bare action string, or an object with a string `action` (and maybe `response`).
fn parse_step(item: &Value) -> Option<ReplayStep> {
    match item {
        Value::String(action) => Some(ReplayStep {
            action: action.clone(),
            response: None,
        }),
        Value::Object(object) => Some(ReplayStep {
            action: object.get("action")?.as_str()?.to_owned(),
            response: object
                .get("response")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }),
        _ => None,
    }
}

fn shape_error(found: &str) -> ModelError {
    ModelError::config_with_hint(
        format!("found {found}"),
        "give a list of action strings, or a .traj with trajectory[].action",
    )
}

fn bad_step(what: &str, index: usize) -> ModelError {
    let field = if what == "trajectory" {
        format!("trajectory[{index}].action")
    } else {
        format!("item {index}")
    };
    ModelError::config(format!("{field} is not an action string"))
}

/// Replays recorded actions; once they run out every query answers `submit`.
#[derive(Debug)]
pub struct ReplayModel {
    steps: Vec<ReplayStep>,
    next: usize,
    ledger: Ledger,
}

impl ReplayModel {
    /// A model replaying `input`; only the call limit of `config` applies (replay is free).
    pub fn new(input: ReplayInput, config: &ModelConfig) -> Self {
        ReplayModel {
            steps: input.steps,
            next: 0,
            ledger: Ledger::free("replay", config),
        }
    }

    /// Steps not handed out yet.
    pub fn remaining(&self) -> usize {
        self.steps.len().saturating_sub(self.next)
    }

    /// The next action and the text to record as the model's answer.
    fn next_step(&mut self) -> (String, String) {
        let total = self.steps.len();
        let number = self.next + 1;
        self.next += 1;
        match self.steps.get(number - 1) {
            Some(ReplayStep {
                action,
                response: Some(response),
            }) => (action.clone(), response.clone()),
            Some(ReplayStep { action, .. }) => (
                action.clone(),
                format!("DISCUSSION\nReplaying step {number} of {total}.\n\n```\n{action}\n```"),
            ),
            None => (
                SUBMIT.to_owned(),
                format!(
                    "DISCUSSION\nAll {total} replayed steps are done; submitting.\n\n```\n{SUBMIT}\n```"
                ),
            ),
        }
    }
}

impl Model for ReplayModel {
    fn name(&self) -> &str {
        "replay"
    }

    async fn query(&mut self, _request: QueryRequest<'_>) -> Result<ModelResponse, ModelError> {
        self.ledger.check_before_call()?;
        let (action, text) = self.next_step();
        self.ledger.record(&Usage::default())?;
        Ok(ModelResponse {
            text,
            raw_action: Some(action),
            ..ModelResponse::default()
        })
    }

    fn stats(&self) -> &ModelStats {
        self.ledger.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDIT: &str = "edit 1:1\nprint('hi')\nend_of_edit";

    fn actions(input: &ReplayInput) -> Vec<&str> {
        input
            .steps
            .iter()
            .map(|step| step.action.as_str())
            .collect()
    }

    #[test]
    fn yaml_and_json_lists_keep_multi_line_actions_whole() {
        let yaml = "- open a.py\n- |-\n  edit 1:1\n  print('hi')\n  end_of_edit\n- submit\n";
        let from_yaml = ReplayInput::parse(yaml).unwrap();
        assert_eq!(actions(&from_yaml), ["open a.py", EDIT, "submit"]);
        let json = serde_json::to_string(&["open a.py", EDIT, "submit"]).unwrap();
        assert_eq!(ReplayInput::parse(&json).unwrap(), from_yaml);
    }

    #[test]
    fn a_traj_gives_its_actions_and_responses() {
        let traj = serde_json::json!({
            "environment": "main",
            "trajectory": [
                {"action": "ls", "observation": "a.py", "response": "Look first.\n```\nls\n```",
                 "thought": "Look first.", "state": "{}", "execution_time": 0.1},
                {"action": "submit", "observation": "", "thought": "", "state": {}}
            ],
            "history": [],
            "info": {"exit_status": "submitted"}
        });
        let input = ReplayInput::parse(&traj.to_string()).unwrap();
        assert_eq!(actions(&input), ["ls", "submit"]);
        assert_eq!(
            input.steps[0].response.as_deref(),
            Some("Look first.\n```\nls\n```")
        );
        assert_eq!(input.steps[1].response, None);
    }

    #[test]
    fn a_traj_skips_rejected_responses_and_turns_that_ran_nothing() {
        let traj = serde_json::json!({
            "trajectory": [
                {"action": "", "observation": "Your output was not formatted correctly.",
                 "response": "I think so.", "thought": "I think so.", "state": {},
                 "format_error": "Your output was not formatted correctly."},
                {"action": "ls", "observation": "a.py", "response": "```\nls\n```",
                 "thought": "", "state": {}},
                {"action": "  ", "observation": "model API request failed", "response": "",
                 "thought": "model API request failed", "state": {}}
            ]
        });
        let input = ReplayInput::parse(&traj.to_string()).unwrap();
        assert_eq!(actions(&input), ["ls"]);
        let list = ReplayInput::parse("[\"\", \"ls\"]").unwrap();
        assert_eq!(actions(&list), ["", "ls"]);
    }

    #[test]
    fn a_bare_list_of_mini_messages_replays_its_assistant_actions() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mini-recorded/github_issue.traj.json");
        let input = ReplayInput::load(&path).unwrap();
        assert_eq!(
            actions(&input),
            [
                "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py",
                "ls -la",
                "ls -la tests/",
                "cat tests/missing_colon.py",
                "sed -i 's/def division(a: float, b: float) -> float/def division(a: float, b: \
                 float) -> float:/' tests/missing_colon.py",
                "cat tests/missing_colon.py",
                "python3 tests/missing_colon.py",
                "python3 -c \"from tests.missing_colon import division; print(division(23, 0))\"",
                "cat > tests/missing_colon.py << 'EOF'\n#!/usr/bin/env python3\n\n\ndef division(a: \
                 float, b: float) -> float:\n    if b == 0:\n        raise ValueError(\"Cannot divide \
                 by zero\")\n    return a/b\n\n\nif __name__ == \"__main__\":\n    \
                 print(division(123, 15))\nEOF",
                "git add -A && git diff --cached && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
            ]
        );
        assert_eq!(
            input.steps[1].response.as_deref(),
            Some(
                "I need to find the correct path to the file. Let me check the current directory \
                 structure:\n\n```mswea_bash_command\nls -la\n```"
            )
        );
        let error = ReplayInput::parse("[{\"role\": \"user\", \"content\": 3}, 1]").unwrap_err();
        assert!(error.to_string().contains("item 0"), "{error}");
    }

    #[test]
    fn wrong_shapes_are_config_errors_that_say_where() {
        let error = ReplayInput::parse("{\"trajectory\": [{\"action\": 3}]}").unwrap_err();
        assert!(
            error.to_string().contains("trajectory[0].action"),
            "{error}"
        );
        let error = ReplayInput::parse("- ls\n- [1, 2]\n").unwrap_err();
        assert!(error.to_string().contains("item 1"), "{error}");
        let error = ReplayInput::parse("just: a map").unwrap_err();
        assert_eq!(
            error.hint().as_deref(),
            Some("give a list of action strings, or a .traj with trajectory[].action"),
            "{error}"
        );
        assert!(ReplayInput::parse("[unclosed").is_err());
    }

    #[test]
    fn load_names_the_file_in_errors() {
        let error = ReplayInput::load(Path::new("/nonexistent/replay.yaml")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/replay.yaml"));
    }

    #[tokio::test]
    async fn actions_come_out_in_order_then_submit_at_zero_cost() {
        let input = ReplayInput::from_actions(["ls", EDIT]);
        let mut model = ReplayModel::new(input, &ModelConfig::default());
        let request = QueryRequest {
            messages: &[],
            tools: None,
        };
        let mut got = Vec::new();
        for _ in 0..4 {
            let response = model.query(request).await.unwrap();
            assert_eq!(response.cost, 0.0);
            assert!(response.text.contains("DISCUSSION"));
            got.push(response.raw_action.unwrap());
        }
        assert_eq!(got, ["ls", EDIT, "submit", "submit"]);
        assert_eq!(model.remaining(), 0);
        assert_eq!(model.stats().api_calls, 4);
        assert_eq!(model.stats().instance_cost, 0.0);
    }

    #[tokio::test]
    async fn the_call_limit_applies_to_replay() {
        let config = ModelConfig {
            per_instance_call_limit: 1,
            ..ModelConfig::default()
        };
        let mut model = ReplayModel::new(ReplayInput::from_actions(["ls", "pwd"]), &config);
        let request = QueryRequest {
            messages: &[],
            tools: None,
        };
        model.query(request).await.unwrap();
        let error = model.query(request).await.unwrap_err();
        assert_eq!(error.exit_status().as_str(), "exit_cost");
        assert_eq!(model.remaining(), 1);
    }
}
