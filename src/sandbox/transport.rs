//! What an engine provides so that [`super::ShellSandbox`] can run the persistent shell on it:
//! a [`Transport`].
//!
//! A transport knows four things and nothing about the shell protocol: how a session's byte
//! streams are opened (Docker: one attached `docker exec` of bash; local: a child process), how
//! a command runs out of band beside the session (used to interrupt a hung command by killing
//! the shell's descendants), whether the sandbox is still alive, and how it is reset and torn
//! down. Framing, timeouts, output caps, OOM reporting and reopening a dead session live in
//! [`super::shell`], once for every engine.
//!
//! The interrupt can only ever name a [`SessionPid`]: a process id that is neither 0 nor 1, and
//! that the session itself reported (or the operating system gave for the session's own shell).

use std::collections::BTreeSet;
use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;

use bytes::Bytes;
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;

use super::{ExecOutput, SandboxError};

/// One chunk of the session's output.
#[derive(Debug)]
pub enum Frame {
    /// Bytes from stdout.
    Stdout(Bytes),
    /// Bytes from stderr.
    Stderr(Bytes),
}

/// The two ends of an open session.
pub struct Channel {
    /// The session's stdin.
    pub input: Pin<Box<dyn AsyncWrite + Send>>,
    /// The session's output; the channel closes when the session ends.
    pub frames: mpsc::Receiver<Frame>,
}

/// The process id of a session's shell, as the sandbox sees it: the root of the process tree
/// an interrupt kills.
///
/// It is never 0 (to `kill` "every process of my group", and to the kill-tree script the parent
/// of init and the kernel threads, so every process on the host) and never 1 (init: its tree is
/// the whole sandbox, or the whole host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionPid(NonZeroU32);

impl SessionPid {
    /// The pid, unless it is 0 or 1.
    pub fn new(pid: u32) -> Option<Self> {
        if pid == 1 {
            return None;
        }
        NonZeroU32::new(pid).map(SessionPid)
    }

    /// Reads a pid written in decimal (as `printf %s "$$"` prints it), unless it is 0 or 1.
    pub fn parse(text: &str) -> Option<Self> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok().and_then(Self::new)
    }

    /// The pid as a number.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl std::fmt::Display for SessionPid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// How [`super::shell::Shell`] reaches one sandbox. Implement this (one file) to run the agent on
/// another engine; the agent loop, the ACI and the grader see only [`super::Sandbox`].
pub trait Transport: Send + Sync {
    /// Whether the session's cgroup OOM-kill counter is the sandbox's own (a container's), so
    /// that reading it after every command reports memory kills. `false` for the host.
    const READS_OOM_COUNTER: bool;

    /// Bash lines the session runs after its environment is set, every time it is opened
    /// (the local session masks host programs named like interface commands).
    fn session_prelude(&self) -> Option<String> {
        None
    }

    /// Starts a new `bash --noprofile --norc` session in the repository, stdout and stderr
    /// apart, and returns its streams.
    fn open(&self) -> impl Future<Output = Result<Channel, SandboxError>> + Send;

    /// Runs `argv` beside the session (a second `docker exec`, a second process), its output
    /// collected whole. Only the harness's own commands run this way.
    fn run_beside(
        &self,
        argv: Vec<String>,
    ) -> impl Future<Output = Result<ExecOutput, SandboxError>> + Send;

    /// `Ok` while the sandbox can run a session; otherwise why not (e.g.
    /// [`SandboxError::ContainerDied`] with the exit code and whether memory ran out).
    fn check_alive(&self) -> impl Future<Output = Result<(), SandboxError>> + Send;

    /// Kills every process of the sandbox's sessions (a wedged session, or a fork bomb an
    /// interrupt could not even start beside), keeping the files, so that a new session can
    /// be opened.
    fn reset(&self) -> impl Future<Output = Result<(), SandboxError>> + Send;

    /// Stops and removes everything the sandbox holds. Called once, after the session closed.
    fn teardown(self) -> impl Future<Output = Result<(), SandboxError>> + Send;
}

/// Environment of every session in a container or pod: no pagers, no progress bars, a fixed
/// locale.
pub const SESSION_ENV: [&str; 8] = [
    "PAGER=cat",
    "MANPAGER=cat",
    "GIT_PAGER=cat",
    "LESS=-R",
    "PIP_PROGRESS_BAR=off",
    "TQDM_DISABLE=1",
    "LANG=C.UTF-8",
    "TERM=dumb",
];

