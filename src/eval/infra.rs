//! The test infrastructure the grader puts back before the tests run: whatever the model's patch
//! (or a reinstall that ran its code) did to the files that decide how the tests run, the tests
//! run with those files as the base commit and the test patch make them, as the SWE-bench harness
//! already does for the test patch's own files.
//!
//! Which files count ([`class_of`]): every file under a `test`, `tests` or `testing` directory
//! and every test module (`test_*.py`, `*_test.py`, `tests.py`, `tests.rs`, …); the runners
//! (`runtests.py`, sympy's `bin/test`); pytest's configuration and plugins (`conftest.py`,
//! `pytest.ini`, the pytest sections of `tox.ini`, `setup.cfg` and `pyproject.toml`, and any
//! `pytest11` entry point); package metadata (`*.dist-info`, `*.egg-info`, whose entry points
//! load plugins); compiled Python (`__pycache__`, `*.pyc`, loaded in place of the source);
//! Python's start-up hooks (`sitecustomize.py`, `*.pth`); a new module that shadows the test
//! framework (`pytest.py`, a new `_pytest/` directory, …); Cargo's build scripts, its
//! configuration and the `Cargo.toml` tables that change how tests build or run.
//!
//! No gold patch of the SWE-bench exports touches such a file (a test checks that on the real
//! records), so the reset costs an honest patch nothing.
//!
//! The plan is pure: it reads the tree's state as git reports it after the patch is applied
//! ([`TreeState`]) and the old and new text of the files whose sections decide
//! ([`SectionKind`]), and says what to restore and what to remove ([`ResetEntry`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Module names of the test frameworks: a new file or directory of that name in the repository
/// (whose directories are on `sys.path` when the tests run) would be imported in their place.
const FRAMEWORK_MODULES: [&str; 9] = [
    "pytest",
    "_pytest",
    "py",
    "pluggy",
    "iniconfig",
    "unittest",
    "doctest",
    "xdist",
    "nose",
];

/// What the reset does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetAction {
    /// Put back as the base commit has it (a tracked file), or as the image had it (an
    /// untracked file that was there before the patch).
    Restored,
    /// Removed: the patch (or its reinstall) created it.
    Removed,
}

/// One path the reset restores or removes, and why it decides how the tests run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetEntry {
    /// Relative to the repository.
    pub path: String,
    /// What happened to it.
    pub action: ResetAction,
    /// Why it counts as test infrastructure.
    pub why: String,
}

/// How a path decides how the tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Always reset when changed or created.
    Always(&'static str),
    /// Reset when the sections that configure the tests differ from the base.
    Sections(SectionKind),
    /// Reset only when created, in a directory the base does not have.
    Shadowing(&'static str),
}

/// A configuration file whose sections decide whether a change counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionKind {
    /// `tox.ini`: its `[pytest]` section.
    ToxIni,
    /// `setup.cfg`: `[tool:pytest]` and the `pytest11` entry points.
    SetupCfg,
    /// `pyproject.toml`: `[tool.pytest…]` and the `pytest11` entry points.
    Pyproject,
    /// `Cargo.toml`: profiles, build dependencies, the build script, targets' harness settings,
    /// patches and replacements.
    CargoManifest,
}

impl SectionKind {
    fn why(self) -> &'static str {
        match self {
            Self::ToxIni => "changes tox.ini's [pytest] section, pytest's configuration",
            Self::SetupCfg => {
                "changes setup.cfg's [tool:pytest] section or its pytest11 entry points"
            }
            Self::Pyproject => {
                "changes pyproject.toml's [tool.pytest] tables or its pytest11 entry points"
            }
            Self::CargoManifest => {
                "changes a Cargo.toml table that decides how the tests build or run (profiles, \
                 build dependencies, the build script, targets, patches)"
            }
        }
    }

    /// The dotted key prefixes that count (`section.key` for INI files).
    fn prefixes(self) -> &'static [&'static str] {
        match self {
            Self::ToxIni => &["pytest"],
            Self::SetupCfg => &["tool:pytest", "options.entry_points.pytest11"],
            Self::Pyproject => &[
                "tool.pytest",
                "project.entry-points.pytest11",
                "tool.poetry.plugins.pytest11",
            ],
            Self::CargoManifest => &[
                "profile",
                "build-dependencies",
                "patch",
                "replace",
                "lib",
                "test",
                "bench",
                "package.build",
                "cargo-features",
            ],
        }
    }

    fn is_toml(self) -> bool {
        matches!(self, Self::Pyproject | Self::CargoManifest)
    }
}

