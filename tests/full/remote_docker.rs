//! A remote Docker daemon: `DOCKER_HOST=tcp://…` with `DOCKER_TLS_VERIFY` and client
//! certificates, as the Docker CLI reads them, against a TLS endpoint this test starts in front
//! of the local daemon's socket (it requires a client certificate its CA signed). The demo
//! batch and its evaluation give the Docker report through it; a client without the right
//! certificates gets one line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;
use crate::standin::tls;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use batch_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes the endpoint carried: from aci to the daemon, and back.
#[derive(Default)]
struct Wire {
    up: AtomicU64,
    down: AtomicU64,
}

/// Copies `from` to `to` until either side ends, counting the bytes in `count`.
async fn pipe(
    mut from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    count: &AtomicU64,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
    let _ = to.shutdown().await;
}

/// Starts the TLS endpoint on a free loopback port, on its own runtime thread; returns its
/// address.
fn start_endpoint(certs: &tls::Certificates, wire: Arc<Wire>) -> String {
    let acceptor = tls::acceptor(certs);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, wire) = (acceptor.clone(), wire.clone());
                tokio::spawn(async move {
                    // A client without a certificate the CA signed fails the handshake here.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let daemon = tokio::net::UnixStream::connect("/var/run/docker.sock")
                        .await
                        .expect("the endpoint needs the local daemon's socket");
                    let (tls_read, tls_write) = tokio::io::split(tls);
                    let (daemon_read, daemon_write) = daemon.into_split();
                    tokio::join!(
                        pipe(tls_read, daemon_write, &wire.up),
                        pipe(daemon_read, tls_write, &wire.down),
                    );
                });
            }
        });
    });
    addr
}

/// Writes the client's files where `DOCKER_CERT_PATH` points: `ca.pem`, `cert.pem`, `key.pem`.
fn write_client_files(dir: &Path, certs: &tls::Certificates) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("ca.pem"), &certs.ca).unwrap();
    std::fs::write(dir.join("cert.pem"), &certs.client_cert).unwrap();
    std::fs::write(dir.join("key.pem"), &certs.client_key).unwrap();
}

/// `aci <args>` with the daemon at `tcp://addr` over TLS with the files of `cert_path`.
fn aci_remote(addr: &str, cert_path: &Path, args: &[&str]) -> Run {
    aci()
        .args(args)
        .env("DOCKER_HOST", format!("tcp://{addr}"))
        .env("DOCKER_TLS_VERIFY", "1")
        .env("DOCKER_CERT_PATH", cert_path)
        .output()
        .unwrap()
        .into()
}

#[test]
fn the_demo_batch_and_eval_through_a_tls_endpoint_give_the_docker_report() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let certs = tls::make(&pki);
    let client = dir.path().join("client");
    write_client_files(&client, &certs);
    let wire = Arc::new(Wire::default());
    let addr = start_endpoint(&certs, wire.clone());

    let instances = demo_dir().join("instances.jsonl");
    let replays = demo_dir().join("replays");
    let out = dir.path().join("run");
    let run = run_id("remote-tls");
    let batch = aci_remote(
        &addr,
        &client,
        &[
            "batch",
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            replays.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
            "--workers",
            "2",
        ],
    );
    batch.expect_code(0);
    // The quota is only measured: the daemon's storage is not taken to be this machine's.
    assert!(
        batch.stderr.contains(&format!(
            "the daemon is reached at tcp://{addr}, so its storage is not on this machine"
        )),
        "{}",
        batch.stderr
    );
    assert_eq!(
        summary_rows(&batch.stdout),
        rows(&[("submitted", 8), ("total", 8)])
    );
    let up_after_batch = wire.up.load(Ordering::Relaxed);

    let eval_out = dir.path().join("eval");
    let eval_run = run_id("remote-tls-eval");
    aci_remote(
        &addr,
        &client,
        &[
            "eval",
            "--instances",
            instances.to_str().unwrap(),
            "--predictions",
            out.join("preds.json").to_str().unwrap(),
            "--output",
            eval_out.to_str().unwrap(),
            "--run-id",
            &eval_run,
            "--workers",
            "2",
        ],
    )
    .expect_code(0);
    let report = read_json(&eval_out.join("report.json"));
    let expected = read_json(&demo_dir().join("expected_resolved.json"));
    assert_eq!(report["resolved_ids"], expected);
    assert_eq!(report["resolved_instances"], 7);
    assert_eq!(report["total_instances"], 8);
    // Everything went through the endpoint, and nothing of either run is left.
    assert!(up_after_batch > 0 && wire.down.load(Ordering::Relaxed) > 0);
    eprintln!(
        "bytes through the TLS endpoint: batch {up_after_batch} up; batch and eval {} up, {} down",
        wire.up.load(Ordering::Relaxed),
        wire.down.load(Ordering::Relaxed)
    );
    assert!(containers_of(&run).is_empty() && containers_of(&eval_run).is_empty());

    // A client whose certificate another CA signed is refused in the handshake: one line.
    let strangers = dir.path().join("strangers");
    std::fs::create_dir_all(&strangers).unwrap();
    let other = tls::make(&strangers);
    let wrong = dir.path().join("wrong");
    std::fs::create_dir_all(&wrong).unwrap();
    std::fs::write(wrong.join("ca.pem"), &certs.ca).unwrap();
    std::fs::write(wrong.join("cert.pem"), &other.client_cert).unwrap();
    std::fs::write(wrong.join("key.pem"), &other.client_key).unwrap();
    let refused = aci_remote(
        &addr,
        &wrong,
        &[
            "run",
            "--instances",
            instances.to_str().unwrap(),
            "--id",
            "demo__inicfg-1",
            "--replay",
            replays.join("demo__inicfg-1.yaml").to_str().unwrap(),
            "--output",
            dir.path().join("refused").to_str().unwrap(),
        ],
    );
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    let first = refused.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "error: docker: cannot reach the Docker daemon at tcp://{addr} with TLS (DOCKER_HOST): "
        )),
        "{}",
        refused.stderr
    );
    // And certificates that are not there are named before anything connects.
    let missing = aci_remote(
        &addr,
        &dir.path().join("nowhere"),
        &[
            "run",
            "--instances",
            instances.to_str().unwrap(),
            "--id",
            "demo__inicfg-1",
        ],
    );
    assert_eq!(missing.code, Some(1), "{}", missing.stderr);
    assert_eq!(
        missing.stderr.lines().next(),
        Some(
            format!(
                "error: docker: DOCKER_TLS_VERIFY is set, but {}/ca.pem cannot be read (DOCKER_CERT_PATH \
                 names the directory of ca.pem, cert.pem and key.pem)",
                dir.path().join("nowhere").display()
            )
            .as_str()
        ),
        "{}",
        missing.stderr
    );
}
