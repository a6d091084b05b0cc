//! The kubelet's use of the memory manager: what upstream's container manager does with
//! it.
//!
//! - [`MemoryManager`]: the [`Manager`] behind the kubelet's lock (upstream's `manager`
//!   has its own mutex), with `Start`; it is the topology manager's hint provider
//!   (`GetTopologyHints`, `GetPodTopologyHints`, `Allocate` through the admit handler);
//! - [`MemoryManagerLifecycle`]: `cm/internal_container_lifecycle_linux.go` for the memory
//!   manager (`PreCreateContainer` sets `cpuset_mems` from `GetMemoryNUMANodes`,
//!   `PreStartContainer` calls `AddContainer`; `PostStopContainer` leaves the memory manager
//!   alone: it forgets a container through `removeStaleState` once its pod is gone).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_cpumanager::manager::ManagerSources;
use kubelet_cpumanager::state::{CheckpointStore, ContainerMap};
use kubelet_cri::v1::ContainerConfig;
use kubelet_runtime::internal_lifecycle::InternalContainerLifecycle;
use kubelet_topologymanager::{AllocateError, HintProvider, ResourceHints};

use crate::manager::{Manager, ManagerError};

/// The memory manager shared by the topology manager's admit handler and the runtime's
/// lifecycle hooks.
#[derive(Clone)]
pub struct MemoryManager {
    inner: Arc<Mutex<Manager>>,
}

impl std::fmt::Debug for MemoryManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryManager")
            .field("policy", &self.lock().policy_name())
            .finish()
    }
}

impl MemoryManager {
    /// Shares `manager` (made by [`Manager::new`], not started yet).
    pub fn new(manager: Manager) -> MemoryManager {
        MemoryManager {
            inner: Arc::new(Mutex::new(manager)),
        }
    }

    /// The manager, locked (a panic while it was held does not make it unusable: every
    /// method leaves the state consistent before it can fail).
    pub fn lock(&self) -> MutexGuard<'_, Manager> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `Start`: see [`Manager::start`].
    pub fn start<S: CheckpointStore + 'static>(
        &self,
        sources: ManagerSources,
        store: S,
        state_file: &str,
        initial_containers: ContainerMap,
    ) -> Result<(), ManagerError> {
        self.lock()
            .start(sources, store, state_file, initial_containers)
    }
}

impl HintProvider for MemoryManager {
    fn get_topology_hints(&self, pod: &Pod, container: &Container) -> ResourceHints {
        self.lock().get_topology_hints(pod, container)
    }

    fn get_pod_topology_hints(&self, pod: &Pod) -> ResourceHints {
        self.lock().get_pod_topology_hints(pod)
    }

    /// Upstream's memory manager errors are not `admission.Error`s: the pod is rejected
    /// as `UnexpectedAdmissionError`.
    fn allocate(&self, pod: &Pod, container: &Container) -> Result<(), AllocateError> {
        self.lock()
            .allocate(pod, container)
            .map_err(|e| AllocateError {
                reason: None,
                message: e.to_string(),
            })
    }
}

/// `cpuset.mems` text of a NUMA node set: the ids joined by commas (as upstream, not as a
/// range list).
pub fn cpuset_mems(nodes: &std::collections::BTreeSet<usize>) -> String {
    nodes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The memory manager's part of the runtime's internal container lifecycle.
#[derive(Debug, Clone)]
pub struct MemoryManagerLifecycle(pub MemoryManager);

impl InternalContainerLifecycle for MemoryManagerLifecycle {
    fn pre_create_container(
        &self,
        pod: &Pod,
        container: &Container,
        config: &mut ContainerConfig,
    ) -> Result<(), String> {
        if let Some(nodes) = self.0.lock().get_memory_numa_nodes(pod, container) {
            config
                .linux
                .get_or_insert_with(Default::default)
                .resources
                .get_or_insert_with(Default::default)
                .cpuset_mems = cpuset_mems(&nodes);
        }
        Ok(())
    }

    fn pre_start_container(
        &self,
        pod: &Pod,
        container: &Container,
        container_id: &str,
    ) -> Result<(), String> {
        self.0.lock().add_container(pod, container, container_id);
        Ok(())
    }

    fn post_stop_container(&self, _container_id: &str) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "kubelet_tests.rs"]
mod tests;
