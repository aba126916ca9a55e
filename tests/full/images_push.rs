//! `aci images push` against a real registry on loopback (Debian's `docker-registry`, started
//! here with a temporary storage directory), and a batch on the Kubernetes stand-in whose
//! node pulls the pushed environment image from that registry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;
use crate::standin;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use batch_support::*;
use serde_json::Value;
use standin::{Options, StandIn};

/// A `docker-registry` serving on a free loopback port, its storage in a temporary directory.
struct Registry {
    child: Child,
    host: String,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let host = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: {host}\n",
            dir.path().join("storage").display()
        );
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        let child = Command::new("/usr/bin/docker-registry")
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.path().join("log")).unwrap(),
            ))
            .spawn()
            .expect("this test needs Debian's docker-registry package (/usr/bin/docker-registry)");
        let registry = Registry {
            child,
            host,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while registry.get("/v2/").is_none() {
            assert!(Instant::now() < deadline, "the registry did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
        registry
    }

    /// GET `path` of the registry's API: the JSON body of a 200, else `None`.
    fn get(&self, path: &str) -> Option<(Value, Option<String>)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        aci::tls::install_provider();
        runtime.block_on(async {
            let response = reqwest::Client::new()
                .get(format!("http://{}{path}", self.host))
                .header(
                    "Accept",
                    "application/vnd.docker.distribution.manifest.v2+json",
                )
                .send()
                .await
                .ok()?;
            if !response.status().is_success() {
                return None;
            }
            let digest = response
                .headers()
                .get("Docker-Content-Digest")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            Some((response.json().await.unwrap_or(Value::Null), digest))
        })
    }

    fn tags(&self, repository: &str) -> Vec<String> {
        let (list, _) = self.get(&format!("/v2/{repository}/tags/list")).unwrap();
        list["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn images_push_pushes_what_the_instances_need_once_and_the_cluster_pulls_it() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let id = "demo__inicfg-1";
    let instances = write_instances(dir.path(), &[id], &[]);
    let push = || -> Run {
        aci()
            .args(["images", "push", "--registry", &registry.host])
            .args(["--instances", instances.to_str().unwrap()])
            .output()
            .unwrap()
            .into()
    };
    let first = push();
    first.expect_code(0);
    let lines: Vec<&str> = first.stdout.lines().collect();
    let host = &registry.host;
    assert_eq!(lines.len(), 3, "{}", first.stdout);
    assert_eq!(lines[0], format!("{host}/aci-base:bookworm\tpushed"));
    assert_eq!(lines[1], format!("{host}/aci-python:bookworm\tpushed"));
    let env_tag = lines[2]
        .strip_prefix(&format!("{host}/aci-env-python:"))
        .and_then(|rest| rest.strip_suffix("\tpushed"))
        .unwrap_or_else(|| panic!("{}", lines[2]));
    assert_eq!(env_tag.len(), 12);
    assert!(env_tag.bytes().all(|b| b.is_ascii_hexdigit()));
    // The registry holds each tag, with the manifest the local image was pushed as.
    let (catalog, _) = registry.get("/v2/_catalog").unwrap();
    let mut repositories: Vec<&str> = catalog["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    repositories.sort_unstable();
    assert_eq!(repositories, ["aci-base", "aci-env-python", "aci-python"]);
    for (repository, tag) in [
        ("aci-base", "bookworm"),
        ("aci-python", "bookworm"),
        ("aci-env-python", env_tag),
    ] {
        assert_eq!(registry.tags(repository), [tag]);
        let (_, digest) = registry
            .get(&format!("/v2/{repository}/manifests/{tag}"))
            .unwrap();
        let local = docker(&[
            "image",
            "inspect",
            "--format",
            "{{json .RepoDigests}}",
            &format!("{repository}:{tag}"),
        ]);
        let expected = format!("{host}/{repository}@{}", digest.unwrap());
        assert!(local.contains(&expected), "{local} lacks {expected}");
    }

    // Nothing new: the second run pushes nothing.
    let second = push();
    second.expect_code(0);
    let expected: Vec<String> = lines
        .iter()
        .map(|line| line.replace("\tpushed", "\tpresent"))
        .collect();
    assert_eq!(second.stdout.lines().collect::<Vec<_>>(), expected);

    // A batch on the cluster with that registry: the node pulls the environment image from
    // it (the local copy of the registry's tag is removed first, so only a pull brings it).
    let reference = format!("{host}/aci-env-python:{env_tag}");
    for tag in ["aci-base:bookworm", "aci-python:bookworm"]
        .iter()
        .map(|t| format!("{host}/{t}"))
        .chain([reference.clone()])
    {
        docker(&["rmi", &tag]);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let standin = rt.block_on(StandIn::start(Options::default()));
    let out = dir.path().join("out");
    let run = run_id("k8s-registry");
    let batch: Run = aci()
        .args(["batch", "--instances", instances.to_str().unwrap()])
        .args(["--replay-dir", demo_dir().join("replays").to_str().unwrap()])
        .args(["--output", out.to_str().unwrap(), "--run-id", &run])
        .args(["--engine", "k8s", "--registry", host])
        .env("KUBECONFIG", standin.kubeconfig())
        .output()
        .unwrap()
        .into();
    batch.expect_code(0);
    assert_eq!(exit_status(&out, id), "submitted");
    let images: Vec<String> = standin
        .history()
        .into_iter()
        .filter(|h| h.kind == "running")
        .map(|h| h.image)
        .collect();
    assert_eq!(images, std::slice::from_ref(&reference));
    assert!(
        !docker(&["image", "inspect", "--format", "{{.Id}}", &reference]).is_empty(),
        "pulled"
    );
    docker(&["rmi", &reference]);
    assert!(standin.pod_names().is_empty() && standin.containers_settled().is_empty());
}
