//! The secure server on `address:port` (10250): `ListenAndServeKubeletServer` in
//! `pkg/kubelet/server/server.go`, with the TLS of `InitializeTLS` and the authn/authz of
//! `BuildAuth` (`cmd/kubelet/app/auth.go`).
//!
//! Served now (every path behind the auth filter, unknown ones included):
//! * `/healthz` (ping, log, syncloop) and `/pods` — GET only, other methods 405;
//! * with `enableDebuggingHandlers`: `/configz` (GET only), and `InstallAuthRequiredHandlers`'
//!   `/run`, `/exec`, `/attach`, `/portForward`, `/containerLogs`, `/runningpods/` (see
//!   `crate::debugging`), and `/logs/`, `/debug/pprof/`, `/debug/flags/v` as their own
//!   settings say (`crate::debug`, `crate::logs`), `/checkpoint/` with the
//!   `ContainerCheckpoint` gate (`crate::checkpoint`), and kubelet-rs's
//!   `/debug/pods/{namespace}/{name}/timeline` (`crate::timeline`);
//! * without: `/run/`, `/exec/`, `/attach/`, `/portForward/`, `/containerLogs/`,
//!   `/runningpods/`, `/debug/pprof/`, `/logs/` (and kubelet-rs's `/debug/pods/`) answer
//!   405 `Debug endpoints are disabled.`
//!   (`InstallDebuggingDisabledHandlers`), and `/configz` is not installed;
//! * everything else: 404.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{any, get};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::accept::serve_tls;
use crate::authn::{Authenticator, TokenAuthenticator};
use crate::authz::Authorizer;
use crate::debugging::debugging_handlers;
use crate::filter::{AuthFilter, auth_filter};
use crate::methods::get_only;
use crate::readonly::default_handlers;
use crate::respond::text;
use crate::tls::{PreparedTls, TlsSettings, build_server_config};
use crate::{Host, ServerError, bind};

/// Everything the secure server needs from the configuration.
#[derive(Clone)]
pub struct SecureServerConfig {
    /// `address` (empty for all IPv4 addresses).
    pub address: String,
    /// `port` (10250; 0 picks a free port, for tests).
    pub port: u16,
    /// This node's name (the `nodes/<name>` authorized against).
    pub node_name: String,
    /// Serving certificate, minimum version and cipher suites.
    pub tls: TlsSettings,
    /// [`TlsSettings`] and `client_ca_file` already checked by [`crate::prepare_tls`]
    /// (the kubelet checks them before it starts anything); `None`: checked here.
    pub prepared_tls: Option<PreparedTls>,
    /// `authentication.x509.clientCAFile`; `None` when unset (no client certificates).
    pub client_ca_file: Option<PathBuf>,
    /// `authentication.anonymous.enabled`.
    pub anonymous: bool,
    /// The bearer-token authenticator (`authentication.webhook.enabled`: the cached
    /// TokenReview webhook); `None` ignores tokens.
    pub token_authenticator: Option<Arc<dyn TokenAuthenticator>>,
    /// The authorizer (`authorization.mode`; [`crate::AlwaysAllow`] for a standalone kubelet).
    pub authorizer: Arc<dyn Authorizer>,
    /// The `KubeletFineGrainedAuthz` feature gate.
    pub fine_grained_authz: bool,
    /// `enableDebuggingHandlers`.
    pub enable_debugging_handlers: bool,
    /// The `PodLogsQuerySplitStreams` feature gate (`/containerLogs?stream=`).
    pub split_log_streams: bool,
    /// `/logs/`, `/debug/pprof/`, `/debug/flags/v` (with `enableDebuggingHandlers` only).
    pub debug: crate::DebugHandlers,
}

impl SecureServerConfig {
    /// Upstream's defaults for `node_name` with `authorizer`: port 0 on all addresses, the
    /// default TLS settings (a self-signed pair), no client CA, anonymous off, no token
    /// authenticator, `KubeletFineGrainedAuthz` on, every debugging handler on.
    pub fn new(node_name: &str, authorizer: Arc<dyn Authorizer>) -> Self {
        SecureServerConfig {
            address: String::new(),
            port: 0,
            node_name: node_name.to_string(),
            tls: TlsSettings::default(),
            prepared_tls: None,
            client_ca_file: None,
            anonymous: false,
            token_authenticator: None,
            authorizer,
            fine_grained_authz: true,
            enable_debugging_handlers: true,
            split_log_streams: false,
            debug: crate::DebugHandlers::default(),
        }
    }
}

/// A started secure server.
#[derive(Debug)]
pub struct SecureServer {
    /// The address actually bound.
    pub local_addr: SocketAddr,
    /// The accept loop; ends after the cancellation token fires.
    pub task: JoinHandle<()>,
}

/// `GET /configz`: the registered configuration objects (`{"kubeletconfig": {...}}`).
async fn configz(State(payload): State<Arc<serde_json::Value>>) -> Response {
    crate::respond::json(payload.as_ref())
}

