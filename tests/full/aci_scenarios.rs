//! ACI scenarios: every `tests/fixtures/aci/NNN_name/` runs on the local sandbox and in Docker,
//! and must give exactly the expected observations and files on both.
//!
//! A scenario is:
//! - `input/`: the repository (copied in as a directory, committed as the baseline);
//! - `actions.yaml`: a list of steps, each one model turn: `action` (a multi-line action is one
//!   string) and `why`, what the observation must be and why, from the reference
//!   (`reference/sweagent-aci.md`, section numbers `§`) or from ACI-SPEC where aci goes beyond
//!   SWE-agent. A step without a reason is an error: the expected files are an oracle only as
//!   far as each one is justified;
//! - `expected/NN.txt`: the observation of action NN (1-based, two digits), exactly as the
//!   model is shown it, with the repository path written `{repo}`; an action that printed
//!   nothing shows the no-output message, and a blocked one its refusal;
//! - `expected_tree/` (optional): every file of the repository afterwards, byte for byte;
//!   without it the repository must end as `input/` began;
//! - `config.yaml` (optional): a config layered over the built-in default.
//!
//! Besides the comparison, the last file window each observation shows is checked by a second
//! route: its header, line numbers, lines and the counts above and below must match the file
//! as the sandbox holds it after the action, decoded as v0 reads its shell (a `\r` before the
//! newline dropped, an invalid byte shown as `\xNN`). (Only the last: a multi-line action can
//! change the file after an earlier window.)
//!
//! New expected files are written by an ignored test, `cargo test --test aci_scenarios --
//! --ignored bless`, which runs every scenario on both runtimes, writes nothing unless Docker
//! and the local sandbox agree byte for byte, and never overwrites an expected file: only
//! missing ones are written (delete one to have it written again, after review).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aci::aci::session::NO_OUTPUT;
use aci::sandbox::Sandbox;
use support::Kind;
use support::aci_run::{
    AciRun, config, copy_to_temp, host_tree, repo_tree, start_aci, tree_diff, write_tree,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aci")
}

/// The scenario directories, in order.
fn scenarios() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("actions.yaml").is_file())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no scenarios under {}",
        fixtures().display()
    );
    dirs
}

/// One model turn of a scenario.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    /// The action, as the model would send it.
    action: String,
    /// What its observation must be, and why.
    why: String,
}

fn steps(dir: &Path) -> Vec<Step> {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let steps: Vec<Step> =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("actions.yaml")).unwrap())
            .unwrap_or_else(|e| panic!("{name}/actions.yaml: {e}"));
    for (index, step) in steps.iter().enumerate() {
        assert!(
            step.why.trim().len() >= 20,
            "{name}/actions.yaml: action {} ({:?}) does not say why its observation is right",
            index + 1,
            step.action
        );
    }
    steps
}

/// What one run of a scenario showed.
struct Outcome {
    /// Each action's observation, normalised.
    observations: Vec<String>,
    /// The repository afterwards.
    tree: BTreeMap<String, Vec<u8>>,
    /// Windows that do not match the file they show.
    window_problems: Vec<String>,
}

/// Runs one scenario on `kind`.
async fn run_scenario(kind: Kind, dir: &Path) -> Outcome {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let steps = steps(dir);
    let config_file = dir.join("config.yaml");
    let files: Vec<PathBuf> = config_file
        .is_file()
        .then_some(config_file)
        .into_iter()
        .collect();
    // A copy, so that the repository holds exactly the committed input files.
    let input = copy_to_temp(&dir.join("input"));
    let mut run = start_aci(kind, &name, input.path(), config(&files, &[]), dir).await;
    let mut observations = Vec::new();
    let mut window_problems = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let observation = match run.aci.blocked(&step.action) {
            Some(refusal) => refusal,
            None => run.aci.execute(&step.action).await.unwrap().observation,
        };
        if let Some(problem) = check_windows(&mut run, &observation).await {
            window_problems.push(format!("{name}: action {}: {problem}", index + 1));
        }
        observations.push(if observation.is_empty() {
            NO_OUTPUT.to_owned()
        } else {
            run.normalize(&observation)
        });
    }
    let tree = repo_tree(&mut run.aci).await;
    run.shutdown().await;
    Outcome {
        observations,
        tree,
        window_problems,
    }
}

