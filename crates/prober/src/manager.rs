//! The probe manager: one worker per probe of each container of each pod (upstream
//! `pkg/kubelet/prober/prober_manager.go`).
//!
//! `AddPod` starts the workers of a pod's regular and restartable init containers (called on
//! every `SyncPod`, a no-op for probes that already have a worker), `StopLivenessAndStartup`
//! and `RemovePod` stop them when the pod terminates, `CleanupPods` stops those of pods that
//! are gone. How results become container `started`/`ready` flags is `UpdatePodStatus`, which
//! lives in `kubelet_status::probes`; [`ProbeManager::update_pod_status`] is its other half: a
//! started, running container whose readiness probe has no result yet gets probed at once.

use k8s_openapi::api::core::v1::{Container, Pod, PodStatus as ApiPodStatus};
use kubelet_container::events::EventRecorder;
use kubelet_container::{Clock, ContainerId, ProbeType, is_restartable_init_container};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::probe::exec::CommandRunner;
use crate::probe::http::HttpProber;
use crate::prober::Prober;
use crate::results::ProberResults;
use crate::worker::Worker;

/// Where workers read the latest API status of their pod (upstream `status.Manager`
/// `GetPodStatus`).
pub trait PodStatusProvider: Send + Sync {
    /// The latest status of pod `uid`.
    fn get_pod_status(&self, uid: &str) -> Option<ApiPodStatus>;
}

impl PodStatusProvider for kubelet_status::StatusManager {
    fn get_pod_status(&self, uid: &str) -> Option<ApiPodStatus> {
        kubelet_status::StatusManager::get_pod_status(self, uid)
    }
}

/// A worker's identity (upstream `probeKey`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ProbeKey {
    pub(crate) pod_uid: String,
    pub(crate) container_name: String,
    pub(crate) probe_type: ProbeType,
}

/// A running worker, as the manager sees it.
struct WorkerHandle {
    id: u64,
    stop: CancellationToken,
    trigger: Arc<Notify>,
}

/// What the workers share (upstream `manager`'s fields).
pub(crate) struct Shared {
    workers: RwLock<HashMap<ProbeKey, WorkerHandle>>,
    pub(crate) status: Arc<dyn PodStatusProvider>,
    pub(crate) results: Arc<ProberResults>,
    pub(crate) prober: Prober,
    pub(crate) clock: Arc<dyn Clock>,
    /// When the manager was made (jitter only while younger than a period).
    pub(crate) start: tokio::time::Instant,
    /// The same instant on the wall clock (kubelet restart detection).
    pub(crate) start_wall: jiff::Timestamp,
    /// `ChangeContainerStatusOnKubeletRestart` (deprecated, off in 1.35).
    pub(crate) change_container_status_on_kubelet_restart: bool,
    /// Parent of every worker's stop token (kubelet shutdown).
    shutdown: CancellationToken,
    next_id: AtomicU64,
}

impl Shared {
    /// Upstream `removeWorker`, only if the entry is still this worker's.
    pub(crate) fn remove_worker(&self, key: &ProbeKey, id: u64) {
        let mut workers = self.workers.write().unwrap_or_else(PoisonError::into_inner);
        if workers.get(key).is_some_and(|w| w.id == id) {
            workers.remove(key);
        }
    }
}

/// What the manager is made of.
pub struct ProbeManagerParts {
    /// Latest API pod statuses.
    pub status: Arc<dyn PodStatusProvider>,
    /// The results managers the workers write.
    pub results: Arc<ProberResults>,
    /// Runs exec probes (CRI `ExecSync`).
    pub runner: Arc<dyn CommandRunner>,
    /// The HTTP prober.
    pub http: HttpProber,
    /// `Unhealthy` / `ProbeWarning` events.
    pub recorder: Arc<dyn EventRecorder>,
    /// Wall clock (initial delays, kubelet restart detection).
    pub clock: Arc<dyn Clock>,
    /// `ChangeContainerStatusOnKubeletRestart`.
    pub change_container_status_on_kubelet_restart: bool,
    /// Cancelled on kubelet shutdown: every worker stops.
    pub shutdown: CancellationToken,
}

/// Readiness workers to run at once (upstream's non-blocking `manualTriggerCh` sends).
#[derive(Debug, Default)]
pub struct ReadinessTriggers(Vec<Arc<Notify>>);

impl ReadinessTriggers {
    /// Wakes the workers; a worker already woken runs once.
    pub fn fire(self) {
        for t in self.0 {
            t.notify_one();
        }
    }
}

/// The probe manager (upstream `prober.Manager`).
#[derive(Clone)]
pub struct ProbeManager {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ProbeManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeManager")
            .field("workers", &self.worker_count())
            .finish()
    }
}

/// Regular containers, then restartable init containers (upstream's `AddPod` order).
fn probed_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    let spec = pod.spec.as_ref();
    spec.into_iter().flat_map(|s| {
        s.containers.iter().chain(
            s.init_containers
                .iter()
                .flatten()
                .filter(|c| is_restartable_init_container(c)),
        )
    })
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

const PROBE_TYPES: [ProbeType; 3] = [
    ProbeType::Startup,
    ProbeType::Readiness,
    ProbeType::Liveness,
];

