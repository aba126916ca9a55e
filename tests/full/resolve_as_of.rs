//! `env.resolve_as_of` on the real Docker daemon and the real PyPI: a 2019-shaped project
//! (tests/fixtures/asof) whose `pip install -e .` needs a setuptools with `pkg_resources`
//! validates with `created_at` and fails with `today` at its install step; a layer built as of a date
//! records its lock in its labels and beside its build log, and a rebuild installs what the
//! lock says; a spec's exact pin released after the cutoff is installed all the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{aci, read_json};
use aci::config::{Cutoff, EnvConfig, ResolveAsOf};
use aci::image::as_of::AsOf;
use aci::image::release::DebianRelease;
use aci::image::spec_env::{self, SpecEnv};
use aci::instance::{Instance, parse_instances};
use aci::provision::Provisioner;
use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/asof");
const ID: &str = "example__rangeset-12";
/// The record's date, and the base commit's.
const CREATED_AT: &str = "2019-05-15T13:51:41Z";
/// The environment setup commit's date: the last commit of version 0.3, which made it run on
/// Python 3.11 (the spec layer is resolved as of it).
const SETUP_COMMIT_DATE: &str = "2023-06-01T00:00:00Z";
/// The release of Python 3.11, the spec's: the earliest cutoff of its layers.
const PYTHON_3_11_RELEASED: &str = "2022-10-24T00:00:00Z";
const BUGGY: &str = "        if merged and start < merged[-1][1]:\n";
const FIXED: &str = "        if merged and start <= merged[-1][1]:\n";
const NEW_TEST: &str =
    "\n\ndef test_merge_adjacent():\n    assert merge([(3, 5), (1, 3)]) == [(1, 5)]\n";

