//! `aci inspect` as a process: the server answers GET only, keeps every request inside DIR,
//! checks the Host of a loopback listener and sends its Content-Security-Policy; the static
//! export and the command's errors. The pages themselves are checked in a real browser in
//! `inspect_browser.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const MONEYFMT: &str = include_str!("../fixtures/inspect/demo__moneyfmt-1.traj");

/// A batch of one instance with its evaluation next to it, and a secret beside both.
fn layout(root: &Path) -> PathBuf {
    let run = root.join("run");
    std::fs::create_dir_all(run.join("demo__moneyfmt-1")).unwrap();
    std::fs::write(run.join("demo__moneyfmt-1/demo__moneyfmt-1.traj"), MONEYFMT).unwrap();
    let eval = root.join("eval/demo__moneyfmt-1");
    std::fs::create_dir_all(&eval).unwrap();
    std::fs::write(
        eval.join("report.json"),
        r#"{"demo__moneyfmt-1": {"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true, "resolved": true}}"#,
    )
    .unwrap();
    std::fs::write(eval.join("test_output.txt"), "22 passed\n").unwrap();
    std::fs::write(root.join("secret.txt"), "not for the browser").unwrap();
    std::os::unix::fs::symlink(
        root.join("secret.txt"),
        run.join("demo__moneyfmt-1/escape.txt"),
    )
    .unwrap();
    run
}

/// `aci inspect` serving `dir` on a free port; killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aci"))
            .args(["inspect", "--port", "0"])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // `serving DIR at http://127.0.0.1:PORT/`
        let port = line
            .trim_end()
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .parse()
            .unwrap_or_else(|_| panic!("no port in {line:?}"));
        Server { child, port }
    }

    /// Sends `request` as it is and returns the whole answer.
    fn raw(&self, request: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    }

    fn get(&self, path: &str) -> String {
        self.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            self.port
        ))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status(answer: &str) -> &str {
    answer.split("\r\n").next().unwrap()
}

#[test]
fn the_server_answers_pages_raw_files_and_versions_with_its_policy() {
    let root = tempfile::tempdir().unwrap();
    let server = Server::start(&layout(root.path()));
    let index = server.get("/");
    assert_eq!(status(&index), "HTTP/1.1 200 OK", "{index}");
    assert!(index.contains("\r\nContent-Type: text/html; charset=utf-8\r\n"));
    let policy = index
        .lines()
        .find_map(|line| line.strip_prefix("Content-Security-Policy: "))
        .unwrap();
    assert!(
        policy.starts_with("default-src 'none'; script-src 'sha256-"),
        "{policy}"
    );
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert!(index.contains("demo__moneyfmt-1</a>"));
    assert!(index.contains("<span class=\"badge resolved\">resolved</span>"));
    let instance = server.get("/i/demo__moneyfmt-1.html");
    assert_eq!(status(&instance), "HTTP/1.1 200 OK");
    assert!(instance.contains("Edit rejected by the lint gate"));
    // The raw trajectory, byte for byte, as a sandboxed text document.
    let raw = server.get("/raw/demo__moneyfmt-1/demo__moneyfmt-1.traj");
    assert_eq!(status(&raw), "HTTP/1.1 200 OK");
    assert!(raw.contains("\r\nContent-Security-Policy: sandbox\r\n"));
    assert!(raw.ends_with(MONEYFMT));
    let version = server.get("/_version/i/demo__moneyfmt-1.html");
    assert_eq!(status(&version), "HTTP/1.1 200 OK");
    assert_eq!(version.rsplit("\r\n\r\n").next().unwrap().len(), 32);
}

