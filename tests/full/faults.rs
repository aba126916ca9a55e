//! Faults met midway through a run, with the real binary on the real Docker daemon: a run-level
//! failure (too little disk for the environment images, a rejected API key, a Docker daemon
//! that goes away, an output directory that fills up) stops `aci batch` like Ctrl-C, with one
//! line naming it and exit code 1, and the rerun resumes; a model endpoint that refuses
//! connections is named on stderr; SIGTERM stops `aci eval` like Ctrl-C. Each test checks that
//! no container is left and that nothing was written outside `--output`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use batch_support::*;
use serde_json::{Value, json};
use support::mock_llm::{
    MockResponse, MockServer, closed_port_url, openai_completion, openai_error,
};

const MODEL: &str = "openai/test-model";

/// Writes `dir/instances.jsonl`: for each `(id, demo id, extra fields)`, the demo record under
/// a new id, its `repo_path` made absolute, with `extra` merged in.
fn write_records(dir: &Path, records: &[(&str, &str, Value)]) -> PathBuf {
    let mut text = String::new();
    for (id, demo_id, extra) in records {
        let mut record = demo_record(demo_id);
        let repo = demo_dir().join(record["repo_path"].as_str().unwrap());
        record["repo_path"] = Value::String(repo.display().to_string());
        record["instance_id"] = Value::String((*id).to_owned());
        for (key, value) in extra.as_object().unwrap() {
            record[key] = value.clone();
        }
        text.push_str(&serde_json::to_string(&record).unwrap());
        text.push('\n');
    }
    let path = dir.join("instances.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The lines of `stderr` that start with `error:`.
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("error:")).collect()
}

/// The line of `stderr` after the one that starts with `first`.
fn line_after<'a>(stderr: &'a str, first: &str) -> &'a str {
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("no line starts with {first:?}:\n{stderr}"));
    lines.get(at + 1).copied().unwrap_or_default()
}

/// `aci batch` with `args`, its output going to `dir/stdout` and `dir/stderr`.
fn spawn_batch(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut command = aci();
    command.arg("batch").args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command
        .stdout(Stdio::from(
            std::fs::File::create(dir.join("stdout")).unwrap(),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("stderr")).unwrap(),
        ))
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit and returns what it printed to `dir/stdout` and `dir/stderr`.
fn wait_for_exit(mut child: Child, dir: &Path, deadline: Instant) -> Run {
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "aci did not stop; stderr:\n{}",
                std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Run {
        code: status.code(),
        stdout: std::fs::read_to_string(dir.join("stdout")).unwrap(),
        stderr: std::fs::read_to_string(dir.join("stderr")).unwrap(),
    }
}

