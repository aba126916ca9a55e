//! The plain data that [`super::DockerRuntime`] takes and gives: build requests, images as
//! listed and inspected, pull progress and registry logins.

use std::collections::HashMap;

/// An image build: [`super::DockerRuntime::build_image`].
pub struct BuildRequest<'a> {
    /// The tag to give the image.
    pub tag: &'a str,
    /// The Dockerfile's name inside the context.
    pub dockerfile: &'a str,
    /// The build context, a tar archive.
    pub context: Vec<u8>,
    /// `ARG` values.
    pub build_args: &'a HashMap<String, String>,
    /// Labels put on the image.
    pub labels: &'a HashMap<String, String>,
    /// Whether `RUN` steps get a network (to reach package mirrors).
    pub network: bool,
    /// With `network`: the host's network instead of the default bridge, so that `RUN` steps
    /// reach a server on the host's loopback (the as-of package index).
    pub host_network: bool,
}

/// One image as [`super::DockerRuntime::list_images_labelled`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSummary {
    /// The image id (`sha256:…`).
    pub id: String,
    /// Its tags (`repo:tag`), without the `<none>:<none>` placeholder.
    pub tags: Vec<String>,
    /// Its labels.
    pub labels: HashMap<String, String>,
    /// Its size in bytes, shared layers included.
    pub size: u64,
}

/// What [`super::DockerRuntime::inspect_image`] reports.
#[derive(Debug, Clone)]
pub struct ImageInfo {
    /// The image id (`sha256:…`).
    pub id: String,
    /// Repository digests, when the image came from a registry.
    pub digests: Vec<String>,
    /// The image's labels.
    pub labels: HashMap<String, String>,
}

/// One progress message of an image pull, as the daemon streams it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullEvent {
    /// The layer (a short digest) the message is about, or the tag for the pull's own lines.
    pub id: Option<String>,
    /// `Pulling fs layer`, `Downloading`, `Pull complete`, `Already exists`, `Digest: …`, …
    pub status: String,
    /// Bytes done of a download or an extraction.
    pub current: Option<u64>,
    /// Bytes of the whole download or extraction.
    pub total: Option<u64>,
}

/// A login to one registry, sent with a pull.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryLogin {
    /// The registry, as the Docker config names it.
    pub server: String,
    /// The user name.
    pub username: Option<String>,
    /// The password or access token.
    pub password: Option<String>,
    /// An OAuth identity token, instead of a password.
    pub identity_token: Option<String>,
}
