//! The kubelet's topology manager and the resource managers that are its hint
//! providers: upstream `NewContainerManager` (`topologymanager.NewManager` with
//! `topologyManagerPolicy`, `topologyManagerScope`, `topologyManagerPolicyOptions` and
//! cAdvisor's NUMA nodes, then each resource manager built with the topology manager as
//! its affinity store and registered with `AddHintProvider`). The manager lives in
//! `kubelet-topologymanager`; its admit handler is `GetAllocateResourcesPodAdmitHandler`.

use std::sync::Arc;

use kubelet_config::KubeletServer;
use kubelet_cpumanager::kubelet::CpuManager;
use kubelet_topologymanager::{Manager, NumaNode, OptionGates};

use super::cpu_manager;
use crate::startup::RunError;

/// The topology manager and its hint providers, built together (upstream's order:
/// the topology manager first, then the CPU manager).
#[derive(Clone, Debug)]
pub struct ResourceManagers {
    /// The topology manager: the pod admit handler and the affinity store.
    pub topology: Arc<Manager>,
    /// The CPU manager (a hint provider).
    pub cpu: CpuManager,
    /// The memory manager (a hint provider, registered after the CPU manager).
    pub memory: kubelet_memorymanager::kubelet::MemoryManager,
}

impl ResourceManagers {
    /// `AddHintProvider`: `provider` is asked for hints at every admission after those
    /// registered before it (the memory manager registers here, after the CPU manager).
    pub fn add_hint_provider(&self, provider: Arc<dyn kubelet_topologymanager::HintProvider>) {
        self.topology.add_hint_provider(provider);
    }
}

/// `topologymanager.NewManager` as `NewContainerManager` calls it: the options only
/// when the `TopologyManagerPolicyOptions` gate is on (its refusal otherwise is
/// `startup::check_resource_managers`'s).
pub fn new_topology_manager(
    server: &KubeletServer,
    numa_nodes: &[NumaNode],
) -> Result<Manager, RunError> {
    let c = &server.config;
    let gates = &server.feature_gates;
    let policy = if c.topology_manager_policy.is_empty() {
        kubelet_topologymanager::policy::POLICY_NONE
    } else {
        c.topology_manager_policy.as_str()
    };
    let no_options = std::collections::BTreeMap::new();
    let options = if gates.enabled(kubelet_features::gates::TOPOLOGY_MANAGER_POLICY_OPTIONS) {
        &c.topology_manager_policy_options
    } else {
        &no_options
    };
    Manager::new(
        numa_nodes,
        policy,
        &c.topology_manager_scope,
        options,
        OptionGates {
            alpha: gates.enabled(kubelet_features::gates::TOPOLOGY_MANAGER_POLICY_ALPHA_OPTIONS),
            beta: gates.enabled(kubelet_features::gates::TOPOLOGY_MANAGER_POLICY_BETA_OPTIONS),
        },
    )
    .map_err(|e| RunError::Kubelet(e.to_string()))
}

/// The machine's topology from `/sys` (cAdvisor's machine info), then
/// [`new_resource_managers_with_topology`]. `check_startable` calls it too, so a start
/// and `--print-config` refuse the same configurations before anything is written.
pub fn new_resource_managers(
    server: &KubeletServer,
    machine: &kubelet_cm::MachineInfo,
    node_config: &kubelet_cm::NodeConfig,
) -> Result<ResourceManagers, RunError> {
    let topology =
        kubelet_cpumanager::machine_info_from_sysfs(&kubelet_cpumanager::RealSysFs::new())
            .map_err(|e| RunError::Kubelet(format!("failed to read the CPU topology: {e}")))?;
    let memory = super::memory_manager::memory_topology(server)?;
    new_resource_managers_with_topology(server, machine, node_config, &topology, &memory)
}

/// The topology manager from the NUMA nodes of `topology`, the CPU and memory managers
/// (the memory per NUMA node from `memory`) reading its affinities, registered as its hint
/// providers in upstream's order.
pub fn new_resource_managers_with_topology(
    server: &KubeletServer,
    machine: &kubelet_cm::MachineInfo,
    node_config: &kubelet_cm::NodeConfig,
    topology: &kubelet_cpumanager::MachineInfo,
    memory: &kubelet_memorymanager::MachineInfo,
) -> Result<ResourceManagers, RunError> {
    let manager = Arc::new(new_topology_manager(server, &topology.numa_nodes())?);
    let cpu = CpuManager::new(cpu_manager::new_manager_with_topology(
        server,
        machine,
        node_config,
        topology,
        manager.clone(),
    )?);
    let memory = kubelet_memorymanager::kubelet::MemoryManager::new(
        super::memory_manager::new_manager_with_topology(
            server,
            machine,
            node_config,
            memory,
            manager.clone(),
        )?,
    );
    let managers = ResourceManagers {
        topology: manager,
        cpu,
        memory,
    };
    managers.add_hint_provider(Arc::new(managers.cpu.clone()));
    managers.add_hint_provider(Arc::new(managers.memory.clone()));
    Ok(managers)
}

#[cfg(test)]
#[path = "topology_manager_tests.rs"]
mod tests;
