//! The guard over a process's containers (`aci::sandbox::guard::run_guarded`, which `main` runs
//! every command under), on the real Docker daemon: a panic in the top-level work, or in an
//! instance task, leaves no container of the process behind once the guarded work returns.
//!
//! The guard removes every container of this process, so the tests of this file (one test
//! binary, one process) run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/k8s/mod.rs"]
mod standin;
mod support;

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use aci::batch::progress::{Progress, Style};
use aci::batch::runner::schedule;
use aci::batch::{InstanceResult, Interrupt};
use aci::instance::{Instance, parse_instances};
use aci::sandbox::guard::run_guarded;
use aci::sandbox::{Sandbox, SandboxSpec};

static SERIAL: Mutex<()> = Mutex::new(());

/// A container spec labelled with `run_id`.
fn spec_in(run_id: &str, instance_id: &str) -> SandboxSpec {
    SandboxSpec {
        run_id: run_id.to_owned(),
        ..support::spec(instance_id, None)
    }
}

/// The containers the daemon has for `run_id` (any state), seen from a runtime of its own.
fn containers_of(run_id: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let docker = support::docker().await;
        docker.list_aci_containers(Some(run_id)).await.unwrap()
    })
}

fn instances(ids: &[&str]) -> VecDeque<(usize, Instance)> {
    let text: String = ids
        .iter()
        .map(|id| {
            format!(
                "{{\"instance_id\": \"{id}\", \"problem_statement\": \"p\", \"repo\": \"o/r\", \
                 \"base_commit\": \"0\"}}\n"
            )
        })
        .collect();
    let loaded = parse_instances(&text, None).unwrap();
    loaded.instances.into_iter().enumerate().collect()
}

fn result(id: &str, status: &str, reason: Option<String>) -> InstanceResult {
    InstanceResult {
        instance_id: id.to_owned(),
        exit_status: status.into(),
        cost: 0.0,
        has_patch: false,
        reason,
        run_failure: None,
    }
}

#[test]
fn a_panic_in_the_top_level_work_removes_every_container_the_process_started_before_it_returns() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let run = format!("test-guard-main-{}", std::process::id());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let in_work = run.clone();
    let result = run_guarded(runtime, async move {
        let docker = support::docker().await;
        let held = docker.start(&spec_in(&in_work, "held")).await.unwrap();
        // A task that is still running when the panic comes holds the other one.
        let (started, is_started) = tokio::sync::oneshot::channel();
        let background = docker.clone();
        let spec = spec_in(&in_work, "background");
        tokio::spawn(async move {
            let sandbox = background.start(&spec).await.unwrap();
            started.send(()).unwrap();
            std::future::pending::<()>().await;
            drop(sandbox);
        });
        is_started.await.unwrap();
        let live = docker.list_aci_containers(Some(&in_work)).await.unwrap();
        assert_eq!(live.len(), 2, "{live:?}");
        let _held = held;
        panic!("a broken invariant");
    });
    let panicked = result.unwrap_err();
    assert_eq!(panicked.message, "a broken invariant");
    assert_eq!(containers_of(&run), Vec::<String>::new());
}

