//! `human`: a person types the actions (`aci shell`). One line is one action, except that a
//! command with an end marker (`edit` … `end_of_edit`) reads on until the marker line.

use std::fmt;
use std::io::{self, BufRead, BufReader, Write};

use super::cost::Ledger;
use super::{Model, ModelConfig, ModelError, ModelResponse, ModelStats, QueryRequest, Role, Usage};

/// Where the person's input comes from and where prompts go.
struct Terminal {
    reader: Box<dyn BufRead + Send>,
    writer: Box<dyn Write + Send>,
}

/// A person at the keyboard, standing in for the model.
pub struct HumanModel {
    /// `None` only while a read is in flight on the blocking pool.
    terminal: Option<Terminal>,
    /// `(command, end marker)` pairs, e.g. `("edit", "end_of_edit")`.
    multiline: Vec<(String, String)>,
    echo: bool,
    ledger: Ledger,
}

impl fmt::Debug for HumanModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HumanModel")
            .field("multiline", &self.multiline)
            .field("echo", &self.echo)
            .field("ledger", &self.ledger)
            .finish_non_exhaustive()
    }
}

impl HumanModel {
    /// Reads stdin and prompts on stderr, echoing each observation before the prompt.
    pub fn stdin(config: &ModelConfig) -> Self {
        Self::with_io(BufReader::new(io::stdin()), io::stderr(), config)
    }

    /// Reads `reader` and prompts on `writer` (tests pass in-memory buffers).
    pub fn with_io(
        reader: impl BufRead + Send + 'static,
        writer: impl Write + Send + 'static,
        config: &ModelConfig,
    ) -> Self {
        HumanModel {
            terminal: Some(Terminal {
                reader: Box::new(reader),
                writer: Box::new(writer),
            }),
            multiline: vec![("edit".to_owned(), "end_of_edit".to_owned())],
            echo: true,
            ledger: Ledger::free("human", config),
        }
    }

    /// Replaces the multi-line commands (by default `edit` … `end_of_edit`), e.g. with the
    /// `end_name`s of the enabled ACI commands.
    pub fn with_multiline_commands(
        mut self,
        commands: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        self.multiline = commands.into_iter().collect();
        self
    }

    /// Whether the last observation is printed before each prompt (on by default; turn it off
    /// when the caller shows observations itself).
    pub fn echo_observations(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }
}

impl Model for HumanModel {
    fn name(&self) -> &str {
        "human"
    }

    async fn query(&mut self, request: QueryRequest<'_>) -> Result<ModelResponse, ModelError> {
        self.ledger.check_before_call()?;
        let mut terminal = self
            .terminal
            .take()
            .ok_or_else(|| ModelError::Interrupted {
                message: "the terminal was lost by an earlier interrupted read".to_owned(),
            })?;
        let shown = request
            .messages
            .last()
            .filter(|message| self.echo && matches!(message.role, Role::User | Role::Tool))
            .map(|message| message.content.clone());
        let multiline = self.multiline.clone();
        // Reading a terminal blocks, so it runs on the blocking pool.
        let (terminal, action) = tokio::task::spawn_blocking(move || {
            let action = read_action(&mut terminal, shown.as_deref(), &multiline);
            (terminal, action)
        })
        .await
        .map_err(|error| ModelError::Interrupted {
            message: format!("reading input failed: {error}"),
        })?;
        self.terminal = Some(terminal);
        let action = action?;
        self.ledger.record(&Usage::default())?;
        Ok(ModelResponse {
            text: action.clone(),
            raw_action: Some(action),
            ..ModelResponse::default()
        })
    }

    fn stats(&self) -> &ModelStats {
        self.ledger.stats()
    }
}

/// Shows `observation`, prompts, and reads one action; blank lines are skipped.
fn read_action(
    terminal: &mut Terminal,
    observation: Option<&str>,
    multiline: &[(String, String)],
) -> Result<String, ModelError> {
    if let Some(text) = observation {
        write_prompt(terminal, &format!("{text}\n"))?;
    }
    loop {
        write_prompt(terminal, "> ")?;
        let Some(line) = read_line(terminal)? else {
            return Err(ModelError::Interrupted {
                message: "input ended".to_owned(),
            });
        };
        if line.trim().is_empty() {
            continue;
        }
        let command = line.split_whitespace().next().unwrap_or_default();
        let Some((command, end)) = multiline.iter().find(|(name, _)| name == command) else {
            return Ok(line);
        };
        let mut lines = vec![line];
        loop {
            let Some(next) = read_line(terminal)? else {
                return Err(ModelError::Interrupted {
                    message: format!("input ended inside `{command}` before `{end}`"),
                });
            };
            let done = next.trim_end() == end;
            lines.push(next);
            if done {
                return Ok(lines.join("\n"));
            }
        }
    }
}

