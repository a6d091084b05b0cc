//! API server mode's pods (issue #7 items 5 and 7): the node informer and the API pod
//! source of `NewMainKubelet`/`makePodSourceConfig`, the mirror pod client
//! (`NewBasicMirrorClient`), and `fastStaticPodsRegistration`. The logic lives in
//! `kubelet-apipods`; this module only connects it to the kubelet.

use std::sync::Arc;
use std::time::Duration;

use kubelet_apipods::{
    KubeMirrorClient, MirrorClient, NodeLister, node_lister_watcher, pod_lister_watcher,
    run_node_informer, run_source_apiserver, try_reconcile_mirror_pod,
};
use kubelet_client::KubeletClients;
use kubelet_podsource::{API_SERVER_SOURCE, PodConfig};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::super::{Kubelet, KubeletDeps};

/// Starts the node informer (`metadata.name=<node>`, filling `node`) and the API pod source
/// (`spec.nodeName=<node>`, registered as the `api` source of `pod_config`), both on the
/// main client.
pub(crate) fn start(
    clients: &KubeletClients,
    node: &NodeLister,
    pod_config: &PodConfig,
    cancel: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let client = clients.main.clone();
    let name = node.node_name().to_string();
    let informer = tokio::spawn(run_node_informer(
        node_lister_watcher(client.clone(), &name),
        node.clone(),
        cancel.clone(),
    ));
    let updates = pod_config.channel(API_SERVER_SOURCE, cancel.clone());
    let source = tokio::spawn(run_source_apiserver(
        pod_lister_watcher(client, &name),
        node.clone(),
        updates,
        cancel.clone(),
    ));
    vec![informer, source]
}

/// The mirror pod client on the main client (`None` in standalone mode, where upstream's
/// client has no API server and does nothing).
pub(crate) fn mirror_client(
    deps: &KubeletDeps<'_>,
    node: &NodeLister,
) -> Option<Arc<dyn MirrorClient>> {
    let clients = deps.clients.as_ref()?;
    Some(Arc::new(KubeMirrorClient::new(
        clients.main.clone(),
        node.clone(),
    )))
}

/// Upstream `fastStaticPodsRegistration`: as soon as the Node object exists, make sure
/// every static pod has its mirror pod, instead of waiting for the pods' next sync.
pub(crate) fn spawn_fast_static_pods_registration(
    kubelet: &Arc<Kubelet>,
    cancel: &CancellationToken,
    tasks: &mut JoinSet<()>,
) {
    let Some(client) = kubelet.mirror_pod_client.clone() else {
        return;
    };
    let kl = kubelet.clone();
    let cancel = cancel.clone();
    tasks.spawn(async move {
        while kl.node_lister.get().is_none() {
            tracing::trace!(
                node = kl.node_lister.node_name(),
                "Unable to register mirror pod because node is not registered yet"
            );
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        for (static_pod, mirror) in kl.pod_manager.get_static_pod_to_mirror_pod_map() {
            try_reconcile_mirror_pod(
                client.as_ref(),
                &kl.node_lister,
                &static_pod,
                mirror.as_deref(),
            )
            .await;
        }
    });
}
