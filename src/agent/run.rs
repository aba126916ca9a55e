//! The turn loop: ask the model, parse its answer, run the action through the ACI, let the
//! pure stop decider say continue or stop, save the trajectory. Everything with a policy lives
//! elsewhere ([`super::stop`], [`super::history`], [`super::prompt`], [`crate::aci`]).

use std::time::{Duration, Instant};

use minijinja::{Value, context};

use super::history::{self, HistoryItem, MessageType, Role};
use super::prompt::{Prompts, TemplateError};
use super::stop::{
    self, CommandResult, Decision, ExitStatus, LoopState, StopPolicy, TurnKind, TurnOutcome,
};
use crate::aci::parse::{self, ErrorCode, FormatError};
use crate::aci::{Aci, StepOutput};
use crate::config::{AgentConfig, ParserKind};
use crate::model::{Message, Model, ModelResponse, QueryRequest, ToolCall};
use crate::sandbox::{Sandbox, SandboxError};
use crate::trajectory::{Info, Trajectory, TrajectoryStep};

/// What the loop needs besides the model and the ACI.
pub struct Episode<'a> {
    /// The agent's configuration.
    pub config: &'a AgentConfig,
    /// The compiled templates.
    pub prompts: &'a Prompts,
    /// When to stop.
    pub policy: &'a StopPolicy,
    /// Variables for the templates: `problem_statement`, `instance_id`, `repo`, `extra_fields`,
    /// `WINDOW`, `OVERLAP`, `command_docs`.
    pub variables: Value,
    /// Demonstrations, already rendered into user messages.
    pub demonstrations: Vec<HistoryItem>,
    /// Called with the trajectory after every turn (it writes the file atomically).
    pub save: &'a mut (dyn FnMut(&Trajectory) + Send),
}

/// How an episode ended.
#[derive(Debug)]
pub struct Outcome {
    /// The final trajectory (also saved).
    pub trajectory: Trajectory,
    /// The patch, when the agent submitted or the autosubmission found changes.
    pub submission: Option<Vec<u8>>,
}

/// Failures that end the run for every instance (a broken template), not just this one.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// A template failed to render.
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// What the model's answer turned into.
enum Parsed {
    Action { thought: String, action: String },
    Invalid(FormatError),
}

struct Loop<'e, 'a, M: Model, S: Sandbox> {
    episode: &'e mut Episode<'a>,
    model: &'e mut M,
    aci: &'e mut Aci<S>,
    trajectory: Trajectory,
    started: Instant,
    submission: Option<Vec<u8>>,
}

/// Runs one instance to its end and returns the trajectory and the submission.
pub async fn run_episode<M: Model, S: Sandbox>(
    episode: &mut Episode<'_>,
    model: &mut M,
    aci: &mut Aci<S>,
) -> Result<Outcome, LoopError> {
    let mut this = Loop {
        episode,
        model,
        aci,
        trajectory: Trajectory::default(),
        started: Instant::now(),
        submission: None,
    };
    this.trajectory.environment = "aci".to_owned();
    this.start_history().await?;
    let mut state = LoopState::default();
    let mut retry: Option<Vec<Message>> = None;
    let mut nudge: Option<String> = None;
    let (exit_status, mut submission) = loop {
        let (kind, next_retry) = this.turn(retry.take(), nudge.take()).await?;
        let outcome = TurnOutcome {
            kind,
            instance_cost: this.model.stats().instance_cost,
            elapsed: this.started.elapsed(),
        };
        let decision = stop::decide(&outcome, &state, this.episode.policy);
        state = state.record(&outcome, &decision);
        this.sync_stats();
        (this.episode.save)(&this.trajectory);
        match decision {
            Decision::Stop { exit_status } => break (exit_status, this.take_submission()),
            Decision::Continue { nudge: next_nudge } => {
                nudge = next_nudge.map(|n| n.text);
                retry = next_retry;
            }
        }
    };
    let status = if exit_status == ExitStatus::Submitted {
        ExitStatus::Submitted.as_str().to_owned()
    } else {
        // Every other exit autosubmits what the agent changed so far.
        submission = this
            .aci
            .submit()
            .await
            .ok()
            .filter(|patch| !patch.is_empty());
        match submission {
            Some(_) => exit_status.autosubmitted(),
            None => exit_status.as_str().to_owned(),
        }
    };
    this.trajectory.info.exit_status = Some(status);
    this.trajectory.info.submission = submission
        .as_deref()
        .filter(|patch| !patch.is_empty())
        .map(|patch| String::from_utf8_lossy(patch).into_owned());
    this.sync_stats();
    (this.episode.save)(&this.trajectory);
    Ok(Outcome {
        trajectory: this.trajectory,
        submission,
    })
}

