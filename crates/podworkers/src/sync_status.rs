//! Per-pod bookkeeping of the pod workers (upstream `podSyncStatus`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod as ApiPod;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::types::{Completion, KillPodOptions, PodStatusFn, PodWorkerState, UpdatePodOptions};

/// Tracks one pod's way through setup, terminating and terminated.
#[derive(Default)]
pub(crate) struct PodSyncStatus {
    /// Cancels the current `PodSyncer` call.
    pub cancel: Option<CancellationToken>,
    /// `name_namespace`.
    pub fullname: String,
    /// An update is pending or being worked on.
    pub working: bool,
    /// The update the worker should observe next. A newer update always
    /// replaces a pending one: only the latest state is guaranteed to be synced.
    pub pending_update: Option<UpdatePodOptions>,
    /// The latest state handed to a sync method; visible to other components
    /// once the pod has started. Pod and mirror pod accumulate, kill options
    /// accumulate (a grace period can only shrink).
    pub active_update: Option<UpdatePodOptions>,
    /// Allowed to start.
    pub started_at: Option<Instant>,
    /// Termination requested (possibly before the worker noticed).
    pub terminating_at: Option<Instant>,
    /// `sync_terminating_pod` succeeded: no container is running.
    pub terminated_at: Option<Instant>,
    /// Requested grace period (seconds) once terminating; never zero.
    pub grace_period: i64,
    /// Waiters for termination to complete.
    pub notify_post_terminating: Vec<Completion>,
    /// Status overrides for the terminating pod; the last one applies.
    pub status_post_terminating: Vec<PodStatusFn>,
    /// The worker observed the termination request: no new container will start.
    pub started_terminating: bool,
    /// Deleted in the apiserver or no longer in config.
    pub deleted: bool,
    /// Evicted by the kubelet.
    pub evicted: bool,
    /// `sync_terminated_pod` succeeded; kept until `sync_known_pods` forgets it.
    pub finished: bool,
    /// A create arrived for the same UID while terminating.
    pub restart_requested: bool,
    /// Seen in the runtime; must go through a terminating sync.
    pub observed_runtime: bool,
}

impl PodSyncStatus {
    pub fn is_termination_requested(&self) -> bool {
        self.terminating_at.is_some()
    }
    pub fn is_terminated(&self) -> bool {
        self.terminated_at.is_some()
    }
    pub fn is_started(&self) -> bool {
        self.started_at.is_some()
    }

    /// Current lifecycle state (upstream `WorkType`).
    pub fn work_type(&self) -> PodWorkerState {
        if self.is_terminated() {
            PodWorkerState::Terminated
        } else if self.is_termination_requested() {
            PodWorkerState::Terminating
        } else {
            PodWorkerState::Sync
        }
    }

    /// Records `other` as the latest state (upstream `mergeLastUpdate`).
    pub fn merge_last_update(&mut self, other: &UpdatePodOptions) {
        let opts = self
            .active_update
            .get_or_insert_with(UpdatePodOptions::default);
        // A runtime-only update never replaces a real pod spec.
        if opts.pod.is_none() || other.running_pod.is_none() {
            opts.pod.clone_from(&other.pod);
        }
        opts.running_pod.clone_from(&other.running_pod);
        if other.mirror_pod.is_some() {
            opts.mirror_pod.clone_from(&other.mirror_pod);
        }
        opts.update_type = other.update_type;
        if let Some(kill) = &other.kill_pod_options {
            opts.kill_pod_options = Some(KillPodOptions {
                evict: kill.evict,
                grace_period_override: kill.grace_period_override,
                ..KillPodOptions::default()
            });
        }
    }

    /// Wakes every termination waiter.
    pub fn complete_waiters(&mut self) {
        self.notify_post_terminating
            .drain(..)
            .for_each(|c| c.complete());
    }
}

/// Grace period to use for a terminating pod; it can only decrease. Returns
/// the value and whether it shortened a previous one (upstream
/// `calculateEffectiveGracePeriod`).
pub(crate) fn calculate_effective_grace_period(
    status: &PodSyncStatus,
    pod: &ApiPod,
    options: Option<&KillPodOptions>,
) -> (i64, bool) {
    let mut grace = status.grace_period;
    let mut overridden = false;
    let mut lower = |candidate: Option<i64>| {
        if let Some(v) = candidate
            && (grace == 0 || v < grace)
        {
            grace = v;
            overridden = true;
        }
    };
    // The apiserver's deletion grace period is bedrock truth.
    lower(pod.metadata.deletion_grace_period_seconds);
    // Other kubelet parts (eviction) may ask for a faster kill.
    lower(options.and_then(|o| o.grace_period_override));
    if !overridden && grace == 0 {
        grace = pod
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(0);
    }
    let grace = grace.max(1);
    (
        grace,
        status.grace_period != 0 && status.grace_period != grace,
    )
}

/// A runtime-only placeholder API pod (upstream `RunningPod.ToAPIPod`).
pub(crate) fn placeholder_pod(rp: &kubelet_container::Pod) -> Arc<ApiPod> {
    let mut pod = ApiPod::default();
    pod.metadata.uid = Some(rp.id.clone());
    pod.metadata.name = Some(rp.name.clone());
    pod.metadata.namespace = Some(rp.namespace.clone());
    Arc::new(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn pod(spec_grace: Option<i64>, deletion_grace: Option<i64>) -> ApiPod {
        let mut p = ApiPod {
            spec: Some(PodSpec {
                termination_grace_period_seconds: spec_grace,
                ..PodSpec::default()
            }),
            ..ApiPod::default()
        };
        p.metadata.deletion_grace_period_seconds = deletion_grace;
        p
    }

    fn kill(grace: i64) -> KillPodOptions {
        KillPodOptions {
            grace_period_override: Some(grace),
            ..KillPodOptions::default()
        }
    }

    #[test]
    fn grace_period_rules() {
        let fresh = PodSyncStatus::default();
        assert_eq!(
            calculate_effective_grace_period(&fresh, &pod(Some(30), None), None),
            (30, false)
        );
        assert_eq!(
            calculate_effective_grace_period(&fresh, &pod(Some(30), Some(20)), None),
            (20, false)
        );
        assert_eq!(
            calculate_effective_grace_period(&fresh, &pod(Some(30), Some(20)), Some(&kill(5))),
            (5, false)
        );
        assert_eq!(
            calculate_effective_grace_period(&fresh, &pod(Some(0), None), None),
            (1, false),
            "never below 1"
        );

        let terminating = PodSyncStatus {
            grace_period: 10,
            ..PodSyncStatus::default()
        };
        assert_eq!(
            calculate_effective_grace_period(&terminating, &pod(Some(30), None), Some(&kill(20))),
            (10, false),
            "cannot grow"
        );
        assert_eq!(
            calculate_effective_grace_period(&terminating, &pod(Some(30), None), Some(&kill(3))),
            (3, true),
            "can shrink"
        );
    }
}
