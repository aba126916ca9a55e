//! Commands as data: the YAML files in `aci-commands/` and the Rust handlers match one to one;
//! `aci.commands` picks the commands the docs, the tool schemas and the ACI offer; a YAML entry
//! with a `script:` (`aci.custom_commands`) is a command that runs in the container.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};

use aci::aci::registry::{BUILTIN_COMMANDS, Registry};
use aci::aci::session::{Builtin, HANDLED_COMMANDS};
use aci::batch::RunContext;
use aci::config::Config;
use aci::config::aci::DEFAULT_COMMANDS;
use aci::engine::Engine;
use serde_json::Value;
use support::Kind;
use support::aci_run::{config, start_aci};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The custom commands of the scenario that uses them (`hello`, `note`).
fn custom_dir() -> PathBuf {
    root().join("tests/fixtures/aci/018_custom_command")
}

fn context(config: Config, dir: &Path) -> Result<RunContext, String> {
    RunContext::new(
        config,
        vec![dir.to_owned()],
        "replay".to_owned(),
        Engine::Local,
        "test".to_owned(),
        std::env::temp_dir(),
    )
    .map_err(|e| e.to_string())
}

fn tool_names(tools: &Value, key: &[&str]) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let mut value = tool;
            for part in key {
                value = &value[*part];
            }
            value.as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn the_yaml_files_and_the_rust_handlers_match_one_to_one() {
    let mut stems: Vec<String> = std::fs::read_dir(root().join("aci-commands"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    stems.sort();
    let mut handled: Vec<String> = HANDLED_COMMANDS.iter().map(|s| (*s).to_owned()).collect();
    handled.sort();
    assert_eq!(
        stems, handled,
        "aci-commands/*.yaml vs the handlers in session.rs"
    );
    assert_eq!(BUILTIN_COMMANDS, HANDLED_COMMANDS);
    // The local session masks host programs with these names (sandbox::local).
    let mut masked = aci::sandbox::local::INTERFACE_COMMANDS.to_vec();
    masked.sort_unstable();
    let mut builtin = BUILTIN_COMMANDS.to_vec();
    builtin.sort_unstable();
    assert_eq!(masked, builtin, "sandbox::local::INTERFACE_COMMANDS");
    let registry = Registry::builtin().unwrap();
    assert_eq!(registry.names(), BUILTIN_COMMANDS);
    for spec in registry.commands() {
        assert!(spec.script.is_none(), "{} is built in", spec.name);
        let builtin = Builtin::from_name(&spec.name).unwrap();
        assert_eq!(builtin.name(), spec.name);
        // Only edit reads a body.
        assert_eq!(
            spec.end_name.as_deref(),
            (builtin == Builtin::Edit).then_some("end_of_edit"),
            "{}",
            spec.name
        );
    }
}

#[test]
fn the_default_config_enables_the_papers_ten_commands() {
    let ctx = context(config(&[], &[]), root()).unwrap();
    assert_eq!(ctx.registry.names(), DEFAULT_COMMANDS);
}

#[test]
fn aci_commands_enables_only_the_listed_commands_in_docs_and_tool_schemas() {
    let mut config = config(&[], &[]);
    config.aci.commands = ["goto", "hello", "open"].map(str::to_owned).to_vec();
    config.aci.custom_commands = vec![PathBuf::from("hello.yaml")];
    let ctx = context(config, &custom_dir()).unwrap();
    assert_eq!(ctx.registry.names(), ["goto", "hello", "open"]);

    let docs = ctx
        .registry
        .render_docs(&[("WINDOW".to_owned(), "100".to_owned())]);
    assert_eq!(
        docs,
        "goto:\n  docstring: moves the window to show <line_number>\n  signature: goto <line_number>\n  \
         arguments:\n    - line_number (integer) [required]: the line number to move the window to\n\n\
         hello:\n  docstring: greets <name>, with <greeting> if one is given\n  signature: hello <name> [<greeting>]\n  \
         arguments:\n    - name (string) [required]: who to greet\n    \
         - greeting (string) [optional]: the greeting (Hello if not given)\n\n\
         open:\n  docstring: opens the file at the given path in the editor. If line_number is provided, \
         the window will be move to include that line\n  signature: open \"<path>\" [<line_number>]\n  \
         arguments:\n    - path (string) [required]: the path to the file to open\n    \
         - line_number (integer) [optional]: the line number to move the window to (if not provided, \
         the window will start at the top of the file)\n\n"
    );

    let openai = ctx.registry.openai_tools(&[]);
    assert_eq!(
        tool_names(&openai, &["function", "name"]),
        ["goto", "hello", "open"]
    );
    assert_eq!(
        openai[1]["function"]["parameters"],
        serde_json::json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "who to greet"},
                "greeting": {"type": "string", "description": "the greeting (Hello if not given)"},
            },
            "required": ["name"],
        })
    );
    let anthropic = ctx.registry.anthropic_tools(&[]);
    assert_eq!(tool_names(&anthropic, &["name"]), ["goto", "hello", "open"]);
    assert_eq!(
        anthropic[1]["input_schema"],
        openai[1]["function"]["parameters"]
    );
}

#[test]
fn an_unknown_command_in_aci_commands_is_a_config_error_that_lists_the_valid_ones() {
    let mut config = config(&[], &[]);
    config.aci.commands = vec!["open".to_owned(), "view".to_owned()];
    let error = context(config, root()).err().unwrap();
    assert!(error.contains("unknown command `view`"), "{error}");
    assert!(
        error.contains("valid commands: open, goto, scroll_up"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_command_runs_in_the_container_with_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("where.yaml"),
        "signature: where <a> [<b>]\n\
         docstring: says where it runs\n\
         arguments:\n  \
           a: {type: string, description: first, required: true}\n  \
           b: {type: string, description: second, required: false}\n\
         script: |\n  \
           if [ -f /.dockerenv ]; then place=container; else place=host; fi\n  \
           printf '%s: [%s] [%s] %s\\n' \"$place\" \"$1\" \"$2\" \"$#\"\n",
    )
    .unwrap();
    let mut config = config(&[], &[]);
    config.aci.commands.push("where".to_owned());
    config.aci.custom_commands = vec![PathBuf::from("where.yaml")];
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("a.txt"), "a\n").unwrap();
    let mut run = start_aci(Kind::Docker, "custom", repo.path(), config, dir.path()).await;
    let step = run.aci.execute("where 'two words' \"it's\"").await.unwrap();
    assert_eq!(step.observation, "container: [two words] [it's] 2");
    let step = run.aci.execute("where one").await.unwrap();
    assert_eq!(step.observation, "container: [one] [] 1");
    run.shutdown().await;
}
