//! The kubelet's use of the CPU manager: what upstream's container manager does with it.
//!
//! - [`CpuManager`]: the [`Manager`] behind the kubelet's lock (upstream's `manager` has
//!   its own mutex), with `Start` and the reconcile loop (`cpu_manager.go` `Start`:
//!   `wait.Until(reconcileState, reconcilePeriod)`, not started with the `none` policy);
//! - [`CpuManagerAdmitHandler`]: the pod admit handler upstream's container manager
//!   returns from `GetAllocateResourcesPodAdmitHandler` (the topology manager), with the
//!   topology manager's `none` policy and the CPU manager as its only hint provider
//!   (`topologymanager/scope_container.go` `Admit`, `scope.go` `allocateAlignedResources`);
//! - [`CpuManagerLifecycle`]: `cm/internal_container_lifecycle_linux.go` for the CPU
//!   manager (`PreCreateContainer` sets `cpuset_cpus` from `GetCPUAffinity`,
//!   `PreStartContainer` calls `AddContainer`), and the container manager's
//!   `ContainerHasExclusiveCPUs` (`cm/container_manager.go`), which leaves the CFS quota of
//!   pinned containers unlimited under `DisableCPUQuotaWithExclusiveCPUs`;
//! - [`NoneTopologyAffinity`]: the topology manager's store under its `none` policy
//!   (`policy_none.go` `Merge` gives every container the empty hint), which the static
//!   policy asks for NUMA affinity.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};
use kubelet_cri::RuntimeService;
use kubelet_cri::v1::{ContainerConfig, ContainerResources, LinuxContainerResources};
use kubelet_runtime::internal_lifecycle::{CpuAllocationReader, InternalContainerLifecycle};
use tokio_util::sync::CancellationToken;

use crate::manager::{Manager, ManagerError, ManagerSources, ReconcileResult};
use crate::state::{CheckpointStore, ContainerMap};
use kubelet_topologymanager::{Store, TopologyHint};

/// Upstream topology manager policy name `none`.
pub const TOPOLOGY_POLICY_NONE: &str = "none";

/// The topology manager's store under its `none` policy: no container has a NUMA
/// affinity (`TopologyHint{}`).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoneTopologyAffinity;

impl Store for NoneTopologyAffinity {
    fn get_affinity(&self, _pod_uid: &str, _container_name: &str) -> TopologyHint {
        TopologyHint::default()
    }

    fn policy_name(&self) -> String {
        TOPOLOGY_POLICY_NONE.to_owned()
    }
}

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

/// The admit handler: each init and app container, in that order, gets its CPUs from
/// `Allocate`; the first failure rejects the pod with `admission.GetPodAdmitResult`'s
/// reason (`SMTAlignmentError` for a `full-pcpus-only` misfit, `UnexpectedAdmissionError`
/// for any other error).
#[derive(Debug, Clone)]
pub struct CpuManagerAdmitHandler(pub CpuManager);

impl PodAdmitHandler for CpuManagerAdmitHandler {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        let start = std::time::Instant::now();
        let result = self.allocate_pod(attrs.pod);
        crate::metrics::topology_admission(start.elapsed(), result.admit);
        result
    }
}

impl CpuManagerAdmitHandler {
    /// `containerScope.Admit` with the `none` policy: `allocateAlignedResources` for each
    /// init and app container.
    fn allocate_pod(&self, pod: &Pod) -> PodAdmitResult {
        let Some(spec) = pod.spec.as_ref() else {
            return PodAdmitResult::admit();
        };
        let mut manager = self.0.lock();
        for container in spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
        {
            if let Err(err) = manager.allocate(pod, container) {
                let (reason, message) = err.pod_admit_reason();
                return PodAdmitResult::reject(reason, message);
            }
        }
        PodAdmitResult::admit()
    }
}

/// The CPU manager's part of the runtime's internal container lifecycle.
#[derive(Debug, Clone)]
pub struct CpuManagerLifecycle(pub CpuManager);

impl InternalContainerLifecycle for CpuManagerLifecycle {
    fn pre_create_container(
        &self,
        pod: &Pod,
        container: &Container,
        config: &mut ContainerConfig,
    ) -> Result<(), String> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let cpus = self.0.lock().get_cpu_affinity(uid, &container.name);
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
        self.0.lock().add_container(pod, container, container_id);
        Ok(())
    }

    fn post_stop_container(&self, _container_id: &str) -> Result<(), String> {
        // Upstream calls only the topology manager here (whose `none` policy keeps no
        // per-container state); the CPU manager forgets a container through
        // `removeStaleState` once its pod is no longer active.
        Ok(())
    }
}

/// `containerHasExclusiveCPUs`: the container's `GetExclusiveCPUs` is not empty.
impl CpuAllocationReader for CpuManagerLifecycle {
    fn container_has_exclusive_cpus(&self, pod: &Pod, container: &Container) -> bool {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let pinned = !self
            .0
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