/// `InstallDebuggingDisabledHandlers`: the subtrees answer 405 to every method.
fn debugging_disabled_handlers() -> Router {
    let disabled = any(|| async {
        text(
            StatusCode::METHOD_NOT_ALLOWED,
            "Debug endpoints are disabled.\n",
        )
    });
    let subtrees = [
        "/run",
        "/exec",
        "/attach",
        "/portForward",
        "/containerLogs",
        "/runningpods",
        "/debug/pprof",
        "/logs",
        "/debug/pods",
    ];
    subtrees.iter().fold(Router::new(), |r, p| {
        r.route(&format!("{p}/"), disabled.clone())
            .route(&format!("{p}/{{*rest}}"), disabled.clone())
    })
}

/// The x509 authenticator's verifier: the prepared TLS's, else one from `clientCAFile`
/// (a file that does not load makes the TLS set-up fail anyway).
fn x509_verifier(
    cfg: &SecureServerConfig,
) -> Option<Arc<dyn rustls::server::danger::ClientCertVerifier>> {
    if let Some(p) = &cfg.prepared_tls {
        return p.x509_verifier();
    }
    let ca = cfg.client_ca_file.as_deref()?;
    crate::tls::client_verifier(ca, Arc::new(rustls::crypto::ring::default_provider())).ok()
}

/// The secure port's router, auth filter included. `configz` is the whole `/configz`
/// body, i.e. `{"kubeletconfig": {...}}`.
pub fn secure_router(cfg: &SecureServerConfig, host: Host, configz: serde_json::Value) -> Router {
    let mut router = default_handlers(host.clone());
    if cfg.enable_debugging_handlers {
        router = router
            .merge(
                Router::new()
                    .route("/configz", get(self::configz))
                    .route_layer(axum::middleware::from_fn(get_only))
                    .with_state(Arc::new(configz)),
            )
            .merge(crate::timeline::timeline_handlers(host.clone()))
            .merge(debugging_handlers(host.clone(), cfg.split_log_streams))
            .merge(crate::debug::debug_handlers(&cfg.debug));
        if cfg.debug.container_checkpoint {
            router = router.merge(crate::checkpoint::checkpoint_handler(host));
        }
    } else {
        router = router.merge(debugging_disabled_handlers());
    }
    let filter = AuthFilter {
        authenticator: Authenticator {
            anonymous: cfg.anonymous,
            token: cfg.token_authenticator.clone(),
            x509: x509_verifier(cfg),
        },
        authorizer: cfg.authorizer.clone(),
        node_name: cfg.node_name.clone(),
        fine_grained: cfg.fine_grained_authz,
    };
    // `layer` (not `route_layer`) so unknown paths and wrong methods are authenticated
    // and authorized first, as go-restful runs container filters before its 404/405.
    router
        .layer(axum::middleware::from_fn_with_state(filter, auth_filter))
        .layer(axum::middleware::from_fn_with_state(
            crate::metrics::HttpMetrics::secure(
                cfg.enable_debugging_handlers,
                cfg.debug.container_checkpoint,
            ),
            crate::metrics::http_metrics,
        ))
        .layer(axum::middleware::from_fn_with_state(
            crate::filter::ServeMux {
                checkpoint: cfg.enable_debugging_handlers && cfg.debug.container_checkpoint,
            },
            crate::filter::serve_mux,
        ))
}

