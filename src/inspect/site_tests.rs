//! Tests for the site: routes, the static export's links, an ablation's pages, live pages.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::ablate::table::Row;
use crate::inspect::source::tests::{write_report, write_summary, write_traj};

/// A directory name can hold markup (but no `/`).
const HOSTILE_ID: &str = "<img src=x onerror=alert(1)>";

/// A batch with its evaluation next to it, one instance with a hostile id.
fn batch(root: &Path) -> PathBuf {
    let run = root.join("run");
    for id in ["a", "b", HOSTILE_ID] {
        write_traj(&run, id, Some("submitted"), 2);
    }
    write_report(&root.join("eval"), "a", json!({"resolved": true}));
    write_summary(&root.join("eval"), &["a"], &["b"], &[]);
    run
}

fn ablation_row(config: &str, lost: &[&str]) -> Row {
    Row {
        config: config.to_owned(),
        protocol: Default::default(),
        instances: 2,
        resolved: 2.0 - lost.len() as f64,
        resolved_pct: 50.0,
        resolved_pct_spread: 0.0,
        ci95_pct: (9.5, 90.5),
        delta_pct: 0.0,
        gained: Vec::new(),
        lost: lost.iter().map(|s| (*s).to_owned()).collect(),
        mcnemar_p: 1.0,
        mean_steps: 2.0,
        mean_observation_chars: 4.0,
        lint_rejections: 0,
        format_errors: 0,
        exits: BTreeMap::from([("submitted".to_owned(), 2)]),
        cost: 0.0,
        wall_seconds: 10.0,
    }
}

fn ablation(root: &Path) {
    for config in ["default", "no-lint"] {
        let dir = root.join(config).join("r1");
        write_traj(&dir.join("run"), "a", Some("submitted"), 2);
        write_traj(&dir.join("run"), "b", Some("submitted"), 3);
        write_summary(&dir.join("eval"), &["a", "b"], &[], &[]);
    }
    write_summary(&root.join("no-lint/r1/eval"), &["a"], &["b"], &[]);
    let table = Table {
        base: "default".to_owned(),
        rows: vec![
            ablation_row("default", &[]),
            ablation_row("no-lint", &["b"]),
        ],
    };
    std::fs::write(
        root.join("ablation.json"),
        serde_json::to_vec(&table).unwrap(),
    )
    .unwrap();
}

