//! The kubelet's side of the pod lifecycle contract: `SyncPod`, `SyncTerminatingPod`,
//! `SyncTerminatingRuntimePod` and `SyncTerminatedPod` of `pkg/kubelet/kubelet.go`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::{Pod as ApiPod, PodStatus as ApiPodStatus};
use kubelet_container::events::{EventRecorder, EventType, pod_ref, reasons};
use kubelet_container::{
    Backoff, ContainerState, Pod as RuntimePod, PodStatus, Runtime, SyncPodType,
    convert_pod_status_to_running_pod, get_stable_key,
};
use kubelet_podworkers::{PodStatusFn, PodSyncError, PodSyncer, WorkQueue};
use kubelet_status::{GenerateOptions, ReasonCache, StatusManager};
use tokio_util::sync::CancellationToken;

use super::pod_manager::pod_uid;

/// What the syncer works with (the parts of upstream's `Kubelet` struct it touches).
pub struct KubeletSyncer {
    /// The resources allocated to each pod: pods are synced as allocated (upstream's pod
    /// workers `UpdatePodFromAllocation`).
    pub allocation: Arc<super::allocation::AllocationManager>,
    /// The resources the runtime last applied (for `PodResizeInProgress`).
    pub actuated: Arc<kubelet_runtime::resize::ActuatedState>,
    /// The container runtime (kuberuntime over CRI).
    pub runtime: Arc<dyn Runtime>,
    /// Latest API status per pod.
    pub status_manager: Arc<StatusManager>,
    /// Last start failures per container, for waiting reasons.
    pub reason_cache: Arc<ReasonCache>,
    /// CrashLoopBackOff state per container.
    pub backoff: Arc<Backoff>,
    /// Pods whose containers wait out a back-off, to resync when it expires.
    pub backoff_requeue: Arc<WorkQueue>,
    /// The node's IPs (hostIP).
    pub host_ips: Vec<String>,
    /// Bounds how many pods drive the runtime (`SyncPod`) at once; see [`sync_pod_slots`].
    pub sync_slots: Arc<tokio::sync::Semaphore>,
    /// Pod-level cgroups, created before the sandbox (with `cgroupsPerQOS`).
    pub pod_cgroups: Option<Arc<super::pod_cgroups::PodCgroups>>,
    /// Mounts the pod's volumes before its containers start, unmounts them once it ended.
    pub volume_manager: Arc<kubelet_volume::VolumeManager>,
    /// Where events go.
    pub recorder: Arc<dyn EventRecorder>,
    /// Mirror pods of static pods (`None` in standalone mode).
    pub mirror_pod_client: Option<Arc<dyn kubelet_apipods::MirrorClient>>,
    /// The Node object mirror pods are owned by.
    pub node_lister: kubelet_apipods::NodeLister,
    /// Handlers that may fail a pod when its status is generated (`PodSyncHandlers`).
    pub pod_sync_handlers: Vec<Arc<dyn super::active_deadline::PodSyncHandler>>,
    /// The probe workers and their results (started/ready flags, restarts).
    pub probe_manager: kubelet_prober::ProbeManager,
    /// Asked to relist at once after containers started (see
    /// [`kubelet_pleg::GenericPleg::request_relist`]).
    pub pleg: Arc<kubelet_pleg::GenericPleg>,
    /// The ConfigMap/Secret/token managers (`None` in standalone mode): pull secrets.
    pub objects: Option<Arc<kubelet_objects::KubeletObjects>>,
    /// User namespace ID allocations (`None` with `UserNamespacesSupport` off).
    pub userns: Option<Arc<kubelet_runtime::userns::UsernsManager>>,
}

/// How many pods may be in the runtime's `SyncPod` at the same time: 12 per CPU.
///
/// Upstream lets every pod worker call the runtime at once. With 100 new pods that means
/// 100 concurrent RunPodSandbox calls, which thrash runc, the shims and CNI on a small node:
/// every pod finishes late and the makespan grows (bench/README.md measured 1.34× the CRI
/// floor at 100 pods on 2 CPUs). Bounding the concurrency lets pods start in waves, so the
/// first ones run sooner and the batch finishes sooner. Terminations are not bounded.
pub fn sync_pod_slots(cpus: usize) -> usize {
    cpus.max(1).saturating_mul(12)
}

