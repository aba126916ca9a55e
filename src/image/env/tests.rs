use super::*;

fn instance(language: Option<&str>, image: Option<&str>) -> Instance {
    let mut record = serde_json::json!({
        "instance_id": "demo__x-1", "problem_statement": "", "repo": "demo/x",
        "base_commit": "0000000000000000000000000000000000000000",
    });
    if let Some(language) = language {
        record["language"] = language.into();
    }
    if let Some(image) = image {
        record["image"] = image.into();
    }
    crate::instance::parse_instances(&record.to_string(), None)
        .unwrap()
        .instances
        .remove(0)
}

fn recipe(baseline: Option<repo::Baseline>, setup: &[String]) -> Recipe<'_> {
    Recipe {
        base: "sha256:abc",
        repo_dir: "/testbed",
        baseline,
        setup,
        labels: std::collections::BTreeMap::new(),
        pip: PipSteps::default(),
    }
}

#[test]
fn the_dockerfile_labels_then_adds_the_repository_commits_the_baseline_and_runs_setup() {
    let setup = ["make".to_owned(), "make install".to_owned()];
    let mut recipe = recipe(Some(repo::Baseline::Fresh { force: false }), &setup);
    recipe
        .labels
        .insert("aci.image".to_owned(), "env".to_owned());
    recipe
        .labels
        .insert("aci.run_id".to_owned(), "my \"run\" 1".to_owned());
    let text = dockerfile(&recipe);
    let lines: Vec<&str> = text.lines().collect();
    let baseline = repo::baseline_script(repo::Baseline::Fresh { force: false });
    assert_eq!(lines[0], "FROM sha256:abc");
    assert_eq!(
        lines[1],
        r#"LABEL "aci.image"="env" "aci.run_id"="my \"run\" 1""#
    );
    assert_eq!(lines[2], "ADD repo.tar setup.tar /");
    let run = format!(
        "RUN mkdir -p /testbed && cd /testbed && {baseline} && bash /tmp/aci-setup/1.sh && \
         bash /tmp/aci-setup/2.sh && rm -rf /tmp/aci-setup && if [ -d .git ]; then git ls-files \
         --others --exclude-standard --directory | sed -e 's/[][*?\\\\]/\\\\&/g' -e 's|^|/|' \
         >> .git/info/exclude; fi"
    );
    assert_eq!(lines[3], run);
    assert_eq!(lines.len(), 4);
}

#[test]
fn a_spec_layer_declares_the_index_argument_gets_its_lock_as_constraints_and_prints_the_freeze() {
    let setup = ["python -m pip install -e .".to_owned()];
    let mut recipe = recipe(None, &setup);
    recipe.pip = PipSteps {
        index: true,
        constraints: Some("py==1.11.0\n".to_owned()),
        lock: true,
    };
    let text = dockerfile(&recipe);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "FROM sha256:abc",
            "ARG PIP_INDEX_URL",
            "ARG PIP_CONSTRAINT=/tmp/aci-setup/constraints.txt"
        ]
    );
    assert!(
        lines[4].contains(
            " && bash /tmp/aci-setup/1.sh && /opt/aci-venv/bin/python -m pip freeze --all | sed \
             's/^/[aci] lock: /' && rm -rf /tmp/aci-setup && "
        ),
        "{}",
        lines[4]
    );
    let context = build_context(&recipe, &[]).unwrap();
    let mut outer = tar::Archive::new(context.as_slice());
    let mut setup_tar = Vec::new();
    for entry in outer.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some("setup.tar") {
            std::io::Read::read_to_end(&mut entry, &mut setup_tar).unwrap();
        }
    }
    let mut inner = tar::Archive::new(setup_tar.as_slice());
    let files: Vec<(String, String)> = inner
        .entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().display().to_string();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
            (name, text)
        })
        .collect();
    assert_eq!(
        files[1],
        (
            "tmp/aci-setup/constraints.txt".to_owned(),
            "py==1.11.0\n".to_owned()
        )
    );
}

#[test]
fn without_setup_the_dockerfile_only_adds_the_repository_and_its_baseline() {
    let recipe = recipe(Some(repo::Baseline::Fresh { force: true }), &[]);
    let baseline = repo::baseline_script(repo::Baseline::Fresh { force: true });
    assert_eq!(
        dockerfile(&recipe),
        format!(
            "FROM sha256:abc\nADD repo.tar /\nRUN mkdir -p /testbed && cd /testbed && {baseline}\n"
        )
    );
}

#[test]
fn without_a_repository_only_setup_runs_in_repo_dir() {
    let setup = ["make".to_owned()];
    let mut recipe = recipe(None, &setup);
    recipe.repo_dir = "/work/my dir";
    let text = dockerfile(&recipe);
    assert!(text.starts_with(
        "FROM sha256:abc\nADD setup.tar /\nRUN mkdir -p '/work/my dir' && cd '/work/my dir' && \
         bash /tmp/aci-setup/1.sh && rm -rf /tmp/aci-setup && "
    ));
}

#[test]
fn setup_scripts_announce_their_step_and_stop_at_the_first_failure_in_the_repository() {
    assert_eq!(
        setup_script("/testbed", "\npip install -e .\nmake", 2, 3),
        "set -eo pipefail\nexec 2>&1\nexport PYTHONUNBUFFERED=1\necho '[aci] step: setup 2 of 3: pip install -e .'\ncd /testbed\n\npip \
         install -e .\nmake\n"
    );
}

