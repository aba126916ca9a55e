//! An error with its causes as one line, for messages that must say why (a connection
//! refused, a socket missing) where the top error alone says only what failed.

/// `error` and its sources ([`std::error::Error::source`]), joined with `: `; a cause whose
/// text is already in what came before is not repeated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
