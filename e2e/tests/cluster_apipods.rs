//! `kubelet-apipods` against the real kube-apiserver of `hack/cluster-up.sh`, with a node's
//! own identity (`system:node:krs-t-apipods-<pid>`, so `Node,RBAC` authorization and
//! `NodeRestriction` apply as they do to a kubelet): the node informer sees the Node object
//! (created by the admin first, deleted after); the pod source delivers full snapshots of
//! the pods bound to the node and no others; a watch whose resource version is too old
//! (`410 Expired` from the real watch cache) is survived by relisting; a mirror pod is
//! created with the mirror annotation and the Node as owner, and deleted only with its UID.
//!
//! Then the kubelet of `run_kubelet` in API server mode, over the recording fake CRI
//! (`crates/app/tests/support`), as such a node: a static pod gets its mirror pod; a mirror
//! pod deleted by an admin comes back with a new UID and gets the static pod's status; a pod bound to the node through the API
//! runs; a pod that does not tolerate a `NoExecute` taint of the Node ends `Failed` with reason
//! `TaintToleration` and a Warning event, and never reaches the runtime; removing the manifest
//! deletes the mirror pod (housekeeping). The Node is created by the admin (no node
//! registration here) and deleted after. Ignored only when built with
//! `KRS_SKIP_CLUSTER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/node_env.rs"]
mod node_env;
#[path = "../../crates/app/tests/support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kubelet_apipods::error::ApiError;
use kubelet_apipods::reflector::{ListerWatcher, ObjectList, WatchEvent};
use kubelet_apipods::{
    KubeMirrorClient, MirrorClient, NodeLister, node_lister_watcher, pod_lister_watcher,
    run_node_informer, run_source_apiserver,
};
use kubelet_container::kubetypes::annotation;
use kubelet_podsource::SourceUpdate;
use node_env::{Env, WAIT, env, eventually};
use serde_json::json;
use support::TestKubelet;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn pod(name: &str, node: &str, annotations: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        // No service account token: projected volumes are not supported yet.
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": false,
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "1d"]}]}
    }))
    .unwrap()
}

fn names(u: &SourceUpdate) -> Vec<String> {
    let mut n: Vec<String> = u
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    n.sort();
    n
}

/// Waits for a snapshot satisfying `want`.
async fn snapshot(
    rx: &mut mpsc::Receiver<SourceUpdate>,
    what: &str,
    want: impl Fn(&SourceUpdate) -> bool,
) -> SourceUpdate {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(u)) if want(&u) => return u,
            Ok(Some(_)) => {}
            Ok(None) => panic!("the pod source stopped while waiting for {what}"),
            Err(_) => panic!("no snapshot with {what} within {WAIT:?}"),
        }
    }
}

/// The node informer with the node's identity, once it has seen the Node.
async fn start_node_informer(e: &Env, cancel: &CancellationToken) -> (NodeLister, Arc<Node>) {
    let lister = NodeLister::new(&e.node);
    tokio::spawn(run_node_informer(
        node_lister_watcher(e.node_clients.main.clone(), &e.node),
        lister.clone(),
        cancel.clone(),
    ));
    let node = eventually("the node informer to see the Node", || async {
        lister.get()
    })
    .await;
    (lister, node)
}

/// The real lister-watcher, except that its first watch asks for resource version "1",
/// long gone from the API server's watch cache: the server answers `410 Expired`.
struct FirstWatchTooOld<L> {
    inner: L,
    watches: AtomicUsize,
    lists: Mutex<Vec<String>>,
    /// What the first watch ended with.
    first_watch_error: Arc<Mutex<Option<ApiError>>>,
}

#[async_trait]
impl<L: ListerWatcher<Pod>> ListerWatcher<Pod> for FirstWatchTooOld<L> {
    async fn list(&self, resource_version: &str) -> Result<ObjectList<Pod>, ApiError> {
        self.lists
            .lock()
            .unwrap()
            .push(resource_version.to_string());
        self.inner.list(resource_version).await
    }

