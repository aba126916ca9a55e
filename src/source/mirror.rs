//! The mirror cache: one bare mirror per repository under `env.repo_cache`, cloned from
//! `env.repo_url` the first time an instance needs it and shared by every instance and run.
//!
//! Parallel workers of one process wait on one lock per mirror, and processes on a lock file
//! beside it, so a repository is cloned once. A clone goes to a temporary directory that is
//! renamed into place when it is complete, so a killed clone leaves no half mirror. A commit the
//! mirror lacks is fetched once per process; a clone that failed is not tried again by the
//! same process (every instance of the repository gets the same reason at once).
//!
//! The URL and the commit come from the config and the record: the URL must be one git
//! fetches over a known protocol ([`check_repo_url`]), and both reach git's command line after
//! `--` or `--end-of-options`, so neither is ever read as an option.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::image::pull::Notes;
use crate::text::safe_name;

/// The protocols git may use for a mirror (`GIT_ALLOW_PROTOCOL`): a URL or a local path, never
/// a transport helper such as `ext::`, which runs a command.
const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";

/// The URL schemes [`check_repo_url`] accepts.
const URL_SCHEMES: [&str; 5] = ["https", "http", "git", "ssh", "file"];

/// Why a mirror could not give the commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    /// `env.repo_url` gives a URL git must not be handed.
    #[error("env.repo_url gives {url:?} for {repo}, which {reason}")]
    Url {
        /// The URL, `{repo}` filled in.
        url: String,
        /// The repository.
        repo: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The clone failed (this run tried once).
    #[error("cloning {url} into {path} failed: {message}")]
    Clone {
        /// The URL.
        url: String,
        /// The mirror's path.
        path: PathBuf,
        /// Git's last words.
        message: String,
    },
    /// The commit is not in the mirror, even after a fetch.
    #[error("{commit} is not in the mirror {path} of {url}, even after fetching it")]
    MissingCommit {
        /// The URL.
        url: String,
        /// The mirror's path.
        path: PathBuf,
        /// The commit (or branch) asked for.
        commit: String,
    },
    /// The cache directory or its lock could not be used.
    #[error("cannot use the mirror cache {path}: {message}")]
    Cache {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// What this process knows of one mirror.
#[derive(Debug, Default)]
struct MirrorState {
    /// Why the clone failed, when it did.
    clone_failed: Option<MirrorError>,
    /// Commits already fetched (or tried).
    fetched: HashSet<String>,
}

/// What this process knows of each mirror, by its path. A field of the
/// [`crate::provision::Provisioner`].
#[derive(Debug, Default)]
pub struct MirrorStates {
    states: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<MirrorState>>>>,
}

impl MirrorStates {
    fn state(&self, path: &Path) -> Arc<tokio::sync::Mutex<MirrorState>> {
        match self.states.lock() {
            Ok(mut states) => states.entry(path.to_owned()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(MirrorState::default())),
        }
    }
}

/// `env.repo_url` for `repo`: `{repo}` replaced by `owner/name`.
pub fn repo_url(template: &str, repo: &str) -> String {
    template.replace("{repo}", repo)
}

/// Checks a clone URL (`env.repo_url` filled in): an `https`, `http`, `git`, `ssh` or `file` URL,
/// an scp-like `host:path`, or a local path; never one that starts with `-`, holds a control
/// character, or names a transport helper (`<transport>::<address>`, e.g. `ext::`, which git
/// runs as a program).
///
/// # Errors
/// What is wrong, as the end of a sentence ("which …").
pub fn check_repo_url(url: &str) -> Result<(), String> {
    if url.is_empty() {
        return Err("is empty".to_owned());
    }
    if url.starts_with('-') {
        return Err("starts with `-`, so git would read it as an option".to_owned());
    }
    if url.chars().any(char::is_control) {
        return Err("holds a control character".to_owned());
    }
    if let Some((scheme, _)) = url.split_once("://") {
        if !URL_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "uses the scheme `{scheme}`; a mirror is cloned from {} URLs, an scp-like \
                 host:path or a local path",
                URL_SCHEMES.join(", ")
            ));
        }
    } else if let Some((helper, _)) = url.split_once("::") {
        return Err(format!(
            "names the transport helper `{helper}::`, which git runs as a program"
        ));
    }
    Ok(())
}

