//! Where the cluster is and who aci is to it: a kubeconfig (`KUBECONFIG`, a `:`-separated list
//! merged as kubectl merges it, else `~/.kube/config`) or, inside a pod, the service account.
//!
//! Supported: the server and its CA (file or data, or `insecure-skip-tls-verify`), bearer tokens
//! (inline or `tokenFile`, re-read so rotated tokens keep working), client certificates and
//! keys (files or data), basic auth, and `exec` credential plugins (`aws eks get-token`,
//! `gke-gcloud-auth-plugin`, `kubelogin`), whose tokens are cached until they expire. Options
//! aci cannot honour (`tls-server-name`, `proxy-url`, the legacy `auth-provider`) are an error
//! that names them, never silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::hint::Hint;

/// Where the service account's files are mounted in a pod.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Why the cluster's configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// No kubeconfig and not in a pod.
    #[error(
        "no cluster configured: KUBECONFIG is unset, {home} does not exist, and this is not a pod \
         (KUBERNETES_SERVICE_HOST is unset)"
    )]
    Missing {
        /// The default kubeconfig path.
        home: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A kubeconfig is not valid YAML of the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The kubeconfig lacks or misuses something.
    #[error("kubeconfig: {0}")]
    Invalid(String),
    /// No context is chosen: none asked for, and the files set no current-context.
    #[error("kubeconfig: {files} sets no current-context")]
    NoContext {
        /// The kubeconfig files, joined with `:`.
        files: String,
    },
    /// The user authenticates with an auth-provider.
    #[error("kubeconfig: the user uses an auth-provider, which aci does not support")]
    AuthProvider,
    /// A credential plugin failed.
    #[error("the kubeconfig's exec credential plugin `{command}` failed: {message}")]
    Plugin {
        /// The plugin's command.
        command: String,
        /// What went wrong (its stderr).
        message: String,
    },
}

impl Hint for KubeconfigError {
    fn hint(&self) -> Option<String> {
        let hint = match self {
            KubeconfigError::Missing { .. } => {
                "export KUBECONFIG=/path/to/kubeconfig, e.g. the one `kind create cluster` writes"
            }
            KubeconfigError::NoContext { .. } => {
                "choose one with env.k8s.context or `kubectl config use-context NAME`"
            }
            KubeconfigError::AuthProvider => {
                "use the provider's exec plugin (gke-gcloud-auth-plugin, kubelogin, aws eks \
                 get-token)"
            }
            _ => return None,
        };
        Some(hint.to_owned())
    }
}

/// The cluster aci talks to, resolved.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The API server's URL, without a trailing `/`.
    pub server: String,
    /// PEM certificates to trust instead of the system's, when given.
    pub ca_pem: Option<Vec<u8>>,
    /// Do not verify the server's certificate (`insecure-skip-tls-verify`).
    pub insecure: bool,
    /// A client certificate and its key, PEM, concatenated.
    pub identity_pem: Option<Vec<u8>>,
    /// The credential sent with each request.
    pub credential: Credential,
    /// The context's (or service account's) namespace.
    pub namespace: Option<String>,
    /// Where this came from, for messages: `kubeconfig /root/.kube/config, context kind-aci`.
    pub source: String,
}

/// How requests are authorised beyond a client certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// Nothing (client certificates only, or an open server).
    None,
    /// A bearer token.
    Token(String),
    /// A bearer token read from a file at each use.
    TokenFile(PathBuf),
    /// HTTP basic auth.
    Basic {
        /// The user.
        username: String,
        /// The password.
        password: String,
    },
    /// A credential plugin's token.
    Exec(ExecPlugin),
}

/// An `exec` credential plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecPlugin {
    /// The program (a relative path with a `/` is relative to the kubeconfig's directory).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// The `client.authentication.k8s.io` version it speaks.
    pub api_version: String,
}

