//! Text helpers the layers share: `{name}` placeholders in texts from config and command files
//! (nudge texts, command docstrings), the compiled form of the regular expressions written
//! as literals in the code, Python's line boundaries, git's C quoting of path names, and the
//! escaping of control characters in every name and message aci prints or logs.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Whether `c` ends a line for Python's `str.splitlines` (`\r\n` counts once, which callers
/// handle): SWE-agent splits observations and files into lines with it.
pub fn is_python_line_boundary(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0b}'
            | '\u{0c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// `pattern`, compiled. Patterns are literals in the code, so one that does not compile is a
/// bug, reported with the pattern the first time it is used: as a `LazyLock<Regex>`, that is
/// by the test that forces every pattern, never silently as "no match".
///
/// # Panics
///
/// When `pattern` is not a valid regular expression.
pub fn literal_regex(pattern: &'static str) -> Regex {
    match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(error) => {
            panic!("the literal regular expression {pattern:?} does not compile: {error}")
        }
    }
}

/// An ANSI escape sequence.
pub(crate) static ANSI_ESCAPE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]"));

/// Removes ANSI escape sequences (colours, cursor moves) from `text`: test logs, build logs.
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    ANSI_ESCAPE.replace_all(text, "")
}

/// How a template's braces read, apart from the `{name}` fields that are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Braces {
    /// As Python's `str.format` reads them, which SWE-agent uses for command docstrings: `{{`
    /// and `}}` are one literal brace.
    Escaped,
    /// Every brace is kept as written (nudge texts, whose only fields are aci's variables).
    Literal,
}

