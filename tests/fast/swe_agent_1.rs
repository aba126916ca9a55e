//! `configs/swe-agent-1.yaml`, SWE-agent 1.x's default agent, on the local runtime: the config
//! loads with 1.x's tools and templates, and `str_replace_editor` runs on a copy of the demo
//! repository with 1.x's exact messages (each text below is what 1.x's script printed for the
//! same call on the same file, the path written `{repo}`), with `aci.lint.str_replace_editor`
//! off (the edit lands) and on (it is refused and the file keeps its bytes), and `submit`
//! shows its review message once before it submits.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::path::{Path, PathBuf};

use aci::config::HistoryConfig;
use aci::config::ParserKind;

use crate::support::Kind;
use crate::support::aci_run::{AciRun, config, start_aci};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_owned()
}

fn swe1() -> PathBuf {
    root().join("configs/swe-agent-1.yaml")
}

fn inicfg() -> PathBuf {
    root().join("tests/fixtures/demo/repos/inicfg")
}

const OLD_LINE: &str = r#"_OPTION_RE = re.compile(r"^(?P<key>.+)\s*[=:]\s*(?P<value>.*)$")"#;
const NEW_LINE: &str = r#"_OPTION_RE = re.compile(r"^(?P<key>[^=:]+?)\s*[=:]\s*(?P<value>.*)$")"#;

async fn start(sets: &[&str]) -> AciRun {
    start_aci(
        Kind::Local,
        "demo__inicfg-1",
        &inicfg(),
        config(&[swe1()], sets),
        &root(),
    )
    .await
}

/// Runs one action and returns its observation with the repository written `{repo}`.
async fn run(aci: &mut AciRun, action: &str) -> String {
    let action = action.replace("{repo}", &aci.repo_dir);
    let step = aci.aci.execute(&action).await.unwrap();
    aci.normalize(&step.observation)
}

async fn parser_py(aci: &mut AciRun) -> Vec<u8> {
    aci.aci.read_repo_file("inicfg/parser.py").await.unwrap()
}

fn quote(text: &str) -> String {
    aci::aci::args::shlex_quote(text)
}

#[test]
fn the_config_has_1xs_tools_templates_and_switches() {
    let config = config(&[swe1()], &[]);
    assert_eq!(config.agent.parser, ParserKind::FunctionCalling);
    assert!(config.agent.enable_bash_tool);
    assert_eq!(config.agent.history, HistoryConfig::Full);
    assert!(config.agent.demonstrations.is_empty());
    assert_eq!(config.aci.commands, ["str_replace_editor", "submit"]);
    assert!(config.aci.filemap);
    assert!(!config.aci.lint.str_replace_editor);
    assert_eq!(config.aci.submit_review_messages.len(), 1);
    assert!(
        config.aci.submit_review_messages[0].starts_with(
            "Thank you for your work on this issue. Please carefully follow the steps below to help review your changes.\n\n1. If you made"
        )
    );
    assert!(config.aci.submit_review_messages[0].ends_with("<diff>\n{{diff}}\n</diff>\n"));
    assert_eq!(
        config.agent.templates.system,
        "You are a helpful assistant that can interact with a computer to solve tasks."
    );
    assert_eq!(
        config.agent.templates.next_step,
        "OBSERVATION:\n{{observation}}"
    );
    assert!(config.agent.templates.instance.starts_with(
        "<uploaded_files>\n{{working_dir}}\n</uploaded_files>\nI've uploaded a python code repository in the directory {{working_dir}}."
    ));
    assert_eq!(config.env.command_timeout.duration().as_secs(), 30);
    assert_eq!(config.env.variables["GIT_PAGER"], "cat");
    assert!(!config.aci.blocklist.first_word.iter().any(|w| w == "git"));

    let ctx = aci::batch::RunContext::new(
        config,
        vec![root().join("configs")],
        "replay".to_owned(),
        aci::engine::Engine::Local,
        "test-swe1".to_owned(),
        tempfile::tempdir().unwrap().path().to_owned(),
    )
    .unwrap();
    assert_eq!(ctx.registry.names(), ["str_replace_editor", "submit"]);
    assert_eq!(
        ctx.registry.get("submit").unwrap().docstring.as_deref(),
        Some("submits the current file")
    );
    let tools = ctx.registry.openai_tools(&[]);
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"]["command"]["enum"],
        serde_json::json!(["view", "create", "str_replace", "insert", "undo_edit"])
    );
    assert_eq!(
        tools[1]["function"],
        serde_json::json!({"name": "submit", "description": "submits the current file", "parameters": {"type": "object"}})
    );
}

