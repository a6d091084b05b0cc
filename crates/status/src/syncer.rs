//! The status manager's apiserver sync loop (upstream
//! `pkg/kubelet/status/status_manager.go`: `Start`, `syncBatch`, `syncPod`,
//! `needsUpdate`, `needsReconcile`, `canBeDeleted`, `mergePodStatus`).
//!
//! [`StatusSyncer::run`] wakes on every change of the [`StatusManager`] and
//! every [`SYNC_PERIOD`]. A change pass syncs the pods whose status version
//! is newer than the last one written; the periodic pass also syncs pods
//! ready to be deleted and pods whose API status (as the pod manager last
//! saw it) differs from the kubelet's (`needsReconcile`). Syncing a pod GETs
//! it, skips it when it is gone or its UID changed, merges the kubelet's
//! status into the API status ([`merge_pod_status`]), PATCHes `pods/status`
//! when the patch has more than the UID precondition ([`crate::patch`]),
//! records the version written, and deletes the pod with grace period 0 and
//! a UID precondition once it is terminal and finished ([`can_be_deleted`]).
//!
//! Versions only grow, and the version recorded is the one whose status was
//! merged, so an older status never overwrites a newer one. Terminal phases
//! are never left: the status manager keeps them ([`crate::generate`]), and
//! [`merge_pod_status`] keeps an API terminal phase too.
//!
//! Static pods have their status written to their mirror pod: the
//! [`PodManager`] translates between the two UIDs, as upstream's does.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod as ApiPod, PodCondition, PodStatus as ApiPodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_container::Clock;
use kubelet_container::kubetypes::{is_mirror_pod, is_static_pod, pod_uid};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, trace};

use crate::api::PodStatusApi;
use crate::conditions::not_owned_by_kubelet;
use crate::manager::{StatusManager, VersionedPodStatus, is_pod_status_by_kubelet_equal};
use crate::patch::pod_status_patch;
use crate::reasons::{POD_COMPLETED, POD_FAILED, condition, phase};

/// How often every status is checked against the apiserver (upstream `syncPeriod`).
pub const SYNC_PERIOD: Duration = Duration::from_secs(10);

/// What the syncer needs to know about the desired pods (upstream
/// `status.PodManager`, implemented by the kubelet's pod manager).
pub trait PodManager: Send + Sync {
    /// A (non-mirror) pod by UID, as the sources last described it.
    fn get_pod_by_uid(&self, uid: &str) -> Option<Arc<ApiPod>>;
    /// The mirror pod of a static pod.
    fn get_mirror_pod_by_pod(&self, pod: &ApiPod) -> Option<Arc<ApiPod>>;
    /// The UID of the static pod for a mirror pod UID; any other UID as is
    /// (upstream `TranslatePodUID`).
    fn translate_pod_uid(&self, uid: &str) -> String;
    /// For every static pod, its mirror pod's UID, empty while it has none
    /// (upstream `GetUIDTranslations`, `podToMirror`).
    fn pod_to_mirror(&self) -> HashMap<String, String>;
}

/// Whether a pod may still have running containers (upstream
/// `PodDeletionSafetyProvider`; the kubelet asks its pod workers).
pub trait PodDeletionSafetyProvider: Send + Sync {
    /// `uid` is the kubelet's UID of the pod (the static pod's for a mirror pod).
    fn pod_could_have_running_containers(&self, uid: &str) -> bool;
}

/// The status manager's sync loop (upstream `manager.Start` and its state).
pub struct StatusSyncer {
    manager: StatusManager,
    api: Arc<dyn PodStatusApi>,
    pods: Arc<dyn PodManager>,
    deletion_safety: Arc<dyn PodDeletionSafetyProvider>,
    clock: Arc<dyn Clock>,
    /// Latest version written, by the UID of the API object (the mirror pod's
    /// for a static pod) (upstream `apiStatusVersions`).
    api_status_versions: HashMap<String, u64>,
}

