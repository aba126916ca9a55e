//! The bash-only protocol's per-command latency (`configs/mini-swe-agent.yaml`): each command
//! runs as that config runs it, in a fresh subshell from `/testbed` inside aci's persistent
//! shell ([`aci::aci::bash_only::subshell_command`]), with mini-swe-agent's environment variables
//! exported once in the session. Three commands: `true`, `ls -la` and a grep over the
//! repository (the demo's inicfg). `benches/mini_latency.py` times mini-swe-agent's own
//! environments on the same commands, the same repository and the same image, for
//! docs/performance.md. Needs the Docker daemon and `aci-python:bookworm` (`aci images build`);
//! `ACI_TEST_IMAGE` names another image.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use aci::aci::bash_only::subshell_command;
use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::{RepoSource, Sandbox, SandboxSpec};
use criterion::{Criterion, criterion_group, criterion_main};

/// The commands timed, by name; mini_latency.py runs the same ones.
const COMMANDS: [(&str, &str); 3] = [
    ("true", "true"),
    ("ls_la", "ls -la"),
    ("grep", "grep -rn _OPTION_RE ."),
];

/// mini's `environment.env` in its SWE-bench configs.
const MINI_ENV: &str = "export PAGER=cat MANPAGER=cat LESS=-R PIP_PROGRESS_BAR=off TQDM_DISABLE=1";

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let runtime = rt
        .block_on(DockerRuntime::connect())
        .expect("the benchmarks need the Docker daemon");
    let image =
        std::env::var("ACI_TEST_IMAGE").unwrap_or_else(|_| "aci-python:bookworm".to_owned());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/repos/inicfg");
    let spec = SandboxSpec {
        repo: Some(RepoSource::directory(&repo)),
        ..SandboxSpec::new(
            format!("bench-bash-only-{}", std::process::id()),
            "bench",
            image,
        )
    };
    let mut sandbox = rt.block_on(runtime.start(&spec)).unwrap();
    let timeout = Duration::from_secs(60);
    rt.block_on(sandbox.run(MINI_ENV, timeout)).unwrap();
    let repo_dir = spec.repo_dir;

    let mut group = c.benchmark_group("bash_only");
    for (name, command) in COMMANDS {
        let wrapped = subshell_command(&repo_dir, command);
        let check = rt.block_on(sandbox.run_merged(&wrapped, timeout)).unwrap();
        assert_eq!(check.exit_code, Some(0), "{command}: {check:?}");
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        sandbox.run_merged(&wrapped, timeout).await.unwrap();
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
    rt.block_on(sandbox.shutdown()).unwrap();
}

criterion_group!(bash_only, benches);
criterion_main!(bash_only);