#[tokio::test]
async fn view_str_replace_insert_and_undo_print_1xs_messages() {
    let mut aci = start(&[]).await;
    let original = parser_py(&mut aci).await;
    assert_eq!(
        run(
            &mut aci,
            "str_replace_editor view {repo}/inicfg/parser.py --view_range 17 19"
        )
        .await,
        "Here's the result of running `cat -n` on {repo}/inicfg/parser.py:\n    17\t_SECTION_RE = re.compile(r\"^\\[(?P<name>[^\\]]+)\\]$\")\n    18\t_OPTION_RE = re.compile(r\"^(?P<key>.+)\\s*[=:]\\s*(?P<value>.*)$\")\n    19\t\n"
    );
    let replace = format!(
        "str_replace_editor str_replace {{repo}}/inicfg/parser.py --old_str {} --new_str {}",
        quote(OLD_LINE),
        quote(NEW_LINE)
    );
    assert_eq!(
        run(&mut aci, &replace).await,
        "The file {repo}/inicfg/parser.py has been edited. Here's the result of running `cat -n` on a snippet of {repo}/inicfg/parser.py:\n    13\tCOMMENT_PREFIXES = (\"#\", \";\")\n    14\tINLINE_COMMENT_PREFIXES = (\" #\", \" ;\", \"\\t#\", \"\\t;\")\n    15\tDEFAULT_SECTION = \"DEFAULT\"\n    16\t\n    17\t_SECTION_RE = re.compile(r\"^\\[(?P<name>[^\\]]+)\\]$\")\n    18\t_OPTION_RE = re.compile(r\"^(?P<key>[^=:]+?)\\s*[=:]\\s*(?P<value>.*)$\")\n    19\t\n    20\t\n    21\tdef strip_inline_comment(value):\nReview the changes and make sure they are as expected. Edit the file again if necessary."
    );
    let fixed = String::from_utf8(original.clone())
        .unwrap()
        .replace(OLD_LINE, NEW_LINE);
    assert_eq!(parser_py(&mut aci).await, fixed.as_bytes());
    let undo = run(
        &mut aci,
        "str_replace_editor undo_edit {repo}/inicfg/parser.py",
    )
    .await;
    assert!(undo.starts_with("Last edit to {repo}/inicfg/parser.py undone successfully. Here's the result of running `cat -n` on {repo}/inicfg/parser.py:\n     1\t\"\"\"Line-oriented INI parser.\n"), "{undo}");
    assert!(
        undo.ends_with("\n    97\t    return sections\n    98\t\n"),
        "{undo}"
    );
    assert_eq!(parser_py(&mut aci).await, original);
    assert_eq!(
        run(
            &mut aci,
            "str_replace_editor undo_edit {repo}/inicfg/parser.py"
        )
        .await,
        "No edit history found for {repo}/inicfg/parser.py."
    );
    assert_eq!(
        run(
            &mut aci,
            "str_replace_editor insert {repo}/inicfg/parser.py --insert_line 18 --new_str 'X = ('"
        )
        .await,
        "The file {repo}/inicfg/parser.py has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n    15\tDEFAULT_SECTION = \"DEFAULT\"\n    16\t\n    17\t_SECTION_RE = re.compile(r\"^\\[(?P<name>[^\\]]+)\\]$\")\n    18\t_OPTION_RE = re.compile(r\"^(?P<key>.+)\\s*[=:]\\s*(?P<value>.*)$\")\n    19\tX = (\n    20\t\n    21\t\n    22\tdef strip_inline_comment(value):\n    23\t    \"\"\"Remove a trailing `` ; comment`` or `` # comment`` from *value*.\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary."
    );
    let listing = run(&mut aci, "str_replace_editor view {repo}/tests/").await;
    let mut lines: Vec<&str> = listing.lines().collect();
    assert_eq!(
        lines.remove(0),
        "Here's the files and directories up to 2 levels deep in {repo}/tests, excluding hidden items:"
    );
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "",
            "{repo}/tests",
            "{repo}/tests/test_config.py",
            "{repo}/tests/test_interpolate.py",
            "{repo}/tests/test_parser.py",
            "{repo}/tests/test_writer.py",
        ]
    );
    assert_eq!(
        run(&mut aci, "str_replace_editor view inicfg/parser.py").await,
        "The path inicfg/parser.py is not an absolute path, it should start with `/`. Maybe you meant {repo}/inicfg/parser.py?"
    );
    assert_eq!(
        run(
            &mut aci,
            "str_replace_editor create {repo}/inicfg --file_text x"
        )
        .await,
        "File already exists at: {repo}/inicfg. Cannot overwrite files using command `create`."
    );
    assert_eq!(
        run(
            &mut aci,
            "str_replace_editor create {repo}/notes.txt --file_text 'a\nb\n'"
        )
        .await,
        "File created successfully at: {repo}/notes.txt"
    );
    assert_eq!(
        aci.aci.read_repo_file("notes.txt").await.unwrap(),
        b"a\nb\n"
    );
    // A quoted argument over several lines, typed as a model without tool calls would, then a
    // shell line; the tool's probes leave the session's variables alone.
    let typed = "str_replace_editor str_replace {repo}/notes.txt --old_str 'a\nb' --new_str 'A\nB'\necho ${p-unset}";
    assert_eq!(
        run(&mut aci, typed).await,
        "The file {repo}/notes.txt has been edited. Here's the result of running `cat -n` on a snippet of {repo}/notes.txt:\n     1\tA\n     2\tB\nReview the changes and make sure they are as expected. Edit the file again if necessary.\nunset"
    );
    assert_eq!(
        aci.aci.read_repo_file("notes.txt").await.unwrap(),
        b"A\nB\n"
    );
    aci.shutdown().await;
}

