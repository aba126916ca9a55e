//! Images per Debian release and environments from SWE-bench specs, on the real Docker daemon
//! and the real PyPI: bullseye's and trixie's Python images report 3.9 and 3.13; a real
//! project from PyPI, made a SWE-bench instance with a spec entry of its own, validates with
//! `aci validate` (its gold patch resolves it, the empty patch does not) in a venv the agent
//! gets too; a spec whose Python no release has, and a pin PyPI lacks, fail their instance
//! with a message that says why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{aci, read_json};
use aci::config::EnvConfig;
use aci::image::env::{EnvImageError, EnvRequest};
use aci::image::release::DebianRelease;
use aci::instance::{Instance, parse_instances};
use aci::provision::Provisioner;
use aci::sandbox::Sandbox;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const SHORT: Duration = Duration::from_secs(60);

/// The project: inflection 0.5.1 (MIT), a pure-Python port of Rails' inflector whose sdist
/// ships its tests. Pinned by its SHA-256 on PyPI.
const SDIST: &str = "inflection-0.5.1.tar.gz";
const SDIST_SHA256: &str = "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417";
/// The fix the instance is about: `dasherize` replaces every underscore. The base commit has
/// the bug (only the first one is replaced).
const FIXED_LINE: &str = "    return word.replace('_', '-')\n";
const BUGGY_LINE: &str = "    return word.replace('_', '-', 1)\n";
/// The test the instance's test patch adds.
const NEW_TEST: &str = "\n\ndef test_dasherize_replaces_every_underscore():\n    \
                        assert inflection.dasherize(\"a_b_c_d\") == \"a-b-c-d\"\n";

fn quiet(_: &str) {}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("spec-env-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    all.extend_from_slice(args);
    run(dir, "git", &all)
}

