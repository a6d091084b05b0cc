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
//! | [`manager`]            | `pkg/kubelet/status/status_manager.go` (no API sync yet) |
//!
//! The kubelet's sync methods call [`generate_api_pod_status`] with the
//! runtime [`kubelet_container::PodStatus`] from the PLEG cache, then
//! [`StatusManager::set_pod_status`]; after each runtime `SyncPod` they feed
//! the result to [`ReasonCache::update`].

pub mod conditions;
pub mod container_statuses;
pub mod generate;
pub mod manager;
pub mod phase;
pub mod probes;
pub mod reason_cache;
pub mod reasons;

pub use generate::{GenerateOptions, generate_api_pod_status, sort_pod_ips};
// Probe results live in `kubelet_container::probe_results`; re-exported for callers.
pub use kubelet_container::{NoProbeResults, ProbeResults};
pub use manager::{StatusManager, VersionedPodStatus};
pub use phase::get_phase;
pub use reason_cache::{ReasonCache, ReasonItem};

#[cfg(test)]
mod tests;
