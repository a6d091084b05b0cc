//! What the kubelet does when a critical pod does not fit (upstream
//! `pkg/kubelet/preemption/preemption.go` `CriticalPodAdmissionHandler`): resource
//! shortages are not a reason to reject a critical pod (every static pod is critical);
//! instead pods it may preempt are chosen to free the missing amount. When no such set
//! exists, the pod is rejected with `UnexpectedAdmissionError` and upstream's message.

use k8s_openapi::api::core::v1::Pod;
use kubelet_container::QosClass;
use kubelet_container::kubetypes::{is_mirror_pod, is_static_pod};

use crate::predicate::PredicateFailure;
use crate::resources::resource_request;

/// Upstream `scheduling.SystemCriticalPriority`.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// Reason set on a preempted pod (upstream `events.PreemptContainer`).
pub const PREEMPTING_REASON: &str = "Preempting";
/// Message set on a preempted pod.
pub const PREEMPTING_MESSAGE: &str = "Preempted in order to admit critical pod";
/// `DisruptionTarget` condition message of a preempted pod.
pub const PREEMPTED_CONDITION_MESSAGE: &str =
    "Pod was preempted by Kubelet to accommodate a critical pod.";

/// Static and mirror pods, and pods of system-critical priority (upstream `IsCriticalPod`).
pub fn is_critical_pod(pod: &Pod) -> bool {
    is_static_pod(pod)
        || is_mirror_pod(pod)
        || priority(pod).is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
}

fn priority(pod: &Pod) -> Option<i32> {
    pod.spec.as_ref().and_then(|s| s.priority)
}

/// Whether `preemptor` may preempt `preemptee` (upstream `Preemptable`).
pub fn preemptable(preemptor: &Pod, preemptee: &Pod) -> bool {
    if is_critical_pod(preemptor) && !is_critical_pod(preemptee) {
        return true;
    }
    match (priority(preemptor), priority(preemptee)) {
        (Some(a), Some(b)) => a > b,
        _ => false,
    }
}

/// An amount of one resource still missing (upstream `admissionRequirement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionRequirement {
    /// `pods`, `cpu`, `memory`.
    pub resource: &'static str,
    /// Pods, millicores or bytes.
    pub quantity: i64,
}

fn subtract(reqs: &[AdmissionRequirement], pods: &[&Pod]) -> Vec<AdmissionRequirement> {
    reqs.iter()
        .filter_map(|r| {
            let mut q = r.quantity;
            for p in pods {
                q -= resource_request(p, r.resource);
                if q <= 0 {
                    break;
                }
            }
            (q > 0).then_some(AdmissionRequirement {
                resource: r.resource,
                quantity: q,
            })
        })
        .collect()
}

fn distance(reqs: &[AdmissionRequirement], pod: &Pod) -> f64 {
    reqs.iter()
        .map(|r| {
            #[allow(clippy::cast_precision_loss)]
            let remaining = (r.quantity - resource_request(pod, r.resource)) as f64;
            #[allow(clippy::cast_precision_loss)]
            let q = r.quantity as f64;
            if remaining > 0.0 {
                (remaining / q).powi(2)
            } else {
                0.0
            }
        })
        .sum()
}

/// Upstream `admissionRequirementList.toString`.
fn to_string(reqs: &[AdmissionRequirement]) -> String {
    let inner: String = reqs
        .iter()
        .map(|r| format!("(res: {}, q: {}), ", r.resource, r.quantity))
        .collect();
    format!("[{inner}]")
}

/// Upstream `smallerResourceRequest`: memory first, then CPU.
fn smaller_resource_request(a: &Pod, b: &Pod) -> bool {
    for res in ["memory", "cpu"] {
        let (ra, rb) = (resource_request(a, res), resource_request(b, res));
        if ra != rb {
            return ra < rb;
        }
    }
    true
}

fn no_set(reqs: &[AdmissionRequirement]) -> String {
    format!(
        "no set of running pods found to reclaim resources: {}",
        to_string(reqs)
    )
}

