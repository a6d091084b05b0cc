//! The CRI service interfaces the kubelet programs against, mirroring
//! `k8s.io/cri-api/pkg/apis/services.go` (`internalapi.RuntimeService` and
//! `internalapi.ImageManagerService`).
//!
//! Both traits are object safe and used as `Arc<dyn RuntimeService>` /
//! `Arc<dyn ImageService>`. Implementations: [`crate::RemoteRuntimeService`] and
//! [`crate::RemoteImageService`] (gRPC over a unix socket), and the recording fakes in
//! `crate::fake` (feature `fake`).
//!
//! Differences from Go, on purpose:
//! * no `context.Context`: dropping the future cancels the call;
//! * `ExecSync` returns the whole [`ExecSyncResponse`] and a non-zero exit code is not an error
//!   (Go wraps it in `utilexec.CodeExitError`); callers read `exit_code`;
//! * `GetContainerEvents` returns a stream instead of feeding a channel; getting `Ok` means the
//!   connection is established (Go's `connectionEstablishedCallback`).

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;

use crate::error::CriResult;
use crate::v1::{
    AttachRequest, AttachResponse, AuthConfig, CheckpointContainerRequest, Container,
    ContainerConfig, ContainerEventResponse, ContainerFilter, ContainerResources, ContainerStats,
    ContainerStatsFilter, ContainerStatusResponse, ExecRequest, ExecResponse, ExecSyncResponse,
    Image, ImageFilter, ImageFsInfoResponse, ImageSpec, ImageStatusResponse, MetricDescriptor,
    PodSandbox, PodSandboxConfig, PodSandboxFilter, PodSandboxMetrics, PodSandboxStats,
    PodSandboxStatsFilter, PodSandboxStatusResponse, PortForwardRequest, PortForwardResponse,
    RuntimeConfig, RuntimeConfigResponse, StatusResponse, UpdatePodSandboxResourcesRequest,
    UpdatePodSandboxResourcesResponse, VersionResponse,
};

/// Stream of container lifecycle events from `GetContainerEvents`.
pub type ContainerEventStream =
    Pin<Box<dyn Stream<Item = CriResult<ContainerEventResponse>> + Send + 'static>>;

/// CRI runtime service (`internalapi.RuntimeService`: RuntimeVersioner, ContainerManager,
/// PodSandboxManager, ContainerStatsManager plus runtime-level calls).
#[async_trait]
pub trait RuntimeService: Send + Sync {
    /// Runtime name, version and CRI API version.
    async fn version(&self, api_version: &str) -> CriResult<VersionResponse>;

    /// Creates and starts a pod sandbox; returns its ID.
    async fn run_pod_sandbox(
        &self,
        config: &PodSandboxConfig,
        runtime_handler: &str,
    ) -> CriResult<String>;
    /// Stops a sandbox, force-terminating its containers.
    async fn stop_pod_sandbox(&self, pod_sandbox_id: &str) -> CriResult<()>;
    /// Removes a sandbox and its containers.
    async fn remove_pod_sandbox(&self, pod_sandbox_id: &str) -> CriResult<()>;
    /// Status of one sandbox.
    async fn pod_sandbox_status(
        &self,
        pod_sandbox_id: &str,
        verbose: bool,
    ) -> CriResult<PodSandboxStatusResponse>;
    /// Lists sandboxes matching `filter` (all when `None`).
    async fn list_pod_sandbox(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>>;
    /// Prepares a streaming port-forward endpoint.
    async fn port_forward(&self, req: &PortForwardRequest) -> CriResult<PortForwardResponse>;
    /// Updates the pod-level resources of a sandbox.
    async fn update_pod_sandbox_resources(
        &self,
        req: &UpdatePodSandboxResourcesRequest,
    ) -> CriResult<UpdatePodSandboxResourcesResponse>;

    /// Creates a container in a sandbox; returns its ID.
    async fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: &ContainerConfig,
        sandbox_config: &PodSandboxConfig,
    ) -> CriResult<String>;
    /// Starts a created container.
    async fn start_container(&self, container_id: &str) -> CriResult<()>;
    /// Stops a container with a grace period of `timeout_seconds`.
    async fn stop_container(&self, container_id: &str, timeout_seconds: i64) -> CriResult<()>;
    /// Removes a container (force-removing it if running).
    async fn remove_container(&self, container_id: &str) -> CriResult<()>;
    /// Lists containers matching `filter` (all when `None`).
    async fn list_containers(&self, filter: Option<&ContainerFilter>) -> CriResult<Vec<Container>>;
    /// [`list_pod_sandbox`](Self::list_pod_sandbox) for the kubelet's own bookkeeping (PLEG
    /// relist, garbage collection): the items' `labels` and `annotations` need to hold only
    /// the kubelet's `io.kubernetes.*` keys. The remote service skips the other entries while
    /// decoding ([`crate::remote::lean`]); the default lists everything.
    async fn list_pod_sandbox_kubelet_keys(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        self.list_pod_sandbox(filter).await
    }
    /// [`list_containers`](Self::list_containers) with only the kubelet's `io.kubernetes.*`
    /// labels and annotations needed, as
    /// [`list_pod_sandbox_kubelet_keys`](Self::list_pod_sandbox_kubelet_keys).
    async fn list_containers_kubelet_keys(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        self.list_containers(filter).await
    }
    /// [`list_pod_sandbox`](Self::list_pod_sandbox) with the items' `labels` and
    /// `annotations` left empty (the stats requests, which name pods by the sandbox's
    /// metadata). The remote service skips the entries while decoding; the default lists
    /// everything.
    async fn list_pod_sandbox_without_labels(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        self.list_pod_sandbox(filter).await
    }
    /// [`list_containers`](Self::list_containers) with empty `labels` and `annotations`, as
    /// [`list_pod_sandbox_without_labels`](Self::list_pod_sandbox_without_labels).
    async fn list_containers_without_labels(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        self.list_containers(filter).await
    }
    /// Status of one container.
    async fn container_status(
        &self,
        container_id: &str,
        verbose: bool,
    ) -> CriResult<ContainerStatusResponse>;
    /// Updates a container's cgroup resources.
    async fn update_container_resources(
        &self,
        container_id: &str,
        resources: &ContainerResources,
    ) -> CriResult<()>;
    /// Asks the runtime to reopen the container's log file.
    async fn reopen_container_log(&self, container_id: &str) -> CriResult<()>;
    /// Runs a command synchronously. `timeout` of zero means no timeout.
    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> CriResult<ExecSyncResponse>;
    /// Prepares a streaming exec endpoint.
    async fn exec(&self, req: &ExecRequest) -> CriResult<ExecResponse>;
    /// Prepares a streaming attach endpoint.
    async fn attach(&self, req: &AttachRequest) -> CriResult<AttachResponse>;
    /// Checkpoints a container.
    async fn checkpoint_container(&self, req: &CheckpointContainerRequest) -> CriResult<()>;
    /// Stream of container events (evented PLEG).
    async fn get_container_events(&self) -> CriResult<ContainerEventStream>;

