//! Swap per container (upstream `kuberuntime_container_linux.go`:
//! `configureContainerSwapResources`, `GetContainerSwapBehavior`, `swapConfigurationHelper`,
//! `calcSwapForBurstablePods`).
//!
//! Whenever the node has a swap controller (cgroup v1: `memory.memsw.limit_in_bytes` exists;
//! v2: the kubelet's own cgroup has `memory.swap.max`), every container gets a swap setting:
//! * **NoSwap** (the default, and whatever `LimitedSwap` does not apply to): on v1 the
//!   memory+swap limit equals the memory limit (`MemorySwapLimitInBytes`; no swap beyond the
//!   memory limit, and with no memory limit runc ignores it), on v2 `memory.swap.max = 0`;
//! * **LimitedSwap** (`memorySwap.swapBehavior`, cgroup v2 only, Burstable pods that are not
//!   critical, for a container with a memory request different from its limit):
//!   `memory.swap.max` = request / node memory × node swap.

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_container::{QosClass, get_pod_qos};
use kubelet_cri::v1::LinuxContainerResources;

use crate::qos::is_critical_pod;
use crate::resources::ResourceSettings;

/// The cgroup v2 file of the swap limit (upstream `cm.Cgroup2MaxSwapFilename`).
pub const CGROUP2_MAX_SWAP_FILENAME: &str = "memory.swap.max";

/// What the node's swap settings are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwapSettings {
    /// Upstream `checkSwapControllerAvailability` (`kubelet_cm::swap::swap_controller_available`).
    pub controller_available: bool,
    /// `memorySwap.swapBehavior: LimitedSwap` (the `NodeSwap` gate is GA and locked on in
    /// 1.35; `LimitedSwap` on cgroup v1 is refused at start).
    pub limited_swap: bool,
    /// The machine's swap (`SwapTotal` of `/proc/meminfo`, cAdvisor's `SwapCapacity`), bytes.
    pub swap_capacity: i64,
}

/// Upstream `types.SwapBehavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapBehavior {
    /// No swap for the container.
    NoSwap,
    /// Swap in proportion to the container's memory request.
    LimitedSwap,
}

/// Upstream `GetContainerSwapBehavior`.
pub fn container_swap_behavior(
    settings: &ResourceSettings,
    pod: &Pod,
    container: &Container,
) -> SwapBehavior {
    let swap = &settings.swap;
    if !swap.limited_swap || !swap.controller_available || !settings.cgroup_v2 {
        return SwapBehavior::NoSwap;
    }
    if is_critical_pod(pod) {
        return SwapBehavior::NoSwap;
    }
    let res = container.resources.as_ref();
    let memory = |m: Option<&std::collections::BTreeMap<String, _>>| {
        crate::resources::bytes(m.and_then(|m| m.get("memory")))
    };
    let request = memory(res.and_then(|r| r.requests.as_ref()));
    let limit = memory(res.and_then(|r| r.limits.as_ref()));
    let no_memory = request == 0 && limit == 0;
    if get_pod_qos(pod) != QosClass::Burstable || no_memory || request == limit {
        return SwapBehavior::NoSwap;
    }
    SwapBehavior::LimitedSwap
}

/// Upstream `calcSwapForBurstablePods`: request / node memory × node swap.
pub fn calc_swap_for_burstable_pods(
    container_memory_request: i64,
    node_total_memory: i64,
    total_pods_swap_available: i64,
) -> Result<i64, String> {
    if node_total_memory <= 0 {
        return Err("total node memory is 0".into());
    }
    if container_memory_request > node_total_memory {
        return Err(format!(
            "container request {container_memory_request} is larger than total node memory {node_total_memory}"
        ));
    }
    let proportion = container_memory_request as f64 / node_total_memory as f64;
    Ok((proportion * total_pods_swap_available as f64) as i64)
}

/// Upstream `configureContainerSwapResources`: nothing without a swap controller; else
/// NoSwap or LimitedSwap as [`container_swap_behavior`] says.
pub fn configure_container_swap_resources(
    settings: &ResourceSettings,
    lcr: &mut LinuxContainerResources,
    pod: &Pod,
    container: &Container,
) {
    if !settings.swap.controller_available {
        return;
    }
    match container_swap_behavior(settings, pod, container) {
        SwapBehavior::NoSwap => configure_no_swap(settings, lcr),
        SwapBehavior::LimitedSwap => {
            let request = crate::resources::bytes(
                container
                    .resources
                    .as_ref()
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|r| r.get("memory")),
            );
            match calc_swap_for_burstable_pods(
                request,
                settings.memory_capacity,
                settings.swap.swap_capacity,
            ) {
                Ok(limit) => configure_swap(settings, lcr, limit),
                Err(e) => {
                    tracing::error!(err = %e, "Cannot calculate swap allocation amount; disallowing swap");
                    configure_no_swap(settings, lcr);
                }
            }
        }
    }
}

/// Upstream `ConfigureNoSwap`.
fn configure_no_swap(settings: &ResourceSettings, lcr: &mut LinuxContainerResources) {
    if !settings.cgroup_v2 {
        // memory+swap = memory: no swap above the memory limit (ignored without a limit).
        lcr.memory_swap_limit_in_bytes = lcr.memory_limit_in_bytes;
        return;
    }
    configure_swap(settings, lcr, 0);
}

/// Upstream `configureSwap`: `memory.swap.max` on cgroup v2 only.
fn configure_swap(settings: &ResourceSettings, lcr: &mut LinuxContainerResources, swap: i64) {
    if !settings.cgroup_v2 {
        tracing::error!(
            err = "swap configuration is not supported with cgroup v1",
            "Swap configuration under cgroup v1 is unexpected"
        );
        return;
    }
    lcr.unified
        .insert(CGROUP2_MAX_SWAP_FILENAME.to_string(), swap.to_string());
}

#[cfg(test)]
#[path = "swap_tests.rs"]
mod tests;
