//! The HTTP edge of `aci inspect`: a small HTTP/1.1 server on tokio for a local viewer. GET
//! only, one request per connection, pages rendered from the [`Site`] (a request path is never
//! opened as a file, except under `/raw/`, where it must resolve inside the directory), a
//! Content-Security-Policy on every answer, and, when listening on a loopback address, only
//! `Host` headers that name one (so a web page elsewhere cannot read the trajectories through
//! DNS rebinding). Raw files and full texts are streamed a piece at a time ([`Body::Stream`]),
//! so answering them takes no more memory for a file of gigabytes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::http::read_head;
pub use crate::http::{Request, parse_head};

use super::html::content_security_policy;
use super::site::{FullText, Mode, Site};

/// The most a request head may hold.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The pieces a streamed body is sent in.
const STREAM_CHUNK: usize = 64 * 1024;

/// What an answer carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// These bytes.
    Bytes(Vec<u8>),
    /// A text or file read while it is sent (its end is the end of the connection).
    Stream(FullText),
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Body,
    /// Headers besides the common ones.
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: Body::Bytes(body.into().into_bytes()),
            headers: Vec::new(),
        }
    }

    /// A text or file streamed as plain text, as a sandboxed document.
    fn stream(text: FullText) -> Self {
        Response {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: Body::Stream(text),
            // A second policy adds to the first: the text is a sandboxed document.
            headers: vec![("Content-Security-Policy", "sandbox".to_owned())],
        }
    }

    fn reason(&self) -> &'static str {
        match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            431 => "Request Header Fields Too Large",
            _ => "Internal Server Error",
        }
    }

    /// The status line and headers, with those every answer carries (a streamed body has no
    /// `Content-Length`: it ends with the connection).
    pub fn head(&self) -> Vec<u8> {
        let length = match &self.body {
            Body::Bytes(bytes) => format!("Content-Length: {}\r\n", bytes.len()),
            Body::Stream(_) => String::new(),
        };
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\n{length}\
             Content-Security-Policy: {}; frame-ancestors 'none'\r\nX-Content-Type-Options: nosniff\r\n\
             X-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\nConnection: close\r\n",
            self.status,
            self.reason(),
            self.content_type,
            content_security_policy(),
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head.into_bytes()
    }

    /// The whole answer as bytes (a streamed body read whole: for tests and small texts).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = self.head();
        match &self.body {
            Body::Bytes(body) => bytes.extend_from_slice(body),
            Body::Stream(text) => {
                let _ = text.write_to(&mut bytes);
            }
        }
        bytes
    }
}

/// Percent-decodes a path; `None` for a bad escape or bytes that are not UTF-8.
pub fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = path.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The decoded path of a request target when it is safe to route: origin form, no `.` or `..`
/// segment, no backslash or NUL, no empty segment but a trailing one.
pub fn clean_path(target: &str) -> Option<String> {
    let path = target.split(['?', '#']).next()?;
    let rest = path.strip_prefix('/')?;
    let decoded = percent_decode(rest)?;
    if decoded.contains(['\\', '\0']) || decoded.starts_with('/') {
        return None;
    }
    let segments: Vec<&str> = decoded.split('/').collect();
    let last = segments.len() - 1;
    let bad = segments
        .iter()
        .enumerate()
        .any(|(i, s)| *s == "." || *s == ".." || (s.is_empty() && i != last));
    (!bad).then_some(decoded)
}

/// Whether a `Host` header names a loopback host (any port).
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().map(|v6| format!("[{v6}]"))
    } else {
        host.split(':').next().map(str::to_owned)
    };
    matches!(
        name.as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("127.0.0.1" | "localhost" | "[::1]")
    )
}