#[test]
fn the_server_refuses_other_methods_paths_out_of_dir_and_foreign_hosts() {
    let root = tempfile::tempdir().unwrap();
    let server = Server::start(&layout(root.path()));
    // Only GET.
    for method in ["POST", "PUT", "DELETE", "HEAD"] {
        let answer = server.raw(&format!(
            "{method} / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
        ));
        assert_eq!(
            status(&answer),
            "HTTP/1.1 405 Method Not Allowed",
            "{method}"
        );
        assert!(answer.contains("\r\nAllow: GET\r\n"));
    }
    // Nothing outside DIR: dot segments (encoded or not), absolute paths, a symlink out.
    for path in [
        "/raw/../secret.txt",
        "/raw/%2e%2e/secret.txt",
        "/raw/..%2fsecret.txt",
        "//secret.txt",
        "/raw//secret.txt",
        "/raw/%2Fetc%2Fpasswd",
        "/i/..%2F..%2Fsecret.txt",
    ] {
        let answer = server.get(path);
        assert_eq!(status(&answer), "HTTP/1.1 400 Bad Request", "{path}");
        assert!(!answer.contains("not for the browser"));
    }
    for path in [
        "/raw/demo__moneyfmt-1/escape.txt",
        "/raw-eval/../secret.txt",
        "/raw/secret.txt",
        "/i/secret.html",
        "/etc/passwd",
    ] {
        let answer = server.get(path);
        assert!(
            status(&answer) == "HTTP/1.1 404 Not Found"
                || status(&answer) == "HTTP/1.1 400 Bad Request",
            "{path}: {answer}"
        );
        assert!(!answer.contains("not for the browser"), "{path}");
    }
    // A page reached through another host name (DNS rebinding) is refused.
    let rebound = server.raw("GET / HTTP/1.1\r\nHost: attacker.example:8000\r\n\r\n");
    assert_eq!(status(&rebound), "HTTP/1.1 403 Forbidden");
    let no_host = server.raw("GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status(&no_host), "HTTP/1.1 403 Forbidden");
    // Garbage is a bad request, and the server keeps serving.
    assert_eq!(
        status(&server.raw("\x16\x03\x01garbage\r\n\r\n")),
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(status(&server.get("/")), "HTTP/1.1 200 OK");
}

#[test]
fn the_static_export_writes_every_page_with_relative_links() {
    let root = tempfile::tempdir().unwrap();
    let run = layout(root.path());
    let out = root.path().join("site");
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["inspect"])
        .arg(&run)
        .arg("--static")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("wrote 2 pages to {}\n", out.display())
    );
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("<a href=\"i/demo__moneyfmt-1.html\">demo__moneyfmt-1</a>"));
    assert!(index.contains("<meta http-equiv=\"Content-Security-Policy\""));
    let instance = std::fs::read_to_string(out.join("i/demo__moneyfmt-1.html")).unwrap();
    assert!(instance.contains("<a href=\"../index.html\">run</a>"));
    assert!(
        instance.contains("<details class=\"section\"><summary>test output (1 lines)</summary>")
    );
}

#[test]
fn sweagent_directories_open_in_both_layouts() {
    let root = tempfile::tempdir().unwrap();
    // v0.7: trajectories/<user>/<run>/<id>.traj; 1.x: <id>/<id>.traj.
    let flat = root.path().join("v0");
    std::fs::create_dir_all(&flat).unwrap();
    std::fs::copy(
        "tests/fixtures/sweagent_v0_7.traj",
        flat.join("marshmallow-code__marshmallow-1867.traj"),
    )
    .unwrap();
    let nested = root.path().join("v1/marshmallow-code__marshmallow-1867");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(
        "tests/fixtures/sweagent_v1.traj",
        nested.join("marshmallow-code__marshmallow-1867.traj"),
    )
    .unwrap();
    for (dir, tokens) in [
        (flat, "39,826 / 493"),
        (root.path().join("v1"), "12,840 / 312"),
    ] {
        let out = dir.join("site");
        let status = Command::new(env!("CARGO_BIN_EXE_aci"))
            .arg("inspect")
            .arg(&dir)
            .arg("--static")
            .arg(&out)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let index = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(index.contains(&format!(">{tokens}</td>")), "{index}");
        assert!(index.contains("<span class=\"badge submitted\">submitted</span>"));
        let page =
            std::fs::read_to_string(out.join("i/marshmallow-code__marshmallow-1867.html")).unwrap();
        assert!(page.contains("<h2>Turns (3)</h2>"));
    }
}

