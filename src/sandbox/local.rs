//! [`LocalSandbox`]: the [`Sandbox`] trait on a temporary copy of the repository, run by a
//! bash on the host.
//!
//! **This is not a sandbox.** Commands run as the invoking user with full access to the host,
//! its network and its files. It exists for tests and for machines without Docker; select it
//! with `--runtime local` only for trusted models and tasks.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc};

use super::shell::{Channel, Frame, KILL_TREE_SCRIPT, Shell, Streams, Transport};
use super::{ExecOutput, Sandbox, SandboxError, SandboxSpec, repo};

fn io_error(context: &str) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        context: context.to_owned(),
        source,
    }
}

/// Opens bash sessions as child processes of `aci`.
pub struct LocalTransport {
    workdir: String,
    child: Mutex<Option<Child>>,
}

impl Transport for LocalTransport {
    async fn open(&self) -> Result<Channel, SandboxError> {
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .current_dir(&self.workdir)
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(io_error("cannot start bash"))?;
        let (Some(input), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SandboxError::Session(
                "bash started without pipes".to_owned(),
            ));
        };
        let (sender, frames) = mpsc::channel(64);
        spawn_reader(stdout, sender.clone(), Frame::Stdout);
        spawn_reader(stderr, sender, Frame::Stderr);
        *self.child.lock().await = Some(child);
        Ok(Channel {
            input: Box::pin(input),
            frames,
        })
    }

    async fn interrupt(&self, shell_pid: u32) -> Result<(), SandboxError> {
        let status = Command::new("sh")
            .args(["-c", KILL_TREE_SCRIPT, "sh", &shell_pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .map_err(io_error("cannot run the interrupt script"))?;
        if status.success() {
            Ok(())
        } else {
            Err(SandboxError::Session(format!(
                "the interrupt script failed: {status}"
            )))
        }
    }

    async fn reset(&self) -> Result<(), SandboxError> {
        if let Some(mut child) = self.child.lock().await.take() {
            if let Some(pid) = child.id() {
                let _ = self.interrupt(pid).await;
            }
            let _ = child.kill().await;
        }
        Ok(())
    }
}

fn spawn_reader(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    sender: mpsc::Sender<Frame>,
    wrap: fn(bytes::Bytes) -> Frame,
) {
    tokio::spawn(async move {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = bytes::Bytes::copy_from_slice(&buffer[..n]);
                    if sender.send(wrap(chunk)).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// The names of the ACI's built-in commands. In a container no program has these names, so a
/// command of the interface used inside a shell command line (`cd src && open app.py`) fails
/// with bash's `command not found`, which the ACI explains to the model. A host may have such a
/// program (`open` from xdg-utils, `submit` on a cluster); the local session masks them.
pub const INTERFACE_COMMANDS: [&str; 10] = [
    "create",
    "edit",
    "find_file",
    "goto",
    "open",
    "scroll_down",
    "scroll_up",
    "search_dir",
    "search_file",
    "submit",
];

/// Bash lines that make each of [`INTERFACE_COMMANDS`] unknown to the local session, as it is in
/// a container, whatever the host has installed: an alias looks the name up in a `PATH` that
/// holds nothing, so bash reports it exactly as a missing program (`bash: line 9: open: command
/// not found`) and never starts the host's program. Aliases apply where bash reads a command
/// word, after `&&`, `;`, `|` and in subshells alike.
fn mask_interface_commands() -> String {
    let mut lines = String::from("shopt -s expand_aliases");
    for name in INTERFACE_COMMANDS {
        lines.push_str(&format!("; alias {name}='PATH=/dev/null {name}'"));
    }
    lines
}

/// A temporary copy of the repository and a bash session in it. Not isolated: see the module
/// documentation.
pub struct LocalSandbox {
    // Declared before `dir`, so the session ends before its directory is removed.
    shell: Shell<LocalTransport>,
    repo_dir: String,
    baseline: String,
    dir: tempfile::TempDir,
}

impl LocalSandbox {
    /// Copies the repository into a new temporary directory (`<tmp>/<basename of repo_dir>`)
    /// and opens a session there. The spec's image, limits and network are ignored.
    pub async fn start(spec: &SandboxSpec) -> Result<Self, SandboxError> {
        let dir = tempfile::Builder::new()
            .prefix("aci-local-")
            .tempdir()
            .map_err(io_error("cannot create a temporary directory"))?;
        let name = spec
            .repo_dir
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("testbed");
        let name = if name.is_empty() { "testbed" } else { name };
        let repo_path = dir.path().join(name);
        if let Some(source) = &spec.repo {
            let source = source.clone();
            let target = dir.path().to_owned();
            let prefix = name.to_owned();
            tokio::task::spawn_blocking(move || -> Result<(), SandboxError> {
                let tar = repo::tar_repository(&source, &prefix)?;
                tar::Archive::new(tar.as_slice())
                    .unpack(&target)
                    .map_err(|e| SandboxError::Io {
                        context: "cannot unpack the repository".to_owned(),
                        source: e,
                    })
            })
            .await
            .map_err(|e| SandboxError::Session(format!("repository task failed: {e}")))??;
        } else {
            std::fs::create_dir_all(&repo_path)
                .map_err(io_error("cannot create the repository directory"))?;
        }
        let repo_dir = repo_path.display().to_string();
        let transport = LocalTransport {
            workdir: repo_dir.clone(),
            child: Mutex::new(None),
        };
        let init = format!(
            "{}; {}",
            repo::session_init(&spec.env),
            mask_interface_commands()
        );
        let mut shell = Shell::open(transport, &repo_dir, init, spec.output_limit, false).await?;
        let baseline = match &spec.repo {
            Some(source) => repo::Baseline::for_source(Some(source)),
            None => repo::Baseline::Fresh { force: false },
        };
        let baseline = repo::make_baseline(&mut shell, baseline).await?;
        Ok(Self {
            shell,
            repo_dir,
            baseline,
            dir,
        })
    }
}

impl Sandbox for LocalSandbox {
    async fn run(&mut self, command: &str, timeout: Duration) -> Result<ExecOutput, SandboxError> {
        self.shell.run(command, timeout, Streams::Separate).await
    }

    async fn run_merged(
        &mut self,
        command: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        self.shell.run(command, timeout, Streams::Merged).await
    }

    async fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        self.shell.read_file(path).await
    }

    async fn write_file(&mut self, path: &str, content: &[u8]) -> Result<(), SandboxError> {
        self.shell.write_file(path, content).await
    }

    fn repo_dir(&self) -> &str {
        &self.repo_dir
    }

    fn baseline(&self) -> &str {
        &self.baseline
    }

    async fn shutdown(self) -> Result<(), SandboxError> {
        self.shell.transport().reset().await?;
        let Self { shell, dir, .. } = self;
        drop(shell);
        dir.close()
            .map_err(io_error("cannot remove the temporary directory"))
    }
}