#[tokio::test]
async fn with_the_lint_switch_off_a_syntax_error_lands_as_in_1x() {
    let mut aci = start(&[]).await;
    let original = parser_py(&mut aci).await;
    let observation = run(
        &mut aci,
        "str_replace_editor insert {repo}/inicfg/parser.py --insert_line 18 --new_str 'X = ('",
    )
    .await;
    assert!(observation.starts_with("The file {repo}/inicfg/parser.py has been edited."));
    let text = String::from_utf8(original).unwrap();
    let broken = text.replacen(&format!("{OLD_LINE}\n"), &format!("{OLD_LINE}\nX = (\n"), 1);
    assert_eq!(parser_py(&mut aci).await, broken.as_bytes());
    aci.shutdown().await;
}

#[tokio::test]
async fn with_the_lint_switch_on_str_replace_and_insert_are_gated_and_the_file_is_kept() {
    let mut aci = start(&["aci.lint.str_replace_editor=true"]).await;
    let original = parser_py(&mut aci).await;
    let first_line = "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry editing the file.";
    let insert = run(
        &mut aci,
        "str_replace_editor insert {repo}/inicfg/parser.py --insert_line 18 --new_str '    x = 1'",
    )
    .await;
    assert_eq!(
        insert,
        format!(
            "{first_line}\n\nERRORS:\n- E999 IndentationError: unexpected indent\n\nThis is how your edit would have looked if applied\n-------------------------------------------------\nHere's the result of running `cat -n` on {{repo}}/inicfg/parser.py:\n    15\tDEFAULT_SECTION = \"DEFAULT\"\n    16\t\n    17\t_SECTION_RE = re.compile(r\"^\\[(?P<name>[^\\]]+)\\]$\")\n    18\t_OPTION_RE = re.compile(r\"^(?P<key>.+)\\s*[=:]\\s*(?P<value>.*)$\")\n    19\t    x = 1\n    20\t\n    21\t\n    22\tdef strip_inline_comment(value):\n    23\t    \"\"\"Remove a trailing `` ; comment`` or `` # comment`` from *value*.\n-------------------------------------------------\n\nThis is the original code before your edit\n-------------------------------------------------\nHere's the result of running `cat -n` on {{repo}}/inicfg/parser.py:\n    15\tDEFAULT_SECTION = \"DEFAULT\"\n    16\t\n    17\t_SECTION_RE = re.compile(r\"^\\[(?P<name>[^\\]]+)\\]$\")\n    18\t_OPTION_RE = re.compile(r\"^(?P<key>.+)\\s*[=:]\\s*(?P<value>.*)$\")\n    19\t\n    20\t\n    21\tdef strip_inline_comment(value):\n    22\t    \"\"\"Remove a trailing `` ; comment`` or `` # comment`` from *value*.\n    23\t\n-------------------------------------------------\nYour changes have NOT been applied. Please fix your edit command and try again.\nDO NOT re-run the same failed edit command. Running it again will lead to the same error."
        )
    );
    assert_eq!(parser_py(&mut aci).await, original);
    let replace = format!(
        "str_replace_editor str_replace {{repo}}/inicfg/parser.py --old_str {} --new_str {}",
        quote(OLD_LINE),
        quote("_OPTION_RE = re.compile(")
    );
    let rejected = run(&mut aci, &replace).await;
    assert!(
        rejected.starts_with(&format!("{first_line}\n\nERRORS:\n- E999 ")),
        "{rejected}"
    );
    assert_eq!(parser_py(&mut aci).await, original);
    // Nothing was made, so there is nothing to undo; a good edit still lands.
    assert_eq!(
        run(
            &mut aci,
            "str_replace_editor undo_edit {repo}/inicfg/parser.py"
        )
        .await,
        "No edit history found for {repo}/inicfg/parser.py."
    );
    let good = format!(
        "str_replace_editor str_replace {{repo}}/inicfg/parser.py --old_str {} --new_str {}",
        quote(OLD_LINE),
        quote(NEW_LINE)
    );
    assert!(
        run(&mut aci, &good)
            .await
            .starts_with("The file {repo}/inicfg/parser.py has been edited.")
    );
    let fixed = String::from_utf8(original)
        .unwrap()
        .replace(OLD_LINE, NEW_LINE);
    assert_eq!(parser_py(&mut aci).await, fixed.as_bytes());
    aci.shutdown().await;
}

