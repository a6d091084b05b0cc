//! Container configuration and status conversion (upstream `kuberuntime_container.go`
//! `generateContainerConfig`, `makeMounts`, `toKubeContainerStatus`, `getTerminationMessage`,
//! `setTerminationGracePeriod`, and `kuberuntime_container_linux.go`).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_container::{ContainerId, ContainerState, ContainerUser, LinuxContainerUser, Status};
use kubelet_cri::v1::{
    self as cri, ContainerConfig, ContainerMetadata, ImageSpec, KeyValue, LinuxContainerConfig,
    NamespaceMode,
};

use crate::actions::KillReason;
use crate::error::RuntimeManagerError;
use crate::expansion::expand_command_and_args;
use crate::helper::{ImageVolumes, Mount, RuntimeHelper};
use crate::labels::{
    container_info_from_annotations, container_info_from_labels, new_container_annotations,
    new_container_labels,
};
use crate::os::OsInterface;
use crate::resources::{ResourceSettings, generate_linux_container_resources};
use crate::sandbox::{container_log_path, container_logs_directory, pod_identity};
use crate::security::{
    ImageUser, apply_image_user, container_security_context, verify_run_as_non_root,
};

/// Shortest stop timeout the kubelet gives a container (`minimumGracePeriodInSeconds`).
pub const MINIMUM_GRACE_PERIOD_SECONDS: i64 = 2;
/// Longest termination message kept (`MaxContainerTerminationMessageLength`).
pub const MAX_TERMINATION_MESSAGE_LENGTH: usize = 4096;

/// Settings for [`generate_container_config`].
pub struct ContainerConfigContext<'a> {
    /// Runtime helper (env, mounts).
    pub helper: &'a dyn RuntimeHelper,
    /// Filesystem.
    pub os: &'a dyn OsInterface,
    /// Resource settings.
    pub resources: &'a ResourceSettings,
    /// `podLogsDir`.
    pub pod_logs_root: &'a Path,
    /// `<root>/seccomp`.
    pub seccomp_root: &'a Path,
    /// `seccompDefault`.
    pub seccomp_default: bool,
    /// The container has exclusive CPUs and `DisableCPUQuotaWithExclusiveCPUs` is on: no
    /// CFS quota.
    pub disable_cpu_quota: bool,
}

/// A random 8-hex-digit name (`makeUID`) for termination-log files.
fn make_uid() -> String {
    let v = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{:08x}", v as u32)
}

fn to_cri_mount(m: &Mount) -> cri::Mount {
    cri::Mount {
        container_path: m.container_path.clone(),
        host_path: m.host_path.to_string_lossy().into_owned(),
        readonly: m.read_only,
        selinux_relabel: m.selinux_relabel,
        propagation: m.propagation,
        image: m.image.clone(),
        image_sub_path: m.image_sub_path.clone(),
        ..cri::Mount::default()
    }
}