    async fn watch(
        &self,
        resource_version: &str,
        timeout_secs: u32,
    ) -> Result<BoxStream<'static, Result<WatchEvent<Pod>, ApiError>>, ApiError> {
        if self.watches.fetch_add(1, Ordering::SeqCst) > 0 {
            return self.inner.watch(resource_version, timeout_secs).await;
        }
        let seen = self.first_watch_error.clone();
        let record = move |e: &ApiError| {
            seen.lock().unwrap().get_or_insert_with(|| e.clone());
        };
        match self.inner.watch("1", timeout_secs).await {
            Err(e) => {
                record(&e);
                Err(e)
            }
            Ok(stream) => Ok(futures::StreamExt::boxed(futures::StreamExt::inspect(
                stream,
                move |ev| match ev {
                    Err(e) | Ok(WatchEvent::Error(e)) => record(e),
                    Ok(_) => {}
                },
            ))),
        }
    }
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn pod_source_delivers_the_nodes_pods_and_survives_410() -> TestResult {
    let e = env("apipods", "src").await?;
    let cancel = CancellationToken::new();
    let (lister, seen) = start_node_informer(&e, &cancel).await;
    assert!(seen.metadata.uid.is_some());

    let pods: Api<Pod> = Api::namespaced(e.admin.clone(), &e.ns);
    pods.create(&PostParams::default(), &pod("before", &e.node, json!({})))
        .await?;
    // A pod bound to another node never shows.
    pods.create(
        &PostParams::default(),
        &pod("elsewhere", "krs-t-apipods-nobody", json!({})),
    )
    .await?;

    // A fresh API server's watch cache may still be initializing: it then answers a watch
    // with 429 ("storage is (re)initializing"), which a reflector retries without relisting.
    // The test needs the 410 of a ready cache.
    let probe = pod_lister_watcher(e.node_clients.main.clone(), &e.node);
    eventually(
        "the watch cache to answer 410 for resource version 1",
        || async {
            let first = match probe.watch("1", 5).await {
                Err(e) => Some(e),
                Ok(mut stream) => match futures::StreamExt::next(&mut stream).await {
                    Some(Err(e) | Ok(WatchEvent::Error(e))) => Some(e),
                    _ => None,
                },
            };
            first.filter(ApiError::is_expired).map(|_| ())
        },
    )
    .await;
    let lw = Arc::new(FirstWatchTooOld {
        inner: pod_lister_watcher(e.node_clients.main.clone(), &e.node),
        watches: AtomicUsize::new(0),
        lists: Mutex::new(Vec::new()),
        first_watch_error: Arc::new(Mutex::new(None)),
    });
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(run_source_apiserver(
        ArcLw(lw.clone()),
        lister.clone(),
        tx,
        cancel.clone(),
    ));
    let first = snapshot(&mut rx, "the first list", |_| true).await;
    assert_eq!(names(&first), ["before"], "only the pods bound to the node");

    // The first watch got 410: the reflector relists (from the list's version), then
    // watches from there; a pod created afterwards arrives in a full snapshot.
    eventually("a relist after the 410", || async {
        (lw.lists.lock().unwrap().len() >= 2).then_some(())
    })
    .await;
    let first_error = lw.first_watch_error.lock().unwrap().clone();
    assert!(
        first_error.as_ref().is_some_and(ApiError::is_expired),
        "the API server's watch cache answers 410 for resource version 1: {first_error:?}"
    );
    let lists = lw.lists.lock().unwrap().clone();
    assert_eq!(
        lists[0], "0",
        "the first list may come from the watch cache"
    );
    assert!(
        !lists[1].is_empty() && lists[1] != "0",
        "the relist asks for at least the last version: {lists:?}"
    );
    pods.create(&PostParams::default(), &pod("after", &e.node, json!({})))
        .await?;
    snapshot(&mut rx, "both pods", |u| names(u) == ["after", "before"]).await;
    assert!(lw.watches.load(Ordering::SeqCst) >= 2);

    pods.delete("before", &DeleteParams::default().grace_period(0))
        .await?;
    snapshot(&mut rx, "the deletion", |u| names(u) == ["after"]).await;
    cancel.cancel();
    Ok(())
}

/// `Arc<L>` as a lister-watcher (the test keeps a handle on the wrapper's counters).
struct ArcLw<L>(Arc<L>);

#[async_trait]
impl<L: ListerWatcher<Pod>> ListerWatcher<Pod> for ArcLw<L> {
    async fn list(&self, rv: &str) -> Result<ObjectList<Pod>, ApiError> {
        self.0.list(rv).await
    }

