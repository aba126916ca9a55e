//! Which Docker daemon to talk to, read as the Docker CLI reads it: `DOCKER_HOST` first, then
//! the context `DOCKER_CONTEXT` names, then the config's `currentContext`, then the local
//! socket. TLS comes from `DOCKER_TLS_VERIFY` and `DOCKER_CERT_PATH`, or from a context's stored
//! certificates. `ssh://[USER@]HOST[:PORT][/SOCKET]` is reached as the CLI reaches it, through
//! `ssh … HOST docker system dial-stdio` ([`SshTarget::command`]). Pure: the caller hands in the
//! variables and a way to read files, and connects ([`super::docker::DockerRuntime::connect`]).

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
    /// A daemon on another machine, reached through ssh: every connection is a new `ssh …
    /// docker system dial-stdio` whose standard input and output carry the HTTP.
    Ssh(SshTarget),
}

/// Where `ssh://[USER@]HOST[:PORT][/SOCKET]` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// The login name (`-l`), when the URL names one; else ssh's own choice (`~/.ssh/config`).
    pub user: Option<String>,
    /// The host name or address, without brackets.
    pub host: String,
    /// The port (`-p`), when the URL names one.
    pub port: Option<u16>,
    /// The daemon's socket on the remote machine (`docker --host unix://SOCKET`), when the URL
    /// has a path; else the remote `docker`'s own default.
    pub socket: Option<String>,
}

/// How long ssh waits for the TCP connection, as the Docker CLI passes it (`ConnectTimeout=30`).
pub const SSH_CONNECT_TIMEOUT_SECS: u32 = 30;

impl SshTarget {
    /// The arguments of `ssh` that open one connection to the daemon, as the Docker CLI runs
    /// it (`-o ConnectTimeout=30 -T [-l USER] [-p PORT] -- HOST docker [--host unix://SOCKET]
    /// system dial-stdio`), plus `BatchMode=yes`: ssh never prompts, so a key it cannot use or a
    /// host key it does not know fails at once with one line on its standard error.
    #[must_use]
    pub fn command(&self) -> Vec<String> {
        self.running(&["system", "dial-stdio"])
    }

    /// The same with `docker … version` at the end: what to try by hand when the daemon
    /// cannot be reached.
    #[must_use]
    pub fn probe(&self) -> Vec<String> {
        self.running(&["version"])
    }

    /// The arguments of `ssh` that run `docker [--host unix://SOCKET] <docker_args>` there.
    fn running(&self, docker_args: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "-o".to_owned(),
            format!("ConnectTimeout={SSH_CONNECT_TIMEOUT_SECS}"),
            "-o".to_owned(),
            "BatchMode=yes".to_owned(),
            "-T".to_owned(),
        ]
        .into();
        if let Some(user) = &self.user {
            args.extend(["-l".to_owned(), user.clone()]);
        }
        if let Some(port) = self.port {
            args.extend(["-p".to_owned(), port.to_string()]);
        }
        args.extend(["--".to_owned(), self.host.clone(), "docker".to_owned()]);
        if let Some(socket) = &self.socket {
            args.extend(["--host".to_owned(), format!("unix://{socket}")]);
        }
        args.extend(docker_args.iter().map(|arg| (*arg).to_owned()));
        args
    }

    /// The target as a URL: `ssh://root@10.0.0.5:2222`.
    #[must_use]
    pub fn url(&self) -> String {
        let user = self
            .user
            .as_ref()
            .map_or_else(String::new, |user| format!("{user}@"));
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let port = self
            .port
            .map_or_else(String::new, |port| format!(":{port}"));
        let socket = self.socket.as_deref().unwrap_or_default();
        format!("ssh://{user}{host}{port}{socket}")
    }
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
            Endpoint::Ssh(target) => target.url(),
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

/// What chooses the Podman service of `--engine podman`: Podman's own variable, and where its
/// sockets are for this user.
#[derive(Debug, Clone, Default)]
pub struct PodmanEnv {
    /// `CONTAINER_HOST` (what `podman --remote` reads): `unix:///PATH`, `tcp://…` or
    /// `ssh://…`.
    pub host: Option<String>,
    /// Whether aci runs as root: the service's socket is then `/run/podman/podman.sock`.
    pub root: bool,
    /// `XDG_RUNTIME_DIR`, where a rootless service's socket is (`podman/podman.sock`).
    pub runtime_dir: Option<String>,
    /// The user's id, for `/run/user/UID` when `XDG_RUNTIME_DIR` is not set.
    pub uid: u32,
}

