//! The persistent bash session: one long-lived `bash` whose stdin takes commands and whose
//! stdout and stderr carry their output, framed by per-command end markers.
//!
//! For the N-th command the session is sent
//!
//! ```text
//! __aci_cmd=$'<command, ANSI-C quoted>'
//! { eval "$__aci_cmd"
//! } </dev/null
//! __aci_rc=$?; printf '\n__ACI_<nonce>_N__ %d\n' $__aci_rc; printf '\n__ACI_<nonce>_N__\n' >&2
//! ```
//!
//! `eval` of a quoted string means a command with a syntax error (an open quote, a missing
//! `fi`) fails at once instead of swallowing the markers; `{ … }` is not a subshell, so `cd`
//! and `export` persist; `</dev/null` keeps commands off the protocol's stdin. The marker goes
//! to both streams because their frames arrive in no particular order, and its leading `\n`
//! keeps output without a final newline exact. Output is capped while it streams
//! ([`CappedBuffer`]), so memory does not grow with what a command prints.
//!
//! The transport ([`Transport`]) is a `docker exec` for containers or a child process for the
//! local sandbox; everything else — timeouts, interrupting a hung command from outside,
//! reopening a dead session, file access — lives here, once.
//!
//! A session is starting (opened, its set-up exchange not answered yet) or ready with the
//! shell's [`SessionPid`]; only a ready session is ever interrupted, so the interrupt cannot
//! target a pid the session did not report.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::transport::{Channel, Frame, SessionPid, Transport, kill_tree_command};
use super::{ExecOutput, FileErrorKind, SandboxError, shell_quote};

/// How much output is kept while it streams: the first `head` and the last `tail` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes kept from the start.
    pub head: usize,
    /// Bytes kept from the end.
    pub tail: usize,
}

impl Default for OutputLimit {
    fn default() -> Self {
        Self {
            head: 512 * 1024,
            tail: 512 * 1024,
        }
    }
}

const MARKER_SLACK: usize = 128;
/// How long a killed command gets to report its end marker before the session is replaced.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// Files read through the session larger than this are refused.
pub const MAX_READ_BYTES: usize = 256 * 1024 * 1024;

/// Keeps the head and tail of a byte stream of any length, in bounded memory.
#[derive(Debug)]
pub struct CappedBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl CappedBuffer {
    /// A buffer keeping `head` bytes from the start and `tail` (plus a little slack for the end
    /// marker) from the end.
    pub fn new(limit: OutputLimit) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap: limit.head,
            tail_cap: limit.tail + MARKER_SLACK,
            total: 0,
        }
    }

    /// Appends bytes.
    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.head_cap {
            let take = data.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(data);
    }

    /// Bytes seen so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether the stream so far ends with `suffix` (which must be shorter than the slack).
    fn ends_with(&self, suffix: &[u8]) -> bool {
        let len = self.head.len() as u64 + self.tail.len() as u64;
        if (suffix.len() as u64) > len {
            return false;
        }
        suffix
            .iter()
            .rev()
            .enumerate()
            .all(|(back, byte)| self.byte_from_end(back) == Some(*byte))
    }

    fn byte_from_end(&self, back: usize) -> Option<u8> {
        if back < self.tail.len() {
            self.tail.get(self.tail.len() - 1 - back).copied()
        } else {
            let back = back - self.tail.len();
            self.head
                .len()
                .checked_sub(1 + back)
                .and_then(|i| self.head.get(i).copied())
        }
    }

    /// The last `n` bytes (fewer if the stream is shorter), contiguous.
    fn last(&self, n: usize) -> Vec<u8> {
        let available = self.head.len() + self.tail.len();
        let n = n.min(available);
        (0..n)
            .rev()
            .filter_map(|back| self.byte_from_end(back))
            .collect()
    }

    /// The kept output without its last `strip` bytes, with a note where bytes were dropped,
    /// and how many were dropped.
    pub fn finish(mut self, strip: usize) -> (Vec<u8>, u64) {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let elided = self.total - kept;
        // Strip from the end: first the tail, then the head.
        let from_tail = strip.min(self.tail.len());
        self.tail.truncate(self.tail.len() - from_tail);
        let rest = strip - from_tail;
        self.head.truncate(self.head.len().saturating_sub(rest));
        // The slack beyond tail_cap − MARKER_SLACK only ever held the marker: drop the excess
        // from the front so that exactly `tail` bytes of real output remain.
        let real_tail_cap = self.tail_cap - MARKER_SLACK;
        let extra = self.tail.len().saturating_sub(real_tail_cap);
        let elided = elided + extra as u64;
        self.tail.drain(..extra);
        let mut out = self.head;
        if elided > 0 {
            out.extend_from_slice(
                format!("\n[... {elided} bytes of output elided ...]\n").as_bytes(),
            );
        }
        out.extend(self.tail);
        (out, elided)
    }
}

