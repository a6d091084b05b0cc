//! The API pod status from the API pod and the runtime status (upstream
//! `generateAPIPodStatus` and `convertStatusToAPIStatus` in `kubelet_pods.go`).

use std::net::IpAddr;

use k8s_openapi::api::core::v1::{
    Container, HostIP, Pod as ApiPod, PodCondition, PodIP, PodStatus as ApiPodStatus,
};
use kubelet_container::{PodStatus, ProbeResults, get_pod_qos, is_host_network_pod};

use crate::conditions::{
    containers_ready_condition, not_owned_by_kubelet, pod_initialized_condition,
    pod_ready_condition, pod_ready_to_start_containers_condition, pod_scheduled_condition,
};
use crate::container_statuses::{ConvertInput, convert_to_api_container_statuses};
use crate::phase::get_phase;
use crate::probes::update_probe_status;
use crate::reason_cache::ReasonCache;
use crate::reasons::{condition, phase};

/// Everything besides the pods that status generation reads.
pub struct GenerateOptions<'a> {
    /// The status manager's latest status for the pod (else the API pod's status is used).
    pub old_status: Option<&'a ApiPodStatus>,
    /// Last container start failures.
    pub reason_cache: &'a ReasonCache,
    /// Probe results.
    pub probes: &'a dyn ProbeResults,
    /// Node IPs, primary first (hostIP(s); pod IPs of host-network pods).
    pub host_ips: &'a [String],
    /// The kubelet decided the pod will not run again (terminating/terminated).
    pub pod_is_terminal: bool,
    /// The in-place resize conditions to report (upstream `determinePodResizeStatus`,
    /// [`crate::StatusManager::determine_pod_resize_status`]).
    pub resize_conditions: &'a [PodCondition],
}

fn is_ipv6(ip: &str) -> bool {
    ip.parse::<IpAddr>().is_ok_and(|a| a.is_ipv6())
}

/// First pod IP of the node's family, then the first of the other family
/// (upstream `sortPodIPs`).
pub fn sort_pod_ips(pod_ips: &[String], host_ips: &[String]) -> Vec<String> {
    let primary_v6 = host_ips.first().is_some_and(|ip| is_ipv6(ip));
    let first = |v6: bool| {
        pod_ips
            .iter()
            .find(|ip| ip.parse::<IpAddr>().is_ok_and(|a| a.is_ipv6() == v6))
            .cloned()
    };
    first(primary_v6)
        .into_iter()
        .chain(first(!primary_v6))
        .collect()
}

fn container_statuses(
    pod: &ApiPod,
    pod_status: &PodStatus,
    old: &ApiPodStatus,
    reason_cache: &ReasonCache,
    s: &mut ApiPodStatus,
) {
    let Some(spec) = pod.spec.as_ref() else {
        return;
    };
    let init = spec.init_containers.clone().unwrap_or_default();
    let ephemeral: Vec<Container> = spec
        .ephemeral_containers
        .iter()
        .flatten()
        .map(|e| Container {
            name: e.name.clone(),
            image: e.image.clone(),
            ..Container::default()
        })
        .collect();
    let convert = |previous: &Option<Vec<_>>, containers: &[Container], is_init| {
        convert_to_api_container_statuses(&ConvertInput {
            pod,
            pod_status,
            previous: previous.as_deref().unwrap_or_default(),
            containers,
            has_init_containers: !init.is_empty(),
            is_init_container: is_init,
            reason_cache,
        })
    };
    s.container_statuses = Some(convert(&old.container_statuses, &spec.containers, false));
    s.init_container_statuses =
        (!init.is_empty()).then(|| convert(&old.init_container_statuses, &init, true));
    s.ephemeral_container_statuses = (!ephemeral.is_empty())
        .then(|| convert(&old.ephemeral_container_statuses, &ephemeral, false));
}

/// Terminal phases are sticky: keep a terminal phase recorded by the status
/// manager or the apiserver, and preserve reason/message of an unchanged phase.
fn merge_phase(s: &mut ApiPodStatus, old: &ApiPodStatus, api: &ApiPodStatus) {
    let old_phase = old.phase.as_deref().unwrap_or_default();
    let api_phase = api.phase.as_deref().unwrap_or_default();
    if !s.phase.as_deref().is_some_and(phase::is_terminal) {
        if phase::is_terminal(old_phase) {
            s.phase = old.phase.clone();
        } else if phase::is_terminal(api_phase) {
            s.phase = api.phase.clone();
        }
    }
    if s.phase == old.phase {
        s.reason = old
            .reason
            .clone()
            .filter(|r| !r.is_empty())
            .or_else(|| api.reason.clone());
        s.message = old
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .or_else(|| api.message.clone());
    }
    if phase::is_terminal(api_phase) && s.phase.as_deref() != Some(api_phase) {
        tracing::error!(from = api_phase, to = ?s.phase, "pod attempted illegal phase transition");
        s.phase = api.phase.clone();
    }
}