/// Seconds since `kubernetes.io/config.seen` (upstream `ConvertToTimestamp`), if set.
fn first_seen_seconds_ago(pod: &ApiPod) -> Option<f64> {
    let seen = pod
        .metadata
        .annotations
        .as_ref()?
        .get(kubelet_container::kubetypes::CONFIG_FIRST_SEEN_ANNOTATION_KEY)?;
    let seen: jiff::Timestamp = seen.parse().ok()?;
    let ago = jiff::Timestamp::now().duration_since(seen);
    Some(ago.as_secs_f64().max(0.0))
}

fn phase_is_terminal(s: &ApiPodStatus) -> bool {
    matches!(s.phase.as_deref(), Some("Succeeded" | "Failed"))
}

impl KubeletSyncer {
    fn generate(&self, pod: &ApiPod, status: &PodStatus, terminal: bool) -> ApiPodStatus {
        let old = self.status_manager.get_pod_status(pod_uid(pod));
        let probes = self.probe_manager.results();
        let resize_conditions = self
            .status_manager
            .determine_pod_resize_status(pod_uid(pod), terminal);
        let mut api_status = kubelet_status::generate_api_pod_status(
            pod,
            status,
            &GenerateOptions {
                old_status: old.as_ref(),
                reason_cache: &self.reason_cache,
                probes: probes.as_ref(),
                host_ips: &self.host_ips,
                pod_is_terminal: terminal,
                resize_conditions: &resize_conditions,
            },
        );
        super::active_deadline::apply_pod_sync_handlers(
            &self.pod_sync_handlers,
            pod,
            &mut api_status,
        );
        api_status
    }

    /// The shortest back-off any of the pod's containers is waiting out.
    fn shortest_backoff(&self, pod: &ApiPod) -> Duration {
        let spec = pod.spec.as_ref();
        let containers = spec.into_iter().flat_map(|s| {
            s.init_containers
                .iter()
                .flatten()
                .chain(s.containers.iter())
        });
        containers
            .map(|c| self.backoff.get(&get_stable_key(pod, c)))
            .filter(|d| !d.is_zero())
            .min()
            .unwrap_or(self.backoff.initial())
    }

    /// The `PodResizeInProgress` condition from the runtime's view (upstream `SyncPod`): set
    /// while some running container's allocated resources are not actuated yet, cleared
    /// (with a `ResizeCompleted` event) once they all are.
    fn update_resize_in_progress(&self, pod: &ApiPod, pod_status: &PodStatus) {
        let uid = pod_uid(pod);
        if kubelet_runtime::resize::is_pod_resize_in_progress(pod, pod_status, &self.actuated) {
            self.status_manager.set_pod_resize_in_progress_condition(
                uid,
                "",
                "",
                pod.metadata.generation,
            );
        } else if let Some(generation) = self
            .status_manager
            .clear_pod_resize_in_progress_condition(uid)
        {
            let msg =
                super::allocation::pod_resize_message(pod, generation, "", "Pod resize completed");
            self.recorder.event(
                &pod_ref(pod),
                EventType::Normal,
                super::allocation::reasons::RESIZE_COMPLETED,
                &msg,
            );
        }
    }

    /// After the runtime's `SyncPod`: a failed in-place resize is reported on the
    /// `PodResizeInProgress` condition (reason `Error`, with a `ResizeError` event); any
    /// resize makes the pod resync at once so the condition follows the runtime (upstream's
    /// `SetPodWatchCondition` in `doPodResizeAction`).
    fn record_resize_result(&self, pod: &ApiPod, result: &kubelet_container::PodSyncResult) {
        let uid = pod_uid(pod);
        let mut resized = false;
        for r in result
            .sync_results
            .iter()
            .filter(|r| r.action == kubelet_container::SyncAction::ResizePodInPlace)
        {
            resized = true;
            if r.error.is_none() {
                continue;
            }
            let (generation, updated) = self.status_manager.set_pod_resize_in_progress_condition(
                uid,
                kubelet_status::resize::REASON_ERROR,
                &r.message,
                pod.metadata.generation,
            );
            if updated {
                let msg = super::allocation::pod_resize_message(
                    pod,
                    generation,
                    &r.message,
                    "Pod resize error",
                );
                self.recorder.event(
                    &pod_ref(pod),
                    EventType::Warning,
                    super::allocation::reasons::RESIZE_ERROR,
                    &msg,
                );
            }
        }
        if resized {
            self.pleg.set_pod_watch_condition(uid);
            self.backoff_requeue.enqueue(uid, Duration::ZERO);
        }
    }

