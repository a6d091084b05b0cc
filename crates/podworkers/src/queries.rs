//! Questions other kubelet loops ask the pod workers (upstream `pod_workers.go`
//! `IsPodKnownTerminated`, `CouldHaveRunningContainers`, `ShouldPod*`). The pod
//! workers are the only source of truth for where a pod is in its lifecycle.

use kubelet_container::PodStateProvider;

use crate::sync_status::PodSyncStatus;
use crate::workers::PodWorkers;

impl PodWorkers {
    fn query(
        &self,
        uid: &str,
        known: impl FnOnce(&PodSyncStatus) -> bool,
        unknown: impl FnOnce(bool) -> bool,
    ) -> bool {
        let guard = self.inner.lock();
        match guard.statuses.get(uid) {
            Some(status) => known(status),
            None => unknown(guard.pods_synced),
        }
    }

    /// True once `sync_terminating_pod` succeeded for the pod. False for
    /// unknown pods. For config loops (admission), not subsystems.
    pub fn is_pod_known_terminated(&self, uid: &str) -> bool {
        self.query(uid, PodSyncStatus::is_terminated, |_| false)
    }

    /// True before the first `sync_known_pods`, and for known pods until they
    /// are terminated (containers guaranteed stopped). For config loops.
    pub fn could_have_running_containers(&self, uid: &str) -> bool {
        self.query(uid, |s| !s.is_terminated(), |synced| !synced)
    }

    /// True once `sync_terminated_pod` succeeded; for unknown pods, true after
    /// the first `sync_known_pods`.
    pub fn should_pod_be_finished(&self, uid: &str) -> bool {
        self.query(uid, |s| s.finished, |synced| synced)
    }

    /// True from the termination request until the pod is forgotten; false
    /// for unknown pods. For the kubelet's sync methods.
    pub fn is_pod_termination_requested(&self, uid: &str) -> bool {
        self.query(uid, PodSyncStatus::is_termination_requested, |_| false)
    }

    /// True once the worker observed the termination (no container will be
    /// started again); for unknown pods, true after the first `sync_known_pods`.
    /// For subsystems deciding to stop background setup.
    pub fn should_pod_containers_be_terminating(&self, uid: &str) -> bool {
        self.query(uid, |s| s.started_terminating, |synced| synced)
    }

    /// True once all containers are stopped (resources used by running
    /// containers, like volumes, may go); for unknown pods after the first
    /// `sync_known_pods`.
    pub fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        self.query(uid, PodSyncStatus::is_terminated, |synced| synced)
    }

    /// True when all content of the pod may be removed: evicted, or deleted
    /// and terminated; for unknown pods after the first `sync_known_pods`.
    pub fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        self.query(
            uid,
            |s| s.evicted || (s.deleted && s.is_terminated()),
            |synced| synced,
        )
    }

    /// True while a started static pod with this full name is terminating
    /// (used by orphaned mirror pod cleanup).
    pub fn is_pod_for_mirror_pod_terminating_by_full_name(&self, full_name: &str) -> bool {
        let guard = self.inner.lock();
        let Some(uid) = guard.started_static_pods_by_fullname.get(full_name) else {
            return false;
        };
        guard
            .statuses
            .get(uid)
            .is_some_and(|s| s.is_termination_requested() && !s.is_terminated())
    }

    /// True while an update for the pod is pending or being worked on.
    pub fn is_working(&self, uid: &str) -> bool {
        self.query(uid, |s| s.working, |_| false)
    }

    /// When a worker last finished terminating its pod (its containers are stopped) or was
    /// forgotten; `None` if none ever did. A runtime listing started after this instant
    /// shows no container of a pod whose worker has finished. Not upstream: housekeeping
    /// uses it to decide whether the PLEG's last listing may stand in for a fresh one.
    pub fn last_termination(&self) -> Option<tokio::time::Instant> {
        self.inner.lock().last_termination
    }
}

impl PodStateProvider for PodWorkers {
    fn is_pod_termination_requested(&self, uid: &str) -> bool {
        PodWorkers::is_pod_termination_requested(self, uid)
    }
    fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        PodWorkers::should_pod_content_be_removed(self, uid)
    }
    fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        PodWorkers::should_pod_runtime_be_removed(self, uid)
    }
}
