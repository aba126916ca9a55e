//! `aci images push`: the images a set of instances runs in, built (or pulled, as `env.pull`
//! says) when missing and pushed to a registry for `--engine k8s`: the Debian base images, the
//! language images, and each instance's environment image, as `<registry>/<tag>`. What the
//! registry already has (the same digest under the same tag) is not pushed again.
//!
//! Credentials are `docker login`'s: `$DOCKER_CONFIG/config.json` (or `~/.docker/config.json`),
//! its `auths`, `credHelpers` and `credsStore`.

use std::collections::BTreeMap;

use super::pull::{docker_config_path, login_for, remember_login, scrubbed};
use super::{BuiltImage, ImageError, LABEL_IMAGE, LANGUAGE_IMAGES, build};
use crate::sandbox::SandboxError;
use crate::sandbox::docker::{DockerRuntime, RegistryLogin};

/// Why images could not be pushed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// Building the base or language images failed.
    #[error(transparent)]
    Build(#[from] ImageError),
    /// The daemon or the registry failed.
    #[error(transparent)]
    Docker(#[from] SandboxError),
    /// The Docker client configuration could not be read.
    #[error("{0}")]
    Credentials(String),
}

/// One image pushed (or found in the registry already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushedImage {
    /// The local tag.
    pub tag: String,
    /// Where it is in the registry.
    pub reference: String,
    /// Whether it was pushed now.
    pub state: Published,
}

/// The images under `bases` (the instances' base images, each with the Debian base its plan
/// says it sits on), in push order: each Debian base, then the language images, then the
/// other bases. aci's language images are built when missing or out of date, and their base
/// with them.
pub async fn base_images(
    docker: &DockerRuntime,
    bases: &BTreeMap<String, Option<String>>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<String>, PushError> {
    let languages: Vec<_> = LANGUAGE_IMAGES
        .iter()
        .filter(|image| bases.contains_key(image.tag))
        .copied()
        .collect();
    let built: Vec<BuiltImage> = if languages.is_empty() {
        Vec::new()
    } else {
        build(docker, &languages, false, progress).await?
    };
    let mut tags: Vec<String> = built.into_iter().map(|image| image.tag).collect();
    for (base, debian_base) in bases {
        for tag in debian_base.iter().chain([base]) {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
    }
    Ok(tags)
}

/// Pushes each of `tags` that aci built (labelled `aci.image`) to `registry` as
/// `<registry>/<tag>`, unless the registry has it already ([`publish_one`]). Others (an
/// instance's own image, which lives in its own registry) are left out.
pub async fn push_images(
    docker: &DockerRuntime,
    tags: &[String],
    registry: &str,
    credentials: Option<&RegistryLogin>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<PushedImage>, PushError> {
    let registry = registry.trim_end_matches('/');
    let mut pushed = Vec::new();
    for tag in tags {
        let Some(info) = docker.inspect_image(tag).await? else {
            continue;
        };
        if !info.labels.contains_key(LABEL_IMAGE) {
            continue;
        }
        let reference = format!("{registry}/{tag}");
        progress(&format!("{tag} → {reference}"));
        let state = publish_one(docker, tag, &reference, &info.digests, credentials).await?;
        pushed.push(PushedImage {
            tag: tag.clone(),
            reference,
            state,
        });
    }
    Ok(pushed)
}

/// What [`publish_one`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// The registry had the tag with this image's digest.
    Present,
    /// It was pushed.
    Pushed,
}

/// Pushes local `tag` as `reference` unless the registry already has it: a tag whose registry
/// digest is one of the local image's repository digests (it was pushed or pulled from there)
/// is the same image.
pub async fn publish_one(
    docker: &DockerRuntime,
    tag: &str,
    reference: &str,
    local_digests: &[String],
    credentials: Option<&RegistryLogin>,
) -> Result<Published, SandboxError> {
    let (repository, _) = crate::sandbox::docker::split_reference(reference);
    // The registry's answers, relayed by the daemon, are scrubbed of the login.
    let digest = docker
        .registry_digest(reference, credentials)
        .await
        .map_err(scrubbed)?;
    if let Some(digest) = digest
        && local_digests.contains(&format!("{repository}@{digest}"))
    {
        return Ok(Published::Present);
    }
    docker
        .push_image(tag, reference, credentials)
        .await
        .map_err(scrubbed)?;
    Ok(Published::Pushed)
}

/// The registry host of `registry` (`ghcr.io/me` → `ghcr.io`).
pub fn registry_host(registry: &str) -> &str {
    registry.split('/').next().unwrap_or(registry)
}

/// The credentials `docker login` stored for `registry`: its credential helper's
/// (`credHelpers`, else `credsStore`), else its `auths` entry ([`login_for`]); none without a
/// Docker config. Its secrets are remembered, so that errors are scrubbed of them
/// ([`crate::secret`]).
pub fn credentials_for(registry: &str) -> Result<Option<RegistryLogin>, PushError> {
    let login = stored_credentials(registry)?;
    if let Some(login) = &login {
        remember_login(login);
    }
    Ok(login)
}

/// [`credentials_for`], before its secrets are remembered.
fn stored_credentials(registry: &str) -> Result<Option<RegistryLogin>, PushError> {
    let Some(path) = docker_config_path() else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(PushError::Credentials(format!(
                "cannot read {}: {error}",
                path.display()
            )));
        }
    };
    let config: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| PushError::Credentials(format!("{}: {e}", path.display())))?;
    let host = registry_host(registry);
    let helper = config["credHelpers"][host]
        .as_str()
        .or_else(|| config["credsStore"].as_str());
    match helper {
        Some(helper) => helper_credentials(helper, host).map(Some),
        None => Ok(login_for(&text, host)),
    }
}

/// Asks `docker-credential-<helper>` for the credentials of `host`.
fn helper_credentials(helper: &str, host: &str) -> Result<RegistryLogin, PushError> {
    use std::io::Write;
    let program = format!("docker-credential-{helper}");
    let failed =
        |message: String| PushError::Credentials(format!("{program} get {host}: {message}"));
    let mut child = std::process::Command::new(&program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(host.as_bytes())
            .map_err(|e| failed(e.to_string()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if !output.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        ));
    }
    let value: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| failed(e.to_string()))?;
    let user = value["Username"].as_str().unwrap_or_default();
    let secret = value["Secret"].as_str().unwrap_or_default().to_owned();
    Ok(if user == "<token>" {
        RegistryLogin {
            server: host.to_owned(),
            identity_token: Some(secret),
            ..RegistryLogin::default()
        }
    } else {
        RegistryLogin {
            server: host.to_owned(),
            username: Some(user.to_owned()),
            password: Some(secret),
            identity_token: None,
        }
    })
}
