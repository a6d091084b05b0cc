//! The kubelet's CPU manager: upstream `NewContainerManager` (`cpumanager.NewManager` with
//! `cpuManagerPolicy`, `cpuManagerPolicyOptions`, `cpuManagerReconcilePeriod`, the
//! machine's CPU topology, `reservedSystemCPUs` and `GetNodeAllocatableReservation`) and
//! `containerManagerImpl.Start` (`cpuManager.Start` with `GetActivePods`, the sources, the
//! status manager and the runtime's containers from
//! `buildContainerMapAndRunningSetFromRuntime`); it is built with the topology manager
//! (`topology_manager.rs`), whose admit handler asks it for hints and has it allocate;
//! the runtime's internal lifecycle is set up by `NewMainKubelet`. The manager lives in
//! `kubelet-cpumanager`.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kubelet_config::KubeletServer;
use kubelet_cpumanager::kubelet::CpuManager;
use kubelet_cpumanager::manager::{
    ActivePods, Manager, ManagerSources, PodStatusProvider, SourcesReady,
};
use kubelet_cpumanager::state::{CPU_MANAGER_STATE_FILE_NAME, ContainerMap, FileCheckpointStore};
use kubelet_cri::RuntimeService;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::Kubelet;
use crate::startup::RunError;

/// `cpuManagerReconcilePeriod`'s default.
const DEFAULT_RECONCILE_PERIOD: Duration = Duration::from_secs(10);

/// `cpumanager.NewManager` as `NewContainerManager` calls it, on the CPU topology
/// `topology` (cAdvisor's machine info), reading NUMA affinities from the topology
/// manager `affinity`; its error stops the start with upstream's message (built by
/// [`super::topology_manager::new_resource_managers`], which `check_startable` calls
/// too).
pub fn new_manager_with_topology(
    server: &KubeletServer,
    machine: &kubelet_cm::MachineInfo,
    node_config: &kubelet_cm::NodeConfig,
    topology: &kubelet_cpumanager::MachineInfo,
    affinity: Arc<kubelet_topologymanager::Manager>,
) -> Result<Manager, RunError> {
    let c = &server.config;
    let capacity = kubelet_cm::capacity_from_machine_info(machine, &[]);
    let reservation = node_config.node_allocatable_reservation(&capacity);
    let policy = if c.cpu_manager_policy.is_empty() {
        "none"
    } else {
        c.cpu_manager_policy.as_str()
    };
    Manager::new(
        policy,
        &c.cpu_manager_policy_options,
        c.cpu_manager_reconcile_period
            .as_std()
            .unwrap_or(DEFAULT_RECONCILE_PERIOD),
        topology,
        &node_config.reserved_system_cpus,
        reservation.get("cpu"),
        affinity,
        &server.feature_gates,
    )
    .map_err(|e| RunError::Kubelet(e.to_string()))
}

/// Whether `cpuManagerPolicy` is `static`.
pub fn is_static(server: &KubeletServer) -> bool {
    server.config.cpu_manager_policy == kubelet_cpumanager::policy_static::POLICY_STATIC
}

/// What the manager reads from the kubelet, bound once the kubelet exists (the manager is
/// built first: its admit handler and lifecycle hooks are part of the kubelet).
#[derive(Default)]
pub(super) struct LateBound {
    kubelet: OnceLock<Weak<Kubelet>>,
}

impl LateBound {
    fn kubelet(&self) -> Option<Arc<Kubelet>> {
        self.kubelet.get().and_then(Weak::upgrade)
    }
}

#[derive(Clone)]
pub(super) struct Sources(pub(super) Arc<LateBound>);

impl ActivePods for Sources {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.0
            .kubelet()
            .map(|k| k.active_pods())
            .unwrap_or_default()
    }
}

impl SourcesReady for Sources {
    fn all_ready(&self) -> bool {
        self.0.kubelet().is_some_and(|k| k.sources_ready())
    }
}

impl PodStatusProvider for Sources {
    fn get_pod_status(&self, pod_uid: &str) -> Option<PodStatus> {
        self.0
            .kubelet()
            .and_then(|k| k.status_manager.get_pod_status(pod_uid))
    }
}

impl Sources {
    /// Sources reading `kubelet` (bound once it exists).
    pub(super) fn bound(kubelet: &Arc<Kubelet>) -> Sources {
        let late = Arc::new(LateBound::default());
        let _ = late.kubelet.set(Arc::downgrade(kubelet));
        Sources(late)
    }

    /// The manager's view of the pods.
    pub(super) fn manager_sources(&self) -> ManagerSources {
        ManagerSources {
            active_pods: Box::new(self.clone()),
            sources_ready: Box::new(self.clone()),
            pod_status_provider: Box::new(self.clone()),
        }
    }
}

