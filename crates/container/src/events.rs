//! Kubernetes events as the kubelet emits them: the recorder interface every subsystem calls
//! (client-go `tools/record.EventRecorder`), object references (`pkg/kubelet/container/ref.go`
//! `GenerateContainerRef`, client-go `tools/reference`), and the reasons of
//! `pkg/kubelet/events/event.go`.
//!
//! The real recorder (aggregation, spam filter, the sink through the event client) lives in
//! `kubelet-events`; this crate only holds what the emitters need, so that the runtime, the
//! status code and the node status code do not depend on the API client.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};

/// `v1.EventTypeNormal` / `v1.EventTypeWarning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventType {
    /// The API value.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `record.EventRecorder`: records an event about `object`. Never blocks and never fails:
/// a recorder that cannot deliver drops the event (as client-go's broadcaster does when
/// its queue is full).
pub trait EventRecorder: Send + Sync + std::fmt::Debug {
    /// `Event(object, eventtype, reason, message)`; callers format the message themselves
    /// (`Eventf`). An event without annotations.
    fn event(&self, object: &ObjectReference, event_type: EventType, reason: &str, message: &str) {
        self.annotated_event(object, &Annotations::new(), event_type, reason, message);
    }

    /// `AnnotatedEventf`: as [`EventRecorder::event`], with `annotations` in the Event's
    /// metadata (the eviction manager's `offending_containers`, `starved_resource`, …).
    fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: &Annotations,
        event_type: EventType,
        reason: &str,
        message: &str,
    );
}

/// Annotations of an event (`map[string]string`).
pub type Annotations = BTreeMap<String, String>;

/// A recorder that drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopRecorder;

impl EventRecorder for NoopRecorder {
    fn annotated_event(
        &self,
        _: &ObjectReference,
        _: &Annotations,
        _: EventType,
        _: &str,
        _: &str,
    ) {
    }
}

/// One event a [`FakeRecorder`] saw.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEvent {
    /// The involved object.
    pub object: ObjectReference,
    /// `Normal` or `Warning`.
    pub event_type: EventType,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
    /// The annotations (empty for [`EventRecorder::event`]).
    pub annotations: Annotations,
}

/// A recorder that keeps every event, for tests (client-go `record.FakeRecorder`).
#[derive(Debug, Default)]
pub struct FakeRecorder {
    events: Mutex<Vec<RecordedEvent>>,
}

impl FakeRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every event recorded so far, oldest first.
    pub fn events(&self) -> Vec<RecordedEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The events as client-go's fake formats them: `"<type> <reason> <message>"`.
    pub fn lines(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .map(|e| format!("{} {} {}", e.event_type, e.reason, e.message))
            .collect()
    }
}

impl EventRecorder for FakeRecorder {
    fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: &Annotations,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(RecordedEvent {
                object: object.clone(),
                event_type,
                reason: reason.to_string(),
                message: message.to_string(),
                annotations: annotations.clone(),
            });
    }
}

/// `ref.GetReference(scheme, pod)`: a reference to the pod.
pub fn pod_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        field_path: None,
    }
}

/// `GenerateContainerRef`: the pod reference with the container's field path
/// (`spec.containers{name}`, `spec.initContainers{name}`, `spec.ephemeralContainers{name}`,
/// or `implicitly required container <name>` when the pod has no such container).
pub fn container_ref(pod: &Pod, container: &str) -> ObjectReference {
    let spec = pod.spec.as_ref();
    let has = |names: Option<Vec<&str>>| names.is_some_and(|n| n.contains(&container));
    let regular = spec.map(|s| s.containers.iter().map(|c| c.name.as_str()).collect());
    let init = spec.and_then(|s| {
        s.init_containers
            .as_ref()
            .map(|v| v.iter().map(|c| c.name.as_str()).collect())
    });
    let ephemeral = spec.and_then(|s| {
        s.ephemeral_containers
            .as_ref()
            .map(|v| v.iter().map(|c| c.name.as_str()).collect())
    });
    let field_path = if has(regular) {
        format!("spec.containers{{{container}}}")
    } else if has(init) {
        format!("spec.initContainers{{{container}}}")
    } else if has(ephemeral) {
        format!("spec.ephemeralContainers{{{container}}}")
    } else {
        format!("implicitly required container {container}")
    };
    ObjectReference {
        field_path: Some(field_path),
        ..pod_ref(pod)
    }
}

/// The kubelet's node reference (`NewMainKubelet` `nodeRef`: apiVersion v1, kind Node, the
/// node name, no UID).
pub fn node_ref(node_name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(node_name.to_string()),
        namespace: Some(String::new()),
        ..ObjectReference::default()
    }
}

