//! Kubelet-owned pod conditions (upstream `pkg/kubelet/status/generate.go`).

use k8s_openapi::api::core::v1::{
    ContainerStatus, Pod as ApiPod, PodCondition, PodSpec, PodStatus as ApiPodStatus,
};
use kubelet_container::{PodStatus, is_restartable_init_container, pod_sandbox_changed};

use crate::phase::{find_status, has_any_regular_container_started};
use crate::reasons::{
    CONTAINERS_NOT_INITIALIZED, CONTAINERS_NOT_READY, POD_COMPLETED, POD_FAILED,
    READINESS_GATES_NOT_READY, condition, phase,
};

fn cond(type_: &str, status: bool, reason: &str, message: String) -> PodCondition {
    PodCondition {
        type_: type_.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then_some(message),
        ..PodCondition::default()
    }
}

/// The conditions of `status` the kubelet does not own (kept from the API object by
/// `generateAPIPodStatus` and `mergePodStatus`).
pub fn not_owned_by_kubelet(status: &ApiPodStatus) -> Vec<PodCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .filter(|c| !condition::owned_by_kubelet(&c.type_))
        .cloned()
        .collect()
}

/// Go's `fmt` rendering of a string slice: `[a b]`.
fn go_list(names: &[&str]) -> String {
    format!("[{}]", names.join(" "))
}

fn messages(unknown: &[&str], other_label: &str, other: &[&str]) -> String {
    let mut parts = Vec::new();
    if !unknown.is_empty() {
        parts.push(format!(
            "containers with unknown status: {}",
            go_list(unknown)
        ));
    }
    if !other.is_empty() {
        parts.push(format!(
            "containers with {other_label} status: {}",
            go_list(other)
        ));
    }
    parts.join(", ")
}

/// `ContainersReady`: every regular container and sidecar is ready
/// (upstream `GenerateContainersReadyCondition`).
pub fn containers_ready_condition(
    spec: &PodSpec,
    statuses: &[ContainerStatus],
    pod_phase: &str,
) -> PodCondition {
    let mut unknown = Vec::new();
    let mut unready = Vec::new();
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| is_restartable_init_container(c));
    for c in sidecars.chain(spec.containers.iter()) {
        match find_status(statuses, &c.name) {
            Some(s) if !s.ready => unready.push(c.name.as_str()),
            Some(_) => {}
            None => unknown.push(c.name.as_str()),
        }
    }
    if (pod_phase == phase::SUCCEEDED && unknown.is_empty()) || pod_phase == phase::FAILED {
        let reason = if pod_phase == phase::FAILED {
            POD_FAILED
        } else {
            POD_COMPLETED
        };
        return cond(condition::CONTAINERS_READY, false, reason, String::new());
    }
    let message = messages(&unknown, "unready", &unready);
    if message.is_empty() {
        return cond(condition::CONTAINERS_READY, true, "", String::new());
    }
    cond(
        condition::CONTAINERS_READY,
        false,
        CONTAINERS_NOT_READY,
        message,
    )
}

/// `Ready`: containers ready and every readiness gate condition true
/// (upstream `GeneratePodReadyCondition`).
pub fn pod_ready_condition(
    spec: &PodSpec,
    conditions: &[PodCondition],
    statuses: &[ContainerStatus],
    pod_phase: &str,
) -> PodCondition {
    let containers = containers_ready_condition(spec, statuses, pod_phase);
    if containers.status != "True" {
        return PodCondition {
            type_: condition::READY.to_string(),
            ..containers
        };
    }
    let unready: Vec<String> = spec
        .readiness_gates
        .iter()
        .flatten()
        .filter_map(
            |gate| match conditions.iter().find(|c| c.type_ == gate.condition_type) {
                None => Some(format!(
                    "corresponding condition of pod readiness gate {:?} does not exist.",
                    gate.condition_type
                )),
                Some(c) if c.status != "True" => Some(format!(
                    "the status of pod readiness gate {:?} is not \"True\", but {}",
                    gate.condition_type, c.status
                )),
                Some(_) => None,
            },
        )
        .collect();
    if unready.is_empty() {
        return cond(condition::READY, true, "", String::new());
    }
    cond(
        condition::READY,
        false,
        READINESS_GATES_NOT_READY,
        unready.join(", "),
    )
}

/// `Initialized`: every init container completed (sidecars: started)
/// (upstream `GeneratePodInitializedCondition`).
pub fn pod_initialized_condition(
    spec: &PodSpec,
    statuses: &[ContainerStatus],
    pod_phase: &str,
) -> PodCondition {
    let mut unknown = Vec::new();
    let mut incomplete = Vec::new();
    for c in spec.init_containers.iter().flatten() {
        let Some(s) = find_status(statuses, &c.name) else {
            unknown.push(c.name.as_str());
            continue;
        };
        let done = if is_restartable_init_container(c) {
            s.started == Some(true)
        } else {
            s.ready
        };
        if !done {
            incomplete.push(c.name.as_str());
        }
    }
    if pod_phase == phase::SUCCEEDED && unknown.is_empty() {
        return cond(condition::INITIALIZED, true, POD_COMPLETED, String::new());
    }
    // A started regular container means the pod was initialized before
    // (sidecars may be restarting now).
    if has_any_regular_container_started(spec, statuses) {
        return cond(condition::INITIALIZED, true, "", String::new());
    }
    let message = messages(&unknown, "incomplete", &incomplete);
    if message.is_empty() {
        return cond(condition::INITIALIZED, true, "", String::new());
    }
    cond(
        condition::INITIALIZED,
        false,
        CONTAINERS_NOT_INITIALIZED,
        message,
    )
}

