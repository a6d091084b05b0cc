//! The secure port's TLS configuration (`InitializeTLS` in `cmd/kubelet/app/server.go`):
//! serving certificate, minimum version, TLS 1.2 cipher suites and the client CA that
//! x509 client certificates are checked against. rustls with the *ring* provider only.
//!
//! With `serverTLSBootstrap` the serving certificate is the certificate manager's
//! (`NewKubeletServerCertificateManager`, `tlsOptions.Config.GetCertificate`): read from
//! a [`ServingCertificates`] channel at each handshake ([`ServingCertResolver`]); until
//! the first certificate is issued, handshakes fail ("no serving certificate available
//! for the kubelet"), as upstream's `GetCertificate` error does. No self-signed pair is
//! made then.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;

/// The serving certificate as the certificate manager publishes it
/// (`kubelet_certificate::Manager::certified_keys`).
pub type ServingCertificates = watch::Receiver<Option<Arc<CertifiedKey>>>;

/// `GetCertificate` = `serverCertificateManager.Current()`.
#[derive(Debug)]
pub struct ServingCertResolver(ServingCertificates);

impl ServingCertResolver {
    /// A resolver serving the current value of `certs`.
    pub fn new(certs: ServingCertificates) -> Self {
        Self(certs)
    }
}

impl ResolvesServerCert for ServingCertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let cert = self.0.borrow().clone();
        if cert.is_none() {
            tracing::debug!("no serving certificate available for the kubelet");
        }
        cert
    }
}

use crate::certs::{
    CertKeyPaths, can_read_cert_and_key_consistently, cert_key_paths, load_certs, load_key,
    write_self_signed,
};
use crate::ciphers::{TlsFlagError, TlsVersion, parse_cipher_suites, parse_min_version};

/// The TLS inputs of the secure port, from `KubeletConfiguration` and the flags.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// `tlsCertFile`; `None` when unset.
    pub cert_file: Option<PathBuf>,
    /// `tlsPrivateKeyFile`; `None` when unset.
    pub key_file: Option<PathBuf>,
    /// `--cert-dir`: where `kubelet.crt`/`kubelet.key` are kept when the two above are unset.
    pub cert_dir: PathBuf,
    /// The hostname the self-signed certificate is made for (`--hostname-override` or the
    /// host's name).
    pub hostname: String,
    /// Extra IP SANs for the self-signed certificate (node IPs, 127.0.0.1).
    pub ips: Vec<IpAddr>,
    /// `tlsMinVersion` (`VersionTLS12`, `VersionTLS13`; empty for the default).
    pub min_version: String,
    /// `tlsCipherSuites` (Go names).
    pub cipher_suites: Vec<String>,
    /// `serverTLSBootstrap`: the certificate comes from the certificate manager; the
    /// files above are neither generated nor loaded here.
    pub server_tls_bootstrap: bool,
}

/// Errors setting up TLS; each names the file or flag.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// `tlsMinVersion` or `tlsCipherSuites` is wrong.
    #[error(transparent)]
    Flag(#[from] TlsFlagError),
    /// Only one of the certificate/key pair is set or readable.
    #[error("error reading {0}, certificate and key must be supplied as a pair")]
    Unpaired(PathBuf),
    /// A PEM file could not be read or parsed.
    #[error("failed to load {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Writing the generated certificate or key failed.
    #[error("failed to write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Generating the self-signed certificate failed.
    #[error("unable to generate self signed cert for {host:?}: {reason}")]
    Generate {
        /// The hostname.
        host: String,
        /// Why.
        reason: String,
    },
    /// The client CA bundle is unusable.
    #[error("unable to load client CA file {path}: {reason}")]
    ClientCa {
        /// `authentication.x509.clientCAFile`.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The certificate and key do not form a usable pair.
    #[error("invalid serving certificate {cert} / key {key}: {reason}")]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why (e.g. the key does not match the certificate).
        reason: String,
    },
}

/// The *ring* provider restricted to the configured TLS 1.2 suites (TLS 1.3 suites are
/// not configurable, as in Go), and the protocol versions to offer.
fn provider_and_versions(
    s: &TlsSettings,
) -> Result<
    (
        CryptoProvider,
        Vec<&'static rustls::SupportedProtocolVersion>,
    ),
    TlsError,
