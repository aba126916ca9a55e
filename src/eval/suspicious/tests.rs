//! Naming test infrastructure in a patch, and finding every path inside `.git` whichever line a
//! tool of the apply chain would read it from.

use super::*;

/// A one-line change of `path` at line 1.
fn diff(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nindex 1..2 100644\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
    )
}

fn new_file(path: &str, lines: &[&str]) -> String {
    let mut patch = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n\
         @@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        patch.push_str(&format!("+{line}\n"));
    }
    patch
}

fn named(touched: &[TouchedFile]) -> Vec<(&str, &str)> {
    touched
        .iter()
        .map(|file| (file.path.as_str(), file.why.as_str()))
        .collect()
}

#[test]
fn configuration_plugins_start_up_hooks_and_build_scripts_are_named_with_why() {
    let test_patch = diff("tests/test_parser.py");
    let model = [
        diff("src/parser.py"),
        new_file("tests/conftest.py", &["import pytest"]),
        diff("pytest.ini"),
        diff("sub/tox.ini"),
        diff("setup.cfg"),
        diff("tests/test_parser.py"),
        diff("tests/test_other.py"),
        new_file("sitecustomize.py", &["import os"]),
        new_file("lib/site-packages/evil.pth", &["import evil"]),
        new_file("build.rs", &["fn main() {}"]),
        diff(".cargo/config.toml"),
        diff("setup.py").replace("+b\n", "+entry_points={'pytest11': ['x = x']},\n"),
    ]
    .concat();
    assert_eq!(
        named(&test_infrastructure(
            &model,
            Some(&test_patch),
            &BaseFiles::new()
        )),
        [
            ("tests/conftest.py", "pytest loads it as a plugin"),
            ("pytest.ini", "pytest's configuration"),
            ("sub/tox.ini", "pytest reads its [pytest] section"),
            ("setup.cfg", "pytest reads its [tool:pytest] section"),
            ("tests/test_parser.py", "a file the test patch changes"),
            ("tests/test_other.py", "a file of the test suite"),
            ("sitecustomize.py", "Python runs it at start-up"),
            (
                "lib/site-packages/evil.pth",
                "Python runs its import lines at start-up"
            ),
            (
                "build.rs",
                "a Cargo build script: it runs before the tests compile"
            ),
            (".cargo/config.toml", "Cargo's configuration"),
            (
                "setup.py",
                "registers a pytest plugin (a pytest11 entry point)"
            ),
        ]
    );
    assert!(
        test_infrastructure(&diff("src/parser.py"), Some(&test_patch), &BaseFiles::new())
            .is_empty()
    );
    let renamed = "diff --git a/conftest.py b/old_conftest.py\nsimilarity index 100%\n\
                   rename from conftest.py\nrename to old_conftest.py\n";
    assert_eq!(
        named(&test_infrastructure(renamed, None, &BaseFiles::new())),
        [("conftest.py", "pytest loads it as a plugin")]
    );
}

const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools\"]\n\n[project]\nname = \"x\"\n\
                         version = \"1\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\
                         pythonpath = [\".\"]\nmarkers = [\"slow\"]\n\n[tool.black]\nline-length = 100\n";

fn base(path: &str, text: &str) -> BaseFiles {
    BaseFiles::from([(path.to_owned(), Some(text.to_owned()))])
}

