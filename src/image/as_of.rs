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

pub mod pins;
pub mod server;

use serde::Deserialize;

use crate::config::{Cutoff, ResolveAsOf};
use crate::text::html::escape;

/// The label with the instant a layer's packages were resolved as of (`today`: unfiltered).
pub const LABEL_RESOLVED_AS_OF: &str = "aci.resolved_as_of";
/// The label with the distributions the layer's venv holds (`pip freeze --all` but its
/// comments, one line each, separated by `, `).
pub const LABEL_LOCK: &str = "aci.lock";

/// A layer's cutoff and why it is that instant (for its label).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsOf {
    /// The instant.
    pub cutoff: Cutoff,
    /// What it is: `env.resolve_as_of`, the record's date it is, or the release of Python.
    pub why: String,
}

/// The cutoff of a layer, from `env.resolve_as_of` and the record's date for that layer
/// with what that date is (the environment setup commit's committer date, or `created_at`).
/// With `created_at` the cutoff is never before the release of the layer's Python (`python`,
/// `3.11`): what PyPI had before it was not made for it (setuptools 41.0.1, of May 2019, does
/// not even import on Python 3.9). `None`: no filter, with `today`, or with `created_at` for
/// a record without a readable date.
pub fn layer_cutoff(
    setting: ResolveAsOf,
    record_date: Option<(&str, &str)>,
    python: &str,
) -> Option<AsOf> {
    match setting {
        ResolveAsOf::Today => None,
        ResolveAsOf::At(cutoff) => Some(AsOf {
            cutoff,
            why: "env.resolve_as_of".to_owned(),
        }),
        ResolveAsOf::CreatedAt => {
            let (text, what) = record_date?;
            let date = Cutoff::parse(text).ok()?;
            Some(match python_released(python) {
                Some(released) if released > date => AsOf {
                    cutoff: released,
                    why: format!("the release of Python {python}, after {what} {date}"),
                },
                _ => AsOf {
                    cutoff: date,
                    why: what.to_owned(),
                },
            })
        }
    }
}

/// What to try when a pip step of a layer resolved as of today fails for a record that is
/// older than today: its setup.py may need the setuptools (or the packages) of its time.
/// `None` for other settings, for a record without `created_at`, and for a failure of another
/// step.
pub fn today_hint(setting: ResolveAsOf, created_at: &str, message: &str) -> Option<String> {
    let pip_failed = ["pip install", "setup.py", "pip_packages"]
        .iter()
        .any(|step| message.contains(step));
    let day = created_at
        .get(..10)
        .filter(|day| Cutoff::parse(day).is_ok())?;
    (setting == ResolveAsOf::Today && pip_failed).then(|| {
        format!(
            "the record is of {day} and pip resolved its packages as of today; its setup may need \
             the setuptools and packages of its time: --set env.resolve_as_of=created_at \
             (docs/swebench.md, \"Environments resolved as of a date\")"
        )
    })
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

/// The label `aci.resolved_as_of` of a layer: `today`, or its cutoff (RFC 3339 in UTC) and
/// why, then the pins the index listed although they are newer (`past_cutoff`, from
/// [`Filtered::past_cutoff`]), each with its upload time: `2019-05-15T13:51:41Z (the
/// record's created_at); pinned past it: atomicwrites==1.4.1 (uploaded 2022-07-08T…Z)`.
pub fn resolved_text(as_of: Option<&AsOf>, past_cutoff: &[(String, Cutoff)]) -> String {
    let Some(as_of) = as_of else {
        return "today".to_owned();
    };
    let mut text = format!("{} ({})", as_of.cutoff, as_of.why);
    if !past_cutoff.is_empty() {
        let pins: Vec<String> = past_cutoff
            .iter()
            .map(|(pin, uploaded)| format!("{pin} (uploaded {uploaded})"))
            .collect();
        text.push_str("; pinned past it: ");
        text.push_str(&pins.join(", "));
    }
    text
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

/// A project's page as the index serves it, and the pinned files it lists although they were
/// uploaded after the cutoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filtered {
    /// The PEP 503 HTML page.
    pub html: String,
    /// `name==version` of each pinned version listed past the cutoff, with its newest upload
    /// time among the files listed.
    pub past_cutoff: Vec<(String, Cutoff)>,
}

/// The PEP 503 page of `project` with the files of `json` (PyPI's PEP 691 page) uploaded at
/// or before `cutoff` (their `upload-time`, to the second), and the files of the versions in
/// `pinned` (the layer's exact pins of this project, [`pins::Pins`]) whenever they were
/// uploaded; a file without an upload time is left out, since nothing says when it was made. Each link keeps PyPI's absolute URL, gets a `#sha256=` fragment
/// when PyPI gives that hash, and carries `data-requires-python` and `data-yanked` (the
/// reason, or empty) as PyPI's own page does, HTML-escaped.
///
/// # Errors
/// The JSON is not a PEP 691 project page: the parser's message.
pub fn filter_page(
    project: &str,
    json: &[u8],
    cutoff: Cutoff,
    pinned: &[String],
) -> Result<Filtered, String> {
    let page: Page = serde_json::from_slice(json)
        .map_err(|e| format!("PyPI's page of {project} is not PEP 691 JSON: {e}"))?;
    let name = escape(project);
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" \
         content=\"1.0\">\n<title>Links for {name}</title>\n</head>\n<body>\n<h1>Links for \
         {name}</h1>\n"
    );
    let mut past_cutoff: std::collections::BTreeMap<String, Cutoff> = Default::default();
    for file in page.files {
        let uploaded = file
            .upload_time
            .as_deref()
            .and_then(|time| Cutoff::parse(time).ok());
        let pin = pins::file_version(project, &file.filename)
            .and_then(|version| pinned.iter().find(|pin| pins::same_version(pin, &version)));
        match (uploaded, pin) {
            (Some(time), _) if time <= cutoff => {}
            (Some(time), Some(pin)) => {
                let newest = past_cutoff
                    .entry(format!("{project}=={pin}"))
                    .or_insert(time);
                *newest = (*newest).max(time);
            }
            _ => continue,
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
    Ok(Filtered {
        html,
        past_cutoff: past_cutoff.into_iter().collect(),
    })
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
