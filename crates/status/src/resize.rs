//! The in-place resize conditions the status manager caches per pod (upstream
//! `status_manager.go` `podResizeConditions`, `SetPodResizePendingCondition`,
//! `SetPodResizeInProgressCondition`, `Clear…`, `GetPodResizeConditions`,
//! `BackfillPodResizeConditions`, `updatedPodResizeCondition`), and how
//! `generateAPIPodStatus` adds them (`determinePodResizeStatus`).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use k8s_openapi::api::core::v1::{Pod as ApiPod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::manager::StatusManager;
use crate::reasons::condition::{POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING};

/// `PodResizePending` reason: the node cannot fit the resize now (`v1.PodReasonDeferred`).
pub const REASON_DEFERRED: &str = "Deferred";
/// `PodResizePending` reason: the node can never fit the resize (`v1.PodReasonInfeasible`).
pub const REASON_INFEASIBLE: &str = "Infeasible";
/// `PodResizeInProgress` reason: actuating the resize failed (`v1.PodReasonError`).
pub const REASON_ERROR: &str = "Error";

/// Upstream `podResizeConditions`.
#[derive(Clone, Debug, Default, PartialEq)]
struct PodResizeConditions {
    pending: Option<PodCondition>,
    in_progress: Option<PodCondition>,
}

impl PodResizeConditions {
    fn list(&self) -> Vec<PodCondition> {
        self.pending
            .iter()
            .chain(self.in_progress.iter())
            .cloned()
            .collect()
    }
}

/// The per-pod cache behind the [`StatusManager`] methods below.
#[derive(Clone, Debug, Default)]
pub(crate) struct ResizeConditionsStore(Arc<RwLock<HashMap<String, PodResizeConditions>>>);

impl ResizeConditionsStore {
    /// Keeps only the pods `keep` names.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|uid, _| keep(uid));
    }
}

