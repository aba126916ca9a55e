//! Certificates for a stand-in that speaks HTTPS and requires client certificates, made with
//! the `openssl` command: a CA, a server certificate for 127.0.0.1, and a client certificate.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig, crypto};

/// The PEM files a TLS stand-in and its kubeconfig need.
pub struct Certificates {
    pub ca: Vec<u8>,
    pub server_cert: Vec<u8>,
    pub server_key: Vec<u8>,
    pub client_cert: Vec<u8>,
    pub client_key: Vec<u8>,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the TLS stand-in needs the openssl command");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes a CA and two certificates it signs in `dir`.
pub fn make(dir: &Path) -> Certificates {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=standin-ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    for (name, subject, ext) in [
        ("server", "/CN=127.0.0.1", "server.ext"),
        ("client", "/CN=aci-test/O=system:masters", "client.ext"),
    ] {
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                subject,
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                ext,
                "-out",
                &format!("{name}.crt"),
            ],
        );
    }
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    Certificates {
        ca: read("ca.crt"),
        server_cert: read("server.crt"),
        server_key: read("server.key"),
        client_cert: read("client.crt"),
        client_key: read("client.key"),
    }
}

/// A TLS acceptor that presents the server certificate and requires a client certificate
/// signed by the CA.
pub fn acceptor(certs: &Certificates) -> TlsAcceptor {
    let provider = Arc::new(crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&certs.ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .unwrap();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&certs.server_cert)
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(&certs.server_key).unwrap();
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    TlsAcceptor::from(Arc::new(config))
}
