//! Labels and annotations the kubelet puts on CRI sandboxes and containers, and
//! reading them back (upstream `pkg/kubelet/kuberuntime/labels.go` and
//! `k8s.io/kubelet/pkg/types/labels.go`).
//!
//! After a kubelet restart all state is rebuilt from these: which pod a container
//! belongs to (labels), its spec hash and restart count (annotations).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, ContainerPort, LifecycleHandler, Pod};
use kubelet_container::hash_container;

use crate::sandbox::pod_identity;

/// Pod name label (`types.KubernetesPodNameLabel`).
pub const POD_NAME_LABEL: &str = "io.kubernetes.pod.name";
/// Pod namespace label.
pub const POD_NAMESPACE_LABEL: &str = "io.kubernetes.pod.namespace";
/// Pod UID label.
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
/// Container name label.
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";

const POD_DELETION_GRACE_PERIOD: &str = "io.kubernetes.pod.deletionGracePeriod";
const POD_TERMINATION_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
/// Container spec hash annotation (hex).
pub const CONTAINER_HASH: &str = "io.kubernetes.container.hash";
/// Restart count annotation (decimal).
pub const CONTAINER_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
const TERMINATION_MESSAGE_PATH: &str = "io.kubernetes.container.terminationMessagePath";
const TERMINATION_MESSAGE_POLICY: &str = "io.kubernetes.container.terminationMessagePolicy";
const PRE_STOP_HANDLER: &str = "io.kubernetes.container.preStopHandler";
const CONTAINER_PORTS: &str = "io.kubernetes.container.ports";

/// Pod identity read from sandbox or container labels (`labeledContainerInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabeledContainerInfo {
    /// Container name (empty on sandboxes).
    pub container_name: String,
    /// Pod name.
    pub pod_name: String,
    /// Pod namespace.
    pub pod_namespace: String,
    /// Pod UID.
    pub pod_uid: String,
}

/// What the kubelet recorded on a container (`annotatedContainerInfo`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnnotatedContainerInfo {
    /// Spec hash at creation (0 when missing or unparsable).
    pub hash: u64,
    /// Restart count (0 when missing or unparsable).
    pub restart_count: i32,
    /// `metadata.deletionGracePeriodSeconds` at creation.
    pub pod_deletion_grace_period: Option<i64>,
    /// `spec.terminationGracePeriodSeconds` at creation.
    pub pod_termination_grace_period: Option<i64>,
    /// `terminationMessagePath`.
    pub termination_message_path: String,
    /// `terminationMessagePolicy`.
    pub termination_message_policy: String,
    /// The preStop handler, so a container can be stopped properly without its pod.
    pub pre_stop_handler: Option<LifecycleHandler>,
    /// Declared ports.
    pub container_ports: Vec<ContainerPort>,
}

fn pod_identity_labels(pod: &Pod) -> [(&'static str, String); 3] {
    let (namespace, name, uid) = pod_identity(pod);
    [
        (POD_NAME_LABEL, name.to_owned()),
        (POD_NAMESPACE_LABEL, namespace.to_owned()),
        (POD_UID_LABEL, uid.to_owned()),
    ]
}

/// Sandbox labels: the pod's labels plus its identity (`newPodLabels`).
pub fn new_pod_labels(pod: &Pod) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = pod
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    labels.extend(pod_identity_labels(pod).map(|(k, v)| (k.to_string(), v)));
    labels
}

/// Sandbox annotations: the pod's annotations (`newPodAnnotations`).
pub fn new_pod_annotations(pod: &Pod) -> HashMap<String, String> {
    pod.metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Container labels: pod identity plus container name (`newContainerLabels`).
pub fn new_container_labels(container: &Container, pod: &Pod) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = pod_identity_labels(pod)
        .map(|(k, v)| (k.to_string(), v))
        .into_iter()
        .collect();
    labels.insert(CONTAINER_NAME_LABEL.to_string(), container.name.clone());
    labels
}

/// Container annotations (`newContainerAnnotations`); `extra` are runtime-helper
/// annotations (device plugins), which the kubelet's own keys override.
pub fn new_container_annotations(
    container: &Container,
    pod: &Pod,
    restart_count: i32,
    extra: &[(String, String)],
) -> HashMap<String, String> {
    let mut a: HashMap<String, String> = extra.iter().cloned().collect();
    let mut put = |k: &str, v: String| {
        a.insert(k.to_string(), v);
    };
    put(CONTAINER_HASH, format!("{:x}", hash_container(container)));
    put(CONTAINER_RESTART_COUNT, restart_count.to_string());
    put(
        TERMINATION_MESSAGE_PATH,
        container
            .termination_message_path
            .clone()
            .unwrap_or_default(),
    );
    put(
        TERMINATION_MESSAGE_POLICY,
        container
            .termination_message_policy
            .clone()
            .unwrap_or_default(),
    );
    if let Some(g) = pod.metadata.deletion_grace_period_seconds {
        put(POD_DELETION_GRACE_PERIOD, g.to_string());
    }
    if let Some(g) = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
    {
        put(POD_TERMINATION_GRACE_PERIOD, g.to_string());
    }
    let pre_stop = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref());
    if let Some(json) = pre_stop.and_then(|h| serde_json::to_string(h).ok()) {
        put(PRE_STOP_HANDLER, json);
    }
    let ports = container.ports.as_ref().filter(|p| !p.is_empty());
    if let Some(json) = ports.and_then(|p| serde_json::to_string(p).ok()) {
        put(CONTAINER_PORTS, json);
    }
    a
}

