//! The kubelet's API server clients: `cmd/kubelet/app/server.go` (`run`: `KubeClient`,
//! `EventClient`, `HeartbeatClient`; `buildKubeletClientConfig` without certificate
//! rotation or bootstrap), on kube-rs with rustls (ring).
//!
//! * The kubeconfig is loaded from the one explicit path, as upstream's
//!   `ClientConfigLoadingRules{ExplicitPath}` (no `$KUBECONFIG` merging): client
//!   certificates (files or data), bearer tokens (`token`, `tokenFile`, re-read by kube)
//!   and exec credential plugins (kube-rs runs them; certificates they return are read
//!   once, when the client is built).
//! * Each client's QPS, burst and timeout come from the configuration as upstream derives
//!   them ([`settings`]); the limiter is client-go's token bucket as a tower layer
//!   ([`flowcontrol`]).
//! * `contentType`: kube-rs speaks JSON only. `application/json` is honoured, the default
//!   protobuf is sent as JSON with a warning at build time, anything else is refused.
//! * The three clients share one transport ([`transport`]): HTTP/2 with the API server (one
//!   connection for every watch and request, as client-go), its PINGs finding dead
//!   connections, HTTP/1.1 only when the server offers nothing else.
//! * The heartbeat client's timeout bounds each request until the response head (a tower
//!   timeout); `http.Client.Timeout` also bounds the body's reads, which are a few hundred
//!   bytes here. Upstream also sends it as `?timeout=` on every request; kube-rs does not
//!   add that query parameter.
//! * kube-rs retries 429/503/504 replies itself (its default retry policy); those
//!   retries are not counted by the limiter, client-go's are.
//!
//! * With `rotateCertificates` ([`KubeletClients::build_with_certificates`]), the clients
//!   present the certificate manager's current certificate and close their connections
//!   when it changes ([`rotation`], upstream `UpdateTransport`).
//!
//! Not here: TLS bootstrap and the certificate manager (`kubelet-certificate`), closing
//! connections on heartbeat failure (`onHeartbeatFailure`), tracing. The app builds the
//! clients in startup step 6 (`kubelet_app::startup::build_clients`).

pub mod flowcontrol;
pub mod metrics;
pub mod rotation;
pub mod settings;
pub mod transport;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use kubelet_config::KubeletConfiguration;

pub use flowcontrol::{Clock, FakeClock, RateLimitLayer, RealClock, TokenBucketRateLimiter};
pub use metrics::RequestMetricsLayer;
pub use rotation::{CertificateSource, ConnectionTracker};
pub use settings::{ContentType, KubeletClientSettings, RestClientSettings, default_user_agent};

/// Why the clients could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read or does not describe a usable cluster and user.
    #[error("invalid kubeconfig: {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: KubeconfigError,
    },
    /// kube-rs could not build a client from it (TLS material, auth settings). `client`
    /// is upstream's name: `kubelet client`, `kubelet event client`, `kubelet heartbeat
    /// client`.
    #[error("failed to initialize {client} from {path}: {source}")]
    Client {
        client: &'static str,
        path: PathBuf,
        #[source]
        source: kube::Error,
    },
    /// `contentType` is neither JSON nor protobuf.
    #[error(
        "contentType (--content-type) {0:?} is not supported: kubelet-rs talks \
         application/json (application/vnd.kubernetes.protobuf is accepted and sent as JSON)"
    )]
    ContentType(String),
    /// The user agent is not a valid header value.
    #[error("invalid user agent {0:?}")]
    UserAgent(String),
}

/// The three clients of a kubelet in API server mode (`kubelet.Dependencies`).
#[derive(Clone)]
pub struct KubeletClients {
    /// `KubeClient`: everything but events and heartbeats, `kubeAPIQPS`/`kubeAPIBurst`.
    pub main: Client,
    /// `EventClient`: event creation, `eventRecordQPS`/`eventBurst`.
    pub event: Client,
    /// `HeartbeatClient`: node status and lease, unthrottled, with a timeout.
    pub heartbeat: Client,
    /// What they were built with.
    pub settings: KubeletClientSettings,
    /// The main client's limiter (for tests and metrics).
    pub main_limiter: Option<TokenBucketRateLimiter>,
    /// The event client's limiter.
    pub event_limiter: Option<TokenBucketRateLimiter>,
    /// The rotating transport's connections (clients built with a certificate source).
    pub connections: Option<ConnectionTracker>,
}

impl std::fmt::Debug for KubeletClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletClients")
            .field("settings", &self.settings)
            .field("main_limiter", &self.main_limiter)
            .field("event_limiter", &self.event_limiter)
            .finish_non_exhaustive()
    }
}

impl KubeletClients {
    /// Build the clients from `--kubeconfig` and a defaulted, validated configuration,
    /// with the real clock. Must run inside a tokio runtime.
    pub async fn build(kubeconfig: &Path, cfg: &KubeletConfiguration) -> Result<Self, ClientError> {
        Self::build_with_clock(kubeconfig, cfg, Arc::new(RealClock)).await
    }

