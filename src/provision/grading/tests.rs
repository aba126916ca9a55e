//! Grading plans: SWE-bench's test directives, the overrides an instance's fields make, the errors
//! that name a missing spec, and a full plan for every record of SWE-bench Lite.

use super::*;
use crate::instance::parse_instances;
use crate::spec::builtin;

fn instance(json: serde_json::Value) -> Instance {
    let mut loaded = parse_instances(&json.to_string(), None).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    loaded.instances.remove(0)
}

/// A record like SWE-bench's, with `extra` merged in.
fn record(repo: &str, version: &str, extra: serde_json::Value) -> Instance {
    let mut value = serde_json::json!({
        "instance_id": "x__y-1",
        "problem_statement": "",
        "repo": repo,
        "base_commit": "abc",
        "version": version,
        "test_patch": TEST_PATCH,
    });
    if let (Some(map), serde_json::Value::Object(more)) = (value.as_object_mut(), extra) {
        map.extend(more);
    }
    instance(value)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Modifies, creates and deletes test files, and touches data files (one ending in `csv`
/// without a dot, which SWE-bench's list also drops).
const TEST_PATCH: &str = "\
diff --git a/tests/auth_tests/test_models.py b/tests/auth_tests/test_models.py
--- a/tests/auth_tests/test_models.py
+++ b/tests/auth_tests/test_models.py
@@ -1 +1 @@
-x
+y
diff --git a/tests/auth_tests/models/__init__.py b/tests/auth_tests/models/__init__.py
new file mode 100644
--- /dev/null
+++ b/tests/auth_tests/models/__init__.py
@@ -0,0 +1 @@
+z
diff --git a/tests/fixtures/data.json b/tests/fixtures/data.json
--- a/tests/fixtures/data.json
+++ b/tests/fixtures/data.json
@@ -1 +1 @@
-{}
+[]
diff --git a/tests/fixtures/tablecsv b/tests/fixtures/tablecsv
--- a/tests/fixtures/tablecsv
+++ b/tests/fixtures/tablecsv
@@ -1 +1 @@
-a
+b
diff --git a/tests/old_tests.py b/tests/old_tests.py
deleted file mode 100644
--- a/tests/old_tests.py
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/django/test/utils.py b/django/test/utils.py
--- a/django/test/utils.py
+++ b/django/test/utils.py
@@ -1 +1 @@
-a
+b
";

#[test]
fn directives_are_the_test_patch_files_without_data_files_deleted_ones_included() {
    assert_eq!(
        test_directives(TEST_PATCH, DirectiveStyle::Paths),
        strings(&[
            "tests/auth_tests/test_models.py",
            "tests/auth_tests/models/__init__.py",
            "tests/old_tests.py",
            "django/test/utils.py",
        ])
    );
}

#[test]
fn django_directives_are_runtests_module_labels() {
    assert_eq!(
        test_directives(TEST_PATCH, DirectiveStyle::DjangoModules),
        strings(&[
            "auth_tests.test_models",
            "auth_tests.models.__init__",
            "old_tests",
            "django.test.utils",
        ])
    );
}

#[test]
fn a_swe_bench_record_gets_the_spec_command_directives_locale_commands_and_reinstall() {
    let plan = grading_plan(
        &record("django/django", "3.0", serde_json::json!({})),
        builtin(),
    )
    .unwrap();
    assert_eq!(
        plan,
        GradingPlan {
            parser: ParserName::Django,
            test_cmd: "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
                .to_owned(),
            test_directives: strings(&[
                "auth_tests.test_models",
                "auth_tests.models.__init__",
                "old_tests",
                "django.test.utils",
            ]),
            eval_commands: strings(&[
                "sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen",
                "export LANG=en_US.UTF-8",
                "export LANGUAGE=en_US:en",
                "export LC_ALL=en_US.UTF-8",
            ]),
            reinstall: Some("python -m pip install -e .".to_owned()),
            spec: Some(("django/django".to_owned(), "3.0".to_owned())),
            eval_type: EvalType::PassAndFail,
            spec_source: Some(SpecSource::Builtin),
        }
    );
    assert_eq!(
        plan.command_line(),
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 \
         auth_tests.test_models auth_tests.models.__init__ old_tests django.test.utils"
    );
}

#[test]
fn instance_fields_override_the_spec() {
    let table = builtin();
    let own = record(
        "django/django",
        "3.0",
        serde_json::json!({"test_cmd": "./tests/runtests.py auth_tests", "setup": "pip install ."}),
    );
    let plan = grading_plan(&own, table).unwrap();
    assert_eq!(plan.test_cmd, "./tests/runtests.py auth_tests");
    assert!(plan.test_directives.is_empty());
    assert_eq!(plan.parser, ParserName::Django);
    assert_eq!(
        plan.reinstall, None,
        "the instance's setup decides the install"
    );
    assert_eq!(plan.eval_commands.len(), 4);
    let parser = record(
        "django/django",
        "3.0",
        serde_json::json!({"log_parser": "parse_log_pytest"}),
    );
    assert_eq!(
        grading_plan(&parser, table).unwrap().parser,
        ParserName::Pytest
    );
    let custom = record(
        "acme/widget",
        "1.0",
        serde_json::json!({"test_cmd": "cargo test", "language": "rust"}),
    );
    assert_eq!(
        grading_plan(&custom, table).unwrap(),
        GradingPlan {
            parser: ParserName::Cargo,
            test_cmd: "cargo test".to_owned(),
            test_directives: Vec::new(),
            eval_commands: Vec::new(),
            reinstall: None,
            spec: None,
            eval_type: EvalType::PassAndFail,
            spec_source: None,
        }
    );
}

#[test]
fn a_record_without_test_cmd_that_the_table_lacks_is_an_error_naming_repo_and_version() {
    let table = builtin();
    let cases = [
        (
            record("acme/widget", "1.0", serde_json::json!({})),
            "the instance names no log_parser and has no test_cmd, and the built-in SWE-bench \
             specs have no repository \"acme/widget\" (asked for version \"1.0\")",
        ),
        (
            record(
                "acme/widget",
                "1.0",
                serde_json::json!({"log_parser": "pytest"}),
            ),
            "the instance has no test_cmd, and the built-in SWE-bench specs have no repository \
             \"acme/widget\" (asked for version \"1.0\")",
        ),
        (
            record("psf/requests", "9.9", serde_json::json!({})),
            "the instance has no test_cmd, and the built-in SWE-bench specs have no version \
             \"9.9\" of psf/requests (known: 0.7, 0.8, 0.9, 0.11, 0.13, 0.14, 1.1, 1.2, 2.0, 2.2, \
             2.3, 2.4, 2.5, 2.7, 2.8, 2.9, 2.10, 2.11, 2.12, 2.17, 2.18, 2.19, 2.22, 2.26, 2.25, \
             2.27, 2.31, 3.0)",
        ),
        (
            record(
                "psf/requests",
                "2.10",
                serde_json::json!({"log_parser": "mocha"}),
            ),
            "unknown log_parser \"mocha\" (known: pytest, pytest_options, pytest_v2, matplotlib, \
             seaborn, django, sympy, unittest, cargo, cargo_swebench, phpunit, gotest, \
             rspec_transformed_json, karma, ant, maven, redis, ruby_unit, googletest, \
             gradle_custom, jest, jest_json, tap, jq, minitest, cucumber, micropython_test, vitest, doctest)",
        ),
        (
            record(
                "acme/widget",
                "1.0",
                serde_json::json!({"test_cmd": "go test ./...", "language": "go"}),
            ),
            "the instance names no log_parser and its language \"go\" has no default one",
        ),
    ];
    for (instance, message) in cases {
        assert_eq!(
            grading_plan(&instance, table).unwrap_err().to_string(),
            message
        );
    }
}

#[test]
fn every_swe_bench_lite_record_gets_a_full_grading_plan() {
    let path = crate::provision::swebench_data_dir().join("lite.jsonl");
    let loaded = crate::instance::load_instances_file(&path).unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!(loaded.instances.len(), 300);
    let table = builtin();
    let mut repos = std::collections::BTreeSet::new();
    for instance in &loaded.instances {
        let id = &instance.instance_id;
        let plan = grading_plan(instance, table).unwrap_or_else(|e| panic!("{id}: {e}"));
        let entry = table.lookup(&instance.repo, &instance.version).unwrap();
        assert_eq!(plan.parser, entry.repo.log_parser, "{id}");
        assert_eq!(plan.test_cmd, entry.spec.test_cmd, "{id}");
        assert!(!plan.test_directives.is_empty(), "{id}: no test directive");
        assert_eq!(plan.reinstall, entry.spec.install, "{id}");
        assert!(plan.command_line().starts_with(&plan.test_cmd), "{id}");
        repos.insert(instance.repo.as_str());
    }
    assert_eq!(repos.len(), 12);
}

#[test]
fn a_test_file_named_like_an_option_is_passed_as_a_path_never_as_an_option() {
    let patch = "diff --git a/-p evil.py b/-p evil.py\nnew file mode 100644\n--- /dev/null\n\
                 +++ b/-p evil.py\n@@ -0,0 +1 @@\n+x = 1\n\
                 diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n\
                 +++ b/tests/test_a.py\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(
        test_directives(patch, DirectiveStyle::Paths),
        ["./-p evil.py", "tests/test_a.py"]
    );
    assert_eq!(
        test_directives(patch, DirectiveStyle::DjangoModules),
        ["test_a"]
    );
}

/// The tail of a 5.x record's `eval_script` whose test command differs from the table's, so
/// that the tests can tell which one graded.
const OWN_SCRIPT: &str = "\
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git checkout abc tests/auth_tests/test_models.py
: '>>>>> Start Test Output'
./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 auth_tests.test_models
: '>>>>> End Test Output'
";

#[test]
fn a_record_with_its_own_spec_is_graded_by_it_unless_builtin_is_chosen() {
    let table = builtin();
    let own = record(
        "django/django",
        "3.0",
        serde_json::json!({
            "eval_script": OWN_SCRIPT,
            "log_parser": "parse_log_pytest",
            "eval_type": "fail_only",
        }),
    );
    let plan = grading_plan(&own, table).unwrap();
    assert_eq!(
        plan.command_line(),
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 auth_tests.test_models"
    );
    assert_eq!(plan.parser, ParserName::Pytest);
    assert_eq!(plan.eval_type, EvalType::FailOnly);
    assert_eq!(plan.spec_source, Some(SpecSource::Record));
    assert_eq!(
        plan.reinstall.as_deref(),
        Some("python -m pip install -e .")
    );
    assert_eq!(plan.eval_commands.len(), 4, "the table's locale commands");

    let builtin_plan = grading_plan_for(&own, table, SpecSource::Builtin).unwrap();
    assert_eq!(builtin_plan.parser, ParserName::Django);
    assert_eq!(builtin_plan.eval_type, EvalType::PassAndFail);
    assert_eq!(builtin_plan.spec_source, Some(SpecSource::Builtin));
    assert_eq!(
        builtin_plan.test_directives,
        strings(&[
            "auth_tests.test_models",
            "auth_tests.models.__init__",
            "old_tests",
            "django.test.utils",
        ])
    );

    // A record the table lacks is graded by its own spec whatever the choice.
    let unknown = record(
        "acme/widget",
        "1.0",
        serde_json::json!({"eval_script": OWN_SCRIPT, "log_parser": "parse_log_django"}),
    );
    let plan = grading_plan_for(&unknown, table, SpecSource::Builtin).unwrap();
    assert_eq!(plan.spec_source, Some(SpecSource::Record));
    assert_eq!(plan.parser, ParserName::Django);
    assert_eq!(plan.spec, None);
}

#[test]
fn a_swe_bench_parser_aci_lacks_is_not_supported_yet_and_a_bad_script_says_why() {
    let table = builtin();
    let chart = record(
        "chartjs/Chart.js",
        "3.0",
        serde_json::json!({"eval_script": OWN_SCRIPT, "log_parser": "parse_log_chart_js"}),
    );
    assert_eq!(
        grading_plan(&chart, table).unwrap_err().to_string(),
        "SWE-bench's log parser \"parse_log_chart_js\" is not supported yet (aci reads: \
         parse_log_pytest, parse_log_pytest_options, parse_log_pytest_v2, parse_log_matplotlib, \
         parse_log_seaborn, parse_log_django, parse_log_sympy and their per-repository names; \
         parse_log_cargo, parse_log_phpunit, parse_log_gotest, parse_log_rspec_transformed_json, \
         parse_log_karma, parse_log_ant, parse_log_maven, parse_log_redis, parse_log_ruby_unit, \
         parse_log_googletest, parse_log_gradle_custom, parse_log_jest, parse_log_jest_json, \
         parse_log_tap, parse_log_jq, parse_log_minitest, parse_log_cucumber, parse_log_jekyll, \
         parse_log_micropython_test, parse_log_vitest, parse_log_immutable_js, parse_log_doctest)"
    );
    let go = record(
        "caddyserver/caddy",
        "2.7",
        serde_json::json!({"eval_script": OWN_SCRIPT, "log_parser": "parse_log_gotest"}),
    );
    assert_eq!(grading_plan(&go, table).unwrap().parser, ParserName::Gotest);
    let cargo = record(
        "tokio-rs/tokio",
        "1.0",
        serde_json::json!({"eval_script": OWN_SCRIPT, "log_parser": "parse_log_cargo"}),
    );
    assert_eq!(
        grading_plan(&cargo, table).unwrap().parser,
        ParserName::CargoSwebench,
        "a record's own spec is graded by SWE-bench's reading of cargo, not aci's"
    );
    // aci's own records may still name it.
    let own = record(
        "acme/widget",
        "1.0",
        serde_json::json!({"test_cmd": "cargo test", "log_parser": "parse_log_cargo"}),
    );
    assert_eq!(grading_plan(&own, table).unwrap().parser, ParserName::Cargo);
    let broken = record(
        "acme/widget",
        "1.0",
        serde_json::json!({"eval_script": "pytest\n", "log_parser": "parse_log_pytest"}),
    );
    assert_eq!(
        grading_plan(&broken, table).unwrap_err().to_string(),
        "the record's eval_script has no line \": '>>>>> Start Test Output'\""
    );
}

#[test]
fn jekyll_and_immutable_js_pick_their_runner_by_the_instance() {
    let table = builtin();
    let cases = [
        (
            "jekyll__jekyll-8047",
            "parse_log_jekyll",
            ParserName::Minitest,
        ),
        (
            "jekyll__jekyll-8771",
            "parse_log_jekyll",
            ParserName::Cucumber,
        ),
        (
            "immutable-js__immutable-js-2006",
            "parse_log_immutable_js",
            ParserName::Jest,
        ),
        (
            "immutable-js__immutable-js-2005",
            "parse_log_immutable_js",
            ParserName::JestJson,
        ),
    ];
    for (id, name, parser) in cases {
        let instance = record(
            "acme/widget",
            "1.0",
            serde_json::json!({"eval_script": OWN_SCRIPT, "log_parser": name, "instance_id": id}),
        );
        assert_eq!(
            grading_plan(&instance, table).unwrap().parser,
            parser,
            "{id}"
        );
    }
    let other = record(
        "acme/widget",
        "1.0",
        serde_json::json!({
            "eval_script": OWN_SCRIPT,
            "log_parser": "parse_log_jekyll",
            "instance_id": "jekyll__jekyll-1234",
        }),
    );
    assert_eq!(
        grading_plan(&other, table).unwrap_err().to_string(),
        "SWE-bench's log parser \"parse_log_jekyll\" picks its runner by the instance and has \
         none for \"jekyll__jekyll-1234\""
    );
}
