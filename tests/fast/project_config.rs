//! The project config: `aci.yaml` in the working directory is read by every command, as a first
//! `--config` layer; `--no-project-config` and `ACI_PROJECT_CONFIG=` turn it off and
//! `ACI_PROJECT_CONFIG=FILE` names another. A rerun whose settings moved from `--set` into
//! `aci.yaml` is the same configuration, so it is not warned about.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use crate::batch_support::{demo_dir, write_instances, write_replays};

const BAD: &str = "env:\n  command_timeout: soon\n";
const BAD_LINE: &str =
    "error: aci.yaml:2:20: env.command_timeout: invalid type: string \"soon\", expected f64\n";

fn aci(dir: &Path, args: &[&str], env: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aci"));
    command.current_dir(dir).args(args);
    match env {
        Some(value) => command.env("ACI_PROJECT_CONFIG", value),
        None => command.env_remove("ACI_PROJECT_CONFIG"),
    };
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_command_reads_aci_yaml_from_the_working_directory_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("aci.yaml"), BAD).unwrap();
    let instances = demo_dir().join("instances.jsonl");
    let instances = instances.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &[
            "run",
            "--instances",
            instances,
            "--id",
            "demo__calc-1",
            "--runtime",
            "local",
            "--model",
            "replay",
            "--replay",
            "r.yaml",
        ],
        &["batch", "--instances", instances, "--plan"],
        &[
            "eval",
            "--instances",
            instances,
            "--predictions",
            "gold",
            "--plan",
        ],
        &[
            "validate",
            "--instances",
            instances,
            "--output",
            "v",
            "--plan",
        ],
        &[
            "shell",
            "--instances",
            instances,
            "--id",
            "demo__calc-1",
            "--runtime",
            "local",
        ],
        &[
            "images",
            "push",
            "--registry",
            "localhost:5999",
            "--instances",
            instances,
        ],
    ];
    for args in commands {
        let out = aci(dir.path(), args, None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), BAD_LINE, "{args:?}");
    }
    // Turned off: the plan is printed, with no word of aci.yaml.
    let plan = [
        "eval",
        "--instances",
        instances,
        "--predictions",
        "gold",
        "--plan",
    ];
    let off = [plan.as_slice(), &["--no-project-config"]].concat();
    for (args, env) in [(off.as_slice(), None), (plan.as_slice(), Some(""))] {
        let out = aci(dir.path(), args, env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} {env:?}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("aci.yaml"), "{}", stderr(&out));
    }
    // Another file, named by ACI_PROJECT_CONFIG: read instead of aci.yaml.
    std::fs::write(
        dir.path().join("team.yaml"),
        "env:\n  command_timeout: later\n",
    )
    .unwrap();
    let out = aci(dir.path(), &plan, Some("team.yaml"));
    assert_eq!(
        stderr(&out),
        "error: team.yaml:2:20: env.command_timeout: invalid type: string \"later\", expected \
         f64\n"
    );
}

#[test]
fn a_rerun_with_the_settings_moved_into_aci_yaml_is_the_same_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let ids = ["demo__calc-1"];
    let instances = write_instances(dir.path(), &ids, &[]);
    let replays = write_replays(&dir.path().join("replays"), &ids, &["submit"]);
    let batch = |extra: &[&str]| {
        let mut args = vec![
            "batch",
            "--instances",
            instances.to_str().unwrap(),
            "--replay-dir",
            replays.to_str().unwrap(),
            "--runtime",
            "local",
            "--output",
            "out",
        ];
        args.extend_from_slice(extra);
        aci(dir.path(), &args, None)
    };
    let first = batch(&["--set", "env.command_timeout=77"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    std::fs::write(dir.path().join("aci.yaml"), "env:\n  command_timeout: 77\n").unwrap();
    let again = batch(&[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        !stderr(&again).contains("another configuration"),
        "{}",
        stderr(&again)
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["config"]["env"]["command_timeout"], 77.0);
    // Without it, the configuration differs, and the rerun says so.
    let off = batch(&["--no-project-config"]);
    assert!(
        stderr(&off).contains("was written with another configuration"),
        "{}",
        stderr(&off)
    );
}
