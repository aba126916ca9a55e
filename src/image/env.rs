//! Environment images: an instance's image (its language image, or its own `image`) plus its
//! repository at `base_commit` in `env.repo_dir` with the git baseline commit, plus its `setup`
//! commands. Each is built once per hash of (base image id, repository content, setup,
//! repo_dir), tagged `aci-env-<lang>:<hash12>`, and reused by later runs and by `aci eval`.
//!
//! A SWE-bench record with neither an image nor a `setup` is built on its spec's environment
//! instead ([`super::spec_env`]), with the spec's pre-install and install steps as its setup.
//!
//! The baseline is made by the same script as the sandbox's ([`repo::baseline_script`]) over
//! the same tar, so it is the same commit: a sandbox started from the env image (with
//! `SandboxSpec::repo = None`) diffs against the same baseline as one that copied the repository.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use super::release::DebianRelease;
use crate::spec::{SpecEntry, SpecTable};

use sha2::{Digest, Sha256};

use super::LABEL_IMAGE;
use super::as_of::{self, LABEL_RESOLVED_AS_OF};
use super::build_log::{
    BuildOptions, Built, STEP_MARKER, build_logged_with, label_lock, read_lock, write_lock,
};
use super::spec_env;
use crate::config::{Cutoff, EnvConfig};
use crate::hint::Hint;
use crate::instance::Instance;
use crate::sandbox::docker::{DockerRuntime, LABEL_RUN_ID};
use crate::sandbox::{RepoSource, SandboxError, repo};
use crate::text::{literal_regex, safe_name};

/// `aci.image` value of an environment image.
pub const ENV_IMAGE_KIND: &str = "env";
/// Label holding the full environment hash of an image.
pub const LABEL_ENV_HASH: &str = "aci.env_hash";
/// Label holding the image an environment image was built on.
pub const LABEL_BASE_IMAGE: &str = "aci.base_image";
/// Bumped whenever the recipe below changes, so old images are not taken for new ones.
const RECIPE_VERSION: &str = "aci-env-v5";
/// Where the setup scripts sit during the build (removed afterwards).
const SETUP_DIR: &str = "/tmp/aci-setup";

/// An environment image that exists (found or just built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvImage {
    /// `aci-env-<lang>:<hash12>`, or the base image itself when there is nothing to add.
    pub tag: String,
    /// The image id (`sha256:…`): part of `aci eval`'s resume key.
    pub id: String,
    /// The full environment hash (empty when the base image is used as it is).
    pub env_hash: String,
    /// The image it was built on.
    pub base_image: String,
    /// Whether this call built it (`false`: it was there already).
    pub built: bool,
}

/// Why an environment image could not be had.
#[derive(Debug, thiserror::Error)]
pub enum EnvImageError {
    /// The image to build on does not exist.
    #[error("{instance_id}: the image {image} does not exist")]
    MissingBase {
        /// The instance.
        instance_id: String,
        /// The missing image.
        image: String,
    },
    /// Too little free disk to build. This stops the whole run, not one instance.
    #[error(
        "only {free_gb:.1} GB free on {dir} (the Docker root); building environment images needs \
         env.min_free_disk_gb = {min_gb} GB"
    )]
    LowDisk {
        /// The Docker root directory.
        dir: String,
        /// Free space in GB.
        free_gb: f64,
        /// The threshold.
        min_gb: f64,
    },
    /// The repository could not be read on the host.
    #[error("{instance_id}: {source}")]
    Repo {
        /// The instance.
        instance_id: String,
        /// What went wrong.
        source: SandboxError,
    },
    /// The build failed (a setup command failed, the daemon refused, it timed out).
    #[error("{instance_id}: building the environment image {tag} failed: {message}")]
    Build {
        /// The instance.
        instance_id: String,
        /// The tag being built.
        tag: String,
        /// The daemon's error and the last lines of the build log.
        message: String,
        /// What to do about it, when the log says (a package pip cannot find).
        hint: Option<String>,
    },
    /// The daemon failed outside a build.
    #[error("{instance_id}: {source}")]
    Docker {
        /// The instance.
        instance_id: String,
        /// The error.
        source: SandboxError,
    },
    /// The Python image of the Debian release a spec environment needs does not exist.
    #[error("{instance_id}: the image {image} does not exist")]
    MissingRelease {
        /// The instance.
        instance_id: String,
        /// The missing image.
        image: String,
        /// Its release.
        release: super::release::DebianRelease,
    },
    /// The environment cannot be built from the instance's SWE-bench spec.
    #[error(transparent)]
    Spec(#[from] super::spec_env::SpecEnvError),
}

