//! The ACI through the `aci` binary: `aci run` records each step's state, and `aci shell` lets a
//! person drive the same loop from stdin, on Docker and locally.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::Kind;

const DEMO_ID: &str = "demo__inicfg-1";

/// The working directory of a step's state (v0.7's JSON text in a string).
fn working_dir(step: &Value) -> String {
    let state: Value = serde_json::from_str(step["state"].as_str().unwrap()).unwrap();
    state["working_dir"].as_str().unwrap().to_owned()
}

fn demo_instances() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/instances.jsonl")
}

fn traj(output: &Path) -> Value {
    let path = output.join(DEMO_ID).join(format!("{DEMO_ID}.traj"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `aci run` of one instance on the local runtime, replaying `replay` into `output`.
fn local_run(instances: &Path, id: &str, replay: &Path, output: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aci"));
    command
        .args(["run", "--id", id, "--runtime", "local"])
        .arg("--instances")
        .arg(instances)
        .arg("--replay")
        .arg(replay)
        .arg("--output")
        .arg(output);
    command
}

#[test]
fn each_step_of_aci_run_records_the_open_file_and_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("replay.yaml");
    std::fs::write(
        &replay,
        "- open inicfg/errors.py 5\n- cd inicfg\n- 'true'\n- \"cd ..\\ncreate notes.txt\"\n- submit\n",
    )
    .unwrap();
    let output = dir.path().join("out");
    let status = local_run(&demo_instances(), DEMO_ID, &replay, &output)
        .args(["--run-id", "test-state"])
        .status()
        .unwrap();
    assert!(status.success());
    let traj = traj(&output);
    let steps = traj["trajectory"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    let repo = working_dir(&steps[0]);
    assert!(
        repo.starts_with('/') && repo.ends_with("/testbed"),
        "{repo}"
    );
    let errors = format!("{repo}/inicfg/errors.py");
    let notes = format!("{repo}/notes.txt");
    let inicfg = format!("{repo}/inicfg");
    // The state after each action (what the next prompt shows), written as v0.7 writes it:
    // its state command's JSON output, in a string.
    let state = |open: &str, dir: &str| {
        json!(format!(
            r#"{{"open_file": "{open}", "working_dir": "{dir}"}}"#
        ))
    };
    let expected = [
        state(&errors, &repo),
        state(&errors, &inicfg),
        state(&errors, &inicfg),
        state(&notes, &repo),
        state(&notes, &repo),
    ];
    for (step, state) in steps.iter().zip(&expected) {
        assert_eq!(&step["state"], state, "after {}", step["action"]);
    }
    // The prompts carry the same state, and a silent command the no-output text.
    let users: Vec<&str> = traj["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["role"] == "user" && item["is_demo"] != true)
        .map(|item| item["content"].as_str().unwrap())
        .collect();
    assert!(
        users[0].ends_with(&format!(
            "(Open file: n/a)\n(Current directory: {repo})\nbash-$"
        )),
        "{}",
        users[0]
    );
    assert!(users[1].ends_with(&format!(
        "(Open file: {errors})\n(Current directory: {repo})\nbash-$"
    )));
    assert_eq!(
        users[3],
        format!(
            "Your command ran successfully and did not produce any output.\n\
             (Open file: {errors})\n(Current directory: {inicfg})\nbash-$"
        )
    );
    assert_eq!(traj["info"]["exit_status"], "submitted");
}

/// Runs `aci shell` on the demo instance with `script` as its stdin.
fn shell(kind: Kind, run_id: &str, output: &Path, script: &str) -> Output {
    let runtime = match kind {
        Kind::Docker => "docker",
        Kind::Local => "local",
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_aci"))
        .arg("shell")
        .arg("--instances")
        .arg(demo_instances())
        .args(["--id", DEMO_ID, "--runtime", runtime, "--run-id", run_id])
        .args(["--set", "env.command_timeout=10"])
        .arg("--output")
        .arg(output)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

const SCRIPT: &str = "\
open inicfg/errors.py 3
edit 1:1
\"\"\"Errors raised by inicfg.\"\"\"
end_of_edit
cd tests
vim test_config.py
search_file IniError ../inicfg/errors.py
echo \"$PWD\" | sed 's|.*/||'
true
";

/// What a session of [`SCRIPT`] shows, with the repository at `repo`.
fn check_session(out: &Output, repo: &str, output: &Path) {
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(out.status.success(), "{stderr}");
    let errors = format!("{repo}/inicfg/errors.py");
    let tests = format!("{repo}/tests");
    let prompt = |file: &str, dir: &str| {
        format!("(Open file: {file})\n(Current directory: {dir})\nbash-$\n> ")
    };
    for expected in [
        prompt("n/a", repo),
        format!("[File: {errors} (54 lines total)]\n1:\"\"\"Exception hierarchy for inicfg.\"\"\"\n"),
        format!(
            "[File: {errors} (54 lines total)]\n1:\"\"\"Errors raised by inicfg.\"\"\"\n2:\n"
        ),
        format!(
            "54:    \"\"\"References nest too deeply, usually because of a cycle.\"\"\"\n\
             File updated. Please review the changes and make sure they are correct (correct \
             indentation, no duplicate lines, etc). Edit the file again if necessary.\n{}",
            prompt(&errors, repo)
        ),
        format!(
            "Your command ran successfully and did not produce any output.\n{}",
            prompt(&errors, &tests)
        ),
        "> Interactive operation 'vim' is not supported by this environment. Use a non-interactive \
         command instead.\n> "
            .to_owned(),
        format!("Found 5 matches for \"IniError\" in {errors}:\nLine 4:class IniError(Exception):\n"),
        format!("> tests\n{}", prompt(&errors, &tests)),
        format!(
            "Your command ran successfully and did not produce any output.\n{}session ended (submitted (early_exit))",
            prompt(&errors, &tests)
        ),
    ] {
        assert!(stderr.contains(&expected), "missing {expected:?} in\n{stderr}");
    }
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let patch_path = output.join(DEMO_ID).join(format!("{DEMO_ID}.patch"));
    assert_eq!(
        stdout,
        format!(
            "{DEMO_ID}\tsubmitted (early_exit)\t{}\n",
            patch_path.display()
        )
    );
    let patch = std::fs::read_to_string(patch_path).unwrap();
    assert!(
        patch.contains(
            "-\"\"\"Exception hierarchy for inicfg.\"\"\"\n+\"\"\"Errors raised by inicfg.\"\"\"\n"
        ),
        "{patch}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aci_shell_drives_a_container_through_the_agent_loop_and_removes_it_at_end_of_input() {
    let docker = support::aci_run::docker().await;
    let dir = tempfile::tempdir().unwrap();
    let run_id = format!("test-shell-{}", std::process::id());
    let out = shell(Kind::Docker, &run_id, dir.path(), SCRIPT);
    check_session(&out, "/testbed", dir.path());
    assert_eq!(
        docker.list_aci_containers(Some(&run_id)).await.unwrap(),
        Vec::<String>::new()
    );
}

/// SIGTERM ends a shell session as the end of input does (its changes autosubmitted, its
/// files written, its container removed), with the exit code of a signal, 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_aci_shell_like_the_end_of_input_and_removes_its_container() {
    use std::time::{Duration, Instant};
    let docker = support::aci_run::docker().await;
    let dir = tempfile::tempdir().unwrap();
    let run_id = format!("test-shell-term-{}", std::process::id());
    let stderr_path = dir.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_aci"))
        .arg("shell")
        .arg("--instances")
        .arg(demo_instances())
        .args(["--id", DEMO_ID, "--run-id", &run_id])
        .arg("--output")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    // The first command runs; the session then waits for the next line, which never comes.
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo '# work in progress' >> README.md\n")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    while !stderr().contains("Your command ran successfully and did not produce any output.") {
        assert!(
            Instant::now() < deadline,
            "the command never ran:\n{}",
            stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("aci shell did not end on SIGTERM:\n{}", stderr());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(stdin);
    let left = docker.list_aci_containers(Some(&run_id)).await.unwrap();
    for id in &left {
        let _ = docker.remove_container(id).await;
    }
    let stderr = stderr();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(left, Vec::<String>::new(), "{stderr}");
    let traj_path = dir.path().join(DEMO_ID).join(format!("{DEMO_ID}.traj"));
    assert!(
        stderr.contains(&format!(
            "session ended (submitted (early_exit)): {}",
            traj_path.display()
        )),
        "{stderr}"
    );
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    let patch_path = dir.path().join(DEMO_ID).join(format!("{DEMO_ID}.patch"));
    assert_eq!(
        stdout,
        format!(
            "{DEMO_ID}\tsubmitted (early_exit)\t{}\n",
            patch_path.display()
        )
    );
    let patch = std::fs::read_to_string(patch_path).unwrap();
    assert!(patch.contains("\n+# work in progress\n"), "{patch}");
    assert_eq!(
        traj(dir.path())["info"]["exit_status"],
        "submitted (early_exit)"
    );
}

#[test]
fn aci_shell_drives_a_local_sandbox_through_the_agent_loop() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell(Kind::Local, "test-shell-local", dir.path(), SCRIPT);
    let traj = traj(dir.path());
    let repo = working_dir(&traj["trajectory"][0]);
    check_session(&out, &repo, dir.path());
    assert!(
        !Path::new(&repo).exists(),
        "the local copy {repo} is left behind"
    );
}

#[test]
fn a_local_run_keeps_crlf_bytes_and_starts_whatever_the_users_global_git_config_says() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("win.py"), "a = 1\r\nb = 2\r\n").unwrap();
    let instances = dir.path().join("instances.jsonl");
    std::fs::write(
        &instances,
        json!({
            "instance_id": "crlf-1", "repo": "t/crlf", "problem_statement": "",
            "repo_path": repo, "language": "python",
        })
        .to_string(),
    )
    .unwrap();
    let replay = dir.path().join("replay.yaml");
    std::fs::write(
        &replay,
        "- \"printf 'c = 3\\\\r\\\\n' >> win.py\"\n- submit\n",
    )
    .unwrap();
    // A user whose global git config converts line endings and signs every commit.
    let global = dir.path().join("gitconfig");
    std::fs::write(
        &global,
        "[core]\n\tautocrlf = true\n[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n",
    )
    .unwrap();
    let output = dir.path().join("out");
    let status = local_run(&instances, "crlf-1", &replay, &output)
        .env("GIT_CONFIG_GLOBAL", &global)
        .status()
        .unwrap();
    assert!(status.success());
    let patch = std::fs::read_to_string(output.join("crlf-1/crlf-1.patch")).unwrap();
    assert!(
        patch.ends_with(" a = 1\r\n b = 2\r\n+c = 3\r\n"),
        "{patch:?}"
    );
}

/// An instance id that is a path (`../x`, `/x`) would make `aci run` and `aci eval` write
/// outside `--output`: each refuses the record in one line, exits 1, and writes nothing.
#[test]
fn an_instance_id_that_is_a_path_is_refused_by_run_and_eval_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo/repos");
    for id in ["../escape", "/tmp/aci-escape-test"] {
        let record = serde_json::json!({
            "instance_id": id, "problem_statement": "p", "repo": "o/r",
            "repo_path": repo, "patch": "",
        });
        let instances = work.join("instances.jsonl");
        std::fs::write(&instances, format!("{record}\n")).unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_aci"))
            .current_dir(&work)
            .args(["run", "--instances", "instances.jsonl", "--id", id])
            .args(["--runtime", "local", "--model", "replay", "--output", "out"])
            .output()
            .unwrap();
        let eval = Command::new(env!("CARGO_BIN_EXE_aci"))
            .current_dir(&work)
            .args([
                "eval",
                "--instances",
                "instances.jsonl",
                "--predictions",
                "gold",
            ])
            .args(["--output", "eval"])
            .output()
            .unwrap();
        let refusal = format!(
            "error: instances.jsonl: instance {id:?} (line 1): field \"instance_id\": contains a \
             path separator, so it cannot name an output directory\n"
        );
        for (command, out) in [("run", &run), ("eval", &eval)] {
            assert_eq!(out.status.code(), Some(1), "{command} {id}: {out:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.starts_with(&refusal), "{command} {id}: {stderr}");
        }
        let mut written: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .chain(std::fs::read_dir(&work).unwrap())
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        written.sort();
        assert_eq!(written, ["instances.jsonl", "work"], "{id}");
        assert!(!std::path::Path::new("/tmp/aci-escape-test").exists());
    }
}

#[test]
fn a_failed_autosubmission_is_recorded_in_the_trajectory_and_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("replay.yaml");
    // Without its repository, the working tree has no diff to take when the model forfeits.
    std::fs::write(
        &replay,
        "- echo change >> README.md\n- rm -rf .git\n- exit_forfeit\n",
    )
    .unwrap();
    let output = dir.path().join("out");
    let run = local_run(&demo_instances(), DEMO_ID, &replay, &output)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let traj = traj(&output);
    let info = &traj["info"];
    let error = "the autosubmission failed: shell session: submit could not make the patch: \
                 fatal: not a git repository (or any of the parent directories): .git";
    assert_eq!(
        (
            run.status.code(),
            info["exit_status"].as_str(),
            info["submission"].is_null(),
            info["submission_error"].as_str(),
        ),
        (Some(0), Some("exit_forfeit"), true, Some(error)),
        "{info}"
    );
    assert!(
        stderr.contains(&format!("error: {DEMO_ID}: {error}\n")),
        "{stderr}"
    );
}
