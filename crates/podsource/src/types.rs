//! Pod update types and well-known names (mirrors `pkg/kubelet/types/pod_update.go`).

use k8s_openapi::api::core::v1::Pod;

/// All sources together (`kubetypes.AllSource`).
pub const ALL_SOURCE: &str = "*";

// Source names and config annotations are upstream `pkg/kubelet/types`,
// shared through `kubelet-container`.
pub use kubelet_container::kubetypes::{
    API_SERVER_SOURCE, CONFIG_FIRST_SEEN_ANNOTATION_KEY, CONFIG_HASH_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY, CONFIG_SOURCE_ANNOTATION_KEY, FILE_SOURCE, HTTP_SOURCE,
    pod_full_name,
};

/// What a [`PodUpdate`] asks the kubelet to do (`kubetypes.PodOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodOperation {
    /// Pods new to the kubelet.
    Add,
    /// Pods whose spec, labels, annotations or deletion fields changed.
    Update,
    /// Pods the source deleted gracefully (a deletion timestamp appeared).
    Delete,
    /// Pods that disappeared from their source: stop them now.
    Remove,
    /// Pods whose status changed but nothing else did.
    Reconcile,
}

impl PodOperation {
    /// The upstream name of the operation (`ADD`, `UPDATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PodOperation::Add => "ADD",
            PodOperation::Update => "UPDATE",
            PodOperation::Delete => "DELETE",
            PodOperation::Remove => "REMOVE",
            PodOperation::Reconcile => "RECONCILE",
        }
    }
}

impl std::fmt::Display for PodOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change delivered to the kubelet's sync loop (`kubetypes.PodUpdate`).
#[derive(Debug, Clone, PartialEq)]
pub struct PodUpdate {
    pub op: PodOperation,
    pub pods: Vec<Pod>,
    /// The source the pods came from (`file`, `http`, `api`).
    pub source: String,
}

/// A full snapshot of the pods one source currently provides (upstream `sourceUpdate`).
///
/// Every source sends complete snapshots; the merger (`PodConfig`) turns consecutive
/// snapshots into incremental [`PodUpdate`]s.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceUpdate {
    pub pods: Vec<Pod>,
}

/// `namespace/name` of a pod, as upstream's `cache.MetaNamespaceKeyFunc`.
pub fn pod_key(pod: &Pod) -> String {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    }
}
