//! [`LocalSandbox`]: the [`Sandbox`](super::Sandbox) trait on a temporary copy of the repository, run by a
//! bash on the host.
//!
//! **This is not a sandbox.** Commands run as the invoking user with full access to the host,
//! its network and its files. It exists for tests and for machines without Docker; select it
//! with `--runtime local` only for trusted models and tasks.

use std::process::Stdio;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc};

use super::transport::{Channel, Frame, SessionPid, Transport, kill_tree_command};
use super::{ExecOutput, SandboxError, SandboxSpec, ShellSandbox, repo};

fn io_error(context: &str) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        context: context.to_owned(),
        source,
    }
}

/// A temporary copy of the repository and a bash session in it. Not isolated: see the module
/// documentation.
pub type LocalSandbox = ShellSandbox<LocalTransport>;

/// Opens bash sessions as child processes of `aci`, in a temporary directory that it removes
/// at teardown.
pub struct LocalTransport {
    workdir: String,
    child: Mutex<Option<Child>>,
    dir: tempfile::TempDir,
}

impl LocalTransport {
    /// The pid of the current session's bash, as the operating system gave it.
    pub async fn shell_pid(&self) -> Option<SessionPid> {
        let child = self.child.lock().await;
        child.as_ref().and_then(Child::id).and_then(SessionPid::new)
    }
}

impl Transport for LocalTransport {
    /// The host's cgroup counter is not this session's.
    const READS_OOM_COUNTER: bool = false;

    fn session_prelude(&self) -> Option<String> {
        Some(mask_interface_commands())
    }

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

