//! Generic PLEG: periodic relist (upstream `pkg/kubelet/pleg/generic.go`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kubelet_container::{
    Cache, ContainerState, Pod, PodStatus, Runtime, RuntimeError, SandboxState,
};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, warn};

use crate::event::{PodLifecycleEvent, PodLifecycleEventType};
use crate::records::{PodRecords, compute_pod_events};

/// Relist period and health threshold (upstream `RelistDuration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelistDuration {
    /// Time between the end of one relist and the start of the next.
    pub relist_period: Duration,
    /// `healthy()` fails when the last successful relist started longer ago.
    pub relist_threshold: Duration,
}

impl RelistDuration {
    /// Generic PLEG: 1 s period, 3 min threshold.
    pub const GENERIC: Self = Self {
        relist_period: Duration::from_secs(1),
        relist_threshold: Duration::from_secs(180),
    };
    /// Fallback relist while the evented PLEG is active: 300 s, 10 min.
    pub const EVENTED_FALLBACK: Self = Self {
        relist_period: Duration::from_secs(300),
        relist_threshold: Duration::from_secs(600),
    };
}

impl Default for RelistDuration {
    fn default() -> Self {
        Self::GENERIC
    }
}

/// Why the PLEG is unhealthy (the text becomes the node's NotReady message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlegError {
    /// No relist succeeded yet.
    #[error("pleg has yet to be successful")]
    NeverSucceeded,
    /// The last successful relist is too old.
    #[error("pleg was last seen active {elapsed} ago; threshold is {threshold}")]
    NotHealthy {
        /// Go-formatted time since the last relist, e.g. `3m0.5s`.
        elapsed: kubelet_apimachinery::Duration,
        /// Go-formatted threshold, e.g. `3m0s`.
        threshold: kubelet_apimachinery::Duration,
    },
    /// The event channel is full: the sync loop is not keeping up.
    #[error("pleg event channel capacity is full with {len} events")]
    ChannelFull {
        /// Channel capacity.
        len: usize,
    },
}

#[derive(Debug, Default)]
struct RelistState {
    records: PodRecords,
    /// The last successful listing and when it was started (for
    /// [`GenericPleg::running_pods_listed_after`]).
    listing: Option<(Instant, Vec<Arc<Pod>>)>,
    /// Pods whose status could not be read; inspected again next relist.
    pods_to_reinspect: HashMap<String, Pod>,
}

/// Relisting PLEG. Create with [`GenericPleg::new`], drive with
/// [`run`](Self::run) (or call [`relist`](Self::relist) directly in tests).
pub struct GenericPleg {
    runtime: Arc<dyn Runtime>,
    cache: Arc<Cache>,
    events: mpsc::Sender<PodLifecycleEvent>,
    state: tokio::sync::Mutex<RelistState>,
    relist_time: Mutex<Option<Instant>>,
    duration: watch::Sender<RelistDuration>,
    /// Bumped by [`GenericPleg::request_relist`].
    relist_requested: watch::Sender<u64>,
    /// Pods to inspect at the next relist even without events
    /// ([`GenericPleg::set_pod_watch_condition`]).
    watched: Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for GenericPleg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenericPleg")
            .field("duration", &*self.duration.borrow())
            .finish()
    }
}

impl GenericPleg {
    /// A PLEG over `runtime` writing statuses to `cache`; returns it with the
    /// event receiver (upstream `Watch()`), capacity [`crate::PLEG_CHANNEL_CAPACITY`].
    pub fn new(
        runtime: Arc<dyn Runtime>,
        cache: Arc<Cache>,
        duration: RelistDuration,
    ) -> (Arc<Self>, mpsc::Receiver<PodLifecycleEvent>) {
        let (tx, rx) = mpsc::channel(crate::PLEG_CHANNEL_CAPACITY);
        (Self::with_sender(runtime, cache, duration, tx), rx)
    }

    /// Like [`new`](Self::new) but sending into an existing channel (shared
    /// with the [`crate::EventedPleg`]).
    pub fn with_sender(
        runtime: Arc<dyn Runtime>,
        cache: Arc<Cache>,
        duration: RelistDuration,
        events: mpsc::Sender<PodLifecycleEvent>,
    ) -> Arc<Self> {
        Arc::new(Self {
            runtime,
            cache,
            events,
            state: tokio::sync::Mutex::new(RelistState::default()),
            relist_time: Mutex::new(None),
            duration: watch::channel(duration).0,
            relist_requested: watch::channel(0).0,
            watched: Mutex::default(),
        })
    }

    /// Makes the next relist inspect the pod and refresh its cached status even when none of
    /// its containers changed state (upstream `SetPodWatchCondition` with a condition that
    /// holds at once, as `doPodResizeAction` sets it: resized resources show in the status).
    pub fn set_pod_watch_condition(&self, uid: &str) {
        self.watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(uid.to_string());
    }

