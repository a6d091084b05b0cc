//! The CRI services with upstream's runtime operation metrics
//! (`pkg/kubelet/kuberuntime/instrumented_services.go`): every call counts in
//! `kubelet_runtime_operations_total{operation_type}` and
//! `kubelet_runtime_operations_duration_seconds`, every failed one in
//! `kubelet_runtime_operations_errors_total`; `RunPodSandbox` also in
//! `kubelet_run_podsandbox_duration_seconds{runtime_handler}` and
//! `kubelet_run_podsandbox_errors_total`. `NewKubeGenericRuntimeManager` wraps the
//! services it is given, so the runtime manager's calls (PLEG relists included) count.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kubelet_cri::v1::{
    AttachRequest, AttachResponse, AuthConfig, CheckpointContainerRequest, Container,
    ContainerConfig, ContainerFilter, ContainerResources, ContainerStats, ContainerStatsFilter,
    ContainerStatusResponse, ExecRequest, ExecResponse, ExecSyncResponse, Image, ImageFilter,
    ImageFsInfoResponse, ImageSpec, ImageStatusResponse, MetricDescriptor, PodSandbox,
    PodSandboxConfig, PodSandboxFilter, PodSandboxMetrics, PodSandboxStats, PodSandboxStatsFilter,
    PodSandboxStatusResponse, PortForwardRequest, PortForwardResponse, RuntimeConfig,
    RuntimeConfigResponse, StatusResponse, UpdatePodSandboxResourcesRequest,
    UpdatePodSandboxResourcesResponse, VersionResponse,
};
use kubelet_cri::{ContainerEventStream, CriResult, ImageService, RuntimeService};

/// `recordOperation` + `recordError` around one call.
async fn record<T>(operation: &str, call: impl Future<Output = CriResult<T>>) -> CriResult<T> {
    let start = Instant::now();
    let out = call.await;
    let secs = start.elapsed().as_secs_f64();
    kubelet_metrics::with(|m| {
        m.runtime_operations.with_label_values(&[operation]).inc();
        m.runtime_operations_duration
            .with_label_values(&[operation])
            .observe(secs);
        if out.is_err() {
            m.runtime_operations_errors
                .with_label_values(&[operation])
                .inc();
        }
    });
    out
}

/// `instrumentedRuntimeService`.
pub struct InstrumentedRuntimeService {
    service: Arc<dyn RuntimeService>,
}

impl InstrumentedRuntimeService {
    /// `newInstrumentedRuntimeService`.
    pub fn new(service: Arc<dyn RuntimeService>) -> Self {
        Self { service }
    }
}

/// `instrumentedImageManagerService`.
pub struct InstrumentedImageService {
    service: Arc<dyn ImageService>,
}

impl InstrumentedImageService {
    /// `newInstrumentedImageManagerService`.
    pub fn new(service: Arc<dyn ImageService>) -> Self {
        Self { service }
    }
}

#[async_trait]
impl RuntimeService for InstrumentedRuntimeService {
    async fn version(&self, api_version: &str) -> CriResult<VersionResponse> {
        record("version", self.service.version(api_version)).await
    }

    async fn run_pod_sandbox(
        &self,
        config: &PodSandboxConfig,
        runtime_handler: &str,
    ) -> CriResult<String> {
        let start = Instant::now();
        let out = record(
            "run_podsandbox",
            self.service.run_pod_sandbox(config, runtime_handler),
        )
        .await;
        let secs = start.elapsed().as_secs_f64();
        kubelet_metrics::with(|m| {
            m.run_podsandbox_duration
                .with_label_values(&[runtime_handler])
                .observe(secs);
            if out.is_err() {
                m.run_podsandbox_errors
                    .with_label_values(&[runtime_handler])
                    .inc();
            }
        });
        out
    }

    async fn stop_pod_sandbox(&self, pod_sandbox_id: &str) -> CriResult<()> {
        record(
            "stop_podsandbox",
            self.service.stop_pod_sandbox(pod_sandbox_id),
        )
        .await
    }

    async fn remove_pod_sandbox(&self, pod_sandbox_id: &str) -> CriResult<()> {
        record(
            "remove_podsandbox",
            self.service.remove_pod_sandbox(pod_sandbox_id),
        )
        .await
    }

