//! The API server pod source (`pkg/kubelet/config/apiserver.go` `NewSourceApiserver`):
//! pods bound to this node (`spec.nodeName=<node>`), listed and watched by a reflector into
//! an `UndeltaStore` whose every change sends the FULL set of pods to the `api` channel
//! of `PodConfig`. The reflector starts only once the node informer has synced, as
//! upstream's does. The first snapshot is the first list's (the reflector's first
//! `Replace`), so the `api` source counts as seen only after a complete list: the kubelet
//! does not take the API's pods for orphans before. Pods arrive without
//! `metadata.managedFields` ([`strip_managed_fields`]).

use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use kubelet_podsource::SourceUpdate;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::kube_lw::{KubeListerWatcher, one_term_equal_selector};
use crate::node::NodeLister;
use crate::reflector::{ListerWatcher, Reflector, strip_managed_fields};
use crate::undelta::UndeltaStore;

/// Upstream `WaitForAPIServerSyncPeriod`: how often the source logs that it still waits
/// for the node informer.
pub const WAIT_FOR_API_SERVER_SYNC_PERIOD: Duration = Duration::from_secs(1);

/// The pod source's list+watch: every pod with `spec.nodeName=<node>`.
pub fn pod_lister_watcher(client: kube::Client, node_name: &str) -> KubeListerWatcher<Pod> {
    KubeListerWatcher::new(client, one_term_equal_selector("spec.nodeName", node_name))
}

/// Runs the pod source until `cancel` fires: waits for the node informer's first list,
/// then reflects the node's pods into `updates` as full snapshots.
pub async fn run_source_apiserver<L: ListerWatcher<Pod>>(
    lw: L,
    node: NodeLister,
    updates: mpsc::Sender<SourceUpdate>,
    cancel: CancellationToken,
) {
    tracing::info!("Waiting for node sync before watching apiserver pods");
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = node.wait_for_sync() => break,
            () = tokio::time::sleep(WAIT_FOR_API_SERVER_SYNC_PERIOD) => {
                tracing::trace!("node sync has not completed yet");
            }
        }
    }
    tracing::trace!("node sync completed");
    tracing::info!("Watching apiserver");
    let store = UndeltaStore::new(Box::new(move |pods: Vec<Pod>| {
        let updates = updates.clone();
        async move {
            // A closed channel means the kubelet is shutting down.
            let _ = updates.send(SourceUpdate { pods }).await;
        }
        .boxed()
    }));
    Reflector::new("pod source", lw, store)
        .with_transform(strip_managed_fields)
        .run(cancel)
        .await;
}
