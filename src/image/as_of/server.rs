//! The edge of the as-of index: an HTTP/1.1 server on the host's loopback that answers
//! `GET /<cutoff>/simple/<project>/` (the cutoff in seconds since the epoch) with
//! [`super::filter_page`] of PyPI's PEP 691 page of the project, fetched once per process.
//! It runs on a thread of its own for the rest of the process, so every build of a run (and
//! every test of a test binary) shares it and its cache. Builds reach it through the host's
//! network (the build API's `networkmode: host`), so it listens on 127.0.0.1 only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::config::Cutoff;
use crate::http::{Request, parse_head, read_head};
use crate::image::build_log::BuildOptions;
use crate::image::spec_env::INDEX_ARG;

/// Where the pages come from.
const UPSTREAM: &str = "https://pypi.org/simple";
/// The most a request head may hold.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long PyPI may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// PyPI's answer for one project: its JSON page, `None` when PyPI has no such project, or why
/// it could not be had.
type Upstream = Result<Option<Arc<Vec<u8>>>, String>;

/// The running index: its address and what it fetched and failed to fetch.
pub struct AsOfIndex {
    address: SocketAddr,
    state: Arc<State>,
}

struct State {
    client: reqwest::Client,
    pages: Mutex<HashMap<String, Arc<tokio::sync::OnceCell<Upstream>>>>,
    failures: Mutex<Vec<String>>,
    fetched: std::sync::atomic::AtomicUsize,
}

static INDEX: OnceLock<Result<AsOfIndex, String>> = OnceLock::new();

/// The process's index, started at the first call.
///
/// # Errors
/// It could not be started (no loopback port, no HTTP client): one line saying so.
pub fn index() -> Result<&'static AsOfIndex, String> {
    INDEX
        .get_or_init(start)
        .as_ref()
        .map_err(std::clone::Clone::clone)
}

impl AsOfIndex {
    /// The `PIP_INDEX_URL` of `cutoff`.
    pub fn url(&self, cutoff: Cutoff) -> String {
        format!("http://{}/{}/simple/", self.address, cutoff.0)
    }

    /// The upstream failures so far, one line each (`<project>: <reason>`), for the message
    /// of a build that failed.
    pub fn failures(&self) -> Vec<String> {
        self.state
            .failures
            .lock()
            .map(|failures| failures.clone())
            .unwrap_or_default()
    }

    /// How many project pages were fetched from PyPI so far (the cache's misses).
    pub fn fetched(&self) -> usize {
        self.state
            .fetched
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The build options of a layer resolved as of `cutoff`: `PIP_INDEX_URL` (the build argument
/// [`crate::image::spec_env`]'s Dockerfiles declare) at this process's index, on the host's
/// network. With no cutoff: the defaults (PyPI itself, the bridge network).
///
/// # Errors
/// The index cannot be started.
pub fn build_options(cutoff: Option<Cutoff>) -> Result<BuildOptions, String> {
    let Some(cutoff) = cutoff else {
        return Ok(BuildOptions::default());
    };
    let index = index()?;
    Ok(BuildOptions {
        args: HashMap::from([(INDEX_ARG.to_owned(), index.url(cutoff))]),
        host_network: true,
    })
}

/// A failed build's message, with what the index could not fetch from PyPI (when it is a
/// layer resolved as of a cutoff and something could not be fetched).
pub fn with_failures(message: String, cutoff: Option<Cutoff>) -> String {
    let failures = match (cutoff, INDEX.get()) {
        (Some(_), Some(Ok(index))) => index.failures(),
        _ => Vec::new(),
    };
    if failures.is_empty() {
        return message;
    }
    format!(
        "{message}\nthe as-of package index could not get from PyPI: {}",
        failures.join("; ")
    )
}

fn start() -> Result<AsOfIndex, String> {
    crate::tls::install_provider();
    let client = reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot start the as-of package index: {e}"))?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
        .map_err(|e| format!("cannot start the as-of package index on 127.0.0.1: {e}"))?;
    let address = listener
        .local_addr()
        .map_err(|e| format!("cannot start the as-of package index: {e}"))?;
    let state = Arc::new(State {
        client,
        pages: Mutex::new(HashMap::new()),
        failures: Mutex::new(Vec::new()),
        fetched: std::sync::atomic::AtomicUsize::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the as-of package index: {e}"))?;
    let shared = state.clone();
    std::thread::Builder::new()
        .name("aci-as-of-index".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else {
                    return;
                };
                while let Ok((stream, _)) = listener.accept().await {
                    let state = shared.clone();
                    tokio::spawn(async move { serve(stream, &state).await });
                }
            });
        })
        .map_err(|e| format!("cannot start the as-of package index: {e}"))?;
    Ok(AsOfIndex { address, state })
}

/// Answers one request, then closes the connection.
async fn serve(mut stream: TcpStream, state: &State) {
    let request = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream, MAX_HEAD))
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|head| parse_head(&head))
        .filter(|request| request.method == "GET");
    let Some(Request { target: path, .. }) = request else {
        let _ = answer(&mut stream, 400, "text/plain", b"bad request\n").await;
        return;
    };
    let (status, content_type, body) = match route(&path) {
        Some((cutoff, project)) => page(state, cutoff, &project).await,
        None => (404, "text/plain", b"not found\n".to_vec()),
    };
    let _ = answer(&mut stream, status, content_type, &body).await;
}

