//! Pod-spec level checks (`ValidatePodSpec`).

use super::container::{ContainerKind, validate_containers};
use super::volumes::validate_volumes;
use super::{ErrorList, FieldError};
use k8s_openapi::api::core::v1::{Container, PodSpec, Toleration};
use kubelet_apimachinery::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use std::collections::HashSet;

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const TOLERATION_OPERATORS: &[&str] = &["Equal", "Exists"];
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// `validSupplementalGroupsPolicies`.
const SUPPLEMENTAL_GROUPS_POLICIES: &[&str] = &["Merge", "Strict"];

pub(super) fn validate_pod_spec(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let (volumes, volume_errs) = validate_volumes(spec.volumes.as_deref().unwrap_or_default());
    errs.extend(volume_errs);

    let host_network = spec.host_network.unwrap_or(false);
    let mut names = HashSet::new();
    let init = spec.init_containers.as_deref().unwrap_or_default();
    errs.extend(validate_containers(
        init,
        ContainerKind::Init,
        &volumes,
        &mut names,
        host_network,
    ));
    if spec.containers.is_empty() {
        errs.push(FieldError::required("spec.containers", ""));
    }
    errs.extend(validate_containers(
        &spec.containers,
        ContainerKind::Regular,
        &volumes,
        &mut names,
        host_network,
    ));
    if spec
        .ephemeral_containers
        .as_ref()
        .is_some_and(|e| !e.is_empty())
    {
        errs.push(FieldError::forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
    errs.extend(validate_host_ports(init, &spec.containers));

    errs.extend(validate_policies(spec));
    errs.extend(validate_supplemental_groups_policy(spec));
    errs.extend(validate_dns_names(spec));
    errs.extend(validate_pod_host_name(spec));
    errs.extend(validate_durations(spec));
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        errs.extend(validate_toleration(t, &format!("spec.tolerations[{i}]")));
    }
    errs.extend(validate_file_key_ref_volumes(spec));
    errs
}

/// `validateFileKeyRefVolumes`: the volume of every `fileKeyRef` exists and is an emptyDir.
fn validate_file_key_ref_volumes(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let volumes = spec.volumes.as_deref().unwrap_or_default();
    let init = spec.init_containers.iter().flatten();
    let containers = init.map(|c| ("spec.initContainers", c)).enumerate().chain(
        spec.containers
            .iter()
            .map(|c| ("spec.containers", c))
            .enumerate(),
    );
    for (i, (list, c)) in containers {
        for (j, env) in c.env.iter().flatten().enumerate() {
            let Some(f) = env
                .value_from
                .as_ref()
                .and_then(|v| v.file_key_ref.as_ref())
            else {
                continue;
            };
            let field = format!("{list}[{i}].env[{j}].valueFrom.fileKeyRef.volumeName");
            match volumes.iter().find(|v| v.name == f.volume_name) {
                None => errs.push(FieldError::not_found(field, f.volume_name.as_str())),
                Some(v) if v.empty_dir.is_none() => errs.push(FieldError::invalid(
                    field,
                    f.volume_name.as_str(),
                    "referenced volume must be of type emptyDir",
                )),
                Some(_) => {}
            }
        }
    }
    errs
}

/// `validatePodHostName`: `hostnameOverride` is a DNS subdomain of at most 64 characters,
/// and neither `setHostnameAsFQDN` nor `hostNetwork` is set with it.
fn validate_pod_host_name(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let Some(name) = spec.hostname_override.as_deref() else {
        return errs;
    };
    let field = "spec.hostnameOverride";
    if spec.set_hostname_as_fqdn == Some(true) {
        errs.push(FieldError::forbidden(
            field,
            "may not be specified when setHostnameAsFQDN is true",
        ));
    }
    if spec.host_network == Some(true) {
        errs.push(FieldError::forbidden(
            field,
            "may not be specified when hostNetwork is true",
        ));
    }
    if name.len() > 64 {
        errs.push(FieldError::too_long(field, 64));
    }
    for msg in is_dns1123_subdomain(name) {
        errs.push(FieldError::invalid(field, name, msg));
    }
    errs
}

/// `validateSupplementalGroupsPolicy` (from `ValidatePodSecurityContext`).
fn validate_supplemental_groups_policy(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let policy = spec
        .security_context
        .as_ref()
        .and_then(|sc| sc.supplemental_groups_policy.as_deref());
    if let Some(p) = policy
        && !SUPPLEMENTAL_GROUPS_POLICIES.contains(&p)
    {
        errs.push(FieldError::not_supported(
            "spec.securityContext.supplementalGroupsPolicy",
            p,
            SUPPLEMENTAL_GROUPS_POLICIES,
        ));
    }
    errs
}

fn validate_policies(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    let restart = spec.restart_policy.as_deref().unwrap_or_default();
    if restart.is_empty() {
        errs.push(FieldError::required("spec.restartPolicy", ""));
    } else if !RESTART_POLICIES.contains(&restart) {
        errs.push(FieldError::not_supported(
            "spec.restartPolicy",
            restart,
            RESTART_POLICIES,
        ));
    }
    let dns = spec.dns_policy.as_deref().unwrap_or_default();
    if dns.is_empty() {
        errs.push(FieldError::required("spec.dnsPolicy", ""));
    } else if !DNS_POLICIES.contains(&dns) {
        errs.push(FieldError::not_supported(
            "spec.dnsPolicy",
            dns,
            DNS_POLICIES,
        ));
    } else if dns == "None" {
        let no_servers = spec
            .dns_config
            .as_ref()
            .is_none_or(|c| c.nameservers.as_ref().is_none_or(Vec::is_empty));
        if no_servers {
            errs.push(FieldError::required(
                "spec.dnsConfig.nameservers",
                "must provide at least one DNS nameserver when DNSPolicy is None",
            ));
        }
    }
    errs
}

fn validate_dns_names(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    for (field, value) in [
        ("spec.hostname", &spec.hostname),
        ("spec.subdomain", &spec.subdomain),
    ] {
        let value = value.as_deref().unwrap_or_default();
        if !value.is_empty() {
            for msg in is_dns1123_label(value) {
                errs.push(FieldError::invalid(field, value, msg));
            }
        }
    }
    for (field, value) in [
        ("spec.nodeName", &spec.node_name),
        ("spec.serviceAccountName", &spec.service_account_name),
        ("spec.priorityClassName", &spec.priority_class_name),
    ] {
        let value = value.as_deref().unwrap_or_default();
        if !value.is_empty() {
            for msg in is_dns1123_subdomain(value) {
                errs.push(FieldError::invalid(field, value, msg));
            }
        }
    }
    errs
}

fn validate_durations(spec: &PodSpec) -> ErrorList {
    let mut errs = ErrorList::default();
    if let Some(grace) = spec.termination_grace_period_seconds
        && grace < 0
    {
        errs.push(FieldError::invalid(
            "spec.terminationGracePeriodSeconds",
            grace,
            "must be greater than or equal to 0",
        ));
    }
    if let Some(deadline) = spec.active_deadline_seconds
        && !(1..=i64::from(u32::MAX)).contains(&deadline)
    {
        errs.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            deadline,
            format!("must be between 1 and {}, inclusive", u32::MAX),
        ));
    }
    errs
}

