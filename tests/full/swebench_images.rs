//! Real SWE-bench-shaped records run as they are, on the real Docker daemon: the repository
//! from the instance's image (a stand-in for a SWE-bench image, built here once) at
//! `base_commit` with its env activated, from a `file://` mirror cloned once, or from nowhere
//! (one line, and the batch goes on); images pulled from a real registry (Debian's
//! `docker-registry` on loopback) with progress; `env.pull: never`; an unreachable registry;
//! and the 300 SWE-bench Lite records, each of which fails before its agent starts when its
//! repository cannot be had.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use batch_support::*;
use serde_json::{Value, json};

/// The record's repository: SWE-bench's `psf/requests`, so that a bare record is graded from
/// the built-in SWE-bench specs (`pytest -rA`, the `pytest_options` parser) with no field of
/// aci's own; the tree is a small project of this test's.
const REPO: &str = "psf/requests";
/// What SWE-bench's images activate, which `--images swebench` sets.
const SWEBENCH_PREFIX: &str = "/opt/miniconda3/envs/testbed";

/// The stand-in image and the repository it holds.
struct Standin {
    /// `tests`' scratch directory for this binary.
    root: PathBuf,
    /// The commit the records name.
    base_commit: String,
    /// The commit after it (the fix of an unrelated line).
    next_commit: String,
    /// The gold patch, as `git diff` writes it.
    patch: String,
    /// The test patch.
    test_patch: String,
}

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return b - a\n";
const TESTS: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const TESTS_AFTER: &str = "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n";

/// A stand-in for conda's activation script: no conda here, so `conda activate NAME` sources the
/// venv `/opt/miniconda3/envs/NAME`.
const ACTIVATE: &str = r#"# Stand-in for conda's activate script: `conda activate NAME` sources the venv of that name.
conda() {
    if [ "$1" != activate ] || [ -z "$2" ]; then
        echo "conda (stand-in): only 'conda activate NAME' is known" >&2
        return 2
    fi
    if [ ! -f "/opt/miniconda3/envs/$2/bin/activate" ]; then
        echo "EnvironmentNameNotFound: Could not find conda environment: $2" >&2
        return 1
    fi
    . "/opt/miniconda3/envs/$2/bin/activate"
}
"#;