impl StatusSyncer {
    /// A syncer writing `manager`'s statuses through `api`.
    pub fn new(
        manager: StatusManager,
        api: Arc<dyn PodStatusApi>,
        pods: Arc<dyn PodManager>,
        deletion_safety: Arc<dyn PodDeletionSafetyProvider>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            manager,
            api,
            pods,
            deletion_safety,
            clock,
            api_status_versions: HashMap::new(),
        }
    }

    /// Syncs on every status change and every [`SYNC_PERIOD`] until `cancel`
    /// (upstream `Start`). Statuses set before the start are synced at once.
    pub async fn run(mut self, cancel: CancellationToken) {
        info!("Starting to sync pod status with apiserver");
        let mut changes = self.manager.subscribe();
        changes.mark_changed();
        let start = tokio::time::Instant::now() + SYNC_PERIOD;
        let mut ticker = tokio::time::interval_at(start, SYNC_PERIOD);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    changes.borrow_and_update();
                    debug!("Syncing updated statuses");
                    self.sync_batch(false).await;
                }
                _ = ticker.tick() => {
                    debug!("Syncing all statuses");
                    self.sync_batch(true).await;
                }
            }
        }
    }

    /// Syncs the statuses that need it; `all` for the periodic pass. Returns
    /// how many pods it tried to sync (upstream `syncBatch`).
    pub async fn sync_batch(&mut self, all: bool) -> usize {
        let pod_to_mirror = self.pods.pod_to_mirror();
        let statuses = self.manager.versioned_statuses();
        if all {
            // Clean up orphaned versions.
            let mirrors: HashSet<&String> = pod_to_mirror.values().collect();
            self.api_status_versions
                .retain(|uid, _| statuses.contains_key(uid) || mirrors.contains(uid));
        }
        let mut updates = Vec::new();
        for (uid, status) in statuses {
            // Static pods are tracked in the API through their mirror pod.
            let status_uid = match pod_to_mirror.get(&uid) {
                Some(mirror) if mirror.is_empty() => {
                    trace!(pod_uid = %uid, pod = %key(&status), "Static pod does not have a corresponding mirror pod; skipping");
                    continue;
                }
                Some(mirror) => mirror.clone(),
                None => uid.clone(),
            };
            let synced = self.api_status_versions.get(&status_uid).copied();
            if !all {
                if synced.is_some_and(|v| v >= status.version) {
                    continue;
                }
                updates.push((uid, status));
                continue;
            }
            if self.needs_update(&status_uid, synced, &status) {
                updates.push((uid, status));
            } else if self.needs_reconcile(&uid, &status.status) {
                // Forget the version to force an update.
                self.api_status_versions.remove(&status_uid);
                updates.push((uid, status));
            }
        }
        let n = updates.len();
        for (uid, status) in updates {
            trace!(pod_uid = %uid, version = status.version, "Sync pod status");
            self.sync_pod(&uid, status).await;
        }
        n
    }

    /// Writes one status to the apiserver and deletes the pod when it may go
    /// (upstream `syncPod`).
    async fn sync_pod(&mut self, uid: &str, status: VersionedPodStatus) {
        let (ns, name) = (status.pod_namespace.as_str(), status.pod_name.as_str());
        let pod = match self.api.get_pod(ns, name).await {
            Ok(Some(pod)) => pod,
            Ok(None) => {
                // RemoveOrphanedStatuses clears the status once the pod is gone from config.
                debug!(pod_uid = %uid, pod = %key(&status), "Pod does not exist on the server");
                return;
            }
            Err(e) => {
                error!(pod_uid = %uid, pod = %key(&status), error = %e, "Failed to get status for pod");
                return;
            }
        };
        let api_uid = pod_uid(&pod).to_string();
        let translated = self.pods.translate_pod_uid(&api_uid);
        if !translated.is_empty() && translated != uid {
            info!(pod = %key(&status), old_pod_uid = %uid, pod_uid = %translated, "Pod was deleted and then recreated, skipping status update");
            self.manager.delete_pod_status(uid);
            return;
        }
        let old = pod.status.clone().unwrap_or_default();
        let could_run = self.deletion_safety.pod_could_have_running_containers(uid);
        let now = self.clock.now();
        let now = Time(jiff::Timestamp::from_second(now.as_second()).unwrap_or(now));
        let merged = merge_pod_status(&pod, &old, status.status.clone(), could_run, &now);
        let (patch, unchanged) = match pod_status_patch(&api_uid, &old, &merged) {
            Ok(p) => p,
            Err(e) => {
                error!(pod = %key(&status), error = %e, "Failed to update status for pod");
                return;
            }
        };
        let pod = if unchanged {
            debug!(pod = %key(&status), version = status.version, "Status for pod is up-to-date");
            pod
        } else {
            debug!(pod = %key(&status), pod_uid = %uid, %patch, "Patch status for pod");
            match self.api.patch_pod_status(ns, name, &patch).await {
                Ok(updated) => {
                    debug!(pod = %key(&status), version = status.version, "Status for pod updated successfully");
                    kubelet_container::pod_startup_latency_tracker::global()
                        .record_status_updated(&updated);
                    updated
                }
                Err(e) => {
                    error!(pod = %key(&status), error = %e, "Failed to update status for pod");
                    return;
                }
            }
        };
        self.api_status_versions
            .insert(api_uid.clone(), status.version);

        // Mirror pods are never deleted this way.
        if can_be_deleted(&pod, &status.status, status.pod_is_finished) {
            match self.api.delete_pod(ns, name, &api_uid).await {
                Ok(()) => {
                    info!(pod = %key(&status), "Pod fully terminated and removed from etcd");
                    self.manager.delete_pod_status(uid);
                }
                Err(e) => info!(pod = %key(&status), error = %e, "Failed to delete status for pod"),
            }
        }
    }

    /// The status is newer than the one written, or the pod may be deleted
    /// (upstream `needsUpdate`).
    fn needs_update(&self, status_uid: &str, synced: Option<u64>, s: &VersionedPodStatus) -> bool {
        if synced.is_none_or(|v| v < s.version) {
            return true;
        }
        self.pods
            .get_pod_by_uid(status_uid)
            .is_some_and(|pod| can_be_deleted(&pod, &s.status, s.pod_is_finished))
    }

    /// The API status the pod manager last saw differs from the kubelet's
    /// (upstream `needsReconcile`): the kubelet is the source of truth.
    fn needs_reconcile(&self, uid: &str, status: &ApiPodStatus) -> bool {
        let Some(mut pod) = self.pods.get_pod_by_uid(uid) else {
            trace!(pod_uid = %uid, "Pod has been deleted, no need to reconcile");
            return false;
        };
        if is_static_pod(&pod) {
            let Some(mirror) = self.pods.get_mirror_pod_by_pod(&pod) else {
                trace!(pod_uid = %uid, "Static pod has no corresponding mirror pod, no need to reconcile");
                return false;
            };
            pod = mirror;
        }
        let mut api = pod.status.clone().unwrap_or_default();
        crate::manager::normalize_status(&pod, &mut api);
        if is_pod_status_by_kubelet_equal(&api, status) {
            return false;
        }
        debug!(pod_uid = %uid, "Pod status is inconsistent with cached status for pod, a reconciliation should be triggered");
        true
    }
}

