//! The secure server on `address:port` (10250) when `enableServer` is true
//! (`startKubelet` → `ListenAndServe`, TLS from `InitializeTLS`, auth from `BuildAuth`).

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;

use kubelet_config::KubeletServer;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::Kubelet;
use crate::startup::RunError;

fn path(s: &str) -> Option<PathBuf> {
    (!s.is_empty()).then(|| PathBuf::from(s))
}

/// The secure server's settings from flags and configuration.
pub fn secure_server_config(
    server: &KubeletServer,
    node_name: &str,
) -> Result<kubelet_server::SecureServerConfig, RunError> {
    let c = &server.config;
    let port = u16::try_from(c.port)
        .map_err(|_| RunError::Kubelet(format!("invalid port (--port) {}", c.port)))?;
    let mut ips: Vec<IpAddr> = super::node_ips(server);
    ips.push(Ipv4Addr::LOCALHOST.into());
    Ok(kubelet_server::SecureServerConfig {
        address: c.address.clone(),
        port,
        node_name: node_name.to_string(),
        tls: kubelet_server::TlsSettings {
            cert_file: path(&c.tls_cert_file),
            key_file: path(&c.tls_private_key_file),
            cert_dir: PathBuf::from(&server.flags.cert_directory),
            hostname: node_name.to_string(),
            ips,
            min_version: c.tls_min_version.clone(),
            cipher_suites: c.tls_cipher_suites.clone(),
        },
        client_ca_file: path(&c.authentication.x509.client_ca_file),
        anonymous: c.authentication.anonymous.enabled.unwrap_or(false),
        authorizer: Arc::new(kubelet_server::AlwaysAllow),
        fine_grained_authz: server
            .feature_gates
            .enabled(kubelet_features::gates::KUBELET_FINE_GRAINED_AUTHZ),
        enable_debugging_handlers: c.enable_debugging_handlers.unwrap_or(true),
    })
}

/// Whether the secure server runs (`enableServer`); `serverTLSBootstrap` is refused, since
/// requesting a serving certificate needs an API server client.
pub fn secure_server_wanted(server: &KubeletServer) -> Result<bool, RunError> {
    if !server.config.enable_server.unwrap_or(true) {
        return Ok(false);
    }
    if server.config.server_tls_bootstrap {
        return Err(RunError::Kubelet(
            "serverTLSBootstrap (--rotate-server-certificates) needs an API server client (--kubeconfig) to request a serving certificate".into(),
        ));
    }
    Ok(true)
}

/// Starts the secure server (binding before returning, so errors stop the start-up).
pub async fn start_secure_server(
    server: &KubeletServer,
    node_name: &str,
    kubelet: &Arc<Kubelet>,
    configz: serde_json::Value,
    cancel: &CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    if !secure_server_wanted(server)? {
        return Ok(());
    }
    let cfg = secure_server_config(server, node_name)?;
    let srv =
        kubelet_server::start_secure_server(cfg, kubelet.clone(), configz, cancel.clone()).await?;
    tracing::info!(address = %srv.local_addr, "Started the kubelet's secure server");
    tasks.spawn(async move {
        let _ = srv.task.await;
    });
    Ok(())
}
