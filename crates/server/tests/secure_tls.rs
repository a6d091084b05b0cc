//! The secure port's TLS: self-signed certificate generation and reuse, minimum version,
//! client CA, bad files.
#![allow(clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt;

use rustls::version::TLS12;
use support::*;

#[tokio::test]
async fn self_signed_cert_is_generated_then_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let crt = tmp.path().join("pki/kubelet.crt");
    let key = tmp.path().join("pki/kubelet.key");

    let (server, cancel) = start(config(tmp.path())).await;
    let first = std::fs::read(&crt).unwrap();
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (status, body) = request13(&server, tmp.path(), None, "GET", "/healthz")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, "ok"));
    cancel.cancel();
    server.task.await.unwrap();

    let (server, cancel) = start(config(tmp.path())).await;
    assert_eq!(
        std::fs::read(&crt).unwrap(),
        first,
        "certificate regenerated"
    );
    // The first certificate's CA still verifies the second server.
    let (status, _) = request13(&server, tmp.path(), None, "GET", "/healthz")
        .await
        .unwrap();
    assert_eq!(status, 200);
    cancel.cancel();
}

#[tokio::test]
async fn tls12_client_refused_when_min_version_is_13() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.tls.min_version = "VersionTLS13".into();
    let (server, cancel) = start(cfg).await;
    let err = request_tls(&server, tmp.path(), None, &[&TLS12], "GET", "/healthz")
        .await
        .unwrap_err();
    assert!(err.to_string().to_lowercase().contains("version"), "{err}");
    let ok = request13(&server, tmp.path(), None, "GET", "/healthz").await;
    assert_eq!(ok.unwrap().0, 200);
    cancel.cancel();
}

#[tokio::test]
async fn tls12_client_accepted_by_default_with_configured_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    // The generated key is ECDSA.
    cfg.tls.cipher_suites = vec!["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into()];
    let (server, cancel) = start(cfg).await;
    let (status, _) = request_tls(&server, tmp.path(), None, &[&TLS12], "GET", "/healthz")
        .await
        .unwrap();
    assert_eq!(status, 200);
    cancel.cancel();
}

#[tokio::test]
async fn bad_cert_file_path_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.tls.cert_file = Some(tmp.path().join("missing/server.crt"));
    cfg.tls.key_file = Some(tmp.path().join("missing/server.key"));
    let err = start_err(cfg).await;
    assert!(err.contains("missing/server.crt"), "{err}");
}

#[tokio::test]
async fn mismatched_key_names_both_files() {
    let tmp = tempfile::tempdir().unwrap();
    // Two generated pairs; use the certificate of one with the key of the other.
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for d in [&a, &b] {
        let (s, c) = start(config(d)).await;
        c.cancel();
        s.task.await.unwrap();
    }
    let mut cfg = config(tmp.path());
    cfg.tls.cert_file = Some(a.join("pki/kubelet.crt"));
    cfg.tls.key_file = Some(b.join("pki/kubelet.key"));
    let err = start_err(cfg).await;
    assert!(
        err.contains("a/pki/kubelet.crt") && err.contains("b/pki/kubelet.key"),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_cipher_suite_names_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.tls.cipher_suites = vec!["TLS_NOT_A_SUITE".into()];
    let err = start_err(cfg).await;
    assert!(
        err.contains("--tls-cipher-suites") && err.contains("TLS_NOT_A_SUITE"),
        "{err}"
    );
}

#[tokio::test]
async fn client_cert_from_another_ca_is_unauthorized() {
    let tmp = tempfile::tempdir().unwrap();
    let trusted = client_pki(tmp.path(), "system:kube-apiserver", &[]);
    let other_dir = tmp.path().join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let untrusted = client_pki(&other_dir, "mallory", &[]);
    let mut cfg = config(tmp.path());
    cfg.client_ca_file = Some(trusted.ca_file.clone());
    cfg.anonymous = true;
    let (server, cancel) = start(cfg).await;
    // As upstream (`tls.RequestClientCert` + the x509 authenticator): the handshake
    // succeeds, the certificate does not authenticate, and it is an error, so not even
    // anonymous (enabled here) is tried: 401.
    let (status, body) = request13(&server, tmp.path(), Some(&untrusted), "GET", "/healthz")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (401, "Unauthorized"));
    // Without a certificate the same request is anonymous; with the trusted one, the user.
    assert_eq!(
        request13(&server, tmp.path(), None, "GET", "/healthz")
            .await
            .unwrap()
            .0,
        200
    );
    assert_eq!(
        request13(&server, tmp.path(), Some(&trusted), "GET", "/healthz")
            .await
            .unwrap()
            .0,
        200
    );
    cancel.cancel();
}

