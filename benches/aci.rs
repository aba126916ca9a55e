//! ACI costs: the pure viewer and editor on a 5,000-line file, `open`/`goto`/`scroll_down`
//! through the real [`Aci`] on Docker next to the one file read each does, and `search_dir` over
//! 2,000 files next to a bare `grep -rIl` run through the same session.
//!
//! The harness time of a viewer command is its whole call minus its single exchange with the
//! container (`read_file` for goto and scroll, the probe for open); the `pure` benchmarks measure
//! that remainder directly. Needs the Docker daemon and `aci-python:bookworm`
//! (`aci images build --lang python`). Medians are in `target/criterion/*/new/estimates.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use aci::aci::edit::{EditRange, apply_edit, edit_success};
use aci::aci::observation::Transcript;
use aci::aci::registry::Registry;
use aci::aci::window::{OpenRequest, PathKind, WindowState, probe_command};
use aci::aci::{Aci, StepOutput};
use aci::config::AciConfig;
use aci::sandbox::docker::{DockerRuntime, DockerSandbox};
use aci::sandbox::{Sandbox, SandboxSpec};
use criterion::{Criterion, criterion_group, criterion_main};

const BIG: &str = "/testbed/big.py";

/// A 5,000-line Python file (about 230 KB).
fn five_thousand_lines() -> Vec<u8> {
    (0..5000)
        .flat_map(|i| format!("    value_{i} = compute(value_{i}, {i})  # a line\n").into_bytes())
        .collect()
}

fn opened(bytes: &[u8]) -> WindowState {
    let mut state = WindowState::new(100, 2);
    let request = OpenRequest {
        path: "big.py".to_owned(),
        line: None,
    };
    let file = PathKind::File {
        abs_path: BIG.to_owned(),
    };
    state.open(&request, &file, bytes);
    state
}

/// What the harness does around goto's file read: place, render, read back as v0 does.
fn goto_pure(state: &mut WindowState, bytes: &[u8], line: &str) -> String {
    let mut transcript = Transcript::default();
    transcript.push_command(&state.goto(line, bytes));
    transcript.finish()
}

fn pure(c: &mut Criterion) {
    let bytes = five_thousand_lines();
    let mut state = opened(&bytes);
    c.bench_function("pure/window_render_goto_5000_lines", |b| {
        b.iter(|| goto_pure(&mut state, &bytes, "2500"));
    });
    let state = opened(&bytes);
    let body = "    value_2500 = compute(value_2500, 2500)  # edited\n    extra = 1\n";
    c.bench_function("pure/edit_apply_and_render_5000_lines", |b| {
        b.iter(|| {
            let mut state = state.clone();
            let after = apply_edit(&bytes, 2500, 2501, body);
            let mut transcript = Transcript::default();
            let range = EditRange {
                start: 2500,
                end: 2501,
            };
            transcript.push_command(&edit_success(&mut state, range, &after));
            (after, transcript.finish())
        });
    });
}

fn spec() -> SandboxSpec {
    let run_id = format!("bench-{}", std::process::id());
    SandboxSpec::new(run_id, "bench-aci", "aci-python:bookworm")
}

/// Times `iters` runs of an async body on the runtime.
macro_rules! timed {
    ($rt:expr, $iters:expr, $body:expr) => {
        $rt.block_on(async {
            let start = Instant::now();
            for _ in 0..$iters {
                $body;
            }
            start.elapsed()
        })
    };
}

async fn execute(aci: &mut Aci<DockerSandbox>, action: &str) -> StepOutput {
    let step = aci.execute(action).await.unwrap();
    assert!(!step.failed, "{action}: {}", step.observation);
    step
}

fn viewer(c: &mut Criterion, rt: &tokio::runtime::Runtime, aci: &mut Aci<DockerSandbox>) {
    let timeout = Duration::from_secs(30);
    let mut group = c.benchmark_group("docker");
    group.sample_size(50);
    group.bench_function("read_file_5000_lines", |b| {
        b.iter_custom(|iters| {
            timed!(rt, iters, {
                aci.sandbox_mut().read_file(BIG).await.unwrap();
            })
        });
    });
    group.bench_function("open_probe_exchange_5000_lines", |b| {
        b.iter_custom(|iters| {
            timed!(rt, iters, {
                aci.sandbox_mut()
                    .run(&probe_command("big.py"), timeout)
                    .await
                    .unwrap();
            })
        });
    });
    for (name, action) in [
        ("open_5000_lines", "open big.py 2500"),
        ("goto_5000_lines", "goto 2500"),
        ("scroll_down_5000_lines", "scroll_down"),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed!(rt, iters, {
                    execute(aci, action).await;
                })
            });
        });
    }
    group.finish();
}

/// 2,000 files in 40 directories, 40 lines each; 80 of them (two per directory) mention the
/// term, so search_dir lists them (under the 100-file cap).
const MAKE_TREE: &str = r#"mkdir -p /testbed/tree && cd /testbed/tree && for d in $(seq 0 39); do
  mkdir -p pkg$d
  for f in $(seq 0 49); do
    { for l in $(seq 1 39); do echo "    value_$l = compute(value_$l, $d, $f)"; done
      if [ $((f % 40)) -eq 0 ]; then echo "    needle_marker = $d"; else echo "    other = $f"; fi
    } > pkg$d/module_$f.py
  done
done; cd /testbed"#;

fn search(c: &mut Criterion, rt: &tokio::runtime::Runtime, aci: &mut Aci<DockerSandbox>) {
    let timeout = Duration::from_secs(120);
    let out = rt
        .block_on(aci.sandbox_mut().run(MAKE_TREE, timeout))
        .unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.text());
    let step = rt.block_on(execute(aci, "search_dir needle_marker tree"));
    assert!(
        step.observation
            .starts_with("Found 80 matches for \"needle_marker\" in /testbed/tree:"),
        "{}",
        step.observation
    );
    let grep = "grep -rIl --exclude-dir=.git needle_marker /testbed/tree";
    let out = rt.block_on(aci.sandbox_mut().run(grep, timeout)).unwrap();
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 80);
    let mut group = c.benchmark_group("search");
    group.sample_size(30);
    group.bench_function("search_dir_2000_files", |b| {
        b.iter_custom(|iters| {
            timed!(rt, iters, {
                execute(aci, "search_dir needle_marker tree").await;
            })
        });
    });
    group.bench_function("bare_grep_rIl_2000_files", |b| {
        b.iter_custom(|iters| {
            timed!(rt, iters, {
                aci.sandbox_mut().run(grep, timeout).await.unwrap();
            })
        });
    });
    group.finish();
}

fn docker(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let runtime = rt
        .block_on(DockerRuntime::connect())
        .expect("the benchmarks need the Docker daemon");
    let mut sandbox = rt.block_on(runtime.start(&spec())).unwrap();
    rt.block_on(sandbox.write_file(BIG, &five_thousand_lines()))
        .unwrap();
    let registry = Registry::builtin().unwrap();
    let mut aci = Aci::new(
        sandbox,
        registry,
        AciConfig::default(),
        Duration::from_secs(60),
        4096,
    );
    rt.block_on(execute(&mut aci, "open big.py"));
    viewer(c, &rt, &mut aci);
    search(c, &rt, &mut aci);
    rt.block_on(aci.into_sandbox().shutdown()).unwrap();
}

criterion_group!(aci_benches, pure, docker);
criterion_main!(aci_benches);