/// One line without its line ending, or `None` at end of input.
fn read_line(terminal: &mut Terminal) -> Result<Option<String>, ModelError> {
    let mut line = String::new();
    let read = terminal
        .reader
        .read_line(&mut line)
        .map_err(|error| ModelError::Interrupted {
            message: format!("cannot read input: {error}"),
        })?;
    if read == 0 {
        return Ok(None);
    }
    let trimmed = line.strip_suffix('\n').unwrap_or(&line);
    Ok(Some(
        trimmed.strip_suffix('\r').unwrap_or(trimmed).to_owned(),
    ))
}

fn write_prompt(terminal: &mut Terminal, text: &str) -> Result<(), ModelError> {
    terminal
        .writer
        .write_all(text.as_bytes())
        .and_then(|()| terminal.writer.flush())
        .map_err(|error| ModelError::Interrupted {
            message: format!("cannot write the prompt: {error}"),
        })
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::model::Message;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn human(input: &str) -> (HumanModel, Shared) {
        let out = Shared::default();
        let model = HumanModel::with_io(
            Cursor::new(input.to_owned().into_bytes()),
            out.clone(),
            &ModelConfig::default(),
        );
        (model, out)
    }

    async fn next(model: &mut HumanModel, messages: &[Message]) -> Result<String, ModelError> {
        let request = QueryRequest {
            messages,
            tools: None,
        };
        let response = model.query(request).await?;
        assert_eq!(response.text, response.raw_action.clone().unwrap());
        Ok(response.raw_action.unwrap())
    }

    #[tokio::test]
    async fn one_line_is_one_action_and_blank_lines_are_skipped() {
        let (mut model, _) = human("\n  \nopen a.py\r\ngoto 5\n");
        assert_eq!(next(&mut model, &[]).await.unwrap(), "open a.py");
        assert_eq!(next(&mut model, &[]).await.unwrap(), "goto 5");
        assert_eq!(model.stats().api_calls, 2);
        assert_eq!(model.stats().instance_cost, 0.0);
    }

    #[tokio::test]
    async fn edit_reads_until_end_of_edit() {
        let input = "edit 1:2\ndef f():\n    return 1\nend_of_edit\nsubmit\n";
        let (mut model, _) = human(input);
        assert_eq!(
            next(&mut model, &[]).await.unwrap(),
            "edit 1:2\ndef f():\n    return 1\nend_of_edit"
        );
        assert_eq!(next(&mut model, &[]).await.unwrap(), "submit");
    }

    #[tokio::test]
    async fn other_end_markers_can_be_configured() {
        let (model, _) = human("create_file x\nbody\nEOF\n");
        let mut model = model.with_multiline_commands([("create_file".into(), "EOF".into())]);
        assert_eq!(
            next(&mut model, &[]).await.unwrap(),
            "create_file x\nbody\nEOF"
        );
    }

    #[tokio::test]
    async fn end_of_input_is_an_interruption() {
        let (mut model, _) = human("edit 1:1\nx = 1\n");
        let error = next(&mut model, &[]).await.unwrap_err();
        assert!(matches!(error, ModelError::Interrupted { .. }));
        assert!(error.to_string().contains("end_of_edit"), "{error}");
        assert_eq!(error.exit_status().as_str(), "early_exit");
        let error = next(&mut model, &[]).await.unwrap_err();
        assert!(error.to_string().contains("input ended"), "{error}");
    }

    #[tokio::test]
    async fn the_last_observation_is_shown_before_the_prompt() {
        let (mut model, out) = human("ls\nls\n");
        let messages = [Message::system("sys"), Message::user("[File: a.py]")];
        next(&mut model, &messages).await.unwrap();
        let mut model = model.echo_observations(false);
        next(&mut model, &messages).await.unwrap();
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(shown, "[File: a.py]\n> > ");
    }
}
