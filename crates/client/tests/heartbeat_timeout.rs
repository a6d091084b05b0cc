//! The heartbeat client's timeout (`min(nodeStatusUpdateFrequency,
//! nodeLeaseDurationSeconds)`) ends a request to a server that never answers, with
//! tower's `Elapsed`; the server here accepts TCP connections and stays silent.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::error::Error as _;

use kubelet_client::KubeletClients;

#[tokio::test]
async fn heartbeat_request_to_a_silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept and hold every connection without a byte of TLS.
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    \
             server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\n\
             users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    \
             cluster: c\n    user: u\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    let mut cfg = kubelet_config::new_kubelet_configuration();
    cfg.node_status_update_frequency = kubelet_apimachinery::Duration::from_millis(300);
    let clients = KubeletClients::build(&kubeconfig, &cfg).await.unwrap();
    assert_eq!(
        clients.settings.heartbeat.timeout,
        Some(std::time::Duration::from_millis(300))
    );
    let err = clients.heartbeat.apiserver_version().await.unwrap_err();
    let mut source: Option<&(dyn std::error::Error + 'static)> = err.source();
    let mut elapsed = false;
    while let Some(e) = source {
        elapsed |= e.is::<tower::timeout::error::Elapsed>();
        source = e.source();
    }
    if let kube::Error::Service(inner) = &err {
        elapsed |= inner.is::<tower::timeout::error::Elapsed>();
    }
    assert!(elapsed, "expected the heartbeat timeout, got {err:?}");
    silent.abort();
}
