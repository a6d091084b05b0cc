//! Helpers shared by the runtime and the kubelet (upstream
//! `pkg/kubelet/container/helpers.go`, `kuberuntime_container.go getStableKey`).

use k8s_openapi::api::core::v1::{Container as ApiContainer, Pod as ApiPod, PodSpec};

use crate::gates;
use crate::hash::hash_container;
use crate::podutil::{container_should_restart, pod_restart_policy};
use crate::status::{PodStatus, SandboxState};
use crate::types::{Container, ContainerId, ContainerState, Pod};

/// True when the pod uses the node's network namespace (upstream `IsHostNetworkPod`).
pub fn is_host_network_pod(pod: &ApiPod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

/// A sidecar: an init container with `restartPolicy: Always` (upstream
/// `podutil.IsRestartableInitContainer`).
pub fn is_restartable_init_container(container: &ApiContainer) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// Back-off key for a container: `name_namespace_uid_container_hash(hex)`
/// (upstream `getStableKey`). Changing the image gives a fresh back-off.
pub fn get_stable_key(pod: &ApiPod, container: &ApiContainer) -> String {
    let meta = &pod.metadata;
    format!(
        "{}_{}_{}_{}_{:x}",
        meta.name.as_deref().unwrap_or_default(),
        meta.namespace.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
        container.name,
        hash_container(container)
    )
}

/// Whether a container should be started again given its latest status: with
/// `ContainerRestartRules` (on by default) by its own rules and policy, then the pod's
/// ([`crate::podutil::container_should_restart`]); with the gate off by the pod's policy
/// alone (upstream `ShouldContainerBeRestarted`).
pub fn should_container_be_restarted(
    container: &ApiContainer,
    pod: &ApiPod,
    pod_status: &PodStatus,
) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(status) = pod_status.find_container_status_by_name(&container.name) else {
        return true; // never started (or all instances were garbage-collected)
    };
    match status.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited => {
            let default_spec = PodSpec::default();
            let spec = pod.spec.as_ref().unwrap_or(&default_spec);
            if gates::container_restart_rules() {
                return container_should_restart(container, spec, status.exit_code);
            }
            match pod_restart_policy(spec) {
                "Never" => false,
                "OnFailure" => status.exit_code != 0,
                _ => true,
            }
        }
    }
}

/// Whether the pod needs a new sandbox, with the attempt number for it and the
/// ID of the newest sandbox (upstream `runtimeutil.PodSandboxChanged`): no
/// sandbox, several ready ones, the newest not ready, a changed network
/// namespace mode, or a non-host-network sandbox without an IP.
pub fn pod_sandbox_changed(pod: &ApiPod, status: &PodStatus) -> (bool, u32, String) {
    let Some(newest) = status.sandbox_statuses.first() else {
        return (true, 0, String::new());
    };
    let ready = status
        .sandbox_statuses
        .iter()
        .filter(|s| s.state == SandboxState::Ready)
        .count();
    let next = newest.attempt.saturating_add(1);
    if ready > 1 || newest.state != SandboxState::Ready {
        return (true, next, newest.id.clone());
    }
    let host_network = is_host_network_pod(pod);
    if newest.host_network != host_network {
        return (true, next, String::new());
    }
    if !host_network && newest.ip.is_empty() {
        return (true, next, newest.id.clone());
    }
    (false, newest.attempt, newest.id.clone())
}