/// `generateContainerConfig`: the CRI config for one attempt of `container`.
#[allow(clippy::too_many_arguments)]
pub async fn generate_container_config(
    ctx: &ContainerConfigContext<'_>,
    pod: &Pod,
    container: &Container,
    restart_count: i32,
    pod_ips: &[String],
    image_ref: &str,
    image_user: &ImageUser,
    target_id: Option<&ContainerId>,
    image_volumes: &ImageVolumes,
) -> Result<ContainerConfig, RuntimeManagerError> {
    let opts = ctx
        .helper
        .generate_run_container_options(pod, container, pod_ips, image_volumes)
        .await?;
    verify_run_as_non_root(pod, container, image_user)?;
    let (command, args) = expand_command_and_args(
        container.command.as_deref().unwrap_or_default(),
        container.args.as_deref().unwrap_or_default(),
        &opts.envs,
    );
    let (namespace, name, uid) = pod_identity(pod);
    let log_dir =
        container_logs_directory(ctx.pod_logs_root, namespace, name, uid, &container.name);
    ctx.os
        .mkdir_all(&log_dir)
        .map_err(|source| RuntimeManagerError::Io {
            what: format!(
                "create container log directory for container {}",
                container.name
            ),
            path: log_dir.clone(),
            source,
        })?;

    let mut mounts: Vec<cri::Mount> = opts.mounts.iter().map(to_cri_mount).collect();
    if let (Some(dir), Some(path)) = (
        opts.pod_container_dir.as_ref(),
        container
            .termination_message_path
            .as_deref()
            .filter(|p| !p.is_empty()),
    ) {
        let file: PathBuf = dir.join(make_uid());
        match ctx.os.create_file(&file) {
            Ok(()) => mounts.push(cri::Mount {
                container_path: path.to_string(),
                host_path: file.to_string_lossy().into_owned(),
                ..cri::Mount::default()
            }),
            Err(e) => {
                tracing::error!(path = %file.display(), error = %e, "Error on creating termination-log file")
            }
        }
    }

    let mut sc = container_security_context(
        pod,
        container,
        &ctx.helper.get_extra_supplemental_groups_for_pod(pod),
        ctx.seccomp_root,
        ctx.seccomp_default,
    )?;
    apply_image_user(&mut sc, image_user);
    if let (Some(target), Some(ns)) = (target_id, sc.namespace_options.as_mut())
        && ns.pid == NamespaceMode::Container as i32
    {
        ns.pid = NamespaceMode::Target as i32;
        ns.target_id = target.id.clone();
    }

    Ok(ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: container.name.clone(),
            attempt: u32::try_from(restart_count).unwrap_or(0),
        }),
        image: Some(ImageSpec {
            image: image_ref.to_string(),
            user_specified_image: container.image.clone().unwrap_or_default(),
            ..ImageSpec::default()
        }),
        command,
        args,
        working_dir: container.working_dir.clone().unwrap_or_default(),
        labels: new_container_labels(container, pod),
        annotations: new_container_annotations(container, pod, restart_count, &opts.annotations),
        mounts,
        log_path: container_log_path(&container.name, restart_count),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        tty: container.tty.unwrap_or(false),
        linux: Some(LinuxContainerConfig {
            resources: Some(generate_linux_container_resources(
                ctx.resources,
                pod,
                container,
                ctx.disable_cpu_quota,
            )),
            security_context: Some(sc),
        }),
        envs: opts
            .envs
            .into_iter()
            .map(|(key, value)| KeyValue {
                key,
                value: value.into_bytes(),
            })
            .collect(),
        ..ContainerConfig::default()
    })
}

/// `setTerminationGracePeriod`: deletion grace, else the probe's own grace for probe kills,
/// else the pod's `terminationGracePeriodSeconds`, else 2 s.
pub fn termination_grace_period(pod: &Pod, container: &Container, reason: KillReason) -> i64 {
    if let Some(g) = pod.metadata.deletion_grace_period_seconds {
        return g;
    }
    let Some(pod_grace) = pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
    else {
        return MINIMUM_GRACE_PERIOD_SECONDS;
    };
    let probe = match reason {
        KillReason::StartupProbe => container.startup_probe.as_ref(),
        KillReason::LivenessProbe => container.liveness_probe.as_ref(),
        _ => None,
    };
    probe
        .and_then(|p| p.termination_grace_period_seconds)
        .unwrap_or(pod_grace)
}

fn nanos_to_ts(n: i64) -> Option<Timestamp> {
    (n != 0)
        .then(|| Timestamp::from_nanosecond(i128::from(n)).ok())
        .flatten()
}

fn state_of(s: i32) -> ContainerState {
    match cri::ContainerState::try_from(s) {
        Ok(cri::ContainerState::ContainerCreated) => ContainerState::Created,
        Ok(cri::ContainerState::ContainerRunning) => ContainerState::Running,
        Ok(cri::ContainerState::ContainerExited) => ContainerState::Exited,
        _ => ContainerState::Unknown,
    }
}

