//! The kubelet's memory manager: upstream `NewContainerManager` (`memorymanager.NewManager`
//! with `memoryManagerPolicy`, the machine's memory per NUMA node, the node allocatable
//! reservation, `reservedMemory` and the topology manager as its affinity store; built and
//! registered as a hint provider by `topology_manager::new_resource_managers`) and
//! `containerManagerImpl.Start` (`memoryManager.Start` with the active pods and the
//! runtime's containers, after the CPU manager's). The topology manager's admit handler
//! calls its `Allocate`; its lifecycle hooks run after the CPU manager's
//! (`runtime_setup::internal_lifecycle`). The manager lives in `kubelet-memorymanager`.

use std::sync::Arc;

use kubelet_config::KubeletServer;
use kubelet_cpumanager::state::FileCheckpointStore;
use kubelet_cri::RuntimeService;
use kubelet_memorymanager::kubelet::MemoryManager;
use kubelet_memorymanager::manager::{Manager, MemoryReservation};
use kubelet_memorymanager::policy::POLICY_NONE;
use kubelet_memorymanager::state::MEMORY_MANAGER_STATE_FILE_NAME;

use super::Kubelet;
use super::cpu_manager::{Sources, container_map_from_runtime};
use crate::startup::RunError;

/// `memoryManagerPolicy` (`None` when empty, its default).
pub fn policy(server: &KubeletServer) -> &str {
    let p = server.config.memory_manager_policy.as_str();
    if p.is_empty() { POLICY_NONE } else { p }
}

/// The machine's memory per NUMA node (cAdvisor's machine info), read from sysfs for the
/// `Static` policy only (the `None` policy does not look at it).
pub fn memory_topology(
    server: &KubeletServer,
) -> Result<kubelet_memorymanager::MachineInfo, RunError> {
    if policy(server) == POLICY_NONE {
        return Ok(kubelet_memorymanager::MachineInfo::default());
    }
    kubelet_memorymanager::machine_info_from_sysfs(&kubelet_cpumanager::RealSysFs::new())
        .map_err(|e| RunError::Kubelet(format!("failed to read the memory topology: {e}")))
}

/// `memorymanager.NewManager` as `NewContainerManager` calls it, on the memory topology
/// `memory`, reading affinities from `affinity` (the topology manager); its error stops the
/// start with upstream's message (`check_startable` builds it too, so `--print-config`
/// refuses the same configurations).
pub fn new_manager_with_topology(
    server: &KubeletServer,
    machine: &kubelet_cm::MachineInfo,
    node_config: &kubelet_cm::NodeConfig,
    memory: &kubelet_memorymanager::MachineInfo,
    affinity: Arc<dyn kubelet_topologymanager::Store>,
) -> Result<Manager, RunError> {
    let capacity = kubelet_cm::capacity_from_machine_info(machine, &[]);
    let reservation = node_config.node_allocatable_reservation(&capacity);
    let reserved: Vec<MemoryReservation> = server
        .config
        .reserved_memory
        .iter()
        .map(|r| MemoryReservation {
            numa_node: r.numa_node,
            limits: r.limits.clone(),
        })
        .collect();
    Manager::new(
        policy(server),
        memory,
        &reservation,
        &reserved,
        affinity,
        &server.feature_gates,
    )
    .map_err(|e| RunError::Kubelet(e.to_string()))
}

/// `memoryManager.Start` (`containerManagerImpl.Start`, after the CPU manager's, before the
/// sync loop admits any pod): the state from `<root-dir>/memory_manager_state` (written on
/// first start; a checkpoint of another policy or one that does not match the machine
/// stops the kubelet, as upstream's).
pub async fn start(
    memory: &MemoryManager,
    kubelet: &Arc<Kubelet>,
    runtime: &dyn RuntimeService,
) -> Result<(), RunError> {
    let sources = Sources::bound(kubelet);
    let initial = container_map_from_runtime(runtime).await;
    let root = kubelet.root_dir.clone();
    let state_file = root.join(MEMORY_MANAGER_STATE_FILE_NAME);
    memory
        .start(
            sources.manager_sources(),
            FileCheckpointStore::new(root),
            &state_file.to_string_lossy(),
            initial,
        )
        .map_err(|e| {
            RunError::Kubelet(format!(
                "Failed to start ContainerManager: start memory manager error: {e}"
            ))
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kubelet_memorymanager::{HugePagesInfo, Node};

    fn machine() -> kubelet_cm::MachineInfo {
        kubelet_cm::MachineInfo {
            online_cpus: kubelet_apimachinery::CpuSet::parse("0-1").unwrap(),
            memory_capacity: 8 << 30,
            machine_id: String::new(),
            boot_id: String::new(),
            system_uuid: String::new(),
            kernel_version: String::new(),
            os_image: String::new(),
        }
    }

    fn one_node() -> kubelet_memorymanager::MachineInfo {
        kubelet_memorymanager::MachineInfo {
            topology: vec![Node {
                id: 0,
                memory: 8 << 30,
                huge_pages: vec![HugePagesInfo {
                    page_size: 2048,
                    num_pages: 0,
                }],
            }],
        }
    }

    fn build(extra: &str) -> Result<Manager, RunError> {
        let server = crate::kubelet::test_config::server(extra);
        let node_config = crate::startup::container_manager_config(&server, &machine()).unwrap();
        new_manager_with_topology(
            &server,
            &machine(),
            &node_config,
            &one_node(),
            Arc::new(kubelet_topologymanager::FakeStore::default()),
        )
    }

    /// `reservedMemory` must add up to kube-reserved + system-reserved + the hard eviction
    /// threshold for memory (default `memory.available<100Mi`), as upstream's `NewManager`.
    #[test]
    fn reserved_memory_must_match_node_allocatable() {
        // 100Mi (eviction) + 400Mi (kube) = 500Mi.
        let ok = "memoryManagerPolicy: Static\nkubeReserved:\n  memory: 400Mi\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: 500Mi\n";
        assert_eq!(build(ok).unwrap().policy_name(), "Static");
        let err = build("memoryManagerPolicy: Static\nkubeReserved:\n  memory: 400Mi\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: 400Mi\n")
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "the total amount \"400Mi\" of type \"memory\" is not equal to the value \"500Mi\" determined by Node Allocatable feature"
        );
        let err = build("memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 1\n  limits:\n    memory: 100Mi\n")
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "the reserved memory configuration references a NUMA node 1 that does not exist on this machine"
        );
        // Without reservedMemory the eviction threshold alone does not match.
        let err = build("memoryManagerPolicy: Static\n").err().unwrap();
        assert_eq!(
            err.to_string(),
            "the total amount \"0\" of type \"memory\" is not equal to the value \"100Mi\" determined by Node Allocatable feature"
        );
        assert_eq!(build("").unwrap().policy_name(), "None");
        let err = build("memoryManagerPolicy: Fancy\n").err().unwrap();
        assert_eq!(err.to_string(), "unknown policy: \"Fancy\"");
    }
}
