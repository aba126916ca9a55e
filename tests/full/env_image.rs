//! Environment images on the real Docker daemon: built once per content hash, the same git
//! baseline as a sandbox that copies the repository, setup outputs kept out of patches, build
//! failures reported per instance, and `aci images prune --run-id` removing exactly one run's
//! images.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::time::Duration;

use aci::config::EnvConfig;
use aci::image::env::{EnvImageError, EnvRequest};
use aci::instance::{Instance, parse_instances};
use aci::provision::Provisioner;
use aci::sandbox::{RepoSource, Sandbox};

const SHORT: Duration = Duration::from_secs(60);

fn instance(repo: &Path, setup: &[&str]) -> Instance {
    let record = serde_json::json!({
        "instance_id": "env-test-1", "problem_statement": "", "repo": "t/env",
        "repo_path": repo, "language": "python", "setup": setup,
    });
    parse_instances(&record.to_string(), None)
        .unwrap()
        .instances
        .remove(0)
}

fn quiet(_: &str) {}

#[tokio::test]
async fn an_env_image_is_built_once_has_the_sandbox_baseline_and_hides_setup_outputs() {
    let runtime = support::docker().await;
    let repo = support::small_repo();
    // Content seen for the first time, so that this run builds the image.
    std::fs::write(
        repo.path().join("unique.txt"),
        format!(
            "{} {:?}\n",
            std::process::id(),
            std::time::SystemTime::now()
        ),
    )
    .unwrap();
    let run_id = format!("test-env-{}", std::process::id());
    let instance = instance(
        repo.path(),
        &[
            "echo built > generated.txt",
            "mkdir -p out && touch 'out/a[1].txt' && python3 -c 'print(1)' > out/log",
        ],
    );
    let env = EnvConfig::default();
    let request = EnvRequest {
        env: &env,
        run_id: &run_id,
        on_step: &quiet,
    };
    let first = Provisioner::new()
        .env_image(&runtime, &instance, &request)
        .await
        .unwrap();
    assert!(first.built);
    assert!(first.tag.starts_with("aci-env-python:"));
    assert_eq!(first.env_hash[..12], first.tag["aci-env-python:".len()..]);
    let info = runtime.inspect_image(&first.tag).await.unwrap().unwrap();
    assert_eq!(info.labels["aci.image"], "env");
    assert_eq!(info.labels["aci.run_id"], run_id);
    assert_eq!(info.labels["aci.env_hash"], first.env_hash);
    assert_eq!(info.labels["aci.base_image"], "aci-python:bookworm");

    let second = Provisioner::new()
        .env_image(&runtime, &instance, &request)
        .await
        .unwrap();
    assert!(!second.built);
    assert_eq!(
        (second.tag.as_str(), second.id.as_str()),
        (first.tag.as_str(), first.id.as_str())
    );

    // A sandbox that copies the repository and one started from the image share the baseline.
    let mut copied_spec = support::spec("env-copied", Some(repo.path()));
    copied_spec.image = "aci-python:bookworm".to_owned();
    copied_spec.repo = Some(RepoSource {
        path: repo.path().to_owned(),
        commit: instance.base_commit.clone(),
    });
    let copied = runtime.start(&copied_spec).await.unwrap();
    let mut from_image_spec = support::spec("env-image", None);
    from_image_spec.image.clone_from(&first.tag);
    from_image_spec.repo = None;
    let mut from_image = runtime.start(&from_image_spec).await.unwrap();
    assert_eq!(copied.baseline(), from_image.baseline());
    let status = from_image
        .run_merged(
            "git status --porcelain --untracked-files=all; cat generated.txt out/log; ls out",
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "built\n1\na[1].txt\nlog\n"
    );
    let diff = from_image
        .run_merged(
            &format!(
                "echo x >> pkg/calc.py && git add -A && git diff --cached --stat {}",
                copied.baseline()
            ),
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&diff.stdout),
        " pkg/calc.py | 1 +\n 1 file changed, 1 insertion(+)\n"
    );
    copied.shutdown().await.unwrap();
    from_image.shutdown().await.unwrap();

    let pruned = std::process::Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["images", "prune", "--run-id", &run_id])
        .output()
        .unwrap();
    assert_eq!(pruned.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&pruned.stdout),
        format!("removed\t{}\t{}\n", first.tag, first.id)
    );
    assert!(runtime.inspect_image(&first.tag).await.unwrap().is_none());
    assert!(
        runtime
            .inspect_image("aci-python:bookworm")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_failing_setup_command_is_a_build_error_of_that_instance_only() {
    let runtime = support::docker().await;
    let repo = support::small_repo();
    let instance = instance(
        repo.path(),
        &["echo installing; echo 'no such package' >&2; exit 3"],
    );
    let env = EnvConfig::default();
    let request = EnvRequest {
        env: &env,
        run_id: "test-env-failing",
        on_step: &quiet,
    };
    let error = Provisioner::new()
        .env_image(&runtime, &instance, &request)
        .await
        .unwrap_err();
    assert!(!error.is_run_level());
    let EnvImageError::Build {
        instance_id,
        tag,
        message,
        ..
    } = &error
    else {
        panic!("expected a build error, got {error}");
    };
    assert_eq!(instance_id, "env-test-1");
    assert!(message.contains("no such package"), "{message}");
    assert!(
        message.contains("the RUN step (baseline and setup) returned a non-zero code: 3"),
        "{message}"
    );
    assert!(message.contains("installing"), "{message}");
    assert!(runtime.inspect_image(tag).await.unwrap().is_none());
    // The build's last layer stays behind untagged, labelled with the run, so pruning the run
    // removes it, and no image of the run is left.
    let pruned = std::process::Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["images", "prune", "--run-id", "test-env-failing"])
        .output()
        .unwrap();
    assert_eq!(pruned.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&pruned.stdout);
    assert!(stdout.starts_with("removed\tsha256:"), "{stdout}");
    let left = runtime
        .list_images_labelled(&["aci.run_id=test-env-failing".to_owned()])
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn an_instance_whose_image_is_missing_names_it_and_says_how_to_build_it() {
    let runtime = support::docker().await;
    let repo = support::small_repo();
    let mut instance = instance(repo.path(), &[]);
    instance.image = Some("aci-no-such-image:1".to_owned());
    let env = EnvConfig::default();
    let request = EnvRequest {
        env: &env,
        run_id: "test-env-missing",
        on_step: &quiet,
    };
    let error = Provisioner::new()
        .env_image(&runtime, &instance, &request)
        .await
        .unwrap_err();
    assert_eq!(
        aci::hint::with_hint(&error),
        "env-test-1: the image aci-no-such-image:1 does not exist\nhint: run `aci images build`"
    );
}

/// The README's first command on a fresh Debian machine: `aci images build` runs the compiled-in
/// base recipe, which must install debootstrap itself instead of failing at once. A bookworm
/// container without debootstrap stands for that machine: root with a root's capabilities and
/// a network, for apt (not an aci sandbox, which has neither).
#[test]
fn the_base_recipe_installs_debootstrap_on_a_fresh_debian_machine() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("build-base.sh"), aci::image::BASE_SCRIPT).unwrap();
    let script = format!("{}:/recipe:ro", dir.path().display());
    let run = |command: &str| {
        let output = std::process::Command::new("docker")
            .args([
                "run",
                "--rm",
                "--label",
                "aci.test=fresh-machine",
                "-v",
                &script,
            ])
            .args(["aci-base:bookworm", "bash", "-c", command])
            .output()
            .expect("the docker CLI runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.code(), text)
    };
    assert_eq!(
        run("command -v debootstrap || echo absent"),
        (Some(0), "absent\n".to_owned())
    );
    // The recipe installs it, says so in one line, and goes on; run again, it says nothing.
    assert_eq!(
        run(
            "bash /recipe/build-base.sh --tools-only && command -v debootstrap \
             && bash /recipe/build-base.sh --tools-only"
        ),
        (
            Some(0),
            "[base] debootstrap is not installed: installing it with apt-get (once, for \
             aci-base:bookworm)\n/usr/sbin/debootstrap\n"
                .to_owned()
        )
    );
}