impl ProbeManager {
    /// Upstream `NewManager`.
    pub fn new(parts: ProbeManagerParts) -> Self {
        let start_wall = parts.clock.now();
        Self {
            shared: Arc::new(Shared {
                workers: RwLock::new(HashMap::new()),
                status: parts.status,
                results: parts.results,
                prober: Prober::new(parts.runner, parts.http, parts.recorder),
                clock: parts.clock,
                start: tokio::time::Instant::now(),
                start_wall,
                change_container_status_on_kubelet_restart: parts
                    .change_container_status_on_kubelet_restart,
                shutdown: parts.shutdown,
                next_id: AtomicU64::new(0),
            }),
        }
    }

    /// The results the workers write (the read side for the runtime and status managers).
    pub fn results(&self) -> Arc<ProberResults> {
        self.shared.results.clone()
    }

    /// Starts a worker for every probe in the pod's spec that has none (upstream `AddPod`).
    /// Must be called inside a tokio runtime.
    /// The pod is cloned only when a worker is created (a pod already probed costs a lookup).
    pub fn add_pod(&self, pod: &Pod) {
        let mut shared_pod: Option<Arc<Pod>> = None;
        let mut workers = self
            .shared
            .workers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for c in probed_containers(pod) {
            for probe_type in PROBE_TYPES {
                let key = ProbeKey {
                    pod_uid: uid(pod).to_string(),
                    container_name: c.name.clone(),
                    probe_type,
                };
                if crate::prober::probe_spec(c, probe_type).is_none() || workers.contains_key(&key)
                {
                    continue;
                }
                let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
                let pod = shared_pod
                    .get_or_insert_with(|| Arc::new(pod.clone()))
                    .clone();
                let Some(mut worker) =
                    Worker::new(self.shared.clone(), key.clone(), id, pod, c.clone())
                else {
                    continue;
                };
                worker.stop = self.shared.shutdown.child_token();
                workers.insert(
                    key,
                    WorkerHandle {
                        id,
                        stop: worker.stop.clone(),
                        trigger: worker.trigger.clone(),
                    },
                );
                tokio::spawn(worker.run());
            }
        }
    }

    fn stop_where(&self, pod: &Pod, types: &[ProbeType], containers: &[&Container]) {
        let workers = self
            .shared
            .workers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for c in containers {
            for probe_type in types {
                let key = ProbeKey {
                    pod_uid: uid(pod).to_string(),
                    container_name: c.name.clone(),
                    probe_type: *probe_type,
                };
                if let Some(w) = workers.get(&key) {
                    w.stop.cancel();
                }
            }
        }
    }

    /// Stops the liveness and startup workers of the pod's regular containers while it
    /// terminates (upstream `StopLivenessAndStartup`).
    pub fn stop_liveness_and_startup(&self, pod: &Pod) {
        let containers: Vec<&Container> = pod.spec.iter().flat_map(|s| &s.containers).collect();
        self.stop_where(pod, &[ProbeType::Liveness, ProbeType::Startup], &containers);
    }

    /// Stops every worker of the pod (upstream `RemovePod`).
    pub fn remove_pod(&self, pod: &Pod) {
        let containers: Vec<&Container> = probed_containers(pod).collect();
        self.stop_where(pod, &PROBE_TYPES, &containers);
    }

    /// Stops the workers of pods not in `desired` (upstream `CleanupPods`).
    pub fn cleanup_pods(&self, desired: &HashSet<String>) {
        let workers = self
            .shared
            .workers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for (key, w) in workers.iter() {
            if !desired.contains(&key.pod_uid) {
                w.stop.cancel();
            }
        }
    }

    /// The manual-trigger half of upstream `UpdatePodStatus`: each started, running container
    /// whose readiness is not known to be `Success` and which has a readiness worker is probed
    /// once [`ReadinessTriggers::fire`] is called, so a new container turns ready without
    /// waiting for a whole period. Fire them after the status is stored: the workers read it.
    #[must_use = "fire the triggers once the status is stored"]
    pub fn update_pod_status(&self, pod: &Pod, status: &ApiPodStatus) -> ReadinessTriggers {
        let mut triggers = ReadinessTriggers(Vec::new());
        let workers = self
            .shared
            .workers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let statuses = status
            .container_statuses
            .iter()
            .flatten()
            .chain(status.init_container_statuses.iter().flatten());
        for s in statuses {
            let running = s.state.as_ref().is_some_and(|st| st.running.is_some());
            if !running || s.started != Some(true) || s.ready {
                continue;
            }
            let known_ready = s
                .container_id
                .as_deref()
                .and_then(|id| id.parse::<ContainerId>().ok())
                .and_then(|id| self.shared.results.manager(ProbeType::Readiness).get(&id))
                == Some(kubelet_container::ProbeResult::Success);
            if known_ready {
                continue;
            }
            let key = ProbeKey {
                pod_uid: uid(pod).to_string(),
                container_name: s.name.clone(),
                probe_type: ProbeType::Readiness,
            };
            if let Some(w) = workers.get(&key) {
                triggers.0.push(w.trigger.clone());
            }
        }
        triggers
    }

    /// Number of running workers (upstream `workerCount`).
    pub fn worker_count(&self) -> usize {
        self.shared
            .workers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether pod `uid` has a worker for `probe_type` of `container`.
    pub fn has_worker(&self, uid: &str, container: &str, probe_type: ProbeType) -> bool {
        self.shared
            .workers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&ProbeKey {
                pod_uid: uid.to_string(),
                container_name: container.to_string(),
                probe_type,
            })
    }
}

/// How long [`ProbeManager`] tests wait for workers.
#[cfg(test)]
pub(crate) const TEST_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
