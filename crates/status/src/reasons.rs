//! Reason strings the kubelet writes into pod and container statuses
//! (upstream `kubelet_pods.go`, `container/sync_result.go`, `status/generate.go`).

/// Default waiting reason of a container that was never started.
pub const CONTAINER_CREATING: &str = "ContainerCreating";
/// Default waiting reason while init containers have not finished.
pub const POD_INITIALIZING: &str = "PodInitializing";
/// Terminated reason when a previously running container vanished.
pub const CONTAINER_STATUS_UNKNOWN: &str = "ContainerStatusUnknown";

/// Condition reason: some container statuses are missing.
pub const UNKNOWN_CONTAINER_STATUSES: &str = "UnknownContainerStatuses";
/// Condition reason: the pod succeeded.
pub const POD_COMPLETED: &str = "PodCompleted";
/// Condition reason: the pod failed.
pub const POD_FAILED: &str = "PodFailed";
/// Condition reason: some containers are not ready.
pub const CONTAINERS_NOT_READY: &str = "ContainersNotReady";
/// Condition reason: some init containers are not done.
pub const CONTAINERS_NOT_INITIALIZED: &str = "ContainersNotInitialized";
/// Condition reason: a readiness gate is not satisfied.
pub const READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// Pod condition types.
pub mod condition {
    /// `PodScheduled`.
    pub const POD_SCHEDULED: &str = "PodScheduled";
    /// `Ready`.
    pub const READY: &str = "Ready";
    /// `Initialized`.
    pub const INITIALIZED: &str = "Initialized";
    /// `ContainersReady`.
    pub const CONTAINERS_READY: &str = "ContainersReady";
    /// `PodReadyToStartContainers`.
    pub const POD_READY_TO_START_CONTAINERS: &str = "PodReadyToStartContainers";
    /// `DisruptionTarget` (set on eviction/preemption, shared with the control plane).
    pub const DISRUPTION_TARGET: &str = "DisruptionTarget";

    /// `PodResizePending`.
    pub const POD_RESIZE_PENDING: &str = "PodResizePending";
    /// `PodResizeInProgress`.
    pub const POD_RESIZE_IN_PROGRESS: &str = "PodResizeInProgress";

    /// Conditions the kubelet owns and regenerates (upstream `PodConditionByKubelet`).
    pub fn owned_by_kubelet(type_: &str) -> bool {
        matches!(
            type_,
            POD_SCHEDULED
                | READY
                | INITIALIZED
                | CONTAINERS_READY
                | POD_READY_TO_START_CONTAINERS
                | POD_RESIZE_PENDING
                | POD_RESIZE_IN_PROGRESS
        )
    }

    /// Conditions the kubelet shares with the control plane (upstream
    /// `PodConditionSharedByKubelet`).
    pub fn shared_by_kubelet(type_: &str) -> bool {
        type_ == DISRUPTION_TARGET
    }
}

/// Pod phases.
pub mod phase {
    /// `Pending`.
    pub const PENDING: &str = "Pending";
    /// `Running`.
    pub const RUNNING: &str = "Running";
    /// `Succeeded`.
    pub const SUCCEEDED: &str = "Succeeded";
    /// `Failed`.
    pub const FAILED: &str = "Failed";

    /// True for `Succeeded` and `Failed`.
    pub fn is_terminal(phase: &str) -> bool {
        phase == SUCCEEDED || phase == FAILED
    }
}
