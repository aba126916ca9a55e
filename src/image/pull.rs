//! Images from a registry: the names (`env.image_template`, SWE-bench's spelling of ids),
//! `env.pull` (missing, always, never), the user's registry logins from the Docker config, the
//! progress of a pull in layers and bytes, and the record of what aci pulled, which only
//! `aci images prune --pulled` removes.
//!
//! The daemon does the pull ([`DockerRuntime::pull_image`]); what is here is the policy around
//! it and a pure tally of its messages ([`PullTally`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::{EnvConfig, PullPolicy};
use crate::instance::Instance;
use crate::sandbox::SandboxError;
use crate::sandbox::docker::{
    DockerError, DockerErrorKind, DockerRuntime, ImageInfo, PullEvent, RegistryLogin,
};

/// SWE-bench's prebuilt instance images, as `env.image_template` (`--images swebench`).
pub const SWEBENCH_IMAGE_TEMPLATE: &str = "swebench/sweb.eval.x86_64.{id_docker}:latest";
/// The activation of SWE-bench's images: their conda env `testbed`.
pub const SWEBENCH_ACTIVATE: &str = "source /opt/miniconda3/bin/activate && conda activate testbed";
/// Docker Hub's name in the Docker config's `auths`.
const DOCKER_HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";

/// The configuration layer `--images swebench` stands for.
pub fn swebench_preset() -> String {
    format!(
        "env:\n  image_template: {}\n  activate: {}\n",
        yaml_string(SWEBENCH_IMAGE_TEMPLATE),
        yaml_string(SWEBENCH_ACTIVATE)
    )
}

fn yaml_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// An instance id as SWE-bench's image names spell it: lower-case, `__` → `_1776_`
/// (`django__django-11099` → `django_1776_django-11099`).
pub fn id_docker(instance_id: &str) -> String {
    instance_id.to_lowercase().replace("__", "_1776_")
}

/// `env.image_template` for `instance`: `{instance_id}`, `{repo}` and `{id_docker}` replaced.
pub fn image_from_template(template: &str, instance: &Instance) -> String {
    template
        .replace("{instance_id}", &instance.instance_id)
        .replace("{repo}", &instance.repo)
        .replace("{id_docker}", &id_docker(&instance.instance_id))
}

/// Whether `image` is one aci builds itself (a language image of `env.images`): those are
/// built with `aci images build`, never pulled.
pub fn is_built_locally(image: &str, env: &EnvConfig) -> bool {
    env.images.values().any(|built| built == image)
}

/// The registry host of an image reference, as Docker reads it: the first path component when
/// it has a `.` or a `:` or is `localhost`, else Docker Hub (`docker.io`).
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => first,
        _ => "docker.io",
    }
}

/// The reference to pull: `image` with `:latest` added when it names neither a tag nor a
/// digest (the daemon would otherwise pull every tag).
pub fn pull_reference(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || last.contains(':') {
        image.to_owned()
    } else {
        format!("{image}:latest")
    }
}

/// Why an image could not be had.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The image is not here and `env.pull` is `never`.
    #[error(
        "the image {image} is not here and env.pull is never; pull it (docker pull {image}), \
         load it (docker load), or set env.pull=missing"
    )]
    NeverPull {
        /// The image.
        image: String,
    },
    /// No registry answered.
    #[error(
        "cannot pull {image}: no registry answers at {registry} ({message}); load the image \
         with docker load, or point env.image_template at a registry that can be reached"
    )]
    Unreachable {
        /// The image.
        image: String,
        /// Its registry.
        registry: String,
        /// The daemon's message.
        message: String,
    },
    /// The registry answered and refused: no such image, or no access.
    #[error(
        "cannot pull {image}: {message}; check the name (env.image_template, the record's \
         image or image_name) and the login for {registry} in the Docker config"
    )]
    Refused {
        /// The image.
        image: String,
        /// Its registry.
        registry: String,
        /// The daemon's message.
        message: String,
    },
    /// The daemon failed outside the pull.
    #[error("{0}")]
    Docker(SandboxError),
}

/// Where the progress of a pull (and of a clone) goes: whole lines, and a short activity text
/// for a progress bar (`None` when the activity is over).
pub struct Notes<'a> {
    /// A line for the log, already prefixed with the instance.
    pub line: &'a (dyn Fn(&str) + Send + Sync),
    /// The current activity of this instance, or `None` when it ended.
    pub activity: &'a (dyn Fn(Option<&str>) + Send + Sync),
}