> {
    let min = parse_min_version(&s.min_version)?;
    let tls12 = parse_cipher_suites(&s.cipher_suites)?;
    let mut provider = rustls::crypto::ring::default_provider();
    if min == TlsVersion::Tls13 {
        if !s.cipher_suites.is_empty() {
            tracing::info!(
                "Warning: TLS 1.3 cipher suites are not configurable, ignoring --tls-cipher-suites"
            );
        }
        return Ok((provider, vec![&rustls::version::TLS13]));
    }
    let Some(tls12) = tls12 else {
        return Ok((
            provider,
            vec![&rustls::version::TLS12, &rustls::version::TLS13],
        ));
    };
    provider
        .cipher_suites
        .retain(|c| c.version() == &rustls::version::TLS13);
    if tls12.is_empty() {
        tracing::warn!(
            "none of --tls-cipher-suites is implemented for TLS 1.2; serving TLS 1.3 only"
        );
        return Ok((provider, vec![&rustls::version::TLS13]));
    }
    provider.cipher_suites.extend(tls12);
    Ok((
        provider,
        vec![&rustls::version::TLS12, &rustls::version::TLS13],
    ))
}

/// Go's `tls.RequestClientCert`: a client certificate is asked for (with the client CA's
/// names as hints), never required, and not checked against the CA during the handshake —
/// only the client's proof that it holds the key (the CertificateVerify signature) is. The
/// chain is checked by the x509 authenticator (`crate::authn::verify_chain`) per request,
/// so a certificate from another CA gets 401 Unauthorized, as upstream, not a failed
/// handshake.
#[derive(Debug)]
struct RequestClientCert(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }
    fn client_auth_mandatory(&self) -> bool {
        false
    }
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.0.root_hint_subjects()
    }
    fn verify_client_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The x509 authenticator's verifier for client certificates signed by `clientCAFile`
/// (checked when given, never required; the TLS layer uses it through
/// [`RequestClientCert`]).
pub(crate) fn client_verifier(
    ca_file: &Path,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let bad = |reason: String| TlsError::ClientCa {
        path: ca_file.to_path_buf(),
        reason,
    };
    let certs = load_certs(ca_file).map_err(|e| match e {
        TlsError::Load { reason, .. } => bad(reason),
        other => other,
    })?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| bad(e.to_string()))?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(|e| bad(e.to_string()))
}

/// The part of `InitializeTLS` that writes nothing: the flags parsed, the serving pair chosen
/// and, when it exists, loaded and checked to pair; the client CA bundle loaded. What is left
/// for the start is generating the self-signed pair when neither default file exists.
#[derive(Clone)]
pub struct PreparedTls {
    provider: Arc<CryptoProvider>,
    versions: Vec<&'static rustls::SupportedProtocolVersion>,
    paths: CertKeyPaths,
    /// The default pair does not exist yet: the start generates it.
    generate: bool,
    /// `tlsCertFile` and `tlsPrivateKeyFile` were both given (not the `--cert-dir` pair).
    explicit_files: bool,
    /// `serverTLSBootstrap`: no pair here, the certificate manager's.
    bootstrap: bool,
    /// The certificate manager's certificates (`serverTLSBootstrap`).
    serving: Option<ServingCertificates>,
    client_verifier: Option<Arc<dyn ClientCertVerifier>>,
}

impl std::fmt::Debug for PreparedTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedTls")
            .field("paths", &self.paths)
            .field("generate", &self.generate)
            .field("client_ca", &self.client_verifier.is_some())
            .finish_non_exhaustive()
    }
}

/// Checks everything [`build_server_config`] would, without writing: `tlsMinVersion`,
/// `tlsCipherSuites`, the certificate/key pair (both or neither given; when readable, they
/// must load and match) and the client CA bundle.
pub fn prepare_tls(
    s: &TlsSettings,
    client_ca_file: Option<&Path>,
) -> Result<PreparedTls, TlsError> {
    let (provider, versions) = provider_and_versions(s)?;
    let provider = Arc::new(provider);
    let (paths, defaulted) =
        cert_key_paths(s.cert_file.as_deref(), s.key_file.as_deref(), &s.cert_dir)?;
    let bootstrap = s.server_tls_bootstrap;
    let generate = !bootstrap && defaulted && !can_read_cert_and_key_consistently(&paths)?;
    let client_verifier = client_ca_file
        .map(|ca| client_verifier(ca, provider.clone()))
        .transpose()?;
    let prepared = PreparedTls {
        provider,
        versions,
        paths,
        generate,
        explicit_files: !defaulted && !bootstrap,
        bootstrap,
        serving: None,
        client_verifier,
    };
    if !prepared.generate && !prepared.bootstrap {
        prepared.load_pair()?;
    }
    Ok(prepared)
}