    async fn fresh_status(&self, pod: &ApiPod) -> Result<PodStatus, PodSyncError> {
        let m = &pod.metadata;
        Ok(self
            .runtime
            .get_pod_status(
                pod_uid(pod),
                m.name.as_deref().unwrap_or_default(),
                m.namespace.as_deref().unwrap_or_default(),
            )
            .await?)
    }
}

#[async_trait]
impl PodSyncer for KubeletSyncer {
    async fn sync_pod(
        &self,
        cancel: &CancellationToken,
        update_type: SyncPodType,
        pod: &ApiPod,
        mirror_pod: Option<&ApiPod>,
        pod_status: &PodStatus,
    ) -> Result<bool, PodSyncError> {
        // Pods run with their allocated resources (a pending resize is not applied).
        let (allocated, _) = self.allocation.update_pod_from_allocation(pod);
        let pod = &allocated;
        self.update_resize_in_progress(pod, pod_status);
        // Latencies are relative to the first time the kubelet saw the pod.
        let first_seen = first_seen_seconds_ago(pod);
        if update_type == SyncPodType::Create
            && let Some(secs) = first_seen
        {
            kubelet_metrics::with(|m| m.pod_worker_start_duration.observe(secs));
        }
        let api_status = self.generate(pod, pod_status, false);
        // The time the pod took to run since first seen (upstream also observes the first
        // sync, when the status manager has no status yet).
        let existing = self.status_manager.get_pod_status(pod_uid(pod));
        let became_running = existing.as_ref().is_none_or(|old| {
            old.phase.as_deref() == Some("Pending")
                && api_status.phase.as_deref() == Some("Running")
        });
        if became_running && let Some(secs) = first_seen {
            kubelet_metrics::with(|m| m.pod_start_duration.observe(secs));
        }
        let terminal = phase_is_terminal(&api_status);
        let first_sync = super::pod_cgroups::is_first_sync(&api_status);
        // The rest of upstream's `probeManager.UpdatePodStatus`: a started container whose
        // readiness is not known yet is probed at once, once the workers can read the status.
        let readiness_triggers = self.probe_manager.update_pod_status(pod, &api_status);
        self.status_manager.set_pod_status(pod, api_status);
        readiness_triggers.fire();
        if terminal {
            tracing::debug!(pod = %pod_uid(pod), "Pod is terminal, not syncing containers");
            return Ok(true);
        }
        let _slot = tokio::select! {
            permit = self.sync_slots.acquire() => permit.map_err(|_| PodSyncError::Cancelled)?,
            () = cancel.cancelled() => return Err(PodSyncError::Cancelled),
        };
        if let Some(pc) = &self.pod_cgroups {
            pc.sync_pod(
                self.runtime.as_ref(),
                self.recorder.as_ref(),
                pod,
                pod_status,
                first_sync,
            )
            .await?;
        }
        // Create the mirror pod of a static pod if it does not exist yet, or replace it
        // when it disagrees (upstream `tryReconcileMirrorPods`).
        if let Some(client) = &self.mirror_pod_client {
            kubelet_apipods::try_reconcile_mirror_pod(
                client.as_ref(),
                &self.node_lister,
                pod,
                mirror_pod,
            )
            .await;
        }
        // Ensure the pod is being probed.
        self.probe_manager.add_pod(pod);
        // Wait for volumes to attach/mount (and refresh the API-backed ones: a ConfigMap,
        // Secret or token change reaches the files on every sync).
        if let Err(e) = self.volume_manager.wait_for_attach_and_mount(pod).await {
            tracing::error!(pod = %pod_uid(pod), err = %e, "Unable to attach or mount volumes for pod; skipping pod");
            return Err(PodSyncError::Failed(e.to_string()));
        }
        tracing::debug!(pod = %pod_uid(pod), update = ?update_type, "SyncPod");
        // Upstream `getPullSecretsForPod` (no Secret manager in standalone mode).
        let pull_secrets = match &self.objects {
            Some(o) => {
                o.get_pull_secrets_for_pod(pod, self.recorder.as_ref())
                    .await
            }
            None => Vec::new(),
        };
        let result = self
            .runtime
            .sync_pod(pod, pod_status, &pull_secrets, &self.backoff)
            .await;
        self.reason_cache.update(pod_uid(pod), &result);
        self.record_resize_result(pod, &result);
        if result.started_containers() {
            self.pleg.request_relist();
        }
        if result.error().is_some() {
            // Report the new waiting reason (CrashLoopBackOff, ErrImagePull, …) now, for the
            // whole back-off, instead of at the next sync.
            let api_status = self.generate(pod, pod_status, false);
            self.status_manager.set_pod_status(pod, api_status);
        }
        match result.error() {
            None => Ok(false),
            Some(_) if result.only_backoff_failures() => {
                // Upstream waits for the next resync (syncFrequency); we come back as
                // soon as the shortest back-off has expired.
                let wait = self.shortest_backoff(pod);
                self.backoff_requeue.enqueue(pod_uid(pod), wait);
                Ok(false)
            }
            Some(e) => Err(PodSyncError::Failed(e)),
        }
    }

