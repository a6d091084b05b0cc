//! Stopping containers and pods (upstream `kuberuntime_container.go` `killContainer`,
//! `killContainersWithSyncResult`, `restoreSpecsFromContainerLabels`, `removeContainer`, and
//! `kuberuntime_manager.go` `killPodWithSyncResult`, `kuberuntime_termination_order.go`).

use std::time::{Duration, Instant};

use futures::future::join_all;
use k8s_openapi::api::core::v1::{Container as ApiContainer, Lifecycle, Pod as ApiPod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_container::events::{EventType, reasons};
use kubelet_container::{
    ContainerId, Pod, PodSyncResult, RuntimeError, SyncAction, SyncErrorKind, SyncResult,
    is_restartable_init_container,
};

use crate::actions::KillReason;
use crate::container::{MINIMUM_GRACE_PERIOD_SECONDS, termination_grace_period};
use crate::labels::{container_info_from_annotations, container_info_from_labels};
use crate::manager::{KubeGenericRuntimeManager, cri_err};
use crate::sandbox::pod_logs_directory;

/// The spec of `name` in `pod`: regular, init or ephemeral.
fn container_spec(pod: &ApiPod, name: &str) -> Option<ApiContainer> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
        .cloned()
        .or_else(|| {
            spec.ephemeral_containers
                .iter()
                .flatten()
                .find(|c| c.name == name)
                .map(|ec| ApiContainer {
                    name: ec.name.clone(),
                    lifecycle: ec.lifecycle.clone(),
                    ..ApiContainer::default()
                })
        })
}

/// The `StopContainer` timeout: what is left of the grace period after waiting for the
/// container's turn, never below `minimumGracePeriodInSeconds` (2 s) to avoid needless SIGKILLs.
pub fn stop_timeout(remaining_grace: i64, waited: Duration) -> i64 {
    let waited = i64::try_from(waited.as_secs()).unwrap_or(i64::MAX);
    remaining_grace
        .saturating_sub(waited)
        .max(MINIMUM_GRACE_PERIOD_SECONDS)
}

