//! What a sync must do to bring a pod's runtime state to its spec: `computePodActions` and
//! `computeInitContainerActions` (upstream `kuberuntime_manager.go`,
//! `kuberuntime_container.go`); `PodSandboxChanged` (`kuberuntime/util/util.go`) is
//! [`kubelet_container::pod_sandbox_changed`].
//!
//! Pure: the inputs are the API pod, the runtime's pod status and probe results.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::resize::{ActuatedState, compute_pod_resize_action};
use kubelet_container::{
    ContainerId, ContainerState, PodStatus, ProbeResult, ProbeResults, ProbeType, Status, gates,
    hash_container, is_restartable_init_container, pod_sandbox_changed,
    should_container_be_restarted,
};

/// The old name of [`kubelet_container::NoProbeResults`], kept so existing
/// callers build; probe results now live in `kubelet_container::probe_results`.
pub use kubelet_container::NoProbeResults as NoProbes;

/// Why a container is killed (upstream `containerKillReason`); selects the grace period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KillReason {
    /// Failed its startup probe.
    StartupProbe,
    /// Failed its liveness probe.
    LivenessProbe,
    /// Its postStart hook failed.
    FailedPostStartHook,
    /// Anything else (spec change, unknown state, pod termination).
    #[default]
    Unknown,
}

/// A container to stop (upstream `containerToKillInfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerToKill {
    /// Container name.
    pub name: String,
    /// Its spec.
    pub container: Container,
    /// Event message.
    pub message: String,
    /// Why.
    pub reason: KillReason,
}

/// What to do for a pod (upstream `podActions`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodActions {
    /// Stop every container and the sandbox.
    pub kill_pod: bool,
    /// Create a new sandbox (everything is restarted, init containers purged).
    pub create_sandbox: bool,
    /// The existing sandbox to start containers in.
    pub sandbox_id: String,
    /// Sandbox attempt number.
    pub attempt: u32,
    /// Indexes into `spec.initContainers` to start, in order.
    pub init_containers_to_start: Vec<usize>,
    /// Indexes into `spec.containers` to start.
    pub containers_to_start: Vec<usize>,
    /// Running containers to stop first.
    pub containers_to_kill: BTreeMap<ContainerId, ContainerToKill>,
    /// Indexes into `spec.ephemeralContainers` to start.
    pub ephemeral_containers_to_start: Vec<usize>,
    /// Running containers resized in place, per resource (`cpu`, `memory`), in update order
    /// (upstream `ContainersToUpdate`).
    pub containers_to_update: BTreeMap<String, Vec<crate::resize::ContainerToUpdate>>,
    /// A container is restarted to be resized (upstream `UpdatePodResources`).
    pub update_pod_resources: bool,
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

fn should_restart_on_failure(pod: &Pod) -> bool {
    restart_policy(pod) != "Never"
}

/// With `ContainerRestartRules`, the container-level policy when set, else `pod_decision`
/// (the probe-failure and unknown-state paths: no exit code for the rules to match).
fn container_level_restart(container: &Container, pod_decision: bool) -> bool {
    match container.restart_policy.as_deref() {
        Some(policy) if gates::container_restart_rules() => policy != "Never",
        _ => pod_decision,
    }
}

fn container_succeeded(c: &Container, status: &PodStatus) -> bool {
    status
        .find_container_status_by_name(&c.name)
        .is_some_and(|s| s.state == ContainerState::Exited && s.exit_code == 0)
}

/// `isInitContainerFailed`.
pub fn is_init_container_failed(s: &Status) -> bool {
    s.reason == "OOMKilled"
        || (s.state == ContainerState::Exited && s.exit_code != 0)
        || s.state == ContainerState::Unknown
}

/// `containerChanged`: the spec hash differs from the one recorded at creation.
pub fn container_changed(c: &Container, s: &Status) -> bool {
    hash_container(c) != s.hash
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default()
}

fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
}

/// `hasAnyRegularContainerCreated`.
fn has_any_regular_container_created(pod: &Pod, status: &PodStatus) -> bool {
    containers(pod).iter().any(|c| {
        status
            .find_container_status_by_name(&c.name)
            .is_some_and(|s| {
                matches!(
                    s.state,
                    ContainerState::Created | ContainerState::Running | ContainerState::Exited
                )
            })
    })
}

fn kill(container: &Container, message: String, reason: KillReason) -> ContainerToKill {
    ContainerToKill {
        name: container.name.clone(),
        container: container.clone(),
        message,
        reason,
    }
}

