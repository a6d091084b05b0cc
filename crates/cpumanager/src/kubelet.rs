//! The kubelet's use of the CPU manager: what upstream's container manager does with it.
//!
//! - [`CpuManager`]: the [`Manager`] behind the kubelet's lock (upstream's `manager` has
//!   its own mutex), with `Start` and the reconcile loop (`cpu_manager.go` `Start`:
//!   `wait.Until(reconcileState, reconcilePeriod)`, not started with the `none` policy);
//! - [`CpuManager`] is a topology manager hint provider (`GetTopologyHints`,
//!   `GetPodTopologyHints`, `Allocate`): the topology manager's admit handler asks it for
//!   hints and has it allocate once the merged affinity is stored;
//! - [`CpuManagerLifecycle`]: `cm/internal_container_lifecycle_linux.go` for the CPU
//!   and topology managers (`PreCreateContainer` sets `cpuset_cpus` from
//!   `GetCPUAffinity`, `PreStartContainer` calls both managers' `AddContainer`,
//!   `PostStopContainer` the topology manager's `RemoveContainer`), and the container
//!   manager's `ContainerHasExclusiveCPUs` (`cm/container_manager.go`), which leaves the
//!   CFS quota of pinned containers unlimited under `DisableCPUQuotaWithExclusiveCPUs`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_cri::RuntimeService;
use kubelet_cri::v1::{ContainerConfig, ContainerResources, LinuxContainerResources};
use kubelet_runtime::internal_lifecycle::{CpuAllocationReader, InternalContainerLifecycle};
use tokio_util::sync::CancellationToken;

use crate::manager::{Manager, ManagerError, ManagerSources, ReconcileResult};
use crate::state::{CheckpointStore, ContainerMap};
use kubelet_topologymanager::{AllocateError, HintProvider, ResourceHints};

/// Upstream's `v1.ResourceCPU`: the resource the CPU manager's hints are for.
pub const RESOURCE_CPU: &str = "cpu";

/// The CPU manager shared by the admit handler, the runtime's lifecycle hooks and the
/// reconcile loop.
#[derive(Clone)]
pub struct CpuManager {
    inner: Arc<Mutex<Manager>>,
}

impl std::fmt::Debug for CpuManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuManager")
            .field("policy", &self.lock().policy_name())
            .finish()
    }
}

impl CpuManager {
    /// Shares `manager` (made by [`Manager::new`], not started yet).
    pub fn new(manager: Manager) -> CpuManager {
        CpuManager {
            inner: Arc::new(Mutex::new(manager)),
        }
    }

    /// The manager, locked (a panic while it was held does not make it unusable: every
    /// method leaves the state consistent before it can fail).
    pub fn lock(&self) -> MutexGuard<'_, Manager> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `Start`: see [`Manager::start`]. Returns the reconcile period when
    /// [`Self::run_reconcile_loop`] must run.
    pub fn start<S: CheckpointStore + 'static>(
        &self,
        sources: ManagerSources,
        store: S,
        state_file: &str,
        initial_containers: ContainerMap,
    ) -> Result<Option<Duration>, ManagerError> {
        self.lock()
            .start(sources, store, state_file, initial_containers)
    }

    /// One `reconcileState`: the updates the manager asks for are made through CRI
    /// `UpdateContainerResources` (`cpuset_cpus` only, as upstream's
    /// `updateContainerCPUSet`) without the lock held; each success is reported back,
    /// each failure logged and moved to the result's `failure` list.
    pub async fn reconcile_once(&self, runtime: &dyn RuntimeService) -> ReconcileResult {
        let mut result = self.lock().reconcile_state();
        let updates = std::mem::take(&mut result.updates);
        for update in updates {
            tracing::debug!(
                pod = %update.container.pod_name,
                container = %update.container.container_name,
                container_id = %update.container.container_id,
                cpuset = %update.cpus,
                "updating container"
            );
            let resources = ContainerResources {
                linux: Some(LinuxContainerResources {
                    cpuset_cpus: update.cpus.to_string(),
                    ..LinuxContainerResources::default()
                }),
                ..ContainerResources::default()
            };
            match runtime
                .update_container_resources(&update.container.container_id, &resources)
                .await
            {
                Ok(()) => {
                    self.lock().update_done(&update);
                    result.success.push(update.container);
                }
                Err(err) => {
                    tracing::error!(
                        %err,
                        pod = %update.container.pod_name,
                        container = %update.container.container_name,
                        container_id = %update.container.container_id,
                        cpuset = %update.cpus,
                        "failed to update container"
                    );
                    result.failure.push(update.container);
                }
            }
        }
        result
    }

    /// `wait.Until(reconcileState, period)`: at once, then every `period`, until
    /// `cancel`.
    pub async fn run_reconcile_loop(
        self,
        period: Duration,
        runtime: Arc<dyn RuntimeService>,
        cancel: CancellationToken,
    ) {
        // `wait.Until` waits a whole period after each run (a jitter-free sliding period).
        loop {
            self.reconcile_once(runtime.as_ref()).await;
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(period) => {}
            }
        }
    }
}