/// The mirror's directory in `cache`: `owner__name.git`, with any character other than ASCII
/// letters, digits, `.`, `_` and `-` turned into `_`.
pub fn mirror_path(cache: &Path, repo: &str) -> PathBuf {
    let name = safe_name(&repo.replace('/', "__"), '_');
    cache.join(format!("{name}.git"))
}

/// What [`ensure_commit`] needs.
pub struct MirrorRequest<'a> {
    /// `owner/name`.
    pub repo: &'a str,
    /// Where to clone from.
    pub url: String,
    /// The cache directory.
    pub cache: &'a Path,
    /// The commit (or branch) the instance needs.
    pub commit: &'a str,
    /// The instance, for the notes.
    pub instance_id: &'a str,
}

/// The mirror of `request.repo`, holding `request.commit`: cloned when it is not there,
/// fetched when it lacks the commit.
///
/// # Errors
/// [`MirrorError`]: the clone failed (now or earlier in this process), the commit is not in
/// the repository, or the cache cannot be written.
pub async fn ensure_commit(
    request: &MirrorRequest<'_>,
    notes: &Notes<'_>,
    states: &MirrorStates,
) -> Result<PathBuf, MirrorError> {
    check_repo_url(&request.url).map_err(|reason| MirrorError::Url {
        url: request.url.clone(),
        repo: request.repo.to_owned(),
        reason,
    })?;
    let path = mirror_path(request.cache, request.repo);
    let state = states.state(&path);
    let mut state = state.lock().await;
    if let Some(failed) = &state.clone_failed {
        return Err(failed.clone());
    }
    let _file_lock = lock_file(&path).await?;
    let id = request.instance_id;
    if !path.join("HEAD").is_file() {
        (notes.line)(&format!(
            "[{id}] cloning {} into {}",
            request.url,
            path.display()
        ));
        let started = Instant::now();
        (notes.activity)(Some(&format!("cloning {}", request.url)));
        let cloned = clone(&request.url, &path).await;
        (notes.activity)(None);
        if let Err(failed) = cloned {
            state.clone_failed = Some(failed.clone());
            return Err(failed);
        }
        (notes.line)(&format!(
            "[{id}] cloned {} in {:.1} s",
            request.url,
            started.elapsed().as_secs_f64()
        ));
    }
    if has_commit(&path, request.commit).await {
        return Ok(path);
    }
    let missing = || MirrorError::MissingCommit {
        url: request.url.clone(),
        path: path.clone(),
        commit: request.commit.to_owned(),
    };
    if !state.fetched.insert(request.commit.to_owned()) {
        return Err(missing());
    }
    (notes.line)(&format!(
        "[{id}] fetching {} into {}",
        request.commit,
        path.display()
    ));
    // The mirror's refspec updates every branch and tag; a commit no ref reaches is asked for
    // by name (servers that allow it answer).
    let _ = git(&path, &["fetch", "--quiet", "--prune", "origin"]).await;
    if !has_commit(&path, request.commit).await {
        let fetch = [
            "fetch",
            "--quiet",
            "--end-of-options",
            "origin",
            request.commit,
        ];
        let _ = git(&path, &fetch).await;
    }
    if has_commit(&path, request.commit).await {
        Ok(path)
    } else {
        Err(missing())
    }
}

/// Holds the lock file beside the mirror (`<mirror>.lock`) until dropped.
async fn lock_file(path: &Path) -> Result<std::fs::File, MirrorError> {
    let cache_error = |message: String| MirrorError::Cache {
        path: path.to_owned(),
        message,
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| cache_error(e.to_string()))?;
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))
        .map_err(|e| cache_error(format!("cannot open its lock file: {e}")))?;
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .map_err(|e| cache_error(format!("the lock task failed: {e}")))?
        .map_err(|e| cache_error(format!("cannot lock it: {e}")))
}