impl PreparedTls {
    /// The serving certificate and key files (`<cert-dir>/kubelet.{crt,key}` by default).
    pub fn cert_key_paths(&self) -> &CertKeyPaths {
        &self.paths
    }

    /// Whether the serving certificate comes from the certificate manager
    /// (`serverTLSBootstrap`): give it with [`PreparedTls::with_serving_certificates`].
    pub fn server_tls_bootstrap(&self) -> bool {
        self.bootstrap
    }

    /// The client CA's verifier for the x509 authenticator (`None` without `clientCAFile`).
    pub(crate) fn x509_verifier(&self) -> Option<Arc<dyn ClientCertVerifier>> {
        self.client_verifier.clone()
    }

    /// Serve the certificate manager's certificates (`GetCertificate`) instead of a pair
    /// on disk: [`PreparedTls::server_config`] then uses
    /// [`PreparedTls::server_config_with_certificates`].
    pub fn with_serving_certificates(mut self, certs: ServingCertificates) -> Self {
        self.serving = Some(certs);
        self
    }

    /// `ReloadKubeletServerCertificateFile` (`NewKubeletServerCertificateDynamicFileManager`):
    /// when `tlsCertFile` and `tlsPrivateKeyFile` were given (and not `serverTLSBootstrap`),
    /// serve the pair through a [`ServingCertificates`] channel that a task refreshes when
    /// either file changes, as upstream's `DynamicCertKeyPairContent`: on every inotify
    /// event in the files' directories (upstream: fsnotify) and every `resync` (upstream:
    /// one minute) it reads both files and reloads when their contents differ. Where
    /// inotify cannot be set up, the files are read every `resync` only (logged).
    /// A pair that does not load or match is logged and the last good one kept, as upstream.
    /// The task ends with `cancel`. Returns `self` unchanged otherwise.
    pub fn reload_serving_files(
        self,
        resync: std::time::Duration,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<Self, TlsError> {
        if !self.explicit_files || self.serving.is_some() {
            return Ok(self);
        }
        // Watching before the first read: a change after it is an event.
        let mut events = match watch_directories_of(&self.paths) {
            Ok(events) => Some(events),
            Err(e) => {
                tracing::warn!(err = %e, cert_file = %self.paths.cert.display(), "cannot watch the serving certificate files; they are re-read every {resync:?} only");
                None
            }
        };
        let mut seen = file_contents(&self.paths);
        let first = certified_key(&self.paths, &self.provider)?;
        let (tx, rx) = watch::channel(Some(first));
        let paths = self.paths.clone();
        let provider = self.provider.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(resync);
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tick.tick() => {}
                    event = next_event(&mut events) => {
                        if !event {
                            tracing::warn!(cert_file = %paths.cert.display(), "the watch of the serving certificate files ended; they are re-read every {resync:?} only");
                            events = None;
                        }
                    }
                }
                let now = file_contents(&paths);
                if now == seen {
                    continue;
                }
                seen = now;
                match certified_key(&paths, &provider) {
                    Ok(k) => {
                        tracing::info!(cert_file = %paths.cert.display(), key_file = %paths.key.display(), "loaded certificate and key pair in kubelet server certificate manager");
                        tx.send_replace(Some(k));
                    }
                    Err(e) => {
                        tracing::error!(err = %e, cert_file = %paths.cert.display(), key_file = %paths.key.display(), "invalid certificate and key pair from file");
                    }
                }
            }
        });
        Ok(self.with_serving_certificates(rx))
    }

    fn builder(
        &self,
    ) -> Result<rustls::ConfigBuilder<ServerConfig, rustls::server::WantsServerCert>, TlsError>
    {
        let builder = ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&self.versions)
            .map_err(|e| TlsError::Flag(TlsFlagError::UnknownVersion(e.to_string())))?;
        Ok(match &self.client_verifier {
            Some(v) => builder.with_client_cert_verifier(Arc::new(RequestClientCert(v.clone()))),
            None => builder.with_no_client_auth(),
        })
    }

    /// The server's `tls.Config` with `GetCertificate` reading `certs` (upstream's
    /// `serverTLSBootstrap` path; h2 and http/1.1 offered over ALPN).
    pub fn server_config_with_certificates(
        &self,
        certs: ServingCertificates,
    ) -> Result<Arc<ServerConfig>, TlsError> {
        let mut config = self
            .builder()?
            .with_cert_resolver(Arc::new(ServingCertResolver::new(certs)));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The rustls configuration of the pair on disk.
    fn load_pair(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let chain = load_certs(&self.paths.cert)?;
        let key = load_key(&self.paths.key)?;
        let mut config =
            self.builder()?
                .with_single_cert(chain, key)
                .map_err(|e| TlsError::Pair {
                    cert: self.paths.cert.clone(),
                    key: self.paths.key.clone(),
                    reason: e.to_string(),
                })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The server's `tls.Config`: generates the self-signed pair for `hostname` (plus `ips`)
    /// when needed, then loads it (h2 and http/1.1 offered over ALPN, as Go's server does).
    /// With `serverTLSBootstrap`, the certificate manager's certificates instead (none
    /// without [`PreparedTls::with_serving_certificates`]: every handshake fails).
    pub fn server_config(
        &self,
        hostname: &str,
        ips: &[IpAddr],
    ) -> Result<Arc<ServerConfig>, TlsError> {
        if let Some(certs) = &self.serving {
            return self.server_config_with_certificates(certs.clone());
        }
        if self.bootstrap {
            // serverTLSBootstrap without a manager: as upstream, nothing to serve.
            let (_, none) = watch::channel(None);
            return self.server_config_with_certificates(none);
        }
        if self.generate {
            write_self_signed(&self.paths, hostname, ips)?;
        }
        self.load_pair()
    }
}

/// Both files' contents (`None` for one that cannot be read): a few kilobytes, compared
/// as they are (a rewrite within one timestamp tick still counts).
/// Inotify events (writes, renames, creations, removals, attribute changes) in the
/// directories of the certificate and the key: a file replaced by rename, or a symlink swap
/// as Kubernetes secrets and cert-manager do, is an event of its directory.
fn watch_directories_of(paths: &CertKeyPaths) -> std::io::Result<inotify::EventStream<Vec<u8>>> {
    use inotify::{Inotify, WatchMask};
    let mask = WatchMask::CLOSE_WRITE
        | WatchMask::MOVED_TO
        | WatchMask::MOVED_FROM
        | WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::ATTRIB;
    let inotify = Inotify::init()?;
    for file in [&paths.cert, &paths.key] {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // Adding the same directory twice returns the same watch.
        inotify.watches().add(dir, mask)?;
    }
    inotify.into_event_stream(vec![0u8; 4096])
}

/// Waits for the next event of `events`: `true` for an event, `false` when the stream
/// ended or failed. Pends forever without a stream (the resync alone reads the files).
async fn next_event(events: &mut Option<inotify::EventStream<Vec<u8>>>) -> bool {
    use futures::StreamExt;
    match events {
        Some(stream) => matches!(stream.next().await, Some(Ok(_))),
        None => std::future::pending().await,
    }
}

fn file_contents(paths: &CertKeyPaths) -> [Option<Vec<u8>>; 2] {
    [
        std::fs::read(&paths.cert).ok(),
        std::fs::read(&paths.key).ok(),
    ]
}

/// The pair as a rustls [`CertifiedKey`], checked to match (`tls.X509KeyPair`).
fn certified_key(
    paths: &CertKeyPaths,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = load_certs(&paths.cert)?;
    let key = load_key(&paths.key)?;
    let pair_error = |reason: String| TlsError::Pair {
        cert: paths.cert.clone(),
        key: paths.key.clone(),
        reason,
    };
    let key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| pair_error(e.to_string()))?;
    let ck = CertifiedKey::new(chain, key);
    ck.keys_match().map_err(|e| pair_error(e.to_string()))?;
    Ok(Arc::new(ck))
}

