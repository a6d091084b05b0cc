//! Started/ready flags of container statuses from probe results (upstream
//! `prober_manager.go UpdatePodStatus`). The prober is a later subsystem; it
//! plugs in through [`ProbeResults`]. Until it has a result, a container
//! with a probe in its spec is not started/ready, one without is (upstream:
//! a probe worker exists iff the spec has the probe).

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod as ApiPod, PodStatus as ApiPodStatus,
};

use crate::phase::is_restartable_init_container;

/// Latest probe results by runtime container ID (`type://id`).
pub trait ProbeResults: Send + Sync {
    /// Startup probe result, `None` when there is none yet.
    fn startup(&self, container_id: &str) -> Option<bool>;
    /// Readiness probe result, `None` when there is none yet.
    fn readiness(&self, container_id: &str) -> Option<bool>;
}

/// No prober: only the spec decides.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProbeResults;

impl ProbeResults for NoProbeResults {
    fn startup(&self, _: &str) -> Option<bool> {
        None
    }
    fn readiness(&self, _: &str) -> Option<bool> {
        None
    }
}

fn running(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.running.is_some())
}

fn started(spec: Option<&Container>, s: &ContainerStatus, probes: &dyn ProbeResults) -> bool {
    if !running(s) {
        return false;
    }
    let id = s.container_id.as_deref().unwrap_or_default();
    probes
        .startup(id)
        .unwrap_or_else(|| spec.is_none_or(|c| c.startup_probe.is_none()))
}

fn ready(spec: Option<&Container>, s: &ContainerStatus, probes: &dyn ProbeResults) -> bool {
    let id = s.container_id.as_deref().unwrap_or_default();
    match probes.readiness(id) {
        Some(true) => true,
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
            s.state
                .as_ref()
                .and_then(|st| st.terminated.as_ref())
                .is_some_and(|t| t.exit_code == 0)
        };
    }
}
