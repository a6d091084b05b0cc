//! The memory manager's families in the kubelet's `/metrics`
//! (`kubelet_metrics::ResourceManagerMetrics`), updated where upstream's static policy
//! updates them (`Allocate`: `MemoryManagerPinningRequestTotal`, and
//! `MemoryManagerPinningErrorsTotal` in its deferred function).

fn with(f: impl FnOnce(&kubelet_metrics::ResourceManagerMetrics)) {
    kubelet_metrics::with(|m| f(&m.resource_managers));
}

/// `Allocate` of a container of a Guaranteed pod: one pinning request.
pub fn pinning_requested() {
    with(|m| m.memory_manager_pinning_requests_total.inc());
}

/// Such an `Allocate` failed.
pub fn pinning_failed() {
    with(|m| m.memory_manager_pinning_errors_total.inc());
}
