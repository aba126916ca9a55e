use super::*;
use crate::eval::grade::{Grade, Resolution, SuccessFailure};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn resolved_grade() -> Grade {
    Grade {
        patch_successfully_applied: true,
        resolution: Resolution::Full,
        resolved: true,
        tests_status: Some(TestsStatus {
            fail_to_pass: SuccessFailure {
                success: strings(&["t.py::test_new"]),
                failure: vec![],
            },
            pass_to_pass: SuccessFailure {
                success: strings(&["t.py::test_old[a b]"]),
                failure: vec![],
            },
            ..TestsStatus::default()
        }),
        error: None,
        timed_out: false,
        untrusted_reason: None,
    }
}

#[test]
fn a_resolved_report_has_swe_bench_shape_order_and_indent() {
    let report = InstanceReport::from_grade(&resolved_grade(), Some("ab12".to_owned()));
    let expected = r#"{
    "acme__calc-12": {
        "patch_is_None": false,
        "patch_exists": true,
        "patch_successfully_applied": true,
        "resolved": true,
        "tests_status": {
            "FAIL_TO_PASS": {
                "success": [
                    "t.py::test_new"
                ],
                "failure": []
            },
            "PASS_TO_PASS": {
                "success": [
                    "t.py::test_old[a b]"
                ],
                "failure": []
            },
            "FAIL_TO_FAIL": {
                "success": [],
                "failure": []
            },
            "PASS_TO_FAIL": {
                "success": [],
                "failure": []
            }
        },
        "eval_key": "ab12"
    }
}
"#;
    assert_eq!(instance_report_json("acme__calc-12", &report), expected);
}

#[test]
fn an_error_report_has_no_tests_status_and_carries_the_reason() {
    let grade = Grade {
        patch_successfully_applied: false,
        resolution: Resolution::No,
        resolved: false,
        tests_status: None,
        error: Some("tests timed out".to_owned()),
        timed_out: true,
        untrusted_reason: None,
    };
    let report = InstanceReport::from_grade(&grade, None);
    let expected = r#"{
    "x": {
        "patch_is_None": false,
        "patch_exists": true,
        "patch_successfully_applied": false,
        "resolved": false,
        "error": "tests timed out",
        "timed_out": true
    }
}
"#;
    assert_eq!(instance_report_json("x", &report), expected);
    assert_eq!(report.outcome(), InstanceOutcome::Error);
}

#[test]
fn a_report_reads_back_equal_and_a_swe_bench_written_one_reads_too() {
    let report = InstanceReport::from_grade(&resolved_grade(), Some("k".to_owned()));
    let text = instance_report_json("a", &report);
    assert_eq!(parse_instance_report(&text, "a").unwrap(), report);
    let swe_bench = r#"{"django__django-1": {"patch_is_None": false, "patch_exists": true,
        "patch_successfully_applied": true, "resolved": false, "tests_status": {
        "FAIL_TO_PASS": {"success": [], "failure": ["t"]}, "PASS_TO_PASS": {"success": [],
        "failure": []}, "FAIL_TO_FAIL": {"success": [], "failure": []}, "PASS_TO_FAIL":
        {"success": [], "failure": []}}}}"#;
    let read = parse_instance_report(swe_bench, "django__django-1").unwrap();
    assert_eq!(
        (read.outcome(), read.eval_key, read.error),
        (InstanceOutcome::Unresolved, None, None)
    );
    assert_eq!(
        parse_instance_report(&text, "b").unwrap_err().to_string(),
        "report.json has no entry for instance \"b\""
    );
}

#[test]
fn a_report_is_reused_only_for_the_same_key_and_never_after_an_error() {
    let good = InstanceReport::from_grade(&resolved_grade(), Some("k1".to_owned()));
    let errored = InstanceReport::from_error("container exited 137", Some("k1".to_owned()));
    let keyless = InstanceReport::from_grade(&resolved_grade(), None);
    assert_eq!(
        [
            good.can_reuse("k1"),
            good.can_reuse("k2"),
            errored.can_reuse("k1"),
            keyless.can_reuse("k1"),
        ],
        [true, false, false, false]
    );
}

