//! The sync loop (`pkg/kubelet/kubelet.go` `syncLoop` / `syncLoopIteration` and the
//! `HandlePod*` handlers): one `select` over pod config updates, PLEG events, the 1 s sync
//! tick and the 2 s housekeeping tick.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubelet_container::SyncPodType;
use kubelet_pleg::{PodLifecycleEvent, PodLifecycleEventType};
use kubelet_podsource::{PodOperation, PodUpdate};
use kubelet_podworkers::{KillPodOptions, UpdatePodOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Kubelet;
use super::pod_manager::{PodAndMirror, pod_uid};

/// Period of the sync tick (upstream `syncTicker`).
pub const SYNC_PERIOD: Duration = Duration::from_secs(1);
/// Period of housekeeping (upstream `housekeepingPeriod`).
pub const HOUSEKEEPING_PERIOD: Duration = Duration::from_secs(2);

/// The channels the loop reads.
pub struct SyncLoopInputs {
    /// Merged pod updates from the sources.
    pub updates: mpsc::Receiver<PodUpdate>,
    /// PLEG events.
    pub pleg: mpsc::Receiver<PodLifecycleEvent>,
    /// Changed probe results (upstream's liveness, readiness and startup `Updates()`).
    pub probes: mpsc::UnboundedReceiver<kubelet_prober::Update>,
}

/// Runs the loop until `shutdown` fires or the config channel closes.
pub async fn sync_loop(kl: Arc<Kubelet>, mut inputs: SyncLoopInputs, shutdown: CancellationToken) {
    tracing::info!("Starting kubelet main sync loop");
    // Like Go tickers, the first tick comes one period after the start.
    let start = tokio::time::Instant::now();
    let mut sync_tick = tokio::time::interval_at(start + SYNC_PERIOD, SYNC_PERIOD);
    let mut housekeeping =
        tokio::time::interval_at(start + HOUSEKEEPING_PERIOD, HOUSEKEEPING_PERIOD);
    sync_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        kl.sync_loop_monitor.touch();
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            update = inputs.updates.recv() => match update {
                Some(u) => handle_pod_update(&kl, u),
                None => {
                    tracing::error!("Update channel is closed, exiting the sync loop");
                    break;
                }
            },
            Some(event) = inputs.pleg.recv() => handle_pleg_event(&kl, &event),
            Some(update) = inputs.probes.recv() => handle_probe_update(&kl, &update),
            _ = sync_tick.tick() => handle_sync_tick(&kl),
            _ = housekeeping.tick() => {
                if kl.sources_ready() {
                    super::housekeeping::handle_pod_cleanups(&kl).await;
                }
            }
        }
    }
    tracing::info!("Sync loop stopped");
}

/// Dispatches one merged update (upstream `syncLoopIteration`'s `configCh` case).
pub fn handle_pod_update(kl: &Kubelet, u: PodUpdate) {
    kl.mark_source_seen(&u.source);
    tracing::debug!(op = u.op.as_str(), source = %u.source, pods = u.pods.len(), "SyncLoop update");
    match u.op {
        PodOperation::Add => handle_pod_additions(kl, u.pods),
        PodOperation::Update | PodOperation::Delete => handle_pod_updates(kl, u.pods),
        PodOperation::Remove => handle_pod_removes(kl, u.pods),
        PodOperation::Reconcile => {
            for p in u.pods {
                kl.pod_manager.add_or_update(Arc::new(p));
            }
        }
    }
}

fn creation_order(mut pods: Vec<Pod>) -> Vec<Pod> {
    pods.sort_by(|a, b| {
        let key = |p: &Pod| p.metadata.creation_timestamp.clone().map(|t| t.0);
        key(a).cmp(&key(b))
    });
    pods
}

/// An update for `pod` carrying its mirror pod from the pod manager (upstream's
/// `UpdatePodOptions{Pod, MirrorPod}` after `GetPodAndMirrorPod`).
pub(crate) fn update_options(
    kl: &Kubelet,
    update_type: SyncPodType,
    pod: Arc<Pod>,
) -> UpdatePodOptions {
    let mirror_pod = kl.pod_manager.get_mirror_pod_by_pod(&pod);
    let mut opts = UpdatePodOptions::new(update_type, pod);
    opts.mirror_pod = mirror_pod;
    opts
}