/// `git clone --mirror url` into a temporary directory beside `path`, renamed to `path` when
/// it is complete.
async fn clone(url: &str, path: &Path) -> Result<(), MirrorError> {
    let failed = |message: String| MirrorError::Clone {
        url: url.to_owned(),
        path: path.to_owned(),
        message,
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let temporary = tempfile::Builder::new()
        .prefix(".clone-")
        .tempdir_in(dir)
        .map_err(|e| failed(format!("cannot make a temporary directory: {e}")))?;
    let target = temporary.path().join("mirror.git");
    let output = tokio::process::Command::new("git")
        .args(["clone", "--mirror", "--quiet", "--", url])
        .arg(&target)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        .stdin(std::process::Stdio::null())
        // A clone abandoned (Ctrl-C, or work ahead that no instance takes) stops with its
        // temporary directory, rather than writing on into a directory that is gone.
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| failed(format!("cannot run git: {e}")))?;
    if !output.status.success() {
        return Err(failed(last_line(&output.stderr)));
    }
    std::fs::rename(&target, path).map_err(|e| failed(format!("cannot move it in place: {e}")))
}

/// Whether `commit` names a commit in the repository at `path`.
async fn has_commit(path: &Path, commit: &str) -> bool {
    let spec = format!("{commit}^{{commit}}");
    git(
        path,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .await
    .is_ok()
}

/// Runs `git -C path args…` with no prompt; its stdout, or its last line of stderr.
async fn git(path: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let output = tokio::process::Command::new("git")
        .arg("-C")
        .arg(path)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(last_line(&output.stderr))
    }
}