/// Converts CRI container state to the runtime-neutral one.
pub fn to_kube_container_state(s: i32) -> ContainerState {
    state_of(s)
}

/// `toKubeContainerStatus` plus the termination message (`convertToKubeContainerStatus`):
/// identity and hash/restart count come from labels and annotations.
pub fn to_kube_container_status(
    os: &dyn OsInterface,
    runtime_name: &str,
    s: &cri::ContainerStatus,
) -> Status {
    let labeled = container_info_from_labels(&s.labels);
    let annotated = container_info_from_annotations(&s.annotations);
    let state = state_of(s.state);
    let image = s.image.as_ref();
    let mut status = Status {
        id: ContainerId::new(runtime_name, s.id.clone()),
        name: labeled.container_name,
        state,
        created_at: nanos_to_ts(s.created_at),
        image: image.map(|i| i.image.clone()).unwrap_or_default(),
        image_id: if s.image_id.is_empty() {
            s.image_ref.clone()
        } else {
            s.image_id.clone()
        },
        image_ref: s.image_ref.clone(),
        image_runtime_handler: image.map(|i| i.runtime_handler.clone()).unwrap_or_default(),
        hash: annotated.hash,
        restart_count: annotated.restart_count,
        user: s.user.as_ref().map(to_kube_container_user),
        ..Status::default()
    };
    if state != ContainerState::Created {
        status.started_at = nanos_to_ts(s.started_at);
    }
    if state == ContainerState::Exited {
        status.reason = s.reason.clone();
        status.message = s.message.clone();
        status.exit_code = s.exit_code;
        status.finished_at = nanos_to_ts(s.finished_at);
        let fallback = annotated.termination_message_policy == "FallbackToLogsOnError"
            && s.exit_code != 0
            && s.reason != "ContainerCannotRun";
        let mut message = termination_message(os, s, &annotated.termination_message_path);
        if message.is_empty() && fallback && !s.log_path.is_empty() {
            message = crate::logs::tail_cri_log(
                os,
                Path::new(&s.log_path),
                crate::logs::TERMINATION_MESSAGE_LOG_LINES,
                crate::logs::TERMINATION_MESSAGE_LOG_BYTES,
            )
            .unwrap_or_else(|e| e);
        }
        if !message.is_empty() {
            if !status.message.is_empty() {
                status.message.push_str(": ");
            }
            status.message.push_str(&message);
        }
    }
    status
}

/// `toKubeContainerUser` (`kuberuntime_container_linux.go`).
fn to_kube_container_user(u: &cri::ContainerUser) -> ContainerUser {
    ContainerUser {
        linux: u.linux.as_ref().map(|l| LinuxContainerUser {
            uid: l.uid,
            gid: l.gid,
            supplemental_groups: l.supplemental_groups.clone(),
        }),
    }
}

/// `getTerminationMessage`: reads up to 4096 bytes of the file mounted at the termination
/// message path.
fn termination_message(os: &dyn OsInterface, s: &cri::ContainerStatus, path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    let Some(mount) = s.mounts.iter().find(|m| m.container_path == path) else {
        return String::new();
    };
    match os.read_to_string(Path::new(&mount.host_path)) {
        Ok(mut data) => {
            if data.len() > MAX_TERMINATION_MESSAGE_LENGTH {
                let mut cut = data.len() - MAX_TERMINATION_MESSAGE_LENGTH;
                while !data.is_char_boundary(cut) {
                    cut += 1;
                }
                data = data[cut..].to_string();
            }
            data
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => format!("Error on reading termination log {}: {e}", mount.host_path),
    }
}

/// Sorts statuses newest first (`containerStatusByCreated`).
pub fn sort_newest_first(statuses: &mut [Status]) {
    statuses.sort_by_key(|s| std::cmp::Reverse(s.created_at));
}

/// Labels selecting the containers of a pod.
pub fn pod_uid_selector(uid: &str) -> HashMap<String, String> {
    [(crate::labels::POD_UID_LABEL.to_string(), uid.to_string())].into()
}
