//! The pod workers: accepting updates and reconciling the known set
//! (upstream `podWorkers.UpdatePod`, `SyncKnownPods` in `pod_workers.go`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod as ApiPod;
use kubelet_container::kubetypes::{is_static_pod, pod_full_name, pod_uid};
use kubelet_container::{Cache, PodStatus, SandboxState, SyncPodType};
use kubelet_container::{ContainerState, PodStatus as RuntimePodStatus};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use crate::sync_status::{PodSyncStatus, calculate_effective_grace_period, placeholder_pod};
use crate::syncer::PodSyncer;
use crate::types::{PodWorkerState, UpdatePodOptions};
use crate::work_queue::WorkQueue;
use crate::worker_loop::pod_worker_loop;

/// Resync interval default (upstream `syncFrequency`, 1 min).
pub const DEFAULT_RESYNC_INTERVAL: Duration = Duration::from_secs(60);
/// Back-off after a failed sync (upstream `backOffPeriod`).
pub const DEFAULT_BACKOFF_PERIOD: Duration = Duration::from_secs(10);
/// Back-off when the network is not ready (upstream `backOffOnTransientErrorPeriod`).
pub const TRANSIENT_ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// Jitter factor for resync and back-off delays.
pub const JITTER_FACTOR: f64 = 0.5;

/// Tunables of the pod workers.
#[derive(Clone, Debug)]
pub struct PodWorkersConfig {
    /// Delay before a successfully synced pod is resynced.
    pub resync_interval: Duration,
    /// Delay before a failed sync is retried.
    pub backoff_period: Duration,
    /// Add up to 50 % random jitter to delays (upstream does; tests may turn it off).
    pub jitter: bool,
}

impl Default for PodWorkersConfig {
    fn default() -> Self {
        Self {
            resync_interval: DEFAULT_RESYNC_INTERVAL,
            backoff_period: DEFAULT_BACKOFF_PERIOD,
            jitter: true,
        }
    }
}

#[derive(Default)]
pub(crate) struct State {
    /// Once true, unknown pods are known not to be running.
    pub pods_synced: bool,
    /// Wake-up channel of each worker task; dropping it stops the task.
    pub pod_updates: HashMap<String, mpsc::Sender<()>>,
    pub statuses: HashMap<String, PodSyncStatus>,
    pub started_static_pods_by_fullname: HashMap<String, String>,
    pub waiting_to_start_static_pods_by_fullname: HashMap<String, Vec<String>>,
    /// When a worker last finished terminating its pod or was forgotten (see
    /// [`PodWorkers::last_termination`]).
    pub last_termination: Option<Instant>,
}

pub(crate) struct Inner {
    pub state: Mutex<State>,
    pub syncer: Arc<dyn PodSyncer>,
    pub cache: Arc<Cache>,
    pub work_queue: Arc<WorkQueue>,
    pub config: PodWorkersConfig,
    pub shutdown: CancellationToken,
}

impl Inner {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn delay(&self, d: Duration) -> Duration {
        if self.config.jitter {
            crate::work_queue::jitter(d, JITTER_FACTOR)
        } else {
            d
        }
    }
}

/// Tracks every pod the kubelet acts on and runs one task per pod UID that
/// drives it through sync → terminating → terminated. See the crate docs for
/// the lifecycle timeline. Cheap to clone (shared handle).
///
/// Must be used inside a Tokio runtime: [`update_pod`](Self::update_pod)
/// spawns worker tasks.
#[derive(Clone)]
pub struct PodWorkers {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for PodWorkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodWorkers")
            .field("pods", &self.inner.lock().statuses.len())
            .finish()
    }
}

