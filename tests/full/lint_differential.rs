//! The differential test of issue 4: flake8 with SWE-agent v0.7's selection, run live in the
//! Python image over every Python case of the lint corpus, filtered the v0.7 way, must accept
//! or reject exactly where aci's built-in gate does. A case where they disagree must carry a
//! `notes.txt` saying why (a language feature newer than the image's Python 3.11, or a place
//! where aci is deliberately more conservative than pyflakes). Real daemon, never skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aci::lint::{EditRange, GateOptions, Language, filter_new, gate, parse_flake8};
use aci::sandbox::{RepoSource, Sandbox};

const FLAKE8: &str = "flake8 --isolated --select=F821,F822,F831,E111,E112,E113,E999,E902";

fn python_cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/corpus");
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("before.py").exists())
        .collect();
    dirs.sort();
    dirs
}

fn edit_range(dir: &Path) -> EditRange {
    let n: Vec<usize> = fs::read_to_string(dir.join("edit.txt"))
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    EditRange {
        start: n[0],
        end: n[1],
        replacement_lines: n[2],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flake8_in_the_python_image_accepts_and_rejects_where_the_gate_does() {
    let runtime = support::docker().await;
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lint/corpus");
    let mut spec = support::spec("lint-differential", None);
    spec.image = "aci-python:bookworm".to_owned();
    spec.repo = Some(RepoSource {
        path: corpus,
        commit: None,
    });
    let mut sandbox = runtime.start(&spec).await.unwrap();
    // One flake8 run over every file; `package_init` cases are linted under the name
    // __init__.py, as pyflakes treats those differently.
    let script = format!(
        "for d in */; do d=${{d%/}}; [ -f $d/before.py ] || continue; \
         if grep -q package_init=true $d/options.txt 2>/dev/null; then \
         mkdir -p /tmp/c/$d/b /tmp/c/$d/a; cp $d/before.py /tmp/c/$d/b/__init__.py; cp $d/after.py /tmp/c/$d/a/__init__.py; \
         else mkdir -p /tmp/c/$d; cp $d/before.py /tmp/c/$d/before.py; cp $d/after.py /tmp/c/$d/after.py; fi; done; \
         cd /tmp/c && {FLAKE8} . ; true"
    );
    let out = sandbox
        .run(&script, Duration::from_secs(300))
        .await
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut by_file: BTreeMap<String, String> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let file = line
            .split(':')
            .next()
            .unwrap()
            .trim_start_matches("./")
            .to_owned();
        let entry = by_file.entry(file).or_default();
        entry.push_str(line);
        entry.push('\n');
    }
    sandbox.shutdown().await.unwrap();

    let (mut agree, mut documented, mut undocumented) = (0, 0, Vec::new());
    for dir in python_cases() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let options_text = fs::read_to_string(dir.join("options.txt")).unwrap_or_default();
        let package_init = options_text.contains("package_init=true");
        let filter = !options_text.contains("filter_preexisting=false");
        let (before_key, after_key) = if package_init {
            (
                format!("{name}/b/__init__.py"),
                format!("{name}/a/__init__.py"),
            )
        } else {
            (format!("{name}/before.py"), format!("{name}/after.py"))
        };
        let edited = edit_range(&dir);
        let flake8_before = parse_flake8(by_file.get(&before_key).map_or("", String::as_str));
        let flake8_after = parse_flake8(by_file.get(&after_key).map_or("", String::as_str));
        let flake8_new = if filter {
            filter_new(&flake8_before, flake8_after, &edited)
        } else {
            flake8_after
        };
        let options = GateOptions {
            filter_preexisting: filter,
            package_init,
        };
        let verdict = gate(
            Language::Python,
            &fs::read(dir.join("before.py")).unwrap(),
            &fs::read(dir.join("after.py")).unwrap(),
            &edited,
            &options,
        );
        let same_decision = flake8_new.is_empty() == verdict.new_errors.is_empty();
        match (same_decision, dir.join("notes.txt").exists()) {
            (true, _) => agree += 1,
            (false, true) => documented += 1,
            (false, false) => undocumented.push(format!(
                "{name}: flake8 {:?} vs aci {:?}",
                flake8_new.iter().map(|e| e.problem()).collect::<Vec<_>>(),
                verdict
                    .new_errors
                    .iter()
                    .map(|e| e.problem())
                    .collect::<Vec<_>>()
            )),
        }
    }
    eprintln!("flake8 differential: {agree} agree, {documented} documented disagreements");
    assert!(
        undocumented.is_empty(),
        "undocumented disagreements:\n{}",
        undocumented.join("\n")
    );
    assert!(agree >= 100, "only {agree} cases agree");
}
