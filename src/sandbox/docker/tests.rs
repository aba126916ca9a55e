//! Unit tests of the Docker helpers that need no daemon: container names, image references,
//! process start times and the kinds of the daemon's errors.

use std::sync::Arc;

use super::containers::container_name;
use super::*;
use crate::sandbox::liveness::{own_start_time, process_start_time};

/// The counter at the end of a name made by [`container_name`], checking everything before
/// it against `expected_prefix`.
fn counter_after(name: &str, expected_prefix: &str) -> u64 {
    let rest = name
        .strip_prefix(expected_prefix)
        .unwrap_or_else(|| panic!("{name} does not start with {expected_prefix}"));
    rest.parse()
        .unwrap_or_else(|_| panic!("{name} does not end in a counter"))
}

#[test]
fn references_split_at_the_tag_not_at_a_registry_port() {
    assert_eq!(
        split_reference("localhost:5000/aci-env-python:0123abcd"),
        ("localhost:5000/aci-env-python", "0123abcd")
    );
    assert_eq!(
        split_reference("ghcr.io/me/aci-base:bookworm"),
        ("ghcr.io/me/aci-base", "bookworm")
    );
    assert_eq!(
        split_reference("localhost:5000/aci-base"),
        ("localhost:5000/aci-base", "latest")
    );
    assert_eq!(split_reference("aci-base"), ("aci-base", "latest"));
}

#[test]
fn container_names_keep_only_safe_characters() {
    let pid = std::process::id();
    let first = container_name("demo__calc-1", "r1");
    let n = counter_after(&first, &format!("aci-demo__calc-1-r1-{pid}-"));
    // Everything but ASCII letters, digits, `-`, `_` and `.` becomes `_`, one per character.
    let second = container_name("a/b c\u{e9}:d.e", "run:1/x");
    let m = counter_after(&second, &format!("aci-a_b_c__d.e-run_1_x-{pid}-"));
    assert!(m > n, "the counter grows: {first} then {second}");
    // A long id is cut to 100 characters before the pid and counter, which are kept whole.
    let long = container_name(&"x".repeat(300), "r");
    let k = counter_after(&long, &format!("aci-{}-{pid}-", "x".repeat(96)));
    assert!(k > m);
    assert!([&first, &second, &long].iter().all(|name| {
        name.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    }));
}

/// Field 22 of `/proc/<pid>/stat`, the start time, as `cut` reads it (the process names
/// used here have no spaces).
fn start_time_by_cut(pid: u32) -> u64 {
    let out = std::process::Command::new("cut")
        .args(["-d", " ", "-f", "22", &format!("/proc/{pid}/stat")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn own_process_has_a_start_time() {
    let own = std::process::id();
    assert_eq!(process_start_time(own), Some(start_time_by_cut(own)));
    assert_eq!(own_start_time(), start_time_by_cut(own));
    // A process started later has a start time no earlier than this one's.
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let child_start = process_start_time(child.id());
    assert_eq!(child_start, Some(start_time_by_cut(child.id())));
    assert!(child_start >= process_start_time(own));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        process_start_time(child.id()),
        None,
        "a reaped process has none"
    );
    assert_eq!(process_start_time(u32::MAX), None);
}

#[tokio::test]
async fn container_tracking_goes_on_after_a_panic_poisoned_its_lock() {
    // Tracking is bookkeeping of this process: a client that is never used, no daemon.
    let docker =
        Docker::connect_with_http("http://127.0.0.1:9", 1, bollard::API_DEFAULT_VERSION).unwrap();
    let runtime = DockerRuntime {
        docker,
        engine: Engine::Docker,
        podman_ulimits: Arc::default(),
        live: Arc::default(),
        disk: Arc::default(),
        closed: Arc::default(),
        remote: None,
        sizes: Arc::default(),
        ssh: None,
        starting: Arc::default(),
    };
    runtime.track("before", true);
    let live = Arc::clone(&runtime.live);
    let panicked = std::thread::spawn(move || {
        let _held = live.lock().unwrap();
        panic!("a panic while the list is held");
    })
    .join();
    runtime.track("after", true);
    runtime.track("before", false);
    assert_eq!(
        (
            panicked.is_err(),
            runtime.live.is_poisoned(),
            runtime.live_ids().clone()
        ),
        (true, true, vec!["after".to_owned()])
    );
}

/// The daemon's answer to a pull or a registry inspect, as bollard gives it.
fn answer(status_code: u16, message: &str) -> bollard::errors::Error {
    bollard::errors::Error::DockerResponseServerError {
        status_code,
        message: message.to_owned(),
    }
}

#[test]
fn unreachable_registries_are_told_apart_from_missing_manifests_and_refusals() {
    let kind = |error: bollard::errors::Error| error::from_registry(&error, String::new()).kind;
    let stream = |text: &str| bollard::errors::Error::DockerStreamError {
        error: text.to_owned(),
    };
    assert_eq!(
        [
            kind(answer(
                500,
                "Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused"
            )),
            kind(stream(
                "Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io \
                 on 127.0.0.11:53: no such host"
            )),
            kind(answer(
                404,
                "manifest for 127.0.0.1:5000/x:latest not found: manifest unknown: manifest unknown"
            )),
            kind(answer(500, "manifest unknown: manifest unknown")),
            kind(answer(
                403,
                "pull access denied for x, repository does not exist"
            )),
            kind(stream(
                "pull access denied for x, repository does not exist"
            )),
        ],
        [
            DockerErrorKind::RegistryUnreachable,
            DockerErrorKind::RegistryUnreachable,
            DockerErrorKind::NotFound,
            DockerErrorKind::NotFound,
            DockerErrorKind::Auth,
            // A failure in the middle of a stream has no status.
            DockerErrorKind::Other { status: None },
        ]
    );
}

#[test]
fn the_daemons_own_answers_take_their_kind_from_the_status_alone() {
    let kind = |error: bollard::errors::Error| error::from_bollard(&error).kind;
    assert_eq!(
        [
            kind(answer(404, "No such container: x")),
            kind(answer(409, "removal of container x is already in progress")),
            // Words are not read here: a failure that mentions "not found" stays a failure.
            kind(answer(500, "driver failed: layer not found")),
            kind(bollard::errors::Error::RequestTimeoutError),
        ],
        [
            DockerErrorKind::NotFound,
            DockerErrorKind::Conflict,
            DockerErrorKind::Other { status: Some(500) },
            DockerErrorKind::Connect,
        ]
    );
}
