//! The pod lifecycle contract (upstream `podSyncer` in `pod_workers.go`).

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod as ApiPod;
use kubelet_container::{Pod as RuntimePod, PodStatus, SyncPodType};
use tokio_util::sync::CancellationToken;

use crate::types::{PodStatusFn, PodSyncError};

/// The core lifecycle operations of the pod state machine, implemented by the
/// kubelet (`kubelet-app`). A pod is first synced with [`sync_pod`](Self::sync_pod)
/// until it naturally reaches a terminal state (it returns `Ok(true)`) or
/// something else decides it must stop. Then
/// [`sync_terminating_pod`](Self::sync_terminating_pod) runs until it succeeds,
/// then [`sync_terminated_pod`](Self::sync_terminated_pod) runs until it
/// succeeds, and the pod is finished.
///
/// Implementations must allow concurrent calls for different pods. Each call
/// gets a cancellation token that fires when a newer update makes the call
/// moot (the pod started terminating, or its grace period was shortened). When
/// it fires the worker drops the call's future (upstream cancels the sync's
/// context), so a call blocked in the runtime never keeps a pod from being
/// killed: implementations must be cancel-safe at every `.await` (nothing is
/// left half-recorded that the next sync would misread). An implementation may
/// also check the token and return [`PodSyncError::Cancelled`] itself.
#[async_trait]
pub trait PodSyncer: Send + Sync {
    /// Configures the pod and starts or restarts its containers. `Ok(true)`
    /// means the pod reached a terminal phase (all containers finished per the
    /// restart policy). An error is retried after a back-off.
    async fn sync_pod(
        &self,
        cancel: &CancellationToken,
        update_type: SyncPodType,
        pod: &ApiPod,
        mirror_pod: Option<&ApiPod>,
        pod_status: &PodStatus,
    ) -> Result<bool, PodSyncError>;

    /// Stops the pod's containers within `grace_period` seconds and records
    /// the final status (after applying `pod_status_fn`, if any). Called again,
    /// possibly with a shorter grace period, until it succeeds. Once it
    /// succeeds other components may tear down volumes, devices, cgroups.
    async fn sync_terminating_pod(
        &self,
        cancel: &CancellationToken,
        pod: &ApiPod,
        pod_status: &PodStatus,
        grace_period: Option<i64>,
        pod_status_fn: Option<&PodStatusFn>,
    ) -> Result<(), PodSyncError>;

    /// Stops containers of a pod the kubelet no longer has config for. Must
    /// not succeed unless every container is known to be stopped.
    async fn sync_terminating_runtime_pod(
        &self,
        cancel: &CancellationToken,
        running_pod: &RuntimePod,
    ) -> Result<(), PodSyncError>;

    /// Releases resources that must be freed right away once all containers
    /// are stopped. When it succeeds the pod is finished on this node.
    async fn sync_terminated_pod(
        &self,
        cancel: &CancellationToken,
        pod: &ApiPod,
        pod_status: &PodStatus,
    ) -> Result<(), PodSyncError>;
}
