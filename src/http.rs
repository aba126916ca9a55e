//! The head of an HTTP/1 request, for aci's two small servers (`aci inspect`'s viewer, and the
//! as-of package index environment builds install from): read off a connection up to a bound, then its request line
//! and `Host` header.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The parts of a request head the server looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, …
    pub method: String,
    /// The request target as sent.
    pub target: String,
    /// The `Host` header, if any.
    pub host: Option<String>,
}

/// Reads the request line and the `Host` header out of a request head.
pub fn parse_head(head: &[u8]) -> Option<Request> {
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let host = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("host")
            .then(|| value.trim().to_owned())
    });
    Some(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        host,
    })
}

/// The request head, without its blank line, once it has arrived.
///
/// # Errors
/// The status to answer instead: 431 past `max` bytes, 400 when the client closes or the read
/// fails.
pub async fn read_head(stream: &mut TcpStream, max: usize) -> Result<Vec<u8>, u16> {
    let mut head = Vec::with_capacity(1024);
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > max {
            return Err(431);
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return Err(400),
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
}
