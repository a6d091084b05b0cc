//! `kubelet-client` against the real kube-apiserver of `hack/cluster-up.sh`: kubeconfigs
//! with client certificates (files and embedded data), a bearer token, a token file and an
//! exec credential plugin authenticate as who they say (a `SelfSubjectReview` tells), and
//! the main client is throttled by its token bucket (counted on a fake clock, no wall-clock
//! timing). Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::Api;
use kube::api::PostParams;
use kubelet_client::{FakeClock, KubeletClients};
use kubelet_config::KubeletConfiguration;
use kubelet_e2e::cluster::{self, Cluster};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A kubeconfig for the test cluster with `user` (YAML lines below `user:`).
fn write_kubeconfig(dir: &Path, c: &Cluster, user: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let ca = c.pki_dir().join("ca.crt");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: krs\n  cluster:\n    server: {}\n    \
         certificate-authority: {}\nusers:\n- name: u\n  user:\n{user}contexts:\n- name: krs\n  \
         context:\n    cluster: krs\n    user: u\ncurrent-context: krs\n",
        c.server,
        ca.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn config() -> KubeletConfiguration {
    kubelet_config::new_kubelet_configuration()
}

/// Who the API server says `client` is.
async fn whoami(client: kube::Client) -> Result<String, kube::Error> {
    let review = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    Ok(review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default())
}

/// A short-lived token of the `default` ServiceAccount of `default`.
fn service_account_token(c: &Cluster) -> Result<String, cluster::ClusterError> {
    Ok(c.kubectl_output([
        "-n",
        "default",
        "create",
        "token",
        "default",
        "--duration",
        "10m",
    ])?
    .trim()
    .to_string())
}

const SA_USER: &str = "system:serviceaccount:default:default";

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn client_certificate_files_relative_to_the_kubeconfig() -> TestResult {
    let c = cluster::ensure()?;
    let dir = tempfile::tempdir()?;
    std::fs::copy(c.pki_dir().join("admin.crt"), dir.path().join("client.crt"))?;
    std::fs::copy(c.pki_dir().join("admin.key"), dir.path().join("client.key"))?;
    let kc = write_kubeconfig(
        dir.path(),
        &c,
        "    client-certificate: client.crt\n    client-key: client.key\n",
    );
    let clients = KubeletClients::build(&kc, &config()).await?;
    assert_eq!(whoami(clients.main).await?, "kubernetes-admin");
    assert_eq!(whoami(clients.event).await?, "kubernetes-admin");
    assert_eq!(whoami(clients.heartbeat).await?, "kubernetes-admin");
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn node_kubeconfig_with_embedded_certificate() -> TestResult {
    let c = cluster::ensure()?;
    let node = c.node_files("krs-client-test", "127.0.0.1")?;
    let clients = KubeletClients::build(&node.kubeconfig, &config()).await?;
    assert_eq!(whoami(clients.main).await?, "system:node:krs-client-test");
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn bearer_token_and_token_file() -> TestResult {
    let c = cluster::ensure()?;
    let token = service_account_token(&c)?;
    let dir = tempfile::tempdir()?;
    let kc = write_kubeconfig(dir.path(), &c, &format!("    token: {token}\n"));
    let clients = KubeletClients::build(&kc, &config()).await?;
    assert_eq!(whoami(clients.main).await?, SA_USER);

    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("token"), &token)?;
    let kc = write_kubeconfig(dir.path(), &c, "    tokenFile: token\n");
    let clients = KubeletClients::build(&kc, &config()).await?;
    assert_eq!(whoami(clients.heartbeat).await?, SA_USER);
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn exec_credential_plugin() -> TestResult {
    let c = cluster::ensure()?;
    let token = service_account_token(&c)?;
    let dir = tempfile::tempdir()?;
    let plugin = dir.path().join("credential-plugin.sh");
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    });
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho ran >> \"$(dirname \"$0\")/calls\"\ncat <<'EOF'\n{credential}\nEOF\n"
        ),
    )?;
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let kc = write_kubeconfig(
        dir.path(),
        &c,
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      \
         command: ./credential-plugin.sh\n      interactiveMode: Never\n",
    );
    let clients = KubeletClients::build(&kc, &config()).await?;
    assert_eq!(whoami(clients.main).await?, SA_USER);
    assert!(
        std::fs::read_to_string(dir.path().join("calls"))?.contains("ran"),
        "the plugin was not run"
    );
    Ok(())
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn main_client_is_throttled_heartbeat_is_not() -> TestResult {
    let c = cluster::ensure()?;
    let mut cfg = config();
    cfg.kube_api_qps = Some(5);
    cfg.kube_api_burst = 2;
    let clock = FakeClock::new();
    let clients =
        KubeletClients::build_with_clock(&c.kubeconfig, &cfg, Arc::new(clock.clone())).await?;
    let main_limiter = clients.main_limiter.clone().unwrap();
    for _ in 0..7 {
        clients.main.apiserver_version().await?;
    }
    // 7 requests: 2 from the burst, 5 more at 5 QPS, i.e. one second on the fake clock.
    assert_eq!(main_limiter.admitted(), 7);
    assert_eq!(clock.sleeps(), vec![Duration::from_millis(200); 5]);

    // The heartbeat client has no limiter (QPS -1): no further waits.
    assert!(clients.settings.heartbeat.limiter().is_none());
    for _ in 0..20 {
        clients.heartbeat.apiserver_version().await?;
    }
    assert_eq!(clock.sleeps().len(), 5);
    assert_eq!(main_limiter.admitted(), 7);
    // The event client has its own bucket (eventRecordQPS 50, eventBurst 100).
    let event_limiter = clients.event_limiter.clone().unwrap();
    clients.event.apiserver_version().await?;
    assert_eq!(event_limiter.admitted(), 1);
    assert_eq!(clock.sleeps().len(), 5);
    Ok(())
}
