//! `aci inspect` on big runs: the run page of a 2,294-instance directory (SWE-bench's full
//! size, the demo's moneyfmt trajectory copied under new ids, each with an evaluation report),
//! served over HTTP with the summary cache warm, rendered warm, and rendered cold (every
//! trajectory read); and the page of one instance with 250 turns (the demo's turns repeated:
//! windows, a lint rejection, edits, a patch).
//!
//! `cargo bench --bench inspect`; medians are in `target/criterion/*/new/estimates.json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use aci::inspect::site::{Mode, Route, RunRef, Site};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::Value;

const MONEYFMT: &str = include_str!("../tests/fixtures/inspect/demo__moneyfmt-1.traj");
const INSTANCES: usize = 2294;

/// `DIR/run/<id>/<id>.traj` for 2,294 ids and `DIR/eval/<id>/report.json` for each.
fn big_run(dir: &Path) {
    for i in 0..INSTANCES {
        let id = format!("repo__project-{i:05}");
        let instance = dir.join("run").join(&id);
        std::fs::create_dir_all(&instance).unwrap();
        std::fs::write(instance.join(format!("{id}.traj")), MONEYFMT).unwrap();
        let report = dir.join("eval").join(&id);
        std::fs::create_dir_all(&report).unwrap();
        std::fs::write(
            report.join("report.json"),
            format!(
                "{{\"{id}\": {{\"patch_exists\": true, \"resolved\": {}}}}}",
                i % 3 != 0
            ),
        )
        .unwrap();
    }
}

/// One instance whose trajectory is the demo's nine turns repeated to 250.
fn long_instance(dir: &Path) {
    let mut traj: Value = serde_json::from_str(MONEYFMT).unwrap();
    let steps = traj["trajectory"].as_array().unwrap().clone();
    let long: Vec<Value> = steps.iter().cycle().take(250).cloned().collect();
    traj["trajectory"] = Value::Array(long);
    let instance = dir.join("long").join("demo__long-1");
    std::fs::create_dir_all(&instance).unwrap();
    std::fs::write(
        instance.join("demo__long-1.traj"),
        serde_json::to_vec(&traj).unwrap(),
    )
    .unwrap();
}

fn http_get(port: u16, path: &str) -> usize {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 200 OK"));
    answer.len()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    big_run(dir.path());
    long_instance(dir.path());
    let run = dir.path().join("run");

    let site = Arc::new(Site::open(&run, None).unwrap());
    let page = site.render(&Route::Root, Mode::Live).unwrap();
    eprintln!(
        "run page of {INSTANCES} instances: {} KB of HTML",
        page.html.len() / 1024
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    runtime.spawn(aci::inspect::server::serve(Arc::clone(&site), listener));

    let mut group = c.benchmark_group("run_page_2294");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("served_over_http_warm", |b| {
        b.iter(|| http_get(port, "/"));
    });
    group.bench_function("rendered_warm", |b| {
        b.iter(|| site.render(&Route::Root, Mode::Live).unwrap().html.len());
    });
    group.sample_size(10);
    group.bench_function("rendered_cold", |b| {
        b.iter_batched(
            || Site::open(&run, None).unwrap(),
            |fresh| fresh.render(&Route::Root, Mode::Live).unwrap().html.len(),
            BatchSize::PerIteration,
        );
    });
    group.finish();

    let long = Site::open(&dir.path().join("long"), None).unwrap();
    let route = Route::Instance(RunRef::Root, "demo__long-1".to_owned());
    let page = long.render(&route, Mode::Live).unwrap();
    eprintln!(
        "instance page of 250 turns: {} KB of HTML",
        page.html.len() / 1024
    );
    let mut group = c.benchmark_group("instance_250_turns");
    group.sample_size(20);
    group.bench_function("rendered", |b| {
        b.iter(|| long.render(&route, Mode::Live).unwrap().html.len());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
