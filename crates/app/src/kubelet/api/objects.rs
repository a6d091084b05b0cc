//! `NewMainKubelet`'s ConfigMap, Secret and token managers (kubelet-objects) in API server
//! mode, and where the kubelet calls them: `RegisterPod` in `SyncPod` (unless termination
//! was requested: the pod workers only call `SyncPod` before that) and `UnregisterPod` in
//! `SyncTerminatedPod` (upstream `kubelet.go`), through [`RegisteringSyncer`]; and the
//! RuntimeClass manager the runtime manager resolves `runtimeClassName` through. In
//! standalone mode there are no managers: the environment and the volume plugins get
//! upstream's "no kubeClient" answers.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod as ApiPod;
use kubelet_apipods::NodeLister;
use kubelet_container::{Pod as RuntimePod, PodStatus, RealClock, SyncPodType};
use kubelet_objects::{
    ChangeDetectionStrategy, KubeletObjects, ObjectsConfig, RuntimeClassManager,
    runtime_class_lister_watcher,
};
use kubelet_podworkers::{PodStatusFn, PodSyncError, PodSyncer};
use kubelet_runtime::env::{EnvObjects, NoEnvObjects};
use kubelet_runtime::runtimeclass::{NoRuntimeClassManager, RuntimeHandlerResolver};
use kubelet_volume::{NoVolumeObjects, VolumeObjects};
use tokio_util::sync::CancellationToken;

use super::super::KubeletDeps;
use crate::startup::RunError;

/// The managers over the main client, `None` in standalone mode; their background work
/// (idle watches, expired tokens) runs until shutdown.
///
/// # Errors
/// An unknown `configMapAndSecretChangeDetectionStrategy` (upstream `NewMainKubelet`:
/// "unknown configmap and secret manager mode").
pub(crate) fn build(
    deps: &KubeletDeps<'_>,
    node: &NodeLister,
) -> Result<Option<Arc<KubeletObjects>>, RunError> {
    let Some(clients) = &deps.clients else {
        return Ok(None);
    };
    let c = &deps.server.config;
    let strategy: ChangeDetectionStrategy = c
        .config_map_and_secret_change_detection_strategy
        .parse()
        .map_err(|e: kubelet_objects::UnknownStrategy| RunError::Kubelet(e.to_string()))?;
    let node = node.clone();
    let config = ObjectsConfig {
        strategy,
        resync_interval: c.sync_frequency.as_std().unwrap_or(Duration::from_secs(60)),
        get_ttl: Arc::new(move || kubelet_objects::object_ttl_from_node(node.get().as_deref())),
    };
    let objects = KubeletObjects::from_client(clients.main.clone(), Arc::new(RealClock), &config)
        .map(Arc::new)
        .map_err(|e| RunError::Kubelet(format!("object managers: {e}")))?;
    tokio::spawn({
        let objects = objects.clone();
        let cancel = deps.shutdown.clone();
        async move { objects.run(cancel).await }
    });
    // The Service informer for the service environment variables.
    tokio::spawn({
        let (services, cancel) = (objects.services.clone(), deps.shutdown.clone());
        let lw = kubelet_objects::service_lister_watcher(clients.main.clone());
        async move { services.run(lw, cancel).await }
    });
    Ok(Some(objects))
}

/// What `makeEnvironmentVariables` reads ConfigMaps and Secrets through.
pub(crate) fn env_objects(objects: Option<&Arc<KubeletObjects>>) -> Arc<dyn EnvObjects> {
    match objects {
        Some(o) => o.clone(),
        None => Arc::new(NoEnvObjects),
    }
}

/// `NewMainKubelet`'s RuntimeClass manager over the main client, its informer running
/// until shutdown (upstream `runtimeclass.NewManager` + `Start` in `Run`); none in
/// standalone mode (upstream `runtimeClassManager == nil`).
pub(crate) fn runtime_class_manager(deps: &KubeletDeps<'_>) -> Arc<dyn RuntimeHandlerResolver> {
    let Some(clients) = &deps.clients else {
        return Arc::new(NoRuntimeClassManager);
    };
    let manager = RuntimeClassManager::new();
    tokio::spawn({
        let (manager, cancel) = (manager.clone(), deps.shutdown.clone());
        let lw = runtime_class_lister_watcher(clients.main.clone());
        async move { manager.run(lw, cancel).await }
    });
    Arc::new(manager)
}

/// What the volume plugins read ConfigMaps, Secrets and tokens through (the volume
/// manager's `VolumeObjects`).
pub(crate) fn volume_objects(objects: Option<&Arc<KubeletObjects>>) -> Arc<dyn VolumeObjects> {
    match objects {
        Some(o) => o.clone(),
        None => Arc::new(NoVolumeObjects),
    }
}

/// The pod syncer with the managers' `RegisterPod` before `SyncPod` and `UnregisterPod`
/// after a successful `SyncTerminatedPod`.
pub(crate) struct RegisteringSyncer {
    inner: Arc<dyn PodSyncer>,
    objects: Arc<KubeletObjects>,
}

/// `syncer`, registering pods with `objects` when there are managers.
pub(crate) fn registering(
    syncer: Arc<dyn PodSyncer>,
    objects: Option<&Arc<KubeletObjects>>,
) -> Arc<dyn PodSyncer> {
    match objects {
        Some(o) => Arc::new(RegisteringSyncer {
            inner: syncer,
            objects: o.clone(),
        }),
        None => syncer,
    }
}

#[async_trait]
impl PodSyncer for RegisteringSyncer {
    async fn sync_pod(
        &self,
        cancel: &CancellationToken,
        update_type: SyncPodType,
        pod: &ApiPod,
        mirror_pod: Option<&ApiPod>,
        pod_status: &PodStatus,
    ) -> Result<bool, PodSyncError> {
        // "ensure the kubelet knows about referenced secrets or configmaps used by the pod"
        self.objects.register_pod(pod);
        self.inner
            .sync_pod(cancel, update_type, pod, mirror_pod, pod_status)
            .await
    }

    async fn sync_terminating_pod(
        &self,
        cancel: &CancellationToken,
        pod: &ApiPod,
        pod_status: &PodStatus,
        grace_period: Option<i64>,
        pod_status_fn: Option<&PodStatusFn>,
    ) -> Result<(), PodSyncError> {
        self.inner
            .sync_terminating_pod(cancel, pod, pod_status, grace_period, pod_status_fn)
            .await
    }

    async fn sync_terminating_runtime_pod(
        &self,
        cancel: &CancellationToken,
        running_pod: &RuntimePod,
    ) -> Result<(), PodSyncError> {
        self.inner
            .sync_terminating_runtime_pod(cancel, running_pod)
            .await
    }

    async fn sync_terminated_pod(
        &self,
        cancel: &CancellationToken,
        pod: &ApiPod,
        pod_status: &PodStatus,
    ) -> Result<(), PodSyncError> {
        self.inner
            .sync_terminated_pod(cancel, pod, pod_status)
            .await?;
        // "After volume unmount is complete, let the secret and configmap managers know
        // we're done with this pod".
        self.objects.unregister_pod(pod);
        Ok(())
    }
}