/// A mirror pod changed (upstream `handleMirrorPod` inlined in the `HandlePod*` handlers):
/// its static pod is synced with it, or nothing happens when the static pod is unknown.
fn handle_mirror_pod(kl: &Kubelet, found: PodAndMirror) {
    let (Some(pod), Some(mirror)) = (found.pod, found.mirror_pod) else {
        return;
    };
    let mut opts = UpdatePodOptions::new(SyncPodType::Update, pod);
    opts.mirror_pod = Some(mirror);
    kl.pod_workers.update_pod(opts);
}

fn log_unknown_static_pod(mirror: &Pod) {
    tracing::debug!(mirror_pod = %full_name(mirror), mirror_pod_uid = %pod_uid(mirror), "Unable to find pod for mirror pod, skipping");
}

/// `HandlePodAdditions`: oldest first, each to the pod manager; a mirror pod only syncs its
/// static pod; other pods go through admission (a rejected pod is recorded `Failed` and
/// never started), then to their worker.
pub fn handle_pod_additions(kl: &Kubelet, pods: Vec<Pod>) {
    let mut pending_resizes = Vec::new();
    let pods = creation_order(pods);
    for pod in &pods {
        kl.status_manager.backfill_pod_resize_conditions(pod);
    }
    for pod in pods {
        let pod = Arc::new(pod);
        kl.pod_manager.add_or_update(pod.clone());
        let found = kl.pod_manager.get_pod_and_mirror_pod(&pod);
        if found.was_mirror {
            if found.pod.is_none() {
                log_unknown_static_pod(&pod);
            }
            handle_mirror_pod(kl, found);
            continue;
        }
        tracing::info!(pod = %full_name(&pod), uid = %pod_uid(&pod), "Pod added");
        if kl.needs_admission(&pod) {
            // `allocationManager.AddPod`: admitted with its allocation (kept across
            // restarts), which it keeps; a spec differing from it is a pending resize.
            let (allocated, resized) = kl.allocation.update_pod_from_allocation(&pod);
            let result = kl.can_admit_pod(&allocated);
            if !result.admit {
                kl.reject_pod(&pod, &result);
                continue;
            }
            kubelet_container::timeline::global()
                .record(pod_uid(&pod), kubelet_container::timeline::Step::Admitted);
            kl.allocation.set_allocated_resources(&allocated);
            kl.preempt_pods(&result.preempt, &pod);
            if resized {
                pending_resizes.push(pod_uid(&pod).to_string());
            }
        }
        let mut opts = UpdatePodOptions::new(SyncPodType::Create, pod);
        opts.mirror_pod = found.mirror_pod;
        kl.pod_workers.update_pod(opts);
    }
    for uid in &pending_resizes {
        kl.allocation.push_pending_resize(uid);
    }
    if !pending_resizes.is_empty() {
        kl.retry_pending_resizes();
    }
}

/// `HandlePodUpdates` (also for graceful deletions); a mirror pod's update syncs its
/// static pod.
pub fn handle_pod_updates(kl: &Kubelet, pods: Vec<Pod>) {
    for pod in pods {
        let pod = Arc::new(pod);
        let old_pod = kl.pod_manager.get(pod_uid(&pod));
        kl.pod_manager.add_or_update(pod.clone());
        // An in-place resize (upstream `recordResizeOperations`).
        if old_pod.is_some_and(|old| super::allocation::has_resize_operations(&old, &pod)) {
            if kl.allocation.update_pod_from_allocation(&pod).1 {
                kl.allocation.push_pending_resize(pod_uid(&pod));
                kl.retry_pending_resizes();
            } else {
                // A pending resize was reverted.
                kl.status_manager
                    .clear_pod_resize_pending_condition(pod_uid(&pod));
            }
        }
        let found = kl.pod_manager.get_pod_and_mirror_pod(&pod);
        if found.was_mirror && found.pod.is_none() {
            log_unknown_static_pod(&pod);
            continue;
        }
        let (Some(pod), mirror_pod) = (found.pod, found.mirror_pod) else {
            continue;
        };
        let mut opts = UpdatePodOptions::new(SyncPodType::Update, pod);
        opts.mirror_pod = mirror_pod;
        kl.pod_workers.update_pod(opts);
    }
}

