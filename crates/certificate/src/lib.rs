//! The kubelet's certificates: `pkg/kubelet/certificate` (`kubelet.go`, `transport.go`,
//! `bootstrap/bootstrap.go`) and client-go `util/certificate` (the rotating manager, the
//! file store, the CSR protocol).
//!
//! * [`bootstrap`]: `--bootstrap-kubeconfig` TLS bootstrap (`LoadClientCert`,
//!   `LoadClientConfig`, `writeKubeconfigFromBootstrapping`).
//! * [`store`]: `kubelet-client-current.pem` → `kubelet-client-<date>.pem` (and
//!   `kubelet-server-*`) in `--cert-dir`, as `certificate.NewFileStore`.
//! * [`manager`]: the certificate manager (renewal at 70–90 % of the lifetime, back-off),
//!   the client (`rotateCertificates`) and serving (`serverTLSBootstrap`) instances; it
//!   publishes the current certificate as a rustls `CertifiedKey` on a watch channel,
//!   which `kubelet-client` (`KubeletClients::build_with_certificates`) and
//!   `kubelet-server` (`PreparedTls::server_config_with_certificates`) present.
//! * [`csr`], [`api`]: the request and the CertificateSigningRequest API behind
//!   [`api::CsrApi`] (kube-rs and a recording fake).
//! * [`keys`], [`cert`]: ECDSA P-256 keys stored as SEC1 PEM, certificates with their
//!   parsed leaf.
//!
//! Upstream's `exitAfter` (exit when there has been no valid client certificate for 5
//! minutes while the server answers) is [`Manager::wait_until_unusable`]; the app stops
//! the kubelet when it returns.
//!
//! Difference: when `LoadClientCert` runs again with an expired certificate whose key is
//! RSA (written by another tool), kubelet-rs does not reuse that key for the new request
//! (it signs requests with ECDSA P-256 keys only, the kind upstream makes); it makes a new
//! one. RSA certificates in the store are still loaded and served.

pub mod api;
pub mod bootstrap;
pub mod cert;
pub mod csr;
pub mod keys;
pub mod manager;
pub mod store;
#[cfg(test)]
mod testing;
mod util;

use std::path::Path;

pub use api::{CsrApi, CsrApiError, FakeCsrApi, KubeCsrApi};
pub use cert::Certificate;
pub use manager::{Clock, FakeClock, FixedJitter, Manager, RandomJitter, RealClock};
pub use store::FileStore;

/// Why a certificate operation failed; each names the file or the request.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// A key could not be made or read.
    #[error("{0}")]
    Key(String),
    /// PEM or X.509 data is unusable.
    #[error("{0}")]
    Pem(String),
    /// The certificate request could not be made or was refused.
    #[error("{0}")]
    Csr(String),
    /// The API call failed (with upstream's wording).
    #[error("{0}")]
    Api(String),
    /// Creating the request failed.
    #[error("cannot create certificate signing request: {0}")]
    ApiStatus(CsrApiError),
    /// Waiting ran out of time.
    #[error("{0}")]
    Timeout(String),
    /// A kubeconfig could not be read or has no usable cluster.
    #[error("{0}")]
    Kubeconfig(String),
    /// The store has no certificate and key (`NoCertKeyError`).
    #[error("{0}")]
    NoCertKey(String),
    /// The store's files are not as expected.
    #[error("{0}")]
    Store(String),
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl CertificateError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
