//! Tests for reading runs: layouts, evaluations beside a run, outcomes from reports and
//! summaries, the cache and versions.

use serde_json::json;

use super::*;

/// Writes `DIR/<id>/<id>.traj` by renaming a new file over it, as aci does.
pub(crate) fn write_traj(dir: &Path, id: &str, exit: Option<&str>, steps: usize) {
    let instance = dir.join(id);
    std::fs::create_dir_all(&instance).unwrap();
    let traj = json!({
        "environment": "aci",
        "trajectory": (0..steps).map(|i| json!({"action": format!("ls {i}"), "observation": "a.py", "execution_time": 0.5})).collect::<Vec<_>>(),
        "history": [],
        "info": {"exit_status": exit, "submission": "diff --git a/a b/a\n+x\n", "model_stats": {"instance_cost": 0.25, "tokens_sent": 100, "tokens_received": 10, "api_calls": steps}, "wall_time": 3.0}
    });
    let temp = instance.join(format!(".{id}.traj.tmp"));
    std::fs::write(&temp, serde_json::to_vec_pretty(&traj).unwrap()).unwrap();
    std::fs::rename(&temp, instance.join(format!("{id}.traj"))).unwrap();
}

pub(crate) fn write_report(eval: &Path, id: &str, body: Value) {
    std::fs::create_dir_all(eval.join(id)).unwrap();
    std::fs::write(
        eval.join(id).join("report.json"),
        serde_json::to_vec_pretty(&json!({ id: body })).unwrap(),
    )
    .unwrap();
}

pub(crate) fn write_summary(eval: &Path, resolved: &[&str], unresolved: &[&str], error: &[&str]) {
    std::fs::create_dir_all(eval).unwrap();
    std::fs::write(
        eval.join("report.json"),
        serde_json::to_vec_pretty(&json!({
            "total_instances": resolved.len() + unresolved.len() + error.len(),
            "resolved_ids": resolved, "unresolved_ids": unresolved, "error_ids": error,
            "empty_patch_ids": [], "schema_version": 2
        }))
        .unwrap(),
    )
    .unwrap();
}

fn run_source(dir: &Path) -> RunSource {
    match detect(dir, None).unwrap() {
        Kind::Run(run) => run,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_batch_finds_the_evaluation_next_to_it_and_reads_each_outcome() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    let eval = root.path().join("eval");
    for id in ["a", "b", "c", "d"] {
        write_traj(&run, id, Some("submitted"), 2);
    }
    std::fs::write(run.join("manifest.json"), "{}").unwrap();
    write_report(&eval, "a", json!({"resolved": true, "patch_exists": true}));
    write_report(&eval, "b", json!({"resolved": false, "patch_exists": true}));
    // An evaluation error with no per-instance report: only the summary names it.
    write_summary(&eval, &["a"], &["b"], &["c"]);
    let source = run_source(&run);
    assert_eq!(source.layout, Layout::Nested);
    assert_eq!(source.eval, Some(std::fs::canonicalize(&eval).unwrap()));
    let cache = Cache::default();
    let (rows, _) = rows(&source, &cache);
    let outcomes: Vec<(&str, EvalState)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.eval.clone()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("a", EvalState::Resolved),
            ("b", EvalState::Unresolved),
            ("c", EvalState::Error(None)),
            ("d", EvalState::NotEvaluated),
        ]
    );
    let summary = rows[0].summary.as_ref().unwrap();
    assert_eq!(
        (summary.steps, summary.api_calls, summary.wall_time),
        (2, 2, Some(3.0))
    );
    // An error written as a per-instance report (today's aci eval) reads the same way.
    write_report(
        &eval,
        "c",
        json!({"resolved": false, "error": "patch did not apply"}),
    );
    let (rows, _) = super::rows(&source, &cache);
    assert_eq!(
        rows[2].eval,
        EvalState::Error(Some("patch did not apply".to_owned()))
    );
}

#[test]
fn an_evaluation_named_by_eval_is_read_instead_of_the_one_next_to_the_run() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    for id in ["a", "b"] {
        write_traj(&run, id, Some("submitted"), 2);
    }
    // The one next to the run says a resolved; the one named elsewhere says b.
    write_summary(&root.path().join("eval"), &["a"], &["b"], &[]);
    let elsewhere = root.path().join("ci/eval-2");
    write_report(
        &elsewhere,
        "a",
        json!({"resolved": false, "patch_exists": true}),
    );
    write_report(
        &elsewhere,
        "b",
        json!({"resolved": true, "patch_exists": true}),
    );
    write_summary(&elsewhere, &["b"], &["a"], &[]);
    let Kind::Run(source) = detect(&run, Some(&elsewhere)).unwrap() else {
        panic!("a batch directory is a run");
    };
    assert_eq!(source.eval.as_deref(), Some(elsewhere.as_path()));
    let (rows, _) = rows(&source, &Cache::default());
    let outcomes: Vec<(&str, EvalState)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.eval.clone()))
        .collect();
    assert_eq!(
        outcomes,
        [("a", EvalState::Unresolved), ("b", EvalState::Resolved)]
    );
}

