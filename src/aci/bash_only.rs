//! The pure parts of the bash-only protocol's switches (`aci.subshell`,
//! `aci.submit_sentinel`, `aci.timeout_exception`): the subshell a command runs in, the
//! submission a sentinel line starts, and the text of a timeout.

use crate::config::SentinelLine;
use crate::sandbox::shell_quote;
use crate::text::is_python_line_boundary;

/// `command` as the session runs it with `aci.subshell`: in a subshell started from
/// `repo_dir`, so `cd` and `export` end with it, parsed whole as `bash -c` parses its argument
/// (`eval` of the quoted text), and with stdin empty, as a command run without a terminal has.
pub fn subshell_command(repo_dir: &str, command: &str) -> String {
    format!(
        "( cd {} && eval {} ) < /dev/null",
        shell_quote(repo_dir),
        shell_quote(command)
    )
}

/// The submission `output` makes when `sentinel` is its `line` (around whitespace), with
/// Python's line boundaries (`str.splitlines`):
/// - [`SentinelLine::First`] (mini 1.x and 2.x): the first line once leading whitespace is
///   skipped, and only after exit code 0; the submission is the rest of the output as printed;
/// - [`SentinelLine::Last`] (mini 2.0's pre-releases): the last line once trailing whitespace
///   is skipped, whatever the exit code of a command that finished; the submission is the output before that line, its
///   line break included.
pub fn sentinel_submission(
    output: &str,
    exit_code: Option<i32>,
    sentinel: &str,
    line: SentinelLine,
) -> Option<String> {
    match line {
        SentinelLine::First => first_line_submission(output, exit_code, sentinel),
        SentinelLine::Last => exit_code.and_then(|_| last_line_submission(output, sentinel)),
    }
}

fn first_line_submission(output: &str, exit_code: Option<i32>, sentinel: &str) -> Option<String> {
    if exit_code != Some(0) {
        return None;
    }
    let text = output.trim_start_matches(is_python_space);
    let (first, rest) = match text
        .char_indices()
        .find(|(_, c)| is_python_line_boundary(*c))
    {
        Some((at, c)) => {
            let end = if text[at..].starts_with("\r\n") {
                at + 2
            } else {
                at + c.len_utf8()
            };
            (&text[..at], &text[end..])
        }
        None => (text, ""),
    };
    (first.trim_matches(is_python_space) == sentinel).then(|| rest.to_owned())
}

fn last_line_submission(output: &str, sentinel: &str) -> Option<String> {
    let text = output.trim_end_matches(is_python_space);
    let (before, last) = match text
        .char_indices()
        .rev()
        .find(|(_, c)| is_python_line_boundary(*c))
    {
        Some((at, c)) => text.split_at(at + c.len_utf8()),
        None => ("", text),
    };
    (last.trim_matches(is_python_space) == sentinel).then(|| before.to_owned())
}

/// `aci.timeout_exception` with `{command}` and `{seconds}` filled in; the seconds are written
/// as a whole number when they are one (`60`), else as a decimal (`2.5`).
pub fn timeout_exception(template: &str, command: &str, seconds: f64) -> String {
    let seconds = if seconds.fract() == 0.0 && seconds.abs() < 1e15 {
        format!("{seconds:.0}")
    } else {
        format!("{seconds}")
    };
    template
        .replace("{seconds}", &seconds)
        .replace("{command}", command)
}

/// Python's `str.isspace`, which `str.strip` follows.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_command_runs_quoted_in_a_subshell_from_the_repository() {
        assert_eq!(
            subshell_command("/testbed", "cd src && echo 'hi'"),
            "( cd /testbed && eval 'cd src && echo '\\''hi'\\''' ) < /dev/null"
        );
    }

    #[test]
    fn the_sentinel_line_submits_the_rest_of_the_output_only_after_exit_0() {
        let out = "\n  COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT \r\ndiff --git a/x b/x\n+1\n";
        let sentinel = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";
        assert_eq!(
            sentinel_submission(out, Some(0), sentinel, SentinelLine::First).as_deref(),
            Some("diff --git a/x b/x\n+1\n")
        );
        assert_eq!(
            sentinel_submission(out, Some(1), sentinel, SentinelLine::First),
            None
        );
        assert_eq!(
            sentinel_submission(out, None, sentinel, SentinelLine::First),
            None
        );
        assert_eq!(
            sentinel_submission(sentinel, Some(0), sentinel, SentinelLine::First).as_deref(),
            Some("")
        );
        assert_eq!(
            sentinel_submission(
                "x\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n",
                Some(0),
                sentinel,
                SentinelLine::First
            ),
            None
        );
    }

    #[test]
    fn a_last_line_sentinel_submits_the_output_before_it_whatever_the_exit_code() {
        let sentinel = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";
        let last = |out: &str, code| sentinel_submission(out, code, sentinel, SentinelLine::Last);
        let out = "diff --git a/x b/x\r\n-\n COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n\n";
        assert_eq!(
            last(out, Some(0)).as_deref(),
            Some("diff --git a/x b/x\r\n-\n")
        );
        assert_eq!(
            last(out, Some(1)).as_deref(),
            Some("diff --git a/x b/x\r\n-\n")
        );
        assert_eq!(last(sentinel, Some(0)).as_deref(), Some(""));
        assert_eq!(
            last(sentinel, None),
            None,
            "a command that timed out did not finish"
        );
        assert_eq!(
            last("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\nx\n", Some(0)),
            None
        );
        assert_eq!(last("", Some(0)), None);
    }

    #[test]
    fn the_timeout_text_writes_whole_seconds_as_python_writes_an_int() {
        let template = "Command '{command}' timed out after {seconds} seconds";
        assert_eq!(
            timeout_exception(template, "sleep 99", 60.0),
            "Command 'sleep 99' timed out after 60 seconds"
        );
        assert_eq!(
            timeout_exception(template, "x", 2.5),
            "Command 'x' timed out after 2.5 seconds"
        );
    }
}
