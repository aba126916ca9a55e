//! The HTTP side of the Kubernetes engine, and the only file that sends anything to an API
//! server: requests with the kubeconfig's credentials and retries of busy answers
//! ([`status::retry_delay`]), watches read as JSON lines, and exec as a WebSocket over the
//! upgraded connection, with the stream pumps of a held session and the collection of a one-shot
//! exec ([`channel`] does the framing).

use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use reqwest::header::{
    AUTHORIZATION, CONNECTION, RETRY_AFTER, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use reqwest::{Client, Url};
pub(super) use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::channel::{self, Incoming, OFFERED_PROTOCOLS, StreamProtocol};
use super::kubeconfig::{ClusterConfig, Credential, PluginToken};
use super::manifest::CONTAINER;
use super::status::{self, MAX_ATTEMPTS, backoff};
use crate::sandbox::shell::CappedBuffer;
use crate::sandbox::transport::{Channel, Frame};
use crate::sandbox::{ExecOutput, OutputLimit, SandboxError};

/// How long an ordinary API request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the WebSocket handshake of an exec may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often an idle exec stream is pinged, so that load balancers keep it open.
const PING_EVERY: Duration = Duration::from_secs(30);
/// Stdin payloads are sent in messages of at most this size.
const STDIN_CHUNK: usize = 256 * 1024;
/// The most bytes of an API answer (or of one watch event) that are read: 64 MiB, thousands
/// of pod objects. A server sending more is refused, not buffered.
pub(super) const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// How long to wait before attempt `attempt + 1` when `response` is a busy answer that may be
/// retried (its status and `Retry-After` header, by [`status::retry_delay`]); `None` otherwise.
fn busy_delay(
    response: &reqwest::Response,
    attempt: u32,
    conflict_retries: bool,
) -> Option<Duration> {
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok());
    status::retry_delay(
        response.status().as_u16(),
        retry_after,
        attempt,
        conflict_retries,
    )
}

/// An error of the Kubernetes engine, scrubbed of every credential the process holds
/// ([`crate::secret`]): servers quote requests (and their tokens) back in their messages.
pub(super) fn api_error(message: impl Into<String>) -> SandboxError {
    SandboxError::Kubernetes(crate::secret::scrub(&message.into()))
}

/// Remembers the credentials of `config` with the process's others, so that every error of
/// the engine is scrubbed of them: the bearer token, the basic-auth password (and the header
/// value it makes), the client key. A token read from a file or a plugin is remembered when it
/// is read.
fn remember_credentials(config: &ClusterConfig) {
    match &config.credential {
        Credential::Token(token) => crate::secret::remember(token),
        Credential::Basic { username, password } => {
            crate::secret::remember(password);
            let pair = format!("{username}:{password}");
            crate::secret::remember(&data_encoding::BASE64.encode(pair.as_bytes()));
        }
        Credential::None | Credential::TokenFile(_) | Credential::Exec(_) => {}
    }
    if let Some(pem) = &config.identity_pem {
        for key in private_keys(&String::from_utf8_lossy(pem)) {
            crate::secret::remember(key);
        }
    }
}

/// The `-----BEGIN … PRIVATE KEY-----` blocks of a PEM text.
fn private_keys(pem: &str) -> Vec<&str> {
    let mut keys = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find("-----BEGIN") {
        let block = &rest[start..];
        let Some(end) = block.find("-----END") else {
            break;
        };
        let close = block[end..]
            .find('\n')
            .map_or(block.len(), |newline| end + newline);
        let text = &block[..close];
        if text
            .lines()
            .next()
            .is_some_and(|line| line.contains("PRIVATE KEY"))
        {
            keys.push(text);
        }
        rest = &block[close..];
    }
    keys
}

/// The HTTP side: requests with credentials and retries, watches, and exec WebSockets.
pub(super) struct Api {
    http: Client,
    server: String,
    credential: Credential,
    plugin_token: tokio::sync::Mutex<Option<PluginToken>>,
}

/// An open exec connection.
struct ExecSocket {
    socket: WebSocketStream<reqwest::Upgraded>,
    protocol: StreamProtocol,
}

