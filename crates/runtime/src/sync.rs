//! `SyncPod` and container start (upstream `kuberuntime_manager.go` `SyncPod`, `doBackOff`,
//! `createPodSandbox` in `kuberuntime_sandbox.go`, `startContainer` in
//! `kuberuntime_container.go`).

use k8s_openapi::api::core::v1::{Container, Pod as ApiPod, Secret};
use kubelet_container::{
    Backoff, ContainerId, ContainerState, PodStatus, PodSyncResult, SyncAction, SyncErrorKind,
    SyncResult, convert_pod_status_to_running_pod, get_stable_key, is_host_network_pod,
};
use kubelet_cri::v1::PodSandboxConfig;

use crate::actions::{KillReason, compute_pod_actions};
use crate::container::{ContainerConfigContext, generate_container_config};
use crate::manager::KubeGenericRuntimeManager;
use crate::sandbox::{container_logs_directory, generate_pod_sandbox_config, pod_identity};

/// `format.Pod`: `name_namespace(uid)`.
pub(crate) fn format_pod(pod: &ApiPod) -> String {
    let (ns, name, uid) = pod_identity(pod);
    format!("{name}_{ns}({uid})")
}

/// What to start: a regular/init container, or an ephemeral one with its target.
struct StartSpec<'a> {
    container: &'a Container,
    target_container_name: Option<&'a str>,
}

impl KubeGenericRuntimeManager {
    /// `SyncPod`: kill what must go, create the sandbox if needed, then start ephemeral,
    /// init and regular containers.
    pub(crate) async fn sync_pod_impl(
        &self,
        pod: &ApiPod,
        pod_status: &PodStatus,
        pull_secrets: &[Secret],
        backoff: &Backoff,
    ) -> PodSyncResult {
        let mut result = PodSyncResult::default();
        let changes = compute_pod_actions(pod, pod_status, self.probes.as_ref());
        tracing::debug!(pod = %format_pod(pod), actions = ?changes, "computePodActions got for pod");

        if changes.kill_pod {
            let running = convert_pod_status_to_running_pod(&self.runtime_name, pod_status);
            let kill = self
                .kill_pod_with_sync_result(Some(pod), &running, None)
                .await;
            let failed = kill.error().is_some();
            result.add_pod_sync_result(kill);
            if failed {
                return result;
            }
            if changes.create_sandbox {
                self.purge_init_containers(pod, pod_status).await;
            }
        } else {
            for (id, info) in &changes.containers_to_kill {
                let mut r = SyncResult::new(SyncAction::KillContainer, info.name.clone());
                if let Err(e) = self
                    .kill_container(Some(pod), id, &info.name, &info.message, info.reason, None)
                    .await
                {
                    r.fail(SyncErrorKind::KillContainer, e.to_string());
                    result.add_sync_result(r);
                    return result;
                }
                result.add_sync_result(r);
            }
        }

        self.prune_init_containers_before_start(pod, pod_status)
            .await;

        let mut pod_ips = pod_status.ips.clone();
        let mut sandbox_id = changes.sandbox_id.clone();
        if changes.create_sandbox {
            let mut r = SyncResult::new(SyncAction::CreatePodSandbox, format_pod(pod));
            match self.create_pod_sandbox(pod, changes.attempt).await {
                Ok(id) => sandbox_id = id,
                Err(msg) => {
                    if self.pod_state.is_pod_termination_requested(
                        pod.metadata.uid.as_deref().unwrap_or_default(),
                    ) {
                        tracing::debug!(pod = %format_pod(pod), "Pod was deleted and sandbox failed to be created");
                        return result;
                    }
                    tracing::error!(pod = %format_pod(pod), error = %msg, "CreatePodSandbox for pod failed");
                    r.fail(SyncErrorKind::CreatePodSandbox, msg);
                    result.add_sync_result(r);
                    return result;
                }
            }
            result.add_sync_result(r);
            match self.runtime.pod_sandbox_status(&sandbox_id, false).await {
                Ok(resp) => match resp.status {
                    Some(s) if !is_host_network_pod(pod) => {
                        let net = s.network.unwrap_or_default();
                        pod_ips = std::iter::once(net.ip)
                            .filter(|ip| !ip.is_empty())
                            .chain(net.additional_ips.into_iter().map(|i| i.ip))
                            .collect();
                    }
                    Some(_) => {}
                    None => {
                        result.fail("pod sandbox status is nil");
                        return result;
                    }
                },
                Err(e) => {
                    tracing::error!(pod = %format_pod(pod), error = %e, "Failed to get pod sandbox status; Skipping pod");
                    result.fail(e.to_string());
                    return result;
                }
            }
        }

        let mut config_result = SyncResult::new(SyncAction::ConfigPodSandbox, sandbox_id.clone());
        let sandbox_config = match generate_pod_sandbox_config(
            self.helper.as_ref(),
            &self.config.resources,
            &self.config.pod_logs_dir,
            pod,
            changes.attempt,
        ) {
            Ok(c) => c,
            Err(e) => {
                let msg = format!(
                    "GeneratePodSandboxConfig for pod {:?} failed: {e}",
                    format_pod(pod)
                );
                config_result.fail(SyncErrorKind::ConfigPodSandbox, msg);
                result.add_sync_result(config_result);
                return result;
            }
        };
        result.add_sync_result(config_result);

        let spec = pod.spec.as_ref();
        let ephemeral: Vec<&k8s_openapi::api::core::v1::EphemeralContainer> = spec
            .iter()
            .flat_map(|s| s.ephemeral_containers.iter().flatten())
            .collect();
        let ctx = StartCtx {
            sandbox_id: &sandbox_id,
            sandbox_config: &sandbox_config,
            pod,
            pod_status,
            pull_secrets,
            pod_ips: &pod_ips,
            backoff,
        };
        for idx in &changes.ephemeral_containers_to_start {
            let Some(ec) = ephemeral.get(*idx) else {
                continue;
            };
            let as_container = ephemeral_as_container(ec);
            let target = ec
                .target_container_name
                .as_deref()
                .filter(|t| !t.is_empty());
            self.start(
                &ctx,
                &StartSpec {
                    container: &as_container,
                    target_container_name: target,
                },
                &mut result,
            )
            .await;
        }
        let inits = spec
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default();
        for idx in &changes.init_containers_to_start {
            let Some(c) = inits.get(*idx) else { continue };
            if !self
                .start(
                    &ctx,
                    &StartSpec {
                        container: c,
                        target_container_name: None,
                    },
                    &mut result,
                )
                .await
            {
                if c.restart_policy.as_deref() == Some("Always") {
                    continue; // a sidecar failing to start does not block the others
                }
                return result;
            }
        }
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        for idx in &changes.containers_to_start {
            if let Some(c) = containers.get(*idx) {
                self.start(
                    &ctx,
                    &StartSpec {
                        container: c,
                        target_container_name: None,
                    },
                    &mut result,
                )
                .await;
            }
        }
        result
    }

