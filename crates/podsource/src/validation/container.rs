//! Container checks (`validateContainers`, `validateInitContainers`, `validateContainerCommon`).

use super::{ErrorList, FieldError};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, FileKeySelector, Probe, ResourceRequirements, VolumeMount,
};
use kubelet_apimachinery::Quantity;
use kubelet_apimachinery::{
    is_dns1123_label, is_relaxed_env_var_name, is_valid_port_name, is_valid_port_num,
};
use kubelet_container::gates;
use std::collections::{BTreeMap, HashSet};

const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
/// `supportedContainerRestartPolicies`, sorted as `sets.List` gives them.
const CONTAINER_RESTART_POLICIES: &[&str] = &["Always", "Never", "OnFailure"];
/// `supportedContainerRestartRuleActions` (without `RestartAllContainersOnContainerExits`;
/// the error lists these even with the gate on, as upstream's does).
const CONTAINER_RESTART_RULE_ACTIONS: &[&str] = &["Restart"];
/// `supportedContainerRestartRuleActionsWithRestartAllContainers`.
const CONTAINER_RESTART_RULE_ACTIONS_WITH_RESTART_ALL: &[&str] =
    &["Restart", "RestartAllContainers"];
/// `supportedContainerRestartPolicyOperators`.
const CONTAINER_RESTART_RULE_OPERATORS: &[&str] = &["In", "NotIn"];
const TERMINATION_MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ContainerKind {
    Init,
    Regular,
}

impl ContainerKind {
    fn list(self) -> &'static str {
        match self {
            ContainerKind::Init => "spec.initContainers",
            ContainerKind::Regular => "spec.containers",
        }
    }
}

/// Validates a list of containers; `names` collects names across init and regular containers.
pub(super) fn validate_containers(
    containers: &[Container],
    kind: ContainerKind,
    volumes: &HashSet<String>,
    names: &mut HashSet<String>,
    host_network: bool,
) -> ErrorList {
    let mut errs = ErrorList::default();
    for (i, c) in containers.iter().enumerate() {
        let path = format!("{}[{i}]", kind.list());
        errs.extend(validate_name(c, &path, names));
        errs.extend(validate_common(c, &path, volumes, host_network));
        errs.extend(match kind {
            ContainerKind::Init => validate_init_container_restart_policy(c, &path),
            ContainerKind::Regular => validate_regular_container_restart_policy(c, &path),
        });
    }
    errs
}

fn validate_name(c: &Container, path: &str, names: &mut HashSet<String>) -> ErrorList {
    let mut errs = ErrorList::default();
    let field = format!("{path}.name");
    if c.name.is_empty() {
        errs.push(FieldError::required(field, ""));
        return errs;
    }
    for msg in is_dns1123_label(&c.name) {
        errs.push(FieldError::invalid(field.clone(), c.name.as_str(), msg));
    }
    if !names.insert(c.name.clone()) {
        errs.push(FieldError::duplicate(field, c.name.as_str()));
    }
    errs
}

fn validate_common(
    c: &Container,
    path: &str,
    volumes: &HashSet<String>,
    host_network: bool,
) -> ErrorList {
    let mut errs = ErrorList::default();
    if c.image.as_deref().unwrap_or_default().trim().is_empty() {
        errs.push(FieldError::required(format!("{path}.image"), ""));
    }
    one_of(
        &mut errs,
        &format!("{path}.imagePullPolicy"),
        c.image_pull_policy.as_deref(),
        PULL_POLICIES,
    );
    one_of(
        &mut errs,
        &format!("{path}.terminationMessagePolicy"),
        c.termination_message_policy.as_deref(),
        TERMINATION_MESSAGE_POLICIES,
    );
    for (i, p) in c.ports.iter().flatten().enumerate() {
        errs.extend(validate_port(
            p,
            &format!("{path}.ports[{i}]"),
            host_network,
        ));
    }
    for (i, e) in c.env.iter().flatten().enumerate() {
        errs.extend(validate_env(e, &format!("{path}.env[{i}]")));
    }
    errs.extend(validate_mounts(
        c.volume_mounts.as_deref().unwrap_or_default(),
        path,
        volumes,
    ));
    if let Some(r) = c.resources.as_ref() {
        errs.extend(validate_resources(r, &format!("{path}.resources")));
    }
    let probes = [
        ("livenessProbe", &c.liveness_probe, true),
        ("readinessProbe", &c.readiness_probe, false),
        ("startupProbe", &c.startup_probe, true),
    ];
    for (name, probe, success_must_be_one) in probes {
        if let Some(p) = probe {
            errs.extend(validate_probe(
                p,
                &format!("{path}.{name}"),
                success_must_be_one,
            ));
        }
    }
    errs
}

