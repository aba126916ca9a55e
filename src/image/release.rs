//! The Debian releases aci builds its images from, and the Python each one carries: bullseye
//! has 3.9, bookworm 3.11, trixie 3.13. The base and language images of a release are tagged
//! `aci-base:<release>`, `aci-python:<release>` and `aci-rust:<release>`; bookworm is the
//! default. An environment whose spec asks for a Python version picks the release that has it
//! ([`DebianRelease::for_python`]), or none: no other Python is ever substituted.

use std::fmt;
use std::str::FromStr;

/// A Debian release aci can build images from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DebianRelease {
    /// Debian 11: Python 3.9.
    Bullseye,
    /// Debian 12 (the default): Python 3.11.
    Bookworm,
    /// Debian 13: Python 3.13.
    Trixie,
}

/// A release name aci does not build images from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown Debian release {0:?} (known: bullseye, bookworm, trixie)")]
pub struct UnknownRelease(pub String);

impl DebianRelease {
    /// Every release, oldest first.
    pub const ALL: [Self; 3] = [Self::Bullseye, Self::Bookworm, Self::Trixie];

    /// The release aci builds when none is named.
    pub const DEFAULT: Self = Self::Bookworm;

    /// The release's code name, which is also its image tag.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bullseye => "bullseye",
            Self::Bookworm => "bookworm",
            Self::Trixie => "trixie",
        }
    }

    /// The `major.minor` version of the release's `python3` package.
    pub fn python(self) -> &'static str {
        match self {
            Self::Bullseye => "3.9",
            Self::Bookworm => "3.11",
            Self::Trixie => "3.13",
        }
    }

    /// The release whose Python is `version` (`3.9`, or `3.9.18`: only major and minor count).
    pub fn for_python(version: &str) -> Option<Self> {
        let mut parts = version.trim().split('.');
        let major_minor = format!("{}.{}", parts.next()?, parts.next()?);
        Self::ALL
            .into_iter()
            .find(|release| release.python() == major_minor)
    }

    /// The Python versions some release has, for messages: `3.9, 3.11, 3.13`.
    pub fn pythons() -> String {
        Self::ALL
            .iter()
            .map(|release| format!("{} ({})", release.python(), release.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `aci-base:<release>`.
    pub fn base_tag(self) -> String {
        format!("aci-base:{}", self.name())
    }

    /// `aci-<language>:<release>`.
    pub fn language_tag(self, language: &str) -> String {
        format!("aci-{language}:{}", self.name())
    }

    /// Why the release has no image for `language`, when it has none. Bullseye's rustc (1.48)
    /// predates the 2021 edition, which the Rust tasks need.
    pub fn lacks_language(self, language: &str) -> Option<&'static str> {
        match (self, language) {
            (Self::Bullseye, "rust") => Some("bullseye's rustc 1.48 predates the 2021 edition"),
            _ => None,
        }
    }
}

impl fmt::Display for DebianRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DebianRelease {
    type Err = UnknownRelease;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|release| release.name() == text)
            .ok_or_else(|| UnknownRelease(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_python_version_maps_to_the_one_release_that_has_it_and_no_other() {
        assert_eq!(
            DebianRelease::for_python("3.9"),
            Some(DebianRelease::Bullseye)
        );
        assert_eq!(
            DebianRelease::for_python("3.11"),
            Some(DebianRelease::Bookworm)
        );
        assert_eq!(
            DebianRelease::for_python("3.13.5"),
            Some(DebianRelease::Trixie)
        );
        for missing in [
            "3.5", "3.6", "3.7", "3.8", "3.10", "3.12", "3.1", "3", "", "three",
        ] {
            assert_eq!(DebianRelease::for_python(missing), None, "{missing:?}");
        }
    }

    #[test]
    fn releases_are_named_and_tagged_by_their_code_names() {
        let parsed: Vec<DebianRelease> = ["bullseye", "bookworm", "trixie"]
            .iter()
            .map(|name| name.parse().unwrap())
            .collect();
        assert_eq!(parsed, DebianRelease::ALL);
        assert_eq!(
            "buster".parse::<DebianRelease>().unwrap_err().to_string(),
            "unknown Debian release \"buster\" (known: bullseye, bookworm, trixie)"
        );
        assert_eq!(DebianRelease::Trixie.base_tag(), "aci-base:trixie");
        assert_eq!(
            DebianRelease::Bullseye.language_tag("python"),
            "aci-python:bullseye"
        );
        assert_eq!(DebianRelease::DEFAULT.base_tag(), super::super::BASE_TAG);
        assert_eq!(
            DebianRelease::pythons(),
            "3.9 (bullseye), 3.11 (bookworm), 3.13 (trixie)"
        );
    }
}
