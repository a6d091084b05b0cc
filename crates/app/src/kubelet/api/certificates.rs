//! The kubelet's certificates in API server mode, wired to `kubelet-certificate`:
//!
//! * [`build_kubelet_clients`]: `buildKubeletClientConfig` (`cmd/kubelet/app/server.go`).
//!   With `rotateCertificates`, `LoadClientConfig` picks the credentials that request
//!   certificates (bootstrapping "in background": `--kubeconfig` is written to point at
//!   `<cert-dir>/kubelet-client-current.pem`), the client certificate manager is built, and
//!   the clients present its certificate (`UpdateTransport`); the manager starts with them,
//!   and the kubelet stops after 5 minutes without a valid certificate while the API
//!   server answers (`exitAfter`).
//!   Without it, `--bootstrap-kubeconfig` runs `LoadClientCert` first (blocking until the
//!   certificate is issued, as upstream), then the clients are built from `--kubeconfig`.
//! * [`start_server_certificate_manager`]: `serverTLSBootstrap` (`NewMainKubelet`:
//!   `NewKubeletServerCertificateManager` on the main client, started with the kubelet);
//!   the secure server serves its certificate (`GetCertificate`). In standalone mode it has
//!   no client: it serves a `kubelet-server-current.pem` already in `--cert-dir`, if any, as
//!   upstream's manager without a clientset does.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use k8s_openapi::api::core::v1::NodeAddress;
use kubelet_certificate::bootstrap;
use kubelet_certificate::manager::{Manager, RandomJitter, RealClock};
use kubelet_client::KubeletClients;
use kubelet_config::KubeletServer;
use tokio::task::JoinSet;

use crate::kubelet::KubeletDeps;
use crate::startup::RunError;

/// The clients, and the client certificate manager to start with them
/// (`rotateCertificates`).
pub(crate) struct BuiltClients {
    pub clients: Arc<KubeletClients>,
    pub client_certificate_manager: Option<Arc<Manager>>,
}

fn cert_err(e: kubelet_certificate::CertificateError) -> RunError {
    RunError::Kubelet(e.to_string())
}

fn bootstrap_path(s: &KubeletServer) -> Option<PathBuf> {
    (!s.flags.bootstrap_kubeconfig.is_empty()).then(|| PathBuf::from(&s.flags.bootstrap_kubeconfig))
}

/// `buildKubeletClientConfig` + the three clients.
pub(crate) async fn build_kubelet_clients(
    s: &KubeletServer,
    node_name: &str,
) -> Result<BuiltClients, RunError> {
    let kubeconfig = Path::new(&s.flags.kubeconfig);
    let cert_dir = Path::new(&s.flags.cert_directory);
    let bootstrap_kc = bootstrap_path(s);
    if s.config.rotate_certificates {
        tracing::info!("Client rotation is on, will bootstrap in background");
        let paths = bootstrap::load_client_config(
            kubeconfig,
            bootstrap_kc.as_deref(),
            cert_dir,
            SystemTime::now(),
        )
        .map_err(cert_err)?;
        let manager = bootstrap::build_client_certificate_manager(
            &paths,
            cert_dir,
            node_name,
            Arc::new(RealClock),
            Arc::new(RandomJitter),
        )
        .map_err(cert_err)?;
        let clients = KubeletClients::build_with_certificates(
            kubeconfig,
            &s.config,
            manager.certified_keys(),
        )
        .await?;
        return Ok(BuiltClients {
            clients: Arc::new(clients),
            client_certificate_manager: Some(manager),
        });
    }
    if let Some(b) = &bootstrap_kc {
        bootstrap::load_client_cert(kubeconfig, b, cert_dir, node_name)
            .await
            .map_err(cert_err)?;
    }
    Ok(BuiltClients {
        clients: Arc::new(KubeletClients::build(kubeconfig, &s.config).await?),
        client_certificate_manager: None,
    })
}

/// `clientCertificateManager.Start()` with `UpdateTransport`'s `exitAfter` of 5 minutes:
/// when the kubelet has had no valid client certificate that long while the API server
/// answers, it stops (`fatal`: exit 1), as upstream's `os.Exit(1)`.
pub(crate) fn start_client_certificate_manager(
    manager: Arc<Manager>,
    shutdown: &tokio_util::sync::CancellationToken,
    fatal: &tokio_util::sync::CancellationToken,
) {
    tracing::debug!("Starting client certificate rotation");
    tokio::spawn(manager.clone().run(shutdown.clone()));
    let (shutdown, fatal) = (shutdown.clone(), fatal.clone());
    tokio::spawn(async move {
        let exit_after = std::time::Duration::from_secs(5 * 60);
        let period = std::time::Duration::from_secs(10);
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = manager.wait_until_unusable(exit_after, period) => fatal.cancel(),
        }
    });
}

/// The node's addresses for the serving certificate: `--node-ip`s as `InternalIP`, and the
/// node name as `Hostname` (upstream asks the node status's last observed addresses; until
/// node status is wired, without `--node-ip` there is no IP and so no request, as upstream's
/// template without an IP).
fn node_addresses(node_name: &str, node_ips: &[std::net::IpAddr]) -> Vec<NodeAddress> {
    let mut a: Vec<NodeAddress> = node_ips
        .iter()
        .map(|ip| NodeAddress {
            type_: "InternalIP".into(),
            address: ip.to_string(),
        })
        .collect();
    a.push(NodeAddress {
        type_: "Hostname".into(),
        address: node_name.to_string(),
    });
    a
}

