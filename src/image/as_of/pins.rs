//! The pins of a layer: the versions its spec names exactly (`name==version` in `packages`,
//! the requirements file and `pip_packages`), which the as-of index lists whatever their
//! upload time. A layer resolved as of a date gets what was current then, plus what the spec
//! explicitly asked for: SWE-bench's specs pin versions released after many of their records
//! (pytest 4.4's `atomicwrites==1.4.1`, of 2022, for records of 2019), and a cutoff that hid
//! them would fail every such build at "No matching distribution found".
//!
//! The rest of the layer still obeys the cutoff: raising the cutoff to the newest pin instead
//! would let three years of every other package in with one pin.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::normalize;
use crate::image::spec_env::PACKAGE_NAME;

/// Exact pins by normalized project name: the versions (as written) each may have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins(BTreeMap<String, BTreeSet<String>>);

impl Pins {
    /// The exact pins among `requirements` (requirement lines or a requirements file's text,
    /// one requirement a line): `name==version` and `name===version`, with extras, an
    /// environment marker or a comment after it; ranges, wildcards (`==1.2.*`), URLs and
    /// options are no exact pins.
    pub fn of<'a>(requirements: impl IntoIterator<Item = &'a str>) -> Self {
        let mut pins = Self::default();
        for text in requirements {
            for line in text.lines() {
                if let Some((name, version)) = exact_pin(line) {
                    pins.0.entry(normalize(name)).or_default().insert(version);
                }
            }
        }
        pins
    }

    /// Whether there is no pin.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The versions pinned for `project` (any spelling of its name).
    pub fn versions(&self, project: &str) -> Vec<String> {
        self.0
            .get(&normalize(project))
            .map(|versions| versions.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// A short key of the pins (12 hex digits of SHA-256 over their sorted `name==version`
    /// lines), for the index's URL.
    pub fn key(&self) -> String {
        let mut hasher = Sha256::new();
        for (name, versions) in &self.0 {
            for version in versions {
                hasher.update(format!("{name}=={version}\n").as_bytes());
            }
        }
        data_encoding::HEXLOWER.encode(&hasher.finalize())[..12].to_owned()
    }
}

/// `name==version` of one requirement line, when it is an exact pin.
fn exact_pin(line: &str) -> Option<(&str, String)> {
    let line = match line.find(" #") {
        Some(comment) => &line[..comment],
        None => line,
    };
    let line = line.split(';').next()?.trim();
    let line = line.trim_matches(|c| c == '"' || c == '\'').trim();
    let name = PACKAGE_NAME.find(line)?.as_str();
    let mut rest = line[name.len()..].trim_start();
    if let Some(extras) = rest.strip_prefix('[') {
        rest = extras.split_once(']')?.1.trim_start();
    }
    let version = rest
        .strip_prefix("===")
        .or_else(|| rest.strip_prefix("=="))?
        .trim();
    let exact = !version.is_empty()
        && !version.ends_with(".*")
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+!_-".contains(c));
    exact.then(|| (name, version.to_owned()))
}

/// The version in the name of a distribution file of `project`: a wheel or egg
/// (`name-version-…`), or an sdist (`name-version.tar.gz`, `.zip`, …, whose name may hold
/// `-` itself). `None` for any other file.
pub fn file_version(project: &str, filename: &str) -> Option<String> {
    if let Some(stem) = filename
        .strip_suffix(".whl")
        .or_else(|| filename.strip_suffix(".egg"))
    {
        return stem.split('-').nth(1).map(str::to_owned);
    }
    let stem = [".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".zip", ".tar"]
        .iter()
        .find_map(|suffix| filename.strip_suffix(suffix))?;
    let project = normalize(project);
    stem.match_indices('-')
        .find(|(at, _)| normalize(&stem[..*at]) == project)
        .map(|(at, _)| stem[at + 1..].to_owned())
}

/// Whether `version` is what `==pinned` matches, as PEP 440 compares releases: case and a
/// leading `v` aside, and trailing zero components of the release padded (`1.3` is `1.3.0`).
pub fn same_version(pinned: &str, version: &str) -> bool {
    canonical(pinned) == canonical(version)
}

fn canonical(version: &str) -> String {
    let version = version.trim().to_ascii_lowercase();
    let version = version.strip_prefix('v').unwrap_or(&version);
    let split = version
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(version.len());
    let (release, rest) = version.split_at(split);
    let mut parts: Vec<&str> = release.split('.').collect();
    while parts.len() > 1
        && parts
            .last()
            .is_some_and(|part| part.trim_start_matches('0').is_empty())
    {
        parts.pop();
    }
    let parts: Vec<String> = parts
        .iter()
        .map(|part| match part.trim_start_matches('0') {
            "" => "0".to_owned(),
            digits => digits.to_owned(),
        })
        .collect();
    format!("{}{rest}", parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_pins_are_read_from_requirement_lines_and_files() {
        let pins = Pins::of([
            "atomicwrites==1.4.1",
            "Attrs == 23.1.0",
            "requests[socks]==2.31.0 ; python_version >= \"3.7\"",
            "numpy==1.19.*",
            "six>=1.0",
            "mpmath===1.3.0",
            "'pytest==7.3.1'",
            "# a comment\n-r other.txt\nzope.interface==5.4.0  # pinned\npkg @ https://x/y.whl\n",
        ]);
        let all: Vec<(String, Vec<String>)> = [
            "atomicwrites",
            "attrs",
            "requests",
            "numpy",
            "six",
            "mpmath",
            "pytest",
            "zope-interface",
            "pkg",
        ]
        .iter()
        .map(|name| ((*name).to_owned(), pins.versions(name)))
        .filter(|(_, versions)| !versions.is_empty())
        .collect();
        let expect = |name: &str, version: &str| (name.to_owned(), vec![version.to_owned()]);
        assert_eq!(
            all,
            [
                expect("atomicwrites", "1.4.1"),
                expect("attrs", "23.1.0"),
                expect("requests", "2.31.0"),
                expect("mpmath", "1.3.0"),
                expect("pytest", "7.3.1"),
                expect("zope-interface", "5.4.0"),
            ]
        );
        assert_eq!(pins.versions("Zope_Interface"), ["5.4.0"]);
        assert!(Pins::of(["six>=1.0", ""]).is_empty());
        // The key depends on the pins only, not on how they were spelt or ordered.
        assert_eq!(
            Pins::of(["a==1", "B==2"]).key(),
            Pins::of(["b == 2\na==1"]).key()
        );
        assert_ne!(Pins::of(["a==1"]).key(), Pins::of(["a==2"]).key());
        assert_eq!(Pins::of(["a==1"]).key().len(), 12);
    }

    #[test]
    fn the_version_of_a_file_is_read_from_its_name() {
        let version = |project, file| file_version(project, file);
        assert_eq!(
            version("atomicwrites", "atomicwrites-1.4.1.tar.gz").as_deref(),
            Some("1.4.1")
        );
        assert_eq!(
            version("atomicwrites", "atomicwrites-1.4.0-py2.py3-none-any.whl").as_deref(),
            Some("1.4.0")
        );
        assert_eq!(
            version("python-dateutil", "python-dateutil-2.8.0.tar.gz").as_deref(),
            Some("2.8.0")
        );
        assert_eq!(
            version("zope.interface", "zope.interface-5.4.0.zip").as_deref(),
            Some("5.4.0")
        );
        assert_eq!(
            version("setuptools", "setuptools-0.6c11-py2.7.egg").as_deref(),
            Some("0.6c11")
        );
        assert_eq!(version("six", "six-1.0.win32.exe"), None);
        assert_eq!(version("six", "other-1.0.tar.gz"), None);
    }

    #[test]
    fn versions_compare_as_pep_440_releases() {
        assert!(same_version("1.3", "1.3.0"));
        assert!(same_version("1.3.0", "1.3"));
        assert!(same_version("1.4.1", "v1.4.1"));
        assert!(same_version("2.0RC1", "2.0rc1"));
        assert!(same_version("01.2", "1.2"));
        assert!(!same_version("1.4.1", "1.4.10"));
        assert!(!same_version("1.4", "1.4.1"));
        assert!(!same_version("1.0", "1.0.post1"));
    }
}
