//! The guard over a process's containers and pods: [`run_guarded`] drives the process's async
//! work to its end and then, whatever ended it (its result, or a panic unwinding out of it),
//! removes every container and every Kubernetes pod the process created before returning. The commands remove their containers
//! on their own paths too; this is what still holds when one of those paths never runs.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::docker::DockerRuntime;
use super::k8s::{self, K8sRuntime};

/// How long the final sweep may take (the daemon may be gone).
const SWEEP_LIMIT: Duration = Duration::from_secs(60);
/// How long the sweep of a second Ctrl-C may take: the person asked to quit at once.
pub const QUIT_SWEEP_LIMIT: Duration = Duration::from_secs(15);
/// How long the runtime's tasks get to stop before the sweep (a blocked read of the terminal
/// is not waited for).
const SHUTDOWN_LIMIT: Duration = Duration::from_millis(200);

/// The async work panicked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panicked {
    /// The panic's message.
    pub message: String,
    /// Containers and pods the sweep removed.
    pub removed: usize,
}

/// What the guarded work connected to: the Docker daemons and the clusters whose containers
/// and pods the guard's sweep removes. [`run_guarded`] makes one per guarded work, and
/// [`DockerRuntime::connect`] and [`K8sRuntime::connect_with`] tell it of each connection
/// made inside that work, so two guarded works in one process each sweep their own
/// connections (a connection made in a task spawned from the work is not told). Clones share
/// it.
#[derive(Clone, Default)]
pub struct Guard {
    watched: Arc<Mutex<Watched>>,
}

#[derive(Default)]
struct Watched {
    docker: Vec<DockerRuntime>,
    clusters: Vec<K8sRuntime>,
    /// Whether [`Guard::close_creation`] was called: a connection made later is closed too.
    closed: bool,
}

tokio::task_local! {
    /// The guard of the work being polled, set by [`run_guarded`].
    static CURRENT: Guard;
}

impl Guard {
    /// The guard of the guarded work this is called from; `None` outside one, and in a task
    /// spawned from it (take it before spawning).
    pub fn current() -> Option<Guard> {
        CURRENT.try_with(Guard::clone).ok()
    }

    fn watched(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// From now on no container is created through any Docker connection of this guard, those
    /// made later included: for a sweep of a process about to exit while its tasks still run.
    pub fn close_creation(&self) {
        let mut watched = self.watched();
        watched.closed = true;
        for docker in &watched.docker {
            docker.close_creation();
        }
    }

    /// The sweep of [`run_guarded`] from inside the running work, for a process about to exit
    /// without returning to it (a second Ctrl-C): every container and pod this process created,
    /// within [`QUIT_SWEEP_LIMIT`] each; how many were removed. No container is created after
    /// it has begun.
    pub async fn sweep_before_exit(&self) -> usize {
        self.close_creation();
        self.sweep_within(QUIT_SWEEP_LIMIT).await
    }

    /// Removes this process's containers (through the first daemon connection: the labels
    /// find them all), then its pods in every cluster, each within `limit`.
    async fn sweep_within(&self, limit: Duration) -> usize {
        let (docker, clusters) = {
            let watched = self.watched();
            (watched.docker.first().cloned(), watched.clusters.clone())
        };
        let containers = match docker {
            Some(docker) => {
                match tokio::time::timeout(limit, docker.remove_containers_of_this_process()).await
                {
                    Ok(Ok(removed)) => removed,
                    _ => 0,
                }
            }
            None => 0,
        };
        let pods = tokio::time::timeout(limit, k8s::delete_pods_of_this_process(&clusters))
            .await
            .unwrap_or(0);
        containers + pods
    }
}

/// Tells the guard of the work this is called from, if any, of a new Docker connection.
pub(super) fn watch_docker(runtime: &DockerRuntime) {
    if let Some(guard) = Guard::current() {
        let mut watched = guard.watched();
        if watched.closed {
            runtime.close_creation();
        }
        watched.docker.push(runtime.clone());
    }
}

/// Tells the guard of the work this is called from, if any, of a new cluster connection.
pub(super) fn watch_cluster(runtime: &K8sRuntime) {
    if let Some(guard) = Guard::current() {
        guard.watched().clusters.push(runtime.clone());
    }
}

/// Runs `future` on `runtime` to its end under a [`Guard`] of its own, then shuts the runtime
/// down (its remaining tasks are dropped, so none starts a container afterwards) and removes
/// every container this process created that is still there
/// ([`DockerRuntime::remove_containers_of_this_process`]) and every pod
/// ([`k8s::delete_pods_of_this_process`]), through the connections the work made. A panic of
/// `future` is caught, so the sweep runs before the process exits; it comes back as
/// [`Panicked`]. The default panic hook has printed the panic's message and place by then.
///
/// # Errors
/// [`Panicked`] when `future` panicked.
pub fn run_guarded<F: Future>(
    runtime: tokio::runtime::Runtime,
    future: F,
) -> Result<F::Output, Panicked> {
    let guard = Guard::default();
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        runtime.block_on(CURRENT.scope(guard.clone(), future))
    }));
    runtime.shutdown_timeout(SHUTDOWN_LIMIT);
    let removed = sweep(&guard);
    result.map_err(|payload| Panicked {
        message: panic_message(payload.as_ref()),
        removed,
    })
}

/// Removes the guarded work's containers and pods on a runtime of its own; 0 when it cannot.
fn sweep(guard: &Guard) -> usize {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return 0;
    };
    runtime.block_on(guard.sweep_within(SWEEP_LIMIT))
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}