impl Api {
    pub(super) fn new(config: &ClusterConfig) -> Result<Self, SandboxError> {
        remember_credentials(config);
        crate::tls::install_provider();
        let mut builder = Client::builder()
            .http1_only()
            .connect_timeout(Duration::from_secs(15))
            .tcp_keepalive(Duration::from_secs(30))
            .user_agent(concat!("aci/", env!("CARGO_PKG_VERSION")));
        if let Some(ca) = &config.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(ca)
                .map_err(|e| api_error(format!("the cluster's CA certificate is unusable: {e}")))?;
            builder = builder.tls_certs_only(certs);
        }
        if config.insecure {
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        if let Some(identity) = &config.identity_pem {
            let identity = reqwest::Identity::from_pem(identity)
                .map_err(|e| api_error(format!("the client certificate is unusable: {e}")))?;
            builder = builder.identity(identity);
        }
        let http = builder
            .build()
            .map_err(|e| api_error(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Self {
            http,
            server: config.server.clone(),
            credential: config.credential.clone(),
            plugin_token: tokio::sync::Mutex::new(None),
        })
    }

    /// The `Authorization` header value, if any.
    async fn authorization(&self) -> Result<Option<String>, SandboxError> {
        Ok(match &self.credential {
            Credential::None => None,
            Credential::Token(token) => Some(format!("Bearer {token}")),
            Credential::TokenFile(path) => {
                let token = tokio::fs::read_to_string(path).await.map_err(|e| {
                    api_error(format!("cannot read the token {}: {e}", path.display()))
                })?;
                crate::secret::remember(&token);
                Some(format!("Bearer {}", token.trim()))
            }
            Credential::Basic { username, password } => {
                let pair = format!("{username}:{password}");
                Some(format!(
                    "Basic {}",
                    data_encoding::BASE64.encode(pair.as_bytes())
                ))
            }
            Credential::Exec(plugin) => {
                let mut cached = self.plugin_token.lock().await;
                let fresh = cached.as_ref().is_some_and(|t| {
                    t.expires
                        .is_none_or(|at| at > SystemTime::now() + Duration::from_secs(60))
                });
                if !fresh {
                    let token = plugin.token().await.map_err(|e| api_error(e.to_string()))?;
                    crate::secret::remember(&token.token);
                    *cached = Some(token);
                }
                cached.as_ref().map(|t| format!("Bearer {}", t.token))
            }
        })
    }

    /// Forgets a plugin's token after a 401, so the next request gets a new one. Whether there
    /// was one to forget.
    async fn forget_token(&self) -> bool {
        matches!(self.credential, Credential::Exec(_))
            && self.plugin_token.lock().await.take().is_some()
    }

    fn url(&self, path: &str) -> Result<Url, SandboxError> {
        Url::parse(&format!("{}{path}", self.server))
            .map_err(|e| api_error(format!("bad API URL {}{path}: {e}", self.server)))
    }

    /// Sends a request and reads its JSON answer, retrying busy answers and broken
    /// connections. Returns the final status and body (`null` when it was not JSON).
    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        conflict_retries: bool,
    ) -> Result<(StatusCode, Value), SandboxError> {
        let url = self.url(path)?;
        let mut attempt = 0;
        let mut refreshed = false;
        loop {
            attempt += 1;
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .timeout(REQUEST_TIMEOUT);
            if let Some(auth) = self.authorization().await? {
                request = request.header(AUTHORIZATION, auth);
            }
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = match request.send().await {
                Ok(response) => response,
                Err(error) if attempt < MAX_ATTEMPTS && !error.is_builder() => {
                    tokio::time::sleep(backoff(attempt)).await;
                    continue;
                }
                Err(error) => {
                    return Err(api_error(format!("{method} {}: {error}", self.server)));
                }
            };
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED && !refreshed && self.forget_token().await {
                refreshed = true;
                continue;
            }
            if let Some(delay) = busy_delay(&response, attempt, conflict_retries) {
                drop(response);
                tokio::time::sleep(delay).await;
                continue;
            }
            let bytes = read_answer(response)
                .await
                .map_err(|e| api_error(format!("{method} {path}: reading the answer: {e}")))?;
            return Ok((
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            ));
        }
    }