    /// `createPodSandbox`: creates the pod log directory, then `RunPodSandbox`.
    async fn create_pod_sandbox(&self, pod: &ApiPod, attempt: u32) -> Result<String, String> {
        let config = generate_pod_sandbox_config(
            self.helper.as_ref(),
            &self.config.resources,
            &self.config.pod_logs_dir,
            pod,
            attempt,
        )
        .map_err(|e| {
            format!(
                "GeneratePodSandboxConfig for pod {:?} failed: {e}",
                format_pod(pod)
            )
        })?;
        let log_dir = std::path::Path::new(&config.log_directory);
        self.os.mkdir_all(log_dir).map_err(|e| {
            format!(
                "create pod log directory {:?} failed: {e}",
                config.log_directory
            )
        })?;
        let runtime_handler = "";
        self.runtime
            .run_pod_sandbox(&config, runtime_handler)
            .await
            .map_err(|e| format!("Failed to create pod sandbox: {e}"))
    }

    /// `start` in `SyncPod`: back-off check, then `startContainer`; records the result.
    /// Returns whether the container started.
    async fn start(
        &self,
        ctx: &StartCtx<'_>,
        spec: &StartSpec<'_>,
        result: &mut PodSyncResult,
    ) -> bool {
        let mut r = SyncResult::new(SyncAction::StartContainer, spec.container.name.clone());
        if let Some(msg) = do_backoff(ctx.pod, spec.container, ctx.pod_status, ctx.backoff) {
            tracing::debug!(pod = %format_pod(ctx.pod), container = %spec.container.name, "Backing Off restarting container in pod");
            r.fail(SyncErrorKind::CrashLoopBackOff, msg);
            result.add_sync_result(r);
            return false;
        }
        let ok = match self.start_container(ctx, spec).await {
            Ok(()) => true,
            Err((kind, msg)) => {
                if kind != SyncErrorKind::ImagePullBackOff {
                    tracing::error!(pod = %format_pod(ctx.pod), container = %spec.container.name, reason = %kind, message = %msg, "Container start failed in pod");
                }
                r.fail(kind, msg);
                false
            }
        };
        result.add_sync_result(r);
        ok
    }