/// `PodReadyToStartContainers`: a ready sandbox with networking exists
/// (upstream `GeneratePodReadyToStartContainersCondition`).
pub fn pod_ready_to_start_containers_condition(
    pod: &ApiPod,
    pod_status: &PodStatus,
) -> PodCondition {
    let (needs_new_sandbox, ..) = pod_sandbox_changed(pod, pod_status);
    cond(
        condition::POD_READY_TO_START_CONTAINERS,
        !needs_new_sandbox,
        "",
        String::new(),
    )
}

/// `PodScheduled`: always true on the node.
pub fn pod_scheduled_condition() -> PodCondition {
    cond(condition::POD_SCHEDULED, true, "", String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodReadinessGate};

    fn spec(init: &[(&str, bool)], containers: &[&str]) -> PodSpec {
        PodSpec {
            init_containers: Some(
                init.iter()
                    .map(|(n, sidecar)| Container {
                        name: n.to_string(),
                        restart_policy: sidecar.then(|| "Always".into()),
                        ..Container::default()
                    })
                    .collect(),
            ),
            containers: containers
                .iter()
                .map(|n| Container {
                    name: n.to_string(),
                    ..Container::default()
                })
                .collect(),
            ..PodSpec::default()
        }
    }

    fn status(name: &str, ready: bool, started: Option<bool>) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            ready,
            started,
            ..ContainerStatus::default()
        }
    }

    #[test]
    fn containers_ready_cases() {
        let s = spec(&[("side", true), ("init", false)], &["a", "b"]);
        let c = containers_ready_condition(
            &s,
            &[status("a", true, None), status("side", false, None)],
            phase::RUNNING,
        );
        assert_eq!(c.status, "False");
        assert_eq!(c.reason.as_deref(), Some(CONTAINERS_NOT_READY));
        assert_eq!(
            c.message.as_deref(),
            Some("containers with unknown status: [b], containers with unready status: [side]")
        );
        let all = [
            status("a", true, None),
            status("b", true, None),
            status("side", true, None),
        ];
        assert_eq!(
            containers_ready_condition(&s, &all, phase::RUNNING).status,
            "True"
        );
        assert_eq!(
            containers_ready_condition(&s, &all, phase::FAILED)
                .reason
                .as_deref(),
            Some(POD_FAILED)
        );
        assert_eq!(
            containers_ready_condition(&s, &all, phase::SUCCEEDED)
                .reason
                .as_deref(),
            Some(POD_COMPLETED)
        );
    }

    #[test]
    fn ready_checks_readiness_gates() {
        let mut s = spec(&[], &["a"]);
        s.readiness_gates = Some(vec![PodReadinessGate {
            condition_type: "example.com/lb".into(),
        }]);
        let statuses = [status("a", true, None)];
        let c = pod_ready_condition(&s, &[], &statuses, phase::RUNNING);
        assert_eq!(c.reason.as_deref(), Some(READINESS_GATES_NOT_READY));
        assert_eq!(
            c.message.as_deref(),
            Some(
                "corresponding condition of pod readiness gate \"example.com/lb\" does not exist."
            )
        );
        let gate = cond("example.com/lb", true, "", String::new());
        assert_eq!(
            pod_ready_condition(&s, &[gate], &statuses, phase::RUNNING).status,
            "True"
        );
        let not_ready = pod_ready_condition(&s, &[], &[status("a", false, None)], phase::RUNNING);
        assert_eq!(
            (not_ready.type_.as_str(), not_ready.reason.as_deref()),
            (condition::READY, Some(CONTAINERS_NOT_READY))
        );
    }

    #[test]
    fn initialized_cases() {
        let s = spec(&[("init", false), ("side", true)], &["a"]);
        let c = pod_initialized_condition(
            &s,
            &[
                status("init", true, None),
                status("side", true, Some(false)),
            ],
            phase::PENDING,
        );
        assert_eq!(c.status, "False");
        assert_eq!(
            c.message.as_deref(),
            Some("containers with incomplete status: [side]")
        );
        let done = [
            status("init", true, None),
            status("side", false, Some(true)),
        ];
        assert_eq!(
            pod_initialized_condition(&s, &done, phase::PENDING).status,
            "True"
        );
        assert_eq!(
            pod_initialized_condition(&spec(&[], &["a"]), &[], phase::PENDING).status,
            "True",
            "no init containers"
        );
    }
}
