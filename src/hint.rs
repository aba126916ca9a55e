//! What to do about an error, kept apart from what happened: an error's message
//! ([`std::fmt::Display`]) is one line, and its hint (if any) is given by [`Hint`]. The
//! binary prints the hint on a `hint:` line under the `error:` line; records (a trajectory, a
//! log line) keep both as [`with_hint`] writes them.

use std::fmt::Display;

/// An error that may say what to do about it.
pub trait Hint {
    /// What to do about the error, for a `hint:` line under its `error:` line; its message
    /// does not repeat it.
    fn hint(&self) -> Option<String>;
}

/// The error's message with its hint on a line of its own (`message\nhint: hint`), as a
/// trajectory or a log line records the error.
pub fn with_hint<E: Display + Hint + ?Sized>(error: &E) -> String {
    join(&error.to_string(), error.hint().as_deref())
}

/// `message`, and `hint` on a line of its own under it when there is one.
pub fn join(message: &str, hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("{message}\nhint: {hint}"),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Hinted(Option<&'static str>);

    impl Display for Hinted {
        fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("it failed")
        }
    }

    impl Hint for Hinted {
        fn hint(&self) -> Option<String> {
            self.0.map(str::to_owned)
        }
    }

    #[test]
    fn a_hint_is_recorded_on_a_line_of_its_own_under_the_message() {
        assert_eq!(
            with_hint(&Hinted(Some("run it again"))),
            "it failed\nhint: run it again"
        );
        assert_eq!(with_hint(&Hinted(None)), "it failed");
    }
}
