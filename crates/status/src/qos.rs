//! Pod QoS class (upstream `pkg/apis/core/v1/helper/qos/qos.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod as ApiPod, ResourceRequirements};
use kubelet_apimachinery::Quantity;

/// `Guaranteed`.
pub const GUARANTEED: &str = "Guaranteed";
/// `Burstable`.
pub const BURSTABLE: &str = "Burstable";
/// `BestEffort`.
pub const BEST_EFFORT: &str = "BestEffort";

const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// The recorded class if set, else the computed one (upstream `GetPodQOS`).
pub fn get_pod_qos(pod: &ApiPod) -> &'static str {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some(GUARANTEED) => GUARANTEED,
        Some(BURSTABLE) => BURSTABLE,
        Some(BEST_EFFORT) => BEST_EFFORT,
        _ => compute_pod_qos(pod),
    }
}

/// Positive cpu/memory quantities of a resource list; unparsable values are ignored.
fn positive(
    list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> BTreeMap<&'static str, Quantity> {
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

/// Computes the class from requests and limits of all containers, or from
/// pod-level resources when set (upstream `ComputePodQOS`).
pub fn compute_pod_qos(pod: &ApiPod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else {
        return BEST_EFFORT;
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
        return BEST_EFFORT;
    }
    let matches = requests
        .iter()
        .all(|(n, req)| limits.get(n).is_some_and(|lim| lim.cmp_value(req).is_eq()));
    if guaranteed && matches && requests.len() == limits.len() {
        GUARANTEED
    } else {
        BURSTABLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;

    fn res(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, Q>> {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Q(v.to_string())))
                .collect()
        })
    }

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: res(requests),
                limits: res(limits),
                ..Default::default()
            }),
            ..Container::default()
        }
    }

    fn pod(containers: Vec<Container>) -> ApiPod {
        ApiPod {
            spec: Some(PodSpec {
                containers,
                ..PodSpec::default()
            }),
            ..ApiPod::default()
        }
    }

    #[test]
    fn qos_table() {
        let cpu_mem = [("cpu", "100m"), ("memory", "64Mi")];
        let cases: Vec<(&str, Vec<Container>, &str)> = vec![
            ("nothing", vec![Container::default()], BEST_EFFORT),
            (
                "zero requests",
                vec![container(&[("cpu", "0")], &[])],
                BEST_EFFORT,
            ),
            (
                "limits equal requests",
                vec![container(&cpu_mem, &cpu_mem)],
                GUARANTEED,
            ),
            (
                "limits only, before API defaulting",
                vec![container(&[], &cpu_mem)],
                BURSTABLE,
            ),
            (
                "requests below limits",
                vec![container(&[("cpu", "50m"), ("memory", "64Mi")], &cpu_mem)],
                BURSTABLE,
            ),
            (
                "cpu limit only",
                vec![container(&[("cpu", "100m")], &[("cpu", "100m")])],
                BURSTABLE,
            ),
            (
                "one best-effort container",
                vec![container(&cpu_mem, &cpu_mem), Container::default()],
                BURSTABLE,
            ),
            (
                "1 cpu equals 1000m",
                vec![container(
                    &[("cpu", "1"), ("memory", "1Gi")],
                    &[("cpu", "1000m"), ("memory", "1024Mi")],
                )],
                GUARANTEED,
            ),
        ];
        for (name, containers, want) in cases {
            assert_eq!(compute_pod_qos(&pod(containers)), want, "{name}");
        }
    }
}
