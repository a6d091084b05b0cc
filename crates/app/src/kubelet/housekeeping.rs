//! Housekeeping (`pkg/kubelet/kubelet_pods.go` `HandlePodCleanups`): forget finished workers,
//! kill orphaned runtime pods, remove orphaned pod cgroups (`cleanupOrphanedPodCgroups` in
//! `pod_cgroups.rs`) and orphaned pod directories (`kubelet_volumes.go`
//! `cleanupOrphanedPodDirs`), delete orphaned mirror pods, garbage collect back-off entries. Container GC runs on its own
//! task (`kubelet_container::ContainerGc`); housekeeping only asks it for an extra round when
//! a pod worker finished.

use std::collections::HashSet;
use std::sync::Arc;

use kubelet_container::{Pod as RuntimePod, SyncPodType};
use kubelet_podworkers::{PodWorkerState, UpdatePodOptions};

use super::Kubelet;

/// `HandlePodCleanups`: forget finished workers, restart desired pods whose worker is gone,
/// kill runtime pods nobody asked for, drop stale statuses, remove the cgroups and the
/// directories of pods that are gone, and garbage collect back-off entries.
/// Only called once every source has been seen, so an empty first view is never taken
/// for "no pods" (which would kill the pods a restarted kubelet must adopt).
pub async fn handle_pod_cleanups(kl: &Kubelet) {
    // The pod cgroups are listed before the pods, so a pod added meanwhile is never
    // taken for an orphan.
    let cgroup_pods = match kl.pod_cgroups.as_ref().map(|pc| pc.cgroup_pods()) {
        None => None,
        Some(Ok(found)) => Some(found),
        Some(Err(e)) => {
            tracing::error!(err = %e, "Failed cleaning pods: failed to get list of pods that still exist on cgroup mounts");
            return;
        }
    };
    let desired: Vec<String> = kl.pod_manager.uids();
    let workers = kl
        .pod_workers
        .sync_known_pods(desired.iter().map(String::as_str));
    if kl.note_worker_count(workers.len()) {
        // A pod finished: its dead containers and sandboxes may go now (on the GC task).
        kl.container_gc.trigger();
    }
    let mut possibly_running: HashSet<String> = workers
        .iter()
        .filter(|(_, w)| matches!(w.state, PodWorkerState::Sync | PodWorkerState::Terminating))
        .map(|(uid, _)| uid.clone())
        .collect();

    let (mut restarted_static, mut restarted) = (0.0, 0.0);
    for uid in &desired {
        if workers.contains_key(uid) {
            continue;
        }
        // Only admitted, active pods are restarted (a rejected pod stays rejected).
        if let Some(pod) = kl.pod_manager.get(uid).filter(|p| !kl.is_pod_inactive(p)) {
            tracing::info!(uid = %uid, "Pod worker is gone for a desired pod, restarting it");
            if kubelet_container::kubetypes::is_static_pod(&pod) {
                restarted_static += 1.0;
            } else {
                restarted += 1.0;
            }
            kl.pod_workers.update_pod(super::sync_loop::update_options(
                kl,
                SyncPodType::Create,
                pod,
            ));
            possibly_running.insert(uid.clone());
        }
    }

    // Both series exist from the first housekeeping on, as upstream adds 0 each time.
    kubelet_metrics::with(|m| {
        m.restarted_pod_total
            .with_label_values(&["true"])
            .inc_by(restarted_static);
        m.restarted_pod_total
            .with_label_values(&[""])
            .inc_by(restarted);
    });

    // Stop probing pods that are not running (upstream `probeManager.CleanupPods`).
    kl.probe_manager.cleanup_pods(&possibly_running);

    let keep: HashSet<&str> = desired
        .iter()
        .map(String::as_str)
        .chain(workers.keys().map(String::as_str))
        .collect();
    kl.status_manager
        .remove_orphaned_statuses(keep.iter().copied());
    kl.allocation_housekeeping(&keep);
    let running = kill_orphaned_runtime_pods(kl, &keep).await;
    delete_orphaned_mirror_pods(kl).await;

    if let (Some(pc), Some(found)) = (&kl.pod_cgroups, &cgroup_pods) {
        tracing::trace!("Clean up orphaned pod cgroups");
        pc.cleanup_orphaned_pod_cgroups(found, &possibly_running);
    }

    if let Some(running) = running {
        let known: HashSet<String> = keep
            .iter()
            .map(|u| (*u).to_string())
            .chain(running.into_iter().map(|p| p.id))
            .collect();
        // Remove orphaned pod user namespace allocations (upstream: the pod manager's pods
        // and the running runtime pods are kept).
        if let Some(userns) = &kl.userns
            && let Err(e) =
                userns.cleanup_orphaned_pod_userns_allocations(known.iter().map(String::as_str))
        {
            tracing::error!(err = %e, "Failed cleaning up orphaned pod user namespaces allocations");
        }
        // Volumes of orphaned pods are unmounted first (upstream: the reconciler tears them
        // down once the pod is gone), so the directories can go.
        let errors = kl
            .volume_manager
            .cleanup_orphaned_pods(|uid| known.contains(uid))
            .await;
        for e in &errors {
            tracing::error!(err = %e, "Failed to tear down the volumes of an orphaned pod");
        }
        cleanup_orphaned_pod_dirs(kl, known).await;
    }

    // Cleanup any backoff entries (upstream `kl.crashLoopBackOff.GC()`).
    kl.backoff.gc();
}

