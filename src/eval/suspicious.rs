//! What a model patch changes besides the code under test: every file that decides how the tests
//! run (pytest's configuration and plugins, Python's start-up hooks, Cargo's build scripts and
//! profiles, the test patch's own files), named with the reason in `report.json`'s
//! `touches_tests`; and every path inside a `.git` directory, which is never applied.
//!
//! The `.git` check reads every line that `git apply` or `patch(1)` could take a file name from
//! (`diff --git`, `---`/`+++`, `***`, `Index:`, renames and copies, even inside a hunk, where a
//! miscounted hunk could make `patch` see a header) and the targets of new symbolic links, so that
//! no tool of the apply chain can write there, whichever of them applies the patch.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::infra::Class;
use super::script::{hunk_body, hunk_header, patch_files};
use crate::text::c_unescape;

/// One file of a patch that changes test infrastructure, and why it counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "TouchedRepr")]
pub struct TouchedFile {
    /// The path, as the patch names it.
    pub path: String,
    /// Why it decides how the tests run (empty in reports written before reasons were kept).
    pub why: String,
}

/// `touches_tests` entries as written now (`{"path", "why"}`) or by older versions (a path).
#[derive(Deserialize)]
#[serde(untagged)]
enum TouchedRepr {
    Path(String),
    Full { path: String, why: String },
}

impl From<TouchedRepr> for TouchedFile {
    fn from(repr: TouchedRepr) -> Self {
        match repr {
            TouchedRepr::Path(path) => Self {
                path,
                why: String::new(),
            },
            TouchedRepr::Full { path, why } => Self { path, why },
        }
    }
}

/// The content at the base commit of files whose changed tables matter (`pyproject.toml`,
/// `Cargo.toml`), by path; `None` when it could not be read.
pub type BaseFiles = BTreeMap<String, Option<String>>;

/// Why a path inside `.git` is named.
pub const GIT_DIR_REASON: &str = "inside .git: never applied";

/// Every file name in `patch` that has a `.git` component (any case), from every line a tool of
/// the apply chain could read a name from, and every new symbolic link whose target has one;
/// unescaped, without git's `a/`/`b/` prefix, each once.
pub fn git_dir_paths(patch: &str) -> Vec<String> {
    const NAME_LINES: [&str; 11] = [
        "diff --git ",
        "--- ",
        "+++ ",
        "*** ",
        "Index: ",
        "rename from ",
        "rename to ",
        "rename old ",
        "rename new ",
        "copy from ",
        "copy to ",
    ];
    let mut found: Vec<String> = Vec::new();
    let mut symlink = false;
    for line in patch.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with("diff --git ") {
            symlink = false;
        }
        if line.starts_with("new file mode 120000") || line.starts_with("new mode 120000") {
            symlink = true;
        }
        let mut names: Vec<&str> = Vec::new();
        match NAME_LINES
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
        {
            Some(rest) if line.starts_with("diff --git ") => match rest.split_once(" b/") {
                Some((old, new)) => names.extend([old, new]),
                None => names.push(rest),
            },
            Some(rest) => names.push(rest.split('\t').next().unwrap_or(rest)),
            None => {}
        }
        names.extend(
            line.strip_prefix('+')
                .filter(|rest| symlink && !rest.starts_with("++")),
        );
        for name in names {
            let decoded = c_unescape(name.trim().trim_matches('"'));
            let decoded = decoded
                .strip_prefix("a/")
                .or_else(|| decoded.strip_prefix("b/"))
                .unwrap_or(&decoded)
                .to_owned();
            if has_git_component(&decoded) && !found.contains(&decoded) {
                found.push(decoded);
            }
        }
    }
    found
}

fn has_git_component(text: &str) -> bool {
    text.split(|c: char| c == '/' || c == '\\' || c == '"' || c.is_whitespace())
        .any(|part| part.eq_ignore_ascii_case(".git"))
}

/// The base paths of the `pyproject.toml` and `Cargo.toml` files `patch` changes (not the ones
/// it creates): their content at the base decides which tables a change is in.
pub fn base_files_needed(patch: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for change in patch_files(patch) {
        if let Some(old) = change.old_path
            && table_kind(&old).is_some()
            && !paths.contains(&old)
        {
            paths.push(old);
        }
    }
    paths
}

/// Which TOML file a path is, for [`test_infrastructure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TomlKind {
    Pyproject,
    CargoManifest,
}

