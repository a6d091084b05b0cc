//! The kubelet's event recorder contract (client-go `tools/record.EventRecorder`), the
//! object references events are about (`client-go/tools/reference`, `pkg/kubelet/container/ref.go`
//! `GenerateContainerRef`, `kubelet.go` `nodeRef`) and the reasons of
//! `pkg/kubelet/events/event.go`.
//!
//! Provisional copy of the contract of `api-mode.md` (issue #7) so `kubelet-events` builds
//! before the integrator lands it; main's version wins on merge.

use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};

/// `v1.EventTypeNormal` / `v1.EventTypeWarning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records events on behalf of the kubelet (upstream `record.EventRecorder`). Never blocks.
pub trait EventRecorder: Send + Sync + std::fmt::Debug {
    /// `Event(object, eventtype, reason, message)`.
    fn event(&self, object: &ObjectReference, event_type: EventType, reason: &str, message: &str);
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopRecorder;

impl EventRecorder for NoopRecorder {
    fn event(&self, _: &ObjectReference, _: EventType, _: &str, _: &str) {}
}

/// One recorded call of [`FakeRecorder`].
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    pub object: ObjectReference,
    pub event_type: EventType,
    pub reason: String,
    pub message: String,
}

/// Records every event (upstream `record.FakeRecorder`).
#[derive(Debug, Default)]
pub struct FakeRecorder {
    events: Mutex<Vec<RecordedEvent>>,
}

impl FakeRecorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// What was recorded so far, in order.
    pub fn events(&self) -> Vec<RecordedEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl EventRecorder for FakeRecorder {
    fn event(&self, object: &ObjectReference, event_type: EventType, reason: &str, message: &str) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(RecordedEvent {
                object: object.clone(),
                event_type,
                reason: reason.to_string(),
                message: message.to_string(),
            });
    }
}

/// `ref.GetReference(scheme, pod)`.
pub fn pod_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".to_string()),
        api_version: Some("v1".to_string()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        field_path: None,
    }
}

/// `kubecontainer.GenerateContainerRef`: the pod's reference with the container's field path.
pub fn container_ref(pod: &Pod, container: &str) -> ObjectReference {
    let spec = pod.spec.as_ref();
    let path = |list: Option<&Vec<String>>, field: &str| {
        list.and_then(|names| {
            names
                .iter()
                .enumerate()
                .find(|(_, n)| *n == container)
                .map(|(i, n)| {
                    if n.is_empty() {
                        format!("spec.{field}[{i}]")
                    } else {
                        format!("spec.{field}{{{n}}}")
                    }
                })
        })
    };
    let names = |f: fn(&k8s_openapi::api::core::v1::PodSpec) -> Vec<String>| spec.map(f);
    let containers = names(|s| s.containers.iter().map(|c| c.name.clone()).collect());
    let init = names(|s| {
        s.init_containers
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect()
    });
    let ephemeral = names(|s| {
        s.ephemeral_containers
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect()
    });
    let field_path = path(containers.as_ref(), "containers")
        .or_else(|| path(init.as_ref(), "initContainers"))
        .or_else(|| path(ephemeral.as_ref(), "ephemeralContainers"))
        .unwrap_or_else(|| format!("{IMPLICIT_CONTAINER_PREFIX}{container}"));
    ObjectReference {
        field_path: Some(field_path),
        ..pod_ref(pod)
    }
}

/// `kubecontainer.ImplicitContainerPrefix`.
pub const IMPLICIT_CONTAINER_PREFIX: &str = "implicitly required container ";

/// `kl.nodeRef` (`NewMainKubelet`): apiVersion v1, kind Node, the node name; no UID and
/// no namespace at 1.35 (older releases set the UID to the node name).
pub fn node_ref(node_name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_string()),
        kind: Some("Node".to_string()),
        name: Some(node_name.to_string()),
        ..ObjectReference::default()
    }
}

/// `pkg/kubelet/events/event.go`.
pub mod reasons {
    pub const CREATED_CONTAINER: &str = "Created";
    pub const STARTED_CONTAINER: &str = "Started";
    pub const FAILED_TO_CREATE_CONTAINER: &str = "Failed";
    pub const FAILED_TO_START_CONTAINER: &str = "Failed";
    pub const KILLING_CONTAINER: &str = "Killing";
    pub const PREEMPT_CONTAINER: &str = "Preempting";
    pub const BACK_OFF_START_CONTAINER: &str = "BackOff";
    pub const EXCEEDED_GRACE_PERIOD: &str = "ExceededGracePeriod";

    pub const FAILED_TO_KILL_POD: &str = "FailedKillPod";
    pub const FAILED_TO_CREATE_POD_CONTAINER: &str = "FailedCreatePodContainer";
    pub const FAILED_TO_MAKE_POD_DATA_DIRECTORIES: &str = "Failed";
    pub const NETWORK_NOT_READY: &str = "NetworkNotReady";

    pub const PULLING_IMAGE: &str = "Pulling";
    pub const PULLED_IMAGE: &str = "Pulled";
    pub const FAILED_TO_PULL_IMAGE: &str = "Failed";
    pub const FAILED_TO_INSPECT_IMAGE: &str = "InspectFailed";
    pub const ERR_IMAGE_NEVER_PULL_POLICY: &str = "ErrImageNeverPull";
    pub const BACK_OFF_PULL_IMAGE: &str = "BackOff";

    pub const NODE_READY: &str = "NodeReady";
    pub const NODE_NOT_READY: &str = "NodeNotReady";
    pub const NODE_SCHEDULABLE: &str = "NodeSchedulable";
    pub const NODE_NOT_SCHEDULABLE: &str = "NodeNotSchedulable";
    pub const STARTING_KUBELET: &str = "Starting";
    pub const KUBELET_SETUP_FAILED: &str = "KubeletSetupFailed";
    pub const FAILED_MOUNT_VOLUME: &str = "FailedMount";
    pub const NODE_REBOOTED: &str = "Rebooted";
    pub const CONTAINER_GC_FAILED: &str = "ContainerGCFailed";
    pub const IMAGE_GC_FAILED: &str = "ImageGCFailed";
    pub const FAILED_NODE_ALLOCATABLE_ENFORCEMENT: &str = "FailedNodeAllocatableEnforcement";
    pub const SUCCESSFUL_NODE_ALLOCATABLE_ENFORCEMENT: &str = "NodeAllocatableEnforced";
    pub const SANDBOX_CHANGED: &str = "SandboxChanged";
    pub const FAILED_CREATE_POD_SANDBOX: &str = "FailedCreatePodSandBox";
    pub const FAILED_STATUS_POD_SANDBOX: &str = "FailedPodSandBoxStatus";

    pub const CONTAINER_UNHEALTHY: &str = "Unhealthy";
    pub const FAILED_SYNC: &str = "FailedSync";
    pub const FAILED_VALIDATION: &str = "FailedValidation";
    pub const FAILED_POST_START_HOOK: &str = "FailedPostStartHook";
    pub const FAILED_PRE_STOP_HOOK: &str = "FailedPreStopHook";
}