/// The sdist from PyPI's simple index (PEP 691 JSON), checked against its pinned SHA-256.
async fn download_sdist(into: &Path) -> PathBuf {
    aci::tls::install_provider();
    let client = reqwest::Client::new();
    let index: Value = client
        .get("https://pypi.org/simple/inflection/")
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .expect("PyPI is reachable")
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    let file = index["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|file| file["filename"] == SDIST)
        .expect("the index lists the sdist");
    assert_eq!(file["hashes"]["sha256"], SDIST_SHA256);
    let bytes = client
        .get(file["url"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let digest = data_encoding::HEXLOWER.encode(&Sha256::digest(&bytes));
    assert_eq!(digest, SDIST_SHA256);
    let path = into.join(SDIST);
    std::fs::write(&path, &bytes).unwrap();
    path
}

/// The project as a SWE-bench task: a git repository whose base commit has the bug, the fix
/// as `patch`, a new test as `test_patch` (both made here by git from the project's own
/// files), and a later commit, the environment setup commit, that adds the requirements files
/// the spec installs.
struct Task {
    repo: PathBuf,
    base_commit: String,
    environment_setup_commit: String,
    patch: String,
    test_patch: String,
}

/// `git commit` with a fixed date, so that the commit is the same on every run and a rerun
/// reuses the images.
fn commit_dated(repo: &Path, message: &str) -> String {
    let dated = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(["commit", "-qm", message])
        .env("GIT_AUTHOR_DATE", "2025-06-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-06-01T00:00:00Z")
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(dated.success());
    git(repo, &["rev-parse", "HEAD"]).trim().to_owned()
}

async fn task(dir: &Path) -> Task {
    let sdist = download_sdist(dir).await;
    let repo = dir.join("inflection");
    std::fs::create_dir_all(&repo).unwrap();
    run(
        &repo,
        "tar",
        &["xzf", sdist.to_str().unwrap(), "--strip-components=1"],
    );
    let module = repo.join("inflection/__init__.py");
    let source = std::fs::read_to_string(&module).unwrap();
    assert_eq!(source.matches(FIXED_LINE).count(), 1);
    std::fs::write(&module, source.replace(FIXED_LINE, BUGGY_LINE)).unwrap();
    // The sdist carries setuptools' build metadata, which no repository tracks (the install
    // rewrites it).
    std::fs::remove_dir_all(repo.join("inflection.egg-info")).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    let base_commit = commit_dated(
        &repo,
        "inflection 0.5.1, dasherize replacing one underscore",
    );
    std::fs::write(&module, &source).unwrap();
    let patch = git(&repo, &["diff"]);
    git(&repo, &["checkout", "-q", "--", "."]);
    let tests = repo.join("test_inflection.py");
    let mut text = std::fs::read_to_string(&tests).unwrap();
    text.push_str(NEW_TEST);
    std::fs::write(&tests, text).unwrap();
    let test_patch = git(&repo, &["diff"]);
    git(&repo, &["checkout", "-q", "--", "."]);
    // The requirements, read by SWE-bench's rules: dev.txt includes test.txt by `-r`, and
    // `-e .` is dropped (the spec's install step installs the project).
    std::fs::create_dir_all(repo.join("requirements")).unwrap();
    std::fs::write(
        repo.join("requirements/dev.txt"),
        "-r test.txt
-e .
",
    )
    .unwrap();
    std::fs::write(
        repo.join("requirements/test.txt"),
        "pytest==8.3.5
",
    )
    .unwrap();
    git(&repo, &["add", "requirements"]);
    let environment_setup_commit = commit_dated(&repo, "requirements files");
    git(&repo, &["checkout", "-q", &base_commit]);
    Task {
        repo,
        base_commit,
        environment_setup_commit,
        patch,
        test_patch,
    }
}

/// The patch of the reinstall attack: a new `setup.py` and a plugin module, no fix.
fn reinstall_attack(task: &Task, record: &Value) -> String {
    let f2p: Vec<String> = serde_json::from_value(record["FAIL_TO_PASS"].clone()).unwrap();
    let plugin = format!(
        "import pytest\n\n_SLOW = {f2p:?}\n\n\n@pytest.hookimpl(hookwrapper=True)\n\
         def pytest_runtest_makereport(item, call):\n    outcome = yield\n    \
         if item.nodeid in _SLOW:\n        report = outcome.get_result()\n        \
         report.outcome = \"passed\"\n        report.longrepr = None\n"
    );
    let setup = r#"import glob, os, subprocess, sys, sysconfig
from setuptools import setup

names = []
for path in ["/eval.sh"] + glob.glob("/tmp/**", recursive=True) + glob.glob("/testbed/**/*.py", recursive=True):
    try:
        names += [word for word in open(path, errors="replace").read().split() if word.startswith("test_")]
    except OSError:
        pass
with open("/testbed/leaked.txt", "w") as f:
    f.write(" ".join(sorted(set(names))))
site = sysconfig.get_paths()["purelib"]
with open(os.path.join(site, "sitecustomize.py"), "w") as f:
    f.write("import inflection_speedups\n")
daemon = (
    "import time\n"
    "while True:\n"
    "    try:\n"
    "        open('/testbed/conftest.py', 'w').write(open('/testbed/inflection_speedups.py').read() + 'print(\"conftest planted\")\\n')\n"
    "    except OSError:\n"
    "        pass\n"
    "    time.sleep(0.05)\n"
)
subprocess.Popen([sys.executable, "-c", daemon], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
setup(
    name="inflection",
    version="0.5.1",
    py_modules=["inflection_speedups"],
    packages=["inflection"],
    entry_points={"pytest11": ["speedups = inflection_speedups"]},
)
"#;
    std::fs::write(task.repo.join("setup.py"), setup).unwrap();
    std::fs::write(task.repo.join("inflection_speedups.py"), plugin).unwrap();
    git(&task.repo, &["add", "-A"]);
    let patch = git(&task.repo, &["diff", "--cached"]);
    git(&task.repo, &["reset", "-q", "--hard"]);
    git(&task.repo, &["clean", "-qfd"]);
    patch
}

fn record(task: &Task, id: &str, repo: &str) -> Value {
    json!({
        "instance_id": id,
        "problem_statement": "dasherize(\"a_b_c\") gives \"a-b_c\": only the first underscore \
                              becomes a dash",
        "repo": repo, "version": "0.5",
        "base_commit": task.base_commit,
        "environment_setup_commit": task.environment_setup_commit,
        "repo_path": task.repo,
        "patch": task.patch, "test_patch": task.test_patch,
        "FAIL_TO_PASS": [
            "test_inflection.py::test_dasherize[person_street_address-person-street-address]",
            "test_inflection.py::test_dasherize_replaces_every_underscore",
        ],
        "PASS_TO_PASS": [
            "test_inflection.py::test_dasherize[street-street]",
            "test_inflection.py::test_dasherize[street_address-street-address]",
            "test_inflection.py::test_underscore[Product-product]",
            "test_inflection.py::test_ordinal[-1--1st]",
        ],
    })
}

/// A spec file with one repository, in the format of specs/swebench.yaml: `packages` (a YAML
/// value, or nothing) and `pip_packages`.
fn spec_file(
    dir: &Path,
    repo: &str,
    python: &str,
    packages: Option<&str>,
    pip_packages: &[&str],
) -> PathBuf {
    let path = dir.join("specs.yaml");
    let packages = packages.map_or_else(String::new, |p| format!("        packages: {p}\n"));
    let text = format!(
        "source: aci tests\nrepos:\n  {repo}:\n    log_parser: pytest\n    directives: paths\n    \
         requirements_paths: [requirements.txt, requirements/dev.txt]\n    specs:\n      - \
         versions: [\"0.5\"]\n        python: \"{python}\"\n{packages}        install: \"python -m \
         pip install -e .\"\n        pip_packages: {}\n        test_cmd: \"pytest -rA\"\n",
        serde_json::to_string(pip_packages).unwrap()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn write_instances(dir: &Path, records: &[Value]) -> PathBuf {
    let path = dir.join("instances.jsonl");
    let lines: Vec<String> = records.iter().map(Value::to_string).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn instance(record: &Value) -> Instance {
    parse_instances(&record.to_string(), None)
        .unwrap()
        .instances
        .remove(0)
}

fn env_with(specs: &Path, build_logs: &Path) -> EnvConfig {
    EnvConfig {
        specs: vec![specs.to_owned()],
        build_logs: Some(build_logs.to_owned()),
        ..EnvConfig::default()
    }
}

#[tokio::test]
async fn bullseye_and_trixie_python_images_report_python_3_9_and_3_13() {
    let runtime = support::docker().await;
    for (release, version) in [
        (DebianRelease::Bullseye, "3.9"),
        (DebianRelease::Trixie, "3.13"),
    ] {
        let python = aci::image::select_languages("python").unwrap();
        let mut progress = |line: &str| eprintln!("{line}");
        let built = aci::image::build_release(&runtime, release, &python, false, &mut progress)
            .await
            .unwrap();
        let tags: Vec<&str> = built.iter().map(|image| image.tag.as_str()).collect();
        let base = format!("aci-base:{release}");
        let image = format!("aci-python:{release}");
        assert_eq!(tags, [base.as_str(), image.as_str()]);
        let info = runtime.inspect_image(&base).await.unwrap().unwrap();
        assert_eq!(info.labels["aci.suite"], release.name());

        let mut spec = support::spec(&format!("python-{release}"), None);
        spec.image.clone_from(&image);
        let mut sandbox = runtime.start(&spec).await.unwrap();
        let out = sandbox
            .run_merged("python3 --version; /opt/venv/bin/python --version", SHORT)
            .await
            .unwrap();
        sandbox.shutdown().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for line in lines {
            let patch = line
                .strip_prefix(&format!("Python {version}."))
                .unwrap_or_else(|| panic!("{image}: {line:?} is not Python {version}"));
            assert!(patch.chars().all(|c| c.is_ascii_digit()), "{line}");
        }
    }
}

#[tokio::test]
async fn a_project_from_pypi_validates_with_gold_and_fails_without_in_the_venv_of_its_spec() {
    let runtime = support::docker().await;
    let dir = scratch("inflection");
    let task = task(&dir).await;
    let repo_name = "jpvanhal/inflection";
    let specs = spec_file(&dir, repo_name, "3.11", Some("requirements.txt"), &[]);
    let logs = dir.join("build-logs");
    let record = record(&task, "jpvanhal__inflection-1", repo_name);
    let instances = write_instances(&dir, std::slice::from_ref(&record));
    let output = dir.join("validation");
    let set_specs = format!("env.specs=[{}]", specs.display());
    let set_logs = format!("env.build_logs={}", logs.display());
    let validated = aci(&[
        "validate",
        "--instances",
        instances.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
        "--run-id",
        "test-validate",
        "--set",
        &set_specs,
        "--set",
        &set_logs,
    ]);
    assert_eq!(validated.status.code(), Some(0));
    let mut verdicts = read_json(&output.join("validation.json"));
    let seconds = verdicts["jpvanhal__inflection-1"]
        .as_object_mut()
        .unwrap()
        .remove("seconds")
        .unwrap();
    assert!(seconds.as_f64().unwrap() > 0.0);
    assert_eq!(
        verdicts,
        json!({"jpvanhal__inflection-1": {"gold_resolved": true, "empty_fails": true}})
    );
    let stdout = String::from_utf8_lossy(&validated.stdout);
    assert!(
        stdout.contains("| jpvanhal__inflection-1 | yes | yes | "),
        "{stdout}"
    );
    assert!(stdout.contains("\n1 of 1 instance(s) valid"), "{stdout}");

    // Without the fix both FAIL_TO_PASS tests fail and the PASS_TO_PASS ones still pass.
    let empty = read_json(&output.join("empty/jpvanhal__inflection-1/report.json"));
    let status = &empty["jpvanhal__inflection-1"]["tests_status"];
    assert_eq!(status["FAIL_TO_PASS"]["success"], json!([]));
    assert_eq!(status["FAIL_TO_PASS"]["failure"], record["FAIL_TO_PASS"]);
    assert_eq!(status["PASS_TO_PASS"]["success"], record["PASS_TO_PASS"]);
    let gold = read_json(&output.join("gold/jpvanhal__inflection-1/report.json"));
    assert_eq!(gold["jpvanhal__inflection-1"]["resolved"], true);

    // A patch whose setup.py, run as root by the reinstall step, tries every way to reach the
    // tests from there: it reads every file it can for test names (the canaries are not written
    // yet, in any sandbox, and no script names them), registers a pytest11
    // plugin and writes a sitecustomize.py into site-packages (both pass the FAIL_TO_PASS
    // tests), and leaves a process behind that keeps writing a conftest.py into the repository.
    // The reinstall runs in a build sandbox of its own; the tests run in a fresh one that gets
    // only the work tree: none of it reaches them, and the bug is still there.
    let attack = reinstall_attack(&task, &record);
    let mut attacked = record.clone();
    attacked["instance_id"] = json!("jpvanhal__inflection-attack");
    attacked["patch"] = json!(attack);
    let attack_instances = write_instances(&dir, std::slice::from_ref(&attacked));
    let attack_out = dir.join("attack");
    let evaluated = aci(&[
        "eval",
        "--instances",
        attack_instances.to_str().unwrap(),
        "--predictions",
        "gold",
        "--output",
        attack_out.to_str().unwrap(),
        "--run-id",
        "test-validate",
        "--set",
        &set_specs,
        "--set",
        &set_logs,
    ]);
    assert_eq!(evaluated.status.code(), Some(0));
    let id = "jpvanhal__inflection-attack";
    let body = &read_json(&attack_out.join(id).join("report.json"))[id];
    assert_eq!(body["resolved"], false, "{body}");
    assert!(body.get("untrusted_reason").is_none(), "{body}");
    assert_eq!(
        body["tests_status"]["FAIL_TO_PASS"]["failure"], record["FAIL_TO_PASS"],
        "{body}"
    );
    let run_log = std::fs::read_to_string(attack_out.join(id).join("run_instance.log")).unwrap();
    assert!(
        run_log.contains("\nthe reinstall ran in a build sandbox; its work tree ("),
        "{run_log}"
    );
    // The process the reinstall left wrote its conftest.py into the build sandbox's tree, and
    // the reinstall registered the plugin in the metadata it wrote there: both came with the
    // tree, and the reset removed both before the tests.
    for line in [
        "before the tests, removed: conftest.py: pytest loads it as a plugin",
        "before the tests, removed: inflection.egg-info/entry_points.txt: package metadata: its \
         entry points load pytest plugins",
    ] {
        assert!(run_log.contains(&format!("\n{line}\n")), "{run_log}");
    }
    let log = std::fs::read_to_string(attack_out.join(id).join("test_output.txt")).unwrap();
    assert!(!log.contains("\nconftest planted"), "{log}");

    // A spec that installs the project into site-packages (`pip install .`, as requests' and
    // old Django's do) and tests the installed copy (`--import-mode=importlib` puts no
    // repository directory on sys.path): the reinstall's copy is carried into the test sandbox
    // with the work tree, so the gold patch resolves.
    let installed_repo = "jpvanhal/inflection-installed";
    let installed_specs = dir.join("installed-specs.yaml");
    std::fs::write(
        &installed_specs,
        std::fs::read_to_string(&specs)
            .unwrap()
            .replace(repo_name, installed_repo)
            .replace(
                "install: \"python -m pip install -e .\"",
                "install: \"python -m pip install --no-build-isolation --no-deps .\"",
            )
            .replace(
                "test_cmd: \"pytest -rA\"",
                "test_cmd: \"pytest -rA --import-mode=importlib\"",
            ),
    )
    .unwrap();
    let mut installed = record.clone();
    installed["instance_id"] = json!("jpvanhal__inflection-installed");
    installed["repo"] = json!(installed_repo);
    let installed_instances = write_instances(&dir, std::slice::from_ref(&installed));
    let installed_out = dir.join("installed");
    let evaluated = aci(&[
        "eval",
        "--instances",
        installed_instances.to_str().unwrap(),
        "--predictions",
        "gold",
        "--output",
        installed_out.to_str().unwrap(),
        "--run-id",
        "test-validate",
        "--set",
        &format!("env.specs=[{}]", installed_specs.display()),
        "--set",
        &set_logs,
    ]);
    assert_eq!(evaluated.status.code(), Some(0));
    let id = "jpvanhal__inflection-installed";
    let body = &read_json(&installed_out.join(id).join("report.json"))[id];
    assert_eq!(body["resolved"], true, "{body}");
    assert_eq!(body["tripwire"]["confirmed"], true, "{body}");
    let run_log = std::fs::read_to_string(installed_out.join(id).join("run_instance.log")).unwrap();
    assert!(
        run_log.contains(
            "\nthe project's installed modules in /opt/aci-venv/lib/python3.11/site-packages ("
        ),
        "{run_log}"
    );

    // The agent's container starts from the same image, in the spec's venv, with the project
    // installed from the repository.
    let env = env_with(&specs, &logs);
    let request = EnvRequest {
        env: &env,
        run_id: "test-validate",
        on_step: &quiet,
    };
    let first = instance(&record);
    let image = Provisioner::new()
        .env_image(&runtime, &first, &request)
        .await
        .unwrap();
    assert!(!image.built, "aci validate built it already");
    assert!(
        image
            .base_image
            .starts_with("aci-spec-jpvanhal__inflection:"),
        "{}",
        image.base_image
    );
    let mut spec = support::spec("spec-env-agent", None);
    spec.image.clone_from(&image.tag);
    spec.repo = None;
    let mut sandbox = runtime.start(&spec).await.unwrap();
    let out = sandbox
        .run_merged(
            "command -v python pytest; echo $VIRTUAL_ENV; python --version; \
             python -c 'import inflection; print(inflection.__file__)'; \
             pytest --version 2>&1; git status --porcelain",
            SHORT,
        )
        .await
        .unwrap();
    sandbox.shutdown().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        [lines[0], lines[1], lines[2], lines[4], lines[5]],
        [
            "/opt/aci-venv/bin/python",
            "/opt/aci-venv/bin/pytest",
            "/opt/aci-venv",
            "/testbed/inflection/__init__.py",
            "pytest 8.3.5",
        ],
        "{text}"
    );
    assert!(lines[3].starts_with("Python 3.11."), "{text}");
    assert_eq!(lines.len(), 6, "a clean work tree: {text}");

    // A second instance of the same repository and version, at another commit, gets its own
    // repository layer on the same environment layer.
    std::fs::write(task.repo.join("NOTES.txt"), "a second commit\n").unwrap();
    git(&task.repo, &["add", "NOTES.txt"]);
    git(&task.repo, &["commit", "-qm", "notes"]);
    let mut second = record.clone();
    second["instance_id"] = json!("jpvanhal__inflection-2");
    second["base_commit"] = json!(git(&task.repo, &["rev-parse", "HEAD"]).trim());
    let second = Provisioner::new()
        .env_image(&runtime, &instance(&second), &request)
        .await
        .unwrap();
    assert!(second.built);
    assert_ne!(second.tag, image.tag);
    assert_eq!(second.base_image, image.base_image);

    // The image built just now has its whole log, the setup step announced.
    let instance_log = logs.join(format!("{}.log", second.tag.replace(':', "_")));
    let text = std::fs::read_to_string(&instance_log).unwrap();
    assert!(
        text.contains("[aci] step: setup 1 of 1: python -m pip install -e .\n"),
        "{text}"
    );
    assert!(
        text.contains("Successfully installed inflection-0.5.1"),
        "{text}"
    );
    runtime.remove_image(&second.tag).await.unwrap();
}

#[tokio::test]
async fn a_spec_whose_python_no_release_has_fails_its_instance_and_says_so() {
    let dir = scratch("py310");
    let repo = support::small_repo();
    let specs = spec_file(&dir, "t/py310", "3.10", None, &["pytest==8.3.5"]);
    let record = json!({
        "instance_id": "t__py310-1", "problem_statement": "", "repo": "t/py310",
        "version": "0.5", "repo_path": repo.path(), "test_patch": "",
        "patch": "--- a/pkg/calc.py\n+++ b/pkg/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    \
                  return a + b\n+    return b + a\n",
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"], "PASS_TO_PASS": [],
    });
    let instances = write_instances(&dir, std::slice::from_ref(&record));
    let output = dir.join("validation");
    let set_specs = format!("env.specs=[{}]", specs.display());
    let validated = aci(&[
        "validate",
        "--instances",
        instances.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
        "--set",
        &set_specs,
    ]);
    assert_eq!(validated.status.code(), Some(0));
    let message = "t__py310-1: the SWE-bench spec of t/py310 0.5 asks for Python 3.10, which no \
                   Debian release aci builds has (it has 3.9 (bullseye), 3.11 (bookworm), 3.13 \
                   (trixie)); no other Python is substituted\nhint: run it in SWE-bench's \
                   prebuilt image with --images swebench";
    let verdicts = read_json(&output.join("validation.json"));
    assert_eq!(
        verdicts["t__py310-1"]["error"],
        json!(format!("gold: {message}"))
    );
    assert_eq!(verdicts["t__py310-1"]["gold_resolved"], false);
    assert_eq!(verdicts["t__py310-1"]["empty_fails"], false);
    let stderr = String::from_utf8_lossy(&validated.stderr);
    assert!(
        stderr.contains(&format!("[gold] t__py310-1: error: {message}")),
        "{stderr}"
    );

    // The library says the same, as a spec error, before touching the daemon.
    let runtime = support::docker().await;
    let env = env_with(&specs, &dir);
    let request = EnvRequest {
        env: &env,
        run_id: "test-py310",
        on_step: &quiet,
    };
    let error = Provisioner::new()
        .env_image(&runtime, &instance(&record), &request)
        .await
        .unwrap_err();
    assert!(matches!(error, EnvImageError::Spec(_)), "{error:?}");
    assert_eq!(aci::hint::with_hint(&error), message);
}

#[tokio::test]
async fn a_pin_pypi_does_not_have_fails_the_build_at_its_step_with_the_last_lines_and_the_log() {
    let runtime = support::docker().await;
    let dir = scratch("bad-pin");
    let repo = support::small_repo();
    let specs = spec_file(&dir, "t/bad-pin", "3.11", None, &["pytest==0.0.0"]);
    let logs = dir.join("logs");
    let record = json!({
        "instance_id": "t__bad-pin-1", "problem_statement": "", "repo": "t/bad-pin",
        "version": "0.5", "repo_path": repo.path(),
    });
    let env = env_with(&specs, &logs);
    let request = EnvRequest {
        env: &env,
        run_id: "test-bad-pin",
        on_step: &quiet,
    };
    let error = Provisioner::new()
        .env_image(&runtime, &instance(&record), &request)
        .await
        .unwrap_err();
    let EnvImageError::Build {
        instance_id,
        tag,
        message,
        hint,
    } = &error
    else {
        panic!("expected a build error, got {error}");
    };
    assert_eq!(instance_id, "t__bad-pin-1");
    assert!(tag.starts_with("aci-spec-t__bad-pin:"), "{tag}");
    assert!(
        message.starts_with("failed at step `pip install the pip_packages of the spec`: "),
        "{message}"
    );
    assert!(
        message.contains("\n| ERROR: No matching distribution found for pytest==0.0.0"),
        "{message}"
    );
    let log = logs.join(format!("{}.log", tag.replace(':', "_")));
    assert!(
        message.contains(&format!("\nbuild log: {}", log.display())),
        "{message}"
    );
    assert_eq!(
        hint.as_deref(),
        Some(
            "a package or pin of the spec is not on PyPI for this Python (some exist only on \
             conda); use --images swebench"
        ),
        "{message}"
    );
    // The whole log: every step (the venv's may come from the build cache), the failing
    // one's output in full.
    let text = std::fs::read_to_string(&log).unwrap();
    for line in [
        "Step 4/8 : RUN bash /tmp/aci-spec/1-venv.sh\n",
        "Step 5/8 : RUN bash /tmp/aci-spec/4-pip-packages.sh\n",
        "[aci] step: pip install the pip_packages of the spec\n",
        "ERROR: Could not find a version that satisfies the requirement pytest==0.0.0 (from \
         versions: 2.0.0, ",
    ] {
        assert!(text.contains(line), "{line:?} is not in the log:\n{text}");
    }
    assert!(runtime.inspect_image(tag).await.unwrap().is_none());
    let pruned = aci(&["images", "prune", "--run-id", "test-bad-pin"]);
    assert_eq!(pruned.status.code(), Some(0));
}