impl Hint for EnvImageError {
    fn hint(&self) -> Option<String> {
        match self {
            Self::MissingBase { .. } => Some("run `aci images build`".to_owned()),
            Self::LowDisk { .. } => Some(
                "free space with `aci images prune` (one run's images: --run-id ID), or lower \
                 env.min_free_disk_gb"
                    .to_owned(),
            ),
            Self::MissingRelease { release, .. } => Some(format!(
                "run `aci images build --debian {release} --lang python`"
            )),
            Self::Build { hint, .. } => hint.clone(),
            Self::Spec(error) => error.hint(),
            Self::Repo { .. } | Self::Docker { .. } => None,
        }
    }
}

impl EnvImageError {
    /// Whether the run must stop (low disk) rather than only this instance fail.
    pub fn is_run_level(&self) -> bool {
        matches!(self, Self::LowDisk { .. })
    }
}

/// The Dockerfile of an environment image: three steps, since each step of the classic builder
/// costs a container and a layer commit.
///
/// 1. One `LABEL` with every label (the build API's `labels` would add a step per label). It
///    comes first so that every intermediate layer carries them too: a build that fails leaves
///    its last layer behind as an untagged image, which `aci images prune --run-id` then finds
///    by its run's labels instead of mistaking it for the language image it started from.
/// 2. `ADD` unpacks the repository tar (entries under `repo_dir`) and the setup scripts.
/// 3. One `RUN` commits the baseline (before `setup`, so it is the sandbox's commit), runs each
///    setup script, and adds every untracked file that `setup` left (build outputs,
///    `*.egg-info`, `target/`) to `.git/info/exclude`, so it shows in neither `git status` nor
///    a submitted patch, and the eval's `git clean` keeps it. With `baseline = None` (no
///    `repo_path`: the base image already holds the repository) only `setup` runs.
pub fn dockerfile(recipe: &Recipe<'_>) -> String {
    let Recipe {
        base,
        repo_dir,
        baseline,
        setup,
        labels,
        pip,
    } = recipe;
    let mut lines = vec![format!("FROM {base}")];
    lines.extend(label_line(labels));
    if pip.index {
        lines.push(format!("ARG {}", spec_env::INDEX_ARG));
    }
    if pip.constraints.is_some() && !setup.is_empty() {
        lines.push(format!("ARG PIP_CONSTRAINT={SETUP_DIR}/constraints.txt"));
    }
    let mut sources = Vec::new();
    if baseline.is_some() {
        sources.push("repo.tar");
    }
    if !setup.is_empty() {
        sources.push("setup.tar");
    }
    if !sources.is_empty() {
        lines.push(format!("ADD {} /", sources.join(" ")));
    }
    let dir = crate::sandbox::shell_quote(repo_dir);
    let mut commands = vec![format!("mkdir -p {dir}"), format!("cd {dir}")];
    if let Some(baseline) = baseline {
        commands.push(repo::baseline_script(*baseline));
    }
    if !setup.is_empty() {
        commands.extend((1..=setup.len()).map(|index| format!("bash {SETUP_DIR}/{index}.sh")));
        if pip.lock {
            commands.push(spec_env::lock_command());
        }
        commands.push(format!("rm -rf {SETUP_DIR}"));
        commands.push(
            "if [ -d .git ]; then git ls-files --others --exclude-standard --directory \
             | sed -e 's/[][*?\\\\]/\\\\&/g' -e 's|^|/|' >> .git/info/exclude; fi"
                .to_owned(),
        );
    }
    if baseline.is_some() || !setup.is_empty() {
        lines.push(format!("RUN {}", commands.join(" && ")));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// The Dockerfile `LABEL` line of `labels` (none when there are none), keys and values quoted.
pub(super) fn label_line(labels: &std::collections::BTreeMap<String, String>) -> Option<String> {
    if labels.is_empty() {
        return None;
    }
    let pairs: Vec<String> = labels
        .iter()
        .map(|(key, value)| format!("{}={}", label_quote(key), label_quote(value)))
        .collect();
    Some(format!("LABEL {}", pairs.join(" ")))
}

/// A Dockerfile `LABEL` key or value in double quotes.
fn label_quote(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', " ");
    format!("\"{escaped}\"")
}

/// One setup command as a script: one ordered stream ([`spec_env::ONE_STREAM`]), announce
/// the step (`setup N of M: <its first line>`, for a failure's message), stop at the first
/// failing line, run in the repository.
fn setup_script(repo_dir: &str, command: &str, index: usize, total: usize) -> String {
    let first: String = command
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .chars()
        .take(100)
        .collect();
    let step = format!("{STEP_MARKER}setup {index} of {total}: {first}");
    format!(
        "set -eo pipefail\n{}\necho {}\ncd {}\n{command}\n",
        spec_env::ONE_STREAM,
        crate::sandbox::shell_quote(&step),
        crate::sandbox::shell_quote(repo_dir)
    )
}

/// The environment hash: lowercase hex SHA-256 over the recipe version, the base image id, the
/// repository's fingerprint, the repo_dir, and each setup command (length-prefixed); then,
/// for a layer resolved as of a cutoff, `as of <RFC 3339>`, so that two dates never share an
/// image and an unfiltered layer keeps its hash.
pub fn env_hash(
    base_id: &str,
    repository: &str,
    repo_dir: &str,
    setup: &[String],
    as_of: Option<&str>,
) -> String {
    let mut hasher = Sha256::new();
    let as_of = as_of.map(|cutoff| format!("as of {cutoff}"));
    let fields = [RECIPE_VERSION, base_id, repository, repo_dir]
        .into_iter()
        .chain(setup.iter().map(String::as_str))
        .chain(as_of.as_deref());
    for field in fields {
        hasher.update(u64::try_from(field.len()).unwrap_or(u64::MAX).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `aci-env-<lang>:<first 12 hex of the hash>`; the language part keeps only `[a-z0-9._-]`.
pub fn env_tag(instance: &Instance, env_hash: &str) -> String {
    let language = instance
        .language
        .as_deref()
        .unwrap_or(if instance.own_image().is_some() {
            "custom"
        } else {
            "python"
        });
    let clean = safe_name(&language.to_ascii_lowercase(), '-');
    format!("aci-env-{clean}:{}", &env_hash[..env_hash.len().min(12)])
}

/// How the message of a build that failed earlier in the same run begins.
pub const FAILED_EARLIER: &str = "it failed earlier in this run, and is not tried again: ";

/// Holds the build of one environment, in this process and across processes, until dropped.
pub(super) struct BuildLock {
    _guard: tokio::sync::OwnedMutexGuard<()>,
    _file: Option<std::fs::File>,
}

/// The builds of environments under way in this process, by name (`env-<hash>`,
/// `spec-<hash>`). A field of the [`crate::provision::Provisioner`].
#[derive(Debug, Default)]
pub struct BuildLocks {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The builds that failed in this process, by name: their message and hint. Every other
    /// instance (and validate's second evaluation) that needs the same environment gets the
    /// same error at once instead of building it again (the pip failure of an old setup.py
    /// takes as long each time).
    failed: Mutex<HashMap<String, (String, Option<String>)>>,
}

impl BuildLocks {
    /// The message and hint of the build of `name` that failed earlier in this process.
    pub(super) fn failed(&self, name: &str) -> Option<(String, Option<String>)> {
        let failed = self.failed.lock().ok()?;
        failed.get(name).map(|(message, hint)| {
            let message = if message.starts_with(FAILED_EARLIER) {
                message.clone()
            } else {
                format!("{FAILED_EARLIER}{message}")
            };
            (message, hint.clone())
        })
    }

    /// Remembers that the build of `name` failed, when `error` is a build failure.
    pub(super) fn remember(&self, name: &str, error: &EnvImageError) {
        if let EnvImageError::Build { message, hint, .. } = error
            && let Ok(mut failed) = self.failed.lock()
        {
            failed.insert(name.to_owned(), (message.clone(), hint.clone()));
        }
    }

    /// Waits until no other build of the environment `name` runs, then holds it: two
    /// instances that share an environment build it once, the others waiting and then finding
    /// it. Another aci process building the same environment at the same time would tag a
    /// second, different image over the first, so processes wait on a lock file too.
    pub(super) async fn lock(&self, name: &str) -> BuildLock {
        let lock = match self.locks.lock() {
            Ok(mut locks) => locks.entry(name.to_owned()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(())),
        };
        let guard = lock.lock_owned().await;
        BuildLock {
            _guard: guard,
            _file: lock_file(name).await,
        }
    }
}

/// Holds `<cache>/locks/<name>.lock` until dropped. `None` (no lock) when the cache directory
/// cannot be used: the lock only saves a duplicate build.
async fn lock_file(name: &str) -> Option<std::fs::File> {
    let dir = crate::config::cache_root()?.join("locks");
    let path = dir.join(format!("{name}.lock"));
    tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&dir).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.lock().ok()?;
        Some(file)
    })
    .await
    .ok()
    .flatten()
}

/// The image `tag` when it exists and was built for `hash` (its `aci.env_hash` label), as the
/// environment on `base`; `None` when it must be built.
pub(super) async fn built_env_image(
    runtime: &DockerRuntime,
    tag: &str,
    hash: &str,
    base: &str,
) -> Result<Option<EnvImage>, SandboxError> {
    Ok(runtime.inspect_image(tag).await?.and_then(|existing| {
        (existing.labels.get(LABEL_ENV_HASH).map(String::as_str) == Some(hash)).then(|| EnvImage {
            tag: tag.to_owned(),
            id: existing.id,
            env_hash: hash.to_owned(),
            base_image: base.to_owned(),
            built: false,
        })
    }))
}

/// What an environment image is built on: an image as it is, or the environment of a
/// SWE-bench spec ([`super::spec_env`]), built first.
#[derive(Debug, Clone, Copy)]
pub enum EnvBase<'a> {
    /// An image (its reference), with the record's setup.
    Image(&'a str),
    /// A spec's environment on the Python image of `release`, with the spec's pre-install and
    /// install as the setup.
    Spec {
        /// The spec entry.
        entry: SpecEntry<'a>,
        /// The table it is from (its requirement replacements).
        table: &'a SpecTable,
        /// The release whose Python the spec asks for.
        release: DebianRelease,
    },
}

/// What [`ensure_env_image`] needs besides the instance.
pub struct EnvRequest<'a> {
    /// Images, repo_dir, the disk threshold and the build's time limit (`build_timeout`).
    pub env: &'a EnvConfig,
    /// Recorded on a newly built image as `aci.run_id` (`aci images prune --run-id`).
    pub run_id: &'a str,
    /// Receives the build's `Step N/M` lines, prefixed with the instance id.
    pub on_step: &'a (dyn Fn(&str) + Send + Sync),
}

/// Finds or builds the environment image of `instance` on `base` (what its plan says it is
/// built on: [`crate::provision::Provisioner::env_image`]).
///
/// Without a `repo_path` and without `setup` there is nothing to add, and the base image is
/// returned as it is. Otherwise the image tagged with the environment hash is reused when its
/// `aci.env_hash` label matches, else built (after the free-disk check) with the labels
/// `aci.image=env`, `aci.env_hash`, `aci.base_image` and `aci.run_id`.
///
/// # Errors
/// [`EnvImageError::LowDisk`] stops the run ([`EnvImageError::is_run_level`]); every other
/// error concerns this instance only.
pub async fn ensure_env_image(
    runtime: &DockerRuntime,
    instance: &Instance,
    base: EnvBase<'_>,
    locks: &BuildLocks,
    request: &EnvRequest<'_>,
) -> Result<EnvImage, EnvImageError> {
    let id = &instance.instance_id;
    let docker_error = |source| EnvImageError::Docker {
        instance_id: id.clone(),
        source,
    };
    // A spec's layers are resolved as of a date and locked ([`super::as_of`]): `as_of` is
    // the instance layer's cutoff then (`None` inside: today) with the spec's exact pins,
    // and `None` for an image.
    let (base, setup, as_of) = match base {
        EnvBase::Spec {
            entry,
            table,
            release,
        } => {
            let mut spec = spec_env::for_entry(instance, &entry, table, release).await?;
            let setting = request.env.resolve_as_of;
            spec.as_of = spec_env::layer_cutoff(instance, setting, &spec.python).await;
            let env = spec_env::ensure_spec_env(runtime, &spec, id, locks, request)
                .await
                .map_err(|error| with_today_hint(error, request.env.resolve_as_of, instance))?;
            let created = (instance.created_at.as_str(), "the record's created_at");
            let layer = as_of::layer_cutoff(setting, Some(created), &spec.python);
            (env.tag, spec.repo_setup(), Some((layer, spec.pins())))
        }
        EnvBase::Image(image) => (image.to_owned(), instance.setup.clone(), None),
    };
    let (layer_as_of, pins) = as_of.clone().unzip();
    let layer_as_of = layer_as_of.flatten();
    let pins = pins.unwrap_or_default();
    let cutoff = layer_as_of.as_ref().map(|as_of| as_of.cutoff);
    let base_info = runtime
        .inspect_image(&base)
        .await
        .map_err(docker_error)?
        .ok_or_else(|| EnvImageError::MissingBase {
            instance_id: id.clone(),
            image: base.clone(),
        })?;
    let repo_dir = instance.repo_dir(&request.env.repo_dir);
    if instance.repo_path.is_none() && setup.is_empty() {
        return Ok(EnvImage {
            tag: base.clone(),
            id: base_info.id,
            env_hash: String::new(),
            base_image: base,
            built: false,
        });
    }
    let fingerprint = repository_fingerprint(instance).await?;
    let as_of_text = cutoff.map(|cutoff| cutoff.to_string());
    let hash = env_hash(
        &base_info.id,
        &fingerprint,
        &repo_dir,
        &setup,
        as_of_text.as_deref(),
    );
    let tag = env_tag(instance, &hash);
    let name = format!("env-{hash}");
    let _lock = locks.lock(&name).await;
    if let Some(built) = built_env_image(runtime, &tag, &hash, &base)
        .await
        .map_err(docker_error)?
    {
        return Ok(built);
    }
    if let Some((message, hint)) = locks.failed(&name) {
        return Err(EnvImageError::Build {
            instance_id: id.clone(),
            tag,
            message,
            hint,
        });
    }
    check_free_disk(runtime, request.env.min_free_disk_gb)
        .await
        .map_err(|error| match error {
            DiskCheck::Low(low) => low,
            DiskCheck::Docker(source) => docker_error(source),
        })?;
    let mut labels = std::collections::BTreeMap::from([
        (LABEL_IMAGE.to_owned(), ENV_IMAGE_KIND.to_owned()),
        (LABEL_ENV_HASH.to_owned(), hash.clone()),
        (LABEL_BASE_IMAGE.to_owned(), base.clone()),
        (LABEL_RUN_ID.to_owned(), request.run_id.to_owned()),
    ]);
    if as_of.is_some() {
        labels.insert(
            LABEL_RESOLVED_AS_OF.to_owned(),
            as_of::resolved_text(layer_as_of.as_ref(), &[]),
        );
    }
    let recipe = Recipe {
        base: &base_info.id,
        repo_dir: &repo_dir,
        baseline: repo_source(instance).map(|source| repo::Baseline::for_source(Some(&source))),
        setup: &setup,
        labels,
        pip: PipSteps {
            index: cutoff.is_some(),
            constraints: as_of.as_ref().and_then(|_| read_lock(request.env, &tag)),
            lock: as_of.is_some(),
        },
    };
    let repo_tar = repository_tar(instance, &repo_dir).await?;
    let context = build_context(&recipe, &repo_tar).map_err(|message| EnvImageError::Build {
        instance_id: id.clone(),
        tag: tag.clone(),
        message,
        hint: None,
    })?;
    let build_error = |message: String| EnvImageError::Build {
        instance_id: id.clone(),
        tag: tag.clone(),
        message,
        hint: None,
    };
    let options = as_of::server::build_options(cutoff, &pins).map_err(build_error)?;
    let built = build(runtime, &tag, context, request, id, &options, cutoff)
        .await
        .map_err(|error| with_today_hint(error, request.env.resolve_as_of, instance))
        .inspect_err(|error| locks.remember(&name, error))?;
    let image_id = if recipe.pip.lock {
        let past_cutoff = as_of::server::past_cutoff(cutoff, &pins);
        let resolved = as_of::resolved_text(layer_as_of.as_ref(), &past_cutoff);
        let labelled = label_lock(runtime, &tag, &built.id, &built.lock, &resolved)
            .await
            .map_err(build_error)?;
        write_lock(request.env, &tag, &as_of::constraints(&built.lock));
        labelled
    } else {
        built.id
    };
    Ok(EnvImage {
        tag,
        id: image_id,
        env_hash: hash,
        base_image: base,
        built: true,
    })
}

/// A failed build with no hint of its own gets [`as_of::today_hint`]'s.
fn with_today_hint(
    error: EnvImageError,
    setting: crate::config::ResolveAsOf,
    instance: &Instance,
) -> EnvImageError {
    match error {
        EnvImageError::Build {
            instance_id,
            tag,
            message,
            hint: None,
        } => {
            let hint = as_of::today_hint(setting, &instance.created_at, &message);
            EnvImageError::Build {
                instance_id,
                tag,
                message,
                hint,
            }
        }
        other => other,
    }
}

/// The repository's fingerprint (see [`repo::source_fingerprint`]; empty without a
/// `repo_path`): finding an existing environment image reads no file of the repository.
async fn repository_fingerprint(instance: &Instance) -> Result<String, EnvImageError> {
    on_repository(instance, |source| repo::source_fingerprint(&source)).await
}

/// The repository as a tar with entries under `repo_dir` (empty tar without a `repo_path`).
async fn repository_tar(instance: &Instance, repo_dir: &str) -> Result<Vec<u8>, EnvImageError> {
    let prefix = repo_dir.trim_start_matches('/').to_owned();
    on_repository(instance, move |source| {
        repo::tar_repository(&source, &prefix)
    })
    .await
}

/// Runs `work` on the instance's repository off the async threads (the default value without
/// a `repo_path`).
async fn on_repository<T, F>(instance: &Instance, work: F) -> Result<T, EnvImageError>
where
    T: Default + Send + 'static,
    F: FnOnce(RepoSource) -> Result<T, SandboxError> + Send + 'static,
{
    let Some(source) = repo_source(instance) else {
        return Ok(T::default());
    };
    let repo_error = |source| EnvImageError::Repo {
        instance_id: instance.instance_id.clone(),
        source,
    };
    tokio::task::spawn_blocking(move || work(source))
        .await
        .map_err(|e| {
            repo_error(SandboxError::Session(format!(
                "repository task failed: {e}"
            )))
        })?
        .map_err(repo_error)
}

/// The instance's repository on the host, at its base commit.
fn repo_source(instance: &Instance) -> Option<RepoSource> {
    Some(RepoSource {
        path: instance.repo_path.clone()?,
        commit: instance.base_commit.clone(),
    })
}

/// Runs the build with its time limit (`env.build_timeout`), its whole log kept
/// ([`build_logged`]).
async fn build(
    runtime: &DockerRuntime,
    tag: &str,
    context: Vec<u8>,
    request: &EnvRequest<'_>,
    instance_id: &str,
    options: &BuildOptions,
    cutoff: Option<Cutoff>,
) -> Result<Built, EnvImageError> {
    build_logged_with(runtime, tag, context, request, instance_id, options)
        .await
        .map_err(|message| EnvImageError::Build {
            instance_id: instance_id.to_owned(),
            tag: tag.to_owned(),
            message: as_of::server::with_failures(shorten_step_error(&message), cutoff),
            hint: None,
        })
}

/// The daemon quotes the whole failing `RUN` line (the baseline script and every setup call);
/// the setup's own output, which follows, says more.
fn shorten_step_error(message: &str) -> String {
    QUOTED_RUN
        .replace(message, "the RUN step (baseline and setup) returned")
        .into_owned()
}

/// The daemon's quote of a failing `RUN` line.
pub(crate) static QUOTED_RUN: LazyLock<regex::Regex> =
    LazyLock::new(|| literal_regex(r"The command '/bin/sh -c [^\n]*' returned"));

/// What goes into an environment image's Dockerfile.
#[derive(Debug, Clone)]
pub struct Recipe<'a> {
    /// The image to build on (its id, so that a moved tag cannot change the result).
    pub base: &'a str,
    /// Where the repository goes.
    pub repo_dir: &'a str,
    /// How the baseline is committed; `None` when there is no repository to add.
    pub baseline: Option<repo::Baseline>,
    /// The setup commands, one `RUN` each.
    pub setup: &'a [String],
    /// Labels of the image, sorted.
    pub labels: std::collections::BTreeMap<String, String>,
    /// How the setup's pip is pointed and locked (all off but for a spec's layer).
    pub pip: PipSteps,
}

