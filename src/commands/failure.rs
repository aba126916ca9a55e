//! A run-level failure, as the commands return it and `main` prints it: one line, and maybe a
//! hint on the next (exit code 1).

use aci::batch;

/// A run-level failure: one line, and maybe a hint on the next.
pub struct Failure {
    /// What happened, one line.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl Failure {
    /// A failure with no hint.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    /// The same failure with `hint`.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(error: E) -> Self {
        Self {
            message: error.to_string(),
            hint: aci::failure::hint_of(&error),
        }
    }
}

/// The exit of a run stopped by a run-level failure: its line, its hint, exit code 1.
pub fn run_failure(failure: batch::RunFailure) -> Failure {
    Failure {
        message: failure.message,
        hint: failure.hint,
    }
}
