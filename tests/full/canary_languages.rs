//! The canaries of every language family run by the real runner in its language image: a small
//! project per runner, one test file that the "test patch" touches, the canaries placed in it as
//! `eval.sh` places them, the test command with its name filter widened, and the verdict on the
//! log: the canary that must pass passed, the one that must fail failed, the project's own test
//! kept and the one its filter leaves out still left out. Images `aci-<lang>:bookworm` (built
//! by `aci images build --lang <lang>`); `ACI_CANARY_IMAGE_<LANG>` names another. Never skipped.
//! The node image ships no JavaScript test runner (no Jest, Mocha or QUnit), so the JavaScript
//! canaries are checked by their exact text in `src/eval/canary/tests.rs` only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use aci::eval::canary::{CanaryNames, add_to_command_line, canary_plan, check, placed};
use aci::eval::parse::{ParserName, TestStatus};
use aci::eval::plan::GradingPlan;
use aci::sandbox::{Sandbox, SandboxError};
use support::{docker, spec};

const RUN: Duration = Duration::from_secs(240);

/// The image of `lang`: `ACI_CANARY_IMAGE_<LANG>`, else `aci-<lang>:bookworm`.
fn image(lang: &str) -> String {
    std::env::var(format!("ACI_CANARY_IMAGE_{}", lang.to_uppercase()))
        .unwrap_or_else(|_| format!("aci-{lang}:bookworm"))
}

/// One runner's project and what its log must show besides the canaries.
struct Case {
    lang: &'static str,
    parser: ParserName,
    test_cmd: &'static str,
    /// The project's files; the first is the test file the test patch touches.
    files: &'static [(&'static str, &'static str)],
    /// A test id (substring) of the project that must pass, and one its filter leaves out.
    kept: &'static str,
    filtered_out: Option<&'static str>,
}

/// Runs `case` in its image and returns the log; asserts the verdict and the statuses.
async fn run(case: &Case) -> String {
    let runtime = docker().await;
    let image = image(case.lang);
    assert!(
        runtime.inspect_image(&image).await.unwrap().is_some(),
        "the {} image {image} is missing\nhint: run `cargo run -- images build --lang {}`",
        case.lang,
        case.lang
    );
    let repo = tempfile::tempdir().unwrap();
    for (path, text) in case.files {
        let path = repo.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let touched = case.files[0].0;
    let test_patch = format!(
        "diff --git a/{touched} b/{touched}\n--- a/{touched}\n+++ b/{touched}\n@@ -1 +1 @@\n-a\n+b\n"
    );
    let plan = GradingPlan {
        parser: case.parser,
        test_cmd: case.test_cmd.to_owned(),
        test_directives: Vec::new(),
        eval_commands: Vec::new(),
        reinstall: None,
        spec: None,
        eval_type: aci::spec::EvalType::PassAndFail,
        spec_source: None,
    };
    let canary = canary_plan(&plan, Some(&test_patch), CanaryNames::draw());
    assert_eq!(canary.untrusted, None, "{}", case.parser);
    let mut command_line = plan.command_line();
    add_to_command_line(&mut command_line, &canary);

    let mut spec = spec(&format!("canary-{}", case.parser), Some(repo.path()));
    spec.image = image;
    spec.limits.memory_mb = 2048;
    spec.limits.pids = 512;
    let mut sandbox = runtime.start(&spec).await.unwrap();
    for file in &canary.files {
        let path = format!("/testbed/{}", file.path);
        let current = match sandbox.read_file(&path).await {
            Ok(bytes) => Some(bytes),
            Err(SandboxError::File { .. }) => None,
            Err(error) => panic!("{error}"),
        };
        let text = placed(current.as_deref(), file).unwrap();
        sandbox.write_file(&path, &text).await.unwrap();
    }
    let script = format!(
        "export HOME=/tmp GOCACHE=/tmp/go-cache GOFLAGS=-mod=mod GOTOOLCHAIN=local; \
         set -o pipefail; cd /testbed; echo '>>>>> Start Test Output'; ( {command_line} ) 2>&1; \
         code=$?; echo '>>>>> End Test Output'; echo \">>>>> Test Exit Code: $code\""
    );
    let out = sandbox.run(&script, RUN).await.unwrap();
    sandbox.shutdown().await.unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        check(&log, case.parser, &canary, &[]),
        Ok(()),
        "{command_line}\n{log}"
    );
    let region = aci::eval::parse::summary::test_region(&log).unwrap();
    let status = (case.parser.parser())(region);
    let of = |name: &str| -> Vec<TestStatus> {
        status
            .iter()
            .filter(|(id, _)| id.contains(name))
            .map(|(_, status)| *status)
            .collect()
    };
    assert_eq!(of(&canary.names.pass), vec![TestStatus::Passed], "{log}");
    assert_eq!(of(&canary.names.fail), vec![TestStatus::Failed], "{log}");
    assert_eq!(of(case.kept), vec![TestStatus::Passed], "{log}");
    if let Some(left_out) = case.filtered_out {
        assert_eq!(of(left_out), Vec::new(), "{log}");
    }
    log
}

