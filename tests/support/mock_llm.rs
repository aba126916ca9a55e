//! A local HTTP server that stands in for the OpenAI and Anthropic APIs, plus builders for
//! their response bodies. It records every request so tests can assert on what was sent.
//!
//! HTTP/1.1 with `Content-Length` bodies and one response per connection (`Connection:
//! close`), which is all `reqwest` needs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The request target, e.g. `/v1/messages`.
    pub path: String,
    /// Header names (lowercased) and values, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON; panics if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    delay: Option<Duration>,
    /// Streamed after `body`, with no `content-length`: this many bytes of `chunk`, repeated.
    stream: Option<(Vec<u8>, u64)>,
}

impl MockResponse {
    /// A JSON body with `status`.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::text(status, &body.to_string()).header("content-type", "application/json")
    }

    /// A raw body with `status`.
    pub fn text(status: u16, body: &str) -> Self {
        MockResponse {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            delay: None,
            stream: None,
        }
    }

    /// `head`, then `total` bytes of `chunk` repeated, generated while they are written (the
    /// server holds one chunk, whatever the total) and sent with no `content-length`: the
    /// body ends when the connection closes, as a server streaming an answer may send it.
    pub fn streamed(status: u16, head: &str, chunk: &[u8], total: u64) -> Self {
        let mut response = Self::text(status, head);
        response.stream = Some((chunk.to_vec(), total));
        response
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Waits `delay` before answering (for client timeouts).
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

type Responder = dyn Fn(&RecordedRequest, usize) -> MockResponse + Send + Sync;

/// The server. It stops when dropped.
pub struct MockServer {
    url: String,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    task: JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Answers the n-th request with `script[n]`, and every later one with the last entry.
    pub async fn start(script: Vec<MockResponse>) -> Self {
        assert!(!script.is_empty(), "a script needs at least one response");
        Self::start_with(move |_, index| script[index.min(script.len() - 1)].clone()).await
    }

    /// Answers each request with `responder(request, index)`; `index` counts from 0.
    pub async fn start_with(
        responder: impl Fn(&RecordedRequest, usize) -> MockResponse + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let responder: Arc<Responder> = Arc::new(responder);
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = Arc::clone(&recorded);
                let responder = Arc::clone(&responder);
                tokio::spawn(serve_connection(stream, recorded, responder));
            }
        });
        MockServer {
            url,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// A URL on which nothing listens (connection refused).
pub async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{address}")
}

async fn serve_connection(
    stream: TcpStream,
    recorded: Arc<Mutex<Vec<RecordedRequest>>>,
    responder: Arc<Responder>,
) {
    let mut reader = BufReader::new(stream);
    let Some(request) = read_request(&mut reader).await else {
        return;
    };
    let index = {
        let mut requests = recorded.lock().unwrap();
        requests.push(request.clone());
        requests.len() - 1
    };
    let response = responder(&request, index);
    if let Some(delay) = response.delay {
        tokio::time::sleep(delay).await;
    }
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nconnection: close\r\n",
        response.status,
        reason(response.status),
    );
    if response.stream.is_none() {
        head.push_str(&format!("content-length: {}\r\n", response.body.len()));
    }
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = reader.into_inner();
    // The client may have given up (timeouts); write errors are expected then.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&response.body).await;
    if let Some((chunk, total)) = &response.stream {
        let mut sent = 0;
        while sent < *total {
            let take = chunk
                .len()
                .min(usize::try_from(total - sent).unwrap_or(usize::MAX));
            // The client hangs up once it has read enough.
            if stream.write_all(&chunk[..take]).await.is_err() {
                return;
            }
            sent += take as u64;
        }
    }
    let _ = stream.shutdown().await;
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<RecordedRequest> {
    let mut line = String::new();
    reader.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
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
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

// ---- OpenAI Chat Completions bodies ----

/// A completion whose message has `content` and `tool_calls` (`(id, name, arguments)`).
pub fn openai_completion(
    content: Option<&str>,
    tool_calls: &[(&str, &str, &str)],
    usage: (u64, u64, u64),
) -> Value {
    let (prompt_tokens, completion_tokens, cached_tokens) = usage;
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = tool_calls
            .iter()
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function",
                       "function": {"name": name, "arguments": arguments}})
            })
            .collect();
    }
    let finish_reason = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens}
        }
    })
}

/// An OpenAI error body.
pub fn openai_error(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

// ---- Anthropic Messages bodies ----

/// A message with `content` blocks and usage `(input, output, cache_read, cache_write)`.
pub fn anthropic_message(content: Vec<Value>, usage: (u64, u64, u64, u64)) -> Value {
    let (input, output, cache_read, cache_write) = usage;
    let stop_reason = if content.iter().any(|block| block["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    json!({
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": input,
            "output_tokens": output,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write
        }
    })
}

/// A `text` block.
pub fn anthropic_text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A `tool_use` block.
pub fn anthropic_tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// An Anthropic error body.
pub fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