/// The pip parts of a spec's instance layer ([`super::as_of`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipSteps {
    /// Declare the build argument `PIP_INDEX_URL` (the layer is resolved as of a cutoff).
    pub index: bool,
    /// The lock of an earlier build, given to the setup as `PIP_CONSTRAINT`.
    pub constraints: Option<String>,
    /// Print the venv's distributions after the setup (behind the build log's lock marker).
    pub lock: bool,
}

/// The tar build context: `Dockerfile`, `repo.tar` (the repository, entries under repo_dir)
/// and `setup.tar` (`tmp/aci-setup/<N>.sh`); `ADD` unpacks both tars at `/`.
fn build_context(recipe: &Recipe<'_>, repo_tar: &[u8]) -> Result<Vec<u8>, String> {
    let context_error = |e: std::io::Error| format!("cannot write the build context: {e}");
    let mut setup = tar::Builder::new(Vec::new());
    for (index, command) in recipe.setup.iter().enumerate() {
        let script = setup_script(recipe.repo_dir, command, index + 1, recipe.setup.len());
        let name = format!("{}/{}.sh", SETUP_DIR.trim_start_matches('/'), index + 1);
        append_file(&mut setup, &name, script.as_bytes()).map_err(context_error)?;
    }
    if let Some(constraints) = &recipe.pip.constraints {
        let name = format!("{}/constraints.txt", SETUP_DIR.trim_start_matches('/'));
        append_file(&mut setup, &name, constraints.as_bytes()).map_err(context_error)?;
    }
    let setup = setup.into_inner().map_err(context_error)?;
    let mut builder = tar::Builder::new(Vec::new());
    append_file(&mut builder, "Dockerfile", dockerfile(recipe).as_bytes())
        .map_err(context_error)?;
    if recipe.baseline.is_some() {
        append_file(&mut builder, "repo.tar", repo_tar).map_err(context_error)?;
    }
    if !recipe.setup.is_empty() {
        append_file(&mut builder, "setup.tar", &setup).map_err(context_error)?;
    }
    builder.into_inner().map_err(context_error)
}