fn key(s: &VersionedPodStatus) -> String {
    format!("{}/{}", s.pod_namespace, s.pod_name)
}

/// The pod has a deletion timestamp, is no mirror pod, its API phase is
/// terminal and `SyncTerminatedPod` completed (upstream `canBeDeleted`).
pub fn can_be_deleted(pod: &ApiPod, status: &ApiPodStatus, pod_is_finished: bool) -> bool {
    if pod.metadata.deletion_timestamp.is_none() || is_mirror_pod(pod) {
        return false;
    }
    let api_phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if !api_phase.is_some_and(phase::is_terminal) {
        debug!(phase = ?api_phase, local_phase = ?status.phase, pod_uid = %pod_uid(pod), "Delaying pod deletion as the phase is non-terminal");
        return false;
    }
    pod_is_finished
}

fn find<'a>(conditions: &'a [PodCondition], type_: &str) -> Option<&'a PodCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Replaces the condition of the same type or appends it; the transition
/// time moves only when the status changed (upstream `UpdatePodCondition`).
fn update_pod_condition(conditions: &mut Vec<PodCondition>, mut c: PodCondition, now: &Time) {
    match conditions.iter_mut().find(|o| o.type_ == c.type_) {
        Some(old) => {
            c.last_transition_time = if old.status == c.status {
                old.last_transition_time.clone()
            } else {
                Some(now.clone())
            };
            *old = c;
        }
        None => {
            c.last_transition_time = Some(now.clone());
            conditions.push(c);
        }
    }
}