/// Git's reason, from its stderr: the first `fatal:` or `error:` line (git adds advice after
/// it), else the last non-empty line, else a note that it said nothing.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    lines
        .iter()
        .find(|line| line.starts_with("fatal: ") || line.starts_with("error: "))
        .or(lines.last())
        .map_or_else(
            || "git failed without a message".to_owned(),
            |line| (*line).to_owned(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_are_named_after_the_repository_with_safe_characters() {
        let cache = Path::new("/c");
        assert_eq!(
            mirror_path(cache, "django/django"),
            PathBuf::from("/c/django__django.git")
        );
        assert_eq!(
            mirror_path(cache, "a b/c:d"),
            PathBuf::from("/c/a_b__c_d.git")
        );
        assert_eq!(
            repo_url("https://github.com/{repo}.git", "psf/requests"),
            "https://github.com/psf/requests.git"
        );
        assert_eq!(repo_url("file:///srv/{repo}", "o/n"), "file:///srv/o/n");
    }

    #[test]
    fn clone_urls_are_urls_of_known_protocols_or_paths() {
        for good in [
            "https://github.com/psf/requests.git",
            "HTTPS://example.com/o/n",
            "git://example.com/o/n",
            "ssh://git@example.com/o/n",
            "file:///srv/o/n",
            "git@github.com:o/n.git",
            "/srv/mirrors/o/n",
            "relative/o/n",
        ] {
            assert_eq!(check_repo_url(good), Ok(()), "{good}");
        }
        assert_eq!(
            check_repo_url("ext::sh -c touch% /tmp/marker"),
            Err("names the transport helper `ext::`, which git runs as a program".to_owned())
        );
        assert_eq!(
            check_repo_url("--upload-pack=touch /tmp/marker"),
            Err("starts with `-`, so git would read it as an option".to_owned())
        );
        assert_eq!(
            check_repo_url("fd://3"),
            Err(
                "uses the scheme `fd`; a mirror is cloned from https, http, git, ssh, file \
                 URLs, an scp-like host:path or a local path"
                    .to_owned()
            )
        );
        assert!(check_repo_url("https://x/o/n\n").is_err());
        assert!(check_repo_url("").is_err());
    }

    /// A mirror request whose commit or URL a hostile record or config chose.
    async fn ask(url: String, commit: &str, cache: &Path) -> Result<PathBuf, MirrorError> {
        let request = MirrorRequest {
            repo: "o/n",
            url,
            cache,
            commit,
            instance_id: "o__n-1",
        };
        ensure_commit(&request, &Notes::quiet(), &MirrorStates::default()).await
    }

    /// `git args…` as a test user, which must succeed; its stdout, trimmed.
    fn git_as_test_user(args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// `--upload-pack=CMD` as a commit ran CMD on the host through `git fetch origin <commit>`
    /// of a `file://` mirror, and `ext::` as a URL runs its command through `git clone`:
    /// neither runs now.
    #[tokio::test]
    async fn a_commit_or_url_that_names_a_command_runs_nothing_on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let at = source.to_str().unwrap();
        let git = |args: &[&str]| {
            git_as_test_user(&[&["-C", at], args].concat());
        };
        std::fs::create_dir_all(&source).unwrap();
        git(&["init", "-q"]);
        git(&["commit", "-q", "--allow-empty", "-m", "one"]);
        let marker = dir.path().join("marker");
        let url = format!("file://{}", source.display());
        let cache = dir.path().join("cache");
        let commit = format!("--upload-pack=touch {}", marker.display());
        let error = ask(url.clone(), &commit, &cache).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{commit} is not in the mirror {} of {url}, even after fetching it",
                cache.join("o__n.git").display()
            )
        );
        let helper = format!("ext::sh -c touch% {}", marker.display());
        let error = ask(helper.clone(), "main", &dir.path().join("cache2"))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "env.repo_url gives {helper:?} for o/n, which names the transport helper \
                 `ext::`, which git runs as a program"
            )
        );
        assert!(!marker.exists(), "the command ran");
    }

    /// A mirror with a missing object: git's transport (`file://`) refuses to copy it, a local
    /// clone of the plain path does not look, and the hint says to use the plain path.
    #[tokio::test]
    async fn a_file_url_that_fails_on_missing_objects_gets_a_hint_naming_the_plain_path() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let run = git_as_test_user;
        let at = source.to_str().unwrap();
        run(&["init", "-q", at]);
        std::fs::write(source.join("a"), "a\n").unwrap();
        run(&["-C", at, "add", "a"]);
        run(&["-C", at, "commit", "-q", "-m", "one"]);
        let mirror = dir.path().join("mirrors/o/n.git");
        run(&["clone", "-q", "--bare", at, mirror.to_str().unwrap()]);
        let commit = run(&["-C", at, "rev-parse", "HEAD"]);
        let blob = run(&["-C", at, "rev-parse", "HEAD:a"]);
        std::fs::remove_file(mirror.join("objects").join(&blob[..2]).join(&blob[2..])).unwrap();
        let plain = mirror.display().to_string();
        let url = format!("file://{plain}");
        let error = ask(url.clone(), &commit, &dir.path().join("cache"))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, MirrorError::Clone { url: failed, .. } if *failed == url),
            "{error}"
        );
        let prepare = super::super::PrepareError::NoRepository {
            commit: commit.clone(),
            tried: error.to_string(),
            plain_path: super::super::failed_file_url(&error),
        };
        assert_eq!(
            crate::hint::Hint::hint(&prepare),
            Some(format!(
                "a file:// URL clones through git's transport, which needs every object; a plain \
                 path clones locally: set env.repo_url={plain} (e.g. \
                 env.repo_url=/srv/mirrors/{{repo}}.git instead of \
                 file:///srv/mirrors/{{repo}}.git)"
            ))
        );
        let cloned = ask(plain, &commit, &dir.path().join("cache2"))
            .await
            .unwrap();
        assert_eq!(cloned, dir.path().join("cache2/o__n.git"));
    }

    #[test]
    fn git_s_last_line_is_the_reason() {
        assert_eq!(
            last_line(b"Cloning into bare repository...\nfatal: unable to access 'x'\n\n"),
            "fatal: unable to access 'x'"
        );
        let advice = b"fatal: '/tmp/x' does not appear to be a git repository\nfatal: Could not \
read from remote repository.\n\nPlease make sure you have the correct access rights\nand the \
repository exists.\n";
        assert_eq!(
            last_line(advice),
            "fatal: '/tmp/x' does not appear to be a git repository"
        );
        assert_eq!(last_line(b"warning: x\nsomething\n"), "something");
        assert_eq!(last_line(b""), "git failed without a message");
    }
}