#[test]
fn the_env_hash_changes_with_every_input() {
    let setup = vec!["make".to_owned()];
    let base = env_hash("sha256:1", "tar", "/testbed", &setup, None);
    assert_eq!(base.len(), 64);
    assert_eq!(base, env_hash("sha256:1", "tar", "/testbed", &setup, None));
    assert_ne!(base, env_hash("sha256:2", "tar", "/testbed", &setup, None));
    assert_ne!(base, env_hash("sha256:1", "tar2", "/testbed", &setup, None));
    assert_ne!(base, env_hash("sha256:1", "tar", "/work", &setup, None));
    assert_ne!(base, env_hash("sha256:1", "tar", "/testbed", &[], None));
    // A cutoff is part of the hash, and two cutoffs differ.
    let dated = env_hash(
        "sha256:1",
        "tar",
        "/testbed",
        &setup,
        Some("2019-05-15T13:51:41Z"),
    );
    assert_ne!(base, dated);
    assert_ne!(
        dated,
        env_hash(
            "sha256:1",
            "tar",
            "/testbed",
            &setup,
            Some("2019-05-15T13:51:42Z")
        )
    );
    // Length prefixes: moving text between fields changes the hash.
    assert_ne!(
        env_hash("a", "b", "c", &["de".to_owned()], None),
        env_hash("a", "b", "cd", &["e".to_owned()], None)
    );
}

#[test]
fn env_tags_name_the_language_and_twelve_hex_digits() {
    let hash = "0123456789abcdef".repeat(4);
    assert_eq!(
        env_tag(&instance(Some("rust"), None), &hash),
        "aci-env-rust:0123456789ab"
    );
    assert_eq!(
        env_tag(&instance(None, None), &hash),
        "aci-env-python:0123456789ab"
    );
    assert_eq!(
        env_tag(&instance(Some("C++"), Some("x")), &hash),
        "aci-env-c--:0123456789ab"
    );
    assert_eq!(
        env_tag(&instance(None, Some("x")), &hash),
        "aci-env-custom:0123456789ab"
    );
}

#[test]
fn free_space_is_read_from_the_file_system_and_unknown_for_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    assert!(free_kb(path).is_some_and(|kb| kb > 0), "{path}");
    assert_eq!(free_kb(&format!("{path}/missing")), None);
}

#[test]
fn only_low_disk_stops_the_run() {
    let low = EnvImageError::LowDisk {
        dir: "/var/lib/docker".to_owned(),
        free_gb: 4.25,
        min_gb: 10.0,
    };
    assert!(low.is_run_level());
    assert_eq!(
        crate::hint::with_hint(&low),
        "only 4.2 GB free on /var/lib/docker (the Docker root); building environment images \
         needs env.min_free_disk_gb = 10 GB\nhint: free space with `aci images prune` (one run's \
         images: --run-id ID), or lower env.min_free_disk_gb"
    );
    let build = EnvImageError::Build {
        instance_id: "a".to_owned(),
        tag: "t".to_owned(),
        message: "m".to_owned(),
        hint: None,
    };
    assert!(!build.is_run_level());
}

#[test]
fn a_failed_step_names_the_step_instead_of_quoting_the_whole_script() {
    let message = "building t: Docker stream error: The command '/bin/sh -c mkdir -p /testbed && \
                   bash /tmp/aci-setup/1.sh' returned a non-zero code: 3\nStep 3/4 : RUN x\nboom\n";
    assert_eq!(
        shorten_step_error(message),
        "building t: Docker stream error: the RUN step (baseline and setup) returned a non-zero \
         code: 3\nStep 3/4 : RUN x\nboom\n"
    );
}

#[test]
fn a_build_that_failed_is_answered_with_its_error_and_not_tried_again() {
    let locks = BuildLocks::default();
    assert_eq!(locks.failed("env-1"), None);
    let failure = EnvImageError::Build {
        instance_id: "a__a-1".to_owned(),
        tag: "aci-env-python:1".to_owned(),
        message: "failed at step `setup 1 of 1: python -m pip install -e .`".to_owned(),
        hint: Some("try env.resolve_as_of: created_at".to_owned()),
    };
    locks.remember("env-1", &failure);
    // A daemon error is not a build's verdict: the next instance tries.
    locks.remember(
        "env-2",
        &EnvImageError::MissingBase {
            instance_id: "a__a-1".to_owned(),
            image: "aci-python:bookworm".to_owned(),
        },
    );
    let again = (
        "it failed earlier in this run, and is not tried again: failed at step `setup 1 of 1: \
         python -m pip install -e .`"
            .to_owned(),
        Some("try env.resolve_as_of: created_at".to_owned()),
    );
    assert_eq!(locks.failed("env-1"), Some(again.clone()));
    assert_eq!(locks.failed("env-2"), None);
    // Remembered again from the answer, the prefix is not doubled.
    locks.remember(
        "env-1",
        &EnvImageError::Build {
            instance_id: "b__b-2".to_owned(),
            tag: "aci-env-python:1".to_owned(),
            message: again.0.clone(),
            hint: again.1.clone(),
        },
    );
    assert_eq!(locks.failed("env-1"), Some(again));
}
