//! `aci inspect` in a real browser (Debian's headless chromium through chromedriver), over a
//! real ablation of two demo instances on the Docker daemon: the ablation page and its chart,
//! a lost instance side by side, the run page with its resolved marks, sorting and filtering, an
//! instance stepped through with the keys to the lint rejection and the patch, live updates
//! while a trajectory is rewritten, the same pages exported and opened from file://, and a
//! hostile trajectory that must run no script. Screenshots go to target/inspect-artifacts/.
//! Never skipped: without Docker, chromium or chromedriver the test fails and says what to
//! install.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;
use crate::webdriver;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use webdriver::Browser;

const IDS: [&str; 2] = ["demo__inicfg-1", "demo__moneyfmt-1"];
const HOSTILE_ID: &str = "hostile <img src=x onerror=window.__pwned=10>";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn artifacts() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root().join("target"), PathBuf::from)
        .join("inspect-artifacts")
}

/// The demo records for `IDS`, with `repo_path` made absolute.
fn instances_file(dir: &Path) -> PathBuf {
    let demo = root().join("tests/fixtures/demo");
    let text = std::fs::read_to_string(demo.join("instances.jsonl")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut record: Value = serde_json::from_str(line).unwrap();
        if !IDS.contains(&record["instance_id"].as_str().unwrap()) {
            continue;
        }
        let repo = demo.join(record["repo_path"].as_str().unwrap());
        record["repo_path"] = Value::String(repo.display().to_string());
        out.push_str(&serde_json::to_string(&record).unwrap());
        out.push('\n');
    }
    let path = dir.join("instances.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `aci inspect DIR` on a free port; stopped on drop.
struct Server {
    child: Child,
    url: String,
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
        let url = line.trim_end().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a trajectory the way aci does: a new file renamed over the old one.
fn write_atomic(path: &Path, value: &Value) {
    let temp = path.with_extension("traj.tmp");
    std::fs::write(&temp, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    std::fs::rename(temp, path).unwrap();
}

/// A trajectory whose every string is an attempt to run a script.
fn hostile_trajectory() -> Value {
    json!({
        "environment": "aci",
        "trajectory": [{
            "action": "echo '<script>document.title=\"pwned\";window.__pwned=1</script>'",
            "observation": "<script>document.title='pwned';window.__pwned=1</script>\n</textarea><img src=x onerror=\"window.__pwned=2\">\n<a href=\"javascript:window.__pwned=3\">click me</a>",
            "response": "x", "thought": "Try javascript:window.__pwned=3 or https://example.com/\"><script>window.__pwned=4</script>",
            "state": {"open_file": "\"><script>window.__pwned=5</script>", "working_dir": "/testbed"},
            "execution_time": 0.1
        }],
        "history": [
            {"role": "system", "content": "</textarea><script>window.__pwned=6</script>", "message_type": "system_prompt"},
            {"role": "user", "content": "task <script>window.__pwned=7</script>", "message_type": "instance"}
        ],
        "info": {
            "exit_status": "submitted<script>window.__pwned=8</script>",
            "submission": "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+<script>window.__pwned=9</script>\n",
            "model_stats": {"instance_cost": 0.0, "tokens_sent": 1, "tokens_received": 1, "api_calls": 1},
            "error": "<iframe src=\"javascript:window.__pwned=11\"></iframe>"
        }
    })
}

/// The rows of the run table: (id, exit status, resolved).
const ROWS: &str = "return Array.from(document.querySelectorAll('#runs tbody tr')).filter(r => !r.hidden)\
    .map(r => [r.cells[0].textContent, r.cells[1].textContent, r.cells[2].textContent]);";

async fn check_ablation_pages(browser: &Browser, base: &str, label: &str) {
    browser.goto(&format!("{base}index.html")).await;
    let chart = browser
        .eval(
            "return Array.from(document.querySelectorAll('svg.ablation-chart g.config title')).map(t => t.textContent);",
            json!([]),
        )
        .await;
    assert_eq!(
        chart,
        json!([
            "default (paper ACI (text)): 100.0% (2/2) · 95% CI 34.2–100.0%",
            "no-lint (paper ACI (text)): 50.0% (1/2) · 95% CI 9.5–90.5%"
        ])
    );
    browser
        .screenshot(&artifacts().join(format!("{label}-ablation.png")))
        .await;
    // The instance no-lint lost, side by side: the base rejected the broken edit, the variant
    // let it through.
    browser.click("a.pair").await;
    assert!(
        browser
            .url()
            .await
            .ends_with("compare/no-lint/demo__moneyfmt-1.html")
    );
    let rejections = browser
        .eval(
            "return Array.from(document.querySelectorAll('.side-by-side > div')).map(c => c.querySelectorAll('.verdict.rejected').length);",
            json!([]),
        )
        .await;
    assert_eq!(rejections, json!([1, 0]));
    browser
        .screenshot(&artifacts().join(format!("{label}-compare.png")))
        .await;
    browser
        .goto(&format!("{base}c/no-lint/r1/index.html"))
        .await;
    assert_eq!(
        browser.eval(ROWS, json!([])).await,
        json!([
            ["demo__inicfg-1", "submitted", "resolved"],
            ["demo__moneyfmt-1", "submitted", "unresolved"]
        ])
    );
}

/// Steps through the moneyfmt instance with the keys, from its run page at `run_url`.
async fn check_instance_keys(browser: &Browser, run_url: &str, label: &str) {
    browser.goto(run_url).await;
    browser.click("a[href$='demo__moneyfmt-1.html']").await;
    for _ in 0..5 {
        browser.press("j").await;
    }
    let current = browser
        .eval(
            "const t = document.querySelector('.turn.current'); const r = t.getBoundingClientRect();\
             return [t.id, t.querySelector('.verdict') && t.querySelector('.verdict').textContent,\
                     r.top >= 0 && r.top < window.innerHeight];",
            json!([]),
        )
        .await;
    assert_eq!(current[0], "t5");
    assert!(
        current[1]
            .as_str()
            .unwrap()
            .starts_with("Edit rejected by the lint gate: not applied")
    );
    assert!(
        current[1]
            .as_str()
            .unwrap()
            .contains("E999 SyntaxError: '(' was never closed")
    );
    assert_eq!(current[2], true, "the turn is scrolled into view");
    browser
        .screenshot(&artifacts().join(format!("{label}-instance-rejection.png")))
        .await;
    browser.press("j").await;
    let applied = browser
        .eval(
            "return document.querySelector('.turn.current .verdict').textContent;",
            json!([]),
        )
        .await;
    assert_eq!(applied, "Edit applied");
    browser.press("k").await;
    browser.press("k").await;
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('.turn.current').id;",
                json!([])
            )
            .await,
        "t4"
    );
    let patch = browser
        .eval(
            "return document.querySelector('pre.diff.patch').textContent;",
            json!([]),
        )
        .await;
    assert!(
        patch
            .as_str()
            .unwrap()
            .contains("diff --git a/moneyfmt/format.py b/moneyfmt/format.py")
    );
    assert!(patch.as_str().unwrap().contains("+    if grouping:"));
    let tests = browser
        .eval(
            "return Array.from(document.querySelectorAll('table.tests tbody tr')).map(r => r.cells[0].textContent + ' ' + r.cells[2].textContent);",
            json!([]),
        )
        .await;
    assert!(
        tests
            .as_array()
            .unwrap()
            .contains(&json!("FAIL_TO_PASS passed")),
        "{tests}"
    );
    browser.press("p").await;
    assert!(browser.url().await.ends_with("demo__inicfg-1.html"));
    browser.press("n").await;
    assert!(browser.url().await.ends_with("demo__moneyfmt-1.html"));
}

async fn check_hostile(browser: &Browser, url: &str, label: &str) {
    browser.goto(url).await;
    let title = browser.title().await;
    assert_eq!(title, HOSTILE_ID);
    let report = browser
        .eval(
            "return [typeof window.__pwned, document.body.innerText,\
                     document.querySelectorAll('img, iframe, a[href^=\"javascript\"]').length,\
                     document.querySelectorAll('script').length];",
            json!([]),
        )
        .await;
    assert_eq!(report[0], "undefined", "a script from the trajectory ran");
    let text = report[1].as_str().unwrap();
    for visible in [
        "<script>document.title='pwned';window.__pwned=1</script>",
        "</textarea><img src=x onerror=\"window.__pwned=2\">",
        "<a href=\"javascript:window.__pwned=3\">click me</a>",
        "Try javascript:window.__pwned=3",
        "<iframe src=\"javascript:window.__pwned=11\"></iframe>",
        HOSTILE_ID,
    ] {
        assert!(
            text.contains(visible),
            "{visible:?} is not shown as text in:\n{text}"
        );
    }
    assert_eq!(report[2], 0, "an element came out of the trajectory");
    assert_eq!(
        report[3], 2,
        "only the page's data block and its own script"
    );
    browser
        .screenshot(&artifacts().join(format!("{label}-hostile.png")))
        .await;
}

/// The outputs the pages are opened over, in one temporary directory.
struct Outputs {
    dir: tempfile::TempDir,
    /// `aci ablate` of the two instances, default against no-lint.
    ablation: PathBuf,
    /// The default configuration's batch and evaluation as the README lays them out.
    demo: PathBuf,
    /// A run of one trajectory full of script.
    hostile: PathBuf,
}

fn outputs() -> Outputs {
    let dir = tempfile::tempdir().unwrap();
    let ablation = dir.path().join("ablation");
    let output = Command::new(env!("CARGO_BIN_EXE_aci"))
        .current_dir(root())
        .args(["ablate", "--instances"])
        .arg(instances_file(dir.path()))
        .args([
            "--base",
            "configs/default.yaml",
            "--variant",
            "configs/ablations/no-lint.yaml",
            "--replay-dir",
            "tests/fixtures/demo/replays",
            "--workers",
            "2",
            "--output",
        ])
        .arg(&ablation)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let demo = dir.path().join("demo");
    copy_dir(&ablation.join("default/r1/run"), &demo.join("run"));
    copy_dir(&ablation.join("default/r1/eval"), &demo.join("eval"));
    let hostile = dir.path().join("hostile");
    std::fs::create_dir_all(hostile.join(HOSTILE_ID)).unwrap();
    write_atomic(
        &hostile.join(HOSTILE_ID).join(format!("{HOSTILE_ID}.traj")),
        &hostile_trajectory(),
    );
    Outputs {
        dir,
        ablation,
        demo,
        hostile,
    }
}

/// The batch's page: rows and resolved marks, filtering and sorting.
async fn check_run_page(browser: &Browser, url: &str) {
    browser.goto(url).await;
    assert_eq!(
        browser.eval(ROWS, json!([])).await,
        json!([
            ["demo__inicfg-1", "submitted", "resolved"],
            ["demo__moneyfmt-1", "submitted", "resolved"]
        ])
    );
    browser
        .screenshot(&artifacts().join("served-run.png"))
        .await;
    browser.type_into("#filter", "money").await;
    assert_eq!(
        browser
            .eval(ROWS, json!([]))
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        browser
            .eval(
                "return document.getElementById('shown').textContent;",
                json!([])
            )
            .await,
        "1"
    );
    browser.goto(&format!("{url}?q=")).await;
    browser.click("th[data-col='steps']").await;
    let order = browser
        .eval("return Array.from(document.querySelectorAll('#runs tbody tr')).map(r => r.cells[3].textContent);", json!([]))
        .await;
    let steps: Vec<u64> = order
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().parse().unwrap())
        .collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
}

/// A trajectory that appears and is rewritten shows up on the open pages by itself.
async fn check_live(browser: &Browser, url: &str, demo: &Path) {
    let finished: Value = serde_json::from_slice(
        &std::fs::read(demo.join("run/demo__moneyfmt-1/demo__moneyfmt-1.traj")).unwrap(),
    )
    .unwrap();
    let mut running = finished.clone();
    running["info"]["exit_status"] = Value::Null;
    running["trajectory"].as_array_mut().unwrap().truncate(2);
    let live = demo.join("run/demo__live-1/demo__live-1.traj");
    std::fs::create_dir_all(live.parent().unwrap()).unwrap();
    browser.goto(url).await;
    write_atomic(&live, &running);
    let row = "const r = Array.from(document.querySelectorAll('#runs tbody tr')).find(r => r.cells[0].textContent === 'demo__live-1');\
               return !!r && r.cells[1].textContent === arguments[0] && r.cells[3].textContent === arguments[1];";
    browser
        .wait_for(
            row,
            json!(["running", "2"]),
            "the new instance on the run page",
        )
        .await;
    browser.click("a[href$='demo__live-1.html']").await;
    let turns = "return document.querySelectorAll('.turn').length === arguments[0];";
    browser
        .wait_for(turns, json!([2]), "the running instance's two turns")
        .await;
    write_atomic(&live, &finished);
    browser
        .wait_for(turns, json!([9]), "the rewritten trajectory's nine turns")
        .await;
    browser.goto(url).await;
    browser
        .wait_for(
            row,
            json!(["submitted", "9"]),
            "the finished instance on the run page",
        )
        .await;
    browser
        .screenshot(&artifacts().join("served-run-live.png"))
        .await;
}

/// The ablation exported and opened from file://: the same content, the script working.
async fn check_static(browser: &Browser, outputs: &Outputs) {
    let site = outputs.dir.path().join("site");
    let exported = Command::new(env!("CARGO_BIN_EXE_aci"))
        .arg("inspect")
        .arg(&outputs.ablation)
        .arg("--static")
        .arg(&site)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{exported:?}");
    let base = format!("file://{}/", site.display());
    check_ablation_pages(browser, &base, "static").await;
    browser
        .goto(&format!("{base}c/default/r1/index.html"))
        .await;
    assert_eq!(
        browser.eval(ROWS, json!([])).await,
        json!([
            ["demo__inicfg-1", "submitted", "resolved"],
            ["demo__moneyfmt-1", "submitted", "resolved"]
        ])
    );
    browser
        .screenshot(&artifacts().join("static-run.png"))
        .await;
    check_instance_keys(browser, &format!("{base}c/default/r1/index.html"), "static").await;
}

/// An instance of 250 turns (the demo's turns repeated): every turn is on the page and the
/// keys still work. The load timings are recorded beside the screenshots, not judged here
/// (benches/inspect.rs measures the rendering).
async fn check_long_instance(browser: &Browser, outputs: &Outputs) {
    let long = outputs.dir.path().join("long/demo__long-1");
    std::fs::create_dir_all(&long).unwrap();
    let source = outputs
        .demo
        .join("run/demo__moneyfmt-1/demo__moneyfmt-1.traj");
    let mut traj: Value = serde_json::from_slice(&std::fs::read(source).unwrap()).unwrap();
    let demo_turns = traj["trajectory"].as_array().unwrap().clone();
    traj["trajectory"] = Value::Array(demo_turns.iter().cycle().take(250).cloned().collect());
    write_atomic(&long.join("demo__long-1.traj"), &traj);
    let server = Server::start(long.parent().unwrap());
    browser
        .goto(&format!("{}i/demo__long-1.html", server.url))
        .await;
    assert_eq!(
        browser
            .eval(
                "return document.querySelectorAll('.turn').length;",
                json!([])
            )
            .await,
        250
    );
    for _ in 0..3 {
        browser.press("j").await;
    }
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('.turn.current').id;",
                json!([])
            )
            .await,
        "t3"
    );
    let timing = browser
        .eval(
            "const n = performance.getEntriesByType('navigation')[0];\
             return {bytes: n.transferSize, dom_content_loaded_ms: n.domContentLoadedEventEnd, load_ms: n.loadEventEnd};",
            json!([]),
        )
        .await;
    std::fs::write(
        artifacts().join("long-instance-timing.json"),
        timing.to_string(),
    )
    .unwrap();
    browser
        .screenshot(&artifacts().join("served-long-instance.png"))
        .await;
}