    /// Stats of one container (`None` if the runtime returned none).
    async fn container_stats(&self, container_id: &str) -> CriResult<Option<ContainerStats>>;
    /// Stats of the containers matching `filter`.
    async fn list_container_stats(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>>;
    /// [`list_container_stats`](Self::list_container_stats) with empty `labels` and
    /// `annotations` in the items' `attributes`, as
    /// [`list_pod_sandbox_without_labels`](Self::list_pod_sandbox_without_labels).
    async fn list_container_stats_without_labels(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        self.list_container_stats(filter).await
    }
    /// Stats of one sandbox (`None` if the runtime returned none).
    async fn pod_sandbox_stats(&self, pod_sandbox_id: &str) -> CriResult<Option<PodSandboxStats>>;
    /// Stats of the sandboxes matching `filter`.
    async fn list_pod_sandbox_stats(
        &self,
        filter: Option<&PodSandboxStatsFilter>,
    ) -> CriResult<Vec<PodSandboxStats>>;
    /// Descriptors of the metrics returned by `list_pod_sandbox_metrics`.
    async fn list_metric_descriptors(&self) -> CriResult<Vec<MetricDescriptor>>;
    /// Metrics of all sandboxes.
    async fn list_pod_sandbox_metrics(&self) -> CriResult<Vec<PodSandboxMetrics>>;

    /// Pushes runtime configuration (the pod CIDR) to the runtime.
    async fn update_runtime_config(&self, runtime_config: &RuntimeConfig) -> CriResult<()>;
    /// Runtime status (RuntimeReady / NetworkReady conditions).
    async fn status(&self, verbose: bool) -> CriResult<StatusResponse>;
    /// Runtime configuration (cgroup driver).
    async fn runtime_config(&self) -> CriResult<RuntimeConfigResponse>;
}

/// CRI image service (`internalapi.ImageManagerService`).
#[async_trait]
pub trait ImageService: Send + Sync {
    /// Lists images matching `filter` (all when `None`).
    async fn list_images(&self, filter: Option<&ImageFilter>) -> CriResult<Vec<Image>>;
    /// Status of one image; `image` is `None` in the response when it is not present.
    async fn image_status(
        &self,
        image: &ImageSpec,
        verbose: bool,
    ) -> CriResult<ImageStatusResponse>;
    /// Pulls an image; returns the image reference (usually the digest-based ID).
    async fn pull_image(
        &self,
        image: &ImageSpec,
        auth: Option<&AuthConfig>,
        sandbox_config: Option<&PodSandboxConfig>,
    ) -> CriResult<String>;
    /// Removes an image (succeeds if it is already gone).
    async fn remove_image(&self, image: &ImageSpec) -> CriResult<()>;
    /// Usage of the filesystems holding images and container layers.
    async fn image_fs_info(&self) -> CriResult<ImageFsInfoResponse>;
}