/// `buildContainerMapAndRunningSetFromRuntime`: container id → (pod UID, container name)
/// of every container whose sandbox the runtime lists (errors leave the map short, as
/// upstream ignores them).
pub(super) async fn container_map_from_runtime(runtime: &dyn RuntimeService) -> ContainerMap {
    let sandboxes: std::collections::HashMap<String, String> = runtime
        .list_pod_sandbox_kubelet_keys(None)
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| Some((s.id, s.metadata?.uid)))
        .collect();
    let mut map = ContainerMap::new();
    for c in runtime
        .list_containers_kubelet_keys(None)
        .await
        .unwrap_or_default()
    {
        let name = c.metadata.map(|m| m.name).unwrap_or_default();
        let Some(uid) = sandboxes.get(&c.pod_sandbox_id) else {
            tracing::info!(pod_sandbox_id = %c.pod_sandbox_id, container_name = %name, container_id = %c.id, "No PodSandBox found for the container");
            continue;
        };
        map.insert(c.id, (uid.clone(), name));
    }
    map
}

/// `cpuManager.Start` (`containerManagerImpl.Start`, before the sync loop admits any pod):
/// the state from `<root-dir>/cpu_manager_state` (written on first start; a checkpoint of
/// another policy or an invalid one stops the kubelet, as upstream's), then the reconcile
/// loop on its own task (not with the `none` policy).
pub async fn start(
    cpu: &CpuManager,
    kubelet: &Arc<Kubelet>,
    runtime: Arc<dyn RuntimeService>,
    cancel: CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    let sources = Sources::bound(kubelet);
    let initial = container_map_from_runtime(runtime.as_ref()).await;
    let root = kubelet.root_dir.clone();
    let state_file = root.join(CPU_MANAGER_STATE_FILE_NAME);
    let period = cpu
        .start(
            sources.manager_sources(),
            FileCheckpointStore::new(root),
            &state_file.to_string_lossy(),
            initial,
        )
        .map_err(|e| {
            RunError::Kubelet(format!(
                "Failed to start ContainerManager: start cpu manager error: {e}"
            ))
        })?;
    if let Some(period) = period {
        tasks.spawn(cpu.clone().run_reconcile_loop(period, runtime, cancel));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(in crate::kubelet) mod tests {
    use super::*;
    use kubelet_cpumanager::state::FakeCheckpointStore;
    use kubelet_cpumanager::topology::{Cache, Core, Node};

    fn none_topology() -> Arc<kubelet_topologymanager::Manager> {
        Arc::new(
            kubelet_topologymanager::Manager::new(
                &[],
                "none",
                "container",
                &std::collections::BTreeMap::new(),
                kubelet_topologymanager::OptionGates::default(),
            )
            .unwrap(),
        )
    }

    /// Two cores on one socket and NUMA node.
    fn two_cpus() -> kubelet_cpumanager::MachineInfo {
        kubelet_cpumanager::MachineInfo {
            num_cores: 2,
            num_sockets: 1,
            topology: vec![Node {
                id: 0,
                cores: (0..2)
                    .map(|c| Core {
                        id: c,
                        threads: vec![c],
                        socket_id: 0,
                        caches: Vec::new(),
                        uncore_caches: vec![Cache::default()],
                    })
                    .collect(),
                caches: Vec::new(),
                distances: Some(vec![10]),
            }],
        }
    }

    pub(in crate::kubelet) fn machine() -> kubelet_cm::MachineInfo {
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

    /// `cpuManagerReconcilePeriod` (default 10s) is the static policy's loop period;
    /// the `none` policy runs no loop; the reservation comes from `kubeReserved` or
    /// `reservedSystemCPUs`.
    #[test]
    fn reconcile_period_follows_the_configuration() {
        for (extra, want) in [
            (
                "cpuManagerPolicy: static\nkubeReserved:\n  cpu: \"1\"\ncpuManagerReconcilePeriod: 3s\n",
                Some(Duration::from_secs(3)),
            ),
            (
                "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n",
                Some(Duration::from_secs(10)),
            ),
            ("cpuManagerReconcilePeriod: 3s\n", None),
        ] {
            let server = crate::kubelet::test_config::server(extra);
            let node_config =
                crate::startup::container_manager_config(&server, &machine()).unwrap();
            let manager = new_manager_with_topology(
                &server,
                &machine(),
                &node_config,
                &two_cpus(),
                none_topology(),
            )
            .unwrap();
            let cpu = CpuManager::new(manager);
            let sources = Sources(Arc::new(LateBound::default()));
            let period = cpu
                .start(
                    ManagerSources {
                        active_pods: Box::new(sources.clone()),
                        sources_ready: Box::new(sources.clone()),
                        pod_status_provider: Box::new(sources),
                    },
                    FakeCheckpointStore::new(),
                    "cpu_manager_state",
                    ContainerMap::new(),
                )
                .unwrap();
            assert_eq!(period, want, "{extra}");
        }
        // Without any CPU reservation, the static policy is refused as upstream.
        let server = crate::kubelet::test_config::server("cpuManagerPolicy: static\n");
        let node_config = crate::startup::container_manager_config(&server, &machine()).unwrap();
        let err = new_manager_with_topology(
            &server,
            &machine(),
            &node_config,
            &two_cpus(),
            none_topology(),
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().contains(
                "[cpumanager] unable to determine reserved CPU resources for static policy"
            ),
            "{err}"
        );
    }
}
