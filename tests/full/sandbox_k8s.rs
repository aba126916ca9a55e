//! The pod engine against the Kubernetes API stand-in (`tests/support/k8s`), each pod a real
//! Docker container: the session, files, interrupts, the network policy, TLS with client
//! certificates, and the faults a cluster brings (an image that never pulls, an eviction, 429s,
//! a stream cut mid-command, a v4-only server). Every test checks that nothing is left: no
//! pod, no policy, no container.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::standin;
use crate::support;

use std::time::{Duration, Instant};

use aci::sandbox::k8s::kubeconfig;
use aci::sandbox::k8s::manifest::PullPolicy;
use aci::sandbox::k8s::status::StartLimits;
use aci::sandbox::k8s::{K8sRuntime, K8sSettings, PodSandbox};
use aci::sandbox::{Sandbox, SandboxError, SandboxSpec};
use standin::{Options, StandIn};

const NS: &str = "aci-test";
const TIMEOUT: Duration = Duration::from_secs(30);

fn settings(pull: Duration) -> K8sSettings {
    K8sSettings {
        namespace: None,
        context: None,
        pull_policy: PullPolicy::IfNotPresent,
        start_limits: StartLimits {
            pull,
            schedule: Duration::from_secs(60),
        },
        pull_secret: None,
        node_selector: Default::default(),
    }
}

async fn connect_with(standin: &StandIn, settings: K8sSettings) -> K8sRuntime {
    let path = standin.kubeconfig().to_owned();
    let text = std::fs::read_to_string(&path).unwrap();
    let config = kubeconfig::from_kubeconfigs(&[(path, text)], None).unwrap();
    K8sRuntime::connect_with(config, settings).await.unwrap()
}

async fn connect(standin: &StandIn) -> K8sRuntime {
    connect_with(standin, settings(Duration::from_secs(120))).await
}

/// Starts a pod over the small repository of the Docker tests.
async fn start(runtime: &K8sRuntime, name: &str) -> (PodSandbox, tempfile::TempDir) {
    let repo = support::small_repo();
    let spec = support::spec(name, Some(repo.path()));
    (runtime.start(&spec, 600.0).await.unwrap(), repo)
}

