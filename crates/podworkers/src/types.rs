//! Options and states of the pod workers (upstream `pod_workers.go`:
//! `UpdatePodOptions`, `KillPodOptions`, `PodWorkerState`, `PodWorkerSync`).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Pod as ApiPod, PodStatus as ApiPodStatus};
use kubelet_container::{Pod as RuntimePod, SyncPodType};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Changes the API status reported for a pod that is being killed, e.g. to
/// mark it `Failed`/`Evicted` (upstream `PodStatusFunc`).
pub type PodStatusFn = Arc<dyn Fn(&mut ApiPodStatus) + Send + Sync>;

/// Signals a waiter once the pod has no running containers (upstream
/// `KillPodOptions.CompletedCh`). Clones share the signal; completing twice is harmless.
#[derive(Clone, Debug)]
pub struct Completion(Arc<Mutex<Option<oneshot::Sender<()>>>>);

impl Completion {
    /// A completion and the receiver that resolves when it completes (or is dropped).
    pub fn new() -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (Self(Arc::new(Mutex::new(Some(tx)))), rx)
    }

    /// Wakes the waiter (upstream `close(ch)`).
    pub fn complete(&self) {
        let sender = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(tx) = sender {
            // The waiter may have timed out and gone; nothing to do then.
            let _ = tx.send(());
        }
    }
}

/// How to kill a pod (upstream `KillPodOptions`).
#[derive(Clone, Default)]
pub struct KillPodOptions {
    /// Completed once the pod's containers are stopped or the pod is already terminated.
    pub completed: Option<Completion>,
    /// The kubelet is evicting the pod (its content may be removed aggressively).
    pub evict: bool,
    /// Overrides the reported API status after termination; the last one wins.
    pub pod_status_fn: Option<PodStatusFn>,
    /// Grace period in seconds; may only shorten the current one.
    pub grace_period_override: Option<i64>,
}

impl fmt::Debug for KillPodOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KillPodOptions")
            .field("completed", &self.completed.is_some())
            .field("evict", &self.evict)
            .field("pod_status_fn", &self.pod_status_fn.is_some())
            .field("grace_period_override", &self.grace_period_override)
            .finish()
    }
}

/// One update for a pod worker (upstream `UpdatePodOptions`). Either `pod` or
/// `running_pod` must be set; `running_pod` alone is only valid with
/// [`SyncPodType::Kill`] (orphaned containers found in the runtime).
#[derive(Clone, Debug, Default)]
pub struct UpdatePodOptions {
    /// Why the update happened.
    pub update_type: SyncPodType,
    /// When the update was created (for latency metrics); the oldest pending one is kept.
    pub start_time: Option<Instant>,
    /// Desired pod.
    pub pod: Option<Arc<ApiPod>>,
    /// Mirror pod of a static pod, if any.
    pub mirror_pod: Option<Arc<ApiPod>>,
    /// Runtime pod no longer in config; only used when `pod` is `None`.
    pub running_pod: Option<Arc<RuntimePod>>,
    /// Kill options when `update_type` is `Kill` (or the pod is terminating).
    pub kill_pod_options: Option<KillPodOptions>,
}

impl UpdatePodOptions {
    /// An update of `update_type` for `pod`, starting now (the `start` upstream's
    /// `HandlePod*` handlers pass to `dispatchWork`).
    pub fn new(update_type: SyncPodType, pod: Arc<ApiPod>) -> Self {
        Self {
            update_type,
            start_time: Some(Instant::now()),
            pod: Some(pod),
            ..Self::default()
        }
    }

    /// A kill of an orphaned runtime pod.
    pub fn kill_runtime_pod(running_pod: Arc<RuntimePod>) -> Self {
        Self {
            update_type: SyncPodType::Kill,
            running_pod: Some(running_pod),
            ..Self::default()
        }
    }
}

/// Where a pod is in its lifecycle (upstream `PodWorkerState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodWorkerState {
    /// Expected to be started and running (`SyncPod`).
    Sync,
    /// No longer being set up; containers are being stopped (`SyncTerminatingPod`).
    Terminating,
    /// No running containers; foreground cleanup may run (`SyncTerminatedPod`).
    Terminated,
}

impl PodWorkerState {
    /// Upstream string value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Terminating => "terminating",
            Self::Terminated => "terminated",
        }
    }
}

/// Summary of one worker returned by `sync_known_pods` (upstream `PodWorkerSync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodWorkerSync {
    /// Lifecycle state.
    pub state: PodWorkerState,
    /// Not in the desired set passed to `sync_known_pods`.
    pub orphan: bool,
    /// A pod spec is known for it.
    pub has_config: bool,
    /// It has config and came from a static source.
    pub static_: bool,
}

/// Error from a [`crate::PodSyncer`] method. The variant decides the retry delay
/// (no string matching on messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodSyncError {
    /// The sync noticed its cancellation token and stopped (a newer update is queued).
    #[error("pod sync cancelled")]
    Cancelled,
    /// Pod networking is not ready yet; retried after ~1 s (upstream `NetworkNotReadyErrorMsg`).
    #[error("network is not ready: {0}")]
    NetworkNotReady(String),
    /// Any other failure; retried after the back-off period (10 s).
    #[error("{0}")]
    Failed(String),
}

impl From<kubelet_container::RuntimeError> for PodSyncError {
    fn from(e: kubelet_container::RuntimeError) -> Self {
        Self::Failed(e.to_string())
    }
}