/// Starts the secure server: sets up TLS (generating the self-signed certificate when
/// needed) and binds before returning, so configuration and bind errors surface at
/// start-up; then serves until `cancel` fires.
pub async fn start_secure_server(
    cfg: SecureServerConfig,
    host: Host,
    configz: serde_json::Value,
    cancel: CancellationToken,
) -> Result<SecureServer, ServerError> {
    let tls = match &cfg.prepared_tls {
        Some(p) => p.server_config(&cfg.tls.hostname, &cfg.tls.ips)?,
        None => build_server_config(&cfg.tls, cfg.client_ca_file.as_deref())?,
    };
    let listener = bind(&cfg.address, cfg.port).await?;
    let local_addr = listener.local_addr().map_err(|source| ServerError::Bind {
        address: format!("{}:{}", cfg.address, cfg.port),
        source,
    })?;
    tracing::info!(address = %local_addr, "Starting to listen");
    let router = secure_router(&cfg, host, configz);
    let task = tokio::spawn(serve_tls(listener, TlsAcceptor::from(tls), router, cancel));
    Ok(SecureServer { local_addr, task })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::HostInterface;
    use crate::authn::{PeerIdentity, UserInfo};
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    struct NoPods;
    impl HostInterface for NoPods {
        fn get_pods(&self) -> Vec<k8s_openapi::api::core::v1::Pod> {
            Vec::new()
        }
        fn sync_loop_health(&self) -> Result<(), String> {
            Ok(())
        }
    }

    fn cfg(debugging: bool) -> SecureServerConfig {
        SecureServerConfig {
            enable_debugging_handlers: debugging,
            ..SecureServerConfig::new("node1", Arc::new(crate::AlwaysAllow))
        }
    }

    async fn status(router: &Router, method: &str, path: &str, peer: Option<UserInfo>) -> u16 {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        if let Some(user) = peer {
            req.extensions_mut().insert(PeerIdentity::Cert(user));
        }
        router.clone().oneshot(req).await.unwrap().status().as_u16()
    }

    /// Like upstream's `TestAuthzCoverage`: every installed path, with every method, goes
    /// through the auth filter (401 without credentials), in both debugging modes.
    #[tokio::test]
    async fn every_route_is_behind_the_auth_filter() {
        let paths = [
            "/healthz",
            "/healthz/ping",
            "/healthz/syncloop",
            "/pods",
            "/pods/",
            "/configz",
            "/run/ns/p/c",
            "/run/ns/p/uid/c",
            "/exec/ns/p/c",
            "/exec/ns/p/uid/c",
            "/attach/ns/p/c",
            "/attach/ns/p/uid/c",
            "/portForward/ns/p",
            "/portForward/ns/p/uid",
            "/containerLogs/ns/p/c",
            "/runningpods/",
            "/debug/pprof/heap",
            "/logs/",
            "/stats/summary",
            "/stats/summary?only_cpu_and_memory=true",
            "/metrics/resource",
            "/metrics/cadvisor",
            "/checkpoint/ns/p/c",
        ];
        for debugging in [true, false] {
            let router = secure_router(&cfg(debugging), Arc::new(NoPods), serde_json::json!({}));
            // Installed with the debugging handlers only (see the next test).
            let installed = paths
                .iter()
                .filter(|p| debugging || !p.starts_with("/checkpoint/"));
            for path in installed {
                for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
                    assert_eq!(
                        status(&router, method, path, None).await,
                        401,
                        "{method} {path} debugging={debugging}"
                    );
                }
            }
            let user = UserInfo::new("u", vec![]);
            assert_eq!(status(&router, "GET", "/pods", Some(user)).await, 200);
            // Paths upstream's mux does not hand to the container: 404 before any
            // authentication; unclean paths: 307 to the cleaned one.
            assert_eq!(status(&router, "GET", "/nothing", None).await, 404);
            assert_eq!(status(&router, "GET", "/logs/../etc", None).await, 307);
        }
    }

    /// `/checkpoint/` is routed with `enableDebuggingHandlers` and the `ContainerCheckpoint`
    /// gate only. Otherwise upstream adds no web service there, so its mux answers 404
    /// before the auth filter: no credentials needed for that answer either.
    #[tokio::test]
    async fn checkpoint_follows_the_gate_and_the_debugging_handlers() {
        use http_body_util::BodyExt;
        let mux_404 = "404 page not found\n";
        for (debugging, gate, authenticated, want_status, want) in [
            (true, true, true, 404, "pod does not exist"),
            (true, true, false, 401, "Unauthorized"),
            (true, false, true, 404, mux_404),
            (true, false, false, 404, mux_404),
            (false, true, true, 404, mux_404),
            (false, true, false, 404, mux_404),
        ] {
            let mut c = cfg(debugging);
            c.debug.container_checkpoint = gate;
            let r = secure_router(&c, Arc::new(NoPods), serde_json::json!({}));
            let mut req = Request::builder()
                .method("POST")
                .uri("/checkpoint/ns/p/c")
                .body(Body::empty())
                .unwrap();
            if authenticated {
                req.extensions_mut()
                    .insert(PeerIdentity::Cert(UserInfo::new("u", vec![])));
            }
            let resp = r.oneshot(req).await.unwrap();
            let case = format!("{debugging} {gate} {authenticated}");
            assert_eq!(resp.status(), want_status, "{case}");
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(
                String::from_utf8_lossy(&body).trim_end(),
                want.trim_end(),
                "{case}"
            );
        }
    }

    /// `enableDebuggingHandlers: false` answers 405 on the debugging subtrees; `true` routes
    /// them (a pod unknown to the host is 404, the runtime's pods are listed).
    #[tokio::test]
    async fn debugging_handlers_follow_the_setting() {
        let user = || Some(UserInfo::new("u", vec![]));
        let on = secure_router(&cfg(true), Arc::new(NoPods), serde_json::json!({}));
        let off = secure_router(&cfg(false), Arc::new(NoPods), serde_json::json!({}));
        for (method, path, when_on) in [
            ("POST", "/run/ns/p/c", 404),
            ("GET", "/exec/ns/p/c?input=1", 404),
            ("POST", "/attach/ns/p/uid/c?output=1", 404),
            ("GET", "/portForward/ns/p", 404),
            ("GET", "/containerLogs/ns/p/c", 404),
            ("GET", "/runningpods/", 200),
            ("GET", "/configz", 200),
            ("GET", "/debug/pods/ns/p/timeline", 404),
        ] {
            assert_eq!(status(&on, method, path, user()).await, when_on, "{path}");
            let off_status = if path == "/configz" { 404 } else { 405 };
            assert_eq!(
                status(&off, method, path, user()).await,
                off_status,
                "{path}"
            );
        }
    }
}