/// Every `href` of a page that points at another page of the site.
fn page_links(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|href| href.ends_with(".html") && !href.starts_with("http"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn routes_and_page_paths_round_trip() {
    let root = tempfile::tempdir().unwrap();
    let site = Site::open(&batch(root.path()), None).unwrap();
    for route in [
        Route::Root,
        Route::Instance(RunRef::Root, HOSTILE_ID.to_owned()),
        Route::Run(RunRef::Config {
            name: "no lint".to_owned(),
            repeat: 2,
        }),
        Route::Instance(
            RunRef::Config {
                name: "x".to_owned(),
                repeat: 1,
            },
            "a/b".to_owned(),
        ),
        Route::Compare {
            variant: "no-lint".to_owned(),
            id: "a".to_owned(),
        },
    ] {
        assert_eq!(
            site.route(&Site::path_of(&route)),
            Some(route.clone()),
            "{route:?}"
        );
    }
    assert_eq!(site.route(""), Some(Route::Root));
    assert_eq!(
        site.route("c/x/r1/"),
        Some(Route::Run(RunRef::Config {
            name: "x".to_owned(),
            repeat: 1
        }))
    );
    for bad in [
        "i/a",
        "i/~zz.html",
        "c/x/r0/index.html",
        "c/x/1/index.html",
        "x/y.html",
        "i/a/b.html",
    ] {
        assert_eq!(site.route(bad), None, "{bad}");
    }
    // A well-formed path of an instance the run does not list is no page.
    assert!(
        site.render(&Route::Instance(RunRef::Root, "zz".to_owned()), Mode::Live)
            .is_none()
    );
    assert!(
        site.render(
            &Route::Instance(RunRef::Root, "../run/a".to_owned()),
            Mode::Live
        )
        .is_none()
    );
}

#[test]
fn the_static_site_has_every_page_and_every_link_resolves() {
    let root = tempfile::tempdir().unwrap();
    let site = Site::open(&batch(root.path()), None).unwrap();
    let out = root.path().join("site");
    assert_eq!(site.export(&out).unwrap(), 4);
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("<span class=\"badge resolved\">resolved</span>"));
    assert!(index.contains("<span class=\"badge unresolved\">unresolved</span>"));
    assert!(!index.contains("/_version/"), "a static page does not poll");
    assert!(!index.contains("<img"), "{index}");
    assert!(index.contains("&lt;img src=x onerror=alert(1)&gt;</a>"));
    let instance = std::fs::read_to_string(out.join("i/a.html")).unwrap();
    assert!(!instance.contains("/raw/"), "no raw links without a server");
    for page in [
        "index.html",
        "i/a.html",
        "i/b.html",
        "i/~3Cimg~20src~3Dx~20onerror~3Dalert~281~29~3E.html",
    ] {
        let html = std::fs::read_to_string(out.join(page)).unwrap();
        let base = out.join(page);
        for link in page_links(&html) {
            let target = base.parent().unwrap().join(&link);
            assert!(target.is_file(), "{page} links to {link}, which is missing");
        }
    }
}

#[test]
fn an_ablation_links_its_runs_and_each_lost_instance_side_by_side() {
    let root = tempfile::tempdir().unwrap();
    ablation(root.path());
    let site = Site::open(root.path(), None).unwrap();
    let out = root.path().join("site");
    let pages = site.export(&out).unwrap();
    // index, 2 runs with 2 instances each, 1 comparison.
    assert_eq!(pages, 1 + 2 * 3 + 1);
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("class=\"ablation-chart\""));
    assert!(index.contains("<a class=\"pair\" href=\"compare/no-lint/b.html\">b</a>"));
    let compare = std::fs::read_to_string(out.join("compare/no-lint/b.html")).unwrap();
    assert!(
        compare.contains("<h1>b: default vs no-lint</h1>"),
        "{compare}"
    );
    assert!(
        compare.contains("<h2><a href=\"../../c/default/r1/i/b.html\">default</a></h2>"),
        "{compare}"
    );
    assert!(compare.contains("<h2><a href=\"../../c/no-lint/r1/i/b.html\">no-lint</a></h2>"));
    assert!(compare.contains("id=\"a-t1\"") && compare.contains("id=\"b-t3\""));
    let run = std::fs::read_to_string(out.join("c/no-lint/r1/index.html")).unwrap();
    assert!(run.contains("<span class=\"badge unresolved\">unresolved</span>"));
    for page in [
        "index.html",
        "compare/no-lint/b.html",
        "c/no-lint/r1/index.html",
        "c/default/r1/i/a.html",
    ] {
        let html = std::fs::read_to_string(out.join(page)).unwrap();
        for link in page_links(&html) {
            let target = out.join(page).parent().unwrap().join(&link);
            assert!(target.is_file(), "{page} links to {link}, which is missing");
        }
    }
}

#[test]
fn a_served_page_polls_its_version_and_links_raw_files() {
    let root = tempfile::tempdir().unwrap();
    let run = batch(root.path());
    let site = Site::open(&run, None).unwrap();
    let route = Route::Instance(RunRef::Root, "a".to_owned());
    let rendered = site.render(&route, Mode::Live).unwrap();
    assert!(rendered.html.contains("\"live\":\"/_version/i/a.html\""));
    assert!(
        rendered
            .html
            .contains(&format!("\"version\":\"{}\"", rendered.version))
    );
    assert!(
        rendered
            .html
            .contains("<a href=\"/raw/a/a.traj\">trajectory</a>"),
        "{}",
        rendered.html
    );
    assert!(
        rendered
            .html
            .contains("<a href=\"/raw-eval/a/report.json\">report.json</a>")
    );
    assert_eq!(site.version(&route), Some(rendered.version.clone()));
    write_traj(&run, "a", Some("submitted"), 5);
    assert_ne!(site.version(&route), Some(rendered.version));
}

/// A mini-swe-agent 1.x trajectory whose one observation is 300 lines long.
fn long_mini_1(run: &Path) -> String {
    let output: String = (1..=300).map(|n| format!("line {n}\n")).collect();
    let observation = format!("<returncode>0</returncode>\n<output>\n{output}</output>");
    let traj = json!({
        "info": {"exit_status": "LimitsExceeded", "submission": "", "model_stats": {"instance_cost": 0.5, "api_calls": 1}},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "THOUGHT: count.\n\n```bash\nseq 300\n```"},
            {"role": "user", "content": observation}
        ],
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "long"
    });
    std::fs::create_dir_all(run.join("long")).unwrap();
    std::fs::write(
        run.join("long/long.traj.json"),
        serde_json::to_vec_pretty(&traj).unwrap(),
    )
    .unwrap();
    observation
}

