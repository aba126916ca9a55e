//! flake8's `# noqa` handling: a file-level `# flake8: noqa` line disables every check, and
//! an inline `# noqa` or `# noqa: CODES` comment drops the matching errors of its line.

/// Whether some line matches flake8's `NOQA_FILE` (`\s*# flake8[:=]\s*noqa`, any case, at
/// the start of the line).
pub(crate) fn file_is_ignored(src: &[u8]) -> bool {
    // Fast path: the marker needs "flake8" somewhere.
    let has_marker = src
        .windows(6)
        .any(|w| w[0] | 0x20 == b'f' && w.eq_ignore_ascii_case(b"flake8"));
    has_marker
        && src.split(|&b| b == b'\n').any(|line| {
            let rest = trim_start(line);
            let Some(rest) = strip_prefix_ignore_case(rest, b"# flake8") else {
                return false;
            };
            let Some(rest) = rest.strip_prefix(b":").or_else(|| rest.strip_prefix(b"=")) else {
                return false;
            };
            strip_prefix_ignore_case(trim_start(rest), b"noqa").is_some()
        })
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[skip..]
}

fn strip_prefix_ignore_case<'a>(bytes: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let head = bytes.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &bytes[prefix.len()..])
}

/// Whether `line` carries a `# noqa` comment that covers `code`, as flake8's
/// `NOQA_INLINE_REGEXP` (`# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?`, ignoring
/// case) reads it.
pub(crate) fn suppresses(line: &[u8], code: &str) -> bool {
    let Some(at) = line
        .windows(6)
        .position(|window| window.eq_ignore_ascii_case(b"# noqa"))
    else {
        return false;
    };
    let rest = &line[at + 6..];
    let Some(rest) = rest.strip_prefix(b":") else {
        return true;
    };
    let rest = match rest.first() {
        Some(b) if b.is_ascii_whitespace() => &rest[1..],
        _ => rest,
    };
    let codes = noqa_codes(rest);
    if codes.is_empty() {
        return true;
    }
    codes.iter().any(|listed| code.starts_with(listed.as_str()))
}

/// The codes of a `# noqa:` list: repeated `[A-Za-z]+[0-9]+` separated by commas or spaces.
fn noqa_codes(mut rest: &[u8]) -> Vec<String> {
    let mut codes = Vec::new();
    loop {
        let letters = rest.iter().take_while(|b| b.is_ascii_alphabetic()).count();
        let digits = rest[letters..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if letters == 0 || digits == 0 {
            return codes;
        }
        codes.push(String::from_utf8_lossy(&rest[..letters + digits]).into_owned());
        rest = &rest[letters + digits..];
        let separators = rest
            .iter()
            .take_while(|b| **b == b',' || b.is_ascii_whitespace())
            .count();
        rest = &rest[separators..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanket_noqa_suppresses_every_code() {
        assert!(suppresses(b"x = y  # noqa", "F821"));
        assert!(suppresses(b"x = y  # NOQA", "E999"));
        assert!(suppresses(b"x = y  # noqa : F401", "F821"));
    }

    #[test]
    fn noqa_with_codes_suppresses_only_those_codes_and_prefixes() {
        assert!(suppresses(b"x = y  # noqa: F821", "F821"));
        assert!(suppresses(b"x = y  # noqa:F8,E501", "F821"));
        assert!(!suppresses(b"x = y  # noqa: E501", "F821"));
    }

    #[test]
    fn noqa_needs_the_space_after_the_hash() {
        assert!(!suppresses(b"x = y  #noqa", "F821"));
    }

    #[test]
    fn file_level_noqa_must_start_its_line() {
        assert!(file_is_ignored(b"import os\n  # flake8: noqa\n"));
        assert!(file_is_ignored(b"# FLAKE8=NOQA\n"));
        assert!(!file_is_ignored(b"x = 1  # flake8: noqa\n"));
    }
}