impl Notes<'static> {
    /// Notes that go nowhere.
    pub fn quiet() -> Self {
        Self {
            line: &|_| {},
            activity: &|_| {},
        }
    }
}

/// The state of one layer during a pull.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Layer {
    downloaded: u64,
    size: Option<u64>,
    done: bool,
    reused: bool,
}

impl Layer {
    /// The layer is downloaded: all its bytes count, its size taken from `total` when no
    /// download message gave it.
    fn finish_download(&mut self, total: Option<u64>) {
        self.size = self.size.or(total);
        self.downloaded = self.size.unwrap_or(self.downloaded);
    }
}

/// A pull's messages, tallied: layers known, layers done (pulled, or already here), bytes
/// downloaded of the bytes known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullTally {
    layers: BTreeMap<String, Layer>,
}

/// Statuses the daemon sends about one layer.
const LAYER_STATUSES: [&str; 9] = [
    "Pulling fs layer",
    "Waiting",
    "Downloading",
    "Verifying Checksum",
    "Download complete",
    "Extracting",
    "Pull complete",
    "Already exists",
    "Retrying",
];

impl PullTally {
    /// Counts one message; returns `true` when a layer was just finished.
    pub fn record(&mut self, event: &PullEvent) -> bool {
        let Some(id) = &event.id else {
            return false;
        };
        let status = event.status.as_str();
        if !LAYER_STATUSES.iter().any(|known| status.starts_with(known)) {
            return false;
        }
        let layer = self.layers.entry(id.clone()).or_default();
        let was_done = layer.done;
        match status {
            "Downloading" => {
                layer.downloaded = event.current.unwrap_or(layer.downloaded);
                layer.size = event.total.filter(|total| *total > 0).or(layer.size);
            }
            // The daemon coalesces a layer's progress messages when its reader lags, so any
            // message past the download says the whole layer came, whether or not "Download
            // complete" was among those sent.
            "Verifying Checksum" | "Download complete" => layer.finish_download(None),
            "Extracting" => {
                layer.finish_download(event.total.filter(|total| *total > 0));
            }
            "Pull complete" => {
                layer.finish_download(None);
                layer.done = true;
            }
            "Already exists" => {
                layer.done = true;
                layer.reused = true;
            }
            _ => {}
        }
        layer.done && !was_done
    }

    /// `3/7 layers, 12.3/45.6 MB`, with `(2 already here)` when some layers were.
    pub fn summary(&self) -> String {
        let done = self.layers.values().filter(|layer| layer.done).count();
        let reused = self.layers.values().filter(|layer| layer.reused).count();
        let downloaded: u64 = self.layers.values().map(|layer| layer.downloaded).sum();
        let known: u64 = self.layers.values().filter_map(|layer| layer.size).sum();
        let mut text = format!(
            "{done}/{} layers, {}/{} MB",
            self.layers.len(),
            megabytes(downloaded),
            megabytes(known.max(downloaded))
        );
        if reused > 0 {
            text.push_str(&format!(" ({reused} already here)"));
        }
        text
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

/// One lock per image, and the images this process has pulled already (so `always` pulls an
/// image once per run, however many instances use it). A field of the
/// [`crate::provision::Provisioner`].
#[derive(Debug, Default)]
pub struct PullLocks {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<bool>>>>,
}

impl PullLocks {
    fn lock(&self, image: &str) -> Arc<tokio::sync::Mutex<bool>> {
        match self.locks.lock() {
            Ok(mut locks) => locks.entry(image.to_owned()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(false)),
        }
    }
}

/// Makes sure `image` is here as `env.pull` says, pulling it when it must, and returns what
/// the daemon knows of it. Progress goes to `notes`, prefixed with `instance_id`.
///
/// # Errors
/// [`PullError`]: the image is missing and may not be pulled, or the pull failed.
pub async fn ensure_image(
    runtime: &DockerRuntime,
    image: &str,
    policy: PullPolicy,
    instance_id: &str,
    notes: &Notes<'_>,
    locks: &PullLocks,
) -> Result<ImageInfo, PullError> {
    let lock = locks.lock(image);
    let mut pulled_here = lock.lock().await;
    let present = runtime
        .inspect_image(image)
        .await
        .map_err(PullError::Docker)?;
    let must_pull = match (policy, &present) {
        (PullPolicy::Never, None) => {
            return Err(PullError::NeverPull {
                image: image.to_owned(),
            });
        }
        (PullPolicy::Always, _) => !*pulled_here,
        (_, None) => true,
        (_, Some(_)) => false,
    };
    if !must_pull && let Some(info) = present {
        return Ok(info);
    }
    pull(runtime, image, instance_id, notes).await?;
    *pulled_here = true;
    let info = runtime
        .inspect_image(image)
        .await
        .map_err(PullError::Docker)?
        .ok_or_else(|| {
            PullError::Docker(SandboxError::Docker(DockerError::other(format!(
                "the pull of {image} left no image"
            ))))
        })?;
    let (name, id) = (image.to_owned(), info.id.clone());
    // The lock may wait on another process: off the async workers.
    let recorded = tokio::task::spawn_blocking(move || record_pulled(&name, &id))
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)));
    if let Err(error) = recorded {
        (notes.line)(&format!(
            "[{instance_id}] warning: cannot record {image} as pulled by aci: {error}"
        ));
    }
    Ok(info)
}

