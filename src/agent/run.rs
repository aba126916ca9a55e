//! The turn loop: ask the model, parse its answer, run the action through the ACI, let the
//! pure stop decider say continue or stop, save the trajectory. Everything with a policy lives
//! elsewhere ([`super::stop`], [`super::history`], [`super::prompt`], [`crate::aci`]).
//!
//! What the model is sent on each turn is the stored history (through the history processor),
//! plus what is pending from the turn before and is never stored:
//! - after a malformed answer, that answer and the `format_error` (or `blocked`) text, as a
//!   re-ask on a temporary history;
//! - the latest nudge from the stop decider, if any. After an answer without a command the
//!   nudge takes the place of the format error, so the model hears one voice, not two.

use std::time::{Duration, Instant};

use minijinja::{Value, context};

use super::history::{self, HistoryItem, MessageType, Role};
use super::prompt::{Prompts, TemplateError};
use super::stop::{
    self, CommandResult, Decision, ExitStatus, LoopState, StopPolicy, TurnKind, TurnOutcome,
};
use crate::aci::parse::{self, ErrorCode, FormatError};
use crate::aci::registry::{CommandSpec, Registry};
use crate::aci::{Aci, StepOutput};
use crate::config::{AgentConfig, ParserKind};
use crate::hint::{Hint, with_hint};
use crate::model::{Message, Model, ModelError, ModelResponse, QueryRequest, ToolCall};
use crate::protocol::RecordedStatus;
use crate::sandbox::{Sandbox, SandboxError};
use crate::trajectory::{Info, Trajectory, TrajectoryStep, edited_files};

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
    /// Keys the trajectory's `info` starts with (`env_image`: the image the run started from).
    pub info_extra: serde_json::Map<String, serde_json::Value>,
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
    /// Why the episode ended on a failure (the model API, a template, the sandbox); `None`
    /// when it ended its own way. Its last step records it with its hint
    /// ([`crate::hint::with_hint`]).
    pub failure: Option<EpisodeFailure>,
}

impl Outcome {
    /// The model's failure would end every other instance of the run too
    /// ([`ModelError::is_run_level`]: a rejected key), so the run should stop; the episode
    /// was recorded as `early_exit`, which resume runs again.
    pub fn stops_run(&self) -> bool {
        matches!(&self.failure, Some(EpisodeFailure::Model(error)) if error.is_run_level())
    }
}

/// What ended an episode on a failure.
#[derive(Debug, thiserror::Error)]
pub enum EpisodeFailure {
    /// The model could not answer (its API kept failing, a key was rejected, a limit hit).
    #[error(transparent)]
    Model(ModelError),
    /// A template failed to render.
    #[error(transparent)]
    Template(TemplateError),
    /// The sandbox failed while an action ran.
    #[error(transparent)]
    Sandbox(SandboxError),
}

impl Hint for EpisodeFailure {
    fn hint(&self) -> Option<String> {
        match self {
            EpisodeFailure::Model(error) => error.hint(),
            EpisodeFailure::Template(_) | EpisodeFailure::Sandbox(_) => None,
        }
    }
}

/// Failures that end the run for every instance (a broken template), not just this one. Only
/// the opening prompts raise it: a template that fails later ends the instance with
/// `exit_error`, after the autosubmission, so no finished work is lost.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// A template failed to render.
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// The `exit`-like actions that end the instance instead of running (SWE-agent's `exit`,
/// v1's `exit_forfeit`, v0's `skip`).
const SPECIAL_EXITS: [(&str, ExitStatus); 3] = [
    ("exit", ExitStatus::ExitCommand),
    ("exit_forfeit", ExitStatus::ExitForfeit),
    ("skip", ExitStatus::Skipped),
];

/// What the model's answer turned into: one action, or with `bash_tool_calls` one per tool
/// call, run in order.
enum Parsed {
    Actions {
        thought: String,
        actions: Vec<String>,
    },
    Invalid(FormatError),
}

/// What running one action came to.
enum Ran {
    /// It ran: the observation the model reads, and what kind of turn it makes.
    Observed { content: String, kind: TurnKind },
    /// The sandbox failed: the episode ends.
    Ended(TurnKind),
}

/// A malformed answer and the text to re-ask with.
struct Requery {
    response: ModelResponse,
    message: String,
}