/// Nothing of the stand-in is left: no pod, no policy, no container.
fn assert_nothing_left(standin: &StandIn) {
    assert_eq!(
        standin.pod_names(),
        Vec::<(String, String)>::new(),
        "pods left"
    );
    assert_eq!(
        standin.policies().len(),
        0,
        "policies left: {:?}",
        standin.policies()
    );
    assert_eq!(
        standin.containers_settled(),
        Vec::<String>::new(),
        "containers left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pod_session_keeps_its_directory_and_exports_and_moves_files_byte_exact() {
    let standin = StandIn::start(Options::default()).await;
    let runtime = connect(&standin).await;
    assert_eq!(
        runtime.namespace(),
        NS,
        "the kubeconfig context's namespace"
    );
    let (mut sandbox, _repo) = start(&runtime, "k8s-session").await;
    let out = sandbox
        .run("cd pkg && export ANSWER=42 && pwd", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"/testbed/pkg\n");
    let out = sandbox
        .run("echo $ANSWER $ACI_TEST; pwd; ls", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "42 yes\n/testbed/pkg\n__init__.py\ncalc.py\n"
    );
    let out = sandbox
        .run("echo to-stderr >&2; exit_code=3; (exit 3)", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(
        (out.stderr, out.exit_code),
        (b"to-stderr\n".to_vec(), Some(3))
    );
    let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    sandbox.write_file("/tmp/blob.bin", &bytes).await.unwrap();
    assert_eq!(sandbox.read_file("/tmp/blob.bin").await.unwrap(), bytes);
    let out = sandbox
        .run("sha256sum /tmp/blob.bin | cut -c1-16", TIMEOUT)
        .await
        .unwrap();
    let expected = {
        use sha2::Digest;
        data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(&bytes)[..8])
    };
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), expected);
    assert_eq!(
        sandbox.read_file("calc.py").await.unwrap(),
        b"def add(a, b):\n    return a + b\n"
    );
    // The baseline is the repository as copied in: git sees no change yet.
    let out = sandbox
        .run("git status --porcelain", TIMEOUT)
        .await
        .unwrap();
    assert_eq!(out.stdout, b"");
    let pod = sandbox.pod_name().to_owned();
    let object = standin.pod(NS, &pod).unwrap();
    assert_eq!(
        object["spec"]["containers"][0]["command"],
        serde_json::json!(["sleep", "infinity"])
    );
    assert_eq!(object["spec"]["automountServiceAccountToken"], false);
    assert_eq!(
        object["metadata"]["labels"]["aci.instance_id"],
        "k8s-session"
    );
    // No network: a deny-all policy selects the pod, and its container got none.
    assert_eq!(standin.policies().len(), 1);
    assert_eq!(standin.pod_network(NS, &pod).as_deref(), Some("none"));
    assert_eq!(
        standin.exec_protocols().first().map(String::as_str),
        Some("v5.channel.k8s.io")
    );
    sandbox.shutdown().await.unwrap();
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_command_past_its_timeout_is_killed_by_a_second_exec_and_the_session_goes_on() {
    let standin = StandIn::start(Options::default()).await;
    let runtime = connect(&standin).await;
    let (mut sandbox, _repo) = start(&runtime, "k8s-timeout").await;
    sandbox.run("cd pkg", TIMEOUT).await.unwrap();
    let execs_before = standin.exec_protocols().len();
    let out = sandbox
        .run("sleep 100", Duration::from_secs(2))
        .await
        .unwrap();
    assert!(out.timed_out && !out.session_restarted, "{out:?}");
    // The interrupt was one more exec beside the session, and the session is the same shell.
    assert_eq!(standin.exec_protocols().len(), execs_before + 1);
    let out = sandbox
        .run(
            "pwd; grep -l '[s]leep.100' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "/testbed/pkg\n0\n");
    sandbox.shutdown().await.unwrap();
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exec_stream_cut_mid_command_is_reopened_like_a_dead_session_and_files_stay() {
    let standin = StandIn::start(Options::default()).await;
    standin.drop_stream_on("ACI-DROP-NOW");
    let runtime = connect(&standin).await;
    let (mut sandbox, _repo) = start(&runtime, "k8s-drop").await;
    sandbox.write_file("notes.txt", b"kept\n").await.unwrap();
    let out = sandbox
        .run("echo ACI-DROP-NOW; sleep 30; echo never", TIMEOUT)
        .await
        .unwrap();
    assert!(out.session_restarted && !out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, None);
    // A new session: the files are there, the command's processes are not.
    let out = sandbox
        .run(
            "cat notes.txt; grep -l '[s]leep.30' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "kept\n0\n");
    sandbox.shutdown().await.unwrap();
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_that_speaks_only_v4_runs_the_same_session() {
    let standin = StandIn::start(Options {
        protocols: vec!["v4.channel.k8s.io"],
        ..Options::default()
    })
    .await;
    let runtime = connect(&standin).await;
    let (mut sandbox, _repo) = start(&runtime, "k8s-v4").await;
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    sandbox.write_file("data.bin", &bytes).await.unwrap();
    assert_eq!(sandbox.read_file("data.bin").await.unwrap(), bytes);
    let out = sandbox
        .run("sleep 100", Duration::from_secs(2))
        .await
        .unwrap();
    assert!(out.timed_out && !out.session_restarted, "{out:?}");
    let out = sandbox.run("echo still here", TIMEOUT).await.unwrap();
    assert_eq!(out.stdout, b"still here\n");
    sandbox.shutdown().await.unwrap();
    let protocols = standin.exec_protocols();
    // The repository upload, the session, the interrupt: every exec spoke v4.
    assert!(protocols.len() >= 3, "{protocols:?}");
    assert!(
        protocols.iter().all(|p| p == "v4.channel.k8s.io"),
        "{protocols:?}"
    );
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tls_server_with_client_certificates_is_reached_through_the_kubeconfig() {
    let standin = StandIn::start(Options {
        tls: true,
        ..Options::default()
    })
    .await;
    assert!(standin.url().starts_with("https://127.0.0.1:"));
    let runtime = connect(&standin).await;
    assert_eq!(
        runtime.namespace(),
        "default",
        "no namespace in the context"
    );
    let (mut sandbox, _repo) = start(&runtime, "k8s-tls").await;
    let out = sandbox.run("cat pkg/calc.py", TIMEOUT).await.unwrap();
    assert_eq!(out.stdout, b"def add(a, b):\n    return a + b\n");
    sandbox.shutdown().await.unwrap();
    assert_nothing_left(&standin);
    // Without the client certificate the server refuses the connection.
    let text = std::fs::read_to_string(standin.kubeconfig()).unwrap();
    let stripped: String = text
        .lines()
        .filter(|line| !line.contains("client-"))
        .map(|line| format!("{line}\n"))
        .collect();
    let config =
        kubeconfig::from_kubeconfigs(&[(standin.kubeconfig().to_owned(), stripped)], None).unwrap();
    let refused = K8sRuntime::connect_with(config, settings(TIMEOUT)).await;
    let message = refused.err().unwrap().to_string();
    assert!(
        message.starts_with("kubernetes: cannot reach the cluster (kubeconfig "),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn busy_answers_are_retried_after_the_servers_retry_after() {
    let standin = StandIn::start(Options::default()).await;
    let runtime = connect(&standin).await;
    standin.throttle("POST", "/pods", 2, 1);
    standin.throttle("GET", "/exec", 1, 1);
    let (mut sandbox, _repo) = start(&runtime, "k8s-429").await;
    let out = sandbox.run("echo ok", TIMEOUT).await.unwrap();
    assert_eq!(out.stdout, b"ok\n");
    sandbox.shutdown().await.unwrap();
    let creates: Vec<_> = standin
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.target.ends_with("/pods"))
        .collect();
    let statuses: Vec<u16> = creates.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 429, 201]);
    // Each retry came no sooner than the server asked.
    for pair in creates.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_secs(1),
            "{pair:?}"
        );
    }
    let execs: Vec<u16> = standin
        .requests()
        .into_iter()
        .filter(|r| r.target.contains("/exec?"))
        .map(|r| r.status)
        .collect();
    assert_eq!(execs.first(), Some(&429));
    assert!(execs[1..].iter().all(|&s| s == 101), "{execs:?}");
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_image_that_never_pulls_fails_the_start_at_the_pull_limit_with_the_reason() {
    let standin = StandIn::start(Options::default()).await;
    standin.never_pull("aci-base");
    let runtime = connect_with(&standin, settings(Duration::from_secs(2))).await;
    let spec = support::spec("k8s-no-pull", None);
    let started = Instant::now();
    let error = runtime.start(&spec, 600.0).await.err().unwrap();
    assert!(started.elapsed() >= Duration::from_secs(2));
    let message = error.to_string();
    assert!(matches!(error, SandboxError::Kubernetes(_)), "{error:?}");
    let expected =
        "the pod's image was not pulled and started in 2 s (env.k8s.pull_timeout) (last seen: ";
    assert!(message.contains(expected), "{message}");
    assert!(
        message.contains("not found") || message.contains("Back-off pulling image"),
        "{message}"
    );
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_eviction_mid_task_ends_the_sandbox_with_the_eviction_message() {
    let standin = StandIn::start(Options::default()).await;
    standin.evict_on("ACI-EVICT-NOW");
    let runtime = connect(&standin).await;
    let (mut sandbox, _repo) = start(&runtime, "k8s-evict").await;
    let error = sandbox
        .run("echo ACI-EVICT-NOW; sleep 30", TIMEOUT)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(error, SandboxError::ContainerDied { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the container for k8s-evict died: the pod was evicted: The node was low on resource: \
         memory. Threshold quantity: 100Mi, available: 12Mi."
    );
    sandbox.shutdown().await.unwrap();
    assert_nothing_left(&standin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runs_pods_are_deleted_by_label_and_a_network_spec_gets_no_policy() {
    let standin = StandIn::start(Options::default()).await;
    let runtime = connect(&standin).await;
    let spec = SandboxSpec {
        network: true,
        ..support::spec("k8s-net", None)
    };
    let pending = runtime.create(&spec, 600.0, true).await.unwrap();
    let other = runtime
        .create(&support::spec("k8s-other", None), 600.0, true)
        .await
        .unwrap();
    let names = runtime.list_pods(Some(&spec.run_id)).await.unwrap();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&pending.name().to_owned()) && names.contains(&other.name().to_owned()));
    // Created ahead: the deadline covers a wait for a worker as well.
    let object = standin.pod(NS, pending.name()).unwrap();
    assert_eq!(
        object["spec"]["activeDeadlineSeconds"],
        600 + 120 + 600 + 120
    );
    assert_eq!(
        standin.policies().len(),
        1,
        "only the pod without network has one"
    );
    assert_eq!(runtime.delete_own(&spec.run_id).await.unwrap(), 2);
    std::mem::forget(pending);
    std::mem::forget(other);
    assert_nothing_left(&standin);
}

/// Field 22 of `/proc/<pid>/stat`: the process's start time.
fn start_time(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split_whitespace().nth(19).unwrap().to_owned()
}

fn leftover(name: &str, host: &str, pid: u32, start: &str, phase: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {
            "aci.run_id": "old-run", "aci.instance_id": name, "aci.sandbox": name,
            "aci.host": host, "aci.pid": pid.to_string(), "aci.pid_start": start}},
        "spec": {"containers": [{"name": "task", "image": "x"}]},
        "status": {"phase": phase},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leftovers_of_dead_runs_are_reaped_and_live_ones_kept() {
    let standin = StandIn::start(Options::default()).await;
    let runtime = connect(&standin).await;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = aci::sandbox::k8s::manifest::label_value(host.trim());
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let own = std::process::id();
    let own_start = start_time(own);
    standin.insert_pod(NS, leftover("dead-here", &host, dead, "1", "Running"));
    standin.insert_pod(
        NS,
        leftover("ended-elsewhere", "other-host", 1, "1", "Failed"),
    );
    standin.insert_pod(
        NS,
        leftover("running-elsewhere", "other-host", 1, "1", "Running"),
    );
    standin.insert_pod(
        NS,
        leftover("alive-here", &host, own, &own_start, "Running"),
    );
    let mut policy = leftover("aci-deny-dead-here", &host, dead, "1", "");
    policy["kind"] = "NetworkPolicy".into();
    standin.insert_policy(NS, policy);
    assert_eq!(runtime.reap_orphans().await.unwrap(), 2);
    let mut left: Vec<String> = standin
        .pod_names()
        .into_iter()
        .map(|(_, name)| name)
        .collect();
    left.sort();
    assert_eq!(left, vec!["alive-here", "running-elsewhere"]);
    assert_eq!(standin.policies().len(), 0);
    assert_eq!(runtime.list_pods(Some("old-run")).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokens_from_a_file_or_an_exec_credential_plugin_are_sent() {
    let standin = StandIn::start(Options::default()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), format!("{}\n", standin.token())).unwrap();
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": standin.token(), "expirationTimestamp": "2999-01-01T00:00:00Z"},
    });
    // The plugin prints its credential only when it is told what it runs for.
    let script = "case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) printf '%s' \"$CRED\";; *) exit 3;; esac";
    let text = format!(
        "current-context: file\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
         contexts:\n- name: file\n  context: {{cluster: c, user: file}}\n\
         - name: plugin\n  context: {{cluster: c, user: plugin}}\n\
         - name: wrong\n  context: {{cluster: c, user: wrong}}\n\
         users:\n- name: file\n  user:\n    tokenFile: token\n\
         - name: plugin\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      \
         command: sh\n      args: [\"-c\", {script}]\n      env: [{{name: CRED, value: {credential}}}]\n\
         - name: wrong\n  user:\n    token: not-the-token\n",
        url = standin.url(),
        script = serde_json::to_string(script).unwrap(),
        credential = serde_json::to_string(&credential.to_string()).unwrap(),
    );
    let path = dir.path().join("kubeconfig");
    for context in ["file", "plugin"] {
        let config =
            kubeconfig::from_kubeconfigs(&[(path.clone(), text.clone())], Some(context)).unwrap();
        let runtime = K8sRuntime::connect_with(config, settings(TIMEOUT))
            .await
            .unwrap();
        assert_eq!(
            runtime.list_pods(None).await.unwrap(),
            Vec::<String>::new(),
            "{context}"
        );
    }
    let config = kubeconfig::from_kubeconfigs(&[(path, text)], Some("wrong")).unwrap();
    let refused = K8sRuntime::connect_with(config, settings(TIMEOUT)).await;
    let message = refused.err().unwrap().to_string();
    assert!(
        message.ends_with("GET /api/v1/namespaces/default/pods: 401 Unauthorized: Unauthorized"),
        "{message}"
    );
}

/// A command beside the session (the interrupt's exec) that prints more than the output
/// limit: the server's exec stream sends all of it, and what is kept is the head and tail of
/// each stream around the elision note, as in a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_exec_beside_the_session_that_prints_past_the_limit_is_capped_with_the_note() {
    use aci::sandbox::{OutputLimit, Transport};
    let standin = StandIn::start(Options::default()).await;
    let runtime = connect(&standin).await;
    let (sandbox, _repo) = start(&runtime, "k8s-exec-cap").await;
    let script =
        "head -c 3000000 /dev/zero | tr '\\0' a; head -c 2000000 /dev/zero | tr '\\0' b >&2";
    let argv = ["sh", "-c", script].map(str::to_owned).to_vec();
    let out = sandbox.transport().run_beside(argv).await.unwrap();
    let OutputLimit { head, tail } = OutputLimit::default();
    let capped = |byte: u8, total: usize| {
        let mut kept = vec![byte; head];
        let elided = total - head - tail;
        kept.extend_from_slice(format!("\n[... {elided} bytes of output elided ...]\n").as_bytes());
        kept.extend(std::iter::repeat_n(byte, tail));
        kept
    };
    assert_eq!(out.exit_code, Some(0));
    assert!(
        out.stdout == capped(b'a', 3_000_000),
        "{}",
        out.stdout.len()
    );
    assert!(
        out.stderr == capped(b'b', 2_000_000),
        "{}",
        out.stderr.len()
    );
    assert_eq!(
        out.elided_bytes,
        (3_000_000 + 2_000_000 - 2 * (head + tail)) as u64
    );
    sandbox.shutdown().await.unwrap();
    assert_nothing_left(&standin);
}

/// An API server (or a webhook behind it) that quotes the request's bearer token back in its
/// refusal: the token is scrubbed from the error before aci stores or prints it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refusal_quoting_the_bearer_token_is_scrubbed_from_the_error() {
    let standin = StandIn::start(Options::default()).await;
    standin.echo_credential_on("POST", "/pods");
    let runtime = connect(&standin).await;
    let repo = support::small_repo();
    let spec = support::spec("k8s-echo", Some(repo.path()));
    let Err(error) = runtime.start(&spec, 600.0).await else {
        panic!("the pod was created despite the refusal");
    };
    let (text, debug) = (error.to_string(), format!("{error:?}"));
    assert!(
        !text.contains(standin.token()) && !debug.contains(standin.token()),
        "{debug}"
    );
    assert!(
        text.contains(
            "403 Forbidden: admission webhook \"audit.example.com\" denied the request: POST \
             /api/v1/namespaces/aci-test/pods sent Authorization: Bearer <redacted> (token \
             <redacted>)"
        ),
        "{text}"
    );
    assert_nothing_left(&standin);
}