/// An init container's `restartPolicy` and `restartPolicyRules` (upstream
/// `validateInitContainerRestartPolicy`): `Always` makes it a sidecar (no rules then); with
/// `ContainerRestartRules` (beta, on by default in 1.35) `OnFailure`/`Never` and rules too.
fn validate_init_container_restart_policy(c: &Container, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let rules = c.restart_policy_rules.as_deref().unwrap_or_default();
    let Some(policy) = c.restart_policy.as_deref() else {
        if !rules.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.restartPolicy"),
                "must specify restartPolicy when restart rules are used",
            ));
        }
        return errs;
    };
    if gates::container_restart_rules() {
        if policy != "Always" {
            return validate_container_restart_policy(c, path);
        }
        if !rules.is_empty() {
            errs.push(FieldError::forbidden(
                format!("{path}.restartPolicyRules"),
                "restartPolicyRules are not allowed for init containers with restart policy Always",
            ));
        }
    } else if policy != "Always" {
        errs.push(FieldError::not_supported(
            format!("{path}.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    errs
}

/// A regular container's `restartPolicy`: only with `ContainerRestartRules` (upstream
/// `validateContainers`).
fn validate_regular_container_restart_policy(c: &Container, path: &str) -> ErrorList {
    if gates::container_restart_rules() {
        return validate_container_restart_policy(c, path);
    }
    let mut errs = ErrorList::default();
    if c.restart_policy.is_some() {
        errs.push(FieldError::forbidden(
            format!("{path}.restartPolicy"),
            "may not be set for non-init containers",
        ));
    }
    errs
}

/// The container-level `restartPolicy` and `restartPolicyRules` (upstream
/// `validateContainerRestartPolicy`): at most 20 rules, action `Restart`, exit codes required
/// with operator `In` or `NotIn` and at most 255 values.
fn validate_container_restart_policy(c: &Container, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let rules = c.restart_policy_rules.as_deref().unwrap_or_default();
    let policy_field = format!("{path}.restartPolicy");
    match c.restart_policy.as_deref() {
        None if rules.is_empty() => return errs,
        None => errs.push(FieldError::required(
            policy_field,
            "must specify restartPolicy when restart rules are used",
        )),
        Some(p) if !CONTAINER_RESTART_POLICIES.contains(&p) => errs.push(
            FieldError::not_supported(policy_field, p, CONTAINER_RESTART_POLICIES),
        ),
        Some(_) => {}
    }
    if rules.len() > 20 {
        errs.push(FieldError::too_long(
            format!("{path}.restartPolicyRules"),
            20,
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rule_path = format!("{path}.restartPolicyRules[{i}]");
        // `AllowRestartAllContainers`: the gate (a static pod has no old version).
        let allowed = if gates::restart_all_containers_on_container_exits() {
            CONTAINER_RESTART_RULE_ACTIONS_WITH_RESTART_ALL
        } else {
            CONTAINER_RESTART_RULE_ACTIONS
        };
        if !allowed.contains(&rule.action.as_str()) {
            errs.push(FieldError::not_supported(
                format!("{rule_path}.action"),
                rule.action.as_str(),
                CONTAINER_RESTART_RULE_ACTIONS,
            ));
        }
        let Some(codes) = rule.exit_codes.as_ref() else {
            errs.push(FieldError::required(
                format!("{rule_path}.exitCodes"),
                "must be specified",
            ));
            continue;
        };
        if !CONTAINER_RESTART_RULE_OPERATORS.contains(&codes.operator.as_str()) {
            errs.push(FieldError::not_supported(
                format!("{rule_path}.exitCodes.operator"),
                codes.operator.as_str(),
                CONTAINER_RESTART_RULE_OPERATORS,
            ));
        }
        if codes.values.as_ref().is_some_and(|v| v.len() > 255) {
            errs.push(FieldError::too_long(
                format!("{rule_path}.exitCodes.values"),
                255,
            ));
        }
    }
    errs
}

fn one_of(errs: &mut ErrorList, field: &str, value: Option<&str>, allowed: &[&str]) {
    match value.unwrap_or_default() {
        "" => errs.push(FieldError::required(field, "")),
        v if !allowed.contains(&v) => errs.push(FieldError::not_supported(field, v, allowed)),
        _ => {}
    }
}

fn port_in_range(errs: &mut ErrorList, field: String, port: i32) {
    for msg in is_valid_port_num(port.into()) {
        errs.push(FieldError::invalid(field.clone(), port, msg));
    }
}

fn validate_port(p: &ContainerPort, path: &str, host_network: bool) -> ErrorList {
    let mut errs = ErrorList::default();
    let name = p.name.as_deref().unwrap_or_default();
    if !name.is_empty() {
        for msg in is_valid_port_name(name) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, msg));
        }
    }
    if p.container_port == 0 {
        errs.push(FieldError::required(format!("{path}.containerPort"), ""));
    } else {
        port_in_range(&mut errs, format!("{path}.containerPort"), p.container_port);
    }
    let host_port = p.host_port.unwrap_or(0);
    if host_port != 0 {
        port_in_range(&mut errs, format!("{path}.hostPort"), host_port);
    }
    if host_network && host_port != p.container_port {
        errs.push(FieldError::invalid(
            format!("{path}.hostPort"),
            host_port,
            "must match `containerPort` when `hostNetwork` is true",
        ));
    }
    one_of(
        &mut errs,
        &format!("{path}.protocol"),
        p.protocol.as_deref(),
        PROTOCOLS,
    );
    errs
}

fn validate_env(e: &EnvVar, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    if e.name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else {
        for msg in is_relaxed_env_var_name(&e.name) {
            errs.push(FieldError::invalid(
                format!("{path}.name"),
                e.name.as_str(),
                msg,
            ));
        }
    }
    let Some(from) = e.value_from.as_ref() else {
        return errs;
    };
    if !e.value.as_deref().unwrap_or_default().is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.valueFrom"),
            "",
            "may not be specified when `value` is not empty",
        ));
    }
    if let Some(f) = &from.file_key_ref {
        errs.extend(validate_file_key_selector(
            f,
            &format!("{path}.valueFrom.fileKeyRef"),
        ));
    }
    let sources = [
        from.field_ref.is_some(),
        from.resource_field_ref.is_some(),
        from.config_map_key_ref.is_some(),
        from.secret_key_ref.is_some(),
        from.file_key_ref.is_some(),
    ];
    match sources.iter().filter(|s| **s).count() {
        0 => errs.push(FieldError::invalid(
            format!("{path}.valueFrom"),
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
        )),
        1 => {}
        _ => errs.push(FieldError::invalid(
            format!("{path}.valueFrom"),
            "",
            "may not have more than one field specified at a time",
        )),
    }
    errs
}

