//! How command output becomes observation text, as SWE-agent v0.7 reads it back from its shell:
//! bytes decoded as UTF-8 with each invalid byte written `\xNN` (Python's `backslashreplace`),
//! `\r\n` turned into `\n`, and then Python's `"\n".join(text.splitlines())`, which drops the
//! final line break and turns every other line boundary (a lone `\r`, `\x0b`, `\x0c`, `\x1c`–`\x1e`,
//! `\x85`, U+2028, U+2029) into `\n`. Windows of CRLF files therefore show no `\r`, exactly as
//! in published v0.7 trajectories.

/// Decodes `bytes` as UTF-8, writing each byte of an invalid sequence as `\xNN` (lowercase
/// hex), as Python's `bytes.decode("utf-8", errors="backslashreplace")` does.
pub fn decode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// v0.7's `"\n".join(text.replace("\r\n", "\n").splitlines())`: every line boundary becomes
/// `\n`, and a boundary at the very end is dropped (so `"a\n"` gives `"a"` and `"a\n\n"` gives
/// `"a\n"`).
pub fn normalize(text: &str) -> String {
    // The replacement runs first, so `\r\r\n` is one `\r\n` boundary afterwards.
    let text = text.replace("\r\n", "\n");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut ends_with_boundary = false;
    while let Some(c) = chars.next() {
        if crate::text::is_python_line_boundary(c) {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
            ends_with_boundary = true;
        } else {
            out.push(c);
            ends_with_boundary = false;
        }
    }
    if ends_with_boundary {
        out.pop();
    }
    out
}

/// Drops one final line break (`\n` or `\r\n`) from `text`.
pub fn strip_final_newline(text: &str) -> &str {
    text.strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text)
}

/// Drops the notices bash prints when the harness kills a timed-out command
/// (`bash: line 9: 12562 Killed                  sleep 30`): they name a process id, so they
/// would make the observation differ from run to run, and they are the harness's doing, not the
/// command's output.
pub fn strip_kill_notices(output: &str) -> String {
    output
        .split_inclusive('\n')
        .filter(|line| !is_kill_notice(line.trim_end_matches('\n')))
        .collect()
}

/// `<shell>: line <n>: <pid> Killed …`
fn is_kill_notice(line: &str) -> bool {
    let Some((_, rest)) = line.split_once(": line ") else {
        return false;
    };
    let Some((number, rest)) = rest.split_once(": ") else {
        return false;
    };
    let pid = rest.trim_start();
    let pid_len = pid.bytes().take_while(u8::is_ascii_digit).count();
    !number.is_empty()
        && number.bytes().all(|byte| byte.is_ascii_digit())
        && pid_len > 0
        && pid[pid_len..].starts_with(" Killed")
}

/// One action's output, sub-action by sub-action, as v0's single shell would have printed it;
/// [`Transcript::finish`] reads it back the way v0 does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    raw: String,
}

impl Transcript {
    /// Adds an ACI command's text (v0's commands are bash functions that end every line they
    /// print, the last one included, with a newline).
    pub fn push_command(&mut self, text: &str) {
        if !text.is_empty() {
            self.raw.push_str(text);
            self.raw.push('\n');
        }
    }

    /// Adds a shell command's decoded output, exactly as printed. `notes` (the timeout text,
    /// which starts with a newline) go right after the output's last line, as v0 appends them
    /// to the output it read.
    pub fn push_shell(&mut self, output: &str, notes: &str) {
        if notes.is_empty() {
            self.raw.push_str(output);
        } else {
            self.raw.push_str(strip_final_newline(output));
            self.raw.push_str(notes);
            self.raw.push('\n');
        }
    }

    /// The observation: everything printed, [`normalize`]d.
    pub fn finish(&self) -> String {
        normalize(&self.raw)
    }

    /// Everything printed, as it was (v0.1–0.4 read the shell's output back this way).
    pub fn raw(&self) -> &str {
        &self.raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_bytes_are_written_as_backslash_escapes() {
        assert_eq!(decode(b"caf\xc3\xa9"), "café");
        assert_eq!(decode(b"a\xffb"), "a\\xffb");
        // A truncated sequence: each of its bytes is escaped, as Python does.
        assert_eq!(decode(b"\xe2\x82z"), "\\xe2\\x82z");
        assert_eq!(decode(b"\x80\x81"), "\\x80\\x81");
    }

    #[test]
    fn the_final_line_break_is_dropped_and_one_blank_line_survives() {
        assert_eq!(normalize(""), "");
        assert_eq!(normalize("\n"), "");
        assert_eq!(normalize("a"), "a");
        assert_eq!(normalize("a\n"), "a");
        assert_eq!(normalize("a\n\n"), "a\n");
        assert_eq!(normalize("\na\n"), "\na");
    }

    #[test]
    fn crlf_and_other_python_line_boundaries_become_newlines() {
        assert_eq!(normalize("1:a\r\n2:b\r\n"), "1:a\n2:b");
        assert_eq!(normalize("a\rb"), "a\nb");
        assert_eq!(normalize("a\r\r\nb"), "a\nb");
        assert_eq!(normalize("a\x0bb\x0cc\x1cd"), "a\nb\nc\nd");
        assert_eq!(normalize("a\u{85}b\u{2028}c\u{2029}"), "a\nb\nc");
        assert_eq!(normalize("tab\tstays"), "tab\tstays");
    }

    #[test]
    fn a_transcript_joins_commands_and_shell_output_as_one_shell_printed_them() {
        let mut transcript = Transcript::default();
        transcript.push_command("[File: /r/a.txt (1 lines total)]\n1:a\r");
        transcript.push_shell("ok\r\n", "");
        transcript.push_shell("", "");
        transcript.push_command("File updated.");
        assert_eq!(
            transcript.finish(),
            "[File: /r/a.txt (1 lines total)]\n1:a\nok\nFile updated."
        );
        // Output without a final newline runs into what follows, as in one shell.
        let mut transcript = Transcript::default();
        transcript.push_shell("no newline", "");
        transcript.push_shell("next\n", "");
        assert_eq!(transcript.finish(), "no newlinenext");
        assert_eq!(Transcript::default().finish(), "");
    }

    #[test]
    fn notes_follow_the_last_line_of_output() {
        let mut transcript = Transcript::default();
        transcript.push_shell("partial\n", "\nEXECUTION TIMED OUT");
        transcript.push_shell("after\n", "");
        assert_eq!(transcript.finish(), "partial\nEXECUTION TIMED OUT\nafter");
        let mut transcript = Transcript::default();
        transcript.push_shell("", "\nEXECUTION TIMED OUT");
        assert_eq!(transcript.finish(), "\nEXECUTION TIMED OUT");
    }

    #[test]
    fn kill_notices_of_the_harness_are_dropped_and_other_lines_kept() {
        let output = "started\nbash: line 13: 12843 Killed                  sleep 30\n";
        assert_eq!(strip_kill_notices(output), "started\n");
        assert_eq!(strip_kill_notices("bash: line 9: 77 Killed sleep 30"), "");
        let kept = "Killed 3 processes\nerror: line 4: bad\nx: line 2: 5 Terminated y\n";
        assert_eq!(strip_kill_notices(kept), kept);
    }

    #[test]
    fn one_final_newline_is_stripped() {
        assert_eq!(strip_final_newline("a\n"), "a");
        assert_eq!(strip_final_newline("a\r\n"), "a");
        assert_eq!(strip_final_newline("a\n\n"), "a\n");
        assert_eq!(strip_final_newline("a"), "a");
    }
}
