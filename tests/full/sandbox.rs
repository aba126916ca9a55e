//! The sandbox contract, on the real Docker daemon and on the local runtime alike.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use aci::sandbox::{AnySandbox, FileErrorKind, Sandbox, SandboxError};
use support::{Kind, SHORT, start};

/// Generates one `#[tokio::test]` per runtime for a behaviour `async fn(AnySandbox, Kind)`.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod docker {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (sandbox, _repo) = super::start(super::Kind::Docker, stringify!($name)).await;
                super::$name(sandbox, super::Kind::Docker).await;
            })*
        }
        mod local {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (sandbox, _repo) = super::start(super::Kind::Local, stringify!($name)).await;
                super::$name(sandbox, super::Kind::Local).await;
            })*
        }
    };
}

on_both!(
    working_directory_and_exports_persist_between_commands,
    exit_codes_and_stderr_are_reported_apart,
    output_is_exact_without_a_trailing_newline_and_in_bytes,
    merged_output_interleaves_stderr,
    a_hung_command_times_out_and_the_next_command_works,
    exit_reopens_the_session,
    commands_never_read_the_protocol_stdin,
    a_syntax_error_fails_at_once_instead_of_hanging,
    files_are_read_and_written_byte_exactly,
    file_errors_say_what_is_wrong,
    the_repository_has_a_clean_git_baseline,
    huge_output_keeps_head_and_tail_with_a_note,
);

async fn working_directory_and_exports_persist_between_commands(mut s: AnySandbox, _: Kind) {
    let repo = s.repo_dir().to_owned();
    let out = s.run("pwd", SHORT).await.unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{repo}\n"));
    s.run("cd pkg && export FOO='bar baz'", SHORT)
        .await
        .unwrap();
    let out = s
        .run("pwd; echo \"$FOO\"; echo $ACI_TEST", SHORT)
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{repo}/pkg\nbar baz\nyes\n")
    );
    s.shutdown().await.unwrap();
}

async fn exit_codes_and_stderr_are_reported_apart(mut s: AnySandbox, _: Kind) {
    let out = s
        .run("echo out; echo err >&2; (exit 42)", SHORT)
        .await
        .unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice(), out.exit_code),
        (&b"out\n"[..], &b"err\n"[..], Some(42))
    );
    let out = s.run("false", SHORT).await.unwrap();
    assert_eq!(out.exit_code, Some(1));
    let out = s.run("ls /definitely-missing", SHORT).await.unwrap();
    assert_eq!(out.exit_code, Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such file or directory"));
    assert!(!out.timed_out && !out.session_restarted);
    s.shutdown().await.unwrap();
}

async fn output_is_exact_without_a_trailing_newline_and_in_bytes(mut s: AnySandbox, _: Kind) {
    let out = s.run("printf 'no newline'", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"no newline");
    let out = s
        .run("printf '\\377\\376 latin1 \\351\\n\\n\\n'", SHORT)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"\xff\xfe latin1 \xe9\n\n\n");
    let out = s.run("true", SHORT).await.unwrap();
    assert_eq!(
        (out.stdout.len(), out.stderr.len(), out.exit_code),
        (0, 0, Some(0))
    );
    let out = s
        .run("echo 'quotes \" and '\\'' and $HOME-less \\$x'", SHORT)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"quotes \" and ' and $HOME-less \\$x\n");
    s.shutdown().await.unwrap();
}

async fn merged_output_interleaves_stderr(mut s: AnySandbox, _: Kind) {
    let out = s
        .run_merged(
            "echo one; echo two >&2; echo three; exit_code=3; (exit 3)",
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.len(), out.exit_code),
        (&b"one\ntwo\nthree\n"[..], 0, Some(3))
    );
    s.shutdown().await.unwrap();
}

