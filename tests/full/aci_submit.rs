//! `submit`'s patch, checked the way SWE-bench uses it: `git apply --check` on a fresh checkout
//! of the original repository passes, and applying it gives exactly the sandbox's files — with
//! new, deleted, binary, not-UTF-8, no-final-newline and space-in-name files — on both runtimes,
//! and the patch is UTF-8, so JSON carries it as it is. Nothing
//! of the harness's own (its patch file, the viewer, searches) ends up in the patch.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use support::Kind;
use support::aci_run::{AciRun, config, host_tree, repo_tree, start_aci, tree_diff, write_tree};

/// The original repository.
fn original() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files: &[(&str, &[u8])] = &[
        ("keep.txt", b"unchanged\n"),
        ("change.py", b"def f():\n    return 1\n"),
        ("remove.txt", b"to be deleted\n"),
        ("nonl.txt", b"no final newline"),
        ("crlf.txt", b"one\r\ntwo\r\n"),
        (
            "image.bin",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\xff\xfe",
        ),
        ("dir with space/old name.txt", b"spaced\n"),
        ("latin1.txt", b"caf\xe9\nna\xefve\n"),
        ("tests/test_change.py", b"def test_f():\n    pass\n"),
    ];
    write_tree(
        dir.path(),
        &files
            .iter()
            .map(|(path, bytes)| ((*path).to_owned(), bytes.to_vec()))
            .collect(),
    );
    dir
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A fresh checkout of `original`: a new git repository with its files committed.
fn fresh_checkout(original: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &host_tree(original));
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "base",
        ],
    );
    dir
}

/// The paths a patch names in its `diff --git a/X b/Y` lines, both sides (the test's names hold
/// no ` b/`).
fn touched(patch: &str) -> BTreeSet<String> {
    patch
        .lines()
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .flat_map(|rest| {
            let (a, b) = rest.split_once(" b/").unwrap();
            [a.to_owned(), b.to_owned()]
        })
        .collect()
}

fn names(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

async fn start(kind: Kind, original: &Path) -> AciRun {
    let dir = tempfile::tempdir().unwrap();
    start_aci(kind, "submit", original, config(&[], &[]), dir.path()).await
}

async fn execute(run: &mut AciRun, action: &str) -> String {
    run.aci.execute(action).await.unwrap().observation
}

async fn the_patch_applies_to_a_fresh_checkout_and_gives_the_same_files(kind: Kind) {
    let original = original();
    let mut run = start(kind, original.path()).await;
    // The model's work, through the ACI and the shell.
    execute(
        &mut run,
        "open change.py\nedit 2:2\n    return 2\nend_of_edit",
    )
    .await;
    execute(&mut run, "create \"new dir/new file.py\"").await;
    execute(&mut run, "mkdir 'new dir'\ncreate \"new dir/new file.py\"").await;
    execute(&mut run, "edit 1:1\nprint('new')\nend_of_edit").await;
    execute(&mut run, "rm remove.txt").await;
    execute(&mut run, "printf 'still no final newline' > nonl.txt").await;
    execute(&mut run, "open crlf.txt\nedit 1:1\nONE\nend_of_edit").await;
    execute(&mut run, "printf '\\000\\001\\002\\377binary' > blob.bin").await;
    execute(&mut run, "printf '\\000more' >> image.bin").await;
    execute(
        &mut run,
        "mv 'dir with space/old name.txt' 'dir with space/new name.txt'",
    )
    .await;
    execute(&mut run, "printf 'no newline, new' > 'no newline.txt'").await;
    // Text that is not UTF-8 (no NUL byte, so git diffs it as text): edited, and created under
    // a name with glob characters and a space.
    execute(&mut run, "printf 'cr\\350me\\n' >> latin1.txt").await;
    execute(&mut run, "printf 'd\\351j\\340 vu\\n' > 'odd *name?.txt'").await;
    // Harness activity that must leave nothing behind.
    execute(
        &mut run,
        "search_dir return\nfind_file '*.py'\ngoto 1\nsearch_file o",
    )
    .await;
    run.aci.state().await.unwrap();
    let step = run.aci.execute("submit").await.unwrap();
    let patch = step.submission.clone().unwrap();
    assert!(!patch.is_empty());
    // A second submit gives the same patch: the first left nothing in the repository.
    assert_eq!(run.aci.submit().await.unwrap(), patch);
    let expected = repo_tree(&mut run.aci).await;
    run.shutdown().await;

    // JSON can carry it: the files that are not UTF-8 are in git's binary format, the rest is
    // text as before.
    let text = String::from_utf8(patch.clone()).expect("the patch is UTF-8");
    assert!(text.contains("+    return 2\n"), "{text}");
    for binary in ["latin1.txt", "odd *name?.txt"] {
        let section = &text[text.find(&format!("diff --git a/{binary} ")).unwrap()..];
        let next = section[1..]
            .find("diff --git ")
            .map_or(section.len(), |i| i + 1);
        assert!(
            section[..next].contains("GIT binary patch"),
            "{binary}: {text}"
        );
    }
    assert_eq!(
        touched(&text),
        names(&[
            "blob.bin",
            "change.py",
            "crlf.txt",
            "dir with space/new name.txt",
            "dir with space/old name.txt",
            "image.bin",
            "new dir/new file.py",
            "latin1.txt",
            "no newline.txt",
            "nonl.txt",
            "odd *name?.txt",
            "remove.txt",
        ]),
        "{text}"
    );
    for harness_file in [".git/", "aci-submission", "aci_submission", "__aci"] {
        assert!(!text.contains(harness_file), "{harness_file} in\n{text}");
    }
    assert!(text.contains("GIT binary patch"), "{text}");
    assert!(text.contains("\\ No newline at end of file"), "{text}");

    let checkout = fresh_checkout(original.path());
    // Outside the checkout, and in a directory of this test's own: the docker and local
    // variants run in parallel.
    let patch_dir = tempfile::tempdir().unwrap();
    let patch_file = patch_dir.path().join("submission.patch");
    std::fs::write(&patch_file, &patch).unwrap();
    let patch_arg = patch_file.to_str().unwrap();
    git(checkout.path(), &["apply", "--check", patch_arg]);
    git(checkout.path(), &["apply", patch_arg]);
    let mut applied = host_tree(checkout.path());
    applied.retain(|path, _| !path.starts_with(".git/"));
    let diff = tree_diff(&expected, &applied);
    assert!(
        diff.is_empty(),
        "applying the patch gave other files:\n{diff}"
    );
    std::fs::remove_file(patch_file).unwrap();
}

async fn an_untouched_repository_submits_an_empty_patch(kind: Kind) {
    let original = original();
    let mut run = start(kind, original.path()).await;
    execute(&mut run, "open change.py\nsearch_dir f\ncd tests").await;
    let step = run.aci.execute("submit").await.unwrap();
    assert_eq!(step.submission, Some(Vec::new()));
    assert_eq!(step.observation, "");
    // submit leaves the shell where the model put it.
    assert_eq!(
        execute(&mut run, "pwd").await,
        format!("{}/tests", run.repo_dir)
    );
    run.shutdown().await;
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod docker {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(super::Kind::Docker).await;
            })*
        }
        mod local {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(super::Kind::Local).await;
            })*
        }
    };
}

on_both!(
    the_patch_applies_to_a_fresh_checkout_and_gives_the_same_files,
    an_untouched_repository_submits_an_empty_patch,
);
