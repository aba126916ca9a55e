//! Out-of-range durations and resource limits through the `aci` binary: each is one `error:`
//! line naming the key and exit code 1, before anything starts (no instance directory, no
//! container), never a panic and never a silently removed limit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DEMO_ID: &str = "demo__inicfg-1";

const SECONDS: &str = "expected a number of seconds above 0 and at most 31536000 (365 days)";

fn demo_instances() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/instances.jsonl")
}

/// `aci run` of the demo instance with one `--set`, replaying a `submit`.
fn run_with(runtime: &str, run_id: &str, set: &str, dir: &Path) -> Output {
    let replay = dir.join("replay.yaml");
    std::fs::write(&replay, "- submit\n").unwrap();
    Command::new(env!("CARGO_BIN_EXE_aci"))
        .args([
            "run",
            "--id",
            DEMO_ID,
            "--runtime",
            runtime,
            "--run-id",
            run_id,
        ])
        .arg("--instances")
        .arg(demo_instances())
        .arg("--replay")
        .arg(&replay)
        .arg("--output")
        .arg(dir.join("out"))
        .args(["--set", set])
        .output()
        .unwrap()
}

/// Exit code and stderr, for one assertion.
fn outcome(output: &Output) -> (Option<i32>, String) {
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn every_out_of_range_duration_or_limit_is_one_error_line_naming_the_key_and_exit_1() {
    let cases = [
        ("env.command_timeout=-1", format!("{SECONDS}, got -1")),
        ("env.command_timeout=.nan", format!("{SECONDS}, got NaN")),
        ("env.command_timeout=.inf", format!("{SECONDS}, got inf")),
        ("env.command_timeout=1e300", format!("{SECONDS}, got 1e300")),
        ("env.instance_timeout=0", format!("{SECONDS}, got 0")),
        (
            "env.build_timeout=31536001",
            format!("{SECONDS}, got 31536001"),
        ),
        (
            "env.memory_mb=0",
            "expected a number above 0, got 0".to_owned(),
        ),
        ("env.pids=0", "expected a number above 0, got 0".to_owned()),
        (
            "env.disk_mb=0",
            "expected a number above 0, got 0".to_owned(),
        ),
        (
            "env.pids=-1",
            "expected a number above 0, got -1".to_owned(),
        ),
        ("env.cpus=0", "expected a number above 0, got 0".to_owned()),
        (
            "env.cpus=-0.5",
            "expected a number above 0, got -0.5".to_owned(),
        ),
        (
            "env.cpus=.nan",
            "expected a number above 0, got NaN".to_owned(),
        ),
        (
            "env.max_starting=-1",
            "expected a count, 0 or more, got -1".to_owned(),
        ),
    ];
    for (set, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let output = run_with("local", "test-ranges", set, dir.path());
        let key = set.split('=').next().unwrap();
        assert_eq!(
            (
                outcome(&output),
                dir.path().join("out").join(DEMO_ID).exists()
            ),
            (
                (Some(1), format!("error: --set {set}: {key}: {message}\n")),
                false
            ),
            "{set}"
        );
    }
}

#[test]
fn an_out_of_range_value_in_a_config_file_names_the_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("limits.yaml");
    std::fs::write(&config, "env:\n  memory_mb: 4096\n  cpus: 0\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args([
            "run",
            "--id",
            DEMO_ID,
            "--runtime",
            "local",
            "--replay",
            "/dev/null",
        ])
        .arg("--instances")
        .arg(demo_instances())
        .arg("--config")
        .arg(&config)
        .arg("--output")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(
        outcome(&output),
        (
            Some(1),
            format!(
                "error: {}:3:9: env.cpus: expected a number above 0, got 0\n",
                config.display()
            )
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_limit_on_docker_fails_before_any_container_is_created() {
    let docker = support::docker().await;
    let run_id = format!("test-ranges-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let output = run_with("docker", &run_id, "env.pids=0", dir.path());
    assert_eq!(
        (
            outcome(&output),
            docker.list_aci_containers(Some(&run_id)).await.unwrap()
        ),
        (
            (
                Some(1),
                "error: --set env.pids=0: env.pids: expected a number above 0, got 0\n".to_owned()
            ),
            Vec::<String>::new()
        )
    );
}

#[test]
fn an_out_of_range_eval_timeout_is_one_error_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    for (timeout, shown) in [("-1", "-1"), ("0", "0"), ("1e300", "1e300"), ("NaN", "NaN")] {
        let output = Command::new(env!("CARGO_BIN_EXE_aci"))
            .args(["eval", "--predictions", "gold"])
            .arg(format!("--timeout={timeout}"))
            .arg("--instances")
            .arg(demo_instances())
            .arg("--output")
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        assert_eq!(
            outcome(&output),
            (
                Some(1),
                format!("error: invalid --timeout: {SECONDS}, got {shown}\n")
            ),
            "{timeout}"
        );
    }
}