#[test]
fn a_pyproject_change_is_named_only_inside_a_pytest_table_read_from_the_base_file() {
    // Line 11 is in [tool.pytest.ini_options], whose header (line 8) the hunk does not show.
    let addopts = "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n\
                   +++ b/pyproject.toml\n@@ -10,2 +10,3 @@\n pythonpath = [\".\"]\n\
                   +addopts = \"-p evil\"\n markers = [\"slow\"]\n";
    let with_base = test_infrastructure(addopts, None, &base("pyproject.toml", PYPROJECT));
    assert_eq!(
        named(&with_base),
        [(
            "pyproject.toml",
            "changes [tool.pytest.ini_options], which configures pytest"
        )]
    );
    assert_eq!(base_files_needed(addopts), ["pyproject.toml"]);
    // Without the base file the table is not known, and the change is named as such.
    assert_eq!(
        named(&test_infrastructure(addopts, None, &BaseFiles::new())),
        [(
            "pyproject.toml",
            "changes a table the patch does not show (it may configure pytest)"
        )]
    );
    // Line 15 is in [tool.black]: not named.
    let black = "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n\
                 +++ b/pyproject.toml\n@@ -15 +15 @@\n-line-length = 100\n+line-length = 88\n";
    assert!(test_infrastructure(black, None, &base("pyproject.toml", PYPROJECT)).is_empty());
    // A table added at the end, and a pytest11 entry point.
    let appended = "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n\
                    +++ b/pyproject.toml\n@@ -15,0 +16,3 @@\n+\n+[project.entry-points.\"pytest11\"]\n\
                    +x = \"x.plugin\"\n";
    assert_eq!(
        named(&test_infrastructure(
            appended,
            None,
            &base("pyproject.toml", PYPROJECT)
        )),
        [(
            "pyproject.toml",
            "changes [project.entry-points.pytest11], which configures pytest"
        )]
    );
    // Removing the pytest table (so that tox.ini or setup.cfg is read instead).
    let removed = "diff --git a/pyproject.toml b/pyproject.toml\n--- a/pyproject.toml\n\
                   +++ b/pyproject.toml\n@@ -7,5 +6,0 @@\n-\n-[tool.pytest.ini_options]\n\
                   -testpaths = [\"tests\"]\n-pythonpath = [\".\"]\n-markers = [\"slow\"]\n";
    assert_eq!(
        named(&test_infrastructure(
            removed,
            None,
            &base("pyproject.toml", PYPROJECT)
        )),
        [(
            "pyproject.toml",
            "changes [tool.pytest.ini_options], which configures pytest"
        )]
    );
}

#[test]
fn cargo_manifest_profiles_build_dependencies_and_the_build_key_are_named() {
    let manifest =
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n\n[dependencies]\nserde = \"1\"\n";
    let dependency = "diff --git a/Cargo.toml b/Cargo.toml\n--- a/Cargo.toml\n+++ b/Cargo.toml\n\
                      @@ -6 +6,2 @@\n serde = \"1\"\n+regex = \"1\"\n";
    assert!(test_infrastructure(dependency, None, &base("Cargo.toml", manifest)).is_empty());
    let profile = "diff --git a/Cargo.toml b/Cargo.toml\n--- a/Cargo.toml\n+++ b/Cargo.toml\n\
                   @@ -6,0 +7,6 @@\n+\n+[profile.test]\n+debug-assertions = false\n+\n\
                   +[target.'cfg(unix)'.build-dependencies]\n+cc = \"1\"\n";
    assert_eq!(
        named(&test_infrastructure(
            profile,
            None,
            &base("Cargo.toml", manifest)
        )),
        [(
            "Cargo.toml",
            "changes [profile.test]; changes [target.cfg(unix).build-dependencies]"
        )]
    );
    let build = "diff --git a/Cargo.toml b/Cargo.toml\n--- a/Cargo.toml\n+++ b/Cargo.toml\n\
                 @@ -3 +3,2 @@\n version = \"0.1.0\"\n+build = \"gen.rs\"\n";
    assert_eq!(
        named(&test_infrastructure(
            build,
            None,
            &base("Cargo.toml", manifest)
        )),
        [("Cargo.toml", "changes [package]'s build script (build =)")]
    );
    // A new manifest has no base to read: every table it adds is its own.
    let created = new_file(
        "crates/x/Cargo.toml",
        &[
            "[package]",
            "name = \"x\"",
            "[profile.dev]",
            "opt-level = 3",
        ],
    );
    assert_eq!(base_files_needed(&created), Vec::<String>::new());
    assert_eq!(
        named(&test_infrastructure(&created, None, &BaseFiles::new())),
        [("crates/x/Cargo.toml", "changes [profile.dev]")]
    );
}

