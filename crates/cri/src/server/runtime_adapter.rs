//! Serves any [`RuntimeService`] as the gRPC `runtime.v1.RuntimeService` (the server side of
//! `k8s.io/cri-client/pkg/fake`'s fake remote runtime, generalised to any implementation).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tonic::{Request, Response, Status};

use crate::error::CriResult;
use crate::services::RuntimeService;
use crate::v1::runtime_service_server::RuntimeService as GrpcRuntimeService;
use crate::v1::*;

/// Adapter from [`RuntimeService`] to the generated gRPC server trait.
#[derive(Clone)]
pub struct RuntimeServiceAdapter {
    inner: Arc<dyn RuntimeService>,
}

impl RuntimeServiceAdapter {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn RuntimeService>) -> Self {
        RuntimeServiceAdapter { inner }
    }
}

pub(crate) fn reply<T>(r: CriResult<T>) -> Result<Response<T>, Status> {
    r.map(Response::new).map_err(|e| e.to_tonic_status())
}

fn done<T>(r: CriResult<()>, resp: T) -> Result<Response<T>, Status> {
    reply(r.map(|()| resp))
}

type Res<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl GrpcRuntimeService for RuntimeServiceAdapter {
    async fn version(&self, r: Request<VersionRequest>) -> Res<VersionResponse> {
        reply(self.inner.version(&r.into_inner().version).await)
    }

    async fn run_pod_sandbox(
        &self,
        r: Request<RunPodSandboxRequest>,
    ) -> Res<RunPodSandboxResponse> {
        let r = r.into_inner();
        let config = r.config.unwrap_or_default();
        let id = self
            .inner
            .run_pod_sandbox(&config, &r.runtime_handler)
            .await;
        reply(id.map(|pod_sandbox_id| RunPodSandboxResponse { pod_sandbox_id }))
    }

    async fn stop_pod_sandbox(
        &self,
        r: Request<StopPodSandboxRequest>,
    ) -> Res<StopPodSandboxResponse> {
        let id = r.into_inner().pod_sandbox_id;
        done(
            self.inner.stop_pod_sandbox(&id).await,
            StopPodSandboxResponse {},
        )
    }

    async fn remove_pod_sandbox(
        &self,
        r: Request<RemovePodSandboxRequest>,
    ) -> Res<RemovePodSandboxResponse> {
        let id = r.into_inner().pod_sandbox_id;
        done(
            self.inner.remove_pod_sandbox(&id).await,
            RemovePodSandboxResponse {},
        )
    }

    async fn pod_sandbox_status(
        &self,
        r: Request<PodSandboxStatusRequest>,
    ) -> Res<PodSandboxStatusResponse> {
        let r = r.into_inner();
        reply(
            self.inner
                .pod_sandbox_status(&r.pod_sandbox_id, r.verbose)
                .await,
        )
    }

    async fn list_pod_sandbox(
        &self,
        r: Request<ListPodSandboxRequest>,
    ) -> Res<ListPodSandboxResponse> {
        let filter = r.into_inner().filter;
        let items = self.inner.list_pod_sandbox(filter.as_ref()).await;
        reply(items.map(|items| ListPodSandboxResponse { items }))
    }

    async fn create_container(
        &self,
        r: Request<CreateContainerRequest>,
    ) -> Res<CreateContainerResponse> {
        let r = r.into_inner();
        let config = r.config.unwrap_or_default();
        let sandbox_config = r.sandbox_config.unwrap_or_default();
        let id = self
            .inner
            .create_container(&r.pod_sandbox_id, &config, &sandbox_config)
            .await;
        reply(id.map(|container_id| CreateContainerResponse { container_id }))
    }

    async fn start_container(
        &self,
        r: Request<StartContainerRequest>,
    ) -> Res<StartContainerResponse> {
        let id = r.into_inner().container_id;
        done(
            self.inner.start_container(&id).await,
            StartContainerResponse {},
        )
    }

    async fn stop_container(&self, r: Request<StopContainerRequest>) -> Res<StopContainerResponse> {
        let r = r.into_inner();
        let result = self.inner.stop_container(&r.container_id, r.timeout).await;
        done(result, StopContainerResponse {})
    }

    async fn remove_container(
        &self,
        r: Request<RemoveContainerRequest>,
    ) -> Res<RemoveContainerResponse> {
        let id = r.into_inner().container_id;
        done(
            self.inner.remove_container(&id).await,
            RemoveContainerResponse {},
        )
    }

    async fn list_containers(
        &self,
        r: Request<ListContainersRequest>,
    ) -> Res<ListContainersResponse> {
        let filter = r.into_inner().filter;
        let containers = self.inner.list_containers(filter.as_ref()).await;
        reply(containers.map(|containers| ListContainersResponse { containers }))
    }

    async fn container_status(
        &self,
        r: Request<ContainerStatusRequest>,
    ) -> Res<ContainerStatusResponse> {
        let r = r.into_inner();
        reply(
            self.inner
                .container_status(&r.container_id, r.verbose)
                .await,
        )
    }

    async fn update_container_resources(
        &self,
        r: Request<UpdateContainerResourcesRequest>,
    ) -> Res<UpdateContainerResourcesResponse> {
        let r = r.into_inner();
        let resources = ContainerResources {
            linux: r.linux,
            windows: r.windows,
        };
        let result = self
            .inner
            .update_container_resources(&r.container_id, &resources)
            .await;
        done(result, UpdateContainerResourcesResponse {})
    }

    async fn reopen_container_log(
        &self,
        r: Request<ReopenContainerLogRequest>,
    ) -> Res<ReopenContainerLogResponse> {
        let id = r.into_inner().container_id;
        done(
            self.inner.reopen_container_log(&id).await,
            ReopenContainerLogResponse {},
        )
    }

    async fn exec_sync(&self, r: Request<ExecSyncRequest>) -> Res<ExecSyncResponse> {
        let r = r.into_inner();
        let timeout = Duration::from_secs(u64::try_from(r.timeout).unwrap_or(0));
        reply(self.inner.exec_sync(&r.container_id, &r.cmd, timeout).await)
    }

    async fn exec(&self, r: Request<ExecRequest>) -> Res<ExecResponse> {
        reply(self.inner.exec(&r.into_inner()).await)
    }

    async fn attach(&self, r: Request<AttachRequest>) -> Res<AttachResponse> {
        reply(self.inner.attach(&r.into_inner()).await)
    }

    async fn port_forward(&self, r: Request<PortForwardRequest>) -> Res<PortForwardResponse> {
        reply(self.inner.port_forward(&r.into_inner()).await)
    }

    async fn container_stats(
        &self,
        r: Request<ContainerStatsRequest>,
    ) -> Res<ContainerStatsResponse> {
        let stats = self
            .inner
            .container_stats(&r.into_inner().container_id)
            .await;
        reply(stats.map(|stats| ContainerStatsResponse { stats }))
    }

    async fn list_container_stats(
        &self,
        r: Request<ListContainerStatsRequest>,
    ) -> Res<ListContainerStatsResponse> {
        let filter = r.into_inner().filter;
        let stats = self.inner.list_container_stats(filter.as_ref()).await;
        reply(stats.map(|stats| ListContainerStatsResponse { stats }))
    }

    async fn pod_sandbox_stats(
        &self,
        r: Request<PodSandboxStatsRequest>,
    ) -> Res<PodSandboxStatsResponse> {
        let stats = self
            .inner
            .pod_sandbox_stats(&r.into_inner().pod_sandbox_id)
            .await;
        reply(stats.map(|stats| PodSandboxStatsResponse { stats }))
    }

    async fn list_pod_sandbox_stats(
        &self,
        r: Request<ListPodSandboxStatsRequest>,
    ) -> Res<ListPodSandboxStatsResponse> {
        let filter = r.into_inner().filter;
        let stats = self.inner.list_pod_sandbox_stats(filter.as_ref()).await;
        reply(stats.map(|stats| ListPodSandboxStatsResponse { stats }))
    }

    async fn update_runtime_config(
        &self,
        r: Request<UpdateRuntimeConfigRequest>,
    ) -> Res<UpdateRuntimeConfigResponse> {
        let config = r.into_inner().runtime_config.unwrap_or_default();
        let result = self.inner.update_runtime_config(&config).await;
        done(result, UpdateRuntimeConfigResponse {})
    }

    async fn status(&self, r: Request<StatusRequest>) -> Res<StatusResponse> {
        reply(self.inner.status(r.into_inner().verbose).await)
    }

    async fn checkpoint_container(
        &self,
        r: Request<CheckpointContainerRequest>,
    ) -> Res<CheckpointContainerResponse> {
        let result = self.inner.checkpoint_container(&r.into_inner()).await;
        done(result, CheckpointContainerResponse {})
    }

    type GetContainerEventsStream =
        futures::stream::BoxStream<'static, Result<ContainerEventResponse, Status>>;

    async fn get_container_events(
        &self,
        _r: Request<GetEventsRequest>,
    ) -> Res<Self::GetContainerEventsStream> {
        let stream = self.inner.get_container_events().await;
        reply(stream.map(|s| s.map(|item| item.map_err(|e| e.to_tonic_status())).boxed()))
    }

    async fn list_metric_descriptors(
        &self,
        _r: Request<ListMetricDescriptorsRequest>,
    ) -> Res<ListMetricDescriptorsResponse> {
        let descriptors = self.inner.list_metric_descriptors().await;
        reply(descriptors.map(|descriptors| ListMetricDescriptorsResponse { descriptors }))
    }

    async fn list_pod_sandbox_metrics(
        &self,
        _r: Request<ListPodSandboxMetricsRequest>,
    ) -> Res<ListPodSandboxMetricsResponse> {
        let metrics = self.inner.list_pod_sandbox_metrics().await;
        reply(metrics.map(|pod_metrics| ListPodSandboxMetricsResponse { pod_metrics }))
    }

    async fn runtime_config(
        &self,
        _r: Request<RuntimeConfigRequest>,
    ) -> Res<RuntimeConfigResponse> {
        reply(self.inner.runtime_config().await)
    }

    async fn update_pod_sandbox_resources(
        &self,
        r: Request<UpdatePodSandboxResourcesRequest>,
    ) -> Res<UpdatePodSandboxResourcesResponse> {
        reply(
            self.inner
                .update_pod_sandbox_resources(&r.into_inner())
                .await,
        )
    }
}
