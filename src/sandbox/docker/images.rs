//! Images and registries: inspecting, listing and removing images, reading a file out of
//! one, building one from a context, pulling and pushing, and asking a registry for a tag's
//! digest.

use std::collections::HashMap;

use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateImageOptionsBuilder, DownloadFromContainerOptionsBuilder,
    ListImagesOptionsBuilder, PushImageOptionsBuilder, RemoveImageOptionsBuilder,
    TagImageOptionsBuilder,
};
use bytes::Bytes;
use futures_util::StreamExt;

use super::super::SandboxError;
use super::super::liveness::own_start_time;
use super::{
    BuildRequest, DockerErrorKind, DockerRuntime, ImageInfo, ImageSummary, LABEL_PID,
    LABEL_PID_START, LABEL_RUN_ID, PullEvent, RegistryLogin, docker_error, docker_error_in, error,
    other,
};

impl DockerRuntime {
    /// Inspects an image by name or id; `None` when it does not exist.
    pub async fn inspect_image(&self, name: &str) -> Result<Option<ImageInfo>, SandboxError> {
        match self.docker.inspect_image(name).await.map_err(docker_error) {
            Ok(image) => Ok(Some(ImageInfo {
                id: image.id.unwrap_or_default(),
                digests: image.repo_digests.unwrap_or_default(),
                labels: image.config.and_then(|c| c.labels).unwrap_or_default(),
            })),
            Err(SandboxError::Docker(error)) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Pulls `image` (`name:tag` or `name@digest`) from its registry, with `login` when given,
    /// passing each progress message to `on_event`.
    ///
    /// # Errors
    /// The daemon's message, of the kind it tells: the registry cannot be reached
    /// ([`DockerErrorKind::RegistryUnreachable`]), the image is not there, access was denied.
    pub async fn pull_image(
        &self,
        image: &str,
        login: Option<&RegistryLogin>,
        mut on_event: impl FnMut(PullEvent) + Send,
    ) -> Result<(), SandboxError> {
        let options = CreateImageOptionsBuilder::default()
            .from_image(image)
            .build();
        let mut stream = self
            .docker
            .create_image(Some(options), None, login.map(to_bollard));
        while let Some(item) = stream.next().await {
            // The registry's words as the daemon relays them, without bollard's framing.
            let info = item.map_err(|error| {
                let message = match &error {
                    bollard::errors::Error::DockerStreamError { error } => error.clone(),
                    bollard::errors::Error::DockerResponseServerError { message, .. } => {
                        message.clone()
                    }
                    other => other.to_string(),
                };
                SandboxError::Docker(error::from_registry(&error, message))
            })?;
            let detail = info.progress_detail.unwrap_or_default();
            on_event(PullEvent {
                id: info.id,
                status: info.status.unwrap_or_default(),
                current: detail.current.and_then(|n| u64::try_from(n).ok()),
                total: detail.total.and_then(|n| u64::try_from(n).ok()),
            });
        }
        Ok(())
    }

    /// The bytes of the file at `path` in `image`, read from a container that is created and
    /// never started (nothing in the image runs); `None` when the image has no such file.
    pub async fn image_file(
        &self,
        image: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, SandboxError> {
        self.check_creation_open()?;
        let labels = HashMap::from([
            (LABEL_RUN_ID.to_owned(), "probe".to_owned()),
            (LABEL_PID.to_owned(), std::process::id().to_string()),
            (LABEL_PID_START.to_owned(), own_start_time().to_string()),
        ]);
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            cmd: Some(vec!["true".to_owned()]),
            entrypoint: Some(vec![]),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(HostConfig {
                network_mode: Some("none".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
            .map_err(docker_error_in(format_args!(
                "cannot create a container from {image}"
            )))?;
        self.track(&created.id, true);
        let options = DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let mut stream = self
            .docker
            .download_from_container(&created.id, Some(options));
        let mut tar = Vec::new();
        let mut missing = false;
        while let Some(chunk) = stream.next().await {
            match chunk.map_err(docker_error) {
                Ok(bytes) => tar.extend_from_slice(&bytes),
                Err(SandboxError::Docker(error)) if error.is_not_found() => {
                    missing = true;
                    break;
                }
                Err(error) => {
                    let _ = self.remove_container(&created.id).await;
                    return Err(error);
                }
            }
        }
        self.remove_container(&created.id).await?;
        if missing {
            return Ok(None);
        }
        first_file_of_tar(&tar)
            .map(Some)
            .map_err(|e| other(format!("cannot read {path} from {image}: {e}")))
    }

    /// Builds an image from a tar build context with the classic builder. `on_step` receives
    /// each `Step N/M : …` line. Returns the image id.
    pub async fn build_image(
        &self,
        request: BuildRequest<'_>,
        mut on_step: impl FnMut(&str) + Send,
    ) -> Result<String, SandboxError> {
        self.build_image_logged(request, |line| {
            if line.starts_with("Step ") {
                on_step(line.trim_end());
            }
        })
        .await
    }

    /// [`Self::build_image`], with every piece of the build's output (each ending in its own
    /// newline, as the daemon sends it) given to `on_output`: the whole build log.
    pub async fn build_image_logged(
        &self,
        request: BuildRequest<'_>,
        mut on_output: impl FnMut(&str) + Send,
    ) -> Result<String, SandboxError> {
        let BuildRequest {
            tag,
            dockerfile,
            context,
            build_args,
            labels,
            network,
            host_network,
        } = request;
        let options = BuildImageOptionsBuilder::default()
            .dockerfile(dockerfile)
            .t(tag)
            .rm(true)
            .forcerm(true)
            .buildargs(build_args)
            .labels(labels)
            .networkmode(match (network, host_network) {
                (false, _) => "none",
                (true, false) => "default",
                (true, true) => "host",
            })
            .build();
        let mut stream = self.docker.build_image(
            options,
            None,
            Some(bollard::body_full(Bytes::from(context))),
        );
        let mut log_tail: Vec<String> = Vec::new();
        while let Some(item) = stream.next().await {
            // A failed step arrives as a stream error: keep the output that led to it.
            let info = item.map_err(|e| {
                SandboxError::Docker(
                    error::from_bollard(&e)
                        .map_message(|e| format!("building {tag}: {e}\n{}", log_tail.join(""))),
                )
            })?;
            if let Some(detail) = info.error_detail {
                let message = detail.message.unwrap_or_default();
                return Err(other(format!(
                    "building {tag} failed: {message}\n{}",
                    log_tail.join("")
                )));
            }
            if let Some(line) = info.stream {
                on_output(&line);
                log_tail.push(line);
                let excess = log_tail.len().saturating_sub(30);
                log_tail.drain(..excess);
            }
        }
        let image = self
            .inspect_image(tag)
            .await?
            .ok_or_else(|| other(format!("the build of {tag} produced no image")))?;
        Ok(image.id)
    }

    /// The manifest digest the registry holds for `reference` (`registry/repo:tag`), asked
    /// through the daemon; `None` when the registry has no such tag.
    pub async fn registry_digest(
        &self,
        reference: &str,
        credentials: Option<&RegistryLogin>,
    ) -> Result<Option<String>, SandboxError> {
        match self
            .docker
            .inspect_registry_image(reference, credentials.map(to_bollard))
            .await
        {
            Ok(inspect) => Ok(Some(inspect.descriptor.digest.unwrap_or_default())),
            Err(error) => {
                let message = format!("cannot ask the registry about {reference}: {error}");
                match error::from_registry(&error, message) {
                    error if error.is_not_found() => Ok(None),
                    error => Err(SandboxError::Docker(error)),
                }
            }
        }
    }

    /// Tags the local image `local` as `reference` (`registry/repo:tag`) and pushes it. Returns
    /// the digest the registry reported.
    pub async fn push_image(
        &self,
        local: &str,
        reference: &str,
        credentials: Option<&RegistryLogin>,
    ) -> Result<String, SandboxError> {
        let (repo, tag) = split_reference(reference);
        let options = TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag)
            .build();
        self.docker
            .tag_image(local, Some(options))
            .await
            .map_err(docker_error_in(format_args!(
                "cannot tag {local} as {reference}"
            )))?;
        let options = PushImageOptionsBuilder::default().tag(tag).build();
        let mut stream = self
            .docker
            .push_image(repo, Some(options), credentials.map(to_bollard));
        let mut digest = String::new();
        while let Some(item) = stream.next().await {
            let info = item.map_err(docker_error_in(format_args!("pushing {reference} failed")))?;
            if let Some(detail) = info.error_detail {
                return Err(other(format!(
                    "pushing {reference} failed: {}",
                    detail.message.unwrap_or_default()
                )));
            }
            if let Some(found) = info
                .status
                .as_deref()
                .and_then(|s| s.split("digest: ").nth(1))
                .and_then(|s| s.split_whitespace().next())
            {
                digest = found.to_owned();
            }
        }
        Ok(digest)
    }

    /// Removes an image by id or tag (forcing, so tags pointing to it go too).
    pub async fn remove_image(&self, name: &str) -> Result<(), SandboxError> {
        let options = RemoveImageOptionsBuilder::default().force(true).build();
        self.docker
            .remove_image(name, Some(options), None)
            .await
            .map_err(docker_error)?;
        Ok(())
    }

    /// The daemon's data directory (`docker info`'s `DockerRootDir`), where images are stored.
    pub async fn docker_root_dir(&self) -> Result<Option<String>, SandboxError> {
        let info = self.docker.info().await.map_err(docker_error)?;
        Ok(info.docker_root_dir.filter(|dir| !dir.is_empty()))
    }

    /// Lists the images that carry every one of `labels` (each `key` or `key=value`).
    pub async fn list_images_labelled(
        &self,
        labels: &[String],
    ) -> Result<Vec<ImageSummary>, SandboxError> {
        let filters = HashMap::from([("label".to_owned(), labels.to_vec())]);
        let options = ListImagesOptionsBuilder::default()
            .all(false)
            .filters(&filters)
            .build();
        let images = self
            .docker
            .list_images(Some(options))
            .await
            .map_err(docker_error)?;
        Ok(images
            .into_iter()
            .map(|image| ImageSummary {
                id: image.id,
                tags: image
                    .repo_tags
                    .into_iter()
                    .filter(|tag| tag != "<none>:<none>")
                    .collect(),
                labels: image.labels,
                size: u64::try_from(image.size).unwrap_or(0),
            })
            .collect())
    }

    /// Removes an image by tag or id without forcing: a tag is untagged (and the image deleted
    /// when it was the last one). Returns `Ok(false)`, removing nothing, when a container uses
    /// the image or an id still has several tags.
    pub async fn remove_image_unless_used(&self, name: &str) -> Result<bool, SandboxError> {
        let options = RemoveImageOptionsBuilder::default().force(false).build();
        match self.docker.remove_image(name, Some(options), None).await {
            Ok(_) => Ok(true),
            Err(error) => match error::from_bollard(&error).kind {
                DockerErrorKind::Conflict => Ok(false),
                DockerErrorKind::NotFound => Ok(true),
                _ => Err(docker_error(error)),
            },
        }
    }
}

/// A registry login as bollard sends it (the `X-Registry-Auth` header).
fn to_bollard(credentials: &RegistryLogin) -> bollard::auth::DockerCredentials {
    bollard::auth::DockerCredentials {
        username: credentials.username.clone(),
        password: credentials.password.clone(),
        serveraddress: Some(credentials.server.clone()),
        identitytoken: credentials.identity_token.clone(),
        ..Default::default()
    }
}

/// `registry/repo:tag` as `(registry/repo, tag)`; the tag defaults to `latest`. A `:` before
/// the last `/` is a registry port, not a tag.
pub fn split_reference(reference: &str) -> (&str, &str) {
    match reference.rfind(':') {
        Some(at) if !reference[at..].contains('/') => (&reference[..at], &reference[at + 1..]),
        _ => (reference, "latest"),
    }
}

/// The content of the first regular file in a tar archive (the daemon's archive of one file).
fn first_file_of_tar(tar: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type().is_file() {
            let mut content = Vec::new();
            entry.read_to_end(&mut content)?;
            return Ok(content);
        }
    }
    Err(std::io::Error::other("the archive holds no regular file"))
}