/// The policy's hints as the topology manager takes them: `None` (no opinion) is
/// upstream's nil map, `Some(hints)` the map `{"cpu": hints}`.
fn cpu_hints(hints: Option<Vec<kubelet_topologymanager::TopologyHint>>) -> ResourceHints {
    hints
        .map(|h| (RESOURCE_CPU.to_owned(), Some(h)))
        .into_iter()
        .collect()
}

impl From<ManagerError> for AllocateError {
    /// An SMT alignment error is an admission error (`SMTAlignmentError`); any other
    /// error is unexpected.
    fn from(err: ManagerError) -> AllocateError {
        let (reason, message) = err.pod_admit_reason();
        if reason == crate::manager::ERROR_REASON_UNEXPECTED {
            AllocateError {
                reason: None,
                message: err.to_string(),
            }
        } else {
            AllocateError {
                reason: Some(reason.to_owned()),
                message,
            }
        }
    }
}

/// The CPU manager as a topology manager hint provider (`cpu_manager.go`
/// `GetTopologyHints`, `GetPodTopologyHints`, `Allocate`).
impl HintProvider for CpuManager {
    fn get_topology_hints(&self, pod: &Pod, container: &Container) -> ResourceHints {
        cpu_hints(self.lock().get_topology_hints(pod, container))
    }

    fn get_pod_topology_hints(&self, pod: &Pod) -> ResourceHints {
        cpu_hints(self.lock().get_pod_topology_hints(pod))
    }

    fn allocate(&self, pod: &Pod, container: &Container) -> Result<(), AllocateError> {
        self.lock()
            .allocate(pod, container)
            .map_err(AllocateError::from)
    }
}

/// The CPU and topology managers' part of the runtime's internal container lifecycle
/// (upstream `internalContainerLifecycleImpl`; the topology manager is `None` only in
/// tests that do not need it).
#[derive(Debug, Clone)]
pub struct CpuManagerLifecycle {
    /// The CPU manager.
    pub cpu: CpuManager,
    /// The topology manager.
    pub topology: Option<Arc<kubelet_topologymanager::Manager>>,
}

impl CpuManagerLifecycle {
    /// The hooks of `cpu` and `topology`.
    pub fn new(cpu: CpuManager, topology: Arc<kubelet_topologymanager::Manager>) -> Self {
        CpuManagerLifecycle {
            cpu,
            topology: Some(topology),
        }
    }
}

impl InternalContainerLifecycle for CpuManagerLifecycle {
    fn pre_create_container(
        &self,
        pod: &Pod,
        container: &Container,
        config: &mut ContainerConfig,
    ) -> Result<(), String> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let cpus = self.cpu.lock().get_cpu_affinity(uid, &container.name);
        if !cpus.is_empty() {
            config
                .linux
                .get_or_insert_with(Default::default)
                .resources
                .get_or_insert_with(Default::default)
                .cpuset_cpus = cpus.to_string();
        }
        Ok(())
    }

    fn pre_start_container(
        &self,
        pod: &Pod,
        container: &Container,
        container_id: &str,
    ) -> Result<(), String> {
        self.cpu.lock().add_container(pod, container, container_id);
        if let Some(topology) = &self.topology {
            topology.add_container(pod, container, container_id);
        }
        Ok(())
    }

    fn post_stop_container(&self, container_id: &str) -> Result<(), String> {
        // Upstream calls only the topology manager here; the CPU manager forgets a
        // container through `removeStaleState` once its pod is no longer active.
        if let Some(topology) = &self.topology {
            topology.remove_container(container_id);
        }
        Ok(())
    }
}

/// `containerHasExclusiveCPUs`: the container's `GetExclusiveCPUs` is not empty.
impl CpuAllocationReader for CpuManagerLifecycle {
    fn container_has_exclusive_cpus(&self, pod: &Pod, container: &Container) -> bool {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let pinned = !self
            .cpu
            .lock()
            .get_exclusive_cpus(uid, &container.name)
            .is_empty();
        if pinned {
            tracing::debug!(pod_uid = %uid, container = %container.name, "Container has pinned cpus");
        }
        pinned
    }
}

#[cfg(test)]
#[path = "kubelet_tests.rs"]
mod tests;
