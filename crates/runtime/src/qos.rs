//! Container OOM score adjustment (upstream `pkg/kubelet/qos/policy.go`) and
//! pod criticality (`pkg/kubelet/types/pod_update.go`). The QoS class itself is
//! [`kubelet_container::qos`], shared with the status generator.

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_container::kubetypes::{is_mirror_pod, is_static_pod};
use kubelet_container::{QosClass, get_pod_qos, is_restartable_init_container};

use crate::quantity;

/// OOM score adjustment of guaranteed and node-critical containers.
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
/// OOM score adjustment of best-effort containers.
pub const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// Priority at and above which a pod is critical (`scheduling.SystemCriticalPriority`).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// `IsCriticalPod`: static, mirror, or priority at least system-critical.
pub fn is_critical_pod(pod: &Pod) -> bool {
    is_static_pod(pod)
        || is_mirror_pod(pod)
        || pod
            .spec
            .as_ref()
            .and_then(|s| s.priority)
            .is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
}

/// `IsNodeCriticalPod`: critical with priority class `system-node-critical`.
pub fn is_node_critical_pod(pod: &Pod) -> bool {
    is_critical_pod(pod)
        && pod
            .spec
            .as_ref()
            .and_then(|s| s.priority_class_name.as_deref())
            == Some("system-node-critical")
}

fn memory_request(c: &Container) -> i64 {
    c.resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("memory"))
        .and_then(|q| quantity::value(q).ok())
        .unwrap_or(0)
}

fn is_sidecar(pod: &Pod, container: &Container) -> bool {
    is_restartable_init_container(container)
        && pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref())
            .is_some_and(|ics| ics.iter().any(|c| c.name == container.name))
}

/// Smallest memory request among regular containers, 0 if none requests memory
/// (`minRegularContainerMemory`).
fn min_regular_container_memory(pod: &Pod) -> i64 {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    containers
        .iter()
        .map(memory_request)
        .filter(|m| *m > 0)
        .min()
        .unwrap_or(0)
}

/// `GetContainerOOMScoreAdjust` for a container on a node with `memory_capacity` bytes.
pub fn container_oom_score_adjust(pod: &Pod, container: &Container, memory_capacity: i64) -> i64 {
    if is_node_critical_pod(pod) {
        return GUARANTEED_OOM_SCORE_ADJ;
    }
    match get_pod_qos(pod) {
        QosClass::Guaranteed => return GUARANTEED_OOM_SCORE_ADJ,
        QosClass::BestEffort => return BEST_EFFORT_OOM_SCORE_ADJ,
        QosClass::Burstable => {}
    }
    let request = if is_sidecar(pod, container) {
        min_regular_container_memory(pod)
    } else {
        memory_request(container)
    };
    let capacity = memory_capacity.max(1);
    let adjust = 1000 - (1000_i128 * i128::from(request) / i128::from(capacity)) as i64;
    if adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ {
        1000 + GUARANTEED_OOM_SCORE_ADJ
    } else if adjust == BEST_EFFORT_OOM_SCORE_ADJ {
        adjust - 1
    } else {
        adjust
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    pub(crate) fn resources(
        requests: &[(&str, &str)],
        limits: &[(&str, &str)],
    ) -> ResourceRequirements {
        let map = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        ResourceRequirements {
            requests: map(requests),
            limits: map(limits),
            ..Default::default()
        }
    }

    pub(crate) fn pod_with(containers: Vec<ResourceRequirements>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: containers
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| Container {
                        name: format!("c{i}"),
                        resources: Some(r),
                        ..Container::default()
                    })
                    .collect(),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn oom_score_adjust_by_qos() {
        let cap = 4 << 30;
        let cpu_mem = [("cpu", "1"), ("memory", "1Gi")];
        let cases = [
            ("best-effort", resources(&[], &[]), 1000),
            ("guaranteed", resources(&cpu_mem, &cpu_mem), -997),
            // Burstable requesting a quarter of memory: 1000 - 250 = 750.
            ("quarter", resources(&[("memory", "1Gi")], &[]), 750),
            // Burstable requesting nothing relevant: 1000 would equal best-effort, so 999.
            ("cpu only", resources(&[("cpu", "1")], &[]), 999),
            // Requesting more than capacity is floored at 3.
            ("over capacity", resources(&[("memory", "8Gi")], &[]), 3),
        ];
        for (name, res, want) in cases {
            let pod = pod_with(vec![res]);
            let c = pod
                .spec
                .as_ref()
                .map(|s| s.containers[0].clone())
                .unwrap_or_default();
            assert_eq!(container_oom_score_adjust(&pod, &c, cap), want, "{name}");
        }
    }
}