#[test]
fn a_mini_swe_agent_batch_renders_its_turns_and_counts() {
    use crate::inspect::source::tests::{copy_dir, mini_fixture};
    let thought = |text: &str| {
        format!(
            "<div class=\"part thought\"><div class=\"label\">thought</div><pre>{text}</pre></div>"
        )
    };
    let action = |text: &str| {
        format!(
            "<div class=\"part action\"><div class=\"label\">action</div><pre>{text}</pre></div>"
        )
    };
    let observation = |text: &str| {
        format!(
            "<div class=\"part observation\"><div class=\"label\">observation</div><pre class=\"obs\">{text}</pre></div>"
        )
    };
    let cat = "&lt;returncode&gt;0&lt;/returncode&gt;\n&lt;output&gt;\ndef add(a, b):\n    return a - b\n&lt;/output&gt;";
    let fixed = "&lt;returncode&gt;0&lt;/returncode&gt;\n&lt;output&gt;\ndef add(a, b):\n    return a + b\n&lt;/output&gt;";
    let fix = "sed -i &#39;s/a - b/a + b/&#39; calc.py &amp;&amp; cat calc.py";
    for (format, turns, steps_mean, cost) in [
        ("mini-1", 4, "2.5", "$1.25"),
        ("mini-1.1", 5, "3.5", "$1.25"),
    ] {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("run");
        copy_dir(&mini_fixture(format), &run);
        write_report(
            &root.path().join("eval"),
            "demo__calc-1",
            json!({"resolved": true}),
        );
        let site = Site::open(&run, None).unwrap();
        let out = root.path().join("site");
        assert_eq!(site.export(&out).unwrap(), 3, "{format}");
        let index = std::fs::read_to_string(out.join("index.html")).unwrap();
        for total in [
            "<div><b>2</b>instances</div>".to_owned(),
            "<div><b>1 (50.0%)</b>resolved (1 evaluated)</div>".to_owned(),
            "<div><b><a href=\"?q=exit:LimitsExceeded\">LimitsExceeded</a>: 1, <a href=\"?q=exit:Submitted\">Submitted</a>: 1</b>exit statuses</div>".to_owned(),
            format!("<div><b>{cost}</b>cost</div>"),
            format!("<div><b>{steps_mean}</b>steps (mean)</div>"),
            "<div><b>1</b>format errors</div>".to_owned(),
        ] {
            assert!(index.contains(&total), "{format}: {total}");
        }
        assert!(index.contains(&format!(
            "<tr><td class=\"id\"><a href=\"i/demo__calc-1.html\">demo__calc-1</a></td><td><span class=\"badge submitted\">Submitted</span></td><td data-v=\"3\"><span class=\"badge resolved\">resolved</span></td><td class=\"num\" data-v=\"{turns}\">{turns}</td><td class=\"num\" data-v=\"1\">$1.00</td>"
        )), "{format}");
        let instance = std::fs::read_to_string(out.join("i/demo__calc-1.html")).unwrap();
        assert!(
            instance.contains(&format!("<h2>Turns ({turns})</h2>")),
            "{format}"
        );
        assert!(instance.contains("<div><b>1</b>format errors</div>"));
        assert!(instance.contains("<pre class=\"obs\">Fix add in calc.py: add subtracts</pre>"));
        let (first, fix_turn) = if format == "mini-1" {
            (thought("THOUGHT: I read the file first."), 3)
        } else {
            (thought("I read the file and list the directory."), 4)
        };
        assert!(
            instance.contains(&format!(
                "{first}{}{}</section>",
                action("cat calc.py"),
                observation(cat)
            )),
            "{format}"
        );
        let fix_thought = if format == "mini-1" {
            thought("THOUGHT: The sign is wrong; I fix it.")
        } else {
            thought("The sign is wrong; I fix it.")
        };
        assert!(instance.contains(&format!(
            "<section class=\"turn\" id=\"t{fix_turn}\"><div class=\"head\"><span class=\"n\">Turn {fix_turn}</span><span class=\"meta\"></span></div>{fix_thought}{}{}</section>",
            action(fix),
            observation(fixed)
        )), "{format}");
        assert!(
            instance.contains(&format!(
                "<section class=\"turn reask\" id=\"t{}\">",
                fix_turn - 1
            )),
            "{format}"
        );
        assert!(instance.contains("<span class=\"l add\"><span class=\"o\"></span><span class=\"n\">2</span>+    return a + b</span>"));
    }
    // A long observation shows its ends, its full text one link away, written whole.
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    let full = long_mini_1(&run);
    let site = Site::open(&run, None).unwrap();
    let out = root.path().join("site");
    site.export(&out).unwrap();
    let page = std::fs::read_to_string(out.join("i/long.html")).unwrap();
    assert!(page.contains(&action("seq 300")), "{page}");
    assert!(page.contains("href=\"long/t1-observation.txt\""), "{page}");
    assert!(!page.contains("line 150\n"), "the middle is folded");
    assert_eq!(
        std::fs::read_to_string(out.join("i/long/t1-observation.txt")).unwrap(),
        full
    );
}