    async fn watch(
        &self,
        rv: &str,
        timeout_secs: u32,
    ) -> Result<BoxStream<'static, Result<WatchEvent<Pod>, ApiError>>, ApiError> {
        self.0.watch(rv, timeout_secs).await
    }
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test]
async fn mirror_pods_are_created_owned_by_the_node_and_deleted_by_uid() -> TestResult {
    let e = env("apipods", "mirror").await?;
    let cancel = CancellationToken::new();
    let (lister, node) = start_node_informer(&e, &cancel).await;
    let node_uid = node.metadata.uid.clone().unwrap();

    // NodeRestriction: the node identity may not create an ordinary pod.
    let as_node: Api<Pod> = Api::namespaced(e.node_clients.main.clone(), &e.ns);
    let refused = as_node
        .create(&PostParams::default(), &pod("plain", &e.node, json!({})))
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403),
        "{refused:?}"
    );

    let client = KubeMirrorClient::new(e.node_clients.main.clone(), lister.clone());
    let mut static_pod = pod(
        "static-web",
        &e.node,
        json!({"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": "h1"}),
    );
    static_pod.metadata.namespace = Some(e.ns.clone());
    client.create_mirror_pod(&static_pod).await?;

    let pods: Api<Pod> = Api::namespaced(e.admin.clone(), &e.ns);
    let mirror = pods.get("static-web").await?;
    assert_eq!(
        annotation(&mirror, "kubernetes.io/config.mirror"),
        Some("h1")
    );
    let owners = mirror.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].kind, "Node");
    assert_eq!(owners[0].name, e.node);
    assert_eq!(owners[0].uid, node_uid);
    assert_eq!(owners[0].controller, Some(true));
    assert!(kubelet_apipods::is_mirror_pod_of(&mirror, &static_pod));

    // A second create of the same mirror pod fails (upstream's client does too).
    assert!(client.create_mirror_pod(&static_pod).await.is_err());

    let full_name = format!("static-web_{}", e.ns);
    // Another UID: nothing is deleted (a newer mirror pod of the same name is safe).
    assert!(
        !client
            .delete_mirror_pod(&full_name, Some("00000000-0000-0000-0000-000000000000"))
            .await?
    );
    assert!(pods.get_opt("static-web").await?.is_some());
    let uid = mirror.metadata.uid.clone().unwrap();
    assert!(client.delete_mirror_pod(&full_name, Some(&uid)).await?);
    eventually("the mirror pod to be deleted", || async {
        matches!(pods.get_opt("static-web").await, Ok(None)).then_some(())
    })
    .await;
    // Deleting what is gone is no error.
    assert!(!client.delete_mirror_pod(&full_name, None).await?);
    cancel.cancel();
    Ok(())
}

fn static_manifest(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  \
         terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox:1.36\n    \
         command: [\"sleep\", \"1d\"]\n"
    )
}

#[cfg_attr(krs_skip_cluster, ignore = "KRS_SKIP_CLUSTER_TESTS=1")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_mirrors_static_pods_and_admits_api_pods_against_the_node() -> TestResult {
    let e = env("apipods", "kl").await?;
    let (admin, node, ns) = (e.admin.clone(), e.node.clone(), e.ns.clone());
    // The Node as registration would leave it: allocatable set (admission reads it).
    let nodes: Api<Node> = Api::all(admin.clone());
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

    let mut k = TestKubelet::new("").await;
    k.server.flags.hostname_override = node.clone();
    k.clients = Some(e.node_clients.clone());
    k.start().await;

    // A static pod runs and gets its mirror pod.
    k.write_manifest("web.yaml", &static_manifest("web", &ns));
    let pods: Api<Pod> = Api::namespaced(admin.clone(), &ns);
    let mirror_name = format!("web-{node}");
    let mirror = eventually("the mirror pod", || async {
        pods.get_opt(&mirror_name).await.ok().flatten()
    })
    .await;
    let hash = annotation(&mirror, "kubernetes.io/config.mirror")
        .expect("mirror annotation")
        .to_string();
    assert_eq!(
        annotation(&mirror, "kubernetes.io/config.hash"),
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
        annotation(&again, "kubernetes.io/config.mirror"),
        Some(hash.as_str())
    );
    assert_eq!(
        k.sandboxes(&hash).len(),
        1,
        "the static pod was not started twice"
    );
    // The status manager writes the static pod's status to its mirror pod (the mirror
    // pod's UID translates to the static pod's).
    eventually("the static pod's status on the mirror pod", || async {
        pods.get_opt(&mirror_name)
            .await
            .ok()
            .flatten()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await;

    // A pod bound to the node through the API runs.
    let created = pods
        .create(&PostParams::default(), &pod("api-ok", &node, json!({})))
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
        .create(
            &PostParams::default(),
            &pod("api-tainted", &node, json!({})),
        )
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
