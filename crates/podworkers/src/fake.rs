//! Test doubles (feature `fake`): a recording [`FakePodSyncer`] and a
//! synchronous [`FakePodWorkers`] (upstream `fakePodWorkers` in
//! `pod_workers_test.go`), held to the real workers' contract by a test.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod as ApiPod;
use kubelet_container::kubetypes::pod_uid;
use kubelet_container::{Cache, Pod as RuntimePod, PodStatus, SyncPodType};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::syncer::PodSyncer;
use crate::types::{PodStatusFn, PodSyncError, UpdatePodOptions};

/// One recorded [`PodSyncer`] call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncerCall {
    /// `sync_pod`.
    SyncPod {
        /// Pod UID.
        uid: String,
        /// Update type passed.
        update_type: SyncPodType,
        /// Pod generation, to tell versions apart.
        generation: Option<i64>,
    },
    /// `sync_terminating_pod`.
    SyncTerminatingPod {
        /// Pod UID.
        uid: String,
        /// Grace period passed.
        grace_period: Option<i64>,
        /// Whether a status override was passed.
        has_status_fn: bool,
    },
    /// `sync_terminating_runtime_pod`.
    SyncTerminatingRuntimePod {
        /// Runtime pod UID.
        uid: String,
    },
    /// `sync_terminated_pod`.
    SyncTerminatedPod {
        /// Pod UID.
        uid: String,
    },
}

impl SyncerCall {
    /// Pod UID of the call.
    pub fn uid(&self) -> &str {
        match self {
            Self::SyncPod { uid, .. }
            | Self::SyncTerminatingPod { uid, .. }
            | Self::SyncTerminatingRuntimePod { uid }
            | Self::SyncTerminatedPod { uid } => uid,
        }
    }
}

#[derive(Default)]
struct SyncerState {
    calls: Vec<SyncerCall>,
    errors: HashMap<&'static str, VecDeque<PodSyncError>>,
    terminal: HashSet<String>,
    blocked: HashMap<String, Arc<Semaphore>>,
}

/// Recording [`PodSyncer`]: every call is appended to [`calls`](Self::calls);
/// errors are injected per method; `sync_pod` reports terminal for chosen
/// pods; `sync_pod`/`sync_terminating_pod` can be blocked per pod until
/// released (a blocked call returns `Cancelled` when its token fires).
#[derive(Default)]
pub struct FakePodSyncer {
    state: Mutex<SyncerState>,
}

impl std::fmt::Debug for FakePodSyncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakePodSyncer")
            .field("calls", &self.lock().calls)
            .finish()
    }
}

impl FakePodSyncer {
    /// New fake.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, SyncerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Recorded calls in order.
    pub fn calls(&self) -> Vec<SyncerCall> {
        self.lock().calls.clone()
    }

    /// Recorded calls for one pod.
    pub fn calls_for(&self, uid: &str) -> Vec<SyncerCall> {
        self.lock()
            .calls
            .iter()
            .filter(|c| c.uid() == uid)
            .cloned()
            .collect()
    }

    /// Queues an error for the next call of `method` (`sync_pod`,
    /// `sync_terminating_pod`, `sync_terminating_runtime_pod`, `sync_terminated_pod`).
    pub fn inject_error(&self, method: &'static str, err: PodSyncError) {
        self.lock().errors.entry(method).or_default().push_back(err);
    }

    /// Makes `sync_pod` report the pod as terminal.
    pub fn set_terminal(&self, uid: &str) {
        self.lock().terminal.insert(uid.to_string());
    }

    /// Blocks `sync_pod`/`sync_terminating_pod` for `uid` until [`release`](Self::release).
    pub fn block(&self, uid: &str) {
        self.lock()
            .blocked
            .insert(uid.to_string(), Arc::new(Semaphore::new(0)));
    }

    /// Lets one blocked call for `uid` proceed; after the last release, calls no longer block.
    pub fn release(&self, uid: &str) {
        if let Some(sem) = self.lock().blocked.remove(uid) {
            sem.add_permits(Semaphore::MAX_PERMITS >> 1);
        }
    }

    async fn enter(
        &self,
        call: SyncerCall,
        method: &'static str,
        cancel: &CancellationToken,
    ) -> Result<(), PodSyncError> {
        let uid = call.uid().to_string();
        let (err, gate) = {
            let mut st = self.lock();
            st.calls.push(call);
            (
                st.errors.get_mut(method).and_then(VecDeque::pop_front),
                st.blocked.get(&uid).cloned(),
            )
        };
        if let Some(sem) = gate {
            tokio::select! {
                permit = sem.acquire() => drop(permit),
                () = cancel.cancelled() => return Err(PodSyncError::Cancelled),
            }
        }
        err.map_or(Ok(()), Err)
    }
}

#[async_trait]
impl PodSyncer for FakePodSyncer {
    async fn sync_pod(
        &self,
        cancel: &CancellationToken,
        update_type: SyncPodType,
        pod: &ApiPod,
        _mirror: Option<&ApiPod>,
        _status: &PodStatus,
    ) -> Result<bool, PodSyncError> {
        let uid = pod_uid(pod).to_string();
        let call = SyncerCall::SyncPod {
            uid: uid.clone(),
            update_type,
            generation: pod.metadata.generation,
        };
        self.enter(call, "sync_pod", cancel).await?;
        Ok(self.lock().terminal.contains(&uid))
    }

