//! The TLS crypto provider every HTTP client of the process uses: rustls with ring, installed
//! once before the first client is built (reqwest is built without a provider of its own).

use std::sync::Once;

/// Makes ring the process's rustls crypto provider. Call it before building a `reqwest`
/// client; calling it again does nothing.
pub fn install_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means another provider was installed first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
