//! State backed by the `cpu_manager_state` checkpoint (upstream `stateCheckpoint`).

use std::collections::BTreeMap;

use kubelet_apimachinery::{CpuSet, CpuSetError};

use super::checkpoint::{CPUManagerCheckpoint, CPUManagerCheckpointV1, CheckpointError};
use super::store::CheckpointStore;
use super::{ContainerCPUAssignments, State, StateMemory};

/// Container id → (pod UID, container name) of the containers running at start
/// (upstream `containermap.ContainerMap`), used to migrate a V1 checkpoint.
pub type ContainerMap = BTreeMap<String, (String, String)>;

/// An error restoring the state (upstream `NewCheckpointState`'s errors).
#[derive(Debug, thiserror::Error)]
pub enum StateCheckpointError {
    /// The restore failed; upstream's advice included.
    #[error(
        "could not restore state from checkpoint: {source}, please drain this node and delete the CPU manager checkpoint file {path:?} before restarting Kubelet"
    )]
    Restore {
        /// The checkpoint's path (store directory and name).
        path: String,
        /// Why.
        source: Box<RestoreError>,
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
    /// A V1 entry names a container not running.
    #[error(
        "error migrating v1 checkpoint state to v2 checkpoint state: containerID '{0}' not found in initial containers list"
    )]
    Migration(String),
    /// The checkpoint was written by another policy.
    #[error("configured policy {configured:?} differs from state checkpoint policy {checkpoint:?}")]
    PolicyMismatch {
        /// This kubelet's policy.
        configured: String,
        /// The checkpoint's.
        checkpoint: String,
    },
    /// The default cpuset does not parse.
    #[error("could not parse default cpu set {text:?}: {source}")]
    DefaultCpuSet {
        /// Its text.
        text: String,
        /// The parse error.
        source: CpuSetError,
    },
    /// An assignment does not parse.
    #[error("could not parse cpuset {text:?} for container {container:?} in pod {pod:?}: {source}")]
    Assignment {
        /// Its text.
        text: String,
        /// Container name.
        container: String,
        /// Pod UID.
        pod: String,
        /// The parse error.
        source: CpuSetError,
    },
}

/// State kept in memory and written to the checkpoint on every change.
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
        initial_containers: &ContainerMap,
    ) -> Result<StateCheckpoint<S>, StateCheckpointError> {
        let mut sc = StateCheckpoint {
            policy_name: policy_name.to_owned(),
            cache: StateMemory::new(),
            store,
            checkpoint_name: checkpoint_name.to_owned(),
        };
        sc.restore_state(initial_containers)
            .map_err(|source| StateCheckpointError::Restore {
                path: path.to_owned(),
                source: Box::new(source),
            })?;
        Ok(sc)
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    fn restore_state(&mut self, initial_containers: &ContainerMap) -> Result<(), RestoreError> {
        let Some(blob) = self.store.read(&self.checkpoint_name)? else {
            self.store_state()?;
            return Ok(());
        };
        let v2 = match CPUManagerCheckpointV1::unmarshal(&blob) {
            Ok(v1) => {
                // migrateV1CheckpointToV2Checkpoint
                let mut v2 = CPUManagerCheckpoint {
                    policy_name: v1.policy_name,
                    default_cpu_set: v1.default_cpu_set,
                    ..CPUManagerCheckpoint::default()
                };
                for (container_id, cpus) in v1.entries {
                    let (pod, name) = initial_containers
                        .get(&container_id)
                        .ok_or_else(|| RestoreError::Migration(container_id.clone()))?;
                    v2.entries
                        .entry(pod.clone())
                        .or_default()
                        .insert(name.clone(), cpus);
                }
                v2
            }
            Err(_) => CPUManagerCheckpoint::unmarshal(&blob)?,
        };
        if self.policy_name != v2.policy_name {
            return Err(RestoreError::PolicyMismatch {
                configured: self.policy_name.clone(),
                checkpoint: v2.policy_name,
            });
        }
        let default =
            CpuSet::parse(&v2.default_cpu_set).map_err(|source| RestoreError::DefaultCpuSet {
                text: v2.default_cpu_set.clone(),
                source,
            })?;
        let mut assignments = ContainerCPUAssignments::new();
        for (pod, containers) in &v2.entries {
            let pod_entry = assignments.entry(pod.clone()).or_default();
            for (container, text) in containers {
                let cpus = CpuSet::parse(text).map_err(|source| RestoreError::Assignment {
                    text: text.clone(),
                    container: container.clone(),
                    pod: pod.clone(),
                    source,
                })?;
                pod_entry.insert(container.clone(), cpus);
            }
        }
        self.cache.set_default_cpu_set(default);
        self.cache.set_cpu_assignments(assignments);
        tracing::debug!(default_cpu_set = %self.cache.get_default_cpu_set(), "restored state from checkpoint");
        Ok(())
    }

    fn store_state(&self) -> std::io::Result<()> {
        let entries = self
            .cache
            .get_cpu_assignments()
            .into_iter()
            .map(|(pod, containers)| {
                let containers = containers
                    .into_iter()
                    .map(|(c, cpus)| (c, cpus.to_string()))
                    .collect();
                (pod, containers)
            })
            .collect();
        let mut checkpoint = CPUManagerCheckpoint::new(
            &self.policy_name,
            &self.cache.get_default_cpu_set().to_string(),
            entries,
        );
        self.store
            .write(&self.checkpoint_name, &checkpoint.marshal())
            .inspect_err(|err| tracing::error!(%err, "Failed to save checkpoint"))
    }

    fn store_or_log(&self) {
        if let Err(err) = self.store_state() {
            tracing::error!(%err, "Failed to store state to checkpoint");
        }
    }
}

impl<S: CheckpointStore> State for StateCheckpoint<S> {
    fn get_cpu_set(&self, pod_uid: &str, container_name: &str) -> Option<CpuSet> {
        self.cache.get_cpu_set(pod_uid, container_name)
    }

    fn get_default_cpu_set(&self) -> CpuSet {
        self.cache.get_default_cpu_set()
    }

    fn get_cpu_assignments(&self) -> ContainerCPUAssignments {
        self.cache.get_cpu_assignments()
    }

    fn set_cpu_set(&mut self, pod_uid: &str, container_name: &str, cpus: CpuSet) {
        self.cache.set_cpu_set(pod_uid, container_name, cpus);
        self.store_or_log();
    }

    fn set_default_cpu_set(&mut self, cpus: CpuSet) {
        self.cache.set_default_cpu_set(cpus);
        self.store_or_log();
    }

    fn set_cpu_assignments(&mut self, assignments: ContainerCPUAssignments) {
        self.cache.set_cpu_assignments(assignments);
        self.store_or_log();
    }

    fn delete(&mut self, pod_uid: &str, container_name: &str) {
        self.cache.delete(pod_uid, container_name);
        self.store_or_log();
    }

    fn clear_state(&mut self) {
        self.cache.clear_state();
        self.store_or_log();
    }
}
