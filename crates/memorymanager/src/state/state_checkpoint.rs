//! State backed by the `memory_manager_state` checkpoint (upstream `stateCheckpoint`).

use kubelet_cpumanager::state::CheckpointStore;

use super::checkpoint::{CheckpointError, MemoryManagerCheckpoint};
use super::{Block, ContainerMemoryAssignments, NUMANodeMap, State, StateMemory};

/// An error restoring the state (upstream `NewCheckpointState`'s errors).
#[derive(Debug, thiserror::Error)]
pub enum StateCheckpointError {
    /// The restore failed; upstream's advice included.
    #[error(
        "could not restore state from checkpoint: {source}, please drain this node and delete the memory manager checkpoint file {path:?} before restarting Kubelet"
    )]
    Restore {
        /// The checkpoint's path (store directory and name).
        path: String,
        /// Why.
        source: RestoreError,
    },
}

/// Why a restore failed.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// Reading or writing the checkpoint file.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The blob is not a valid checkpoint.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint was written by another policy.
    #[error(
        "[memorymanager] configured policy {configured:?} differs from state checkpoint policy {checkpoint:?}"
    )]
    PolicyMismatch {
        /// This kubelet's policy.
        configured: String,
        /// The checkpoint's.
        checkpoint: String,
    },
}

/// State kept in memory and written to the checkpoint on every change (a failed write
/// is logged, as upstream's).
pub struct StateCheckpoint<S: CheckpointStore> {
    policy_name: String,
    cache: StateMemory,
    store: S,
    checkpoint_name: String,
}

impl<S: CheckpointStore> StateCheckpoint<S> {
    /// `NewCheckpointState`: restores from the checkpoint `checkpoint_name` of `store`
    /// (writing a fresh one when there is none). `path` names the file in the error.
    pub fn new(
        store: S,
        path: &str,
        checkpoint_name: &str,
        policy_name: &str,
    ) -> Result<StateCheckpoint<S>, StateCheckpointError> {
        let mut sc = StateCheckpoint {
            policy_name: policy_name.to_owned(),
            cache: StateMemory::new(),
            store,
            checkpoint_name: checkpoint_name.to_owned(),
        };
        sc.restore_state()
            .map_err(|source| StateCheckpointError::Restore {
                path: path.to_owned(),
                source,
            })?;
        Ok(sc)
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    fn restore_state(&mut self) -> Result<(), RestoreError> {
        let Some(blob) = self.store.read(&self.checkpoint_name)? else {
            self.store_state()?;
            return Ok(());
        };
        let checkpoint = MemoryManagerCheckpoint::unmarshal(&blob)?;
        if checkpoint.policy_name != self.policy_name {
            return Err(RestoreError::PolicyMismatch {
                configured: self.policy_name.clone(),
                checkpoint: checkpoint.policy_name,
            });
        }
        self.cache.set_machine_state(checkpoint.machine_state()?);
        self.cache.set_memory_assignments(checkpoint.entries()?);
        tracing::debug!("State checkpoint: restored state from checkpoint");
        Ok(())
    }

    fn store_state(&self) -> std::io::Result<()> {
        let mut checkpoint = MemoryManagerCheckpoint::new(
            &self.policy_name,
            &self.cache.get_machine_state(),
            &self.cache.get_memory_assignments(),
        );
        let blob = checkpoint.marshal();
        self.store
            .write(&self.checkpoint_name, &blob)
            .inspect_err(|err| tracing::error!(%err, "Could not save checkpoint"))
    }

    fn store_logged(&self) {
        if let Err(err) = self.store_state() {
            tracing::error!(%err, "Failed to store state to checkpoint");
        }
    }
}

impl<S: CheckpointStore> State for StateCheckpoint<S> {
    fn get_machine_state(&self) -> NUMANodeMap {
        self.cache.get_machine_state()
    }

    fn get_memory_blocks(&self, pod_uid: &str, container_name: &str) -> Option<Vec<Block>> {
        self.cache.get_memory_blocks(pod_uid, container_name)
    }

    fn get_memory_assignments(&self) -> ContainerMemoryAssignments {
        self.cache.get_memory_assignments()
    }

    fn set_machine_state(&mut self, machine_state: NUMANodeMap) {
        self.cache.set_machine_state(machine_state);
        self.store_logged();
    }

    fn set_memory_blocks(&mut self, pod_uid: &str, container_name: &str, blocks: Vec<Block>) {
        self.cache
            .set_memory_blocks(pod_uid, container_name, blocks);
        self.store_logged();
    }

    fn set_memory_assignments(&mut self, assignments: ContainerMemoryAssignments) {
        self.cache.set_memory_assignments(assignments);
        self.store_logged();
    }

    fn delete(&mut self, pod_uid: &str, container_name: &str) {
        self.cache.delete(pod_uid, container_name);
        self.store_logged();
    }

    fn clear_state(&mut self) {
        self.cache.clear_state();
        self.store_logged();
    }
}
