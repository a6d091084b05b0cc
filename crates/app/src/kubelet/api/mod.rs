//! API server mode (`--kubeconfig`): the parts of `NewMainKubelet` and `startKubelet` that
//! need the API server clients. Each part lives in its own crate (node status and lease, the
//! API pod source and mirror pods, the status manager's API syncer, events); the modules
//! here only connect them to the kubelet's state.
//!
//! Parts are added one at a time; until a part is here, the start-up refuses the settings
//! that need it (`crate::startable`).

mod node_status;

use std::sync::Arc;

use kubelet_client::KubeletClients;
use kubelet_podsource::PodConfig;
use tokio::task::{JoinHandle, JoinSet};

use super::{Kubelet, KubeletDeps};
use crate::startup::RunError;

/// `makePodSourceConfig`'s API server source (`config.NewSourceApiserver`), registered with
/// the file and URL sources, before `NewMainKubelet` asks which sources must have been seen.
pub(crate) fn start_api_pod_source(
    deps: &KubeletDeps<'_>,
    _pod_config: &PodConfig,
) -> Vec<JoinHandle<()>> {
    let Some(_clients) = &deps.clients else {
        return Vec::new();
    };
    Vec::new()
}

/// `startKubelet`'s API side: node registration and status, the lease, the status manager's
/// syncer, mirror pods.
pub(crate) async fn start_api_mode(
    deps: &KubeletDeps<'_>,
    clients: &Arc<KubeletClients>,
    kubelet: &Arc<Kubelet>,
    tasks: &mut JoinSet<()>,
) -> Result<(), RunError> {
    node_status::start_node_status(deps, clients, kubelet, tasks);
    Ok(())
}
