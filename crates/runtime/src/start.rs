//! Starting one container (upstream `kuberuntime_container.go` `startContainer`,
//! `calcRestartCountByLogDir`, the legacy log symlink, and the `start` helper of `SyncPod`).

use k8s_openapi::api::core::v1::{Container, Pod as ApiPod, Secret};
use kubelet_container::events::{EventType, reasons};
use kubelet_container::timeline::Step;
use kubelet_container::{
    Backoff, ContainerId, PodStatus, PodSyncResult, SyncAction, SyncErrorKind, SyncResult,
};
use kubelet_cri::v1::PodSandboxConfig;

use crate::actions::KillReason;
use crate::container::{ContainerConfigContext, generate_container_config};
use crate::manager::KubeGenericRuntimeManager;
use crate::sandbox::{container_logs_directory, pod_identity};
use crate::sync::{do_backoff, format_pod};

/// What to start: a regular/init container, or an ephemeral one with its target.
pub(crate) struct StartSpec<'a> {
    pub(crate) container: &'a Container,
    pub(crate) target_container_name: Option<&'a str>,
    /// The `container_type` label of `kubelet_started_containers_total`
    /// (`kubelet_metrics::container_type`).
    pub(crate) metric_label: &'static str,
}

/// Inputs shared by the container starts of one sync.
pub(crate) struct StartCtx<'a> {
    pub(crate) sandbox_id: &'a str,
    pub(crate) sandbox_config: &'a PodSandboxConfig,
    pub(crate) pod: &'a ApiPod,
    pub(crate) pod_status: &'a PodStatus,
    pub(crate) pull_secrets: &'a [Secret],
    pub(crate) pod_ips: &'a [String],
    pub(crate) backoff: &'a Backoff,
    /// The pulls of the pod's image volumes (`getImageVolumes`).
    pub(crate) image_volume_pulls: &'a crate::image_volumes::ImageVolumePulls,
}

