//! The bridge with `sh` in ssh's place: real processes, the same pipes.

use std::io::{BufRead, Read, Write};
use std::os::unix::net::UnixStream;

use super::*;

fn sh(script: &str) -> SshBridge {
    SshBridge::start_with("sh", vec!["-c".to_owned(), script.to_owned()]).unwrap()
}

#[test]
fn each_connection_is_carried_both_ways_by_a_child_of_its_own() {
    let bridge = sh("echo \"child $$\"; exec cat");
    let mode = std::fs::metadata(bridge.socket().parent().unwrap())
        .unwrap()
        .permissions();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.mode() & 0o777, 0o700);
    let mut pids = Vec::new();
    for request in ["GET /_ping HTTP/1.1\r\n\r\n", "second\n"] {
        let mut client = UnixStream::connect(bridge.socket()).unwrap();
        client.write_all(request.as_bytes()).unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        let (first, echoed) = answer.split_once('\n').unwrap();
        assert_eq!(echoed, request);
        pids.push(first.strip_prefix("child ").unwrap().to_owned());
    }
    assert_ne!(pids[0], pids[1]);
    // The children ended with their input: nothing failed.
    assert_eq!(bridge.failure(), None);
}

#[test]
fn a_failed_child_s_last_line_is_there_when_its_client_sees_the_end() {
    let bridge = sh(
        "echo 'Warning: a first line' >&2; echo 'root@h: Permission denied (publickey).' >&2; exit 255",
    );
    let mut client = UnixStream::connect(bridge.socket()).unwrap();
    client.write_all(b"GET /_ping HTTP/1.1\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    client.read_to_end(&mut answer).unwrap();
    assert!(answer.is_empty());
    assert_eq!(
        bridge.failure().as_deref(),
        Some("root@h: Permission denied (publickey).")
    );
}

#[test]
fn dropping_the_bridge_ends_its_children_and_removes_its_directory() {
    let bridge = sh("echo $$; exec sleep 600");
    let mut client = std::io::BufReader::new(UnixStream::connect(bridge.socket()).unwrap());
    let mut pid = String::new();
    client.read_line(&mut pid).unwrap();
    let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(proc.exists());
    let dir = bridge.socket().parent().unwrap().to_owned();
    drop(bridge);
    // Killed and waited for: not even a zombie is left.
    assert!(!proc.exists());
    assert!(!dir.exists());
    // And the client sees its connection end.
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}