fn table_kind(path: &str) -> Option<TomlKind> {
    match file_name(path) {
        "pyproject.toml" => Some(TomlKind::Pyproject),
        "Cargo.toml" => Some(TomlKind::CargoManifest),
        _ => None,
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The files of `model_patch` that change test infrastructure, each once, in patch order, with
/// every reason that applies (`; `-joined):
/// - any path with a `.git` component ([`GIT_DIR_REASON`]);
/// - `conftest.py` anywhere, `pytest.ini`, `tox.ini`, `setup.cfg`;
/// - a `pyproject.toml` change in a `[tool.pytest…]` table or a `pytest11` entry-point table;
/// - `sitecustomize.py`, `usercustomize.py`, any `*.pth` file;
/// - any changed line that names `pytest11` (a pytest plugin registered by `setup.py`);
/// - `build.rs`, anything under a `.cargo/` directory, a `Cargo.toml` change in `[profile…]`,
///   `[build-dependencies]` (also per target) or to `[package]`'s `build` key;
/// - every other file the grader puts back before the tests ([`super::infra::class_of`]: test
///   suites, runners, package metadata, compiled Python, and modules that shadow the framework
///   when the patch creates them or renames or copies a file to them);
/// - every file the test patch changes.
///
/// A `pyproject.toml` or `Cargo.toml` change is placed in its table from the file's content at
/// the base (`base`); without it, from the headers the hunks show, and a change whose table they
/// do not show is named too.
pub fn test_infrastructure(
    model_patch: &str,
    test_patch: Option<&str>,
    base: &BaseFiles,
) -> Vec<TouchedFile> {
    let graded: Vec<String> = test_patch
        .map(patch_files)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|change| [change.old_path, change.new_path])
        .flatten()
        .collect();
    let mut touched: Vec<TouchedFile> = Vec::new();
    let mut add = |path: &str, why: String| match touched.iter_mut().find(|t| t.path == path) {
        Some(existing) if !existing.why.split("; ").any(|w| w == why) => {
            existing.why.push_str("; ");
            existing.why.push_str(&why);
        }
        Some(_) => {}
        None => touched.push(TouchedFile {
            path: path.to_owned(),
            why,
        }),
    };
    for path in git_dir_paths(model_patch) {
        add(&path, GIT_DIR_REASON.to_owned());
    }
    for section in sections(model_patch) {
        let changes = patch_files(section);
        let paths: Vec<String> = changes
            .iter()
            .flat_map(|change| [change.old_path.clone(), change.new_path.clone()])
            .flatten()
            .collect();
        let hunks = hunks(section);
        let created = section
            .lines()
            .any(|line| line.starts_with("new file mode"));
        // The section brings `path`: it creates it, or renames or copies a file to it.
        let arrives = |path: &str| {
            created
                || changes.iter().any(|change| {
                    change.new_path.as_deref() == Some(path) && change.old_path != change.new_path
                })
        };
        for path in dedup(&paths) {
            let in_test_patch = graded.iter().any(|test| test == path);
            let by_class = match super::infra::class_of(path) {
                Some(Class::Always(why)) if !in_test_patch => Some(why),
                // A module shadows the framework's only when the patch brings it: an edit of the
                // framework's own file (pytest's `src/_pytest/…` in pytest's repository) does not.
                Some(Class::Shadowing(why)) if !in_test_patch && arrives(path) => Some(why),
                _ => None,
            };
            if let Some(why) = by_name(path).or(by_class) {
                add(path, why.to_owned());
            }
            if in_test_patch {
                add(path, "a file the test patch changes".to_owned());
            }
            let kind = table_kind(path);
            let names_plugin = hunks
                .iter()
                .flat_map(|hunk| hunk.lines.iter())
                .any(|line| line.starts_with(['+', '-']) && line.contains("pytest11"));
            if names_plugin && kind.is_none() {
                add(
                    path,
                    "registers a pytest plugin (a pytest11 entry point)".to_owned(),
                );
            }
            if let Some(kind) = kind {
                let base_text = paths
                    .first()
                    .and_then(|old| base.get(old))
                    .map(Option::as_deref);
                let pre_image = if created { Some(Some("")) } else { base_text };
                for why in table_reasons(kind, pre_image.flatten(), &hunks) {
                    add(path, why);
                }
            }
        }
    }
    touched
}

fn dedup(paths: &[String]) -> Vec<&String> {
    let mut unique: Vec<&String> = Vec::new();
    for path in paths {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
}

/// The reason a file counts by its name alone.
fn by_name(path: &str) -> Option<&'static str> {
    let name = file_name(path);
    let in_cargo_dir = path.split('/').rev().skip(1).any(|dir| dir == ".cargo");
    match name {
        "conftest.py" => Some("pytest loads it as a plugin"),
        "pytest.ini" | ".pytest.ini" => Some("pytest's configuration"),
        "tox.ini" => Some("pytest reads its [pytest] section"),
        "setup.cfg" => Some("pytest reads its [tool:pytest] section"),
        "sitecustomize.py" | "usercustomize.py" => Some("Python runs it at start-up"),
        "build.rs" => Some("a Cargo build script: it runs before the tests compile"),
        _ if name.ends_with(".pth") => Some("Python runs its import lines at start-up"),
        _ if in_cargo_dir => Some("Cargo's configuration"),
        _ => None,
    }
}

/// The patch cut into one text per file: at each `diff --git` line, or, in a plain unified diff,
/// at each `--- ` line that a `+++ ` line follows.
fn sections(patch: &str) -> Vec<&str> {
    let git = patch.lines().any(|line| line.starts_with("diff --git "));
    let mut starts = Vec::new();
    let mut offset = 0;
    let mut previous_minus: Option<usize> = None;
    for line in patch.split_inclusive('\n') {
        if git && line.starts_with("diff --git ") {
            starts.push(offset);
        } else if !git {
            if line.starts_with("+++ ")
                && let Some(minus) = previous_minus
            {
                starts.push(minus);
            }
            previous_minus = line.starts_with("--- ").then_some(offset);
        }
        offset += line.len();
    }
    starts.push(patch.len());
    starts
        .windows(2)
        .map(|pair| &patch[pair[0]..pair[1]])
        .collect()
}

/// One hunk: where it starts in the old file, and its lines (with their `+`/`-`/` ` marks).
#[derive(Debug)]
struct Hunk<'a> {
    old_start: usize,
    old_count: usize,
    lines: Vec<&'a str>,
}