/// What goes with the next request besides the stored history. Never stored.
#[derive(Default)]
struct Pending {
    requery: Option<Requery>,
    nudge: Option<String>,
    /// The nudge replaces the requery's message instead of following it.
    nudge_replaces_error: bool,
}

/// One turn as the loop saw it.
struct TurnResult {
    kind: TurnKind,
    requery: Option<Requery>,
}

impl TurnResult {
    fn ended(exit_status: ExitStatus) -> Self {
        TurnResult {
            kind: TurnKind::Ended { exit_status },
            requery: None,
        }
    }
}

struct Loop<'e, 'a, M: Model, S: Sandbox> {
    episode: &'e mut Episode<'a>,
    model: &'e mut M,
    aci: &'e mut Aci<S>,
    /// The commands a function call may name (the ACI's plus `bash`); `None` for
    /// `thought_action`.
    tool_registry: Option<Registry>,
    /// The same as OpenAI tools, sent with every request (with `bash_tool_calls`, the `bash`
    /// tool alone).
    tools: Option<serde_json::Value>,
    /// `agent.action_regex`, compiled, for the `action_regex` parser (checked at start-up).
    action_regex: Option<regex::Regex>,
    trajectory: Trajectory,
    started: Instant,
    submission: Option<Vec<u8>>,
    /// The nudge sent with the current request, recorded on the steps it produced.
    nudge: Option<String>,
    /// [`Outcome::failure`].
    failure: Option<EpisodeFailure>,
}

/// Runs one instance to its end and returns the trajectory and the submission.
pub async fn run_episode<M: Model, S: Sandbox>(
    episode: &mut Episode<'_>,
    model: &mut M,
    aci: &mut Aci<S>,
) -> Result<Outcome, LoopError> {
    let mut this = Loop::new(episode, model, aci);
    this.start_history().await?;
    this.save();
    let mut state = LoopState::default();
    let mut pending = Pending::default();
    let exit_status = loop {
        let turn = match this.turn(&pending).await {
            Ok(turn) => turn,
            Err(LoopError::Template(error)) => {
                this.record_exit("", &error.to_string());
                this.failure = Some(EpisodeFailure::Template(error));
                TurnResult::ended(ExitStatus::ExitError)
            }
        };
        let outcome = TurnOutcome {
            kind: turn.kind,
            instance_cost: this.model.stats().instance_cost,
            elapsed: this.started.elapsed(),
        };
        let decision = stop::decide(&outcome, &state, this.episode.policy);
        state = state.record(&outcome, &decision);
        this.sync_stats();
        this.save();
        match decision {
            Decision::Stop { exit_status } => break exit_status,
            Decision::Continue { nudge } => {
                pending = Pending {
                    nudge_replaces_error: matches!(outcome.kind, TurnKind::NoAction { .. })
                        && turn.requery.is_some()
                        && nudge.is_some(),
                    requery: turn.requery,
                    nudge: nudge.map(|n| n.text),
                };
            }
        }
    };
    let submission = this.finish(exit_status).await;
    Ok(Outcome {
        trajectory: this.trajectory,
        submission,
        failure: this.failure,
    })
}

impl<'e, 'a, M: Model, S: Sandbox> Loop<'e, 'a, M, S> {
    fn new(episode: &'e mut Episode<'a>, model: &'e mut M, aci: &'e mut Aci<S>) -> Self {
        let bash_tool = &episode.config.bash_tool;
        let bash =
            CommandSpec::bash_tool_with(&bash_tool.description, &bash_tool.command_description);
        let tool_registry = match episode.config.parser {
            ParserKind::FunctionCalling if episode.config.enable_bash_tool => {
                Some(with_bash_tool(aci.registry(), bash))
            }
            ParserKind::FunctionCalling => Some(aci.registry().clone()),
            ParserKind::BashToolCalls => Some(with_bash_tool(&Registry::default(), bash)),
            ParserKind::ThoughtAction | ParserKind::ActionRegex => None,
        };
        let action_regex = (episode.config.parser == ParserKind::ActionRegex)
            .then(|| parse::compile_action_regex(&episode.config.action_regex).ok())
            .flatten();
        let placeholders = aci.placeholders();
        let tools = tool_registry
            .as_ref()
            .map(|registry| registry.openai_tools(&placeholders));
        let mut trajectory = Trajectory {
            environment: "aci".to_owned(),
            ..Trajectory::default()
        };
        trajectory.info.extra.clone_from(&episode.info_extra);
        Loop {
            episode,
            model,
            aci,
            tool_registry,
            tools,
            action_regex,
            trajectory,
            started: Instant::now(),
            submission: None,
            nudge: None,
            failure: None,
        }
    }

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