/// `validateFileKeySelector`: a key that is a valid variable name, a volume name that is a
/// DNS label, and a path without `..` (the volume is checked with the pod's volumes, in
/// `validateFileKeyRefVolumes`).
fn validate_file_key_selector(f: &FileKeySelector, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    type Check = fn(&str) -> Vec<String>;
    let checked: [(&str, &str, Check); 2] = [
        ("key", &f.key, is_relaxed_env_var_name),
        ("volumeName", &f.volume_name, is_dns1123_label),
    ];
    for (name, value, check) in checked {
        let field = format!("{path}.{name}");
        if value.is_empty() {
            errs.push(FieldError::required(field, ""));
            continue;
        }
        for msg in check(value) {
            errs.push(FieldError::invalid(field.clone(), value, msg));
        }
    }
    if f.path.is_empty() {
        errs.push(FieldError::required(format!("{path}.path"), ""));
    } else if f.path.split('/').any(|p| p == "..") {
        // `validatePathNoBacksteps`.
        errs.push(FieldError::invalid(
            format!("{path}.path"),
            f.path.as_str(),
            "must not contain '..'",
        ));
    }
    errs
}

fn validate_mounts(mounts: &[VolumeMount], path: &str, volumes: &HashSet<String>) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut paths = HashSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let mp = format!("{path}.volumeMounts[{i}]");
        if m.name.is_empty() {
            errs.push(FieldError::required(format!("{mp}.name"), ""));
        } else if !volumes.contains(&m.name) {
            errs.push(FieldError::not_found(format!("{mp}.name"), m.name.as_str()));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(format!("{mp}.mountPath"), ""));
        } else if !paths.insert(m.mount_path.clone()) {
            errs.push(FieldError::invalid(
                format!("{mp}.mountPath"),
                m.mount_path.as_str(),
                "must be unique",
            ));
        }
        if m.sub_path
            .as_deref()
            .is_some_and(|s| s.starts_with('/') || s.split('/').any(|p| p == ".."))
        {
            errs.push(FieldError::invalid(
                format!("{mp}.subPath"),
                m.sub_path.clone().unwrap_or_default(),
                "must be a relative path without '..'",
            ));
        }
    }
    errs
}