    /// [`Api::send`], with any answer but a 2xx as an error naming the request.
    pub(super) async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        conflict_retries: bool,
    ) -> Result<Value, SandboxError> {
        let (status, value) = self
            .send(method.clone(), path, body, conflict_retries)
            .await?;
        if status.is_success() {
            Ok(value)
        } else {
            Err(refused(&method, path, status, &value))
        }
    }

    /// Sends the GET `request` (with the credentials) of `path` for a stream that stays open,
    /// its answer awaited within `limit`: the response when its status is `opened`; `Ok(None)`
    /// when attempt number `attempt` failed or found the server busy and may be retried (its
    /// wait waited out); the failure (`what: …`, or the server's refusal) when it may not.
    async fn open(
        &self,
        mut request: reqwest::RequestBuilder,
        limit: Duration,
        attempt: u32,
        (what, path): (&str, &str),
        opened: impl Fn(StatusCode) -> bool,
    ) -> Result<Option<reqwest::Response>, SandboxError> {
        if let Some(auth) = self.authorization().await? {
            request = request.header(AUTHORIZATION, auth);
        }
        let response = match tokio::time::timeout(limit, request.send()).await {
            Ok(Ok(response)) => response,
            _ if attempt < MAX_ATTEMPTS => {
                tokio::time::sleep(backoff(attempt)).await;
                return Ok(None);
            }
            Ok(Err(error)) => return Err(api_error(format!("{what}: {error}"))),
            Err(_) => return Err(api_error(format!("{what}: no answer"))),
        };
        let status = response.status();
        if opened(status) {
            return Ok(Some(response));
        }
        if let Some(delay) = busy_delay(&response, attempt, false) {
            tokio::time::sleep(delay).await;
            return Ok(None);
        }
        let value = read_answer(response)
            .await
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(Value::Null);
        Err(refused(&Method::GET, path, status, &value))
    }

    /// Opens a watch: the answer's body is a stream of JSON events, one per line.
    pub(super) async fn watch(&self, path: &str) -> Result<Watch, SandboxError> {
        let url = self.url(path)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let request = self.http.get(url.clone());
            let what = format!("watch {path}");
            let opened = |status: StatusCode| status.is_success();
            let answer = self.open(request, REQUEST_TIMEOUT, attempt, (&what, path), opened);
            if let Some(response) = answer.await? {
                return Ok(Watch {
                    response,
                    buffer: Vec::new(),
                });
            }
        }
    }

    /// Opens an exec of `argv` in `pod`'s task container, as a WebSocket.
    async fn exec(
        &self,
        namespace: &str,
        pod: &str,
        argv: &[String],
        stdin: bool,
    ) -> Result<ExecSocket, SandboxError> {
        let path = format!("/api/v1/namespaces/{namespace}/pods/{pod}/exec");
        let url = self.exec_url(&path, argv, stdin)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let key = generate_key();
            let request = self
                .http
                .get(url.clone())
                .header(CONNECTION, "Upgrade")
                .header(UPGRADE, "websocket")
                .header(SEC_WEBSOCKET_VERSION, "13")
                .header(SEC_WEBSOCKET_KEY, &key)
                .header(SEC_WEBSOCKET_PROTOCOL, OFFERED_PROTOCOLS);
            let what = format!("exec in {pod}");
            let opened = |status: StatusCode| status == StatusCode::SWITCHING_PROTOCOLS;
            let answer = self.open(request, HANDSHAKE_TIMEOUT, attempt, (&what, &path), opened);
            let Some(response) = answer.await? else {
                continue;
            };
            let protocol = accepted_protocol(&response, &key, pod)?;
            let upgraded = tokio::time::timeout(HANDSHAKE_TIMEOUT, response.upgrade())
                .await
                .map_err(|_| api_error(format!("exec in {pod}: the upgrade timed out")))?
                .map_err(|e| api_error(format!("exec in {pod}: {e}")))?;
            let socket = WebSocketStream::from_raw_socket(upgraded, Role::Client, None).await;
            return Ok(ExecSocket { socket, protocol });
        }
    }

    /// The exec URL of `argv` in the task container, its stdin attached when `stdin`.
    fn exec_url(&self, path: &str, argv: &[String], stdin: bool) -> Result<Url, SandboxError> {
        let mut url = self.url(path)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("container", CONTAINER)
                .append_pair("stdin", if stdin { "true" } else { "false" })
                .append_pair("stdout", "true")
                .append_pair("stderr", "true")
                .append_pair("tty", "false");
            for arg in argv {
                query.append_pair("command", arg);
            }
        }
        Ok(url)
    }

    /// Opens a session: bash over one exec stream, stdin kept open.
    pub(super) async fn open_session(
        &self,
        namespace: &str,
        pod: &str,
    ) -> Result<Channel, SandboxError> {
        let argv = ["bash", "--noprofile", "--norc"].map(str::to_owned);
        let ExecSocket { socket, protocol } = self.exec(namespace, pod, &argv, true).await?;
        let (sink, stream) = socket.split();
        let (input, input_end) = tokio::io::duplex(STDIN_CHUNK);
        let (sender, frames) = mpsc::channel(64);
        tokio::spawn(pump_output(stream, sender));
        tokio::spawn(pump_input(input_end, sink, protocol));
        Ok(Channel {
            input: Box::pin(input),
            frames,
        })
    }

    /// Runs `argv` in `pod` with a fresh exec, `stdin` sent first. Its output is capped as a
    /// session's is ([`OutputLimit::default`], the head and tail of each stream around an
    /// elision note), so memory does not grow with what the command prints.
    pub(super) async fn exec_once(
        &self,
        namespace: &str,
        pod: &str,
        argv: &[String],
        stdin: Option<&[u8]>,
    ) -> Result<ExecOutput, SandboxError> {
        let ExecSocket { socket, protocol } =
            self.exec(namespace, pod, argv, stdin.is_some()).await?;
        let (mut sink, mut stream) = socket.split();
        let broken = |e: tokio_tungstenite::tungstenite::Error| {
            api_error(format!("exec in {pod}: the stream broke: {e}"))
        };
        if let Some(data) = stdin {
            for chunk in data.chunks(STDIN_CHUNK) {
                let message = Message::Binary(Bytes::from(channel::stdin_message(chunk)));
                sink.send(message).await.map_err(broken)?;
            }
            if let Some(close) = protocol.close_stdin() {
                sink.send(Message::Binary(Bytes::from(close)))
                    .await
                    .map_err(broken)?;
            }
        }
        let mut stdout = CappedBuffer::new(OutputLimit::default());
        let mut stderr = CappedBuffer::new(OutputLimit::default());
        let mut status = None;
        while let Some(message) = stream.next().await {
            let data = match message {
                Ok(Message::Binary(data)) => data,
                Ok(Message::Close(_)) => break,
                Ok(_) => continue,
                Err(error) if status.is_some() => {
                    // The status came: a connection cut after it loses nothing.
                    let _ = error;
                    break;
                }
                Err(error) => return Err(broken(error)),
            };
            match channel::decode(&data) {
                Incoming::Stdout(bytes) => stdout.push(bytes),
                Incoming::Stderr(bytes) => stderr.push(bytes),
                Incoming::Status(bytes) => status = Some(channel::exit_code(bytes)),
                Incoming::Closed(_) | Incoming::Nothing => {}
            }
        }
        let _ = sink.close().await;
        let ((stdout, stdout_elided), (stderr, stderr_elided)) =
            (stdout.finish(0), stderr.finish(0));
        let mut out = ExecOutput {
            stdout,
            stderr,
            elided_bytes: stdout_elided + stderr_elided,
            ..ExecOutput::default()
        };
        match status {
            Some(Ok(code)) => out.exit_code = Some(code),
            Some(Err(message)) => return Err(api_error(format!("exec in {pod}: {message}"))),
            None => {
                return Err(api_error(format!(
                    "exec in {pod}: the stream ended without the command's status"
                )));
            }
        }
        Ok(out)
    }
}

