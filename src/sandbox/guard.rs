//! The guard over a process's containers and pods: [`run_guarded`] drives the process's async
//! work to its end and then, whatever ended it (its result, or a panic unwinding out of it),
//! removes every container and every Kubernetes pod the process created before returning. The commands remove their containers
//! on their own paths too; this is what still holds when one of those paths never runs.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use super::{docker, k8s};

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

/// Runs `future` on `runtime` to its end, then shuts the runtime down (its remaining tasks
/// are dropped, so none starts a container afterwards) and removes every container this process
/// created that is still there ([`docker::remove_containers_of_this_process`]), and every pod
/// ([`k8s::delete_pods_of_this_process`]). A panic of
/// `future` is caught, so the sweep runs before the process exits; it comes back as
/// [`Panicked`]. The default panic hook has printed the panic's message and place by then.
///
/// # Errors
/// [`Panicked`] when `future` panicked.
pub fn run_guarded<F: Future>(
    runtime: tokio::runtime::Runtime,
    future: F,
) -> Result<F::Output, Panicked> {
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(future)));
    runtime.shutdown_timeout(SHUTDOWN_LIMIT);
    let removed = sweep();
    result.map_err(|payload| Panicked {
        message: panic_message(payload.as_ref()),
        removed,
    })
}

/// Removes this process's containers on a runtime of its own; 0 when it cannot.
fn sweep() -> usize {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return 0;
    };
    runtime.block_on(sweep_within(SWEEP_LIMIT))
}

/// The sweep of [`run_guarded`] from inside the running work, for a process about to exit
/// without returning to it (a second Ctrl-C): every container and pod this process created,
/// within [`QUIT_SWEEP_LIMIT`] each; how many were removed. No container is created after it
/// has begun.
pub async fn sweep_before_exit() -> usize {
    docker::close_creation();
    sweep_within(QUIT_SWEEP_LIMIT).await
}

/// Removes this process's containers, then its pods, each within `limit`.
async fn sweep_within(limit: Duration) -> usize {
    let containers =
        match tokio::time::timeout(limit, docker::remove_containers_of_this_process()).await {
            Ok(Ok(removed)) => removed,
            _ => 0,
        };
    let pods = tokio::time::timeout(limit, k8s::delete_pods_of_this_process())
        .await
        .unwrap_or(0);
    containers + pods
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