/// Adds `data` to `builder` as the regular file `name` (mode 0644, time 0, so that a build
/// context's bytes depend on its content only).
pub(super) fn append_file(
    builder: &mut tar::Builder<Vec<u8>>,
    name: &str,
    data: &[u8],
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    builder.append_data(&mut header, name, data)
}

/// Why the free-disk check stopped.
enum DiskCheck {
    Low(EnvImageError),
    Docker(SandboxError),
}

/// Checks that the Docker root has at least `min_gb` GB free ([`free_kb`]). When the root
/// is not visible from here (a remote daemon) the check cannot be made and passes.
async fn check_free_disk(runtime: &DockerRuntime, min_gb: f64) -> Result<(), DiskCheck> {
    if min_gb <= 0.0 {
        return Ok(());
    }
    let Some(dir) = runtime.docker_root_dir().await.map_err(DiskCheck::Docker)? else {
        return Ok(());
    };
    let Some(free_kb) = free_kb(&dir) else {
        return Ok(());
    };
    let free_gb = free_kb as f64 * 1024.0 / 1e9;
    if free_gb < min_gb {
        return Err(DiskCheck::Low(EnvImageError::LowDisk {
            dir,
            free_gb,
            min_gb,
        }));
    }
    Ok(())
}

/// Free kilobytes for an unprivileged writer on the file system holding `dir` (what `df -Pk`
/// calls available), from `statvfs`; `None` when it cannot tell.
pub fn free_kb(dir: &str) -> Option<u64> {
    let stats = rustix::fs::statvfs(dir).ok()?;
    Some(stats.f_bavail.saturating_mul(stats.f_frsize) / 1024)
}

#[cfg(test)]
mod tests;