/// The stream protocol of a `101 Switching Protocols` answer to the exec handshake sent with
/// `key`, once its accept key is checked.
fn accepted_protocol(
    response: &reqwest::Response,
    key: &str,
    pod: &str,
) -> Result<StreamProtocol, SandboxError> {
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    if header(SEC_WEBSOCKET_ACCEPT) != derive_accept_key(key.as_bytes()) {
        return Err(api_error(format!(
            "exec in {pod}: the server's WebSocket accept key is wrong"
        )));
    }
    let chosen = header(SEC_WEBSOCKET_PROTOCOL);
    StreamProtocol::from_header(&chosen).ok_or_else(|| {
        api_error(format!(
            "exec in {pod}: the server chose the stream protocol {chosen:?}; aci speaks \
             {OFFERED_PROTOCOLS}"
        ))
    })
}

/// An open watch: the answer's body, JSON events one per line.
pub(super) struct Watch {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

/// What a watch gave.
pub(super) enum WatchNext {
    /// An event (`{"type": …, "object": …}`).
    Event(Value),
    /// Nothing came before the deadline.
    Quiet,
    /// The watch ended (its timeout, or the server closed it).
    Ended,
}

impl Watch {
    /// The next event, waiting at most until `deadline`.
    pub(super) async fn next(&mut self, deadline: Instant) -> WatchNext {
        loop {
            while let Some(at) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=at).collect();
                if let Ok(event) = serde_json::from_slice::<Value>(&line) {
                    return WatchNext::Event(event);
                }
            }
            // An event longer than any pod object: the watch is ended, and renewed by the
            // caller, rather than the line buffered without bound.
            if self.buffer.len() > MAX_ANSWER_BYTES {
                return WatchNext::Ended;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.response.chunk()).await {
                Err(_) => return WatchNext::Quiet,
                Ok(Ok(Some(chunk))) => self.buffer.extend_from_slice(&chunk),
                Ok(_) => return WatchNext::Ended,
            }
        }
    }
}

