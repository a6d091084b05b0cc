//! The kubelet's HTTP servers (mirrors `pkg/kubelet/server/server.go` and the healthz
//! port set up in `cmd/kubelet/app/server.go`).
//!
//! * [`healthz_router`]: the plain-HTTP healthz port (`healthzBindAddress:healthzPort`,
//!   10248): `/healthz` and `/healthz/ping` answer `ok`; nothing else is served.
//! * [`read_only_router`]: the read-only port (`readOnlyPort`, 10255 in the legacy
//!   regime): `/healthz` (ping, log, syncloop checks) and `/pods`. Everything else —
//!   `/exec`, `/run`, `/logs`, `/configz`, debugging handlers — is not installed there,
//!   as upstream's read-only server installs only the default handlers.
//!
//! * [`start_secure_server`]: the secure port (`address:port`, 10250) over TLS, with
//!   x509, bearer-token ([`TokenAuthenticator`]) and anonymous authentication and an
//!   [`Authorizer`] on every path: `/healthz`,
//!   `/pods`, and `/configz` when debugging handlers are enabled (see [`secure`]).
//!
//! The servers see the kubelet only through the narrow [`HostInterface`], like
//! upstream's `server.HostInterface`.

mod accept;
pub mod authn;
pub mod authz;
mod certs;
mod ciphers;
mod filter;
mod healthz;
mod listen;
mod methods;
mod readonly;
mod respond;
pub mod secure;
mod tls;

use std::sync::Arc;

pub use authn::{AuthnError, TokenAuthenticator, TokenError, TokenFuture, UserInfo};
pub use authz::{AlwaysAllow, Attributes, AuthorizeFuture, Authorizer, AuthorizerError, Decision};
pub use certs::CertKeyPaths;
pub use ciphers::TlsFlagError;
pub use healthz::{HealthCheck, healthz_router};
pub use listen::{
    HEADER_READ_TIMEOUT, MAX_CONNECTIONS, ServeLimits, ServerError, bind, serve, serve_with_limits,
};
pub use readonly::read_only_router;
pub use secure::{SecureServer, SecureServerConfig, secure_router, start_secure_server};
pub use tls::{
    PreparedTls, ServingCertResolver, ServingCertificates, TlsError, TlsSettings, prepare_tls,
};

/// What the HTTP servers need from the kubelet (upstream `server.HostInterface`).
pub trait HostInterface: Send + Sync {
    /// The pods this kubelet runs, each with its latest status.
    fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod>;
    /// `Ok` while the sync loop is alive (upstream `syncLoopHealthCheck`).
    fn sync_loop_health(&self) -> Result<(), String>;
}

/// Shared handle to the host.
pub type Host = Arc<dyn HostInterface>;