#[test]
fn bad_input_is_one_line_and_exit_1_and_bad_usage_exit_2() {
    let root = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["inspect"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().next().unwrap(),
        format!(
            "error: {} holds no trajectories (<id>/<id>.traj, <id>/<id>.traj.json or <id>.traj), evaluation reports or ablation.json",
            std::fs::canonicalize(root.path()).unwrap().display()
        )
    );
    assert!(
        stderr.lines().nth(1).unwrap().starts_with("hint: "),
        "{stderr}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["inspect", "x", "--static", "out", "--port", "9"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    // A port in use: one line and a hint.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let run = layout(root.path());
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["inspect", "--port", &port.to_string()])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("error: cannot listen on 127.0.0.1:{port}: ")),
        "{stderr}"
    );
    assert!(stderr.contains("hint: choose another port with --port N (0 picks a free one)"));
}

/// The observation of step `step` of [`write_huge_trajectory`]'s file.
fn huge_observation(step: usize) -> String {
    (0..120_000)
        .map(|line| format!("step {step} line {line:06}: {}\n", "x".repeat(50)))
        .collect()
}

/// `DIR/run/big__huge-1/big__huge-1.traj`: 24 steps of an 8.4 MB observation each (200 MB),
/// written as it is generated.
fn write_huge_trajectory(root: &Path) -> PathBuf {
    use std::io::BufWriter;
    let run = root.join("run");
    std::fs::create_dir_all(run.join("big__huge-1")).unwrap();
    let path = run.join("big__huge-1/big__huge-1.traj");
    let mut out = BufWriter::new(std::fs::File::create(&path).unwrap());
    out.write_all(br#"{"environment": "aci", "trajectory": ["#)
        .unwrap();
    for step in 1..=24 {
        if step > 1 {
            out.write_all(b",").unwrap();
        }
        let observation = serde_json::to_string(&huge_observation(step)).unwrap();
        write!(
            out,
            r#"{{"action": "cat big{step}.txt", "thought": "look", "response": "ok", "observation": {observation}, "state": {{"working_dir": "/testbed"}}, "execution_time": 0.5}}"#
        )
        .unwrap();
    }
    out.write_all(
        br#"], "history": [{"role": "user", "content": "the task", "message_type": "instance"}], "info": {"exit_status": "submitted"}}"#,
    )
    .unwrap();
    out.flush().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 200_000_000);
    run
}

fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").unwrap().1
}

#[test]
fn a_trajectory_of_hundreds_of_megabytes_gives_a_small_page_and_every_full_text() {
    let root = tempfile::tempdir().unwrap();
    let run = write_huge_trajectory(root.path());
    let expected = huge_observation(5);
    let link = "href=\"big__huge-1/t5-observation.txt\"";
    let label = format!("show all 120001 lines ({} characters)", expected.len());

    let server = Server::start(&run);
    let page = server.get("/i/big__huge-1.html");
    assert_eq!(status(&page), "HTTP/1.1 200 OK");
    let html = body(&page);
    assert!(html.len() < 1_000_000, "the page is {} bytes", html.len());
    assert_eq!(html.matches("<section class=\"turn\"").count(), 24);
    assert!(html.contains(link) && html.contains(&label), "{html}");
    assert!(html.contains("step 5 line 000011: ") && html.contains("step 5 line 119999: "));
    assert!(!html.contains("step 5 line 000500: "));
    let text = server.get("/i/big__huge-1/t5-observation.txt");
    assert_eq!(status(&text), "HTTP/1.1 200 OK");
    assert!(text.contains("\r\nContent-Security-Policy: sandbox\r\n"));
    assert!(body(&text) == expected, "the full observation differs");
    drop(server);

    let out = root.path().join("site");
    let exported = Command::new(env!("CARGO_BIN_EXE_aci"))
        .arg("inspect")
        .arg(&run)
        .arg("--static")
        .arg(&out)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{exported:?}");
    let html = std::fs::read_to_string(out.join("i/big__huge-1.html")).unwrap();
    assert!(html.len() < 1_000_000, "the page is {} bytes", html.len());
    assert!(html.contains(link) && html.contains(&label));
    let written = std::fs::read_to_string(out.join("i/big__huge-1/t5-observation.txt")).unwrap();
    assert!(written == expected, "the written observation differs");
    let texts = std::fs::read_dir(out.join("i/big__huge-1"))
        .unwrap()
        .count();
    assert_eq!(texts, 24, "one file per long observation");
}