/// Two aci processes that need the same new environment image at the same time: one builds
/// it while the other waits, so both run in the one image (the same id), instead of two builds
/// tagging two different images in turn.
#[test]
fn two_processes_needing_one_new_environment_image_build_it_once() {
    let repo = support::small_repo();
    // Content seen for the first time, so that the image has to be built.
    std::fs::write(
        repo.path().join("unique.txt"),
        format!(
            "{} {:?}\n",
            std::process::id(),
            std::time::SystemTime::now()
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let record = serde_json::json!({
        "instance_id": "env-twice-1", "problem_statement": "p", "repo": "t/env",
        "repo_path": repo.path(), "language": "python",
        // A setup that takes a while, so that the two builds would overlap.
        "setup": ["sleep 3"],
    });
    std::fs::write(dir.path().join("instances.jsonl"), format!("{record}\n")).unwrap();
    std::fs::write(dir.path().join("replay.yaml"), "- submit\n").unwrap();
    let run_id = format!("test-env-twice-{}", std::process::id());
    let spawn = |out: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_aci"))
            .current_dir(dir.path())
            .args([
                "run",
                "--instances",
                "instances.jsonl",
                "--id",
                "env-twice-1",
            ])
            .args([
                "--replay",
                "replay.yaml",
                "--run-id",
                &run_id,
                "--output",
                out,
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn("one"), spawn("two"));
    let mut built = 0;
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        built += usize::from(stderr.contains("Step 1/"));
    }
    let image = |out: &str| {
        let path = dir.path().join(out).join("env-twice-1/env-twice-1.traj");
        let traj: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        traj["info"]["env_image"]["id"].as_str().unwrap().to_owned()
    };
    assert_eq!(image("one"), image("two"));
    assert_eq!(built, 1, "the image was built by both processes");
    let pruned = std::process::Command::new(env!("CARGO_BIN_EXE_aci"))
        .args(["images", "prune", "--run-id", &run_id])
        .output()
        .unwrap();
    assert!(pruned.status.success(), "{pruned:?}");
}
