//! The Kubernetes remote-command channel protocols over a WebSocket, as pure framing: which
//! protocol the server chose, how stdin is sent and closed, and what a message from the server
//! carries.
//!
//! Both `v5.channel.k8s.io` and `v4.channel.k8s.io` send binary messages whose first byte is a
//! channel: 0 stdin, 1 stdout, 2 stderr, 3 the error channel (a `Status` object, sent once when
//! the command ends), 4 terminal resize. v5 adds channel 255: `[255, n]` closes channel `n`, so
//! a client can end stdin and still read the output. Under v4 stdin cannot be closed, only the
//! whole connection; aci's protocol never needs that (it frames every payload by its length).

/// The value of `Sec-WebSocket-Protocol` aci offers, in order of preference. One header with a
/// comma-separated list: API servers read only the first header of several.
pub const OFFERED_PROTOCOLS: &str = "v5.channel.k8s.io, v4.channel.k8s.io";

/// The channel of the command's stdin.
pub const STDIN: u8 = 0;
/// The channel of the command's stdout.
pub const STDOUT: u8 = 1;
/// The channel of the command's stderr.
pub const STDERR: u8 = 2;
/// The channel carrying the command's final `Status`.
pub const ERROR: u8 = 3;
/// The v5 channel whose messages close another channel.
pub const CLOSE: u8 = 255;

/// The stream protocol an exec connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamProtocol {
    /// `v5.channel.k8s.io` (Kubernetes 1.30 and later): stdin can be closed.
    V5,
    /// `v4.channel.k8s.io`: stdin ends only with the connection.
    V4,
}

impl StreamProtocol {
    /// The protocol named by the server's `Sec-WebSocket-Protocol` answer, if aci speaks it.
    pub fn from_header(value: &str) -> Option<Self> {
        match value.trim() {
            "v5.channel.k8s.io" => Some(Self::V5),
            "v4.channel.k8s.io" => Some(Self::V4),
            _ => None,
        }
    }

    /// The protocol's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::V5 => "v5.channel.k8s.io",
            Self::V4 => "v4.channel.k8s.io",
        }
    }

    /// The message that closes stdin, when the protocol has one.
    pub fn close_stdin(self) -> Option<Vec<u8>> {
        match self {
            Self::V5 => Some(vec![CLOSE, STDIN]),
            Self::V4 => None,
        }
    }
}

/// `data` as a message on the stdin channel.
pub fn stdin_message(data: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(data.len() + 1);
    message.push(STDIN);
    message.extend_from_slice(data);
    message
}

/// What one binary message from the server carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// Output on stdout.
    Stdout(&'a [u8]),
    /// Output on stderr.
    Stderr(&'a [u8]),
    /// The command's final `Status` (JSON).
    Status(&'a [u8]),
    /// The server closed channel `n` (v5).
    Closed(u8),
    /// Nothing aci reads: an empty message (servers open each channel with one), a resize
    /// echo, or an unknown channel.
    Nothing,
}

/// Reads one binary message from the server.
pub fn decode(message: &[u8]) -> Incoming<'_> {
    let Some((&channel, payload)) = message.split_first() else {
        return Incoming::Nothing;
    };
    match channel {
        STDOUT if !payload.is_empty() => Incoming::Stdout(payload),
        STDERR if !payload.is_empty() => Incoming::Stderr(payload),
        ERROR if !payload.is_empty() => Incoming::Status(payload),
        CLOSE => payload
            .first()
            .map_or(Incoming::Nothing, |&n| Incoming::Closed(n)),
        _ => Incoming::Nothing,
    }
}

/// The exit code in the final `Status` of an exec: 0 for `Success`, the `ExitCode` cause of a
/// `NonZeroExitCode` failure; any other failure (the command could not start, the container is
/// gone) is an error carrying the status's message.
pub fn exit_code(status: &[u8]) -> Result<i32, String> {
    let value: serde_json::Value = serde_json::from_slice(status)
        .map_err(|e| format!("unreadable exec status ({e}): {}", lossy(status)))?;
    if value["status"] == "Success" {
        return Ok(0);
    }
    if value["reason"] == "NonZeroExitCode" {
        let code = value["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|cause| cause["reason"] == "ExitCode")
            .and_then(|cause| cause["message"].as_str())
            .and_then(|text| text.trim().parse::<i32>().ok());
        if let Some(code) = code {
            return Ok(code);
        }
    }
    let message = value["message"].as_str().unwrap_or_default();
    if message.is_empty() {
        Err(format!("the exec failed: {}", lossy(status)))
    } else {
        Err(format!("the exec failed: {message}"))
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_answer_names_the_protocol() {
        assert_eq!(
            StreamProtocol::from_header("v5.channel.k8s.io"),
            Some(StreamProtocol::V5)
        );
        assert_eq!(
            StreamProtocol::from_header(" v4.channel.k8s.io"),
            Some(StreamProtocol::V4)
        );
        assert_eq!(StreamProtocol::from_header("channel.k8s.io"), None);
        assert_eq!(StreamProtocol::from_header(""), None);
        assert_eq!(
            OFFERED_PROTOCOLS
                .split(", ")
                .map(StreamProtocol::from_header)
                .collect::<Vec<_>>(),
            vec![Some(StreamProtocol::V5), Some(StreamProtocol::V4)]
        );
    }

    #[test]
    fn only_v5_can_close_stdin() {
        assert_eq!(StreamProtocol::V5.close_stdin(), Some(vec![255, 0]));
        assert_eq!(StreamProtocol::V4.close_stdin(), None);
        assert_eq!(stdin_message(b"ls\n"), b"\x00ls\n".to_vec());
        assert_eq!(stdin_message(b""), vec![0]);
    }

    #[test]
    fn messages_are_read_by_their_channel_byte() {
        assert_eq!(decode(b"\x01out"), Incoming::Stdout(b"out"));
        assert_eq!(decode(b"\x02err"), Incoming::Stderr(b"err"));
        assert_eq!(decode(b"\x03{}"), Incoming::Status(b"{}"));
        assert_eq!(decode(b"\xff\x01"), Incoming::Closed(1));
        // Channel-opening empty messages, resize echoes, stray bytes.
        for message in [
            &b""[..],
            b"\x01",
            b"\x02",
            b"\x03",
            b"\x04{}",
            b"\x07x",
            b"\xff",
        ] {
            assert_eq!(decode(message), Incoming::Nothing, "{message:?}");
        }
    }

    #[test]
    fn the_final_status_gives_the_exit_code() {
        assert_eq!(exit_code(br#"{"metadata":{},"status":"Success"}"#), Ok(0));
        let failed = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(exit_code(failed), Ok(3));
        let not_started = br#"{"metadata":{},"status":"Failure","message":"OCI runtime exec failed: exec: \"nope\": executable file not found in $PATH","reason":"InternalError"}"#;
        assert_eq!(
            exit_code(not_started),
            Err(
                "the exec failed: OCI runtime exec failed: exec: \"nope\": executable file not \
                 found in $PATH"
                    .to_owned()
            )
        );
        assert_eq!(
            exit_code(b"not json"),
            Err("unreadable exec status (expected ident at line 1 column 2): not json".to_owned())
        );
    }
}