    fn relist_time(&self) -> MutexGuard<'_, Option<Instant>> {
        self.relist_time
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Current period and threshold.
    pub fn relist_duration(&self) -> RelistDuration {
        *self.duration.borrow()
    }

    /// Changes period and threshold; a running loop picks it up at once
    /// (upstream `Update`).
    pub fn update_relist_duration(&self, duration: RelistDuration) {
        self.duration.send_replace(duration);
    }

    /// Asks the running loop to relist now instead of at the end of the period. Requests
    /// made during a relist are coalesced into one more relist.
    ///
    /// Not upstream: upstream's pod worker waits for the next periodic relist to see the
    /// containers a `SyncPod` has just started, so a pod is reported Running up to one
    /// relist period (1 s) after its containers run (the TODO in `pod_workers.go`
    /// `podWorkerLoop` names this latency). The syncer calls this after starting
    /// containers, so the started state reaches the cache, the pod worker and the status
    /// manager at once.
    pub fn request_relist(&self) {
        self.relist_requested
            .send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Relists until `shutdown` fires (upstream `Start` + `wait.Until`), and at once when
    /// [`request_relist`](Self::request_relist) is called.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut changes = self.duration.subscribe();
        let mut requests = self.relist_requested.subscribe();
        loop {
            // Requests made so far are served by this relist; later ones by the next.
            requests.borrow_and_update();
            self.relist().await;
            let period = self.relist_duration().relist_period;
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(period) => {}
                _ = changes.changed() => {}
                _ = requests.changed() => {}
            }
        }
    }

    /// Ok while the last successful relist started within the threshold
    /// (upstream `Healthy`).
    pub fn healthy(&self) -> Result<(), PlegError> {
        let Some(last) = *self.relist_time() else {
            return Err(PlegError::NeverSucceeded);
        };
        let elapsed = Instant::now().saturating_duration_since(last);
        // Exposed so operators can alert on `time() - kubelet_pleg_last_seen_seconds`.
        let last_seen = std::time::SystemTime::now()
            .checked_sub(elapsed)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs() as f64);
        if let Some(secs) = last_seen {
            kubelet_metrics::with(|m| m.pleg_last_seen.set(secs));
        }
        let threshold = self.relist_duration().relist_threshold;
        if elapsed > threshold {
            return Err(PlegError::NotHealthy {
                elapsed: kubelet_apimachinery::Duration::from_std(elapsed),
                threshold: kubelet_apimachinery::Duration::from_std(threshold),
            });
        }
        Ok(())
    }

    /// Lists all containers, emits events for changed pods and refreshes their
    /// cached status (upstream `Relist`).
    pub async fn relist(&self) {
        let mut state = self.state.lock().await;
        if let Some(last) = *self.relist_time() {
            let interval = last.elapsed().as_secs_f64();
            kubelet_metrics::with(|m| m.pleg_relist_interval.observe(interval));
        }
        let timestamp = Instant::now();
        let _duration = RelistTimer(timestamp);
        let pods = match self.runtime.get_pods(true).await {
            Ok(pods) => pods,
            Err(e) => {
                error!(error = %e, "GenericPLEG: unable to retrieve pods");
                return;
            }
        };
        *self.relist_time() = Some(timestamp);
        update_running_pod_and_container_metrics(&pods);
        let pods: Vec<Arc<Pod>> = pods.into_iter().map(Arc::new).collect();
        state.records.set_current(&pods);
        state.listing = Some((timestamp, pods));
        let watched =
            std::mem::take(&mut *self.watched.lock().unwrap_or_else(PoisonError::into_inner));
        let mut needs_reinspection = HashMap::new();
        for uid in state.records.uids() {
            let events = compute_pod_events(state.records.old(&uid), state.records.current(&uid));
            let reinspect = state.pods_to_reinspect.contains_key(&uid) || watched.contains(&uid);
            if events.is_empty() && !reinspect {
                continue;
            }
            let current = state.records.current(&uid).cloned();
            if let Err(e) = self.update_cache(&uid, current.as_ref()).await {
                // Keep the record unacknowledged so the change is seen again next relist.
                debug!(%uid, error = %e, "PLEG: ignoring events for pod");
                if let Some(pod) = current {
                    needs_reinspection.insert(uid, pod);
                }
                continue;
            }
            state.records.update(&uid);
            self.send(
                events
                    .into_iter()
                    .filter(|e| e.type_ != PodLifecycleEventType::ContainerChanged),
            );
        }
        // Only after every changed pod is in the cache.
        self.cache.update_time(timestamp);
        state.pods_to_reinspect = needs_reinspection;
    }

    /// The running pods of the last listing (running containers and ready sandboxes, as
    /// `Runtime::get_pods(false)` returns them), if that listing started after `after`.
    /// Not upstream: upstream's housekeeping forces its runtime cache to list again
    /// (`runtimeCache.ForceUpdateIfOlder(now)`); kubelet-rs's reuses the PLEG's listing
    /// when nothing terminated since it was taken, which saves two CRI list calls every 2 s.
    pub async fn running_pods_listed_after(&self, after: Instant) -> Option<Vec<Pod>> {
        let state = self.state.lock().await;
        let (listed_at, pods) = state.listing.as_ref()?;
        if *listed_at <= after {
            return None;
        }
        Some(pods.iter().filter_map(|p| running_part(p)).collect())
    }

    fn send(&self, events: impl Iterator<Item = PodLifecycleEvent>) {
        for event in events {
            if self.events.try_send(event).is_err() {
                kubelet_metrics::with(|m| m.pleg_discard_events.inc());
                warn!("PLEG event channel is full or closed, discarding this relist cycle's event");
            }
        }
    }

    /// Inspects the pod and stores its status; drops it from the cache when it
    /// vanished (upstream `updateCache`).
    async fn update_cache(&self, uid: &str, pod: Option<&Pod>) -> Result<(), RuntimeError> {
        let Some(pod) = pod else {
            self.cache.delete(uid);
            return Ok(());
        };
        let timestamp = Instant::now();
        let result = self
            .runtime
            .get_pod_status(&pod.id, &pod.name, &pod.namespace)
            .await;
        let result = result.map(|mut status| {
            status.ips = preserved_pod_ips(&self.cache, uid, &status);
            status
        });
        let err = result.as_ref().err().cloned();
        self.cache.set(uid, result, timestamp);
        err.map_or(Ok(()), Err)
    }
}

