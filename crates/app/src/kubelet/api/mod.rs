//! API server mode (`--kubeconfig`): the parts of `NewMainKubelet` and `startKubelet` that
//! need the API server clients. Each part lives in its own crate (node status and lease, the
//! API pod source and mirror pods, the status manager's API syncer, events); the modules
//! here only connect them to the kubelet's state.

pub(crate) mod certificates;
mod node_status;
pub(crate) mod objects;
pub(crate) mod pod_source;
mod status_sync;

use std::sync::Arc;

use kubelet_apipods::NodeLister;
use kubelet_client::KubeletClients;
use kubelet_podsource::PodConfig;
use tokio::task::{JoinHandle, JoinSet};

use super::{Kubelet, KubeletDeps};
use crate::startup::RunError;

/// `makePodSourceConfig`'s API server source (`config.NewSourceApiserver`), registered with
/// the file and URL sources, before `NewMainKubelet` asks which sources must have been seen;
/// and `NewMainKubelet`'s node informer, which fills `node` (the source waits for it).
pub(crate) fn start_api_pod_source(
    deps: &KubeletDeps<'_>,
    pod_config: &PodConfig,
    node: &NodeLister,
) -> Vec<JoinHandle<()>> {
    let Some(clients) = &deps.clients else {
        return Vec::new();
    };
    pod_source::start(clients, node, pod_config, &deps.shutdown)
}

/// `startKubelet`'s API side: node registration and status, the lease, the status manager's
/// syncer, mirror pods.
pub(crate) async fn start_api_mode(
    deps: &KubeletDeps<'_>,
    clients: &Arc<KubeletClients>,
    kubelet: &Arc<Kubelet>,
    images: Arc<dyn kubelet_runtime::image_gc::ImageGcManager>,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    pod_source::spawn_fast_static_pods_registration(kubelet, &deps.shutdown, tasks);
    status_sync::start_status_sync(clients, kubelet, deps.shutdown.clone(), tasks);
    node_status::start_node_status(deps, clients, kubelet, images, tasks);
    Ok(())
}