    fn save(&mut self) {
        (self.episode.save)(&self.trajectory);
    }

    /// The stored history through the history processor, then what is pending.
    fn request_messages(&self, pending: &Pending) -> Vec<Message> {
        let mut messages = to_messages(&history::process(
            &self.trajectory.history,
            &self.episode.config.history,
        ));
        if let Some(requery) = &pending.requery {
            let message = match (&pending.nudge, pending.nudge_replaces_error) {
                (Some(nudge), true) => nudge.clone(),
                _ => requery.message.clone(),
            };
            messages.extend(requery_messages(&requery.response, message));
        }
        if let Some(nudge) = pending
            .nudge
            .as_ref()
            .filter(|_| !pending.nudge_replaces_error)
        {
            messages.push(Message::user(nudge.clone()));
        }
        messages
    }

    /// One model call and what came of it.
    async fn turn(&mut self, pending: &Pending) -> Result<TurnResult, LoopError> {
        let messages = self.request_messages(pending);
        self.nudge.clone_from(&pending.nudge);
        let request = QueryRequest {
            messages: &messages,
            tools: self.tools.as_ref(),
        };
        let response = match self.model.query(request).await {
            Ok(response) => response,
            Err(error) => {
                self.record_exit("", &with_hint(&error));
                let ended = if error.is_run_level() {
                    ExitStatus::EarlyExit
                } else {
                    error.exit_status()
                };
                // Input that ended (a person's Ctrl-D) is how a session ends, not a failure.
                if !matches!(error, ModelError::Interrupted { .. }) {
                    self.failure = Some(EpisodeFailure::Model(error));
                }
                return Ok(TurnResult::ended(ended));
            }
        };
        let text = response_text(&response);
        let (thought, actions) = match self.parse(&response) {
            Parsed::Actions { thought, actions } => (thought, actions),
            Parsed::Invalid(error) => {
                let message = self.format_error_text(&error, !response.tool_calls.is_empty())?;
                let kind = if matches!(error.error_code, ErrorCode::NoAction | ErrorCode::Missing) {
                    TurnKind::NoAction { response: text }
                } else {
                    TurnKind::FormatError { response: text }
                };
                return Ok(self.requery(kind, response, message));
            }
        };
        // Checked before anything runs: an exit or a refused command among several calls ends
        // or rejects the answer as it would alone.
        for action in &actions {
            if let Some((_, exit_status)) = SPECIAL_EXITS
                .iter()
                .find(|(name, _)| action.trim() == *name)
            {
                self.record_step(&text, &thought, action, "Exited", Duration::ZERO, None);
                return Ok(TurnResult::ended(*exit_status));
            }
            if let Some(refusal) = self.aci.blocked(action) {
                let message =
                    self.render_error("blocked", context! { exception_message => refusal })?;
                let kind = TurnKind::FormatError { response: text };
                return Ok(self.requery(kind, response, message));
            }
        }
        let kind = self.execute(&response, &text, thought, actions).await?;
        Ok(TurnResult {
            kind,
            requery: None,
        })
    }

    /// A turn that ran nothing: recorded in the trajectory; the next request re-asks with
    /// `message`, which only `agent.format_errors_in_history` stores (mini's way).
    fn requery(&mut self, kind: TurnKind, response: ModelResponse, message: String) -> TurnResult {
        self.record_failure(&response_text(&response), &message);
        if self.episode.config.format_errors_in_history {
            let stored = HistoryItem::new(Role::User, message, MessageType::FormatError);
            self.push(stored);
            return TurnResult {
                kind,
                requery: None,
            };
        }
        let requery = Some(Requery { response, message });
        TurnResult { kind, requery }
    }

