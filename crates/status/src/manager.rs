//! The status manager: latest API status per pod (upstream
//! `pkg/kubelet/status/status_manager.go`).
//!
//! Sync methods hand it the generated status ([`StatusManager::set_pod_status`]);
//! it refuses illegal container state transitions (`checkContainerStateTransition`),
//! keeps condition transition times, `startTime` and `observedGeneration`
//! stable, versions every change and notifies subscribers. It serves the
//! read-only `/pods` view. In API mode the [`crate::syncer::StatusSyncer`]
//! (upstream `Start`, `syncBatch`, `syncPod`) [`subscribe`](StatusManager::subscribe)s,
//! reads [`versioned_statuses`](StatusManager::versioned_statuses) and patches
//! `pods/status`, and deletes a finished pod with grace period 0.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod as ApiPod, PodSpec,
    PodStatus as ApiPodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_container::kubetypes::{is_static_pod, pod_uid};
use kubelet_container::{
    Clock, RealClock, container_should_restart, is_restartable_init_container,
};
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
}

/// The API status of a static pod's mirror pod, if it has one (upstream
/// `podManager.GetMirrorPodByPod(pod).Status`).
pub type MirrorPodStatusFn = Arc<dyn Fn(&ApiPod) -> Option<ApiPodStatus> + Send + Sync>;

#[derive(Clone, Default)]
struct MirrorSource(Arc<RwLock<Option<MirrorPodStatusFn>>>);

impl std::fmt::Debug for MirrorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MirrorSource")
    }
}

