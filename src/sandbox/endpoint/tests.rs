use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

/// A file system of `(path, text)` pairs.
fn files(entries: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
    let map: BTreeMap<PathBuf, String> = entries
        .iter()
        .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
        .collect();
    move |path| map.get(path).cloned()
}

fn blank() -> DockerEnv {
    DockerEnv {
        config_dir: PathBuf::from("/home/u/.docker"),
        ..DockerEnv::default()
    }
}

const CERTS: [(&str, &str); 3] = [
    ("/certs/ca.pem", "ca"),
    ("/certs/cert.pem", "cert"),
    ("/certs/key.pem", "key"),
];

fn tls_at(dir: &str) -> TlsFiles {
    TlsFiles {
        ca: PathBuf::from(format!("{dir}/ca.pem")),
        cert: PathBuf::from(format!("{dir}/cert.pem")),
        key: PathBuf::from(format!("{dir}/key.pem")),
    }
}

#[test]
fn nothing_set_is_the_local_socket() {
    let resolved = resolve(&blank(), &files(&[])).unwrap();
    assert_eq!(
        resolved.endpoint,
        Endpoint::Unix {
            path: "/var/run/docker.sock".to_owned()
        }
    );
    assert!(resolved.is_local());
    assert_eq!(
        resolved.describe(),
        "unix:///var/run/docker.sock (the default)"
    );
}

#[test]
fn docker_host_tcp_with_tls_verify_takes_the_cert_path_files() {
    let env = DockerEnv {
        host: Some("tcp://10.0.0.5:2376".to_owned()),
        tls_verify: Some("1".to_owned()),
        cert_path: Some("/certs".to_owned()),
        ..blank()
    };
    let resolved = resolve(&env, &files(&CERTS)).unwrap();
    assert_eq!(
        resolved.endpoint,
        Endpoint::Tcp {
            addr: "10.0.0.5:2376".to_owned(),
            tls: Some(tls_at("/certs")),
        }
    );
    assert!(!resolved.is_local());
    assert_eq!(
        resolved.describe(),
        "tcp://10.0.0.5:2376 with TLS (DOCKER_HOST)"
    );
}

#[test]
fn tls_verify_without_a_cert_path_reads_the_config_dir() {
    let env = DockerEnv {
        host: Some("tcp://h:2376".to_owned()),
        tls_verify: Some("1".to_owned()),
        ..blank()
    };
    let error = resolve(&env, &files(&[])).unwrap_err();
    assert_eq!(
        error,
        "DOCKER_TLS_VERIFY is set, but /home/u/.docker/ca.pem cannot be read (DOCKER_CERT_PATH \
         names the directory of ca.pem, cert.pem and key.pem)"
    );
    let certs = [
        ("/home/u/.docker/ca.pem", ""),
        ("/home/u/.docker/cert.pem", ""),
        ("/home/u/.docker/key.pem", ""),
    ];
    let resolved = resolve(&env, &files(&certs)).unwrap();
    assert_eq!(
        resolved.endpoint,
        Endpoint::Tcp {
            addr: "h:2376".to_owned(),
            tls: Some(tls_at("/home/u/.docker")),
        }
    );
}

#[test]
fn plain_tcp_is_plain_http_as_the_cli_does() {
    let env = DockerEnv {
        host: Some("tcp://127.0.0.1:2375".to_owned()),
        ..blank()
    };
    let resolved = resolve(&env, &files(&[])).unwrap();
    assert_eq!(
        resolved.endpoint,
        Endpoint::Tcp {
            addr: "127.0.0.1:2375".to_owned(),
            tls: None
        }
    );
}

#[test]
fn a_unix_docker_host_is_its_path() {
    let env = DockerEnv {
        host: Some("unix:///run/podman/podman.sock".to_owned()),
        ..blank()
    };
    let resolved = resolve(&env, &files(&[])).unwrap();
    assert_eq!(
        resolved.describe(),
        "unix:///run/podman/podman.sock (DOCKER_HOST)"
    );
}