/// The stand-in's Dockerfile: aci's Python image, the repository at /testbed (on `main` at
/// `base_commit`, no remote, as SWE-bench leaves it), the venv `testbed` (a copy of the image's
/// own, which has pytest) and the activation script.
const DOCKERFILE: &str = "FROM aci-python:bookworm
COPY testbed /testbed
COPY activate /opt/miniconda3/bin/activate
RUN mkdir -p /opt/miniconda3/envs \
 && cp -a /opt/venv /opt/miniconda3/envs/testbed \
 && cd /opt/miniconda3/envs/testbed \
 && for f in bin/* pyvenv.cfg; do [ -L \"$f\" ] || sed -i 's|/opt/venv|/opt/miniconda3/envs/testbed|g' \"$f\"; done
WORKDIR /testbed
";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_AUTHOR_DATE", "2020-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Builds `tag` from `dockerfile` with `files` (name, bytes) and the directory `extra` (copied
/// as `testbed`) in its context.
fn build(tag: &str, dockerfile: &str, testbed: Option<&Path>, files: &[(&str, &str)]) {
    let context = tempfile::tempdir().unwrap();
    std::fs::write(context.path().join("Dockerfile"), dockerfile).unwrap();
    for (name, text) in files {
        std::fs::write(context.path().join(name), text).unwrap();
    }
    if let Some(testbed) = testbed {
        let status = Command::new("cp")
            .arg("-a")
            .arg(testbed)
            .arg(context.path().join("testbed"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    docker(&["build", "-q", "-t", tag, context.path().to_str().unwrap()]);
}

/// SWE-bench's name for the image of `id`.
fn swebench_image(id: &str) -> String {
    format!(
        "swebench/sweb.eval.x86_64.{}:latest",
        id.to_lowercase().replace("__", "_1776_")
    )
}

/// The stand-in, built once per test binary (the daemon's layer cache makes later builds cheap).
fn standin() -> &'static Standin {
    static STANDIN: OnceLock<Standin> = OnceLock::new();
    STANDIN.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("swebench-images");
        let _ = std::fs::remove_dir_all(&root);
        let repo = root.join("repos").join(REPO);
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("calc.py"), CALC).unwrap();
        std::fs::write(repo.join("test_calc.py"), TESTS).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "calc"]);
        let base_commit = git(&repo, &["rev-parse", "HEAD"]);
        // The gold patch and the test patch, as git writes them.
        std::fs::write(repo.join("calc.py"), CALC.replace("b - a", "a - b")).unwrap();
        let patch = git(&repo, &["diff"]) + "\n";
        git(&repo, &["checkout", "-q", "--", "calc.py"]);
        std::fs::write(repo.join("test_calc.py"), TESTS_AFTER).unwrap();
        let test_patch = git(&repo, &["diff"]) + "\n";
        git(&repo, &["checkout", "-q", "--", "test_calc.py"]);
        build(
            &swebench_image("psf__requests-90001"),
            DOCKERFILE,
            Some(&repo),
            &[("activate", ACTIVATE)],
        );
        // The next commit exists on the host only after the stand-in is built.
        std::fs::write(repo.join("NOTES"), "after base\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "notes"]);
        let next_commit = git(&repo, &["rev-parse", "HEAD"]);
        Standin {
            root,
            base_commit,
            next_commit,
            patch,
            test_patch,
        }
    })
}

/// A record as SWE-bench Lite publishes one: its fields only, the test lists JSON-encoded.
fn record(id: &str, repo: &str, commit: &str) -> Value {
    let standin = standin();
    json!({
        "repo": repo,
        "instance_id": id,
        "base_commit": commit,
        "patch": standin.patch,
        "test_patch": standin.test_patch,
        "problem_statement": "sub(5, 3) returns -2",
        "hints_text": "",
        "created_at": "2020-01-01T00:00:00Z",
        "version": "2.0",
        "FAIL_TO_PASS": "[\"test_calc.py::test_sub\"]",
        "PASS_TO_PASS": "[\"test_calc.py::test_add\"]",
        "environment_setup_commit": commit,
    })
}

fn write_records(dir: &Path, records: &[Value]) -> PathBuf {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    let path = dir.join("instances.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// The observations of a trajectory's steps.
fn observations(output: &Path, id: &str) -> Vec<String> {
    read_json(&instance_file(output, id, "traj"))["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["observation"].as_str().unwrap().to_owned())
        .collect()
}

/// The stderr lines that name `needle`.
fn lines_with<'a>(stderr: &'a str, needle: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|line| line.contains(needle))
        .collect()
}

fn run_batch(instances: &Path, replays: &Path, output: &Path, run: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "--instances",
        instances.to_str().unwrap(),
        "--model",
        "replay",
        "--replay-dir",
        replays.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
        "--run-id",
        run,
    ];
    args.extend_from_slice(extra);
    batch(&args)
}

#[test]
fn a_bare_lite_record_runs_in_its_swebench_image_with_the_testbed_env_and_its_gold_patch_resolves()
{
    let standin = standin();
    let dir = tempfile::tempdir().unwrap();
    let id = "psf__requests-90001";
    let instances = write_records(dir.path(), &[record(id, REPO, &standin.base_commit)]);
    let replays = write_replays(
        &dir.path().join("replays"),
        &[id],
        &[
            "python -c 'import sys; print(sys.prefix)'",
            // `git` itself is on the blocklist, as in SWE-agent.
            "echo \"HEAD=$(git rev-parse HEAD)\"",
            "sed -i 's/return b - a/return a - b/' calc.py",
            "submit",
        ],
    );
    let output = dir.path().join("run");
    let run = run_id("swebench-run");
    let batch = run_batch(
        &instances,
        &replays,
        &output,
        &run,
        &["--images", "swebench"],
    );
    batch.expect_code(0);
    assert_eq!(
        summary_rows(&batch.stdout),
        rows(&[("submitted", 1), ("total", 1)])
    );
    let seen = observations(&output, id);
    assert_eq!(
        seen[0], SWEBENCH_PREFIX,
        "the agent's python is the task's own"
    );
    assert_eq!(seen[1], format!("HEAD={}", standin.base_commit));
    let traj = read_json(&instance_file(&output, id, "traj"));
    assert_eq!(
        traj["info"]["repository"],
        json!({"source": "image", "image": swebench_image(id), "repo_dir": "/testbed",
               "base_commit": standin.base_commit})
    );
    // The agent's fix is the gold patch, byte for byte (the baseline is base_commit itself).
    let preds = read_json(&output.join("preds.json"));
    assert_eq!(preds[id]["model_patch"], standin.patch.as_str());
    assert!(containers_of(&run).is_empty());

    let eval_out = dir.path().join("eval");
    let eval_run = run_id("swebench-eval");
    let eval: Run = aci()
        .args(["eval", "--instances", instances.to_str().unwrap()])
        .args(["--predictions", "gold", "--images", "swebench"])
        .args([
            "--output",
            eval_out.to_str().unwrap(),
            "--run-id",
            &eval_run,
        ])
        .output()
        .unwrap()
        .into();
    eval.expect_code(0);
    assert!(
        eval.stdout
            .starts_with("resolved 1 of 1 instances (unresolved 0, errors 0"),
        "{}",
        eval.stdout
    );
    let report = read_json(&eval_out.join("report.json"));
    assert_eq!(report["resolved_ids"], json!([id]));
    let script = std::fs::read_to_string(eval_out.join(id).join("eval.sh")).unwrap();
    assert!(
        script.contains("\nsource /opt/miniconda3/bin/activate && conda activate testbed\n"),
        "{script}"
    );
    let log = std::fs::read_to_string(eval_out.join(id).join("test_output.txt")).unwrap();
    assert!(log.contains("PASSED test_calc.py::test_sub"), "{log}");
    assert!(containers_of(&eval_run).is_empty());
}

#[test]
fn an_image_past_base_commit_is_checked_out_at_it_and_a_dirty_one_or_a_failing_activation_is_refused()
 {
    let standin = standin();
    let base = swebench_image("psf__requests-90001");
    let (past, dirty) = ("psf__requests-90002", "psf__requests-90004");
    build(
        &swebench_image(past),
        &format!(
            "FROM {base}\nRUN echo 'after base' > NOTES && git add NOTES && git -c user.name=t \
             -c user.email=t@t commit -qm notes\n"
        ),
        None,
        &[],
    );
    build(
        &swebench_image(dirty),
        &format!("FROM {base}\nRUN echo '# local change' >> calc.py\n"),
        None,
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let instances = write_records(
        dir.path(),
        &[
            record(past, REPO, &standin.base_commit),
            record(dirty, REPO, &standin.base_commit),
        ],
    );
    let replays = write_replays(
        &dir.path().join("replays"),
        &[past, dirty],
        &["echo \"HEAD=$(git rev-parse HEAD)\"", "ls", "submit"],
    );
    let output = dir.path().join("run");
    let run = run_id("swebench-head");
    let batch = run_batch(
        &instances,
        &replays,
        &output,
        &run,
        &["--images", "swebench", "--workers", "2"],
    );
    batch.expect_code(0);
    let seen = observations(&output, past);
    assert_eq!(seen[0], format!("HEAD={}", standin.base_commit));
    assert_eq!(
        seen[1], "calc.py\ntest_calc.py",
        "NOTES came after base_commit"
    );
    assert_eq!(exit_status(&output, past), "submitted");
    assert_eq!(exit_status(&output, dirty), "exit_environment_error");
    let lines = lines_with(&batch.stderr, dirty);
    assert_eq!(
        lines.len(),
        2,
        "the error and the progress line:\n{}",
        batch.stderr
    );
    assert_eq!(
        lines[0],
        format!(
            "error: {dirty}: cannot start the sandbox: the repository at /testbed in the image \
             has uncommitted changes (M calc.py); commit them in the image, or use a clean image"
        )
    );
    assert!(observations(&output, dirty).is_empty());
    assert!(containers_of(&run).is_empty());

    // An activation that fails ends the instance with its output, before its agent starts.
    let output = dir.path().join("bad-activation");
    let run = run_id("swebench-activate");
    let batch = run_batch(
        &instances,
        &replays,
        &output,
        &run,
        &[
            "--images",
            "swebench",
            "--filter",
            past,
            "--set",
            "env.activate=source /opt/miniconda3/bin/activate && conda activate nosuch",
        ],
    );
    batch.expect_code(0);
    assert_eq!(exit_status(&output, past), "exit_environment_error");
    assert_eq!(
        lines_with(&batch.stderr, &format!("error: {past}")),
        [format!(
            "error: {past}: cannot start the sandbox: env.activate failed (exit 1): \
             EnvironmentNameNotFound: Could not find conda environment: nosuch"
        )
        .as_str()]
    );
    assert!(observations(&output, past).is_empty());
    assert!(containers_of(&run).is_empty());
}

#[test]
fn two_workers_clone_one_file_mirror_once_and_a_record_with_no_repository_fails_alone() {
    let standin = standin();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (one, two, lost) = (
        "psf__requests-90011",
        "psf__requests-90012",
        "nobody__nothing-1",
    );
    let instances = write_records(
        dir.path(),
        &[
            record(one, REPO, &standin.base_commit),
            record(two, REPO, &standin.next_commit),
            record(lost, "nobody/nothing", &standin.base_commit),
        ],
    );
    let replays = write_replays(
        &dir.path().join("replays"),
        &[one, two, lost],
        &["ls", "submit"],
    );
    let output = dir.path().join("run");
    let run = run_id("mirror");
    let repos = standin.root.join("repos");
    let url = format!("env.repo_url=file://{}/{{repo}}", repos.display());
    let cache_set = format!("env.repo_cache={}", cache.display());
    // The stand-in is no installable requests: it runs in the language image, not in an
    // environment built from requests' spec.
    let batch = run_batch(
        &instances,
        &replays,
        &output,
        &run,
        &[
            "--workers",
            "2",
            "--set",
            &url,
            "--set",
            &cache_set,
            "--set",
            "env.image=aci-python:bookworm",
        ],
    );
    batch.expect_code(0);
    assert_eq!(
        summary_rows(&batch.stdout),
        rows(&[
            ("exit_environment_error", 1),
            ("submitted", 2),
            ("total", 3)
        ])
    );
    // Each tree is its commit's: the later one has NOTES.
    assert_eq!(observations(&output, one)[0], "calc.py\ntest_calc.py");
    assert_eq!(
        observations(&output, two)[0],
        "NOTES\ncalc.py\ntest_calc.py"
    );
    let mirror = cache.join("psf__requests.git");
    let clones = lines_with(&batch.stderr, "/psf/requests into ");
    let clone_line = format!(
        "] cloning file://{}/psf/requests into {}",
        repos.display(),
        mirror.display()
    );
    assert_eq!(clones.len(), 1, "{}", batch.stderr);
    assert!(
        [one, two]
            .iter()
            .any(|id| clones[0] == format!("[{id}{clone_line}")),
        "{}",
        clones[0]
    );
    let traj = read_json(&instance_file(&output, two, "traj"));
    assert_eq!(traj["info"]["repository"]["source"], "mirror");
    assert_eq!(
        traj["info"]["repository"]["path"],
        mirror.display().to_string()
    );

    // The record whose repository is nowhere: one line, before its agent, and its status.
    let lost_url = format!("file://{}/nobody/nothing", repos.display());
    let lines = lines_with(&batch.stderr, &format!("error: {lost}"));
    assert_eq!(lines.len(), 1, "{}", batch.stderr);
    let expected = format!(
        "error: {lost}: no repository at base_commit {}: no repo_path; the image \
         aci-python:bookworm holds none at /testbed; cloning {lost_url} into {} failed: \
         fatal: '{}/nobody/nothing' does not appear to be a git repository; fix: give the \
         record a repo_path, run it in an image that holds the repository (--images swebench, \
         env.image_template, the record's image), or point env.repo_url at a clone that can be \
         reached (a file:// URL or a local path)",
        standin.base_commit,
        cache.join("nobody__nothing.git").display(),
        repos.display()
    );
    assert_eq!(lines[0], expected);
    let traj = read_json(&instance_file(&output, lost, "traj"));
    assert_eq!(traj["info"]["exit_status"], "exit_environment_error");
    assert_eq!(
        traj["info"]["error"].as_str(),
        expected.strip_prefix(&format!("error: {lost}: "))
    );
    assert_eq!(traj["trajectory"], json!([]), "the agent never started");
    assert!(containers_of(&run).is_empty());
}

/// Debian's `docker-registry` on a free loopback port, storing in a temporary directory;
/// stopped when dropped.
struct Registry {
    child: Child,
    address: String,
    _storage: tempfile::TempDir,
}

impl Registry {
    fn start() -> Self {
        let storage = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: \
                 {address}\nlog:\n  level: error\n",
                storage.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new("/usr/bin/docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Debian's docker-registry package is needed: apt-get install docker-registry");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the registry did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Self {
            child,
            address,
            _storage: storage,
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_image_is_pulled_from_a_registry_with_progress_and_only_prune_pulled_removes_it() {
    let standin = standin();
    let registry = Registry::start();
    let id = "psf__requests-90003";
    let name = format!(
        "{}/swebench/sweb.eval.x86_64.psf_1776_requests-90003:latest",
        registry.address
    );
    // A layer of 3 MB of random bytes that only the registry will have.
    build(
        &name,
        &format!(
            "FROM {}\nRUN head -c 3000000 /dev/urandom > /opt/payload\n",
            swebench_image("psf__requests-90001")
        ),
        None,
        &[],
    );
    docker(&["push", &name]);
    docker(&["rmi", &name]);
    let dir = tempfile::tempdir().unwrap();
    let cache_home = dir.path().join("cache-home");
    let instances = write_records(dir.path(), &[record(id, REPO, &standin.base_commit)]);
    let replays = write_replays(
        &dir.path().join("replays"),
        &[id],
        &["python -c 'import sys; print(sys.prefix)'", "submit"],
    );
    let output = dir.path().join("run");
    let run = run_id("pull");
    let template = format!(
        "env.image_template={}/swebench/sweb.eval.x86_64.{{id_docker}}:latest",
        registry.address
    );
    let batch: Run = aci()
        .arg("batch")
        .args([
            "--instances",
            instances.to_str().unwrap(),
            "--model",
            "replay",
        ])
        .args(["--replay-dir", replays.to_str().unwrap()])
        .args(["--output", output.to_str().unwrap(), "--run-id", &run])
        .args(["--images", "swebench", "--set", &template])
        .env("XDG_CACHE_HOME", &cache_home)
        .output()
        .unwrap()
        .into();
    batch.expect_code(0);
    assert_eq!(observations(&output, id)[0], SWEBENCH_PREFIX);
    let pulls = lines_with(&batch.stderr, &format!("[{id}] pull"));
    assert_eq!(
        pulls.first(),
        Some(&format!("[{id}] pulling {name}").as_str())
    );
    let last = pulls.last().unwrap();
    let tally = regex::Regex::new(&format!(
        r"^\[{id}\] pulled {} \((\d+)/(\d+) layers, (\d+\.\d)/(\d+\.\d) MB \((\d+) already here\)\) in \d+\.\d s$",
        regex::escape(&name)
    ))
    .unwrap();
    let caps = tally
        .captures(last)
        .unwrap_or_else(|| panic!("{last}\n{}", batch.stderr));
    let number = |i: usize| caps[i].parse::<f64>().unwrap();
    assert_eq!(number(1), number(2), "every layer is done");
    assert_eq!(
        number(5),
        number(2) - 1.0,
        "all but the new layer were here"
    );
    assert!(number(3) >= 3.0 && number(3) == number(4), "{last}");
    // One line per finished layer in between.
    assert_eq!(pulls.len(), 2 + number(2) as usize, "{}", batch.stderr);
    let record = std::fs::read_to_string(cache_home.join("aci/pulled-images")).unwrap();
    let pulled_id = docker(&["image", "inspect", "--format", "{{.Id}}", &name]);
    assert_eq!(record, format!("{name}\t{pulled_id}\n"));

    // Pruning a run's images leaves it; --pulled removes it.
    let prune = |extra: &[&str]| -> Run {
        aci()
            .args(["images", "prune", "--run-id", &run])
            .args(extra)
            .env("XDG_CACHE_HOME", &cache_home)
            .output()
            .unwrap()
            .into()
    };
    prune(&[]).expect_code(0);
    docker(&["image", "inspect", &name]);
    let pruned = prune(&["--pulled"]);
    pruned.expect_code(0);
    assert_eq!(pruned.stdout, format!("removed\t{name}\t{pulled_id}\n"));
    let gone = Command::new("docker")
        .args(["image", "inspect", &name])
        .output()
        .unwrap();
    assert!(!gone.status.success());
    assert!(containers_of(&run).is_empty());
}

#[test]
fn a_missing_image_with_pull_never_and_an_unreachable_registry_fail_with_one_line_each() {
    let standin = standin();
    let dir = tempfile::tempdir().unwrap();
    let id = "psf__requests-90005";
    let instances = write_records(dir.path(), &[record(id, REPO, &standin.base_commit)]);
    let replays = write_replays(&dir.path().join("replays"), &[id], &["submit"]);
    let absent = "127.0.0.1:1/swebench/sweb.eval.x86_64.psf_1776_requests-90005:latest";
    let template = "env.image_template=127.0.0.1:1/swebench/sweb.eval.x86_64.{id_docker}:latest";
    for (pull, expected) in [
        (
            "never",
            format!(
                "error: {id}: the image {absent} is not here and env.pull is never; pull it \
                 (docker pull {absent}), load it (docker load), or set env.pull=missing"
            ),
        ),
        (
            "missing",
            format!("error: {id}: cannot pull {absent}: no registry answers at 127.0.0.1:1 ("),
        ),
    ] {
        let output = dir.path().join(pull);
        let run = run_id(&format!("pull-{pull}"));
        let pull_set = format!("env.pull={pull}");
        let batch = run_batch(
            &instances,
            &replays,
            &output,
            &run,
            &[
                "--images", "swebench", "--set", template, "--set", &pull_set,
            ],
        );
        batch.expect_code(0);
        let lines = lines_with(&batch.stderr, &format!("error: {id}"));
        assert_eq!(lines.len(), 1, "{}", batch.stderr);
        assert!(lines[0].starts_with(&expected), "{}", lines[0]);
        if pull == "missing" {
            assert!(
                lines[0].ends_with(
                    "); load the image with docker load, or point env.image_template at a \
                     registry that can be reached"
                ),
                "{}",
                lines[0]
            );
        }
        assert_eq!(exit_status(&output, id), "exit_environment_error");
        assert!(containers_of(&run).is_empty());
    }
}

#[test]
fn every_swe_bench_lite_record_fails_before_its_agent_when_its_repository_cannot_be_had() {
    let lite = std::env::var_os("ACI_SWEBENCH_DATA")
        .map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/swebench"),
            PathBuf::from,
        )
        .join("lite.jsonl");
    let text = std::fs::read_to_string(&lite).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\nhint: set ACI_SWEBENCH_DATA to the directory that holds lite.jsonl",
            lite.display()
        )
    });
    let records: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 300);
    let ids: Vec<&str> = records
        .iter()
        .map(|r| r["instance_id"].as_str().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let replays = write_replays(&dir.path().join("replays"), &ids, &["submit"]);
    let output = dir.path().join("run");
    let run = run_id("lite");
    // `.invalid` never resolves: GitHub as a machine without a network sees it.
    let cache = format!("env.repo_cache={}", dir.path().join("cache").display());
    let batch = run_batch(
        &lite,
        &replays,
        &output,
        &run,
        &[
            "--workers",
            "4",
            "--set",
            "env.repo_url=https://github.invalid/{repo}.git",
            "--set",
            &cache,
        ],
    );
    batch.expect_code(0);
    assert_eq!(
        summary_rows(&batch.stdout),
        rows(&[("exit_environment_error", 300), ("total", 300)])
    );
    // What each record was to run on, as `--plan` says: its spec's environment (on the Python
    // image of its release, which is the image looked into), or none when aci cannot build its
    // spec, which fails it before its repository is looked for.
    let planned = batch_support::batch(&[
        "--plan",
        "--instances",
        lite.to_str().unwrap(),
        "--set",
        "env.repo_url=https://github.invalid/{repo}.git",
        "--set",
        &cache,
    ]);
    planned.expect_code(0);
    let plans: std::collections::BTreeMap<String, Value> = planned
        .stdout
        .lines()
        .map(|line| {
            let plan: Value = serde_json::from_str(line).unwrap();
            (plan["instance_id"].as_str().unwrap().to_owned(), plan)
        })
        .collect();
    assert_eq!(plans.len(), 300);
    let preds = read_json(&output.join("preds.json"));
    let mut cloned = std::collections::BTreeSet::new();
    for record in &records {
        let id = record["instance_id"].as_str().unwrap();
        let repo = record["repo"].as_str().unwrap();
        let traj = read_json(&instance_file(&output, id, "traj"));
        assert_eq!(
            traj["trajectory"],
            json!([]),
            "{id} never reached its agent"
        );
        let error = traj["info"]["error"].as_str().unwrap();
        let plan = &plans[id];
        if plan["image"]["obtained"] == "none" {
            let why = plan["image"]["error"].as_str().unwrap();
            let first = why.lines().next().unwrap();
            assert!(error.starts_with(first), "{id}: {error}");
        } else {
            let image = plan["repository"]["image"].as_str().unwrap();
            assert_eq!(Some(image), plan["image"]["base"].as_str(), "{id}");
            let expected = format!(
                "no repository at base_commit {}: no repo_path; the image {image} holds none \
                 at /testbed; cloning https://github.invalid/{repo}.git into ",
                record["base_commit"].as_str().unwrap()
            );
            // Without the release's Python image the record fails naming that image.
            let missing = format!("{id}: the image {image} does not exist");
            assert!(
                error.starts_with(&expected) || error.starts_with(&missing),
                "{id}: {error}"
            );
            if error.starts_with(&expected) {
                cloned.insert(repo);
            }
        }
        assert_eq!(preds[id]["model_patch"], "", "{id}");
        assert_eq!(
            lines_with(&batch.stderr, &format!("error: {id}: ")).len(),
            1
        );
    }
    // One clone was tried per repository, not per record.
    let clones = lines_with(&batch.stderr, "] cloning https://github.invalid/");
    assert_eq!(clones.len(), cloned.len(), "{}", batch.stderr);
    assert!(containers_of(&run).is_empty());
}