fn prediction(id: &str, patch: &str) -> Prediction {
    Prediction {
        instance_id: id.to_owned(),
        model_name_or_path: "openai/gpt".to_owned(),
        model_patch: patch.to_owned(),
    }
}

#[test]
fn the_summary_buckets_instances_like_swe_bench_with_sorted_ids() {
    let instance_ids = strings(&[
        "e-error",
        "a-resolved",
        "c-empty",
        "b-unresolved",
        "d-none",
        "f-lost",
    ]);
    let predictions = vec![
        prediction("a-resolved", "diff a"),
        prediction("b-unresolved", "diff b"),
        prediction("c-empty", ""),
        prediction("e-error", "diff e"),
        prediction("f-lost", "diff f"),
        prediction("z-not-selected", "diff z"),
    ];
    let outcomes = BTreeMap::from([
        ("a-resolved".to_owned(), InstanceOutcome::Resolved),
        ("b-unresolved".to_owned(), InstanceOutcome::Unresolved),
        ("e-error".to_owned(), InstanceOutcome::Error),
    ]);
    assert_eq!(
        run_summary(&instance_ids, &predictions, &outcomes),
        RunSummary {
            total_instances: 6,
            submitted_instances: 5,
            completed_instances: 2,
            resolved_instances: 1,
            unresolved_instances: 1,
            empty_patch_instances: 1,
            error_instances: 2,
            completed_ids: strings(&["a-resolved", "b-unresolved"]),
            incomplete_ids: strings(&["d-none"]),
            empty_patch_ids: strings(&["c-empty"]),
            submitted_ids: strings(&["a-resolved", "b-unresolved", "c-empty", "e-error", "f-lost"]),
            resolved_ids: strings(&["a-resolved"]),
            unresolved_ids: strings(&["b-unresolved"]),
            error_ids: strings(&["e-error", "f-lost"]),
            schema_version: 2,
            resolved_touching_tests_ids: Vec::new(),
            touching_tests_ids: Vec::new(),
            causes: BTreeMap::new(),
            infrastructure_failures: 0,
            infrastructure_failure_ids: Vec::new(),
            resolve_rate: 0.1667,
            resolve_rate_without_infrastructure: 0.1667,
        }
    );
}

#[test]
fn the_summary_counts_causes_and_gives_the_rate_with_and_without_infrastructure_failures() {
    use crate::eval::cause::{Cause, CauseKind};
    let ids = strings(&["a", "b", "c", "d", "e"]);
    let predictions: Vec<Prediction> = ids.iter().map(|id| prediction(id, "diff")).collect();
    let outcomes = BTreeMap::from([
        ("a".to_owned(), InstanceOutcome::Resolved),
        ("b".to_owned(), InstanceOutcome::Unresolved),
        ("c".to_owned(), InstanceOutcome::Unresolved),
        ("d".to_owned(), InstanceOutcome::Error),
        ("e".to_owned(), InstanceOutcome::Unresolved),
    ]);
    let cause = |kind: CauseKind| Cause {
        kind,
        infrastructure: kind.is_infrastructure(),
        summary: kind.to_string(),
        names: Vec::new(),
        detail: String::new(),
    };
    let causes = BTreeMap::from([
        ("a".to_owned(), cause(CauseKind::Network)),
        ("b".to_owned(), cause(CauseKind::Network)),
        ("c".to_owned(), cause(CauseKind::TestsFailed)),
        ("d".to_owned(), cause(CauseKind::EnvironmentNotBuilt)),
        ("e".to_owned(), cause(CauseKind::TestsFailed)),
    ]);
    let mut summary = run_summary(&ids, &predictions, &outcomes);
    add_causes(&mut summary, &causes);
    // "a" resolved: its cause, if any, is not counted.
    assert_eq!(
        summary.causes,
        BTreeMap::from([
            ("environment_not_built".to_owned(), 1),
            ("network".to_owned(), 1),
            ("tests_failed".to_owned(), 2),
        ])
    );
    assert_eq!(summary.infrastructure_failures, 2);
    assert_eq!(summary.infrastructure_failure_ids, strings(&["b", "d"]));
    assert_eq!(summary.resolve_rate, 0.2);
    assert_eq!(summary.resolve_rate_without_infrastructure, 0.3333);
    let json = run_summary_json(&summary);
    assert!(
        json.ends_with(
            r#"    "schema_version": 2,
    "causes": {
        "environment_not_built": 1,
        "network": 1,
        "tests_failed": 2
    },
    "infrastructure_failures": 2,
    "infrastructure_failure_ids": [
        "b",
        "d"
    ],
    "resolve_rate": 0.2,
    "resolve_rate_without_infrastructure": 0.3333
}
"#
        ),
        "{json}"
    );
}

