//! The edge of the as-of index: an HTTP/1.1 server on the host's loopback that answers
//! `GET /<cutoff>/simple/<project>/` (the cutoff in seconds since the epoch) and
//! `GET /<cutoff>/<pins>/simple/<project>/` (`<pins>`: the key of a layer's exact pins,
//! registered by [`AsOfIndex::url`]) with [`super::filter_page`] of PyPI's PEP 691 page of
//! the project, fetched once per process.
//! It runs on a thread of its own for the rest of the process, so every build of a run (and
//! every test of a test binary) shares it and its cache. Builds reach it through the host's
//! network (the build API's `networkmode: host`), so it listens on 127.0.0.1 only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::pins::Pins;
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
    /// The pin sets of the layers, by key.
    pins: Mutex<HashMap<String, Arc<Pins>>>,
    /// The pins listed past a cutoff, by (cutoff, pin set key): `name==version` and its
    /// newest upload time.
    past_cutoff: Mutex<HashMap<(Cutoff, String), std::collections::BTreeMap<String, Cutoff>>>,
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
    /// The `PIP_INDEX_URL` of `cutoff`, listing the versions of `pins` too, whenever they
    /// were uploaded.
    pub fn url(&self, cutoff: Cutoff, pins: &Pins) -> String {
        if pins.is_empty() {
            return format!("http://{}/{}/simple/", self.address, cutoff.0);
        }
        let key = pins.key();
        if let Ok(mut sets) = self.state.pins.lock() {
            sets.entry(key.clone())
                .or_insert_with(|| Arc::new(pins.clone()));
        }
        format!("http://{}/{}/{key}/simple/", self.address, cutoff.0)
    }

    /// The pins of `pins` that the index listed past `cutoff` so far, sorted, each with its
    /// newest upload time.
    pub fn past_cutoff(&self, cutoff: Cutoff, pins: &Pins) -> Vec<(String, Cutoff)> {
        if pins.is_empty() {
            return Vec::new();
        }
        self.state
            .past_cutoff
            .lock()
            .ok()
            .and_then(|past| {
                past.get(&(cutoff, pins.key())).map(|pins| {
                    pins.iter()
                        .map(|(pin, time)| (pin.clone(), *time))
                        .collect()
                })
            })
            .unwrap_or_default()
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

/// The build options of a layer resolved as of `cutoff` with the exact pins `pins`:
/// `PIP_INDEX_URL` (the build argument [`crate::image::spec_env`]'s Dockerfiles declare) at
/// this process's index, on the host's network. With no cutoff: the defaults (PyPI itself,
/// the bridge network).
///
/// # Errors
/// The index cannot be started.
pub fn build_options(cutoff: Option<Cutoff>, pins: &Pins) -> Result<BuildOptions, String> {
    let Some(cutoff) = cutoff else {
        return Ok(BuildOptions::default());
    };
    let index = index()?;
    Ok(BuildOptions {
        args: HashMap::from([(INDEX_ARG.to_owned(), index.url(cutoff, pins))]),
        host_network: true,
    })
}

/// The pins a layer's build got past its cutoff ([`AsOfIndex::past_cutoff`]); none when the
/// layer has no cutoff or the index never started.
pub fn past_cutoff(cutoff: Option<Cutoff>, pins: &Pins) -> Vec<(String, Cutoff)> {
    match (cutoff, INDEX.get()) {
        (Some(cutoff), Some(Ok(index))) => index.past_cutoff(cutoff, pins),
        _ => Vec::new(),
    }
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
        pins: Mutex::new(HashMap::new()),
        past_cutoff: Mutex::new(HashMap::new()),
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
        Some(route) => page(state, &route).await,
        None => (404, "text/plain", b"not found\n".to_vec()),
    };
    let _ = answer(&mut stream, status, content_type, &body).await;
}

/// What a request asks for: a project's page as of a cutoff, with a pin set's versions.
#[derive(Debug, PartialEq, Eq)]
struct Route {
    cutoff: Cutoff,
    pins: Option<String>,
    project: String,
}

/// `/<seconds>/simple/<project>/` or `/<seconds>/<pins>/simple/<project>/` as its cutoff,
/// pin set key and normalized project.
fn route(path: &str) -> Option<Route> {
    let path = path.split(['?', '#']).next()?;
    let mut parts = path.trim_matches('/').split('/');
    let cutoff = Cutoff(parts.next()?.parse().ok()?);
    let pins = match parts.next()? {
        "simple" => None,
        key if !key.is_empty() && key.bytes().all(|b| b.is_ascii_hexdigit()) => {
            (parts.next()? == "simple").then_some(())?;
            Some(key.to_owned())
        }
        _ => return None,
    };
    let project = super::normalize(parts.next()?);
    (parts.next().is_none() && !project.is_empty()).then_some(Route {
        cutoff,
        pins,
        project,
    })
}

async fn page(state: &State, route: &Route) -> (u16, &'static str, Vec<u8>) {
    let Route {
        cutoff,
        pins,
        project,
    } = route;
    let pinned = match pins {
        None => Vec::new(),
        Some(key) => {
            let set = state
                .pins
                .lock()
                .ok()
                .and_then(|sets| sets.get(key).cloned());
            match set {
                Some(set) => set.versions(project),
                None => return (404, "text/plain", b"no such pin set\n".to_vec()),
            }
        }
    };
    let cell = match state.pages.lock() {
        Ok(mut pages) => pages.entry(project.clone()).or_default().clone(),
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
        Ok(Some(json)) => match super::filter_page(project, json, *cutoff, &pinned) {
            Ok(filtered) => {
                if let (Some(key), false) = (pins, filtered.past_cutoff.is_empty())
                    && let Ok(mut past) = state.past_cutoff.lock()
                {
                    let seen = past.entry((*cutoff, key.clone())).or_default();
                    for (pin, uploaded) in filtered.past_cutoff {
                        seen.insert(pin, uploaded);
                    }
                }
                (200, "text/html; charset=utf-8", filtered.html.into_bytes())
            }
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
    fn the_path_names_the_cutoff_the_pin_set_and_the_normalized_project() {
        let at = |cutoff, pins: Option<&str>, project: &str| {
            Some(Route {
                cutoff: Cutoff(cutoff),
                pins: pins.map(str::to_owned),
                project: project.to_owned(),
            })
        };
        assert_eq!(
            route("/1557928301/simple/Setuptools_SCM/"),
            at(1_557_928_301, None, "setuptools-scm")
        );
        assert_eq!(route("/-5/simple/six"), at(-5, None, "six"));
        assert_eq!(
            route("/7/0a1b2c3d4e5f/simple/atomicwrites/"),
            at(7, Some("0a1b2c3d4e5f"), "atomicwrites")
        );
        assert_eq!(route("/1/simple/"), None);
        assert_eq!(route("/x/simple/six/"), None);
        assert_eq!(route("/1/json/six/"), None);
        assert_eq!(route("/1/abc/json/six/"), None);
        assert_eq!(route("/1/simple/six/extra/"), None);
    }
}