#[test]
fn an_instance_task_that_panics_is_recorded_and_leaves_no_container_once_the_work_returns() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let run = format!("test-guard-task-{}", std::process::id());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let in_work = run.clone();
    let result = run_guarded(runtime, async move {
        let docker = support::docker().await;
        let task = move |instance: Instance, _interrupt: Interrupt| {
            let docker = docker.clone();
            let spec = spec_in(&in_work, &instance.instance_id);
            async move {
                let sandbox = docker.start(&spec).await.unwrap();
                assert_ne!(instance.instance_id, "boom", "boom in an instance task");
                sandbox.shutdown().await.unwrap();
                result(&instance.instance_id, "submitted", None)
            }
        };
        let on_panic = |instance: &Instance, message: String| {
            result(&instance.instance_id, "exit_error", Some(message))
        };
        let mut progress = Progress::new(Box::new(std::io::sink()), Style::Lines, 2);
        // The panicking task is the last: the work returns right after it.
        let queue = instances(&["fine", "boom"]);
        let scheduled = schedule(queue, 1, Interrupt::never(), task, on_panic, &mut progress).await;
        scheduled
            .outcomes
            .into_iter()
            .map(|(index, outcome)| match outcome {
                aci::batch::runner::Outcome::Ran { result, .. } => (
                    index,
                    result.exit_status.to_string(),
                    result
                        .reason
                        .is_some_and(|r| r.contains("boom in an instance task")),
                ),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(
        result.unwrap(),
        [
            (0, "submitted".to_owned(), false),
            (1, "exit_error".to_owned(), true)
        ]
    );
    assert_eq!(containers_of(&run), Vec::<String>::new());
}

/// A container's quota filesystem goes with it: unmounted, its loop device released and its
/// image file deleted by the guard's sweep.
#[test]
fn a_panic_leaves_no_quota_filesystem_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let run = format!("test-guard-disk-{}", std::process::id());
    let seen = std::sync::Arc::new(Mutex::new(None));
    let in_work = (run.clone(), std::sync::Arc::clone(&seen));
    let result = run_guarded(tokio::runtime::Runtime::new().unwrap(), async move {
        let (run, seen) = in_work;
        let docker = support::docker().await;
        let held = docker.start(&spec_in(&run, "disk")).await.unwrap();
        assert!(
            held.disk_usage().is_some(),
            "the disk quota is only measured here"
        );
        *seen.lock().unwrap() = Some(support::disk::disk_of(held.container_id()));
        let _held = held;
        panic!("a bug while the quota filesystem is mounted");
    });
    let panicked = result.unwrap_err();
    assert_eq!(
        panicked.message,
        "a bug while the quota filesystem is mounted"
    );
    assert_eq!(containers_of(&run), Vec::<String>::new());
    let (image, layer_dir) = seen.lock().unwrap().clone().unwrap();
    support::disk::assert_released(&image, &layer_dir);
}

/// The same for a pod of `--engine k8s`: a panic after a pod started leaves no pod, policy or
/// container of the stand-in cluster behind.
#[test]
fn a_panic_after_a_pod_started_deletes_the_pod_before_the_guarded_work_returns() {
    use aci::sandbox::k8s::manifest::PullPolicy;
    use aci::sandbox::k8s::status::StartLimits;
    use aci::sandbox::k8s::{K8sRuntime, K8sSettings, kubeconfig};
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    // The stand-in serves from a runtime of its own, which outlives the guarded one.
    let serving = tokio::runtime::Runtime::new().unwrap();
    let cluster = serving.block_on(standin::StandIn::start(standin::Options::default()));
    let path = cluster.kubeconfig().to_owned();
    let text = std::fs::read_to_string(&path).unwrap();
    let config = kubeconfig::from_kubeconfigs(&[(path, text)], None).unwrap();
    let settings = K8sSettings {
        namespace: None,
        context: None,
        pull_policy: PullPolicy::IfNotPresent,
        start_limits: StartLimits {
            pull: std::time::Duration::from_secs(120),
            schedule: std::time::Duration::from_secs(60),
        },
        pull_secret: None,
        node_selector: Default::default(),
    };
    let run = format!("test-guard-pod-{}", std::process::id());
    let spec = spec_in(&run, "pod");
    let result = run_guarded(tokio::runtime::Runtime::new().unwrap(), async move {
        let runtime = K8sRuntime::connect_with(config, settings).await.unwrap();
        let mut pod = runtime.start(&spec, 600.0).await.unwrap();
        assert_eq!(
            pod.run("echo up", support::SHORT).await.unwrap().stdout,
            b"up\n"
        );
        // A sandbox dropped while unwinding asks for its own deletion, which may or may not
        // finish before the sweep; one that is lost instead (a task aborted, a leak) leaves it
        // to the sweep alone, which is what this test is about.
        std::mem::forget(pod);
        panic!("a bug after the pod started");
    });
    let panicked = result.unwrap_err();
    assert_eq!(panicked.message, "a bug after the pod started");
    assert!(panicked.removed >= 1, "{panicked:?}");
    assert_eq!(
        cluster.pod_names(),
        Vec::<(String, String)>::new(),
        "pods left"
    );
    assert!(cluster.policies().is_empty(), "policies left");
    assert_eq!(
        cluster.containers_settled(),
        Vec::<String>::new(),
        "stand-in containers left"
    );
}
