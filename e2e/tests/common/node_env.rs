//! A node identity and a namespace on the real control plane, for tests that act as a
//! kubelet without starting one on a runtime (`#[path]`-included by `cluster_apipods.rs`
//! and `cluster_objects.rs`): the admin's client, the node's clients
//! (`system:node:<name>`, so the Node authorizer and `NodeRestriction` apply), a Node object
//! and a namespace with its default ServiceAccount. Everything is deleted on drop.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, ServiceAccount};
use kube::Api;
use kube::api::PostParams;
use kubelet_client::KubeletClients;
use kubelet_e2e::cluster::{self, Cluster};
use serde_json::json;

/// How long [`eventually`] waits.
pub const WAIT: Duration = Duration::from_secs(60);

/// See the module doc.
pub struct Env {
    pub cluster: Cluster,
    pub admin: kube::Client,
    pub node_clients: Arc<KubeletClients>,
    pub node: String,
    pub ns: String,
}

impl Drop for Env {
    fn drop(&mut self) {
        // No kubelet confirms the deletion of these pods: remove them at once.
        let _ = self.cluster.kubectl_output([
            "delete",
            "pods",
            "--all",
            "-n",
            &self.ns,
            "--grace-period=0",
            "--force",
        ]);
        let _ = self.cluster.kubectl_output([
            "delete",
            "namespace",
            &self.ns,
            "--ignore-not-found",
            "--wait=false",
        ]);
        let _ = self
            .cluster
            .kubectl_output(["delete", "node", &self.node, "--ignore-not-found"]);
    }
}

/// Node `krs-t-<who>-<pid>-<suffix>` and namespace `t-<who>-<pid>-<suffix>`.
pub async fn env(who: &str, suffix: &str) -> Result<Env, Box<dyn std::error::Error>> {
    let c = cluster::ensure()?;
    let node = format!("krs-t-{who}-{}-{suffix}", std::process::id());
    let ns = format!("t-{who}-{}-{suffix}", std::process::id());
    let cfg = kubelet_config::new_kubelet_configuration();
    let admin = KubeletClients::build(&c.kubeconfig, &cfg).await?.main;
    let files = c.node_files(&node, "127.0.0.1")?;
    let node_clients = Arc::new(KubeletClients::build(&files.kubeconfig, &cfg).await?);
    let e = Env {
        cluster: c,
        admin,
        node_clients,
        node,
        ns,
    };
    let n: Node = serde_json::from_value(json!({"metadata": {"name": e.node}}))?;
    Api::<Node>::all(e.admin.clone())
        .create(&PostParams::default(), &n)
        .await?;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": e.ns}}))?;
    Api::<Namespace>::all(e.admin.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    // Pods cannot be created before the controller-manager made the default ServiceAccount.
    let sas: Api<ServiceAccount> = Api::namespaced(e.admin.clone(), &e.ns);
    eventually("the default ServiceAccount", || async {
        sas.get_opt("default").await.ok().flatten()
    })
    .await;
    Ok(e)
}

/// Polls `f` every 100 ms until it returns `Some`; fails the test after [`WAIT`].
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
