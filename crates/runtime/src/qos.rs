//! Pod QoS class and container OOM score adjustment (upstream
//! `pkg/apis/core/v1/helper/qos/qos.go` and `pkg/kubelet/qos/policy.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity;

/// `v1.PodQOSClass`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QosClass {
    /// Requests equal limits for cpu and memory in every container.
    Guaranteed,
    /// Anything in between.
    Burstable,
    /// No cpu or memory requests or limits anywhere.
    BestEffort,
}

impl QosClass {
    /// API string value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Guaranteed => "Guaranteed",
            Self::Burstable => "Burstable",
            Self::BestEffort => "BestEffort",
        }
    }
}

/// OOM score adjustment of guaranteed and node-critical containers.
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
/// OOM score adjustment of best-effort containers.
pub const BEST_EFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// Priority at and above which a pod is critical (`scheduling.SystemCriticalPriority`).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

fn positive_milli(q: &Quantity) -> Option<i64> {
    quantity::milli_value(q).ok().filter(|v| *v > 0)
}

/// `GetPodQOS`: the class in the pod status if set, otherwise computed from the spec.
pub fn get_pod_qos(pod: &Pod) -> QosClass {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some("Guaranteed") => QosClass::Guaranteed,
        Some("Burstable") => QosClass::Burstable,
        Some("BestEffort") => QosClass::BestEffort,
        _ => compute_pod_qos(pod),
    }
}

/// `ComputePodQOS` over container (and pod-level, when set) cpu/memory requests and limits.
pub fn compute_pod_qos(pod: &Pod) -> QosClass {
    let Some(spec) = pod.spec.as_ref() else {
        return QosClass::BestEffort;
    };
    let mut requests: BTreeMap<&str, i64> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i64> = BTreeMap::new();
    let mut guaranteed = true;
    let mut account = |res: Option<&k8s_openapi::api::core::v1::ResourceRequirements>| {
        let empty = BTreeMap::new();
        let res_requests = res.and_then(|r| r.requests.as_ref()).unwrap_or(&empty);
        let res_limits = res.and_then(|r| r.limits.as_ref()).unwrap_or(&empty);
        for name in QOS_RESOURCES {
            if let Some(v) = res_requests.get(name).and_then(positive_milli) {
                *requests.entry(name).or_default() += v;
            }
        }
        let mut found = 0;
        for name in QOS_RESOURCES {
            if let Some(v) = res_limits.get(name).and_then(positive_milli) {
                *limits.entry(name).or_default() += v;
                found += 1;
            }
        }
        if found != QOS_RESOURCES.len() {
            guaranteed = false;
        }
    };
    let pod_level = spec.resources.as_ref().filter(|r| {
        let has = |m: &Option<BTreeMap<String, Quantity>>| {
            m.as_ref()
                .is_some_and(|m| QOS_RESOURCES.iter().any(|n| m.contains_key(*n)))
        };
        has(&r.requests) || has(&r.limits)
    });
    if let Some(pod_resources) = pod_level {
        account(Some(pod_resources));
    } else {
        for c in spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
        {
            account(c.resources.as_ref());
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return QosClass::BestEffort;
    }
    if guaranteed
        && requests
            .iter()
            .all(|(name, req)| limits.get(name) == Some(req))
        && requests.len() == limits.len()
    {
        return QosClass::Guaranteed;
    }
    QosClass::Burstable
}

fn is_static_or_mirror(pod: &Pod) -> bool {
    let annotations = pod.metadata.annotations.as_ref();
    let source = annotations.and_then(|a| a.get("kubernetes.io/config.source"));
    source.is_some_and(|s| s != "api")
        || annotations.is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
}

/// `IsCriticalPod`: static, mirror, or priority at least system-critical.
pub fn is_critical_pod(pod: &Pod) -> bool {
    is_static_or_mirror(pod)
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
    container.restart_policy.as_deref() == Some("Always")
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
    fn qos_classes() {
        let cases = [
            (vec![resources(&[], &[])], QosClass::BestEffort),
            (vec![resources(&[("cpu", "0")], &[])], QosClass::BestEffort),
            (
                vec![resources(
                    &[("cpu", "1"), ("memory", "1Gi")],
                    &[("cpu", "1"), ("memory", "1Gi")],
                )],
                QosClass::Guaranteed,
            ),
            (
                vec![resources(
                    &[("cpu", "1000m"), ("memory", "1Gi")],
                    &[("cpu", "1"), ("memory", "1Gi")],
                )],
                QosClass::Guaranteed,
            ),
            (
                vec![resources(&[("cpu", "100m")], &[])],
                QosClass::Burstable,
            ),
            (
                vec![resources(&[], &[("cpu", "1"), ("memory", "1Gi")])],
                QosClass::Burstable,
            ),
            (
                vec![
                    resources(
                        &[("cpu", "1"), ("memory", "1Gi")],
                        &[("cpu", "1"), ("memory", "1Gi")],
                    ),
                    resources(&[], &[]),
                ],
                QosClass::Burstable,
            ),
        ];
        for (containers, want) in cases {
            let pod = pod_with(containers.clone());
            assert_eq!(compute_pod_qos(&pod), want, "{containers:?}");
        }
    }

    #[test]
    fn oom_score_adjust_by_qos() {
        let cap = 4 << 30;
        let be = pod_with(vec![resources(&[], &[])]);
        let c = &be
            .spec
            .as_ref()
            .map(|s| s.containers[0].clone())
            .unwrap_or_default();
        assert_eq!(container_oom_score_adjust(&be, c, cap), 1000);

        let g = pod_with(vec![resources(
            &[("cpu", "1"), ("memory", "1Gi")],
            &[("cpu", "1"), ("memory", "1Gi")],
        )]);
        let c = g
            .spec
            .as_ref()
            .map(|s| s.containers[0].clone())
            .unwrap_or_default();
        assert_eq!(container_oom_score_adjust(&g, &c, cap), -997);

        // Burstable requesting a quarter of memory: 1000 - 250 = 750.
        let b = pod_with(vec![resources(&[("memory", "1Gi")], &[])]);
        let c = b
            .spec
            .as_ref()
            .map(|s| s.containers[0].clone())
            .unwrap_or_default();
        assert_eq!(container_oom_score_adjust(&b, &c, cap), 750);

        // Burstable requesting nothing relevant: 1000 would equal best-effort, so 999.
        let b = pod_with(vec![resources(&[("cpu", "1")], &[])]);
        let c = b
            .spec
            .as_ref()
            .map(|s| s.containers[0].clone())
            .unwrap_or_default();
        assert_eq!(container_oom_score_adjust(&b, &c, cap), 999);

        // Requesting more than capacity is floored at 3.
        let b = pod_with(vec![resources(&[("memory", "8Gi")], &[])]);
        let c = b
            .spec
            .as_ref()
            .map(|s| s.containers[0].clone())
            .unwrap_or_default();
        assert_eq!(container_oom_score_adjust(&b, &c, cap), 3);
    }
}
