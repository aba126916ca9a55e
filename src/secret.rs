//! The credentials aci holds — model API keys, Kubernetes bearer tokens, passwords and client
//! keys, registry logins — and their removal from text before it leaves a client: a server
//! that quotes a credential back in an error (or an answer) has it replaced by `<redacted>`
//! before the text is stored in a trajectory or a report, or printed.
//!
//! Each client remembers the credentials it loads ([`remember`]) in one process-wide set, and
//! scrubs what it hands on ([`scrub`]), so a credential is scrubbed whichever client's text
//! quotes it.

use std::fmt;
use std::sync::{LazyLock, RwLock};

/// What a credential is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Credentials shorter than this are not scrubbed: replacing every `abc` of every message
/// would garble them all, and no real key, token or client key is this short.
pub const MIN_SECRET_LEN: usize = 6;

/// A set of credentials, and the forms in which a server may quote them.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Secrets {
    /// Longest first, so that a credential containing another is replaced whole.
    known: Vec<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} redacted)", self.known.len())
    }
}

impl Secrets {
    /// Adds `secret` (surrounding whitespace dropped), as written and as a JSON string quotes
    /// it (`"` and `\` escaped, which a password may hold); a PEM block (a client key) also
    /// line by line, so that a quoted line of it is scrubbed too. Too short ones are ignored
    /// ([`MIN_SECRET_LEN`]).
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        let mut forms = vec![secret.to_owned()];
        if let Ok(quoted) = serde_json::to_string(secret) {
            forms.push(quoted[1..quoted.len() - 1].to_owned());
        }
        if secret.starts_with("-----BEGIN") {
            forms.extend(
                secret
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.starts_with("-----"))
                    .map(str::to_owned),
            );
        }
        for form in forms {
            if form.chars().count() >= MIN_SECRET_LEN && !self.known.contains(&form) {
                self.known.push(form);
            }
        }
        self.known
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }

    /// `text` with every credential of the set replaced by [`REDACTED`].
    pub fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.known {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }

    /// Whether the set holds no credential.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

/// The credentials this process holds.
static HELD: LazyLock<RwLock<Secrets>> = LazyLock::new(|| RwLock::new(Secrets::default()));

/// Remembers a credential this process holds, so that [`scrub`] removes it from then on.
pub fn remember(secret: &str) {
    let mut held = HELD
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.add(secret);
}

/// `text` with every credential this process holds replaced by [`REDACTED`]: what a client
/// does to an error (or an answer) before handing it on.
pub fn scrub(text: &str) -> String {
    let held = HELD
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if held.is_empty() {
        return text.to_owned();
    }
    held.scrub(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_is_scrubbed_as_written_as_json_quotes_it_and_line_by_line_of_a_key() {
        let mut secrets = Secrets::default();
        secrets.add("  pa\"ss\\word-1 ");
        secrets.add("tok-123456");
        secrets.add("tok-1234567890");
        secrets.add("abc");
        secrets.add("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n");
        assert_eq!(
            secrets.scrub(
                "bad pa\"ss\\word-1 and {\"p\": \"pa\\\"ss\\\\word-1\"}; tok-1234567890 tok-123456; \
                 abc; line hkiG9w0BAQEFAASC"
            ),
            "bad <redacted> and {\"p\": \"<redacted>\"}; <redacted> <redacted>; abc; line \
             <redacted>"
        );
        assert_eq!(format!("{secrets:?}"), "Secrets(8 redacted)");
    }

    #[test]
    fn what_the_process_remembers_is_scrubbed_from_then_on() {
        let secret = "process-held-credential-7f3a";
        let text = format!("401: token {secret} rejected");
        assert_eq!(scrub(&text), text);
        remember(secret);
        assert_eq!(scrub(&text), "401: token <redacted> rejected");
    }
}