    /// `startContainer`: pull, create, start, legacy log symlink, postStart hook.
    async fn start_container(
        &self,
        ctx: &StartCtx<'_>,
        spec: &StartSpec<'_>,
    ) -> Result<(), (SyncErrorKind, String)> {
        let (pod, container) = (ctx.pod, spec.container);
        let image_ref = self
            .images
            .ensure_image_exists(
                pod,
                container,
                ctx.pull_secrets,
                Some(ctx.sandbox_config),
                "",
            )
            .await
            .map_err(|e| (e.kind, e.message))?;

        let restart_count = match ctx
            .pod_status
            .find_container_status_by_name(&container.name)
        {
            Some(s) => s.restart_count + 1,
            None => self.restart_count_from_log_dir(pod, &container.name),
        };
        let target: Option<ContainerId> = match spec.target_container_name {
            None => None,
            Some(t) => Some(
                ctx.pod_status
                    .find_container_status_by_name(t)
                    .map(|s| s.id.clone())
                    .ok_or_else(|| {
                        (
                            SyncErrorKind::CreateContainerConfig,
                            format!("unable to find target container {t}"),
                        )
                    })?,
            ),
        };
        let config_err = |m: String| (SyncErrorKind::CreateContainerConfig, m);
        let image_user = self
            .images
            .image_user(&image_ref)
            .await
            .map_err(config_err)?;
        let seccomp_root = self.config.root_dir.join("seccomp");
        let cfg_ctx = ContainerConfigContext {
            helper: self.helper.as_ref(),
            os: self.os.as_ref(),
            resources: &self.config.resources,
            pod_logs_root: &self.config.pod_logs_dir,
            seccomp_root: &seccomp_root,
            seccomp_default: self.config.seccomp_default,
        };
        let config = generate_container_config(
            &cfg_ctx,
            pod,
            container,
            restart_count,
            ctx.pod_ips,
            &image_ref,
            &image_user,
            target.as_ref(),
        )
        .map_err(|e| config_err(e.to_string()))?;

        let id = self
            .runtime
            .create_container(ctx.sandbox_id, &config, ctx.sandbox_config)
            .await
            .map_err(|e| (SyncErrorKind::CreateContainer, e.to_string()))?;
        self.runtime
            .start_container(&id)
            .await
            .map_err(|e| (SyncErrorKind::RunContainer, e.to_string()))?;
        tracing::info!(pod = %format_pod(pod), container = %container.name, container_id = %id, "Started container");

        self.create_legacy_log_symlink(
            pod,
            &container.name,
            &id,
            &ctx.sandbox_config.log_directory,
            &config.log_path,
        );

        if let Some(hook) = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.post_start.as_ref())
        {
            let cid = self.id(&id);
            if let Err(e) = self
                .run_lifecycle_handler(&cid, pod, container, hook, ctx.pod_ips, None)
                .await
            {
                tracing::error!(pod = %format_pod(pod), container = %container.name, error = %e, "Failed to execute PostStartHook");
                if let Err(e) = self
                    .kill_container(
                        Some(pod),
                        &cid,
                        &container.name,
                        "FailedPostStartHook",
                        KillReason::FailedPostStartHook,
                        None,
                    )
                    .await
                {
                    tracing::error!(error = %e, "Failed to kill container");
                }
                return Err((SyncErrorKind::PostStartHook, e));
            }
        }
        Ok(())
    }

    /// `calcRestartCountByLogDir`: after a runtime lost its state, continue numbering from
    /// the highest `<n>.log` left in the container's log directory.
    fn restart_count_from_log_dir(&self, pod: &ApiPod, container: &str) -> i32 {
        let (ns, name, uid) = pod_identity(pod);
        let dir = container_logs_directory(&self.config.pod_logs_dir, ns, name, uid, container);
        let Ok(entries) = self.os.read_dir(&dir) else {
            return 0;
        };
        entries
            .iter()
            .filter_map(|f| {
                let digits: String = f.chars().take_while(char::is_ascii_digit).collect();
                let rest = &f[digits.len()..];
                (!digits.is_empty() && rest.starts_with(".log"))
                    .then(|| digits.parse::<i32>().ok())
                    .flatten()
            })
            .map(|n| n.saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// Symlinks `/var/log/containers/<pod>_<ns>_<container>-<id>.log` to the CRI log when it exists.
    fn create_legacy_log_symlink(
        &self,
        pod: &ApiPod,
        container: &str,
        id: &str,
        log_dir: &str,
        log_path: &str,
    ) {
        let (ns, name, _) = pod_identity(pod);
        let target = std::path::Path::new(log_dir).join(log_path);
        if !self.os.exists(&target) {
            return;
        }
        let link = crate::logs::legacy_log_symlink(
            &self.config.legacy_container_logs_dir,
            id,
            container,
            name,
            ns,
        );
        if let Err(e) = self
            .os
            .mkdir_all(&self.config.legacy_container_logs_dir)
            .and_then(|()| self.os.symlink(&target, &link))
        {
            tracing::error!(path = %link.display(), error = %e, "Failed to create legacy symbolic link");
        }
    }

    /// `pruneInitContainersBeforeStart`: keep only the newest exited instance of each init container.
    async fn prune_init_containers_before_start(&self, pod: &ApiPod, status: &PodStatus) {
        for c in pod
            .spec
            .iter()
            .flat_map(|s| s.init_containers.iter().flatten())
        {
            let exited = status.container_statuses.iter().filter(|s| {
                s.name == c.name
                    && matches!(s.state, ContainerState::Exited | ContainerState::Unknown)
            });
            for s in exited.skip(1) {
                if let Err(e) = self.remove_container(&s.id.id).await {
                    tracing::error!(container = %s.name, error = %e, "failed to remove pod init container");
                }
            }
        }
    }

    /// `purgeInitContainers`: remove every init container instance (a new sandbox starts over).
    async fn purge_init_containers(&self, pod: &ApiPod, status: &PodStatus) {
        for c in pod
            .spec
            .iter()
            .flat_map(|s| s.init_containers.iter().flatten())
        {
            for s in status
                .container_statuses
                .iter()
                .filter(|s| s.name == c.name)
            {
                if let Err(e) = self.remove_container(&s.id.id).await {
                    tracing::error!(container = %s.name, error = %e, "failed to remove pod init container");
                }
            }
        }
    }
}

/// Inputs shared by the container starts of one sync.
struct StartCtx<'a> {
    sandbox_id: &'a str,
    sandbox_config: &'a PodSandboxConfig,
    pod: &'a ApiPod,
    pod_status: &'a PodStatus,
    pull_secrets: &'a [Secret],
    pod_ips: &'a [String],
    backoff: &'a Backoff,
}

