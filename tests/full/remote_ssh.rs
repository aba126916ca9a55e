//! A remote Docker daemon behind ssh: `DOCKER_HOST=ssh://root@127.0.0.1:PORT`, against an
//! sshd this test starts on a loopback port with its own host key and an `authorized_keys` of a
//! key it generates. As with the Docker CLI, aci runs `ssh` from `PATH`: the test puts first on
//! it an `ssh` that passes `-F` with the test's own config (key, known hosts), as a user's
//! `~/.ssh/config` would say the same. One instance is run and evaluated through it; nothing of
//! the bridge is left afterwards; a key the server does not know, a host key the client does
//! not, and a remote without `docker` are one line each. The remote is this machine: its
//! `docker` CLI (on sshd's `PATH`) runs `docker system dial-stdio` to the local daemon.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::batch_support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use batch_support::*;

/// The sshd of the test; killed when dropped.
struct Sshd {
    child: Child,
    port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ssh-keygen` of an ed25519 key without a passphrase at `path` (and `path.pub`).
fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "aci-test", "-f"])
        .arg(path)
        .status()
        .expect("this test needs ssh-keygen (openssh-client; tests/host-deps.sh)");
    assert!(status.success());
}

/// Starts sshd on a free loopback port, accepting root with the keys of `authorized` only and
/// with `extra` in its config, and returns once it listens.
fn start_sshd(dir: &Path, host_key: &Path, authorized: &Path, extra: &str) -> Sshd {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join(format!("sshd_config.{port}"));
    std::fs::write(
        &config,
        format!(
            "HostKey {}\nAuthorizedKeysFile {}\nListenAddress 127.0.0.1\nPermitRootLogin \
             prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             UsePAM no\nStrictModes no\nPidFile none\n{extra}",
            host_key.display(),
            authorized.display()
        ),
    )
    .unwrap();
    // Its privilege separation directory, which the service would make.
    std::fs::create_dir_all("/run/sshd").unwrap();
    let mut child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .args(["-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("this test needs /usr/sbin/sshd (openssh-server; tests/host-deps.sh)");
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let listening = format!("Server listening on 127.0.0.1 port {port}.");
    let mut said = Vec::new();
    loop {
        match lines.next() {
            Some(Ok(line)) if line == listening => break,
            Some(Ok(line)) => said.push(line),
            _ => panic!("sshd did not start: {}", said.join("\n")),
        }
    }
    // The rest of its log is drained, so that it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Sshd { child, port }
}

/// A directory holding an `ssh` that runs the real one with `-F config`, `config` naming
/// `identity` and `known_hosts` for every host: the directory to put first on `PATH`.
fn ssh_with(dir: &Path, name: &str, identity: &Path, known_hosts: &Path) -> PathBuf {
    let bin = dir.join(name);
    std::fs::create_dir_all(&bin).unwrap();
    let config = dir.join(format!("{name}.config"));
    std::fs::write(
        &config,
        format!(
            "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  \
             StrictHostKeyChecking yes\n",
            identity.display(),
            known_hosts.display()
        ),
    )
    .unwrap();
    let ssh = bin.join("ssh");
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"\n",
            config.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `aci <args>` with the daemon at `ssh://root@127.0.0.1:port`, `bin` first on `PATH` and the
/// temporary files in `tmp`.
fn aci_ssh(port: u16, bin: &Path, tmp: &Path, args: &[&str]) -> Run {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    aci()
        .args(args)
        .env("DOCKER_HOST", format!("ssh://root@127.0.0.1:{port}"))
        .env("PATH", path)
        .env("TMPDIR", tmp)
        .output()
        .unwrap()
        .into()
}

/// The ssh processes still running with `-p port`: the bridge's children.
fn ssh_children(port: u16) -> Vec<String> {
    let port = port.to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&byte| byte == 0)
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect();
        let is_ssh = args.first().is_some_and(|arg| arg == "/usr/bin/ssh");
        if is_ssh
            && args
                .windows(2)
                .any(|pair| pair[0] == "-p" && pair[1] == port)
        {
            found.push(args.join(" "));
        }
    }
    found
}

