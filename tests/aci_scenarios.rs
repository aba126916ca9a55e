//! ACI scenarios: every `tests/fixtures/aci/NNN_name/` runs on the local sandbox and in Docker,
//! and must give exactly the expected observations and files on both.
//!
//! A scenario is:
//! - `input/`: the repository (copied in as a directory, committed as the baseline);
//! - `actions.yaml`: a list of actions, each one model turn (a multi-line action is one string);
//! - `expected/NN.txt`: the observation of action NN (1-based, two digits), exactly as the
//!   model is shown it, with the repository path written `{repo}`; an action that printed
//!   nothing shows the no-output message, and a blocked one its refusal;
//! - `expected_tree/` (optional): every file of the repository afterwards, byte for byte;
//!   without it the repository must end as `input/` began;
//! - `config.yaml` (optional): a config layered over the built-in default.
//!
//! `ACI_BLESS=1 cargo test --test aci_scenarios local` writes the expected files from the local
//! run instead of comparing (review every one against the reference before committing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};

use aci::aci::session::NO_OUTPUT;
use support::Kind;
use support::aci_run::{
    config, copy_to_temp, host_tree, repo_tree, start_aci, tree_diff, write_tree,
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

fn blessing() -> bool {
    std::env::var_os("ACI_BLESS").is_some_and(|v| v == "1")
}

/// Runs one scenario on `kind`; returns what did not match (empty: it passed).
async fn run_scenario(kind: Kind, dir: &Path) -> Vec<String> {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let actions: Vec<String> =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("actions.yaml")).unwrap())
            .unwrap_or_else(|e| panic!("{name}/actions.yaml: {e}"));
    let config_file = dir.join("config.yaml");
    let files: Vec<PathBuf> = config_file
        .is_file()
        .then_some(config_file)
        .into_iter()
        .collect();
    // A copy, so that the repository holds exactly the committed input files.
    let input = copy_to_temp(&dir.join("input"));
    let mut run = start_aci(kind, &name, input.path(), config(&files, &[]), dir).await;
    let mut failures = Vec::new();
    let mut observations = Vec::new();
    for (index, action) in actions.iter().enumerate() {
        let observation = match run.aci.blocked(action) {
            Some(refusal) => refusal,
            None => run.aci.execute(action).await.unwrap().observation,
        };
        let observation = if observation.is_empty() {
            NO_OUTPUT.to_owned()
        } else {
            run.normalize(&observation)
        };
        let file = dir.join("expected").join(format!("{:02}.txt", index + 1));
        observations.push((file.clone(), observation.clone()));
        if blessing() {
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(expected) if expected == observation => {}
            Ok(expected) => failures.push(format!(
                "{name}: action {} ({action:?})\n--- expected\n{expected}\n--- actual\n{observation}\n---",
                index + 1
            )),
            Err(_) => failures.push(format!("{name}: {} is missing", file.display())),
        }
    }
    let tree = repo_tree(&mut run.aci).await;
    run.shutdown().await;
    let expected_dir = dir.join("expected_tree");
    if blessing() {
        bless(dir, &observations, &tree);
        return failures;
    }
    let expected_tree = host_tree(if expected_dir.is_dir() {
        &expected_dir
    } else {
        input.path()
    });
    let diff = tree_diff(&expected_tree, &tree);
    if !diff.is_empty() {
        failures.push(format!("{name}: the repository afterwards differs\n{diff}"));
    }
    failures
}

/// Writes a scenario's expected files from a run.
fn bless(
    dir: &Path,
    observations: &[(PathBuf, String)],
    tree: &std::collections::BTreeMap<String, Vec<u8>>,
) {
    let expected = dir.join("expected");
    let _ = std::fs::remove_dir_all(&expected);
    std::fs::create_dir_all(&expected).unwrap();
    for (file, observation) in observations {
        std::fs::write(file, observation).unwrap();
    }
    let expected_tree = dir.join("expected_tree");
    let _ = std::fs::remove_dir_all(&expected_tree);
    if *tree != host_tree(&dir.join("input")) {
        write_tree(&expected_tree, tree);
    }
}

async fn run_all(kind: Kind) {
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in scenarios() {
        failures.extend(run_scenario(kind, &dir).await);
        count += 1;
    }
    assert!(
        failures.is_empty(),
        "{} of {count} scenarios failed on {kind:?}:\n\n{}",
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
    if blessing() {
        return;
    }
    run_all(Kind::Docker).await;
}