/// Pulls `image` with the user's login for its registry, telling `notes` as layers finish.
async fn pull(
    runtime: &DockerRuntime,
    image: &str,
    instance_id: &str,
    notes: &Notes<'_>,
) -> Result<(), PullError> {
    let registry = registry_of(image).to_owned();
    // The login `docker login` stored: a credential helper's, else the `auths` entry.
    let login = {
        let registry = registry.clone();
        tokio::task::spawn_blocking(move || super::push::credentials_for(&registry))
            .await
            .unwrap_or(Ok(None))
    };
    let login = match login {
        Ok(login) => login,
        Err(error) => {
            (notes.line)(&format!(
                "[{instance_id}] warning: pulling without a login: {error}"
            ));
            None
        }
    };
    let reference = pull_reference(image);
    let started = Instant::now();
    (notes.line)(&format!("[{instance_id}] pulling {reference}"));
    let mut tally = PullTally::default();
    let pulled = runtime
        .pull_image(&reference, login.as_ref(), |event| {
            let finished_layer = tally.record(&event);
            let summary = tally.summary();
            (notes.activity)(Some(&format!("pulling {reference}: {summary}")));
            if finished_layer {
                (notes.line)(&format!("[{instance_id}] pulling {reference}: {summary}"));
            }
        })
        .await;
    (notes.activity)(None);
    match pulled {
        Ok(()) => {
            (notes.line)(&format!(
                "[{instance_id}] pulled {reference} ({}) in {:.1} s",
                tally.summary(),
                started.elapsed().as_secs_f64()
            ));
            Ok(())
        }
        // The daemon itself failed: not the registry's answer.
        Err(SandboxError::Docker(error)) if error.kind == DockerErrorKind::Connect => {
            Err(PullError::Docker(scrubbed(SandboxError::Docker(error))))
        }
        Err(SandboxError::Docker(error)) => {
            // The registry's answer, relayed by the daemon: scrubbed of the login.
            let message = crate::secret::scrub(error.message.trim()).replace('\n', " ");
            let image = image.to_owned();
            Err(if error.kind == DockerErrorKind::RegistryUnreachable {
                PullError::Unreachable {
                    image,
                    registry,
                    message,
                }
            } else {
                PullError::Refused {
                    image,
                    registry,
                    message,
                }
            })
        }
        Err(other) => Err(PullError::Docker(scrubbed(other))),
    }
}

/// `error` with every credential the process holds (registry logins among them) scrubbed from
/// the daemon's message ([`crate::secret`]): a registry may quote a login back.
pub(crate) fn scrubbed(error: SandboxError) -> SandboxError {
    match error {
        SandboxError::Docker(error) => {
            SandboxError::Docker(error.map_message(|message| crate::secret::scrub(&message)))
        }
        other => other,
    }
}

/// Remembers the secrets of `login` with the process's other credentials: its password, its
/// identity token, and the `auth` value (base64 of `user:password`) they make.
pub(crate) fn remember_login(login: &RegistryLogin) {
    for secret in [&login.password, &login.identity_token]
        .into_iter()
        .flatten()
    {
        crate::secret::remember(secret);
    }
    if let (Some(user), Some(password)) = (&login.username, &login.password) {
        let pair = format!("{user}:{password}");
        crate::secret::remember(&data_encoding::BASE64.encode(pair.as_bytes()));
    }
}

