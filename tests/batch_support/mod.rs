//! Helpers of the `aci batch` tests: instances files over the demo repositories, replay
//! directories, running the binary, reading its outputs, and the daemon's view of a run's
//! containers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// `tests/fixtures/demo`.
pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo")
}

/// The demo records, in file order.
pub fn demo_records() -> Vec<Value> {
    std::fs::read_to_string(demo_dir().join("instances.jsonl"))
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The demo record of `id`.
pub fn demo_record(id: &str) -> Value {
    demo_records()
        .into_iter()
        .find(|r| r["instance_id"] == id)
        .unwrap_or_else(|| panic!("no demo instance {id}"))
}

/// Writes `dir/instances.jsonl` with the demo records `ids` (in that order), their
/// `repo_path` made absolute, plus `extra_lines` as they are.
pub fn write_instances(dir: &Path, ids: &[&str], extra_lines: &[&str]) -> PathBuf {
    let mut text = String::new();
    for id in ids {
        let mut record = demo_record(id);
        let repo = demo_dir().join(record["repo_path"].as_str().unwrap());
        record["repo_path"] = Value::String(repo.display().to_string());
        text.push_str(&serde_json::to_string(&record).unwrap());
        text.push('\n');
    }
    for line in extra_lines {
        text.push_str(line);
        text.push('\n');
    }
    let path = dir.join("instances.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// The command a Ctrl-C test interrupts, and a command timeout above it: an instance that has
/// reached it is still in it when the signal comes, however long the other instances of the
/// batch took to start (with the default 25 s timeout, a slow start let the first instance
/// finish before the Ctrl-C).
pub const LONG_SLEEP: &str = "sleep 900";
pub const LONG_SLEEP_TIMEOUT: &str = "env.command_timeout=1200";

/// Writes `dir/<id>.yaml` (a JSON list, which is YAML too) with `actions` for every id.
pub fn write_replays(dir: &Path, ids: &[&str], actions: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for id in ids {
        let json = serde_json::to_string(actions).unwrap();
        std::fs::write(dir.join(format!("{id}.yaml")), json).unwrap();
    }
    dir.to_owned()
}

/// The `aci` binary.
pub fn aci() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aci"))
}

/// What a finished `aci` run printed.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panics with both streams unless the exit code is `code`.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs `aci batch` with `args` to its end.
pub fn batch(args: &[&str]) -> Run {
    aci().arg("batch").args(args).output().unwrap().into()
}

/// `aci batch --instances I --replay-dir R --output O --run-id ID <extra…>` on Docker.
pub fn docker_batch(
    instances: &Path,
    replays: &Path,
    output: &Path,
    run_id: &str,
    extra: &[&str],
) -> Run {
    let mut args = vec![
        "--instances",
        instances.to_str().unwrap(),
        "--replay-dir",
        replays.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
        "--run-id",
        run_id,
    ];
    args.extend_from_slice(extra);
    batch(&args)
}

/// `DIR/<id>/<id>.<ext>`
pub fn instance_file(output: &Path, id: &str, ext: &str) -> PathBuf {
    output.join(id).join(format!("{id}.{ext}"))
}

/// Parses a JSON file.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap()
}

/// `info.exit_status` of an instance's trajectory.
pub fn exit_status(output: &Path, id: &str) -> String {
    read_json(&instance_file(output, id, "traj"))["info"]["exit_status"]
        .as_str()
        .unwrap_or("null")
        .to_owned()
}

/// The instance directories under `output`, sorted.
pub fn instance_dirs(output: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(output)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The containers the daemon still has for `run_id` (any state).
pub fn containers_of(run_id: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let docker = aci::sandbox::docker::DockerRuntime::connect()
            .await
            .expect("this test needs the Docker daemon\nhint: start dockerd, or run .ci/run");
        docker.list_aci_containers(Some(run_id)).await.unwrap()
    })
}

/// A run id unique to this test process.
pub fn run_id(name: &str) -> String {
    format!("test-{name}-{}", std::process::id())
}

/// The rows of the summary table (`exit status → instances`), `total` included.
pub fn summary_rows(stdout: &str) -> std::collections::BTreeMap<String, usize> {
    stdout
        .lines()
        .skip(1)
        .take_while(|line| !line.is_empty())
        .map(|line| {
            let (label, count) = line.trim_end().rsplit_once(' ').unwrap();
            (label.trim_end().to_owned(), count.parse().unwrap())
        })
        .collect()
}

/// `summary_rows` written out, for comparisons.
pub fn rows(pairs: &[(&str, usize)]) -> std::collections::BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}
