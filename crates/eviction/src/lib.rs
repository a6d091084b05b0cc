//! The eviction manager (upstream `pkg/kubelet/eviction`, v1.35): every
//! `evictionMonitoringPeriod` (10 s) it reads the stats summary, derives the eviction
//! signals, compares them with the `evictionHard`/`evictionSoft` thresholds (grace periods,
//! `evictionMinimumReclaim`), reports the node conditions (`MemoryPressure`,
//! `DiskPressure`, `PIDPressure`, held for `evictionPressureTransitionPeriod`), tries
//! node-level reclaim first (dead containers, unused images) and otherwise evicts one pod
//! per round, ranked as upstream ranks them, with reason `Evicted`. Its admit handler
//! refuses BestEffort pods under memory pressure and every pod under other pressure;
//! critical pods are never evicted and always admitted.
//!
//! | Rust module   | Upstream Go file                                                        |
//! |---------------|-------------------------------------------------------------------------|
//! | [`helpers`]   | `eviction/helpers.go` (`makeSignalObservations`, `thresholdsMet`, ranking, `evictionMessage`), `helpers_linux.go` |
//! | [`manager`]   | `eviction/eviction_manager.go` (`managerImpl`, `synchronize`, `Admit`, `evictPod`), `eviction/types.go` |
//! | [`threshold_notifier`] | `eviction/memory_threshold_notifier.go`, `memory_threshold_notifier_others.go`, `threshold_notifier_linux.go` (cgroup v1 memcg threshold events; disabled on v2 as upstream's) |
//!
//! Thresholds are parsed by `kubelet_apimachinery::eviction::parse_threshold_config`
//! (`ParseThresholdConfig`). With `localStorageCapacityIsolation` each round first evicts
//! the pods past their local storage limits (`localStorageEviction`: emptyDir `sizeLimit`,
//! pod and container `ephemeral-storage` limits).

pub mod helpers;
pub mod manager;
pub mod threshold_notifier;

#[cfg(test)]
mod helpers_tests;
#[cfg(test)]
mod manager_tests;
#[cfg(test)]
mod threshold_notifier_tests;

pub use helpers::{NodeConditionType, ResourceName};
pub use manager::{
    Clock, Config, ContainerGc, Deps, DiskInfoProvider, EVICTION_MONITORING_PERIOD,
    EvictionAdmitHandler, EvictionStatus, ImageGc, ManagerImpl, PodTerminator, REASON, RealClock,
    SummaryProvider,
};