fn validate_toleration(t: &Toleration, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() {
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(format!("{path}.key"), key, msg));
        }
    }
    let operator = t.operator.as_deref().unwrap_or_default();
    let value = t.value.as_deref().unwrap_or_default();
    match operator {
        "" | "Equal" => {
            if key.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.operator"),
                    operator,
                    "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                ));
            }
        }
        "Exists" if !value.is_empty() => {
            errs.push(FieldError::invalid(
                format!("{path}.operator"),
                value,
                "value must be empty when `operator` is 'Exists'",
            ));
        }
        "Exists" => {}
        other => errs.push(FieldError::not_supported(
            format!("{path}.operator"),
            other,
            TOLERATION_OPERATORS,
        )),
    }
    let effect = t.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
        errs.push(FieldError::not_supported(
            format!("{path}.effect"),
            effect,
            TAINT_EFFECTS,
        ));
    }
    if t.toleration_seconds.is_some() && effect != "NoExecute" {
        errs.push(FieldError::invalid(
            format!("{path}.effect"),
            effect,
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    errs
}

/// Host ports must be unique per (hostPort, protocol, hostIP) among the init containers and
/// among the regular containers (`AccumulateUniqueHostPorts`).
fn validate_host_ports(init: &[Container], regular: &[Container]) -> ErrorList {
    let mut errs = ErrorList::default();
    let groups = [("spec.initContainers", init), ("spec.containers", regular)];
    for (list, containers) in groups {
        let mut seen = HashSet::new();
        for (ci, c) in containers.iter().enumerate() {
            for (pi, p) in c.ports.iter().flatten().enumerate() {
                let host_port = p.host_port.unwrap_or(0);
                if host_port == 0 {
                    continue;
                }
                let proto = p.protocol.clone().unwrap_or_default();
                let ip = p.host_ip.clone().unwrap_or_default();
                if !seen.insert((host_port, proto.clone(), ip)) {
                    errs.push(FieldError::duplicate(
                        format!("{list}[{ci}].ports[{pi}].hostPort"),
                        format!("{host_port}/{proto}"),
                    ));
                }
            }
        }
    }
    errs
}
