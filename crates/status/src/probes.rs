//! Started/ready flags of container statuses from probe results (upstream
//! `prober_manager.go UpdatePodStatus`). The prober is a later subsystem; it
//! plugs in through [`kubelet_container::ProbeResults`] (startup and
//! readiness results here). Until it has a result, a container with a probe
//! in its spec is not started/ready, one without is (upstream: a probe worker
//! exists iff the spec has the probe).

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod as ApiPod, PodStatus as ApiPodStatus,
};

use kubelet_container::{
    ContainerId, ProbeResult, ProbeResults, ProbeType, is_restartable_init_container,
};

use crate::phase::{is_running, terminated_exit};

/// The latest `probe` result of the container behind an API status (upstream
/// `ParseContainerID(status.ContainerID)`; an unparsable ID has no result).
fn probe_result(
    probes: &dyn ProbeResults,
    probe: ProbeType,
    s: &ContainerStatus,
) -> Option<ProbeResult> {
    let id: ContainerId = s.container_id.as_deref()?.parse().ok()?;
    probes.get(probe, &id)
}

fn started(spec: Option<&Container>, s: &ContainerStatus, probes: &dyn ProbeResults) -> bool {
    if !is_running(s) {
        return false;
    }
    match probe_result(probes, ProbeType::Startup, s) {
        Some(result) => result == ProbeResult::Success,
        None => spec.is_none_or(|c| c.startup_probe.is_none()),
    }
}

fn ready(spec: Option<&Container>, s: &ContainerStatus, probes: &dyn ProbeResults) -> bool {
    match probe_result(probes, ProbeType::Readiness, s) {
        Some(ProbeResult::Success) => true,
        _ => spec.is_none_or(|c| c.readiness_probe.is_none()),
    }
}

/// Sets `started` and `ready` on regular and init container statuses.
pub fn update_probe_status(pod: &ApiPod, status: &mut ApiPodStatus, probes: &dyn ProbeResults) {
    let spec = pod.spec.as_ref();
    let find = |list: Option<&Vec<Container>>, name: &str| {
        list.and_then(|l| l.iter().find(|c| c.name == name))
            .cloned()
    };
    for s in status.container_statuses.iter_mut().flatten() {
        let c = find(spec.map(|s| &s.containers), &s.name);
        let is_started = started(c.as_ref(), s, probes);
        s.started = Some(is_started);
        s.ready = is_started && ready(c.as_ref(), s, probes);
    }
    for s in status.init_container_statuses.iter_mut().flatten() {
        let c = find(spec.and_then(|s| s.init_containers.as_ref()), &s.name);
        let is_started = started(c.as_ref(), s, probes);
        s.started = Some(is_started);
        let sidecar = c.as_ref().is_some_and(is_restartable_init_container);
        s.ready = if sidecar {
            is_started && ready(c.as_ref(), s, probes)
        } else {
            terminated_exit(s) == Some(0)
        };
    }
}
