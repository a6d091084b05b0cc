//! The CPU manager's families in the kubelet's `/metrics`
//! (`kubelet_metrics::ResourceManagerMetrics`), updated where upstream updates them:
//! `policy_static.go` (`Allocate`'s pinning counters, `initializeMetrics`,
//! `updateMetricsOnAllocate`, `updateMetricsOnRelease`, `updateAllocationPerNUMAMetric`);
//! the topology manager counts its own admissions (`kubelet-topologymanager`).

use std::collections::BTreeMap;

use kubelet_apimachinery::CpuSet;
use kubelet_metrics::ResourceManagerMetrics;

use crate::topology::CPUTopology;

/// Upstream `metrics.AlignScopeContainer`.
pub const ALIGN_SCOPE_CONTAINER: &str = "container";
/// Upstream `metrics.AlignedPhysicalCPU`.
pub const ALIGNED_PHYSICAL_CPU: &str = "physical_cpu";
/// Upstream `metrics.AlignedUncoreCache`.
pub const ALIGNED_UNCORE_CACHE: &str = "uncore_cache";

fn with(f: impl FnOnce(&ResourceManagerMetrics)) {
    kubelet_metrics::with(|m| f(&m.resource_managers));
}

fn cpus_f64(n: usize) -> f64 {
    // CPU counts are far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let v = n as f64;
    v
}

/// `Allocate` of a container that needs exclusive CPUs: one pinning request.
pub fn pinning_requested() {
    with(|m| m.cpu_manager_pinning_requests_total.inc());
}

/// The end of such an `Allocate` (its deferred function): an error counts as a pinning
/// error; with `full-pcpus-only`, the physical-CPU alignment succeeded or failed.
pub fn pinning_done(ok: bool, full_pcpus_only: bool) {
    with(|m| {
        if !ok {
            m.cpu_manager_pinning_errors_total.inc();
        }
        if full_pcpus_only {
            let family = if ok {
                &m.container_aligned_compute_resources
            } else {
                &m.container_aligned_compute_resources_failure
            };
            family
                .with_label_values(&[ALIGN_SCOPE_CONTAINER, ALIGNED_PHYSICAL_CPU])
                .inc();
        }
    });
}

/// `updateAllocationPerNUMAMetric`: the exclusively allocated CPUs per NUMA node (only
/// nodes holding some are set, as upstream).
fn allocation_per_numa(m: &ResourceManagerMetrics, topology: &CPUTopology, allocated: &CpuSet) {
    let mut per_node: BTreeMap<usize, usize> = BTreeMap::new();
    for cpu in allocated.iter() {
        match topology.cpu_numa_node_id(cpu) {
            Ok(node) => *per_node.entry(node).or_default() += 1,
            Err(err) => tracing::error!(%err, cpu_id = cpu, "Unable to determine NUMA node"),
        }
    }
    for (node, count) in per_node {
        m.cpu_manager_allocation_per_numa
            .with_label_values(&[&node.to_string()])
            .set(cpus_f64(count));
    }
}

/// `initializeMetrics` (the static policy's `Start`): the shared pool (`available`, in
/// CPUs), the exclusive allocations of the restored state, and the alignment series set to
/// exist.
pub fn initialize(topology: &CPUTopology, available: usize, assigned: &CpuSet) {
    with(|m| {
        m.cpu_manager_shared_pool_size_millicores
            .set(cpus_f64(available * 1000));
        for (family, boundary) in [
            (
                &m.container_aligned_compute_resources_failure,
                ALIGNED_PHYSICAL_CPU,
            ),
            (&m.container_aligned_compute_resources, ALIGNED_PHYSICAL_CPU),
            (&m.container_aligned_compute_resources, ALIGNED_UNCORE_CACHE),
        ] {
            family
                .with_label_values(&[ALIGN_SCOPE_CONTAINER, boundary])
                .inc_by(0.0);
        }
        m.cpu_manager_exclusive_cpu_allocation_count
            .set(cpus_f64(assigned.len()));
        allocation_per_numa(m, topology, assigned);
    });
}

/// `updateMetricsOnAllocate`: `ncpus` left the shared pool; `assigned` is every exclusive
/// allocation now.
pub fn on_allocate(topology: &CPUTopology, ncpus: usize, uncore_aligned: bool, assigned: &CpuSet) {
    with(|m| {
        m.cpu_manager_exclusive_cpu_allocation_count
            .add(cpus_f64(ncpus));
        m.cpu_manager_shared_pool_size_millicores
            .sub(cpus_f64(ncpus * 1000));
        if uncore_aligned {
            m.container_aligned_compute_resources
                .with_label_values(&[ALIGN_SCOPE_CONTAINER, ALIGNED_UNCORE_CACHE])
                .inc();
        }
        allocation_per_numa(m, topology, assigned);
    });
}

/// `updateMetricsOnRelease`: `released` went back to the shared pool; `assigned` is every
/// exclusive allocation now.
pub fn on_release(topology: &CPUTopology, released: &CpuSet, assigned: &CpuSet) {
    with(|m| {
        m.cpu_manager_exclusive_cpu_allocation_count
            .sub(cpus_f64(released.len()));
        m.cpu_manager_shared_pool_size_millicores
            .add(cpus_f64(released.len() * 1000));
        allocation_per_numa(m, topology, &assigned.difference(released));
    });
}
