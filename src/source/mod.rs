//! Where an instance's repository comes from, decided before its container starts, in this
//! order:
//!
//! 1. `repo_path` (a directory, a git work tree or a bare repository);
//! 2. the instance's image, when it holds a git repository at `env.repo_dir` (SWE-bench and
//!    SWE-smith images do): the sandbox then checks that `HEAD` is `base_commit`, checks it
//!    out when it is not, and drops every commit, ref and object past it
//!    ([`crate::sandbox::repo::check_out_base`]), in the agent's container and the
//!    evaluation's alike;
//! 3. a bare mirror of `env.repo_url` in `env.repo_cache` ([`mirror`]), whose tree at
//!    `base_commit` is taken as a `repo_path`'s would be.
//!
//! When none applies, or the commit is not there, the instance fails before its agent starts
//! with one line: what was tried, and how to fix it. Which of these an instance has is its
//! plan's ([`crate::provision::RepoPlan`]); [`find_repository`] carries it out for the
//! [`crate::provision::Provisioner`].

pub mod mirror;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use std::sync::Mutex;

use crate::hint::Hint;
use crate::image::env::EnvImageError;
use crate::image::pull::{Notes, PullError};
use crate::sandbox::SandboxError;
use crate::sandbox::docker::DockerRuntime;

/// What to do about a repository that cannot be had.
pub const NO_REPOSITORY_FIX: &str = "give the record a repo_path, run it in an image that \
holds the repository (--images swebench, env.image_template, the record's image), or point \
env.repo_url at a clone that can be reached (a file:// URL or a local path)";

/// Where the repository came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The record's `repo_path`.
    RepoPath(PathBuf),
    /// The image holds it at `repo_dir`.
    Image {
        /// The image.
        image: String,
        /// Where the repository is in it.
        repo_dir: String,
    },
    /// A mirror of `url` in the cache.
    Mirror {
        /// Where it was cloned from.
        url: String,
        /// The bare mirror.
        path: PathBuf,
    },
}

impl Origin {
    /// The repository's directory on the host (the record's, or the mirror), when it is not
    /// inside the image.
    pub fn host_path(&self) -> Option<&Path> {
        match self {
            Self::RepoPath(path) | Self::Mirror { path, .. } => Some(path),
            Self::Image { .. } => None,
        }
    }

    /// The trajectory's `info.repository`: where the tree came from, and at which commit.
    pub fn record(&self, base_commit: Option<&str>) -> serde_json::Value {
        let mut record = match self {
            Self::RepoPath(path) => serde_json::json!({
                "source": "repo_path", "path": path.display().to_string(),
            }),
            Self::Image { image, repo_dir } => serde_json::json!({
                "source": "image", "image": image, "repo_dir": repo_dir,
            }),
            Self::Mirror { url, path } => serde_json::json!({
                "source": "mirror", "url": url, "path": path.display().to_string(),
            }),
        };
        if let (Some(commit), Some(map)) = (base_commit, record.as_object_mut()) {
            map.insert("base_commit".to_owned(), commit.into());
        }
        record
    }
}

/// A bare mirror the repository can be taken from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorPlan {
    /// `env.repo_url` filled in for the record's repository.
    pub url: String,
    /// `env.repo_cache`; `None` when it is unset and there is no home directory.
    pub cache: Option<PathBuf>,
}

/// Where the repository comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoPlan {
    /// The record's `repo_path` on the host.
    HostPath(PathBuf),
    /// The image, when it holds a git repository at `repo_dir` (checked out at the commit);
    /// else the mirror.
    ImageElseMirror {
        /// The image looked into.
        image: String,
        /// Where the repository would be in it.
        repo_dir: String,
        /// The mirror tried when the image holds none.
        mirror: MirrorPlan,
    },
    /// A mirror (no image to look into: the local runtime, or an environment that cannot be
    /// built).
    Mirror(MirrorPlan),
}

impl RepoPlan {
    /// The same plan on the host, where there is no image to look into.
    pub fn on_host(&self) -> Self {
        match self {
            Self::ImageElseMirror { mirror, .. } => Self::Mirror(mirror.clone()),
            other => other.clone(),
        }
    }

