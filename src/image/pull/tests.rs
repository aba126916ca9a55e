//! Unit tests of image names, registry logins and the pull tally.

use super::*;

fn instance(id: &str, repo: &str) -> Instance {
    let record = serde_json::json!({
        "instance_id": id, "problem_statement": "p", "repo": repo, "base_commit": "abc",
    });
    crate::instance::parse_instances(&record.to_string(), None)
        .unwrap()
        .instances
        .remove(0)
}

#[test]
fn swe_bench_spells_ids_in_lower_case_with_1776_for_the_double_underscore() {
    assert_eq!(
        id_docker("django__django-11099"),
        "django_1776_django-11099"
    );
    assert_eq!(id_docker("pydata__xarray-4094"), "pydata_1776_xarray-4094");
    assert_eq!(id_docker("Foo__Bar__Baz-1"), "foo_1776_bar_1776_baz-1");
    let astropy = instance("astropy__astropy-12907", "astropy/astropy");
    assert_eq!(
        image_from_template(SWEBENCH_IMAGE_TEMPLATE, &astropy),
        "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"
    );
    assert_eq!(
        image_from_template("r.example:5000/{repo}/{instance_id}", &astropy),
        "r.example:5000/astropy/astropy/astropy__astropy-12907"
    );
}

#[test]
fn the_swebench_preset_is_a_config_layer_with_the_template_and_the_conda_activation() {
    let preset = swebench_preset();
    let config = crate::config::resolve_text(&[("--images swebench", &preset)], &[]).unwrap();
    assert_eq!(
        config.env.image_template.as_deref(),
        Some(SWEBENCH_IMAGE_TEMPLATE)
    );
    assert_eq!(
        config.env.activate.as_deref(),
        Some("source /opt/miniconda3/bin/activate && conda activate testbed")
    );
}

#[test]
fn registries_are_read_from_the_first_component_as_docker_reads_them() {
    assert_eq!(
        registry_of("swebench/sweb.eval.x86_64.a:latest"),
        "docker.io"
    );
    assert_eq!(registry_of("ubuntu"), "docker.io");
    assert_eq!(
        registry_of("127.0.0.1:5000/swebench/x:latest"),
        "127.0.0.1:5000"
    );
    assert_eq!(registry_of("ghcr.io/o/i"), "ghcr.io");
    assert_eq!(registry_of("localhost/i:1"), "localhost");
    assert_eq!(pull_reference("swebench/x"), "swebench/x:latest");
    assert_eq!(
        pull_reference("127.0.0.1:5000/x"),
        "127.0.0.1:5000/x:latest"
    );
    assert_eq!(pull_reference("127.0.0.1:5000/x:v1"), "127.0.0.1:5000/x:v1");
    assert_eq!(pull_reference("x@sha256:ab"), "x@sha256:ab");
}

#[test]
fn a_login_comes_from_auths_by_host_with_the_auth_field_decoded() {
    // "user:pa:ss" in base64.
    let config = r#"{"auths": {
        "https://index.docker.io/v1/": {"auth": "dXNlcjpwYTpzcw=="},
        "http://127.0.0.1:5000/v2/": {"username": "u", "password": "p"},
        "ghcr.io": {"identitytoken": "tok"}
    }, "credsStore": "desktop"}"#;
    let hub = login_for(config, "docker.io").unwrap();
    assert_eq!(
        hub,
        RegistryLogin {
            server: "https://index.docker.io/v1/".to_owned(),
            username: Some("user".to_owned()),
            password: Some("pa:ss".to_owned()),
            identity_token: None,
        }
    );
    let local = login_for(config, "127.0.0.1:5000").unwrap();
    assert_eq!(
        (local.username.as_deref(), local.password.as_deref()),
        (Some("u"), Some("p"))
    );
    assert_eq!(local.server, "http://127.0.0.1:5000/v2/");
    let ghcr = login_for(config, "ghcr.io").unwrap();
    assert_eq!(ghcr.identity_token.as_deref(), Some("tok"));
    assert_eq!(login_for(config, "quay.io"), None);
    assert_eq!(login_for("not json", "docker.io"), None);
}

#[test]
fn base64_decodes_with_and_without_padding_and_refuses_other_bytes() {
    assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
    assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
    assert_eq!(base64_decode("YQ==").unwrap(), b"a");
    assert_eq!(base64_decode("").unwrap(), b"");
    assert_eq!(base64_decode("a$b"), None);
}

fn event(id: &str, status: &str, current: Option<u64>, total: Option<u64>) -> PullEvent {
    PullEvent {
        id: Some(id.to_owned()),
        status: status.to_owned(),
        current,
        total,
    }
}

#[test]
fn a_pull_is_tallied_in_layers_done_and_bytes_downloaded() {
    let mut tally = PullTally::default();
    let events = [
        event("latest", "Pulling from swebench/x", None, None),
        event("aaa", "Already exists", None, None),
        event("bbb", "Pulling fs layer", None, None),
        event("ccc", "Pulling fs layer", None, None),
        event("bbb", "Downloading", Some(500_000), Some(2_000_000)),
        event("ccc", "Downloading", Some(100_000), Some(1_000_000)),
    ];
    let finished: Vec<bool> = events.iter().map(|e| tally.record(e)).collect();
    assert_eq!(finished, [false, true, false, false, false, false]);
    assert_eq!(tally.summary(), "1/3 layers, 0.6/3.0 MB (1 already here)");
    assert!(!tally.record(&event("bbb", "Download complete", None, None)));
    assert!(!tally.record(&event("bbb", "Extracting", Some(10), Some(20))));
    assert!(tally.record(&event("bbb", "Pull complete", None, None)));
    assert!(
        !tally.record(&event("bbb", "Pull complete", None, None)),
        "once"
    );
    assert_eq!(tally.summary(), "2/3 layers, 2.1/3.0 MB (1 already here)");
    let digest = PullEvent {
        id: None,
        status: "Digest: sha256:00".to_owned(),
        ..PullEvent::default()
    };
    assert!(!tally.record(&digest));
    assert_eq!(tally.summary(), "2/3 layers, 2.1/3.0 MB (1 already here)");
}

