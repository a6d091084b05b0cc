//! The status manager's apiserver syncer (`kubelet_status::StatusSyncer`) against the real
//! kube-apiserver of `hack/cluster-up.sh`, with a node's own credentials
//! (`system:node:<name>`, through `Node,RBAC` authorization and `NodeRestriction`), as the
//! kubelet writes `pods/status`: a Node object and a pod bound to it are created as admin in
//! a fresh `t-statussync-*` namespace; the syncer patches the pod's status (fields as the
//! kubelet reports them, a condition set by someone else kept, nothing sent when nothing
//! changed), a patch or delete with another UID is refused, and once the pod is deleted
//! gracefully and finished the syncer deletes it with grace period 0. No kubelet runs for
//! the node, so the pod's containers never exist; the test stands in for the pod workers.
//! Ignored only when built with `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus,
    HostIP, Namespace, Node, Pod, PodCondition, PodIP, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kubelet_client::KubeletClients;
use kubelet_e2e::cluster;
use kubelet_status::{
    KubePodStatusApi, PodDeletionSafetyProvider, PodManager, PodStatusApi, StatusApiError,
    StatusManager, StatusSyncer,
};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Counts the calls that reach the apiserver.
#[derive(Debug)]
struct Counting {
    inner: KubePodStatusApi,
    patches: AtomicUsize,
    deletes: AtomicUsize,
    last_patch: Mutex<Value>,
}

#[async_trait]
impl PodStatusApi for Counting {
    async fn get_pod(&self, ns: &str, name: &str) -> Result<Option<Pod>, StatusApiError> {
        self.inner.get_pod(ns, name).await
    }
    async fn patch_pod_status(
        &self,
        ns: &str,
        name: &str,
        p: &Value,
    ) -> Result<Pod, StatusApiError> {
        self.patches.fetch_add(1, Ordering::SeqCst);
        *self.last_patch.lock().unwrap() = p.clone();
        self.inner.patch_pod_status(ns, name, p).await
    }
    async fn delete_pod(&self, ns: &str, name: &str, uid: &str) -> Result<(), StatusApiError> {
        self.deletes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete_pod(ns, name, uid).await
    }
}

/// The pod manager of this pretend kubelet: the pods as its watch would have them.
#[derive(Default)]
struct Pods(Mutex<HashMap<String, Arc<Pod>>>);

impl Pods {
    fn set(&self, pod: Pod) {
        let uid = pod.metadata.uid.clone().unwrap();
        self.0.lock().unwrap().insert(uid, Arc::new(pod));
    }
}

impl PodManager for Pods {
    fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<Pod>> {
        self.0.lock().unwrap().get(uid).cloned()
    }
    fn get_mirror_pod_by_pod(&self, _: &Pod) -> Option<Arc<Pod>> {
        None
    }
    fn translate_pod_uid(&self, uid: &str) -> String {
        uid.to_string()
    }
    fn pod_to_mirror(&self) -> HashMap<String, String> {
        HashMap::new()
    }
}

/// The pod's containers never ran (no kubelet serves the node).
struct NothingRuns;

impl PodDeletionSafetyProvider for NothingRuns {
    fn pod_could_have_running_containers(&self, _: &str) -> bool {
        false
    }
}

fn unique() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}-{}", std::process::id(), now.as_millis() % 1_000_000)
}

fn cond(type_: &str, status: &str) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        ..PodCondition::default()
    }
}