    /// The plan as JSON (the `repository` of `--plan`'s lines), taken at `commit`.
    pub fn to_json(&self, commit: Option<&str>) -> Value {
        let mirror_json = |mirror: &MirrorPlan| {
            json!({
                "url": mirror.url,
                "cache": mirror.cache.as_ref().map(|path| path.display().to_string()),
            })
        };
        match self {
            Self::HostPath(path) => json!({
                "source": "repo_path",
                "path": path.display().to_string(),
                "commit": commit,
            }),
            Self::ImageElseMirror {
                image,
                repo_dir,
                mirror,
            } => json!({
                "source": "image_else_mirror",
                "image": image,
                "repo_dir": repo_dir,
                "commit": commit,
                "mirror": mirror_json(mirror),
            }),
            Self::Mirror(mirror) => json!({
                "source": "mirror",
                "commit": commit,
                "mirror": mirror_json(mirror),
            }),
        }
    }
}

/// Why an instance cannot start. Only [`PrepareError::is_run_level`] errors stop a run.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// No source has the repository at `base_commit`.
    #[error("no repository at base_commit {commit}: {tried}; fix: {NO_REPOSITORY_FIX}")]
    NoRepository {
        /// The commit wanted.
        commit: String,
        /// What was tried, and why each failed.
        tried: String,
        /// The `env.repo_url` to try instead, when a `file://` mirror failed: its plain path.
        plain_path: Option<String>,
    },
    /// The image could not be had.
    #[error(transparent)]
    Image(#[from] PullError),
    /// The environment image could not be built or found.
    #[error(transparent)]
    Env(#[from] EnvImageError),
}

impl PrepareError {
    /// Whether the run must stop (low disk) rather than only this instance fail.
    pub fn is_run_level(&self) -> bool {
        matches!(self, Self::Env(error) if error.is_run_level())
    }
}

impl Hint for PrepareError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::Env(error) => error.hint(),
            Self::NoRepository {
                plain_path: Some(path),
                ..
            } => Some(plain_path_hint(path)),
            Self::NoRepository { .. } | Self::Image(_) => None,
        }
    }
}

/// The hint for a `file://` mirror that git could not clone or fetch from: a `file://` URL makes
/// git copy objects over its transport, which fails on a mirror with missing objects (or
/// alternates), where a plain path, which git clones locally, works.
pub fn plain_path_hint(path: &str) -> String {
    format!(
        "a file:// URL clones through git's transport, which needs every object; a plain path \
         clones locally: set env.repo_url={path} (e.g. env.repo_url=/srv/mirrors/{{repo}}.git \
         instead of file:///srv/mirrors/{{repo}}.git)"
    )
}

/// The plain path of a `file://` URL that git failed on (a clone or a missing commit), when
/// that path is a directory: a plain path to nothing would fail the same way, so no hint.
fn failed_file_url(error: &mirror::MirrorError) -> Option<String> {
    match error {
        mirror::MirrorError::Clone { url, .. } | mirror::MirrorError::MissingCommit { url, .. } => {
            url.strip_prefix("file://")
                .filter(|path| std::path::Path::new(path).is_dir())
                .map(str::to_owned)
        }
        mirror::MirrorError::Url { .. } | mirror::MirrorError::Cache { .. } => None,
    }
}

/// The repository found: where it came from, and the commit the image's must be checked out
/// at (when it came from the image).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRepository {
    /// Where it came from.
    pub origin: Origin,
    /// The commit to check out in the image's repository.
    pub checkout: Option<String>,
}

/// What [`find_repository`] needs besides the plan.
pub struct RepoRequest<'a> {
    /// The daemon, to look into the image; `None` on the host (the local runtime).
    pub runtime: Option<&'a DockerRuntime>,
    /// The instance, for messages.
    pub instance_id: &'a str,
    /// The record's repository (`owner/name`), for the mirror's name.
    pub repo: &'a str,
    /// The commit wanted.
    pub commit: Option<&'a str>,
    /// Another commit a mirror should hold too, when it can: the record's
    /// `environment_setup_commit`, whose date and requirements file a spec's environment
    /// layer reads from the repository (a mirror that cannot get it still serves `commit`).
    pub also: Option<&'a str>,
    /// Receives the progress of clones.
    pub notes: &'a Notes<'a>,
    /// What is known of the images looked into.
    pub seen: &'a SeenImages,
    /// What is known of the mirrors.
    pub mirrors: &'a mirror::MirrorStates,
}

