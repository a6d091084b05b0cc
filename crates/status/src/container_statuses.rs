//! Runtime container statuses → API container statuses (upstream
//! `convertToAPIContainerStatuses` in `kubelet_pods.go`).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, ContainerUser, LinuxContainerUser, Pod as ApiPod,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_container::{ContainerState, PodStatus, Status, should_container_be_restarted};

use crate::phase::{is_running, terminated_exit};
use crate::reason_cache::ReasonCache;
use crate::reasons::{CONTAINER_CREATING, CONTAINER_STATUS_UNKNOWN, POD_INITIALIZING};

/// Inputs of one conversion (regular, init or ephemeral containers).
pub struct ConvertInput<'a> {
    /// The API pod.
    pub pod: &'a ApiPod,
    /// Runtime status.
    pub pod_status: &'a PodStatus,
    /// Previously reported statuses of these containers.
    pub previous: &'a [ContainerStatus],
    /// The container specs.
    pub containers: &'a [Container],
    /// The pod has init containers (default waiting reason `PodInitializing`).
    pub has_init_containers: bool,
    /// These are init containers (order by spec, exit-0 ones are not restarted).
    pub is_init_container: bool,
    /// Last start failures.
    pub reason_cache: &'a ReasonCache,
}

fn time(t: Option<jiff::Timestamp>) -> Option<Time> {
    t.map(Time)
}

fn waiting(reason: &str, message: &str) -> ApiState {
    ApiState {
        waiting: Some(ContainerStateWaiting {
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            message: (!message.is_empty()).then(|| message.to_string()),
        }),
        ..ApiState::default()
    }
}

fn unknown_terminated(message: &str) -> ApiState {
    ApiState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 137,
            reason: Some(CONTAINER_STATUS_UNKNOWN.into()),
            message: Some(message.into()),
            ..ContainerStateTerminated::default()
        }),
        ..ApiState::default()
    }
}

fn is_terminated(s: &ContainerStatus) -> bool {
    terminated_exit(s).is_some()
}

/// One runtime status as an API status (upstream `convertContainerStatus`).
fn convert_one(cs: &Status, old: Option<&ContainerStatus>) -> ContainerStatus {
    let cid = cs.id.to_string();
    let mut restart_count = cs.restart_count;
    let state = match cs.state {
        ContainerState::Running => ApiState {
            running: Some(ContainerStateRunning {
                started_at: time(cs.started_at),
            }),
            ..ApiState::default()
        },
        ContainerState::Created => waiting("", ""),
        ContainerState::Exited => ApiState {
            terminated: Some(ContainerStateTerminated {
                exit_code: cs.exit_code,
                reason: (!cs.reason.is_empty()).then(|| cs.reason.clone()),
                message: (!cs.message.is_empty()).then(|| cs.message.clone()),
                started_at: time(cs.started_at),
                finished_at: time(cs.finished_at),
                container_id: Some(cid.clone()),
                signal: None,
            }),
            ..ApiState::default()
        },
        // Ran before and vanished: "ran and failed", not "never ran".
        ContainerState::Unknown if old.is_some_and(is_running) => {
            restart_count = old.map_or(0, |o| o.restart_count) + 1;
            unknown_terminated("The container could not be located when the pod was terminated")
        }
        ContainerState::Unknown => waiting("", ""),
    };
    ContainerStatus {
        name: cs.name.clone(),
        restart_count,
        image: cs.image.clone(),
        // The digested image ref is historically reported as imageID.
        image_id: cs.image_ref.clone(),
        container_id: Some(cid),
        state: Some(state),
        volume_mounts: old.and_then(|o| o.volume_mounts.clone()),
        ..ContainerStatus::default()
    }
}

/// The identity the runtime reports for the container's first process (upstream
/// `convertContainerStatusUser`).
fn convert_container_status_user(u: &kubelet_container::ContainerUser) -> ContainerUser {
    ContainerUser {
        linux: u.linux.as_ref().map(|l| LinuxContainerUser {
            uid: l.uid,
            gid: l.gid,
            // A Go nil slice: omitted when empty.
            supplemental_groups: (!l.supplemental_groups.is_empty())
                .then(|| l.supplemental_groups.clone()),
        }),
    }
}