/// `HandlePodRemoves`: forget the pod, then kill it with its own grace period; a removed
/// mirror pod only syncs its static pod (which recreates it).
pub fn handle_pod_removes(kl: &Kubelet, pods: Vec<Pod>) {
    let removed = !pods.is_empty();
    for pod in pods {
        kl.pod_manager.remove(&pod);
        kl.allocation.remove_pod(pod_uid(&pod));
        kubelet_container::timeline::global().remove(pod_uid(&pod));
        let pod = Arc::new(pod);
        let found = kl.pod_manager.get_pod_and_mirror_pod(&pod);
        if found.was_mirror {
            match found.pod {
                // The mirror pod is gone: the static pod's next SyncPod creates a new one.
                // Upstream hands the removed mirror pod along, so the new one waits for
                // the next resync; without it, SyncPod recreates it at once.
                Some(static_pod) => kl
                    .pod_workers
                    .update_pod(UpdatePodOptions::new(SyncPodType::Update, static_pod)),
                None => log_unknown_static_pod(&pod),
            }
            continue;
        }
        let uid = pod_uid(&pod).to_string();
        tracing::info!(pod = %full_name(&pod), uid = %uid, "Pod removed, killing it");
        let mut opts = UpdatePodOptions::new(SyncPodType::Kill, pod);
        opts.kill_pod_options = Some(KillPodOptions::default());
        kl.pod_workers.update_pod(opts);
    }
    if removed {
        // Deferred resizes may fit now.
        kl.retry_pending_resizes();
    }
}

/// A PLEG event: resync the pod unless the event is only a removal.
pub fn handle_pleg_event(kl: &Kubelet, e: &PodLifecycleEvent) {
    if e.type_ == PodLifecycleEventType::ContainerRemoved {
        return;
    }
    if let Some(pod) = kl.pod_manager.get(&e.id) {
        tracing::debug!(pod = %full_name(&pod), event = e.type_.as_str(), data = %e.data, "SyncLoop (PLEG)");
        kl.pod_workers
            .update_pod(update_options(kl, SyncPodType::Sync, pod));
    }
}

/// A probe result changed (upstream `syncLoopIteration`'s liveness/readiness/startup cases and
/// `handleProbeSync`): a liveness failure, or any readiness or startup change, resyncs the pod,
/// which restarts the container or regenerates its started/ready flags.
pub fn handle_probe_update(kl: &Kubelet, u: &kubelet_prober::Update) {
    use kubelet_container::{ProbeResult, ProbeType};
    let (probe, status) = match (u.probe_type, u.result) {
        (ProbeType::Liveness, ProbeResult::Failure) => ("liveness", "unhealthy"),
        (ProbeType::Liveness, _) => return,
        (ProbeType::Readiness, ProbeResult::Success) => ("readiness", "ready"),
        (ProbeType::Readiness, _) => ("readiness", "not ready"),
        (ProbeType::Startup, ProbeResult::Success) => ("startup", "started"),
        (ProbeType::Startup, _) => ("startup", "unhealthy"),
    };
    let Some(pod) = kl.pod_manager.get(&u.pod_uid) else {
        tracing::trace!(probe, status, pod = %u.pod_uid, "SyncLoop (probe): ignore irrelevant update");
        return;
    };
    tracing::debug!(probe, status, pod = %full_name(&pod), "SyncLoop (probe)");
    kl.pod_workers
        .update_pod(update_options(kl, SyncPodType::Sync, pod));
}

/// The sync tick (upstream `getPodsToSync`): pods due for a resync, pods whose back-off
/// just expired, and pods a `PodSyncLoopHandler` asks for (an active deadline passed).
pub fn handle_sync_tick(kl: &Kubelet) {
    let mut due: HashSet<String> = kl
        .pod_workers
        .work_queue()
        .get_work()
        .into_iter()
        .chain(kl.backoff_requeue.get_work())
        .collect();
    if !kl.pod_sync_loop_handlers.is_empty() {
        due.extend(
            kl.pod_manager
                .pods()
                .iter()
                .filter(|p| kl.pod_sync_loop_handlers.iter().any(|h| h.should_sync(p)))
                .map(|p| pod_uid(p).to_string()),
        );
    }
    for uid in due {
        if let Some(pod) = kl.pod_manager.get(&uid) {
            kl.pod_workers
                .update_pod(update_options(kl, SyncPodType::Sync, pod));
        }
    }
}

/// `namespace/name` for logs.
pub fn full_name(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}
