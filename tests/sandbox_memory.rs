//! 100 MB of output must not grow the harness's memory. Its own test binary, so that no other
//! test's allocations share the process's peak.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use aci::sandbox::Sandbox;
use support::{Kind, start};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabytes_of_output_keeps_memory_bounded() {
    for kind in [Kind::Docker, Kind::Local] {
        let (mut s, _repo) = start(kind, "hundred-mb").await;
        // Warm up every code path once, then take the baseline.
        s.run(
            "head -c 1000000 /dev/urandom | base64",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        let before = status_kib("VmRSS:");
        let out = s
            .run(
                "head -c 100000000 /dev/urandom | base64 -w 0; echo; echo done",
                Duration::from_secs(300),
            )
            .await
            .unwrap();
        let peak = status_kib("VmHWM:");
        assert_eq!(out.exit_code, Some(0), "{kind:?}");
        assert!(out.stdout.ends_with(b"\ndone\n"), "{kind:?}");
        assert!(
            out.elided_bytes > 130_000_000,
            "{kind:?}: {}",
            out.elided_bytes
        );
        assert!(
            out.stdout.len() < 200 * 1024,
            "{kind:?}: kept {} bytes",
            out.stdout.len()
        );
        let grown_mib = peak.saturating_sub(before) / 1024;
        assert!(
            grown_mib < 48,
            "{kind:?}: peak RSS grew by {grown_mib} MiB while 133 MB streamed through"
        );
        s.shutdown().await.unwrap();
    }
}
