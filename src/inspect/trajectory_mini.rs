//! mini-swe-agent's trajectories read into steps, one pass as for the others: format
//! `mini-swe-agent-1` (mini 1.x) and `mini-swe-agent-1.1` (mini 2.x, and aci's own
//! [`crate::trajectory::mini::to_mini`]). Both keep the conversation only, as `messages`; each
//! answer of the model becomes a step (one per command when it made several tool calls), whose
//! observation is the message that came back for it:
//!
//! - `system`: the system prompt; the first `user` message before any answer: the task.
//! - `assistant`: a step. Its commands are its `extra.actions[].command` (1.1), else the one
//!   ```` ```bash ```` block of its text ([`split_action`], 1); an answer of 1 with no block or
//!   with several was a format error, and the `user` message after it is the error.
//! - `user` or `tool`: the observation of the next command of the last answer waiting for one;
//!   with `extra.interrupt_type: FormatError` (1.1) a rejected answer of its own, the answer in
//!   `extra.model_response` (mini 2.x does not keep the rejected answer as a message). A message
//!   no command waits for (1's empty message when a limit is reached) is no step.
//! - `exit` (1.1): the end; exit status and submission are read from `info` as for the others.

use std::io::BufRead;

use super::{Reading, StepView, Text, content, string_value, text};
use crate::inspect::bounded::{Collector, Matcher};
use crate::inspect::scan::{Kind, ScanError, Scanner};
use crate::trajectory::mini::split_action;

/// One message as kept.
#[derive(Default)]
struct MiniMessage {
    role: String,
    content: Text,
    /// Lint rejections in the content.
    lint: usize,
    /// `extra.actions[].command`, when the message lists its actions.
    actions: Option<Vec<Text>>,
    /// `extra.interrupt_type`.
    interrupt_type: String,
    /// `extra.model_response`: the rejected answer of a format error.
    model_response: Option<Text>,
}

/// The steps of the last answer, waiting for their observations.
#[derive(Default)]
struct Answer {
    steps: Vec<StepView>,
    /// How many of them have their observation.
    observed: usize,
    /// How many wait for one.
    awaited: usize,
    /// The answer was rejected (mini 1.x): the next message is the format error.
    rejected: bool,
}

impl Reading {
    /// Reads a mini trajectory's `messages` list into steps.
    pub(super) fn messages<R: BufRead>(
        &mut self,
        scanner: &mut Scanner<R>,
    ) -> Result<(), ScanError> {
        let mut answer = Answer::default();
        let mut answered = false;
        scanner.begin_array()?;
        let mut first = true;
        while scanner.next_element(&mut first)? {
            if scanner.peek_kind()? != Kind::Object {
                scanner.skip()?;
                continue;
            }
            let message = mini_message(scanner)?;
            match message.role.as_str() {
                "system" => {
                    if self.view.system.is_none() {
                        self.view.system = Some(message.content);
                    }
                }
                "assistant" => {
                    self.flush(&mut answer);
                    answer = self.answer(message);
                    answered = true;
                    if answer.awaited == 0 && !answer.rejected {
                        self.flush(&mut answer);
                    }
                }
                "user"
                    if !answered
                        && self.view.task.is_none()
                        && message.interrupt_type.is_empty() =>
                {
                    self.view.task = Some(message.content);
                }
                "user" | "tool" => {
                    if message.interrupt_type == "FormatError" {
                        self.flush(&mut answer);
                        let response = message.model_response.unwrap_or_default();
                        answer.steps.push(StepView {
                            thought: response.clone(),
                            response,
                            format_error: Some(message.content),
                            ..StepView::default()
                        });
                        self.flush(&mut answer);
                    } else if answer.rejected {
                        if let Some(step) = answer.steps.first_mut() {
                            step.format_error = Some(message.content);
                        }
                        self.flush(&mut answer);
                    } else if answer.observed < answer.awaited {
                        if let Some(step) = answer.steps.get_mut(answer.observed) {
                            step.observation = message.content;
                            self.view.summary.lint_rejections += message.lint;
                        }
                        answer.observed += 1;
                        if answer.observed == answer.awaited {
                            self.flush(&mut answer);
                        }
                    }
                }
                _ => self.flush(&mut answer),
            }
        }
        self.flush(&mut answer);
        Ok(())
    }