#[test]
fn hosts_aci_cannot_reach_are_one_line_each() {
    let cases = [
        (
            "npipe:////./pipe/docker_engine",
            "DOCKER_HOST=npipe:////./pipe/docker_engine: aci reaches a daemon at unix:///PATH, \
             tcp://HOST:PORT (TLS with DOCKER_TLS_VERIFY=1) or ssh://[USER@]HOST[:PORT]",
        ),
        (
            "tcp://host-without-port",
            "DOCKER_HOST=tcp://host-without-port: aci reaches a daemon at unix:///PATH, \
             tcp://HOST:PORT (TLS with DOCKER_TLS_VERIFY=1) or ssh://[USER@]HOST[:PORT]",
        ),
        (
            "unix://relative.sock",
            "DOCKER_HOST=unix://relative.sock: a socket's path is absolute: unix:///PATH",
        ),
        (
            "https://h:2376",
            "DOCKER_HOST=https://h:2376: https needs DOCKER_TLS_VERIFY=1 and the certificates of \
             DOCKER_CERT_PATH",
        ),
    ];
    for (host, message) in cases {
        let env = DockerEnv {
            host: Some(host.to_owned()),
            ..blank()
        };
        assert_eq!(resolve(&env, &files(&[])).unwrap_err(), message, "{host}");
    }
}

#[test]
fn tls_without_verification_is_refused() {
    let env = DockerEnv {
        host: Some("tcp://h:2376".to_owned()),
        tls: Some("1".to_owned()),
        ..blank()
    };
    let error = resolve(&env, &files(&[])).unwrap_err();
    assert!(
        error.starts_with("DOCKER_TLS is set without DOCKER_TLS_VERIFY: aci does not talk to a daemon whose certificate it cannot verify"),
        "{error}"
    );
}

/// The endpoint `DOCKER_HOST=host` resolves to.
fn ssh_of(host: &str) -> Result<SshTarget, String> {
    let env = DockerEnv {
        host: Some(host.to_owned()),
        ..blank()
    };
    match resolve(&env, &files(&[]))?.endpoint {
        Endpoint::Ssh(target) => Ok(target),
        other => panic!("{host} is {other:?}"),
    }
}

#[test]
fn an_ssh_host_is_its_user_host_and_port_and_runs_dial_stdio_as_the_cli_does() {
    let target = ssh_of("ssh://root@10.0.0.5:2222").unwrap();
    assert_eq!(
        target,
        SshTarget {
            user: Some("root".to_owned()),
            host: "10.0.0.5".to_owned(),
            port: Some(2222),
            socket: None,
        }
    );
    // The CLI's `ssh -o ConnectTimeout=30 -T -l root -p 2222 -- 10.0.0.5 docker system
    // dial-stdio`, with BatchMode so that nothing prompts.
    assert_eq!(
        target.command(),
        [
            "-o",
            "ConnectTimeout=30",
            "-o",
            "BatchMode=yes",
            "-T",
            "-l",
            "root",
            "-p",
            "2222",
            "--",
            "10.0.0.5",
            "docker",
            "system",
            "dial-stdio"
        ]
    );
    let env = DockerEnv {
        host: Some("ssh://root@10.0.0.5:2222".to_owned()),
        ..blank()
    };
    let resolved = resolve(&env, &files(&[])).unwrap();
    assert!(!resolved.is_local());
    assert_eq!(
        resolved.describe(),
        "ssh://root@10.0.0.5:2222 (DOCKER_HOST)"
    );

    // No user or port: ssh's own (`~/.ssh/config`, then 22 and the local user's name).
    let bare = ssh_of("ssh://build-host").unwrap();
    assert_eq!((bare.user.as_deref(), bare.port), (None, None));
    assert_eq!(
        bare.command(),
        [
            "-o",
            "ConnectTimeout=30",
            "-o",
            "BatchMode=yes",
            "-T",
            "--",
            "build-host",
            "docker",
            "system",
            "dial-stdio"
        ]
    );
    assert_eq!(bare.url(), "ssh://build-host");
    // What the hint of an unreachable daemon says to try by hand.
    assert_eq!(
        bare.probe(),
        [
            "-o",
            "ConnectTimeout=30",
            "-o",
            "BatchMode=yes",
            "-T",
            "--",
            "build-host",
            "docker",
            "version"
        ]
    );

    // A path is the remote daemon's socket, handed to the remote `docker --host`.
    let socketed = ssh_of("ssh://me@h/run/user/1000/docker.sock").unwrap();
    assert_eq!(
        socketed.socket.as_deref(),
        Some("/run/user/1000/docker.sock")
    );
    assert_eq!(
        socketed.command()[8..],
        [
            "h",
            "docker",
            "--host",
            "unix:///run/user/1000/docker.sock",
            "system",
            "dial-stdio"
        ]
    );
    assert_eq!(socketed.url(), "ssh://me@h/run/user/1000/docker.sock");
    // A lone `/` is no path.
    assert_eq!(ssh_of("ssh://me@h:22/").unwrap().socket, None);

    // An IPv6 address is written in brackets and passed without them.
    let six = ssh_of("ssh://[::1]:2200").unwrap();
    assert_eq!((six.host.as_str(), six.port), ("::1", Some(2200)));
    assert_eq!(six.url(), "ssh://[::1]:2200");
}