/// Quotes arbitrary bytes as a bash ANSI-C string, `$'…'`.
pub fn ansi_c_quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push_str("$'");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Whether a command's output is split into two streams or merged into stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// stdout and stderr apart.
    Separate,
    /// stderr redirected into stdout, interleaved as a terminal would show it.
    Merged,
}

/// How the end of one exchange came about.
enum Ending {
    Done { exit_code: i32, oom_kills: i64 },
    TimedOut,
    Died,
}

/// An open session.
enum Session {
    /// Opened; its set-up exchange has not reported the shell's pid yet. An exchange that
    /// times out now is not interrupted: there is no pid to aim at, so the session is dropped.
    Starting(Channel),
    /// Set up: commands run, and an interrupt kills the descendants of `pid`.
    Ready {
        /// The session's streams.
        channel: Channel,
        /// The shell's pid, as the session reported it.
        pid: SessionPid,
    },
}

impl Session {
    fn channel(&mut self) -> &mut Channel {
        match self {
            Session::Starting(channel) | Session::Ready { channel, .. } => channel,
        }
    }

    /// The process tree an interrupt may kill: only a ready session has one.
    fn interrupt_target(&self) -> Option<SessionPid> {
        match self {
            Session::Starting(_) => None,
            Session::Ready { pid, .. } => Some(*pid),
        }
    }
}

/// A persistent shell over some [`Transport`], reopened when it dies.
pub struct Shell<T: Transport> {
    transport: T,
    session: Option<Session>,
    nonce: String,
    seq: u64,
    limit: OutputLimit,
    workdir: String,
    init: String,
    oom_kills: i64,
    /// An exchange was started and never finished (its future was dropped, e.g. by a
    /// watchdog): the session's output stream is out of step and must be replaced.
    in_flight: bool,
    /// How long a new session's set-up exchange may take.
    setup_timeout: Duration,
}

/// Reads the cgroup's OOM-kill counter (v1 or v2) into `__aci_oom` with builtins only, so it
/// costs no fork after every command.
const OOM_READ: &str = "__aci_oom=0; for __aci_f in /sys/fs/cgroup/memory/memory.oom_control \
/sys/fs/cgroup/memory.events; do [ -r $__aci_f ] && while read -r __aci_k __aci_v; do \
[ \"$__aci_k\" = oom_kill ] && __aci_oom=$__aci_v; done < $__aci_f; done; ";

/// How long a new session's set-up exchange (`cd`, exports, report the pid) may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the out-of-band interrupt of a hung command may take.
const INTERRUPT_TIMEOUT: Duration = Duration::from_secs(20);

impl<T: Transport> Shell<T> {
    /// A shell over `transport`, with no session yet: [`Shell::start`] opens one. `init` runs
    /// first in every new session (exports); its working directory is `workdir`.
    pub fn new(transport: T, workdir: &str, init: String, limit: OutputLimit) -> Self {
        Self {
            transport,
            session: None,
            nonce: new_nonce(),
            seq: 0,
            limit,
            workdir: workdir.to_owned(),
            init,
            oom_kills: 0,
            in_flight: false,
            setup_timeout: SETUP_TIMEOUT,
        }
    }

    /// Opens the first session.
    pub async fn start(&mut self) -> Result<(), SandboxError> {
        self.reopen().await
    }

    /// Adds `command` to the start-up of every session opened from now on, after what is
    /// there. When it fails the new shell exits, so that session does not open.
    pub fn append_init(&mut self, command: &str) {
        self.init = format!("{}\n{command} || exit 1", self.init);
    }

    /// The directory every session starts in.
    pub fn workdir(&self) -> &str {
        &self.workdir
    }

    /// Gives the transport back, closing the session (for teardown).
    pub fn into_transport(self) -> T {
        self.transport
    }

    /// The transport, for the sandbox's own lifecycle calls.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The same shell with a shorter set-up deadline, to make a set-up exchange time out.
    #[cfg(test)]
    pub(crate) fn with_setup_timeout(mut self, timeout: Duration) -> Self {
        self.setup_timeout = timeout;
        self
    }

