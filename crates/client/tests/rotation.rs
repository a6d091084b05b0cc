//! Client certificate rotation without a restart (`UpdateTransport`), against a TLS server
//! in the test that requires a client certificate and answers each request with the
//! common name of the certificate its connection was opened with: the clients present the
//! source's certificate, keep their connection while it stays, and reconnect with the new
//! one as soon as it changes. The kubeconfig's own credentials are not sent.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use kubelet_client::KubeletClients;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
    der: CertificateDer<'static>,
}

fn ca() -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, "ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        der: cert.der().clone(),
        issuer: Issuer::new(params, key),
    }
}

fn issue(
    ca: &Ca,
    cn: &str,
    sans: Vec<String>,
) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(sans).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (
        vec![cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

fn certified(ca: &Ca, cn: &str) -> Arc<CertifiedKey> {
    let (chain, key) = issue(ca, cn, vec![]);
    let signer = rustls::crypto::ring::sign::any_supported_type(&key).unwrap();
    Arc::new(CertifiedKey::new(chain, signer))
}

fn common_name(der: &CertificateDer<'_>) -> String {
    let (_, c) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
    c.subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

#[derive(Default)]
struct Seen {
    connections: usize,
    heads: Vec<String>,
}

/// HTTPS on 127.0.0.1 requiring a client certificate of `ca`; each reply's body is the
/// client certificate's CN.
async fn serve(ca: &Ca, seen: Arc<Mutex<Seen>>) -> u16 {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let (chain, key) = issue(ca, "server", vec!["127.0.0.1".into()]);
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let cn = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .map(common_name)
                    .unwrap_or_default();
                seen.lock().unwrap().connections += 1;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end + 4);
                        seen.lock().unwrap().heads.push(head);
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{cn}",
                            cn.len()
                        );
                        if tls.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    port
}

/// A kubeconfig for the test server, trusting `ca`, with `user` (YAML after `user:`).
fn write_kubeconfig(dir: &std::path::Path, ca: &Ca, port: u16, user: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("ca.crt"), &ca.pem).unwrap();
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    \
             certificate-authority: ca.crt\nusers:\n- name: u\n  user:{user}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    path
}

async fn get(client: &kube::Client) -> String {
    client
        .request_text(http::Request::get("/whoami").body(Vec::new()).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn clients_present_the_current_certificate_and_reconnect_when_it_rotates() {
    let ca = ca();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let port = serve(&ca, seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = write_kubeconfig(dir.path(), &ca, port, "\n    token: not-sent");
    let (tx, rx) = tokio::sync::watch::channel(Some(certified(&ca, "system:node:first")));
    let cfg = kubelet_config::new_kubelet_configuration();
    let clients = KubeletClients::build_with_certificates(&kubeconfig, &cfg, rx)
        .await
        .unwrap();

    assert_eq!(get(&clients.main).await, "system:node:first");
    assert_eq!(get(&clients.main).await, "system:node:first");
    assert_eq!(get(&clients.heartbeat).await, "system:node:first");
    let before = seen.lock().unwrap().connections;
    assert!(before <= 2, "pooled connections are reused: {before}");

    tx.send_replace(Some(certified(&ca, "system:node:second")));
    // The watcher closes the pool's connections as soon as it sees the change.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(get(&clients.main).await, "system:node:second");
    assert_eq!(get(&clients.event).await, "system:node:second");
    assert_eq!(get(&clients.heartbeat).await, "system:node:second");
    assert!(seen.lock().unwrap().connections > before);

    for head in &seen.lock().unwrap().heads {
        assert!(
            !head.to_ascii_lowercase().contains("authorization"),
            "the kubeconfig's token is not sent with a rotating certificate: {head}"
        );
        assert!(
            head.contains("kubelet") || head.to_ascii_lowercase().contains("user-agent"),
            "{head}"
        );
    }
}

#[tokio::test]
async fn without_a_certificate_the_handshake_sends_none() {
    let ca = ca();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let port = serve(&ca, seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = write_kubeconfig(dir.path(), &ca, port, " {}");
    let (tx, rx) = tokio::sync::watch::channel(None);
    let cfg = kubelet_config::new_kubelet_configuration();
    let clients = KubeletClients::build_with_certificates(&kubeconfig, &cfg, rx)
        .await
        .unwrap();
    // The server requires a certificate: the request fails ...
    let err = clients
        .main
        .request_text(http::Request::get("/whoami").body(Vec::new()).unwrap())
        .await;
    assert!(err.is_err());
    assert_eq!(seen.lock().unwrap().connections, 0);
    // ... until the manager has one.
    tx.send_replace(Some(certified(&ca, "system:node:late")));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(get(&clients.main).await, "system:node:late");
}
