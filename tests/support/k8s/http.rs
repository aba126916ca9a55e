//! The stand-in's HTTP/1.1 side: keep-alive connections, authentication, injected 429s, and
//! routing to pods, watches, policies and exec upgrades.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{State, exec, kubelet};

/// One request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// The path and query as sent.
    pub target: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn query(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn query_all(&self, key: &str) -> Vec<String> {
        self.query
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// Decodes `application/x-www-form-urlencoded` text.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A Kubernetes `Status` object for a refusal.
pub(crate) fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        429 => "Too Many Requests",
        _ => "Status",
    }
}

/// Writes a JSON answer on a keep-alive connection.
pub(crate) async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    code: u16,
    body: &Value,
    extra: &[(&str, String)],
) -> std::io::Result<()> {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        reason_phrase(code),
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}

/// Accepts connections until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, state: Arc<State>, acceptor: Option<TlsAcceptor>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    if let Ok(tls) = acceptor.accept(stream).await {
                        connection(tls, state, true).await;
                    }
                }
                None => connection(stream, state, false).await,
            }
        });
    }
}

async fn read_request<S: AsyncRead + Unpin>(reader: &mut BufReader<S>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect();
    Some(Request {
        method,
        path: decode(path),
        target,
        query,
        headers,
        body,
    })
}

async fn connection<S>(stream: S, state: Arc<State>, tls: bool)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut reader = BufReader::new(stream);
    loop {
        let Some(request) = read_request(&mut reader).await else {
            return;
        };
        let authorised =
            tls || request.header("authorization") == Some(&format!("Bearer {}", state.token));
        if !authorised {
            state.record(&request.method, &request.target, 401);
            let body = status(401, "Unauthorized", "Unauthorized");
            if respond(reader.get_mut(), 401, &body, &[]).await.is_err() {
                return;
            }
            continue;
        }
        if let Some(retry_after) = state.throttled(&request.method, &request.target) {
            state.record(&request.method, &request.target, 429);
            let body = status(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            );
            let extra = [("Retry-After", retry_after.to_string())];
            if respond(reader.get_mut(), 429, &body, &extra).await.is_err() {
                return;
            }
            continue;
        }
        if state.echoes_credential(&request.method, &request.target) {
            state.record(&request.method, &request.target, 403);
            let message = format!(
                "admission webhook \"audit.example.com\" denied the request: {} {} sent \
                 Authorization: {} (token {})",
                request.method,
                request.path,
                request.header("authorization").unwrap_or_default(),
                state.token
            );
            let body = status(403, "Forbidden", &message);
            if respond(reader.get_mut(), 403, &body, &[]).await.is_err() {
                return;
            }
            continue;
        }
        let upgrade = request
            .header("upgrade")
            .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        if upgrade && request.path.ends_with("/exec") {
            // The client sends nothing more until it reads the 101: the buffer is empty.
            exec::serve(reader.into_inner(), request, state).await;
            return;
        }
        if request.method == "GET"
            && request
                .query("watch")
                .is_some_and(|w| w == "true" || w == "1")
        {
            state.record(&request.method, &request.target, 200);
            watch(reader.into_inner(), &request, &state).await;
            return;
        }
        let (code, body) = route(&state, &request).await;
        state.record(&request.method, &request.target, code);
        if respond(reader.get_mut(), code, &body, &[]).await.is_err() {
            return;
        }
    }
}

async fn route(state: &Arc<State>, request: &Request) -> (u16, Value) {
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let answer = match segments.as_slice() {
        ["api", "v1", "namespaces", ns, "pods", rest @ ..] => {
            route_pods(state, request, ns, rest).await
        }
        [
            "apis",
            "networking.k8s.io",
            "v1",
            "namespaces",
            ns,
            "networkpolicies",
            rest @ ..,
        ] => route_policies(state, request, ns, rest),
        _ => None,
    };
    answer.unwrap_or_else(|| {
        let message = format!(
            "the server could not find the requested resource ({} {})",
            request.method, request.path
        );
        (404, status(404, "NotFound", &message))
    })
}

/// `…/namespaces/NS/pods[/NAME]`.
async fn route_pods(
    state: &Arc<State>,
    request: &Request,
    ns: &str,
    rest: &[&str],
) -> Option<(u16, Value)> {
    Some(match (request.method.as_str(), rest) {
        ("POST", []) => kubelet::create_pod(state, ns, &request.body).await,
        ("GET", []) => {
            let pods = state.pods.lock().unwrap();
            let items: Vec<Value> = pods
                .iter()
                .filter(|((n, _), pod)| n == ns && selected(request, &pod.object))
                .map(|(_, pod)| pod.object.clone())
                .collect();
            (200, list("PodList", "v1", state, items))
        }
        ("GET", [name]) => match state.pod(ns, name) {
            Some(pod) => (200, pod.object),
            None => not_found("pods", name),
        },
        ("DELETE", [name]) => kubelet::delete_pod(state, ns, name).await,
        _ => return None,
    })
}

