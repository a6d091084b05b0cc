//! A pod's CPU and memory requests as the scheduler and the kubelet's admission count them
//! (upstream `component-helpers/resource` `PodRequests`, `AggregateContainerRequests`):
//! regular containers and sidecars add up, a regular init container only raises the peak
//! (with the sidecars started before it), pod-level requests replace the containers' sum,
//! and the pod overhead is added.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubelet_apimachinery::Quantity;

/// CPU in millicores, memory and ephemeral storage in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Requests {
    /// Millicores.
    pub milli_cpu: i64,
    /// Bytes.
    pub memory: i64,
    /// Bytes of `ephemeral-storage` (not a pod-level resource: always the containers').
    pub ephemeral_storage: i64,
}

impl Requests {
    fn of(list: Option<&BTreeMap<String, ApiQuantity>>) -> Self {
        // Pods reaching admission passed validation: every quantity parses.
        let get = |name: &str, f: fn(&Quantity) -> i64| {
            list.and_then(|l| l.get(name))
                .and_then(|q| Quantity::parse(&q.0).ok())
                .map_or(0, |q| f(&q))
        };
        Self {
            milli_cpu: get("cpu", Quantity::milli_value),
            memory: get("memory", Quantity::value),
            ephemeral_storage: get("ephemeral-storage", Quantity::value),
        }
    }

    fn add(self, o: Self) -> Self {
        Self {
            milli_cpu: self.milli_cpu.saturating_add(o.milli_cpu),
            memory: self.memory.saturating_add(o.memory),
            ephemeral_storage: self.ephemeral_storage.saturating_add(o.ephemeral_storage),
        }
    }

    fn max(self, o: Self) -> Self {
        Self {
            milli_cpu: self.milli_cpu.max(o.milli_cpu),
            memory: self.memory.max(o.memory),
            ephemeral_storage: self.ephemeral_storage.max(o.ephemeral_storage),
        }
    }

    /// Neither CPU, memory nor ephemeral storage is requested.
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0 && self.memory == 0 && self.ephemeral_storage == 0
    }
}

fn container_requests(c: &Container) -> Requests {
    Requests::of(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
}

/// Upstream `PodRequests` for CPU and memory.
pub fn pod_requests(pod: &Pod) -> Requests {
    let overhead = pod.spec.as_ref().and_then(|s| s.overhead.as_ref());
    pod_requests_without_overhead(pod).add(Requests::of(overhead))
}

/// Upstream `GetResourceRequest`: `pods` is 1, `cpu` millicores, `memory` bytes; the
/// overhead counts only when the pod requests some of the resource.
pub fn resource_request(pod: &Pod, resource: &str) -> i64 {
    let overhead = Requests::of(pod.spec.as_ref().and_then(|s| s.overhead.as_ref()));
    let r = pod_requests_without_overhead(pod);
    let with = |v: i64, o: i64| if v == 0 { 0 } else { v.saturating_add(o) };
    match resource {
        "pods" => 1,
        "cpu" => with(r.milli_cpu, overhead.milli_cpu),
        "memory" => with(r.memory, overhead.memory),
        "ephemeral-storage" => with(r.ephemeral_storage, overhead.ephemeral_storage),
        _ => 0,
    }
}

/// Upstream `PodRequests` with `ExcludeOverhead`.
pub fn pod_requests_without_overhead(pod: &Pod) -> Requests {
    let Some(spec) = pod.spec.as_ref() else {
        return Requests::default();
    };
    let mut reqs = spec
        .containers
        .iter()
        .map(container_requests)
        .fold(Requests::default(), Requests::add);
    let mut sidecars = Requests::default();
    let mut init_peak = Requests::default();
    for c in spec.init_containers.iter().flatten() {
        let r = container_requests(c);
        let peak = if c.restart_policy.as_deref() == Some("Always") {
            reqs = reqs.add(r);
            sidecars = sidecars.add(r);
            sidecars
        } else {
            r.add(sidecars)
        };
        init_peak = init_peak.max(peak);
    }
    reqs = reqs.max(init_peak);
    let pod_level = Requests::of(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
    let pod_level_set = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|l| l.contains_key("cpu") || l.contains_key("memory"));
    if pod_level_set {
        let has = |n: &str| {
            spec.resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .is_some_and(|l| l.contains_key(n))
        };
        if has("cpu") {
            reqs.milli_cpu = pod_level.milli_cpu;
        }
        if has("memory") {
            reqs.memory = pod_level.memory;
        }
    }
    reqs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        let v = json!({"metadata": {"name": "p"}, "spec": spec});
        match serde_json::from_value(v) {
            Ok(p) => p,
            Err(e) => unreachable!("{e}"),
        }
    }

    fn c(name: &str, cpu: &str, mem: &str) -> serde_json::Value {
        json!({"name": name, "image": "i", "resources": {"requests": {"cpu": cpu, "memory": mem}}})
    }

    #[test]
    fn containers_add_up_and_init_containers_raise_the_peak() {
        let p = pod(
            json!({"containers": [c("a", "100m", "1Mi"), c("b", "200m", "2Mi")],
                           "initContainers": [c("i", "500m", "1Mi")]}),
        );
        assert_eq!(
            pod_requests(&p),
            Requests {
                milli_cpu: 500,
                memory: 3 << 20,
                ephemeral_storage: 0,
            }
        );
    }

    #[test]
    fn sidecars_add_up_and_count_in_later_init_peaks() {
        let mut side = c("s", "100m", "1Mi");
        side["restartPolicy"] = json!("Always");
        let p = pod(json!({"containers": [c("a", "100m", "1Mi")],
                           "initContainers": [side, c("i", "300m", "1Mi")]}));
        // regular + sidecar = 200m; init peak = 300m + 100m sidecar = 400m.
        assert_eq!(
            pod_requests(&p),
            Requests {
                milli_cpu: 400,
                memory: 2 << 20,
                ephemeral_storage: 0,
            }
        );
    }

    #[test]
    fn pod_level_requests_replace_and_overhead_adds() {
        let p = pod(json!({"containers": [c("a", "100m", "1Mi")],
                           "resources": {"requests": {"cpu": "1"}},
                           "overhead": {"cpu": "10m", "memory": "1Ki"}}));
        assert_eq!(
            pod_requests(&p),
            Requests {
                milli_cpu: 1010,
                memory: (1 << 20) + 1024,
                ephemeral_storage: 0,
            }
        );
        assert!(pod_requests(&pod(json!({"containers": [{"name": "a", "image": "i"}]}))).is_zero());
    }
}