/// A status as `generateAPIPodStatus` makes it for a running pod on the node.
fn running_status() -> PodStatus {
    PodStatus {
        phase: Some("Running".into()),
        host_ip: Some("198.18.0.1".into()),
        host_ips: Some(vec![HostIP {
            ip: "198.18.0.1".into(),
        }]),
        pod_ip: Some("198.18.77.7".into()),
        pod_ips: Some(vec![PodIP {
            ip: "198.18.77.7".into(),
        }]),
        qos_class: Some("BestEffort".into()),
        container_statuses: Some(vec![ContainerStatus {
            name: "c".into(),
            image: "registry.k8s.io/pause:3.10".into(),
            image_id: "sha256:0123".into(),
            container_id: Some("containerd://abc".into()),
            ready: true,
            started: Some(true),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(jiff::Timestamp::from_second(1_700_000_000).unwrap())),
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]),
        conditions: Some(vec![
            cond("PodReadyToStartContainers", "True"),
            cond("Initialized", "True"),
            cond("Ready", "True"),
            cond("ContainersReady", "True"),
            cond("PodScheduled", "True"),
        ]),
        ..PodStatus::default()
    }
}

fn terminated_status() -> PodStatus {
    let mut s = running_status();
    s.phase = Some("Succeeded".into());
    if let Some(cs) = s.container_statuses.as_mut() {
        cs[0].ready = false;
        cs[0].started = Some(false);
        cs[0].state = Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 0,
                reason: Some("Completed".into()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        });
    }
    for c in s.conditions.iter_mut().flatten() {
        if c.type_ == "Ready" || c.type_ == "ContainersReady" {
            c.status = "False".into();
            c.reason = Some("PodCompleted".into());
        }
    }
    s
}

fn condition<'a>(s: &'a PodStatus, t: &str) -> Option<&'a PodCondition> {
    s.conditions.iter().flatten().find(|c| c.type_ == t)
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn status_patch_precondition_and_final_delete() -> TestResult {
    let c = cluster::ensure()?;
    let id = unique();
    // One node name, so the node's credentials are issued once.
    let node_name = "krs-t-statussync".to_string();
    let ns = format!("t-statussync-{id}");
    let cfg = kubelet_config::new_kubelet_configuration();
    let admin = KubeletClients::build(&c.kubeconfig, &cfg).await?.main;
    let node_files = c.node_files(&node_name, "127.0.0.1")?;
    let node = KubeletClients::build(&node_files.kubeconfig, &cfg)
        .await?
        .main;

    let nodes: Api<Node> = Api::all(admin.clone());
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let _cleanup = Cleanup {
        cluster: c.clone(),
        node: node_name.clone(),
        namespace: ns.clone(),
    };
    let mut n = Node::default();
    n.metadata.name = Some(node_name.clone());
    match nodes.create(&PostParams::default(), &n).await {
        Err(kube::Error::Api(e)) if e.code == 409 => {} // left by an interrupted run
        other => {
            other?;
        }
    }
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(ns.clone());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await?;

    scenario(&admin, node, &node_name, &ns).await
}

/// Deletes the test's namespace and Node object, also when an assertion failed.
struct Cleanup {
    cluster: cluster::Cluster,
    node: String,
    namespace: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.cluster.kubectl_output([
            "delete",
            "namespace",
            &self.namespace,
            "--wait=false",
            "--ignore-not-found",
        ]);
        let _ = self
            .cluster
            .kubectl_output(["delete", "node", &self.node, "--ignore-not-found"]);
    }
}

