//! Pod phase from container statuses (upstream `getPhase` in `kubelet_pods.go`).

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod as ApiPod, PodSpec};
use kubelet_container::kubetypes::is_static_pod;
use kubelet_container::{container_should_restart, gates, is_restartable_init_container};

use crate::reasons::phase;

/// Status with this container name.
pub fn find_status<'a>(statuses: &'a [ContainerStatus], name: &str) -> Option<&'a ContainerStatus> {
    statuses.iter().find(|s| s.name == name)
}

/// The container is running.
pub(crate) fn is_running(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.running.is_some())
}

/// Exit code when the container is terminated.
pub(crate) fn terminated_exit(s: &ContainerStatus) -> Option<i32> {
    s.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code)
}

fn waiting(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.waiting.is_some())
}

fn last_terminated_exit(s: &ContainerStatus) -> Option<i32> {
    s.last_state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

/// True when a regular container is running or terminated: the pod was
/// initialized at some point (upstream `HasAnyRegularContainerStarted`).
pub fn has_any_regular_container_started(spec: &PodSpec, statuses: &[ContainerStatus]) -> bool {
    spec.containers
        .iter()
        .filter_map(|c| find_status(statuses, &c.name))
        .any(|s| is_running(s) || terminated_exit(s).is_some())
}

#[derive(Default)]
struct Counts {
    pending_init: u32,
    failed_init: u32,
    failed_init_not_restartable: u32,
    unknown: u32,
    running: u32,
    waiting: u32,
    stopped: u32,
    stopped_not_restartable: u32,
    succeeded: u32,
}

impl Counts {
    fn regular_init(&mut self, c: &Container, spec: &PodSpec, s: Option<&ContainerStatus>) {
        let Some(s) = s else {
            return self.pending_init += 1;
        };
        let code = if is_running(s) {
            None
        } else if let Some(code) = terminated_exit(s) {
            Some(code)
        } else if waiting(s) {
            last_terminated_exit(s)
        } else {
            None
        };
        match code {
            Some(0) => {}
            Some(code) => {
                self.failed_init += 1;
                if !container_should_restart(c, spec, code) {
                    self.failed_init_not_restartable += 1;
                }
            }
            None => self.pending_init += 1,
        }
    }

    fn sidecar(&mut self, s: Option<&ContainerStatus>) {
        let Some(s) = s else { return self.unknown += 1 };
        if is_running(s) {
            self.pending_init += u32::from(s.started != Some(true));
            self.running += 1;
        } else if terminated_exit(s).is_some() {
            // Terminated sidecars do not count for the phase.
        } else if waiting(s) {
            if last_terminated_exit(s).is_none() {
                self.pending_init += 1;
                self.waiting += 1;
            }
        } else {
            self.pending_init += 1;
            self.unknown += 1;
        }
    }

    fn regular(&mut self, c: &Container, spec: &PodSpec, s: Option<&ContainerStatus>) {
        let Some(s) = s else { return self.unknown += 1 };
        if is_running(s) {
            self.running += 1;
        } else if let Some(code) = terminated_exit(s) {
            self.stopped(c, spec, code);
            self.succeeded += u32::from(code == 0);
        } else if waiting(s) {
            match last_terminated_exit(s) {
                Some(code) => self.stopped(c, spec, code),
                None => self.waiting += 1,
            }
        } else {
            self.unknown += 1;
        }
    }

    fn stopped(&mut self, c: &Container, spec: &PodSpec, code: i32) {
        self.stopped += 1;
        if !container_should_restart(c, spec, code) {
            self.stopped_not_restartable += 1;
        }
    }
}

/// Phase of the pod given all its (init and regular) container statuses.
/// `pod_is_terminal` says the kubelet decided the pod will not run again
/// (upstream `getPhase`). With `ContainerRestartRules` (on by default) a failed init
/// container or a stopped container counts as restarting by its own rules and policy
/// ([`container_should_restart`]); with the gate off by the pod's policy.
pub fn get_phase(
    pod: &ApiPod,
    statuses: &[ContainerStatus],
    pod_is_terminal: bool,
) -> &'static str {
    let default_spec = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let mut n = Counts::default();
    for c in spec.init_containers.iter().flatten() {
        let s = find_status(statuses, &c.name);
        if is_restartable_init_container(c) {
            n.sidecar(s)
        } else {
            n.regular_init(c, spec, s)
        }
    }
    for c in &spec.containers {
        n.regular(c, spec, find_status(statuses, &c.name));
    }
    let restart_rules = gates::container_restart_rules();
    let restart_policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let init_failed = if restart_rules {
        n.failed_init_not_restartable > 0
    } else {
        n.failed_init > 0 && restart_policy == "Never"
    };
    if init_failed {
        return phase::FAILED;
    }
    let initialized = has_any_regular_container_started(spec, statuses);
    if (n.pending_init > 0 && !initialized) || n.waiting > 0 {
        return phase::PENDING;
    }
    if n.running > 0 && n.unknown == 0 {
        return phase::RUNNING;
    }
    if n.running == 0 && n.stopped > 0 && n.unknown == 0 {
        // A terminal pod's containers will not restart whatever the policy.
        if pod_is_terminal && !is_static_pod(pod) {
            return if n.stopped == n.succeeded {
                phase::SUCCEEDED
            } else {
                phase::FAILED
            };
        }
        if restart_rules {
            return if n.stopped != n.stopped_not_restartable {
                phase::RUNNING // at least one container is restarting
            } else if n.stopped == n.succeeded {
                phase::SUCCEEDED
            } else {
                phase::FAILED
            };
        }
        return match restart_policy {
            "Always" => phase::RUNNING,
            _ if n.stopped == n.succeeded => phase::SUCCEEDED,
            "Never" => phase::FAILED,
            _ => phase::RUNNING, // OnFailure, restarting the failed ones
        };
    }
    phase::PENDING
}