/// A self-signed serving certificate for 127.0.0.1 as the certificate manager would
/// publish it, and the roots trusting it.
fn serving_cert(
    cn: &str,
) -> (
    std::sync::Arc<rustls::sign::CertifiedKey>,
    rustls::RootCertStore,
) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let cert = params.self_signed(&key).unwrap();
    let der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let signer = rustls::crypto::ring::sign::any_supported_type(&der).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    (
        std::sync::Arc::new(rustls::sign::CertifiedKey::new(
            vec![cert.der().clone()],
            signer,
        )),
        roots,
    )
}

#[tokio::test]
async fn server_tls_bootstrap_serves_the_managers_certificate_once_there_is_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.tls.server_tls_bootstrap = true;
    let (tx, rx) = tokio::sync::watch::channel(None);
    cfg.prepared_tls = Some(
        kubelet_server::prepare_tls(&cfg.tls, None)
            .unwrap()
            .with_serving_certificates(rx),
    );
    let (server, cancel) = start(cfg).await;
    // No self-signed pair with serverTLSBootstrap.
    assert!(!tmp.path().join("pki/kubelet.crt").exists());

    // No certificate yet: the handshake fails.
    let (first, roots) = serving_cert("system:node:first");
    let c = client(roots.clone(), None, &[&rustls::version::TLS13]);
    assert!(
        request(server.local_addr, c.clone(), "GET", "/healthz")
            .await
            .is_err()
    );

    tx.send_replace(Some(first));
    let (status, body) = request(server.local_addr, c.clone(), "GET", "/healthz")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, "ok"));

    // A rotated certificate is served to the next full handshake without a restart (a
    // client trusting only the first one fails; a resumed session has no certificate
    // exchange, as with Go's server).
    let (second, roots2) = serving_cert("system:node:second");
    tx.send_replace(Some(second));
    let fresh = client(roots, None, &[&rustls::version::TLS13]);
    assert!(
        request(server.local_addr, fresh, "GET", "/healthz")
            .await
            .is_err()
    );
    let c2 = client(roots2, None, &[&rustls::version::TLS13]);
    assert_eq!(
        request(server.local_addr, c2, "GET", "/healthz")
            .await
            .unwrap()
            .0,
        200
    );
    cancel.cancel();
}

/// A self-signed pair for 127.0.0.1 written to `crt`/`key`; the roots trusting it.
fn write_pair(cn: &str, crt: &std::path::Path, key: &std::path::Path) -> rustls::RootCertStore {
    let k = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let cert = params.self_signed(&k).unwrap();
    std::fs::write(crt, cert.pem()).unwrap();
    std::fs::write(key, k.serialize_pem()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    roots
}

/// `ReloadKubeletServerCertificateFile`: a new pair written over `tlsCertFile` /
/// `tlsPrivateKeyFile` is what the running server presents to new connections.
#[tokio::test]
async fn serving_certificate_files_are_reloaded_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let (crt, key) = (
        tmp.path().join("serving.crt"),
        tmp.path().join("serving.key"),
    );
    let first = write_pair("first", &crt, &key);
    let mut cfg = config(tmp.path());
    cfg.tls.cert_file = Some(crt.clone());
    cfg.tls.key_file = Some(key.clone());
    let cancel = tokio_util::sync::CancellationToken::new();
    cfg.prepared_tls = Some(
        kubelet_server::prepare_tls(&cfg.tls, None)
            .unwrap()
            // An hour's resync: the change must come through the inotify watch.
            .reload_serving_files(std::time::Duration::from_secs(3600), cancel.clone())
            .unwrap(),
    );
    let (server, stop) = start(cfg).await;
    let get = |roots: rustls::RootCertStore| {
        let c = client(roots, None, &[&rustls::version::TLS13]);
        request(server.local_addr, c, "GET", "/healthz")
    };
    assert_eq!(get(first.clone()).await.unwrap().0, 200);

    let second = write_pair("second", &crt, &key);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while get(second.clone()).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the new pair was never served"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(get(first).await.is_err(), "the old pair is still served");
    cancel.cancel();
    stop.cancel();
}