async fn a_hung_command_times_out_and_the_next_command_works(mut s: AnySandbox, _: Kind) {
    s.run("cd pkg", SHORT).await.unwrap();
    let out = s
        .run("echo started; sleep 1000", Duration::from_secs(2))
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.stdout, b"started\n");
    assert!(
        !out.session_restarted,
        "the session should survive a killed command: {out:?}"
    );
    let out = s.run("echo alive; basename \"$PWD\"", SHORT).await.unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.exit_code),
        (&b"alive\npkg\n"[..], Some(0))
    );
    s.shutdown().await.unwrap();
}

async fn exit_reopens_the_session(mut s: AnySandbox, _: Kind) {
    let repo = s.repo_dir().to_owned();
    s.run("cd pkg; export GONE=1", SHORT).await.unwrap();
    let out = s.run("echo bye; exit 3", SHORT).await.unwrap();
    assert!(out.session_restarted, "{out:?}");
    assert_eq!(out.exit_code, None);
    let out = s.run("pwd; echo \"[$GONE]\"", SHORT).await.unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{repo}\n[]\n")
    );
    s.shutdown().await.unwrap();
}

async fn commands_never_read_the_protocol_stdin(mut s: AnySandbox, _: Kind) {
    let out = s
        .run("cat; read line; echo \"read=[$line]\"", SHORT)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"read=[]\n");
    let out = s.run("echo next", SHORT).await.unwrap();
    assert_eq!(out.stdout, b"next\n");
    s.shutdown().await.unwrap();
}

async fn a_syntax_error_fails_at_once_instead_of_hanging(mut s: AnySandbox, _: Kind) {
    let out = s.run("echo \"unterminated", SHORT).await.unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.exit_code, Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unexpected EOF"),
        "{out:?}"
    );
    let out = s.run("if true; then echo x", SHORT).await.unwrap();
    assert_eq!(out.exit_code, Some(2));
    let out = s
        .run("cat <<'EOF'\nheredoc works\nEOF", SHORT)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"heredoc works\n");
    s.shutdown().await.unwrap();
}

async fn files_are_read_and_written_byte_exactly(mut s: AnySandbox, _: Kind) {
    let cases: [(&str, &[u8]); 5] = [
        ("crlf.txt", b"line one\r\nline two\r\n"),
        ("no_newline.py", b"x = 1\ny = 2"),
        ("binary.bin", &[0, 255, 1, 128, 10, 13, 0, 0, 39, 34, 92]),
        ("empty", b""),
        ("dir with space/new dir/café.py", "print('é')\n".as_bytes()),
    ];
    for (path, content) in cases {
        s.write_file(path, content).await.unwrap();
        assert_eq!(s.read_file(path).await.unwrap(), content, "{path}");
    }
    let out = s
        .run("wc -c < crlf.txt; od -An -c no_newline.py | tail -1", SHORT)
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next(),
        Some("20")
    );
    let big: Vec<u8> = (0..5000)
        .flat_map(|i| format!("line {i} of a five thousand line file\n").into_bytes())
        .collect();
    s.write_file("/tmp/big.py", &big).await.unwrap();
    assert_eq!(s.read_file("/tmp/big.py").await.unwrap(), big);
    s.shutdown().await.unwrap();
}

async fn file_errors_say_what_is_wrong(mut s: AnySandbox, _: Kind) {
    let missing = s.read_file("nope.py").await.unwrap_err();
    assert!(
        matches!(
            missing,
            SandboxError::File {
                kind: FileErrorKind::NotFound,
                ..
            }
        ),
        "{missing}"
    );
    let dir = s.read_file("pkg").await.unwrap_err();
    assert!(
        matches!(
            dir,
            SandboxError::File {
                kind: FileErrorKind::IsDirectory,
                ..
            }
        ),
        "{dir}"
    );
    assert_eq!(dir.to_string(), "pkg: Is a directory");
    s.shutdown().await.unwrap();
}