/// A token from a plugin and when it stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginToken {
    /// The bearer token.
    pub token: String,
    /// `status.expirationTimestamp`, when given.
    pub expires: Option<SystemTime>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Kubeconfig {
    clusters: Vec<NamedCluster>,
    users: Vec<NamedUser>,
    contexts: Vec<NamedContext>,
    #[serde(rename = "current-context")]
    current_context: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NamedCluster {
    name: String,
    #[serde(default)]
    cluster: ClusterEntry,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct ClusterEntry {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: UserEntry,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct UserEntry {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
    username: Option<String>,
    password: Option<String>,
    exec: Option<ExecEntry>,
    auth_provider: Option<serde_yaml::Value>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct ExecEntry {
    command: String,
    args: Vec<String>,
    env: Option<Vec<EnvEntry>>,
    #[serde(rename = "apiVersion")]
    api_version: String,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct EnvEntry {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Debug, Deserialize)]
struct NamedContext {
    name: String,
    #[serde(default)]
    context: ContextEntry,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct ContextEntry {
    cluster: String,
    user: String,
    namespace: Option<String>,
}

/// Finds the cluster: the kubeconfig files of `KUBECONFIG`, else `~/.kube/config` when it
/// exists, else the service account of the pod aci runs in. `context` picks a context other
/// than the current one.
pub fn load(context: Option<&str>) -> Result<ClusterConfig, KubeconfigError> {
    let files: Vec<PathBuf> = match std::env::var_os("KUBECONFIG") {
        Some(list) if !list.is_empty() => std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        _ => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".kube/config");
            if home.is_file() {
                vec![home]
            } else if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
                return in_cluster(Path::new(SERVICE_ACCOUNT_DIR));
            } else {
                return Err(KubeconfigError::Missing {
                    home: home.display().to_string(),
                });
            }
        }
    };
    let mut texts = Vec::new();
    for path in files {
        match std::fs::read_to_string(&path) {
            Ok(text) => texts.push((path, text)),
            // kubectl skips listed files that do not exist.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(KubeconfigError::Read { path, source }),
        }
    }
    if texts.is_empty() {
        return Err(KubeconfigError::Invalid(format!(
            "none of the files KUBECONFIG names exists: {}",
            std::env::var("KUBECONFIG").unwrap_or_default()
        )));
    }
    from_kubeconfigs(&texts, context)
}

/// The service account's view of its own cluster: the mounted files in `dir` and the
/// `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` variables.
pub fn in_cluster(dir: &Path) -> Result<ClusterConfig, KubeconfigError> {
    let host = std::env::var("KUBERNETES_SERVICE_HOST").unwrap_or_default();
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".to_owned());
    service_account(dir, &host, &port)
}

/// The service account in `dir`, its API server at `host:port`.
pub fn service_account(
    dir: &Path,
    host: &str,
    port: &str,
) -> Result<ClusterConfig, KubeconfigError> {
    if host.is_empty() {
        return Err(KubeconfigError::Invalid(
            "KUBERNETES_SERVICE_HOST is empty".to_owned(),
        ));
    }
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| KubeconfigError::Read { path, source })
    };
    let namespace = read("namespace")
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .filter(|ns| !ns.is_empty());
    Ok(ClusterConfig {
        server: format!("https://{host}:{port}"),
        ca_pem: Some(read("ca.crt")?),
        insecure: false,
        identity_pem: None,
        credential: Credential::TokenFile(dir.join("token")),
        namespace,
        source: format!("the pod's service account ({})", dir.display()),
    })
}