/// Finds the repository as `plan` says, in the order of this module's header. An image that
/// is not here is `missing_image`'s error.
///
/// # Errors
/// [`PrepareError`]: no source has the repository, or the image to look into is missing.
pub async fn find_repository(
    plan: &RepoPlan,
    request: &RepoRequest<'_>,
    missing_image: impl FnOnce(&str) -> EnvImageError,
) -> Result<FoundRepository, PrepareError> {
    let mut tried = vec!["no repo_path".to_owned()];
    let mirror = match (plan, request.runtime) {
        (RepoPlan::HostPath(path), _) => {
            return Ok(FoundRepository {
                origin: Origin::RepoPath(path.clone()),
                checkout: None,
            });
        }
        (
            RepoPlan::ImageElseMirror {
                image,
                repo_dir,
                mirror,
            },
            Some(runtime),
        ) => {
            match holds_repository(runtime, request.seen, image, repo_dir).await {
                Ok(Some(true)) => {
                    return Ok(FoundRepository {
                        origin: Origin::Image {
                            image: image.clone(),
                            repo_dir: repo_dir.clone(),
                        },
                        checkout: request.commit.map(str::to_owned),
                    });
                }
                Ok(Some(false)) => {
                    tried.push(format!("the image {image} holds none at {repo_dir}"));
                }
                Ok(None) => return Err(PrepareError::Env(missing_image(image))),
                Err(error) => tried.push(format!("cannot look into the image {image}: {error}")),
            }
            mirror
        }
        (RepoPlan::ImageElseMirror { mirror, .. } | RepoPlan::Mirror(mirror), None) => {
            tried.push("no image (--runtime local)".to_owned());
            mirror
        }
        (RepoPlan::Mirror(mirror), Some(_)) => mirror,
    };
    let origin = from_mirror(mirror, request, &mut tried).await?;
    Ok(FoundRepository {
        origin,
        checkout: None,
    })
}

/// The repository from the mirror cache.
async fn from_mirror(
    mirror: &MirrorPlan,
    request: &RepoRequest<'_>,
    tried: &mut Vec<String>,
) -> Result<Origin, PrepareError> {
    let commit = request.commit.unwrap_or_default().to_owned();
    let no_repository = |tried: &[String]| PrepareError::NoRepository {
        commit: commit.clone(),
        tried: tried.join("; "),
        plain_path: None,
    };
    if commit.is_empty() {
        tried.push("no base_commit to take from a clone".to_owned());
        return Err(no_repository(tried));
    }
    let Some(cache) = &mirror.cache else {
        tried.push("no mirror cache (env.repo_cache is unset and there is no HOME)".to_owned());
        return Err(no_repository(tried));
    };
    let url = mirror.url.clone();
    let mirror_request = mirror::MirrorRequest {
        repo: request.repo,
        url: url.clone(),
        cache,
        commit: &commit,
        instance_id: request.instance_id,
    };
    match mirror::ensure_commit(&mirror_request, request.notes, request.mirrors).await {
        Ok(path) => {
            if let Some(also) = request.also.filter(|also| *also != commit) {
                let also_request = mirror::MirrorRequest {
                    commit: also,
                    ..mirror_request
                };
                // Without it the layer's date is the record's created_at, and a requirements
                // file the spec reads is an error that names the commit.
                let _ = mirror::ensure_commit(&also_request, request.notes, request.mirrors).await;
            }
            Ok(Origin::Mirror { url, path })
        }
        Err(error) => {
            tried.push(error.to_string());
            Err(PrepareError::NoRepository {
                commit: commit.clone(),
                tried: tried.join("; "),
                plain_path: failed_file_url(&error),
            })
        }
    }
}

/// Whether each image (by id) holds a git repository at a directory, as found so far. A
/// field of the [`crate::provision::Provisioner`].
#[derive(Debug, Default)]
pub struct SeenImages {
    seen: Mutex<HashMap<(String, String), bool>>,
}

/// Whether `image` holds a git repository at `repo_dir` (its `.git/HEAD`), read without
/// running the image, once per image id; `None` when the image is not here.
async fn holds_repository(
    runtime: &DockerRuntime,
    seen: &SeenImages,
    image: &str,
    repo_dir: &str,
) -> Result<Option<bool>, SandboxError> {
    let Some(info) = runtime.inspect_image(image).await? else {
        return Ok(None);
    };
    let key = (info.id.clone(), repo_dir.to_owned());
    if let Some(known) = seen
        .seen
        .lock()
        .ok()
        .and_then(|seen| seen.get(&key).copied())
    {
        return Ok(Some(known));
    }
    let head = format!("{}/.git/HEAD", repo_dir.trim_end_matches('/'));
    let holds = runtime.image_file(&info.id, &head).await?.is_some();
    if let Ok(mut seen) = seen.seen.lock() {
        seen.insert(key, holds);
    }
    Ok(Some(holds))
}