    async fn sync_terminating_pod(
        &self,
        _cancel: &CancellationToken,
        pod: &ApiPod,
        pod_status: &PodStatus,
        grace_period: Option<i64>,
        pod_status_fn: Option<&PodStatusFn>,
    ) -> Result<(), PodSyncError> {
        let (allocated, _) = self.allocation.update_pod_from_allocation(pod);
        let pod = &allocated;
        let mut api_status = self.generate(pod, pod_status, false);
        if let Some(f) = pod_status_fn {
            f(&mut api_status);
        }
        self.status_manager.set_pod_status(pod, api_status);
        self.probe_manager.stop_liveness_and_startup(pod);
        let running = convert_pod_status_to_running_pod(self.runtime.type_name(), pod_status);
        if let Err(e) = self
            .runtime
            .kill_pod(Some(pod), &running, grace_period)
            .await
        {
            self.recorder.event(
                &pod_ref(pod),
                EventType::Warning,
                reasons::FAILED_TO_KILL_POD,
                &format!("error killing pod: {e}"),
            );
            return Err(e.into());
        }
        if let Some(pc) = &self.pod_cgroups {
            pc.after_kill_pod();
        }
        // Once the containers are stopped, probing stops.
        self.probe_manager.remove_pod(pod);
        let after = self.fresh_status(pod).await?;
        if let Some(c) = after
            .container_statuses
            .iter()
            .find(|c| c.state == ContainerState::Running)
        {
            return Err(PodSyncError::Failed(format!(
                "detected running containers after a successful KillPod, CRI violation: {}",
                c.id
            )));
        }
        let mut api_status = self.generate(pod, &after, true);
        if let Some(f) = pod_status_fn {
            f(&mut api_status);
        }
        self.status_manager.set_pod_status(pod, api_status);
        tracing::info!(pod = %pod_uid(pod), "Pod termination stopped all running containers");
        Ok(())
    }

    async fn sync_terminating_runtime_pod(
        &self,
        _cancel: &CancellationToken,
        running_pod: &RuntimePod,
    ) -> Result<(), PodSyncError> {
        tracing::info!(pod = %running_pod.id, name = %running_pod.name, "Stopping orphaned runtime pod");
        if let Err(e) = self.runtime.kill_pod(None, running_pod, Some(1)).await {
            // `runningPod.ToAPIPod()`: name, namespace and UID.
            let pod = ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(running_pod.name.clone()),
                namespace: Some(running_pod.namespace.clone()),
                uid: Some(running_pod.id.clone()),
                ..ObjectReference::default()
            };
            self.recorder.event(
                &pod,
                EventType::Warning,
                reasons::FAILED_TO_KILL_POD,
                &format!("error killing pod: {e}"),
            );
            return Err(e.into());
        }
        if let Some(pc) = &self.pod_cgroups {
            pc.after_kill_pod();
        }
        Ok(())
    }

    async fn sync_terminated_pod(
        &self,
        _cancel: &CancellationToken,
        pod: &ApiPod,
        pod_status: &PodStatus,
    ) -> Result<(), PodSyncError> {
        let (allocated, _) = self.allocation.update_pod_from_allocation(pod);
        let pod = &allocated;
        let api_status = self.generate(pod, pod_status, true);
        self.status_manager.set_pod_status(pod, api_status);
        // Resources the kubelet owns go before the pod is finished (and may be deleted):
        // volumes first (upstream `WaitForUnmount`), then the pod cgroup.
        if let Err(e) = self.volume_manager.unmount_pod(pod_uid(pod)).await {
            return Err(PodSyncError::Failed(format!("unmounting volumes: {e}")));
        }
        if let Some(pc) = &self.pod_cgroups {
            pc.sync_terminated_pod(pod)?;
        }
        // The pod's user namespace IDs are free again (upstream `usernsManager.Release`).
        if let Some(userns) = &self.userns {
            userns.release(pod_uid(pod));
        }
        self.status_manager.terminate_pod(pod);
        Ok(())
    }
}
