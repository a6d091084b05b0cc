//! Mirror pods: the API server's read-only copies of static pods
//! (`pkg/kubelet/pod/mirror_client.go`, `pod_manager.go` `IsMirrorPodOf`, and `kubelet.go`
//! `tryReconcileMirrorPods`).
//!
//! A mirror pod carries the static pod's annotations plus `kubernetes.io/config.mirror` =
//! the static pod's config hash, and a controller owner reference to this node's Node
//! object (NodeRestriction lets a node create mirror pods only so). It is deleted with
//! grace period 0 and a UID precondition, so a newer mirror pod of the same name is never
//! deleted by mistake.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kubelet_container::kubetypes::{
    CONFIG_HASH_ANNOTATION_KEY, CONFIG_MIRROR_ANNOTATION_KEY, annotation, is_static_pod,
    pod_full_name,
};

use crate::error::ApiError;
use crate::node::NodeLister;

/// Why a mirror pod call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    /// The Node object (for the owner reference) is not known, or has no UID.
    #[error("failed to get node UID: {0}")]
    NodeUid(String),
    /// Not a `name_namespace` full name (upstream `ParsePodFullName`).
    #[error("failed to parse the pod full name {0:?}")]
    FullName(String),
    /// The API call failed.
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// Creates and deletes mirror pods (upstream `MirrorClient`).
#[async_trait]
pub trait MirrorClient: Send + Sync + std::fmt::Debug {
    /// Creates the mirror pod of static pod `pod`.
    async fn create_mirror_pod(&self, pod: &Pod) -> Result<(), MirrorError>;

    /// Deletes the mirror pod `pod_full_name` (`name_namespace`), only if its UID is `uid`
    /// when given; `Ok(false)` when it did not exist, had another UID, or the call failed
    /// (logged), as upstream; an error only for an unparsable name.
    async fn delete_mirror_pod(
        &self,
        pod_full_name: &str,
        uid: Option<&str>,
    ) -> Result<bool, MirrorError>;
}

/// Upstream `ParsePodFullName`: `(name, namespace)`.
pub fn parse_pod_full_name(full_name: &str) -> Result<(&str, &str), MirrorError> {
    let mut parts = full_name.split('_');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(ns), None) if !name.is_empty() && !ns.is_empty() => Ok((name, ns)),
        _ => Err(MirrorError::FullName(full_name.to_string())),
    }
}

/// The static pod's hash (upstream `getPodHash`: its `kubernetes.io/config.hash`).
pub fn get_pod_hash(pod: &Pod) -> &str {
    annotation(pod, CONFIG_HASH_ANNOTATION_KEY).unwrap_or_default()
}

/// Upstream `IsMirrorPodOf`: same name and namespace, and the mirror's hash is the pod's.
pub fn is_mirror_pod_of(mirror: &Pod, pod: &Pod) -> bool {
    if pod.metadata.name != mirror.metadata.name
        || pod.metadata.namespace != mirror.metadata.namespace
    {
        return false;
    }
    annotation(mirror, CONFIG_MIRROR_ANNOTATION_KEY).is_some_and(|h| h == get_pod_hash(pod))
}

/// The mirror pod to create for `pod` (upstream `CreateMirrorPod`'s copy): its annotations
/// plus the mirror annotation, and the Node as controlling owner.
pub fn mirror_pod_for(pod: &Pod, node_name: &str, node_uid: &str) -> Pod {
    let mut copy = pod.clone();
    let mut annotations: BTreeMap<String, String> =
        copy.metadata.annotations.take().unwrap_or_default();
    annotations.insert(
        CONFIG_MIRROR_ANNOTATION_KEY.to_string(),
        get_pod_hash(pod).to_string(),
    );
    copy.metadata.annotations = Some(annotations);
    copy.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node_name.to_string(),
        uid: node_uid.to_string(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    copy
}

/// The kube-rs mirror client (upstream `basicMirrorClient`), on the main client.
#[derive(Clone)]
pub struct KubeMirrorClient {
    client: kube::Client,
    node: NodeLister,
}

impl std::fmt::Debug for KubeMirrorClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeMirrorClient")
            .field("node", &self.node.node_name())
            .finish()
    }
}

impl KubeMirrorClient {
    /// A client creating mirror pods owned by the Node `node` knows.
    pub fn new(client: kube::Client, node: NodeLister) -> Self {
        Self { client, node }
    }

    fn node_uid(&self) -> Result<String, MirrorError> {
        let name = self.node.node_name();
        let node = self
            .node
            .get()
            .ok_or_else(|| MirrorError::NodeUid(format!("node \"{name}\" not found")))?;
        match node.metadata.uid.as_deref() {
            Some(uid) if !uid.is_empty() => Ok(uid.to_string()),
            _ => Err(MirrorError::NodeUid(format!("UID unset for node {name}"))),
        }
    }
}

#[async_trait]
impl MirrorClient for KubeMirrorClient {
    async fn create_mirror_pod(&self, pod: &Pod) -> Result<(), MirrorError> {
        let uid = self.node_uid()?;
        let mirror = mirror_pod_for(pod, self.node.node_name(), &uid);
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        // Upstream's "already exists with the same hash" check looks at the empty object
        // client-go returns with the error, so an existing pod is always an error.
        api.create(&PostParams::default(), &mirror)
            .await
            .map_err(ApiError::from)?;
        Ok(())
    }

