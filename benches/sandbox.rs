//! Sandbox latency: the persistent-shell round trip against a one-shot `docker exec`, file
//! reads and writes through the session, a container's start and removal with and without a
//! quota filesystem, and a container's whole life with a 50 MB checkout.
//! Needs the Docker daemon and the base image (`aci images build`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::{RepoSource, Sandbox, SandboxSpec};
use criterion::{Criterion, criterion_group, criterion_main};

fn spec(repo: Option<&std::path::Path>) -> SandboxSpec {
    let image = std::env::var("ACI_TEST_IMAGE").unwrap_or_else(|_| "aci-base:bookworm".to_owned());
    SandboxSpec {
        repo: repo.map(RepoSource::directory),
        ..SandboxSpec::new(format!("bench-{}", std::process::id()), "bench", image)
    }
}

/// A 50 MB repository: 500 source-like files of 100 KB in 25 directories.
fn fifty_megabyte_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..25 {
        let sub = dir.path().join(format!("pkg{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..20 {
            let mut text = String::with_capacity(100_000);
            let mut i = 0u64;
            while text.len() < 100_000 {
                text.push_str(&format!(
                    "def function_{d}_{f}_{i}(value):\n    return value * {}\n\n",
                    i * 2654435761 % 1000003
                ));
                i += 1;
            }
            std::fs::write(sub.join(format!("module_{f}.py")), text).unwrap();
        }
    }
    dir
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let runtime = rt
        .block_on(DockerRuntime::connect())
        .expect("the benchmarks need the Docker daemon");
    let mut sandbox = rt.block_on(runtime.start(&spec(None))).unwrap();
    let timeout = Duration::from_secs(30);

    c.bench_function("shell_round_trip", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    sandbox.run("true", timeout).await.unwrap();
                }
                start.elapsed()
            })
        })
    });

    let container = sandbox.container_id().to_owned();
    let mut group = c.benchmark_group("one_shot");
    group.sample_size(30);
    group.bench_function("docker_exec_true", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    runtime
                        .exec_once(&container, vec!["true".to_owned()])
                        .await
                        .unwrap();
                }
                start.elapsed()
            })
        })
    });
    group.finish();

    let file: Vec<u8> = (0..5000)
        .flat_map(|i| format!("    value_{i} = compute(value_{i}, {i})  # a line\n").into_bytes())
        .collect();
    rt.block_on(sandbox.write_file("/tmp/five_thousand.py", &file))
        .unwrap();
    c.bench_function("read_file_5000_lines", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    sandbox.read_file("/tmp/five_thousand.py").await.unwrap();
                }
                start.elapsed()
            })
        })
    });
    c.bench_function("write_file_5000_lines", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    sandbox
                        .write_file("/tmp/five_thousand.py", &file)
                        .await
                        .unwrap();
                }
                start.elapsed()
            })
        })
    });
    rt.block_on(sandbox.shutdown()).unwrap();

    // What `env.disk_mb` costs: a container whose writable layer gets a quota filesystem (as
    // root beside the daemon) against one whose quota is only measured, in the same run. The
    // image holds the repository, as SWE-bench's do: start is create, start and the session's
    // first round trip; removal is timed apart.
    let mut group = c.benchmark_group("disk_quota");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(15));
    let measured = runtime.clone().measure_disk_only();
    let quota_spec = spec(None);
    for (name, runtime) in [
        ("start_with_quota_filesystem", &runtime),
        ("start_with_measured_quota", &measured),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut ready = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let s = runtime.start(&quota_spec).await.unwrap();
                        ready += start.elapsed();
                        s.shutdown().await.unwrap();
                    }
                    ready
                })
            })
        });
    }
    for (name, runtime) in [
        ("remove_with_quota_filesystem", &runtime),
        ("remove_with_measured_quota", &measured),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut removal = Duration::ZERO;
                    for _ in 0..iters {
                        let s = runtime.start(&quota_spec).await.unwrap();
                        let start = Instant::now();
                        s.shutdown().await.unwrap();
                        removal += start.elapsed();
                    }
                    removal
                })
            })
        });
    }
    group.finish();

    let repo = fifty_megabyte_repo();
    let spec = spec(Some(repo.path()));
    let mut group = c.benchmark_group("container");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("create_start_checkout_50mb_remove", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut ready = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let s = runtime.start(&spec).await.unwrap();
                    ready += start.elapsed();
                    s.shutdown().await.unwrap();
                }
                ready
            })
        })
    });
    group.bench_function("whole_life_with_removal", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    runtime
                        .start(&spec)
                        .await
                        .unwrap()
                        .shutdown()
                        .await
                        .unwrap();
                }
                start.elapsed()
            })
        })
    });
    // The warm path: the instance's environment image already holds the 50 MB repository and
    // its baseline commit (built once, as `aci batch` and `aci eval` build it), so a container is
    // ready after create, start and the session's first round trip.
    let record = format!(
        r#"{{"instance_id": "bench__fifty-mb", "repo": "bench/fifty-mb", "base_commit": "0", "problem_statement": "x", "repo_path": "{}", "language": "python", "image": "{}"}}"#,
        repo.path().display(),
        spec.image
    );
    let instance = aci::instance::parse_instances(&record, None)
        .unwrap()
        .instances
        .remove(0);
    let env = aci::config::EnvConfig::default();
    let quiet = |_: &str| {};
    let request = aci::image::env::EnvRequest {
        env: &env,
        run_id: &spec.run_id,
        on_step: &quiet,
    };
    let provisioner = aci::provision::Provisioner::new();
    let env_image = rt
        .block_on(provisioner.env_image(&runtime, &instance, &request))
        .unwrap();
    // What a run pays before its first action: find the environment image (the repository is
    // fingerprinted, not read), then create and start the container and open its session.
    group.bench_function("ready_from_env_image_50mb", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut ready = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let found = provisioner
                        .env_image(&runtime, &instance, &request)
                        .await
                        .unwrap();
                    assert!(!found.built);
                    let mut warm = spec.clone();
                    warm.image.clone_from(&found.tag);
                    warm.repo = None;
                    let s = runtime.start(&warm).await.unwrap();
                    ready += start.elapsed();
                    s.shutdown().await.unwrap();
                }
                ready
            })
        })
    });
    group.finish();
    let _ = rt.block_on(runtime.remove_image(&env_image.tag));
}

criterion_group!(sandbox_benches, benches);
criterion_main!(sandbox_benches);