fn parse(path: &Path, text: &str) -> Result<Kubeconfig, KubeconfigError> {
    if text.trim().is_empty() {
        return Ok(Kubeconfig::default());
    }
    serde_yaml::from_str(text).map_err(|e| KubeconfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// Resolves the kubeconfig `files` (path and text, in `KUBECONFIG` order) as kubectl merges
/// them: for clusters, users and contexts the first file that names one wins, and so does the
/// first `current-context`. Paths in a file are relative to its directory.
pub fn from_kubeconfigs(
    files: &[(PathBuf, String)],
    context: Option<&str>,
) -> Result<ClusterConfig, KubeconfigError> {
    let mut clusters: BTreeMap<String, (ClusterEntry, PathBuf)> = BTreeMap::new();
    let mut users: BTreeMap<String, (UserEntry, PathBuf)> = BTreeMap::new();
    let mut contexts: BTreeMap<String, ContextEntry> = BTreeMap::new();
    let mut current = None;
    for (path, text) in files {
        let config = parse(path, text)?;
        let dir = path.parent().map(Path::to_owned).unwrap_or_default();
        for named in config.clusters {
            clusters
                .entry(named.name)
                .or_insert((named.cluster, dir.clone()));
        }
        for named in config.users {
            users.entry(named.name).or_insert((named.user, dir.clone()));
        }
        for named in config.contexts {
            contexts.entry(named.name).or_insert(named.context);
        }
        if current.is_none() {
            current = config.current_context.filter(|c| !c.is_empty());
        }
    }
    let shown = files
        .iter()
        .map(|(path, _)| path.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let name =
        context
            .map(str::to_owned)
            .or(current)
            .ok_or_else(|| KubeconfigError::NoContext {
                files: shown.clone(),
            })?;
    let entry = contexts.get(&name).ok_or_else(|| {
        KubeconfigError::Invalid(format!(
            "no context `{name}` in {shown} (it has: {})",
            contexts.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })?;
    let (cluster, cluster_dir) = clusters.get(&entry.cluster).ok_or_else(|| {
        KubeconfigError::Invalid(format!(
            "context `{name}` names the cluster `{}`, which {shown} does not define",
            entry.cluster
        ))
    })?;
    let user = if entry.user.is_empty() {
        None
    } else {
        Some(users.get(&entry.user).ok_or_else(|| {
            KubeconfigError::Invalid(format!(
                "context `{name}` names the user `{}`, which {shown} does not define",
                entry.user
            ))
        })?)
    };
    let mut config = resolve_cluster(cluster, cluster_dir)?;
    if let Some((user, dir)) = user {
        resolve_user(&mut config, user, dir)?;
    }
    config.namespace = entry.namespace.clone().filter(|ns| !ns.is_empty());
    config.source = format!("kubeconfig {shown}, context {name}");
    Ok(config)
}

fn resolve_cluster(cluster: &ClusterEntry, dir: &Path) -> Result<ClusterConfig, KubeconfigError> {
    if cluster.tls_server_name.is_some() {
        return Err(KubeconfigError::Invalid(
            "the cluster sets tls-server-name, which aci does not support".to_owned(),
        ));
    }
    if cluster.proxy_url.is_some() {
        return Err(KubeconfigError::Invalid(
            "the cluster sets proxy-url, which aci does not support".to_owned(),
        ));
    }
    let server = cluster
        .server
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| KubeconfigError::Invalid("the cluster has no server".to_owned()))?;
    let ca_pem = data_or_file(
        cluster.certificate_authority_data.as_deref(),
        cluster.certificate_authority.as_deref(),
        dir,
        "certificate-authority",
    )?;
    Ok(ClusterConfig {
        server: server.trim_end_matches('/').to_owned(),
        ca_pem,
        insecure: cluster.insecure_skip_tls_verify,
        identity_pem: None,
        credential: Credential::None,
        namespace: None,
        source: String::new(),
    })
}

fn resolve_user(
    config: &mut ClusterConfig,
    user: &UserEntry,
    dir: &Path,
) -> Result<(), KubeconfigError> {
    if user.auth_provider.is_some() {
        return Err(KubeconfigError::AuthProvider);
    }
    let cert = data_or_file(
        user.client_certificate_data.as_deref(),
        user.client_certificate.as_deref(),
        dir,
        "client-certificate",
    )?;
    let key = data_or_file(
        user.client_key_data.as_deref(),
        user.client_key.as_deref(),
        dir,
        "client-key",
    )?;
    config.identity_pem = match (cert, key) {
        (Some(mut cert), Some(key)) => {
            if !cert.ends_with(b"\n") {
                cert.push(b'\n');
            }
            cert.extend_from_slice(&key);
            Some(cert)
        }
        (None, None) => None,
        _ => {
            return Err(KubeconfigError::Invalid(
                "the user has a client certificate without its key, or a key without its \
                 certificate"
                    .to_owned(),
            ));
        }
    };
    config.credential = if let Some(token) = user.token.as_deref().filter(|t| !t.is_empty()) {
        Credential::Token(token.to_owned())
    } else if let Some(file) = user.token_file.as_deref().filter(|t| !t.is_empty()) {
        Credential::TokenFile(dir.join(file))
    } else if let Some(exec) = &user.exec {
        let command = if exec.command.contains('/') && !Path::new(&exec.command).is_absolute() {
            dir.join(&exec.command).display().to_string()
        } else {
            exec.command.clone()
        };
        Credential::Exec(ExecPlugin {
            command,
            args: exec.args.clone(),
            env: exec
                .env
                .iter()
                .flatten()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
            api_version: exec.api_version.clone(),
        })
    } else if let Some(username) = &user.username {
        Credential::Basic {
            username: username.clone(),
            password: user.password.clone().unwrap_or_default(),
        }
    } else {
        Credential::None
    };
    Ok(())
}

/// Inline base64 `data`, else the file at `path` (relative to `dir`), else nothing.
fn data_or_file(
    data: Option<&str>,
    path: Option<&str>,
    dir: &Path,
    field: &str,
) -> Result<Option<Vec<u8>>, KubeconfigError> {
    if let Some(data) = data.filter(|d| !d.trim().is_empty()) {
        let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        return data_encoding::BASE64
            .decode(compact.as_bytes())
            .map(Some)
            .map_err(|e| KubeconfigError::Invalid(format!("{field}-data is not base64: {e}")));
    }
    match path.filter(|p| !p.is_empty()) {
        Some(path) => {
            let path = dir.join(path);
            std::fs::read(&path)
                .map(Some)
                .map_err(|source| KubeconfigError::Read { path, source })
        }
        None => Ok(None),
    }
}

impl ExecPlugin {
    /// Runs the plugin and reads the token from its `ExecCredential`.
    pub async fn token(&self) -> Result<PluginToken, KubeconfigError> {
        let failed = |message: String| KubeconfigError::Plugin {
            command: self.command.clone(),
            message,
        };
        let api_version = if self.api_version.is_empty() {
            "client.authentication.k8s.io/v1"
        } else {
            &self.api_version
        };
        let info = serde_json::json!({
            "apiVersion": api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": false},
        });
        let output = tokio::process::Command::new(&self.command)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("KUBERNETES_EXEC_INFO", info.to_string())
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|e| failed(format!("cannot run it: {e}")))?;
        if !output.status.success() {
            return Err(failed(format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        parse_exec_credential(&output.stdout).map_err(failed)
    }
}

/// The token and expiry of an `ExecCredential` a plugin printed.
pub fn parse_exec_credential(stdout: &[u8]) -> Result<PluginToken, String> {
    let value: serde_json::Value = serde_json::from_slice(stdout)
        .map_err(|e| format!("its output is not an ExecCredential ({e})"))?;
    let token = value["status"]["token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("its ExecCredential has no status.token (client certificates from plugins are not supported)")?;
    let expires = value["status"]["expirationTimestamp"]
        .as_str()
        .and_then(parse_rfc3339);
    Ok(PluginToken {
        token: token.to_owned(),
        expires,
    })
}

/// An RFC 3339 timestamp (`2025-01-31T12:00:00Z`, with optional fractions and offset).
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut date_parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (
        date_parts.next()??,
        date_parts.next()??,
        date_parts.next()??,
    );
    let (clock, offset_secs) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        (clock, 0)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (clock, offset) = time.split_at(at);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (hours, minutes) = offset[1..].split_once(':')?;
        let (hours, minutes) = (hours.parse::<i64>().ok()?, minutes.parse::<i64>().ok()?);
        if !(0..=23).contains(&hours) || !(0..=59).contains(&minutes) {
            return None;
        }
        (clock, sign * (hours * 3600 + minutes * 60))
    };
    let clock = clock.split('.').next()?;
    let mut clock_parts = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (
        clock_parts.next()??,
        clock_parts.next()??,
        clock_parts.next()??,
    );
    // RFC 3339's ranges (a four-digit year): what a plugin prints cannot overflow the sums below.
    let in_range = (0..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..=23).contains(&hour)
        && (0..=59).contains(&minute)
        && (0..=60).contains(&second);
    if !in_range {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    let secs = u64::try_from(secs).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n";

    fn b64(text: &str) -> String {
        data_encoding::BASE64.encode(text.as_bytes())
    }

    fn kind_config() -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: kind-aci\nclusters:\n- name: kind-aci\n  \
             cluster:\n    server: https://127.0.0.1:40123/\n    certificate-authority-data: {}\n\
             contexts:\n- name: kind-aci\n  context:\n    cluster: kind-aci\n    user: kind-aci\n\
             - name: other\n  context:\n    cluster: kind-aci\n    user: token-user\n    namespace: swe\n\
             users:\n- name: kind-aci\n  user:\n    client-certificate-data: {}\n    \
             client-key-data: {}\n- name: token-user\n  user:\n    token: abc.def\n",
            b64(CA),
            b64("CERT\n"),
            b64("KEY\n")
        )
    }

    #[test]
    fn a_kind_kubeconfig_gives_the_server_ca_and_client_certificate() {
        let files = [(PathBuf::from("/home/u/.kube/config"), kind_config())];
        let config = from_kubeconfigs(&files, None).unwrap();
        assert_eq!(config.server, "https://127.0.0.1:40123");
        assert_eq!(config.ca_pem.as_deref(), Some(CA.as_bytes()));
        assert_eq!(config.identity_pem.as_deref(), Some(&b"CERT\nKEY\n"[..]));
        assert_eq!(config.credential, Credential::None);
        assert_eq!(config.namespace, None);
        assert!(!config.insecure);
        assert_eq!(
            config.source,
            "kubeconfig /home/u/.kube/config, context kind-aci"
        );
        let other = from_kubeconfigs(&files, Some("other")).unwrap();
        assert_eq!(other.credential, Credential::Token("abc.def".to_owned()));
        assert_eq!(other.identity_pem, None);
        assert_eq!(other.namespace.as_deref(), Some("swe"));
    }

    #[test]
    fn files_merge_first_wins_and_paths_are_relative_to_their_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), CA).unwrap();
        std::fs::write(dir.path().join("token"), "t0k\n").unwrap();
        let first = "current-context: b\nclusters:\n- name: c\n  cluster:\n    server: https://first\n    \
                     certificate-authority: ca.pem\n";
        let second = "current-context: a\nclusters:\n- name: c\n  cluster:\n    server: https://second\n\
                      contexts:\n- name: b\n  context:\n    cluster: c\n    user: u\n\
                      users:\n- name: u\n  user:\n    tokenFile: token\n";
        let files = [
            (dir.path().join("first.yaml"), first.to_owned()),
            (PathBuf::from("/elsewhere/second.yaml"), second.to_owned()),
        ];
        let config = from_kubeconfigs(&files, None).unwrap();
        assert_eq!(config.server, "https://first");
        assert_eq!(config.ca_pem.as_deref(), Some(CA.as_bytes()));
        assert_eq!(
            config.credential,
            Credential::TokenFile(PathBuf::from("/elsewhere/token"))
        );
    }

    #[test]
    fn exec_plugins_and_basic_auth_are_read() {
        let text = "current-context: eks\nclusters:\n- name: c\n  cluster:\n    server: https://eks\n    \
                    insecure-skip-tls-verify: true\ncontexts:\n- name: eks\n  context: {cluster: c, user: u}\n\
                    - name: basic\n  context: {cluster: c, user: b}\n\
                    users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      \
                    command: aws\n      args: [eks, get-token, --cluster-name, swe]\n      \
                    env: [{name: AWS_PROFILE, value: ci}]\n      interactiveMode: Never\n\
                    - name: b\n  user: {username: admin, password: hunter2}\n";
        let files = [(PathBuf::from("/k/config"), text.to_owned())];
        let config = from_kubeconfigs(&files, None).unwrap();
        assert!(config.insecure);
        assert_eq!(
            config.credential,
            Credential::Exec(ExecPlugin {
                command: "aws".to_owned(),
                args: ["eks", "get-token", "--cluster-name", "swe"]
                    .map(str::to_owned)
                    .to_vec(),
                env: vec![("AWS_PROFILE".to_owned(), "ci".to_owned())],
                api_version: "client.authentication.k8s.io/v1beta1".to_owned(),
            })
        );
        let basic = from_kubeconfigs(&files, Some("basic")).unwrap();
        assert_eq!(
            basic.credential,
            Credential::Basic {
                username: "admin".to_owned(),
                password: "hunter2".to_owned()
            }
        );
    }

    #[test]
    fn what_aci_cannot_honour_is_an_error_naming_it() {
        let with = |cluster_extra: &str, user: &str| {
            format!(
                "current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://s\n{cluster_extra}\
                 contexts:\n- name: x\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user:\n{user}"
            )
        };
        let message = |text: String, context: Option<&str>| {
            from_kubeconfigs(&[(PathBuf::from("/k"), text)], context)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            message(with("    tls-server-name: api\n", "    token: t\n"), None),
            "kubeconfig: the cluster sets tls-server-name, which aci does not support"
        );
        assert!(
            message(with("", "    auth-provider: {name: gcp}\n"), None)
                .starts_with("kubeconfig: the user uses an auth-provider")
        );
        assert_eq!(
            message(with("", "    client-key-data: S0VZ\n"), None),
            "kubeconfig: the user has a client certificate without its key, or a key without its \
             certificate"
        );
        assert_eq!(
            message(with("", "    token: t\n"), Some("nope")),
            "kubeconfig: no context `nope` in /k (it has: x)"
        );
        assert!(
            message("clusters: []\n".to_owned(), None)
                .starts_with("kubeconfig: /k sets no current-context")
        );
    }

    #[test]
    fn the_service_account_is_read_from_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.crt"), CA).unwrap();
        std::fs::write(dir.path().join("namespace"), "swe-runs\n").unwrap();
        let config = service_account(dir.path(), "10.0.0.1", "443").unwrap();
        assert_eq!(config.server, "https://10.0.0.1:443");
        assert_eq!(config.ca_pem.as_deref(), Some(CA.as_bytes()));
        assert_eq!(config.namespace.as_deref(), Some("swe-runs"));
        assert_eq!(
            config.credential,
            Credential::TokenFile(dir.path().join("token"))
        );
        let v6 = service_account(dir.path(), "fd00::1", "6443").unwrap();
        assert_eq!(v6.server, "https://[fd00::1]:6443");
    }

    #[test]
    fn plugin_credentials_and_timestamps_are_parsed() {
        let out = br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{},"status":{"expirationTimestamp":"2025-01-31T12:00:30Z","token":"k8s-aws-v1.xyz"}}"#;
        assert_eq!(
            parse_exec_credential(out),
            Ok(PluginToken {
                token: "k8s-aws-v1.xyz".to_owned(),
                expires: Some(UNIX_EPOCH + Duration::from_secs(1_738_324_830)),
            })
        );
        assert!(parse_exec_credential(br#"{"status":{}}"#).is_err());
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(UNIX_EPOCH));
        assert_eq!(
            parse_rfc3339("2000-03-01T01:00:00.123+01:00"),
            Some(UNIX_EPOCH + Duration::from_secs(951_868_800))
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn a_plugin_timestamp_out_of_range_is_no_expiry_never_a_panic() {
        for text in [
            "99999999999999999-01-01T00:00:00Z",
            "9223372036854775807-12-31T23:59:59Z",
            "10000-01-01T00:00:00Z",
            "2025-01-31T12:00:00+9223372036854775807:00",
            "2025-01-31T12:00:00+24:00",
            "2025-01-31T99999999999999999:00:00Z",
            "2025-01-31T12:00:9223372036854775807Z",
            "2025-01-31T12:-1:00Z",
        ] {
            assert_eq!(parse_rfc3339(text), None, "{text}");
        }
        assert_eq!(
            parse_rfc3339("9999-12-31T23:59:60Z"),
            Some(UNIX_EPOCH + Duration::from_secs(253_402_300_800))
        );
    }
}
