//! Pod status: computing the API status and keeping the latest one per pod.
//!
//! | Rust module            | Upstream                                               |
//! |------------------------|--------------------------------------------------------|
//! | [`generate`]           | `kubelet_pods.go` `generateAPIPodStatus`, `convertStatusToAPIStatus`, `sortPodIPs` |
//! | [`container_statuses`] | `kubelet_pods.go` `convertToAPIContainerStatuses`      |
//! | [`phase`]              | `kubelet_pods.go` `getPhase`                           |
//! | [`conditions`]         | `pkg/kubelet/status/generate.go`                       |
//! | [`reason_cache`]       | `pkg/kubelet/reason_cache.go`                          |
//! | [`probes`]             | `prober_manager.go` `UpdatePodStatus` (hook)           |
//! | [`manager`]            | `pkg/kubelet/status/status_manager.go` (cache: `SetPodStatus`, `TerminatePod`, `updateStatusInternal`) |
//! | [`syncer`]             | `pkg/kubelet/status/status_manager.go` (`Start`, `syncBatch`, `syncPod`, `mergePodStatus`) |
//! | [`patch`]              | `pkg/util/pod/pod.go` `PatchPodStatus`, client-go `strategicpatch.CreateTwoWayMergePatch` |
//! | [`api`]                | the `Pods()` calls of `syncPod` (GET, PATCH `status`, DELETE grace 0) |
//!
//! The kubelet's sync methods call [`generate_api_pod_status`] with the
//! runtime [`kubelet_container::PodStatus`] from the PLEG cache, then
//! [`StatusManager::set_pod_status`]; after each runtime `SyncPod` they feed
//! the result to [`ReasonCache::update`]. In API mode a [`StatusSyncer`]
//! writes the statuses to the apiserver and deletes finished pods.

pub mod api;
pub mod conditions;
pub mod container_statuses;
pub mod generate;
pub mod manager;
pub mod patch;
pub mod phase;
pub mod probes;
pub mod reason_cache;
pub mod reasons;
pub mod resize;
pub mod syncer;

pub use generate::{GenerateOptions, generate_api_pod_status, sort_pod_ips};
// Probe results live in `kubelet_container::probe_results`; re-exported for callers.
#[cfg(any(test, feature = "fake"))]
pub use api::{FakePodStatusApi, StatusApiCall};
pub use api::{KubePodStatusApi, PodStatusApi, StatusApiError};
pub use kubelet_container::{NoProbeResults, ProbeResults};
pub use manager::{StatusManager, VersionedPodStatus};
pub use phase::get_phase;
pub use reason_cache::{ReasonCache, ReasonItem};
pub use syncer::{PodDeletionSafetyProvider, PodManager, SYNC_PERIOD, StatusSyncer};

#[cfg(test)]
mod tests;