impl KubeGenericRuntimeManager {
    /// `restoreSpecsFromContainerLabels`: enough of the pod and container to stop it
    /// properly when the kubelet no longer has the pod (e.g. deleted while it was down).
    async fn restore_specs(
        &self,
        id: &ContainerId,
    ) -> Result<(ApiPod, ApiContainer), RuntimeError> {
        let resp = self
            .runtime
            .container_status(&id.id, false)
            .await
            .map_err(cri_err)?;
        let s = resp
            .status
            .ok_or_else(|| RuntimeError::Invalid("container status is nil".into()))?;
        let l = container_info_from_labels(&s.labels);
        let a = container_info_from_annotations(&s.annotations);
        let pod = ApiPod {
            metadata: ObjectMeta {
                uid: Some(l.pod_uid),
                name: Some(l.pod_name),
                namespace: Some(l.pod_namespace),
                deletion_grace_period_seconds: a.pod_deletion_grace_period,
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                termination_grace_period_seconds: a.pod_termination_grace_period,
                ..PodSpec::default()
            }),
            ..ApiPod::default()
        };
        let container = ApiContainer {
            name: l.container_name,
            ports: (!a.container_ports.is_empty()).then_some(a.container_ports),
            termination_message_path: Some(a.termination_message_path),
            lifecycle: a.pre_stop_handler.map(|h| Lifecycle {
                pre_stop: Some(h),
                ..Lifecycle::default()
            }),
            ..ApiContainer::default()
        };
        Ok((pod, container))
    }

    /// `killContainer`: preStop hook within the grace period, then `StopContainer` with the
    /// remaining grace (at least 2 s). `waited` is time already spent waiting for this
    /// container's turn (sidecar ordering) and is taken off the grace period.
    pub(crate) async fn kill_container(
        &self,
        pod: Option<&ApiPod>,
        id: &ContainerId,
        name: &str,
        message: &str,
        reason: KillReason,
        grace_override: Option<i64>,
    ) -> Result<(), RuntimeError> {
        self.kill_container_after(
            pod,
            id,
            name,
            message,
            reason,
            grace_override,
            Duration::ZERO,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn kill_container_after(
        &self,
        pod: Option<&ApiPod>,
        id: &ContainerId,
        name: &str,
        message: &str,
        reason: KillReason,
        grace_override: Option<i64>,
        waited: Duration,
    ) -> Result<(), RuntimeError> {
        let (pod, spec) = match pod {
            Some(p) => {
                let spec = container_spec(p, name).ok_or_else(|| {
                    RuntimeError::Invalid(format!("failed to get containerSpec {name:?} (id={id:?}) in pod when killing container for reason {message:?}"))
                })?;
                (p.clone(), spec)
            }
            None => self.restore_specs(id).await?,
        };
        let mut grace =
            grace_override.unwrap_or_else(|| termination_grace_period(&pod, &spec, reason));
        let message = if message.is_empty() {
            format!("Stopping container {}", spec.name)
        } else {
            message.to_string()
        };
        tracing::info!(pod = pod.metadata.name.as_deref().unwrap_or_default(), container = name, %message, "Killing container");
        self.recorder.container_event(
            &pod,
            &spec.name,
            &id.id,
            EventType::Normal,
            reasons::KILLING_CONTAINER,
            &message,
        );

        if let Some(pre_stop) = spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_stop.as_ref())
            .filter(|_| grace > 0)
        {
            let started = Instant::now();
            let limit = Duration::from_secs(u64::try_from(grace).unwrap_or(0));
            let run = self.run_lifecycle_handler(id, &pod, &spec, pre_stop, &[], Some(limit));
            match tokio::time::timeout(limit, run).await {
                Ok(Err(e)) => {
                    tracing::error!(container = name, error = %e, "PreStop hook failed");
                    // Not the hook's message: secrets must not leak to the server.
                    self.recorder.container_event(
                        &pod,
                        &spec.name,
                        &id.id,
                        EventType::Warning,
                        reasons::FAILED_PRE_STOP_HOOK,
                        "PreStopHook failed",
                    );
                }
                Err(_) => tracing::info!(
                    container = name,
                    grace,
                    "PreStop hook not completed in grace period"
                ),
                Ok(Ok(())) => {}
            }
            grace -= i64::try_from(started.elapsed().as_secs()).unwrap_or(grace);
        }
        let grace = stop_timeout(grace, waited);
        match self.runtime.stop_container(&id.id, grace).await {
            Err(e) if !e.is_not_found() => {
                tracing::error!(container = name, grace, error = %e, "Container termination failed with gracePeriod");
                Err(cri_err(e))
            }
            _ => Ok(()),
        }
    }

    /// `killContainersWithSyncResult`: regular containers in parallel; then sidecars one by
    /// one in reverse spec order, each after the ones started later have stopped.
    async fn kill_containers_with_sync_result(
        &self,
        pod: Option<&ApiPod>,
        running: &Pod,
        grace_override: Option<i64>,
    ) -> Vec<SyncResult> {
        let sidecar_order: Vec<String> = pod
            .and_then(|p| p.spec.as_ref())
            .and_then(|s| s.init_containers.as_ref())
            .map(|ics| {
                ics.iter()
                    .filter(|c| is_restartable_init_container(c))
                    .map(|c| c.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        let (sidecars, regular): (Vec<_>, Vec<_>) = running
            .containers
            .iter()
            .partition(|c| sidecar_order.contains(&c.name));
        let started = Instant::now();
        let kill = |c: &kubelet_container::Container, waited: Duration| {
            let (id, name) = (c.id.clone(), c.name.clone());
            async move {
                let mut r = SyncResult::new(SyncAction::KillContainer, name.clone());
                if let Err(e) = self
                    .kill_container_after(
                        pod,
                        &id,
                        &name,
                        "",
                        KillReason::Unknown,
                        grace_override,
                        waited,
                    )
                    .await
                {
                    r.fail(SyncErrorKind::KillContainer, e.to_string());
                }
                r
            }
        };
        let mut results = join_all(regular.iter().map(|c| kill(c, Duration::ZERO))).await;
        for name in sidecar_order.iter().rev() {
            for c in sidecars.iter().filter(|c| &c.name == name) {
                results.push(kill(c, started.elapsed()).await);
            }
        }
        results
    }

    /// `killPodWithSyncResult`: stop every container, then every sandbox.
    pub(crate) async fn kill_pod_with_sync_result(
        &self,
        pod: Option<&ApiPod>,
        running: &Pod,
        grace_override: Option<i64>,
    ) -> PodSyncResult {
        let mut result = PodSyncResult::default();
        for r in self
            .kill_containers_with_sync_result(pod, running, grace_override)
            .await
        {
            result.add_sync_result(r);
        }
        let mut r = SyncResult::new(SyncAction::KillPodSandbox, running.id.clone());
        for sandbox in &running.sandboxes {
            if let Err(e) = self.runtime.stop_pod_sandbox(&sandbox.id.id).await
                && !e.is_not_found()
            {
                tracing::error!(sandbox = %sandbox.id.id, error = %e, "Failed to stop sandbox");
                r.fail(SyncErrorKind::KillPodSandbox, e.to_string());
            }
        }
        result.add_sync_result(r);
        result
    }

    /// `removeContainer`: the internal `PostStopContainer` hook, the container's logs (so a
    /// failure leaves the container for a retry), then the container.
    pub(crate) async fn remove_container(&self, id: &str) -> Result<(), RuntimeError> {
        self.internal_lifecycle
            .post_stop_container(id)
            .map_err(RuntimeError::Invalid)?;
        self.remove_container_log(id).await?;
        match self.runtime.remove_container(id).await {
            Err(e) if !e.is_not_found() => Err(cri_err(e)),
            _ => Ok(()),
        }
    }

    async fn remove_container_log(&self, id: &str) -> Result<(), RuntimeError> {
        let resp = match self.runtime.container_status(id, false).await {
            Err(e) if e.is_not_found() => return Ok(()),
            r => r.map_err(cri_err)?,
        };
        let Some(s) = resp.status else { return Ok(()) };
        self.logs.clean(&s.log_path);
        let l = container_info_from_labels(&s.labels);
        let link = crate::logs::legacy_log_symlink(
            &self.config.legacy_container_logs_dir,
            id,
            &l.container_name,
            &l.pod_name,
            &l.pod_namespace,
        );
        match self.os.remove_file(&link) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(RuntimeError::Invalid(format!(
                    "failed to remove container {id:?} log legacy symbolic link {}: {e}",
                    link.display()
                )))
            }
            _ => Ok(()),
        }
    }

    /// Removes everything the runtime holds for a pod: its containers, its sandboxes and its
    /// log directory. Used once a pod is gone for good (what container GC does for deleted
    /// pods, done right away).
    pub async fn remove_pod(&self, uid: &str) -> Result<(), RuntimeError> {
        let status = self.get_pod_status_impl(uid, "", "").await?;
        for c in &status.container_statuses {
            self.remove_container(&c.id.id).await?;
        }
        for s in &status.sandbox_statuses {
            if let Err(e) = self.runtime.stop_pod_sandbox(&s.id).await
                && !e.is_not_found()
            {
                return Err(cri_err(e));
            }
            match self.runtime.remove_pod_sandbox(&s.id).await {
                Err(e) if !e.is_not_found() => return Err(cri_err(e)),
                _ => {}
            }
        }
        if let Some(s) = status.sandbox_statuses.first() {
            let dir = pod_logs_directory(&self.config.pod_logs_dir, &s.namespace, &s.name, uid);
            if let Err(e) = self.os.remove_dir_all(&dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::error!(path = %dir.display(), error = %e, "Failed to remove pod logs directory");
            }
        }
        Ok(())
    }
}