/// Runtime pods (running containers or ready sandboxes) that no worker knows about are
/// orphans (e.g. a static pod manifest removed while the kubelet was down): kill them.
/// Returns the running runtime pods, or `None` when the runtime could not list them.
async fn kill_orphaned_runtime_pods(kl: &Kubelet, keep: &HashSet<&str>) -> Option<Vec<RuntimePod>> {
    let running = match running_runtime_pods(kl).await {
        Ok(p) => p,
        Err(e) => {
            tracing::info!(err = %e, "Error listing running pods during housekeeping");
            return None;
        }
    };
    for pod in &running {
        if keep.contains(pod.id.as_str()) || kl.pod_workers.is_working(&pod.id) {
            continue;
        }
        tracing::info!(uid = %pod.id, name = %pod.name, namespace = %pod.namespace, "Killing orphaned runtime pod");
        kl.pod_workers
            .update_pod(UpdatePodOptions::kill_runtime_pod(Arc::new(pod.clone())));
    }
    Some(running)
}

/// How old the PLEG's listing may be to stand in for a fresh one: upstream's runtime cache
/// period (`runtimeCacheRefreshPeriod`, twice the PLEG relist period).
const RUNTIME_CACHE_PERIOD: std::time::Duration = std::time::Duration::from_secs(2);

/// The running runtime pods. Upstream lists them afresh at every housekeeping
/// (`runtimeCache.ForceUpdateIfOlder(now)`); kubelet-rs takes the PLEG's last listing when
/// it is younger than [`RUNTIME_CACHE_PERIOD`] and was started after the last pod worker
/// finished terminating, so it cannot show a pod as running that a worker has since
/// stopped (which would be "killed" again as an orphan). Otherwise it lists afresh.
async fn running_runtime_pods(
    kl: &Kubelet,
) -> Result<Vec<RuntimePod>, kubelet_container::RuntimeError> {
    let now = tokio::time::Instant::now();
    let mut after = now.checked_sub(RUNTIME_CACHE_PERIOD).unwrap_or(now);
    if let Some(t) = kl.pod_workers.last_termination() {
        after = after.max(t);
    }
    if let Some(pods) = kl.pleg.running_pods_listed_after(after).await {
        return Ok(pods);
    }
    kl.runtime.get_pods(false).await
}

/// Mirror pods whose static pod is gone are deleted (upstream `HandlePodCleanups`: "Remove
/// any orphaned mirror pods"), unless the static pod is still terminating.
async fn delete_orphaned_mirror_pods(kl: &Kubelet) {
    let Some(client) = kl.mirror_pod_client.as_deref() else {
        return;
    };
    let (_, _, orphaned) = kl.pod_manager.get_pods_and_mirror_pods();
    tracing::trace!("Clean up orphaned mirror pods");
    for full_name in orphaned {
        if kl
            .pod_workers
            .is_pod_for_mirror_pod_terminating_by_full_name(&full_name)
        {
            continue;
        }
        match client.delete_mirror_pod(&full_name, None).await {
            Err(e) => {
                tracing::error!(err = %e, pod_name = %full_name, "Encountered error when deleting mirror pod");
            }
            Ok(_) => tracing::trace!(pod_name = %full_name, "Deleted mirror pod"),
        }
    }
}

/// Removes `<root-dir>/pods/<uid>` of pods that are neither desired, nor tracked by a pod
/// worker, nor running (upstream `cleanupOrphanedPodDirs`), off the async workers. Without a
/// list of running pods nothing is removed: a running pod's directory must never go.
async fn cleanup_orphaned_pod_dirs(kl: &Kubelet, known: HashSet<String>) {
    let os = kl.os.clone();
    let root = kl.root_dir.clone();
    let cleaned = tokio::task::spawn_blocking(move || {
        kubelet_runtime::pod_dirs::cleanup_orphaned_pod_dirs(os.as_ref(), &root, |uid| {
            known.contains(uid)
        })
    })
    .await;
    match cleaned {
        Ok(errors) => {
            if let Some(first) = errors.first() {
                tracing::error!(err = %first, num_errs = errors.len(), "There were many similar errors. Turn up verbosity to see them.");
                for e in &errors {
                    tracing::trace!(err = %e, "Orphan pod");
                }
            }
        }
        Err(e) => tracing::error!(err = %e, "Orphaned pod directory cleanup failed"),
    }
}