/// `ContainersReady`/`Ready` of a pod in a terminal phase (upstream
/// `generate*ConditionForTerminalPhase`).
fn terminal_condition(pod: &ApiPod, type_: &str, pod_phase: &str) -> PodCondition {
    let reason = if pod_phase == phase::FAILED {
        POD_FAILED
    } else {
        POD_COMPLETED
    };
    PodCondition {
        type_: type_.to_string(),
        status: "False".into(),
        reason: Some(reason.into()),
        observed_generation: pod.metadata.generation,
        ..PodCondition::default()
    }
}

fn is_true(conditions: &[PodCondition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

/// The status to write: the kubelet's status with the API's conditions the
/// kubelet does not own (readiness gates, `DisruptionTarget` until the pod
/// is terminal), the API's resource claim statuses, a terminal phase only
/// once no container can run, never leaving an API terminal phase, and
/// readiness false in a terminal phase (upstream `mergePodStatus`).
pub fn merge_pod_status(
    pod: &ApiPod,
    old: &ApiPodStatus,
    mut new: ApiPodStatus,
    could_have_running_containers: bool,
    now: &Time,
) -> ApiPodStatus {
    let old_phase = old.phase.as_deref().unwrap_or_default();
    let new_phase = new.phase.as_deref().unwrap_or_default();
    let transitioning_to_terminal = !phase::is_terminal(old_phase) && phase::is_terminal(new_phase);

    let mut conditions = not_owned_by_kubelet(old);
    for c in new.conditions.iter().flatten() {
        if condition::owned_by_kubelet(&c.type_) {
            conditions.push(c.clone());
        } else if condition::shared_by_kubelet(&c.type_)
            && transitioning_to_terminal
            && !could_have_running_containers
        {
            // DisruptionTarget is sent only with the terminal phase; its
            // transition time is refreshed as it was delayed until now.
            let mut shared = c.clone();
            let old_c = find(old.conditions.as_deref().unwrap_or_default(), &c.type_);
            shared.last_transition_time = match old_c {
                Some(o) if o.status == c.status => o.last_transition_time.clone(),
                _ => Some(now.clone()),
            };
            match conditions.iter_mut().find(|o| o.type_ == c.type_) {
                Some(o) => *o = shared,
                None => conditions.push(shared),
            }
        }
    }
    new.conditions = Some(conditions);

    // Not owned and not modified by the kubelet.
    new.resource_claim_statuses
        .clone_from(&old.resource_claim_statuses);
    new.extended_resource_claim_status
        .clone_from(&old.extended_resource_claim_status);

    // A pod that could have running containers is not reported terminal yet.
    if transitioning_to_terminal && could_have_running_containers {
        new.phase.clone_from(&old.phase);
        new.reason.clone_from(&old.reason);
        new.message.clone_from(&old.message);
    }
    // Terminal phases are never left (the apiserver's phase wins).
    if phase::is_terminal(old_phase) && new.phase.as_deref() != Some(old_phase) {
        error!(pod_uid = %pod_uid(pod), from = old_phase, to = ?new.phase, "Pod attempted illegal phase transition");
        new.phase.clone_from(&old.phase);
        new.reason.clone_from(&old.reason);
        new.message.clone_from(&old.message);
    }

    // Never report a terminal phase with ready=true (issues.k8s.io/108594).
    if let Some(p) = new.phase.clone().filter(|p| phase::is_terminal(p)) {
        let conds = new.conditions.get_or_insert_with(Vec::new);
        if is_true(conds, condition::READY) || is_true(conds, condition::CONTAINERS_READY) {
            for type_ in [condition::CONTAINERS_READY, condition::READY] {
                update_pod_condition(conds, terminal_condition(pod, type_, &p), now);
            }
        }
    }
    new
}

#[cfg(test)]
#[path = "syncer_tests.rs"]
mod tests;
