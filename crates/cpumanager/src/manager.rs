//! The CPU manager (upstream `cpu_manager.go`), without its goroutine: the kubelet
//! (not wired yet) owns the manager behind a lock and runs the reconcile loop.
//!
//! One deliberate split: upstream's `reconcileState` calls the runtime's
//! `UpdateContainerResources` itself (unlocking around the call); here
//! [`Manager::reconcile_state`] returns the updates to make
//! ([`ReconcileUpdate`]: container id and the `cpuset.cpus` text for
//! `LinuxContainerResources.cpuset_cpus`) and the caller reports each success with
//! [`Manager::update_done`], so no lock is held across the CRI call.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodStatus};
use kubelet_apimachinery::{CpuSet, Quantity};
use kubelet_features::FeatureGate;

use crate::policy::{NonePolicy, POLICY_NONE, Policy, PolicyError};
use crate::policy_static::{POLICY_STATIC, StaticPolicy, StaticPolicyError};
use crate::state::{
    CPU_MANAGER_STATE_FILE_NAME, CheckpointStore, ContainerMap, State, StateCheckpoint,
    StateCheckpointError, StateMemory,
};
use crate::topology::{CPUTopology, MachineInfo, TopologyError, discover};
use kubelet_topologymanager::{Store, TopologyHint};

/// An error of [`Manager::new`] or [`Manager::start`]; messages are upstream's.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// `Discover` failed.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// `NewNonePolicy` failed.
    #[error("new none policy error: {0}")]
    NonePolicy(PolicyError),
    /// `NewStaticPolicy` failed.
    #[error("new static policy error: {0}")]
    StaticPolicy(PolicyError),
    /// No CPU in the node allocatable reservation.
    #[error("[cpumanager] unable to determine reserved CPU resources for static policy")]
    NoReservedCpu,
    /// A zero CPU reservation.
    #[error(
        "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"
    )]
    ZeroReservedCpu,
    /// Neither `none` nor `static`.
    #[error("unknown policy: \"{0}\"")]
    UnknownPolicy(String),
    /// The checkpoint could not be restored.
    #[error(transparent)]
    State(#[from] StateCheckpointError),
    /// `Policy.Start` refused the state.
    #[error(transparent)]
    PolicyStart(PolicyError),
    /// The policy refused (`Allocate`).
    #[error(transparent)]
    Policy(PolicyError),
    /// Called before [`Manager::start`].
    #[error("CPU manager not started")]
    NotStarted,
}

/// Upstream `admission.ErrorReasonUnexpected`.
pub const ERROR_REASON_UNEXPECTED: &str = "UnexpectedAdmissionError";

impl ManagerError {
    /// `admission.GetPodAdmitResult` of an `Allocate` error: (reason, message) of the
    /// pod's rejection. `SMTAlignmentError` keeps its type; anything else is unexpected.
    pub fn pod_admit_reason(&self) -> (&'static str, String) {
        if let ManagerError::Policy(PolicyError::Static(StaticPolicyError::SMTAlignment(e))) = self
        {
            return (e.type_name(), e.to_string());
        }
        (
            ERROR_REASON_UNEXPECTED,
            format!("Allocate failed due to {self}, which is unexpected"),
        )
    }
}

/// The pods the kubelet considers active (upstream `ActivePodsFunc`; shared, not copied:
/// the manager asks before every allocation).
pub trait ActivePods: Send + Sync {
    /// The active pods.
    fn active_pods(&self) -> Vec<std::sync::Arc<Pod>>;
}

/// Whether every pod source has been seen (upstream `config.SourcesReady`).
pub trait SourcesReady: Send + Sync {
    /// `AllReady`.
    fn all_ready(&self) -> bool;
}

/// The status manager's view of pod statuses (upstream `status.PodStatusProvider`).
pub trait PodStatusProvider: Send + Sync {
    /// `GetPodStatus`.
    fn get_pod_status(&self, pod_uid: &str) -> Option<PodStatus>;
}

/// The pods and statuses the manager looks at, given at [`Manager::start`].
pub struct ManagerSources {
    /// `activePods`.
    pub active_pods: Box<dyn ActivePods>,
    /// `sourcesReady`.
    pub sources_ready: Box<dyn SourcesReady>,
    /// `podStatusProvider`.
    pub pod_status_provider: Box<dyn PodStatusProvider>,
}

/// A container the reconcile loop handled (upstream `reconciledContainer`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReconciledContainer {
    /// `podName`.
    pub pod_name: String,
    /// `containerName`.
    pub container_name: String,
    /// `containerID` (without the runtime prefix).
    pub container_id: String,
}

