//! Python's line boundaries, as SWE-agent splits observations and files into lines.

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
