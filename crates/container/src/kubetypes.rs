//! Kubelet-internal pod types and annotations (upstream `pkg/kubelet/types`).

use k8s_openapi::api::core::v1::Pod as ApiPod;

/// Annotation holding the config source of a pod (`file`, `http`, `api`).
pub const CONFIG_SOURCE_ANNOTATION_KEY: &str = "kubernetes.io/config.source";
/// Annotation holding the config hash (the UID for static pods).
pub const CONFIG_HASH_ANNOTATION_KEY: &str = "kubernetes.io/config.hash";
/// Annotation marking a mirror pod; value is the static pod's hash.
pub const CONFIG_MIRROR_ANNOTATION_KEY: &str = "kubernetes.io/config.mirror";
/// Annotation with the time the kubelet first saw the pod.
pub const CONFIG_FIRST_SEEN_ANNOTATION_KEY: &str = "kubernetes.io/config.seen";
/// Source name of the apiserver pod source.
pub const API_SERVER_SOURCE: &str = "api";
/// Source name of the static pod file source.
pub const FILE_SOURCE: &str = "file";
/// Source name of the static pod URL source.
pub const HTTP_SOURCE: &str = "http";

/// Why a pod is being synced (upstream `SyncPodType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyncPodType {
    /// Periodic or event-driven resync of a known pod.
    #[default]
    Sync,
    /// The pod spec changed.
    Update,
    /// The pod was seen for the first time.
    Create,
    /// The pod must be stopped (eviction, deletion, orphaned runtime pod).
    Kill,
}

impl SyncPodType {
    /// Upstream string value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Update => "update",
            Self::Create => "create",
            Self::Kill => "kill",
        }
    }
}

/// The value of annotation `key` of `pod`.
pub fn annotation<'a>(pod: &'a ApiPod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Config source of the pod (upstream `GetPodSource`), if annotated.
pub fn pod_source(pod: &ApiPod) -> Option<&str> {
    annotation(pod, CONFIG_SOURCE_ANNOTATION_KEY)
}

/// True for pods from a non-apiserver source (upstream `IsStaticPod`).
pub fn is_static_pod(pod: &ApiPod) -> bool {
    pod_source(pod).is_some_and(|s| s != API_SERVER_SOURCE)
}

/// True for mirror pods (upstream `IsMirrorPod`).
pub fn is_mirror_pod(pod: &ApiPod) -> bool {
    annotation(pod, CONFIG_MIRROR_ANNOTATION_KEY).is_some()
}

/// `name_namespace` (upstream `kubecontainer.GetPodFullName`).
pub fn pod_full_name(pod: &ApiPod) -> String {
    format!(
        "{}_{}",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.namespace.as_deref().unwrap_or_default()
    )
}

/// The pod UID, empty when missing.
pub fn pod_uid(pod: &ApiPod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(annotations: &[(&str, &str)]) -> ApiPod {
        ApiPod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..ApiPod::default()
        }
    }

    #[test]
    fn static_and_mirror_detection() {
        assert!(is_static_pod(&pod(&[(
            CONFIG_SOURCE_ANNOTATION_KEY,
            FILE_SOURCE
        )])));
        assert!(!is_static_pod(&pod(&[(
            CONFIG_SOURCE_ANNOTATION_KEY,
            API_SERVER_SOURCE
        )])));
        assert!(!is_static_pod(&pod(&[])));
        assert!(is_mirror_pod(&pod(&[(CONFIG_MIRROR_ANNOTATION_KEY, "h")])));
        assert_eq!(pod_full_name(&pod(&[])), "web_ns");
    }
}