/// Replaces each `{name}` of `template` whose name is in `variables`, in one pass (a value that
/// contains `{other}` is not filled again); a field with another name, and any other brace,
/// stays as written (`braces` says how doubled braces read).
#[must_use]
pub fn fill<K: AsRef<str>, V: AsRef<str>>(
    template: &str,
    variables: &[(K, V)],
    braces: Braces,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    loop {
        let next = match braces {
            Braces::Escaped => rest.find(['{', '}']),
            Braces::Literal => rest.find('{'),
        };
        let Some(index) = next else {
            break;
        };
        out.push_str(&rest[..index]);
        let tail = &rest[index..];
        if braces == Braces::Escaped && (tail.starts_with("{{") || tail.starts_with("}}")) {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let field = tail.strip_prefix('{').and_then(|inner| {
            let close = inner.find('}')?;
            let (_, value) = variables
                .iter()
                .find(|(key, _)| key.as_ref() == &inner[..close])?;
            Some((value.as_ref(), close + 2))
        });
        match field {
            Some((value, width)) => {
                out.push_str(value);
                rest = &tail[width..];
            }
            None => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Undoes git's C quoting of a path name (`"a/tab\there"`, octal `\303\251`): the quotes
/// are removed and the escapes decoded. A name that is not quoted is kept as it is.
pub fn git_unquote(name: &str) -> String {
    match name
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    {
        Some(inner) => c_unescape(inner),
        None => name.to_owned(),
    }
}

/// `text` with the C escapes git writes in quoted names (`\a \b \t \n \v \f \r`, `\"`,
/// `\\` and up to three octal digits) decoded wherever they stand; bytes that are not UTF-8
/// become U+FFFD.
pub fn c_unescape(text: &str) -> String {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.bytes().peekable();
    while let Some(byte) = rest.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        match rest.next() {
            Some(digit @ b'0'..=b'7') => {
                let mut value = u32::from(digit - b'0');
                for _ in 0..2 {
                    if let Some(next @ b'0'..=b'7') = rest.peek().copied() {
                        value = value * 8 + u32::from(next - b'0');
                        rest.next();
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(b'a') => bytes.push(0x07),
            Some(b'b') => bytes.push(0x08),
            Some(b't') => bytes.push(b'\t'),
            Some(b'n') => bytes.push(b'\n'),
            Some(b'v') => bytes.push(0x0b),
            Some(b'f') => bytes.push(0x0c),
            Some(b'r') => bytes.push(b'\r'),
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `text` with every control character written out (`\x1b`, `\r`, `\u{9b}`), so that what a
/// model wrote (or an instance id) cannot move the cursor, recolour, retitle or clear the
/// terminal it is printed on. Tabs are kept.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push(c),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            // C1 controls (a terminal reads U+009B as CSI) and the bidirectional overrides,
            // which reorder what is shown.
            c if ('\u{80}'..='\u{9f}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c) =>
            {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// [`escape_controls`] line by line: the line breaks (`\n`) of a message written to be several
/// lines (an error and its `hint:` line, a tool's output in `run_instance.log`) are kept, and
/// every other control character, a `\r` included, is written out.
pub fn escape_controls_in_lines(text: &str) -> String {
    text.split('\n')
        .map(escape_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every character other than an ASCII letter, digit, `.`, `_` or `-` replaced by
/// `replacement`: a name safe in a file name or an image tag.
pub fn safe_name(text: &str, replacement: char) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                replacement
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_braces_fill_known_placeholders_once_and_keep_other_braces() {
        let variables = vec![("n", "{m}".to_owned()), ("m", "2".to_owned())];
        assert_eq!(
            [
                fill("a {n} b {unknown} c {m}} {", &variables, Braces::Literal),
                fill("{{n}}", &variables, Braces::Literal),
            ],
            ["a {m} b {unknown} c 2} {", "{{m}}"]
        );
    }

    #[test]
    fn a_literal_regex_that_does_not_compile_panics_naming_its_pattern() {
        let panic = std::panic::catch_unwind(|| literal_regex("(unclosed")).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("the literal regular expression \"(unclosed\" does not compile: "),
            "{message}"
        );
    }

    #[test]
    fn escaped_braces_follow_python_format() {
        let env = [("WINDOW", "100"), ("OVERLAP", "2")];
        assert_eq!(
            [
                fill("down {WINDOW} lines", &env, Braces::Escaped),
                fill("{{WINDOW}} {OVERLAP}", &env, Braces::Escaped),
                fill("{UNKNOWN} {", &env, Braces::Escaped),
            ],
            ["down 100 lines", "{WINDOW} 2", "{UNKNOWN} {"]
        );
    }

    #[test]
    fn quoted_names_read_back_as_the_names_git_quoted() {
        let names = [
            "caf\u{e9}.txt",
            "tab\there",
            "quote\"d and back\\slash",
            "bell\u{7}vt\u{b}ff\u{c}cr\r",
            "plain.txt",
        ];
        let dir = std::env::temp_dir().join(format!("aci-text-unquote-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "core.quotePath=true"])
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        for name in names {
            std::fs::write(dir.join(name), "x\n").unwrap();
        }
        git(&["add", "-A"]);
        let listed = git(&["diff", "--cached", "--name-only"]);
        let _ = std::fs::remove_dir_all(&dir);
        let mut read: Vec<String> = listed.lines().map(git_unquote).collect();
        read.sort();
        let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        expected.sort();
        assert_eq!(read, expected);
        assert!(listed.contains("\"caf\\303\\251.txt\""), "{listed}");
        assert!(listed.contains("\\a") && listed.contains("\\v") && listed.contains("\\r"));
    }

    #[test]
    fn escapes_decode_anywhere_and_a_lone_backslash_stays() {
        assert_eq!(c_unescape("a/\\056git/x\\"), "a/.git/x\\");
        assert_eq!(git_unquote("\"unterminated"), "\"unterminated");
    }

    #[test]
    fn control_characters_in_names_are_written_out_and_nothing_else_changes() {
        assert_eq!(
            escape_controls("\u{1b}]0;pwned\u{7}x.py\ttab\r\n\u{7f}\u{9b}2J\u{202e}caf\u{e9}\\"),
            "\\x1b]0;pwned\\x07x.py\ttab\\r\\n\\x7f\\u{9b}2J\\u{202e}caf\u{e9}\\"
        );
        assert_eq!(
            escape_controls_in_lines("error: \u{1b}[2Jx\r\nhint: run it again\n"),
            "error: \\x1b[2Jx\\r\nhint: run it again\n"
        );
    }

    #[test]
    fn safe_names_keep_letters_digits_dot_underscore_dash() {
        assert_eq!(
            safe_name("aci-env-py:ab/c d_1.2", '_'),
            "aci-env-py_ab_c_d_1.2"
        );
        assert_eq!(safe_name("Rust\u{e9}", '-'), "Rust-");
    }
}