#[test]
fn a_rewritten_trajectory_is_read_again_and_changes_the_version() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    write_traj(&run, "a", None, 1);
    let source = run_source(&run);
    let cache = Cache::default();
    let (first, version) = rows(&source, &cache);
    assert_eq!(first[0].summary.as_ref().unwrap().exit_status, None);
    let (_, same) = rows(&source, &cache);
    assert_eq!(version, same, "nothing changed");
    write_traj(&run, "a", Some("submitted"), 3);
    let (second, changed) = rows(&source, &cache);
    assert_ne!(version, changed);
    let summary = second[0].summary.as_ref().unwrap();
    assert_eq!(
        (summary.exit_status.as_deref(), summary.steps),
        (Some("submitted"), 3)
    );
    // A new instance appears in the list.
    write_traj(&run, "b", None, 0);
    assert_eq!(rows(&source, &cache).0.len(), 2);
}

#[test]
fn many_instances_are_read_in_parallel_into_the_cache() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    for i in 0..40 {
        write_traj(&run, &format!("i{i:02}"), Some("submitted"), i % 5);
    }
    let cache = Cache::default();
    let (rows, _) = rows(&run_source(&run), &cache);
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[7].summary.as_ref().unwrap().steps, 2);
    assert_eq!(lock(&cache.summaries).len(), 40);
}

#[test]
fn an_unreadable_trajectory_is_a_row_with_its_reason() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    std::fs::create_dir_all(run.join("x")).unwrap();
    std::fs::write(run.join("x/x.traj"), "{\"trajectory\": [").unwrap();
    let (rows, _) = rows(&run_source(&run), &Cache::default());
    assert!(rows[0].summary.is_none());
    assert!(
        rows[0]
            .unreadable
            .as_deref()
            .unwrap()
            .starts_with("not a trajectory: "),
        "{rows:?}"
    );
}

#[test]
fn layouts_are_told_apart() {
    let root = tempfile::tempdir().unwrap();
    // SWE-agent v0.7: flat <id>.traj files.
    let flat = root.path().join("flat");
    std::fs::create_dir_all(&flat).unwrap();
    std::fs::write(
        flat.join("m__m-1.traj"),
        include_str!("../../tests/fixtures/sweagent_v0_7.traj"),
    )
    .unwrap();
    std::fs::write(flat.join(".hidden.traj"), "{}").unwrap();
    let source = run_source(&flat);
    assert_eq!(source.layout, Layout::Flat);
    let listed: Vec<String> = list(&source, &Cache::default())
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(listed, ["m__m-1"]);
    // One file.
    let single = detect(&flat.join("m__m-1.traj"), None).unwrap();
    assert!(matches!(
        single,
        Kind::Run(RunSource {
            layout: Layout::Single(_),
            ..
        })
    ));
    // An evaluation on its own: the ids of its reports and of its summary.
    let eval = root.path().join("eval");
    write_report(&eval, "a", json!({"resolved": true}));
    write_summary(&eval, &["a"], &[], &["z"]);
    let source = run_source(&eval);
    assert_eq!(source.layout, Layout::EvalOnly);
    let (rows, _) = rows(&source, &Cache::default());
    let ids: Vec<(&str, &EvalState)> = rows.iter().map(|r| (r.id.as_str(), &r.eval)).collect();
    assert_eq!(
        ids,
        [("a", &EvalState::Resolved), ("z", &EvalState::Error(None))]
    );
    // An ablation.
    std::fs::write(root.path().join("ablation.json"), "{}").unwrap();
    assert_eq!(
        detect(root.path(), None).unwrap(),
        Kind::Ablation(root.path().to_owned())
    );
    // Nothing to show: one line that says what was looked for.
    let empty = tempfile::tempdir().unwrap();
    let error = detect(empty.path(), None).unwrap_err();
    assert!(error.ends_with("holds no trajectories (<id>/<id>.traj, <id>/<id>.traj.json or <id>.traj), evaluation reports or ablation.json"), "{error}");
    assert!(
        detect(&empty.path().join("missing"), None)
            .unwrap_err()
            .ends_with("does not exist")
    );
}

#[test]
fn ids_that_are_not_one_path_component_never_reach_the_file_system() {
    for bad in ["", ".", "..", "a/b", "../x", "/etc", "a\0b"] {
        assert!(!is_plain_component(bad), "{bad:?}");
        assert_eq!(report_path(Path::new("/e"), bad), None);
    }
    assert!(is_plain_component("django__django-11099"));
    assert!(is_plain_component("..a"));
}

