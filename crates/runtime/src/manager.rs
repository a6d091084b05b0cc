//! `KubeGenericRuntimeManager`: the kubelet's [`Runtime`] on top of CRI (upstream
//! `kuberuntime_manager.go`). Listing and status live in `status.rs`, sync in `sync.rs` and
//! `start.rs`, kill in `kill.rs`, GC in `gc.rs`; this file holds construction and the trait.
//!
//! All state is read back from the runtime: which pod a container belongs to from labels,
//! its spec hash and restart count from annotations. A restarted kubelet therefore adopts
//! running containers instead of restarting them.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Pod as ApiPod, Secret};
use kubelet_container::events::EventRecorder;
use kubelet_container::runtime::PodStateProvider;
use kubelet_container::{
    Backoff, Clock, ContainerGcPolicy, ContainerId, Pod, PodStatus, PodSyncResult, Runtime,
    RuntimeCondition, RuntimeError, RuntimeFeatures, RuntimeStatus, RuntimeVersion,
};
use kubelet_cri::{CriError, ImageService, RuntimeService};

use crate::events::FilteredRecorder;
use crate::helper::RuntimeHelper;
use crate::image::{ImageManager, PullConcurrency};
use crate::instrumented_services::{InstrumentedImageService, InstrumentedRuntimeService};
use crate::lifecycle::{LifecycleHttpClient, NoLifecycleHttpClient};
use crate::logs::ContainerLogManager;
use crate::os::OsInterface;
use crate::resources::ResourceSettings;
use crate::runtimeclass::{NoRuntimeClassManager, RuntimeHandlerResolver};
use kubelet_container::ProbeResults;

/// CRI API version the kubelet speaks.
pub const KUBE_RUNTIME_API_VERSION: &str = "0.1.0";

/// Settings from `KubeletConfiguration` the runtime manager needs.
#[derive(Clone, Debug)]
pub struct RuntimeManagerConfig {
    /// `--root-dir` (`/var/lib/kubelet`); pod directories and seccomp profiles live here.
    pub root_dir: PathBuf,
    /// `podLogsDir` (`/var/log/pods`).
    pub pod_logs_dir: PathBuf,
    /// Directory of the legacy `/var/log/containers` symlinks.
    pub legacy_container_logs_dir: PathBuf,
    /// Resource translation settings (`cpuCFSQuota`, `cpuCFSQuotaPeriod`, cgroup version, ...).
    pub resources: ResourceSettings,
    /// `seccompDefault`.
    pub seccomp_default: bool,
    /// `serializeImagePulls` / `maxParallelImagePulls`.
    pub pull_concurrency: PullConcurrency,
    /// Feature gate `KubeletEnsureSecretPulledImages` (on at 1.35): only the wording of the
    /// `Pulled` event of a present image follows it here.
    pub ensure_secret_pulled_images: bool,
}

impl Default for RuntimeManagerConfig {
    fn default() -> Self {
        Self {
            root_dir: PathBuf::from("/var/lib/kubelet"),
            pod_logs_dir: PathBuf::from("/var/log/pods"),
            legacy_container_logs_dir: PathBuf::from("/var/log/containers"),
            resources: ResourceSettings::default(),
            seccomp_default: false,
            pull_concurrency: PullConcurrency::Serial,
            ensure_secret_pulled_images: true,
        }
    }
}

/// The collaborators of the runtime manager.
pub struct RuntimeManagerDeps {
    /// CRI runtime service.
    pub runtime: Arc<dyn RuntimeService>,
    /// CRI image service.
    pub image: Arc<dyn ImageService>,
    /// Kubelet-side helper (env, mounts, DNS, cgroups).
    pub helper: Arc<dyn RuntimeHelper>,
    /// Filesystem.
    pub os: Arc<dyn OsInterface>,
    /// Liveness/startup probe results.
    pub probes: Arc<dyn ProbeResults>,
    /// Whether pods are terminated/deleted (GC and removal decisions).
    pub pod_state: Arc<dyn PodStateProvider>,
    /// Clock for back-offs and log rotation.
    pub clock: Arc<dyn Clock>,
    /// The kubelet's event recorder (filtered as `FilterEventRecorder` does).
    pub recorder: Arc<dyn EventRecorder>,
}