impl<M: Model, S: Sandbox> Loop<'_, '_, M, S> {
    /// System prompt, demonstrations and the instance prompt.
    async fn start_history(&mut self) -> Result<(), LoopError> {
        let system = self
            .episode
            .prompts
            .render("system", &self.episode.variables)?;
        self.push(HistoryItem::new(
            Role::System,
            system,
            MessageType::SystemPrompt,
        ));
        let demonstrations = std::mem::take(&mut self.episode.demonstrations);
        for demonstration in demonstrations {
            self.push(demonstration);
        }
        let state = self.state_value().await;
        let instance = self.render_with_state("instance", &state, "")?;
        self.push(HistoryItem::new(
            Role::User,
            instance,
            MessageType::Instance,
        ));
        Ok(())
    }

    fn push(&mut self, item: HistoryItem) {
        self.trajectory.history.push(item);
    }

    /// One model call and what came of it. Returns the turn and, after a malformed answer,
    /// the messages to append (not store) for the next request.
    async fn turn(
        &mut self,
        retry: Option<Vec<Message>>,
        nudge: Option<String>,
    ) -> Result<(TurnKind, Option<Vec<Message>>), LoopError> {
        let mut messages = to_messages(&history::process(
            &self.trajectory.history,
            &self.episode.config.history,
        ));
        messages.extend(retry.unwrap_or_default());
        if let Some(text) = nudge {
            messages.push(Message::user(text));
        }
        let tools = match self.episode.config.parser {
            ParserKind::FunctionCalling => Some(self.aci.registry().openai_tools()),
            ParserKind::ThoughtAction => None,
        };
        let response = match self
            .model
            .query(QueryRequest {
                messages: &messages,
                tools: tools.as_ref(),
            })
            .await
        {
            Ok(response) => response,
            Err(error) => {
                let exit_status = exit_status_named(error.exit_status());
                self.record_failure("", &error.to_string());
                return Ok((TurnKind::Ended { exit_status }, None));
            }
        };
        let text = response_text(&response);
        match self.parse(&response) {
            Parsed::Invalid(error) => {
                let kind = if matches!(error.error_code, ErrorCode::NoAction | ErrorCode::Missing) {
                    TurnKind::NoAction { response: text }
                } else {
                    TurnKind::FormatError { response: text }
                };
                let message = self.format_error_text(&error)?;
                self.record_failure(&response_text(&response), &message);
                Ok((kind, Some(retry_messages(&response, message))))
            }
            Parsed::Action { thought, action } => {
                if let Some(refusal) = self.aci.blocked(&action) {
                    let message = self
                        .episode
                        .prompts
                        .render("blocked", &context! { exception_message => refusal })?;
                    self.record_failure(&text, &message);
                    return Ok((
                        TurnKind::FormatError { response: text },
                        Some(retry_messages(&response, message)),
                    ));
                }
                let kind = self.execute(&response, &text, thought, action).await?;
                Ok((kind, None))
            }
        }
    }

