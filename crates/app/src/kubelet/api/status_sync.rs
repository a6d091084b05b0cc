//! `kl.statusManager.Start()` of `startKubelet`: the status manager's apiserver syncer
//! (`kubelet_status::StatusSyncer`) on the main client, asking the kubelet's pod manager
//! about pods and mirror pods and its pod workers whether containers may still run
//! (upstream `NewManager(kubeClient, podManager, klet, ...)`, `PodCouldHaveRunningContainers`).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubelet_client::KubeletClients;
use kubelet_container::RealClock;
use kubelet_status::{KubePodStatusApi, PodDeletionSafetyProvider, PodManager, StatusSyncer};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::kubelet::Kubelet;

/// The kubelet's pod manager and pod workers as the syncer sees them.
struct KubeletPods(Arc<Kubelet>);

impl PodManager for KubeletPods {
    fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<Pod>> {
        self.0.pod_manager.get(uid)
    }

    fn get_mirror_pod_by_pod(&self, pod: &Pod) -> Option<Arc<Pod>> {
        self.0.pod_manager.get_mirror_pod_by_pod(pod)
    }

    fn translate_pod_uid(&self, uid: &str) -> String {
        self.0.pod_manager.translate_pod_uid(uid)
    }

    fn pod_to_mirror(&self) -> HashMap<String, String> {
        self.0.pod_manager.get_uid_translations().0
    }
}

impl PodDeletionSafetyProvider for KubeletPods {
    fn pod_could_have_running_containers(&self, uid: &str) -> bool {
        self.0.pod_workers.could_have_running_containers(uid)
    }
}

/// Starts the syncer on the main client until `cancel`.
pub(crate) fn start_status_sync(
    clients: &KubeletClients,
    kubelet: &Arc<Kubelet>,
    cancel: CancellationToken,
    tasks: &mut JoinSet<()>,
) {
    // A static pod's first status starts from its mirror pod's (weak: the status manager
    // lives in the kubelet).
    let weak = Arc::downgrade(kubelet);
    kubelet
        .status_manager
        .set_mirror_pod_status_source(Arc::new(move |pod| {
            let kl = weak.upgrade()?;
            KubeletPods(kl).get_mirror_pod_by_pod(pod)?.status.clone()
        }));
    let pods = Arc::new(KubeletPods(kubelet.clone()));
    let syncer = StatusSyncer::new(
        (*kubelet.status_manager).clone(),
        Arc::new(KubePodStatusApi::new(clients.main.clone())),
        pods.clone(),
        pods,
        Arc::new(RealClock),
    );
    tasks.spawn(syncer.run(cancel));
}