/// A long observation shows its first and last lines; its link opens the full text: in place
/// on the served page, as the text's own file from the exported site.
async fn check_full_text(browser: &Browser, outputs: &Outputs) {
    let dir = outputs.dir.path().join("fold");
    std::fs::create_dir_all(dir.join("demo__fold-1")).unwrap();
    let full: String = (1..=300).map(|i| format!("output line {i}\n")).collect();
    let traj = json!({
        "environment": "aci",
        "trajectory": [{"action": "python long.py", "observation": full, "thought": "", "response": ""}],
        "info": {"exit_status": "submitted"}
    });
    write_atomic(&dir.join("demo__fold-1/demo__fold-1.traj"), &traj);
    let observation = "return Array.from(document.querySelectorAll('#t1 .part.observation pre')).map(p => p.textContent);";
    let server = Server::start(&dir);
    browser
        .goto(&format!("{}i/demo__fold-1.html", server.url))
        .await;
    let folded = browser.eval(observation, json!([])).await;
    let first: String = (1..=12).map(|i| format!("output line {i}\n")).collect();
    let last: String = (297..=300).map(|i| format!("output line {i}\n")).collect();
    assert_eq!(folded, json!([first.trim_end(), last]));
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('#t1 a.full-text').textContent;",
                json!([])
            )
            .await,
        format!("show all 301 lines ({} characters)", full.len())
    );
    browser.click("#t1 a.full-text").await;
    browser
        .wait_for(
            "const t = Array.from(document.querySelectorAll('#t1 .part.observation pre'))\
             .map(p => p.textContent); return t.length === 1 && t[0] === arguments[0];",
            json!([full]),
            "the full observation in place of its ends",
        )
        .await;
    assert!(browser.url().await.ends_with("i/demo__fold-1.html"));
    browser
        .screenshot(&artifacts().join("served-full-text.png"))
        .await;
    let site = outputs.dir.path().join("fold-site");
    assert!(
        Command::new(env!("CARGO_BIN_EXE_aci"))
            .arg("inspect")
            .arg(&dir)
            .arg("--static")
            .arg(&site)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success()
    );
    browser
        .goto(&format!("file://{}/i/demo__fold-1.html", site.display()))
        .await;
    browser.click("#t1 a.full-text").await;
    assert!(
        browser
            .url()
            .await
            .ends_with("i/demo__fold-1/t1-observation.txt")
    );
    let text = browser
        .eval("return document.body.textContent;", json!([]))
        .await;
    assert_eq!(text, full);
}