    fn parse(&self, response: &ModelResponse) -> Parsed {
        let parsed = if let Some(action) = &response.raw_action {
            Ok((response.text.clone(), action.clone()))
        } else {
            match self.episode.config.parser {
                ParserKind::ThoughtAction => parse::thought_action(&response.text),
                ParserKind::FunctionCalling => {
                    let calls: Vec<parse::ToolCall> = response
                        .tool_calls
                        .iter()
                        .map(|c| parse::ToolCall {
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect();
                    parse::function_calls_to_command(self.aci.registry(), &calls)
                        .map(|action| (response.text.clone(), action))
                }
            }
        };
        match parsed {
            Ok((thought, action)) => Parsed::Action { thought, action },
            Err(error) => Parsed::Invalid(error),
        }
    }

    fn format_error_text(&self, error: &FormatError) -> Result<String, TemplateError> {
        let parser = match self.episode.config.parser {
            ParserKind::ThoughtAction => "thought_action",
            ParserKind::FunctionCalling => "function_calling",
        };
        self.episode.prompts.render(
            "format_error",
            &context! { error_code => error.error_code.as_str(), exception_message => error.message.clone(), parser },
        )
    }

    /// Runs the action, stores the exchange in the history and the trajectory.
    async fn execute(
        &mut self,
        response: &ModelResponse,
        text: &str,
        thought: String,
        action: String,
    ) -> Result<TurnKind, LoopError> {
        let started = Instant::now();
        let step = match self.aci.execute(&action).await {
            Ok(step) => step,
            Err(error) => {
                let exit_status = environment_status(&error);
                self.record_step(
                    text,
                    &thought,
                    &action,
                    &format!("{error}"),
                    started.elapsed(),
                    None,
                );
                return Ok(TurnKind::Ended { exit_status });
            }
        };
        let state = self.state_value().await;
        let mut assistant = HistoryItem::new(Role::Assistant, text, MessageType::Action);
        assistant.thought = Some(thought.clone());
        assistant.action = Some(action.clone());
        if !response.tool_calls.is_empty() {
            assistant.tool_calls = serde_json::to_value(&response.tool_calls).ok();
        }
        self.push(assistant);
        let (observation, _) = history::truncate_observation(
            &step.observation,
            self.episode.config.max_observation_length,
        );
        let template = if observation.is_empty() {
            "next_step_no_output"
        } else {
            "next_step"
        };
        let content = self.render_with_state(template, &state, &observation)?;
        let mut user = HistoryItem::new(Role::User, content, MessageType::Observation);
        if let Some(call) = response.tool_calls.first() {
            user.role = Role::Tool;
            user.tool_call_ids = Some(vec![call.id.clone()]);
        }
        self.push(user);
        self.record_step(
            text,
            &thought,
            &action,
            &step.observation,
            started.elapsed(),
            Some(state),
        );
        if step.submission.is_some() {
            self.submission.clone_from(&step.submission);
        }
        Ok(turn_kind(&step, text))
    }

    fn render_with_state(
        &self,
        template: &str,
        state: &serde_json::Value,
        observation: &str,
    ) -> Result<String, TemplateError> {
        let field = |key: &str| {
            state
                .get(key)
                .and_then(|v| v.as_str())
                .unwrap_or("n/a")
                .to_owned()
        };
        let variables = context! {
            open_file => field("open_file"),
            working_dir => field("working_dir"),
            observation => observation,
            ..self.episode.variables.clone()
        };
        self.episode.prompts.render(template, &variables)
    }

    async fn state_value(&mut self) -> serde_json::Value {
        match self.aci.state().await {
            Ok(state) => state.to_json(),
            Err(_) => serde_json::json!({ "open_file": "n/a", "working_dir": "n/a" }),
        }
    }

    fn record_step(
        &mut self,
        response: &str,
        thought: &str,
        action: &str,
        observation: &str,
        elapsed: Duration,
        state: Option<serde_json::Value>,
    ) {
        self.trajectory.trajectory.push(TrajectoryStep {
            action: action.to_owned(),
            observation: observation.to_owned(),
            response: response.to_owned(),
            thought: thought.to_owned(),
            state: state.unwrap_or_else(|| serde_json::json!({})),
            execution_time: elapsed.as_secs_f64(),
            ..TrajectoryStep::default()
        });
    }

    /// A turn that ran nothing: recorded in the trajectory, never in the history.
    fn record_failure(&mut self, response: &str, message: &str) {
        self.trajectory.trajectory.push(TrajectoryStep {
            response: response.to_owned(),
            thought: response.to_owned(),
            observation: message.to_owned(),
            state: serde_json::json!({}),
            format_error: Some(message.to_owned()),
            ..TrajectoryStep::default()
        });
    }

    fn take_submission(&mut self) -> Option<Vec<u8>> {
        self.submission.take()
    }

    fn sync_stats(&mut self) {
        let stats = self.model.stats();
        let info: &mut Info = &mut self.trajectory.info;
        info.model_stats.instance_cost = stats.instance_cost;
        info.model_stats.tokens_sent = stats.tokens_sent;
        info.model_stats.tokens_received = stats.tokens_received;
        info.model_stats.api_calls = stats.api_calls;
        info.model_stats.cache_read_tokens = stats.cache_read_tokens;
        info.model_stats.cache_write_tokens = stats.cache_write_tokens;
    }
}

fn turn_kind(step: &StepOutput, response: &str) -> TurnKind {
    let response = response.to_owned();
    if step.submission.is_some() {
        return TurnKind::Submitted { response };
    }
    let result = if step.timed_out {
        CommandResult::TimedOut
    } else if step.failed || step.lint_rejected {
        CommandResult::Failed
    } else {
        CommandResult::Completed
    };
    TurnKind::Executed { response, result }
}

/// The text stored as the model's response: its prose plus, for tool calls, a readable line.
fn response_text(response: &ModelResponse) -> String {
    let mut text = response.text.clone();
    for call in &response.tool_calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[tool call] {}({})", call.name, call.arguments));
    }
    text
}

/// The messages a re-ask appends to the stored history: the failed answer and the error. Tool
/// calls are answered with tool results, as the APIs require.
fn retry_messages(response: &ModelResponse, error: String) -> Vec<Message> {
    let mut messages = vec![Message::assistant(
        response.text.clone(),
        response.tool_calls.clone(),
    )];
    if response.tool_calls.is_empty() {
        messages.push(Message::user(error));
    } else {
        for call in &response.tool_calls {
            messages.push(Message::tool(call.id.clone(), error.clone()));
        }
    }
    messages
}

/// The history as model messages.
fn to_messages(items: &[HistoryItem]) -> Vec<Message> {
    items
        .iter()
        .map(|item| match item.role {
            Role::System => Message::system(item.content.clone()),
            Role::User => Message::user(item.content.clone()),
            Role::Assistant => {
                let calls: Vec<ToolCall> = item
                    .tool_calls
                    .clone()
                    .and_then(|value| serde_json::from_value(value).ok())
                    .unwrap_or_default();
                Message::assistant(item.content.clone(), calls)
            }
            Role::Tool => {
                let id = item
                    .tool_call_ids
                    .as_ref()
                    .and_then(|ids| ids.first())
                    .cloned()
                    .unwrap_or_default();
                Message::tool(id, item.content.clone())
            }
        })
        .collect()
}

fn exit_status_named(name: &str) -> ExitStatus {
    ExitStatus::ALL
        .into_iter()
        .find(|s| s.as_str() == name)
        .unwrap_or(ExitStatus::ExitError)
}

/// A sandbox failure ends the instance: a dead container is an environment error.
fn environment_status(error: &SandboxError) -> ExitStatus {
    match error {
        SandboxError::ContainerDied { .. } | SandboxError::Docker(_) | SandboxError::Session(_) => {
            ExitStatus::ExitEnvironmentError
        }
        _ => ExitStatus::ExitError,
    }
}