    async fn pod_sandbox_status(
        &self,
        pod_sandbox_id: &str,
        verbose: bool,
    ) -> CriResult<PodSandboxStatusResponse> {
        record(
            "podsandbox_status",
            self.service.pod_sandbox_status(pod_sandbox_id, verbose),
        )
        .await
    }

    async fn list_pod_sandbox(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        record("list_podsandbox", self.service.list_pod_sandbox(filter)).await
    }

    async fn list_pod_sandbox_kubelet_keys(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        let call = self.service.list_pod_sandbox_kubelet_keys(filter);
        record("list_podsandbox", call).await
    }

    async fn port_forward(&self, req: &PortForwardRequest) -> CriResult<PortForwardResponse> {
        record("port_forward", self.service.port_forward(req)).await
    }

    async fn update_pod_sandbox_resources(
        &self,
        req: &UpdatePodSandboxResourcesRequest,
    ) -> CriResult<UpdatePodSandboxResourcesResponse> {
        record(
            "update_podsandbox_resources",
            self.service.update_pod_sandbox_resources(req),
        )
        .await
    }

    async fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: &ContainerConfig,
        sandbox_config: &PodSandboxConfig,
    ) -> CriResult<String> {
        record(
            "create_container",
            self.service
                .create_container(pod_sandbox_id, config, sandbox_config),
        )
        .await
    }

    async fn start_container(&self, container_id: &str) -> CriResult<()> {
        record(
            "start_container",
            self.service.start_container(container_id),
        )
        .await
    }

    async fn stop_container(&self, container_id: &str, timeout_seconds: i64) -> CriResult<()> {
        record(
            "stop_container",
            self.service.stop_container(container_id, timeout_seconds),
        )
        .await
    }

    async fn remove_container(&self, container_id: &str) -> CriResult<()> {
        record(
            "remove_container",
            self.service.remove_container(container_id),
        )
        .await
    }

    async fn list_containers(&self, filter: Option<&ContainerFilter>) -> CriResult<Vec<Container>> {
        record("list_containers", self.service.list_containers(filter)).await
    }

    async fn list_containers_kubelet_keys(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        let call = self.service.list_containers_kubelet_keys(filter);
        record("list_containers", call).await
    }

    async fn list_pod_sandbox_without_labels(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        let call = self.service.list_pod_sandbox_without_labels(filter);
        record("list_podsandbox", call).await
    }

    async fn list_containers_without_labels(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        let call = self.service.list_containers_without_labels(filter);
        record("list_containers", call).await
    }

    async fn container_status(
        &self,
        container_id: &str,
        verbose: bool,
    ) -> CriResult<ContainerStatusResponse> {
        record(
            "container_status",
            self.service.container_status(container_id, verbose),
        )
        .await
    }

    async fn update_container_resources(
        &self,
        container_id: &str,
        resources: &ContainerResources,
    ) -> CriResult<()> {
        // Upstream's label for UpdateContainerResources is `update_container`.
        record(
            "update_container",
            self.service
                .update_container_resources(container_id, resources),
        )
        .await
    }

    async fn reopen_container_log(&self, container_id: &str) -> CriResult<()> {
        record(
            "reopen_container_log",
            self.service.reopen_container_log(container_id),
        )
        .await
    }

    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> CriResult<ExecSyncResponse> {
        record(
            "exec_sync",
            self.service.exec_sync(container_id, cmd, timeout),
        )
        .await
    }

    async fn exec(&self, req: &ExecRequest) -> CriResult<ExecResponse> {
        record("exec", self.service.exec(req)).await
    }

    async fn attach(&self, req: &AttachRequest) -> CriResult<AttachResponse> {
        record("attach", self.service.attach(req)).await
    }

    async fn checkpoint_container(&self, req: &CheckpointContainerRequest) -> CriResult<()> {
        record(
            "checkpoint_container",
            self.service.checkpoint_container(req),
        )
        .await
    }

    async fn get_container_events(&self) -> CriResult<ContainerEventStream> {
        record("get_container_events", self.service.get_container_events()).await
    }

    async fn container_stats(&self, container_id: &str) -> CriResult<Option<ContainerStats>> {
        record(
            "container_stats",
            self.service.container_stats(container_id),
        )
        .await
    }

    async fn list_container_stats(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        record(
            "list_container_stats",
            self.service.list_container_stats(filter),
        )
        .await
    }

    async fn list_container_stats_without_labels(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        let call = self.service.list_container_stats_without_labels(filter);
        record("list_container_stats", call).await
    }

    async fn pod_sandbox_stats(&self, pod_sandbox_id: &str) -> CriResult<Option<PodSandboxStats>> {
        record(
            "podsandbox_stats",
            self.service.pod_sandbox_stats(pod_sandbox_id),
        )
        .await
    }

    async fn list_pod_sandbox_stats(
        &self,
        filter: Option<&PodSandboxStatsFilter>,
    ) -> CriResult<Vec<PodSandboxStats>> {
        record(
            "list_podsandbox_stats",
            self.service.list_pod_sandbox_stats(filter),
        )
        .await
    }

    async fn list_metric_descriptors(&self) -> CriResult<Vec<MetricDescriptor>> {
        record(
            "list_metric_descriptors",
            self.service.list_metric_descriptors(),
        )
        .await
    }

    async fn list_pod_sandbox_metrics(&self) -> CriResult<Vec<PodSandboxMetrics>> {
        record(
            "list_podsandbox_metrics",
            self.service.list_pod_sandbox_metrics(),
        )
        .await
    }

    async fn update_runtime_config(&self, runtime_config: &RuntimeConfig) -> CriResult<()> {
        record(
            "update_runtime_config",
            self.service.update_runtime_config(runtime_config),
        )
        .await
    }

    async fn status(&self, verbose: bool) -> CriResult<StatusResponse> {
        record("status", self.service.status(verbose)).await
    }

    async fn runtime_config(&self) -> CriResult<RuntimeConfigResponse> {
        record("runtime_config", self.service.runtime_config()).await
    }
}