/// Waits until `path` holds a trajectory with at least `steps` steps.
fn wait_for_steps(path: &Path, steps: usize, deadline: Instant, log: &Path) {
    let has_steps = || {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .is_some_and(|v| v["trajectory"].as_array().is_some_and(|t| t.len() >= steps))
    };
    while !has_steps() {
        assert!(
            Instant::now() < deadline,
            "{} never got {steps} step(s); stderr so far:\n{}",
            path.display(),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `aci batch` to its end, from a blocking thread (the test's runtime serves the model).
async fn batch_off_runtime(args: Vec<String>, env: Vec<(String, String)>) -> Run {
    tokio::task::spawn_blocking(move || {
        let mut command = aci();
        command
            .arg("batch")
            .args(&args)
            .env_remove("OPENAI_API_KEY");
        for (key, value) in env {
            command.env(key, value);
        }
        Run::from(command.output().unwrap())
    })
    .await
    .unwrap()
}

#[test]
fn a_batch_short_of_disk_for_its_environment_images_stops_at_the_first_with_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_id("low-disk");
    // A setup line of this run's own: the environment image must be built, after the check.
    let setup = json!({ "setup": [format!("echo {run}")] });
    let ids = ["disk__a-1", "disk__b-1"];
    let instances = write_records(
        dir.path(),
        &[
            (ids[0], "demo__inicfg-1", setup.clone()),
            (ids[1], "demo__inicfg-1", setup),
        ],
    );
    let replays = write_replays(&dir.path().join("replays"), &ids, &["submit"]);
    let out = dir.path().join("out");
    let args = |extra: &[&'static str]| {
        let mut args = vec![
            "--instances".to_owned(),
            instances.display().to_string(),
            "--replay-dir".to_owned(),
            replays.display().to_string(),
            "--output".to_owned(),
            out.display().to_string(),
            "--run-id".to_owned(),
            run.clone(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let low = batch(
        &args(&["--set", "env.min_free_disk_gb=1000000000"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    low.expect_code(1);
    let errors = error_lines(&low.stderr);
    assert_eq!(errors.len(), 1, "{}", low.stderr);
    assert!(
        errors[0].starts_with("error: only ")
            && errors[0].ends_with(
                " (the Docker root); building environment images needs env.min_free_disk_gb = \
                 1000000000 GB; stopping the batch"
            ),
        "{}",
        low.stderr
    );
    assert_eq!(
        line_after(&low.stderr, "error: only "),
        "hint: free space with `aci images prune` (one run's images: --run-id ID), or lower \
         env.min_free_disk_gb"
    );
    assert_eq!(
        summary_rows(&low.stdout),
        rows(&[
            ("early_exit", 1),
            ("not started (stopped)", 1),
            ("total", 2)
        ])
    );
    assert!(
        low.stdout.contains("\nstopped             only "),
        "{}",
        low.stdout
    );
    assert_eq!(exit_status(&out, ids[0]), "early_exit");
    let error = read_json(&instance_file(&out, ids[0], "traj"))["info"]["error"].clone();
    assert!(
        error.as_str().unwrap().starts_with("stopped: only "),
        "{error}"
    );
    assert!(!out.join(ids[1]).exists());
    assert!(containers_of(&run).is_empty());
    assert_eq!(entries(dir.path()), ["instances.jsonl", "out", "replays"]);

    // Room again: the rerun runs both.
    let resumed = batch(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    resumed.expect_code(0);
    assert_eq!(
        summary_rows(&resumed.stdout),
        rows(&[("submitted", 2), ("total", 2)])
    );
    assert!(containers_of(&run).is_empty());
    let pruned = aci()
        .args(["images", "prune", "--run-id", &run])
        .output()
        .unwrap();
    assert!(pruned.status.success(), "{pruned:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_api_key_stops_the_batch_after_its_first_model_call_and_the_rerun_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1", "demo__moneyfmt-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let out = dir.path().join("out");
    let run = run_id("rejected-key");
    let rejecting = MockServer::start(vec![MockResponse::json(
        401,
        &openai_error(
            "Incorrect API key provided",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
    )])
    .await;
    let args = |server: &MockServer| {
        [
            "--instances",
            instances.to_str().unwrap(),
            "--model",
            MODEL,
            "--api-base",
            &format!("{}/v1", server.url()),
            "--set",
            "model.retries=0",
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let key = vec![("OPENAI_API_KEY".to_owned(), "sk-test-rejected".to_owned())];
    let stopped = batch_off_runtime(args(&rejecting), key.clone()).await;
    stopped.expect_code(1);
    assert_eq!(rejecting.request_count(), 1, "{}", stopped.stderr);
    assert_eq!(
        error_lines(&stopped.stderr),
        [
            "error: model API request failed (HTTP 401) after 1 attempt(s): Incorrect API key \
             provided; stopping the batch"
        ],
        "{}",
        stopped.stderr
    );
    assert_eq!(
        line_after(&stopped.stderr, "error: model API"),
        format!(
            "hint: check that OPENAI_API_KEY holds a valid key for {}/v1/chat/completions",
            rejecting.url()
        )
    );
    assert_eq!(
        summary_rows(&stopped.stdout),
        rows(&[
            ("early_exit", 1),
            ("not started (stopped)", 1),
            ("total", 2)
        ])
    );
    assert_eq!(exit_status(&out, ids[0]), "early_exit");
    let traj = read_json(&instance_file(&out, ids[0], "traj"));
    assert!(
        traj["info"]["error"]
            .as_str()
            .unwrap()
            .starts_with("stopped: model API request failed (HTTP 401)"),
        "{}",
        traj["info"]
    );
    assert!(!out.join(ids[1]).exists());
    assert!(tokio::task::block_in_place(|| containers_of(&run)).is_empty());

    // `aci run` stops the same way: the line, its hint, exit code 1.
    let mut single = args(&rejecting);
    let run_out = dir.path().join("run-out");
    let at = single.iter().position(|arg| arg == "--output").unwrap();
    single[at + 1] = run_out.display().to_string();
    single.extend(["--id", ids[0]].map(str::to_owned));
    let single = tokio::task::spawn_blocking({
        let key = key.clone();
        move || {
            let mut command = aci();
            command.arg("run").args(&single);
            for (name, value) in key {
                command.env(name, value);
            }
            Run::from(command.output().unwrap())
        }
    })
    .await
    .unwrap();
    single.expect_code(1);
    assert_eq!(
        error_lines(&single.stderr),
        [
            "error: model API request failed (HTTP 401) after 1 attempt(s): Incorrect API key provided"
        ],
        "{}",
        single.stderr
    );
    assert_eq!(
        line_after(&single.stderr, "error: model API"),
        format!(
            "hint: check that OPENAI_API_KEY holds a valid key for {}/v1/chat/completions",
            rejecting.url()
        )
    );
    assert_eq!(exit_status(&run_out, ids[0]), "early_exit");
    assert!(tokio::task::block_in_place(|| containers_of(&run)).is_empty());
    assert_eq!(entries(dir.path()), ["instances.jsonl", "out", "run-out"]);

    // A key that works: the rerun runs both.
    let submit = "DISCUSSION\nDone.\n\n```\nsubmit\n```";
    let accepting = MockServer::start(vec![MockResponse::json(
        200,
        &openai_completion(Some(submit), &[], (100, 20, 0)),
    )])
    .await;
    let resumed = batch_off_runtime(args(&accepting), key).await;
    resumed.expect_code(0);
    assert_eq!(
        summary_rows(&resumed.stdout),
        rows(&[("submitted", 2), ("total", 2)])
    );
    assert_eq!(accepting.request_count(), 2);
    assert!(tokio::task::block_in_place(|| containers_of(&run)).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_endpoint_that_refuses_connections_is_named_in_the_instance_line_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let id = "demo__inicfg-1";
    let instances = write_instances(dir.path(), &[id], &[]);
    let api_base = format!("{}/v1", closed_port_url().await);
    let run = run_id("refused");
    let out = dir.path().join("out");
    let common = [
        "--instances",
        instances.to_str().unwrap(),
        "--model",
        MODEL,
        "--api-base",
        &api_base,
        "--set",
        "model.retries=0",
        "--run-id",
        &run,
    ]
    .map(str::to_owned)
    .to_vec();
    let mut args = common.clone();
    args.extend(["--output".to_owned(), out.display().to_string()]);
    let batched = batch_off_runtime(args, Vec::new()).await;
    batched.expect_code(0);
    let line = batched
        .stderr
        .lines()
        .find(|l| l.starts_with(&format!("[1/1] {id}: exit_api (")))
        .unwrap_or_else(|| panic!("no line for {id}:\n{}", batched.stderr));
    assert!(
        line.contains(
            "s): model API request failed (no HTTP response) after 1 attempt(s): cannot connect: "
        ) && line.contains("Connection refused"),
        "{line}"
    );
    assert!(tokio::task::block_in_place(|| containers_of(&run)).is_empty());

    // `aci run` names it after the instance's id.
    let run_out = dir.path().join("run-out");
    let single = tokio::task::spawn_blocking(move || {
        let output = aci()
            .arg("run")
            .args(&common)
            .args(["--id", id, "--output", run_out.to_str().unwrap()])
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        Run::from(output)
    })
    .await
    .unwrap();
    single.expect_code(0);
    let errors = error_lines(&single.stderr);
    assert_eq!(errors.len(), 1, "{}", single.stderr);
    assert!(
        errors[0].starts_with(&format!(
            "error: {id}: model API request failed (no HTTP response) after 1 attempt(s): cannot \
             connect: "
        )) && errors[0].contains("Connection refused"),
        "{}",
        single.stderr
    );
    assert!(tokio::task::block_in_place(|| containers_of(&run)).is_empty());
    assert_eq!(entries(dir.path()), ["instances.jsonl", "out", "run-out"]);
}

/// Forwards every connection on a Unix socket to the Docker daemon's, until dropped: then the
/// socket is gone and every connection through it is cut, as if the daemon went away.
struct DaemonProxy {
    socket: PathBuf,
    runtime: Option<tokio::runtime::Runtime>,
}

impl DaemonProxy {
    fn start(socket: PathBuf) -> Self {
        Self::start_holding(socket, None)
    }

    /// A proxy that passes every request on but withholds the daemon's answer to one whose
    /// bytes hold `held` (and to every later one on that connection): the daemon does the
    /// work, and aci waits for an answer that never comes.
    fn start_holding(socket: PathBuf, held: Option<&'static [u8]>) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let listener = {
            let _entered = runtime.enter();
            tokio::net::UnixListener::bind(&socket).unwrap()
        };
        runtime.spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(mut daemon) =
                        tokio::net::UnixStream::connect("/var/run/docker.sock").await
                    else {
                        return;
                    };
                    match held {
                        None => {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut daemon).await;
                        }
                        Some(needle) => relay_holding(client, daemon, needle).await,
                    }
                });
            }
        });
        DaemonProxy {
            socket,
            runtime: Some(runtime),
        }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Removes the socket, then cuts every connection: from the moment aci can first fail, a
    /// new connection finds no socket (ENOENT), never one that nobody listens on.
    fn stop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Relays one connection both ways until a request holding `needle` goes up; from then on the
/// daemon's bytes are read and dropped, and the client's side stays open and silent.
async fn relay_holding(
    client: tokio::net::UnixStream,
    daemon: tokio::net::UnixStream,
    needle: &'static [u8],
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut client_read, mut client_write) = client.into_split();
    let (mut daemon_read, mut daemon_write) = daemon.into_split();
    let holding = Arc::new(AtomicBool::new(false));
    let up_holding = Arc::clone(&holding);
    let up = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = client_read.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            if buffer[..n].windows(needle.len()).any(|w| w == needle) {
                up_holding.store(true, Ordering::SeqCst);
            }
            if daemon_write.write_all(&buffer[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = daemon_read.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            if !holding.load(Ordering::SeqCst)
                && client_write.write_all(&buffer[..n]).await.is_err()
            {
                break;
            }
        }
        // Keep the client's side open: it waits, as for a daemon that never answers.
        std::future::pending::<()>().await;
        drop(client_write);
    };
    tokio::join!(up, down);
}

impl Drop for DaemonProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn a_docker_daemon_that_goes_away_stops_the_batch_and_the_rerun_removes_what_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1", "demo__moneyfmt-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let slow = write_replays(
        &dir.path().join("slow"),
        &ids,
        &[
            "echo '# work in progress' >> README.md",
            "sleep 60",
            "submit",
        ],
    );
    let out = dir.path().join("out");
    let run = run_id("daemon-gone");
    let sockets = tempfile::tempdir().unwrap();
    let mut proxy = DaemonProxy::start(sockets.path().join("docker.sock"));
    let host = proxy.host();
    let child = spawn_batch(
        dir.path(),
        &[
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            slow.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
        ],
        &[("DOCKER_HOST", &host)],
    );
    let deadline = Instant::now() + Duration::from_secs(180);
    wait_for_steps(
        &instance_file(&out, ids[0], "traj"),
        1,
        deadline,
        &dir.path().join("stderr"),
    );
    proxy.stop();
    let stopped = wait_for_exit(child, dir.path(), deadline);
    stopped.expect_code(1);
    let errors = error_lines(&stopped.stderr);
    assert_eq!(errors.len(), 1, "{}", stopped.stderr);
    assert!(
        errors[0].starts_with("error: the Docker daemon went away: ")
            && errors[0].ends_with("No such file or directory (os error 2); stopping the batch"),
        "{}",
        stopped.stderr
    );
    assert_eq!(
        line_after(&stopped.stderr, "error: the Docker daemon"),
        "hint: start the Docker daemon again, then rerun the same command: the run resumes and \
         removes the containers left behind"
    );
    // Its changes could not be autosubmitted: the daemon was gone.
    assert_eq!(
        summary_rows(&stopped.stdout),
        rows(&[
            ("early_exit", 1),
            ("not started (stopped)", 1),
            ("total", 2)
        ]),
        "{}",
        stopped.stdout
    );
    let traj = read_json(&instance_file(&out, ids[0], "traj"));
    assert_eq!(traj["info"]["exit_status"], "early_exit");
    assert!(
        traj["info"]["error"]
            .as_str()
            .unwrap()
            .starts_with("stopped: the Docker daemon went away: "),
        "{}",
        traj["info"]
    );
    assert!(!out.join(ids[1]).exists());
    // Nothing could remove the container then: it is there, owned by a process that is gone.
    assert_eq!(containers_of(&run).len(), 1);
    assert_eq!(
        entries(dir.path()),
        ["instances.jsonl", "out", "slow", "stderr", "stdout"]
    );

    // The daemon is back: the rerun removes the leftover and runs both.
    let fast = write_replays(&dir.path().join("fast"), &ids, &["submit"]);
    let resumed = docker_batch(&instances, &fast, &out, &run, &[]);
    resumed.expect_code(0);
    assert!(
        resumed
            .stderr
            .contains("container(s) left by aci runs that are gone"),
        "{}",
        resumed.stderr
    );
    assert_eq!(
        summary_rows(&resumed.stdout),
        rows(&[("submitted", 2), ("total", 2)])
    );
    assert!(containers_of(&run).is_empty());
}

/// A second signal that comes while a container is being created (the daemon made it, its
/// answer has not come back, so the run does not know its id yet) quits at once, and the
/// sweep by label removes that container too.
#[test]
fn a_second_signal_while_a_container_is_created_removes_it_before_quitting() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let slow = write_replays(&dir.path().join("slow"), &ids, &[LONG_SLEEP, "submit"]);
    let out = dir.path().join("out");
    let run = run_id("create-held");
    let sockets = tempfile::tempdir().unwrap();
    let proxy = DaemonProxy::start_holding(
        sockets.path().join("docker.sock"),
        Some(b"/containers/create"),
    );
    let host = proxy.host();
    let child = spawn_batch(
        dir.path(),
        &[
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            slow.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
            "--set",
            LONG_SLEEP_TIMEOUT,
        ],
        &[("DOCKER_HOST", &host)],
    );
    let stderr_path = dir.path().join("stderr");
    let deadline = Instant::now() + Duration::from_secs(180);
    // The daemon has created the task container; aci still waits for its id.
    while containers_of(&run).is_empty() {
        assert!(
            Instant::now() < deadline,
            "no container was created:\n{}",
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let signal = |name: &str| {
        let sent = Command::new("kill")
            .args([&format!("-{name}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    signal("INT");
    while !std::fs::read_to_string(&stderr_path)
        .unwrap_or_default()
        .contains("interrupted: no new instances start")
    {
        assert!(Instant::now() < deadline, "the first signal was not heard");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal("TERM");
    let quit = wait_for_exit(child, dir.path(), deadline);
    quit.expect_code(130);
    assert!(
        quit.stderr
            .contains("interrupted again: removing the containers and quitting"),
        "{}",
        quit.stderr
    );
    assert_eq!(containers_of(&run), Vec::<String>::new(), "{}", quit.stderr);
    drop(proxy);
}

/// A tmpfs of `size` mounted at `dir` (root only), unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            mounted.status.success(),
            "this test mounts a small tmpfs and needs root: {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        Tmpfs(dir.to_owned())
    }

    /// Writes `name` until the file system is full.
    fn fill(&self, name: &str) {
        use std::io::Write;
        let mut file = std::fs::File::create(self.0.join(name)).unwrap();
        let block = vec![0u8; 64 * 1024];
        loop {
            match file.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) => {
                    assert_eq!(error.raw_os_error(), Some(28), "{error}");
                    break;
                }
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn an_output_directory_that_fills_up_stops_the_batch_at_the_first_failed_write() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__inicfg-1", "demo__moneyfmt-1", "demo__ttlcache-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    // The second step waits for the test to say go, which it does once the disk is full.
    let gated = write_replays(
        &dir.path().join("gated"),
        &ids,
        &[
            "echo '# work in progress' >> README.md",
            "while [ ! -e /tmp/go ]; do sleep 0.1; done",
            "submit",
        ],
    );
    let out = dir.path().join("out");
    let disk = Tmpfs::mount(&out, "8m");
    let run = run_id("full-output");
    let child = spawn_batch(
        dir.path(),
        &[
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            gated.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
        ],
        &[],
    );
    let deadline = Instant::now() + Duration::from_secs(180);
    let traj = instance_file(&out, ids[0], "traj");
    wait_for_steps(&traj, 1, deadline, &dir.path().join("stderr"));
    disk.fill("filler");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let docker = aci::sandbox::docker::DockerRuntime::connect()
            .await
            .unwrap();
        let containers = docker.list_aci_containers(Some(&run)).await.unwrap();
        assert_eq!(containers.len(), 1, "{containers:?}");
        let go = ["touch", "/tmp/go"].map(str::to_owned).to_vec();
        let touched = docker.exec_once(&containers[0], go).await.unwrap();
        assert_eq!(touched.exit_code, Some(0));
    });
    let stopped = wait_for_exit(child, dir.path(), deadline);
    stopped.expect_code(1);
    assert_eq!(
        error_lines(&stopped.stderr),
        [format!(
            "error: cannot write {}: No space left on device (os error 28); stopping the batch",
            traj.display()
        )],
        "{}",
        stopped.stderr
    );
    assert_eq!(
        line_after(&stopped.stderr, "error: cannot write"),
        "hint: make room in (or fix) the output directory, then rerun the same command: \
         finished instances are kept"
    );
    // Not counted as submitted: nothing of its ending reached the disk.
    assert_eq!(
        summary_rows(&stopped.stdout),
        rows(&[
            ("early_exit", 1),
            ("not started (stopped)", 2),
            ("total", 3)
        ]),
        "{}",
        stopped.stdout
    );
    assert!(stopped.stdout.contains("patches submitted   0 (of 1 run)"));
    // The last trajectory on disk is the one saved before the disk filled up.
    assert_eq!(read_json(&traj)["trajectory"].as_array().unwrap().len(), 1);
    assert!(!out.join(ids[1]).exists() && !out.join(ids[2]).exists());
    assert!(containers_of(&run).is_empty());
    assert_eq!(
        entries(dir.path()),
        ["gated", "instances.jsonl", "out", "stderr", "stdout"]
    );

    // Room again: the rerun runs all three.
    std::fs::remove_file(out.join("filler")).unwrap();
    let fast = write_replays(&dir.path().join("fast"), &ids, &["submit"]);
    let resumed = docker_batch(&instances, &fast, &out, &run, &[]);
    resumed.expect_code(0);
    assert_eq!(
        summary_rows(&resumed.stdout),
        rows(&[("submitted", 3), ("total", 3)])
    );
    assert!(containers_of(&run).is_empty());
    drop(disk);
}

#[test]
fn sigterm_stops_aci_eval_like_ctrl_c_removing_its_containers_and_keeping_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (done, slow) = ("demo__inicfg-1", "demo__moneyfmt-1");
    // The second instance's tests run until the signal comes.
    let instances = write_records(
        dir.path(),
        &[
            (done, done, json!({})),
            (slow, slow, json!({ "test_cmd": "sleep 600" })),
        ],
    );
    let out = dir.path().join("out");
    let run = run_id("eval-sigterm");
    let eval = |extra: &[&str]| {
        let mut command = aci();
        command.args([
            "eval",
            "--instances",
            instances.to_str().unwrap(),
            "--predictions",
            "gold",
            "--workers",
            "1",
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
        ]);
        command.args(extra);
        command
    };
    let child = eval(&[])
        .stdout(Stdio::from(
            std::fs::File::create(dir.path().join("stdout")).unwrap(),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(dir.path().join("stderr")).unwrap(),
        ))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let report = out.join(done).join("report.json");
    // Workers 1: the slow instance's script is written once the first one is done.
    while !(report.is_file() && out.join(slow).join("eval.sh").is_file())
        || containers_of(&run).is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the slow instance never started; stderr:\n{}",
            std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let kept = std::fs::read(&report).unwrap();
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let stopped = wait_for_exit(child, dir.path(), deadline);
    stopped.expect_code(130);
    assert!(
        stopped
            .stderr
            .contains("interrupted: the evaluation containers were removed; finished instances keep their files"),
        "{}",
        stopped.stderr
    );
    assert!(containers_of(&run).is_empty());
    assert_eq!(std::fs::read(&report).unwrap(), kept);
    assert!(!out.join(slow).join("report.json").exists());
    assert_eq!(
        entries(dir.path()),
        ["instances.jsonl", "out", "stderr", "stdout"]
    );

    // The rerun reuses the report graded before the signal.
    let resumed: Run = eval(&["--id", done]).output().unwrap().into();
    resumed.expect_code(0);
    assert!(
        resumed.stderr.contains(&format!(
            "{done}: resolved (reused: same patch, eval script and image)"
        )),
        "{}",
        resumed.stderr
    );
    assert_eq!(std::fs::read(&report).unwrap(), kept);
    assert!(containers_of(&run).is_empty());
}