/// Below this many milli-CPUs of limit the runtime cannot tell values apart
/// (upstream `cm.MinMilliCPULimit`).
const MIN_MILLI_CPU_LIMIT: i64 = 10;
/// The smallest `cpu.shares` (upstream `cm.MinShares`).
const MIN_SHARES: i64 = 2;

fn milli(q: Option<&Quantity>) -> i64 {
    q.and_then(|q| kubelet_apimachinery::Quantity::parse(&q.0).ok())
        .map_or(0, |q| q.milli_value())
}

/// `status.resources` of a container (upstream `convertContainerStatusResources`): the
/// allocated resources, with the CPU and memory values the runtime reports for a running
/// container (values at or below the runtime's resolution keep the allocated ones), or,
/// when it reports none, the values reported before for the same running container.
fn convert_container_status_resources(
    allocated: &Container,
    status: &ContainerStatus,
    cs: &Status,
    old: Option<&ContainerStatus>,
) -> ResourceRequirements {
    let mut resources = allocated.resources.clone().unwrap_or_default();
    if cs.state != ContainerState::Running {
        return resources;
    }
    let old_resources = old
        .filter(|o| is_running(o) && o.container_id == status.container_id)
        .and_then(|o| o.resources.as_ref());
    let preserve = |name: &str,
                    old_list: Option<&BTreeMap<String, Quantity>>,
                    list: &mut BTreeMap<String, Quantity>| {
        if let Some(q) = old_list.and_then(|l| l.get(name)) {
            list.insert(name.to_string(), q.clone());
        }
    };
    let reported = cs.resources.as_ref();
    if let Some(limits) = resources.limits.as_mut() {
        let old_limits = old_resources.and_then(|r| r.limits.as_ref());
        match reported.and_then(|r| r.cpu_limit.as_ref()) {
            Some(q) => {
                if milli(Some(q)) > MIN_MILLI_CPU_LIMIT
                    || milli(limits.get("cpu")) > MIN_MILLI_CPU_LIMIT
                {
                    limits.insert("cpu".into(), q.clone());
                }
            }
            None => preserve("cpu", old_limits, limits),
        }
        match reported.and_then(|r| r.memory_limit.as_ref()) {
            Some(q) => {
                limits.insert("memory".into(), q.clone());
            }
            None => preserve("memory", old_limits, limits),
        }
    }
    if let Some(requests) = resources.requests.as_mut() {
        let old_requests = old_resources.and_then(|r| r.requests.as_ref());
        match reported.and_then(|r| r.cpu_request.as_ref()) {
            Some(q) => {
                if milli(Some(q)) > MIN_SHARES || milli(requests.get("cpu")) > MIN_SHARES {
                    requests.insert("cpu".into(), q.clone());
                }
            }
            None => preserve("cpu", old_requests, requests),
        }
        match reported.and_then(|r| r.memory_request.as_ref()) {
            Some(q) => {
                requests.insert("memory".into(), q.clone());
            }
            None => preserve("memory", old_requests, requests),
        }
    }
    resources
}

/// Default status of every container: waiting, or the old terminated status,
/// keeping the old restart count and last state.
fn initial_statuses(
    input: &ConvertInput<'_>,
    old: &HashMap<&str, &ContainerStatus>,
) -> HashMap<String, ContainerStatus> {
    let reason = if input.has_init_containers {
        POD_INITIALIZING
    } else {
        CONTAINER_CREATING
    };
    input
        .containers
        .iter()
        .map(|c| {
            let status = match old.get(c.name.as_str()) {
                Some(o) if is_terminated(o) => (*o).clone(),
                o => ContainerStatus {
                    name: c.name.clone(),
                    image: c.image.clone().unwrap_or_default(),
                    state: Some(waiting(reason, "")),
                    restart_count: o.map_or(0, |o| o.restart_count),
                    last_state: o.and_then(|o| o.last_state.clone()),
                    ..ContainerStatus::default()
                },
            };
            (c.name.clone(), status)
        })
        .collect()
}

