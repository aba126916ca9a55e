//! Materialising a task's repository: a tar of the source tree at `base_commit`, made on the
//! host, and a git baseline commit made in the sandbox, so `git diff` shows only the agent's work.
//!
//! The baseline holds the tree without history: the agent cannot read the fix from a future
//! commit, and the baseline's hash is the same on every run (fixed author, date and message).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::shell::{Shell, Transport};
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
        let output = Command::new("git")
            .arg("-C")
            .arg(path)
            .args([
                "archive",
                "--format=tar",
                &format!("--prefix={prefix}/"),
                commit,
            ])
            .output()
            .map_err(|e| repo_error(path, format!("cannot run git: {e}")))?;
        if !output.status.success() {
            return Err(repo_error(
                path,
                format!(
                    "git archive {commit} failed: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
            ));
        }
        return Ok(output.stdout);
    }
    tar_directory(path, prefix).map_err(|e| repo_error(path, e.to_string()))
}

fn tar_directory(path: &Path, prefix: &str) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.follow_symlinks(false);
    builder.mode(tar::HeaderMode::Deterministic);
    let mut stack = vec![path.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(dir) = stack.pop() {
        let mut children: Vec<_> = std::fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            if child.file_name() == ".git" {
                continue;
            }
            let file_type = child.file_type()?;
            if file_type.is_dir() {
                stack.push(child.path());
            }
            entries.push(child.path());
        }
    }
    builder.append_dir(prefix, path)?;
    for entry in entries {
        let relative = entry.strip_prefix(path).map_err(std::io::Error::other)?;
        builder.append_path_with_name(&entry, Path::new(prefix).join(relative))?;
    }
    builder.into_inner()
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
pub fn baseline_script(baseline: Baseline) -> String {
    let fresh = |force: bool| {
        format!(
            "rm -rf .git && git init -q && git config core.compression 0 && \
             git config core.looseCompression 0 && git add -A{} && \
             {BASELINE_GIT_ENV} git commit -q --allow-empty --no-verify -m 'aci baseline' && \
             git rev-parse HEAD",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_commits_copy_the_directory() {
        assert_eq!(is_real_commit(Some("0000000000")), None);
        assert_eq!(is_real_commit(Some("")), None);
        assert_eq!(is_real_commit(None), None);
        assert_eq!(is_real_commit(Some("abc123")), Some("abc123"));
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