#[test]
fn a_layer_past_its_download_counts_whole_when_the_daemon_dropped_download_complete() {
    // What the daemon sent for a 3 MB layer when its reader lagged: "Download complete"
    // and the later download messages were coalesced into the extraction's.
    let mut tally = PullTally::default();
    for e in [
        event("aaa", "Pulling fs layer", None, None),
        event("aaa", "Downloading", Some(36_445), Some(3_001_166)),
        event("aaa", "Extracting", Some(32_768), Some(3_001_166)),
    ] {
        tally.record(&e);
    }
    assert_eq!(tally.summary(), "0/1 layers, 3.0/3.0 MB");
    assert!(tally.record(&event("aaa", "Pull complete", None, None)));
    assert_eq!(tally.summary(), "1/1 layers, 3.0/3.0 MB");

    // With no download message at all, the extraction's total is the layer's size.
    let mut tally = PullTally::default();
    for e in [
        event("bbb", "Pulling fs layer", None, None),
        event("bbb", "Extracting", Some(32_768), Some(2_000_000)),
        event("bbb", "Pull complete", None, None),
    ] {
        tally.record(&e);
    }
    assert_eq!(tally.summary(), "1/1 layers, 2.0/2.0 MB");

    // A layer that only finished, with no size anywhere, counts what was seen of it.
    let mut tally = PullTally::default();
    tally.record(&event("ccc", "Pull complete", None, None));
    assert_eq!(tally.summary(), "1/1 layers, 0.0/0.0 MB");
}

#[test]
fn the_record_of_pulled_images_round_trips_through_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/pulled-images");
    assert!(read_pulled(&path).unwrap().is_empty());
    let pulled = BTreeMap::from([
        ("a/b:latest".to_owned(), "sha256:1".to_owned()),
        ("c:2".to_owned(), "sha256:2".to_owned()),
    ]);
    write_pulled(&path, &pulled).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "a/b:latest\tsha256:1\nc:2\tsha256:2\n"
    );
    assert_eq!(read_pulled(&path).unwrap(), pulled);
}

/// Set in the child processes of the test below: the index of the child.
const WRITER: &str = "ACI_TEST_PULLED_RECORD_WRITER";

/// Entries each writer thread records.
const ENTRIES_PER_THREAD: usize = 15;
/// Threads in each writer process.
const THREADS_PER_WRITER: usize = 3;

#[test]
fn writers_in_many_processes_and_threads_lose_no_entry_of_the_pulled_record() {
    if let Ok(writer) = std::env::var(WRITER) {
        // A child: its cache root (XDG_CACHE_HOME) was set by the parent.
        std::thread::scope(|scope| {
            for thread in 0..THREADS_PER_WRITER {
                let writer = writer.clone();
                scope.spawn(move || {
                    for entry in 0..ENTRIES_PER_THREAD {
                        let name = format!("w{writer}-t{thread}-e{entry}:latest");
                        record_pulled(&name, &format!("sha256:{writer}{thread}{entry}")).unwrap();
                    }
                });
            }
        });
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let writers = 6;
    let children: Vec<std::process::Child> = (0..writers)
        .map(|writer| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "image::pull::tests::writers_in_many_processes_and_threads_lose_no_entry_of_the_pulled_record",
                    "--test-threads",
                    "1",
                    "--quiet",
                ])
                .env(WRITER, writer.to_string())
                .env("XDG_CACHE_HOME", cache.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let record = read_pulled(&cache.path().join("aci/pulled-images")).unwrap();
    let mut expected = BTreeMap::new();
    for writer in 0..writers {
        for thread in 0..THREADS_PER_WRITER {
            for entry in 0..ENTRIES_PER_THREAD {
                expected.insert(
                    format!("w{writer}-t{thread}-e{entry}:latest"),
                    format!("sha256:{writer}{thread}{entry}"),
                );
            }
        }
    }
    assert_eq!(record.len(), expected.len());
    assert_eq!(record, expected);
}

#[test]
fn a_registry_login_is_scrubbed_from_the_daemons_messages_in_every_form() {
    let login = RegistryLogin {
        server: "registry.example".to_owned(),
        username: Some("pusher".to_owned()),
        password: Some("hunter2-registry-password".to_owned()),
        identity_token: Some("identity-token-0f9e8d".to_owned()),
    };
    remember_login(&login);
    let auth = data_encoding::BASE64.encode(b"pusher:hunter2-registry-password");
    let error = scrubbed(SandboxError::Docker(DockerError::other(format!(
        "unauthorized: login pusher/hunter2-registry-password (auth {auth}, token \
         identity-token-0f9e8d) refused"
    ))));
    assert_eq!(
        error.to_string(),
        "docker: unauthorized: login pusher/<redacted> (auth <redacted>, token <redacted>) \
         refused"
    );
}
