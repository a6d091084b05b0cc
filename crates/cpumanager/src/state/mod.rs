//! The CPU manager's state: upstream `pkg/kubelet/cm/cpumanager/state`
//! (`state.go`, `state_mem.go`, `checkpoint.go`, `state_checkpoint.go`).

use std::collections::BTreeMap;

use kubelet_apimachinery::CpuSet;

mod checkpoint;
mod state_checkpoint;
mod store;

pub use checkpoint::{CPUManagerCheckpoint, CheckpointError};
pub use state_checkpoint::{ContainerMap, RestoreError, StateCheckpoint, StateCheckpointError};
pub use store::{CheckpointStore, FakeCheckpointStore, FileCheckpointStore};

/// `cpu_manager_state`: the checkpoint's name in the kubelet's root directory.
pub const CPU_MANAGER_STATE_FILE_NAME: &str = "cpu_manager_state";

/// Pod UID → container name → CPUs (upstream `ContainerCPUAssignments`).
pub type ContainerCPUAssignments = BTreeMap<String, BTreeMap<String, CpuSet>>;

/// Upstream `State` (`Reader` and `writer`). Writers take `&mut self`: the caller
/// holds the lock upstream's implementations take inside.
pub trait State: Send {
    /// `GetCPUSet`.
    fn get_cpu_set(&self, pod_uid: &str, container_name: &str) -> Option<CpuSet>;
    /// `GetDefaultCPUSet`.
    fn get_default_cpu_set(&self) -> CpuSet;
    /// `GetCPUSetOrDefault`.
    fn get_cpu_set_or_default(&self, pod_uid: &str, container_name: &str) -> CpuSet {
        self.get_cpu_set(pod_uid, container_name)
            .unwrap_or_else(|| self.get_default_cpu_set())
    }
    /// `GetCPUAssignments`.
    fn get_cpu_assignments(&self) -> ContainerCPUAssignments;
    /// `SetCPUSet`.
    fn set_cpu_set(&mut self, pod_uid: &str, container_name: &str, cpus: CpuSet);
    /// `SetDefaultCPUSet`.
    fn set_default_cpu_set(&mut self, cpus: CpuSet);
    /// `SetCPUAssignments`.
    fn set_cpu_assignments(&mut self, assignments: ContainerCPUAssignments);
    /// `Delete`: drops the container's assignment (and the pod once it has none).
    fn delete(&mut self, pod_uid: &str, container_name: &str);
    /// `ClearState`.
    fn clear_state(&mut self);
}

/// In-memory state (upstream `stateMemory`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateMemory {
    assignments: ContainerCPUAssignments,
    default_cpu_set: CpuSet,
}

impl StateMemory {
    /// `NewMemoryState`.
    pub fn new() -> StateMemory {
        StateMemory::default()
    }
}

impl State for StateMemory {
    fn get_cpu_set(&self, pod_uid: &str, container_name: &str) -> Option<CpuSet> {
        self.assignments
            .get(pod_uid)
            .and_then(|p| p.get(container_name))
            .cloned()
    }

    fn get_default_cpu_set(&self) -> CpuSet {
        self.default_cpu_set.clone()
    }

    fn get_cpu_assignments(&self) -> ContainerCPUAssignments {
        self.assignments.clone()
    }

    fn set_cpu_set(&mut self, pod_uid: &str, container_name: &str, cpus: CpuSet) {
        tracing::info!(pod_uid, container_name, cpu_set = %cpus, "Updated desired CPUSet");
        self.assignments
            .entry(pod_uid.to_owned())
            .or_default()
            .insert(container_name.to_owned(), cpus);
    }

    fn set_default_cpu_set(&mut self, cpus: CpuSet) {
        tracing::info!(cpu_set = %cpus, "Updated default CPUSet");
        self.default_cpu_set = cpus;
    }

    fn set_cpu_assignments(&mut self, assignments: ContainerCPUAssignments) {
        tracing::info!(?assignments, "Updated CPUSet assignments");
        self.assignments = assignments;
    }

    fn delete(&mut self, pod_uid: &str, container_name: &str) {
        if let Some(pod) = self.assignments.get_mut(pod_uid) {
            pod.remove(container_name);
            if pod.is_empty() {
                self.assignments.remove(pod_uid);
            }
        }
        tracing::debug!(pod_uid, container_name, "Deleted CPUSet assignment");
    }

    fn clear_state(&mut self) {
        self.default_cpu_set = CpuSet::new();
        self.assignments = ContainerCPUAssignments::new();
        tracing::debug!("Cleared state");
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
