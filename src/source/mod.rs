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
//! with one line: what was tried, and how to fix it. [`prepare`] does all of it for a run or an
//! evaluation: the image (pulled as `env.pull` says), the repository, and the environment
//! image.

pub mod mirror;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};

use crate::config::EnvConfig;
use crate::hint::Hint;
use crate::image::env::{EnvImage, EnvImageError, EnvRequest, base_image, ensure_env_image};
use crate::image::pull::{Notes, PullError, ensure_image, is_built_locally};
use crate::instance::Instance;
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

/// An instance ready to start: its repository found, its image there. `E` is what it starts
/// in: an [`EnvImage`] from [`prepare`] (Docker, and images for a cluster), `()` from
/// [`prepare_on_host`] (the local runtime). So a container with no environment image, which
/// would leave nothing to run the agent's commands in but the host, cannot be expressed.
#[derive(Debug, Clone)]
pub struct Prepared<E = EnvImage> {
    /// The instance, with `repo_path` pointing at the mirror when the repository came from one.
    pub instance: Instance,
    /// The environment image to start.
    pub env_image: E,
    /// The commit the image's repository must be checked out at (repository from the image).
    pub checkout: Option<String>,
    /// Where the repository came from.
    pub origin: Origin,
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
            Self::NoRepository { .. } | Self::Image(_) => None,
        }
    }
}

/// What [`prepare`] needs besides the instance.
pub struct PrepareRequest<'a> {
    /// Images, repo_dir, the mirror cache, pull policy, build limits.
    pub env: &'a EnvConfig,
    /// Recorded on environment images built now.
    pub run_id: &'a str,
    /// Receives an environment image build's steps.
    pub on_step: &'a (dyn Fn(&str) + Send + Sync),
    /// Receives the progress of pulls and clones.
    pub notes: &'a Notes<'a>,
}

/// Finds everything `instance` needs to start on Docker, in the order of this module's header:
/// its image (pulled as `env.pull` says, unless it is one of aci's language images), its
/// repository, and its environment image.
///
/// # Errors
/// [`PrepareError`]: no repository, no image, or no environment image.
pub async fn prepare(
    runtime: &DockerRuntime,
    instance: &Instance,
    request: &PrepareRequest<'_>,
) -> Result<Prepared, PrepareError> {
    let found = find_repository(Some(runtime), instance, request).await?;
    let env_request = EnvRequest {
        env: request.env,
        run_id: request.run_id,
        on_step: request.on_step,
    };
    let env_image = ensure_env_image(runtime, &found.instance, &env_request).await?;
    Ok(Prepared {
        instance: found.instance,
        env_image,
        checkout: found.checkout,
        origin: found.origin,
    })
}

/// Finds the repository of `instance` for the local runtime, which has no image: its
/// `repo_path`, else a mirror clone.
///
/// # Errors
/// [`PrepareError::NoRepository`]: neither has it.
pub async fn prepare_on_host(
    instance: &Instance,
    request: &PrepareRequest<'_>,
) -> Result<Prepared<()>, PrepareError> {
    find_repository(None, instance, request).await
}

/// The instance's repository (and, with `runtime`, its image), without an environment image.
async fn find_repository(
    runtime: Option<&DockerRuntime>,
    instance: &Instance,
    request: &PrepareRequest<'_>,
) -> Result<Prepared<()>, PrepareError> {
    let env = request.env;
    let mut instance = instance.clone();
    let mut tried = Vec::new();
    let mut origin = instance.repo_path.clone().map(Origin::RepoPath);
    if origin.is_none() {
        tried.push("no repo_path".to_owned());
    }
    let mut checkout = None;
    let image = runtime.map(|_| base_image(&instance, env));
    if let (Some(runtime), Some(image)) = (runtime, &image) {
        if !is_built_locally(image, env) {
            ensure_image(
                runtime,
                image,
                env.pull,
                &instance.instance_id,
                request.notes,
            )
            .await?;
        }
        let repo_dir = instance.repo_dir(&env.repo_dir);
        if origin.is_none() {
            match holds_repository(runtime, image, &repo_dir).await {
                Ok(Some(true)) => {
                    checkout.clone_from(&instance.base_commit);
                    origin = Some(Origin::Image {
                        image: image.clone(),
                        repo_dir,
                    });
                }
                Ok(Some(false)) => {
                    tried.push(format!("the image {image} holds none at {repo_dir}"));
                }
                Ok(None) => {
                    return Err(PrepareError::Env(EnvImageError::MissingBase {
                        instance_id: instance.instance_id.clone(),
                        image: image.clone(),
                    }));
                }
                Err(error) => tried.push(format!("cannot look into the image {image}: {error}")),
            }
        }
    } else if origin.is_none() {
        tried.push("no image (--runtime local)".to_owned());
    }
    let origin = match origin {
        Some(origin) => origin,
        None => from_mirror(&mut instance, env, request.notes, &mut tried).await?,
    };
    Ok(Prepared {
        instance,
        env_image: (),
        checkout,
        origin,
    })
}

/// The repository from the mirror cache: `instance.repo_path` set to the mirror.
async fn from_mirror(
    instance: &mut Instance,
    env: &EnvConfig,
    notes: &Notes<'_>,
    tried: &mut Vec<String>,
) -> Result<Origin, PrepareError> {
    let commit = instance.base_commit.clone().unwrap_or_default();
    let no_repository = |tried: &[String]| PrepareError::NoRepository {
        commit: commit.clone(),
        tried: tried.join("; "),
    };
    if commit.is_empty() {
        tried.push("no base_commit to take from a clone".to_owned());
        return Err(no_repository(tried));
    }
    let Some(cache) = env.repo_cache_dir() else {
        tried.push("no mirror cache (env.repo_cache is unset and there is no HOME)".to_owned());
        return Err(no_repository(tried));
    };
    let url = mirror::repo_url(&env.repo_url, &instance.repo);
    let request = mirror::MirrorRequest {
        repo: &instance.repo,
        url: url.clone(),
        cache: &cache,
        commit: &commit,
        instance_id: &instance.instance_id,
    };
    match mirror::ensure_commit(&request, notes).await {
        Ok(path) => {
            instance.repo_path = Some(path.clone());
            Ok(Origin::Mirror { url, path })
        }
        Err(error) => {
            tried.push(error.to_string());
            Err(no_repository(tried))
        }
    }
}

/// Whether `image` holds a git repository at `repo_dir` (its `.git/HEAD`), read without
/// running the image, once per image id; `None` when the image is not here.
async fn holds_repository(
    runtime: &DockerRuntime,
    image: &str,
    repo_dir: &str,
) -> Result<Option<bool>, SandboxError> {
    static SEEN: LazyLock<Mutex<HashMap<(String, String), bool>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let Some(info) = runtime.inspect_image(image).await? else {
        return Ok(None);
    };
    let key = (info.id.clone(), repo_dir.to_owned());
    if let Some(known) = SEEN.lock().ok().and_then(|seen| seen.get(&key).copied()) {
        return Ok(Some(known));
    }
    let head = format!("{}/.git/HEAD", repo_dir.trim_end_matches('/'));
    let holds = runtime.image_file(&info.id, &head).await?.is_some();
    if let Ok(mut seen) = SEEN.lock() {
        seen.insert(key, holds);
    }
    Ok(Some(holds))
}