impl KubeGenericRuntimeManager {
    /// `start` in `SyncPod`: back-off check, then `startContainer`; records the result.
    /// Returns whether the container started.
    pub(crate) async fn start(
        &self,
        ctx: &StartCtx<'_>,
        spec: &StartSpec<'_>,
        result: &mut PodSyncResult,
    ) -> bool {
        let mut r = SyncResult::new(SyncAction::StartContainer, spec.container.name.clone());
        if let Some(msg) = do_backoff(ctx.pod, spec.container, ctx.pod_status, ctx.backoff) {
            self.recorder.container_event(
                ctx.pod,
                &spec.container.name,
                "",
                EventType::Warning,
                reasons::BACK_OFF_START_CONTAINER,
                &format!(
                    "Back-off restarting failed container {} in pod {}",
                    spec.container.name,
                    format_pod(ctx.pod)
                ),
            );
            tracing::debug!(pod = %format_pod(ctx.pod), container = %spec.container.name, "Backing Off restarting container in pod");
            r.fail(SyncErrorKind::CrashLoopBackOff, msg);
            result.add_sync_result(r);
            return false;
        }
        kubelet_metrics::with(|m| {
            m.started_containers_total
                .with_label_values(&[spec.metric_label])
                .inc();
        });
        // "We fail late here to populate the "ErrImagePull" and "ImagePullBackOff"
        // correctly to the end user."
        let image_volumes = match crate::image_volumes::to_kube_container_image_volumes(
            &self.recorder,
            ctx.image_volume_pulls,
            ctx.pod,
            spec.container,
        ) {
            Ok(v) => v,
            Err((kind, msg)) => {
                r.fail(kind, msg);
                result.add_sync_result(r);
                return false;
            }
        };
        let started = self.start_container(ctx, spec, &image_volumes).await;
        crate::image_volumes::increment_image_volume_metrics(
            started.as_ref().err(),
            spec.container,
            &image_volumes,
        );
        let ok = match started {
            Ok(()) => true,
            Err((kind, msg)) => {
                // The error codes have a bounded cardinality (upstream's comment).
                let code = kind.to_string();
                kubelet_metrics::with(|m| {
                    m.started_containers_errors_total
                        .with_label_values(&[spec.metric_label, &code])
                        .inc();
                });
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
        image_volumes: &crate::helper::ImageVolumes,
    ) -> Result<(), (SyncErrorKind, String)> {
        let (pod, container) = (ctx.pod, spec.container);
        // `recordContainerEvent(..., "Error: %v", s.Message())` on each failure below.
        let failed = |reason: &str, id: &str, err: &dyn std::fmt::Display| {
            self.recorder.container_event(
                pod,
                &container.name,
                id,
                EventType::Warning,
                reason,
                &format!("Error: {err}"),
            );
        };
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
            .map_err(|e| {
                // The error of EnsureImageExists is the kind (`ErrImagePull`, ...).
                failed(reasons::FAILED_TO_CREATE_CONTAINER, "", &e.kind);
                (e.kind, e.message)
            })?;

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
                        let msg = format!("unable to find target container {t}");
                        failed(reasons::FAILED_TO_CREATE_CONTAINER, "", &msg);
                        (SyncErrorKind::CreateContainerConfig, msg)
                    })?,
            ),
        };
        let config_err = |m: String| {
            failed(reasons::FAILED_TO_CREATE_CONTAINER, "", &m);
            (SyncErrorKind::CreateContainerConfig, m)
        };
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
            disable_cpu_quota: self
                .cpu_allocation
                .container_has_exclusive_cpus(pod, container),
        };
        let mut config = generate_container_config(
            &cfg_ctx,
            pod,
            container,
            restart_count,
            ctx.pod_ips,
            &image_ref,
            &image_user,
            target.as_ref(),
            image_volumes,
        )
        .await
        .map_err(|e| config_err(e.to_string()))?;
        // Ours: a runtime that predates image volumes would ignore the CRI mount's image.
        if let Some(msg) = self
            .image_volume_support
            .check(pod, container, image_volumes)
        {
            failed(reasons::FAILED_TO_CREATE_CONTAINER, "", &msg);
            return Err((SyncErrorKind::CreateContainer, msg));
        }
        self.set_actuated_container_resources(pod, container);
        self.internal_lifecycle
            .pre_create_container(pod, container, &mut config)
            .map_err(|m| {
                self.recorder.container_event(
                    pod,
                    &container.name,
                    "",
                    EventType::Warning,
                    reasons::FAILED_TO_CREATE_CONTAINER,
                    &format!("Internal PreCreateContainer hook failed: {m}"),
                );
                (SyncErrorKind::PreCreateHook, m)
            })?;

        let id = self
            .runtime
            .create_container(ctx.sandbox_id, &config, ctx.sandbox_config)
            .await
            .map_err(|e| {
                let msg = e.to_string();
                failed(reasons::FAILED_TO_CREATE_CONTAINER, "", &msg);
                (SyncErrorKind::CreateContainer, msg)
            })?;
        let event = |t, reason, message: &str| {
            self.recorder
                .container_event(pod, &container.name, &id, t, reason, message);
        };
        if let Err(m) = self
            .internal_lifecycle
            .pre_start_container(pod, container, &id)
        {
            event(
                EventType::Warning,
                reasons::FAILED_TO_START_CONTAINER,
                &format!("Internal PreStartContainer hook failed: {m}"),
            );
            return Err((SyncErrorKind::PreStartHook, m));
        }
        event(
            EventType::Normal,
            reasons::CREATED_CONTAINER,
            "Container created",
        );
        let timeline = kubelet_container::timeline::global();
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        timeline.record_container(pod_uid, Step::ContainerCreated, &container.name);
        self.runtime.start_container(&id).await.map_err(|e| {
            let msg = e.to_string();
            failed(reasons::FAILED_TO_START_CONTAINER, &id, &msg);
            (SyncErrorKind::RunContainer, msg)
        })?;
        event(
            EventType::Normal,
            reasons::STARTED_CONTAINER,
            "Container started",
        );
        timeline.record_container(pod_uid, Step::ContainerStarted, &container.name);
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
            // Upstream runs the postStart exec hook with timeout 0 (`handlers.go`: "TODO: Pass
            // a proper timeout value"), which cri-client turns into an ExecSync without a
            // deadline: the hook may run as long as it likes, and only a cancelled pod sync
            // (the pod is killed) ends it. The pod workers drop this future then.
            if let Err(e) = self
                .run_lifecycle_handler(&cid, pod, container, hook, ctx.pod_ips, None)
                .await
            {
                tracing::error!(pod = %format_pod(pod), container = %container.name, error = %e, "Failed to execute PostStartHook");
                // Not the hook's message: secrets must not leak to the server.
                event(
                    EventType::Warning,
                    reasons::FAILED_POST_START_HOOK,
                    "PostStartHook failed",
                );
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
}
