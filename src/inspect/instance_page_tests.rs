//! Tests for the instance view: counters, prompts, patch, tests, errors, SWE-agent files.

use serde_json::json;

use super::*;

const MONEYFMT: &str = include_str!("../../tests/fixtures/inspect/demo__moneyfmt-1.traj");

fn evaluated() -> InstanceData {
    InstanceData {
        id: "demo__moneyfmt-1".to_owned(),
        eval: EvalState::Resolved,
        report: Some(json!({
            "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true, "resolved": true,
            "tests_status": {
                "FAIL_TO_PASS": {"success": ["tests/test_format.py::test_negative_amounts_with_full_digit_groups"], "failure": []},
                "PASS_TO_PASS": {"success": ["tests/test_format.py::test_basic_usd"], "failure": ["tests/test_parse.py::test_<odd>"]},
                "FAIL_TO_FAIL": {"success": [], "failure": []},
                "PASS_TO_FAIL": {"success": [], "failure": []}
            }
        })),
        test_output: Some(Text::of("+ python -m pytest\n22 passed in 0.21s\n")),
        ..InstanceData::default()
    }
    .with_trajectory(MONEYFMT.as_bytes())
}

#[test]
fn the_view_has_counters_prompts_turns_patch_and_tests() {
    let nav = Nav {
        prev: Some("demo__inicfg-1.html".to_owned()),
        next: Some("demo__pathnorm-1.html".to_owned()),
        raw: vec![(
            "trajectory".to_owned(),
            "/raw/demo__moneyfmt-1/demo__moneyfmt-1.traj".to_owned(),
        )],
        texts: "demo__moneyfmt-1/".to_owned(),
    };
    let html = render(&evaluated(), &nav);
    assert!(html.starts_with("<h1>demo__moneyfmt-1</h1>"));
    assert!(html.contains("<a id=\"prev-instance\" href=\"demo__inicfg-1.html\">← previous</a>"));
    assert!(html.contains("<a id=\"next-instance\" href=\"demo__pathnorm-1.html\">next →</a>"));
    assert!(
        html.contains("<a href=\"/raw/demo__moneyfmt-1/demo__moneyfmt-1.traj\">trajectory</a>")
    );
    assert!(html.contains("<div><b>9</b>steps</div>"));
    assert!(html.contains("<div><b>1</b>lint rejections</div>"));
    assert!(
        html.contains("<div><b>2.3 s</b>episode time</div>"),
        "{html}"
    );
    // The demonstration is folded; the task is open.
    assert!(
        html.contains("<details class=\"section\"><summary>demonstration (1 messages)</summary>")
    );
    assert!(html.contains("<details class=\"section\" open><summary>task</summary>"));
    assert!(html.contains("<h2>Turns (9)</h2>"));
    // The final patch from info.submission.
    let patch = html.split("<h2>Final patch</h2>").nth(1).unwrap();
    assert!(patch.starts_with(
        "<pre class=\"diff patch\"><span class=\"l file\">diff --git a/moneyfmt/format.py"
    ));
    // The tests, failures first in each group, the output folded.
    let tests = html.split("<h2>Evaluation</h2>").nth(1).unwrap();
    assert!(tests.contains("<span class=\"badge resolved\">resolved</span>"));
    assert!(tests.contains(
        "<tr><td>FAIL_TO_PASS</td><td class=\"id\">tests/test_format.py::test_negative_amounts_with_full_digit_groups</td><td class=\"pass\">passed</td></tr>"
    ));
    assert!(tests.contains(
        "<tr><td>PASS_TO_PASS</td><td class=\"id\">tests/test_parse.py::test_&lt;odd&gt;</td><td class=\"fail\">failed</td></tr>"
    ));
    assert!(tests.contains("<details class=\"section\"><summary>test output (2 lines)</summary>"));
}

#[test]
fn an_error_without_a_report_and_an_instance_error_are_said_plainly() {
    let mut data = InstanceData {
        id: "x".to_owned(),
        eval: EvalState::Error(None),
        ..InstanceData::default()
    };
    let traj = json!({"trajectory": [], "history": [], "info": {"exit_status": "exit_environment_error", "error": "the container died <oom>"}});
    data = data.with_trajectory(traj.to_string().as_bytes());
    let html = render(&data, &Nav::default());
    assert!(html.contains("<span class=\"badge failed\">exit_environment_error</span>"));
    assert!(html.contains(
        "<div class=\"error-box\"><b>instance error</b>: the container died &lt;oom&gt;</div>"
    ));
    assert!(
        html.contains(
            "no per-instance report.json; the outcome comes from the evaluation's summary"
        )
    );
    assert!(html.contains("<p class=\"muted\">no patch</p>"));
    assert!(
        html.contains("<span class=\"muted\">next →</span>"),
        "no next link at the end"
    );
}

#[test]
fn sweagent_trajectories_of_both_versions_open() {
    for (text, task) in [
        (
            include_str!("../../tests/fixtures/sweagent_v0_7.traj"),
            "TimeDelta serialization precision",
        ),
        (
            include_str!("../../tests/fixtures/sweagent_v1.traj"),
            "&lt;pr_description&gt;\nTimeDelta serialization precision",
        ),
    ] {
        let data = InstanceData {
            id: "marshmallow-code__marshmallow-1867".to_owned(),
            ..InstanceData::default()
        }
        .with_trajectory(text.as_bytes());
        assert_eq!(data.traj_error, None);
        let html = render(&data, &Nav::default());
        assert!(html.contains("<h2>Turns (3)</h2>"), "{html}");
        assert!(html.contains(task), "{html}");
        assert!(html.contains(
            "+        return int(round(value.total_seconds() / base_unit.total_seconds()))</span>"
        ));
        assert!(html.contains("<div><b>3</b>steps</div>"));
    }
}

#[test]
fn a_file_that_is_not_a_trajectory_says_so() {
    let data = InstanceData::default().with_trajectory(b"[1]");
    assert_eq!(
        data.traj_error.as_deref(),
        Some("not a trajectory: no `trajectory` or `messages` list")
    );
    let data = InstanceData::default().with_trajectory(b"{");
    assert!(
        data.traj_error
            .unwrap()
            .starts_with("not a trajectory: EOF")
    );
}

#[test]
fn an_evaluation_without_a_trajectory_shows_its_outcome_and_patch_only() {
    let data = InstanceData {
        id: "demo__pathnorm-1".to_owned(),
        eval: EvalState::Unresolved,
        patch: Some(Text::of("diff --git a/a b/a\n")),
        ..InstanceData::default()
    };
    let html = render(&data, &Nav::default());
    assert!(html.contains("<div class=\"totals\"><div><b><span class=\"badge unresolved\">unresolved</span></b>evaluation</div></div>"), "{html}");
    assert!(!html.contains("running"), "{html}");
    assert!(!html.contains("<h2>Turns"));
    assert!(html.contains("<span class=\"l file\">diff --git a/a b/a</span>"));
}