type ResourceList = BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;

fn parse_list(
    list: Option<&ResourceList>,
    path: &str,
    errs: &mut ErrorList,
) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    for (name, q) in list.into_iter().flatten() {
        let field = format!("{path}[{name}]");
        match Quantity::parse(&q.0) {
            Ok(v) if v.sign() < 0 => {
                errs.push(FieldError::invalid(
                    field,
                    q.0.as_str(),
                    "must be greater than or equal to 0",
                ));
            }
            Ok(v) => {
                out.insert(name.clone(), v);
            }
            Err(e) => errs.push(FieldError::invalid(field, q.0.as_str(), e.to_string())),
        }
    }
    out
}

/// Quantities parse, are non-negative, and each request is at most its limit.
pub(super) fn validate_resources(r: &ResourceRequirements, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let limits = parse_list(r.limits.as_ref(), &format!("{path}.limits"), &mut errs);
    let requests = parse_list(r.requests.as_ref(), &format!("{path}.requests"), &mut errs);
    for (name, request) in &requests {
        let Some(limit) = limits.get(name) else {
            continue;
        };
        if request > limit {
            let raw = |l: Option<&ResourceList>| {
                l.and_then(|l| l.get(name))
                    .map(|q| q.0.clone())
                    .unwrap_or_default()
            };
            errs.push(FieldError::invalid(
                format!("{path}.requests"),
                raw(r.requests.as_ref()),
                format!(
                    "must be less than or equal to {name} limit of {}",
                    raw(r.limits.as_ref())
                ),
            ));
        }
    }
    errs
}

fn validate_probe(p: &Probe, path: &str, success_must_be_one: bool) -> ErrorList {
    let mut errs = ErrorList::default();
    let handlers = [
        p.exec.is_some(),
        p.http_get.is_some(),
        p.tcp_socket.is_some(),
        p.grpc.is_some(),
    ];
    match handlers.iter().filter(|h| **h).count() {
        0 => errs.push(FieldError::required(
            path.to_string(),
            "must specify a handler type",
        )),
        1 => {}
        _ => errs.push(FieldError::forbidden(
            path.to_string(),
            "may not specify more than 1 handler type",
        )),
    }
    let fields = [
        ("initialDelaySeconds", p.initial_delay_seconds),
        ("timeoutSeconds", p.timeout_seconds),
        ("periodSeconds", p.period_seconds),
        ("successThreshold", p.success_threshold),
        ("failureThreshold", p.failure_threshold),
    ];
    for (name, value) in fields {
        if let Some(v) = value
            && v < 0
        {
            errs.push(FieldError::invalid(
                format!("{path}.{name}"),
                v,
                "must be greater than or equal to 0",
            ));
        }
    }
    if success_must_be_one && p.success_threshold.is_some_and(|s| s != 1) {
        errs.push(FieldError::invalid(
            format!("{path}.successThreshold"),
            p.success_threshold.unwrap_or_default(),
            "must be 1",
        ));
    }
    errs
}
