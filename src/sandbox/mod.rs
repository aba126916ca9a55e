//! Where commands run: [`Sandbox`], and [`ShellSandbox`], its one implementation over a
//! [`Transport`].
//!
//! [`ShellSandbox`] drives one persistent bash session ([`shell`]), so `cd` and `export`
//! persist and a command costs a pipe round trip, not a `docker exec`. What differs between
//! engines is only the transport: [`docker::DockerTransport`] is one hardened container per
//! task ([`docker::DockerSandbox`]); [`local::LocalTransport`] is a temporary copy of the
//! repository on the host with no isolation at all, for tests and for machines without Docker
//! ([`local::LocalSandbox`]); [`k8s::PodTransport`] is one pod of a Kubernetes cluster per task
//! ([`k8s::PodSandbox`]). Another engine is one new file with one more transport.

pub mod docker;
pub mod endpoint;
pub mod guard;
pub mod k8s;
pub mod liveness;
pub mod local;
pub mod repo;
pub mod shell;
pub mod starting;
pub mod transport;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

pub use shell::OutputLimit;
pub use transport::{SessionPid, Transport};

use shell::{Shell, Streams};

/// What to start: the image, the repository to materialise, and the container's limits.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// Labels every container of one `aci` invocation (`aci.run_id`).
    pub run_id: String,
    /// The task this sandbox serves (`aci.instance_id`).
    pub instance_id: String,
    /// The image to start (ignored by [`local::LocalSandbox`]).
    pub image: String,
    /// The repository to copy in; `None` when the image already holds it at `repo_dir`.
    pub repo: Option<RepoSource>,
    /// Absolute path of the repository inside the sandbox, e.g. `/testbed`.
    pub repo_dir: String,
    /// Memory, CPU and process limits.
    pub limits: ResourceLimits,
    /// Whether the container gets a network (the default is none: only `lo`).
    pub network: bool,
    /// Extra environment variables for the shell session.
    pub env: Vec<(String, String)>,
    /// How much of a command's output is kept while it streams.
    pub output_limit: OutputLimit,
    /// With `repo = None`: the commit (or branch) the image's repository must be at, checked
    /// out when it is not, its history past it dropped, and then the baseline
    /// ([`repo::check_out_base`]). `None` takes the image's `HEAD` as it is (an environment
    /// image aci built, whose repository holds its baseline alone).
    pub checkout: Option<String>,
    /// A shell snippet run in every new session after the baseline (`env.activate`); when it
    /// fails the sandbox does not open ([`SandboxError::Activation`]).
    pub activate: Option<String>,
}

impl SandboxSpec {
    /// A spec with the defaults: no repository to copy (the image holds it, or it starts
    /// empty) at `/testbed`, [`ResourceLimits::default`], no network, no extra environment and
    /// [`OutputLimit::default`]. Change a field with struct update syntax.
    pub fn new(
        run_id: impl Into<String>,
        instance_id: impl Into<String>,
        image: impl Into<String>,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            instance_id: instance_id.into(),
            image: image.into(),
            repo: None,
            repo_dir: "/testbed".to_owned(),
            limits: ResourceLimits::default(),
            network: false,
            env: Vec::new(),
            output_limit: OutputLimit::default(),
            checkout: None,
            activate: None,
        }
    }
}

/// A repository on the host: a plain directory, or a git repository and a commit in it.
#[derive(Debug, Clone)]
pub struct RepoSource {
    /// A directory on the host.
    pub path: PathBuf,
    /// The commit to check out when `path` is a git repository. `None`, or a commit of all
    /// zeros, copies the directory as it is (without `.git`).
    pub commit: Option<String>,
}

impl RepoSource {
    /// A plain directory, copied as it is (without `.git`).
    pub fn directory(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            commit: None,
        }
    }
}

/// Container resource limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceLimits {
    /// Memory limit in MiB (swap is not allowed on top).
    pub memory_mb: u64,
    /// CPU limit in cores (fractions allowed).
    pub cpus: f64,
    /// Maximum number of processes in the container.
    pub pids: i64,
    /// Disk quota in MiB: how much the container's files may take on top of its image. On a
    /// filesystem of its own where aci can make one, counted in blocks by the kernel, otherwise
    /// measured by the daemon ([`docker::disk`]); a watchdog stops the task once it is over.
    pub disk_mb: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            memory_mb: 4096,
            cpus: 2.0,
            pids: 1024,
            disk_mb: 8192,
        }
    }
}

impl ResourceLimits {
    /// The limits `env` sets (`env.memory_mb`, `env.cpus`, `env.pids`, `env.disk_mb`).
    pub fn from_env(env: &crate::config::EnvConfig) -> Self {
        Self {
            memory_mb: env.memory_mb.get(),
            cpus: env.cpus.get(),
            pids: env.pids.get(),
            disk_mb: env.disk_mb.get(),
        }
    }
}

