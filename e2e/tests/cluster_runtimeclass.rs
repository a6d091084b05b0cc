//! `runtimeClassName` against the real kube-apiserver of `hack/cluster-up.sh` (its
//! RuntimeClass admission, the node's Node-authorizer view of RuntimeClasses), with the
//! kubelet of `run_kubelet` in API server mode over the recording fake CRI
//! (`crates/app/tests/support`) as node `krs-t-rtclass-<pid>-…`:
//!
//! - a pod naming an existing RuntimeClass runs, and its CRI sandbox was created with that
//!   class's handler (`RunPodSandboxRequest.runtime_handler`);
//! - a pod whose RuntimeClass was deleted after the API server admitted it never gets a
//!   sandbox: upstream's `FailedCreatePodSandBox` warning (`Failed to create pod sandbox:
//!   runtimeclass.node.k8s.io "<name>" not found`) and the pod stays Pending with its
//!   container waiting in `ContainerCreating`.
//!
//! No kubelet uses the shared containerd: no runtime lock. Ignored only when built with
//! `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/node_env.rs"]
mod node_env;
#[path = "../../crates/app/tests/support/mod.rs"]
mod support;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::node::v1::RuntimeClass;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use node_env::{Env, env, eventually};
use serde_json::json;
use support::TestKubelet;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Deletes the RuntimeClasses of the test, also when it fails.
struct RuntimeClasses {
    api: Api<RuntimeClass>,
    cluster: kubelet_e2e::cluster::Cluster,
    names: Vec<String>,
}

impl RuntimeClasses {
    async fn create(&mut self, name: &str, handler: &str) -> TestResult {
        let rc: RuntimeClass =
            serde_json::from_value(json!({"metadata": {"name": name}, "handler": handler}))?;
        self.api.create(&PostParams::default(), &rc).await?;
        self.names.push(name.to_string());
        Ok(())
    }
}

impl Drop for RuntimeClasses {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = self.cluster.kubectl_output([
                "delete",
                "runtimeclass",
                n.as_str(),
                "--ignore-not-found",
            ]);
        }
    }
}

/// The Node of [`env`] with allocatable set, as registration would leave it (admission
/// reads it).
async fn node_env() -> Result<Env, Box<dyn std::error::Error>> {
    let e = env("rtclass", "rc").await?;
    Api::<Node>::all(e.admin.clone())
        .patch_status(
            &e.node,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"}}}),
            ),
        )
        .await?;
    Ok(e)
}

fn pod(name: &str, node: &str, runtime_class: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": false, "runtimeClassName": runtime_class,
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "1d"]}]}
    }))
    .unwrap()
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_class_handler_reaches_the_sandbox_and_a_missing_class_fails_it() -> TestResult {
    let e = node_env().await?;
    let mut classes = RuntimeClasses {
        api: Api::all(e.admin.clone()),
        cluster: e.cluster.clone(),
        names: Vec::new(),
    };
    let present = format!("{}-present", e.ns);
    let gone = format!("{}-gone", e.ns);
    classes.create(&present, "test-handler").await?;
    classes.create(&gone, "other-handler").await?;
    let pods: Api<Pod> = Api::namespaced(e.admin.clone(), &e.ns);
    // Admitted by the API server while its RuntimeClass exists, then the class goes.
    let orphan = pods
        .create(&PostParams::default(), &pod("rc-gone", &e.node, &gone))
        .await?;
    classes.api.delete(&gone, &DeleteParams::default()).await?;
    classes.names.retain(|n| *n != gone);

    let mut k = TestKubelet::new("").await;
    k.server.flags.hostname_override = e.node.clone();
    k.clients = Some(e.node_clients.clone());
    k.start().await;

    let ok = pods
        .create(&PostParams::default(), &pod("rc-ok", &e.node, &present))
        .await?;
    let uid = ok.metadata.uid.clone().unwrap();
    k.wait_running(&uid, "main").await;
    let handlers: Vec<String> = k
        .sandboxes(&uid)
        .iter()
        .map(|s| s.status.runtime_handler.clone())
        .collect();
    assert_eq!(handlers, ["test-handler"]);

    let orphan_uid = orphan.metadata.uid.clone().unwrap();
    let want =
        format!(r#"Failed to create pod sandbox: runtimeclass.node.k8s.io "{gone}" not found"#);
    k.wait_until("FailedCreatePodSandBox for rc-gone", || {
        k.recorder
            .events()
            .into_iter()
            .find(|ev| {
                ev.object.uid.as_deref() == Some(orphan_uid.as_str())
                    && ev.reason == "FailedCreatePodSandBox"
            })
            .map(|ev| assert_eq!(ev.message, want))
    })
    .await;
    let waiting = eventually("rc-gone waiting in the API", || async {
        let p = pods.get_opt("rc-gone").await.ok().flatten()?;
        let st = p.status?;
        let w = st.container_statuses?.into_iter().next()?.state?.waiting?;
        Some((st.phase?, w.reason?))
    })
    .await;
    assert_eq!(
        waiting,
        ("Pending".to_string(), "ContainerCreating".to_string())
    );
    assert!(k.sandboxes(&orphan_uid).is_empty());
    k.stop().await;
    Ok(())
}