    fn parse(&self, response: &ModelResponse) -> Parsed {
        if let Some(action) = &response.raw_action {
            // Replay and human answers carry their action; the thought is the text around a
            // fenced copy of it, when there is one.
            let thought = parse::thought_action(&response.text)
                .map_or_else(|_| response.text.clone(), |(thought, _)| thought);
            return Parsed::Actions {
                thought,
                actions: vec![action.clone()],
            };
        }
        let calls = || -> Vec<parse::ToolCall> {
            response
                .tool_calls
                .iter()
                .map(|c| parse::ToolCall {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect()
        };
        let one = |(thought, action): (String, String)| (thought, vec![action]);
        let parsed = match (&self.tool_registry, self.episode.config.parser) {
            (_, ParserKind::BashToolCalls) => {
                parse::bash_tool_calls(&calls()).map(|actions| (response.text.clone(), actions))
            }
            (None, _) => match &self.action_regex {
                Some(regex) => parse::action_regex(&response.text, regex).map(one),
                None => parse::thought_action(&response.text).map(one),
            },
            (Some(registry), _) => parse::function_calls_to_command(registry, &calls())
                .map(|action| (response.text.clone(), vec![action])),
        };
        match parsed {
            Ok((thought, actions)) => Parsed::Actions { thought, actions },
            Err(error) => Parsed::Invalid(error),
        }
    }

    fn format_error_text(
        &self,
        error: &FormatError,
        has_tool_calls: bool,
    ) -> Result<String, TemplateError> {
        let parser = match self.episode.config.parser {
            ParserKind::ThoughtAction => "thought_action",
            ParserKind::FunctionCalling => "function_calling",
            ParserKind::ActionRegex => "action_regex",
            ParserKind::BashToolCalls => "bash_tool_calls",
        };
        self.render_error(
            "format_error",
            context! {
                error_code => error.error_code.as_str(),
                exception_message => error.message.clone(),
                error => error.message.clone(),
                actions => error.actions.clone(),
                has_tool_calls => has_tool_calls,
                parser,
            },
        )
    }

    /// Renders an error template with its own variables over the episode's.
    fn render_error(&self, template: &str, own: Value) -> Result<String, TemplateError> {
        let variables = context! { ..own, ..self.episode.variables.clone() };
        self.episode.prompts.render(template, &variables)
    }

    /// Runs the actions in order (one, or with `bash_tool_calls` one per tool call) and stores
    /// the exchange: in the history the answer, then an observation per action that ran (a
    /// tool message answering its call); in the trajectory a step per action. A submission
    /// ends the turn there, so the calls after it do not run.
    async fn execute(
        &mut self,
        response: &ModelResponse,
        text: &str,
        thought: String,
        actions: Vec<String>,
    ) -> Result<TurnKind, LoopError> {
        let mut observations = Vec::new();
        let mut kind = None;
        for (index, action) in actions.iter().enumerate() {
            match self
                .run_action(response, text, &thought, action, index)
                .await?
            {
                Ran::Observed {
                    content,
                    kind: step_kind,
                } => {
                    let mut user = HistoryItem::new(Role::User, content, MessageType::Observation);
                    if let Some(call) = response.tool_calls.get(index) {
                        user.role = Role::Tool;
                        user.tool_call_ids = Some(vec![call.id.clone()]);
                    }
                    observations.push(user);
                    let submitted = matches!(step_kind, TurnKind::Submitted { .. });
                    kind = Some(step_kind);
                    if submitted {
                        break;
                    }
                }
                Ran::Ended(ended) => {
                    kind = Some(ended);
                    break;
                }
            }
        }
        if !observations.is_empty() {
            let ran = actions[..observations.len()].join("\n");
            self.push(assistant_item(response, &thought, &ran));
            for observation in observations {
                self.push(observation);
            }
        }
        Ok(kind.unwrap_or(TurnKind::NoAction {
            response: text.to_owned(),
        }))
    }

    /// Runs one action (the `index`th of the answer) and records its trajectory step; returns
    /// the observation as the model reads it, or how the episode ended when the sandbox failed.
    async fn run_action(
        &mut self,
        response: &ModelResponse,
        text: &str,
        thought: &str,
        action: &str,
        index: usize,
    ) -> Result<Ran, LoopError> {
        let started = Instant::now();
        let step = match self.aci.execute(action).await {
            Ok(step) => step,
            Err(error) => {
                let observation = error.to_string();
                self.record_step(text, thought, action, &observation, started.elapsed(), None);
                let exit_status = environment_status(&error);
                self.failure = Some(EpisodeFailure::Sandbox(error));
                return Ok(Ran::Ended(TurnKind::Ended { exit_status }));
            }
        };
        let elapsed = started.elapsed();
        let state = self.state_value().await;
        let (observation, _) = history::truncate_observation(
            &step.observation,
            self.episode.config.max_observation_length,
        );
        let content = if self.episode.config.templates.observation.is_empty() {
            // v0 and v1 test `observation.strip() == ""`.
            let template = if observation.trim().is_empty() {
                "next_step_no_output"
            } else {
                "next_step"
            };
            self.render_with_state(template, &state, &observation)?
        } else {
            let output = context! {
                output => step.raw_output.clone(),
                returncode => step.returncode,
                exception_info => step.exception_info.clone(),
            };
            self.render_error("observation", context! { output })?
        };
        self.record_step(
            text,
            thought,
            action,
            &step.observation,
            elapsed,
            Some(state),
        );
        if self.episode.config.mini_trajectory
            && let Some(last) = self.trajectory.trajectory.last_mut()
        {
            crate::trajectory::mini::record_output(
                last,
                &step.raw_output,
                step.returncode,
                &step.exception_info,
            );
            let calls: Vec<(&str, &str, &str)> = response
                .tool_calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            crate::trajectory::mini::record_call(last, index, &response.text, &calls);
        }
        if step.submission.is_some() {
            self.submission.clone_from(&step.submission);
        }
        Ok(Ran::Observed {
            content,
            kind: turn_kind(&step, text),
        })
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
        let state = match state {
            Some(state) => {
                let field = |key: &str| state.get(key).and_then(|v| v.as_str()).unwrap_or("n/a");
                crate::trajectory::v0_state(field("open_file"), field("working_dir"))
            }
            // Nothing ran: the environment is as the previous step left it (before any
            // step, nothing is known: an empty JSON object).
            None => self
                .trajectory
                .trajectory
                .last()
                .map_or_else(|| serde_json::json!("{}"), |step| step.state.clone()),
        };
        let observation = history::cap_stored_observation(
            observation,
            self.episode.config.max_stored_observation_length,
        );
        self.trajectory.trajectory.push(TrajectoryStep {
            action: action.to_owned(),
            observation,
            response: response.to_owned(),
            thought: thought.to_owned(),
            state,
            execution_time: elapsed.as_secs_f64(),
            nudge: self.nudge.clone(),
            ..TrajectoryStep::default()
        });
    }

    /// A malformed answer: recorded with its `format_error`, so a replay skips it.
    fn record_failure(&mut self, response: &str, message: &str) {
        self.record_step(response, response, "", message, Duration::ZERO, None);
        if let Some(step) = self.trajectory.trajectory.last_mut() {
            step.format_error = Some(message.to_owned());
        }
    }

    /// A turn that ended the instance before anything ran (the model API failed, a template
    /// broke): the reason is the step's thought and observation.
    fn record_exit(&mut self, response: &str, reason: &str) {
        self.record_step(response, reason, "", reason, Duration::ZERO, None);
    }

    /// Autosubmits after every exit but `submit`, and writes the outcome into the trajectory.
    async fn finish(&mut self, exit_status: ExitStatus) -> Option<Vec<u8>> {
        let submitted = self.submission.take();
        let info = &mut self.trajectory.info;
        let submission = record_stop(self.aci, info, exit_status, submitted).await;
        self.record_edited_files().await;
        self.sync_stats();
        self.save();
        submission
    }

    /// `info.edited_files30/50/70`: the files the submission modifies, read back from the
    /// repository (a file that cannot be read is left out).
    async fn record_edited_files(&mut self) {
        let patch = self.trajectory.info.submission.clone().unwrap_or_default();
        let mut contents = std::collections::BTreeMap::new();
        for file in edited_files::modified_files(&patch) {
            if let Ok(bytes) = self.aci.read_repo_file(&file.path).await {
                contents.insert(file.path, String::from_utf8_lossy(&bytes).into_owned());
            }
        }
        let [thirty, fifty, seventy] = edited_files::CONTEXT_LENGTHS
            .map(|context| Some(edited_files::edited_files(&patch, &contents, context)));
        let info = &mut self.trajectory.info;
        info.edited_files30 = thirty;
        info.edited_files50 = fifty;
        info.edited_files70 = seventy;
    }

    fn sync_stats(&mut self) {
        record_stats(&mut self.trajectory.info, self.model.stats());
        self.trajectory.info.wall_time = Some(self.started.elapsed().as_secs_f64());
    }
}

/// The `info` key that records why an autosubmission found no patch because it failed.
pub const SUBMISSION_ERROR: &str = "submission_error";

/// Records how an instance ended in `info`: after `submit`, its patch (`submitted`); after any
/// other stop, the autosubmission's diff of the working tree, recorded as
/// `submitted (<status>)` when it is not empty. A diff that cannot be taken is recorded as
/// [`SUBMISSION_ERROR`], so it does not read as "nothing changed". Returns the submission.
pub async fn record_stop<S: Sandbox>(
    aci: &mut Aci<S>,
    info: &mut Info,
    exit: ExitStatus,
    submitted: Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let submission = if exit.autosubmits() {
        match aci.submit().await {
            Ok(patch) => Some(patch).filter(|patch| !patch.is_empty()),
            Err(error) => {
                let message = format!("the autosubmission failed: {error}");
                info.extra.insert(
                    SUBMISSION_ERROR.to_owned(),
                    serde_json::Value::String(message),
                );
                None
            }
        }
    } else {
        submitted
    };
    let patch = submission.as_deref().filter(|patch| !patch.is_empty());
    info.exit_status = Some(RecordedStatus::after(exit, patch.is_some()));
    info.submission = patch.map(|patch| String::from_utf8_lossy(patch).into_owned());
    submission
}

/// Copies the model's counters into a trajectory's `info.model_stats` (v0's `total_cost` is
/// this instance's cost; see [`crate::trajectory::ModelStats`]), and stamps the version.
pub(crate) fn record_stats(info: &mut crate::trajectory::Info, stats: &crate::model::ModelStats) {
    info.model_stats.total_cost = Some(stats.instance_cost);
    info.model_stats.instance_cost = stats.instance_cost;
    info.model_stats.tokens_sent = stats.tokens_sent;
    info.model_stats.tokens_received = stats.tokens_received;
    info.model_stats.api_calls = stats.api_calls;
    info.model_stats.cache_read_tokens = stats.cache_read_tokens;
    info.model_stats.cache_write_tokens = stats.cache_write_tokens;
    info.aci_version = Some(env!("CARGO_PKG_VERSION").to_owned());
}

/// The ACI's commands plus v1's `bash` tool, which a function-calling model needs to run
/// anything that is not an ACI command. Kept apart from the ACI's registry: there, a line
/// starting with `bash` must stay shell input.
fn with_bash_tool(registry: &Registry, bash: CommandSpec) -> Registry {
    let mut tools = registry.clone();
    if tools.get("bash").is_none() {
        // The name is free (checked just above), so adding cannot fail.
        let _ = tools.add(bash);
    }
    tools
}

/// The model's answer as stored in the history: its text (without the readable tool-call
/// line of the trajectory), the parsed thought and action, and its tool calls.
fn assistant_item(response: &ModelResponse, thought: &str, action: &str) -> HistoryItem {
    let mut item = HistoryItem::new(Role::Assistant, response.text.clone(), MessageType::Action);
    item.thought = Some(thought.to_owned());
    item.action = Some(action.to_owned());
    if !response.tool_calls.is_empty() {
        item.tool_calls = serde_json::to_value(&response.tool_calls).ok();
    }
    item
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

/// The text stored as the model's response in the trajectory: its prose plus, for tool calls,
/// a readable line per call.
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

/// The messages a re-ask appends to the history it sends (never to the stored one): the
/// failed answer and the error. Tool calls are answered with tool results, as the APIs
/// require (Anthropic refuses a `tool_use` without its `tool_result`).
fn requery_messages(response: &ModelResponse, error: String) -> Vec<Message> {
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

/// A sandbox failure ends the instance: a dead container is an environment error; a task over
/// its disk quota ends with its own status.
fn environment_status(error: &SandboxError) -> ExitStatus {
    match error {
        SandboxError::OverDiskQuota { .. } => ExitStatus::ExitDiskQuota,
        SandboxError::ContainerDied { .. }
        | SandboxError::Docker(_)
        | SandboxError::Kubernetes(_)
        | SandboxError::Session(_) => ExitStatus::ExitEnvironmentError,
        _ => ExitStatus::ExitError,
    }
}
