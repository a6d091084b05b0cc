//! A tiny HTTPS GET for the secure server, trusting the kubelet's own (self-signed) cert.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// GET `path` on `https://127.0.0.1:port`, trusting every certificate in `ca_pem`.
pub async fn https_get(port: u16, path: &str, ca_pem: &Path) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = Vec::new();
    // A peer that closes without close_notify after a whole answer is tolerated (the
    // answer is checked below); any other read error fails the test.
    if let Err(e) = tls.read_to_end(&mut buf).await
        && (buf.is_empty() || e.kind() != std::io::ErrorKind::UnexpectedEof)
    {
        panic!("GET {path} on https://127.0.0.1:{port}: {e}");
    }
    super::parse_http_response(&String::from_utf8_lossy(&buf))
}
