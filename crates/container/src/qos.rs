//! Pod QoS class (upstream `pkg/apis/core/v1/helper/qos/qos.go`), shared by
//! the status generator (`status.qosClass`) and the runtime manager (pod
//! cgroup parent, OOM score), so both always agree on a pod's class.
//!
//! Quantities are summed and compared exactly (`kubelet_apimachinery::Quantity`),
//! like upstream's `resource.Quantity.Add` / `Cmp`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod as ApiPod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubelet_apimachinery::Quantity;

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
    /// The API string (`Guaranteed`, `Burstable`, `BestEffort`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Guaranteed => "Guaranteed",
            Self::Burstable => "Burstable",
            Self::BestEffort => "BestEffort",
        }
    }

    /// The class an API string names, if any.
    pub fn from_api(s: &str) -> Option<QosClass> {
        [Self::Guaranteed, Self::Burstable, Self::BestEffort]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// Upstream `supportedQoSComputeResources`.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// The class recorded in the pod status if set, else the computed one
/// (upstream `GetPodQOS`).
pub fn get_pod_qos(pod: &ApiPod) -> QosClass {
    pod.status
        .as_ref()
        .and_then(|s| s.qos_class.as_deref())
        .and_then(QosClass::from_api)
        .unwrap_or_else(|| compute_pod_qos(pod))
}

/// Positive cpu/memory quantities of a resource list; unparsable values are
/// ignored (the API server rejects them before a pod reaches the kubelet).
fn positive(list: Option<&BTreeMap<String, ApiQuantity>>) -> BTreeMap<&'static str, Quantity> {
    let mut out = BTreeMap::new();
    for name in QOS_RESOURCES {
        if let Some(q) = list
            .and_then(|l| l.get(name))
            .and_then(|q| Quantity::parse(&q.0).ok())
            && q.sign() > 0
        {
            out.insert(name, q);
        }
    }
    out
}

fn accumulate(total: &mut BTreeMap<&'static str, Quantity>, add: BTreeMap<&'static str, Quantity>) {
    for (name, q) in add {
        let sum = total.get(name).map_or(q, |t| t.add(&q));
        total.insert(name, sum);
    }
}

/// Computes the class from the cpu/memory requests and limits of all
/// containers, or from pod-level resources when the pod sets any (upstream
/// `ComputePodQOS` with `PodLevelResources`).
pub fn compute_pod_qos(pod: &ApiPod) -> QosClass {
    let Some(spec) = pod.spec.as_ref() else {
        return QosClass::BestEffort;
    };
    let empty = ResourceRequirements::default();
    let pod_level = spec
        .resources
        .as_ref()
        .filter(|r| r.requests.is_some() || r.limits.is_some());
    let resources: Vec<&ResourceRequirements> = match pod_level {
        Some(r) => vec![r],
        None => spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .map(|c| c.resources.as_ref().unwrap_or(&empty))
            .collect(),
    };
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    let mut guaranteed = true;
    for r in resources {
        accumulate(&mut requests, positive(r.requests.as_ref()));
        let found = positive(r.limits.as_ref());
        if !QOS_RESOURCES.iter().all(|n| found.contains_key(n)) {
            guaranteed = false;
        }
        accumulate(&mut limits, found);
    }
    if requests.is_empty() && limits.is_empty() {
        return QosClass::BestEffort;
    }
    let matches = requests
        .iter()
        .all(|(n, req)| limits.get(n).is_some_and(|lim| lim.cmp_value(req).is_eq()));
    if guaranteed && matches && requests.len() == limits.len() {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

/// Upstream `IsSupportedPodLevelResource`: the resources a pod may set at pod level.
pub fn is_supported_pod_level_resource(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// Upstream `IsPodLevelResourcesSet`: the pod sets a request or limit of a supported
/// resource at pod level.
pub fn is_pod_level_resources_set(pod: &ApiPod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .is_some_and(|r| {
            r.requests
                .iter()
                .chain(r.limits.iter())
                .flatten()
                .any(|(name, _)| is_supported_pod_level_resource(name))
        })
}

#[cfg(test)]
#[path = "qos_tests.rs"]
mod tests;