impl PodmanEnv {
    /// Reads this process's environment and user.
    #[must_use]
    pub fn from_process() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let uid = rustix::process::geteuid().as_raw();
        Self {
            host: var("CONTAINER_HOST"),
            root: uid == 0,
            runtime_dir: var("XDG_RUNTIME_DIR"),
            uid,
        }
    }
}

/// Podman's socket as root.
pub const PODMAN_ROOT_SOCKET: &str = "/run/podman/podman.sock";

/// Chooses the Podman service of `--engine podman`: `CONTAINER_HOST`, else the socket Podman's
/// `podman.socket` unit listens on for this user (as root `/run/podman/podman.sock`, else
/// `$XDG_RUNTIME_DIR/podman/podman.sock`).
///
/// # Errors
/// `CONTAINER_HOST` names a scheme aci cannot reach.
pub fn resolve_podman(env: &PodmanEnv) -> Result<Resolved, String> {
    if let Some(host) = &env.host {
        return Ok(Resolved {
            endpoint: parse_host(host, None, "CONTAINER_HOST")?,
            source: "CONTAINER_HOST".to_owned(),
        });
    }
    let (path, source) = if env.root {
        (PODMAN_ROOT_SOCKET.to_owned(), "Podman's socket as root")
    } else {
        let dir = env
            .runtime_dir
            .clone()
            .unwrap_or_else(|| format!("/run/user/{}", env.uid));
        (
            format!("{}/podman/podman.sock", dir.trim_end_matches('/')),
            "Podman's rootless socket",
        )
    };
    Ok(Resolved {
        endpoint: Endpoint::Unix { path },
        source: source.to_owned(),
    })
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

/// `unix:///path`, `tcp://host:port` (or `https://`, always TLS) or `ssh://[user@]host[:port]`
/// as an endpoint.
fn parse_host(host: &str, tls: Option<TlsFiles>, what: &str) -> Result<Endpoint, String> {
    let reachable = "aci reaches a daemon at unix:///PATH, tcp://HOST:PORT (TLS with \
                     DOCKER_TLS_VERIFY=1) or ssh://[USER@]HOST[:PORT]";
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
        Some(("ssh", rest)) => {
            return parse_ssh(rest)
                .map(Endpoint::Ssh)
                .map_err(|why| format!("{what}={host}: {why}"));
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

/// What follows `ssh://`, read as the Docker CLI reads it: a user without a password, a host,
/// a port, and a path that is the remote daemon's socket; no query or fragment. A path of only
/// `/` is no path.
fn parse_ssh(rest: &str) -> Result<SshTarget, String> {
    let form = "an ssh URL is ssh://[USER@]HOST[:PORT][/SOCKET]";
    if let Some((_, query)) = rest.split_once('?') {
        return Err(format!("{form}, without a query (?{query})"));
    }
    if let Some((_, fragment)) = rest.split_once('#') {
        return Err(format!("{form}, without a fragment (#{fragment})"));
    }
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let (user, host_port) = match authority.rsplit_once('@') {
        Some((user, host_port)) => (Some(user), host_port),
        None => (None, authority),
    };
    if user.is_some_and(|user| user.contains(':')) {
        return Err(
            "an ssh URL carries no password: ssh logs in with a key (its agent, or the \
             IdentityFile of ~/.ssh/config), and aci runs it with BatchMode=yes"
                .to_owned(),
        );
    }
    if user == Some("") {
        return Err(format!("{form}: the user before @ is empty"));
    }
    let (name, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let Some((name, after)) = bracketed.split_once(']') else {
            return Err(format!("{form}: the [ of an IPv6 address is not closed"));
        };
        match after {
            "" => (name, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (name, Some(port)),
                None => return Err(format!("{form}: {after} follows the address")),
            },
        }
    } else {
        match host_port.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host_port, None),
        }
    };
    if name.is_empty() {
        return Err(format!("{form}: the host is empty"));
    }
    let port = match port {
        None | Some("") => None,
        Some(port) => Some(
            port.parse::<u16>()
                .map_err(|_| format!("{form}: the port `{port}` is not a number of 0 to 65535"))?,
        ),
    };
    let socket = Some(path)
        .filter(|path| !path.is_empty() && *path != "/")
        .map(str::to_owned);
    Ok(SshTarget {
        user: user.map(str::to_owned),
        host: name.to_owned(),
        port,
        socket,
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
