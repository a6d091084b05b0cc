//! The kubelet's HTTP servers (mirrors `pkg/kubelet/server/server.go` and the healthz
//! port set up in `cmd/kubelet/app/server.go`).
//!
//! * [`healthz_router`]: the plain-HTTP healthz port (`healthzBindAddress:healthzPort`,
//!   10248): `/healthz` and `/healthz/ping` answer `ok`; nothing else is served.
//! * [`read_only_router`]: the read-only port (`readOnlyPort`, 10255 in the legacy
//!   regime): `/healthz` (ping, log, syncloop checks), `/pods` and the stats routes
//!   (`/stats/summary`, `/metrics/resource`, `/metrics/cadvisor`, see `stats`). Everything else —
//!   `/exec`, `/run`, `/logs`, `/configz`, debugging handlers — is not installed there,
//!   as upstream's read-only server installs only the default handlers.
//!
//! * [`start_secure_server`]: the secure port (`address:port`, 10250) over TLS, with
//!   x509, bearer-token ([`TokenAuthenticator`]) and anonymous authentication and an
//!   [`Authorizer`] on every path: `/healthz`, `/pods`, and with debugging handlers enabled
//!   `/configz`, `/containerLogs` (see `container_logs`), `/run`, `/exec`, `/attach`,
//!   `/portForward` (the runtime's streaming server behind an upgrade-aware proxy, see
//!   `debugging` and `proxy`) and `/runningpods/` (see [`secure`]).
//!
//! The servers see the kubelet only through the narrow [`HostInterface`], like
//! upstream's `server.HostInterface`.

mod accept;
pub mod authn;
pub mod authz;
mod certs;
mod checkpoint;
mod ciphers;
mod container_logs;
mod debug;
mod debugging;
mod filter;
pub mod fuzzing;
mod healthz;
mod journal;
mod listen;
mod logs;
mod methods;
mod metrics;
pub mod openmetrics;
mod proxy;
mod readonly;
mod respond;
#[cfg(test)]
mod route_table;
pub mod secure;
mod stats;
mod tls;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

pub use authn::{AuthnError, TokenAuthenticator, TokenError, TokenFuture, UserInfo};
pub use authz::{AlwaysAllow, Attributes, AuthorizeFuture, Authorizer, AuthorizerError, Decision};
pub use certs::CertKeyPaths;
pub use ciphers::TlsFlagError;
pub use container_logs::{LogSink, LogStreamer, PodLogOptions};
pub use debug::{DebugHandlers, VerbositySetter};
pub use debugging::{StreamOptions, StreamingError, StreamingErrorKind};
pub use healthz::{HealthCheck, healthz_router};
pub use journal::{CommandStatus, JournalCommands, LogCommandRunner};
pub use listen::{
    HEADER_READ_TIMEOUT, MAX_CONNECTIONS, ServeLimits, ServerError, bind, serve, serve_with_limits,
};
pub use logs::NODE_LOG_DIR;
pub use readonly::read_only_router;
pub use secure::{SecureServer, SecureServerConfig, secure_router, start_secure_server};
pub use stats::TEXT_FORMAT;
pub use tls::{
    PreparedTls, ServingCertResolver, ServingCertificates, TlsError, TlsSettings, prepare_tls,
};

/// A boxed future returned by [`HostInterface`] methods.
pub type HostFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the HTTP servers need from the kubelet (upstream `server.HostInterface`).
///
/// The container methods have defaults answering as a kubelet whose runtime runs no
/// containers (what a test host without a runtime is); the kubelet implements them all
/// over its CRI runtime service.
pub trait HostInterface: Send + Sync {
    /// The pods this kubelet runs, each with its latest status.
    fn get_pods(&self) -> Vec<Pod>;
    /// `Ok` while the sync loop is alive (upstream `syncLoopHealthCheck`).
    fn sync_loop_health(&self) -> Result<(), String>;
    /// A desired (non-mirror) pod by namespace and name (upstream `GetPodByName`).
    fn get_pod_by_name(&self, namespace: &str, name: &str) -> Option<Pod> {
        self.get_pods().into_iter().find(|p| {
            p.metadata.namespace.as_deref() == Some(namespace)
                && p.metadata.name.as_deref() == Some(name)
        })
    }
    /// The pods the runtime runs, as API pods (upstream `GetRunningPods`).
    fn get_running_pods(&self) -> HostFuture<'_, Result<Vec<Pod>, String>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Runs `cmd` in a container and returns stdout then stderr (upstream
    /// `RunInContainer`; a non-zero exit is an error).
    fn run_in_container<'a>(
        &'a self,
        _pod_full_name: &'a str,
        _pod_uid: &'a str,
        container: &'a str,
        _cmd: &'a [String],
    ) -> HostFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move { Err(format!("container not found ({container:?})")) })
    }
    /// The runtime's streaming URL for an exec (upstream `GetExec`).
    fn get_exec<'a>(
        &'a self,
        _pod_full_name: &'a str,
        _pod_uid: &'a str,
        container: &'a str,
        _cmd: &'a [String],
        _opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async move {
            Err(StreamingError::other(format!(
                "container not found ({container:?})"
            )))
        })
    }
    /// The runtime's streaming URL for an attach (upstream `GetAttach`).
    fn get_attach<'a>(
        &'a self,
        pod_full_name: &'a str,
        _pod_uid: &'a str,
        container: &'a str,
        _opts: StreamOptions,
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async move {
            Err(StreamingError::other(format!(
                "container {container} not found in pod {pod_full_name}"
            )))
        })
    }
    /// The runtime's streaming URL for a port forward (upstream `GetPortForward`).
    fn get_port_forward<'a>(
        &'a self,
        pod_name: &'a str,
        pod_namespace: &'a str,
        _pod_uid: &'a str,
        _ports: &'a [i32],
    ) -> HostFuture<'a, Result<String, StreamingError>> {
        Box::pin(async move {
            Err(StreamingError::other(format!(
                "pod not found (\"{pod_name}_{pod_namespace}\")"
            )))
        })
    }
    /// Upstream `GetKubeletContainerLogs`, in two steps: the future checks the pod and the
    /// container's state (an error here is the 400 answer); the [`LogStreamer`] it returns
    /// then writes the log to `sink` (an error there ends the body, after what was written).
    fn get_kubelet_container_logs<'a>(
        &'a self,
        _pod_full_name: &'a str,
        container: &'a str,
        _opts: &'a PodLogOptions,
        _sink: LogSink,
    ) -> HostFuture<'a, Result<LogStreamer, String>> {
        Box::pin(async move { Err(format!("container {container:?} is not available")) })
    }
    /// Upstream `CheckpointContainer`: asks the runtime to checkpoint the running container
    /// into an archive the kubelet names, and returns its path. `timeout` is the request's
    /// `timeout` parameter (seconds; `None`: the CRI client's default). An error is the
    /// runtime's (or `container <c> not found` when the runtime does not run it).
    fn checkpoint_container<'a>(
        &'a self,
        _pod_uid: &'a str,
        _pod_full_name: &'a str,
        container: &'a str,
        _timeout: Option<i64>,
    ) -> HostFuture<'a, Result<String, String>> {
        Box::pin(async move { Err(format!("container {container} not found")) })
    }
    /// The summary provider behind `/stats/summary`, `/metrics/resource` and
    /// `/metrics/cadvisor` (upstream `stats.Provider`/`SummaryProvider`); `None` answers 500
    /// and scrape errors.
    fn stats_provider(&self) -> Option<Arc<kubelet_stats::SummaryProvider>> {
        None
    }
}

/// Shared handle to the host.
pub type Host = Arc<dyn HostInterface>;
