//! Prompt rendering: the config's minijinja templates with strict undefined variables, so a
//! typo in a template is an error when the run starts, not a silent empty string.

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::config::Templates;

/// The names of the templates, as in the config.
const NAMES: [&str; 8] = [
    "system",
    "demonstration",
    "instance",
    "next_step",
    "next_step_no_output",
    "format_error",
    "blocked",
    "observation",
];

/// A template could not be compiled or rendered.
#[derive(Debug, thiserror::Error)]
#[error("template agent.templates.{name}: {message}")]
pub struct TemplateError {
    /// Which template.
    pub name: String,
    /// minijinja's message (it names the line and the variable).
    pub message: String,
}

/// The compiled templates.
pub struct Prompts {
    env: Environment<'static>,
}

impl Prompts {
    /// Compiles every template; a syntax error is reported with the template's name.
    pub fn new(templates: &Templates) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let sources = [
            &templates.system,
            &templates.demonstration,
            &templates.instance,
            &templates.next_step,
            &templates.next_step_no_output,
            &templates.format_error,
            &templates.blocked,
            &templates.observation,
        ];
        for (name, source) in NAMES.iter().zip(sources) {
            env.add_template_owned(*name, source.clone())
                .map_err(|e| TemplateError {
                    name: (*name).to_owned(),
                    message: e.to_string(),
                })?;
        }
        Ok(Self { env })
    }

    /// Renders template `name` with `context` (a minijinja value, e.g. from `context!`).
    pub fn render(&self, name: &str, context: &Value) -> Result<String, TemplateError> {
        let error = |e: minijinja::Error| TemplateError {
            name: name.to_owned(),
            message: format!("{e:#}"),
        };
        self.env
            .get_template(name)
            .map_err(error)?
            .render(context)
            .map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use minijinja::context;

    use super::*;

    fn templates() -> Templates {
        Templates {
            system: "docs: {{ command_docs }}".to_owned(),
            next_step: "{{ observation }}\n(Open file: {{ open_file }})".to_owned(),
            ..Templates::default()
        }
    }

    #[test]
    fn templates_render_their_variables() {
        let prompts = Prompts::new(&templates()).unwrap();
        let text = prompts
            .render(
                "next_step",
                &context! { observation => "out", open_file => "n/a" },
            )
            .unwrap();
        assert_eq!(text, "out\n(Open file: n/a)");
    }

    #[test]
    fn an_undefined_variable_is_an_error_that_names_the_template() {
        let prompts = Prompts::new(&templates()).unwrap();
        let error = prompts.render("system", &context! {}).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("template agent.templates.system: "),
            "{error}"
        );
        assert!(error.to_string().contains("undefined"), "{error}");
    }

    #[test]
    fn a_syntax_error_is_reported_when_compiling() {
        let broken = Templates {
            instance: "{% if %}".to_owned(),
            ..Templates::default()
        };
        let error = Prompts::new(&broken).err().unwrap();
        assert_eq!(error.name, "instance");
    }
}
