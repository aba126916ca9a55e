//! Which Docker daemon to talk to, read as the Docker CLI reads it: `DOCKER_HOST` first, then
//! the context `DOCKER_CONTEXT` names, then the config's `currentContext`, then the local
//! socket. TLS comes from `DOCKER_TLS_VERIFY` and `DOCKER_CERT_PATH`, or from a context's stored
//! certificates. Pure: the caller hands in the variables and a way to read files, and connects
//! ([`super::docker::DockerRuntime::connect`]).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The socket of a local daemon when nothing says otherwise.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// How to reach the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A daemon on this machine, by its socket's path.
    Unix {
        /// The socket, `/var/run/docker.sock`.
        path: String,
    },
    /// A daemon over TCP, in plain HTTP or with TLS client certificates.
    Tcp {
        /// `host:port`.
        addr: String,
        /// The certificates, when the connection is TLS.
        tls: Option<TlsFiles>,
    },
}

/// The PEM files of a TLS connection: the CA that signed the daemon's certificate, and the
/// client's certificate and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `ca.pem`: the CA that signed the daemon's certificate.
    pub ca: PathBuf,
    /// `cert.pem`: the client's certificate.
    pub cert: PathBuf,
    /// `key.pem`: the client's key.
    pub key: PathBuf,
}

/// An endpoint and what chose it, for messages (`DOCKER_HOST`, `context \`remote\``, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// How to reach the daemon.
    pub endpoint: Endpoint,
    /// What chose it.
    pub source: String,
}

impl Resolved {
    /// The endpoint as a URL (`unix:///var/run/docker.sock`, `tcp://10.0.0.5:2376`).
    #[must_use]
    pub fn url(&self) -> String {
        match &self.endpoint {
            Endpoint::Unix { path } => format!("unix://{path}"),
            Endpoint::Tcp { addr, .. } => format!("tcp://{addr}"),
        }
    }

    /// Whether the daemon's files are this machine's (its socket is local).
    #[must_use]
    pub fn is_local(&self) -> bool {
        matches!(self.endpoint, Endpoint::Unix { .. })
    }

    /// How it is reached, in words: `unix:///… (the default)`, `tcp://… with TLS (DOCKER_HOST)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let tls = match &self.endpoint {
            Endpoint::Tcp { tls: Some(_), .. } => " with TLS",
            _ => "",
        };
        format!("{}{tls} ({})", self.url(), self.source)
    }
}

/// The environment variables that choose the daemon, and where the CLI's config lives.
#[derive(Debug, Clone, Default)]
pub struct DockerEnv {
    /// `DOCKER_HOST`.
    pub host: Option<String>,
    /// `DOCKER_CONTEXT`.
    pub context: Option<String>,
    /// `DOCKER_TLS_VERIFY` (any value but empty turns it on, as with the CLI).
    pub tls_verify: Option<String>,
    /// `DOCKER_TLS`: TLS without verifying the daemon, which aci refuses.
    pub tls: Option<String>,
    /// `DOCKER_CERT_PATH`.
    pub cert_path: Option<String>,
    /// `DOCKER_CONFIG`, or `~/.docker`.
    pub config_dir: PathBuf,
}

impl DockerEnv {
    /// Reads this process's environment.
    #[must_use]
    pub fn from_process() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let config_dir = var("DOCKER_CONFIG").map_or_else(
            || PathBuf::from(var("HOME").unwrap_or_else(|| "/root".to_owned())).join(".docker"),
            PathBuf::from,
        );
        Self {
            host: var("DOCKER_HOST"),
            context: var("DOCKER_CONTEXT"),
            tls_verify: var("DOCKER_TLS_VERIFY"),
            tls: var("DOCKER_TLS"),
            cert_path: var("DOCKER_CERT_PATH"),
            config_dir,
        }
    }
}