async fn the_repository_has_a_clean_git_baseline(mut s: AnySandbox, _: Kind) {
    let baseline = s.baseline().to_owned();
    let out = s
        .run(
            "git status --porcelain; git rev-parse HEAD; git log --oneline | wc -l",
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{baseline}\n1\n")
    );
    s.run("echo '# more' >> README.md; echo new > new.txt", SHORT)
        .await
        .unwrap();
    let out = s
        .run(
            &format!("git add -A && git diff --cached --stat {baseline}"),
            SHORT,
        )
        .await
        .unwrap();
    let stat = String::from_utf8(out.stdout).unwrap();
    assert!(
        stat.contains("README.md") && stat.contains("new.txt") && stat.contains("2 files changed"),
        "{stat}"
    );
    s.shutdown().await.unwrap();
}

async fn huge_output_keeps_head_and_tail_with_a_note(mut s: AnySandbox, _: Kind) {
    // 20 MB through the session; the limit keeps 64 KiB at each end.
    let out = s
        .run(
            "echo first; head -c 20000000 /dev/zero | tr '\\0' x; echo; echo last",
            SHORT,
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert!(out.stdout.starts_with(b"first\nxxx"));
    assert!(out.stdout.ends_with(b"xxx\nlast\n"));
    let expected_elided = 6 + 20_000_000 + 1 + 5 - 2 * 64 * 1024;
    assert_eq!(out.elided_bytes, expected_elided as u64);
    let note = format!("\n[... {expected_elided} bytes of output elided ...]\n");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&note));
    assert_eq!(out.stdout.len(), 2 * 64 * 1024 + note.len());
    s.shutdown().await.unwrap();
}

mod write_failures {
    use super::*;

    /// A write that fails must still consume its content: nothing of it may reach bash as
    /// commands.
    async fn a_failed_write_runs_none_of_its_content(mut s: AnySandbox) {
        let error = s
            .write_file("pkg", b"touch /tmp/should_not_exist\necho pwned\n")
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                SandboxError::File {
                    kind: FileErrorKind::IsDirectory,
                    ..
                }
            ),
            "{error}"
        );
        let out = s
            .run("ls /tmp/should_not_exist 2>&1; echo next", SHORT)
            .await
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).ends_with("No such file or directory\nnext\n"),
            "{out:?}"
        );
        s.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn docker_a_failed_write_runs_none_of_its_content() {
        let (sandbox, _repo) = start(Kind::Docker, "failed-write").await;
        a_failed_write_runs_none_of_its_content(sandbox).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn local_a_failed_write_runs_none_of_its_content() {
        let (sandbox, _repo) = start(Kind::Local, "failed-write").await;
        a_failed_write_runs_none_of_its_content(sandbox).await;
    }
}

/// A host program named like a command of the interface (xdg-utils installs `open`) never runs
/// from the local session: bash reports the name as missing, as it does in a container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_session_masks_host_programs_named_like_interface_commands() {
    let (mut s, _repo) = start(Kind::Local, "masked-open").await;
    // The host may or may not have `open`: put one first on PATH, so the test does not depend on it.
    s.run(
        "mkdir -p /tmp/aci-mask-$$ && printf '#!/bin/sh\\necho host program ran\\n' > /tmp/aci-mask-$$/open \
         && chmod +x /tmp/aci-mask-$$/open && export PATH=/tmp/aci-mask-$$:$PATH",
        SHORT,
    )
    .await
    .unwrap();
    let out = s
        .run("true && open app.py; echo status $?", SHORT)
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "status 127\n");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.ends_with("open: command not found\n"), "{stderr:?}");
    // Other programs on the same PATH still run, and so does the masked one by its path.
    let out = s
        .run("(open x) 2>&1; echo x | submit 2>&1; \"$(dirname \"$(command -v ls)\")\"/ls -d /; /tmp/aci-mask-$$/open", SHORT)
        .await
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("open: command not found\n"), "{stdout:?}");
    assert!(stdout.contains("submit: command not found\n"), "{stdout:?}");
    assert!(stdout.ends_with("/\nhost program ran\n"), "{stdout:?}");
    s.run("rm -rf /tmp/aci-mask-$$", SHORT).await.unwrap();
    s.shutdown().await.unwrap();
}
