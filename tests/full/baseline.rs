//! The repository the agent sees looks like a fresh clone: the baseline commit's objects are
//! compressed in one pack, so `grep -r` over the working tree prints only the files' own lines
//! (no `.git/objects/...: binary file matches`) and `find` lists no loose objects. Checked in a
//! container on the real daemon (never skipped) and on the local runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use aci::sandbox::Sandbox;
use support::{Kind, SHORT, start};

async fn grep_finds_only_the_working_tree(kind: Kind) {
    let (mut sandbox, _repo) = start(kind, "baseline-grep").await;
    // The body of pkg/calc.py, which the baseline's blob holds too.
    let grep = sandbox.run("grep -rF 'a + b' .", SHORT).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&grep.stdout),
        "./pkg/calc.py:    return a + b\n",
        "{kind:?}"
    );
    assert_eq!(String::from_utf8_lossy(&grep.stderr), "", "{kind:?}");

    let objects = sandbox
        .run(
            "find .git/objects -type f ! -path '.git/objects/pack/*' | wc -l; \
             ls .git/objects/pack | grep -c '[.]pack$'; \
             git count-objects -v | grep -E '^(count|in-pack):'",
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&objects.stdout),
        "0\n1\ncount: 0\nin-pack: 8\n",
        "one commit, three trees (root, pkg, tests) and four blobs, all in one pack ({kind:?})"
    );
    sandbox.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_container_grep_finds_only_the_working_tree() {
    grep_finds_only_the_working_tree(Kind::Docker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_local_runtime_grep_finds_only_the_working_tree() {
    grep_finds_only_the_working_tree(Kind::Local).await;
}