async fn scenario(
    admin: &kube::Client,
    node: kube::Client,
    node_name: &str,
    ns: &str,
) -> TestResult {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node_name.into()),
            containers: vec![Container {
                name: "c".into(),
                image: Some("registry.k8s.io/pause:3.10".into()),
                ..Container::default()
            }],
            termination_grace_period_seconds: Some(30),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    let created = pods.create(&PostParams::default(), &pod).await?;
    let uid = created.metadata.uid.clone().unwrap();
    // A controller sets a condition of its own (a readiness gate's, say).
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Strategic(
            json!({"status": {"conditions": [{"type": "example.com/gate", "status": "True"}]}}),
        ),
    )
    .await?;
    let created = pods.get("p").await?;

    let api = Arc::new(Counting {
        inner: KubePodStatusApi::new(node),
        patches: AtomicUsize::new(0),
        deletes: AtomicUsize::new(0),
        last_patch: Mutex::new(Value::Null),
    });
    let manager = StatusManager::default();
    let known = Arc::new(Pods::default());
    known.set(created.clone());
    let mut syncer = StatusSyncer::new(
        manager.clone(),
        api.clone(),
        known.clone(),
        Arc::new(NothingRuns),
        Arc::new(kubelet_container::RealClock),
    );

    // 1. The kubelet's status reaches the API object.
    manager.set_pod_status(&created, running_status());
    assert_eq!(syncer.sync_batch(false).await, 1);
    assert_eq!(api.patches.load(Ordering::SeqCst), 1);
    let got = pods.get("p").await?;
    let s = got.status.clone().unwrap();
    assert_eq!(s.phase.as_deref(), Some("Running"));
    assert_eq!(s.host_ip.as_deref(), Some("198.18.0.1"));
    assert_eq!(s.pod_ips.as_ref().unwrap()[0].ip, "198.18.77.7");
    assert_eq!(s.qos_class.as_deref(), Some("BestEffort"));
    assert!(s.start_time.is_some());
    assert_eq!(s.observed_generation, got.metadata.generation);
    assert_eq!(condition(&s, "Ready").unwrap().status, "True");
    assert_eq!(condition(&s, "PodScheduled").unwrap().status, "True");
    assert_eq!(
        condition(&s, "example.com/gate").map(|c| c.status.as_str()),
        Some("True"),
        "a condition the kubelet does not own is kept"
    );
    let cs = &s.container_statuses.as_ref().unwrap()[0];
    assert!(cs.state.as_ref().unwrap().running.is_some());

    // 2. Nothing changed: neither pass patches.
    known.set(got.clone());
    manager.set_pod_status(&got, running_status());
    syncer.sync_batch(false).await;
    syncer.sync_batch(true).await;
    assert_eq!(
        api.patches.load(Ordering::SeqCst),
        1,
        "no patch when unchanged: {}",
        api.last_patch.lock().unwrap()
    );

    // 3. Another UID (a pod deleted and recreated under the same name) is refused: the
    //    patch would change the immutable metadata.uid (422), the delete precondition fails (409).
    let (patch, _) = kubelet_status::patch::pod_status_patch(
        "00000000-0000-0000-0000-000000000000",
        &s,
        &terminated_status(),
    )?;
    let refused = api.inner.patch_pod_status(ns, "p", &patch).await;
    assert!(
        matches!(refused, Err(StatusApiError::Api { code: 422, .. })),
        "{refused:?}"
    );
    let refused = api
        .inner
        .delete_pod(ns, "p", "00000000-0000-0000-0000-000000000000")
        .await;
    assert!(
        matches!(refused, Err(StatusApiError::Api { code: 409, .. })),
        "{refused:?}"
    );
    let still = pods.get("p").await?;
    assert_eq!(still.status.unwrap().phase.as_deref(), Some("Running"));

    // 4. Graceful deletion: the object stays (it is bound to a node) until the kubelet
    //    reports it terminal and finished, then the syncer deletes it with grace 0.
    pods.delete("p", &DeleteParams::default()).await?;
    let deleting = pods.get("p").await?;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.metadata.deletion_grace_period_seconds, Some(30));
    known.set(deleting.clone());
    manager.set_pod_status(&deleting, terminated_status());
    syncer.sync_batch(false).await;
    let terminal = pods.get("p").await?;
    assert_eq!(
        terminal.status.as_ref().unwrap().phase.as_deref(),
        Some("Succeeded")
    );
    assert_eq!(api.deletes.load(Ordering::SeqCst), 0, "not finished yet");
    // SyncTerminatedPod completed.
    known.set(terminal.clone());
    manager.terminate_pod(&terminal);
    syncer.sync_batch(false).await;
    assert_eq!(api.deletes.load(Ordering::SeqCst), 1);
    assert!(pods.get_opt("p").await?.is_none(), "the pod object is gone");
    assert!(manager.get_pod_status(&uid).is_none());
    Ok(())
}
