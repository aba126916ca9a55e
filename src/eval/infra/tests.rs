//! The test-infrastructure reset: which paths count, the section views of configuration files,
//! and the plan over a tree's state; and that no real gold patch loses anything to it.

use super::*;
use crate::eval::script::patch_files;

fn state(changed: &[&str], untracked: &[&str], at_start: &[&str], dirs: &[&str]) -> TreeState {
    let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    TreeState {
        changed: list(changed),
        untracked: list(untracked),
        untracked_at_start: list(at_start).into_iter().collect(),
        base_dirs: list(dirs).into_iter().collect(),
    }
}

fn planned(plan: &[ResetEntry]) -> Vec<(&str, ResetAction)> {
    plan.iter().map(|e| (e.path.as_str(), e.action)).collect()
}

#[test]
fn test_suites_runners_plugins_metadata_and_start_up_hooks_count_and_source_does_not() {
    for path in [
        "conftest.py",
        "src/pkg/conftest.py",
        "pytest.ini",
        "tests/__init__.py",
        "tests/runtests.py",
        "testing/python/fixtures.py",
        "sympy/testing/runtests.py",
        "sympy/utilities/runtests.py",
        "django/test/runner.py",
        "bin/test",
        "pkg/test_util.py",
        "pkg/util_test.py",
        "app/tests.py",
        "src/buffer/tests.rs",
        "crates/x/tests/it.rs",
        "fake-1.0.dist-info/entry_points.txt",
        "src/fake.egg-info/entry_points.txt",
        "pkg/__pycache__/mod.cpython-311.pyc",
        "sitecustomize.py",
        "evil.pth",
        "build.rs",
        "crates/x/build.rs",
        ".cargo/config.toml",
        "rust-toolchain.toml",
    ] {
        assert!(
            matches!(class_of(path), Some(Class::Always(_))),
            "{path}: {:?}",
            class_of(path)
        );
    }
    for path in [
        "inicfg/parser.py",
        "src/_pytest/python.py",
        "src/buffer.rs",
        "setup.py",
        "README.md",
        "contest.py",
        "latest/notes.py",
        "attestation.py",
    ] {
        assert!(
            !matches!(class_of(path), Some(Class::Always(_))),
            "{path}: {:?}",
            class_of(path)
        );
    }
    assert_eq!(
        class_of("setup.cfg"),
        Some(Class::Sections(SectionKind::SetupCfg))
    );
    assert_eq!(
        class_of("sub/Cargo.toml"),
        Some(Class::Sections(SectionKind::CargoManifest))
    );
    assert!(matches!(class_of("pytest.py"), Some(Class::Shadowing(_))));
    assert!(matches!(
        class_of("src/_pytest/scope.py"),
        Some(Class::Shadowing(_))
    ));
}

#[test]
fn a_section_view_keeps_only_what_configures_the_tests() {
    let base = "[tool.black]\nline-length = 88\n\n[tool.pytest.ini_options]\naddopts = \"-rA\"\n";
    let plugin =
        "[tool.black]\nline-length = 88\n\n[tool.pytest.ini_options]\naddopts = \"-rA -p evil\"\n";
    let black = "[tool.black]\nline-length = 100\n\n[tool.pytest.ini_options]\naddopts = \"-rA\"\n";
    let view = |text| test_view(SectionKind::Pyproject, Some(text));
    assert_eq!(
        view(base),
        [
            "[tool.pytest.ini_options]",
            "tool.pytest.ini_options.addopts: addopts = \"-rA\""
        ]
    );
    assert_ne!(view(base), view(plugin));
    assert_eq!(view(base), view(black));
    // A dotted key at the root and an inline table reach pytest's table too.
    let dotted = "[project]\nname = \"x\"\n";
    let with_dotted = "tool.pytest.ini_options.addopts = \"-p evil\"\n[project]\nname = \"x\"\n";
    let inline = "tool = { pytest = { ini_options = { addopts = \"-p evil\" } } }\n";
    assert_ne!(view(dotted), view(with_dotted));
    assert_ne!(view(dotted), view(inline));
    // Entry points, in each file's syntax.
    let entry = "[project.entry-points.pytest11]\nevil = \"pkg.plugin\"\n";
    assert_ne!(view(""), view(entry));
    let cfg = "[metadata]\nname = x\n[options.entry_points]\nconsole_scripts =\n    x = x:main\n";
    let cfg_plugin = "[metadata]\nname = x\n[options.entry_points]\nconsole_scripts =\n    x = \
                      x:main\npytest11 =\n    evil = x.plugin\n";
    let cfg_view = |text| test_view(SectionKind::SetupCfg, Some(text));
    assert_eq!(cfg_view(cfg), Vec::<String>::new());
    assert_eq!(
        cfg_view(cfg_plugin),
        [
            "options.entry_points.pytest11: pytest11 =",
            "options.entry_points.pytest11: evil = x.plugin"
        ]
    );
    let tox = "[tox]\nenvlist = py3\n[pytest]\naddopts = -p evil\n";
    assert_eq!(
        test_view(SectionKind::ToxIni, Some(tox)),
        ["[pytest]", "pytest.addopts: addopts = -p evil"]
    );
    // Cargo: dependencies are the fix's business, profiles and targets the tests'.
    let cargo = "[package]\nname = \"x\"\n\n[dependencies]\nserde = \"1\"\n";
    let more_deps = "[package]\nname = \"x\"\n\n[dependencies]\nserde = \"1\"\nregex = \"1\"\n";
    let harness = "[package]\nname = \"x\"\n\n[dependencies]\nserde = \"1\"\n\n[[test]]\nname = \
                   \"it\"\nharness = false\n";
    let build = "[package]\nname = \"x\"\nbuild = \"gen.rs\"\n\n[dependencies]\nserde = \"1\"\n";
    let cargo_view = |text| test_view(SectionKind::CargoManifest, Some(text));
    assert_eq!(cargo_view(cargo), cargo_view(more_deps));
    assert_ne!(cargo_view(cargo), cargo_view(harness));
    assert_ne!(cargo_view(cargo), cargo_view(build));
    assert_eq!(
        test_view(SectionKind::Pyproject, None),
        Vec::<String>::new()
    );
}