/// Chooses the endpoint. `read` returns a file's text, or `None` when it cannot be read.
///
/// # Errors
/// One line naming the variable or file at fault: a scheme aci cannot reach, TLS asked for
/// without its files, a context that does not exist or is malformed.
pub fn resolve(
    env: &DockerEnv,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Resolved, String> {
    if let Some(host) = &env.host {
        let tls = tls_from_env(env, read)?;
        let endpoint = parse_host(host, tls, "DOCKER_HOST")?;
        return Ok(Resolved {
            endpoint,
            source: "DOCKER_HOST".to_owned(),
        });
    }
    let (name, from) = match &env.context {
        Some(name) => (Some(name.clone()), "DOCKER_CONTEXT"),
        None => (current_context(env, read)?, "currentContext of config.json"),
    };
    match name {
        Some(name) if name != "default" => from_context(env, read, &name, from),
        _ => Ok(Resolved {
            endpoint: Endpoint::Unix {
                path: DEFAULT_SOCKET.to_owned(),
            },
            source: "the default".to_owned(),
        }),
    }
}

/// The TLS files `DOCKER_TLS_VERIFY` asks for, from `DOCKER_CERT_PATH` or the config dir.
fn tls_from_env(
    env: &DockerEnv,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Option<TlsFiles>, String> {
    if env.tls_verify.is_none() {
        if env.tls.is_some() {
            return Err(
                "DOCKER_TLS is set without DOCKER_TLS_VERIFY: aci does not talk to a \
                        daemon whose certificate it cannot verify; set DOCKER_TLS_VERIFY=1 and \
                        DOCKER_CERT_PATH to the directory of ca.pem, cert.pem and key.pem"
                    .to_owned(),
            );
        }
        return Ok(None);
    }
    let dir = env
        .cert_path
        .as_ref()
        .map_or_else(|| env.config_dir.clone(), PathBuf::from);
    let files = tls_files(&dir);
    for path in [&files.ca, &files.cert, &files.key] {
        if read(path).is_none() {
            return Err(format!(
                "DOCKER_TLS_VERIFY is set, but {} cannot be read (DOCKER_CERT_PATH names the \
                 directory of ca.pem, cert.pem and key.pem)",
                path.display()
            ));
        }
    }
    Ok(Some(files))
}

fn tls_files(dir: &Path) -> TlsFiles {
    TlsFiles {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

/// `unix:///path` or `tcp://host:port` (or `https://`, always TLS) as an endpoint.
fn parse_host(host: &str, tls: Option<TlsFiles>, what: &str) -> Result<Endpoint, String> {
    let reachable = "aci reaches a daemon at unix:///PATH or tcp://HOST:PORT (TLS with \
                     DOCKER_TLS_VERIFY=1)";
    if let Some(path) = host.strip_prefix("unix://") {
        if !path.starts_with('/') {
            return Err(format!(
                "{what}={host}: a socket's path is absolute: unix:///PATH"
            ));
        }
        return Ok(Endpoint::Unix {
            path: path.to_owned(),
        });
    }
    let addr = match host.split_once("://") {
        Some(("tcp" | "http" | "https", addr)) => addr.trim_end_matches('/'),
        Some(("ssh", _)) => {
            return Err(format!(
                "{what}={host}: aci does not speak ssh to a daemon; forward its socket \
                 (ssh -nNT -L /tmp/docker.sock:/var/run/docker.sock USER@HOST) and set \
                 DOCKER_HOST=unix:///tmp/docker.sock"
            ));
        }
        _ => return Err(format!("{what}={host}: {reachable}")),
    };
    let has_port = addr
        .rsplit_once(':')
        .is_some_and(|(name, port)| !name.is_empty() && port.parse::<u16>().is_ok());
    if !has_port || addr.contains('/') {
        return Err(format!("{what}={host}: {reachable}"));
    }
    if host.starts_with("https://") && tls.is_none() {
        return Err(format!(
            "{what}={host}: https needs DOCKER_TLS_VERIFY=1 and the certificates of \
             DOCKER_CERT_PATH"
        ));
    }
    Ok(Endpoint::Tcp {
        addr: addr.to_owned(),
        tls,
    })
}

/// The `currentContext` of the CLI's `config.json`, if it names one.
fn current_context(
    env: &DockerEnv,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Option<String>, String> {
    let path = env.config_dir.join("config.json");
    let Some(text) = read(&path) else {
        return Ok(None);
    };
    let config: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not JSON: {error}", path.display()))?;
    Ok(config
        .get("currentContext")
        .and_then(serde_json::Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_owned))
}

/// A context's endpoint, from `contexts/meta/<sha256 of the name>/meta.json` and its TLS files
/// in `contexts/tls/<same>/docker/`.
fn from_context(
    env: &DockerEnv,
    read: &dyn Fn(&Path) -> Option<String>,
    name: &str,
    from: &str,
) -> Result<Resolved, String> {
    let id = data_encoding::HEXLOWER.encode(&Sha256::digest(name.as_bytes()));
    let meta = env
        .config_dir
        .join("contexts")
        .join("meta")
        .join(&id)
        .join("meta.json");
    let Some(text) = read(&meta) else {
        return Err(format!(
            "the Docker context `{name}` ({from}) does not exist: {} cannot be read",
            meta.display()
        ));
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not JSON: {error}", meta.display()))?;
    let docker = value.pointer("/Endpoints/docker");
    let Some(host) = docker
        .and_then(|docker| docker.get("Host"))
        .and_then(serde_json::Value::as_str)
    else {
        return Err(format!(
            "the Docker context `{name}` has no Endpoints.docker.Host in {}",
            meta.display()
        ));
    };
    let skip_verify = docker
        .and_then(|docker| docker.get("SkipTLSVerify"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let dir = env
        .config_dir
        .join("contexts")
        .join("tls")
        .join(&id)
        .join("docker");
    let files = tls_files(&dir);
    let tls = if [&files.ca, &files.cert, &files.key]
        .iter()
        .all(|path| read(path).is_some())
    {
        Some(files)
    } else {
        None
    };
    if skip_verify && host.starts_with("tcp://") {
        return Err(format!(
            "the Docker context `{name}` skips verifying the daemon's certificate \
             (SkipTLSVerify): aci does not talk to a daemon it cannot verify"
        ));
    }
    let endpoint = parse_host(host, tls, &format!("the Docker context `{name}`'s Host"))?;
    Ok(Resolved {
        endpoint,
        source: format!("context `{name}`"),
    })
}

#[cfg(test)]
mod tests;