#[tokio::test]
async fn submit_shows_the_review_message_with_the_diff_once_then_submits() {
    let mut aci = start(&[]).await;
    let replace = format!(
        "str_replace_editor str_replace {{repo}}/inicfg/parser.py --old_str {} --new_str {}",
        quote(OLD_LINE),
        quote(NEW_LINE)
    );
    run(&mut aci, &replace).await;
    let review = aci.aci.execute("submit").await.unwrap();
    assert_eq!(review.submission, None);
    let patch = String::from_utf8(aci.aci.submit().await.unwrap()).unwrap();
    assert!(patch.contains(&format!("+{NEW_LINE}\n")), "{patch}");
    assert_eq!(
        review.observation,
        format!(
            "Thank you for your work on this issue. Please carefully follow the steps below to help review your changes.\n\n1. If you made any changes to your code after running the reproduction script, please run the reproduction script again.\n  If the reproduction script is failing, please revisit your changes and make sure they are correct.\n  If you have already removed your reproduction script, please ignore this step.\n2. Remove your reproduction script (if you haven't done so already).\n3. If you have modified any TEST files, please revert them to the state they had before you started fixing the issue.\n  You can do this with `git checkout -- /path/to/test/file.py`. Use below <diff> to find the files you need to revert.\n4. Run the submit command again to confirm.\n\nHere is a list of all of your changes:\n\n<diff>\n{patch}\n</diff>\n"
        )
    );
    let second = aci.aci.execute("submit").await.unwrap();
    assert_eq!(second.submission.as_deref(), Some(patch.as_bytes()));
    aci.shutdown().await;
}

#[tokio::test]
async fn submit_dash_f_submits_at_once() {
    let mut aci = start(&[]).await;
    let step = aci.aci.execute("submit -f").await.unwrap();
    assert_eq!(step.submission.as_deref(), Some(&b""[..]));
    aci.shutdown().await;
}

