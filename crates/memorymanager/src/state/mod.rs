//! The memory manager's state: upstream `pkg/kubelet/cm/memorymanager/state`
//! (`state.go`, `state_mem.go`, `checkpoint.go`, `state_checkpoint.go`).

use std::collections::BTreeMap;

mod checkpoint;
mod state_checkpoint;

pub use checkpoint::{CheckpointError, MemoryManagerCheckpoint};
pub use state_checkpoint::{RestoreError, StateCheckpoint, StateCheckpointError};

/// `memory_manager_state`: the checkpoint's name in the kubelet's root directory.
pub const MEMORY_MANAGER_STATE_FILE_NAME: &str = "memory_manager_state";

/// Upstream `MemoryTable`: one memory resource of one NUMA node, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryTable {
    /// `total` (`TotalMemSize`).
    pub total_mem_size: u64,
    /// `systemReserved`.
    pub system_reserved: u64,
    /// `allocatable`.
    pub allocatable: u64,
    /// `reserved`.
    pub reserved: u64,
    /// `free`.
    pub free: u64,
}

/// Upstream `NUMANodeState`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NUMANodeState {
    /// `numberOfAssignments`: memory blocks placed on this node (a container asking for
    /// memory and hugepages counts twice).
    pub number_of_assignments: i64,
    /// `memoryMap`: resource name (`memory`, `hugepages-<size>`) → table.
    pub memory_map: BTreeMap<String, MemoryTable>,
    /// `cells`: this node and the nodes it is grouped with by a multi-node allocation.
    pub cells: Vec<usize>,
}

/// Upstream `NUMANodeMap`: NUMA node id → state.
pub type NUMANodeMap = BTreeMap<usize, NUMANodeState>;

/// Upstream `Block`: an amount of one memory resource on a set of NUMA nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// `numaAffinity`.
    pub numa_affinity: Vec<usize>,
    /// `type` (resource name).
    pub type_: String,
    /// `size` in bytes.
    pub size: u64,
}

/// Upstream `ContainerMemoryAssignments`: pod UID → container name → blocks.
pub type ContainerMemoryAssignments = BTreeMap<String, BTreeMap<String, Vec<Block>>>;

/// Upstream `State` (`Reader` and `writer`). Writers take `&mut self`: the caller holds
/// the lock upstream's implementations take inside.
pub trait State: Send {
    /// `GetMachineState` (a copy).
    fn get_machine_state(&self) -> NUMANodeMap;
    /// `GetMemoryBlocks`: `None` (upstream nil) when the container has no entry.
    fn get_memory_blocks(&self, pod_uid: &str, container_name: &str) -> Option<Vec<Block>>;
    /// `GetMemoryAssignments` (a copy).
    fn get_memory_assignments(&self) -> ContainerMemoryAssignments;
    /// `SetMachineState`.
    fn set_machine_state(&mut self, machine_state: NUMANodeMap);
    /// `SetMemoryBlocks`.
    fn set_memory_blocks(&mut self, pod_uid: &str, container_name: &str, blocks: Vec<Block>);
    /// `SetMemoryAssignments`.
    fn set_memory_assignments(&mut self, assignments: ContainerMemoryAssignments);
    /// `Delete`: drops the container's blocks (and the pod once it has none).
    fn delete(&mut self, pod_uid: &str, container_name: &str);
    /// `ClearState`.
    fn clear_state(&mut self);
}

/// In-memory state (upstream `stateMemory`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateMemory {
    assignments: ContainerMemoryAssignments,
    machine_state: NUMANodeMap,
}

impl StateMemory {
    /// `NewMemoryState`.
    pub fn new() -> StateMemory {
        StateMemory::default()
    }
}

impl State for StateMemory {
    fn get_machine_state(&self) -> NUMANodeMap {
        self.machine_state.clone()
    }

    fn get_memory_blocks(&self, pod_uid: &str, container_name: &str) -> Option<Vec<Block>> {
        self.assignments
            .get(pod_uid)
            .and_then(|p| p.get(container_name))
            .cloned()
    }

    fn get_memory_assignments(&self) -> ContainerMemoryAssignments {
        self.assignments.clone()
    }

    fn set_machine_state(&mut self, machine_state: NUMANodeMap) {
        self.machine_state = machine_state;
        tracing::info!("Updated machine memory state");
    }

    fn set_memory_blocks(&mut self, pod_uid: &str, container_name: &str, blocks: Vec<Block>) {
        self.assignments
            .entry(pod_uid.to_owned())
            .or_default()
            .insert(container_name.to_owned(), blocks);
        tracing::info!(pod_uid, container_name, "Updated memory state");
    }

    fn set_memory_assignments(&mut self, assignments: ContainerMemoryAssignments) {
        tracing::debug!(?assignments, "Updated Memory assignments");
        self.assignments = assignments;
    }

    fn delete(&mut self, pod_uid: &str, container_name: &str) {
        let Some(pod) = self.assignments.get_mut(pod_uid) else {
            return;
        };
        pod.remove(container_name);
        if pod.is_empty() {
            self.assignments.remove(pod_uid);
        }
        tracing::debug!(pod_uid, container_name, "Deleted memory assignment");
    }

    fn clear_state(&mut self) {
        self.machine_state = NUMANodeMap::new();
        self.assignments = ContainerMemoryAssignments::new();
        tracing::debug!("Cleared state");
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