/// A container that was running before and has no runtime status any more
/// is reported as terminated-unknown in its last state, not as waiting.
fn infer_vanished(
    input: &ConvertInput<'_>,
    old: &HashMap<&str, &ContainerStatus>,
    statuses: &mut HashMap<String, ContainerStatus>,
) {
    let default_reason = if input.has_init_containers {
        POD_INITIALIZING
    } else {
        CONTAINER_CREATING
    };
    for c in input.containers {
        if input
            .pod_status
            .find_container_status_by_name(&c.name)
            .is_some()
        {
            continue;
        }
        let Some(o) = old.get(c.name.as_str()) else {
            continue;
        };
        if is_terminated(o) || !is_running(o) {
            continue;
        }
        let Some(status) = statuses.get_mut(&c.name) else {
            continue;
        };
        let is_default = status
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .is_some_and(|w| w.reason.as_deref() == Some(default_reason));
        let has_last_termination = status
            .last_state
            .as_ref()
            .is_some_and(|l| l.terminated.is_some());
        if !is_default || has_last_termination {
            continue;
        }
        status.last_state = Some(unknown_terminated(
            "The container could not be located when the pod was deleted.  The container used to be Running",
        ));
        if input.pod.metadata.deletion_timestamp.is_none() {
            status.restart_count += 1;
        }
    }
}

/// Containers that will be restarted and failed to start show the cached
/// failure as their waiting reason (`CrashLoopBackOff`, `ErrImagePull`...).
fn apply_start_failures(input: &ConvertInput<'_>, statuses: &mut HashMap<String, ContainerStatus>) {
    let uid = input.pod.metadata.uid.as_deref().unwrap_or_default();
    for c in input.containers {
        if input.is_init_container
            && input
                .pod_status
                .find_container_status_by_name(&c.name)
                .is_some_and(|s| s.state == ContainerState::Exited && s.exit_code == 0)
        {
            continue;
        }
        if !should_container_be_restarted(c, input.pod, input.pod_status) {
            continue;
        }
        let Some(reason) = input.reason_cache.get(uid, &c.name) else {
            continue;
        };
        let Some(status) = statuses.get_mut(&c.name) else {
            continue;
        };
        if status
            .state
            .as_ref()
            .is_some_and(|s| s.terminated.is_some())
        {
            status.last_state = status.state.take();
        }
        status.state = Some(waiting(reason.err.reason(), &reason.message));
    }
}

/// Converts the runtime statuses of `input.containers` into API statuses.
pub fn convert_to_api_container_statuses(input: &ConvertInput<'_>) -> Vec<ContainerStatus> {
    let old: HashMap<&str, &ContainerStatus> = input
        .previous
        .iter()
        .map(|s| (s.name.as_str(), s))
        .collect();
    let mut statuses = initial_statuses(input, &old);
    infer_vanished(input, &old, &mut statuses);

    // Newest instance first; the second newest becomes the last state.
    let mut runtime: Vec<&Status> = input.pod_status.container_statuses.iter().collect();
    runtime.sort_by_key(|s| std::cmp::Reverse(s.created_at));
    let mut seen: HashMap<&str, u8> = HashMap::new();
    for cs in runtime {
        if !statuses.contains_key(&cs.name) {
            continue; // not one of these containers (or the sandbox)
        }
        let count = seen.entry(cs.name.as_str()).or_insert(0);
        if *count >= 2 {
            continue;
        }
        let old_status = old.get(cs.name.as_str()).copied();
        let mut status = convert_one(cs, old_status);
        // The pod is the allocated pod (InPlacePodVerticalScaling, GA).
        if let Some(allocated) = input.containers.iter().find(|c| c.name == cs.name) {
            status.resources = Some(convert_container_status_resources(
                allocated, &status, cs, old_status,
            ));
            status.allocated_resources = allocated
                .resources
                .as_ref()
                .and_then(|r| r.requests.clone());
        }
        // `convertContainerStatusUser` (gate SupplementalGroupsPolicy, GA).
        status.user = cs.user.as_ref().map(convert_container_status_user);
        if *count == 0 {
            statuses.insert(cs.name.clone(), status);
        } else if let Some(newest) = statuses.get_mut(&cs.name) {
            newest.last_state = status.state;
        }
        *count += 1;
    }
    apply_start_failures(input, &mut statuses);

    if input.is_init_container {
        return input
            .containers
            .iter()
            .filter_map(|c| statuses.remove(&c.name))
            .collect();
    }
    let mut out: Vec<ContainerStatus> = statuses.into_values().collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