/// A container whose `cpuset.cpus` must be updated through CRI `UpdateContainerResources`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconcileUpdate {
    /// The container.
    pub container: ReconciledContainer,
    /// Pod UID.
    pub pod_uid: String,
    /// The CPUs to set (`LinuxContainerResources.cpuset_cpus` = its `to_string()`).
    pub cpus: CpuSet,
}

/// What [`Manager::reconcile_state`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReconcileResult {
    /// Containers already up to date.
    pub success: Vec<ReconciledContainer>,
    /// Containers skipped (upstream's `failure` list before the CRI calls).
    pub failure: Vec<ReconciledContainer>,
    /// Containers to update; each success goes to `success` upstream, a failure to `failure`.
    pub updates: Vec<ReconcileUpdate>,
}

/// Upstream `manager`.
pub struct Manager {
    policy: Box<dyn Policy>,
    reconcile_period: Duration,
    state: Option<Box<dyn State>>,
    last_update_state: StateMemory,
    sources: Option<ManagerSources>,
    container_map: ContainerMap,
    topology: CPUTopology,
    all_cpus: CpuSet,
    allocatable_cpus: CpuSet,
}

impl Manager {
    /// `NewManager`. `reserved_cpu` is the CPU of the node allocatable reservation
    /// (kube + system reserved); `specific_cpus` is `reservedSystemCPUs`.
    #[allow(clippy::too_many_arguments)]
    pub fn new<A: Store + 'static>(
        cpu_policy_name: &str,
        cpu_policy_options: &BTreeMap<String, String>,
        reconcile_period: Duration,
        machine_info: &MachineInfo,
        specific_cpus: &CpuSet,
        reserved_cpu: Option<&Quantity>,
        affinity: A,
        gate: &FeatureGate,
    ) -> Result<Manager, ManagerError> {
        let topology = discover(machine_info)?;
        let policy: Box<dyn Policy> = match cpu_policy_name {
            POLICY_NONE => {
                Box::new(NonePolicy::new(cpu_policy_options).map_err(ManagerError::NonePolicy)?)
            }
            POLICY_STATIC => {
                tracing::info!(?topology, "Detected CPU topology");
                let reserved = reserved_cpu.ok_or(ManagerError::NoReservedCpu)?;
                if reserved.is_zero() {
                    return Err(ManagerError::ZeroReservedCpu);
                }
                // math.Ceil(MilliValue / 1000)
                let milli = reserved.milli_value().max(0);
                let num_reserved = usize::try_from((milli + 999) / 1000).unwrap_or(usize::MAX);
                Box::new(
                    StaticPolicy::new(
                        topology.clone(),
                        num_reserved,
                        specific_cpus,
                        affinity,
                        cpu_policy_options,
                        gate,
                    )
                    .map_err(|e| ManagerError::StaticPolicy(e.into()))?,
                )
            }
            other => return Err(ManagerError::UnknownPolicy(other.to_owned())),
        };
        Ok(Manager {
            policy,
            reconcile_period,
            state: None,
            last_update_state: StateMemory::new(),
            sources: None,
            container_map: ContainerMap::new(),
            all_cpus: topology.cpu_details.cpus(),
            topology,
            allocatable_cpus: CpuSet::new(),
        })
    }

    /// A started manager from its parts (tests: upstream builds `manager{}` directly).
    #[cfg(test)]
    pub(crate) fn for_test(
        policy: Box<dyn Policy>,
        state: Box<dyn State>,
        sources: ManagerSources,
        topology: CPUTopology,
    ) -> Manager {
        Manager {
            allocatable_cpus: policy.get_allocatable_cpus(state.as_ref()),
            policy,
            reconcile_period: Duration::from_secs(10),
            state: Some(state),
            last_update_state: StateMemory::new(),
            sources: Some(sources),
            container_map: ContainerMap::new(),
            all_cpus: topology.cpu_details.cpus(),
            topology,
        }
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// The topology.
    pub fn topology(&self) -> &CPUTopology {
        &self.topology
    }

    /// `Start`: restores the state from `cpu_manager_state` in `store`
    /// (`state_file` names it in errors) and starts the policy. Returns the reconcile
    /// period when the caller must run [`reconcile_state`](Self::reconcile_state)
    /// periodically (`None` with the `none` policy, as upstream starts no loop).
    pub fn start<S: CheckpointStore + 'static>(
        &mut self,
        sources: ManagerSources,
        store: S,
        state_file: &str,
        initial_containers: ContainerMap,
    ) -> Result<Option<Duration>, ManagerError> {
        tracing::info!(policy = self.policy.name(), "Starting");
        tracing::info!(reconcile_period = ?self.reconcile_period, "Reconciling");
        self.sources = Some(sources);
        self.container_map = initial_containers;
        let state = StateCheckpoint::new(
            store,
            state_file,
            CPU_MANAGER_STATE_FILE_NAME,
            self.policy.name(),
            &self.container_map,
        )
        .inspect_err(|err| {
            tracing::error!(%err, "Could not initialize checkpoint manager, please drain node and remove policy state file");
        })?;
        let mut state: Box<dyn State> = Box::new(state);
        self.policy
            .start(state.as_mut())
            .map_err(ManagerError::PolicyStart)
            .inspect_err(|err| tracing::error!(%err, "Policy start error"))?;
        self.allocatable_cpus = self.policy.get_allocatable_cpus(state.as_ref());
        self.state = Some(state);
        if self.policy.name() == POLICY_NONE {
            return Ok(None);
        }
        Ok(Some(self.reconcile_period))
    }

    fn state(&self) -> Result<&dyn State, ManagerError> {
        self.state.as_deref().ok_or(ManagerError::NotStarted)
    }

    /// `Allocate`: stale assignments dropped, then the policy's allocation.
    pub fn allocate(&mut self, pod: &Pod, container: &Container) -> Result<(), ManagerError> {
        self.remove_stale_state();
        let state = self.state.as_deref_mut().ok_or(ManagerError::NotStarted)?;
        self.policy
            .allocate(state, pod, container)
            .inspect_err(|err| tracing::error!(%err, "policy error"))
            .map_err(ManagerError::Policy)
    }

    /// `AddContainer`: records the container id (and the CPUs it was created with).
    pub fn add_container(&mut self, pod: &Pod, container: &Container, container_id: &str) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if let Some(cpus) = self
            .state
            .as_deref()
            .and_then(|s| s.get_cpu_set(&uid, &container.name))
        {
            self.last_update_state
                .set_cpu_set(&uid, &container.name, cpus);
        }
        self.container_map
            .insert(container_id.to_owned(), (uid, container.name.clone()));
    }

    /// `RemoveContainer` by container id (unknown ids are ignored).
    pub fn remove_container(&mut self, container_id: &str) {
        let Some((pod_uid, name)) = self.container_map.get(container_id).cloned() else {
            return;
        };
        if let Some(state) = self.state.as_deref_mut() {
            self.policy.remove_container(state, &pod_uid, &name);
        }
        self.last_update_state.delete(&pod_uid, &name);
        self.container_map.remove(container_id);
    }

    fn remove_container_by_ref(&mut self, pod_uid: &str, container_name: &str) {
        if let Some(state) = self.state.as_deref_mut() {
            self.policy.remove_container(state, pod_uid, container_name);
        }
        self.last_update_state.delete(pod_uid, container_name);
        let id = self
            .container_map
            .iter()
            .find(|(_, (p, c))| p == pod_uid && c == container_name)
            .map(|(id, _)| id.clone());
        if let Some(id) = id {
            self.container_map.remove(&id);
        }
    }

    /// `GetTopologyHints`.
    pub fn get_topology_hints(
        &mut self,
        pod: &Pod,
        container: &Container,
    ) -> Option<Vec<TopologyHint>> {
        self.remove_stale_state();
        let state = self.state.as_deref()?;
        self.policy.get_topology_hints(state, pod, container)
    }

    /// `GetPodTopologyHints`.
    pub fn get_pod_topology_hints(&mut self, pod: &Pod) -> Option<Vec<TopologyHint>> {
        self.remove_stale_state();
        let state = self.state.as_deref()?;
        self.policy.get_pod_topology_hints(state, pod)
    }

    /// `GetAllocatableCPUs` (set at start).
    pub fn get_allocatable_cpus(&self) -> CpuSet {
        self.allocatable_cpus.clone()
    }

    /// `GetAllCPUs`.
    pub fn get_all_cpus(&self) -> CpuSet {
        self.all_cpus.clone()
    }

    /// `GetExclusiveCPUs`.
    pub fn get_exclusive_cpus(&self, pod_uid: &str, container_name: &str) -> CpuSet {
        self.state()
            .ok()
            .and_then(|s| s.get_cpu_set(pod_uid, container_name))
            .unwrap_or_default()
    }

    /// `GetCPUAffinity`: the container's CPUs, or the shared pool. This is the
    /// `cpuset.cpus` the runtime manager sets at `CreateContainer`.
    pub fn get_cpu_affinity(&self, pod_uid: &str, container_name: &str) -> CpuSet {
        self.state()
            .map(|s| s.get_cpu_set_or_default(pod_uid, container_name))
            .unwrap_or_default()
    }

    /// `State()`: the state (read it only).
    pub fn state_reader(&self) -> Option<&dyn State> {
        self.state.as_deref()
    }

    /// `removeStaleState`: drops the assignments and container ids of containers
    /// no longer in an active pod (once every source is ready).
    pub fn remove_stale_state(&mut self) {
        let Some(sources) = &self.sources else {
            return;
        };
        if !sources.sources_ready.all_ready() {
            return;
        }
        let mut active: BTreeSet<(String, String)> = BTreeSet::new();
        for pod in sources.active_pods.active_pods() {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            for c in all_containers(&pod) {
                active.insert((uid.clone(), c.name.clone()));
            }
        }
        let assignments = self
            .state
            .as_deref()
            .map(|s| s.get_cpu_assignments())
            .unwrap_or_default();
        for (pod_uid, containers) in assignments {
            for container_name in containers.keys() {
                if active.contains(&(pod_uid.clone(), container_name.clone())) {
                    continue;
                }
                tracing::debug!(pod_uid, container_name, "removing container");
                self.remove_container_by_ref(&pod_uid, container_name);
            }
        }
        let stale: Vec<(String, String)> = self
            .container_map
            .values()
            .filter(|key| !active.contains(key))
            .cloned()
            .collect();
        for (pod_uid, container_name) in stale {
            tracing::debug!(pod_uid, container_name, "containerMap: removing container");
            self.remove_container_by_ref(&pod_uid, &container_name);
        }
    }

    /// `reconcileState` up to the CRI call: see the module documentation.
    pub fn reconcile_state(&mut self) -> ReconcileResult {
        let mut result = ReconcileResult::default();
        self.remove_stale_state();
        let Some(sources) = &self.sources else {
            return result;
        };
        let pods = sources.active_pods.active_pods();
        let mut to_add: Vec<(String, String, String)> = Vec::new();
        for pod in &pods {
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let failed = |container: &str, id: &str| ReconciledContainer {
                pod_name: pod_name.clone(),
                container_name: container.to_owned(),
                container_id: id.to_owned(),
            };
            let Some(pstatus) = sources.pod_status_provider.get_pod_status(&uid) else {
                result.failure.push(failed("", ""));
                continue;
            };
            for container in all_containers(pod) {
                let Some(container_id) = find_container_id_by_name(&pstatus, &container.name)
                else {
                    result.failure.push(failed(&container.name, ""));
                    continue;
                };
                let Some(cstatus) = find_container_status_by_name(&pstatus, &container.name) else {
                    result.failure.push(failed(&container.name, ""));
                    continue;
                };
                let state = cstatus.state.clone().unwrap_or_default();
                if state.waiting.is_some()
                    || (state.running.is_none() && state.terminated.is_none())
                {
                    result.failure.push(failed(&container.name, ""));
                    continue;
                }
                if state.terminated.is_some() {
                    continue;
                }
                to_add.push((container_id.clone(), uid.clone(), container.name.clone()));
                let cpus = self
                    .state
                    .as_deref()
                    .map(|s| s.get_cpu_set_or_default(&uid, &container.name))
                    .unwrap_or_default();
                if cpus.is_empty() {
                    result.failure.push(failed(&container.name, &container_id));
                    continue;
                }
                let last = self
                    .last_update_state
                    .get_cpu_set_or_default(&uid, &container.name);
                let reconciled = failed(&container.name, &container_id);
                if cpus != last {
                    result.updates.push(ReconcileUpdate {
                        container: reconciled,
                        pod_uid: uid.clone(),
                        cpus,
                    });
                } else {
                    result.success.push(reconciled);
                }
            }
        }
        for (id, uid, name) in to_add {
            self.container_map.insert(id, (uid, name));
        }
        result
    }

    /// The CRI update of a [`ReconcileUpdate`] succeeded (upstream then records the
    /// CPUs in `lastUpdateState`).
    pub fn update_done(&mut self, update: &ReconcileUpdate) {
        self.last_update_state.set_cpu_set(
            &update.pod_uid,
            &update.container.container_name,
            update.cpus.clone(),
        );
    }
}

fn all_containers(pod: &Pod) -> Vec<&Container> {
    pod.spec
        .as_ref()
        .map(|s| {
            s.init_containers
                .iter()
                .flatten()
                .chain(s.containers.iter())
                .collect()
        })
        .unwrap_or_default()
}

fn all_statuses(status: &PodStatus) -> impl Iterator<Item = &ContainerStatus> {
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
}

/// `findContainerIDByName`: the id without its `<runtime>://` prefix.
fn find_container_id_by_name(status: &PodStatus, name: &str) -> Option<String> {
    let cs = all_statuses(status)
        .find(|c| c.name == name && c.container_id.as_deref().is_some_and(|id| !id.is_empty()))?;
    let raw = cs.container_id.as_deref()?.trim_matches('"');
    let parts: Vec<&str> = raw.split("://").collect();
    match parts.as_slice() {
        [_, id] => Some((*id).to_owned()),
        _ => None,
    }
}

/// `findContainerStatusByName`.
fn find_container_status_by_name<'a>(
    status: &'a PodStatus,
    name: &str,
) -> Option<&'a ContainerStatus> {
    all_statuses(status).find(|c| c.name == name)
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
