//! Helpers for the secure-server tests: a test PKI made with rcgen, a fake host, a
//! recording authorizer, and a minimal HTTP/1.1-over-TLS client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;
use kubelet_server::{
    AlwaysAllow, Attributes, AuthorizeFuture, Authorizer, AuthorizerError, Decision, HostInterface,
    SecureServer, SecureServerConfig, TlsSettings, start_secure_server,
};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::version::TLS13;
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A pod host with one pod.
pub struct FakeHost;

impl HostInterface for FakeHost {
    fn get_pods(&self) -> Vec<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some("web-node1".into());
        p.metadata.namespace = Some("default".into());
        vec![p]
    }
    fn sync_loop_health(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Records every attribute set and answers with a fixed result.
pub struct RecordingAuthorizer {
    pub seen: Mutex<Vec<Attributes>>,
    pub answer: Result<Decision, AuthorizerError>,
}

impl RecordingAuthorizer {
    pub fn new(answer: Result<Decision, AuthorizerError>) -> Arc<Self> {
        Arc::new(RecordingAuthorizer {
            seen: Mutex::new(Vec::new()),
            answer,
        })
    }
    pub fn seen(&self) -> Vec<Attributes> {
        self.seen.lock().unwrap().clone()
    }
}

impl Authorizer for RecordingAuthorizer {
    fn authorize<'a>(&'a self, attrs: &'a Attributes) -> AuthorizeFuture<'a> {
        self.seen.lock().unwrap().push(attrs.clone());
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

/// A client CA and a client certificate it signed.
pub struct ClientPki {
    pub ca_file: PathBuf,
    pub chain: Vec<CertificateDer<'static>>,
    pub key_pem: String,
}

fn empty_dn_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, cn);
    p
}

/// Writes `<dir>/client-ca.crt` and returns a client certificate `CN=user, O=groups`.
pub fn client_pki(dir: &Path, user: &str, groups: &[&str]) -> ClientPki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = empty_dn_params(&format!("test-client-ca-for-{user}"));
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate().unwrap();
    let mut leaf = empty_dn_params(user);
    for g in groups {
        leaf.distinguished_name.push(DnType::OrganizationName, *g);
    }
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &issuer).unwrap();

    let ca_file = dir.join("client-ca.crt");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    ClientPki {
        ca_file,
        chain: vec![cert.der().clone()],
        key_pem: key.serialize_pem(),
    }
}

/// TLS settings generating the self-signed pair under `<dir>/pki` for `localhost`.
pub fn tls_settings(dir: &Path) -> TlsSettings {
    TlsSettings {
        cert_dir: dir.join("pki"),
        hostname: "localhost".into(),
        ips: vec![LOOPBACK],
        ..Default::default()
    }
}

/// A loopback config on a free port, anonymous on, AlwaysAllow, debugging handlers on.
pub fn config(dir: &Path) -> SecureServerConfig {
    SecureServerConfig {
        address: "127.0.0.1".into(),
        port: 0,
        node_name: "node1".into(),
        tls: tls_settings(dir),
        prepared_tls: None,
        client_ca_file: None,
        anonymous: true,
        token_authenticator: None,
        authorizer: Arc::new(AlwaysAllow),
        fine_grained_authz: true,
        enable_debugging_handlers: true,
        split_log_streams: false,
        debug: kubelet_server::DebugHandlers::default(),
    }
}

/// [`config`] trusting a fresh client CA under `dir` that signed a certificate for
/// `user`/`groups`, and asking a [`RecordingAuthorizer`] that answers `answer`.
pub fn authz_config(
    dir: &Path,
    user: &str,
    groups: &[&str],
    answer: Result<Decision, AuthorizerError>,
) -> (SecureServerConfig, ClientPki, Arc<RecordingAuthorizer>) {
    let pki = client_pki(dir, user, groups);
    let authz = RecordingAuthorizer::new(answer);
    let mut cfg = config(dir);
    cfg.client_ca_file = Some(pki.ca_file.clone());
    cfg.authorizer = authz.clone();
    (cfg, pki, authz)
}

pub fn configz_payload() -> serde_json::Value {
    serde_json::json!({"kubeletconfig": {"kind": "KubeletConfiguration", "port": 10250}})
}

/// Starts the server; the token stops it.
pub async fn start(cfg: SecureServerConfig) -> (SecureServer, CancellationToken) {
    let cancel = CancellationToken::new();
    let server = start_secure_server(cfg, Arc::new(FakeHost), configz_payload(), cancel.clone())
        .await
        .unwrap();
    (server, cancel)
}

/// Starts the server expecting it to fail; returns the error's text.
pub async fn start_err(cfg: SecureServerConfig) -> String {
    start_secure_server(
        cfg,
        Arc::new(FakeHost),
        configz_payload(),
        CancellationToken::new(),
    )
    .await
    .unwrap_err()
    .to_string()
}

/// Trusts the CA that signed the server's certificate (the last one in the file).
pub fn server_roots(cert_file: &Path) -> RootCertStore {
    let certs: Vec<_> = CertificateDer::pem_file_iter(cert_file)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(certs.last().unwrap().clone()).unwrap();
    roots
}

/// A client for `versions`, with a client certificate when given.
pub fn client(
    roots: RootCertStore,
    cert: Option<&ClientPki>,
    versions: &[&'static SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let b = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    let cfg = match cert {
        Some(c) => b
            .with_client_auth_cert(
                c.chain.clone(),
                PrivateKeyDer::from_pem_slice(c.key_pem.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => b.with_no_client_auth(),
    };
    Arc::new(cfg)
}

/// One HTTP/1.1 request over TLS 1.3 to `server`, trusting the self-signed certificate it
/// generated under `<dir>/pki`, presenting `cert` when given.
pub async fn request13(
    server: &SecureServer,
    dir: &Path,
    cert: Option<&ClientPki>,
    method: &str,
    path: &str,
) -> anyhow::Result<(u16, String)> {
    request_tls(server, dir, cert, &[&TLS13], method, path).await
}

/// [`request13`] offering the TLS `versions` given.
pub async fn request_tls(
    server: &SecureServer,
    dir: &Path,
    cert: Option<&ClientPki>,
    versions: &[&'static SupportedProtocolVersion],
    method: &str,
    path: &str,
) -> anyhow::Result<(u16, String)> {
    let roots = server_roots(&dir.join("pki/kubelet.crt"));
    let client = client(roots, cert, versions);
    request(server.local_addr, client, method, path).await
}

/// One HTTP/1.1 request; returns the status code and the body.
pub async fn request(
    addr: SocketAddr,
    client: Arc<ClientConfig>,
    method: &str,
    path: &str,
) -> anyhow::Result<(u16, String)> {
    let tcp = TcpStream::connect(addr).await?;
    let mut tls = TlsConnector::from(client)
        .connect(ServerName::IpAddress(LOOPBACK.into()), tcp)
        .await?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(req.as_bytes()).await?;
    let mut raw = Vec::new();
    tls.read_to_end(&mut raw).await?;
    let text = String::from_utf8(raw)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("no header end in {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("no status in {head:?}"))?
        .parse()?;
    Ok((status, body.to_string()))
}