/// The hunks of one file's section, each read by its line counts.
fn hunks(section: &str) -> Vec<Hunk<'_>> {
    let mut found = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some((old_start, old_count, new_count)) = hunk_header(line) else {
            continue;
        };
        found.push(Hunk {
            old_start,
            old_count,
            lines: hunk_body(&mut lines, (old_count, new_count)),
        });
    }
    found
}

/// The name of a TOML table header line (`[a.b]`, `[[bin]]`, with a trailing comment), if it is
/// one.
fn table_header(line: &str) -> Option<String> {
    super::infra::section_header(line.trim(), true)
}

/// Each changed line of a TOML file with the table it is in (`None`: the patch does not show
/// which), walking the base content (`pre_image`) between the hunks when it is known.
fn changed_lines<'a>(
    pre_image: Option<&str>,
    hunks: &[Hunk<'a>],
) -> Vec<(Option<String>, &'a str)> {
    let base: Vec<&str> = pre_image
        .map(|text| text.lines().collect())
        .unwrap_or_default();
    let start = pre_image.map(|_| String::new());
    let (mut old_table, mut new_table) = (start.clone(), start);
    let mut next_old = 1usize;
    let mut changed = Vec::new();
    for hunk in hunks {
        let first_in_hunk = if hunk.old_count == 0 {
            hunk.old_start + 1
        } else {
            hunk.old_start
        };
        if pre_image.is_some() {
            while next_old < first_in_hunk {
                if let Some(name) = base.get(next_old - 1).and_then(|line| table_header(line)) {
                    old_table = Some(name.clone());
                    new_table = Some(name);
                }
                next_old += 1;
            }
        } else if first_in_hunk > next_old {
            // Lines the patch does not show could hold a header.
            old_table = None;
            new_table = None;
        }
        next_old = next_old.max(first_in_hunk);
        for line in &hunk.lines {
            let text = &line[line.len().min(1)..];
            match line.as_bytes().first() {
                Some(b'-') => {
                    if let Some(name) = table_header(text) {
                        old_table = Some(name);
                    }
                    changed.push((old_table.clone(), *line));
                    next_old += 1;
                }
                Some(b'+') => {
                    if let Some(name) = table_header(text) {
                        new_table = Some(name);
                    }
                    changed.push((new_table.clone(), *line));
                }
                Some(b'\\') => {}
                _ => {
                    if let Some(name) = table_header(text) {
                        old_table = Some(name.clone());
                        new_table = Some(name);
                    }
                    next_old += 1;
                }
            }
        }
    }
    changed
}

/// Why the changes of a `pyproject.toml` or `Cargo.toml` count, one reason per table.
fn table_reasons(kind: TomlKind, pre_image: Option<&str>, hunks: &[Hunk<'_>]) -> Vec<String> {
    let mut reasons: Vec<String> = Vec::new();
    for (table, line) in changed_lines(pre_image, hunks) {
        let text = line[1..].trim_start();
        let why = match (&table, kind) {
            (None, TomlKind::Pyproject) => {
                Some("changes a table the patch does not show (it may configure pytest)".to_owned())
            }
            (None, TomlKind::CargoManifest) => Some(
                "changes a table the patch does not show (it may be [profile] or \
                 [build-dependencies])"
                    .to_owned(),
            ),
            (Some(name), TomlKind::Pyproject) => {
                pytest_table(name).then(|| format!("changes [{name}], which configures pytest"))
            }
            (Some(name), TomlKind::CargoManifest) => {
                let build_key = name == "package"
                    && text
                        .strip_prefix("build")
                        .is_some_and(|rest| rest.trim_start().starts_with('='));
                if cargo_table(name) {
                    Some(format!("changes [{name}]"))
                } else {
                    build_key.then(|| "changes [package]'s build script (build =)".to_owned())
                }
            }
        };
        if let Some(why) = why
            && !reasons.contains(&why)
        {
            reasons.push(why);
        }
    }
    reasons
}

fn pytest_table(name: &str) -> bool {
    name == "tool.pytest" || name.starts_with("tool.pytest.") || name.ends_with(".pytest11")
}

fn cargo_table(name: &str) -> bool {
    name == "profile"
        || name.starts_with("profile.")
        || name == "build-dependencies"
        || name.ends_with(".build-dependencies")
}

#[cfg(test)]
mod tests;