fn label(labels: &HashMap<String, String>, key: &str) -> String {
    labels.get(key).cloned().unwrap_or_default()
}

/// Reads pod identity and container name (`getContainerInfoFromLabels`).
pub fn container_info_from_labels(labels: &HashMap<String, String>) -> LabeledContainerInfo {
    LabeledContainerInfo {
        container_name: label(labels, CONTAINER_NAME_LABEL),
        pod_name: label(labels, POD_NAME_LABEL),
        pod_namespace: label(labels, POD_NAMESPACE_LABEL),
        pod_uid: label(labels, POD_UID_LABEL),
    }
}

/// Reads what the kubelet recorded (`getContainerInfoFromAnnotations`). Malformed values
/// are logged and treated as missing, like upstream.
pub fn container_info_from_annotations(a: &HashMap<String, String>) -> AnnotatedContainerInfo {
    fn parsed<T: std::str::FromStr>(a: &HashMap<String, String>, key: &str) -> Option<T> {
        let raw = a.get(key)?;
        let v = raw.parse().ok();
        if v.is_none() {
            tracing::warn!(annotation = key, value = %raw, "Unable to parse container annotation");
        }
        v
    }
    fn json<T: serde::de::DeserializeOwned>(a: &HashMap<String, String>, key: &str) -> Option<T> {
        let raw = a.get(key)?;
        let v = serde_json::from_str(raw).ok();
        if v.is_none() {
            tracing::warn!(annotation = key, "Unable to decode container annotation");
        }
        v
    }
    AnnotatedContainerInfo {
        hash: a
            .get(CONTAINER_HASH)
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or(0),
        restart_count: parsed(a, CONTAINER_RESTART_COUNT).unwrap_or(0),
        pod_deletion_grace_period: parsed(a, POD_DELETION_GRACE_PERIOD),
        pod_termination_grace_period: parsed(a, POD_TERMINATION_GRACE_PERIOD),
        termination_message_path: label(a, TERMINATION_MESSAGE_PATH),
        termination_message_policy: label(a, TERMINATION_MESSAGE_POLICY),
        pre_stop_handler: json(a, PRE_STOP_HANDLER),
        container_ports: json(a, CONTAINER_PORTS).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{ExecAction, Lifecycle, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod() -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some("uid-1".into()),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                annotations: Some([("note".to_string(), "x".to_string())].into()),
                deletion_grace_period_seconds: Some(5),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                termination_grace_period_seconds: Some(30),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn sandbox_labels_keep_pod_labels_and_identity() {
        let labels = new_pod_labels(&pod());
        assert_eq!(labels["app"], "web");
        assert_eq!(labels[POD_UID_LABEL], "uid-1");
        assert_eq!(new_pod_annotations(&pod())["note"], "x");
    }

    #[test]
    fn container_annotations_round_trip() {
        let c = Container {
            name: "app".into(),
            image: Some("busybox".into()),
            termination_message_path: Some("/dev/termination-log".into()),
            termination_message_policy: Some("File".into()),
            ports: Some(vec![ContainerPort {
                container_port: 80,
                ..ContainerPort::default()
            }]),
            lifecycle: Some(Lifecycle {
                pre_stop: Some(LifecycleHandler {
                    exec: Some(ExecAction {
                        command: Some(vec!["true".into()]),
                    }),
                    ..LifecycleHandler::default()
                }),
                ..Lifecycle::default()
            }),
            ..Container::default()
        };
        let extra = [(CONTAINER_RESTART_COUNT.to_string(), "99".to_string())];
        let a = new_container_annotations(&c, &pod(), 3, &extra);
        let info = container_info_from_annotations(&a);
        assert_eq!(info.hash, hash_container(&c));
        assert_eq!(
            info.restart_count, 3,
            "kubelet keys override extra annotations"
        );
        assert_eq!(info.pod_deletion_grace_period, Some(5));
        assert_eq!(info.pod_termination_grace_period, Some(30));
        assert_eq!(info.termination_message_path, "/dev/termination-log");
        assert_eq!(info.termination_message_policy, "File");
        assert_eq!(info.container_ports[0].container_port, 80);
        assert!(info.pre_stop_handler.unwrap().exec.is_some());

        let labels = new_container_labels(&c, &pod());
        let l = container_info_from_labels(&labels);
        assert_eq!(
            l,
            LabeledContainerInfo {
                container_name: "app".into(),
                pod_name: "web".into(),
                pod_namespace: "default".into(),
                pod_uid: "uid-1".into(),
            }
        );
    }

    #[test]
    fn malformed_annotations_read_as_missing() {
        let a: HashMap<String, String> = [
            (CONTAINER_HASH.to_string(), "zz".to_string()),
            (CONTAINER_RESTART_COUNT.to_string(), "x".to_string()),
            (CONTAINER_PORTS.to_string(), "[".to_string()),
        ]
        .into();
        let info = container_info_from_annotations(&a);
        assert_eq!((info.hash, info.restart_count), (0, 0));
        assert!(info.container_ports.is_empty());
    }
}
