//! The bridge to a daemon behind ssh. bollard speaks HTTP over a Unix socket, the Docker CLI
//! over the standard input and output of `ssh … docker system dial-stdio`; the bridge joins
//! them: a socket in a private directory (0700) of its own, each connection it accepts carried
//! by a new ssh child, as the CLI opens one per connection. It runs on a thread of its own, so
//! it outlives the runtimes its clients come and go on; dropping it stops accepting, ends every
//! child and waits for them, and removes the directory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::process::Command;
use tokio::sync::{oneshot, watch};

/// The last line an ssh child that failed wrote on its standard error.
type Failure = Arc<Mutex<Option<String>>>;

/// A running bridge: its socket, and what its last failed ssh child said.
pub(super) struct SshBridge {
    socket: PathBuf,
    failure: Failure,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Removed once the thread has ended.
    _dir: tempfile::TempDir,
}

impl SshBridge {
    /// Starts the bridge; each connection runs `ssh <args>`, found on `PATH` as the Docker CLI
    /// finds it.
    ///
    /// # Errors
    /// The private directory, its socket or the thread cannot be made.
    pub(super) fn start(args: Vec<String>) -> Result<Self, String> {
        Self::start_with("ssh", args)
    }

    /// [`Self::start`] with another program than ssh in the middle: the tests' `sh`.
    fn start_with(program: &'static str, args: Vec<String>) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("aci-ssh-")
            .tempdir()
            .map_err(|error| format!("cannot make a directory for the ssh bridge: {error}"))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).map_err(
                |error| format!("cannot make {} private: {error}", dir.path().display()),
            )?;
        }
        let socket = dir.path().join("docker.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
            .map_err(|error| format!("cannot listen on {}: {error}", socket.display()))?;
        let failure = Failure::default();
        let (stop, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the ssh bridge: {error}"))?;
        let thread = std::thread::Builder::new()
            .name("aci-ssh-bridge".to_owned())
            .spawn({
                let failure = failure.clone();
                move || runtime.block_on(serve(listener, program, Arc::new(args), failure, stopped))
            })
            .map_err(|error| format!("cannot start the ssh bridge: {error}"))?;
        Ok(Self {
            socket,
            failure,
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        })
    }

    /// The socket bollard connects to.
    pub(super) fn socket(&self) -> &Path {
        &self.socket
    }

    /// The last line of the standard error of the last ssh child that exited with a failure.
    pub(super) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for SshBridge {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stopped`, then ends the children and waits for them.
async fn serve(
    listener: std::os::unix::net::UnixListener,
    program: &'static str,
    args: Arc<Vec<String>>,
    failure: Failure,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::UnixListener::from_std(listener) else {
        return;
    };
    let (quit, quitting) = watch::channel(false);
    let mut sessions = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    let (args, failure) = (args.clone(), failure.clone());
                    sessions.spawn(carry(client, program, args, failure, quitting.clone()));
                }
                // Out of descriptors, say: the client sees its connection refused or pending.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            },
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
        }
    }
    let _ = quit.send(true);
    while sessions.join_next().await.is_some() {}
}

/// Carries one connection through a new ssh child. When the child's output ends, its exit is
/// awaited, and a failure's last line recorded, before the client's connection is closed: the
/// client that sees the end finds the reason already there.
async fn carry(
    client: UnixStream,
    program: &str,
    args: Arc<Vec<String>>,
    failure: Failure,
    mut quitting: watch::Receiver<bool>,
) {
    let record = |line: String| {
        *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(line);
    };
    let spawned = Command::new(program)
        .args(args.iter())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            record(format!("cannot run {program}: {error}"));
            return;
        }
    };
    let (Some(mut stdin), Some(mut stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let session = async {
        // The client's requests to ssh; its end of writing is ssh's end of input.
        let up = tokio::spawn(async move {
            let _ = tokio::io::copy(&mut client_read, &mut stdin).await;
            let _ = stdin.shutdown().await;
        });
        let last_line = tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            let mut last = None;
            while let Ok(Some(line)) = lines.next_line().await {
                if !line.trim().is_empty() {
                    last = Some(line.trim().to_owned());
                }
            }
            last
        });
        let copied = tokio::io::copy(&mut stdout, &mut client_write).await;
        up.abort();
        if copied.is_err() {
            // The client is gone while the remote still talks (a stream it stopped reading):
            // nothing to wait for, and no failure of ssh's.
            let _ = child.kill().await;
            return;
        }
        let status = child.wait().await;
        // A process ssh left behind could hold its standard error open: not for long.
        let last = tokio::time::timeout(std::time::Duration::from_secs(2), last_line)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten();
        if !status.is_ok_and(|status| status.success()) {
            record(last.unwrap_or_else(|| "ssh ended without a word".to_owned()));
        }
    };
    tokio::select! {
        () = session => {}
        _ = quitting.changed() => {}
    }
    let _ = child.kill().await;
    let _ = client_write.shutdown().await;
}

#[cfg(test)]
mod tests;