#[test]
fn the_summary_json_lists_the_fields_in_swe_bench_order() {
    let summary = run_summary(
        &strings(&["a"]),
        &[prediction("a", "diff")],
        &BTreeMap::from([("a".to_owned(), InstanceOutcome::Resolved)]),
    );
    let expected = r#"{
    "total_instances": 1,
    "submitted_instances": 1,
    "completed_instances": 1,
    "resolved_instances": 1,
    "unresolved_instances": 0,
    "empty_patch_instances": 0,
    "error_instances": 0,
    "completed_ids": [
        "a"
    ],
    "incomplete_ids": [],
    "empty_patch_ids": [],
    "submitted_ids": [
        "a"
    ],
    "resolved_ids": [
        "a"
    ],
    "unresolved_ids": [],
    "error_ids": [],
    "schema_version": 2,
    "infrastructure_failures": 0,
    "resolve_rate": 1.0,
    "resolve_rate_without_infrastructure": 1.0
}
"#;
    assert_eq!(run_summary_json(&summary), expected);
}

#[test]
fn expect_reports_the_expected_ids_that_did_not_resolve() {
    let summary = RunSummary {
        resolved_ids: strings(&["a", "c"]),
        ..RunSummary::default()
    };
    let expected = parse_expected(r#"["d", "a", "b", "d"]"#).unwrap();
    assert_eq!(
        expected_but_unresolved(&expected, &summary),
        strings(&["b", "d"])
    );
    let from_summary = parse_expected(&run_summary_json(&summary)).unwrap();
    assert_eq!(
        expected_but_unresolved(&from_summary, &summary),
        Vec::<String>::new()
    );
}

#[test]
fn an_expect_file_that_is_not_a_list_of_ids_is_rejected() {
    let error = parse_expected(r#"{"ids": 3}"#).unwrap_err().to_string();
    assert!(
        error.starts_with("invalid --expect file (expected a JSON list of instance ids): "),
        "{error}"
    );
}

#[test]
fn the_eval_key_is_a_pinned_sha256_that_changes_with_every_input() {
    let key = eval_key(
        "acme__calc-12",
        "diff --git a/calc.py b/calc.py\n",
        "#!/bin/bash\n",
        "sha256:abc",
    );
    // Computed independently with Python's hashlib over the documented layout.
    assert_eq!(
        key,
        "2b996350463a1abfa560c5f5edad1eb864462a0fb8cfbda351935eac80137498"
    );
    let variants = [
        eval_key(
            "acme__calc-13",
            "diff --git a/calc.py b/calc.py\n",
            "#!/bin/bash\n",
            "sha256:abc",
        ),
        eval_key(
            "acme__calc-12",
            "diff --git a/calc.py b/calc.py \n",
            "#!/bin/bash\n",
            "sha256:abc",
        ),
        eval_key(
            "acme__calc-12",
            "diff --git a/calc.py b/calc.py\n",
            "#!/bin/sh\n",
            "sha256:abc",
        ),
        eval_key(
            "acme__calc-12",
            "diff --git a/calc.py b/calc.py\n",
            "#!/bin/bash\n",
            "sha256:abd",
        ),
    ];
    assert!(variants.iter().all(|variant| *variant != key));
    assert_ne!(eval_key("ab", "c", "", ""), eval_key("a", "bc", "", ""));
}

#[test]
fn model_names_become_path_components_like_swe_bench() {
    assert_eq!(model_path_component("openai/gpt-4o"), "openai__gpt-4o");
}