/// Keeps the last known pod IPs when the new status has none and no ready
/// sandbox (a torn-down pod must still report its IP) (upstream `getPodIPs`).
/// Observes `kubelet_pleg_relist_duration_seconds` when a relist ends, however it ends
/// (upstream's deferred `PLEGRelistDuration.Observe`).
struct RelistTimer(Instant);

impl Drop for RelistTimer {
    fn drop(&mut self) {
        let secs = self.0.elapsed().as_secs_f64();
        kubelet_metrics::with(|m| m.pleg_relist_duration.observe(secs));
    }
}

/// `updateRunningPodAndContainerMetrics`: `kubelet_running_containers{container_state}`
/// for the states seen (a state no longer seen keeps its last value, as upstream) and
/// `kubelet_running_pods` (pods with a running sandbox).
fn update_running_pod_and_container_metrics(pods: &[Pod]) {
    let mut states: HashMap<&'static str, usize> = HashMap::new();
    let mut running_sandboxes = 0;
    for pod in pods {
        for c in &pod.containers {
            *states.entry(c.state.as_str()).or_default() += 1;
        }
        if pod
            .sandboxes
            .iter()
            .any(|s| s.state == ContainerState::Running)
        {
            running_sandboxes += 1;
        }
    }
    kubelet_metrics::with(|m| {
        for (state, n) in &states {
            m.running_container_count
                .with_label_values(&[state])
                .set(*n as f64);
        }
        m.running_pod_count.set(running_sandboxes as f64);
    });
}

pub(crate) fn preserved_pod_ips(cache: &Cache, uid: &str, status: &PodStatus) -> Vec<String> {
    if !status.ips.is_empty() {
        return status.ips.clone();
    }
    let old_ips = cache.get(uid).map(|s| s.ips).unwrap_or_default();
    if old_ips.is_empty()
        || status
            .sandbox_statuses
            .iter()
            .any(|s| s.state == SandboxState::Ready)
    {
        return status.ips.clone();
    }
    old_ips
}

/// The running part of a listed pod: its running containers and ready sandboxes, or `None`
/// when it has neither (what `Runtime::get_pods(false)` lists).
fn running_part(pod: &Pod) -> Option<Pod> {
    let running = |cs: &[kubelet_container::Container]| -> Vec<kubelet_container::Container> {
        cs.iter()
            .filter(|c| c.state == kubelet_container::ContainerState::Running)
            .cloned()
            .collect()
    };
    let containers = running(&pod.containers);
    let sandboxes = running(&pod.sandboxes);
    if containers.is_empty() && sandboxes.is_empty() {
        return None;
    }
    Some(Pod {
        id: pod.id.clone(),
        name: pod.name.clone(),
        namespace: pod.namespace.clone(),
        created_at: pod.created_at,
        containers,
        sandboxes,
    })
}
