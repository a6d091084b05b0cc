//! The clients' transport: client-go's `http.Transport` as `rest.Config` builds it for the
//! kubelet (`transport.New` → `utilnet.SetTransportDefaults` → `http2.ConfigureTransports`).
//!
//! * **HTTP/2 when the server offers it** (ALPN `h2`, then `http/1.1`), as client-go: the API
//!   server multiplexes every watch and request of the kubelet on one TLS connection.
//!   kube-rs's own stack speaks HTTP/1.1 only, where each open watch holds a connection of
//!   its own (28 connections for a node with 30 pods, against upstream's one).
//! * **One transport for the three clients** (main, event, heartbeat), as upstream's copies
//!   of one `rest.Config` share the cached transport (`tlsCache`); each client keeps its own
//!   layers (auth, limiter, timeout) above it.
//! * **Dead connections found by HTTP/2 pings**: client-go's `ReadIdleTimeout` (30 s
//!   without a frame → a PING) and `PingTimeout` (15 s without its answer → the connection
//!   is closed), even while no request is open. The heartbeat client's timeout is a
//!   per-request tower timeout ([`crate::build_client`]); there is no read timeout on the
//!   shared connection, which would cut the other clients' watches.
//! * The dial is bounded by the kubeconfig's connect timeout; every connection is tracked
//!   ([`ConnectionTracker`]) so that a certificate rotation closes them all.

use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::Config;
use kube::client::{Body, ConfigExt, DynBody};
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

use crate::rotation::{CertificateSource, ConnectionTracker, SourceResolver, TrackedConnector};

/// client-go's `ReadIdleTimeout` (`utilnet.SetTransportDefaults`): a PING after this long
/// without a frame from the server.
pub const HTTP2_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// client-go's `PingTimeout`: the connection is closed when the PING is not answered.
pub const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(15);

type Connector =
    hyper_timeout::TimeoutConnector<hyper_rustls::HttpsConnector<TrackedConnector<HttpConnector>>>;

/// The shared connection pool (cheap to clone: clones share it).
pub(crate) type SharedTransport = hyper_util::client::legacy::Client<Connector, Body>;

/// kube's default service type (`kube::client::builder::GenericService`).
pub(crate) type GenericService = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// The transport for `config`'s cluster. With `certs` (`rotateCertificates`), the TLS client
/// presents the source's current certificate at each handshake instead of the kubeconfig's
/// credentials, and does not resume sessions (a resumed session keeps the identity of its
/// first handshake; client-go configures no session cache either).
pub(crate) fn shared_transport(
    config: &Config,
    certs: Option<&CertificateSource>,
    tracker: &ConnectionTracker,
) -> Result<SharedTransport, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let tracked = TrackedConnector::new(http, tracker.clone());

    let mut tls = match certs {
        Some(certs) => {
            let mut anonymous = config.clone();
            anonymous.auth_info = kube::config::AuthInfo::default();
            let mut tls = anonymous.rustls_client_config()?;
            tls.client_auth_cert_resolver = std::sync::Arc::new(SourceResolver::new(certs.clone()));
            tls.resumption = rustls::client::Resumption::disabled();
            tls
        }
        None => config.rustls_client_config()?,
    };
    // Set by the builder below from the enabled versions.
    tls.alpn_protocols.clear();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let builder = match config.tls_server_name.as_deref() {
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name.to_string()).map_err(|e| {
                kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(e))
            })?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    let https = builder.enable_all_versions().wrap_connector(tracked);
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    Ok(
        hyper_util::client::legacy::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .http2_keep_alive_interval(HTTP2_READ_IDLE_TIMEOUT)
            .http2_keep_alive_timeout(HTTP2_PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(connector),
    )
}

/// kube's default stack above `transport` (base URI, retries, the kubeconfig's credentials
/// unless `anonymous`, extra headers), as `ClientBuilder::try_from` assembles it.
pub(crate) fn client_service(
    config: &Config,
    transport: SharedTransport,
    anonymous: bool,
) -> Result<GenericService, kube::Error> {
    let auth = if anonymous {
        None
    } else {
        config.auth_layer()?
    };
    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(auth)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(transport)
        .map_response(|res: Response<Incoming>| {
            res.map(|body| {
                Box::new(http_body_util::BodyExt::map_err(body, BoxError::from)) as Box<DynBody>
            })
        });
    Ok(BoxService::new(service))
}