/// `…/namespaces/NS/networkpolicies[/NAME]`.
fn route_policies(
    state: &State,
    request: &Request,
    ns: &str,
    rest: &[&str],
) -> Option<(u16, Value)> {
    Some(match (request.method.as_str(), rest) {
        ("POST", []) => create_policy(state, ns, &request.body),
        ("GET", []) => {
            let policies = state.policies.lock().unwrap();
            let items: Vec<Value> = policies
                .iter()
                .filter(|((n, _), p)| n == ns && selected(request, p))
                .map(|(_, p)| p.clone())
                .collect();
            (
                200,
                list("NetworkPolicyList", "networking.k8s.io/v1", state, items),
            )
        }
        ("DELETE", [name]) => {
            let key = (ns.to_owned(), (*name).to_owned());
            match state.policies.lock().unwrap().remove(&key) {
                Some(policy) => (200, policy),
                None => not_found("networkpolicies.networking.k8s.io", name),
            }
        }
        _ => return None,
    })
}

fn not_found(kind: &str, name: &str) -> (u16, Value) {
    (
        404,
        status(404, "NotFound", &format!("{kind} \"{name}\" not found")),
    )
}

fn list(kind: &str, api_version: &str, state: &State, items: Vec<Value>) -> Value {
    json!({
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"resourceVersion": state.version.load(std::sync::atomic::Ordering::SeqCst).to_string()},
        "items": items,
    })
}

fn create_policy(state: &State, ns: &str, body: &[u8]) -> (u16, Value) {
    let Ok(mut policy) = serde_json::from_slice::<Value>(body) else {
        return (400, status(400, "BadRequest", "the body is not JSON"));
    };
    let Some(name) = policy["metadata"]["name"].as_str().map(str::to_owned) else {
        return (422, status(422, "Invalid", "metadata.name: Required value"));
    };
    let mut policies = state.policies.lock().unwrap();
    let key = (ns.to_owned(), name.clone());
    if policies.contains_key(&key) {
        let message = format!("networkpolicies.networking.k8s.io \"{name}\" already exists");
        return (409, status(409, "AlreadyExists", &message));
    }
    policy["metadata"]["namespace"] = Value::String(ns.to_owned());
    policy["metadata"]["resourceVersion"] = Value::String(state.next_version());
    policy["metadata"]["creationTimestamp"] = Value::String(kubelet::now_rfc3339());
    policies.insert(key, policy.clone());
    (201, policy)
}

/// Whether an object passes the request's `labelSelector` and `fieldSelector`.
pub(crate) fn selected(request: &Request, object: &Value) -> bool {
    let labels = &object["metadata"]["labels"];
    let label_ok = request.query("labelSelector").is_none_or(|selector| {
        selector.split(',').filter(|s| !s.is_empty()).all(|term| {
            if let Some((key, value)) = term.split_once("!=") {
                labels[key].as_str() != Some(value)
            } else if let Some((key, value)) = term.split_once('=') {
                let value = value.trim_start_matches('=');
                labels[key].as_str() == Some(value)
            } else if let Some(key) = term.strip_prefix('!') {
                labels[key].is_null()
            } else {
                !labels[term].is_null()
            }
        })
    });
    let field_ok = request.query("fieldSelector").is_none_or(|selector| {
        selector.split(',').all(|term| match term.split_once('=') {
            Some(("metadata.name", name)) => object["metadata"]["name"].as_str() == Some(name),
            Some(("metadata.namespace", ns)) => {
                object["metadata"]["namespace"].as_str() == Some(ns)
            }
            _ => false,
        })
    });
    label_ok && field_ok
}

/// A pod watch: the current state of the selected pods newer than `resourceVersion`, then
/// every change, as chunked JSON lines, until `timeoutSeconds`.
async fn watch<S: AsyncWrite + Unpin>(mut stream: S, request: &Request, state: &State) {
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "pods"] = segments.as_slice() else {
        let body = status(404, "NotFound", "only pods are watched here");
        let _ = respond(
            &mut stream,
            404,
            &body,
            &[("Connection", "close".to_owned())],
        )
        .await;
        return;
    };
    let mut events = state.events.subscribe();
    let since: u64 = request
        .query("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let secs: u64 = request
        .query("timeoutSeconds")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1800);
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let current: Vec<Value> = {
        let pods = state.pods.lock().unwrap();
        pods.iter()
            .filter(|((n, _), pod)| n == ns && selected(request, &pod.object))
            .map(|(_, pod)| pod.object.clone())
            .filter(|object| {
                object["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|v| v > since)
            })
            .collect()
    };
    for object in current {
        let kind = if since == 0 { "ADDED" } else { "MODIFIED" };
        if write_event(&mut stream, kind, &object).await.is_err() {
            return;
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) if event.namespace == *ns && selected(request, &event.object) => {
                    if write_event(&mut stream, event.kind, &event.object).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
            () = tokio::time::sleep_until(deadline) => break,
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let _ = stream.flush().await;
}

async fn write_event<S: AsyncWrite + Unpin>(
    stream: &mut S,
    kind: &str,
    object: &Value,
) -> std::io::Result<()> {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    stream
        .write_all(format!("{:x}\r\n{line}\r\n", line.len()).as_bytes())
        .await?;
    stream.flush().await
}