/// What a command did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// Standard output, exactly as printed (or, for a merged run, both streams interleaved).
    /// When the output was over the [`OutputLimit`], the head and tail around a note.
    pub stdout: Vec<u8>,
    /// Standard error, exactly as printed (empty for a merged run).
    pub stderr: Vec<u8>,
    /// The exit code; `None` when the command did not finish (it timed out and was killed
    /// before the shell could report, or the session died).
    pub exit_code: Option<i32>,
    /// The command ran past its timeout and was killed.
    pub timed_out: bool,
    /// The shell session ended (for example the command was `exit`) or had to be killed, and a
    /// new one was opened: the working directory and exported variables were reset.
    pub session_restarted: bool,
    /// The kernel's OOM killer killed a process of this command (the memory limit was hit).
    pub oom_killed: bool,
    /// How many bytes of output were dropped between the head and the tail.
    pub elided_bytes: u64,
}

impl ExecOutput {
    /// Standard output then standard error, decoded lossily.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&self.stderr));
        text
    }
}

/// Why a sandbox operation failed. Model mistakes never land here: a non-zero exit code or a
/// timeout is an [`ExecOutput`]. These are failures of the sandbox itself.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Docker daemon could not be reached or refused a request; its kind says which.
    #[error("docker: {0}")]
    Docker(docker::DockerError),
    /// The Kubernetes API server could not be reached or refused a request.
    #[error("kubernetes: {0}")]
    Kubernetes(String),
    /// The container stopped while the task was running.
    #[error("the container for {instance_id} died: {reason}")]
    ContainerDied {
        /// The task.
        instance_id: String,
        /// What inspecting the container said (exit code, OOM).
        reason: String,
    },
    /// The task's files took more than its disk quota, and it was stopped.
    #[error(
        "the container for {instance_id} wrote more than its disk quota (env.disk_mb = {disk_mb}): {detail}"
    )]
    OverDiskQuota {
        /// The task.
        instance_id: String,
        /// The quota, in MiB.
        disk_mb: u64,
        /// How it was stopped.
        detail: String,
    },
    /// The repository could not be prepared on the host.
    #[error("cannot prepare the repository {path}: {message}")]
    Repo {
        /// The repository path on the host.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file could not be read or written inside the sandbox.
    #[error("{path}: {message}")]
    File {
        /// The path inside the sandbox.
        path: String,
        /// What went wrong, e.g. `No such file or directory`.
        message: String,
        /// The kind of failure.
        kind: FileErrorKind,
    },
    /// The shell session misbehaved and could not be reopened.
    #[error("shell session: {0}")]
    Session(String),
    /// The image's repository is not usable at the commit asked for: none there, uncommitted
    /// changes, or the commit missing.
    #[error("{0}")]
    Checkout(String),
    /// `env.activate` failed in the new session.
    #[error("env.activate failed (exit {exit_code}): {output}")]
    Activation {
        /// Its exit code (-1 when it did not finish).
        exit_code: i32,
        /// What it printed (stdout and stderr), trimmed.
        output: String,
    },
    /// Local I/O (the host side of [`local::LocalSandbox`], temporary files).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

/// The kinds of [`SandboxError::File`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileErrorKind {
    /// The path does not exist.
    NotFound,
    /// The path is a directory.
    IsDirectory,
    /// The file is over the read limit.
    TooLarge,
    /// Anything else (permissions, I/O).
    Other,
}