/// Upstream `getPodsToPreemptByDistance`.
fn by_distance(
    mut pods: Vec<&Pod>,
    mut reqs: Vec<AdmissionRequirement>,
) -> Result<Vec<&Pod>, String> {
    let mut evict = Vec::new();
    while !reqs.is_empty() {
        if pods.is_empty() {
            return Err(no_set(&reqs));
        }
        #[allow(clippy::cast_precision_loss)]
        let mut best_distance = (reqs.len() + 1) as f64;
        let mut best = 0;
        for (i, p) in pods.iter().enumerate() {
            let d = distance(&reqs, p);
            #[allow(clippy::float_cmp)]
            let tie = d == best_distance
                && pods
                    .get(best)
                    .is_some_and(|b| smaller_resource_request(p, b));
            if d < best_distance || tie {
                best_distance = d;
                best = i;
            }
        }
        let chosen = pods.swap_remove(best);
        reqs = subtract(&reqs, &[chosen]);
        evict.push(chosen);
    }
    Ok(evict)
}

/// Upstream `getPodsToPreempt`: the pods to preempt, best-effort first, so that `reqs`
/// are met; `Err` with upstream's text when no such set exists.
pub fn get_pods_to_preempt<'a>(
    pod: &Pod,
    pods: &[&'a Pod],
    reqs: &[AdmissionRequirement],
) -> Result<Vec<&'a Pod>, String> {
    let (mut best_effort, mut burstable, mut guaranteed) = (Vec::new(), Vec::new(), Vec::new());
    for p in pods.iter().copied().filter(|p| preemptable(pod, p)) {
        match kubelet_container::get_pod_qos(p) {
            QosClass::BestEffort => best_effort.push(p),
            QosClass::Burstable => burstable.push(p),
            QosClass::Guaranteed => guaranteed.push(p),
        }
    }
    let all: Vec<&Pod> = best_effort
        .iter()
        .chain(&burstable)
        .chain(&guaranteed)
        .copied()
        .collect();
    let unmet = subtract(reqs, &all);
    if !unmet.is_empty() {
        return Err(no_set(&unmet));
    }
    let be_bu: Vec<&Pod> = best_effort.iter().chain(&burstable).copied().collect();
    let guaranteed_out = by_distance(guaranteed, subtract(reqs, &be_bu))?;
    let be_g: Vec<&Pod> = best_effort.iter().chain(&guaranteed_out).copied().collect();
    let burstable_out = by_distance(burstable, subtract(reqs, &be_g))?;
    let bu_g: Vec<&Pod> = burstable_out
        .iter()
        .chain(&guaranteed_out)
        .copied()
        .collect();
    let best_effort_out = by_distance(best_effort, subtract(reqs, &bu_g))?;
    Ok(best_effort_out
        .into_iter()
        .chain(burstable_out)
        .chain(guaranteed_out)
        .collect())
}

/// What a failed admission of a critical pod comes to (upstream `HandleAdmissionFailure`).
#[derive(Debug, Clone, PartialEq)]
pub enum FailureOutcome<'a> {
    /// Not critical, or some reason is not a resource shortage: these reasons stand.
    Reject(Vec<PredicateFailure>),
    /// Preempting these pods makes room: the pod is admitted.
    Preempt(Vec<&'a Pod>),
    /// No set of pods to preempt: upstream's error text.
    Error(String),
}

/// Upstream `CriticalPodAdmissionHandler.HandleAdmissionFailure`.
pub fn handle_admission_failure<'a>(
    pod: &Pod,
    failures: Vec<PredicateFailure>,
    other_pods: &[&'a Pod],
) -> FailureOutcome<'a> {
    if !is_critical_pod(pod) {
        return FailureOutcome::Reject(failures);
    }
    let mut non_resource = Vec::new();
    let mut reqs = Vec::new();
    for f in failures {
        match f {
            PredicateFailure::InsufficientResource {
                resource,
                requested,
                used,
                capacity,
            } => reqs.push(AdmissionRequirement {
                resource,
                quantity: requested - (capacity - used),
            }),
            other => non_resource.push(other),
        }
    }
    if !non_resource.is_empty() {
        return FailureOutcome::Reject(non_resource);
    }
    match get_pods_to_preempt(pod, other_pods, &reqs) {
        Ok(pods) => FailureOutcome::Preempt(pods),
        Err(e) => FailureOutcome::Error(format!(
            "preemption: error finding a set of pods to preempt: {e}"
        )),
    }
}

#[cfg(test)]
#[path = "preemption_tests.rs"]
mod tests;
