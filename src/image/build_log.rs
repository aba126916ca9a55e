//! Build logs of environment images: the whole output of each build is kept in `env.build_logs`
//! as `<tag>.log` (`:` and `/` as `_`), rewritten by each build of that tag, and a failed build
//! says the step it failed at and its last lines.
//!
//! The scripts aci runs in a build announce each step with a line starting with
//! [`STEP_MARKER`]; the last such line before a failure names the step. Without one, the
//! daemon's last `Step N/M : …` line does.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::env::EnvRequest;
use crate::config::EnvConfig;
use crate::sandbox::docker::{BuildRequest, DockerRuntime};
use crate::text::safe_name;

/// The start of the line with which a build script announces a step: `[aci] step: <name>`.
pub const STEP_MARKER: &str = "[aci] step: ";
/// The start of each line with which a build prints one distribution of its venv's lock
/// (`pip freeze --all`): `[aci] lock: name==1.0`.
pub const LOCK_MARKER: &str = "[aci] lock: ";
/// Lines of the build's output a failure quotes.
pub const TAIL_LINES: usize = 25;
/// Characters of one line a failure quotes (pip lists every version it knows on one line).
pub const TAIL_LINE_CHARS: usize = 300;

/// The directory of the build logs: `env.build_logs`, else `$XDG_CACHE_HOME/aci/build-logs`,
/// else `~/.cache/aci/build-logs`; `None` when there is no home either.
pub fn log_dir(env: &EnvConfig) -> Option<PathBuf> {
    if let Some(dir) = &env.build_logs {
        return Some(dir.clone());
    }
    let from = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    from("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| from("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .map(|dir| dir.join("aci").join("build-logs"))
}

/// The log's file name for an image tag: `aci-env-python:ab12` → `aci-env-python_ab12.log`.
pub fn log_file_name(tag: &str) -> String {
    format!("{}.log", safe_name(tag, '_'))
}

/// Where the lock of the image `tag` is kept: `<log_dir>/<tag>.lock.txt` (`:` and `/` as
/// `_`), beside its build log.
pub fn lock_path(env: &EnvConfig, tag: &str) -> Option<PathBuf> {
    log_dir(env).map(|dir| dir.join(format!("{}.lock.txt", safe_name(tag, '_'))))
}

/// The lock of an earlier build of `tag` (a constraints file), when there is one with a pin.
pub fn read_lock(env: &EnvConfig, tag: &str) -> Option<String> {
    let text = std::fs::read_to_string(lock_path(env, tag)?).ok()?;
    text.lines().any(|line| line.contains("==")).then_some(text)
}

/// Keeps `constraints` as the lock of `tag`; a lock that cannot be written costs only the
/// pinning of a later rebuild.
pub fn write_lock(env: &EnvConfig, tag: &str, constraints: &str) {
    if let Some(path) = lock_path(env, tag) {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(path, constraints);
    }
}

/// Puts the lock (`pip freeze --all`) on the image `image_id` as the label
/// [`super::as_of::LABEL_LOCK`] (its lines but comments, separated by `, `), and `resolved`
/// as [`super::as_of::LABEL_RESOLVED_AS_OF`] (what the build found past its cutoff is known
/// only after it), and tags the result `tag`.
/// One `LABEL` over the image: no container runs, no network. Returns the new image id.
///
/// # Errors
/// The daemon refused: its message.
pub async fn label_lock(
    runtime: &DockerRuntime,
    tag: &str,
    image_id: &str,
    freeze: &[String],
    resolved: &str,
) -> Result<String, String> {
    let lines: Vec<&str> = freeze
        .iter()
        .map(String::as_str)
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect();
    let labels = std::collections::BTreeMap::from([
        (super::as_of::LABEL_LOCK.to_owned(), lines.join(", ")),
        (
            super::as_of::LABEL_RESOLVED_AS_OF.to_owned(),
            resolved.to_owned(),
        ),
    ]);
    let mut dockerfile = format!("FROM {image_id}\n");
    if let Some(line) = super::env::label_line(&labels) {
        dockerfile.push_str(&line);
        dockerfile.push('\n');
    }
    let mut context = tar::Builder::new(Vec::new());
    super::env::append_file(&mut context, "Dockerfile", dockerfile.as_bytes())
        .map_err(|e| format!("cannot write the build context: {e}"))?;
    let context = context
        .into_inner()
        .map_err(|e| format!("cannot write the build context: {e}"))?;
    let none = HashMap::new();
    let request = BuildRequest {
        tag,
        dockerfile: "Dockerfile",
        context,
        build_args: &none,
        labels: &none,
        network: false,
        host_network: false,
    };
    runtime
        .build_image(request, |_| {})
        .await
        .map_err(|e| format!("cannot label the image with its lock: {e}"))
}

/// The log of one build: written to its file as the output arrives (when the file could be
/// opened), with the current step and the last lines kept in memory.
#[derive(Debug)]
pub struct BuildLog {
    path: Option<PathBuf>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    partial: String,
    tail: VecDeque<String>,
    marker_step: Option<String>,
    docker_step: Option<String>,
    lock: Vec<String>,
}

impl BuildLog {
    /// Starts the log of `tag` in `dir` (created when missing). A log that cannot be written
    /// costs nothing else: the failure message then quotes the last lines only.
    pub fn open(dir: Option<&Path>, tag: &str) -> Self {
        let opened = dir.and_then(|dir| {
            std::fs::create_dir_all(dir).ok()?;
            let path = dir.join(log_file_name(tag));
            let file = std::fs::File::create(&path).ok()?;
            Some((path, std::io::BufWriter::new(file)))
        });
        let (path, file) = opened.unzip();
        Self {
            path,
            file,
            partial: String::new(),
            tail: VecDeque::new(),
            marker_step: None,
            docker_step: None,
            lock: Vec::new(),
        }
    }

    /// Where the log is written, when it is.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Adds a piece of the build's output (any number of lines, the last maybe unfinished).
    /// Terminal colour codes (the daemon paints a step's stderr red) are dropped.
    pub fn push(&mut self, output: &str) {
        let output = crate::text::strip_ansi(output);
        if let Some(file) = &mut self.file
            && file.write_all(output.as_bytes()).is_err()
        {
            self.file = None;
        }
        self.partial.push_str(&output);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.line(line.trim_end());
        }
    }

    fn line(&mut self, line: &str) {
        if let Some(pin) = line.strip_prefix(LOCK_MARKER) {
            self.lock.push(pin.trim().to_owned());
        }
        if let Some(step) = line.strip_prefix(STEP_MARKER) {
            self.marker_step = Some(step.trim().to_owned());
        } else if line.starts_with("Step ") {
            self.docker_step = Some(line.to_owned());
            self.marker_step = None;
        }
        // The daemon's bookkeeping lines say nothing about the failure.
        if line.starts_with(" ---> ") || line.starts_with("Removing intermediate container") {
            return;
        }
        let mut kept: String = line.chars().take(TAIL_LINE_CHARS).collect();
        if kept.len() < line.len() {
            kept.push('…');
        }
        self.tail.push_back(kept);
        if self.tail.len() > TAIL_LINES {
            self.tail.pop_front();
        }
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) {
        if let Some(file) = &mut self.file {
            let _ = file.flush();
        }
    }

    /// The lock lines the build printed ([`LOCK_MARKER`]), in order.
    pub fn lock(&self) -> &[String] {
        &self.lock
    }

    /// The step the build is at: the last marker of a script, else the daemon's last step.
    pub fn step(&self) -> Option<&str> {
        self.marker_step.as_deref().or(self.docker_step.as_deref())
    }

    /// The message of a failed build: the step, the daemon's error (its first line), the last
    /// lines of the output, and where the whole log is.
    pub fn failure(&mut self, error: &str) -> String {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.line(rest.trim_end());
        }
        self.flush();
        let tail: Vec<&str> = self.tail.iter().map(String::as_str).collect();
        failure_message(self.step(), error, &tail, self.path())
    }
}

