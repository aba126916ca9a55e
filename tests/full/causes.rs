//! Why an evaluation did not resolve, on the real Docker daemon: an instance whose test fetches
//! a page from an HTTP server in another container. Graded as usual (no network), `aci
//! validate` says the gold patch did not resolve because the tests could not reach that host,
//! names `--network` and lists the instance as needing a network; `aci eval --network` resolves
//! it. The server container is removed whatever happens. And an instance whose test command is
//! not in its tree (sympy's `bin/test`, which its sdists leave out) is a missing command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{aci, read_json};
use serde_json::json;

/// The server container, removed on drop.
struct Server {
    name: String,
    address: String,
}

impl Server {
    /// `python3 -m http.server` in `aci-python:bookworm` on Docker's default bridge network.
    fn start(name: &str) -> Self {
        let _ = docker(&["rm", "-f", name]);
        let started = docker(&[
            "run",
            "-d",
            "--rm",
            "--name",
            name,
            "--label",
            "aci.test=causes",
            "aci-python:bookworm",
            "python3",
            "-m",
            "http.server",
            "8000",
        ]);
        assert!(
            started.status.success(),
            "this test needs the Docker daemon and the image aci-python:bookworm: {}\nhint: \
             start dockerd, or run `aci images build`",
            String::from_utf8_lossy(&started.stderr)
        );
        let mut server = Self {
            name: name.to_owned(),
            address: String::new(),
        };
        let inspected = docker(&["inspect", "-f", "{{.NetworkSettings.IPAddress}}", name]);
        server.address = String::from_utf8_lossy(&inspected.stdout).trim().to_owned();
        assert!(
            !server.address.is_empty(),
            "the server container has no address"
        );
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = docker(&["rm", "-f", &self.name]);
    }
}

fn docker(args: &[&str]) -> Output {
    Command::new("docker").args(args).output().unwrap()
}

/// A git diff that creates `path` with `lines`.
fn new_file(path: &str, lines: &[&str]) -> String {
    let mut diff = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 \
         +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        diff.push_str(&format!("+{line}\n"));
    }
    diff
}

/// The repository (a package with nothing to fetch yet) and its instance, whose FAIL_TO_PASS
/// test fetches `http://<address>:8000/`.
fn instance(dir: &Path, address: &str) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("netcheck")).unwrap();
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(repo.join("netcheck/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("tests/test_base.py"),
        "def test_package_imports():\n    import netcheck  # noqa: F401\n",
    )
    .unwrap();
    let test_line = format!("    assert fetch(\"http://{address}:8000/\") == 200");
    let test_patch = new_file(
        "tests/test_fetch.py",
        &[
            "from netcheck.fetch import fetch",
            "",
            "",
            "def test_fetch():",
            &test_line,
        ],
    );
    let patch = new_file(
        "netcheck/fetch.py",
        &[
            "from urllib.request import urlopen",
            "",
            "",
            "def fetch(url):",
            "    with urlopen(url, timeout=20) as response:",
            "        return response.status",
        ],
    );
    let path = dir.join("instances.json");
    let record = json!([{
        "instance_id": "net__fetch-1", "repo": "t/netfetch", "problem_statement": "fetch a URL",
        "base_commit": "0", "repo_path": "repo", "language": "python",
        "test_cmd": "python -m pytest -rA -p no:cacheprovider", "log_parser": "pytest",
        "patch": patch, "test_patch": test_patch,
        "FAIL_TO_PASS": ["tests/test_fetch.py::test_fetch"],
        "PASS_TO_PASS": ["tests/test_base.py::test_package_imports"],
    }]);
    std::fs::write(&path, record.to_string()).unwrap();
    path
}

