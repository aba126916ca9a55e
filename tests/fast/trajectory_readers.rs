//! An aci `.traj` fills every panel of SWE-agent's trajectory readers. What each reads:
//!
//! - v0.7 web inspector (`inspector/server.py`, `fileViewer.js`, `static.py`): `history[]`
//!   items' `role`, `content` (a string), `agent`, `is_demo`; `info.exit_status`, and
//!   `info.submission` when the status starts with `submitted`; `info.model_stats`'
//!   `instance_cost`, `tokens_sent`, `tokens_received` and `api_calls`.
//! - v1 web inspector (`sweagent/inspector/server.py`, `fileViewer.js`): the first `user`
//!   item of `history` (the problem statement panel), the `action` of every non-demo
//!   `assistant` item (the action summary; a missing one is a server error), `trajectory[]`'s
//!   `thought`, `action`, `response`, `observation` and `execution_time`, and the same `info`.
//! - v1 terminal inspector (`sweagent/run/inspector_cli.py`): `trajectory[]`'s `thought`,
//!   `action`, `observation`, `response`, `execution_time`; `info.exit_status`,
//!   `info.submission`, `info.model_stats.api_calls` and `instance_cost`.
//!
//! Besides those, v0.7 writes `state` as its state command's JSON text in a string,
//! `model_stats.total_cost`, and `edited_files30/50/70` (read by v1's reviewers); aci writes
//! them too, and names its own version in `info.aci_version`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const ID: &str = "demo__inicfg-1";

fn demo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo")
}

/// `aci run` of the demo's inicfg replay on the local runtime; its `.traj` as JSON.
fn run_inicfg() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["run", "--runtime", "local", "--id", ID, "--instances"])
        .arg(demo().join("instances.jsonl"))
        .arg("--replay")
        .arg(demo().join(format!("replays/{ID}.yaml")))
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(output.join(ID).join(format!("{ID}.traj"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `{n:6}: {line}` for lines `first..=last` of parser.py after the fix.
fn fixed_parser_lines(first: usize, last: usize) -> String {
    let original = std::fs::read_to_string(demo().join("repos/inicfg/inicfg/parser.py")).unwrap();
    original
        .lines()
        .enumerate()
        .map(|(index, line)| {
            let line = if index + 1 == 18 {
                r#"_OPTION_RE = re.compile(r"^(?P<key>[^=:]+?)\s*[=:]\s*(?P<value>.*)$")"#
            } else {
                line
            };
            format!("{:6}: {line}", index + 1)
        })
        .skip(first - 1)
        .take(last + 1 - first)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_panel_of_swe_agents_inspectors_finds_its_fields() {
    let traj = run_inicfg();

    // history: role and content on every item; actions on the model's.
    let history = traj["history"].as_array().unwrap();
    assert!(!history.is_empty());
    for item in history {
        assert!(item["role"].is_string(), "{item}");
        assert!(item["content"].is_string(), "{item}");
        assert_eq!(item["agent"], "primary", "{item}");
        if item["role"] == "assistant" && item["is_demo"] != true {
            assert!(item["action"].is_string(), "{item}");
        }
    }
    let first_user = history.iter().find(|item| item["role"] == "user").unwrap();
    assert_eq!(
        first_user["is_demo"], true,
        "the demonstration comes first, as in SWE-agent"
    );
    assert!(
        history
            .iter()
            .any(|item| item["role"] == "user" && item["is_demo"] != true),
        "the instance prompt"
    );

    // trajectory: the step fields, and v0.7's state string.
    let steps = traj["trajectory"].as_array().unwrap();
    assert_eq!(steps.len(), 11);
    for step in steps {
        for key in ["thought", "action", "response", "observation"] {
            assert!(step[key].is_string(), "{key} in {step}");
        }
        assert!(step["execution_time"].is_number(), "{step}");
        let state = step["state"].as_str().unwrap();
        assert!(
            state.starts_with(r#"{"open_file": ""#) && state.contains(r#"", "working_dir": "/"#),
            "{state}"
        );
        let parsed: Value = serde_json::from_str(state).unwrap();
        assert_eq!(parsed.as_object().unwrap().len(), 2, "{state}");
    }
    let open_step = &steps[5];
    assert_eq!(open_step["action"], "open inicfg/parser.py 18");
    let state: Value = serde_json::from_str(open_step["state"].as_str().unwrap()).unwrap();
    let repo = state["working_dir"].as_str().unwrap();
    assert_eq!(
        open_step["state"],
        format!(r#"{{"open_file": "{repo}/inicfg/parser.py", "working_dir": "{repo}"}}"#)
    );

    // info: status, submission, statistics, version.
    let info = &traj["info"];
    assert_eq!(info["exit_status"], "submitted");
    let submission = info["submission"].as_str().unwrap();
    assert!(
        submission.starts_with("diff --git a/inicfg/parser.py b/inicfg/parser.py\n"),
        "{submission}"
    );
    assert!(submission.contains("\n@@ -15,7 +15,7 @@"), "{submission}");
    let stats = &info["model_stats"];
    for key in ["total_cost", "instance_cost"] {
        assert_eq!(stats[key], 0.0, "{key}: a replay costs nothing");
    }
    assert_eq!(stats["api_calls"], 11);
    for key in ["tokens_sent", "tokens_received"] {
        assert!(stats[key].is_u64(), "{key}");
    }
    assert_eq!(info["aci_version"], env!("CARGO_PKG_VERSION"));

    // edited_filesN: the one hunk starts at line 15 and spans 7 lines, parser.py has 97.
    for (key, last) in [
        ("edited_files30", 51),
        ("edited_files50", 71),
        ("edited_files70", 91),
    ] {
        assert_eq!(
            info[key],
            format!(
                "[File: inicfg/parser.py]\n{}\n[{} lines below omitted]",
                fixed_parser_lines(1, last),
                97 - last
            ),
            "{key}"
        );
    }
}