#[async_trait]
impl ImageService for InstrumentedImageService {
    async fn list_images(&self, filter: Option<&ImageFilter>) -> CriResult<Vec<Image>> {
        record("list_images", self.service.list_images(filter)).await
    }

    async fn image_status(
        &self,
        image: &ImageSpec,
        verbose: bool,
    ) -> CriResult<ImageStatusResponse> {
        record("image_status", self.service.image_status(image, verbose)).await
    }

    async fn pull_image(
        &self,
        image: &ImageSpec,
        auth: Option<&AuthConfig>,
        sandbox_config: Option<&PodSandboxConfig>,
    ) -> CriResult<String> {
        record(
            "pull_image",
            self.service.pull_image(image, auth, sandbox_config),
        )
        .await
    }

    async fn remove_image(&self, image: &ImageSpec) -> CriResult<()> {
        record("remove_image", self.service.remove_image(image)).await
    }

    async fn image_fs_info(&self) -> CriResult<ImageFsInfoResponse> {
        record("image_fs_info", self.service.image_fs_info()).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kubelet_cri::fake::FakeRuntimeService;

    #[tokio::test]
    async fn calls_and_errors_are_counted_by_operation() {
        let fake = Arc::new(FakeRuntimeService::new());
        let svc = InstrumentedRuntimeService::new(fake.clone());
        let m = kubelet_metrics::kubelet().unwrap();
        // Other tests share the process-wide registry: compare deltas of labels only
        // this test's wrapper uses for errors.
        let count = |op: &str| m.runtime_operations.with_label_values(&[op]).get();
        let errors = |op: &str| m.runtime_operations_errors.with_label_values(&[op]).get();
        let (calls, errs) = (
            count("reopen_container_log"),
            errors("reopen_container_log"),
        );
        let _ = svc.reopen_container_log("missing").await;
        assert_eq!(count("reopen_container_log"), calls + 1.0);
        assert_eq!(
            errors("reopen_container_log"),
            errs + 1.0,
            "an unknown container fails"
        );
        let durations = m
            .runtime_operations_duration
            .with_label_values(&["reopen_container_log"])
            .get_sample_count();
        assert!(durations >= 1);
        let sandbox_errors = m
            .run_podsandbox_errors
            .with_label_values(&["krs-test-handler"]);
        let before = sandbox_errors.get();
        fake.inject_error(
            "RunPodSandbox",
            kubelet_cri::CriError::status("fake", "RunPodSandbox", tonic::Code::Unknown, "boom"),
        );
        assert!(
            svc.run_pod_sandbox(&PodSandboxConfig::default(), "krs-test-handler")
                .await
                .is_err()
        );
        assert_eq!(sandbox_errors.get(), before + 1.0);
        assert!(
            m.run_podsandbox_duration
                .with_label_values(&["krs-test-handler"])
                .get_sample_count()
                >= 1
        );
    }
}
