//! Environments resolved as of a date (`env.resolve_as_of`): while aci builds an environment
//! from a SWE-bench spec, pip reads a package index on the host that lists only the files PyPI
//! had at the layer's cutoff. This module is the pure part: which cutoff a layer gets, and the
//! filter that turns PyPI's PEP 691 JSON page of a project into the PEP 503 HTML page of the
//! files uploaded by then, which every pip reads (bullseye's 20.3.4 included). The server and
//! the fetch from PyPI are the edge ([`server`]).
//!
//! pip is pointed at the index with `PIP_INDEX_URL`, an environment variable of the build's
//! `RUN` steps, so the pip that pip starts for a build isolation environment reads it too: the
//! build requirements (`setuptools>=40.0`) resolve as of the same date. Downloads go straight to
//! PyPI's file host: the page's links stay absolute.

pub mod server;

use serde::Deserialize;

use crate::config::{Cutoff, ResolveAsOf};
use crate::text::html::escape;

/// The label with the instant a layer's packages were resolved as of (`today`: unfiltered).
pub const LABEL_RESOLVED_AS_OF: &str = "aci.resolved_as_of";
/// The label with the distributions the layer's venv holds (`pip freeze --all` but its
/// comments, one line each, separated by `, `).
pub const LABEL_LOCK: &str = "aci.lock";

/// The cutoff of a layer, from `env.resolve_as_of` and the record's date for that layer
/// (the environment setup commit's committer date, or `created_at`). With `created_at` the
/// cutoff is never before the release of the layer's Python (`python`, `3.11`): what PyPI
/// had before it was not made for it (setuptools 41.0.1, of May 2019, does not even import
/// on Python 3.9). `None`: no filter, with `today`, or with `created_at` for a record without
/// a readable date.
pub fn layer_cutoff(
    setting: ResolveAsOf,
    record_date: Option<&str>,
    python: &str,
) -> Option<Cutoff> {
    match setting {
        ResolveAsOf::Today => None,
        ResolveAsOf::At(cutoff) => Some(cutoff),
        ResolveAsOf::CreatedAt => {
            let date = record_date.and_then(|date| Cutoff::parse(date).ok())?;
            Some(python_released(python).map_or(date, |released| date.max(released)))
        }
    }
}

/// The day CPython `X.Y`.0 was released (00:00 UTC), for the versions SWE-bench's specs name.
pub fn python_released(python: &str) -> Option<Cutoff> {
    let date = match python {
        "3.5" => "2015-09-13",
        "3.6" => "2016-12-23",
        "3.7" => "2018-06-27",
        "3.8" => "2019-10-14",
        "3.9" => "2020-10-05",
        "3.10" => "2021-10-04",
        "3.11" => "2022-10-24",
        "3.12" => "2023-10-02",
        "3.13" => "2024-10-07",
        "3.14" => "2025-10-07",
        _ => return None,
    };
    Cutoff::parse(&format!("{date}T00:00:00Z")).ok()
}

/// How a cutoff is shown in labels and hashes: RFC 3339 in UTC, or `today`.
pub fn cutoff_text(cutoff: Option<Cutoff>) -> String {
    cutoff.map_or_else(|| "today".to_owned(), |cutoff| cutoff.to_string())
}

/// PEP 503's normalized project name: lower case, each run of `-`, `_`, `.` one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if "-_.".contains(c) {
            separator = true;
        } else {
            if separator && !out.is_empty() {
                out.push('-');
            }
            separator = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    files: Vec<File>,
}

#[derive(Deserialize)]
struct File {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
    #[serde(rename = "requires-python", default)]
    requires_python: Option<String>,
    #[serde(default)]
    yanked: Yanked,
    #[serde(rename = "upload-time", default)]
    upload_time: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(untagged)]
enum Yanked {
    #[default]
    No,
    Flag(bool),
    Reason(String),
}

/// The PEP 503 page of `project` with the files of `json` (PyPI's PEP 691 page) uploaded at
/// or before `cutoff` (their `upload-time`, to the second); a file without an upload time is
/// left out, since nothing says it is old enough. Each link keeps PyPI's absolute URL, gets
/// a `#sha256=` fragment when PyPI gives that hash, and carries `data-requires-python` and
/// `data-yanked` (the reason, or empty) as PyPI's own page does, HTML-escaped.
///
/// # Errors
/// The JSON is not a PEP 691 project page: the parser's message.
pub fn filter_page(project: &str, json: &[u8], cutoff: Cutoff) -> Result<String, String> {
    let page: Page = serde_json::from_slice(json)
        .map_err(|e| format!("PyPI's page of {project} is not PEP 691 JSON: {e}"))?;
    let name = escape(project);
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" \
         content=\"1.0\">\n<title>Links for {name}</title>\n</head>\n<body>\n<h1>Links for \
         {name}</h1>\n"
    );
    for file in page.files {
        let uploaded = file
            .upload_time
            .as_deref()
            .and_then(|time| Cutoff::parse(time).ok());
        if uploaded.is_none_or(|time| time > cutoff) {
            continue;
        }
        let mut href = file.url.clone();
        if let Some(hash) = file.hashes.get("sha256") {
            href.push_str("#sha256=");
            href.push_str(hash);
        }
        html.push_str(&format!("<a href=\"{}\"", escape(&href)));
        if let Some(requires) = file.requires_python.as_deref().filter(|r| !r.is_empty()) {
            html.push_str(&format!(" data-requires-python=\"{}\"", escape(requires)));
        }
        match &file.yanked {
            Yanked::No | Yanked::Flag(false) => {}
            Yanked::Flag(true) => html.push_str(" data-yanked=\"\""),
            Yanked::Reason(reason) => {
                html.push_str(&format!(" data-yanked=\"{}\"", escape(reason)));
            }
        }
        html.push_str(&format!(">{}</a><br/>\n", escape(&file.filename)));
    }
    html.push_str("</body>\n</html>\n");
    Ok(html)
}

/// The distributions of a `pip freeze --all` as a constraints file for a rebuild: the
/// `name==version` lines, without pip, setuptools and wheel (the venv's come with the image
/// and a build isolation environment's are the date rule's to choose: a pin on them would
/// bind every isolated build to the venv's versions), sorted by normalized name, one a line.
pub fn constraints(freeze: &[String]) -> String {
    let mut lines: Vec<(String, String)> = freeze
        .iter()
        .filter_map(|line| {
            let (name, version) = line.trim().split_once("==")?;
            let key = normalize(name);
            let ok = !name.is_empty()
                && !version.is_empty()
                && !["pip", "setuptools", "wheel"].contains(&key.as_str())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            ok.then(|| (key, format!("{}=={}", name, version.trim())))
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines.into_iter().map(|(_, line)| line + "\n").collect()
}

#[cfg(test)]
mod tests;