/// `computePodActions`; `actuated` holds the resources last applied to running containers
/// (in-place resize, [`crate::resize::compute_pod_resize_action`]).
pub fn compute_pod_actions(
    pod: &Pod,
    status: &PodStatus,
    probes: &dyn ProbeResults,
    actuated: &ActuatedState,
) -> PodActions {
    let (create_sandbox, attempt, sandbox_id) = pod_sandbox_changed(pod, status);
    let mut changes = PodActions {
        kill_pod: create_sandbox,
        create_sandbox,
        sandbox_id,
        attempt,
        ..PodActions::default()
    };
    if create_sandbox {
        return sandbox_recreation_actions(pod, status, changes);
    }

    // Ephemeral containers are never restarted and may start before initialization ends.
    for (i, ec) in pod
        .spec
        .iter()
        .flat_map(|s| s.ephemeral_containers.iter().flatten())
        .enumerate()
    {
        if status.find_container_status_by_name(&ec.name).is_none() {
            changes.ephemeral_containers_to_start.push(i);
        }
    }

    let initialized = compute_init_container_actions(pod, status, probes, &mut changes);
    if changes.kill_pod || !initialized {
        return changes;
    }

    let mut keep_count = 0;
    for (idx, container) in containers(pod).iter().enumerate() {
        let cs = status.find_container_status_by_name(&container.name);
        let Some(cs) = cs.filter(|s| s.state == ContainerState::Running) else {
            if should_container_be_restarted(container, pod, status) {
                changes.containers_to_start.push(idx);
                if let Some(cs) = cs.filter(|s| s.state == ContainerState::Unknown) {
                    let msg = format!(
                        "Container is in {:?} state, try killing it before restart",
                        cs.state.as_str()
                    );
                    changes
                        .containers_to_kill
                        .insert(cs.id.clone(), kill(container, msg, KillReason::Unknown));
                }
            }
            continue;
        };
        // For probe failures only the container-level policy counts: the rules are not
        // evaluated while the container runs.
        let mut restart = container_level_restart(container, should_restart_on_failure(pod));
        let (message, reason) = if container_changed(container, cs) {
            // Restart regardless of the restart policy because the spec changed.
            restart = true;
            (
                format!("Container {} definition changed", container.name),
                KillReason::Unknown,
            )
        } else if probes.get(ProbeType::Liveness, &cs.id) == Some(ProbeResult::Failure) {
            (
                format!("Container {} failed liveness probe", container.name),
                KillReason::LivenessProbe,
            )
        } else if probes.get(ProbeType::Startup, &cs.id) == Some(ProbeResult::Failure) {
            (
                format!("Container {} failed startup probe", container.name),
                KillReason::StartupProbe,
            )
        } else if compute_pod_resize_action(pod, idx, container, cs, actuated, &mut changes) {
            keep_count += 1;
            continue;
        } else {
            // The resize policy restarts this container (queued by computePodResizeAction).
            continue;
        };
        let message = if restart {
            changes.containers_to_start.push(idx);
            format!("{message}, will be restarted")
        } else {
            message
        };
        changes
            .containers_to_kill
            .insert(cs.id.clone(), kill(container, message, reason));
    }

    if keep_count == 0 && changes.containers_to_start.is_empty() {
        changes.kill_pod = true;
        // Sidecars alone must not keep the pod alive.
        changes.init_containers_to_start.clear();
    }
    changes
}

/// The branch of `computePodActions` taken when the sandbox must be (re)created.
fn sandbox_recreation_actions(
    pod: &Pod,
    status: &PodStatus,
    mut changes: PodActions,
) -> PodActions {
    if !should_restart_on_failure(pod)
        && changes.attempt != 0
        && !status.container_statuses.is_empty()
    {
        // Everything ran and must not be restarted: just make sure the pod is dead.
        changes.create_sandbox = false;
        return changes;
    }
    // Containers that ran once successfully are not started again (OnFailure).
    let run_once = |c: &Container| match c.restart_policy.as_deref() {
        Some(policy) if gates::container_restart_rules() => policy == "OnFailure",
        _ => restart_policy(pod) == "OnFailure",
    };
    let to_start: Vec<usize> = containers(pod)
        .iter()
        .enumerate()
        .filter(|(_, c)| !(run_once(c) && container_succeeded(c, status)))
        .map(|(i, _)| i)
        .collect();
    if to_start.is_empty() && has_any_regular_container_created(pod, status) {
        changes.create_sandbox = false;
        return changes;
    }
    if !init_containers(pod).is_empty() {
        changes.init_containers_to_start = vec![0];
        return changes;
    }
    changes.containers_to_start = to_start;
    changes
}