/// `serverTLSBootstrap`: the serving certificate manager, started in `tasks` until
/// shutdown; its certificates for the secure server. `None` when the setting is off.
pub(crate) fn start_server_certificate_manager(
    deps: &KubeletDeps<'_>,
    tasks: &mut JoinSet<()>,
) -> Result<Option<kubelet_server::ServingCertificates>, RunError> {
    let Some(manager) = server_certificate_manager(
        deps.server,
        deps.clients.as_deref(),
        &deps.node_name,
        &deps.node_ips,
    )?
    else {
        return Ok(None);
    };
    let certs = manager.certified_keys();
    tasks.spawn(manager.run(deps.shutdown.clone()));
    Ok(Some(certs))
}

/// `NewKubeletServerCertificateManager` when `serverTLSBootstrap` is on: the main client
/// requests (none in standalone mode), the store is `kubelet-server-*` in `--cert-dir`
/// with `tlsCertFile`/`tlsPrivateKeyFile` as its fallback.
fn server_certificate_manager(
    s: &KubeletServer,
    clients: Option<&KubeletClients>,
    node_name: &str,
    node_ips: &[std::net::IpAddr],
) -> Result<Option<Arc<Manager>>, RunError> {
    if !s.config.server_tls_bootstrap {
        return Ok(None);
    }
    let api = clients.map(|c| {
        let api: Arc<dyn kubelet_certificate::CsrApi> =
            Arc::new(kubelet_certificate::KubeCsrApi::new(c.main.clone()));
        api
    });
    let path = |p: &str| (!p.is_empty()).then(|| PathBuf::from(p));
    let addresses = node_addresses(node_name, node_ips);
    kubelet_certificate::manager::new_kubelet_server_certificate_manager(
        api,
        path(&s.config.tls_cert_file).as_deref(),
        path(&s.config.tls_private_key_file).as_deref(),
        node_name,
        Arc::new(move || addresses.clone()),
        Path::new(&s.flags.cert_directory),
        s.feature_gates
            .enabled_by_name("AllowDNSOnlyNodeCSR")
            .unwrap_or(false),
        Arc::new(RealClock),
        Arc::new(RandomJitter),
    )
    .map(Some)
    .map_err(|e| RunError::Kubelet(format!("failed to initialize certificate manager: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn server(dir: &Path, rotate: bool) -> KubeletServer {
        let mut s = crate::kubelet::test_config::server("");
        s.flags.kubeconfig = dir.join("kubelet.kubeconfig").display().to_string();
        s.flags.bootstrap_kubeconfig = dir.join("bootstrap.kubeconfig").display().to_string();
        s.flags.cert_directory = dir.join("pki").display().to_string();
        s.config.rotate_certificates = rotate;
        std::fs::write(dir.join("ca.crt"), "unused").unwrap();
        std::fs::write(
            dir.join("bootstrap.kubeconfig"),
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    \
             certificate-authority-data: dW51c2Vk\nusers:\n- name: u\n  user:\n    token: abcdef.0123456789abcdef\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
        )
        .unwrap();
        s
    }

    #[tokio::test]
    async fn rotate_certificates_bootstraps_in_background() {
        let dir = tempfile::tempdir().unwrap();
        let s = server(dir.path(), true);
        // The API server is unreachable: building does not wait for it.
        let built = build_kubelet_clients(&s, "n1").await.unwrap();
        let manager = built.client_certificate_manager.unwrap();
        assert!(manager.current().is_none());
        assert!(built.clients.connections.is_some());
        // --kubeconfig now points at the store's current pair, cluster from the bootstrap.
        let text = std::fs::read_to_string(dir.path().join("kubelet.kubeconfig")).unwrap();
        let pem = dir.path().join("pki/kubelet-client-current.pem");
        assert!(
            text.contains(&format!("client-certificate: {}", pem.display())),
            "{text}"
        );
        assert!(
            text.contains("certificate-authority-data: dW51c2Vk"),
            "{text}"
        );
        assert!(text.contains("server: https://127.0.0.1:1"), "{text}");
    }

    #[tokio::test]
    async fn server_tls_bootstrap_without_a_client_serves_a_stored_certificate_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = server(dir.path(), false);
        assert!(
            server_certificate_manager(&s, None, "n1", &[])
                .unwrap()
                .is_none()
        );
        s.config.server_tls_bootstrap = true;
        let ip: std::net::IpAddr = "198.18.255.9".parse().unwrap();
        let m = server_certificate_manager(&s, None, "n1", &[ip])
            .unwrap()
            .unwrap();
        // No client: nothing to serve, and the manager's loop ends at once.
        assert!(m.certified_keys().borrow().is_none());
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            m.run(tokio_util::sync::CancellationToken::new()),
        )
        .await
        .unwrap();
    }

    #[test]
    fn serving_addresses_are_the_node_ips_and_name() {
        let ip: std::net::IpAddr = "198.18.255.9".parse().unwrap();
        let a = node_addresses("n1", &[ip]);
        let t = kubelet_certificate::manager::serving_template("n1", &a, false).unwrap();
        assert_eq!(t.ip_addresses, vec![ip]);
        assert_eq!(t.dns_names, vec!["n1".to_string()]);
        assert_eq!(
            kubelet_certificate::manager::serving_template("n1", &node_addresses("n1", &[]), false),
            None
        );
    }
}