/// A window as an observation prints it: the header's path and line count, the lines above
/// and below, and the numbered lines.
#[derive(Debug)]
struct Window {
    path: String,
    total: usize,
    above: usize,
    below: usize,
    lines: Vec<(usize, String)>,
}

/// The windows in an observation that show a file as it is now: not the would-be and original
/// windows of a refused edit, which sit between dash rules.
fn windows(observation: &str) -> Vec<Window> {
    let lines: Vec<&str> = observation.split('\n').collect();
    let mut windows = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let header = lines[i]
            .strip_prefix("[File: ")
            .and_then(|rest| rest.strip_suffix(" lines total)]"))
            .and_then(|rest| rest.rsplit_once(" ("));
        let ruled = i > 0 && lines[i - 1].starts_with("-----");
        let Some((path, total)) = header.filter(|_| !ruled) else {
            i += 1;
            continue;
        };
        let count = |line: &str, suffix: &str| {
            line.strip_prefix('(')
                .and_then(|rest| rest.strip_suffix(suffix))
                .and_then(|n| n.parse::<usize>().ok())
        };
        let mut window = Window {
            path: path.to_owned(),
            total: total.parse().unwrap(),
            above: 0,
            below: 0,
            lines: Vec::new(),
        };
        i += 1;
        if let Some(above) = lines.get(i).and_then(|l| count(l, " more lines above)")) {
            window.above = above;
            i += 1;
        }
        while let Some((number, text)) = lines.get(i).and_then(|l| l.split_once(':')) {
            let Ok(number) = number.parse::<usize>() else {
                break;
            };
            if window
                .lines
                .last()
                .is_some_and(|(last, _)| number != last + 1)
            {
                break;
            }
            window.lines.push((number, text.to_owned()));
            i += 1;
        }
        if let Some(below) = lines.get(i).and_then(|l| count(l, " more lines below)")) {
            window.below = below;
            i += 1;
        }
        windows.push(window);
    }
    windows
}

