//! What went wrong with a request to the Docker daemon, as a kind callers match: bollard's
//! errors are read here, by their variant and HTTP status, and nowhere else.

use std::fmt;

/// A failed request to the Docker daemon: its kind, and the message to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerError {
    /// What kind of failure it was.
    pub kind: DockerErrorKind,
    /// What the daemon (or the connection to it) said, with the context aci added.
    pub message: String,
}

/// The kinds of [`DockerError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DockerErrorKind {
    /// The daemon could not be reached, or did not answer in time.
    Connect,
    /// The object asked for does not exist (HTTP 404), or the registry has no such manifest.
    NotFound,
    /// The object is in use, or in a state that refuses the request (HTTP 409).
    Conflict,
    /// The daemon or a registry refused the credentials, or asks for some (HTTP 401 or 403).
    Auth,
    /// The daemon could not reach a registry: name resolution, connection or TLS failed.
    RegistryUnreachable,
    /// Anything else; `status` is the HTTP status when the daemon answered with one.
    Other {
        /// The HTTP status of the daemon's answer.
        status: Option<u16>,
    },
}

impl DockerError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: DockerErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// An error of no particular kind (aci's own, not the daemon's): [`DockerErrorKind::Other`]
    /// without a status.
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(DockerErrorKind::Other { status: None }, message)
    }

    /// The same kind with `context: ` put before the message.
    #[must_use]
    pub fn context(self, context: impl fmt::Display) -> Self {
        Self {
            kind: self.kind,
            message: format!("{context}: {}", self.message),
        }
    }

    /// The same kind with the message `f` makes of this one.
    #[must_use]
    pub fn map_message(self, f: impl FnOnce(String) -> String) -> Self {
        Self {
            kind: self.kind,
            message: f(self.message),
        }
    }

    /// Whether the object asked for does not exist.
    pub fn is_not_found(&self) -> bool {
        self.kind == DockerErrorKind::NotFound
    }
}

impl fmt::Display for DockerError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for DockerError {}

/// A bollard error of a request about this daemon's own objects (containers, images, execs):
/// its variant and HTTP status say the kind, its text is only shown.
pub(super) fn from_bollard(error: &bollard::errors::Error) -> DockerError {
    use bollard::errors::Error;
    let kind = match error {
        Error::DockerResponseServerError { status_code, .. } => match status_code {
            404 => DockerErrorKind::NotFound,
            409 => DockerErrorKind::Conflict,
            401 | 403 => DockerErrorKind::Auth,
            status => DockerErrorKind::Other {
                status: Some(*status),
            },
        },
        Error::HyperResponseError { .. }
        | Error::HyperLegacyError { .. }
        | Error::RequestTimeoutError
        | Error::IOError { .. }
        | Error::SocketNotFoundError(_) => DockerErrorKind::Connect,
        _ => DockerErrorKind::Other { status: None },
    };
    DockerError::new(kind, error.to_string())
}

/// A bollard error of a request the daemon passes on to a registry (a pull, a registry
/// inspect), with the message to show. The daemon answers a registry's failures with its
/// status (or 500) and the registry's or its dialer's words, with no code of their own: for
/// those, the words decide between an unreachable registry and a missing manifest.
pub(super) fn from_registry(error: &bollard::errors::Error, message: String) -> DockerError {
    use bollard::errors::Error;
    let said = match error {
        Error::DockerResponseServerError {
            status_code,
            message,
        } => Some((*status_code, message.as_str())),
        Error::DockerStreamError { error } => Some((500, error.as_str())),
        _ => None,
    };
    let kind = match said {
        Some((_, words)) if registry_unreachable(words) => DockerErrorKind::RegistryUnreachable,
        Some((404, _)) => DockerErrorKind::NotFound,
        Some((_, words)) if words.contains("manifest unknown") || words.contains("not found") => {
            DockerErrorKind::NotFound
        }
        _ => from_bollard(error).kind,
    };
    DockerError::new(kind, message)
}

/// Whether a daemon message says that no registry could be reached at all.
pub(super) fn registry_unreachable(message: &str) -> bool {
    let message = message.to_lowercase();
    [
        "dial tcp",
        "no such host",
        "connection refused",
        "i/o timeout",
        "tls handshake timeout",
        "network is unreachable",
        "temporary failure in name resolution",
        "server misbehaving",
        "request canceled while waiting for connection",
        "context deadline exceeded",
    ]
    .iter()
    .any(|sign| message.contains(sign))
}
