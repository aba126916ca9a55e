//! `aci images push`: the images a set of instances runs in, built when missing and pushed to
//! a registry for `--engine k8s`: the Debian base images, the language images, and each
//! instance's environment image, as `<registry>/<tag>`. What the registry already has (the same
//! digest under the same tag) is not pushed again.
//!
//! Credentials are `docker login`'s: `$DOCKER_CONFIG/config.json` (or `~/.docker/config.json`),
//! its `auths`, `credHelpers` and `credsStore`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::env::{EnvRequest, base_image, ensure_env_image};
use super::{BuiltImage, ImageError, LABEL_IMAGE, LANGUAGE_IMAGES, build};
use crate::cluster::{Published, publish_one};
use crate::config::EnvConfig;
use crate::instance::Instance;
use crate::sandbox::SandboxError;
use crate::sandbox::docker::{DockerRuntime, RegistryCredentials};

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

/// What [`push`] did.
#[derive(Debug, Default)]
pub struct PushReport {
    /// The images, in push order.
    pub images: Vec<PushedImage>,
    /// Instances whose environment image could not be had, with why.
    pub failed: Vec<(String, String)>,
}

/// The Debian base image under a language image aci builds: `aci-<lang>:<release>` sits on
/// `aci-base:<release>`.
pub fn base_of(language_tag: &str) -> Option<String> {
    let (name, release) = language_tag.split_once(':')?;
    let language = name.strip_prefix("aci-")?;
    (language != "base" && !language.starts_with("env-")).then(|| format!("aci-base:{release}"))
}

/// Builds what is missing and pushes, in order, the base images, the language images and the
/// environment images of `instances` to `registry`. An instance whose environment image cannot
/// be had is reported in [`PushReport::failed`]; the others are pushed.
pub async fn push(
    docker: &DockerRuntime,
    instances: &[Instance],
    env: &EnvConfig,
    registry: &str,
    credentials: Option<&RegistryCredentials>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<PushReport, PushError> {
    let registry = registry.trim_end_matches('/');
    let bases: BTreeSet<String> = instances.iter().map(|i| base_image(i, env)).collect();
    let languages: Vec<_> = LANGUAGE_IMAGES
        .iter()
        .filter(|image| bases.contains(image.tag))
        .copied()
        .collect();
    let built: Vec<BuiltImage> = if languages.is_empty() {
        Vec::new()
    } else {
        build(docker, &languages, false, progress).await?
    };
    let mut tags: Vec<String> = built.into_iter().map(|image| image.tag).collect();
    for base in &bases {
        for tag in base_of(base).into_iter().chain([base.clone()]) {
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
    }
    let mut report = PushReport::default();
    let quiet = |_: &str| {};
    for instance in instances {
        let request = EnvRequest {
            env,
            run_id: "aci-images-push",
            on_step: &quiet,
        };
        match ensure_env_image(docker, instance, &request).await {
            Ok(image) if !tags.contains(&image.tag) => tags.push(image.tag),
            Ok(_) => {}
            Err(error) => report
                .failed
                .push((instance.instance_id.clone(), error.to_string())),
        }
    }
    for tag in tags {
        // Only what aci built: an instance's own image lives in its own registry already.
        let Some(info) = docker.inspect_image(&tag).await? else {
            continue;
        };
        if !info.labels.contains_key(LABEL_IMAGE) {
            continue;
        }
        let reference = format!("{registry}/{tag}");
        progress(&format!("{tag} → {reference}"));
        let state = publish_one(docker, &tag, &reference, &info.digests, credentials).await?;
        report.images.push(PushedImage {
            tag,
            reference,
            state,
        });
    }
    Ok(report)
}

/// The registry host of `registry` (`ghcr.io/me` → `ghcr.io`).
pub fn registry_host(registry: &str) -> &str {
    registry.split('/').next().unwrap_or(registry)
}

/// The credentials `docker login` stored for `registry`, if any.
pub fn credentials_for(registry: &str) -> Result<Option<RegistryCredentials>, PushError> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker")));
    let Some(path) = dir.map(|dir| dir.join("config.json")) else {
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
    if let Some(helper) = helper {
        return helper_credentials(helper, host).map(Some);
    }
    Ok(stored_credentials(&config, host))
}

/// Credentials from the `auths` section of a Docker client configuration.
pub fn stored_credentials(config: &serde_json::Value, host: &str) -> Option<RegistryCredentials> {
    let auths = config["auths"].as_object()?;
    let entry = auths.iter().find_map(|(key, value)| {
        let key_host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default();
        (key_host == host).then_some(value)
    })?;
    let mut credentials = RegistryCredentials {
        server: host.to_owned(),
        ..RegistryCredentials::default()
    };
    if let Some(auth) = entry["auth"].as_str() {
        let decoded = data_encoding::BASE64.decode(auth.as_bytes()).ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (user, password) = decoded.split_once(':')?;
        credentials.username = Some(user.to_owned());
        credentials.password = Some(password.to_owned());
    }
    credentials.identity_token = entry["identitytoken"].as_str().map(str::to_owned);
    Some(credentials)
}

/// Asks `docker-credential-<helper>` for the credentials of `host`.
fn helper_credentials(helper: &str, host: &str) -> Result<RegistryCredentials, PushError> {
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
        RegistryCredentials {
            server: host.to_owned(),
            identity_token: Some(secret),
            ..RegistryCredentials::default()
        }
    } else {
        RegistryCredentials {
            server: host.to_owned(),
            username: Some(user.to_owned()),
            password: Some(secret),
            identity_token: None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_language_image_sits_on_the_base_of_its_release() {
        assert_eq!(
            base_of("aci-python:bookworm").as_deref(),
            Some("aci-base:bookworm")
        );
        assert_eq!(
            base_of("aci-rust:trixie").as_deref(),
            Some("aci-base:trixie")
        );
        assert_eq!(base_of("aci-base:bookworm"), None);
        assert_eq!(base_of("aci-env-python:0123"), None);
        assert_eq!(base_of("swebench/sweb.eval.x86_64.a:latest"), None);
    }

    #[test]
    fn stored_credentials_are_found_by_registry_host() {
        let config = serde_json::json!({"auths": {
            "https://index.docker.io/v1/": {"auth": data_encoding::BASE64.encode(b"hub:pw")},
            "ghcr.io": {"auth": data_encoding::BASE64.encode(b"me:ghp_token")},
            "registry.example:5000": {"identitytoken": "refresh"},
        }});
        assert_eq!(
            stored_credentials(&config, registry_host("ghcr.io/me")),
            Some(RegistryCredentials {
                server: "ghcr.io".to_owned(),
                username: Some("me".to_owned()),
                password: Some("ghp_token".to_owned()),
                identity_token: None,
            })
        );
        assert_eq!(
            stored_credentials(&config, "registry.example:5000").and_then(|c| c.identity_token),
            Some("refresh".to_owned())
        );
        assert_eq!(
            stored_credentials(&config, "index.docker.io").and_then(|c| c.username),
            Some("hub".to_owned())
        );
        assert_eq!(stored_credentials(&config, "localhost:5000"), None);
    }
}
