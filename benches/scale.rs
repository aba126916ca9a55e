//! Scale: N sandboxes started at once on one daemon, then N sessions sending commands at once.
//! For each N it prints the ready time and the per-command round trip (p50 and p99), aci's CPU
//! time and memory per session, the engine's (the daemon and its per-container processes), and
//! the disk watchdogs' size inspections per second while the sessions sit idle.
//!
//! ```text
//! cargo bench --bench scale -- [--sessions 1,16,64] [--commands 50] [--idle 12] [--measured]
//! ```
//!
//! `DOCKER_HOST` chooses the daemon; `benches/scale.sh` runs it on Docker and then on a Podman
//! service it starts. `--measured` keeps the disk quota only measured by the daemon (what a
//! remote daemon and Podman get), so the size inspections show. Needs the base image
//! (`aci images build`). A benchmark, not a test: it asserts nothing about time.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The table on stdout is what this benchmark is for.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use aci::sandbox::docker::DockerRuntime;
use aci::sandbox::{Sandbox, SandboxSpec};
use futures_util::future::join_all;

/// Linux's `USER_HZ`: the unit of `/proc/<pid>/stat`'s CPU times.
const TICKS_PER_SECOND: f64 = 100.0;

struct Options {
    sessions: Vec<usize>,
    commands: usize,
    idle: Duration,
    measured: bool,
    image: String,
}

fn options() -> Options {
    let mut options = Options {
        sessions: vec![1, 16, 64],
        commands: 50,
        idle: Duration::from_secs(12),
        measured: false,
        image: std::env::var("ACI_TEST_IMAGE").unwrap_or_else(|_| "aci-base:bookworm".to_owned()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        match arg.as_str() {
            "--sessions" => {
                options.sessions = value("--sessions")
                    .split(',')
                    .map(|n| {
                        n.trim()
                            .parse()
                            .expect("--sessions: numbers, comma-separated")
                    })
                    .collect();
            }
            "--commands" => options.commands = value("--commands").parse().expect("--commands"),
            "--idle" => {
                options.idle = Duration::from_secs(value("--idle").parse().expect("--idle"));
            }
            "--image" => options.image = value("--image"),
            "--measured" => options.measured = true,
            // cargo bench passes `--bench`; criterion's other flags mean nothing here.
            _ => {}
        }
    }
    options
}

/// CPU seconds (user and system) and resident bytes of a set of processes.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    cpu: f64,
    rss: u64,
}

impl std::ops::Sub for Usage {
    type Output = Usage;
    fn sub(self, before: Usage) -> Usage {
        Usage {
            cpu: self.cpu - before.cpu,
            rss: self.rss.saturating_sub(before.rss),
        }
    }
}

fn usage_of(pid: &str) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Some(Usage {
        cpu: ticks / TICKS_PER_SECOND,
        rss: rss_kb * 1024,
    })
}

/// The engine's processes: Docker's daemon, containerd and its shims, Podman's service and
/// its conmons, and the fuse-overlayfs mounts a storage driver runs.
fn is_engine(comm: &str, cmdline: &str) -> bool {
    matches!(
        comm,
        "dockerd" | "containerd" | "containerd-shim" | "conmon" | "fuse-overlayfs"
    ) || comm.starts_with("containerd-shim")
        || (comm == "podman" && cmdline.contains("system\0service"))
}

/// The engine's processes by pid.
type Engine = std::collections::HashMap<String, Usage>;

fn engine_processes() -> Engine {
    let mut processes = Engine::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if is_engine(comm.trim(), &cmdline)
            && let Some(usage) = usage_of(&pid)
        {
            processes.insert(pid, usage);
        }
    }
    processes
}

/// What the engine's processes used from `before` to `after`: the CPU time of the processes
/// alive at `after` since `before` (or since they started), and the growth of their memory.
/// A process that ended in between takes its CPU time with it, so the CPU is a lower bound.
fn engine_delta(before: &Engine, after: &Engine) -> Usage {
    let cpu = after
        .iter()
        .map(|(pid, usage)| usage.cpu - before.get(pid).map_or(0.0, |b| b.cpu))
        .sum();
    let rss = |processes: &Engine| processes.values().map(|usage| usage.rss).sum::<u64>();
    Usage {
        cpu,
        rss: rss(after).saturating_sub(rss(before)),
    }
}