    /// The steps of an answer: one per listed action, else the one command of its text.
    fn answer(&self, message: MiniMessage) -> Answer {
        let response = message.content;
        let split = response.whole().and_then(split_action);
        let thought = split
            .as_ref()
            .map_or_else(|| response.clone(), |(thought, _)| Text::of(thought));
        let Some(actions) = message.actions else {
            let mut answer = Answer::default();
            match split {
                Some((_, action)) => {
                    answer.awaited = 1;
                    answer.steps.push(StepView {
                        action: Text::of(&action),
                        thought,
                        response,
                        ..StepView::default()
                    });
                }
                // Too long to parse here: shown as it is, with what came back.
                None if response.whole().is_none() => {
                    answer.awaited = 1;
                    answer.steps.push(StepView {
                        thought,
                        response,
                        ..StepView::default()
                    });
                }
                None => {
                    answer.rejected = true;
                    answer.steps.push(StepView {
                        thought,
                        response,
                        ..StepView::default()
                    });
                }
            }
            return answer;
        };
        let mut steps: Vec<StepView> = actions
            .into_iter()
            .map(|action| StepView {
                action,
                ..StepView::default()
            })
            .collect();
        let awaited = steps.len();
        match steps.first_mut() {
            Some(step) => {
                step.thought = thought;
                step.response = response;
            }
            None => steps.push(StepView {
                thought,
                response,
                ..StepView::default()
            }),
        }
        Answer {
            steps,
            awaited,
            ..Answer::default()
        }
    }

    /// Numbers and keeps the steps of `answer`, which is left empty.
    fn flush(&mut self, answer: &mut Answer) {
        for mut step in std::mem::take(answer).steps {
            self.view.summary.steps += 1;
            step.number = self.view.summary.steps;
            if step.format_error.is_some() {
                self.view.summary.format_errors += 1;
            }
            self.keep_step(step);
        }
    }
}

/// A message's `role`, `content` and what its `extra` says of actions and format errors.
fn mini_message<R: BufRead>(scanner: &mut Scanner<R>) -> Result<MiniMessage, ScanError> {
    let mut message = MiniMessage::default();
    scanner.begin_object()?;
    let mut first = true;
    while let Some(key) = scanner.next_key(&mut first)? {
        match key.as_str() {
            "role" => message.role = short(text(scanner, true)?),
            "content" if scanner.peek_kind()? == Kind::String => {
                let mut collector = Collector::new(true);
                collector.lint = Some(Matcher::new());
                if let Some(read) = string_value(scanner, collector)? {
                    message.content = read.text;
                    message.lint = read.lint;
                }
            }
            "content" => message.content = content(scanner)?,
            "extra" if scanner.peek_kind()? == Kind::Object => extra(scanner, &mut message)?,
            _ => scanner.skip()?,
        }
    }
    Ok(message)
}

/// The head of a short string (a role, an interrupt's type), or empty.
fn short(text: Option<Text>) -> String {
    text.map(|t| t.head().to_owned()).unwrap_or_default()
}

fn extra<R: BufRead>(scanner: &mut Scanner<R>, message: &mut MiniMessage) -> Result<(), ScanError> {
    scanner.begin_object()?;
    let mut first = true;
    while let Some(key) = scanner.next_key(&mut first)? {
        match key.as_str() {
            "actions" if scanner.peek_kind()? == Kind::Array => {
                let mut actions = Vec::new();
                scanner.begin_array()?;
                let mut first_action = true;
                while scanner.next_element(&mut first_action)? {
                    actions.push(command(scanner)?);
                }
                message.actions = Some(actions);
            }
            "interrupt_type" => message.interrupt_type = short(text(scanner, true)?),
            "model_response" => message.model_response = text(scanner, true)?,
            _ => scanner.skip()?,
        }
    }
    Ok(())
}

/// An action's `command` (empty when it has none).
fn command<R: BufRead>(scanner: &mut Scanner<R>) -> Result<Text, ScanError> {
    let mut command = Text::default();
    if scanner.peek_kind()? != Kind::Object {
        scanner.skip()?;
        return Ok(command);
    }
    scanner.begin_object()?;
    let mut first = true;
    while let Some(key) = scanner.next_key(&mut first)? {
        match key.as_str() {
            "command" => command = text(scanner, true)?.unwrap_or_default(),
            _ => scanner.skip()?,
        }
    }
    Ok(command)
}
