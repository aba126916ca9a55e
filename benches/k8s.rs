//! `--engine k8s` latency: a command's round trip over the pod's exec stream (through the
//! Kubernetes API stand-in of the tests, a Docker container behind it) against the Docker
//! session's round trip, in the same run; and, for scale, a fresh exec per command, which is
//! what the interrupt costs and what a design without a held stream would pay each time. Needs
//! the Docker daemon and the base image (`aci images build`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/k8s/mod.rs"]
mod standin;

use std::time::{Duration, Instant};

use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::k8s::manifest::PullPolicy;
use aci::sandbox::k8s::status::StartLimits;
use aci::sandbox::k8s::{K8sRuntime, K8sSettings, kubeconfig};
use aci::sandbox::{Sandbox, SandboxSpec, Transport};
use criterion::{Criterion, criterion_group, criterion_main};
use standin::{Options, StandIn};

fn spec() -> SandboxSpec {
    let image = std::env::var("ACI_TEST_IMAGE").unwrap_or_else(|_| "aci-base:bookworm".to_owned());
    SandboxSpec::new(format!("bench-k8s-{}", std::process::id()), "bench", image)
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let standin = rt.block_on(StandIn::start(Options::default()));
    let path = standin.kubeconfig().to_owned();
    let text = std::fs::read_to_string(&path).unwrap();
    let config = kubeconfig::from_kubeconfigs(&[(path, text)], None).unwrap();
    let settings = K8sSettings {
        namespace: None,
        context: None,
        pull_policy: PullPolicy::IfNotPresent,
        start_limits: StartLimits {
            pull: Duration::from_secs(120),
            schedule: Duration::from_secs(60),
        },
        pull_secret: None,
        node_selector: Default::default(),
    };
    let cluster = rt
        .block_on(K8sRuntime::connect_with(config, settings))
        .unwrap();
    let mut pod = rt.block_on(cluster.start(&spec(), 3600.0)).unwrap();
    let docker = rt
        .block_on(DockerRuntime::connect())
        .expect("the benchmarks need the Docker daemon");
    let mut container = rt.block_on(docker.start(&spec())).unwrap();
    let timeout = Duration::from_secs(30);

    let mut group = c.benchmark_group("round_trip");
    group.bench_function("docker_session", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    container.run("true", timeout).await.unwrap();
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("k8s_exec_stream", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    pod.run("true", timeout).await.unwrap();
                }
                start.elapsed()
            })
        })
    });
    group.finish();

    let mut group = c.benchmark_group("one_shot");
    group.sample_size(20);
    group.bench_function("k8s_exec_per_command", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let out = pod
                        .transport()
                        .run_beside(vec!["true".to_owned()])
                        .await
                        .unwrap();
                    assert_eq!(out.exit_code, Some(0));
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    rt.block_on(pod.shutdown()).unwrap();
    rt.block_on(container.shutdown()).unwrap();
    drop(standin);
}

criterion_group!(k8s_benches, benches);
criterion_main!(k8s_benches);