#[test]
fn a_run_and_its_evaluation_through_ssh_and_one_line_for_each_failure() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let (host_key, client, stranger) = (
        keys.join("host"),
        keys.join("client"),
        keys.join("stranger"),
    );
    for key in [&host_key, &client, &stranger] {
        keygen(key);
    }
    let sshd = start_sshd(dir.path(), &host_key, &keys.join("client.pub"), "");
    let port = sshd.port;
    let known = dir.path().join("known_hosts");
    let host_pub = std::fs::read_to_string(keys.join("host.pub")).unwrap();
    std::fs::write(&known, format!("[127.0.0.1]:{port} {host_pub}")).unwrap();
    let good = ssh_with(dir.path(), "good", &client, &known);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();

    let instances = demo_dir().join("instances.jsonl");
    let replays = demo_dir().join("replays");
    let out = dir.path().join("run");
    let run = run_id("remote-ssh");
    let ran = aci_ssh(
        port,
        &good,
        &tmp,
        &[
            "run",
            "--instances",
            instances.to_str().unwrap(),
            "--id",
            "demo__inicfg-1",
            "--replay",
            replays.join("demo__inicfg-1.yaml").to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--run-id",
            &run,
        ],
    );
    ran.expect_code(0);
    assert_eq!(
        ran.stdout,
        format!(
            "demo__inicfg-1\tsubmitted\t{}\n",
            out.join("demo__inicfg-1/demo__inicfg-1.patch").display()
        )
    );
    // The daemon is remote: the quota is only measured.
    assert!(
        ran.stderr.contains(&format!(
            "the daemon is reached at ssh://root@127.0.0.1:{port}, so its storage is not on this \
             machine"
        )),
        "{}",
        ran.stderr
    );

    let eval_out = dir.path().join("eval");
    let eval_run = run_id("remote-ssh-eval");
    aci_ssh(
        port,
        &good,
        &tmp,
        &[
            "eval",
            "--instances",
            instances.to_str().unwrap(),
            "--predictions",
            out.join("preds.json").to_str().unwrap(),
            "--output",
            eval_out.to_str().unwrap(),
            "--run-id",
            &eval_run,
        ],
    )
    .expect_code(0);
    let report = read_json(&eval_out.join("report.json"));
    assert_eq!(
        report["resolved_ids"],
        serde_json::json!(["demo__inicfg-1"])
    );
    assert_eq!(
        report["completed_ids"],
        serde_json::json!(["demo__inicfg-1"])
    );
    assert!(containers_of(&run).is_empty() && containers_of(&eval_run).is_empty());
    // Nothing of the bridge is left: no ssh child, no socket directory.
    assert_eq!(ssh_children(port), Vec::<String>::new());
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("aci-ssh-"))
        .collect();
    assert_eq!(left, Vec::<String>::new());

    // A key the server does not know: ssh's own last line, before anything starts.
    let (replay, refused_out) = (
        replays.join("demo__inicfg-1.yaml"),
        dir.path().join("refused"),
    );
    let refused_run = [
        "run",
        "--instances",
        instances.to_str().unwrap(),
        "--id",
        "demo__inicfg-1",
        "--replay",
        replay.to_str().unwrap(),
        "--output",
        refused_out.to_str().unwrap(),
    ];
    let wrong_key = ssh_with(dir.path(), "wrong-key", &stranger, &known);
    let refused = aci_ssh(port, &wrong_key, &tmp, &refused_run);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert_eq!(
        refused.stderr,
        format!(
            "error: docker: cannot reach the Docker daemon at ssh://root@127.0.0.1:{port} \
             (DOCKER_HOST): ssh: root@127.0.0.1: Permission denied (publickey).\n\
             hint: `ssh -o ConnectTimeout=30 -o BatchMode=yes -T -l root -p {port} -- 127.0.0.1 \
             docker version` must work without a prompt: a key of ~/.ssh/config or the agent, \
             the host in known_hosts, docker on the remote PATH (docs/runtimes.md, \"A remote \
             daemon\")\n"
        )
    );
    // A host key the client has not been told of: BatchMode refuses it rather than asking.
    let nobody_known = dir.path().join("no_known_hosts");
    std::fs::write(&nobody_known, "").unwrap();
    let unknown_host = ssh_with(dir.path(), "unknown-host", &client, &nobody_known);
    let unverified = aci_ssh(port, &unknown_host, &tmp, &refused_run);
    assert_eq!(unverified.code, Some(1), "{}", unverified.stderr);
    assert_eq!(
        unverified.stderr.lines().next(),
        Some(
            format!(
                "error: docker: cannot reach the Docker daemon at ssh://root@127.0.0.1:{port} \
                 (DOCKER_HOST): ssh: Host key verification failed."
            )
            .as_str()
        ),
        "{}",
        unverified.stderr
    );
    assert_eq!(ssh_children(port), Vec::<String>::new());

    // A remote whose `PATH` has no `docker`: the shell's own last line.
    let bare = start_sshd(
        dir.path(),
        &host_key,
        &keys.join("client.pub"),
        "SetEnv PATH=/nonexistent\n",
    );
    std::fs::write(
        &known,
        format!(
            "[127.0.0.1]:{port} {host_pub}[127.0.0.1]:{} {host_pub}",
            bare.port
        ),
    )
    .unwrap();
    let no_docker = aci_ssh(bare.port, &good, &tmp, &refused_run);
    assert_eq!(no_docker.code, Some(1), "{}", no_docker.stderr);
    let first = no_docker.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "error: docker: cannot reach the Docker daemon at ssh://root@127.0.0.1:{} \
             (DOCKER_HOST): ssh: ",
            bare.port
        )) && first.ends_with("docker: command not found"),
        "{}",
        no_docker.stderr
    );
    drop((sshd, bare));
}
