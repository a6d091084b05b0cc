//! Node registration, node status and the node lease of a kubelet in API server mode.
//!
//! | Module | Upstream |
//! | --- | --- |
//! | [`node_status`] | `pkg/kubelet/kubelet_node_status.go`, the status goroutines of `kubelet.go` `Run` |
//! | [`setters`] | `pkg/kubelet/nodestatus/setters.go` |
//! | [`runtime_state`] | `pkg/kubelet/runtime.go`, `kubelet.go` `updateRuntimeUp` |
//! | [`lease`] | `k8s.io/component-helpers/apimachinery/lease/controller.go`, `pkg/kubelet/util/nodelease.go` |
//! | [`patch`] | `k8s.io/component-helpers/node/util/status.go` `PatchNodeStatus` (strategic merge patch) |
//! | [`api`], [`fake`] | the client-go calls, over kube-rs, and a recording fake |
//! | [`source`] | what node status reads from the rest of the kubelet and from the host |
//!
//! [`start`] spawns what upstream's `Kubelet.Run` starts when it has a client: the runtime
//! status poll (5 s), the status loop (registration first, then a status computed every
//! `nodeStatusUpdateFrequency` and patched when it changed or every
//! `nodeStatusReportFrequency`), the fast status update (every 100 ms until the node is
//! reported Ready, at most 2 min), and the lease controller (renewed every
//! `nodeLeaseDurationSeconds / 4`). The API server being unreachable is never fatal: each
//! loop logs and retries with upstream's back-off.

pub mod api;
pub mod config;
pub mod fake;
pub mod lease;
pub mod node_status;
pub mod patch;
pub mod runtime_state;
pub mod setters;
pub mod source;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use kubelet_container::clock::Clock;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use api::{ApiError, KubeNodeApi, NAMESPACE_NODE_LEASE, NodeApi};
pub use config::NodeStatusConfig;
pub use fake::FakeNodeApi;
pub use lease::LeaseController;
pub use node_status::NodeStatusManager;
pub use source::{
    FakeHostNetwork, FakeNodeStatusSource, HostNetwork, Machine, NodeEvent, NodePressure,
    NodeStatusSource, RealHostNetwork,
};

/// The API calls, one per client (upstream uses the main client to register, the
/// heartbeat client for status and lease).
#[derive(Clone)]
pub struct NodeApis {
    /// Through the main client (`KubeClient`).
    pub main: Arc<dyn NodeApi>,
    /// Through the heartbeat client (`HeartbeatClient`).
    pub heartbeat: Arc<dyn NodeApi>,
    /// The kubelet's own-Node informer, if it has one (read before asking the API server).
    pub node_lister: Option<node_status::NodeListerFn>,
}

/// Starts registration + node status and the lease controller (upstream `Kubelet.Run`
/// with a kube client) as tasks of `tasks`: the runtime status poll, the status loop and
/// the lease controller. Everything stops when `cancel` is cancelled. Returns the status
/// manager (registration state, runtime state).
pub fn start(
    apis: NodeApis,
    source: Arc<dyn NodeStatusSource>,
    host: Arc<dyn HostNetwork>,
    cfg: NodeStatusConfig,
    clock: Arc<dyn Clock>,
    cancel: CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Arc<NodeStatusManager> {
    let lease = LeaseController::for_node(
        apis.heartbeat.clone(),
        clock.clone(),
        &cfg.node_name,
        cfg.node_lease_duration_seconds,
    );
    let mut manager = NodeStatusManager::new(cfg, apis.main, apis.heartbeat, source, host, clock);
    if let Some(lister) = apis.node_lister {
        manager = manager.with_node_lister(lister);
    }
    let manager = Arc::new(manager);
    let weak = Arc::downgrade(&manager);
    let lease = lease.with_failure_hook(Arc::new(move || {
        if let Some(m) = weak.upgrade() {
            m.note_heartbeat_failure();
        }
    }));
    tasks.spawn(manager.clone().run_runtime_up(cancel.clone()));
    tasks.spawn(manager.clone().run(cancel.clone()));
    tasks.spawn(manager.clone().fast_status_update_once(cancel.clone()));
    tasks.spawn(lease.run(cancel));
    manager
}
