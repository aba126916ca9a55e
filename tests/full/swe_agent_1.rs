//! `configs/swe-agent-1.yaml` on the real Docker daemon: a scripted function-calling model
//! (OpenAI wire, a local server) solves the demo task with 1.x's tools — `bash`,
//! `str_replace_editor` (`view`, `str_replace`, `create`, `undo_edit`) and `submit`, which
//! first shows its review message with the diff — and the submitted patch is the gold patch
//! and applies to a fresh copy of the repository with `git apply`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::path::Path;
use std::process::Command;

use aci::aci::args::shlex_quote;
use aci::engine::Engine;
use serde_json::json;

use crate::support;
use support::agent::*;
use support::mock_llm::MockServer;

const REPRO: &str = "from inicfg.parser import parse\nprint(parse('[s]\\nurl = http://h:80\\n'))\n";

const OLD_LINE: &str = r#"_OPTION_RE = re.compile(r"^(?P<key>.+)\s*[=:]\s*(?P<value>.*)$")"#;

fn swe1_yaml() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/swe-agent-1.yaml"))
        .unwrap()
}

#[tokio::test]
async fn a_function_calling_episode_through_the_1x_config_submits_a_patch_that_applies() {
    let docker = support::docker().await;
    let wire = Wire::OpenAi;
    let editor = "str_replace_editor";
    let server = MockServer::start(vec![
        tool_answer(
            wire,
            "Find the regex.",
            "c1",
            "bash",
            json!({"command": "grep -n _OPTION_RE /testbed/inicfg/parser.py"}),
        ),
        tool_answer(
            wire,
            "Look at it.",
            "c2",
            editor,
            json!({"command": "view", "path": "/testbed/inicfg/parser.py", "view_range": [17, 18]}),
        ),
        tool_answer(
            wire,
            "A scratch file.",
            "c3",
            editor,
            json!({"command": "create", "path": "/testbed/repro.py", "file_text": REPRO}),
        ),
        tool_answer(
            wire,
            "Fix it.",
            "c4",
            editor,
            json!({"command": "str_replace", "path": "/testbed/inicfg/parser.py", "old_str": OLD_LINE, "new_str": FIXED_LINE}),
        ),
        tool_answer(
            wire,
            "Run it.",
            "c5",
            "bash",
            json!({"command": "cd /testbed && python3 repro.py && rm repro.py"}),
        ),
        tool_answer(wire, "Submit.", "c6", "submit", json!({})),
        tool_answer(wire, "Confirm.", "c7", "submit", json!({})),
    ])
    .await;
    let mut config = config(&swe1_yaml());
    config.model.api_base = Some(format!("{}/v1", server.url()));
    let run = run(
        config,
        &format!("openai/{MODEL}"),
        Engine::Docker(docker.clone()),
        None,
    )
    .await;
    docker.remove_all_started().await;

    assert_eq!(run.result.exit_status.to_string(), "submitted");
    let patch = String::from_utf8(run.patch.clone()).unwrap();
    assert_eq!(patch, gold_patch());
    assert_eq!(
        actions(&run.traj),
        [
            "grep -n _OPTION_RE /testbed/inicfg/parser.py".to_owned(),
            "str_replace_editor view /testbed/inicfg/parser.py  --view_range 17 18".to_owned(),
            format!(
                "str_replace_editor create /testbed/repro.py --file_text {}",
                shlex_quote(REPRO)
            ),
            format!(
                "str_replace_editor str_replace /testbed/inicfg/parser.py   --old_str '{OLD_LINE}' --new_str '{FIXED_LINE}'"
            ),
            "cd /testbed && python3 repro.py && rm repro.py".to_owned(),
            "submit".to_owned(),
            "submit".to_owned(),
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let tools: Vec<String> = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["str_replace_editor", "submit", "bash"]);
    let first = pieces(wire, &requests[0]);
    assert_eq!(
        first[0].text,
        "You are a helpful assistant that can interact with a computer to solve tasks."
    );
    assert!(
        first[1]
            .text
            .starts_with("<uploaded_files>\n/testbed\n</uploaded_files>\n")
    );
    let result = |index: usize| pieces(wire, &requests[index]).last().unwrap().text.clone();
    assert_eq!(
        result(1),
        format!("OBSERVATION:\n18:{OLD_LINE}\n36:    match = _OPTION_RE.match(text)")
    );
    assert_eq!(
        result(2),
        format!(
            "OBSERVATION:\nHere's the result of running `cat -n` on /testbed/inicfg/parser.py:\n    17\t_SECTION_RE = re.compile(r\"^\\[(?P<name>[^\\]]+)\\]$\")\n    18\t{OLD_LINE}\n"
        )
    );
    assert_eq!(
        result(3),
        "OBSERVATION:\nFile created successfully at: /testbed/repro.py"
    );
    assert!(
        result(4).starts_with("OBSERVATION:\nThe file /testbed/inicfg/parser.py has been edited. Here's the result of running `cat -n` on a snippet of /testbed/inicfg/parser.py:\n    13\t"),
        "{}",
        result(4)
    );
    assert_eq!(result(5), "OBSERVATION:\n{'s': {'url': 'http://h:80'}}");
    let review = result(6);
    assert!(
        review.starts_with("OBSERVATION:\nThank you for your work on this issue."),
        "{review}"
    );
    assert!(
        review.ends_with(&format!("<diff>\n{patch}\n</diff>\n")),
        "{review}"
    );

    // The patch applies to a fresh copy of the repository.
    let copy = tempfile::tempdir().unwrap();
    let repo = copy.path().join("inicfg");
    let status = Command::new("cp")
        .arg("-r")
        .arg(demo_dir().join("repos/inicfg"))
        .arg(&repo)
        .status()
        .unwrap();
    assert!(status.success());
    let patch_file = copy.path().join("model.patch");
    std::fs::write(&patch_file, &patch).unwrap();
    let applied = Command::new("git")
        .arg("apply")
        .arg(&patch_file)
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let fixed = std::fs::read_to_string(repo.join("inicfg/parser.py")).unwrap();
    assert!(fixed.contains(&format!("\n{FIXED_LINE}\n")));
}