fn is_terminal_phase(pod: &ApiPod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// No running container and no ready sandbox (upstream `isPodStatusCacheTerminal`).
fn is_pod_status_cache_terminal(status: &RuntimePodStatus) -> bool {
    status
        .container_statuses
        .iter()
        .all(|c| c.state != ContainerState::Running)
        && status
            .sandbox_statuses
            .iter()
            .all(|s| s.state != SandboxState::Ready)
}

impl PodWorkers {
    /// Pod workers calling `syncer`, reading statuses from `cache` (filled by
    /// the PLEG) and scheduling resyncs on `work_queue`.
    pub fn new(
        syncer: Arc<dyn PodSyncer>,
        cache: Arc<Cache>,
        work_queue: Arc<WorkQueue>,
        config: PodWorkersConfig,
    ) -> Self {
        let inner = Inner {
            state: Mutex::new(State::default()),
            syncer,
            cache,
            work_queue,
            config,
            shutdown: CancellationToken::new(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The queue of pods due for a resync.
    pub fn work_queue(&self) -> &Arc<WorkQueue> {
        &self.inner.work_queue
    }

    /// Cancels in-flight syncs and stops every worker task. Used on kubelet exit.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Delivers a configuration change or termination request to the pod's
    /// worker (upstream `UpdatePod`). Only the latest pending update is kept.
    /// A pod moves to terminating when it is deleted in the apiserver, reaches
    /// a terminal phase, is killed (`SyncPodType::Kill`), or is an orphaned
    /// runtime pod. Updates for finished pods are ignored until
    /// [`sync_known_pods`](Self::sync_known_pods) forgets them.
    pub fn update_pod(&self, mut options: UpdatePodOptions) {
        let (uid, fullname, is_runtime_pod) = match (&options.pod, &options.running_pod) {
            (Some(pod), _) => {
                options.running_pod = None;
                (pod_uid(pod).to_string(), pod_full_name(pod), false)
            }
            (None, Some(rp)) if options.update_type == SyncPodType::Kill => {
                (rp.id.clone(), rp.full_name(), true)
            }
            (None, Some(rp)) => {
                info!(pod = %rp.full_name(), uid = %rp.id, "pod update ignored: runtime pods can only be killed");
                return;
            }
            (None, None) => {
                info!("pod update ignored: neither pod nor running pod set");
                return;
            }
        };
        let mut guard = self.inner.lock();
        let now = Instant::now();
        let first_time = !guard.statuses.contains_key(&uid);
        if first_time {
            let status = self.initial_status(&uid, fullname.clone(), options.pod.as_deref(), now);
            guard.statuses.insert(uid.clone(), status);
        }
        let State {
            statuses,
            pod_updates,
            waiting_to_start_static_pods_by_fullname,
            ..
        } = &mut *guard;
        let Some(status) = statuses.get_mut(&uid) else {
            return;
        };

        // Runtime pods carry no spec: prefer the latest real pod we know.
        let pod = if is_runtime_pod {
            status.observed_runtime = true;
            let known = status.pending_update.as_ref().and_then(|u| u.pod.clone());
            let known = known.or_else(|| status.active_update.as_ref().and_then(|u| u.pod.clone()));
            match (known, &options.running_pod) {
                (Some(p), _) => {
                    options.pod = Some(p.clone());
                    options.running_pod = None;
                    p
                }
                (None, Some(rp)) => placeholder_pod(rp),
                (None, None) => return,
            }
        } else {
            match &options.pod {
                Some(p) => p.clone(),
                None => return,
            }
        };

        if !first_time
            && status.is_termination_requested()
            && options.update_type == SyncPodType::Create
        {
            debug!(%uid, "pod is terminating but a create with the same UID arrived; will restart after termination");
            status.restart_requested = true;
            if let Some(c) = options.kill_pod_options.take().and_then(|k| k.completed) {
                status.notify_post_terminating.push(c);
            }
            return;
        }
        if status.finished {
            debug!(%uid, "pod is finished processing, no further updates");
            return;
        }

        let became_terminating = !status.is_termination_requested()
            && mark_terminating(status, &options, &pod, is_runtime_pod, now);

        let mut grace_shortened = false;
        if status.is_terminated() {
            if is_runtime_pod {
                debug!(%uid, "pod is waiting for termination, ignoring runtime-only kill");
                return;
            }
            if let Some(c) = options.kill_pod_options.take().and_then(|k| k.completed) {
                c.complete();
            }
        } else if status.is_termination_requested() {
            let mut kill = options.kill_pod_options.take().unwrap_or_default();
            if let Some(c) = kill.completed.take() {
                status.notify_post_terminating.push(c);
            }
            if let Some(f) = &kill.pod_status_fn {
                status.status_post_terminating.push(f.clone());
            }
            let (grace, shortened) = calculate_effective_grace_period(status, &pod, Some(&kill));
            grace_shortened = shortened;
            status.grace_period = grace;
            kill.grace_period_override = Some(grace);
            options.kill_pod_options = Some(kill);
        } else if let Some(c) = options.kill_pod_options.take().and_then(|k| k.completed) {
            // Kill options mean nothing outside the terminating phase.
            c.complete();
        }

        let tx = pod_updates.entry(uid.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(1);
            if is_static_pod(&pod) {
                waiting_to_start_static_pods_by_fullname
                    .entry(fullname.clone())
                    .or_default()
                    .push(uid.clone());
            }
            tokio::spawn(pod_worker_loop(self.inner.clone(), uid.clone(), rx));
            tx
        });

        if let Some(pending_start) = status.pending_update.as_ref().and_then(|u| u.start_time)
            && options.start_time.is_none_or(|t| pending_start < t)
        {
            options.start_time = Some(pending_start);
        }
        status.pending_update = Some(options);
        status.working = true;
        // Capacity 1: a full channel already means "wake up".
        let _ = tx.try_send(());

        if (became_terminating || grace_shortened)
            && let Some(cancel) = &status.cancel
        {
            debug!(%uid, "cancelling current pod sync");
            cancel.cancel();
        }
    }

    fn initial_status(
        &self,
        uid: &str,
        fullname: String,
        pod: Option<&ApiPod>,
        now: Instant,
    ) -> PodSyncStatus {
        debug!(%uid, "pod is being synced for the first time");
        // After a kubelet restart a terminal pod whose containers are all gone
        // must not be started again: record it as terminated (it still gets
        // `sync_terminated_pod`).
        let terminal_in_cache = pod.is_some_and(is_terminal_phase)
            && self
                .inner
                .cache
                .get(uid)
                .is_ok_and(|s: PodStatus| is_pod_status_cache_terminal(&s));
        if terminal_in_cache {
            return PodSyncStatus {
                terminated_at: Some(now),
                terminating_at: Some(now),
                started_terminating: true,
                fullname,
                ..PodSyncStatus::default()
            };
        }
        PodSyncStatus {
            fullname,
            ..PodSyncStatus::default()
        }
    }

    /// The latest pod spec the worker is reconciling towards (upstream
    /// `activeUpdate.Pod`), once the pod has started.
    pub fn active_pod(&self, uid: &str) -> Option<Arc<ApiPod>> {
        self.inner
            .lock()
            .statuses
            .get(uid)?
            .active_update
            .as_ref()?
            .pod
            .clone()
    }

    /// Lifecycle state of a known pod.
    pub fn pod_state(&self, uid: &str) -> Option<PodWorkerState> {
        self.inner
            .lock()
            .statuses
            .get(uid)
            .map(PodSyncStatus::work_type)
    }
}

/// Applies the transition to terminating, if any (part of upstream `UpdatePod`).
fn mark_terminating(
    status: &mut PodSyncStatus,
    options: &UpdatePodOptions,
    pod: &ApiPod,
    is_runtime_pod: bool,
    now: Instant,
) -> bool {
    let reason = if is_runtime_pod {
        status.deleted = true;
        "orphaned runtime pod"
    } else if pod.metadata.deletion_timestamp.is_some() {
        status.deleted = true;
        "marked for graceful deletion"
    } else if is_terminal_phase(pod) {
        "terminal phase"
    } else if options.update_type == SyncPodType::Kill {
        status.evicted = options.kill_pod_options.as_ref().is_some_and(|k| k.evict);
        if status.evicted {
            "evicted by the kubelet"
        } else {
            "removed by the kubelet"
        }
    } else {
        return false;
    };
    debug!(pod = %status.fullname, reason, "pod begins teardown");
    status.terminating_at = Some(now);
    true
}