/// `/<seconds>/simple/<project>/` as its cutoff and normalized project.
fn route(path: &str) -> Option<(Cutoff, String)> {
    let path = path.split(['?', '#']).next()?;
    let mut parts = path.trim_matches('/').split('/');
    let cutoff = Cutoff(parts.next()?.parse().ok()?);
    (parts.next()? == "simple").then_some(())?;
    let project = super::normalize(parts.next()?);
    (parts.next().is_none() && !project.is_empty()).then_some((cutoff, project))
}

async fn page(state: &State, cutoff: Cutoff, project: &str) -> (u16, &'static str, Vec<u8>) {
    let cell = match state.pages.lock() {
        Ok(mut pages) => pages.entry(project.to_owned()).or_default().clone(),
        Err(_) => Arc::new(tokio::sync::OnceCell::new()),
    };
    let upstream = cell.get_or_init(|| fetch(state, project)).await;
    let failed = |reason: String| {
        if let Ok(mut failures) = state.failures.lock() {
            let line = format!("{project}: {reason}");
            if !failures.contains(&line) {
                failures.push(line);
            }
        }
        (502, "text/plain", format!("{reason}\n").into_bytes())
    };
    match upstream {
        Ok(None) => (404, "text/plain", b"no such project on PyPI\n".to_vec()),
        Ok(Some(json)) => match super::filter_page(project, json, cutoff) {
            Ok(html) => (200, "text/html; charset=utf-8", html.into_bytes()),
            Err(reason) => failed(reason),
        },
        Err(reason) => failed(reason.clone()),
    }
}

async fn fetch(state: &State, project: &str) -> Upstream {
    state
        .fetched
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let url = format!("{UPSTREAM}/{project}/");
    let response = state
        .client
        .get(&url)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .map_err(|e| format!("cannot fetch {url}: {e}"))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("cannot read {url}: {e}"))?;
    Ok(Some(Arc::new(body.to_vec())))
}

async fn answer(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Bad Gateway",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_the_cutoff_and_the_normalized_project() {
        assert_eq!(
            route("/1557928301/simple/Setuptools_SCM/"),
            Some((Cutoff(1_557_928_301), "setuptools-scm".to_owned()))
        );
        assert_eq!(
            route("/-5/simple/six"),
            Some((Cutoff(-5), "six".to_owned()))
        );
        assert_eq!(route("/1/simple/"), None);
        assert_eq!(route("/x/simple/six/"), None);
        assert_eq!(route("/1/json/six/"), None);
        assert_eq!(route("/1/simple/six/extra/"), None);
    }
}