/// An ephemeral container seen as a container (`(*v1.Container)(&ec.EphemeralContainerCommon)`).
fn ephemeral_as_container(ec: &k8s_openapi::api::core::v1::EphemeralContainer) -> Container {
    // Both types serialize to the same JSON fields.
    serde_json::to_value(ec)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_else(|| Container {
            name: ec.name.clone(),
            image: ec.image.clone(),
            ..Container::default()
        })
}

/// `doBackOff`: `Some(message)` while the container's last exit is within its back-off.
pub(crate) fn do_backoff(
    pod: &ApiPod,
    container: &Container,
    status: &PodStatus,
    backoff: &Backoff,
) -> Option<String> {
    let exited = status
        .container_statuses
        .iter()
        .find(|s| s.name == container.name && s.state == ContainerState::Exited)?;
    let finished = exited.finished_at.unwrap_or_default();
    let key = get_stable_key(pod, container);
    if backoff.is_in_backoff_since(&key, finished) {
        let d = backoff.get(&key);
        return Some(format!(
            "back-off {} restarting failed container={} pod={}",
            go_duration(d),
            container.name,
            format_pod(pod)
        ));
    }
    backoff.next(&key, finished);
    None
}

/// Whole-second durations the way Go prints them (`10s`, `1m20s`, `5m0s`).
pub(crate) fn go_duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, m, sec) => format!("{h}h{m}m{sec}s"),
    }
}