/// The body of `response`, read chunk by chunk up to [`MAX_ANSWER_BYTES`]; a longer one is an
/// error (declared so, or found so while it streams).
async fn read_answer(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let too_large = || format!("the answer is larger than {MAX_ANSWER_BYTES} bytes");
    if response
        .content_length()
        .is_some_and(|length| length > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A refused request as an error: the method, the path, the status and the server's message.
pub(super) fn refused(
    method: &Method,
    path: &str,
    status: StatusCode,
    body: &Value,
) -> SandboxError {
    let path = path.split('?').next().unwrap_or(path);
    let message = body["message"].as_str().unwrap_or_default();
    let mut text = format!("{method} {path}: {status}");
    if !message.is_empty() {
        text.push_str(&format!(": {message}"));
    }
    if status == StatusCode::FORBIDDEN {
        text.push_str(
            "\nhint: the service account needs get, list, watch, create and delete on pods, \
             get and create on pods/exec, and create, list and delete on networkpolicies (see \
             docs/kubernetes.md)",
        );
    }
    api_error(text)
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
pub(super) fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Moves the server's stdout and stderr messages into `frames`, until the stream ends.
async fn pump_output(
    mut stream: SplitStream<WebSocketStream<reqwest::Upgraded>>,
    frames: mpsc::Sender<Frame>,
) {
    while let Some(Ok(message)) = stream.next().await {
        let data = match message {
            Message::Binary(data) => data,
            Message::Close(_) => break,
            _ => continue,
        };
        let frame = match channel::decode(&data) {
            Incoming::Stdout(_) => Frame::Stdout(data.slice(1..)),
            Incoming::Stderr(_) => Frame::Stderr(data.slice(1..)),
            _ => continue,
        };
        if frames.send(frame).await.is_err() {
            break;
        }
    }
}

/// Moves what the session writes to stdin into stdin messages, and pings the server while
/// the session is idle. When the session's stdin closes, closes the exec's (v5) or the whole
/// stream (v4).
async fn pump_input(
    mut input: tokio::io::DuplexStream,
    mut sink: SplitSink<WebSocketStream<reqwest::Upgraded>, Message>,
    protocol: StreamProtocol,
) {
    let mut buffer = vec![0u8; STDIN_CHUNK];
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            read = input.read(&mut buffer) => {
                let n = match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let message = Message::Binary(Bytes::from(channel::stdin_message(&buffer[..n])));
                if sink.send(message).await.is_err() {
                    return;
                }
            }
            _ = ping.tick() => {
                if sink.send(Message::Ping(Bytes::new())).await.is_err() {
                    return;
                }
            }
        }
    }
    match protocol.close_stdin() {
        Some(close) => {
            let _ = sink.send(Message::Binary(Bytes::from(close))).await;
        }
        None => {
            let _ = sink.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_key_blocks_of_a_client_identity_are_found_and_its_certificate_left() {
        let pem = "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n\
                   -----BEGIN EC PRIVATE KEY-----\nS0VZLWxpbmUtb25l\n-----END EC PRIVATE KEY-----\n";
        assert_eq!(
            private_keys(pem),
            ["-----BEGIN EC PRIVATE KEY-----\nS0VZLWxpbmUtb25l\n-----END EC PRIVATE KEY-----"]
        );
        assert_eq!(private_keys("no pem here"), Vec::<&str>::new());
    }
}