/// `computeInitContainerActions` (sidecar-aware): fills init containers to start and sidecars
/// to kill; returns whether the pod is initialized.
pub fn compute_init_container_actions(
    pod: &Pod,
    status: &PodStatus,
    probes: &dyn ProbeResults,
    changes: &mut PodActions,
) -> bool {
    let inits = init_containers(pod);
    if inits.is_empty() {
        return true;
    }
    // A created or running regular container means initialization happened before
    // (its init containers may have been garbage-collected since).
    let mut initialized = containers(pod).iter().any(|c| {
        status
            .find_container_status_by_name(&c.name)
            .is_some_and(|s| matches!(s.state, ContainerState::Created | ContainerState::Running))
    });
    let mut previously_initialized = initialized;
    let restart_on_failure = should_restart_on_failure(pod);
    let last = inits.len() - 1;

    // Walk backwards: the newest init container that ran tells where initialization is.
    for (i, container) in inits.iter().enumerate().rev() {
        let sidecar = is_restartable_init_container(container);
        let Some(s) = status.find_container_status_by_name(&container.name) else {
            if previously_initialized && sidecar {
                changes.init_containers_to_start.push(i);
            }
            continue;
        };
        if previously_initialized && !sidecar {
            continue;
        }
        match s.state {
            ContainerState::Created => changes.init_containers_to_start.push(i),
            ContainerState::Running if sidecar => {
                if container.startup_probe.is_some() {
                    match probes.get(ProbeType::Startup, &s.id) {
                        None | Some(ProbeResult::Unknown) => {
                            mark_seen(&mut previously_initialized);
                            continue;
                        }
                        Some(ProbeResult::Failure) => {
                            let msg =
                                format!("Init container {} failed startup probe", container.name);
                            changes.containers_to_kill.insert(
                                s.id.clone(),
                                kill(container, msg, KillReason::StartupProbe),
                            );
                            changes.init_containers_to_start.push(i);
                            mark_seen(&mut previously_initialized);
                            continue;
                        }
                        Some(ProbeResult::Success) => {}
                    }
                }
                if i == last {
                    initialized = true;
                } else if !previously_initialized {
                    changes.init_containers_to_start.push(i + 1);
                }
                if container_changed(container, s) {
                    let msg = format!("Init container {} definition changed", container.name);
                    changes
                        .containers_to_kill
                        .insert(s.id.clone(), kill(container, msg, KillReason::Unknown));
                    changes.init_containers_to_start.push(i);
                } else if container.liveness_probe.is_some()
                    && probes.get(ProbeType::Liveness, &s.id) == Some(ProbeResult::Failure)
                {
                    let msg = format!("Init container {} failed liveness probe", container.name);
                    changes.containers_to_kill.insert(
                        s.id.clone(),
                        kill(container, msg, KillReason::LivenessProbe),
                    );
                    changes.init_containers_to_start.push(i);
                }
            }
            // A regular init container still running: wait for it.
            ContainerState::Running => {}
            ContainerState::Exited if sidecar => changes.init_containers_to_start.push(i),
            ContainerState::Exited => {
                if is_init_container_failed(s) {
                    // ContainerRestartRules: the init container's own rules and policy.
                    let restart_on_failure = if gates::container_restart_rules() {
                        should_container_be_restarted(container, pod, status)
                    } else {
                        restart_on_failure
                    };
                    if !restart_on_failure {
                        changes.kill_pod = true;
                        changes.init_containers_to_start.clear();
                        return false;
                    }
                    changes.init_containers_to_start.push(i);
                } else if i == last {
                    initialized = true;
                } else {
                    changes.init_containers_to_start.push(i + 1);
                }
            }
            ContainerState::Unknown => {
                if !sidecar && !container_level_restart(container, restart_on_failure) {
                    changes.kill_pod = true;
                    changes.init_containers_to_start.clear();
                    return false;
                }
                let msg = format!(
                    "Init container is in {:?} state, try killing it before restart",
                    s.state.as_str()
                );
                changes
                    .containers_to_kill
                    .insert(s.id.clone(), kill(container, msg, KillReason::Unknown));
                changes.init_containers_to_start.push(i);
            }
        }
        mark_seen(&mut previously_initialized);
    }
    if !previously_initialized {
        changes.init_containers_to_start.push(0);
    }
    // The loop ran backwards; start in spec order.
    changes.init_containers_to_start.reverse();
    initialized
}

fn mark_seen(previously_initialized: &mut bool) {
    *previously_initialized = true;
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