fn own_usage() -> Usage {
    usage_of("self").unwrap()
}

/// The nearest-rank percentile `p` of `sorted`, in milliseconds.
fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}

struct Level {
    sessions: usize,
    ready: Vec<Duration>,
    round_trip: Vec<Duration>,
    aci: Usage,
    engine: Usage,
    inspections_per_second: f64,
    engine_idle_cpu: f64,
}

async fn level(runtime: &DockerRuntime, options: &Options, sessions: usize) -> Level {
    let run_id = format!("scale-{}-{sessions}", std::process::id());
    let specs: Vec<SandboxSpec> = (0..sessions)
        .map(|i| SandboxSpec::new(run_id.clone(), format!("scale-{i}"), options.image.clone()))
        .collect();
    let (aci_before, engine_before) = (own_usage(), engine_processes());
    let started = join_all(specs.iter().map(|spec| async move {
        let start = Instant::now();
        let sandbox = runtime.start(spec).await;
        (start.elapsed(), sandbox)
    }))
    .await;
    let mut ready = Vec::with_capacity(sessions);
    let mut sandboxes = Vec::with_capacity(sessions);
    for (elapsed, sandbox) in started {
        ready.push(elapsed);
        sandboxes.push(sandbox.expect("a sandbox did not start"));
    }
    let timeout = Duration::from_secs(60);
    let commands = options.commands;
    let round_trips = join_all(sandboxes.iter_mut().map(|sandbox| async move {
        let mut times = Vec::with_capacity(commands);
        for _ in 0..commands {
            let start = Instant::now();
            sandbox.run("true", timeout).await.unwrap();
            times.push(start.elapsed());
        }
        times
    }))
    .await;
    let (aci_after, engine_after) = (own_usage(), engine_processes());
    // Idle: what the engine and the watchdogs cost while every session waits on its model.
    let inspections = runtime.size_inspections();
    let engine_idle = engine_processes();
    tokio::time::sleep(options.idle).await;
    let idle_seconds = options.idle.as_secs_f64();
    let inspections_per_second = (runtime.size_inspections() - inspections) as f64 / idle_seconds;
    let engine_idle_cpu = engine_delta(&engine_idle, &engine_processes()).cpu / idle_seconds;
    join_all(sandboxes.into_iter().map(|sandbox| async move {
        sandbox.shutdown().await.unwrap();
    }))
    .await;
    let mut round_trip: Vec<Duration> = round_trips.into_iter().flatten().collect();
    ready.sort();
    round_trip.sort();
    Level {
        sessions,
        ready,
        round_trip,
        aci: aci_after - aci_before,
        engine: engine_delta(&engine_before, &engine_after),
        inspections_per_second,
        engine_idle_cpu,
    }
}

fn main() {
    let options = options();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let runtime = rt
        .block_on(DockerRuntime::connect())
        .expect("the scale benchmark needs a Docker or Podman daemon (DOCKER_HOST)");
    let runtime = if options.measured {
        runtime.measure_disk_only()
    } else {
        runtime
    };
    let daemon = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "the default socket".to_owned());
    println!(
        "scale on {daemon}: image {}, {} commands per session, {} s idle{}",
        options.image,
        options.commands,
        options.idle.as_secs(),
        if options.measured {
            ", disk quota measured"
        } else {
            ""
        }
    );
    println!(
        "| sessions | ready p50 ms | ready p99 ms | round trip p50 ms | round trip p99 ms | aci CPU ms/session | aci RSS MiB/session | engine CPU ms/session | engine RSS MiB/session | engine idle CPU %/session | size inspections/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &sessions in &options.sessions {
        let level = rt.block_on(level(&runtime, &options, sessions));
        let n = level.sessions as f64;
        let mib = |bytes: u64| bytes as f64 / n / (1024.0 * 1024.0);
        println!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.2} | {:.1} | {:.2} | {:.1} | {:.2} | {:.2} | {:.2} |",
            level.sessions,
            percentile(&level.ready, 50.0),
            percentile(&level.ready, 99.0),
            percentile(&level.round_trip, 50.0),
            percentile(&level.round_trip, 99.0),
            level.aci.cpu * 1000.0 / n,
            mib(level.aci.rss),
            level.engine.cpu * 1000.0 / n,
            mib(level.engine.rss),
            level.engine_idle_cpu * 100.0 / n,
            level.inspections_per_second,
        );
    }
}