/// A raw file under `base` named by `rel` (already cleaned), if it resolves inside `base`
/// after following symbolic links.
pub fn resolve_inside(base: &Path, rel: &str) -> Option<PathBuf> {
    let base = std::fs::canonicalize(base).ok()?;
    let mut path = base.clone();
    for segment in rel.split('/').filter(|s| !s.is_empty()) {
        path.push(segment);
    }
    let resolved = std::fs::canonicalize(&path).ok()?;
    (resolved.starts_with(&base) && resolved.is_file()).then_some(resolved)
}

/// The answer to `request` (blocking: it may read many files).
pub fn respond(site: &Site, request: &Request, check_host: bool) -> Response {
    if request.method != "GET" {
        let mut response = Response::text(405, "only GET is served\n");
        response.headers.push(("Allow", "GET".to_owned()));
        return response;
    }
    if check_host && !request.host.as_deref().is_some_and(is_loopback_host) {
        return Response::text(403, "unexpected Host header\n");
    }
    let Some(path) = clean_path(&request.target) else {
        return Response::text(400, "bad path\n");
    };
    if let Some(page) = path.strip_prefix("_version/") {
        return match site.route(page).and_then(|route| site.version(&route)) {
            Some(version) => Response::text(200, version),
            None => Response::text(404, "no such page\n"),
        };
    }
    for (index, prefix) in ["raw/", "raw-eval/"].into_iter().enumerate() {
        if let Some(rel) = path.strip_prefix(prefix) {
            let file = site
                .raw_bases()
                .get(index)
                .and_then(|base| resolve_inside(base, rel));
            return match file {
                Some(file) => Response::stream(FullText::File(file)),
                None => Response::text(404, "no such file\n"),
            };
        }
    }
    let Some(route) = site.route(&path) else {
        return Response::text(404, "no such page\n");
    };
    if let Some(text) = site.full_text(&route) {
        return Response::stream(text);
    }
    match site.render(&route, Mode::Live) {
        Some(rendered) => Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: Body::Bytes(rendered.html.into_bytes()),
            headers: Vec::new(),
        },
        None => Response::text(404, "no such page\n"),
    }
}

/// Sends a streamed body: read on a blocking thread, a piece at a time, while the pieces
/// before it are written (at most a few pieces are held; a client that goes away stops it).
async fn send_stream(stream: &mut TcpStream, text: FullText) {
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let reader = tokio::task::spawn_blocking(move || {
        let mut out = ChunkSender {
            sender,
            buffer: Vec::with_capacity(STREAM_CHUNK),
        };
        let _ = text.write_to(&mut out);
        let _ = std::io::Write::flush(&mut out);
    });
    while let Some(chunk) = receiver.recv().await {
        if stream.write_all(&chunk).await.is_err() {
            break;
        }
    }
    drop(receiver);
    let _ = reader.await;
}

/// Writes into pieces of [`STREAM_CHUNK`] bytes sent to the connection's task.
struct ChunkSender {
    sender: tokio::sync::mpsc::Sender<Vec<u8>>,
    buffer: Vec<u8>,
}

impl std::io::Write for ChunkSender {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= STREAM_CHUNK {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(STREAM_CHUNK));
        self.sender
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client left"))
    }
}

async fn handle(mut stream: TcpStream, site: Arc<Site>, check_host: bool) {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream, MAX_HEAD)).await {
        Ok(Ok(head)) => head,
        Ok(Err(status)) => {
            let _ = stream
                .write_all(&Response::text(status, "bad request\n").to_bytes())
                .await;
            return;
        }
        Err(_) => {
            let _ = stream
                .write_all(&Response::text(408, "request timeout\n").to_bytes())
                .await;
            return;
        }
    };
    let response = match parse_head(&head) {
        Some(request) => tokio::task::spawn_blocking(move || respond(&site, &request, check_host))
            .await
            .unwrap_or_else(|_| Response::text(500, "the page could not be rendered\n")),
        None => Response::text(400, "bad request\n"),
    };
    match response.body {
        Body::Bytes(_) => {
            let _ = stream.write_all(&response.to_bytes()).await;
        }
        Body::Stream(ref text) => {
            if stream.write_all(&response.head()).await.is_ok() {
                send_stream(&mut stream, text.clone()).await;
            }
        }
    }
    let _ = stream.shutdown().await;
}

