//! The memory manager (upstream `memory_manager.go`): `NewManager` with the
//! `reservedMemory` checks, `Start`, `AddContainer`, `Allocate`, `RemoveContainer`,
//! the topology hints, `GetMemoryNUMANodes` and `removeStaleState`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_apimachinery::{Format, Quantity, go_quote};
use kubelet_container::helpers::is_restartable_init_container;
use kubelet_cpumanager::manager::ManagerSources;
use kubelet_cpumanager::state::{CheckpointStore, ContainerMap};
use kubelet_features::FeatureGate;
use kubelet_topologymanager::{ResourceHints, Store};

use crate::policy::{NonePolicy, POLICY_NONE, Policy, PolicyError};
use crate::policy_static::{
    POLICY_STATIC, RESOURCE_MEMORY, StaticPolicy, SystemReservedMemory, is_huge_page_resource_name,
    quantity_as_i64,
};
use crate::state::{
    Block, MEMORY_MANAGER_STATE_FILE_NAME, State, StateCheckpoint, StateCheckpointError,
};
use crate::sysfs::MachineInfo;

/// Upstream `policyTypeBestEffort` (Windows only).
pub const POLICY_BEST_EFFORT: &str = "BestEffort";

/// One `reservedMemory` entry (upstream `kubeletconfig.MemoryReservation`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryReservation {
    /// `numaNode`.
    pub numa_node: i32,
    /// `limits`: resource name → amount.
    pub limits: BTreeMap<String, Quantity>,
}

/// An error of [`Manager::new`] or [`Manager::start`]; messages are upstream's.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// Not `None`, `Static` (or `BestEffort`, Windows only).
    #[error("unknown policy: \"{0}\"")]
    UnknownPolicy(String),
    /// `BestEffort` on Linux.
    #[error("policy \"BestEffort\" is not available for platform \"linux\"")]
    BestEffortNotAvailable,
    /// `reservedMemory` names a NUMA node the machine does not have.
    #[error(
        "the reserved memory configuration references a NUMA node {0} that does not exist on this machine"
    )]
    UnknownNumaNode(i32),
    /// The `reservedMemory` sum of a resource differs from the node allocatable
    /// reservation (kube-reserved + system-reserved + hard eviction threshold).
    #[error(
        "the total amount {} of type {} is not equal to the value {} determined by Node Allocatable feature",
        go_quote(.reserved), go_quote(.resource), go_quote(.node_allocatable)
    )]
    ReservedMemoryMismatch {
        /// The `reservedMemory` sum.
        reserved: String,
        /// The resource.
        resource: String,
        /// The node allocatable reservation.
        node_allocatable: String,
    },
    /// A reservation that is not a whole number of bytes.
    #[error("could not covert a variable of type Quantity to int64")]
    QuantityNotInt,
    /// The policy refused (`NewPolicyStatic`, `Start`, `Allocate`).
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The checkpoint could not be restored.
    #[error(transparent)]
    State(#[from] StateCheckpointError),
    /// Called before [`Manager::start`].
    #[error("memory manager not started")]
    NotStarted,
}

/// `getTotalMemoryTypeReserved`: the `reservedMemory` sum per resource.
fn get_total_memory_type_reserved(
    machine: &MachineInfo,
    reserved: &[MemoryReservation],
) -> Result<BTreeMap<String, Quantity>, ManagerError> {
    let nodes: BTreeSet<i64> = machine
        .topology
        .iter()
        .map(|n| i64::try_from(n.id).unwrap_or(i64::MAX))
        .collect();
    let mut total: BTreeMap<String, Quantity> = BTreeMap::new();
    for r in reserved {
        if !nodes.contains(&i64::from(r.numa_node)) {
            return Err(ManagerError::UnknownNumaNode(r.numa_node));
        }
        for (name, q) in &r.limits {
            let sum = match total.get(name) {
                Some(v) => q.add(v),
                None => *q,
            };
            total.insert(name.clone(), sum);
        }
    }
    Ok(total)
}

/// `validateReservedMemory`: per `memory` and `hugepages-*` resource, the
/// `reservedMemory` sum equals the node allocatable reservation.
pub fn validate_reserved_memory(
    machine: &MachineInfo,
    node_allocatable_reservation: &BTreeMap<String, Quantity>,
    reserved: &[MemoryReservation],
) -> Result<(), ManagerError> {
    let total = get_total_memory_type_reserved(machine, reserved)?;
    let mut types: BTreeSet<&String> = total.keys().collect();
    types.extend(
        node_allocatable_reservation
            .keys()
            .filter(|k| *k == RESOURCE_MEMORY || is_huge_page_resource_name(k)),
    );
    for resource in types {
        let zero = Quantity::from_int(0, Format::DecimalSI);
        let node_allocatable = node_allocatable_reservation
            .get(resource)
            .map_or(zero, |v| zero.add(v));
        let reserved = total.get(resource).map_or(zero, |v| zero.add(v));
        if node_allocatable != reserved {
            return Err(ManagerError::ReservedMemoryMismatch {
                reserved: reserved.to_string(),
                resource: resource.clone(),
                node_allocatable: node_allocatable.to_string(),
            });
        }
    }
    Ok(())
}