    async fn reopen(&mut self) -> Result<(), SandboxError> {
        self.session = None;
        self.transport.check_alive().await?;
        let channel = self.transport.open().await?;
        self.session = Some(Session::Starting(channel));
        let setup = format!(
            "cd {} && {}\nprintf %s \"$$\"",
            shell_quote(&self.workdir),
            self.init
        );
        let limit = OutputLimit {
            head: 4096,
            tail: 0,
        };
        let script = format!("{{ {setup}\n}}");
        let (out, alive) = self
            .exchange_once(&script, self.setup_timeout, Streams::Separate, limit, None)
            .await?;
        if !alive || out.exit_code != Some(0) {
            self.session = None;
            let why = if out.timed_out {
                format!("timed out after {:?}", self.setup_timeout)
            } else {
                format!("exit {:?}", out.exit_code)
            };
            return Err(SandboxError::Session(format!(
                "the new session failed to start in {} ({why}): {}",
                self.workdir,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let pid_text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let Some(pid) = SessionPid::parse(&pid_text) else {
            self.session = None;
            return Err(SandboxError::Session(format!(
                "the new session did not report a usable pid (stdout {pid_text:?}, stderr {:?})",
                String::from_utf8_lossy(&out.stderr)
            )));
        };
        self.session = match self.session.take() {
            Some(Session::Starting(channel)) => Some(Session::Ready { channel, pid }),
            other => other,
        };
        Ok(())
    }

    /// Runs a command from the model (or a person): quoted, evaluated, never trusted.
    pub async fn run(
        &mut self,
        command: &str,
        timeout: Duration,
        streams: Streams,
    ) -> Result<ExecOutput, SandboxError> {
        let script = format!(
            "__aci_cmd={}\n{{ eval \"$__aci_cmd\"\n}}",
            ansi_c_quote(command.as_bytes())
        );
        self.exchange(&script, timeout, streams, self.limit, None)
            .await
    }

    /// Runs a script written by the harness itself, uncapped by the output limit.
    pub async fn run_trusted(
        &mut self,
        script: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        self.exchange_trusted(script, timeout, Streams::Separate)
            .await
    }

    async fn exchange_trusted(
        &mut self,
        script: &str,
        timeout: Duration,
        streams: Streams,
    ) -> Result<ExecOutput, SandboxError> {
        let limit = OutputLimit {
            head: MAX_READ_BYTES,
            tail: 0,
        };
        self.exchange(&format!("{{ {script}\n}}"), timeout, streams, limit, None)
            .await
    }

    /// Reads a file's bytes through the session.
    pub async fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        let quoted = shell_quote(path);
        let script = format!(
            "if [ -d {quoted} ]; then exit_code=21; elif [ ! -e {quoted} ]; then exit_code=2; \
             else exit_code=0; fi; [ $exit_code = 0 ] && cat -- {quoted}; (exit $exit_code)"
        );
        let out = self.run_trusted(&script, Duration::from_secs(60)).await?;
        let kind = match out.exit_code {
            Some(0) if out.elided_bytes == 0 => return Ok(out.stdout),
            Some(0) => FileErrorKind::TooLarge,
            Some(2) => FileErrorKind::NotFound,
            Some(21) => FileErrorKind::IsDirectory,
            _ => FileErrorKind::Other,
        };
        let message = match kind {
            FileErrorKind::NotFound => "No such file or directory".to_owned(),
            FileErrorKind::IsDirectory => "Is a directory".to_owned(),
            FileErrorKind::TooLarge => format!("file is larger than {MAX_READ_BYTES} bytes"),
            FileErrorKind::Other => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        };
        Err(SandboxError::File {
            path: path.to_owned(),
            message,
            kind,
        })
    }

    /// Writes a file's bytes through the session, creating parent directories.
    pub async fn write_file(&mut self, path: &str, content: &[u8]) -> Result<(), SandboxError> {
        let quoted = shell_quote(path);
        // `head -c N` reads exactly N bytes of the session's stdin: the raw content, sent
        // after the command line (see `exchange_once`). It must consume them whatever happens,
        // or bash would read the rest as commands: so it always runs, and the writer drains
        // its input when it cannot write the file.
        let script = format!(
            "head -c {} | {{ case {quoted} in */*) mkdir -p -- \"$(dirname -- {quoted})\";; esac && \
             cat > {quoted} && exit 0; cat > /dev/null; exit 1; }}",
            content.len()
        );
        let limit = OutputLimit {
            head: 64 * 1024,
            tail: 0,
        };
        let out = self
            .exchange(
                &script,
                Duration::from_secs(60),
                Streams::Separate,
                limit,
                Some(content),
            )
            .await?;
        if out.exit_code == Some(0) {
            return Ok(());
        }
        let message = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let kind = if message.contains("Is a directory") {
            FileErrorKind::IsDirectory
        } else {
            FileErrorKind::Other
        };
        Err(SandboxError::File {
            path: path.to_owned(),
            message,
            kind,
        })
    }

    /// Sends one script and collects its output; interrupts it at the deadline and reopens
    /// the session when it dies.
    async fn exchange(
        &mut self,
        script: &str,
        timeout: Duration,
        streams: Streams,
        limit: OutputLimit,
        payload: Option<&[u8]>,
    ) -> Result<ExecOutput, SandboxError> {
        if self.in_flight {
            let target = self.session.as_ref().and_then(Session::interrupt_target);
            let _ = interrupt(&self.transport, target).await;
            // Dropping the channel closes bash's stdin: the old session ends by itself.
            self.session = None;
        }
        // Only a ready session runs commands: one left starting (its set-up exchange was
        // dropped half-way) is replaced like a closed one.
        if !matches!(self.session, Some(Session::Ready { .. })) {
            self.reopen().await?;
        }
        self.in_flight = true;
        let (out, alive) = self
            .exchange_once(script, timeout, streams, limit, payload)
            .await?;
        self.in_flight = false;
        if !alive {
            // A sandbox that died (a container stopped or removed) is an instance failure
            // that names why; one that lives gets its processes killed and a new session.
            self.transport.check_alive().await?;
            self.transport.reset().await?;
            self.reopen().await?;
        }
        Ok(out)
    }

    /// One exchange on the current session, without reopening it. Returns the output and
    /// whether the session is still usable.
    async fn exchange_once(
        &mut self,
        script: &str,
        timeout: Duration,
        streams: Streams,
        limit: OutputLimit,
        payload: Option<&[u8]>,
    ) -> Result<(ExecOutput, bool), SandboxError> {
        self.seq += 1;
        let marker = format!("__ACI_{}_{}__", self.nonce, self.seq);
        let redirect = match streams {
            Streams::Separate => "",
            Streams::Merged => " 2>&1",
        };
        let epilogue = format!(
            "__aci_rc=$?; {}printf '\\n{marker} %d\\n' \"$__aci_rc\"; \
             printf '\\n{marker} %d\\n' \"${{__aci_oom:-0}}\" >&2\n",
            if T::READS_OOM_COUNTER { OOM_READ } else { "" }
        );
        // With a payload the script reads it from the session's stdin, right after the line
        // that holds the script and the epilogue: bash has parsed that whole line before the
        // script runs, and the payload never passes through bash's byte-by-byte reader.
        let mut wire = match payload {
            None => format!("{script} </dev/null{redirect}\n{epilogue}").into_bytes(),
            Some(_) => format!("{script}{redirect}; {epilogue}").into_bytes(),
        };
        wire.extend_from_slice(payload.unwrap_or_default());
        let mut stdout = CappedBuffer::new(limit);
        let mut stderr = CappedBuffer::new(limit);
        let Some(session) = self.session.as_mut() else {
            return Err(SandboxError::Session("no session is open".to_owned()));
        };
        // Bounded like the command itself: a write to a session whose container vanished must
        // not hang the harness.
        let sent = tokio::time::timeout(timeout, async {
            let input = &mut session.channel().input;
            input.write_all(&wire).await?;
            input.flush().await
        })
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("writing to the session timed out")));
        let deadline = Instant::now() + timeout;
        let mut ending = if sent.is_err() {
            Ending::Died
        } else {
            collect(session, &marker, &mut stdout, &mut stderr, deadline).await
        };
        let mut out = ExecOutput::default();
        if matches!(ending, Ending::TimedOut) {
            out.timed_out = true;
            let target = self.session.as_ref().and_then(Session::interrupt_target);
            let interrupted = interrupt(&self.transport, target).await.is_ok();
            ending = match self.session.as_mut() {
                Some(session) if interrupted => {
                    let grace = Instant::now() + INTERRUPT_GRACE;
                    collect(session, &marker, &mut stdout, &mut stderr, grace).await
                }
                _ => Ending::TimedOut,
            };
        }
        let (strip_out, strip_err, alive) = match ending {
            Ending::Done {
                exit_code,
                oom_kills,
            } => {
                out.exit_code = Some(exit_code);
                out.oom_killed = oom_kills > self.oom_kills;
                self.oom_kills = oom_kills;
                let suffix = |n: i64| format!("\n{marker} {n}\n").len();
                (suffix(i64::from(exit_code)), suffix(oom_kills), true)
            }
            Ending::TimedOut | Ending::Died => {
                out.session_restarted = true;
                self.session = None;
                (0, 0, false)
            }
        };
        let (stdout_bytes, elided_out) = stdout.finish(strip_out);
        let (stderr_bytes, elided_err) = stderr.finish(strip_err);
        out.stdout = stdout_bytes;
        out.stderr = stderr_bytes;
        out.elided_bytes = elided_out + elided_err;
        Ok((out, alive))
    }
}

/// Kills the descendants of `target` from outside the session, through `transport`.
async fn interrupt<T: Transport>(
    transport: &T,
    target: Option<SessionPid>,
) -> Result<(), SandboxError> {
    let Some(pid) = target else {
        return Err(SandboxError::Session(
            "the session has no shell pid to interrupt".to_owned(),
        ));
    };
    let out = tokio::time::timeout(
        INTERRUPT_TIMEOUT,
        transport.run_beside(kill_tree_command(pid)),
    )
    .await
    .map_err(|_| SandboxError::Session("interrupting the command timed out".to_owned()))??;
    match out.exit_code {
        Some(0) => Ok(()),
        code => Err(SandboxError::Session(format!(
            "interrupting the command failed ({code:?}): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// Reads frames until both end markers arrived, the deadline passed or the session ended.
async fn collect(
    session: &mut Session,
    marker: &str,
    stdout: &mut CappedBuffer,
    stderr: &mut CappedBuffer,
    deadline: Instant,
) -> Ending {
    let mut exit_code = None;
    let mut oom_kills = None;
    loop {
        if let (Some(exit_code), Some(oom_kills)) = (exit_code, oom_kills) {
            return Ending::Done {
                exit_code,
                oom_kills,
            };
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = match tokio::time::timeout(left, session.channel().frames.recv()).await {
            Err(_) => return Ending::TimedOut,
            Ok(None) => return Ending::Died,
            Ok(Some(frame)) => frame,
        };
        match frame {
            Frame::Stdout(data) => {
                stdout.push(&data);
                if exit_code.is_none() {
                    exit_code = find_end_marker(stdout, marker).and_then(|n| i32::try_from(n).ok());
                }
            }
            Frame::Stderr(data) => {
                stderr.push(&data);
                if oom_kills.is_none() {
                    oom_kills = find_end_marker(stderr, marker);
                }
            }
        }
    }
}

/// Finds `\n<marker> <n>\n` at the very end of the stream and returns `n`.
fn find_end_marker(buffer: &CappedBuffer, marker: &str) -> Option<i64> {
    if !buffer.ends_with(b"\n") {
        return None;
    }
    let last = buffer.last(marker.len() + 16);
    let text = String::from_utf8_lossy(&last);
    let needle = format!("\n{marker} ");
    let at = text.rfind(&needle)?;
    text[at + needle.len()..]
        .trim_end_matches('\n')
        .parse()
        .ok()
}

fn new_nonce() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(head: usize, tail: usize) -> OutputLimit {
        OutputLimit { head, tail }
    }

    #[test]
    fn capped_buffer_keeps_short_output_whole() {
        let mut buffer = CappedBuffer::new(limit(10, 10));
        buffer.push(b"hello ");
        buffer.push(b"world");
        assert_eq!(buffer.finish(0), (b"hello world".to_vec(), 0));
    }

    #[test]
    fn capped_buffer_keeps_head_and_tail_of_long_output() {
        let mut buffer = CappedBuffer::new(limit(4, 4));
        for chunk in [b"0123".as_slice(), b"456789", b"abcdefghij"] {
            buffer.push(chunk);
        }
        buffer.push(b"\nEND 0\n");
        let (out, elided) = buffer.finish(7);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "0123\n[... 12 bytes of output elided ...]\nghij"
        );
        assert_eq!(elided, 12);
    }

    #[test]
    fn capped_buffer_strips_a_marker_that_reaches_into_the_head() {
        let mut buffer = CappedBuffer::new(limit(100, 0));
        buffer.push(b"ab\nM 0\n");
        assert_eq!(buffer.finish(5), (b"ab".to_vec(), 0));
    }

    #[test]
    fn exit_marker_is_found_only_at_the_end() {
        let mut buffer = CappedBuffer::new(limit(8, 8));
        buffer.push(b"lots of output here\n__M__ 42\n");
        assert_eq!(find_end_marker(&buffer, "__M__"), Some(42));
        buffer.push(b"more");
        assert_eq!(find_end_marker(&buffer, "__M__"), None);
    }

    #[test]
    fn ansi_c_quote_escapes_everything_bash_would_interpret() {
        assert_eq!(
            ansi_c_quote(b"echo 'a'\n\\x\xff"),
            r"$'echo \'a\'\n\\x\xff'"
        );
    }
}