/// `InitializeTLS` + the server's `tls.Config`: [`prepare_tls`], then
/// [`PreparedTls::server_config`].
pub fn build_server_config(
    s: &TlsSettings,
    client_ca_file: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    prepare_tls(s, client_ca_file)?.server_config(&s.hostname, &s.ips)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn settings(min: &str, suites: &[&str]) -> TlsSettings {
        TlsSettings {
            min_version: min.into(),
            cipher_suites: suites.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn tls13_min_offers_only_tls13() {
        let (_, v) = provider_and_versions(&settings("VersionTLS13", &[])).unwrap();
        assert_eq!(v, vec![&rustls::version::TLS13]);
    }

    #[test]
    fn configured_suites_restrict_tls12_only() {
        let s = settings("", &["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]);
        let (p, v) = provider_and_versions(&s).unwrap();
        assert_eq!(v.len(), 2);
        let tls12: Vec<_> = p
            .cipher_suites
            .iter()
            .filter(|c| c.version() == &rustls::version::TLS12)
            .collect();
        assert_eq!(tls12.len(), 1);
        assert_eq!(
            p.cipher_suites.len() - 1,
            rustls::crypto::ring::default_provider()
                .cipher_suites
                .iter()
                .filter(|c| c.version() == &rustls::version::TLS13)
                .count()
        );
    }

    #[test]
    fn only_unimplemented_suites_fall_back_to_tls13() {
        let s = settings("VersionTLS12", &["TLS_RSA_WITH_AES_128_GCM_SHA256"]);
        let (_, v) = provider_and_versions(&s).unwrap();
        assert_eq!(v, vec![&rustls::version::TLS13]);
    }

    /// Kubelets started together on one `--cert-dir` (the parallel tests of a fresh machine)
    /// each decide to generate the missing pair; every one must end up serving a matching
    /// certificate and key, and the directory must hold one pair. Before the directory lock,
    /// one kubelet loaded another's certificate with its own key (`KeyMismatch`).
    #[test]
    fn kubelets_generating_one_pair_at_once_all_load_a_matching_pair() {
        let tmp = tempfile::tempdir().unwrap();
        let s = TlsSettings {
            cert_dir: tmp.path().join("pki"),
            hostname: "node1".into(),
            ..Default::default()
        };
        let prepared: Vec<_> = (0..8).map(|_| prepare_tls(&s, None).unwrap()).collect();
        assert!(prepared.iter().all(|p| p.generate));
        let barrier = std::sync::Barrier::new(prepared.len());
        std::thread::scope(|scope| {
            for p in &prepared {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    p.server_config("node1", &[]).unwrap();
                });
            }
        });
        let names: Vec<_> = std::fs::read_dir(tmp.path().join("pki"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let mut names = names;
        names.sort();
        assert_eq!(names, ["kubelet.crt", "kubelet.key"]);
        certified_key(
            &prepared[0].paths,
            &rustls::crypto::ring::default_provider(),
        )
        .unwrap();
    }

    #[test]
    fn bad_client_ca_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let ca = tmp.path().join("ca.crt");
        std::fs::write(&ca, "not pem").unwrap();
        let s = TlsSettings {
            cert_dir: tmp.path().join("pki"),
            hostname: "node1".into(),
            ..Default::default()
        };
        let err = build_server_config(&s, Some(&ca)).unwrap_err().to_string();
        assert!(err.contains("unable to load client CA file"), "{err}");
        assert!(err.contains("ca.crt"), "{err}");
    }

    #[test]
    fn prepare_writes_nothing_and_server_config_generates_the_default_pair() {
        let tmp = tempfile::tempdir().unwrap();
        let s = TlsSettings {
            cert_dir: tmp.path().join("pki"),
            hostname: "node1".into(),
            ..Default::default()
        };
        let p = prepare_tls(&s, None).unwrap();
        assert_eq!(p.cert_key_paths().cert, tmp.path().join("pki/kubelet.crt"));
        assert!(
            !tmp.path().join("pki").exists(),
            "prepare_tls must not write"
        );
        p.server_config("node1", &[]).unwrap();
        assert!(tmp.path().join("pki/kubelet.key").exists());
        // now the pair exists: it is loaded and checked, not generated again
        let again = prepare_tls(&s, None).unwrap();
        assert!(!again.generate);
    }

    #[test]
    fn prepare_refuses_a_key_that_does_not_match_the_certificate() {
        let tmp = tempfile::tempdir().unwrap();
        let a = crate::certs::generate_self_signed("a", &[]).unwrap();
        let b = crate::certs::generate_self_signed("b", &[]).unwrap();
        let cert = tmp.path().join("a.crt");
        let key = tmp.path().join("b.key");
        std::fs::write(&cert, a.cert_pem).unwrap();
        std::fs::write(&key, b.key_pem).unwrap();
        let s = TlsSettings {
            cert_file: Some(cert),
            key_file: Some(key),
            ..Default::default()
        };
        let err = prepare_tls(&s, None).unwrap_err().to_string();
        assert!(err.contains("a.crt") && err.contains("b.key"), "{err}");
        let missing = TlsSettings {
            cert_file: Some(tmp.path().join("none.crt")),
            key_file: Some(tmp.path().join("b.key")),
            ..Default::default()
        };
        let err = prepare_tls(&missing, None).unwrap_err().to_string();
        assert!(err.contains("none.crt"), "{err}");
    }

    /// `ReloadKubeletServerCertificateFile`: a new pair written over the files is served
    /// without a restart; a broken one is ignored (the last good pair stays).
    #[tokio::test]
    async fn explicit_files_are_reloaded_when_they_change() {
        let dir = tempfile::tempdir().unwrap();
        let paths = CertKeyPaths {
            cert: dir.path().join("serving.crt"),
            key: dir.path().join("serving.key"),
        };
        write_self_signed(&paths, "first", &[]).unwrap();
        let s = TlsSettings {
            cert_file: Some(paths.cert.clone()),
            key_file: Some(paths.key.clone()),
            ..Default::default()
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        // An hour's resync: only the inotify events can bring the changes below in time.
        let period = std::time::Duration::from_secs(3600);
        let prepared = prepare_tls(&s, None)
            .unwrap()
            .reload_serving_files(period, cancel.clone())
            .unwrap();
        let mut rx = prepared.serving.clone().unwrap();
        let current = |rx: &ServingCertificates| rx.borrow().as_ref().unwrap().cert[0].clone();
        let first = current(&rx);
        assert_eq!(first.as_ref(), load_certs(&paths.cert).unwrap()[0].as_ref());
        prepared.server_config("ignored", &[]).unwrap();

        // A new pair over the old one (write_self_signed keeps a readable pair).
        let second_pair = crate::certs::generate_self_signed("second", &[]).unwrap();
        std::fs::write(&paths.key, second_pair.key_pem).unwrap();
        std::fs::write(&paths.cert, second_pair.cert_pem).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), rx.changed())
            .await
            .unwrap()
            .unwrap();
        let second = current(&rx);
        assert_ne!(second, first);
        assert_eq!(
            second.as_ref(),
            load_certs(&paths.cert).unwrap()[0].as_ref()
        );

        // A key that does not match: logged, the second pair stays.
        let other = crate::certs::generate_self_signed("third", &[]).unwrap();
        std::fs::write(&paths.key, other.key_pem).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(current(&rx), second);

        // A pair replaced by renames (as tools write files atomically) is an event too.
        let fourth = crate::certs::generate_self_signed("fourth", &[]).unwrap();
        let tmp_key = dir.path().join(".key.tmp");
        let tmp_cert = dir.path().join(".cert.tmp");
        std::fs::write(&tmp_key, fourth.key_pem).unwrap();
        std::fs::write(&tmp_cert, fourth.cert_pem).unwrap();
        std::fs::rename(&tmp_key, &paths.key).unwrap();
        std::fs::rename(&tmp_cert, &paths.cert).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while current(&rx) == second {
            assert!(
                std::time::Instant::now() < deadline,
                "the renamed pair was never loaded"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(
            current(&rx).as_ref(),
            load_certs(&paths.cert).unwrap()[0].as_ref()
        );
        cancel.cancel();

        // The default `--cert-dir` pair is not watched (upstream: tlsCertFile and
        // tlsPrivateKeyFile must both be set).
        let d = TlsSettings {
            cert_dir: dir.path().join("certdir"),
            ..Default::default()
        };
        std::fs::create_dir_all(&d.cert_dir).unwrap();
        let p = prepare_tls(&d, None)
            .unwrap()
            .reload_serving_files(period, tokio_util::sync::CancellationToken::new())
            .unwrap();
        assert!(p.serving.is_none());
    }
}
