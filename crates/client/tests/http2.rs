//! The clients' shared HTTP/2 transport ([`kubelet_client::transport`]), against a TLS
//! server in the test that offers `h2` and `http/1.1` as the API server does: while one
//! request stays open (a watch), the main, event and heartbeat clients' requests all go
//! over HTTP/2 on one connection, as client-go's transport (kube-rs alone would open one
//! HTTP/1.1 connection per concurrent request).

#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use kubelet_client::KubeletClients;
use rcgen::{CertificateParams, KeyPair};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

#[derive(Default)]
struct Seen {
    connections: usize,
    versions: Vec<(String, http::Version)>,
}

/// HTTPS on 127.0.0.1 with ALPN `h2`, `http/1.1` and a self-signed certificate (its PEM
/// returned); `/watch` answers after 2 s, everything else at once.
async fn serve(seen: Arc<Mutex<Seen>>) -> (u16, String) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                seen.lock().unwrap().connections += 1;
                let service = hyper::service::service_fn(move |req: http::Request<_>| {
                    let seen = seen.clone();
                    async move {
                        let path = req.uri().path().to_string();
                        seen.lock()
                            .unwrap()
                            .versions
                            .push((path.clone(), req.version()));
                        if path == "/watch" {
                            tokio::time::sleep(Duration::from_secs(2)).await;
                        }
                        Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from("{}"))))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    (port, cert.pem())
}

async fn get(client: &kube::Client, path: &str) {
    client
        .request_text(http::Request::get(path).body(Vec::new()).unwrap())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_three_clients_share_one_http2_connection() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (port, ca) = serve(seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.crt"), ca).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    \
             certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n    token: t\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    let cfg = kubelet_config::new_kubelet_configuration();
    let clients = KubeletClients::build(&kubeconfig, &cfg).await.unwrap();

    // The first request opens the connection; then a watch stays open while the others ask.
    get(&clients.main, "/first").await;
    let watch = {
        let main = clients.main.clone();
        tokio::spawn(async move { get(&main, "/watch").await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    get(&clients.main, "/main").await;
    get(&clients.event, "/event").await;
    get(&clients.heartbeat, "/heartbeat").await;
    watch.await.unwrap();

    let seen = seen.lock().unwrap();
    let mut paths: Vec<&str> = seen.versions.iter().map(|(p, _)| p.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["/event", "/first", "/heartbeat", "/main", "/watch"]);
    for (path, version) in &seen.versions {
        assert_eq!(*version, http::Version::HTTP_2, "{path}");
    }
    assert_eq!(
        seen.connections, 1,
        "one connection for every client and request"
    );
}
