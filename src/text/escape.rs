//! Names and messages made safe to print, log or use as a file name: control characters
//! written out, other characters replaced.

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
