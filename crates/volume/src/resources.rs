//! The pod's memory limit as the pod cgroup gets it (upstream `cm.ResourceConfigForPod`'s
//! memory, `resourcehelper.PodLimits`), which caps the size of memory-backed volumes
//! (`calculateEmptyDirMemorySize`).

use k8s_openapi::api::core::v1::{Container, Pod};

fn memory_limit(c: &Container) -> Option<i64> {
    let q = c.resources.as_ref()?.limits.as_ref()?.get("memory")?;
    kubelet_runtime::quantity::value(q).ok()
}

/// The pod's memory limit: `None` unless every (init and regular) container declares one;
/// the pod-level limit when set; otherwise the larger of the regular containers plus
/// sidecars and each init container plus the sidecars started before it, plus overhead.
pub fn pod_memory_limit(pod: &Pod) -> Option<i64> {
    let spec = pod.spec.as_ref()?;
    let all = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    let mut declared = true;
    for c in all {
        declared &= memory_limit(c).is_some_and(|m| m != 0);
    }
    let pod_level = spec
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get("memory"))
        .and_then(|q| kubelet_runtime::quantity::value(q).ok());
    if let Some(l) = pod_level {
        return Some(l);
    }
    if !declared {
        return None;
    }
    let mut sum: i64 = spec.containers.iter().filter_map(memory_limit).sum();
    let mut sidecars: i64 = 0;
    let mut init_max: i64 = 0;
    for c in spec.init_containers.iter().flatten() {
        let l = memory_limit(c).unwrap_or(0);
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars = sidecars.saturating_add(l);
            init_max = init_max.max(sidecars);
        } else {
            init_max = init_max.max(sidecars.saturating_add(l));
        }
    }
    sum = sum.saturating_add(sidecars).max(init_max);
    let overhead = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get("memory"))
        .and_then(|q| kubelet_runtime::quantity::value(q).ok())
        .unwrap_or(0);
    Some(sum.saturating_add(overhead))
}
