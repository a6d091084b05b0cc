//! Pod and container security contexts → CRI (upstream `kuberuntime/security_context.go`,
//! `kuberuntime_security_profile.go`, `pkg/securitycontext/util.go`,
//! `kuberuntime/util/util.go` `NamespacesForPod`).

use std::path::Path;

use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, Pod, PodSecurityContext, SELinuxOptions, SeccompProfile,
    SecurityContext,
};
use kubelet_cri::v1::security_profile::ProfileType;
use kubelet_cri::v1::{
    Capability, Int64Value, LinuxContainerSecurityContext, NamespaceMode, NamespaceOption,
    SeLinuxOption, SecurityProfile, SupplementalGroupsPolicy,
};

use crate::error::RuntimeManagerError;
use crate::sync::format_pod;

/// Paths masked in every non-`Unmasked` container (keep in sync with moby's defaults).
pub const DEFAULT_MASKED_PATHS: [&str; 11] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
/// Paths mounted read-only in every non-`Unmasked` container.
pub const DEFAULT_READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// `NamespacesForPod`: network/IPC/PID namespace modes from `hostNetwork`, `hostIPC`,
/// `hostPID` and `shareProcessNamespace`.
pub fn namespaces_for_pod(pod: &Pod) -> NamespaceOption {
    let spec = pod.spec.as_ref();
    let flag = |f: fn(&k8s_openapi::api::core::v1::PodSpec) -> Option<bool>| {
        spec.and_then(f).unwrap_or(false)
    };
    let mode = |host: bool| {
        if host {
            NamespaceMode::Node
        } else {
            NamespaceMode::Pod
        }
    };
    let pid = if flag(|s| s.host_pid) {
        NamespaceMode::Node
    } else if flag(|s| s.share_process_namespace) {
        NamespaceMode::Pod
    } else {
        NamespaceMode::Container
    };
    NamespaceOption {
        network: mode(flag(|s| s.host_network)) as i32,
        ipc: mode(flag(|s| s.host_ipc)) as i32,
        pid: pid as i32,
        // `hostUsers: false` gets its user namespace at sandbox creation
        // (`crate::userns`), which fails until kubelet-rs allocates ID ranges.
        userns_options: (!crate::userns::wants_pod_user_namespace(pod))
            .then(crate::userns::node_user_namespace),
        ..NamespaceOption::default()
    }
}

/// `convertToRuntimeSELinuxOption`.
pub fn selinux_option(o: Option<&SELinuxOptions>) -> Option<SeLinuxOption> {
    o.map(|o| SeLinuxOption {
        user: o.user.clone().unwrap_or_default(),
        role: o.role.clone().unwrap_or_default(),
        r#type: o.type_.clone().unwrap_or_default(),
        level: o.level.clone().unwrap_or_default(),
    })
}

/// `fieldSeccompProfile` / `getSeccompProfile`: container field, else pod field, else
/// RuntimeDefault when `seccompDefault`, else Unconfined.
pub fn seccomp_profile(
    pod_sc: Option<&PodSecurityContext>,
    container_sc: Option<&SecurityContext>,
    seccomp_root: &Path,
    seccomp_default: bool,
) -> Result<SecurityProfile, RuntimeManagerError> {
    let field: Option<&SeccompProfile> = container_sc
        .and_then(|s| s.seccomp_profile.as_ref())
        .or_else(|| pod_sc.and_then(|s| s.seccomp_profile.as_ref()));
    let profile = |t: ProfileType, r: String| SecurityProfile {
        profile_type: t as i32,
        localhost_ref: r,
    };
    Ok(match field.map(|f| f.type_.as_str()) {
        Some("RuntimeDefault") => profile(ProfileType::RuntimeDefault, String::new()),
        Some("Localhost") => {
            let name = field
                .and_then(|f| f.localhost_profile.as_deref())
                .filter(|p| !p.is_empty())
                .ok_or_else(|| {
                    RuntimeManagerError::InvalidPod(
                        "localhostProfile must be set if seccompProfile type is Localhost.".into(),
                    )
                })?;
            profile(
                ProfileType::Localhost,
                seccomp_root.join(name).to_string_lossy().into_owned(),
            )
        }
        Some(_) => profile(ProfileType::Unconfined, String::new()),
        None if seccomp_default => profile(ProfileType::RuntimeDefault, String::new()),
        None => profile(ProfileType::Unconfined, String::new()),
    })
}

/// `getAppArmorProfile` from the `appArmorProfile` fields (container first).
fn apparmor_profile(
    pod_sc: Option<&PodSecurityContext>,
    container_sc: Option<&SecurityContext>,
) -> Option<SecurityProfile> {
    let p: &AppArmorProfile = container_sc
        .and_then(|s| s.app_armor_profile.as_ref())
        .or_else(|| pod_sc.and_then(|s| s.app_armor_profile.as_ref()))?;
    let (t, r) = match p.type_.as_str() {
        "RuntimeDefault" => (ProfileType::RuntimeDefault, String::new()),
        "Localhost" => (
            ProfileType::Localhost,
            p.localhost_profile.clone().unwrap_or_default(),
        ),
        _ => (ProfileType::Unconfined, String::new()),
    };
    Some(SecurityProfile {
        profile_type: t as i32,
        localhost_ref: r,
    })
}