/// A place where the agent's commands run: one persistent shell plus byte-exact file access.
///
/// Every method takes `&mut self`: one session runs one command at a time.
pub trait Sandbox: Send {
    /// Runs `command` in the persistent session, stdout and stderr kept apart.
    fn run(
        &mut self,
        command: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<ExecOutput, SandboxError>> + Send;

    /// Runs `command` with stderr interleaved into stdout, as a terminal shows it. This is what
    /// the agent sees as an observation.
    fn run_merged(
        &mut self,
        command: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<ExecOutput, SandboxError>> + Send;

    /// Runs a script the harness wrote itself (never the model's), its stdout kept up to the
    /// read limit ([`shell::MAX_READ_BYTES`]) rather than the command output limit: for the
    /// harness's own transfers, such as a work tree as a tar.
    fn run_trusted(
        &mut self,
        script: &str,
        timeout: Duration,
    ) -> impl Future<Output = Result<ExecOutput, SandboxError>> + Send {
        self.run(script, timeout)
    }

    /// Reads a file's exact bytes. A relative path is relative to the session's working
    /// directory.
    fn read_file(
        &mut self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<u8>, SandboxError>> + Send;

    /// Writes a file's exact bytes, creating parent directories.
    fn write_file(
        &mut self,
        path: &str,
        content: &[u8],
    ) -> impl Future<Output = Result<(), SandboxError>> + Send;

    /// The repository's absolute path inside the sandbox.
    fn repo_dir(&self) -> &str;

    /// The commit that `git diff` compares against: the repository as materialised.
    fn baseline(&self) -> &str;

    /// Stops and removes everything the sandbox created.
    fn shutdown(self) -> impl Future<Output = Result<(), SandboxError>> + Send;
}

/// The one [`Sandbox`]: a persistent shell over a [`Transport`], the repository's path in the
/// sandbox and its baseline commit.
pub struct ShellSandbox<T: Transport> {
    shell: Shell<T>,
    repo_dir: String,
    baseline: String,
}

impl<T: Transport> ShellSandbox<T> {
    /// Opens the session over `transport` in `repo_dir` (with `spec`'s environment and output
    /// limit) and makes the git baseline. On failure the transport is torn down.
    pub async fn open(
        transport: T,
        spec: &SandboxSpec,
        repo_dir: String,
        baseline: repo::Baseline,
    ) -> Result<Self, SandboxError> {
        let mut init = repo::session_init(&spec.env);
        if let Some(prelude) = transport.session_prelude() {
            init = format!("{init}; {prelude}");
        }
        let mut shell = Shell::new(transport, &repo_dir, init, spec.output_limit);
        let made = match shell.start().await {
            Ok(()) => match spec.checkout.as_deref().filter(|_| spec.repo.is_none()) {
                Some(commit) => repo::check_out_base(&mut shell, commit).await,
                None => repo::make_baseline(&mut shell, baseline).await,
            },
            Err(error) => Err(error),
        };
        let made = match (made, spec.activate.as_deref()) {
            (Ok(hash), Some(snippet)) if !snippet.trim().is_empty() => {
                repo::activate(&mut shell, snippet).await.map(|()| hash)
            }
            (made, _) => made,
        };
        match made {
            Ok(baseline) => Ok(Self {
                shell,
                repo_dir,
                baseline,
            }),
            Err(error) => {
                let _ = shell.into_transport().teardown().await;
                Err(error)
            }
        }
    }

    /// The transport underneath (a container's id, a local directory).
    pub fn transport(&self) -> &T {
        self.shell.transport()
    }
}

impl<T: Transport> Sandbox for ShellSandbox<T> {
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

    async fn run_trusted(
        &mut self,
        script: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        self.shell.run_trusted(script, timeout).await
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
        // The session closes first (its stdin with it), then the transport goes.
        self.shell.into_transport().teardown().await
    }
}

/// Any sandbox, chosen at run time (`--runtime docker|local`, `--engine docker|k8s`).
pub enum AnySandbox {
    /// A container.
    Docker(docker::DockerSandbox),
    /// A temporary directory on the host.
    Local(local::LocalSandbox),
    /// A pod of a Kubernetes cluster.
    Pod(k8s::PodSandbox),
}

macro_rules! delegate {
    ($self:ident, $sandbox:ident => $call:expr) => {
        match $self {
            AnySandbox::Docker($sandbox) => $call,
            AnySandbox::Local($sandbox) => $call,
            AnySandbox::Pod($sandbox) => $call,
        }
    };
}

impl Sandbox for AnySandbox {
    async fn run(&mut self, command: &str, timeout: Duration) -> Result<ExecOutput, SandboxError> {
        delegate!(self, s => s.run(command, timeout).await)
    }

    async fn run_merged(
        &mut self,
        command: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        delegate!(self, s => s.run_merged(command, timeout).await)
    }

    async fn run_trusted(
        &mut self,
        script: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        delegate!(self, s => s.run_trusted(script, timeout).await)
    }

    async fn read_file(&mut self, path: &str) -> Result<Vec<u8>, SandboxError> {
        delegate!(self, s => s.read_file(path).await)
    }

    async fn write_file(&mut self, path: &str, content: &[u8]) -> Result<(), SandboxError> {
        delegate!(self, s => s.write_file(path, content).await)
    }

    fn repo_dir(&self) -> &str {
        delegate!(self, s => s.repo_dir())
    }

    fn baseline(&self) -> &str {
        delegate!(self, s => s.baseline())
    }

    async fn shutdown(self) -> Result<(), SandboxError> {
        delegate!(self, s => s.shutdown().await)
    }
}

/// Quotes `value` for bash with single quotes.
pub fn shell_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b))
    {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_spec_has_the_documented_defaults() {
        let spec = SandboxSpec::new("run-1", "demo__calc-1", "aci-base:bookworm");
        assert_eq!(
            (
                spec.run_id.as_str(),
                spec.instance_id.as_str(),
                spec.image.as_str()
            ),
            ("run-1", "demo__calc-1", "aci-base:bookworm")
        );
        assert!(spec.repo.is_none());
        assert_eq!(spec.repo_dir, "/testbed");
        assert_eq!(
            spec.limits,
            ResourceLimits {
                memory_mb: 4096,
                cpus: 2.0,
                pids: 1024,
                disk_mb: 8192,
            }
        );
        assert!(!spec.network);
        assert!(spec.env.is_empty());
        assert_eq!((spec.checkout, spec.activate), (None, None));
        assert_eq!(
            spec.output_limit,
            OutputLimit {
                head: 512 * 1024,
                tail: 512 * 1024
            }
        );
        let source = RepoSource::directory("/src/repo");
        assert_eq!(
            (source.path, source.commit),
            (PathBuf::from("/src/repo"), None)
        );
    }

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("src/a.py"), "src/a.py");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
