//! `pods/exec` as a WebSocket: the channel protocol negotiated from what the client offers and
//! what this stand-in speaks, then a Docker exec in the pod's container bridged to it — stdin
//! from channel 0 (closed by `[255, 0]` under v5), stdout and stderr out on channels 1 and 2,
//! the final `Status` on channel 3.

use std::sync::Arc;

use bollard::exec::{CreateExecOptions, StartExecResults};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::http::{Request, respond, status};
use super::{State, StreamFault, kubelet};

fn binary(channel: u8, data: &[u8]) -> Message {
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(channel);
    message.extend_from_slice(data);
    Message::Binary(Bytes::from(message))
}

/// Serves one exec upgrade on `stream`.
pub(crate) async fn serve<S>(mut stream: S, request: Request, state: Arc<State>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let segments: Vec<String> = request
        .path
        .trim_matches('/')
        .split('/')
        .map(str::to_owned)
        .collect();
    let (ns, name) = match segments.as_slice() {
        [_, _, _, ns, _, name, _] => (ns.clone(), name.clone()),
        _ => return,
    };
    let container = running_container(&state, &ns, &name);
    let offered: Vec<String> = request
        .header("sec-websocket-protocol")
        .unwrap_or_default()
        .split(',')
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    let chosen = offered
        .iter()
        .find(|p| state.options.protocols.contains(&p.as_str()))
        .cloned();
    let container = match (container, chosen.as_ref()) {
        (Err((code, body)), _) => {
            state.record(&request.method, &request.target, code);
            let _ = respond(&mut stream, code, &body, &[]).await;
            return;
        }
        (Ok(_), None) => {
            state.record(&request.method, &request.target, 400);
            let body = status(
                400,
                "BadRequest",
                "the requested stream protocols are not supported",
            );
            let _ = respond(&mut stream, 400, &body, &[]).await;
            return;
        }
        (Ok(id), Some(_)) => id,
    };
    let protocol = chosen.unwrap_or_default();
    let key = request.header("sec-websocket-key").unwrap_or_default();
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    state.record(&request.method, &request.target, 101);
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    state.protocols_used.lock().unwrap().push(protocol.clone());
    let socket = WebSocketStream::from_raw_socket(stream, Role::Server, None).await;
    bridge(
        socket,
        &request,
        &state,
        &container,
        &ns,
        &name,
        protocol == "v5.channel.k8s.io",
    )
    .await;
}

/// The container of a running pod, or the answer the API server gives when there is none.
fn running_container(state: &State, ns: &str, name: &str) -> Result<String, (u16, Value)> {
    let refuse = |code: u16, reason: &str, message: String| (code, status(code, reason, &message));
    let Some(pod) = state.pod(ns, name) else {
        return Err(refuse(
            404,
            "NotFound",
            format!("pods \"{name}\" not found"),
        ));
    };
    let phase = pod.object["status"]["phase"]
        .as_str()
        .unwrap_or("Pending")
        .to_owned();
    match pod.container {
        Some(id) if phase == "Running" => Ok(id),
        _ if phase == "Pending" => Err(refuse(
            400,
            "BadRequest",
            format!("pod {name} does not have a host assigned"),
        )),
        _ => Err(refuse(
            400,
            "BadRequest",
            format!("cannot exec into a container in a completed pod; current phase is {phase}"),
        )),
    }
}

#[allow(clippy::too_many_arguments)]
async fn bridge<S>(
    socket: WebSocketStream<S>,
    request: &Request,
    state: &Arc<State>,
    container: &str,
    ns: &str,
    name: &str,
    v5: bool,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, source) = socket.split();
    let with_stdin = request.query("stdin") == Some("true");
    let options = CreateExecOptions {
        cmd: Some(request.query_all("command")),
        attach_stdin: Some(with_stdin),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        ..Default::default()
    };
    let started = async {
        let exec = state.docker.create_exec(container, options).await?;
        let results = state.docker.start_exec(&exec.id, None).await?;
        Ok::<_, bollard::errors::Error>((exec.id, results))
    }
    .await;
    let (exec_id, output, input) = match started {
        Ok((id, StartExecResults::Attached { output, input })) => (id, output, input),
        Ok(_) => return,
        Err(error) => {
            let body = json!({"metadata": {}, "status": "Failure", "reason": "InternalError",
                              "message": format!("error executing command: {error}")});
            let _ = sink.send(binary(3, body.to_string().as_bytes())).await;
            let _ = sink.close().await;
            return;
        }
    };
    // Servers open each channel with an empty message.
    for channel in [1, 2, 3] {
        if sink.send(binary(channel, b"")).await.is_err() {
            return;
        }
    }
    let stdin = tokio::spawn(forward_stdin(source, input, v5));
    let mut output = output;
    let mut recent: Vec<u8> = Vec::new();
    while let Some(item) = output.next().await {
        let (channel, data) = match item {
            Ok(bollard::container::LogOutput::StdOut { message }) => (1, message),
            Ok(bollard::container::LogOutput::StdErr { message }) => (2, message),
            Ok(_) => continue,
            Err(_) => break,
        };
        if channel == 1 {
            recent.extend_from_slice(&data);
            let excess = recent.len().saturating_sub(512);
            recent.drain(..excess);
            match state.stream_fault(&recent) {
                Some(StreamFault::Drop) => {
                    // Gone without a close frame: the connection just ends.
                    stdin.abort();
                    return;
                }
                Some(StreamFault::Evict) => {
                    stdin.abort();
                    kubelet::evict(state, ns, name).await;
                    return;
                }
                None => {}
            }
        }
        if sink.send(binary(channel, &data)).await.is_err() {
            stdin.abort();
            return;
        }
    }
    stdin.abort();
    let code = state
        .docker
        .inspect_exec(&exec_id)
        .await
        .ok()
        .and_then(|e| e.exit_code)
        .unwrap_or(-1);
    let body = final_status(code, &request.query_all("command"));
    let _ = sink.send(binary(3, body.to_string().as_bytes())).await;
    let _ = sink.close().await;
}

/// Moves the client's stdin messages into the exec's stdin; `[255, 0]` under v5 closes it.
async fn forward_stdin<S>(
    mut source: futures_util::stream::SplitStream<WebSocketStream<S>>,
    mut input: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    v5: bool,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    while let Some(Ok(message)) = source.next().await {
        match message {
            Message::Binary(data) => match data.first() {
                Some(0) => {
                    if input.write_all(&data[1..]).await.is_err() {
                        break;
                    }
                    let _ = input.flush().await;
                }
                Some(255) if v5 && data.get(1) == Some(&0) => {
                    let _ = input.shutdown().await;
                }
                _ => {}
            },
            Message::Close(_) => break,
            _ => {}
        }
    }
}

/// The `Status` an API server sends on channel 3 when the command `argv` exited with `code`.
fn final_status(code: i64, argv: &[String]) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({"metadata": {}, "status": "Failure",
           "message": format!("command terminated with non-zero exit code: error executing command {argv:?}, exit code {code}"),
           "reason": "NonZeroExitCode",
           "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}})
}
