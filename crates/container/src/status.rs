//! Runtime pod and container status (upstream `PodStatus`, `Status` and the
//! CRI `PodSandboxStatus` subset the kubelet reads, `pkg/kubelet/container/runtime.go`).
//!
//! The API `v1.PodStatus` is derived from this plus the API pod by
//! `kubelet-status` (upstream `generateAPIPodStatus`).

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::types::{ContainerId, ContainerState};

/// Status of a pod's containers and sandboxes as the runtime reports it
/// (upstream `PodStatus`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodStatus {
    /// Pod UID.
    pub id: String,
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// Pod IPs from the newest ready sandbox, primary first.
    pub ips: Vec<String>,
    /// One entry per container instance known to the runtime, newest first per name.
    pub container_statuses: Vec<Status>,
    /// Sandboxes, newest first.
    pub sandbox_statuses: Vec<SandboxStatus>,
    /// When this status was observed (upstream `TimeStamp`; set by the evented PLEG path).
    pub timestamp: Option<Timestamp>,
}

impl PodStatus {
    /// Empty status for a pod the runtime knows nothing about.
    pub fn empty(
        id: impl Into<String>,
        name: impl Into<String>,
        namespace: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            namespace: namespace.into(),
            ..Self::default()
        }
    }

    /// First (newest) status for the container name (upstream `FindContainerStatusByName`).
    pub fn find_container_status_by_name(&self, name: &str) -> Option<&Status> {
        self.container_statuses.iter().find(|s| s.name == name)
    }

    /// Statuses of running containers (upstream `GetRunningContainerStatuses`).
    pub fn running_container_statuses(&self) -> impl Iterator<Item = &Status> {
        self.container_statuses
            .iter()
            .filter(|s| s.state == ContainerState::Running)
    }

    /// True when any container is running or any sandbox is ready.
    pub fn is_running(&self) -> bool {
        self.running_container_statuses().next().is_some()
            || self
                .sandbox_statuses
                .iter()
                .any(|s| s.state == SandboxState::Ready)
    }
}

/// Status of one container instance (upstream `Status`, formerly `ContainerStatus`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// Runtime container ID.
    pub id: ContainerId,
    /// Container name from the pod spec.
    pub name: String,
    /// State.
    pub state: ContainerState,
    /// Creation time.
    pub created_at: Option<Timestamp>,
    /// Start time (set once started).
    pub started_at: Option<Timestamp>,
    /// Finish time (set once exited).
    pub finished_at: Option<Timestamp>,
    /// Exit code (meaningful when exited).
    pub exit_code: i32,
    /// Image as requested, `NAME:TAG`.
    pub image: String,
    /// Image ID.
    pub image_id: String,
    /// Image reference (digest).
    pub image_ref: String,
    /// Runtime handler used for the image.
    pub image_runtime_handler: String,
    /// [`crate::hash_container`] recorded when the container was created.
    pub hash: u64,
    /// Restart count recorded when the container was created (the attempt number).
    pub restart_count: i32,
    /// Machine-readable reason from the runtime (e.g. `OOMKilled`, `Completed`, `Error`).
    pub reason: String,
    /// Message (e.g. the termination message).
    pub message: String,
    /// Resources the runtime reports as applied.
    pub resources: Option<ContainerResources>,
    /// Stop signal the runtime will use (e.g. `SIGTERM`), when reported.
    pub stop_signal: Option<String>,
    /// The identity of the container's first process, when the runtime reports it
    /// (CRI `ContainerStatus.user`, feature `SupplementalGroupsPolicy`).
    pub user: Option<ContainerUser>,
}

/// The identity of a container's first process (upstream `ContainerUser`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerUser {
    /// The Linux identity, when reported.
    pub linux: Option<LinuxContainerUser>,
}

/// A Linux process identity (upstream `LinuxContainerUser`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinuxContainerUser {
    /// Primary uid.
    pub uid: i64,
    /// Primary gid.
    pub gid: i64,
    /// Supplemental groups.
    pub supplemental_groups: Vec<i64>,
}

/// Resources applied to a container, as reported by CRI (upstream `ContainerResources`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerResources {
    /// CPU request (derived from cpu shares).
    pub cpu_request: Option<Quantity>,
    /// CPU limit (derived from quota/period).
    pub cpu_limit: Option<Quantity>,
    /// Memory request.
    pub memory_request: Option<Quantity>,
    /// Memory limit.
    pub memory_limit: Option<Quantity>,
}

/// Readiness of a pod sandbox (CRI `PodSandboxState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SandboxState {
    /// `SANDBOX_READY`.
    Ready,
    /// `SANDBOX_NOTREADY`.
    #[default]
    NotReady,
}

/// The subset of CRI `PodSandboxStatus` the kubelet reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SandboxStatus {
    /// Sandbox ID.
    pub id: String,
    /// Metadata name (pod name).
    pub name: String,
    /// Metadata UID (pod UID).
    pub uid: String,
    /// Metadata namespace.
    pub namespace: String,
    /// Metadata attempt: how many sandboxes were created before this one.
    pub attempt: u32,
    /// Ready or not ready.
    pub state: SandboxState,
    /// Creation time.
    pub created_at: Option<Timestamp>,
    /// Primary pod IP (empty for host-network sandboxes or before networking is set up).
    pub ip: String,
    /// Additional pod IPs (dual stack).
    pub additional_ips: Vec<String>,
    /// True when the sandbox uses the node's network namespace (CRI `NamespaceMode::NODE`).
    pub host_network: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn finds_newest_status_by_name_and_running() {
        let status = PodStatus {
            container_statuses: vec![
                Status {
                    name: "a".into(),
                    state: ContainerState::Running,
                    restart_count: 1,
                    ..Status::default()
                },
                Status {
                    name: "a".into(),
                    state: ContainerState::Exited,
                    ..Status::default()
                },
                Status {
                    name: "b".into(),
                    state: ContainerState::Exited,
                    ..Status::default()
                },
            ],
            ..PodStatus::empty("u", "p", "ns")
        };
        assert_eq!(
            status
                .find_container_status_by_name("a")
                .unwrap()
                .restart_count,
            1
        );
        assert!(status.find_container_status_by_name("c").is_none());
        assert_eq!(status.running_container_statuses().count(), 1);
        assert!(status.is_running());
        assert!(!PodStatus::empty("u", "p", "ns").is_running());
    }
}