#[test]
fn only_an_evaluation_of_the_run_s_own_instances_is_taken_from_beside_it() {
    let root = tempfile::tempdir().unwrap();
    // A batch and its evaluation under one directory, and another batch beside that directory.
    let demo = root.path().join("demo");
    write_traj(&demo.join("run"), "a", Some("submitted"), 1);
    write_report(&demo.join("eval"), "a", json!({"resolved": true}));
    let other = root.path().join("other");
    write_traj(&other, "x", Some("submitted"), 1);
    assert_eq!(
        find_eval_next_to(&other),
        None,
        "demo/ holds an evaluation, not of x"
    );
    assert!(
        !is_eval_dir(&demo),
        "a directory holding run/ and eval/ is no evaluation"
    );
    // A sibling under any name that graded the run's instances is found.
    let graded = root.path().join("graded-2024");
    write_report(&graded, "x", json!({"resolved": false}));
    assert_eq!(
        find_eval_next_to(&other),
        Some(std::fs::canonicalize(&graded).unwrap())
    );
    assert_eq!(
        find_eval_next_to(&demo.join("run")),
        Some(std::fs::canonicalize(demo.join("eval")).unwrap())
    );
}

/// Copies the directory `from` into `to`, recursively.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The batches mini-swe-agent 1.x and 2.x wrote (tests/fixtures/inspect/MINI.md).
pub(crate) fn mini_fixture(format: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inspect")
        .join(format)
}

#[test]
fn a_mini_swe_agent_batch_lists_its_instances_and_finds_its_evaluation() {
    for (format, steps) in [("mini-1", [4, 1]), ("mini-1.1", [5, 2])] {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("run");
        copy_dir(&mini_fixture(format), &run);
        write_report(
            &root.path().join("eval"),
            "demo__calc-1",
            json!({"resolved": true}),
        );
        let source = run_source(&run);
        assert_eq!(source.layout, Layout::Nested, "{format}");
        assert_eq!(
            source.eval,
            Some(std::fs::canonicalize(root.path().join("eval")).unwrap())
        );
        // preds.json and exit_statuses_*.yaml are no instances.
        let listed = list(&source, &Cache::default());
        assert_eq!(
            listed,
            ["demo__calc-1", "demo__calc-2"].map(|id| Listed {
                id: id.to_owned(),
                traj: Some(run.join(id).join(format!("{id}.traj.json"))),
            })
        );
        let (rows, _) = rows(&source, &Cache::default());
        let seen: Vec<(&str, Option<&str>, usize, f64, &EvalState)> = rows
            .iter()
            .map(|r| {
                let summary = r.summary.as_deref().unwrap();
                (
                    r.id.as_str(),
                    summary.exit_status.as_deref(),
                    summary.steps,
                    summary.cost,
                    &r.eval,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "demo__calc-1",
                    Some("Submitted"),
                    steps[0],
                    1.0,
                    &EvalState::Resolved
                ),
                (
                    "demo__calc-2",
                    Some("LimitsExceeded"),
                    steps[1],
                    0.25,
                    &EvalState::NotEvaluated
                ),
            ],
            "{format}"
        );
    }
}

#[test]
fn an_instance_with_aci_s_trajectory_and_its_mini_copy_lists_aci_s() {
    // `agent.mini_trajectory` writes `<id>.traj.json` beside `<id>.traj`.
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    copy_dir(&mini_fixture("mini-1.1"), &run);
    write_traj(&run, "demo__calc-1", Some("submitted"), 7);
    let source = run_source(&run);
    let (rows, _) = rows(&source, &Cache::default());
    let steps: Vec<(&str, usize)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.summary.as_ref().map_or(0, |s| s.steps)))
        .collect();
    assert_eq!(steps, [("demo__calc-1", 7), ("demo__calc-2", 2)]);
    assert_eq!(
        list(&source, &Cache::default())[0].traj,
        Some(run.join("demo__calc-1/demo__calc-1.traj"))
    );
}

#[test]
fn one_mini_swe_agent_trajectory_given_is_a_run_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("last_mini_run.traj.json");
    std::fs::copy(
        mini_fixture("mini-1.1").join("demo__calc-1/demo__calc-1.traj.json"),
        &file,
    )
    .unwrap();
    let source = run_source(&file);
    assert_eq!(source.layout, Layout::Single(file));
    let (rows, _) = rows(&source, &Cache::default());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].id, "last_mini_run");
    assert_eq!(rows[0].summary.as_ref().map(|s| s.steps), Some(5));
    // Any other file is refused, saying what is read.
    let other = root.path().join("preds.json");
    std::fs::write(&other, "{}").unwrap();
    assert_eq!(
        detect(&other, None).unwrap_err(),
        format!(
            "{} is a file, not a .traj or .traj.json file or a directory",
            other.display()
        )
    );
}
