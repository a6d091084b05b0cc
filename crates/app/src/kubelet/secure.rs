//! The secure server on `address:port` (10250) when `enableServer` is true
//! (`startKubelet` → `ListenAndServe`, TLS from `InitializeTLS`, auth from `BuildAuth`).
//! The TLS inputs were checked before the start (`crate::startable`).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Kubelet, KubeletDeps};
use crate::startup::RunError;

/// The secure server's settings from flags, configuration and the checked TLS.
pub fn secure_server_config(
    deps: &KubeletDeps<'_>,
    prepared_tls: kubelet_server::PreparedTls,
) -> Result<kubelet_server::SecureServerConfig, RunError> {
    let server = deps.server;
    let c = &server.config;
    let port = u16::try_from(c.port)
        .map_err(|_| RunError::Kubelet(format!("invalid port (--port) {}", c.port)))?;
    let ca = &c.authentication.x509.client_ca_file;
    Ok(kubelet_server::SecureServerConfig {
        address: c.address.clone(),
        port,
        node_name: deps.node_name.clone(),
        tls: crate::startable::tls_settings(server, &deps.node_name, &deps.node_ips),
        prepared_tls: Some(prepared_tls),
        client_ca_file: (!ca.is_empty()).then(|| PathBuf::from(ca)),
        anonymous: c.authentication.anonymous.enabled.unwrap_or(false),
        authorizer: Arc::new(kubelet_server::AlwaysAllow),
        fine_grained_authz: server
            .feature_gates
            .enabled(kubelet_features::gates::KUBELET_FINE_GRAINED_AUTHZ),
        enable_debugging_handlers: c.enable_debugging_handlers.unwrap_or(true),
    })
}

/// Starts the secure server (binding before returning, so errors stop the start-up).
pub async fn start_secure_server(
    deps: &KubeletDeps<'_>,
    kubelet: &Arc<Kubelet>,
    configz: serde_json::Value,
    cancel: &CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    let Some(prepared_tls) = deps.serving_tls.clone() else {
        return Ok(());
    };
    let cfg = secure_server_config(deps, prepared_tls)?;
    let srv =
        kubelet_server::start_secure_server(cfg, kubelet.clone(), configz, cancel.clone()).await?;
    tracing::info!(address = %srv.local_addr, "Started the kubelet's secure server");
    tasks.spawn(async move {
        let _ = srv.task.await;
    });
    Ok(())
}