    async fn run_beside(&self, argv: Vec<String>) -> Result<ExecOutput, SandboxError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(SandboxError::Session("an empty command".to_owned()));
        };
        let output = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(io_error("cannot run a command beside the session"))?;
        Ok(ExecOutput {
            stdout: output.stdout,
            stderr: output.stderr,
            exit_code: output.status.code(),
            ..ExecOutput::default()
        })
    }

    async fn check_alive(&self) -> Result<(), SandboxError> {
        Ok(())
    }

    async fn reset(&self) -> Result<(), SandboxError> {
        let child = self.child.lock().await.take();
        if let Some(mut child) = child {
            if let Some(pid) = child.id().and_then(SessionPid::new) {
                let _ = self.run_beside(kill_tree_command(pid)).await;
            }
            let _ = child.kill().await;
        }
        Ok(())
    }

    async fn teardown(self) -> Result<(), SandboxError> {
        self.reset().await?;
        self.dir
            .close()
            .map_err(io_error("cannot remove the temporary directory"))
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
pub const INTERFACE_COMMANDS: [&str; 11] = [
    "create",
    "edit",
    "find_file",
    "goto",
    "open",
    "scroll_down",
    "scroll_up",
    "search_dir",
    "search_file",
    "str_replace_editor",
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
            dir,
        };
        let baseline = match &spec.repo {
            Some(source) => repo::Baseline::for_source(Some(source)),
            None => repo::Baseline::Fresh { force: false },
        };
        ShellSandbox::open(transport, spec, repo_dir, baseline).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex as StdMutex};
    use std::time::Duration;

    use super::*;
    use crate::sandbox::OutputLimit;
    use crate::sandbox::shell::{Shell, Streams};
    use crate::sandbox::transport::{KILL_TREE_SCRIPT, kill_tree_selection};

    /// Every `(pid, parent pid)` pair of the host, read from `/proc` like the kill-tree script
    /// reads it.
    fn process_table() -> Vec<(u32, u32)> {
        let mut table = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some(after_comm) = stat.rfind(") ").map(|at| &stat[at + 2..]) else {
                continue;
            };
            if let Some(parent) = after_comm.split(' ').nth(1).and_then(|p| p.parse().ok()) {
                table.push((pid, parent));
            }
        }
        table
    }

    /// The state letter of a process (`S` sleeping, `T` stopped, `Z` zombie), or `None` when
    /// it is gone.
    fn process_state(pid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(") ")? + 2..].chars().next()
    }

    /// One out-of-band command and what the kill-tree would select at that moment.
    struct Call {
        argv: Vec<String>,
        selected: Option<BTreeSet<u32>>,
    }

    /// A local transport that records every out-of-band command it is asked to run.
    struct Recording {
        inner: LocalTransport,
        calls: Arc<StdMutex<Vec<Call>>>,
    }

    impl Transport for Recording {
        const READS_OOM_COUNTER: bool = false;

        async fn open(&self) -> Result<Channel, SandboxError> {
            self.inner.open().await
        }

        async fn run_beside(&self, argv: Vec<String>) -> Result<ExecOutput, SandboxError> {
            let selected = (argv.get(2) == Some(&KILL_TREE_SCRIPT.to_owned()))
                .then(|| argv.get(4).and_then(|root| SessionPid::parse(root)))
                .flatten()
                .map(|root| kill_tree_selection(root, &process_table()));
            self.calls.lock().unwrap().push(Call {
                argv: argv.clone(),
                selected,
            });
            self.inner.run_beside(argv).await
        }

        async fn check_alive(&self) -> Result<(), SandboxError> {
            self.inner.check_alive().await
        }

        async fn reset(&self) -> Result<(), SandboxError> {
            self.inner.reset().await
        }

        async fn teardown(self) -> Result<(), SandboxError> {
            self.inner.teardown().await
        }
    }

    fn recording() -> (Recording, String, Arc<StdMutex<Vec<Call>>>) {
        let dir = tempfile::tempdir().unwrap();
        let workdir = dir.path().display().to_string();
        let calls = Arc::new(StdMutex::new(Vec::new()));
        let transport = Recording {
            inner: LocalTransport {
                workdir: workdir.clone(),
                child: Mutex::new(None),
                dir,
            },
            calls: Arc::clone(&calls),
        };
        (transport, workdir, calls)
    }

    /// A process that is no part of any session: a sibling of the sessions' shells.
    struct Bystander(std::process::Child);

    impl Bystander {
        fn start() -> Self {
            Bystander(
                std::process::Command::new("sleep")
                    .arg("300")
                    .spawn()
                    .unwrap(),
            )
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }
    }

    impl Drop for Bystander {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_set_up_exchange_that_times_out_interrupts_nothing() {
        let bystander = Bystander::start();
        let (transport, workdir, calls) = recording();
        let marker = format!("{workdir}/init.pid");
        // The set-up exchange hangs in `init`: its `sleep` writes its pid and never returns.
        let init = format!("sh -c 'echo $$ > {marker}; exec sleep 300'");
        let mut shell = Shell::new(transport, &workdir, init, OutputLimit::default())
            .with_setup_timeout(Duration::from_millis(500));
        let error = shell.start().await.unwrap_err().to_string();
        assert!(error.contains("timed out after 500ms"), "{error}");
        // No pid was reported, so no interrupt was aimed anywhere (the old session state
        // interrupted "pid 0": the kill-tree of 0 selects every process of the host).
        assert_eq!(
            calls
                .lock()
                .unwrap()
                .iter()
                .map(|c| c.argv.clone())
                .collect::<Vec<_>>(),
            Vec::<Vec<String>>::new()
        );
        assert_eq!(process_state(bystander.pid()), Some('S'));
        let hung: u32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(process_state(hung), Some('S'));

        // Teardown kills the session's own tree, found from the pid the system gave its bash:
        // the hung `sleep` goes, the bystander stays.
        shell.into_transport().teardown().await.unwrap();
        assert!(
            matches!(process_state(hung), None | Some('Z')),
            "{:?}",
            process_state(hung)
        );
        assert_eq!(process_state(bystander.pid()), Some('S'));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timed_out_command_is_interrupted_in_the_sessions_tree_only() {
        let bystander = Bystander::start();
        let (transport, workdir, calls) = recording();
        let mut shell = Shell::new(
            transport,
            &workdir,
            "true".to_owned(),
            OutputLimit::default(),
        );
        shell.start().await.unwrap();
        let bash = shell.transport().inner.shell_pid().await.unwrap();
        let out = shell
            .run(
                "sleep 300 & echo $! > sleeper.pid; wait",
                Duration::from_millis(500),
                Streams::Separate,
            )
            .await
            .unwrap();
        assert!(out.timed_out, "{out:?}");
        let sleeper: u32 = std::fs::read_to_string(format!("{workdir}/sleeper.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        {
            let calls = calls.lock().unwrap();
            assert_eq!(calls.len(), 1, "one interrupt");
            assert_eq!(
                calls[0].argv[4],
                bash.to_string(),
                "aimed at the session's bash"
            );
            let selected = calls[0].selected.clone().unwrap();
            assert!(selected.contains(&sleeper), "{selected:?}");
            for outsider in [bystander.pid(), std::process::id(), 1, bash.get()] {
                assert!(!selected.contains(&outsider), "{outsider} in {selected:?}");
            }
        }
        assert_eq!(process_state(bystander.pid()), Some('S'));
        assert!(matches!(process_state(sleeper), None | Some('Z')));
        // The session survived the interrupt and still works.
        let out = shell
            .run("echo alive", Duration::from_secs(10), Streams::Separate)
            .await
            .unwrap();
        assert_eq!(out.stdout, b"alive\n");
        shell.into_transport().teardown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_session_left_starting_is_replaced_before_a_command_runs() {
        let (transport, workdir, calls) = recording();
        // Each set-up exchange takes a second; the first is abandoned half-way, as a watchdog
        // that drops the future would leave it.
        let mut shell = Shell::new(
            transport,
            &workdir,
            "sleep 1".to_owned(),
            OutputLimit::default(),
        );
        let abandoned = tokio::time::timeout(Duration::from_millis(200), shell.start()).await;
        assert!(abandoned.is_err(), "the set-up exchange was still running");
        let out = shell
            .run("echo ok", Duration::from_secs(30), Streams::Separate)
            .await
            .unwrap();
        assert_eq!((out.stdout, out.exit_code), (b"ok\n".to_vec(), Some(0)));
        assert!(calls.lock().unwrap().is_empty(), "nothing was interrupted");
        shell.into_transport().teardown().await.unwrap();
    }

    #[test]
    fn the_kill_tree_script_selects_what_the_pure_selection_does_and_refuses_0_and_1() {
        // A shell with a child and a grandchild; it prints their pids.
        let mut tree = std::process::Command::new("bash")
            .args([
                "-c",
                "sleep 300 & echo $!; ( sleep 301 & echo $!; wait ) & echo $!; wait",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let root = SessionPid::new(tree.id()).unwrap();
        let mut reported = BTreeSet::new();
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(tree.stdout.take().unwrap()));
        for _ in 0..3 {
            reported.insert(lines.next().unwrap().unwrap().parse::<u32>().unwrap());
        }
        let listed = |root: &str| {
            let out = std::process::Command::new("sh")
                .args(["-c", KILL_TREE_SCRIPT, "sh", root, "list"])
                .output()
                .unwrap();
            let pids: BTreeSet<u32> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|line| line.parse().unwrap())
                .collect();
            (out.status.code(), pids)
        };
        let by_script = listed(&root.to_string());
        let by_function = kill_tree_selection(root, &process_table());
        assert_eq!(by_script, (Some(0), reported.clone()));
        assert_eq!(by_function, reported);
        for refused in ["0", "1", "", "-1", "1 2"] {
            assert_eq!(listed(refused), (Some(2), BTreeSet::new()), "{refused:?}");
        }
        let _ = std::process::Command::new("sh")
            .args(["-c", KILL_TREE_SCRIPT, "sh", &root.to_string()])
            .status();
        let _ = tree.kill();
        let _ = tree.wait();
    }
}