/// Running pod built from a pod status: running containers and all sandboxes
/// (upstream `ConvertPodStatusToRunningPod`), used to kill what a status shows.
pub fn convert_pod_status_to_running_pod(runtime_name: &str, status: &PodStatus) -> Pod {
    let containers = status
        .running_container_statuses()
        .map(|s| Container {
            id: s.id.clone(),
            name: s.name.clone(),
            image: s.image.clone(),
            image_id: s.image_id.clone(),
            image_ref: s.image_ref.clone(),
            image_runtime_handler: s.image_runtime_handler.clone(),
            hash: s.hash,
            state: s.state,
        })
        .collect();
    let sandboxes = status
        .sandbox_statuses
        .iter()
        .map(|s| Container {
            id: ContainerId::new(runtime_name, s.id.clone()),
            state: match s.state {
                SandboxState::Ready => ContainerState::Running,
                SandboxState::NotReady => ContainerState::Exited,
            },
            ..Container::default()
        })
        .collect();
    Pod {
        id: status.id.clone(),
        name: status.name.clone(),
        namespace: status.namespace.clone(),
        created_at: 0,
        containers,
        sandboxes,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::status::{SandboxStatus, Status};
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn pod(policy: &str) -> ApiPod {
        ApiPod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                restart_policy: Some(policy.into()),
                ..PodSpec::default()
            }),
            ..ApiPod::default()
        }
    }

    fn status_with(state: ContainerState, exit_code: i32) -> PodStatus {
        PodStatus {
            container_statuses: vec![Status {
                name: "app".into(),
                state,
                exit_code,
                ..Status::default()
            }],
            ..PodStatus::default()
        }
    }

    #[test]
    fn restart_rules() {
        let c = ApiContainer {
            name: "app".into(),
            ..ApiContainer::default()
        };
        let cases = [
            ("Always", None, true),
            ("Never", Some((ContainerState::Running, 0)), false),
            ("Never", Some((ContainerState::Created, 0)), true),
            ("Never", Some((ContainerState::Unknown, 0)), true),
            ("Always", Some((ContainerState::Exited, 0)), true),
            ("Never", Some((ContainerState::Exited, 1)), false),
            ("OnFailure", Some((ContainerState::Exited, 0)), false),
            ("OnFailure", Some((ContainerState::Exited, 2)), true),
        ];
        for (policy, state, want) in cases {
            let status = state.map_or_else(PodStatus::default, |(s, code)| status_with(s, code));
            assert_eq!(
                should_container_be_restarted(&c, &pod(policy), &status),
                want,
                "{policy} {state:?}"
            );
        }
        let mut deleted = pod("Always");
        deleted.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(!should_container_be_restarted(
            &c,
            &deleted,
            &PodStatus::default()
        ));
    }

    #[test]
    fn container_policy_and_rules_override_pod_policy() {
        let rules = vec![crate::podutil::restart_rule("Restart", "In", &[42])];
        let always = ApiContainer {
            name: "app".into(),
            restart_policy: Some("Always".into()),
            ..ApiContainer::default()
        };
        let never_but_42 = ApiContainer {
            name: "app".into(),
            restart_policy: Some("Never".into()),
            restart_policy_rules: Some(rules),
            ..ApiContainer::default()
        };
        let exited = |code| status_with(ContainerState::Exited, code);
        // ContainerRestartRules on (the 1.35 default).
        assert!(should_container_be_restarted(
            &always,
            &pod("Never"),
            &exited(0)
        ));
        assert!(should_container_be_restarted(
            &never_but_42,
            &pod("Always"),
            &exited(42)
        ));
        assert!(!should_container_be_restarted(
            &never_but_42,
            &pod("Always"),
            &exited(1)
        ));
        // Gate off: the container-level fields are ignored, the pod's policy decides.
        let _gate = crate::gates::set_container_restart_rules_during_test(false);
        assert!(!should_container_be_restarted(
            &always,
            &pod("Never"),
            &exited(0)
        ));
        assert!(!should_container_be_restarted(
            &never_but_42,
            &pod("Never"),
            &exited(42)
        ));
        assert!(should_container_be_restarted(
            &never_but_42,
            &pod("Always"),
            &exited(1)
        ));
    }

    #[test]
    fn sandbox_changed_rules() {
        let sb = |id: &str, state, ip: &str, attempt| SandboxStatus {
            id: id.into(),
            state,
            ip: ip.into(),
            attempt,
            ..SandboxStatus::default()
        };
        let with = |sandboxes| PodStatus {
            sandbox_statuses: sandboxes,
            ..PodStatus::default()
        };
        let p = pod("Always");
        assert_eq!(
            pod_sandbox_changed(&p, &PodStatus::default()),
            (true, 0, String::new())
        );
        assert_eq!(
            pod_sandbox_changed(
                &p,
                &with(vec![sb("s1", SandboxState::Ready, "198.18.0.2", 0)])
            ),
            (false, 0, "s1".into())
        );
        assert_eq!(
            pod_sandbox_changed(
                &p,
                &with(vec![sb("s1", SandboxState::NotReady, "198.18.0.2", 1)])
            ),
            (true, 2, "s1".into())
        );
        assert_eq!(
            pod_sandbox_changed(&p, &with(vec![sb("s1", SandboxState::Ready, "", 0)])),
            (true, 1, "s1".into())
        );
        let two = with(vec![
            sb("s2", SandboxState::Ready, "198.18.0.3", 1),
            sb("s1", SandboxState::Ready, "198.18.0.2", 0),
        ]);
        assert!(pod_sandbox_changed(&p, &two).0);
    }

    #[test]
    fn stable_key_has_pod_and_hash() {
        let c = ApiContainer {
            name: "app".into(),
            image: Some("busybox".into()),
            ..ApiContainer::default()
        };
        let key = get_stable_key(&pod("Always"), &c);
        assert_eq!(key, format!("web_ns_u1_app_{:x}", hash_container(&c)));
    }

    #[test]
    fn running_pod_from_status() {
        let mut status = status_with(ContainerState::Running, 0);
        status.container_statuses.push(Status {
            name: "dead".into(),
            state: ContainerState::Exited,
            ..Status::default()
        });
        status.sandbox_statuses.push(SandboxStatus {
            id: "s1".into(),
            state: SandboxState::Ready,
            ..SandboxStatus::default()
        });
        let pod = convert_pod_status_to_running_pod("containerd", &status);
        assert_eq!(pod.containers.len(), 1);
        assert_eq!(pod.sandboxes[0].id.to_string(), "containerd://s1");
        assert_eq!(pod.sandboxes[0].state, ContainerState::Running);
        assert!(!is_host_network_pod(&ApiPod::default()));
    }
}
