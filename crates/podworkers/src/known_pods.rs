//! Reconciling the workers with the desired pod set (upstream `SyncKnownPods`,
//! `removeTerminatedWorker`, `requeueLastPodUpdate` in `pod_workers.go`).

use std::collections::{HashMap, HashSet};

use kubelet_container::kubetypes::is_static_pod;
use tokio::time::Instant;
use tracing::debug;

use crate::sync_status::calculate_effective_grace_period;
use crate::types::PodWorkerSync;
use crate::workers::{PodWorkers, State};

impl PodWorkers {
    /// Forgets finished workers of pods not in `desired_uids` (or that were
    /// re-created with the same UID), starts terminating orphans, and returns
    /// the remaining workers (upstream `SyncKnownPods`). After the first call,
    /// unknown pods count as not running. The caller must re-add desired pods
    /// that are missing from the result.
    pub fn sync_known_pods<'a>(
        &self,
        desired_uids: impl IntoIterator<Item = &'a str>,
    ) -> HashMap<String, PodWorkerSync> {
        let known: HashSet<&str> = desired_uids.into_iter().collect();
        let mut guard = self.inner.lock();
        guard.pods_synced = true;
        let uids: Vec<String> = guard.statuses.keys().cloned().collect();
        let mut workers = HashMap::new();
        for uid in uids {
            let orphan = !known.contains(uid.as_str());
            let restart = guard
                .statuses
                .get(&uid)
                .is_some_and(|s| s.restart_requested);
            if (restart || orphan) && remove_terminated_worker(&mut guard, &uid, orphan) {
                continue;
            }
            let Some(status) = guard.statuses.get(&uid) else {
                continue;
            };
            let config = status
                .active_update
                .as_ref()
                .or(status.pending_update.as_ref())
                .and_then(|u| u.pod.as_ref());
            workers.insert(
                uid,
                PodWorkerSync {
                    state: status.work_type(),
                    orphan,
                    has_config: config.is_some(),
                    static_: config.is_some_and(|p| is_static_pod(p)),
                },
            );
        }
        workers
    }
}

/// Forgets a finished worker, or drives an unfinished orphan towards
/// termination (upstream `removeTerminatedWorker`). True when removed.
fn remove_terminated_worker(state: &mut State, uid: &str, orphaned: bool) -> bool {
    let Some(status) = state.statuses.get_mut(uid) else {
        return true;
    };
    if !status.finished {
        if !orphaned {
            return false;
        }
        status.deleted = true;
        if !status.is_started() && !status.observed_runtime {
            // Never started: the worker shuts down without a sync.
            debug!(%uid, "pod is orphaned and has not been started");
        } else {
            if !status.is_termination_requested() {
                status.terminating_at = Some(Instant::now());
                status.grace_period =
                    match status.active_update.as_ref().and_then(|u| u.pod.clone()) {
                        Some(pod) => calculate_effective_grace_period(status, &pod, None).0,
                        None => 1,
                    };
                debug!(%uid, "pod is orphaned and still running, began terminating");
            }
            requeue_last_pod_update(state, uid);
            return false;
        }
    }
    let Some(status) = state.statuses.remove(uid) else {
        return true;
    };
    state.last_termination = Some(tokio::time::Instant::now());
    state.pod_updates.remove(uid);
    if state
        .started_static_pods_by_fullname
        .get(&status.fullname)
        .is_some_and(|u| u == uid)
    {
        state
            .started_static_pods_by_fullname
            .remove(&status.fullname);
    }
    true
}

/// Replays the last executed update if none is pending and wakes the worker
/// (upstream `requeueLastPodUpdate`).
pub(crate) fn requeue_last_pod_update(state: &mut State, uid: &str) {
    let Some(status) = state.statuses.get_mut(uid) else {
        return;
    };
    if status.pending_update.is_some() {
        return;
    }
    let Some(active) = status.active_update.clone() else {
        return;
    };
    status.pending_update = Some(active);
    status.working = true;
    if let Some(tx) = state.pod_updates.get(uid) {
        let _ = tx.try_send(());
    }
}