#[test]
fn a_test_that_needs_a_host_is_a_network_cause_without_the_switch_and_resolves_with_it() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("causes-network-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let server = Server::start(&format!("aci-test-causes-{}", std::process::id()));
    let instances = instance(&dir, &server.address);
    let instances = instances.to_str().unwrap();
    let host = server.address.as_str();

    let validated = dir.join("validate");
    let output = aci(&[
        "validate",
        "--instances",
        instances,
        "--output",
        validated.to_str().unwrap(),
        "--run-id",
        "test-causes",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let note = format!(
        "gold: the tests could not reach the network they need ({host}): grading runs without \
         a network; --network gives it one"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        rows[2],
        format!(
            "| net__fetch-1 | no | yes | {} | {note} |",
            rows[2].split(" | ").nth(3).unwrap()
        )
    );
    assert_eq!(
        rows[5],
        "1 instance(s) need a network to resolve with gold: net__fetch-1 (rerun them with \
         --network)"
    );
    let verdict = &read_json(&validated.join("validation.json"))["net__fetch-1"];
    assert_eq!(verdict["note"], note.as_str());
    assert_eq!(verdict["needs_network"], true);
    assert_eq!(verdict["gold_cause"]["kind"], "network");
    let report = &read_json(&validated.join("gold/net__fetch-1/report.json"))["net__fetch-1"];
    assert_eq!(report["resolved"], false);
    assert_eq!(
        report["cause"],
        json!({
            "kind": "network",
            "infrastructure": true,
            "summary": &note["gold: ".len()..],
            "names": [host],
            "detail": "E               OSError: [Errno 101] Network is unreachable\nE               \
                       urllib.error.URLError: <urlopen error [Errno 101] Network is unreachable>",
        })
    );
    let summary = read_json(&validated.join("gold/report.json"));
    assert_eq!(summary["causes"], json!({"network": 1}));
    assert_eq!(summary["infrastructure_failures"], 1);
    assert_eq!(summary["resolve_rate"], 0.0);
    assert_eq!(summary["resolve_rate_without_infrastructure"], 0.0);

    let evaluated = dir.join("eval");
    let output = aci(&[
        "eval",
        "--instances",
        instances,
        "--predictions",
        "gold",
        "--network",
        "--output",
        evaluated.to_str().unwrap(),
        "--run-id",
        "test-causes",
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).lines().next(),
        Some(
            "resolved 1 of 1 instances (unresolved 0, errors 0, empty patches 0, without \
             prediction 0); resolve rate 100.0%, 100.0% without the 0 infrastructure failure(s)"
        )
    );
    let report = &read_json(&evaluated.join("net__fetch-1/report.json"))["net__fetch-1"];
    assert_eq!(report["resolved"], true, "{report}");
    assert!(report.get("cause").is_none(), "{report}");
    drop(server);
    let left = docker(&["ps", "-aq", "--filter", "label=aci.test=causes"]);
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
}

/// A sympy-style instance whose tree has no `bin/test` (as sympy's sdists leave it out): the note
/// names the missing command, not the canaries that therefore have no result.
#[test]
fn a_test_command_the_tree_lacks_is_named_as_missing() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("causes-no-bin-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("calc/tests")).unwrap();
    std::fs::write(repo.join("calc/__init__.py"), "").unwrap();
    std::fs::write(repo.join("calc/tests/__init__.py"), "").unwrap();
    std::fs::write(
        repo.join("calc/tests/test_base.py"),
        "def test_imports():\n    import calc  # noqa: F401\n",
    )
    .unwrap();
    let test_patch = new_file(
        "calc/tests/test_add.py",
        &[
            "from calc.add import add",
            "",
            "",
            "def test_add():",
            "    assert add(2, 3) == 5",
        ],
    );
    let patch = new_file("calc/add.py", &["def add(a, b):", "    return a + b"]);
    let instances = dir.join("instances.json");
    let record = json!([{
        "instance_id": "calc__calc-1", "repo": "t/calc", "problem_statement": "add numbers",
        "base_commit": "0", "repo_path": "repo", "language": "python",
        "test_cmd": "bin/test -C --verbose", "log_parser": "sympy",
        "patch": patch, "test_patch": test_patch,
        "FAIL_TO_PASS": ["test_add"], "PASS_TO_PASS": ["test_imports"],
    }]);
    std::fs::write(&instances, record.to_string()).unwrap();

    let validated = dir.join("validate");
    let output = aci(&[
        "validate",
        "--instances",
        instances.to_str().unwrap(),
        "--output",
        validated.to_str().unwrap(),
        "--run-id",
        "test-causes-no-bin-test",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = "a command the tests run is missing: bin/test (bin/test: No such file or \
                   directory; the repository has no bin/test)";
    let verdict = &read_json(&validated.join("validation.json"))["calc__calc-1"];
    assert_eq!(verdict["note"], format!("gold: {summary}"), "{verdict}");
    // Nothing ran without the patch either: its FAIL_TO_PASS test did not fail for want of it.
    assert_eq!(verdict["empty_fails"], false, "{verdict}");
    let report = &read_json(&validated.join("gold/calc__calc-1/report.json"))["calc__calc-1"];
    assert_eq!(report["cause"]["kind"], "missing_command");
    assert_eq!(report["cause"]["summary"], summary);
    assert_eq!(report["cause"]["names"], json!(["bin/test"]));
    assert_eq!(report["cause"]["infrastructure"], true);
}