#[test]
fn ssh_urls_the_cli_refuses_are_one_line_each() {
    let form = "an ssh URL is ssh://[USER@]HOST[:PORT][/SOCKET]";
    let cases = [
        (
            "ssh://me:secret@h",
            "DOCKER_HOST=ssh://me:secret@h: an ssh URL carries no password: ssh logs in with a \
             key (its agent, or the IdentityFile of ~/.ssh/config), and aci runs it with \
             BatchMode=yes"
                .to_owned(),
        ),
        (
            "ssh://me@",
            format!("DOCKER_HOST=ssh://me@: {form}: the host is empty"),
        ),
        (
            "ssh://@h",
            format!("DOCKER_HOST=ssh://@h: {form}: the user before @ is empty"),
        ),
        (
            "ssh://h:x",
            format!("DOCKER_HOST=ssh://h:x: {form}: the port `x` is not a number of 0 to 65535"),
        ),
        (
            "ssh://h:70000",
            format!(
                "DOCKER_HOST=ssh://h:70000: {form}: the port `70000` is not a number of 0 to 65535"
            ),
        ),
        (
            "ssh://h?x=1",
            format!("DOCKER_HOST=ssh://h?x=1: {form}, without a query (?x=1)"),
        ),
        (
            "ssh://h#f",
            format!("DOCKER_HOST=ssh://h#f: {form}, without a fragment (#f)"),
        ),
        (
            "ssh://[::1:22",
            format!("DOCKER_HOST=ssh://[::1:22: {form}: the [ of an IPv6 address is not closed"),
        ),
    ];
    for (host, message) in cases {
        assert_eq!(ssh_of(host).unwrap_err(), message, "{host}");
    }
}

#[test]
fn a_context_may_name_an_ssh_host() {
    let id = remote_id();
    let meta = format!("/home/u/.docker/contexts/meta/{id}/meta.json");
    let entries = [(
        meta.as_str(),
        r#"{"Name":"remote","Metadata":{},"Endpoints":{"docker":{"Host":"ssh://deploy@build-host","SkipTLSVerify":false}}}"#,
    )];
    let read = files(&entries);
    let env = DockerEnv {
        context: Some("remote".to_owned()),
        ..blank()
    };
    let resolved = resolve(&env, &read).unwrap();
    assert_eq!(
        resolved.endpoint,
        Endpoint::Ssh(SshTarget {
            user: Some("deploy".to_owned()),
            host: "build-host".to_owned(),
            port: None,
            socket: None,
        })
    );
    assert_eq!(
        resolved.describe(),
        "ssh://deploy@build-host (context `remote`)"
    );
}

/// The directory the CLI stores the context `remote` under: the hex of its name's sha256.
fn remote_id() -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(b"remote"))
}

