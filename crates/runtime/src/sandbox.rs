//! Pod sandbox configuration (upstream `kuberuntime_sandbox.go` `generatePodSandboxConfig`,
//! `generatePodSandboxLinuxConfig`, `kuberuntime_sandbox_linux.go` `applySandboxResources`,
//! `helpers.go` log paths, `kubecontainer.MakePortMappings`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_container::is_host_network_pod;
use kubelet_cri::v1::security_profile::ProfileType;
use kubelet_cri::v1::{
    Int64Value, LinuxPodSandboxConfig, LinuxSandboxSecurityContext, PodSandboxConfig,
    PodSandboxMetadata, PortMapping, Protocol, SecurityProfile,
};

use crate::dns::nodename_for_kernel;
use crate::error::RuntimeManagerError;
use crate::helper::RuntimeHelper;
use crate::labels::{new_pod_annotations, new_pod_labels};
use crate::resources::{ResourceSettings, overhead_resources, sandbox_resources};
use crate::security::{namespaces_for_pod, selinux_option, supplemental_groups_policy};

/// `BuildPodLogsDirectory`: `<podLogsDir>/<namespace>_<name>_<uid>`.
pub fn pod_logs_directory(pod_logs_root: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    pod_logs_root.join(format!("{namespace}_{name}_{uid}"))
}

/// `BuildContainerLogsDirectory`: `<podLogsDir>/<namespace>_<name>_<uid>/<container>`.
pub fn container_logs_directory(
    pod_logs_root: &Path,
    namespace: &str,
    name: &str,
    uid: &str,
    container: &str,
) -> PathBuf {
    pod_logs_directory(pod_logs_root, namespace, name, uid).join(container)
}

/// `buildContainerLogsPath`: `<container>/<restartCount>.log`, relative to the sandbox log directory.
pub fn container_log_path(container: &str, restart_count: i32) -> String {
    format!("{container}/{restart_count}.log")
}

/// Identity of a pod as `(namespace, name, uid)`.
pub fn pod_identity(pod: &Pod) -> (&str, &str, &str) {
    let m = &pod.metadata;
    (
        m.namespace.as_deref().unwrap_or_default(),
        m.name.as_deref().unwrap_or_default(),
        m.uid.as_deref().unwrap_or_default(),
    )
}

/// `MakePortMappings`: every declared port (hostPort 0 included), skipping duplicate names.
pub fn make_port_mappings(container: &Container) -> Vec<PortMapping> {
    let mut names = HashSet::new();
    let mut out = Vec::new();
    for p in container.ports.iter().flatten() {
        let protocol = p.protocol.as_deref().unwrap_or("TCP");
        let host_ip = p.host_ip.clone().unwrap_or_default();
        let host_port = p.host_port.unwrap_or(0);
        let family = if host_ip.is_empty() {
            "any"
        } else if host_ip.contains(':') {
            "v6"
        } else {
            "v4"
        };
        let name = p.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| {
            format!(
                "{family}-{protocol}-{host_ip}:{}:{host_port}",
                p.container_port
            )
        });
        if !names.insert(name.clone()) {
            tracing::info!(port_name = %name, "Port name conflicted, it is defined more than once");
            continue;
        }
        let protocol = match protocol {
            "UDP" => Protocol::Udp,
            "SCTP" => Protocol::Sctp,
            _ => Protocol::Tcp,
        };
        out.push(PortMapping {
            protocol: protocol as i32,
            container_port: p.container_port,
            host_port,
            host_ip,
        });
    }
    out
}

/// `HasPrivilegedContainer`: any init, regular or ephemeral container is privileged.
fn has_privileged_container(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    let privileged = |sc: Option<&k8s_openapi::api::core::v1::SecurityContext>| {
        sc.and_then(|s| s.privileged) == Some(true)
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .any(|c| privileged(c.security_context.as_ref()))
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| privileged(c.security_context.as_ref()))
}

/// `generatePodSandboxLinuxConfig` plus `applySandboxResources`.
fn linux_config(
    helper: &dyn RuntimeHelper,
    settings: &ResourceSettings,
    disable_cpu_quota: bool,
    pod: &Pod,
) -> Result<LinuxPodSandboxConfig, RuntimeManagerError> {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let mut sc = LinuxSandboxSecurityContext {
        privileged: has_privileged_container(pod),
        // Sandboxes always run RuntimeDefault so pods can use least-privileged profiles.
        seccomp: Some(SecurityProfile {
            profile_type: ProfileType::RuntimeDefault as i32,
            localhost_ref: String::new(),
        }),
        namespace_options: Some(namespaces_for_pod(pod)),
        ..LinuxSandboxSecurityContext::default()
    };
    if let Some(p) = pod_sc {
        sc.run_as_user = p.run_as_user.map(|value| Int64Value { value });
        sc.run_as_group = p.run_as_group.map(|value| Int64Value { value });
        sc.supplemental_groups.extend(p.fs_group);
        sc.selinux_options = selinux_option(p.se_linux_options.as_ref());
    }
    sc.supplemental_groups
        .extend(helper.get_extra_supplemental_groups_for_pod(pod));
    if let Some(p) = pod_sc {
        sc.supplemental_groups
            .extend(p.supplemental_groups.iter().flatten());
    }
    sc.supplemental_groups_policy = supplemental_groups_policy(pod_sc)?;
    let sysctls = pod_sc
        .and_then(|p| p.sysctls.as_ref())
        .map(|s| {
            s.iter()
                .map(|s| (s.name.replace('/', "."), s.value.clone()))
                .collect()
        })
        .unwrap_or_default();
    Ok(LinuxPodSandboxConfig {
        cgroup_parent: helper.get_pod_cgroup_parent(pod),
        security_context: Some(sc),
        sysctls,
        resources: Some(sandbox_resources(settings, pod, disable_cpu_quota)),
        overhead: Some(overhead_resources(settings, pod)),
    })
}

/// `generatePodSandboxConfig`; `disable_cpu_quota` when a container of the pod has
/// exclusive CPUs (`DisableCPUQuotaWithExclusiveCPUs`).
pub fn generate_pod_sandbox_config(
    helper: &dyn RuntimeHelper,
    settings: &ResourceSettings,
    disable_cpu_quota: bool,
    pod_logs_root: &Path,
    pod: &Pod,
    attempt: u32,
) -> Result<PodSandboxConfig, RuntimeManagerError> {
    let (namespace, name, uid) = pod_identity(pod);
    let mut config = PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: name.to_string(),
            uid: uid.to_string(),
            namespace: namespace.to_string(),
            attempt,
        }),
        labels: new_pod_labels(pod),
        annotations: new_pod_annotations(pod),
        dns_config: Some(helper.get_pod_dns(pod)?),
        log_directory: pod_logs_directory(pod_logs_root, namespace, name, uid)
            .to_string_lossy()
            .into_owned(),
        ..PodSandboxConfig::default()
    };
    if !is_host_network_pod(pod) {
        let (hostname, domain) = helper.generate_pod_hostname_and_domain(pod)?;
        let fqdn = pod
            .spec
            .as_ref()
            .and_then(|s| s.set_hostname_as_fqdn)
            .unwrap_or(false);
        config.hostname = nodename_for_kernel(&hostname, &domain, fqdn)?;
    }
    config.port_mappings = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .flat_map(make_port_mappings)
        .collect();
    config.linux = Some(linux_config(helper, settings, disable_cpu_quota, pod)?);
    Ok(config)
}