/// Keeps the latest status per pod UID. Cheap to share (`Arc` inside).
#[derive(Debug, Clone)]
pub struct StatusManager {
    statuses: Arc<RwLock<HashMap<String, VersionedPodStatus>>>,
    pub(crate) clock: Arc<dyn Clock>,
    changed: Arc<watch::Sender<u64>>,
    mirror_status: MirrorSource,
    pub(crate) resize_conditions: crate::resize::ResizeConditionsStore,
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

/// Second-precision times and termination messages of at most
/// `bytes_per_status` bytes.
fn normalize(status: &mut ApiPodStatus, bytes_per_status: usize) {
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
                if let Some(m) = t.message.as_mut() {
                    truncate_bytes(m, bytes_per_status);
                }
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
            mirror_status: MirrorSource::default(),
            resize_conditions: crate::resize::ResizeConditionsStore::default(),
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

    /// Where the first status of a static pod finds its previous one: its mirror pod's
    /// (API mode). Start times and transition times then survive a kubelet restart.
    pub fn set_mirror_pod_status_source(&self, source: MirrorPodStatusFn) {
        *self
            .mirror_status
            .0
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(source);
    }

    fn mirror_pod_status(&self, pod: &ApiPod) -> Option<ApiPodStatus> {
        let source = self
            .mirror_status
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        source.and_then(|f| f(pod))
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

    /// Stores a newly generated status (upstream `SetPodStatus`). A pod with
    /// a deletion timestamp always gets a new version, so the syncer looks at
    /// it again (and may delete it).
    pub fn set_pod_status(&self, pod: &ApiPod, mut status: ApiPodStatus) {
        // CalculatePodStatusObservedGeneration (PodObservedGenerationTracking is GA).
        status.observed_generation = pod.metadata.generation;
        let force = pod.metadata.deletion_timestamp.is_some();
        let ready = kubelet_container::timeline::is_ready(&status);
        self.update_status_internal(pod, status, force, false);
        if ready {
            // The pod startup timeline's last step (logged at V(2) the first time).
            kubelet_container::timeline::global().record_ready(pod_uid(pod), &pod_key(pod));
        }
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
        let not_terminated =
            |cs: &ContainerStatus| cs.state.as_ref().is_none_or(|s| s.terminated.is_none());
        // Once a pod has initialized, any missing status is treated as a failure.
        if has_pod_initialized(pod) {
            for cs in status.container_statuses.iter_mut().flatten() {
                if not_terminated(cs) {
                    cs.state = Some(unknown.clone());
                }
            }
        }
        // Init containers with evidence of a start (all but the waiting suffix) are failed.
        if let Some(init) = status.init_container_statuses.as_mut() {
            let n = initialized_containers(init);
            for cs in init.iter_mut().take(n) {
                if not_terminated(cs) {
                    cs.state = Some(unknown.clone());
                }
            }
        }
        if !is_static_pod(pod) && !status.phase.as_deref().is_some_and(phase::is_terminal) {
            status.phase = Some(phase::FAILED.into());
        }
        self.update_status_internal(pod, status, true, true);
    }

    /// Forgets a pod (upstream `RemoveOrphanedStatuses` for one UID).
    pub fn delete(&self, uid: &str) {
        kubelet_container::pod_startup_latency_tracker::global().delete_pod_startup_state(uid);
        if self.write().remove(uid).is_some() {
            self.notify();
        }
    }

    /// Forgets every pod not in `keep`.
    pub fn remove_orphaned_statuses<'a>(&self, keep: impl IntoIterator<Item = &'a str>) {
        let keep: HashSet<&str> = keep.into_iter().collect();
        let tracker = kubelet_container::pod_startup_latency_tracker::global();
        self.write().retain(|uid, _| {
            let kept = keep.contains(uid.as_str());
            if !kept {
                tracker.delete_pod_startup_state(uid);
            }
            kept
        });
        self.resize_conditions.retain(|uid| keep.contains(uid));
    }

    /// Drops the status of a pod the syncer found deleted or recreated
    /// (upstream `deletePodStatus`).
    pub(crate) fn delete_pod_status(&self, uid: &str) {
        self.delete(uid);
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
        // Looked up before taking the lock: the source reads the pod manager.
        let mirror_old = (is_static_pod(pod) && !self.read().contains_key(&uid))
            .then(|| self.mirror_pod_status(pod))
            .flatten();
        let mut statuses = self.write();
        let cached = statuses.get(&uid);
        let mut finished = finished;
        if let Some(c) = cached
            && c.pod_is_finished
            && !finished
            && !is_static_pod(pod)
        {
            tracing::info!(pod = %pod_key(pod), "Got unexpected podIsFinished=false, while podIsFinished=true in status cache, programmer error");
            finished = true;
        }
        let old = cached
            .map(|c| c.status.clone())
            .or(mirror_old)
            .or_else(|| pod.status.clone())
            .unwrap_or_default();
        if let Err(e) = check_container_state_transition(&old, &status, pod) {
            tracing::error!(pod = %pod_key(pod), error = %e, "Status update on pod aborted");
            return;
        }
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
        // Prevent sending unnecessary patches.
        if old.observed_generation > status.observed_generation {
            status.observed_generation = old.observed_generation;
        }
        normalize_status(pod, &mut status);
        if !force && cached.is_some_and(|c| is_pod_status_by_kubelet_equal(&c.status, &status)) {
            tracing::trace!(pod = %pod_key(pod), "Ignoring same status for pod");
            return;
        }
        let next = VersionedPodStatus {
            status,
            version: cached.map_or(0, |c| c.version) + 1,
            pod_name: pod.metadata.name.clone().unwrap_or_default(),
            pod_namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            pod_is_finished: finished,
        };
        statuses.insert(uid, next);
        drop(statuses);
        self.notify();
    }
}

fn pod_key(pod: &ApiPod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

fn state_of(cs: &ContainerStatus) -> Option<&ContainerState> {
    cs.state.as_ref()
}

fn is_waiting(cs: &ContainerStatus) -> bool {
    state_of(cs).is_some_and(|s| s.waiting.is_some())
}

fn last_terminated(cs: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    cs.last_state.as_ref().and_then(|s| s.terminated.as_ref())
}

/// The pod shows evidence of having started a regular container: no init
/// containers, a regular container out of waiting, or the last init
/// container done (upstream `hasPodInitialized`, on the API pod's status).
fn has_pod_initialized(pod: &ApiPod) -> bool {
    let init_specs = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    if init_specs.is_empty() {
        return true;
    }
    let api = pod.status.clone().unwrap_or_default();
    if api
        .container_statuses
        .iter()
        .flatten()
        .any(|cs| last_terminated(cs).is_some() || !is_waiting(cs))
    {
        return true;
    }
    let init = api.init_container_statuses.unwrap_or_default();
    let Some(last) = init.last() else {
        return false;
    };
    // GetContainerByIndex: the spec container at that index must have the status's name.
    let Some(spec) = init_specs
        .get(init.len() - 1)
        .filter(|c| c.name == last.name)
    else {
        tracing::debug!(pod = %pod_key(pod), "Mismatch between pod spec and status, likely programmer error");
        return false;
    };
    if is_restartable_init_container(spec) {
        return state_of(last).is_some_and(|s| s.running.is_some()) && last.started == Some(true);
    }
    let exited_zero = |t: Option<&ContainerStateTerminated>| t.is_some_and(|t| t.exit_code == 0);
    exited_zero(last_terminated(last))
        || exited_zero(state_of(last).and_then(|s| s.terminated.as_ref()))
}

/// How many leading init container statuses attempted to start: all but the
/// suffix still waiting; at least one (upstream `initializedContainers`).
fn initialized_containers(statuses: &[ContainerStatus]) -> usize {
    statuses
        .iter()
        .rposition(|cs| !is_waiting(cs) || last_terminated(cs).is_some())
        .map_or(statuses.len().min(1), |i| i + 1)
}

/// A terminated container tried to leave the terminated state although its
/// pod's restart policy does not allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IllegalTransition {
    /// A regular container.
    #[error("terminated container {0} attempted illegal transition to non-terminated state")]
    Container(String),
    /// An init container.
    #[error("terminated init container {0} attempted illegal transition to non-terminated state")]
    InitContainer(String),
    /// The init container statuses do not match the spec.
    #[error("found mismatch between pod spec and status, container: {0}")]
    Mismatch(String),
}

/// Refuses a status in which a container leaves the terminated state when
/// the restart policy forbids it (upstream `checkContainerStateTransition`): the pod's
/// policy, and with `ContainerRestartRules` the container's own rules and policy.
pub fn check_container_state_transition(
    old: &ApiPodStatus,
    new: &ApiPodStatus,
    pod: &ApiPod,
) -> Result<(), IllegalTransition> {
    let default_spec = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let policy = spec.restart_policy.as_deref().unwrap_or("Always");
    if policy == "Always" {
        return Ok(());
    }
    let restart_rules = kubelet_container::gates::container_restart_rules();
    // Allowed to restart: failed under OnFailure, or by the container's restart rules.
    let may_restart = |specs: &[Container], name: &str, t: &ContainerStateTerminated| {
        (t.exit_code != 0 && policy == "OnFailure")
            || (restart_rules
                && specs
                    .iter()
                    .any(|c| c.name == name && container_should_restart(c, spec, t.exit_code)))
    };
    let leaves = |name: &str, news: &Option<Vec<ContainerStatus>>| {
        news.iter()
            .flatten()
            .any(|n| n.name == name && state_of(n).is_none_or(|s| s.terminated.is_none()))
    };
    for o in old.container_statuses.iter().flatten() {
        let Some(t) = state_of(o).and_then(|s| s.terminated.as_ref()) else {
            continue;
        };
        if !may_restart(&spec.containers, &o.name, t) && leaves(&o.name, &new.container_statuses) {
            return Err(IllegalTransition::Container(o.name.clone()));
        }
    }
    let init_specs = spec.init_containers.as_deref().unwrap_or_default();
    for (i, o) in old.init_container_statuses.iter().flatten().enumerate() {
        let Some(c) = init_specs.get(i).filter(|c| c.name == o.name) else {
            return Err(IllegalTransition::Mismatch(o.name.clone()));
        };
        if is_restartable_init_container(c) {
            continue;
        }
        let Some(t) = state_of(o).and_then(|s| s.terminated.as_ref()) else {
            continue;
        };
        if !may_restart(init_specs, &o.name, t) && leaves(&o.name, &new.init_container_statuses) {
            return Err(IllegalTransition::InitContainer(o.name.clone()));
        }
    }
    Ok(())
}

/// Go's `omitempty` view of a status: nulls, empty strings and empty lists
/// dropped (what `apiequality.Semantic.DeepEqual` sees as equal).
fn semantic(status: &ApiPodStatus) -> serde_json::Value {
    serde_json::to_value(status)
        .map(crate::patch::normalize)
        .unwrap_or_default()
}

/// The statuses are equal, ignoring conditions the kubelet neither owns nor
/// shares and the transition/probe times of the others (upstream
/// `isPodStatusByKubeletEqual`).
pub fn is_pod_status_by_kubelet_equal(old: &ApiPodStatus, new: &ApiPodStatus) -> bool {
    let by_kubelet = |s: &ApiPodStatus| -> Vec<(String, String, Option<String>, Option<String>)> {
        let mut v: Vec<_> = s
            .conditions
            .iter()
            .flatten()
            .filter(|c| {
                condition::owned_by_kubelet(&c.type_) || condition::shared_by_kubelet(&c.type_)
            })
            .map(|c| {
                let opt = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
                (
                    c.type_.clone(),
                    c.status.clone(),
                    opt(&c.reason),
                    opt(&c.message),
                )
            })
            .collect();
        v.sort();
        v.dedup_by(|a, b| a.0 == b.0);
        v
    };
    if by_kubelet(old) != by_kubelet(new) {
        return false;
    }
    let mut old_copy = old.clone();
    old_copy.conditions.clone_from(&new.conditions);
    // Structural equality implies semantic equality; the normalised JSON comparison (which
    // also equates absent and empty values) is only needed when they differ. Most calls
    // (the 10 s `syncBatch` over every pod) compare equal statuses.
    old_copy == *new || semantic(&old_copy) == semantic(new)
}

/// Max bytes of all termination messages of a pod (upstream
/// `MaxPodTerminationMessageLogLength`).
const MAX_POD_TERMINATION_MESSAGE_LOG_LENGTH: usize = 1024 * 12;

fn truncate_bytes(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// Second-precision times, termination messages within the pod's share of
/// 12 KiB, container statuses by name and init container statuses in spec
/// order (upstream `normalizeStatus`): what the apiserver would give back.
pub(crate) fn normalize_status(pod: &ApiPod, status: &mut ApiPodStatus) {
    let spec = pod.spec.as_ref();
    let count = spec.map_or(0, |s| {
        s.containers.len()
            + s.init_containers.as_ref().map_or(0, Vec::len)
            + s.ephemeral_containers.as_ref().map_or(0, Vec::len)
    });
    let bytes_per_status = MAX_POD_TERMINATION_MESSAGE_LOG_LENGTH / count.max(1);
    normalize(status, bytes_per_status);
    for list in [
        status.container_statuses.as_mut(),
        status.ephemeral_container_statuses.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        list.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if let (Some(list), Some(init)) = (
        status.init_container_statuses.as_mut(),
        spec.and_then(|s| s.init_containers.as_ref()),
    ) {
        list.sort_by_key(|cs| {
            init.iter()
                .position(|c| c.name == cs.name)
                .unwrap_or(usize::MAX)
        });
    }
}