/// The hostile trajectory, served and exported: no script runs and its text is shown.
async fn check_hostile_both(browser: &Browser, outputs: &Outputs) {
    let server = Server::start(&outputs.hostile);
    browser.goto(&server.url).await;
    let cell = browser
        .eval(
            "return document.querySelector('#runs tbody td a').textContent;",
            json!([]),
        )
        .await;
    assert_eq!(cell, HOSTILE_ID);
    browser.click("#runs tbody td a").await;
    let url = browser.url().await;
    check_hostile(browser, &url, "served").await;
    let site = outputs.dir.path().join("hostile-site");
    assert!(
        Command::new(env!("CARGO_BIN_EXE_aci"))
            .arg("inspect")
            .arg(&outputs.hostile)
            .arg("--static")
            .arg(&site)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success()
    );
    let page = std::fs::read_dir(site.join("i"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    check_hostile(browser, &format!("file://{}", page.display()), "static").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_work_in_a_real_browser_served_and_from_file() {
    support::docker().await;
    let outputs = outputs();
    let browser = Browser::start().await;
    let ablation_server = Server::start(&outputs.ablation);
    check_ablation_pages(&browser, &ablation_server.url, "served").await;
    let run_server = Server::start(&outputs.demo.join("run"));
    check_run_page(&browser, &run_server.url).await;
    check_instance_keys(&browser, &run_server.url, "served").await;
    check_live(&browser, &run_server.url, &outputs.demo).await;
    check_static(&browser, &outputs).await;
    check_long_instance(&browser, &outputs).await;
    check_full_text(&browser, &outputs).await;
    check_hostile_both(&browser, &outputs).await;
}

const REVIEW_ID: &str = "demo__review-1";
const FAILING: &str = "tests/test_fmt.py::TestFmt::test_grouping";

/// A batch of one instance and its evaluation, written by hand: a `goto 450` whose window is
/// 100 lines, and an evaluation `resolved` or not (the failing test with its section of the
/// log).
fn review_run(root: &Path, name: &str, resolved: bool) -> PathBuf {
    let run = root.join(name).join("run");
    std::fs::create_dir_all(run.join(REVIEW_ID)).unwrap();
    let window: String = (401..=500)
        .map(|n| format!("{n}:    total_{n} = step({n})\n"))
        .collect();
    let steps = if resolved { 3 } else { 1 };
    let traj = json!({
        "environment": "aci",
        "trajectory": vec![json!({
            "action": "goto 450",
            "observation": format!("[File: /repo/fmt.py (900 lines total)]\n(400 more lines above)\n{window}(400 more lines below)"),
            "thought": "The grouping is computed here.",
            "response": "", "state": {"open_file": "/repo/fmt.py", "working_dir": "/repo"}
        }); steps],
        "info": {"exit_status": "submitted", "model_stats": {"instance_cost": 0.25, "api_calls": steps}}
    });
    write_atomic(
        &run.join(REVIEW_ID).join(format!("{REVIEW_ID}.traj")),
        &traj,
    );
    let eval = root.join(name).join("eval").join(REVIEW_ID);
    std::fs::create_dir_all(&eval).unwrap();
    let (status, cause) = if resolved {
        (
            json!({"FAIL_TO_PASS": {"success": [FAILING], "failure": []}}),
            Value::Null,
        )
    } else {
        (
            json!({"FAIL_TO_PASS": {"success": [], "failure": [FAILING]}}),
            json!({"kind": "tests_failed", "infrastructure": false,
                   "summary": "1 FAIL_TO_PASS test failed", "names": [FAILING]}),
        )
    };
    let mut report = json!({"patch_is_None": false, "patch_exists": true,
        "patch_successfully_applied": true, "resolved": resolved, "tests_status": status});
    if !cause.is_null() {
        report["cause"] = cause;
    }
    std::fs::write(
        eval.join("report.json"),
        json!({ REVIEW_ID: report }).to_string(),
    )
    .unwrap();
    let mut log = String::from(">>>>> Start Test Output\n");
    for n in 0..60 {
        log.push_str(&format!("tests/test_fmt.py::test_other_{n} PASSED\n"));
    }
    log.push_str(if resolved {
        "tests/test_fmt.py::TestFmt::test_grouping PASSED\n"
    } else {
        "===== FAILURES =====\n_____ TestFmt.test_grouping _____\n>       assert fmt(1000) == '1,000'\nE       AssertionError: assert '1000' == '1,000'\n===== short test summary info =====\nFAILED tests/test_fmt.py::TestFmt::test_grouping - AssertionError\n"
    });
    std::fs::write(eval.join("test_output.txt"), log).unwrap();
    run
}

/// Two runs of one instance, exported side by side and opened from file://: the window folded
/// around the marked line 450, the evaluation's cause and failing test with its lines of the
/// log, the comparison table, gained and lost, the instance's runs next to each other, and the
/// plots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_folds_marks_summarises_compares_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let before = review_run(dir.path(), "before", false);
    let after = review_run(dir.path(), "after", true);
    let site = dir.path().join("site");
    let exported = Command::new(env!("CARGO_BIN_EXE_aci"))
        .arg("inspect")
        .arg(&before)
        .arg(&after)
        .arg("--static")
        .arg(&site)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{exported:?}");
    std::fs::create_dir_all(artifacts()).unwrap();
    let browser = Browser::start().await;
    let base = format!("file://{}/", site.display());
    browser.goto(&format!("{base}index.html")).await;
    let table = browser
        .eval(
            "return Array.from(document.querySelectorAll('#compare tr')).map(r => Array.from(r.cells).map(c => c.textContent));",
            json!([]),
        )
        .await;
    assert_eq!(
        table,
        json!([
            ["", "before", "after"],
            ["instances", "1", "1"],
            ["resolved", "0 / 1 (0.0%)", "1 / 1 (100.0%)"],
            ["steps", "1", "3"],
            ["cost", "$0.25", "$0.25"],
            ["exit status", "submitted: 1", "submitted: 1"]
        ])
    );
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('p.spread').textContent;",
                json!([])
            )
            .await,
        "resolve rate over the runs: 0.0%–100.0% (mean 50.0%); pooled: 50.0% · 95% Wilson interval 9.5%–90.5%"
    );
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('#gained-lost td.gained').textContent;",
                json!([])
            )
            .await,
        format!("1 {REVIEW_ID}")
    );
    let plots = browser
        .eval(
            "return Array.from(document.querySelectorAll('svg.plot')).map(s => [s.getAttribute('class'), s.getBoundingClientRect().width > 100, s.querySelectorAll('title').length]);",
            json!([]),
        )
        .await;
    let expected_plots: Vec<Value> = ["steps", "cost", "wall", "resolved-steps", "exits"]
        .iter()
        .map(|class| json!([format!("plot {class}"), true, 1]))
        .collect();
    assert_eq!(
        plots,
        Value::Array(
            expected_plots
                .iter()
                .chain(&expected_plots)
                .cloned()
                .collect()
        )
    );
    assert_eq!(
        browser
            .eval("return document.querySelector('svg.plot.resolved-steps circle title').textContent;", json!([]))
            .await,
        format!("{REVIEW_ID}: 1 steps, unresolved")
    );
    browser
        .screenshot(&artifacts().join("review-compare.png"))
        .await;
    browser.click("#gained-lost a.pair").await;
    assert!(
        browser
            .url()
            .await
            .ends_with(&format!("across/{REVIEW_ID}.html"))
    );
    let columns = browser
        .eval(
            "return Array.from(document.querySelectorAll('.side-by-side > div')).map(c => [c.querySelector('h2').textContent, c.querySelectorAll('.turn').length]);",
            json!([]),
        )
        .await;
    assert_eq!(columns, json!([["before", 1], ["after", 3]]));
    browser
        .screenshot(&artifacts().join("review-across.png"))
        .await;
    // The run `before`'s instance: the window folded around line 450, which is marked.
    browser
        .goto(&format!("{base}c/before/r1/i/{REVIEW_ID}.html"))
        .await;
    let window = browser
        .eval(
            "const t = document.getElementById('t1');\
             return [Array.from(t.querySelectorAll('.gutter .mark')).map(m => m.textContent),\
                     Array.from(t.querySelectorAll('details.fold.lines')).map(d => [d.open, d.querySelector('summary').textContent]),\
                     Array.from(t.querySelectorAll('.code')).filter(c => c.checkVisibility()).map(c => c.querySelector('.gutter').textContent.trim().split('\\n').length)];",
            json!([]),
        )
        .await;
    assert_eq!(
        window,
        json!([
            ["450"],
            [
                [false, "44 more lines (401–444)"],
                [false, "45 more lines (456–500)"]
            ],
            [11]
        ])
    );
    let mark = browser
        .eval(
            "const r = document.querySelector('#t1 .src .mark').getBoundingClientRect(); return [document.querySelector('#t1 .src .mark').textContent, r.height > 0];",
            json!([]),
        )
        .await;
    assert_eq!(mark, json!(["    total_450 = step(450)", true]));
    browser
        .screenshot(&artifacts().join("review-instance-folded.png"))
        .await;
    browser.click("#t1 details.fold.lines summary").await;
    assert_eq!(
        browser
            .eval(
                "return document.querySelector('#t1 details.fold.lines').open;",
                json!([])
            )
            .await,
        true
    );
    // The evaluation: the cause first, then the failing test with its own lines of the log.
    let evaluation = browser
        .eval(
            "return [document.querySelector('.cause').textContent,\
                     Array.from(document.querySelectorAll('.failing-test')).map(d => [d.open, d.querySelector('summary').textContent, d.querySelector('pre').textContent])];",
            json!([]),
        )
        .await;
    assert_eq!(
        evaluation,
        json!([
            format!("cause: tests_failed 1 FAIL_TO_PASS test failed{FAILING}"),
            [[
                true,
                format!("{FAILING} (4 lines)"),
                format!(
                    "_____ TestFmt.test_grouping _____\n>       assert fmt(1000) == '1,000'\nE       AssertionError: assert '1000' == '1,000'\nFAILED {FAILING} - AssertionError"
                )
            ]]
        ])
    );
    let order = browser
        .eval(
            "const h = document.body.innerHTML; return [h.indexOf('class=\"cause\"') < h.indexOf('class=\"failing\"'), h.indexOf('class=\"failing\"') < h.indexOf('test output (')];",
            json!([]),
        )
        .await;
    assert_eq!(order, json!([true, true]));
    browser
        .eval(
            "document.querySelector('.cause').scrollIntoView(); return null;",
            json!([]),
        )
        .await;
    browser
        .screenshot(&artifacts().join("review-evaluation.png"))
        .await;
}