/// `failed at step <step>: <error's first line>`, then the last lines of the build behind
/// `| `, then `build log: <path>`.
pub fn failure_message(
    step: Option<&str>,
    error: &str,
    tail: &[&str],
    path: Option<&Path>,
) -> String {
    let first = error.lines().next().unwrap_or_default().trim();
    let mut message = match step {
        Some(step) => format!("failed at step `{step}`: {first}"),
        None => first.to_owned(),
    };
    if !tail.is_empty() {
        message.push_str("\nthe last lines of the build:");
        for line in tail {
            message.push_str("\n| ");
            message.push_str(line);
        }
    }
    if let Some(path) = path {
        message.push_str(&format!("\nbuild log: {}", path.display()));
    }
    message
}

/// Runs the build of `tag` with a network and the time limit `env.build_timeout`, its whole
/// output in the image's log in [`log_dir`], each `Step N/M` line (cut to one screen line) to
/// `request.on_step`. Returns the image id; `Err` is the failure message
/// ([`BuildLog::failure`]).
pub async fn build_logged(
    runtime: &DockerRuntime,
    tag: &str,
    context: Vec<u8>,
    request: &EnvRequest<'_>,
    instance_id: &str,
) -> Result<String, String> {
    build_logged_with(
        runtime,
        tag,
        context,
        request,
        instance_id,
        &BuildOptions::default(),
    )
    .await
    .map(|built| built.id)
}

/// What a build of an environment gets besides its context.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// `ARG` values (`PIP_INDEX_URL`, `PIP_CONSTRAINT`).
    pub args: HashMap<String, String>,
    /// Build on the host's network (to reach the as-of index on its loopback).
    pub host_network: bool,
}

/// A finished build: the image id and the lock lines it printed ([`LOCK_MARKER`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The image id.
    pub id: String,
    /// `pip freeze --all`, one line each, when the build printed it.
    pub lock: Vec<String>,
}