/// A long review: 1,000 turns that each show a 100-line window, an evaluation of 5,000 passing
/// and 200 failing tests, and a test output of their 4 MB.
fn write_big_instance(root: &Path) -> PathBuf {
    let id = "big__review-1";
    let run = root.join("run");
    std::fs::create_dir_all(run.join(id)).unwrap();
    let window: String = (1..=100)
        .map(|n| {
            format!(
                "{}:    value_{n} = compute(value_{}, 'x' * 20)\n",
                400 + n,
                n
            )
        })
        .collect();
    let step = serde_json::json!({
        "action": "goto 450",
        "observation": format!("[File: /repo/big.py (900 lines total)]\n(400 more lines above)\n{window}(400 more lines below)"),
        "thought": "Look at the loop again.",
        "response": "Look at the loop again.\n\n```\ngoto 450\n```",
        "state": {"open_file": "/repo/big.py", "working_dir": "/repo"},
        "execution_time": 0.2
    });
    let traj = serde_json::json!({
        "environment": "aci",
        "trajectory": vec![step; 1000],
        "history": [],
        "info": {"exit_status": "submitted", "submission": "diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n@@ -1 +1 @@\n-a\n+b\n"}
    });
    std::fs::write(
        run.join(id).join(format!("{id}.traj")),
        serde_json::to_vec(&traj).unwrap(),
    )
    .unwrap();
    let failing: Vec<String> = (0..200)
        .map(|n| format!("tests/test_big.py::TestBig::test_{n}"))
        .collect();
    let passing: Vec<String> = (0..5000)
        .map(|n| format!("tests/test_big.py::TestBig::test_ok_{n}"))
        .collect();
    let eval = root.join("eval").join(id);
    std::fs::create_dir_all(&eval).unwrap();
    let report = serde_json::json!({id: {
        "patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true,
        "resolved": false,
        "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": failing},
                         "PASS_TO_PASS": {"success": passing, "failure": []}},
        "cause": {"kind": "tests_failed", "infrastructure": false,
                  "summary": "200 FAIL_TO_PASS tests failed", "names": failing}
    }});
    std::fs::write(eval.join("report.json"), report.to_string()).unwrap();
    let mut log =
        std::io::BufWriter::new(std::fs::File::create(eval.join("test_output.txt")).unwrap());
    for n in 0..5000 {
        writeln!(log, "tests/test_big.py::TestBig::test_ok_{n} PASSED").unwrap();
    }
    writeln!(log, "{} FAILURES {}", "=".repeat(30), "=".repeat(30)).unwrap();
    for n in 0..200 {
        writeln!(
            log,
            "{} TestBig.test_{n} {}",
            "_".repeat(30),
            "_".repeat(30)
        )
        .unwrap();
        for line in 0..100 {
            writeln!(log, "E       frame {line} of test {n}: {}", "y".repeat(150)).unwrap();
        }
    }
    for n in 0..200 {
        writeln!(
            log,
            "FAILED tests/test_big.py::TestBig::test_{n} - AssertionError"
        )
        .unwrap();
    }
    log.flush().unwrap();
    run
}

#[test]
fn a_long_review_stays_under_a_megabyte_served_and_exported() {
    let root = tempfile::tempdir().unwrap();
    let run = write_big_instance(root.path());
    let out = root.path().join("site");
    let status = Command::new(env!("CARGO_BIN_EXE_aci"))
        .arg("inspect")
        .arg(&run)
        .arg("--static")
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let page = std::fs::read_to_string(out.join("i/big__review-1.html")).unwrap();
    assert!(page.len() < 1_000_000, "{} bytes", page.len());
    // The first turns in full with line 450 marked, the failing tests with their lines, and
    // the table cut short.
    assert!(page.contains("<span class=\"mark\">450</span>"));
    assert!(page.contains("<h3>Failing tests (200)</h3>"));
    assert!(page.contains("and 150 more failing tests (in the table below)"));
    assert!(page.contains("and 4900 more passed tests, listed in the evaluation's report.json"));
    assert!(page.contains("<section class=\"turn bare\" id=\"t1000\">"));
    let server = Server::start(&run);
    let served = server.get("/i/big__review-1.html");
    assert_eq!(self::status(&served), "HTTP/1.1 200 OK");
    assert!(
        body(&served).len() < 1_000_000,
        "{} bytes",
        body(&served).len()
    );
}
