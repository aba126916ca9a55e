//! Reading real records' scripts (from SWE-bench's exports: dev, Verified, multimodal dev,
//! multilingual).

use super::*;

/// `sqlfluff__sqlfluff-4753` of the dev split, whole.
const SQLFLUFF_4753: &str = r#"#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff 24178a589c279220c6605324c446122d15ebc3fb
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git checkout 24178a589c279220c6605324c446122d15ebc3fb test/api/simple_test.py
git apply -v - <<'EOF_114329324912'
diff --git a/test/api/simple_test.py b/test/api/simple_test.py
--- a/test/api/simple_test.py
+++ b/test/api/simple_test.py
@@ -95,7 +95,7 @@
         "line_no": 1,
         "line_pos": 41,
         "description": "Files must end with a single trailing newline.",
-        "name": "layout.end-of-file",
+        "name": "layout.end_of_file",
     },
 ]
 

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA test/api/simple_test.py
: '>>>>> End Test Output'
git checkout 24178a589c279220c6605324c446122d15ebc3fb test/api/simple_test.py
"#;

/// The test run of `django__django-14765` (Verified), from its reset on.
const DJANGO_14765_TAIL: &str = "\
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git checkout 4e8121e8e42a24acc3565851c9ef50ca8322b15c tests/migrations/test_state.py
: '>>>>> Start Test Output'
./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 migrations.test_state
: '>>>>> End Test Output'
git checkout 4e8121e8e42a24acc3565851c9ef50ca8322b15c tests/migrations/test_state.py
";

/// `chartjs__Chart.js-11352` (multimodal dev, `fail_only`), without its long dependency line.
const CHARTJS_11352: &str = r#"#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
source $NVM_DIR/nvm.sh
git status
git checkout 201ddffa1d0d0bf61a4372ff1386dbcffd606850 test/fixtures/plugin.legend/legend-doughnut-right-center-mulitiline-labels.png
: '>>>>> Start Test Output'
pnpm install ; pnpm run build ; xvfb-run --server-args="-screen 0 1280x1024x24 -ac :99" su chromeuser -c "./node_modules/.bin/cross-env NODE_ENV=test ./node_modules/.bin/karma start ./karma.conf.cjs --single-run --coverage --grep --auto-watch false"
: '>>>>> End Test Output'
"#;

#[test]
fn a_dev_record_gives_its_test_command_test_files_and_activation() {
    assert_eq!(
        parse_eval_script(SQLFLUFF_4753),
        Ok(ScriptSpec {
            test_cmd: "pytest -rA test/api/simple_test.py".to_owned(),
            test_files: vec!["test/api/simple_test.py".to_owned()],
            activation: Some(
                "source /opt/miniconda3/bin/activate && conda activate testbed".to_owned()
            ),
        })
    );
}

#[test]
fn a_django_record_gives_its_runtests_labels_verbatim() {
    let spec = parse_eval_script(DJANGO_14765_TAIL).unwrap();
    assert_eq!(
        spec.test_cmd,
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 migrations.test_state"
    );
    assert_eq!(spec.test_files, vec!["tests/migrations/test_state.py"]);
}

#[test]
fn a_fail_only_record_without_activation_reads_too() {
    let spec = record_spec(CHARTJS_11352, Some("parse_log_chart_js"), Some("fail_only")).unwrap();
    assert_eq!(spec.eval_type, EvalType::FailOnly);
    assert_eq!(spec.log_parser.as_deref(), Some("parse_log_chart_js"));
    assert_eq!(spec.script.activation, None);
    assert!(
        spec.script
            .test_cmd
            .starts_with("pnpm install ; pnpm run build ; xvfb-run ")
    );
    assert_eq!(
        spec.script.test_files,
        vec!["test/fixtures/plugin.legend/legend-doughnut-right-center-mulitiline-labels.png"]
    );
}

#[test]
fn a_command_of_several_lines_is_kept_whole() {
    let script =
        ": '>>>>> Start Test Output'\nexport A=1\npytest -rA x.py\n: '>>>>> End Test Output'\n";
    assert_eq!(
        parse_eval_script(script).unwrap().test_cmd,
        "export A=1\npytest -rA x.py"
    );
}

#[test]
fn a_marker_inside_the_test_patch_heredoc_is_not_a_marker() {
    let script = SQLFLUFF_4753.replace(
        "+        \"name\": \"layout.end_of_file\",",
        ": '>>>>> Start Test Output'\n: '>>>>> End Test Output'",
    );
    assert_eq!(
        parse_eval_script(&script).unwrap().test_cmd,
        "pytest -rA test/api/simple_test.py"
    );
}

#[test]
fn scripts_without_a_test_command_are_errors_that_say_why() {
    let no_start = "pytest\n: '>>>>> End Test Output'\n";
    assert_eq!(
        parse_eval_script(no_start).unwrap_err().to_string(),
        "the record's eval_script has no line \": '>>>>> Start Test Output'\""
    );
    let empty = ": '>>>>> Start Test Output'\n\n: '>>>>> End Test Output'\n";
    assert_eq!(
        parse_eval_script(empty).unwrap_err().to_string(),
        "the record's eval_script has no test command between its markers"
    );
    let reversed = ": '>>>>> End Test Output'\npytest\n: '>>>>> Start Test Output'\n";
    assert_eq!(
        parse_eval_script(reversed).unwrap_err().to_string(),
        "the record's eval_script does not have exactly one \": '>>>>> Start Test Output'\" \
         line before one \": '>>>>> End Test Output'\" line"
    );
    assert_eq!(
        record_spec(SQLFLUFF_4753, None, Some("pass_only"))
            .unwrap_err()
            .to_string(),
        "the record's eval_type \"pass_only\" is neither pass_and_fail nor fail_only"
    );
}

#[test]
fn echoed_markers_and_a_checkout_chained_with_rm_read_too() {
    // The shape of `apache__lucene-13170` and `axios__axios-6539` (multilingual).
    let script = "\
git checkout c6cce43 test/specs/helpers/isAbsoluteURL.spec.js && rm -f test/unit/new.js
echo '>>>>> Start Test Output'
npx mocha test/specs/helpers/isAbsoluteURL.spec.js
echo '>>>>> End Test Output'
";
    let spec = parse_eval_script(script).unwrap();
    assert_eq!(
        spec.test_cmd,
        "npx mocha test/specs/helpers/isAbsoluteURL.spec.js"
    );
    assert_eq!(
        spec.test_files,
        vec!["test/specs/helpers/isAbsoluteURL.spec.js"]
    );
}
