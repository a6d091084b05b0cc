//! Housekeeping (`pkg/kubelet/kubelet_pods.go` `HandlePodCleanups`, with
//! `cleanupOrphanedPodCgroups` in `pod_cgroups.rs`) and container garbage
//! collection (`pkg/kubelet/kuberuntime/kuberuntime_gc.go`, started by
//! `StartGarbageCollection`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubelet_container::SyncPodType;
use kubelet_podworkers::{PodWorkerState, UpdatePodOptions};

use super::Kubelet;

/// Period of container GC (upstream `ContainerGCPeriod`).
pub const CONTAINER_GC_PERIOD: Duration = Duration::from_secs(60);

/// `HandlePodCleanups`: forget finished workers, restart desired pods whose worker is gone,
/// kill runtime pods nobody asked for, drop stale statuses, and collect garbage when due.
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
    let finished_some = kl.note_worker_count(workers.len());
    let mut possibly_running: HashSet<String> = workers
        .iter()
        .filter(|(_, w)| matches!(w.state, PodWorkerState::Sync | PodWorkerState::Terminating))
        .map(|(uid, _)| uid.clone())
        .collect();

    for uid in &desired {
        if workers.contains_key(uid) {
            continue;
        }
        if let Some(pod) = kl.pod_manager.get(uid) {
            tracing::info!(uid = %uid, "Pod worker is gone for a desired pod, restarting it");
            kl.pod_workers
                .update_pod(UpdatePodOptions::new(SyncPodType::Create, pod));
            possibly_running.insert(uid.clone());
        }
    }

    let keep: HashSet<&str> = desired
        .iter()
        .map(String::as_str)
        .chain(workers.keys().map(String::as_str))
        .collect();
    kl.status_manager
        .remove_orphaned_statuses(keep.iter().copied());
    kill_orphaned_runtime_pods(kl, &keep).await;

    if let (Some(pc), Some(found)) = (&kl.pod_cgroups, &cgroup_pods) {
        tracing::trace!("Clean up orphaned pod cgroups");
        pc.cleanup_orphaned_pod_cgroups(found, &possibly_running);
    }

    if finished_some || kl.gc_due() {
        garbage_collect(kl).await;
    }
}

/// Runtime pods (running containers or ready sandboxes) that no worker knows about are
/// orphans (e.g. a static pod manifest removed while the kubelet was down): kill them.
async fn kill_orphaned_runtime_pods(kl: &Kubelet, keep: &HashSet<&str>) {
    let running = match kl.runtime.get_pods(false).await {
        Ok(p) => p,
        Err(e) => {
            tracing::info!(err = %e, "Error listing running pods during housekeeping");
            return;
        }
    };
    for pod in running {
        if keep.contains(pod.id.as_str()) || kl.pod_workers.is_working(&pod.id) {
            continue;
        }
        tracing::info!(uid = %pod.id, name = %pod.name, namespace = %pod.namespace, "Killing orphaned runtime pod");
        kl.pod_workers
            .update_pod(UpdatePodOptions::kill_runtime_pod(Arc::new(pod)));
    }
}

/// Removes dead containers and the sandboxes of pods that are gone.
pub async fn garbage_collect(kl: &Kubelet) {
    let started = Instant::now();
    match kl
        .runtime
        .garbage_collect(&kl.gc_policy, kl.sources_ready(), false)
        .await
    {
        Ok(()) => {
            tracing::debug!(took = ?started.elapsed(), "Container garbage collection succeeded")
        }
        Err(e) => tracing::info!(err = %e, "Container garbage collection failed"),
    }
}