/// Serves `site` on `listener` until the task is dropped. The `Host` check is on when the
/// listener's address is a loopback one.
///
/// # Errors
///
/// Only when the listener itself fails.
pub async fn serve(site: Arc<Site>, listener: TcpListener) -> std::io::Result<()> {
    let address: SocketAddr = listener.local_addr()?;
    let check_host = address.ip().is_loopback();
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(handle(stream, Arc::clone(&site), check_host));
            }
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_gives_method_target_and_host() {
        let request =
            parse_head(b"GET /i/x.html?q=1 HTTP/1.1\r\nUser-Agent: t\r\nhost: 127.0.0.1:8000")
                .unwrap();
        assert_eq!(
            request,
            Request {
                method: "GET".to_owned(),
                target: "/i/x.html?q=1".to_owned(),
                host: Some("127.0.0.1:8000".to_owned())
            }
        );
        assert_eq!(parse_head(b"GET /\r\n"), None);
        assert_eq!(parse_head(b"GET / SPDY/3"), None);
        assert_eq!(parse_head(&[0xff, 0xfe]), None);
    }

    #[test]
    fn paths_that_could_leave_the_site_are_refused() {
        assert_eq!(clean_path("/").as_deref(), Some(""));
        assert_eq!(
            clean_path("/i/a~2Fb.html?x#y").as_deref(),
            Some("i/a~2Fb.html")
        );
        assert_eq!(
            clean_path("/raw/a%20b/c.traj").as_deref(),
            Some("raw/a b/c.traj")
        );
        assert_eq!(clean_path("/c/x/r1/").as_deref(), Some("c/x/r1/"));
        for bad in [
            "/raw/../etc/passwd",
            "/raw/%2e%2e/etc/passwd",
            "/raw/..%2Fetc",
            "/raw/./x",
            "//etc/passwd",
            "/%2Fetc/passwd",
            "/raw/a%5C..%5Cb",
            "/raw/a%00b",
            "/raw//x",
            "http://evil/raw/x",
            "*",
            "/%zz",
            "/%ff",
        ] {
            assert_eq!(clean_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_loopback_host_names_pass_the_host_check() {
        for good in [
            "127.0.0.1:8000",
            "localhost:1",
            "LOCALHOST",
            "[::1]:8000",
            "127.0.0.1",
        ] {
            assert!(is_loopback_host(good), "{good}");
        }
        for bad in [
            "evil.example:8000",
            "127.0.0.1.evil.example",
            "[::2]:80",
            "",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn raw_files_resolve_only_inside_their_base_even_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("run");
        std::fs::create_dir_all(base.join("a")).unwrap();
        std::fs::write(base.join("a/x.traj"), "{}").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), base.join("a/link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), base.join("up")).unwrap();
        assert!(resolve_inside(&base, "a/x.traj").is_some());
        assert_eq!(resolve_inside(&base, "a/link"), None);
        assert_eq!(resolve_inside(&base, "up/secret"), None);
        assert_eq!(resolve_inside(&base, "a"), None, "a directory");
        assert_eq!(resolve_inside(&base, "a/missing"), None);
    }

    #[test]
    fn every_answer_carries_the_policy_and_closes() {
        let bytes = Response::text(404, "no\n").to_bytes();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(text.contains("\r\nContent-Length: 3\r\n"));
        assert!(
            text.contains("\r\nContent-Security-Policy: default-src 'none'; script-src 'sha256-")
        );
        assert!(text.contains("frame-ancestors 'none'\r\n"));
        assert!(text.contains("\r\nX-Content-Type-Options: nosniff\r\n"));
        assert!(text.ends_with("Connection: close\r\n\r\nno\n"));
    }
}