    /// [`KubeletClients::build`] with the limiters on `clock`.
    pub async fn build_with_clock(
        kubeconfig: &Path,
        cfg: &KubeletConfiguration,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ClientError> {
        Self::build_inner(kubeconfig, cfg, clock, None).await
    }

    /// The clients with `rotateCertificates` (`buildKubeletClientConfig`'s rotating
    /// transport): the cluster of `kubeconfig`, none of its credentials, the client
    /// certificate read from `certs` at each handshake, and every connection closed when
    /// `certs` changes. Must run inside a tokio runtime (it spawns the watcher).
    pub async fn build_with_certificates(
        kubeconfig: &Path,
        cfg: &KubeletConfiguration,
        certs: CertificateSource,
    ) -> Result<Self, ClientError> {
        Self::build_inner(kubeconfig, cfg, Arc::new(RealClock), Some(certs)).await
    }

    async fn build_inner(
        kubeconfig: &Path,
        cfg: &KubeletConfiguration,
        clock: Arc<dyn Clock>,
        certs: Option<CertificateSource>,
    ) -> Result<Self, ClientError> {
        let settings = KubeletClientSettings::from_config(cfg)?;
        if let Some(w) = settings.content_type.warning() {
            tracing::warn!("{w}");
        }
        let config = load_kubeconfig(kubeconfig).await?;
        let user_agent = default_user_agent(
            &std::env::args().next().unwrap_or_default(),
            &kubelet_config::version::git_version(),
            "",
        );
        let config = with_user_agent(config, &user_agent)?;
        let tracker = ConnectionTracker::default();
        if let Some(certs) = &certs {
            tracker.close_on_change(certs.clone());
        }
        let transport =
            transport::shared_transport(&config, certs.as_ref(), &tracker).map_err(|source| {
                ClientError::Client {
                    client: "kubelet client",
                    path: kubeconfig.to_path_buf(),
                    source,
                }
            })?;
        let client = |name: &'static str, s: &RestClientSettings| {
            build_client(
                kubeconfig,
                name,
                config.clone(),
                s,
                clock.clone(),
                transport.clone(),
                certs.is_some(),
            )
        };
        let (main, main_limiter) = client("kubelet client", &settings.main)?;
        let (event, event_limiter) = client("kubelet event client", &settings.event)?;
        let (heartbeat, _) = client("kubelet heartbeat client", &settings.heartbeat)?;
        Ok(Self {
            main,
            event,
            heartbeat,
            settings,
            main_limiter,
            event_limiter,
            connections: certs.is_some().then_some(tracker),
        })
    }

    /// Close every connection of the rotating transport (`closeAllConns`); a no-op for
    /// clients built without a certificate source.
    pub fn close_all_connections(&self) {
        if let Some(t) = &self.connections {
            t.close_all();
        }
    }
}

/// Load the kubeconfig at `path` only (`ClientConfigLoadingRules{ExplicitPath: path}`),
/// its current context; relative file references resolve against its directory.
pub async fn load_kubeconfig(path: &Path) -> Result<Config, ClientError> {
    let err = |source| ClientError::Kubeconfig {
        path: path.to_path_buf(),
        source,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(err)?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(err)
}

fn with_user_agent(mut config: Config, user_agent: &str) -> Result<Config, ClientError> {
    let value = http::HeaderValue::from_str(user_agent)
        .map_err(|_| ClientError::UserAgent(user_agent.to_string()))?;
    config.headers.push((http::header::USER_AGENT, value));
    Ok(config)
}

/// One client on the shared `transport`: kube's default stack (auth unless `anonymous`,
/// retries) for `config`, with the timeout of `settings` and, outermost, the token bucket
/// `RESTClientFor` would build.
fn build_client(
    path: &Path,
    name: &'static str,
    config: Config,
    settings: &RestClientSettings,
    clock: Arc<dyn Clock>,
    transport: transport::SharedTransport,
    anonymous: bool,
) -> Result<(Client, Option<TokenBucketRateLimiter>), ClientError> {
    let err = |source| ClientError::Client {
        client: name,
        path: path.to_path_buf(),
        source,
    };
    // `rest_client_requests_total`'s `host`: the server URL's `host:port`.
    let host = config
        .cluster_url
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let service = transport::client_service(&config, transport, anonymous).map_err(err)?;
    let builder = ClientBuilder::new(service, config.default_namespace.clone());
    let builder = builder.with_layer(&RequestMetricsLayer::new(host));
    let builder = builder.with_layer(&tower::util::option_layer(
        settings.timeout.map(tower::timeout::TimeoutLayer::new),
    ));
    let limiter = settings
        .limiter()
        .map(|(qps, burst)| TokenBucketRateLimiter::new(qps, burst, clock));
    let builder = builder.with_layer(&tower::util::option_layer(
        limiter.clone().map(RateLimitLayer::new),
    ));
    Ok((builder.build(), limiter))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn kubeconfig_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = kubelet_config::new_kubelet_configuration();
        let missing = dir.path().join("nope.kubeconfig");
        let err = KubeletClients::build(&missing, &cfg).await.unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("invalid kubeconfig: "), "{msg}");
        assert!(msg.contains(&missing.display().to_string()), "{msg}");

        // No server in the current context's cluster.
        let no_server = dir.path().join("no-server.kubeconfig");
        std::fs::write(
            &no_server,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {}\n\
             users:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context:\n    \
             cluster: c\n    user: u\ncurrent-context: c\n",
        )
        .unwrap();
        let err = KubeletClients::build(&no_server, &cfg).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Kubeconfig { path, source: KubeconfigError::MissingClusterUrl } if *path == no_server),
            "{err:?}"
        );
    }
}
