//! The kubelet of `run_kubelet` in API server mode against the real kube-apiserver of
//! `hack/cluster-up.sh`, over the recording fake CRI (`crates/app/tests/support`), as the
//! node `krs-t-apipods-<pid>-kl` with its own identity: a static pod gets its mirror pod
//! (annotated, owned by the Node); a mirror pod deleted by an admin comes back with a new
//! UID; a pod bound to the node through the API runs; a pod that does not tolerate a
//! `NoExecute` taint of the Node ends `Failed` with reason `TaintToleration` and a Warning
//! event, and never reaches the runtime; removing the manifest deletes the mirror pod
//! (housekeeping). The Node is created by the admin first (no node registration here) and
//! deleted after. Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../crates/app/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kubelet_client::KubeletClients;
use kubelet_e2e::cluster::{self, Cluster};
use serde_json::json;
use support::TestKubelet;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(60);

/// Deletes the test's pods, namespace and Node when dropped.
struct Cleanup {
    cluster: Cluster,
    node: String,
    ns: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for args in [
            vec![
                "delete",
                "pods",
                "--all",
                "-n",
                &self.ns,
                "--grace-period=0",
                "--force",
            ],
            vec![
                "delete",
                "namespace",
                &self.ns,
                "--ignore-not-found",
                "--wait=false",
            ],
            vec!["delete", "node", &self.node, "--ignore-not-found"],
        ] {
            let _ = self.cluster.kubectl_output(args);
        }
    }
}

async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
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
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn static_manifest(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  \
         terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox:1.36\n    \
         command: [\"sleep\", \"1d\"]\n"
    )
}

fn api_pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        // No service account token: projected volumes are not supported yet.
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "1d"]}]}
    }))
    .unwrap()
}

fn annotation(p: &Pod, key: &str) -> Option<String> {
    p.metadata.annotations.as_ref()?.get(key).cloned()
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_mirrors_static_pods_and_admits_api_pods_against_the_node() -> TestResult {
    let c = cluster::ensure()?;
    let node = format!("krs-t-apipods-{}-kl", std::process::id());
    let ns = format!("t-apipods-{}-kl", std::process::id());
    let _cleanup = Cleanup {
        cluster: c.clone(),
        node: node.clone(),
        ns: ns.clone(),
    };
    let cfg = kubelet_config::new_kubelet_configuration();
    let admin = KubeletClients::build(&c.kubeconfig, &cfg).await?.main;
    let files = c.node_files(&node, "127.0.0.1")?;
    let node_clients = Arc::new(KubeletClients::build(&files.kubeconfig, &cfg).await?);

    // The Node as registration would leave it: allocatable set (admission reads it).
    let nodes: Api<Node> = Api::all(admin.clone());
    nodes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": node}}))?,
        )
        .await?;
    nodes
        .patch_status(
            &node,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"}}}),
            ),
        )
        .await?;
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
        )
        .await?;

    let mut k = TestKubelet::new("").await;
    k.server.flags.hostname_override = node.clone();
    k.clients = Some(node_clients);
    k.start().await;

    // A static pod runs and gets its mirror pod.
    k.write_manifest("web.yaml", &static_manifest("web", &ns));
    let pods: Api<Pod> = Api::namespaced(admin.clone(), &ns);
    let mirror_name = format!("web-{node}");
    let mirror = eventually("the mirror pod", || async {
        pods.get_opt(&mirror_name).await.ok().flatten()
    })
    .await;
    let hash = annotation(&mirror, "kubernetes.io/config.mirror").expect("mirror annotation");
    assert_eq!(
        annotation(&mirror, "kubernetes.io/config.hash").as_deref(),
        Some(hash.as_str())
    );
    let owner = &mirror.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", node.as_str())
    );
    // The static pod's UID is its hash; it runs once, whatever the mirror pod does.
    k.wait_running(&hash, "main").await;

    // An admin deletes the mirror pod: the kubelet creates a new one.
    let first_uid = mirror.metadata.uid.clone().unwrap();
    pods.delete(&mirror_name, &DeleteParams::default().grace_period(0))
        .await?;
    let again = eventually("the mirror pod to come back", || async {
        pods.get_opt(&mirror_name)
            .await
            .ok()
            .flatten()
            .filter(|p| p.metadata.uid.as_deref() != Some(first_uid.as_str()))
    })
    .await;
    assert_eq!(
        annotation(&again, "kubernetes.io/config.mirror").as_deref(),
        Some(hash.as_str())
    );
    assert_eq!(
        k.sandboxes(&hash).len(),
        1,
        "the static pod was not started twice"
    );

    // A pod bound to the node through the API runs.
    let created = pods
        .create(&PostParams::default(), &api_pod("api-ok", &node))
        .await?;
    let api_uid = created.metadata.uid.clone().unwrap();
    k.wait_running(&api_uid, "main").await;

    // A NoExecute taint the next pod does not tolerate: rejected, never run.
    nodes
        .patch(
            &node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": [{"key": "krs-test", "value": "x", "effect": "NoExecute"}]}})),
        )
        .await?;
    eventually("the informer to see the taint", || async {
        k.kubelet()
            .node_lister
            .get()
            .and_then(|n| n.spec.clone()?.taints)
            .filter(|t| !t.is_empty())
    })
    .await;
    let tainted = pods
        .create(&PostParams::default(), &api_pod("api-tainted", &node))
        .await?;
    let tainted_uid = tainted.metadata.uid.clone().unwrap();
    let status = k
        .wait_until("the tainted pod Failed", || {
            k.pod_status(&tainted_uid)
                .filter(|s| s.phase.as_deref() == Some("Failed"))
        })
        .await;
    assert_eq!(status.reason.as_deref(), Some("TaintToleration"));
    assert_eq!(
        status.message.as_deref(),
        Some(
            "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
        )
    );
    assert!(k.sandboxes(&tainted_uid).is_empty());
    let lines = k.recorder.lines();
    assert!(
        lines.contains(&"Warning TaintToleration Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate".to_string()),
        "{lines:?}"
    );

    // The manifest goes: the static pod stops and its mirror pod is deleted.
    k.remove_manifest("web.yaml");
    eventually("the orphaned mirror pod to be deleted", || async {
        match pods.get_opt(&mirror_name).await {
            Ok(None) => Some(()),
            _ => None,
        }
    })
    .await;
    k.stop().await;
    Ok(())
}
