//! The status manager: latest API status per pod (upstream
//! `pkg/kubelet/status/status_manager.go`).
//!
//! Sync methods hand it the generated status ([`StatusManager::set_pod_status`]);
//! it keeps condition transition times and `startTime` stable, versions every
//! change and notifies subscribers. It serves the read-only `/pods` view now.
//! The apiserver syncer (patching `pods/status`, final delete) is a later
//! addition: it will [`subscribe`](StatusManager::subscribe) and read
//! [`versioned_statuses`](StatusManager::versioned_statuses), recording what it
//! wrote with [`mark_synced`](StatusManager::mark_synced).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, Pod as ApiPod, PodStatus as ApiPodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_container::kubetypes::{is_static_pod, pod_uid};
use kubelet_container::{Clock, RealClock};
use tokio::sync::watch;

use crate::reasons::{CONTAINER_STATUS_UNKNOWN, condition, phase};

/// A status with its version (upstream `versionedPodStatus`).
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedPodStatus {
    /// The status.
    pub status: ApiPodStatus,
    /// Increases with every change.
    pub version: u64,
    /// Pod name.
    pub pod_name: String,
    /// Pod namespace.
    pub pod_namespace: String,
    /// Set by `terminate_pod`: the pod's final status.
    pub pod_is_finished: bool,
    /// Highest version written to the apiserver (0: never).
    pub synced_version: u64,
}

/// Keeps the latest status per pod UID. Cheap to share (`Arc` inside).
#[derive(Debug, Clone)]
pub struct StatusManager {
    statuses: Arc<RwLock<HashMap<String, VersionedPodStatus>>>,
    clock: Arc<dyn Clock>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for StatusManager {
    fn default() -> Self {
        Self::new(Arc::new(RealClock))
    }
}

const KUBELET_CONDITIONS: [&str; 6] = [
    condition::CONTAINERS_READY,
    condition::READY,
    condition::INITIALIZED,
    condition::POD_READY_TO_START_CONTAINERS,
    condition::POD_SCHEDULED,
    condition::DISRUPTION_TARGET,
];

/// API times have second precision; truncate so equal statuses compare equal
/// (upstream `normalizeStatus`).
fn normalize_time(t: &mut Option<Time>) {
    if let Some(Time(ts)) = t
        && let Ok(truncated) = jiff::Timestamp::from_second(ts.as_second())
    {
        *ts = truncated;
    }
}

fn normalize(status: &mut ApiPodStatus) {
    normalize_time(&mut status.start_time);
    for c in status.conditions.iter_mut().flatten() {
        normalize_time(&mut c.last_probe_time);
        normalize_time(&mut c.last_transition_time);
    }
    let all = status
        .container_statuses
        .iter_mut()
        .chain(status.init_container_statuses.iter_mut())
        .chain(status.ephemeral_container_statuses.iter_mut())
        .flatten();
    for cs in all {
        for state in [cs.state.as_mut(), cs.last_state.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(r) = state.running.as_mut() {
                normalize_time(&mut r.started_at);
            }
            if let Some(t) = state.terminated.as_mut() {
                normalize_time(&mut t.started_at);
                normalize_time(&mut t.finished_at);
            }
        }
    }
}

impl StatusManager {
    /// Status manager using `clock` for transition and start times.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            statuses: Arc::default(),
            clock,
            changed: Arc::new(watch::channel(0).0),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, VersionedPodStatus>> {
        self.statuses.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, VersionedPodStatus>> {
        self.statuses
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Latest status of the pod (upstream `GetPodStatus`).
    pub fn get_pod_status(&self, uid: &str) -> Option<ApiPodStatus> {
        self.read().get(uid).map(|v| v.status.clone())
    }

    /// Versioned statuses of every pod, for an apiserver syncer.
    pub fn versioned_statuses(&self) -> HashMap<String, VersionedPodStatus> {
        self.read().clone()
    }

    /// A receiver that changes whenever a status changes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Records that `version` of the pod's status reached the apiserver.
    pub fn mark_synced(&self, uid: &str, version: u64) {
        if let Some(v) = self.write().get_mut(uid) {
            v.synced_version = v.synced_version.max(version);
        }
    }

    /// Stores a newly generated status (upstream `SetPodStatus`).
    pub fn set_pod_status(&self, pod: &ApiPod, status: ApiPodStatus) {
        self.update_status_internal(pod, status, false, false);
    }

    /// Final status of a terminated pod: containers without a terminated state
    /// are reported as terminated-unknown (exit 137) and a non-static pod gets a
    /// terminal phase (upstream `TerminatePod`).
    pub fn terminate_pod(&self, pod: &ApiPod) {
        let uid = pod_uid(pod);
        let mut status = self
            .get_pod_status(uid)
            .or_else(|| pod.status.clone())
            .unwrap_or_default();
        let unknown = ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 137,
                reason: Some(CONTAINER_STATUS_UNKNOWN.into()),
                message: Some(
                    "The container could not be located when the pod was terminated".into(),
                ),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        };
        let all = status
            .container_statuses
            .iter_mut()
            .chain(status.init_container_statuses.iter_mut())
            .flatten();
        for cs in all.filter(|cs| cs.state.as_ref().is_none_or(|s| s.terminated.is_none())) {
            cs.state = Some(unknown.clone());
            cs.ready = false;
        }
        if !is_static_pod(pod) && !status.phase.as_deref().is_some_and(phase::is_terminal) {
            status.phase = Some(phase::FAILED.into());
        }
        self.update_status_internal(pod, status, true, true);
    }

    /// Forgets a pod (upstream `RemoveOrphanedStatuses` for one UID).
    pub fn delete(&self, uid: &str) {
        if self.write().remove(uid).is_some() {
            self.notify();
        }
    }

    /// Forgets every pod not in `keep`.
    pub fn remove_orphaned_statuses<'a>(&self, keep: impl IntoIterator<Item = &'a str>) {
        let keep: HashSet<&str> = keep.into_iter().collect();
        self.write().retain(|uid, _| keep.contains(uid.as_str()));
    }

    fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn update_status_internal(
        &self,
        pod: &ApiPod,
        mut status: ApiPodStatus,
        force: bool,
        finished: bool,
    ) {
        let uid = pod_uid(pod).to_string();
        let mut statuses = self.write();
        let cached = statuses.get(&uid);
        let old = cached
            .map(|c| c.status.clone())
            .or_else(|| pod.status.clone())
            .unwrap_or_default();
        let now = Time(self.clock.now());
        for type_ in KUBELET_CONDITIONS {
            let old_cond = old.conditions.iter().flatten().find(|c| c.type_ == type_);
            if let Some(c) = status
                .conditions
                .iter_mut()
                .flatten()
                .find(|c| c.type_ == type_)
            {
                c.last_transition_time = match old_cond {
                    Some(o) if o.status == c.status && o.last_transition_time.is_some() => {
                        o.last_transition_time.clone()
                    }
                    _ => Some(now.clone()),
                };
            }
        }
        status.start_time = old.start_time.clone().or(status.start_time).or(Some(now));
        normalize(&mut status);
        if cached.is_some_and(|c| c.status == status) && !force {
            return;
        }
        let next = VersionedPodStatus {
            status,
            version: cached.map_or(0, |c| c.version) + 1,
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            pod_namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            pod_is_finished: finished || cached.is_some_and(|c| c.pod_is_finished),
            synced_version: cached.map_or(0, |c| c.synced_version),
        };
        statuses.insert(uid, next);
        drop(statuses);
        self.notify();
    }
}