    async fn sync_terminating_pod(
        &self,
        cancel: &CancellationToken,
        pod: &ApiPod,
        _status: &PodStatus,
        grace_period: Option<i64>,
        status_fn: Option<&PodStatusFn>,
    ) -> Result<(), PodSyncError> {
        let call = SyncerCall::SyncTerminatingPod {
            uid: pod_uid(pod).to_string(),
            grace_period,
            has_status_fn: status_fn.is_some(),
        };
        self.enter(call, "sync_terminating_pod", cancel).await
    }

    async fn sync_terminating_runtime_pod(
        &self,
        cancel: &CancellationToken,
        running_pod: &RuntimePod,
    ) -> Result<(), PodSyncError> {
        let call = SyncerCall::SyncTerminatingRuntimePod {
            uid: running_pod.id.clone(),
        };
        self.enter(call, "sync_terminating_runtime_pod", cancel)
            .await
    }

    async fn sync_terminated_pod(
        &self,
        cancel: &CancellationToken,
        pod: &ApiPod,
        _status: &PodStatus,
    ) -> Result<(), PodSyncError> {
        let call = SyncerCall::SyncTerminatedPod {
            uid: pod_uid(pod).to_string(),
        };
        self.enter(call, "sync_terminated_pod", cancel).await
    }
}

/// Synchronous stand-in for [`crate::PodWorkers`] in kubelet tests (upstream
/// `fakePodWorkers`): `update_pod` calls `sync_pod` directly with the cached
/// status; kills are only recorded. Query answers are set by the test.
pub struct FakePodWorkers {
    syncer: Arc<dyn PodSyncer>,
    cache: Arc<Cache>,
    state: Mutex<FakeWorkersState>,
}

/// Recorded effects and configured answers of [`FakePodWorkers`].
#[derive(Debug, Default, Clone)]
pub struct FakeWorkersState {
    /// UIDs that received a kill.
    pub triggered_deletion: Vec<String>,
    /// UIDs whose `sync_pod` reported terminal.
    pub triggered_terminal: Vec<String>,
    /// Answers for `could_have_running_containers`.
    pub running: HashMap<String, bool>,
    /// Answers for `should_pod_containers_be_terminating`.
    pub terminating: HashMap<String, bool>,
    /// Answers for `is_pod_known_terminated` / `should_pod_runtime_be_removed`.
    pub terminated: HashMap<String, bool>,
    /// Answers for `should_pod_content_be_removed`.
    pub remove_content: HashMap<String, bool>,
}

impl FakePodWorkers {
    /// Fake calling `syncer` with statuses from `cache`.
    pub fn new(syncer: Arc<dyn PodSyncer>, cache: Arc<Cache>) -> Self {
        Self {
            syncer,
            cache,
            state: Mutex::new(FakeWorkersState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, FakeWorkersState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs the update synchronously.
    pub async fn update_pod(&self, options: UpdatePodOptions) -> Result<(), PodSyncError> {
        let uid = match (&options.pod, &options.running_pod) {
            (Some(p), _) => pod_uid(p).to_string(),
            (None, Some(rp)) => rp.id.clone(),
            (None, None) => return Ok(()),
        };
        let status = self.cache.get(&uid)?;
        if options.update_type == SyncPodType::Kill {
            self.lock().triggered_deletion.push(uid);
            return Ok(());
        }
        let Some(pod) = &options.pod else {
            return Ok(());
        };
        let cancel = CancellationToken::new();
        let terminal = self
            .syncer
            .sync_pod(
                &cancel,
                options.update_type,
                pod,
                options.mirror_pod.as_deref(),
                &status,
            )
            .await?;
        if terminal {
            self.lock().triggered_terminal.push(uid);
        }
        Ok(())
    }

    /// Mutable access to recorded effects and configured answers.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut FakeWorkersState) -> R) -> R {
        f(&mut self.lock())
    }

    /// Configured answer (default false).
    pub fn could_have_running_containers(&self, uid: &str) -> bool {
        self.lock().running.get(uid).copied().unwrap_or(false)
    }
    /// Configured answer (default false).
    pub fn should_pod_containers_be_terminating(&self, uid: &str) -> bool {
        self.lock().terminating.get(uid).copied().unwrap_or(false)
    }
    /// Configured answer (default false).
    pub fn is_pod_known_terminated(&self, uid: &str) -> bool {
        self.lock().terminated.get(uid).copied().unwrap_or(false)
    }
    /// Configured answer (default false).
    pub fn should_pod_runtime_be_removed(&self, uid: &str) -> bool {
        self.lock().terminated.get(uid).copied().unwrap_or(false)
    }
    /// Configured answer (default false).
    pub fn should_pod_content_be_removed(&self, uid: &str) -> bool {
        self.lock()
            .remove_content
            .get(uid)
            .copied()
            .unwrap_or(false)
    }
}