/// The class of `path` (relative to the repository), if it is test infrastructure.
pub fn class_of(path: &str) -> Option<Class> {
    let parts: Vec<&str> = path.split('/').collect();
    let (name, dirs) = parts.split_last()?;
    let name = *name;
    let always = |why| Some(Class::Always(why));
    match name {
        "conftest.py" => return always("pytest loads it as a plugin"),
        "pytest.ini" | ".pytest.ini" | "pytest.toml" | ".pytest.toml" => {
            return always("pytest's configuration");
        }
        "tox.ini" => return Some(Class::Sections(SectionKind::ToxIni)),
        "setup.cfg" => return Some(Class::Sections(SectionKind::SetupCfg)),
        "pyproject.toml" => return Some(Class::Sections(SectionKind::Pyproject)),
        "Cargo.toml" => return Some(Class::Sections(SectionKind::CargoManifest)),
        "sitecustomize.py" | "usercustomize.py" => return always("Python runs it at start-up"),
        "build.rs" => return always("a Cargo build script: it runs before the tests compile"),
        "rust-toolchain" | "rust-toolchain.toml" => return always("it chooses the Rust toolchain"),
        "runtests.py" => return always("a test runner"),
        _ => {}
    }
    if path == "bin/test" {
        return always("sympy's test runner");
    }
    if name.ends_with(".pth") {
        return always("Python runs its import lines at start-up");
    }
    if dirs.contains(&".cargo") {
        return always("Cargo's configuration");
    }
    if dirs
        .iter()
        .any(|dir| dir.ends_with(".dist-info") || dir.ends_with(".egg-info"))
        || name.ends_with(".egg-link")
    {
        return always("package metadata: its entry points load pytest plugins");
    }
    if dirs.contains(&"__pycache__") || name.ends_with(".pyc") || name.ends_with(".pyo") {
        return always("compiled Python, loaded in place of its source");
    }
    if dirs
        .iter()
        .any(|dir| matches!(*dir, "test" | "tests" | "testing"))
    {
        return always("a file of the test suite");
    }
    let test_module = (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.ends_with("_tests.py")
        || name == "tests.py"
        || name == "tests.rs";
    if test_module {
        return always("a test module");
    }
    let shadows =
        |part: &str| FRAMEWORK_MODULES.contains(&part.strip_suffix(".py").unwrap_or(part));
    if shadows(name) && name.ends_with(".py") || dirs.iter().any(|dir| shadows(dir)) {
        return Some(Class::Shadowing(
            "a new module named like the test framework's, imported in its place",
        ));
    }
    None
}

/// The repository as git sees it after the patch (and any reinstall), next to the base.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeState {
    /// Tracked paths whose content differs from the base commit (changed or deleted).
    pub changed: Vec<String>,
    /// Untracked paths now, ignored ones included.
    pub untracked: Vec<String>,
    /// Untracked paths before the patch was applied (the image's own: build outputs, metadata);
    /// the grader saved those that are test infrastructure and puts them back as they were.
    pub untracked_at_start: BTreeSet<String>,
    /// Directories the base commit has.
    pub base_dirs: BTreeSet<String>,
}

/// The old and new text of one file whose sections decide ([`Class::Sections`]); `None` for a
/// file that does not exist on that side.
pub type Sides = (Option<String>, Option<String>);

