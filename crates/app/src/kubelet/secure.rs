//! The secure server on `address:port` (10250) when `enableServer` is true
//! (`startKubelet` → `ListenAndServe`, TLS from `InitializeTLS`, auth from `BuildAuth`).
//! The TLS inputs were checked before the start (`crate::startable`); the authenticator and
//! authorizer are `BuildAuth`'s (`crate::auth`): in API server mode the TokenReview and
//! SubjectAccessReview webhooks go through the main client.

use std::path::PathBuf;
use std::sync::Arc;

use kubelet_config::KubeletServer;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::KubeletDeps;
use crate::auth::{Reviewers, build_auth, build_auth_components};
use crate::startup::RunError;

/// How often the serving certificate files are re-read besides their directories' inotify
/// events (`ReloadKubeletServerCertificateFile`; upstream's dynamic cert-key content
/// resyncs every minute).
const SERVING_FILES_RESYNC: std::time::Duration = std::time::Duration::from_secs(60);

/// The secure server's settings from flags, configuration and the node IPs
/// `check_startable` parsed (the TLS not yet checked: `prepared_tls` is `None`; no token
/// authenticator and `AlwaysAllow` until [`start_secure_server`] builds `BuildAuth`'s).
pub fn secure_server_config(
    server: &KubeletServer,
    node_name: &str,
    node_ips: &[std::net::IpAddr],
) -> Result<kubelet_server::SecureServerConfig, RunError> {
    let c = &server.config;
    let port = u16::try_from(c.port)
        .map_err(|_| RunError::Kubelet(format!("invalid port (--port) {}", c.port)))?;
    let ca = &c.authentication.x509.client_ca_file;
    Ok(kubelet_server::SecureServerConfig {
        address: c.address.clone(),
        port,
        node_name: node_name.to_string(),
        tls: crate::startable::tls_settings(server, node_name, node_ips),
        prepared_tls: None,
        client_ca_file: (!ca.is_empty()).then(|| PathBuf::from(ca)),
        anonymous: c.authentication.anonymous.enabled.unwrap_or(false),
        token_authenticator: None,
        authorizer: Arc::new(kubelet_server::AlwaysAllow),
        fine_grained_authz: server
            .feature_gates
            .enabled(kubelet_features::gates::KUBELET_FINE_GRAINED_AUTHZ),
        enable_debugging_handlers: c.enable_debugging_handlers.unwrap_or(true),
        split_log_streams: server
            .feature_gates
            .enabled(kubelet_features::gates::POD_LOGS_QUERY_SPLIT_STREAMS),
        debug: kubelet_server::DebugHandlers {
            enable_system_log_handler: c.enable_system_log_handler.unwrap_or(true),
            node_log_dir: kubelet_server::NODE_LOG_DIR.into(),
            enable_profiling_handler: c.enable_profiling_handler.unwrap_or(true),
            enable_debug_flags_handler: c.enable_debug_flags_handler.unwrap_or(true),
            // `kl.logServer` in query mode: `NodeLogQuery` and `enableSystemLogQuery` (the
            // validation refused the setting without the gate).
            system_log_query: (c.enable_system_log_query.unwrap_or(false)
                && server
                    .feature_gates
                    .enabled(kubelet_features::gates::NODE_LOG_QUERY))
            .then(|| {
                Arc::new(kubelet_server::JournalCommands)
                    as Arc<dyn kubelet_server::LogCommandRunner>
            }),
            container_checkpoint: server
                .feature_gates
                .enabled(kubelet_features::gates::CONTAINER_CHECKPOINT),
            set_verbosity: Some(std::sync::Arc::new(|v| {
                kubelet_klog::set_verbosity(v);
                Ok(())
            })),
        },
    })
}

/// Whether the secure server runs (`enableServer`). With `serverTLSBootstrap` and the
/// `RotateKubeletServerCertificate` gate off, upstream would serve no certificate at all
/// (no self-signed pair is made and no manager requests one): refused.
pub fn secure_server_wanted(server: &KubeletServer) -> Result<bool, RunError> {
    if !server.config.enable_server.unwrap_or(true) {
        return Ok(false);
    }
    if server.config.server_tls_bootstrap
        && !server
            .feature_gates
            .enabled(kubelet_features::gates::ROTATE_KUBELET_SERVER_CERTIFICATE)
    {
        return Err(RunError::Kubelet(
            "serverTLSBootstrap (--rotate-server-certificates) needs the RotateKubeletServerCertificate feature gate".into(),
        ));
    }
    Ok(true)
}

/// Starts the secure server (binding before returning, so errors stop the start-up) with
/// the TLS `check_startable` prepared (`None`: no secure server).
pub async fn start_secure_server(
    deps: &KubeletDeps<'_>,
    host: &kubelet_server::Host,
    configz: serde_json::Value,
    cancel: &CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    let Some(prepared_tls) = deps.serving_tls.clone() else {
        return Ok(());
    };
    let mut cfg = secure_server_config(deps.server, &deps.node_name, &deps.node_ips)?;
    cfg.prepared_tls = Some(prepared_tls);
    // The settings `check_startable` accepted (a pure function of the configuration).
    let settings = build_auth(&deps.server.config, deps.clients.is_some())?;
    let reviewers = deps
        .clients
        .as_ref()
        .map(|c| Reviewers::kube(c.main.clone()));
    let auth = build_auth_components(&settings, reviewers.as_ref())?;
    cfg.token_authenticator = auth.token;
    cfg.authorizer = auth.authorizer;
    if let Some(certs) = super::api::certificates::start_server_certificate_manager(deps, tasks)? {
        cfg.prepared_tls = cfg.prepared_tls.map(|p| p.with_serving_certificates(certs));
    } else if deps
        .server
        .feature_gates
        .enabled(kubelet_features::gates::RELOAD_KUBELET_SERVER_CERTIFICATE_FILE)
    {
        // `NewKubeletServerCertificateDynamicFileManager`: tlsCertFile/tlsPrivateKeyFile
        // are served as they change (the default --cert-dir pair is not watched).
        cfg.prepared_tls = cfg
            .prepared_tls
            .map(|p| p.reload_serving_files(SERVING_FILES_RESYNC, cancel.clone()))
            .transpose()
            .map_err(kubelet_server::ServerError::from)?;
    }
    let srv =
        kubelet_server::start_secure_server(cfg, host.clone(), configz, cancel.clone()).await?;
    tracing::info!(address = %srv.local_addr, "Started the kubelet's secure server");
    tasks.spawn(async move {
        let _ = srv.task.await;
    });
    Ok(())
}