/// The CRI value of `spec.securityContext.supplementalGroupsPolicy` (upstream
/// `runtimeapi.SupplementalGroupsPolicy_value` lookup in `determineEffectiveSecurityContext`
/// and `generatePodSandboxLinuxConfig`): `Merge` (the CRI default) when unset, an error
/// for a value CRI does not know.
pub fn supplemental_groups_policy(
    pod_sc: Option<&PodSecurityContext>,
) -> Result<i32, RuntimeManagerError> {
    let Some(policy) = pod_sc.and_then(|p| p.supplemental_groups_policy.as_deref()) else {
        return Ok(SupplementalGroupsPolicy::Merge as i32);
    };
    SupplementalGroupsPolicy::from_str_name(policy)
        .map(|p| p as i32)
        .ok_or_else(|| {
            RuntimeManagerError::InvalidPod(format!(
                "unsupported supplementalGroupsPolicy: {policy}"
            ))
        })
}

/// `determineEffectiveSecurityContext`: the container's Linux security context with pod-level
/// defaults, namespaces, supplemental groups, no-new-privs and masked paths.
pub fn container_security_context(
    pod: &Pod,
    container: &Container,
    extra_groups: &[i64],
    seccomp_root: &Path,
    seccomp_default: bool,
) -> Result<LinuxContainerSecurityContext, RuntimeManagerError> {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let sc = container.security_context.as_ref();
    let run_as_user = sc
        .and_then(|s| s.run_as_user)
        .or_else(|| pod_sc.and_then(|s| s.run_as_user));
    let run_as_group = sc
        .and_then(|s| s.run_as_group)
        .or_else(|| pod_sc.and_then(|s| s.run_as_group));
    let selinux = sc
        .and_then(|s| s.se_linux_options.as_ref())
        .or_else(|| pod_sc.and_then(|s| s.se_linux_options.as_ref()));
    let unmasked = sc.and_then(|s| s.proc_mount.as_deref()) == Some("Unmasked");
    let mut groups: Vec<i64> = Vec::new();
    if let Some(p) = pod_sc {
        groups.extend(p.fs_group);
        groups.extend(p.supplemental_groups.iter().flatten());
    }
    groups.extend_from_slice(extra_groups);
    let caps = sc
        .and_then(|s| s.capabilities.as_ref())
        .map(|c| Capability {
            add_capabilities: c.add.clone().unwrap_or_default(),
            drop_capabilities: c.drop.clone().unwrap_or_default(),
            add_ambient_capabilities: Vec::new(),
        });
    let paths = |p: &[&str]| {
        if unmasked {
            Vec::new()
        } else {
            p.iter().map(|s| s.to_string()).collect()
        }
    };
    Ok(LinuxContainerSecurityContext {
        capabilities: caps,
        privileged: sc.and_then(|s| s.privileged).unwrap_or(false),
        namespace_options: Some(namespaces_for_pod(pod)),
        selinux_options: selinux_option(selinux),
        run_as_user: run_as_user.map(|value| Int64Value { value }),
        run_as_group: run_as_group.map(|value| Int64Value { value }),
        readonly_rootfs: sc
            .and_then(|s| s.read_only_root_filesystem)
            .unwrap_or(false),
        supplemental_groups: groups,
        supplemental_groups_policy: supplemental_groups_policy(pod_sc)?,
        no_new_privs: sc.and_then(|s| s.allow_privilege_escalation) == Some(false),
        masked_paths: paths(&DEFAULT_MASKED_PATHS),
        readonly_paths: paths(&DEFAULT_READONLY_PATHS),
        seccomp: Some(seccomp_profile(pod_sc, sc, seccomp_root, seccomp_default)?),
        apparmor: apparmor_profile(pod_sc, sc),
        ..LinuxContainerSecurityContext::default()
    })
}

/// The user an image runs as (`getImageUser`): a numeric uid, or a user name, or root when
/// the image names none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageUser {
    /// Numeric uid, when the image has one (0 when it names no user).
    pub uid: Option<i64>,
    /// Non-numeric user name.
    pub username: String,
}

/// Applies the image user when the security context names none (upstream sets
/// `RunAsUser`/`RunAsUsername` from the image).
pub fn apply_image_user(sc: &mut LinuxContainerSecurityContext, user: &ImageUser) {
    if sc.run_as_user.is_none() {
        sc.run_as_user = user.uid.map(|value| Int64Value { value });
        sc.run_as_username = user.username.clone();
    }
}

/// `verifyRunAsNonRoot`: with `runAsNonRoot`, refuse uid 0 (explicit or from the image) and
/// image users that are names rather than numbers.
pub fn verify_run_as_non_root(
    pod: &Pod,
    container: &Container,
    image: &ImageUser,
) -> Result<(), RuntimeManagerError> {
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let sc = container.security_context.as_ref();
    let non_root = sc
        .and_then(|s| s.run_as_non_root)
        .or_else(|| pod_sc.and_then(|s| s.run_as_non_root));
    if non_root != Some(true) {
        return Ok(());
    }
    let pod_name = format_pod(pod);
    let fail = |m: String| Err(RuntimeManagerError::InvalidPod(m));
    match sc
        .and_then(|s| s.run_as_user)
        .or_else(|| pod_sc.and_then(|s| s.run_as_user))
    {
        Some(0) => fail(format!(
            "container's runAsUser breaks non-root policy (pod: {pod_name:?}, container: {})",
            container.name
        )),
        Some(_) => Ok(()),
        None => match (image.uid, image.username.as_str()) {
            (Some(0), _) => fail(format!(
                "container has runAsNonRoot and image will run as root (pod: {pod_name:?}, container: {})",
                container.name
            )),
            (None, name) if !name.is_empty() => fail(format!(
                "container has runAsNonRoot and image has non-numeric user ({name}), cannot verify user is non-root (pod: {pod_name:?}, container: {})",
                container.name
            )),
            _ => Ok(()),
        },
    }
}

#[cfg(test)]
#[path = "security_tests.rs"]
mod tests;