/// A file's text as the viewer shows it: invalid UTF-8 bytes as `\xNN`.
fn decode(bytes: &[u8]) -> String {
    let mut text = String::new();
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// Checks the last window of `observation` against the file it names, read from the sandbox.
async fn check_windows(run: &mut AciRun, observation: &str) -> Option<String> {
    let window = windows(observation).pop()?;
    let bytes = match run.aci.sandbox_mut().read_file(&window.path).await {
        Ok(bytes) => bytes,
        Err(error) => return Some(format!("{}: {error}", window.path)),
    };
    let text = decode(&bytes);
    // Lines as `awk 'END{print NR}'` counts them: a final newline ends the last line.
    let mut file_lines: Vec<&str> = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect();
    if text.is_empty() || text.ends_with('\n') {
        file_lines.pop();
    }
    let shown = window.lines.len();
    let first = window.lines.first().map_or(0, |(n, _)| *n);
    let mut wrong = Vec::new();
    if window.total != file_lines.len() {
        wrong.push(format!(
            "{} lines total, the file has {}",
            window.total,
            file_lines.len()
        ));
    }
    if shown > 0
        && (first != window.above + 1 || window.above + shown + window.below != window.total)
    {
        wrong.push(format!(
            "{} above + {shown} shown from line {first} + {} below != {}",
            window.above, window.below, window.total
        ));
    }
    for (number, shown_text) in &window.lines {
        if file_lines.get(number - 1) != Some(&shown_text.as_str()) {
            wrong.push(format!(
                "line {number} shows {shown_text:?}, the file has {:?}",
                file_lines.get(number - 1)
            ));
        }
    }
    (!wrong.is_empty()).then(|| format!("window of {}: {}", window.path, wrong.join("; ")))
}

/// What an outcome does not match in a scenario's expected files (empty: it passed).
fn compare(dir: &Path, outcome: &Outcome) -> Vec<String> {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let steps = steps(dir);
    let mut failures = outcome.window_problems.clone();
    for (index, observation) in outcome.observations.iter().enumerate() {
        let file = expected_file(dir, index);
        match std::fs::read_to_string(&file) {
            Ok(expected) if expected == *observation => {}
            Ok(expected) => failures.push(format!(
                "{name}: action {} ({:?})\n--- expected\n{expected}\n--- actual\n{observation}\n---",
                index + 1,
                steps[index].action
            )),
            Err(_) => failures.push(format!(
                "{name}: {} is missing\nhint: cargo test --test aci_scenarios -- --ignored bless",
                file.display()
            )),
        }
    }
    let expected_dir = dir.join("expected_tree");
    let expected_dir = if expected_dir.is_dir() {
        expected_dir
    } else {
        dir.join("input")
    };
    let expected_tree = host_tree(&expected_dir);
    let diff = tree_diff(&expected_tree, &outcome.tree);
    if !diff.is_empty() {
        failures.push(format!("{name}: the repository afterwards differs\n{diff}"));
    }
    failures
}

fn expected_file(dir: &Path, index: usize) -> PathBuf {
    dir.join("expected").join(format!("{:02}.txt", index + 1))
}

async fn run_all(kind: Kind) {
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in scenarios() {
        let outcome = run_scenario(kind, &dir).await;
        failures.extend(compare(&dir, &outcome));
        count += 1;
    }
    assert!(
        failures.is_empty(),
        "{} failures in {count} scenarios on {kind:?}:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_gives_the_expected_observations_and_files_on_the_local_sandbox() {
    run_all(Kind::Local).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_gives_the_expected_observations_and_files_in_docker() {
    run_all(Kind::Docker).await;
}

/// Writes the expected files a scenario lacks, from a run on each runtime, when the two agree
/// byte for byte. It never overwrites: an expected file that exists is the oracle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes missing expected files; run it with --ignored after adding a scenario"]
async fn bless_writes_missing_expected_files_where_docker_and_local_agree() {
    let mut refused = Vec::new();
    for dir in scenarios() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let local = run_scenario(Kind::Local, &dir).await;
        let docker = run_scenario(Kind::Docker, &dir).await;
        let mut problems = local.window_problems.clone();
        problems.extend(docker.window_problems.iter().cloned());
        for (index, (l, d)) in local
            .observations
            .iter()
            .zip(&docker.observations)
            .enumerate()
        {
            if l != d {
                problems.push(format!(
                    "action {}: local and Docker differ\n--- local\n{l}\n--- docker\n{d}",
                    index + 1
                ));
            }
        }
        if local.tree != docker.tree {
            problems.push(format!(
                "the repositories differ\n{}",
                tree_diff(&local.tree, &docker.tree)
            ));
        }
        if !problems.is_empty() {
            refused.push(format!("{name}: nothing written\n{}", problems.join("\n")));
            continue;
        }
        std::fs::create_dir_all(dir.join("expected")).unwrap();
        for (index, observation) in local.observations.iter().enumerate() {
            let file = expected_file(&dir, index);
            if !file.exists() {
                std::fs::write(&file, observation).unwrap();
                eprintln!("wrote {} (review it against its why)", file.display());
            }
        }
        let expected_tree = dir.join("expected_tree");
        if !expected_tree.exists() && local.tree != host_tree(&dir.join("input")) {
            write_tree(&expected_tree, &local.tree);
            eprintln!("wrote {} (review it)", expected_tree.display());
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n\n"));
}