/// `convertReserved`: NUMA node → resource → bytes (every node present).
pub fn convert_reserved(
    machine: &MachineInfo,
    reserved: &[MemoryReservation],
) -> Result<SystemReservedMemory, ManagerError> {
    let mut out: SystemReservedMemory = machine
        .topology
        .iter()
        .map(|n| (n.id, BTreeMap::new()))
        .collect();
    for r in reserved {
        for (name, q) in &r.limits {
            let v = quantity_as_i64(q).ok_or(ManagerError::QuantityNotInt)?;
            let node = usize::try_from(r.numa_node)
                .map_err(|_| ManagerError::UnknownNumaNode(r.numa_node))?;
            // uint64(val)
            out.entry(node).or_default().insert(name.clone(), v as u64);
        }
    }
    Ok(out)
}

/// `getSystemReservedMemory`: validated, then converted.
pub fn get_system_reserved_memory(
    machine: &MachineInfo,
    node_allocatable_reservation: &BTreeMap<String, Quantity>,
    reserved: &[MemoryReservation],
) -> Result<SystemReservedMemory, ManagerError> {
    validate_reserved_memory(machine, node_allocatable_reservation, reserved)?;
    convert_reserved(machine, reserved)
}

/// Upstream `manager`, without its own lock (the kubelet holds it behind one).
pub struct Manager {
    policy: Box<dyn Policy>,
    state: Option<Box<dyn State>>,
    sources: Option<ManagerSources>,
    container_map: ContainerMap,
    allocatable_memory: Vec<Block>,
}

impl Manager {
    /// `NewManager`. `node_allocatable_reservation` is the container manager's
    /// `GetNodeAllocatableReservation` (kube-reserved + system-reserved + hard eviction).
    pub fn new(
        policy_name: &str,
        machine_info: &MachineInfo,
        node_allocatable_reservation: &BTreeMap<String, Quantity>,
        reserved_memory: &[MemoryReservation],
        affinity: Arc<dyn Store>,
        gate: &FeatureGate,
    ) -> Result<Manager, ManagerError> {
        let policy: Box<dyn Policy> = match policy_name {
            POLICY_NONE => Box::new(NonePolicy),
            POLICY_STATIC => {
                let reserved = get_system_reserved_memory(
                    machine_info,
                    node_allocatable_reservation,
                    reserved_memory,
                )?;
                Box::new(StaticPolicy::new(
                    machine_info.clone(),
                    reserved,
                    affinity,
                    gate,
                )?)
            }
            POLICY_BEST_EFFORT => return Err(ManagerError::BestEffortNotAvailable),
            other => return Err(ManagerError::UnknownPolicy(other.to_owned())),
        };
        Ok(Manager::with_policy(policy))
    }

    /// A manager of `policy`, not started (tests: upstream builds `manager{}` directly).
    pub fn with_policy(policy: Box<dyn Policy>) -> Manager {
        Manager {
            policy,
            state: None,
            sources: None,
            container_map: ContainerMap::new(),
            allocatable_memory: Vec::new(),
        }
    }

    /// A started manager from its parts (tests).
    pub fn with_state(
        policy: Box<dyn Policy>,
        state: Box<dyn State>,
        sources: Option<ManagerSources>,
        container_map: ContainerMap,
    ) -> Manager {
        Manager {
            allocatable_memory: policy.get_allocatable_memory(state.as_ref()),
            policy,
            state: Some(state),
            sources,
            container_map,
        }
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }

    /// `Start`: the state from `memory_manager_state` in `store` (`state_file` names it
    /// in errors), checked by the policy.
    pub fn start<S: CheckpointStore + 'static>(
        &mut self,
        sources: ManagerSources,
        store: S,
        state_file: &str,
        initial_containers: ContainerMap,
    ) -> Result<(), ManagerError> {
        tracing::info!(policy = self.policy.name(), "Starting memorymanager");
        self.sources = Some(sources);
        self.container_map = initial_containers;
        let state = StateCheckpoint::new(
            store,
            state_file,
            MEMORY_MANAGER_STATE_FILE_NAME,
            self.policy.name(),
        )
        .inspect_err(|err| {
            tracing::error!(%err, "Could not initialize checkpoint manager, please drain node and remove policy state file");
        })?;
        let mut state: Box<dyn State> = Box::new(state);
        self.policy
            .start(state.as_mut())
            .inspect_err(|err| tracing::error!(%err, "Policy start error"))?;
        self.allocatable_memory = self.policy.get_allocatable_memory(state.as_ref());
        self.state = Some(state);
        Ok(())
    }

    /// `AddContainer`: records the container id and gives back the memory of the regular
    /// init containers started before it.
    pub fn add_container(&mut self, pod: &Pod, container: &Container, container_id: &str) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        self.container_map.insert(
            container_id.to_owned(),
            (uid.clone(), container.name.clone()),
        );
        let inits = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.clone())
            .unwrap_or_default();
        for init in &inits {
            if init.name == container.name {
                break;
            }
            if is_restartable_init_container(init) {
                continue;
            }
            self.policy_remove_container_by_ref(&uid, &init.name);
        }
    }

    /// `GetMemoryNUMANodes`: the NUMA nodes of the container's blocks (`None` when none).
    pub fn get_memory_numa_nodes(
        &self,
        pod: &Pod,
        container: &Container,
    ) -> Option<BTreeSet<usize>> {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let nodes: BTreeSet<usize> = self
            .state
            .as_deref()
            .and_then(|s| s.get_memory_blocks(uid, &container.name))
            .unwrap_or_default()
            .iter()
            .flat_map(|b| b.numa_affinity.iter().copied())
            .collect();
        if nodes.is_empty() {
            tracing::trace!(pod_uid = uid, container = %container.name, "NUMA nodes not available for allocation");
            return None;
        }
        tracing::info!(pod_uid = uid, container = %container.name, numa_nodes = ?nodes, "Memory affinity");
        Some(nodes)
    }

    /// `Allocate`: stale assignments dropped, then the policy's allocation.
    pub fn allocate(&mut self, pod: &Pod, container: &Container) -> Result<(), ManagerError> {
        self.remove_stale_state();
        let Some(state) = self.state.as_deref_mut() else {
            // The `None` policy allocates nothing, started or not (as upstream's).
            if self.policy.name() == POLICY_NONE {
                return Ok(());
            }
            return Err(ManagerError::NotStarted);
        };
        self.policy
            .allocate(state, pod, container)
            .inspect_err(|err| tracing::error!(%err, container = %container.name, "Allocate error"))
            .map_err(ManagerError::Policy)
    }

    /// `RemoveContainer` by container id (unknown ids are logged and ignored).
    pub fn remove_container(&mut self, container_id: &str) {
        let Some((pod_uid, name)) = self.container_map.get(container_id).cloned() else {
            tracing::error!(container_id, "Failed to get container from container map");
            return;
        };
        self.policy_remove_container_by_ref(&pod_uid, &name);
    }

    /// `State()`.
    pub fn state_reader(&self) -> Option<&dyn State> {
        self.state.as_deref()
    }

    /// The container ids the manager knows (`containerMap`).
    pub fn container_map(&self) -> &ContainerMap {
        &self.container_map
    }

    /// `GetPodTopologyHints`.
    pub fn get_pod_topology_hints(&mut self, pod: &Pod) -> ResourceHints {
        self.remove_stale_state();
        let Some(state) = self.state.as_deref() else {
            return ResourceHints::new();
        };
        self.policy.get_pod_topology_hints(state, pod)
    }

    /// `GetTopologyHints`.
    pub fn get_topology_hints(&mut self, pod: &Pod, container: &Container) -> ResourceHints {
        self.remove_stale_state();
        let Some(state) = self.state.as_deref() else {
            return ResourceHints::new();
        };
        self.policy.get_topology_hints(state, pod, container)
    }

    /// `GetAllocatableMemory` (set at start).
    pub fn get_allocatable_memory(&self) -> Vec<Block> {
        self.allocatable_memory.clone()
    }

    /// `GetMemory`: the container's blocks.
    pub fn get_memory(&self, pod_uid: &str, container_name: &str) -> Vec<Block> {
        self.state
            .as_deref()
            .and_then(|s| s.get_memory_blocks(pod_uid, container_name))
            .unwrap_or_default()
    }

    /// `removeStaleState`: drops the blocks and container ids of containers no longer in
    /// an active pod (once every source is ready).
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
            let spec = pod.spec.as_ref();
            for c in spec
                .and_then(|s| s.init_containers.as_ref())
                .into_iter()
                .flatten()
                .chain(spec.map(|s| s.containers.iter()).into_iter().flatten())
            {
                active.insert((uid.clone(), c.name.clone()));
            }
        }
        let assignments = self
            .state
            .as_deref()
            .map(|s| s.get_memory_assignments())
            .unwrap_or_default();
        for (pod_uid, containers) in assignments {
            for name in containers.keys() {
                if !active.contains(&(pod_uid.clone(), name.clone())) {
                    tracing::debug!(pod_uid, container_name = %name, "RemoveStaleState removing state");
                    self.policy_remove_container_by_ref(&pod_uid, name);
                }
            }
        }
        let stale: Vec<(String, String)> = self
            .container_map
            .values()
            .filter(|key| !active.contains(*key))
            .cloned()
            .collect();
        for (pod_uid, name) in stale {
            tracing::debug!(pod_uid, container_name = %name, "RemoveStaleState removing state");
            self.policy_remove_container_by_ref(&pod_uid, &name);
        }
    }

    fn policy_remove_container_by_ref(&mut self, pod_uid: &str, container_name: &str) {
        if let Some(state) = self.state.as_deref_mut() {
            self.policy.remove_container(state, pod_uid, container_name);
        }
        self.container_map
            .retain(|_, (p, c)| !(p == pod_uid && c == container_name));
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
