//! Materialising a task's repository: a tar of the source tree at `base_commit`, made on the
//! host, and a git baseline commit made in the sandbox, so `git diff` shows only the agent's work.
//!
//! The baseline holds the tree without history: the agent cannot read the fix from a future
//! commit, and the baseline's hash is the same on every run (fixed author, date and message).
//! A repository that comes with the image is checked out at `base_commit` and left holding
//! that commit alone ([`check_out_script`], [`history_script`]), so no source has a future.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::shell::Shell;
use super::transport::Transport;
use super::{RepoSource, SandboxError, shell_quote};

/// The author, committer and date of every baseline commit, so its hash is reproducible.
const BASELINE_GIT_ENV: &str = "GIT_AUTHOR_NAME=aci GIT_AUTHOR_EMAIL=aci@localhost \
GIT_COMMITTER_NAME=aci GIT_COMMITTER_EMAIL=aci@localhost \
GIT_AUTHOR_DATE='2000-01-01T00:00:00Z' GIT_COMMITTER_DATE='2000-01-01T00:00:00Z'";

fn repo_error(path: &Path, message: impl Into<String>) -> SandboxError {
    SandboxError::Repo {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// Whether `commit` names a real commit rather than the all-zeros placeholder.
fn is_real_commit(commit: Option<&str>) -> Option<&str> {
    commit.filter(|c| !c.is_empty() && !c.bytes().all(|b| b == b'0'))
}

/// A tar of the repository with every entry under `prefix` (e.g. `testbed`): `git archive` of
/// the commit for a git repository, or the directory as it is (without `.git`) otherwise.
pub fn tar_repository(source: &RepoSource, prefix: &str) -> Result<Vec<u8>, SandboxError> {
    let path = &source.path;
    if !path.is_dir() {
        return Err(repo_error(path, "not a directory"));
    }
    if let Some(commit) = is_real_commit(source.commit.as_deref()) {
        // The commit comes from a record: after `--end-of-options` git never reads it as an
        // option (`--output=FILE` would write a host file).
        let archive = [
            "archive",
            "--format=tar",
            &format!("--prefix={prefix}/"),
            "--end-of-options",
            commit,
        ];
        let tar = git(path, &archive, &format!("git archive {commit} failed"))?;
        return match release_tag(path, commit) {
            Some(tag) => with_release_tag(tar, prefix, &tag)
                .map_err(|e| repo_error(path, format!("cannot add the release tag: {e}"))),
            None => Ok(tar),
        };
    }
    tar_directory(path, prefix).map_err(|e| repo_error(path, e.to_string()))
}

/// Where the tar carries the release tag to the baseline script, which reads it and then
/// removes `.git`; no repository holds this path, since neither `git archive` nor a copied
/// directory carries `.git`.
const RELEASE_TAG_FILE: &str = ".git/aci-release-tag";

/// The release `commit` belongs to: the nearest tag it reaches (`git describe --tags
/// --abbrev=0`), when that is a plain name. The baseline holds no history, so without it a
/// project that takes its version from git (setuptools_scm, versioneer) installs as
/// `0.1.dev1`, and a test suite that checks its own version (pytest's `minversion`) refuses
/// to start; with it the baseline is tagged and the version is the release's.
fn release_tag(path: &Path, commit: &str) -> Option<String> {
    let args = [
        "describe",
        "--tags",
        "--abbrev=0",
        "--end-of-options",
        commit,
    ];
    let out = git(path, &args, "").ok()?;
    let tag = String::from_utf8(out).ok()?;
    let tag = tag.trim();
    plain_tag(tag).then(|| tag.to_owned())
}

/// A tag name safe to pass to `git tag` and to a shell: letters, digits and `._+-/`, not
/// starting with `-` or `.`, with no `..`, and short.
fn plain_tag(tag: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._+-/".contains(c);
    !tag.is_empty()
        && tag.len() <= 128
        && tag.chars().all(allowed)
        && !tag.starts_with(['-', '.', '/'])
        && !tag.contains("..")
}

/// `tar` (one archive, as `git archive` writes it) with one more entry at the end:
/// [`RELEASE_TAG_FILE`] under `prefix`, holding `tag`.
fn with_release_tag(tar: Vec<u8>, prefix: &str, tag: &str) -> std::io::Result<Vec<u8>> {
    // The archive ends after its last entry's data, padded to a block; what follows is the
    // end-of-archive marker, which must move after the new entry.
    let mut end = 0;
    for entry in tar::Archive::new(tar.as_slice()).entries()? {
        let entry = entry?;
        let size = entry.header().entry_size()?;
        end = end.max(entry.raw_file_position() + size.div_ceil(512) * 512);
    }
    let end = usize::try_from(end).map_err(std::io::Error::other)?;
    let mut out = tar;
    out.truncate(end);
    let mut builder = tar::Builder::new(out);
    let mut header = tar::Header::new_gnu();
    header.set_size(tag.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    builder.append_data(
        &mut header,
        Path::new(prefix).join(RELEASE_TAG_FILE),
        tag.as_bytes(),
    )?;
    builder.into_inner()
}

/// The stdout of `git -C path args…`; on failure, `failure` and git's stderr.
fn git(path: &Path, args: &[&str], failure: &str) -> Result<Vec<u8>, SandboxError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(path)
        .args(args)
        .output()
        .map_err(|e| repo_error(path, format!("cannot run git: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(repo_error(path, git_failure(path, failure, &stderr)));
    }
    Ok(output.stdout)
}

/// What a failed git command says: `failure` and git's stderr, except when git would not read the
/// repository at all because another user owns it (its `safe.directory` check): then that, and
/// how to fix it, rather than a `failure` that blames the commit.
fn git_failure(path: &Path, failure: &str, stderr: &str) -> String {
    if stderr.contains("detected dubious ownership") {
        let path = shell_quote(&path.to_string_lossy());
        return format!(
            "git will not read it: another user owns it (git: detected dubious ownership; an \
             unpacked tarball keeps the ids of its owner); fix: `chown -R \"$(id -u):$(id -g)\" \
             {path}`, or trust it: `git config --global --add safe.directory {path}`"
        );
    }
    format!("{failure}: {}", stderr.trim())
}

fn tar_directory(path: &Path, prefix: &str) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    builder.mode(tar::HeaderMode::Deterministic);
    builder.append_dir(prefix, path)?;
    for entry in directory_entries(path)? {
        let relative = entry.strip_prefix(path).map_err(std::io::Error::other)?;
        builder.append_path_with_name(&entry, Path::new(prefix).join(relative))?;
    }
    builder.into_inner()
}

/// Every path under `path` except `.git`, in a fixed order (directories before their contents).
fn directory_entries(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut stack = vec![path.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(dir) = stack.pop() {
        let mut children: Vec<_> = std::fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            if child.file_name() == ".git" {
                continue;
            }
            if child.file_type()?.is_dir() {
                stack.push(child.path());
            }
            entries.push(child.path());
        }
    }
    Ok(entries)
}

/// A short key that changes whenever the tree [`tar_repository`] would produce changes, without
/// reading the files: the commit and tree ids for a commit of a git repository; for a plain
/// directory, a hash over every entry's path, type, size, mode and modification time (and a
/// symlink's target), as `make` and git's index judge a file unchanged.
pub fn source_fingerprint(source: &RepoSource) -> Result<String, SandboxError> {
    let path = &source.path;
    if !path.is_dir() {
        return Err(repo_error(path, "not a directory"));
    }
    if let Some(commit) = is_real_commit(source.commit.as_deref()) {
        let failure = format!("{commit} is not a commit of this repository");
        // One name per `rev-parse --verify`: only with `--verify` does rev-parse take
        // `--end-of-options` as the end of its options rather than print it back.
        let verify = |name: &str| {
            git(
                path,
                &["rev-parse", "--verify", "--end-of-options", name],
                &failure,
            )
            .map(|id| String::from_utf8_lossy(&id).trim().to_owned())
        };
        let commit_id = verify(&format!("{commit}^{{commit}}"))?;
        let tree_id = verify(&format!("{commit_id}^{{tree}}"))?;
        // The release tag goes into the baseline, so a tag added later is a new source.
        return Ok(match release_tag(path, &commit_id) {
            Some(tag) => format!("git {commit_id} {tree_id} {tag}"),
            None => format!("git {commit_id} {tree_id}"),
        });
    }
    directory_fingerprint(path).map_err(|e| repo_error(path, e.to_string()))
}

fn directory_fingerprint(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let mut hasher = Sha256::new();
    for entry in directory_entries(path)? {
        let relative = entry.strip_prefix(path).map_err(std::io::Error::other)?;
        let meta = std::fs::symlink_metadata(&entry)?;
        hasher.update(relative.as_os_str().as_bytes());
        hasher.update([0]);
        for number in [meta.mode().into(), meta.len(), meta.mtime().cast_unsigned()] {
            hasher.update(number.to_le_bytes());
        }
        hasher.update(meta.mtime_nsec().to_le_bytes());
        if meta.file_type().is_symlink() {
            hasher.update(std::fs::read_link(&entry)?.as_os_str().as_bytes());
        }
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    Ok(format!("dir {}", data_encoding::HEXLOWER.encode(&digest)))
}

/// The first lines of every session: the task's environment variables, exported.
pub fn session_init(env: &[(String, String)]) -> String {
    let mut init = String::from("true");
    for (key, value) in env {
        init.push_str(&format!("; export {key}={}", shell_quote(value)));
    }
    init
}

/// How the baseline commit comes about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// The image already holds the repository with its baseline: use `HEAD` (or start an
    /// empty repository when there is none).
    Existing,
    /// Commit the copied tree. `force` adds files that `.gitignore` matches too: right for a
    /// `git archive`, which holds only tracked files, not for a copied directory.
    Fresh {
        /// Add ignored files as well.
        force: bool,
    },
}

impl Baseline {
    /// The baseline a fresh copy of `source` needs.
    pub fn for_source(source: Option<&RepoSource>) -> Self {
        match source {
            None => Self::Existing,
            Some(source) => Self::Fresh {
                force: is_real_commit(source.commit.as_deref()).is_some(),
            },
        }
    }
}

/// The shell script that makes (or finds) the baseline commit in the current directory and
/// prints its hash. The sandbox runs it in a fresh container; an environment image runs it at
/// build time (`crate::image::env`), so both give the same deterministic commit for the same tree.
///
/// On the local runtime git would read the user's own config: the baseline is made without it
/// (no signing, hooks or templates), and `core.autocrlf` is pinned off in the repository, so no
/// line ending is rewritten in the baseline or in the patch that `submit` makes later.
///
/// The objects end up compressed in one pack, as in a fresh clone: `grep -r` over the
/// repository finds nothing in `.git/objects`, and `find` lists a pack instead of one loose
/// object per file.
pub fn baseline_script(baseline: Baseline) -> String {
    let fresh = |force: bool| {
        format!(
            "( export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 && \
             tag=$(cat {RELEASE_TAG_FILE} 2>/dev/null || true) && rm -rf .git && \
             git init -q && git config core.autocrlf false && \
             git add -A{} && \
             {BASELINE_GIT_ENV} git commit -q --allow-empty --no-verify -m 'aci baseline' && \
             {{ case $tag in ''|-*) ;; *) git tag \"$tag\" 2>/dev/null || true ;; esac; }} && \
             git -c repack.updateServerInfo=false repack -a -d -q && \
             git rev-parse HEAD )",
            if force { " -f" } else { "" }
        )
    };
    match baseline {
        Baseline::Fresh { force } => fresh(force),
        // An image without a repository at repo_dir gets an empty one.
        Baseline::Existing => format!(
            "git rev-parse -q --verify HEAD 2>/dev/null || {{ {}; }}",
            fresh(false)
        ),
    }
}

/// Makes (or, for an image that already holds the repository, finds) the baseline commit in
/// the session's working directory and returns its hash.
pub async fn make_baseline<T: Transport>(
    shell: &mut Shell<T>,
    baseline: Baseline,
) -> Result<String, SandboxError> {
    let script = baseline_script(baseline);
    let out = shell.run_trusted(&script, Duration::from_secs(600)).await?;
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.exit_code != Some(0) || hash.len() < 40 {
        return Err(SandboxError::Session(format!(
            "cannot make the git baseline: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(hash)
}

/// Exit codes of [`check_out_script`], one per reason it refuses.
const NO_REPOSITORY: i32 = 3;
const DIRTY: i32 = 4;
const NO_COMMIT: i32 = 5;
const CHECKOUT_FAILED: i32 = 6;
const NOT_TOP_LEVEL: i32 = 7;
const HISTORY_FAILED: i32 = 8;

/// Where [`history_script`] builds the new git directory before it replaces `.git`: inside the
/// work tree, so that the final `mv` renames within one file system (and one overlay layer).
const FRESH_GIT_DIR: &str = ".git.aci-fresh";

/// The shell script that puts the image's repository (in the current directory) at `commit`
/// and prints the commit's hash: a commit id or a branch name (SWE-smith's `base_commit`).
///
/// It refuses a directory with no repository or no commit, a repository whose git directory
/// is not `./.git`, and a work tree whose tracked files have changes (untracked files, such as
/// an install's build outputs, are left alone). When `HEAD` is elsewhere it checks out the
/// branch of that name, else moves the current branch to the commit (as SWE-bench's images
/// were made: `git reset --hard <base_commit>`), else detaches at it. Then
/// [`history_script`] leaves the repository holding that commit alone.
///
/// The commit is a record's: it reaches git after `--end-of-options` when the image's git
/// takes that (`rev-parse --verify` learned it last); an older git is asked without it, the
/// value being checked at load ([`crate::instance::check::check_commit`]) never to start
/// with `-`.
pub fn check_out_script(commit: &str) -> String {
    let quoted = shell_quote(commit);
    let spec = shell_quote(&format!("{commit}^{{commit}}"));
    let branch = shell_quote(&format!("refs/heads/{commit}"));
    format!(
        "( git rev-parse -q --verify HEAD >/dev/null 2>&1 || exit {NO_REPOSITORY}; \
         [ \"$(git rev-parse --git-dir)\" = .git ] || exit {NOT_TOP_LEVEL}; \
         __aci_eoo=--end-of-options; \
         git rev-parse -q --verify --end-of-options HEAD >/dev/null 2>&1 || __aci_eoo=; \
         __aci_dirty=$(git status --porcelain --untracked-files=no) || exit {NO_REPOSITORY}; \
         if [ -n \"$__aci_dirty\" ]; then printf '%s\\n' \"$__aci_dirty\" | head -n 10 >&2; exit {DIRTY}; fi; \
         __aci_want=$(git rev-parse -q --verify $__aci_eoo {spec}) || exit {NO_COMMIT}; \
         if [ \"$(git rev-parse HEAD)\" != \"$__aci_want\" ]; then \
           if git show-ref -q --verify $__aci_eoo {branch}; then git checkout -q $__aci_eoo {quoted}; \
           elif git symbolic-ref -q HEAD >/dev/null; then git reset -q --hard \"$__aci_want\"; \
           else git checkout -q --detach \"$__aci_want\"; fi || exit {CHECKOUT_FAILED}; \
         fi; \
         {} || exit {HISTORY_FAILED}; \
         git rev-parse HEAD )",
        history_script()
    )
}

/// The shell script that replaces the repository's `.git` (in the current directory) with one
/// that holds `HEAD`'s commit alone, so that nothing past it can be read: an image's
/// repository may hold the fix as a later commit, a branch, a tag, a stash, a reflog entry,
/// `ORIG_HEAD`, a remote or an unreachable object.
///
/// Only `.git` is rewritten and no object is hashed again (a SHA-256 repository stays one):
/// `HEAD` keeps its hash (SWE-bench's eval scripts name `base_commit` itself), its commit,
/// trees and blobs are packed into a new git directory (no delta search), which is shallow at
/// that commit (its parents are not there, as in a `--depth 1` clone), with the branch `HEAD`
/// is on (or a detached `HEAD`) and no reflog. The index is kept, so `git status` does not read every file again, and so are
/// `info/exclude` (where an environment image lists what its setup built) and
/// `info/attributes`. The configuration is git's default: no remote, hook or filter of the
/// image's survives.
pub fn history_script() -> String {
    let new = FRESH_GIT_DIR;
    format!(
        "{{ __aci_head=$(git rev-parse --verify HEAD) && \
         __aci_ref=$(git symbolic-ref -q HEAD || true) && \
         __aci_format=$(git rev-parse --show-object-format 2>/dev/null || true) && \
         case \"$__aci_format\" in sha256) __aci_format=--object-format=sha256 ;; *) __aci_format= ;; esac && \
         rm -rf {new} && git init -q --bare $__aci_format {new} && \
         git rev-list --objects -n 1 \"$__aci_head\" > {new}/objects.list && \
         git pack-objects -q --window=0 {new}/objects/pack/pack < {new}/objects.list >/dev/null && \
         rm -f {new}/objects.list && \
         printf '%s\\n' \"$__aci_head\" > {new}/shallow && \
         if [ -n \"$__aci_ref\" ]; then \
           git --git-dir={new} update-ref \"$__aci_ref\" \"$__aci_head\" && \
           git --git-dir={new} symbolic-ref HEAD \"$__aci_ref\"; \
         else git --git-dir={new} update-ref --no-deref HEAD \"$__aci_head\"; fi && \
         git --git-dir={new} config core.bare false && \
         __aci_copied=yes && \
         for __aci_file in .git/index .git/sharedindex.* .git/info/exclude .git/info/attributes; do \
           if [ -f \"$__aci_file\" ]; then cp \"$__aci_file\" \"{new}/${{__aci_file#.git/}}\" || __aci_copied=no; fi; \
         done && [ \"$__aci_copied\" = yes ] && \
         rm -rf .git && mv {new} .git; }} || {{ rm -rf {new}; false; }}"
    )
}

/// Puts the image's repository in the session's working directory at `commit`
/// ([`check_out_script`]), leaves it holding that commit alone, and returns the commit's hash,
/// the baseline of `submit`.
///
/// # Errors
/// [`SandboxError::Checkout`], saying why: no repository, a git directory elsewhere,
/// uncommitted changes (listed), the commit missing, the checkout failing, or the history past
/// the commit not dropped.
pub async fn check_out_base<T: Transport>(
    shell: &mut Shell<T>,
    commit: &str,
) -> Result<String, SandboxError> {
    let out = shell
        .run_trusted(&check_out_script(commit), Duration::from_secs(600))
        .await?;
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&out.stderr)
        .trim()
        .replace('\n', "; ");
    let dir = shell.workdir().to_owned();
    let reason = match out.exit_code {
        Some(0) if hash.len() >= 40 => return Ok(hash),
        Some(NO_REPOSITORY) => format!("the image holds no git repository with a commit at {dir}"),
        Some(NOT_TOP_LEVEL) => format!(
            "the git directory of the repository at {dir} in the image is not {dir}/.git \
             (a worktree, a submodule or a parent's repository)"
        ),
        Some(DIRTY) => format!(
            "the repository at {dir} in the image has uncommitted changes ({stderr}); \
             commit them in the image, or use a clean image"
        ),
        Some(NO_COMMIT) => {
            format!("base_commit {commit} is not in the repository at {dir} in the image")
        }
        Some(HISTORY_FAILED) => format!(
            "cannot drop the history past base_commit {commit} from the repository at {dir}: \
             {stderr}"
        ),
        _ => format!("cannot check out {commit} at {dir}: {stderr}"),
    };
    Err(SandboxError::Checkout(reason))
}

/// Runs `env.activate` in the session, its output merged, and adds it to the session's
/// start-up, so that a session opened again after a restart is activated too.
///
/// # Errors
/// [`SandboxError::Activation`] with its exit code and output when it fails.
pub async fn activate<T: Transport>(
    shell: &mut Shell<T>,
    snippet: &str,
) -> Result<(), SandboxError> {
    let out = shell
        .run_trusted(&format!("{{ {snippet}\n}} 2>&1"), Duration::from_secs(600))
        .await?;
    if out.exit_code != Some(0) {
        let text = out.text();
        let lines: Vec<&str> = text.trim().lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Err(SandboxError::Activation {
            exit_code: out.exit_code.unwrap_or(-1),
            output: if out.timed_out {
                format!("{tail}\n(it ran past 600 s)")
            } else {
                tail
            },
        });
    }
    shell.append_init(&format!("{{ {snippet}\n}} >/dev/null"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `git -C dir args…` as a test user, which must succeed; its stdout, trimmed.
    fn git_in(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    #[test]
    fn a_repository_another_user_owns_is_named_so_with_the_fix() {
        // git 2.39's words.
        let stderr = "fatal: detected dubious ownership in repository at '/tmp/sd/requests-2.4.3'\n\
                      To add an exception for this directory, call:\n\n\
                      \tgit config --global --add safe.directory /tmp/sd/requests-2.4.3\n";
        assert_eq!(
            git_failure(
                Path::new("/tmp/sd/requests-2.4.3"),
                "sdist is not a commit of this repository",
                stderr
            ),
            "git will not read it: another user owns it (git: detected dubious ownership; an \
             unpacked tarball keeps the ids of its owner); fix: `chown -R \"$(id -u):$(id -g)\" \
             /tmp/sd/requests-2.4.3`, or trust it: `git config --global --add safe.directory \
             /tmp/sd/requests-2.4.3`"
        );
        assert_eq!(
            git_failure(
                Path::new("/r"),
                "sdist is not a commit of this repository",
                "fatal: Needed a single revision\n"
            ),
            "sdist is not a commit of this repository: fatal: Needed a single revision"
        );
    }

    #[test]
    fn placeholder_commits_copy_the_directory() {
        assert_eq!(is_real_commit(Some("0000000000")), None);
        assert_eq!(is_real_commit(Some("")), None);
        assert_eq!(is_real_commit(None), None);
        assert_eq!(is_real_commit(Some("abc123")), Some("abc123"));
    }

    fn dir_source(path: &Path) -> RepoSource {
        RepoSource {
            path: path.to_owned(),
            commit: None,
        }
    }

    #[test]
    fn a_directory_fingerprint_changes_with_content_names_and_times_but_not_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.py"), "print(1)\n").unwrap();
        let source = dir_source(dir.path());
        let first = source_fingerprint(&source).unwrap();
        assert!(first.starts_with("dir "), "{first}");
        assert_eq!(source_fingerprint(&source).unwrap(), first);

        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "x").unwrap();
        assert_eq!(
            source_fingerprint(&source).unwrap(),
            first,
            ".git is not copied"
        );

        std::fs::write(dir.path().join("src/a.py"), "print(12)\n").unwrap();
        let edited = source_fingerprint(&source).unwrap();
        assert_ne!(edited, first);

        let file = std::fs::File::options()
            .write(true)
            .open(dir.path().join("src/a.py"))
            .unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH)
            .unwrap();
        let touched = source_fingerprint(&source).unwrap();
        assert_ne!(touched, edited, "same size, other time");

        std::fs::write(dir.path().join("b.py"), "").unwrap();
        assert_ne!(source_fingerprint(&source).unwrap(), touched);
    }

    #[test]
    fn only_plain_tag_names_are_carried() {
        for tag in [
            "4.4.1",
            "v1.2.3",
            "release/2.0",
            "1.0rc1+local",
            "sympy-1.7",
        ] {
            assert!(plain_tag(tag), "{tag}");
        }
        for tag in [
            "", "-f", ".hidden", "/abs", "a..b", "a b", "a;b", "$(x)", "a'b",
        ] {
            assert!(!plain_tag(tag), "{tag}");
        }
        assert!(!plain_tag(&"1".repeat(129)));
    }

    /// A repository whose version comes from git (setuptools_scm) installs as its release only
    /// when the baseline carries the release's tag: the tar carries the nearest tag, and the
    /// baseline script tags its commit with it and leaves nothing of it in the tree.
    #[test]
    fn the_baseline_is_tagged_with_the_release_its_commit_belongs_to() {
        let repo = one_commit_repository();
        git_in(repo.path(), &["tag", "4.4.1"]);
        std::fs::write(repo.path().join("b.py"), "y = 2\n").unwrap();
        git_in(repo.path(), &["add", "-A"]);
        git_in(repo.path(), &["commit", "-qm", "two"]);
        let base = git_in(repo.path(), &["rev-parse", "HEAD"]);
        git_in(repo.path(), &["tag", "9.9.9"]);
        git_in(
            repo.path(),
            &["commit", "-q", "--allow-empty", "-m", "future"],
        );
        git_in(repo.path(), &["tag", "10.0.0"]);
        let source = RepoSource {
            path: repo.path().to_owned(),
            commit: Some(base),
        };
        let tar = tar_repository(&source, "testbed").unwrap();
        let mut names = Vec::new();
        let mut tag = String::new();
        for entry in tar::Archive::new(tar.as_slice()).entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().display().to_string();
            if name == "testbed/.git/aci-release-tag" {
                std::io::Read::read_to_string(&mut entry, &mut tag).unwrap();
            }
            names.push(name);
        }
        // The tag at the base commit, not the one of a commit after it.
        assert_eq!(tag, "9.9.9");
        assert!(names.contains(&"testbed/a.py".to_owned()), "{names:?}");
        assert!(names.contains(&"testbed/b.py".to_owned()), "{names:?}");
        assert!(source_fingerprint(&source).unwrap().ends_with(" 9.9.9"));

        let out = tempfile::tempdir().unwrap();
        tar::Archive::new(tar.as_slice())
            .unpack(out.path())
            .unwrap();
        let testbed = out.path().join("testbed");
        let script = baseline_script(Baseline::Fresh { force: true });
        let run = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(&testbed)
            .output()
            .unwrap();
        assert!(run.status.success(), "{run:?}");
        assert_eq!(git_in(&testbed, &["tag"]), "9.9.9");
        assert_eq!(git_in(&testbed, &["describe", "--tags"]), "9.9.9");
        assert_eq!(git_in(&testbed, &["ls-files"]), "a.py\nb.py");
        assert!(!testbed.join(".git/aci-release-tag").exists());
    }

    #[test]
    fn a_commit_fingerprint_names_the_commit_and_its_tree() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| git_in(dir.path(), args);
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "one"]);
        let one = git(&["rev-parse", "HEAD"]);
        std::fs::write(dir.path().join("a.py"), "x = 2\n").unwrap();
        git(&["commit", "-qam", "two"]);
        let at = |commit: &str| {
            source_fingerprint(&RepoSource {
                path: dir.path().to_owned(),
                commit: Some(commit.to_owned()),
            })
        };
        let tree = git(&["rev-parse", &format!("{one}^{{tree}}")]);
        assert_eq!(at(&one).unwrap(), format!("git {one} {tree}"));
        assert_eq!(at(&one[..12]).unwrap(), at(&one).unwrap(), "abbreviated");
        assert_ne!(at("HEAD").unwrap(), at(&one).unwrap());
        // The working tree does not matter: the tar is made from the commit.
        std::fs::write(dir.path().join("a.py"), "dirty\n").unwrap();
        assert_eq!(at(&one).unwrap(), format!("git {one} {tree}"));
        let error = at("feedbeef").unwrap_err().to_string();
        assert!(error.contains("feedbeef is not a commit"), "{error}");
    }

    /// A git repository with one commit, in a temporary directory.
    fn one_commit_repository() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            git_in(dir.path(), args);
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "one"]);
        dir
    }

    /// A commit that git would read as `--output=FILE` truncated FILE through `git archive`;
    /// after `--end-of-options` it is only a name that is not there.
    #[test]
    fn a_commit_that_looks_like_an_option_writes_no_host_file() {
        let repo = one_commit_repository();
        let victim = repo.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let source = RepoSource {
            path: repo.path().to_owned(),
            commit: Some(format!("--output={}", victim.display())),
        };
        let tar = tar_repository(&source, "testbed").unwrap_err().to_string();
        assert!(
            tar.contains(&format!(
                "git archive --output={} failed: fatal: not a valid object name: --output=",
                victim.display()
            )),
            "{tar}"
        );
        let fingerprint = source_fingerprint(&source).unwrap_err().to_string();
        assert!(
            fingerprint.contains(&format!(
                "--output={} is not a commit of this repository",
                victim.display()
            )),
            "{fingerprint}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    }

    /// `tests/fixtures/history/<name>` run by `sh` in `dir`: its stdout.
    fn history_fixture(name: &str, dir: &Path) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/history")
            .join(name);
        let out = Command::new("sh")
            .arg(script)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// What `show-history.sh` prints of a repository that holds `base` alone, on `main`.
    fn history_of_base_alone(base: &str, objects: &str) -> String {
        format!(
            "== git log --all --format=%H\n{base}\n== git reflog\n== git tag\n\
             == git stash list\n== git remote\n== git fsck --lost-found\n\
             == git cat-file --batch-all-objects --batch-check\n{objects}\
             == git for-each-ref --format=%(refname)\nrefs/heads/main\n== files\n\
             == FUTURE objects\n0\n"
        )
    }

    /// The run on the host of what the sandbox runs in an image's repository: afterwards the
    /// repository holds `base_commit` alone, `HEAD` is it on its branch, and nothing else is
    /// kept but the index and `info/exclude`.
    #[test]
    fn an_image_repository_past_base_commit_keeps_nothing_of_its_future() {
        let dir = tempfile::tempdir().unwrap();
        let base = history_fixture("make-future.sh", dir.path())
            .trim()
            .to_owned();
        let before = history_fixture("show-history.sh", dir.path());
        assert!(
            before.contains("future-tag") && before.contains("origin"),
            "{before}"
        );
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .output()
                .unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let (_, listed) = git(&["rev-list", "--objects", "-n", "1", &base]);
        let ids: Vec<&str> = listed.lines().filter_map(|l| l.split(' ').next()).collect();
        let out = Command::new("bash")
            .arg("-c")
            .arg(check_out_script(&base))
            .current_dir(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{base}\n"));
        let mut objects: Vec<String> = ids
            .iter()
            .map(|id| {
                let (_, kind) = git(&["cat-file", "-t", id]);
                let (_, size) = git(&["cat-file", "-s", id]);
                format!("{id} {} {}\n", kind.trim(), size.trim())
            })
            .collect();
        objects.sort();
        assert_eq!(
            history_fixture("show-history.sh", dir.path()),
            history_of_base_alone(&base, &objects.concat())
        );
        assert_eq!(git(&["symbolic-ref", "HEAD"]).1, "refs/heads/main\n");
        assert_eq!(git(&["status", "--porcelain"]), (true, String::new()));
        let exclude = std::fs::read_to_string(dir.path().join(".git/info/exclude")).unwrap();
        assert!(exclude.ends_with("build/\n"), "{exclude}");
        assert!(!dir.path().join(FRESH_GIT_DIR).exists());
    }

    /// A SHA-256 repository gets a SHA-256 git directory: its 64-digit commit ids stay valid.
    #[test]
    fn a_sha256_repository_keeps_its_object_format_and_its_base_commit_alone() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| git_in(dir.path(), args);
        git(&["init", "-q", "--object-format=sha256"]);
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-qm", "base"]);
        let base = git(&["rev-parse", "HEAD"]);
        assert_eq!(base.len(), 64);
        git(&["commit", "-q", "--allow-empty", "-m", "later"]);
        let out = Command::new("bash")
            .arg("-c")
            .arg(check_out_script(&base))
            .current_dir(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(git(&["rev-parse", "--show-object-format"]), "sha256");
        assert_eq!(git(&["log", "--all", "--format=%H"]), base);
        assert_eq!(git(&["status", "--porcelain"]), "");
    }

    /// An image may hold a branch whose name git would read as an option: `git checkout
    /// --orphan=evil` would start an empty branch instead. After `--end-of-options` the branch
    /// of that name is checked out.
    #[test]
    fn a_branch_named_like_an_option_is_checked_out_as_a_branch() {
        let repo = one_commit_repository();
        let git = |args: &[&str]| git_in(repo.path(), args);
        let base = git(&["rev-parse", "HEAD"]);
        git(&["update-ref", "refs/heads/--orphan=evil", &base]);
        git(&["commit", "-q", "--allow-empty", "-m", "later"]);
        let out = Command::new("bash")
            .arg("-c")
            .arg(check_out_script("--orphan=evil"))
            .current_dir(repo.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{base}\n"));
        assert_eq!(git(&["symbolic-ref", "HEAD"]), "refs/heads/--orphan=evil");
        assert_eq!(
            git(&["for-each-ref", "--format=%(refname)"]),
            "refs/heads/--orphan=evil"
        );
    }

    #[test]
    fn directory_tar_skips_git_and_prefixes_entries() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "x").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.py"), "print(1)\n").unwrap();
        let tar = tar_directory(dir.path(), "testbed").unwrap();
        let mut archive = tar::Archive::new(tar.as_slice());
        let mut names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["testbed", "testbed/src", "testbed/src/a.py"]);
    }
}