/// Event reasons (`pkg/kubelet/events/event.go`).
pub mod reasons {
    // Container event reasons.
    pub const CREATED_CONTAINER: &str = "Created";
    pub const STARTED_CONTAINER: &str = "Started";
    pub const FAILED_TO_CREATE_CONTAINER: &str = "Failed";
    pub const FAILED_TO_START_CONTAINER: &str = "Failed";
    pub const KILLING_CONTAINER: &str = "Killing";
    pub const PREEMPT_CONTAINER: &str = "Preempting";
    pub const BACK_OFF_START_CONTAINER: &str = "BackOff";
    pub const EXCEEDED_GRACE_PERIOD: &str = "ExceededGracePeriod";
    // Pod event reasons.
    pub const FAILED_TO_KILL_POD: &str = "FailedKillPod";
    pub const FAILED_TO_CREATE_POD_CONTAINER: &str = "FailedCreatePodContainer";
    pub const FAILED_TO_MAKE_POD_DATA_DIRECTORIES: &str = "Failed";
    pub const NETWORK_NOT_READY: &str = "NetworkNotReady";
    // Image event reasons.
    pub const PULLING_IMAGE: &str = "Pulling";
    pub const PULLED_IMAGE: &str = "Pulled";
    pub const FAILED_TO_PULL_IMAGE: &str = "Failed";
    pub const FAILED_TO_INSPECT_IMAGE: &str = "InspectFailed";
    pub const ERR_IMAGE_NEVER_PULL_POLICY: &str = "ErrImageNeverPull";
    pub const BACK_OFF_PULL_IMAGE: &str = "BackOff";
    // Kubelet and node event reasons.
    pub const NODE_READY: &str = "NodeReady";
    pub const NODE_NOT_READY: &str = "NodeNotReady";
    pub const NODE_SCHEDULABLE: &str = "NodeSchedulable";
    pub const NODE_NOT_SCHEDULABLE: &str = "NodeNotSchedulable";
    pub const STARTING_KUBELET: &str = "Starting";
    pub const KUBELET_SETUP_FAILED: &str = "KubeletSetupFailed";
    pub const FAILED_MOUNT_VOLUME: &str = "FailedMount";
    pub const NODE_REBOOTED: &str = "Rebooted";
    pub const NODE_SHUTDOWN: &str = "Shutdown";
    pub const CONTAINER_GC_FAILED: &str = "ContainerGCFailed";
    pub const IMAGE_GC_FAILED: &str = "ImageGCFailed";
    pub const FREE_DISK_SPACE_FAILED: &str = "FreeDiskSpaceFailed";
    pub const INVALID_DISK_CAPACITY: &str = "InvalidDiskCapacity";
    pub const FAILED_NODE_ALLOCATABLE_ENFORCEMENT: &str = "FailedNodeAllocatableEnforcement";
    pub const SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT: &str = "NodeAllocatableEnforced";
    pub const SANDBOX_CHANGED: &str = "SandboxChanged";
    pub const FAILED_CREATE_POD_SANDBOX: &str = "FailedCreatePodSandBox";
    pub const FAILED_STATUS_POD_SANDBOX: &str = "FailedPodSandBoxStatus";
    pub const CGROUP_V1: &str = "CgroupV1";
    // Probe event reasons.
    pub const CONTAINER_UNHEALTHY: &str = "Unhealthy";
    pub const CONTAINER_PROBE_WARNING: &str = "ProbeWarning";
    // Pod worker and validation event reasons.
    pub const FAILED_SYNC: &str = "FailedSync";
    pub const FAILED_VALIDATION: &str = "FailedValidation";
    // Lifecycle hook event reasons.
    pub const FAILED_POST_START_HOOK: &str = "FailedPostStartHook";
    pub const FAILED_PRE_STOP_HOOK: &str = "FailedPreStopHook";
    /// An HTTPS lifecycle hook answered in plain HTTP was sent again over HTTP.
    pub const LIFECYCLE_HTTP_FALLBACK: &str = "LifecycleHTTPFallback";
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod() -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    ..Container::default()
                }],
                init_containers: Some(vec![Container {
                    name: "init".into(),
                    ..Container::default()
                }]),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn container_refs_name_the_field_path() {
        let p = pod();
        assert_eq!(
            container_ref(&p, "app").field_path.as_deref(),
            Some("spec.containers{app}")
        );
        assert_eq!(
            container_ref(&p, "init").field_path.as_deref(),
            Some("spec.initContainers{init}")
        );
        assert_eq!(
            container_ref(&p, "POD").field_path.as_deref(),
            Some("implicitly required container POD")
        );
        let r = pod_ref(&p);
        assert_eq!(
            (r.kind.as_deref(), r.uid.as_deref()),
            (Some("Pod"), Some("u1"))
        );
    }

    #[test]
    fn fake_recorder_keeps_events_in_order() {
        let r = FakeRecorder::new();
        r.event(&node_ref("n"), EventType::Normal, reasons::NODE_READY, "a");
        r.event(
            &pod_ref(&pod()),
            EventType::Warning,
            reasons::FAILED_SYNC,
            "b",
        );
        assert_eq!(r.lines(), ["Normal NodeReady a", "Warning FailedSync b"]);
        NoopRecorder.event(&node_ref("n"), EventType::Normal, "x", "y");
    }
}