fn conditions(
    pod: &ApiPod,
    pod_status: &PodStatus,
    old: &ApiPodStatus,
    api: &ApiPodStatus,
    s: &ApiPodStatus,
    resize_conditions: &[PodCondition],
) -> Vec<PodCondition> {
    let mut out = not_owned_by_kubelet(api);
    out.extend(resize_conditions.iter().cloned());
    if let Some(disruption) = old
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == condition::DISRUPTION_TARGET)
    {
        out.retain(|c| c.type_ != condition::DISRUPTION_TARGET);
        out.push(disruption.clone());
    }
    let default_spec = Default::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let all: Vec<_> = s
        .init_container_statuses
        .iter()
        .flatten()
        .chain(s.container_statuses.iter().flatten())
        .cloned()
        .collect();
    let pod_phase = s.phase.as_deref().unwrap_or(phase::PENDING);
    let generation = pod.metadata.generation;
    let mut owned = vec![
        pod_ready_to_start_containers_condition(pod, pod_status),
        pod_initialized_condition(spec, &all, pod_phase),
    ];
    owned.push(pod_ready_condition(spec, &out, &all, pod_phase));
    owned.push(containers_ready_condition(spec, &all, pod_phase));
    owned.push(pod_scheduled_condition());
    out.extend(owned.into_iter().map(|c| PodCondition {
        observed_generation: generation,
        ..c
    }));
    out
}

fn set_ips(pod: &ApiPod, s: &mut ApiPodStatus, pod_status: &PodStatus, host_ips: &[String]) {
    let ips = sort_pod_ips(&pod_status.ips, host_ips);
    s.pod_ip = ips.first().cloned();
    s.pod_ips = (!ips.is_empty()).then(|| ips.iter().map(|ip| PodIP { ip: ip.clone() }).collect());
    let Some(primary) = host_ips.first() else {
        return;
    };
    s.host_ip = Some(primary.clone());
    s.host_ips = Some(
        host_ips
            .iter()
            .take(2)
            .map(|ip| HostIP { ip: ip.clone() })
            .collect(),
    );
    if is_host_network_pod(pod) {
        if s.pod_ip.is_none() {
            s.pod_ip = Some(primary.clone());
            s.pod_ips = Some(vec![PodIP {
                ip: primary.clone(),
            }]);
        }
        if let (Some(secondary), Some(pod_ips)) = (host_ips.get(1), s.pod_ips.as_mut())
            && pod_ips.len() == 1
            && is_ipv6(&pod_ips[0].ip) != is_ipv6(secondary)
        {
            pod_ips.push(PodIP {
                ip: secondary.clone(),
            });
        }
    }
}

/// The status the kubelet reports for `pod` given the runtime's view
/// (upstream `generateAPIPodStatus`). `startTime` and condition transition
/// times are filled by the [`crate::StatusManager`].
pub fn generate_api_pod_status(
    pod: &ApiPod,
    pod_status: &PodStatus,
    opts: &GenerateOptions<'_>,
) -> ApiPodStatus {
    let api = pod.status.clone().unwrap_or_default();
    let old = opts.old_status.cloned().unwrap_or_else(|| api.clone());
    let mut s = ApiPodStatus {
        qos_class: Some(get_pod_qos(pod).as_str().to_owned()),
        start_time: old.start_time.clone(),
        ..ApiPodStatus::default()
    };
    container_statuses(pod, pod_status, &old, opts.reason_cache, &mut s);
    update_probe_status(pod, &mut s, opts.probes);
    let all: Vec<_> = s
        .container_statuses
        .iter()
        .flatten()
        .chain(s.init_container_statuses.iter().flatten())
        .cloned()
        .collect();
    s.phase = Some(get_phase(pod, &all, opts.pod_is_terminal).to_string());
    merge_phase(&mut s, &old, &api);
    s.conditions = Some(conditions(
        pod,
        pod_status,
        &old,
        &api,
        &s,
        opts.resize_conditions,
    ));
    set_ips(pod, &mut s, pod_status, opts.host_ips);
    s.observed_generation = pod.metadata.generation;
    s
}