#[test]
fn a_docstring_for_a_command_that_does_not_exist_is_a_config_error() {
    let config = config(&[swe1()], &["aci.docstrings={subimt: x}"]);
    let error = aci::batch::RunContext::new(
        config,
        Vec::new(),
        "replay".to_owned(),
        aci::engine::Engine::Local,
        "test-swe1".to_owned(),
        tempfile::tempdir().unwrap().path().to_owned(),
    )
    .err()
    .unwrap();
    assert_eq!(
        error.to_string(),
        "aci.docstrings: unknown command `subimt`\nvalid commands: open, goto, scroll_up, scroll_down, create, edit, search_file, search_dir, find_file, submit, str_replace_editor"
    );
}

#[tokio::test]
async fn an_external_linter_on_the_editor_puts_the_file_back_after_the_edit() {
    // A linter run in the sandbox after the edit: it reports any line holding `BAD`.
    // (YAML single quotes, the inner ones doubled.)
    let linter = r#"aci.lint.external='awk ''/BAD/ {print "x:" NR ":1: E999 SyntaxError: bad line"}'' {file}'"#;
    let mut aci = start(&[
        "aci.lint.str_replace_editor=true",
        "aci.lint.builtin=false",
        linter,
    ])
    .await;
    let original = parser_py(&mut aci).await;
    let rejected = run(
        &mut aci,
        "str_replace_editor insert {repo}/inicfg/parser.py --insert_line 18 --new_str 'BAD = 1'",
    )
    .await;
    assert!(
        rejected.contains("\n\nERRORS:\n- E999 SyntaxError: bad line\n\nThis is how your edit would have looked if applied\n"),
        "{rejected}"
    );
    assert!(rejected.contains("    19\tBAD = 1\n"), "{rejected}");
    assert_eq!(parser_py(&mut aci).await, original);
    let landed = run(
        &mut aci,
        "str_replace_editor insert {repo}/inicfg/parser.py --insert_line 18 --new_str 'GOOD = 1'",
    )
    .await;
    assert!(
        landed.starts_with("The file {repo}/inicfg/parser.py has been edited."),
        "{landed}"
    );
    let text = String::from_utf8(original).unwrap();
    let good = text.replacen(
        &format!("{OLD_LINE}\n"),
        &format!("{OLD_LINE}\nGOOD = 1\n"),
        1,
    );
    assert_eq!(parser_py(&mut aci).await, good.as_bytes());
    aci.shutdown().await;
}

#[test]
fn the_format_errors_are_1xs_function_calling_messages() {
    use aci::agent::prompt::Prompts;
    use minijinja::context;
    let config = config(&[swe1()], &[]);
    let prompts = Prompts::new(&config.agent.templates).unwrap();
    let render = |error_code: &str, exception_message: &str| {
        prompts
            .render("format_error", &context! { error_code, exception_message })
            .unwrap()
    };
    assert_eq!(
        render("missing", "x"),
        "Your last output did not use any tool calls!\nPlease make sure your output includes exactly _ONE_ function call!\nYou must invoke the function directly using the function call format.\nYou cannot invoke commands with ```, you have to use the function call format.\nIf you think you have already resolved the issue, please submit your changes by running the `submit` command.\nIf you think you cannot solve the problem, please run `exit_forfeit` (if available).\nElse, please continue with a new tool call!"
    );
    assert_eq!(
        render("multiple", "x"),
        "Your last output included multiple tool calls!\nPlease make sure your output includes a thought and exactly _ONE_ function call."
    );
    assert_eq!(
        render("unexpected_arg", "Unexpected argument(s): pth"),
        "Your action could not be parsed properly: Unexpected argument(s): pth.\nMake sure your function call doesn't include any extra arguments that are not in the allowed arguments, and only use the allowed commands."
    );
    assert_eq!(
        render("missing_arg", "Required argument(s) missing: path"),
        "Your action could not be parsed properly: Required argument(s) missing: path.\n"
    );
    assert_eq!(
        prompts
            .render("next_step", &context! { observation => "out" })
            .unwrap(),
        "OBSERVATION:\nout"
    );
}