/// A POSIX `sh` script that kills every descendant of the process `$1`, using only `/proc`
/// (no `ps`, no `pkill`, no `/proc/*/children`). It freezes what it finds with SIGSTOP before
/// killing, so a fork bomb cannot outrun it, and runs a few rounds. It refuses a root of 0, 1
/// or anything but a number. With `list` as `$2` it prints what it would kill, one pid per
/// line, and kills nothing.
pub const KILL_TREE_SCRIPT: &str = r#"
root=$1
mode=${2:-kill}
case "$root" in ''|0|1|*[!0-9]*) echo "refusing to kill the tree of pid '$root'" >&2; exit 2;; esac
for round in 1 2 3 4; do
  tree=" $root "
  grew=1
  while [ -n "$grew" ]; do
    grew=
    for st in /proc/[0-9]*/stat; do
      pid=${st#/proc/}; pid=${pid%/stat}
      case "$tree" in *" $pid "*) continue;; esac
      read -r line 2>/dev/null < "$st" || continue
      rest=${line##*) }
      set -- $rest
      case "$tree" in *" $2 "*) tree="$tree$pid "; grew=1;; esac
    done
  done
  victims=${tree# $root }
  if [ "$mode" = list ]; then
    for pid in $victims; do echo "$pid"; done
    exit 0
  fi
  [ -z "${victims# }" ] && exit 0
  for pid in $victims; do kill -STOP "$pid" 2>/dev/null; done
  for pid in $victims; do kill -KILL "$pid" 2>/dev/null; done
done
"#;

/// The out-of-band command that kills every descendant of `root` (not `root` itself: the
/// session's shell survives and reports the killed command's status).
pub fn kill_tree_command(root: SessionPid) -> Vec<String> {
    vec![
        "sh".to_owned(),
        "-c".to_owned(),
        KILL_TREE_SCRIPT.to_owned(),
        "sh".to_owned(),
        root.to_string(),
    ]
}

/// What one round of [`KILL_TREE_SCRIPT`] selects, given a process table of `(pid, parent
/// pid)` pairs: every descendant of `root`, and nothing else (not `root`, not its ancestors,
/// not its siblings).
pub fn kill_tree_selection(root: SessionPid, table: &[(u32, u32)]) -> BTreeSet<u32> {
    let mut tree = BTreeSet::from([root.get()]);
    loop {
        let before = tree.len();
        for &(pid, parent) in table {
            if tree.contains(&parent) {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    tree.remove(&root.get());
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_pid_is_never_0_or_1() {
        assert_eq!(SessionPid::new(0), None);
        assert_eq!(SessionPid::new(1), None);
        assert_eq!(SessionPid::new(2).map(SessionPid::get), Some(2));
        assert_eq!(SessionPid::parse("0"), None);
        assert_eq!(SessionPid::parse("1"), None);
        assert_eq!(SessionPid::parse("00"), None);
        assert_eq!(SessionPid::parse(""), None);
        assert_eq!(SessionPid::parse("-5"), None);
        assert_eq!(SessionPid::parse("+7"), None);
        assert_eq!(SessionPid::parse(" 7"), None);
        assert_eq!(SessionPid::parse("4294967296"), None);
        assert_eq!(SessionPid::parse("4242").map(SessionPid::get), Some(4242));
    }

    #[test]
    fn the_kill_tree_selects_the_descendants_of_its_root_only() {
        // init(1) ─┬─ kthreadd(2) ── 3
        //          ├─ sshd(10) ── 11
        //          └─ aci(20) ── bash(21) ─┬─ 22 ── 24
        //                                  └─ 23
        // (25's parent appears after it, as /proc lists it when a pid wrapped around.)
        let table = [
            (1, 0),
            (2, 0),
            (3, 2),
            (10, 1),
            (11, 10),
            (20, 1),
            (21, 20),
            (24, 22),
            (22, 21),
            (23, 21),
            (25, 24),
        ];
        let root = SessionPid::new(21).unwrap();
        assert_eq!(
            kill_tree_selection(root, &table),
            BTreeSet::from([22, 23, 24, 25])
        );
        let leaf = SessionPid::new(23).unwrap();
        assert_eq!(kill_tree_selection(leaf, &table), BTreeSet::new());
        assert_eq!(
            kill_tree_command(root)[4],
            "21",
            "the script's root is the session's pid"
        );
    }
}