/// [`build_logged`] with build arguments and the host's network ([`BuildOptions`]); returns
/// the lock lines too.
pub async fn build_logged_with(
    runtime: &DockerRuntime,
    tag: &str,
    context: Vec<u8>,
    request: &EnvRequest<'_>,
    instance_id: &str,
    options: &BuildOptions,
) -> Result<Built, String> {
    let none = HashMap::new();
    let build = BuildRequest {
        tag,
        dockerfile: "Dockerfile",
        context,
        build_args: &options.args,
        labels: &none,
        network: true,
        host_network: options.host_network,
    };
    let on_step = request.on_step;
    let limit = Duration::from_secs_f64(request.env.build_timeout.get().max(1.0));
    on_step(&format!(
        "[{instance_id}] building the environment image {tag}"
    ));
    let dir = log_dir(request.env);
    let mut log = BuildLog::open(dir.as_deref(), tag);
    let result = {
        let log = &mut log;
        let steps = runtime.build_image_logged(build, |output| {
            log.push(output);
            if output.starts_with("Step ") {
                // Steps carry whole scripts and labels: one screen line each is enough.
                let line: String = output.trim_end().chars().take(120).collect();
                on_step(&format!("[{instance_id}] {line}"));
            }
        });
        tokio::time::timeout(limit, steps).await
    };
    match result {
        Ok(Ok(id)) => {
            log.flush();
            Ok(Built {
                id,
                lock: log.lock().to_vec(),
            })
        }
        Ok(Err(error)) => Err(log.failure(&error.to_string())),
        Err(_) => Err(log.failure(&format!(
            "it ran past env.build_timeout ({} s)",
            limit.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_last_announced_step_and_quotes_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = BuildLog::open(Some(dir.path()), "aci-env-python:ab12");
        log.push("Step 1/3 : FROM sha256:x\n ---> 1234\nStep 2/3 : RUN bash /tmp/a.sh\n");
        assert_eq!(log.step(), Some("Step 2/3 : RUN bash /tmp/a.sh"));
        log.push(
            " ---> Running in 77\n[aci] step: pip install the pip_packages of the spec\nCollect",
        );
        log.push("ing numpy==1.19.2\nERROR: No matching distribution found for numpy==1.19.2\n");
        let message = log.failure("The command '/bin/sh -c bash /tmp/a.sh' returned 1\nnoise");
        assert_eq!(
            message,
            format!(
                "failed at step `pip install the pip_packages of the spec`: The command '/bin/sh -c \
                 bash /tmp/a.sh' returned 1\nthe last lines of the build:\n| Step 1/3 : FROM \
                 sha256:x\n| Step 2/3 : RUN bash /tmp/a.sh\n| [aci] step: pip install the \
                 pip_packages of the spec\n| Collecting numpy==1.19.2\n| ERROR: No matching \
                 distribution found for numpy==1.19.2\nbuild log: {}",
                dir.path().join("aci-env-python_ab12.log").display()
            )
        );
        // The file holds every byte of the output, bookkeeping lines included.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("aci-env-python_ab12.log")).unwrap(),
            "Step 1/3 : FROM sha256:x\n ---> 1234\nStep 2/3 : RUN bash /tmp/a.sh\n ---> Running \
             in 77\n[aci] step: pip install the pip_packages of the spec\nCollecting \
             numpy==1.19.2\nERROR: No matching distribution found for numpy==1.19.2\n"
        );
    }

    #[test]
    fn a_new_docker_step_clears_the_marker_of_the_step_before_and_the_tail_is_bounded() {
        let mut log = BuildLog::open(None, "t:1");
        log.push("[aci] step: venv\nStep 4/5 : RUN rm -rf /tmp/aci-spec\n");
        assert_eq!(log.step(), Some("Step 4/5 : RUN rm -rf /tmp/aci-spec"));
        for n in 0..100 {
            log.push(&format!("line {n}\n"));
        }
        let message = log.failure("boom");
        assert!(
            message.starts_with("failed at step `Step 4/5 : RUN rm -rf /tmp/aci-spec`: boom\n")
        );
        assert_eq!(message.matches("\n| ").count(), TAIL_LINES);
        assert!(message.ends_with("\n| line 99"), "{message}");
        assert_eq!(log.path(), None);
    }

    #[test]
    fn colour_codes_are_dropped_and_long_lines_cut_in_the_quote_but_not_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = BuildLog::open(Some(dir.path()), "t:1");
        let long = "v".repeat(TAIL_LINE_CHARS + 10);
        log.push(&format!(
            "\x1b[91m+ pip install x\n\x1b[0m[aci] step: pins\n{long}\n"
        ));
        assert_eq!(log.step(), Some("pins"));
        let message = log.failure("boom");
        let cut = format!("| {}…", "v".repeat(TAIL_LINE_CHARS));
        assert!(message.contains(&format!("\n| + pip install x\n| [aci] step: pins\n{cut}\n")));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t_1.log")).unwrap(),
            format!("+ pip install x\n[aci] step: pins\n{long}\n")
        );
    }

    #[test]
    fn log_names_keep_only_safe_characters() {
        assert_eq!(
            log_file_name("aci-spec-sympy__sympy:1.10-abc"),
            "aci-spec-sympy__sympy_1.10-abc.log"
        );
        assert_eq!(log_file_name("a/b:c"), "a_b_c.log");
    }
}