/// The kubelet's CRI-backed [`Runtime`] (upstream `kubeGenericRuntimeManager`).
pub struct KubeGenericRuntimeManager {
    pub(crate) runtime_name: String,
    /// Whether the runtime mounts image volumes (from its `Version`).
    pub(crate) image_volume_support: crate::image_volumes::ImageVolumeSupport,
    pub(crate) runtime: Arc<dyn RuntimeService>,
    pub(crate) images: ImageManager,
    pub(crate) helper: Arc<dyn RuntimeHelper>,
    pub(crate) os: Arc<dyn OsInterface>,
    pub(crate) probes: Arc<dyn ProbeResults>,
    pub(crate) pod_state: Arc<dyn PodStateProvider>,
    pub(crate) logs: ContainerLogManager,
    pub(crate) config: RuntimeManagerConfig,
    pub(crate) recorder: FilteredRecorder,
    pub(crate) runtime_classes: Arc<dyn RuntimeHandlerResolver>,
    pub(crate) actuated: Arc<crate::resize::ActuatedState>,
    /// The pod cgroups a resize writes (set by the kubelet; unset: containers only).
    pub(crate) pod_cgroups: std::sync::OnceLock<Arc<dyn crate::resize::PodCgroupConfig>>,
    pub(crate) lifecycle_http: Arc<dyn LifecycleHttpClient>,
    pub(crate) internal_lifecycle: Arc<dyn crate::internal_lifecycle::InternalContainerLifecycle>,
    pub(crate) cpu_allocation: Arc<dyn crate::internal_lifecycle::CpuAllocationReader>,
    /// Upstream `usernsManager` (the ID ranges of `hostUsers: false` pods).
    pub(crate) userns: Option<Arc<crate::userns::UsernsManager>>,
}

/// Maps a CRI error to the runtime-neutral one.
pub(crate) fn cri_err(e: CriError) -> RuntimeError {
    match &e {
        CriError::Connect { .. } => RuntimeError::Unavailable(e.to_string()),
        _ if e.is_not_found() => RuntimeError::NotFound {
            kind: "object",
            id: e.to_string(),
        },
        CriError::Status {
            method, message, ..
        } => RuntimeError::Call {
            method: (*method).to_string(),
            message: message.clone(),
        },
        _ => RuntimeError::Call {
            method: "CRI".to_string(),
            message: e.to_string(),
        },
    }
}

impl KubeGenericRuntimeManager {
    /// `NewKubeGenericRuntimeManager`: asks the runtime for its name and checks the API version.
    pub async fn new(
        deps: RuntimeManagerDeps,
        config: RuntimeManagerConfig,
        logs: ContainerLogManager,
    ) -> Result<Self, RuntimeError> {
        let mut deps = deps;
        deps.runtime = Arc::new(InstrumentedRuntimeService::new(deps.runtime));
        deps.image = Arc::new(InstrumentedImageService::new(deps.image));
        let version = deps
            .runtime
            .version(KUBE_RUNTIME_API_VERSION)
            .await
            .map_err(cri_err)?;
        if version.version != KUBE_RUNTIME_API_VERSION {
            return Err(RuntimeError::Invalid(format!(
                "runtime api version {:?} is not supported (want {KUBE_RUNTIME_API_VERSION})",
                version.version
            )));
        }
        tracing::info!(
            container_runtime = %version.runtime_name,
            version = %version.runtime_version,
            api_version = %version.runtime_api_version,
            "Container runtime initialized"
        );
        let recorder = FilteredRecorder::new(deps.recorder);
        Ok(Self {
            image_volume_support: crate::image_volumes::ImageVolumeSupport::from_version(
                &version.runtime_name,
                &version.runtime_version,
            ),
            runtime_name: version.runtime_name,
            images: ImageManager::new(
                deps.image,
                config.pull_concurrency,
                deps.clock,
                recorder.clone(),
            )
            .ensure_secret_pulled_images(config.ensure_secret_pulled_images),
            recorder,
            runtime: deps.runtime,
            helper: deps.helper,
            os: deps.os,
            probes: deps.probes,
            pod_state: deps.pod_state,
            logs,
            config,
            runtime_classes: Arc::new(NoRuntimeClassManager),
            actuated: Arc::default(),
            pod_cgroups: std::sync::OnceLock::new(),
            lifecycle_http: Arc::new(NoLifecycleHttpClient),
            internal_lifecycle: Arc::new(crate::internal_lifecycle::NoInternalLifecycle),
            cpu_allocation: Arc::new(crate::internal_lifecycle::NoExclusiveCpus),
            userns: None,
        })
    }

    /// Resolves `spec.runtimeClassName` through `manager` (upstream `runtimeClassManager`,
    /// set when the kubelet has an API client; else every pod gets the default handler).
    #[must_use]
    pub fn with_runtime_class_manager(mut self, manager: Arc<dyn RuntimeHandlerResolver>) -> Self {
        self.runtime_classes = manager;
        self
    }

    /// Allocates the ID ranges of `hostUsers: false` pods through `manager` (upstream
    /// `usernsManager`, made at start by `MakeUserNsManager`); without it such a pod fails
    /// with [`crate::userns::UsernsError::NoAllocator`] on a runtime that supports them.
    #[must_use]
    pub fn with_userns_manager(mut self, manager: Arc<crate::userns::UsernsManager>) -> Self {
        self.userns = Some(manager);
        self
    }

    /// The user namespace manager set by [`Self::with_userns_manager`] (for the kubelet's
    /// `Release` on pod removal and `CleanupOrphanedPodUsernsAllocations`).
    pub fn userns_manager(&self) -> Option<&Arc<crate::userns::UsernsManager>> {
        self.userns.as_ref()
    }