fn quiet(_: &str) {}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("as-of-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `git commit` at `date`, so the commits (and the images) are the same on every run.
fn commit_at(repo: &Path, message: &str, date: &str) -> String {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(["commit", "-qm", message])
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(status.success());
    git(repo, &["rev-parse", "HEAD"]).trim().to_owned()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The fixture as a SWE-bench record: its repository at the base commit (2019, with the
/// bug), the fix as `patch`, the new test as `test_patch`, and a later environment setup
/// commit (2023) that the spec layer is resolved as of.
fn record(dir: &Path) -> Value {
    let repo = dir.join("rangeset");
    copy_tree(&Path::new(FIXTURE).join("repo"), &repo);
    let module = repo.join("rangeset/__init__.py");
    assert_eq!(
        std::fs::read_to_string(&module)
            .unwrap()
            .matches(BUGGY)
            .count(),
        1
    );
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    let base_commit = commit_at(&repo, "rangeset 0.3.1", CREATED_AT);
    let source = std::fs::read_to_string(&module).unwrap();
    std::fs::write(&module, source.replace(BUGGY, FIXED)).unwrap();
    let patch = git(&repo, &["diff"]);
    git(&repo, &["checkout", "-q", "--", "."]);
    let tests = repo.join("tests/test_rangeset.py");
    let mut text = std::fs::read_to_string(&tests).unwrap();
    text.push_str(NEW_TEST);
    std::fs::write(&tests, text).unwrap();
    let test_patch = git(&repo, &["diff"]);
    git(&repo, &["checkout", "-q", "--", "."]);
    std::fs::write(repo.join("CHANGES.rst"), "0.3.2: runs on Python 3.11\n").unwrap();
    git(&repo, &["add", "-A"]);
    let environment_setup_commit = commit_at(&repo, "0.3.2", SETUP_COMMIT_DATE);
    git(&repo, &["checkout", "-q", &base_commit]);
    json!({
        "instance_id": ID,
        "repo": "example/rangeset", "version": "0.3",
        "created_at": CREATED_AT,
        "problem_statement": "merge([(1, 3), (3, 5)]) gives two ranges: adjacent ranges are \
                              not merged",
        "base_commit": base_commit,
        "environment_setup_commit": environment_setup_commit,
        "repo_path": repo,
        "patch": patch, "test_patch": test_patch,
        "FAIL_TO_PASS": ["tests/test_rangeset.py::test_merge_adjacent"],
        "PASS_TO_PASS": [
            "tests/test_rangeset.py::test_merge_overlapping",
            "tests/test_rangeset.py::test_merge_disjoint",
            "tests/test_rangeset.py::test_total",
        ],
    })
}

fn validate(dir: &Path, record: &Value, as_of: &str) -> (Output, Value) {
    let instances = dir.join(format!("instances-{as_of}.jsonl"));
    std::fs::write(&instances, format!("{record}\n")).unwrap();
    let output = dir.join(format!("validation-{as_of}"));
    let specs = format!("env.specs=[{FIXTURE}/specs.yaml]");
    let logs = format!("env.build_logs={}", dir.join("build-logs").display());
    let setting = format!("env.resolve_as_of={as_of}");
    let run_id = format!("test-as-of-{as_of}");
    let validated = aci(&[
        "validate",
        "--instances",
        instances.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
        "--run-id",
        &run_id,
        "--set",
        &specs,
        "--set",
        &logs,
        "--set",
        &setting,
    ]);
    let mut verdicts = read_json(&output.join("validation.json"));
    verdicts[ID].as_object_mut().unwrap().remove("seconds");
    (validated, verdicts)
}

#[tokio::test]
async fn a_2019_project_validates_as_of_its_dates_and_fails_at_its_install_with_today() {
    let _docker = support::docker().await;
    let dir = scratch("validate");
    let record = record(&dir);

    let (validated, verdicts) = validate(&dir, &record, "created_at");
    assert_eq!(validated.status.code(), Some(0));
    assert_eq!(
        verdicts,
        json!({ID: {"gold_resolved": true, "empty_fails": true}})
    );

    // A run in the environments just built records their locks in its manifest.
    let replays = dir.join("replays");
    std::fs::create_dir_all(&replays).unwrap();
    std::fs::write(replays.join(format!("{ID}.yaml")), "[\"submit\"]").unwrap();
    let instances = dir.join("instances-created_at.jsonl");
    let out = dir.join("batch");
    let batch = aci(&[
        "batch",
        "--instances",
        instances.to_str().unwrap(),
        "--model",
        "replay",
        "--replay-dir",
        replays.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--run-id",
        "test-as-of-batch",
        "--set",
        &format!("env.specs=[{FIXTURE}/specs.yaml]"),
        "--set",
        &format!("env.build_logs={}", dir.join("build-logs").display()),
        "--set",
        "env.resolve_as_of=created_at",
    ]);
    assert_eq!(
        batch.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&batch.stderr)
    );
    let manifest = read_json(&out.join("manifest.json"));
    let locks = manifest["locks"].as_object().unwrap();
    let tags: Vec<&String> = locks.keys().collect();
    assert_eq!(tags.len(), 2, "{locks:?}");
    assert!(tags[0].starts_with("aci-env-python:"), "{tags:?}");
    assert!(
        tags[1].starts_with("aci-spec-example__rangeset:"),
        "{tags:?}"
    );
    assert_eq!(
        locks[tags[1]]["resolved_as_of"],
        format!("{SETUP_COMMIT_DATE} (the environment_setup_commit's committer date)")
    );
    assert!(
        locks[tags[1]]["lock"]
            .as_array()
            .unwrap()
            .contains(&json!("pytest==7.3.1")),
        "{locks:?}"
    );
    assert!(
        locks[tags[0]]["lock"]
            .as_array()
            .unwrap()
            .contains(&json!("-e /testbed")),
        "{locks:?}"
    );

    let (validated, verdicts) = validate(&dir, &record, "today");
    assert_eq!(validated.status.code(), Some(0));
    assert_eq!(verdicts[ID]["gold_resolved"], false);
    assert_eq!(verdicts[ID]["empty_fails"], false);
    let error = verdicts[ID]["error"].as_str().unwrap();
    let lines: Vec<&str> = error.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "gold: {ID}: building the environment image aci-env-python:"
        )),
        "{error}"
    );
    assert!(
        lines[0].contains(" failed: failed at step `setup 1 of 1: python -m pip install -e .`: "),
        "{error}"
    );
    assert!(
        lines[0].ends_with("the RUN step (baseline and setup) returned a non-zero code: 1"),
        "{error}"
    );
    assert!(
        lines.contains(&"|       ModuleNotFoundError: No module named 'pkg_resources'"),
        "{error}"
    );
    // The last line of the build's output before the log's path: the setup's stderr and
    // stdout are one stream, so this is pip's last line whatever the daemon's timing.
    let log_line = lines
        .iter()
        .position(|l| l.starts_with("build log: "))
        .unwrap();
    assert_eq!(
        lines[log_line - 1],
        "| note: This error originates from a subprocess, and is likely not a problem with pip."
    );
    // What to try is said, and the empty run did not build the same failing layer again.
    let hint = "hint: the record is of 2019-05-15 and pip resolved its packages as of today; its \
                setup may need the setuptools and packages of its time: --set \
                env.resolve_as_of=created_at (docs/swebench.md, \"Environments resolved as of a \
                date\")";
    assert_eq!(lines.last(), Some(&hint), "{error}");
    assert_eq!(
        error.matches("building the environment image").count(),
        1,
        "{error}"
    );
}

fn instance(record: &Value) -> Instance {
    parse_instances(&record.to_string(), None)
        .unwrap()
        .instances
        .remove(0)
}

fn lock_label(labels: &std::collections::HashMap<String, String>) -> Vec<String> {
    labels["aci.lock"].split(", ").map(str::to_owned).collect()
}

