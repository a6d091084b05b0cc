//! Container restart policy helpers of `pkg/api/v1/pod/util.go` (`IsContainerRestartable`,
//! `ContainerShouldRestart`, `FindMatchingContainerRestartRule`), the rules of the
//! `ContainerRestartRules` gate.

use k8s_openapi::api::core::v1::{Container, ContainerRestartRule, PodSpec};

/// `v1.ContainerRestartRuleActionRestart`.
pub const RESTART_RULE_ACTION_RESTART: &str = "Restart";
/// `v1.ContainerRestartRuleActionRestartAllContainers` (gate
/// `RestartAllContainersOnContainerExits`, alpha, off by default: off, a matching rule
/// with it falls back to the container-level policy; on, refused at admission).
pub const RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS: &str = "RestartAllContainers";
/// `v1.ContainerRestartRuleOnExitCodesOpIn`.
pub const RESTART_RULE_OP_IN: &str = "In";
/// `v1.ContainerRestartRuleOnExitCodesOpNotIn`.
pub const RESTART_RULE_OP_NOT_IN: &str = "NotIn";

/// The pod's restart policy (`Always` when unset, the API default).
pub fn pod_restart_policy(spec: &PodSpec) -> &str {
    spec.restart_policy.as_deref().unwrap_or("Always")
}

/// Whether the container can be restarted: a container-level rule with action `Restart`, a
/// container-level policy other than `Never`, or without a container-level policy a pod
/// policy other than `Never` (upstream `IsContainerRestartable`).
pub fn is_container_restartable(pod: &PodSpec, container: &Container) -> bool {
    if let Some(policy) = container.restart_policy.as_deref() {
        let rules = container.restart_policy_rules.iter().flatten();
        if rules
            .into_iter()
            .any(|r| r.action == RESTART_RULE_ACTION_RESTART)
        {
            return true;
        }
        return policy != "Never";
    }
    pod_restart_policy(pod) != "Never"
}

/// Whether a container that exited with `exit_code` should be restarted: the first
/// matching container-level rule, then the container-level policy, then the pod's
/// (upstream `ContainerShouldRestart`).
pub fn container_should_restart(container: &Container, pod: &PodSpec, exit_code: i32) -> bool {
    if let Some(policy) = container.restart_policy.as_deref() {
        // RestartAllContainers (gate off) falls back to the container-level policy.
        if find_matching_container_restart_rule(container, exit_code)
            .is_some_and(|rule| rule.action == RESTART_RULE_ACTION_RESTART)
        {
            return true;
        }
        match policy {
            "Always" => return true,
            "OnFailure" => return exit_code != 0,
            "Never" => return false,
            _ => {}
        }
    }
    match pod_restart_policy(pod) {
        "OnFailure" => exit_code != 0,
        "Never" => false,
        _ => true,
    }
}

/// The first rule of the container whose exit codes match `exit_code` (upstream
/// `FindMatchingContainerRestartRule`); rules without exit codes or with an unknown
/// operator never match.
pub fn find_matching_container_restart_rule(
    container: &Container,
    exit_code: i32,
) -> Option<&ContainerRestartRule> {
    container
        .restart_policy_rules
        .iter()
        .flatten()
        .find(|rule| {
            let Some(codes) = rule.exit_codes.as_ref() else {
                return false;
            };
            let matched = codes.values.iter().flatten().any(|&c| c == exit_code);
            match codes.operator.as_str() {
                RESTART_RULE_OP_IN => matched,
                RESTART_RULE_OP_NOT_IN => !matched,
                _ => false,
            }
        })
}

/// A rule with `action` on exit codes `operator` `values` (tests).
#[cfg(any(test, feature = "fake"))]
pub fn restart_rule(action: &str, operator: &str, values: &[i32]) -> ContainerRestartRule {
    ContainerRestartRule {
        action: action.into(),
        exit_codes: Some(
            k8s_openapi::api::core::v1::ContainerRestartRuleOnExitCodes {
                operator: operator.into(),
                values: Some(values.to_vec()),
            },
        ),
    }
}

#[cfg(test)]
#[path = "podutil_tests.rs"]
mod tests;