#[test]
fn every_line_a_tool_could_take_a_name_from_is_checked_for_dot_git() {
    let hook = new_file(".git/hooks/post-checkout", &["#!/bin/sh", "id"]);
    assert_eq!(git_dir_paths(&hook), [".git/hooks/post-checkout"]);
    // patch(1) alone reads these.
    let plain = "Index: .git/config\n--- x/config\n+++ x/config\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(git_dir_paths(plain), [".git/config"]);
    let context = "*** a/sub/.GIT/hooks/pre-commit\n--- b/sub/.GIT/hooks/pre-commit\n";
    assert_eq!(git_dir_paths(context), ["sub/.GIT/hooks/pre-commit"]);
    // Renames and copies, and git's quoting (\056 is '.').
    let renamed = "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to \"\\056git/hooks/x\"\n";
    assert_eq!(git_dir_paths(renamed), [".git/hooks/x"]);
    // Header-like lines inside a hunk (by its counts), which a lenient reader of miscounted
    // hunks could take for a file's header.
    let hidden = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-a\n\
                  --- a/.git/hooks/post-merge\n+b\n+++ b/.git/hooks/post-merge\n";
    assert_eq!(git_dir_paths(hidden), [".git/hooks/post-merge"]);
    // A symbolic link to .git, through which a later file would be written.
    let link = "diff --git a/hooks b/hooks\nnew file mode 120000\n--- /dev/null\n+++ b/hooks\n\
                @@ -0,0 +1 @@\n+.git/hooks\n\\ No newline at end of file\n";
    assert_eq!(git_dir_paths(link), [".git/hooks"]);
    // Names that only look alike.
    let alike = [
        diff(".gitignore"),
        diff("docs/.github/x.md"),
        diff("a.git/b"),
    ]
    .concat();
    assert!(git_dir_paths(&alike).is_empty());
    assert_eq!(
        named(&test_infrastructure(&hook, None, &BaseFiles::new()))[0],
        (".git/hooks/post-checkout", GIT_DIR_REASON)
    );
}

#[test]
fn touches_tests_reads_the_old_list_of_paths_and_writes_path_and_why() {
    let old: Vec<TouchedFile> = serde_json::from_str(r#"["conftest.py"]"#).unwrap();
    assert_eq!(
        old,
        [TouchedFile {
            path: "conftest.py".to_owned(),
            why: String::new()
        }]
    );
    let new = TouchedFile {
        path: "tox.ini".to_owned(),
        why: "pytest reads its [pytest] section".to_owned(),
    };
    let text = serde_json::to_string(&new).unwrap();
    assert_eq!(
        text,
        r#"{"path":"tox.ini","why":"pytest reads its [pytest] section"}"#
    );
    assert_eq!(serde_json::from_str::<TouchedFile>(&text).unwrap(), new);
}

#[test]
fn a_framework_named_module_is_named_only_when_the_patch_brings_it() {
    let rename = "diff --git a/helpers.py b/pluggy.py\nsimilarity index 100%\n\
                  rename from helpers.py\nrename to pluggy.py\n";
    let model = [
        // pytest's own source, edited in pytest's repository (pytest-dev__pytest-5227's gold).
        diff("src/_pytest/logging.py"),
        new_file("pytest.py", &["def main(): pass"]),
        new_file("src/_pytest/__init__.py", &[""]),
        rename.to_owned(),
    ]
    .concat();
    let why = "a new module named like the test framework's, imported in its place";
    assert_eq!(
        named(&test_infrastructure(&model, None, &BaseFiles::new())),
        [
            ("pytest.py", why),
            ("src/_pytest/__init__.py", why),
            ("pluggy.py", why)
        ]
    );
}