#[tokio::test]
async fn a_dated_layer_keeps_its_lock_and_a_rebuild_installs_what_the_lock_says() {
    let runtime = support::docker().await;
    let dir = scratch("lock");
    let record = record(&dir);
    let logs = dir.join("build-logs");
    let env = EnvConfig {
        specs: vec![PathBuf::from(FIXTURE).join("specs.yaml")],
        build_logs: Some(logs.clone()),
        resolve_as_of: ResolveAsOf::CreatedAt,
        ..EnvConfig::default()
    };
    let request = aci::image::env::EnvRequest {
        env: &env,
        run_id: "test-as-of-lock",
        on_step: &quiet,
    };
    let instance = instance(&record);
    let lock_file = |tag: &str| logs.join(format!("{}.lock.txt", tag.replace([':', '/'], "_")));
    let mut first = Provisioner::new()
        .env_image(&runtime, &instance, &request)
        .await
        .unwrap();
    if !lock_file(&first.base_image).exists() {
        // Another test (or run) built the layers with its own build-log directory: build them
        // again, so that their locks are written here.
        runtime.remove_image(&first.tag).await.unwrap();
        runtime.remove_image(&first.base_image).await.unwrap();
        first = Provisioner::new()
            .env_image(&runtime, &instance, &request)
            .await
            .unwrap();
    }
    let spec_tag = first.base_image.clone();
    assert!(
        spec_tag.starts_with("aci-spec-example__rangeset:"),
        "{spec_tag}"
    );
    let spec = runtime.inspect_image(&spec_tag).await.unwrap().unwrap();
    let env_image = runtime.inspect_image(&first.tag).await.unwrap().unwrap();
    assert_eq!(
        spec.labels["aci.resolved_as_of"],
        format!("{SETUP_COMMIT_DATE} (the environment_setup_commit's committer date)")
    );
    // The record is of 2019, its Python of October 2022: nothing older was made for it.
    assert_eq!(
        env_image.labels["aci.resolved_as_of"],
        format!(
            "{PYTHON_3_11_RELEASED} (the release of Python 3.11, after the record's created_at \
             {CREATED_AT})"
        )
    );
    // The spec layer: pytest 7.3.1 and what it needed in June 2023, and the venv's own.
    let spec_lock = lock_label(&spec.labels);
    assert_eq!(
        spec_lock,
        [
            "iniconfig==2.0.0",
            "packaging==23.1",
            "pip==23.0.1",
            "pluggy==1.0.0",
            "pytest==7.3.1",
            "setuptools==66.1.1"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(lock_file(&spec_tag)).unwrap(),
        "iniconfig==2.0.0\npackaging==23.1\npluggy==1.0.0\npytest==7.3.1\n"
    );
    // The instance layer adds the project, installed in develop mode.
    let env_lock = lock_label(&env_image.labels);
    assert_eq!(env_lock.len(), spec_lock.len() + 1, "{env_lock:?}");
    assert!(env_lock.contains(&"-e /testbed".to_owned()), "{env_lock:?}");

    // A rebuild reads the lock: pin another iniconfig in it, and that is what is installed.
    std::fs::write(
        lock_file(&spec_tag),
        "iniconfig==1.1.1\npackaging==23.1\npluggy==1.0.0\npytest==7.3.1\n",
    )
    .unwrap();
    runtime.remove_image(&first.tag).await.unwrap();
    runtime.remove_image(&spec_tag).await.unwrap();
    let second = Provisioner::new()
        .env_image(&runtime, &instance, &request)
        .await
        .unwrap();
    // The spec layer is another image now, so the instance layer is built anew on it.
    assert!(second.built);
    assert_eq!(second.base_image, spec_tag);
    let rebuilt = runtime.inspect_image(&spec_tag).await.unwrap().unwrap();
    let mut expected = spec_lock.clone();
    expected[0] = "iniconfig==1.1.1".to_owned();
    assert_eq!(lock_label(&rebuilt.labels), expected);
    let log =
        std::fs::read_to_string(logs.join(format!("{}.log", spec_tag.replace(':', "_")))).unwrap();
    assert!(
        log.contains("ARG PIP_CONSTRAINT=/tmp/aci-spec/constraints.txt"),
        "{log}"
    );
    runtime.remove_image(&second.tag).await.unwrap();
    runtime.remove_image(&spec_tag).await.unwrap();
}

/// pytest 4.4's spec (pytest-dev__pytest-5227, of 2019, on Python 3.9) pins
/// `atomicwrites==1.4.1`, and PyPI has no file of atomicwrites older than July 2022: as of the
/// layer's cutoff (Python 3.9's release) the pin is still installed, the rest of the layer is
/// as of the cutoff, and the label says which pin came from after it.
#[tokio::test]
async fn a_pin_released_after_the_cutoff_is_installed_and_named_in_the_label() {
    let runtime = support::docker().await;
    let dir = scratch("pin");
    let env = EnvConfig {
        build_logs: Some(dir.join("build-logs")),
        ..EnvConfig::default()
    };
    let request = aci::image::env::EnvRequest {
        env: &env,
        run_id: "test-as-of-pin",
        on_step: &quiet,
    };
    let spec = SpecEnv {
        repo: "example/pinned".to_owned(),
        version: "4.4".to_owned(),
        release: DebianRelease::Bullseye,
        python: "3.9".to_owned(),
        packages: Vec::new(),
        requirements: None,
        // six is not pinned: it resolves as of the cutoff (1.15.0, of May 2020; 1.16.0 is of May 2021).
        pip_packages: vec!["atomicwrites==1.4.1".to_owned(), "six".to_owned()],
        pre_install: Vec::new(),
        install: None,
        as_of: Some(AsOf {
            cutoff: Cutoff::parse("2020-10-05T00:00:00Z").unwrap(),
            why: "the release of Python 3.9, after the record's created_at 2019-05-15T13:51:41Z"
                .to_owned(),
        }),
        constraints: None,
    };
    let hash_tag = spec.tag(&spec.env_hash(
        &runtime
            .inspect_image("aci-python:bullseye")
            .await
            .unwrap()
            .expect("the image aci-python:bullseye is missing\nhint: run `aci images build --debian bullseye --lang python`")
            .id,
    ));
    // Built by this test, so that the label is this build's.
    let _ = runtime.remove_image(&hash_tag).await;
    let started = std::time::Instant::now();
    let built = spec_env::ensure_spec_env(
        &runtime,
        &spec,
        "example__pinned-1",
        &aci::image::env::BuildLocks::default(),
        &request,
    )
    .await
    .unwrap();
    eprintln!(
        "built the pinned layer in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(built.tag, hash_tag);
    let image = runtime.inspect_image(&built.tag).await.unwrap().unwrap();
    let lock = lock_label(&image.labels);
    assert!(lock.contains(&"atomicwrites==1.4.1".to_owned()), "{lock:?}");
    assert!(lock.contains(&"six==1.15.0".to_owned()), "{lock:?}");
    assert_eq!(
        image.labels["aci.resolved_as_of"],
        "2020-10-05T00:00:00Z (the release of Python 3.9, after the record's created_at \
         2019-05-15T13:51:41Z); pinned past it: atomicwrites==1.4.1 (uploaded \
         2022-07-08T18:31:40Z)"
    );
    runtime.remove_image(&built.tag).await.unwrap();
}

/// A record with no `repo_path`, whose repository comes from a mirror (`env.repo_url`): the
/// spec layer is still resolved as of its environment setup commit's date, read from the
/// mirror, and the run's manifest says so.
#[tokio::test]
async fn the_setup_commit_date_is_read_from_the_mirror_without_a_repo_path() {
    let _docker = support::docker().await;
    let dir = scratch("mirror");
    let mut record = record(&dir);
    record.as_object_mut().unwrap().remove("repo_path");
    let repos = dir.join("repos");
    std::fs::create_dir_all(repos.join("example")).unwrap();
    std::fs::rename(dir.join("rangeset"), repos.join("example/rangeset")).unwrap();
    let instances = dir.join("instances.jsonl");
    std::fs::write(&instances, format!("{record}\n")).unwrap();
    let replays = dir.join("replays");
    std::fs::create_dir_all(&replays).unwrap();
    std::fs::write(replays.join(format!("{ID}.yaml")), "[\"submit\"]").unwrap();
    let out = dir.join("batch");
    let batch = aci(&[
        "batch",
        "--instances",
        instances.to_str().unwrap(),
        "--model",
        "replay",
        "--replay-dir",
        replays.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--run-id",
        "test-as-of-mirror",
        "--set",
        &format!("env.specs=[{FIXTURE}/specs.yaml]"),
        "--set",
        &format!("env.build_logs={}", dir.join("build-logs").display()),
        "--set",
        &format!("env.repo_url={}/{{repo}}", repos.display()),
        "--set",
        &format!("env.repo_cache={}", dir.join("cache").display()),
        "--set",
        "env.resolve_as_of=created_at",
    ]);
    assert_eq!(
        batch.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&batch.stderr)
    );
    let manifest = read_json(&out.join("manifest.json"));
    let locks = manifest["locks"].as_object().unwrap();
    let spec = locks
        .iter()
        .find(|(tag, _)| tag.starts_with("aci-spec-example__rangeset:"))
        .map(|(_, lock)| lock)
        .unwrap_or_else(|| panic!("{locks:?}"));
    assert_eq!(
        spec["resolved_as_of"],
        format!("{SETUP_COMMIT_DATE} (the environment_setup_commit's committer date)")
    );
}
