//! `SyncPod` (upstream `kuberuntime_manager.go` `SyncPod`, `doBackOff`, and
//! `createPodSandbox` in `kuberuntime_sandbox.go`); container starts are in `start.rs`.

use k8s_openapi::api::core::v1::{Container, Pod as ApiPod, Secret};
use kubelet_container::{
    Backoff, ContainerState, PodStatus, PodSyncResult, SyncAction, SyncErrorKind, SyncResult,
    convert_pod_status_to_running_pod, get_stable_key, is_host_network_pod,
    is_restartable_init_container,
};

use kubelet_container::events::{EventType, reasons};
use kubelet_container::timeline::Step;

use crate::actions::compute_pod_actions;
use crate::manager::KubeGenericRuntimeManager;
use crate::sandbox::{generate_pod_sandbox_config, pod_identity};
use crate::start::{StartCtx, StartSpec};

/// `format.Pod`: `name_namespace(uid)`.
pub(crate) fn format_pod(pod: &ApiPod) -> String {
    let (ns, name, uid) = pod_identity(pod);
    format!("{name}_{ns}({uid})")
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
        let changes = compute_pod_actions(pod, pod_status, self.probes.as_ref(), &self.actuated);
        tracing::debug!(pod = %format_pod(pod), actions = ?changes, "computePodActions got for pod");
        if changes.create_sandbox {
            // Test-only slowdown (KRS_TEST_SYNC_DELAY_MS); nothing when unset.
            crate::test_hooks::delay_sync().await;
        }
        if changes.create_sandbox && !changes.sandbox_id.is_empty() {
            self.recorder.pod_event(
                pod,
                EventType::Normal,
                reasons::SANDBOX_CHANGED,
                "Pod sandbox changed, it will be killed and re-created.",
            );
        }

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
            kubelet_metrics::with(|m| m.started_pods_total.inc());
            match self.create_pod_sandbox(pod, changes.attempt).await {
                Ok(id) => sandbox_id = id,
                Err((msg, err)) => {
                    if self.pod_state.is_pod_termination_requested(
                        pod.metadata.uid.as_deref().unwrap_or_default(),
                    ) {
                        tracing::debug!(pod = %format_pod(pod), "Pod was deleted and sandbox failed to be created");
                        return result;
                    }
                    kubelet_metrics::with(|m| m.started_pods_errors_total.inc());
                    tracing::error!(pod = %format_pod(pod), error = %err, "CreatePodSandbox for pod failed");
                    self.recorder.pod_event(
                        pod,
                        EventType::Warning,
                        reasons::FAILED_CREATE_POD_SANDBOX,
                        &format!("Failed to create pod sandbox: {err}"),
                    );
                    r.fail(SyncErrorKind::CreatePodSandbox, msg);
                    result.add_sync_result(r);
                    return result;
                }
            }
            result.add_sync_result(r);
            let timeline = kubelet_container::timeline::global();
            let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
            timeline.record(pod_uid, Step::SandboxCreated);
            match self.runtime.pod_sandbox_status(&sandbox_id, false).await {
                Ok(resp) => match resp.status {
                    Some(s) if !is_host_network_pod(pod) => {
                        let net = s.network.unwrap_or_default();
                        pod_ips = std::iter::once(net.ip)
                            .filter(|ip| !ip.is_empty())
                            .chain(net.additional_ips.into_iter().map(|i| i.ip))
                            .collect();
                        timeline.record(pod_uid, Step::NetworkReady);
                    }
                    Some(_) => {
                        timeline.record(pod_uid, Step::NetworkReady);
                    }
                    None => {
                        result.fail("pod sandbox status is nil");
                        return result;
                    }
                },
                Err(e) => {
                    self.recorder.pod_event(
                        pod,
                        EventType::Warning,
                        reasons::FAILED_STATUS_POD_SANDBOX,
                        &format!("Unable to get pod sandbox status: {e}"),
                    );
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
            self.cpu_allocation.pod_has_exclusive_cpus(pod),
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
        // `getImageVolumes`: a RuntimeClass that cannot be resolved fails the sandbox
        // config result.
        let runtime_class_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.runtime_class_name.as_deref());
        let has_image_volumes = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .any(|v| v.image.is_some());
        let mut image_volume_pulls = crate::image_volumes::ImageVolumePulls::new();
        if has_image_volumes && kubelet_container::gates::image_volume() {
            let handler = match self
                .runtime_classes
                .lookup_runtime_handler(runtime_class_name)
            {
                Ok(h) => h,
                Err(e) => {
                    tracing::error!(pod = %format_pod(pod), error = %e, "Get image volumes for pod failed");
                    config_result.fail(SyncErrorKind::ConfigPodSandbox, e.to_string());
                    result.add_sync_result(config_result);
                    return result;
                }
            };
            image_volume_pulls = crate::image_volumes::get_image_volumes(
                &self.images,
                pod,
                &sandbox_config,
                pull_secrets,
                &handler,
            )
            .await;
        }
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
            image_volume_pulls: &image_volume_pulls,
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
                    metric_label: kubelet_metrics::container_type::EPHEMERAL_CONTAINER,
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
                        metric_label: kubelet_metrics::container_type::INIT_CONTAINER,
                    },
                    &mut result,
                )
                .await
            {
                if is_restartable_init_container(c) {
                    continue; // a sidecar failing to start does not block the others
                }
                return result;
            }
        }
        // Step 7: resize running containers in place.
        if crate::resize::in_place_pod_vertical_scaling_disallowed(pod).is_none()
            && (changes.containers_to_update.values().any(|l| !l.is_empty())
                || changes.update_pod_resources)
        {
            result.add_sync_result(self.do_pod_resize_action(pod, &changes).await);
        }
        let containers = spec.map(|s| s.containers.as_slice()).unwrap_or_default();
        for idx in &changes.containers_to_start {
            if let Some(c) = containers.get(*idx) {
                self.start(
                    &ctx,
                    &StartSpec {
                        container: c,
                        target_container_name: None,
                        metric_label: kubelet_metrics::container_type::CONTAINER,
                    },
                    &mut result,
                )
                .await;
            }
        }
        result
    }

    /// `createPodSandbox`: generates the sandbox config (with the pod's RuntimeClass
    /// handler and user namespace, upstream `NamespacesForPod`), creates the pod log
    /// directory, then `RunPodSandbox` with that handler. Fails with the message for the
    /// sync result and the error for the event.
    async fn create_pod_sandbox(
        &self,
        pod: &ApiPod,
        attempt: u32,
    ) -> Result<String, (String, String)> {
        let generate_failed = |e: String| {
            (
                format!(
                    "Failed to generate sandbox config for pod {:?}: {e}",
                    format_pod(pod)
                ),
                e,
            )
        };
        let failed = |e: String| {
            (
                format!(
                    "Failed to create sandbox for pod {:?}: {e}",
                    format_pod(pod)
                ),
                e,
            )
        };
        let mut config = generate_pod_sandbox_config(
            self.helper.as_ref(),
            &self.config.resources,
            self.cpu_allocation.pod_has_exclusive_cpus(pod),
            &self.config.pod_logs_dir,
            pod,
            attempt,
        )
        .map_err(|e| generate_failed(e.to_string()))?;
        // Upstream resolves the handler (and the user namespace) inside the config's
        // `NamespacesForPod` when the pod has a securityContext (API pods always do), else
        // only before `RunPodSandbox`: the same error, another sync-result message.
        let in_config = pod
            .spec
            .as_ref()
            .is_some_and(|s| s.security_context.is_some());
        let runtime_class_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.runtime_class_name.as_deref());
        let runtime_handler = self
            .runtime_classes
            .lookup_runtime_handler(runtime_class_name)
            .map_err(|e| {
                if in_config {
                    generate_failed(e.to_string())
                } else {
                    failed(e.to_string())
                }
            })?;
        if crate::userns::wants_pod_user_namespace(pod) {
            // Upstream reads the handlers of the last `Status` (`updateRuntimeUp`); an
            // unanswered `Status` leaves them empty, which means "not supported".
            let handlers = self
                .runtime
                .status(false)
                .await
                .map(|r| r.runtime_handlers)
                .unwrap_or_default();
            let userns = crate::userns::user_namespace_for_pod(
                pod,
                &runtime_handler,
                &handlers,
                self.userns.as_deref(),
            )
            .map_err(|e| generate_failed(e.to_string()))?;
            if let Some(ns) = config
                .linux
                .as_mut()
                .and_then(|l| l.security_context.as_mut())
                .and_then(|sc| sc.namespace_options.as_mut())
            {
                ns.userns_options = Some(userns);
            }
        }
        let log_dir = std::path::Path::new(&config.log_directory);
        self.os.mkdir_all(log_dir).map_err(|e| {
            (
                format!(
                    "Failed to create log directory for pod {:?}: {e}",
                    format_pod(pod)
                ),
                e.to_string(),
            )
        })?;
        if !runtime_handler.is_empty() {
            tracing::debug!(pod = %format_pod(pod), runtime_handler = %runtime_handler, "Running pod with runtime handler");
        }
        self.runtime
            .run_pod_sandbox(&config, &runtime_handler)
            .await
            .map_err(|e| failed(e.to_string()))
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
