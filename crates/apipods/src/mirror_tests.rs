//! Mirror pod decisions (upstream `TestSyncPodsDeletesWhenSourcesAreReadyPerQOS`-style
//! cases of `kubelet_test.go`: create when missing, recreate when the hash differs or the
//! mirror is being deleted, nothing without a Node).

#![allow(clippy::unwrap_used)]

use k8s_openapi::api::core::v1::{Node, Pod};
use kubelet_admission::{NodeGetter, NodeInfo};
use serde_json::json;

use super::*;
use crate::node::{NodeInfoGetter, NodeLister};

fn static_pod(hash: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "etcd-n1", "namespace": "kube-system", "uid": hash,
            "annotations": {"kubernetes.io/config.source": "file", "kubernetes.io/config.hash": hash}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}
    }))
    .unwrap()
}

fn mirror(hash: &str, uid: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "etcd-n1", "namespace": "kube-system", "uid": uid,
            "annotations": {"kubernetes.io/config.source": "api", "kubernetes.io/config.mirror": hash}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}
    }))
    .unwrap()
}

fn node(deleting: bool) -> NodeLister {
    let lister = NodeLister::new("n1");
    let mut n: Node =
        serde_json::from_value(json!({"metadata": {"name": "n1", "uid": "node-uid"}})).unwrap();
    if deleting {
        n.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
    }
    lister.set_node(Some(n));
    lister
}

fn create(hash: &str) -> MirrorCall {
    MirrorCall::Create {
        full_name: "etcd-n1_kube-system".into(),
        hash: hash.into(),
    }
}

fn delete(uid: &str) -> MirrorCall {
    MirrorCall::Delete {
        full_name: "etcd-n1_kube-system".into(),
        uid: Some(uid.into()),
    }
}

async fn reconcile(node: &NodeLister, pod: &Pod, m: Option<&Pod>) -> Vec<MirrorCall> {
    let client = FakeMirrorClient::default();
    try_reconcile_mirror_pod(&client, node, pod, m).await;
    client.calls()
}

#[tokio::test]
async fn a_missing_mirror_pod_is_created() {
    assert_eq!(
        reconcile(&node(false), &static_pod("h1"), None).await,
        [create("h1")]
    );
}

#[tokio::test]
async fn a_matching_mirror_pod_is_left_alone() {
    let m = mirror("h1", "m-uid");
    assert!(
        reconcile(&node(false), &static_pod("h1"), Some(&m))
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_mirror_pod_with_another_hash_is_deleted_and_recreated() {
    let m = mirror("old", "m-uid");
    assert_eq!(
        reconcile(&node(false), &static_pod("h2"), Some(&m)).await,
        [delete("m-uid"), create("h2")]
    );
}

#[tokio::test]
async fn a_mirror_pod_being_deleted_is_deleted_and_recreated() {
    let mut m = mirror("h1", "m-uid");
    m.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    assert_eq!(
        reconcile(&node(false), &static_pod("h1"), Some(&m)).await,
        [delete("m-uid"), create("h1")]
    );
}

#[tokio::test]
async fn no_mirror_pod_without_a_node_or_for_a_node_being_deleted() {
    let unregistered = NodeLister::new("n1");
    assert!(
        reconcile(&unregistered, &static_pod("h1"), None)
            .await
            .is_empty()
    );
    assert!(
        reconcile(&node(true), &static_pod("h1"), None)
            .await
            .is_empty()
    );
    // A stale mirror pod is still deleted without a node.
    let m = mirror("old", "m-uid");
    assert_eq!(
        reconcile(&unregistered, &static_pod("h2"), Some(&m)).await,
        [delete("m-uid")]
    );
}

#[tokio::test]
async fn api_pods_get_no_mirror_pod() {
    let mut p = static_pod("h1");
    p.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("kubernetes.io/config.source".into(), "api".into());
    assert!(reconcile(&node(false), &p, None).await.is_empty());
}

#[test]
fn the_mirror_pod_is_annotated_and_owned_by_the_node() {
    let m = mirror_pod_for(&static_pod("h1"), "n1", "node-uid");
    let a = m.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        a.get("kubernetes.io/config.mirror").map(String::as_str),
        Some("h1")
    );
    assert_eq!(
        a.get("kubernetes.io/config.hash").map(String::as_str),
        Some("h1")
    );
    let owners = m.metadata.owner_references.as_ref().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (
            owners[0].api_version.as_str(),
            owners[0].kind.as_str(),
            owners[0].name.as_str(),
            owners[0].uid.as_str(),
            owners[0].controller
        ),
        ("v1", "Node", "n1", "node-uid", Some(true))
    );
    assert!(is_mirror_pod_of(&m, &static_pod("h1")));
    assert!(!is_mirror_pod_of(&m, &static_pod("h2")));
}

#[test]
fn full_names_parse_as_upstream() {
    assert_eq!(parse_pod_full_name("a_b").unwrap(), ("a", "b"));
    for bad in ["a", "a_", "_b", "a_b_c", ""] {
        assert_eq!(
            parse_pod_full_name(bad),
            Err(MirrorError::FullName(bad.into())),
            "{bad:?}"
        );
    }
}

#[test]
fn admission_reads_the_node_object_once_it_exists() {
    let lister = NodeLister::new("n1");
    let initial = NodeInfo {
        name: "n1".into(),
        allocatable_pods: 110,
        ..NodeInfo::default()
    };
    let getter = NodeInfoGetter::new(lister.clone(), initial.clone());
    assert_eq!(getter.get_node_any_way(), initial, "before the Node exists");
    let n: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1", "uid": "u"},
        "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]},
        "status": {"allocatable": {"pods": "7"}}
    }))
    .unwrap();
    lister.set_node(Some(n));
    let info = getter.get_node_any_way();
    assert_eq!(info.allocatable_pods, 7);
    assert_eq!(info.taints.len(), 1);
    // Another node's object is never taken for ours.
    let other: Node = serde_json::from_value(json!({"metadata": {"name": "n2"}})).unwrap();
    lister.set_node(Some(other));
    assert_eq!(getter.get_node_any_way(), initial);
}