const GO: Case = Case {
    lang: "go",
    parser: ParserName::Gotest,
    test_cmd: "go test -v . -run \"^TestAdd\"",
    files: &[
        (
            "calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\
             \t\tt.Fatal(\"2 + 2\")\n\t}\n}\n\nfunc TestOther(t *testing.T) {}\n",
        ),
        (
            "calc.go",
            "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
        ),
        ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
    ],
    kept: "TestAdd",
    filtered_out: Some("TestOther"),
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_test_runs_the_canaries_appended_to_the_package_and_its_run_filter_lets_them_through() {
    run(&GO).await;
}

const MINITEST: Case = Case {
    lang: "ruby",
    parser: ParserName::Minitest,
    test_cmd: "ruby -I test test/test_calc.rb -v -n \"/add/\"",
    files: &[(
        "test/test_calc.rb",
        "require 'minitest/autorun'\n\nclass TestCalc < Minitest::Test\n  define_method(:'test_add.') do\n    \
             assert_equal(4, 2 + 2)\n  end\n\n  define_method(:'test_other.') do\n  end\nend\n",
    )],
    kept: "TestCalc#test_add",
    filtered_out: Some("test_other"),
};

const TEST_UNIT: Case = Case {
    lang: "ruby",
    parser: ParserName::RubyUnit,
    test_cmd: "ruby test/test_calc.rb -v -n '/add/'",
    files: &[(
        "test/test_calc.rb",
        "require 'test/unit'\n\nclass TestCalc < Test::Unit::TestCase\n  def test_add\n    \
         assert_equal(4, 2 + 2)\n  end\n\n  def test_other\n  end\nend\n",
    )],
    kept: "test_add",
    filtered_out: Some("test_other"),
};

const RSPEC: Case = Case {
    lang: "ruby",
    parser: ParserName::RspecTransformedJson,
    test_cmd: "rspec spec/calc_spec.rb --no-color --format json | ruby -rjson -e \
               'JSON.parse(STDIN.read)[\"examples\"].each { |e| puts \"#{e[\"description\"]} - #{e[\"status\"]}\" }'",
    files: &[(
        "spec/calc_spec.rb",
        "RSpec.describe 'calc' do\n  it 'adds' do\n    expect(2 + 2).to eq(4)\n  end\nend\n",
    )],
    kept: "adds",
    filtered_out: None,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minitest_test_unit_and_rspec_run_the_appended_canaries_and_dash_n_lets_them_through() {
    for case in [&MINITEST, &TEST_UNIT, &RSPEC] {
        run(case).await;
    }
}

const PHPUNIT: Case = Case {
    lang: "php",
    parser: ParserName::Phpunit,
    test_cmd: "phpunit --testdox --colors=never tests/CalcTest.php",
    files: &[(
        "tests/CalcTest.php",
        "<?php\n\nuse PHPUnit\\Framework\\TestCase;\n\nfinal class CalcTest extends TestCase\n{\n    \
         public function testAdds()\n    {\n        $this->assertSame(4, 2 + 2);\n    }\n}\n",
    )],
    // PHPUnit 9 prints the suite as `Calc`, without the ` (CalcTest)` the parser reads a suite
    // by: the tests are under `None`.
    kept: "> Adds",
    filtered_out: None,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phpunit_runs_the_canaries_put_inside_the_class_and_testdox_prints_their_names_whole() {
    run(&PHPUNIT).await;
}

const GOOGLETEST: Case = Case {
    lang: "c",
    parser: ParserName::Googletest,
    test_cmd: "g++ -std=c++17 test/calc_test.cc -lgtest -lgtest_main -pthread -o /tmp/calc_test \
               && /tmp/calc_test",
    files: &[(
        "test/calc_test.cc",
        "#include <gtest/gtest.h>\n\nTEST(Calc, Adds) {\n    EXPECT_EQ(2 + 2, 4);\n}\n",
    )],
    kept: "Calc.Adds",
    filtered_out: None,
};

const DOCTEST: Case = Case {
    lang: "c",
    parser: ParserName::Doctest,
    test_cmd: "g++ -std=c++17 test/calc_test.cpp -o /tmp/calc_test && /tmp/calc_test -s -r=xml",
    files: &[(
        "test/calc_test.cpp",
        "#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN\n#include <doctest/doctest.h>\n\n\
         TEST_CASE(\"calc\") {\n    SUBCASE(\"adds\") {\n        CHECK(2 + 2 == 4);\n    }\n}\n",
    )],
    kept: "calc > adds",
    filtered_out: None,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn googletest_and_doctest_run_the_canaries_the_test_command_compiles() {
    for case in [&GOOGLETEST, &DOCTEST] {
        run(case).await;
    }
}