/// The paths of `state` whose sections must be compared before the plan can be made: the
/// changed or created `tox.ini`, `setup.cfg`, `pyproject.toml` and `Cargo.toml` files.
pub fn section_paths(state: &TreeState) -> Vec<String> {
    let created = state
        .untracked
        .iter()
        .filter(|path| !state.untracked_at_start.contains(*path));
    let mut paths: Vec<String> = state
        .changed
        .iter()
        .chain(created)
        .filter(|path| matches!(class_of(path), Some(Class::Sections(_))))
        .cloned()
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// What to restore from the base commit and what to remove, in path order. `sides` holds the
/// old and new text of every path of [`section_paths`] (a path missing from it is reset, to be
/// safe).
///
/// Tracked files that count are restored; files the patch created are removed. Untracked files
/// that were there before the patch (`state.untracked_at_start`) are not in the plan: the caller
/// saved those that count ([`worth_saving`]) and puts them all back as they were.
pub fn reset_plan(state: &TreeState, sides: &BTreeMap<String, Sides>) -> Vec<ResetEntry> {
    let mut plan = Vec::new();
    for path in &state.changed {
        if let Some(why) = counts(path, state, sides, false) {
            plan.push(ResetEntry {
                path: path.clone(),
                action: ResetAction::Restored,
                why,
            });
        }
    }
    for path in &state.untracked {
        if state.untracked_at_start.contains(path) {
            continue;
        }
        if let Some(why) = counts(path, state, sides, true) {
            plan.push(ResetEntry {
                path: path.clone(),
                action: ResetAction::Removed,
                why,
            });
        }
    }
    plan.sort_by(|a, b| a.path.cmp(&b.path));
    plan
}

/// The untracked paths of `untracked` that are test infrastructure, which the grader saves
/// before the patch is applied (shadowing modules do not count: they are new by definition).
pub fn worth_saving(untracked: &[String]) -> Vec<String> {
    untracked
        .iter()
        .filter(|path| matches!(class_of(path), Some(Class::Always(_) | Class::Sections(_))))
        .cloned()
        .collect()
}

fn counts(
    path: &str,
    state: &TreeState,
    sides: &BTreeMap<String, Sides>,
    created: bool,
) -> Option<String> {
    match class_of(path)? {
        Class::Always(why) => Some(why.to_owned()),
        Class::Sections(kind) => {
            let differ = sides.get(path).is_none_or(|(old, new)| {
                test_view(kind, old.as_deref()) != test_view(kind, new.as_deref())
            });
            differ.then(|| kind.why().to_owned())
        }
        Class::Shadowing(why) => {
            let new_dir = path
                .match_indices('/')
                .map(|(index, _)| &path[..index])
                .filter(|dir| {
                    let last = dir.rsplit('/').next().unwrap_or(dir);
                    FRAMEWORK_MODULES.contains(&last)
                })
                .any(|dir| !state.base_dirs.contains(dir));
            let name = path.rsplit('/').next().unwrap_or(path);
            let shadowing_file = name
                .strip_suffix(".py")
                .is_some_and(|stem| FRAMEWORK_MODULES.contains(&stem));
            (created && (new_dir || shadowing_file)).then(|| why.to_owned())
        }
    }
}

/// The lines of `text` that decide how the tests run, each with its full dotted key: the
/// sections each [`SectionKind`] names (and keys whose path is a prefix of one, such as an
/// inline `tool = {…}` table), comments and blank lines left out. Two texts with the same view
/// run the tests the same way.
pub fn test_view(kind: SectionKind, text: Option<&str>) -> Vec<String> {
    let Some(text) = text else {
        return Vec::new();
    };
    let prefixes = kind.prefixes();
    // A key under one of the prefixes counts; in TOML, so does a key whose path leads to one
    // (an inline `tool = { pytest = … }` table).
    let relevant = |key: &str, header: bool| {
        let key = key.to_ascii_lowercase();
        let under = |prefix: &str| key == prefix || key.starts_with(&format!("{prefix}."));
        let leads_to =
            |prefix: &str| kind.is_toml() && !header && prefix.starts_with(&format!("{key}."));
        prefixes
            .iter()
            .any(|prefix| under(prefix) || leads_to(prefix))
            || (kind == SectionKind::CargoManifest
                && (key.contains("build-dependencies")
                    || key.ends_with(".harness")
                    || key == "harness"))
            || key.contains("pytest11")
    };
    let mut section = String::new();
    let mut key = String::new();
    let mut view = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        let comment = if kind.is_toml() {
            line.starts_with('#')
        } else {
            line.starts_with('#') || line.starts_with(';')
        };
        if line.is_empty() || comment {
            continue;
        }
        if let Some(name) = section_header(line, kind.is_toml()) {
            section = name;
            key.clone_from(&section);
            if relevant(&section, true) {
                view.push(format!("[{section}]"));
            }
            continue;
        }
        let continuation = raw.starts_with([' ', '\t']) && !kind.is_toml();
        let assignment = line
            .split_once('=')
            .or_else(|| (!kind.is_toml()).then(|| line.split_once(':')).flatten());
        match assignment {
            Some((name, _)) if !continuation && !name.trim().is_empty() => {
                let name = name
                    .trim()
                    .split('.')
                    .map(|part| part.trim().trim_matches(['"', '\'']))
                    .collect::<Vec<_>>()
                    .join(".");
                key = if section.is_empty() {
                    name
                } else {
                    format!("{section}.{name}")
                };
            }
            _ => {}
        }
        if relevant(&key, false) {
            view.push(format!("{key}: {line}"));
        }
    }
    view
}

/// The name of a section header line (`[a.b]`, `[[bin]]`, `[tool:pytest]`), quotes and spaces
/// around dotted parts removed, with a trailing comment allowed.
pub(super) fn section_header(line: &str, toml: bool) -> Option<String> {
    if !line.starts_with('[') {
        return None;
    }
    let line = match line.find(" #").or_else(|| line.find("]#").map(|i| i + 1)) {
        Some(index) => line[..index].trim_end(),
        None => line,
    };
    let inner = line.strip_prefix('[')?.strip_suffix(']')?;
    let inner = inner
        .strip_prefix('[')
        .and_then(|i| i.strip_suffix(']'))
        .unwrap_or(inner);
    if !toml {
        return Some(inner.trim().to_owned());
    }
    Some(
        inner
            .split('.')
            .map(|part| part.trim().trim_matches(['"', '\'']))
            .collect::<Vec<_>>()
            .join("."),
    )
}

#[cfg(test)]
mod tests;