fn empty_to_none(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

impl StatusManager {
    fn with_resize<R>(&self, f: impl FnOnce(&mut HashMap<String, PodResizeConditions>) -> R) -> R {
        let mut map = self
            .resize_conditions
            .0
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        f(&mut map)
    }

    /// Upstream `updatedPodResizeCondition`.
    fn updated_resize_condition(
        &self,
        type_: &str,
        old: Option<&PodCondition>,
        reason: &str,
        message: &str,
        observed_generation: Option<i64>,
    ) -> PodCondition {
        let now = Time(self.clock.now());
        let last_transition_time = match old {
            Some(o) if o.reason.as_deref().unwrap_or_default() == reason => {
                o.last_transition_time.clone()
            }
            _ => Some(now.clone()),
        };
        PodCondition {
            type_: type_.to_string(),
            status: "True".to_string(),
            last_probe_time: Some(now),
            last_transition_time,
            observed_generation,
            reason: empty_to_none(reason),
            message: empty_to_none(message),
        }
    }

    /// The cached resize conditions of the pod (upstream `GetPodResizeConditions`).
    pub fn get_pod_resize_conditions(&self, uid: &str) -> Vec<PodCondition> {
        let map = self
            .resize_conditions
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        map.get(uid)
            .map(PodResizeConditions::list)
            .unwrap_or_default()
    }

    /// Whether the pod's resize is pending with `reason` (`IsPodResizeDeferred` /
    /// `IsPodResizeInfeasible`).
    pub fn is_pod_resize_pending_with(&self, uid: &str, reason: &str) -> bool {
        self.get_pod_resize_conditions(uid)
            .iter()
            .any(|c| c.type_ == POD_RESIZE_PENDING && c.reason.as_deref() == Some(reason))
    }

    /// Caches the `PodResizePending` condition; true when its reason or generation changed
    /// (upstream `SetPodResizePendingCondition`).
    pub fn set_pod_resize_pending_condition(
        &self,
        uid: &str,
        reason: &str,
        message: &str,
        observed_generation: Option<i64>,
    ) -> bool {
        let old = self.with_resize(|m| m.get(uid).and_then(|c| c.pending.clone()));
        let new = self.updated_resize_condition(
            POD_RESIZE_PENDING,
            old.as_ref(),
            reason,
            message,
            observed_generation,
        );
        self.with_resize(|m| m.entry(uid.to_string()).or_default().pending = Some(new));
        old.is_none_or(|o| {
            o.reason.as_deref().unwrap_or_default() != reason
                || o.observed_generation != observed_generation
        })
    }

    /// Caches the `PodResizeInProgress` condition, keeping an existing one's generation (and
    /// its reason and message when none are given); returns the condition's generation and
    /// whether it changed (upstream `SetPodResizeInProgressCondition`).
    pub fn set_pod_resize_in_progress_condition(
        &self,
        uid: &str,
        reason: &str,
        message: &str,
        observed_generation: Option<i64>,
    ) -> (Option<i64>, bool) {
        let old = self.with_resize(|m| m.get(uid).and_then(|c| c.in_progress.clone()));
        let (mut reason, mut message, mut generation) =
            (reason.to_string(), message.to_string(), observed_generation);
        if let Some(c) = &old {
            if reason.is_empty() && message.is_empty() {
                reason = c.reason.clone().unwrap_or_default();
                message = c.message.clone().unwrap_or_default();
            }
            generation = c.observed_generation;
        }
        let new = self.updated_resize_condition(
            POD_RESIZE_IN_PROGRESS,
            old.as_ref(),
            &reason,
            &message,
            generation,
        );
        let changed = old.is_none_or(|o| {
            o.reason != new.reason
                || o.message != new.message
                || o.observed_generation != new.observed_generation
        });
        self.with_resize(|m| m.entry(uid.to_string()).or_default().in_progress = Some(new));
        (generation, changed)
    }

    /// Drops the `PodResizePending` condition (upstream `ClearPodResizePendingCondition`).
    pub fn clear_pod_resize_pending_condition(&self, uid: &str) {
        self.with_resize(|m| {
            if let Some(c) = m.get_mut(uid) {
                c.pending = None;
            }
        });
    }

    /// Drops the `PodResizeInProgress` condition; returns its generation when there was one
    /// (upstream `ClearPodResizeInProgressCondition`).
    pub fn clear_pod_resize_in_progress_condition(&self, uid: &str) -> Option<Option<i64>> {
        self.with_resize(|m| {
            m.get_mut(uid)
                .and_then(|c| c.in_progress.take())
                .map(|c| c.observed_generation)
        })
    }

    /// Forgets the pod's resize conditions (with its status).
    pub fn remove_pod_resize_conditions(&self, uid: &str) {
        self.with_resize(|m| m.remove(uid));
    }

    /// Seeds the cache from the API statuses of pods seen for the first time, so a restarted
    /// kubelet keeps reporting them (upstream `BackfillPodResizeConditions`).
    pub fn backfill_pod_resize_conditions(&self, pod: &ApiPod) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        for c in pod
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
        {
            if c.type_ != POD_RESIZE_PENDING && c.type_ != POD_RESIZE_IN_PROGRESS {
                continue;
            }
            let new = self.updated_resize_condition(
                &c.type_,
                None,
                c.reason.as_deref().unwrap_or_default(),
                c.message.as_deref().unwrap_or_default(),
                c.observed_generation,
            );
            self.with_resize(|m| {
                let entry = m.entry(uid.clone()).or_default();
                if c.type_ == POD_RESIZE_PENDING {
                    entry.pending = Some(new);
                } else {
                    entry.in_progress = Some(new);
                }
            });
        }
    }

    /// The resize conditions `generateAPIPodStatus` reports: none for a terminal pod (whose
    /// conditions are cleared), else the cached ones (upstream `determinePodResizeStatus`).
    pub fn determine_pod_resize_status(
        &self,
        uid: &str,
        pod_is_terminal: bool,
    ) -> Vec<PodCondition> {
        if pod_is_terminal {
            self.clear_pod_resize_in_progress_condition(uid);
            self.clear_pod_resize_pending_condition(uid);
            return Vec::new();
        }
        self.get_pod_resize_conditions(uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_condition_keeps_transition_time_while_reason_is_unchanged() {
        let m = StatusManager::default();
        assert!(m.set_pod_resize_pending_condition("u", REASON_DEFERRED, "no room", Some(2)));
        let first = m.get_pod_resize_conditions("u");
        assert!(!m.set_pod_resize_pending_condition("u", REASON_DEFERRED, "no room", Some(2)));
        let second = m.get_pod_resize_conditions("u");
        assert_eq!(
            first[0].last_transition_time,
            second[0].last_transition_time
        );
        assert_eq!(second[0].type_, POD_RESIZE_PENDING);
        assert_eq!(second[0].reason.as_deref(), Some(REASON_DEFERRED));
        assert!(m.set_pod_resize_pending_condition("u", REASON_INFEASIBLE, "never", Some(2)));
        assert!(m.is_pod_resize_pending_with("u", REASON_INFEASIBLE));
        m.clear_pod_resize_pending_condition("u");
        assert!(m.get_pod_resize_conditions("u").is_empty());
    }

    #[test]
    fn in_progress_condition_keeps_its_generation_until_cleared() {
        let m = StatusManager::default();
        assert_eq!(
            m.set_pod_resize_in_progress_condition("u", "", "", Some(2)),
            (Some(2), true)
        );
        assert_eq!(
            m.set_pod_resize_in_progress_condition("u", "", "", Some(3)),
            (Some(2), false)
        );
        let (_, changed) = m.set_pod_resize_in_progress_condition("u", REASON_ERROR, "boom", None);
        assert!(changed);
        assert_eq!(m.clear_pod_resize_in_progress_condition("u"), Some(Some(2)));
        assert_eq!(m.clear_pod_resize_in_progress_condition("u"), None);
        assert!(m.determine_pod_resize_status("u", false).is_empty());
    }

    #[test]
    fn terminal_pods_report_no_resize_conditions() {
        let m = StatusManager::default();
        m.set_pod_resize_pending_condition("u", REASON_DEFERRED, "", Some(1));
        assert!(m.determine_pod_resize_status("u", true).is_empty());
        assert!(m.get_pod_resize_conditions("u").is_empty());
    }
}
