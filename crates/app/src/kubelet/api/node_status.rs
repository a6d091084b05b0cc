//! Node registration, node status and the node lease in API server mode: the kubelet's side
//! of `kubelet-nodestatus` (upstream `Kubelet.Run`'s `syncNodeStatus`, `updateRuntimeUp`
//! and `nodeLeaseController.Run` goroutines). The logic lives in `crates/nodestatus`; this
//! module answers its questions from the kubelet's runtime, PLEG and machine info.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ObjectReference;
use kubelet_client::KubeletClients;
use kubelet_container::events::node_ref;
use kubelet_container::{EventRecorder, Image, RealClock, Runtime, RuntimeStatus};
use kubelet_nodestatus::runtime_state::HealthCheck;
use kubelet_nodestatus::{
    KubeNodeApi, Machine, NodeApis, NodeEvent, NodeStatusConfig, NodeStatusSource, RealHostNetwork,
};
use kubelet_pleg::GenericPleg;
use kubelet_runtime::image_gc::ImageGcManager;
use tokio::task::JoinSet;

use super::super::{Kubelet, KubeletDeps};

/// What node status reads, from the running kubelet.
struct KubeletNodeStatusSource {
    runtime: Arc<dyn Runtime>,
    /// The image manager's list cache (`GetImageList`).
    images: Arc<dyn ImageGcManager>,
    pleg: Arc<GenericPleg>,
    /// cAdvisor's machine info is read once at start; so is ours.
    machine: Machine,
    root_dir: PathBuf,
    recorder: Arc<dyn EventRecorder>,
    node_ref: ObjectReference,
    eviction: Arc<kubelet_eviction::ManagerImpl>,
    shutdown: Arc<dyn kubelet_nodeshutdown::Manager>,
}

#[async_trait]
impl NodeStatusSource for KubeletNodeStatusSource {
    fn machine(&self) -> Result<Machine, String> {
        Ok(self.machine.clone())
    }

    fn root_fs_capacity(&self) -> Result<u64, String> {
        kubelet_cm::capacity::fs_capacity(&self.root_dir)
            .map_err(|e| format!("failed to get rootfs info: {e}"))
    }

    fn runtime_type(&self) -> String {
        self.runtime.type_name().to_string()
    }

    async fn runtime_version(&self) -> Result<String, String> {
        self.runtime
            .version()
            .await
            .map(|v| v.runtime_version)
            .map_err(|e| e.to_string())
    }

    async fn runtime_status(&self) -> Result<RuntimeStatus, String> {
        self.runtime.status().await.map_err(|e| e.to_string())
    }

    fn pressure(&self) -> kubelet_nodestatus::NodePressure {
        kubelet_nodestatus::NodePressure {
            memory: self.eviction.is_under_memory_pressure(),
            disk: self.eviction.is_under_disk_pressure(),
            pid: self.eviction.is_under_pid_pressure(),
        }
    }

    fn shutdown_status(&self) -> Result<(), String> {
        self.shutdown.shutdown_status()
    }

    async fn images(&self) -> Result<Vec<Image>, String> {
        // `setNodeStatusImages`: the image manager's cache, refreshed every 30 s.
        Ok(self.images.get_image_list())
    }

    fn health_checks(&self) -> Vec<HealthCheck> {
        vec![(
            "PLEG".to_string(),
            self.pleg.healthy().map_err(|e| e.to_string()),
        )]
    }

    fn record_event(&self, event: NodeEvent) {
        self.recorder.event(
            &self.node_ref,
            event.event_type,
            &event.reason,
            &event.message,
        );
    }
}

/// Starts registration, the node status loop and the lease controller.
pub(crate) fn start_node_status(
    deps: &KubeletDeps<'_>,
    clients: &Arc<KubeletClients>,
    kubelet: &Arc<Kubelet>,
    images: Arc<dyn ImageGcManager>,
    tasks: &mut JoinSet<()>,
) {
    let s = deps.server;
    // Without a cloud provider the node name is the hostname (`getNodeName`).
    let cfg = NodeStatusConfig::new(
        &s.config,
        &s.flags,
        &deps.node_name,
        &deps.node_name,
        deps.node_ips.clone(),
        deps.node_config.clone(),
    );
    let source = KubeletNodeStatusSource {
        runtime: kubelet.runtime.clone(),
        images,
        pleg: kubelet.pleg.clone(),
        machine: Machine {
            info: deps.machine.clone(),
            hugepages: kubelet_cm::read_hugepages(deps.host_fs.as_ref()),
        },
        root_dir: kubelet.root_dir.clone(),
        eviction: kubelet.eviction_manager.clone(),
        shutdown: kubelet.shutdown_manager.manager.clone(),
        recorder: kubelet.recorder.clone(),
        node_ref: node_ref(&deps.node_name),
    };
    let lister = kubelet.node_lister.clone();
    let apis = NodeApis {
        main: Arc::new(KubeNodeApi::new(clients.main.clone())),
        heartbeat: Arc::new(KubeNodeApi::new(clients.heartbeat.clone())),
        node_lister: Some(Arc::new(move || lister.get().map(|n| (*n).clone()))),
    };
    let manager = kubelet_nodestatus::start(
        apis,
        Arc::new(source),
        Arc::new(RealHostNetwork),
        cfg,
        Arc::new(RealClock),
        deps.shutdown.clone(),
        tasks,
    );
    // The shutdown manager's `SyncNodeStatusFunc`.
    kubelet
        .shutdown_manager
        .bind_node_status(manager, deps.shutdown.clone());
}
