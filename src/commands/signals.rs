//! SIGINT (Ctrl-C) and SIGTERM for the commands that start tasks: the first stops the work in
//! order, the second quits at once after removing what this process started.

use std::sync::Arc;

use aci::batch::{self, ahead::K8sRun};
use aci::sandbox::docker::DockerRuntime;

use super::{Failure, engine};

/// SIGINT (Ctrl-C) and SIGTERM: the first one stops the batch in order, the second quits at
/// once, after removing every container and pod this process created (bounded in time).
pub struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn listen() -> Result<Self, Failure> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| {
            signal(kind).map_err(|e| Failure::new(format!("cannot listen for signals: {e}")))
        };
        Ok(Self {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    /// Waits for the first SIGINT or SIGTERM.
    pub async fn first(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }

    /// A flag that the first SIGINT or SIGTERM sets; later ones are let go (the work stops
    /// in order, once).
    pub fn first_sets(mut self) -> batch::Interrupt {
        let (handle, interrupt) = batch::Interrupt::new();
        tokio::spawn(async move {
            self.first().await;
            handle.trigger();
            // Still listening, so that a later signal does not kill the process.
            std::future::pending::<()>().await;
        });
        interrupt
    }

    /// A flag that the first SIGINT or SIGTERM sets; the second quits at once, after removing
    /// the containers of `docker` and the pods of `runtime` (and the guard's sweep).
    pub fn spawn(
        mut self,
        docker: Option<DockerRuntime>,
        ahead: Option<Arc<K8sRun>>,
    ) -> batch::Interrupt {
        let (handle, interrupt) = batch::Interrupt::new();
        let guard = aci::sandbox::guard::Guard::current();
        tokio::spawn(async move {
            let mut count = 0;
            loop {
                self.first().await;
                count += 1;
                if count == 1 {
                    handle.trigger();
                    continue;
                }
                eprintln!("interrupted again: removing the containers and quitting");
                // The run's own clean-up, then the guard's sweep by label (which also finds a
                // container whose creation had not returned yet), each bounded in time.
                if let Some(guard) = &guard {
                    guard.close_creation();
                }
                let limit = aci::sandbox::guard::QUIT_SWEEP_LIMIT;
                let own = async {
                    if let Some(docker) = &docker {
                        docker.remove_all_started().await;
                    }
                    engine::finish(ahead.as_deref()).await;
                };
                let _ = tokio::time::timeout(limit, own).await;
                if let Some(guard) = &guard {
                    guard.sweep_before_exit().await;
                }
                std::process::exit(130);
            }
        });
        interrupt
    }
}
