//! Pod workers: one task per pod UID driving the pod lifecycle
//! (upstream `pkg/kubelet/pod_workers.go`).
//!
//! [`PodWorkers`] keeps track of operations on pods and makes sure each pod is
//! reconciled with the container runtime and other subsystems. It also tracks
//! which pods are starting, which are shutting down but still have running
//! containers, and which terminated recently and are guaranteed to have no
//! running containers. It is the source of truth for which pods should be
//! active on the node; other components ask it (`should_pod_*`,
//! `could_have_running_containers`...) instead of inventing their own idea of
//! the lifecycle.
//!
//! A pod passed to the workers is *syncing* (expected to run), *terminating*
//! (containers may be running, none will be started), *terminated* (no
//! running containers, resources may remain) or *finished* (cleanup done).
//! Once a pod UID is torn down it cannot start again until the worker
//! finished (`sync_terminating_pod` then `sync_terminated_pod` succeeded) and
//! [`PodWorkers::sync_known_pods`] was called without that UID.
//!
//! Time intervals, in the spirit of the upstream diagram:
//!
//! ```text
//! ---|                                         = kubelet config has synced at least once
//! -------|                                  |- = pod exists in apiserver config
//! --------|                  |---------------- = could_have_running_containers() is true
//!         ^- pod is observed by pod worker  .
//! ----------|       |------------------------- = sync_pod is running
//!           . ^- worker sees change, calls sync_pod
//! --------------|                     |------- = should_pod_containers_be_terminating() is true
//! --------------|                     |------- = is_pod_termination_requested() is true (pod known)
//!               . ^- kubelet evicts / apiserver deletes / pod turns terminal
//! -------------------|       |---------------- = sync_terminating_pod runs until it succeeds
//!                    ^ worker leaves sync_pod, sees termination, calls sync_terminating_pod
//! ---|    |------------------|              .  = should_pod_runtime_be_removed() is true (after first sync_known_pods)
//!                            ^ sync_terminating_pod succeeded
//! ----------------------------|       |------- = sync_terminated_pod runs until it succeeds
//!                             ^ other loops may tear down volumes, cgroups
//! ------------------------------------|  |---- = status manager waits for sync_terminated_pod
//! ----------|                               |- = status manager may write pod status
//!                                           ^ status manager deletes the pod: gone from config
//! ```
//!
//! Updates arrive through [`PodWorkers::update_pod`]; a newer update always
//! replaces a pending one, so a worker sees only the latest state. After each
//! sync the pod is put on the [`WorkQueue`]: resync after the resync interval
//! (±50 %), after 10 s on error, after 1 s when the network is not ready, and
//! at once on a phase transition. The kubelet sync loop drains the queue and
//! sends `Sync` updates.
//!
//! | Rust module        | Upstream                                            |
//! |--------------------|-----------------------------------------------------|
//! | [`syncer`]         | `podSyncer`                                         |
//! | [`types`]          | `UpdatePodOptions`, `KillPodOptions`, `PodWorkerState` |
//! | `workers`          | `UpdatePod`                                         |
//! | `known_pods`       | `SyncKnownPods`, `removeTerminatedWorker`           |
//! | `worker_loop`      | `podWorkerLoop`, `startPodSync`, `complete*`        |
//! | `queries`          | `IsPodKnownTerminated`, `ShouldPod*`...             |
//! | `kill`             | `killPodNow`                                        |
//! | [`work_queue`]     | `pkg/kubelet/util/queue`, `wait.Jitter`             |
//! | `fake`             | `fakePodWorkers` / recording syncer (feature `fake`) |

#[cfg(any(test, feature = "fake"))]
pub mod fake;
mod kill;
mod known_pods;
mod queries;
mod static_pods;
mod sync_status;
pub mod syncer;
pub mod types;
pub mod work_queue;
mod worker_loop;
mod workers;

pub use kill::{KillPodTimeout, kill_timeout};
pub use syncer::PodSyncer;
pub use types::{
    Completion, KillPodOptions, PodStatusFn, PodSyncError, PodWorkerState, PodWorkerSync,
    UpdatePodOptions,
};
pub use work_queue::WorkQueue;
pub use workers::{
    DEFAULT_BACKOFF_PERIOD, DEFAULT_RESYNC_INTERVAL, PodWorkers, PodWorkersConfig,
    TRANSIENT_ERROR_BACKOFF,
};

#[cfg(test)]
mod tests;