    /// Sends the `httpGet` lifecycle hooks through `client` (upstream's
    /// `insecureContainerLifecycleHTTPClient`); without it they fail saying so.
    #[must_use]
    pub fn with_lifecycle_http_client(mut self, client: Arc<dyn LifecycleHttpClient>) -> Self {
        self.lifecycle_http = client;
        self
    }

    /// Calls `lifecycle`'s hooks around each container (upstream `internalLifecycle`,
    /// `cm.NewInternalContainerLifecycle`: the CPU manager's cpuset); without it the hooks
    /// do nothing.
    #[must_use]
    pub fn with_internal_lifecycle(
        mut self,
        lifecycle: Arc<dyn crate::internal_lifecycle::InternalContainerLifecycle>,
    ) -> Self {
        self.internal_lifecycle = lifecycle;
        self
    }

    /// Leaves the CFS quota of containers with exclusive CPUs (and of their sandboxes)
    /// unlimited (`DisableCPUQuotaWithExclusiveCPUs`); without it every quota is set.
    #[must_use]
    pub fn with_cpu_allocation_reader(
        mut self,
        reader: Arc<dyn crate::internal_lifecycle::CpuAllocationReader>,
    ) -> Self {
        self.cpu_allocation = reader;
        self
    }

    /// The CRI runtime service (for callers needing raw CRI access, e.g. PLEG or streaming).
    pub fn runtime_service(&self) -> &Arc<dyn RuntimeService> {
        &self.runtime
    }

    /// The image manager.
    pub fn image_manager(&self) -> &ImageManager {
        &self.images
    }

    /// The container log manager (run [`ContainerLogManager::rotate_logs`] periodically).
    pub fn log_manager(&self) -> &ContainerLogManager {
        &self.logs
    }

    pub(crate) fn id(&self, id: &str) -> ContainerId {
        ContainerId::new(self.runtime_name.clone(), id)
    }
}

#[async_trait]
impl Runtime for KubeGenericRuntimeManager {
    fn type_name(&self) -> &str {
        &self.runtime_name
    }

    async fn version(&self) -> Result<RuntimeVersion, RuntimeError> {
        let v = self
            .runtime
            .version(KUBE_RUNTIME_API_VERSION)
            .await
            .map_err(cri_err)?;
        Ok(RuntimeVersion {
            runtime_name: v.runtime_name,
            runtime_version: v.runtime_version,
            runtime_api_version: v.runtime_api_version,
        })
    }

    async fn status(&self) -> Result<RuntimeStatus, RuntimeError> {
        let resp = self.runtime.status(false).await.map_err(cri_err)?;
        let status = resp
            .status
            .ok_or_else(|| RuntimeError::Invalid("runtime status is nil".into()))?;
        Ok(RuntimeStatus {
            conditions: status
                .conditions
                .into_iter()
                .map(|c| RuntimeCondition {
                    type_: c.r#type,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                })
                .collect(),
            // `toKubeRuntimeStatus`.
            features: resp.features.map(|f| RuntimeFeatures {
                supplemental_groups_policy: f.supplemental_groups_policy,
            }),
        })
    }

    async fn get_pods(&self, all: bool) -> Result<Vec<Pod>, RuntimeError> {
        self.get_pods_impl(all).await
    }

    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, RuntimeError> {
        self.get_pod_status_impl(uid, name, namespace).await
    }

    async fn sync_pod(
        &self,
        pod: &ApiPod,
        pod_status: &PodStatus,
        pull_secrets: &[Secret],
        backoff: &Backoff,
    ) -> PodSyncResult {
        self.sync_pod_impl(pod, pod_status, pull_secrets, backoff)
            .await
    }

    async fn kill_pod(
        &self,
        pod: Option<&ApiPod>,
        running_pod: &Pod,
        grace_period_override: Option<i64>,
    ) -> Result<(), RuntimeError> {
        let result = self
            .kill_pod_with_sync_result(pod, running_pod, grace_period_override)
            .await;
        if let Some(message) = result.error() {
            return Err(RuntimeError::KillPod {
                pod: running_pod.full_name(),
                message,
            });
        }
        if self
            .pod_state
            .should_pod_runtime_be_removed(&running_pod.id)
        {
            self.remove_pod(&running_pod.id).await?;
        }
        Ok(())
    }

    async fn garbage_collect(
        &self,
        policy: &ContainerGcPolicy,
        all_sources_ready: bool,
        evict_non_deleted_pods: bool,
    ) -> Result<(), RuntimeError> {
        self.garbage_collect_impl(policy, all_sources_ready, evict_non_deleted_pods)
            .await
    }

    async fn delete_container(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        self.remove_container(&id.id).await
    }

    async fn container_image_mounts(&self, id: &ContainerId) -> Result<Vec<String>, RuntimeError> {
        let resp = self
            .runtime
            .container_status(&id.id, false)
            .await
            .map_err(cri_err)?;
        Ok(resp
            .status
            .iter()
            .flat_map(|s| s.mounts.iter())
            .filter_map(|m| m.image.as_ref().map(|i| i.image.clone()))
            .filter(|i| !i.is_empty())
            .collect())
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
