//! Grading existing logs: the 138 SWE-bench harness logs of `../shared/swebench/harness-logs`
//! (or `ACI_SWEBENCH_DATA`), each read in its format, parsed with its repository's parser and
//! graded against its record's test lists, in memory; and `aci eval --from-logs` end to end on
//! the same logs (finding them, copying them and writing every report and the summary). Divide
//! by 138 for the time per log. And aci's own side of the canaries of one evaluation, and of the
//! other integrity checks (the reset plan, the tripwires, the scan).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use aci::eval::canary::{CanaryNames, add_canaries, canary_plan, verify};
use aci::eval::from_logs::{FromLogsSettings, grade_logs};
use aci::eval::grade::grade;
use aci::eval::logs::{AnyReading, read_any_log};
use aci::eval::parse::{LogParser, ParserName};
use aci::eval::plan::{grading_plan, log_parser};
use aci::eval::script::{EvalScriptSpec, eval_steps, render_eval_script};
use aci::eval::spec::builtin;
use aci::instance::{Instance, load_instances_file};
use criterion::{Criterion, criterion_group, criterion_main};

fn data_dir() -> PathBuf {
    let dir = std::env::var_os("ACI_SWEBENCH_DATA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
        PathBuf::from,
    );
    assert!(
        dir.join("harness-logs").is_dir(),
        "the SWE-bench data is missing at {}\nhint: set ACI_SWEBENCH_DATA",
        dir.display()
    );
    dir
}

/// Every log with its instance and parser.
fn logs(instances: &[Instance]) -> Vec<(&Instance, LogParser, String)> {
    let table = builtin();
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(data_dir().join("harness-logs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let id = name.split('.').next().unwrap();
        let instance = instances.iter().find(|i| i.instance_id == id).unwrap();
        let parser = log_parser(instance, table).unwrap().parser();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        logs.push((instance, parser, text));
    }
    logs
}

fn bench_grading(c: &mut Criterion) {
    let instances = load_instances_file(&data_dir().join("lite.jsonl"))
        .unwrap()
        .instances;
    let logs = logs(&instances);
    assert_eq!(logs.len(), 138);
    let mut group = c.benchmark_group("grading");
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("138 harness logs, in memory", |b| {
        b.iter(|| {
            let mut resolved = 0;
            for (instance, parser, text) in &logs {
                if let AnyReading::Reading(reading) = read_any_log(text, *parser) {
                    let graded = grade(&reading, &instance.fail_to_pass, &instance.pass_to_pass);
                    resolved += usize::from(graded.resolved);
                }
            }
            assert_eq!(resolved, 43);
        });
    });
    let selected: Vec<Instance> = logs
        .iter()
        .map(|(instance, _, _)| (*instance).clone())
        .collect();
    let out = tempfile::tempdir().unwrap();
    let settings = FromLogsSettings {
        logs: data_dir().join("harness-logs"),
        output: out.path().to_path_buf(),
        spec: aci::spec::SpecSource::Record,
    };
    group.sample_size(10);
    group.bench_function("aci eval --from-logs, 138 harness logs", |b| {
        b.iter(|| {
            let summary = grade_logs(&selected, None, &settings, &mut |_| {}).unwrap();
            assert_eq!(summary.resolved_instances, 43);
        });
    });
    group.finish();
}

/// aci's own side of the canaries for one evaluation: drawing the names, placing them, adding
/// them to `eval.sh`, and checking a recorded log (the demo's ringbuf gold run: cargo, 24 tests).
/// The rest of their cost is the two tests in the container (measured with eval runs; README).
fn bench_canaries(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let log =
        std::fs::read_to_string(root.join("src/eval/testdata/canary_ringbuf_gold.txt")).unwrap();
    let names = CanaryNames {
        module: String::new(),
        pass: "test_9fc4c8e9e891".to_owned(),
        fail: "test_5bcb34358d00".to_owned(),
        terms: (0, 0),
    };
    let instances = load_instances_file(&root.join("tests/fixtures/demo/instances.jsonl"))
        .unwrap()
        .instances;
    let ringbuf = instances
        .iter()
        .find(|i| i.instance_id == "demo__ringbuf-1")
        .unwrap();
    let plan = grading_plan(ringbuf, builtin()).unwrap();
    let spec = EvalScriptSpec {
        repo_dir: "/testbed",
        base_ref: "HEAD",
        test_patch: ringbuf.test_patch.as_deref(),
        activate: None,
        eval_commands: &[],
        reinstall: None,
        test_cmd: &plan.test_cmd,
        test_directives: &[],
    };
    let mut group = c.benchmark_group("canaries");
    group.bench_function("plan and eval.sh steps of one evaluation", |b| {
        b.iter(|| {
            let canary = canary_plan(&plan, ringbuf.test_patch.as_deref(), CanaryNames::draw());
            let mut steps = eval_steps(&spec);
            add_canaries(&mut steps, &canary);
            render_eval_script(&steps)
        });
    });
    group.bench_function("verify one recorded cargo log", |b| {
        b.iter(|| verify(&log, ParserName::Cargo, &names, &[]).unwrap());
    });
    group.finish();
}

/// aci's own side of the integrity checks of one evaluation: the reset plan over a tree of
/// 20,000 untracked files (a built repository), the tripwires planted in a 5,000-line test
/// module, and the scan of a 2,000-line patch.
fn bench_integrity(c: &mut Criterion) {
    use aci::eval::infra::{TreeState, reset_plan};
    use aci::eval::reach::reaches_into_tests;
    use aci::eval::tripwire::{Terms, plan, targets};
    use std::collections::BTreeMap;
    let tree = TreeState {
        changed: (0..200).map(|i| format!("pkg/module_{i}.py")).collect(),
        untracked: (0..20_000)
            .map(|i| format!("build/lib.linux/pkg/sub_{}/ext_{i}.so", i % 50))
            .chain(["conftest.py".to_owned(), "tests/__init__.py".to_owned()])
            .collect(),
        untracked_at_start: (0..20_000)
            .map(|i| format!("build/lib.linux/pkg/sub_{}/ext_{i}.so", i % 50))
            .collect(),
        base_dirs: (0..50).map(|i| format!("pkg/sub_{i}")).collect(),
    };
    let mut module = String::from("import pytest\n\n");
    let mut ids = Vec::new();
    for i in 0..1000 {
        module.push_str(&format!(
            "def test_case_{i}():\n    \"\"\"Case {i}.\"\"\"\n    value = {i}\n    assert value == {i}\n\n"
        ));
        if i % 100 == 0 {
            ids.push(format!("tests/test_big.py::test_case_{i}"));
        }
    }
    let texts = BTreeMap::from([("tests/test_big.py".to_owned(), module)]);
    let wanted = targets(ParserName::Pytest, &ids);
    let mut patch = String::from(
        "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,0 +1,2000 @@\n",
    );
    for i in 0..2000 {
        patch.push_str(&format!("+value_{i} = compute({i}) + offset\n"));
    }
    let mut group = c.benchmark_group("integrity");
    group.bench_function("reset plan over 20,000 untracked files", |b| {
        b.iter(|| reset_plan(&tree, &BTreeMap::new()));
    });
    group.bench_function("tripwires for 10 tests in a 5,000-line module", |b| {
        b.iter(|| plan(&wanted, &texts, Terms(4821, 4822)));
    });
    group.bench_function("scan of a 2,000-line patch", |b| {
        b.iter(|| reaches_into_tests(&patch));
    });
    group.finish();
}

criterion_group!(benches, bench_grading, bench_canaries, bench_integrity);
criterion_main!(benches);