#[test]
fn the_plan_restores_changed_infrastructure_and_removes_what_the_patch_created() {
    let tree = state(
        &[
            "inicfg/parser.py",
            "tests/conftest.py",
            "pyproject.toml",
            "setup.cfg",
        ],
        &[
            "conftest.py",
            "inicfg/new_module.py",
            "evil-1.0.dist-info/entry_points.txt",
            "build/lib/x.so",
            "x.egg-info/PKG-INFO",
            "pytest.py",
            "_pytest/__init__.py",
            "src/_pytest/scope.py",
        ],
        &["build/lib/x.so", "x.egg-info/PKG-INFO"],
        &["inicfg", "tests", "src", "src/_pytest"],
    );
    assert_eq!(section_paths(&tree), ["pyproject.toml", "setup.cfg"]);
    let sides = BTreeMap::from([
        (
            "pyproject.toml".to_owned(),
            (
                Some("[tool.pytest.ini_options]\naddopts = \"-rA\"\n".to_owned()),
                Some("[tool.pytest.ini_options]\naddopts = \"-rA -p x\"\n".to_owned()),
            ),
        ),
        (
            "setup.cfg".to_owned(),
            (
                Some("[metadata]\nname = x\n".to_owned()),
                Some("[metadata]\nname = x\nversion = 2\n".to_owned()),
            ),
        ),
    ]);
    let plan = reset_plan(&tree, &sides);
    assert_eq!(
        planned(&plan),
        [
            ("_pytest/__init__.py", ResetAction::Removed),
            ("conftest.py", ResetAction::Removed),
            ("evil-1.0.dist-info/entry_points.txt", ResetAction::Removed),
            ("pyproject.toml", ResetAction::Restored),
            ("pytest.py", ResetAction::Removed),
            ("tests/conftest.py", ResetAction::Restored),
        ]
    );
    assert_eq!(plan[1].why, "pytest loads it as a plugin");
    assert_eq!(
        worth_saving(&tree.untracked),
        [
            "conftest.py",
            "evil-1.0.dist-info/entry_points.txt",
            "x.egg-info/PKG-INFO"
        ]
    );
    // A section file whose sides were not read is reset, to be safe.
    let unread = reset_plan(&state(&["tox.ini"], &[], &[], &[]), &BTreeMap::new());
    assert_eq!(planned(&unread), [("tox.ini", ResetAction::Restored)]);
}

/// The old and new text a diff shows of one file: context and removed lines, context and
/// added lines (enough for the sections its hunks show).
fn sides_shown(section: &str) -> Sides {
    let (mut old, mut new) = (String::new(), String::new());
    let mut in_hunk = false;
    for line in section.lines() {
        if line.starts_with("@@") {
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.as_bytes().first() {
            Some(b'-') => old.push_str(&format!("{}\n", &line[1..])),
            Some(b'+') => new.push_str(&format!("{}\n", &line[1..])),
            Some(b' ') => {
                old.push_str(&format!("{}\n", &line[1..]));
                new.push_str(&format!("{}\n", &line[1..]));
            }
            _ => {}
        }
    }
    (Some(old), Some(new))
}

/// The reset costs an honest patch nothing: on every record of the SWE-bench exports, no file
/// of the gold patch is restored or removed (the two configuration files that gold patches
/// change keep their test sections).
#[test]
fn no_gold_patch_of_the_swe_bench_exports_touches_what_the_reset_restores() {
    let dir = crate::eval::swebench_data_dir();
    let mut files = 0;
    let mut section_files = Vec::new();
    for name in [
        "lite.jsonl",
        "verified.jsonl",
        "dev.jsonl",
        "lite-dev.jsonl",
        "multilingual.jsonl",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = record["instance_id"].as_str().unwrap();
            let patch = record["patch"].as_str().unwrap();
            for section in patch
                .split_inclusive('\n')
                .fold(Vec::<String>::new(), |mut acc, l| {
                    if l.starts_with("diff --git ") || acc.is_empty() {
                        acc.push(String::new());
                    }
                    acc.last_mut().unwrap().push_str(l);
                    acc
                })
            {
                for change in patch_files(&section) {
                    let Some(path) = change.new_path.or(change.old_path) else {
                        continue;
                    };
                    files += 1;
                    let tree = state(&[&path], &[], &[], &[]);
                    let sides = BTreeMap::from([(path.clone(), sides_shown(&section))]);
                    if matches!(class_of(&path), Some(Class::Sections(_))) {
                        section_files.push(format!("{id}: {path}"));
                    }
                    let plan = reset_plan(&tree, &sides);
                    assert!(plan.is_empty(), "{id}: the reset would restore {plan:?}");
                }
            }
        }
    }
    assert!(files > 1900, "{files}");
    assert_eq!(
        section_files,
        [
            "pylint-dev__pylint-4661: setup.cfg",
            "tokio-rs__axum-682: examples/oauth/Cargo.toml"
        ]
    );
}
