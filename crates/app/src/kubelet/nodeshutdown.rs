//! The kubelet's side of graceful node shutdown (`kubelet.go` `NewMainKubelet`:
//! `nodeshutdown.NewManager` with `GetActivePods`, `killPodNow`, `syncNodeStatus`;
//! the manager appended to the admit handlers; `initializeRuntimeDependentModules`:
//! `shutdownManager.Start`, its error logged). The manager lives in
//! `kubelet-nodeshutdown`.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubelet_nodeshutdown::{Config, Deps, Manager, PodKiller, PodStatusFn, SystemBus};
use kubelet_nodestatus::NodeStatusManager;
use tokio_util::sync::CancellationToken;

use super::pod_manager::pod_uid;
use super::{Kubelet, KubeletDeps};

/// Upstream `podAttachAndMountRetryInterval`: how often `WaitForUnmount` looks again.
const UNMOUNT_POLL_INTERVAL: Duration = Duration::from_millis(300);

/// What the manager needs from the kubelet, bound once the kubelet (and, in API server
/// mode, the node status manager) exist.
#[derive(Default)]
pub struct LateBound {
    kubelet: OnceLock<Weak<Kubelet>>,
    node_status: OnceLock<(Arc<NodeStatusManager>, CancellationToken)>,
}

impl LateBound {
    fn kubelet(&self) -> Option<Arc<Kubelet>> {
        self.kubelet.get().and_then(Weak::upgrade)
    }
}

#[async_trait::async_trait]
impl PodKiller for LateBound {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.kubelet().map(|k| k.active_pods()).unwrap_or_default()
    }

    async fn kill_pod(
        &self,
        pod: Arc<Pod>,
        is_evicted: bool,
        grace_period_override: i64,
        status_fn: PodStatusFn,
    ) -> Result<(), String> {
        let k = self.kubelet().ok_or("kubelet stopped")?;
        k.kill_pod_with(&pod, is_evicted, grace_period_override, status_fn)
            .await
    }

    async fn wait_for_all_pods_unmount(&self, pods: &[Arc<Pod>]) -> Result<(), String> {
        let k = self.kubelet().ok_or("kubelet stopped")?;
        loop {
            let mounted: Vec<String> = pods
                .iter()
                .filter(|p| k.volume_manager.has_mounted_volumes(pod_uid(p)))
                .map(|p| pod_uid(p).to_string())
                .collect();
            if mounted.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(UNMOUNT_POLL_INTERVAL).await;
        }
    }

    fn sync_node_status(&self) {
        // Standalone: no node status to sync.
        if let Some((m, cancel)) = self.node_status.get() {
            let (m, cancel) = (m.clone(), cancel.clone());
            tokio::spawn(async move {
                m.sync_node_status(&cancel).await;
            });
        }
    }
}

/// The manager (stub or real) and its late-bound inputs.
pub struct NodeShutdown {
    /// The manager: admit handler, `ShutdownStatus` for node status.
    pub manager: Arc<dyn Manager>,
    late: Arc<LateBound>,
}

impl NodeShutdown {
    /// Binds the node status manager (`SyncNodeStatusFunc`) in API server mode.
    pub fn bind_node_status(&self, m: Arc<NodeStatusManager>, cancel: CancellationToken) {
        let _ = self.late.node_status.set((m, cancel));
    }
}

/// The manager's configuration from the kubelet's (upstream `nodeshutdown.Config`).
pub fn shutdown_config(server: &kubelet_config::KubeletServer) -> Config {
    let c = &server.config;
    let gates = &server.feature_gates;
    Config {
        graceful_node_shutdown: gates.enabled(kubelet_features::gates::GRACEFUL_NODE_SHUTDOWN),
        graceful_node_shutdown_based_on_pod_priority: gates
            .enabled(kubelet_features::gates::GRACEFUL_NODE_SHUTDOWN_BASED_ON_POD_PRIORITY),
        shutdown_grace_period_requested: c.shutdown_grace_period.as_std().unwrap_or_default(),
        shutdown_grace_period_critical_pods: c
            .shutdown_grace_period_critical_pods
            .as_std()
            .unwrap_or_default(),
        shutdown_grace_period_by_pod_priority: c
            .shutdown_grace_period_by_pod_priority
            .iter()
            .map(|p| kubelet_nodeshutdown::ShutdownGracePeriodByPodPriority {
                priority: p.priority,
                shutdown_grace_period_seconds: p.shutdown_grace_period_seconds,
            })
            .collect(),
        state_directory: std::path::PathBuf::from(&server.flags.root_directory),
    }
}

/// Upstream `nodeshutdown.NewManager` in `NewMainKubelet`: logind on the system bus
/// (`DBUS_SYSTEM_BUS_ADDRESS`, else `/var/run/dbus/system_bus_socket`).
pub fn new_manager(deps: &KubeletDeps<'_>) -> NodeShutdown {
    let late = Arc::new(LateBound::default());
    let manager = kubelet_nodeshutdown::new_manager(
        &shutdown_config(deps.server),
        Deps {
            connector: Arc::new(SystemBus::default()),
            pods: late.clone(),
            recorder: deps.recorder.clone(),
            node_ref: kubelet_container::events::node_ref(&deps.node_name),
            clock: Arc::new(kubelet_container::RealClock),
        },
    );
    NodeShutdown { manager, late }
}

/// Upstream `shutdownManager.Start()` at the end of `initializeRuntimeDependentModules`:
/// binds the kubelet and starts the manager on its own task; a failure is logged
/// (`Failed to start node shutdown manager`) and the kubelet goes on.
pub fn start(ns: &NodeShutdown, kubelet: &Arc<Kubelet>, tasks: &mut tokio::task::JoinSet<()>) {
    let _ = ns.late.kubelet.set(Arc::downgrade(kubelet));
    let manager = ns.manager.clone();
    tasks.spawn(async move {
        if let Err(e) = manager.start().await {
            tracing::error!(err = %e, "Failed to start node shutdown manager");
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::kubelet::test_config::server;

    /// The configuration reaches the manager: the periods, the gates, the root directory.
    #[test]
    fn shutdown_config_from_the_kubelet_configuration() {
        let s = server("shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n");
        let c = shutdown_config(&s);
        assert!(c.graceful_node_shutdown && c.graceful_node_shutdown_based_on_pod_priority);
        assert_eq!(c.shutdown_grace_period_requested, Duration::from_secs(30));
        assert_eq!(
            c.shutdown_grace_period_critical_pods,
            Duration::from_secs(10)
        );
        assert_eq!(
            kubelet_nodeshutdown::manager::shutdown_grace_periods(&c),
            kubelet_nodeshutdown::manager::migrate_config(
                Duration::from_secs(30),
                Duration::from_secs(10)
            )
        );
        let s = server(
            "shutdownGracePeriodByPodPriority:\n- priority: 100\n  shutdownGracePeriodSeconds: 5\n- priority: 0\n  shutdownGracePeriodSeconds: 7\n",
        );
        let c = shutdown_config(&s);
        let periods = kubelet_nodeshutdown::manager::shutdown_grace_periods(&c);
        assert_eq!(periods[0].priority, 0);
        assert_eq!(periods[1].shutdown_grace_period_seconds, 5);
        assert_eq!(
            c.state_directory,
            std::path::PathBuf::from(&s.flags.root_directory)
        );
    }
}