    async fn delete_mirror_pod(
        &self,
        pod_full_name: &str,
        uid: Option<&str>,
    ) -> Result<bool, MirrorError> {
        let (name, namespace) = parse_pod_full_name(pod_full_name).inspect_err(|e| {
            tracing::error!(err = %e, pod_full_name, "Failed to parse a pod full name");
        })?;
        tracing::debug!(pod = %format!("{namespace}/{name}"), pod_uid = uid.unwrap_or_default(), "Deleting a mirror pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: uid.map(|u| Preconditions {
                uid: Some(u.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await.map_err(ApiError::from) {
            Ok(_) => Ok(true),
            Err(e) => {
                // A missing pod or another UID is no failure; other errors are only logged,
                // as upstream does.
                if !(e.is_not_found() || e.is_conflict()) {
                    tracing::error!(err = %e, pod = %format!("{namespace}/{name}"), "Failed deleting a mirror pod");
                }
                Ok(false)
            }
        }
    }
}

/// A call [`FakeMirrorClient`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MirrorCall {
    /// `create_mirror_pod` for this full name with this mirror hash.
    Create {
        /// `name_namespace`.
        full_name: String,
        /// The `kubernetes.io/config.mirror` value.
        hash: String,
    },
    /// `delete_mirror_pod` of this full name with this UID precondition.
    Delete {
        /// `name_namespace`.
        full_name: String,
        /// The UID precondition.
        uid: Option<String>,
    },
}

/// A recording mirror client (upstream `podtest.FakeMirrorClient`): every create
/// succeeds, every delete deletes.
#[derive(Debug, Default)]
pub struct FakeMirrorClient {
    calls: Mutex<Vec<MirrorCall>>,
}

impl FakeMirrorClient {
    /// Every call so far.
    pub fn calls(&self) -> Vec<MirrorCall> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, c: MirrorCall) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(c);
    }
}

#[async_trait]
impl MirrorClient for FakeMirrorClient {
    async fn create_mirror_pod(&self, pod: &Pod) -> Result<(), MirrorError> {
        self.record(MirrorCall::Create {
            full_name: pod_full_name(pod),
            hash: get_pod_hash(pod).to_string(),
        });
        Ok(())
    }

    async fn delete_mirror_pod(
        &self,
        pod_full_name: &str,
        uid: Option<&str>,
    ) -> Result<bool, MirrorError> {
        parse_pod_full_name(pod_full_name)?;
        self.record(MirrorCall::Delete {
            full_name: pod_full_name.to_string(),
            uid: uid.map(str::to_string),
        });
        Ok(true)
    }
}

/// Upstream `tryReconcileMirrorPods`: makes sure the static pod `static_pod` has a mirror
/// pod matching it. A mirror pod being deleted or with another hash is deleted (UID
/// precondition) and created again; a missing one is created, but only while the Node
/// object exists and is not being deleted. Errors are logged, never returned.
pub async fn try_reconcile_mirror_pod(
    client: &dyn MirrorClient,
    node: &NodeLister,
    static_pod: &Pod,
    mirror_pod: Option<&Pod>,
) {
    if !is_static_pod(static_pod) {
        return;
    }
    let kobj = |p: &Pod| {
        format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default()
        )
    };
    let mut deleted = false;
    if let Some(mirror) = mirror_pod
        && (mirror.metadata.deletion_timestamp.is_some() || !is_mirror_pod_of(mirror, static_pod))
    {
        let uid = mirror.metadata.uid.as_deref().unwrap_or_default();
        tracing::info!(pod = %kobj(mirror), pod_uid = uid, "Trying to delete pod");
        match client
            .delete_mirror_pod(&pod_full_name(static_pod), Some(uid))
            .await
        {
            Err(e) => tracing::error!(err = %e, pod = %kobj(mirror), "Failed deleting mirror pod"),
            Ok(true) => {
                deleted = true;
                tracing::info!(pod = %kobj(mirror), "Deleted mirror pod as it didn't match the static Pod");
            }
            Ok(false) => {}
        }
    }
    if mirror_pod.is_some() && !deleted {
        return;
    }
    match node.get() {
        None => tracing::error!(
            err = %format!("node \"{}\" not found", node.node_name()),
            node = node.node_name(),
            "No need to create a mirror pod, since failed to get node info from the cluster"
        ),
        Some(n) if n.metadata.deletion_timestamp.is_some() => tracing::info!(
            node = node.node_name(),
            "No need to create a mirror pod, since node has been removed from the cluster"
        ),
        Some(_) => {
            tracing::info!(pod = %kobj(static_pod), "Creating a mirror pod for static pod");
            if let Err(e) = client.create_mirror_pod(static_pod).await {
                tracing::error!(err = %e, pod = %kobj(static_pod), "Failed creating a mirror pod");
            }
        }
    }
}

#[cfg(test)]
#[path = "mirror_tests.rs"]
mod tests;