/// The user's Docker config: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
pub fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
    Some(PathBuf::from(home).join(".docker").join("config.json"))
}

/// The login for `registry` in a Docker config's `auths`: its `auth` (base64 of
/// `user:password`), or its `username`/`password`, or its `identitytoken`. Keys are matched by
/// host, with or without a scheme or path; Docker Hub also answers to
/// `https://index.docker.io/v1/`. Credential helpers are asked first, by
/// [`super::push::credentials_for`].
pub fn login_for(config_json: &str, registry: &str) -> Option<RegistryLogin> {
    let config: serde_json::Value = serde_json::from_str(config_json).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let wanted = normal_registry(registry);
    let (key, entry) = auths
        .iter()
        .find(|(key, _)| normal_registry(key) == wanted)?;
    let text = |field: &str| {
        entry
            .get(field)
            .and_then(serde_json::Value::as_str)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let mut login = RegistryLogin {
        server: if wanted == "docker.io" {
            DOCKER_HUB_AUTH_KEY.to_owned()
        } else {
            key.clone()
        },
        username: text("username"),
        password: text("password"),
        identity_token: text("identitytoken"),
    };
    if let Some(auth) = text("auth")
        && let Some(decoded) = base64_decode(&auth)
        && let Ok(decoded) = String::from_utf8(decoded)
        && let Some((user, password)) = decoded.split_once(':')
    {
        login.username = Some(user.to_owned());
        login.password = Some(password.to_owned());
    }
    (login.username.is_some() || login.identity_token.is_some()).then_some(login)
}

/// A registry name without scheme or path, Docker Hub's aliases folded into `docker.io`.
fn normal_registry(name: &str) -> String {
    let name = name
        .trim()
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let host = name.split('/').next().unwrap_or(name).to_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            "docker.io".to_owned()
        }
        _ => host,
    }
}

/// Base64 (padding optional, the URL-safe alphabet's `-` and `_` read as `+` and `/`);
/// `None` for anything else.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text
        .trim()
        .trim_end_matches('=')
        .replace('-', "+")
        .replace('_', "/");
    data_encoding::BASE64_NOPAD.decode(text.as_bytes()).ok()
}

/// The file listing the images aci pulled (`name<TAB>id` per line), in aci's cache.
pub fn pulled_record_path() -> Option<PathBuf> {
    crate::config::cache_root().map(|root| root.join("pulled-images"))
}

/// Adds `image` (with its id) to the record of pulled images ([`update_pulled`]).
fn record_pulled(image: &str, id: &str) -> std::io::Result<()> {
    let Some(path) = pulled_record_path() else {
        return Ok(());
    };
    update_pulled(&path, |pulled| {
        pulled.insert(image.to_owned(), id.to_owned());
    })
}

/// Changes the record of pulled images at `path` under its lock file (`<path>.lock`, an
/// exclusive `flock`, which also keeps threads of one process apart): `change` gets the record
/// as it is on disk now, with every other process's entries, and the result is written
/// atomically. Processes that pull at once (two `aci batch` runs) or prune while another pulls
/// then lose no entry.
///
/// # Errors
/// The lock file or the record cannot be opened, read or written.
pub fn update_pulled(
    path: &Path,
    change: impl FnOnce(&mut BTreeMap<String, String>),
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut lock_name = path.file_name().unwrap_or_default().to_owned();
    lock_name.push(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(lock_name))?;
    // Released when `lock` is closed, at the end of this function.
    lock.lock()?;
    let mut pulled = read_pulled(path)?;
    change(&mut pulled);
    write_pulled(path, &pulled)
}

/// The record of pulled images: name → id (empty when there is none).
pub fn read_pulled(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(error) => return Err(error),
    };
    Ok(text
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(name, id)| (name.to_owned(), id.to_owned()))
        .collect())
}

/// Writes the record of pulled images atomically (a temporary file renamed over it). Use
/// [`update_pulled`] to change it: writing a record read earlier drops what others added since.
pub fn write_pulled(path: &Path, pulled: &BTreeMap<String, String>) -> std::io::Result<()> {
    let text: String = pulled
        .iter()
        .map(|(name, id)| format!("{name}\t{id}\n"))
        .collect();
    crate::files::write_atomic_unsynced(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests;
