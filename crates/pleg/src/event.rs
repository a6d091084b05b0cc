//! Pod lifecycle events (upstream `pkg/kubelet/pleg/pleg.go`).

use std::fmt;

/// Kind of change observed for a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodLifecycleEventType {
    /// A container became running.
    ContainerStarted,
    /// A container exited (or vanished while running).
    ContainerDied,
    /// A container was removed from the runtime.
    ContainerRemoved,
    /// Something about the pod changed that does not fit the other kinds;
    /// the pod should be synced.
    PodSync,
    /// A container moved to an unknown/created state. Not sent by the generic
    /// PLEG (not reliable enough to act on), kept for completeness.
    ContainerChanged,
}

impl PodLifecycleEventType {
    /// Upstream string value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ContainerStarted => "ContainerStarted",
            Self::ContainerDied => "ContainerDied",
            Self::ContainerRemoved => "ContainerRemoved",
            Self::PodSync => "PodSync",
            Self::ContainerChanged => "ContainerChanged",
        }
    }
}

impl fmt::Display for PodLifecycleEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event: pod UID, kind, and the runtime container (or sandbox) ID it is
/// about (upstream `PodLifecycleEvent`, whose `Data` is the container ID).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodLifecycleEvent {
    /// Pod UID.
    pub id: String,
    /// Kind.
    pub type_: PodLifecycleEventType,
    /// Runtime container or sandbox ID (without the `type://` prefix).
    pub data: String,
}

impl PodLifecycleEvent {
    /// Builds an event.
    pub fn new(
        id: impl Into<String>,
        type_: PodLifecycleEventType,
        data: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            type_,
            data: data.into(),
        }
    }
}
