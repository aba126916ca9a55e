//! Regular expressions written as literals in the code, compiled, and the ANSI escapes they
//! strip from logs.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_regex_that_does_not_compile_panics_naming_its_pattern() {
        let panic = std::panic::catch_unwind(|| literal_regex("(unclosed")).unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("the literal regular expression \"(unclosed\" does not compile: "),
            "{message}"
        );
    }
}