#[test]
fn the_current_context_of_config_json_names_a_stored_endpoint_and_its_certificates() {
    let id = remote_id();
    assert_eq!(
        id,
        "b71199ebd070b36beab7317920c2c2f1d777df8d05e5527d8458fda57cb17a7a"
    );
    let meta = format!("/home/u/.docker/contexts/meta/{id}/meta.json");
    let tls = format!("/home/u/.docker/contexts/tls/{id}/docker");
    let entries = [
        ("/home/u/.docker/config.json", r#"{"currentContext": "remote"}"#.to_owned()),
        (
            meta.as_str(),
            r#"{"Name":"remote","Metadata":{},"Endpoints":{"docker":{"Host":"tcp://10.1.2.3:2376","SkipTLSVerify":false}}}"#.to_owned(),
        ),
        (&format!("{tls}/ca.pem"), String::new()),
        (&format!("{tls}/cert.pem"), String::new()),
        (&format!("{tls}/key.pem"), String::new()),
    ];
    let entries: Vec<(String, String)> = entries
        .into_iter()
        .map(|(path, text)| (path.to_owned(), text))
        .collect();
    let borrowed: Vec<(&str, &str)> = entries
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    let read = files(&borrowed);
    let resolved = resolve(&blank(), &read).unwrap();
    assert_eq!(
        resolved.endpoint,
        Endpoint::Tcp {
            addr: "10.1.2.3:2376".to_owned(),
            tls: Some(tls_at(&tls)),
        }
    );
    assert_eq!(
        resolved.describe(),
        "tcp://10.1.2.3:2376 with TLS (context `remote`)"
    );
    // DOCKER_HOST still wins over the context, as with the CLI.
    let env = DockerEnv {
        host: Some("unix:///var/run/docker.sock".to_owned()),
        ..blank()
    };
    assert!(resolve(&env, &read).unwrap().is_local());
    // And `default` is the local socket whatever config.json says.
    let env = DockerEnv {
        context: Some("default".to_owned()),
        ..blank()
    };
    assert!(resolve(&env, &read).unwrap().is_local());
}

#[test]
fn a_context_that_does_not_exist_or_skips_verification_is_refused() {
    let env = DockerEnv {
        context: Some("remote".to_owned()),
        ..blank()
    };
    let id = remote_id();
    assert_eq!(
        resolve(&env, &files(&[])).unwrap_err(),
        format!(
            "the Docker context `remote` (DOCKER_CONTEXT) does not exist: \
             /home/u/.docker/contexts/meta/{id}/meta.json cannot be read"
        )
    );
    let meta = format!("/home/u/.docker/contexts/meta/{id}/meta.json");
    let skip = r#"{"Endpoints":{"docker":{"Host":"tcp://h:2376","SkipTLSVerify":true}}}"#;
    assert_eq!(
        resolve(&env, &files(&[(&meta, skip)])).unwrap_err(),
        "the Docker context `remote` skips verifying the daemon's certificate (SkipTLSVerify): \
         aci does not talk to a daemon it cannot verify"
    );
    let bad = "{not json";
    assert!(
        resolve(&env, &files(&[(&meta, bad)]))
            .unwrap_err()
            .starts_with(&format!("{meta} is not JSON: "))
    );
}

#[test]
fn podman_is_found_by_container_host_first() {
    let env = PodmanEnv {
        host: Some("unix:///tmp/p.sock".to_owned()),
        root: true,
        runtime_dir: Some("/run/user/1000".to_owned()),
        uid: 0,
    };
    let resolved = resolve_podman(&env).unwrap();
    assert_eq!(resolved.describe(), "unix:///tmp/p.sock (CONTAINER_HOST)");
}

#[test]
fn podman_as_root_and_rootless_have_their_sockets() {
    let root = PodmanEnv {
        root: true,
        uid: 0,
        ..PodmanEnv::default()
    };
    assert_eq!(
        resolve_podman(&root).unwrap().describe(),
        "unix:///run/podman/podman.sock (Podman's socket as root)"
    );
    let rootless = PodmanEnv {
        runtime_dir: Some("/run/user/1000/".to_owned()),
        uid: 1000,
        ..PodmanEnv::default()
    };
    assert_eq!(
        resolve_podman(&rootless).unwrap().describe(),
        "unix:///run/user/1000/podman/podman.sock (Podman's rootless socket)"
    );
    let no_runtime_dir = PodmanEnv {
        uid: 1001,
        ..PodmanEnv::default()
    };
    assert_eq!(
        resolve_podman(&no_runtime_dir).unwrap().url(),
        "unix:///run/user/1001/podman/podman.sock"
    );
}

#[test]
fn a_container_host_aci_cannot_reach_is_one_line() {
    let env = PodmanEnv {
        host: Some("npipe:////./pipe/podman".to_owned()),
        ..PodmanEnv::default()
    };
    let error = resolve_podman(&env).unwrap_err();
    assert!(
        error.starts_with("CONTAINER_HOST=npipe:////./pipe/podman: "),
        "{error}"
    );
}
