//! gRPC implementation of [`RuntimeService`], mirroring `k8s.io/cri-client/pkg/remote_runtime.go`
//! (`remoteRuntimeService`): per-call deadline = runtimeRequestTimeout, twice that for
//! RunPodSandbox, timeout + grace period for StopContainer, timeout + exec timeout for ExecSync,
//! and the same response checks.

use std::time::Duration;

use async_trait::async_trait;
use tonic::transport::Channel;

use crate::error::CriResult;
use crate::remote::conn::Conn;
use crate::remote::lean;
use crate::remote::verify::{verify_container_status, verify_sandbox_status, verify_version};
use crate::services::{ContainerEventStream, RuntimeService};
use crate::v1::runtime_service_client::RuntimeServiceClient;
use crate::v1::*;

type Client = RuntimeServiceClient<Channel>;

/// CRI runtime service client over a unix socket (upstream `remoteRuntimeService`).
#[derive(Clone, Debug)]
pub struct RemoteRuntimeService {
    pub(super) conn: Conn<Client>,
}

impl RemoteRuntimeService {
    /// Connects to `endpoint` (`unix:///path` or a bare path). `timeout` bounds the connection
    /// and is the default per-call deadline (the kubelet's `runtimeRequestTimeout`).
    pub async fn connect(endpoint: &str, timeout: Duration) -> CriResult<Self> {
        let conn = Conn::dial(endpoint, timeout).await?;
        Ok(RemoteRuntimeService { conn })
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &str {
        &self.conn.endpoint
    }

    /// The default per-call deadline.
    pub fn timeout(&self) -> Duration {
        self.conn.timeout
    }

    pub(super) fn default_deadline(&self) -> Option<Duration> {
        Some(self.conn.timeout)
    }
}

pub(super) fn require_url<C>(conn: &Conn<C>, method: &'static str, url: &str) -> CriResult<()> {
    if url.is_empty() {
        return Err(conn.invalid(method, "URL is not set"));
    }
    Ok(())
}

impl RemoteRuntimeService {
    /// `ListPodSandbox` with only the map entries `K` keeps.
    async fn lean_sandboxes<K: lean::Keep>(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        let req = ListPodSandboxRequest {
            filter: filter.cloned(),
        };
        let resp: lean::LeanListPodSandboxResponse<K> =
            self.lean_unary("ListPodSandbox", req).await?;
        Ok(resp.0.into_iter().map(|s| s.0).collect())
    }

    /// `ListContainers` with only the map entries `K` keeps.
    async fn lean_containers<K: lean::Keep>(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        let req = ListContainersRequest {
            filter: filter.cloned(),
        };
        let resp: lean::LeanListContainersResponse<K> =
            self.lean_unary("ListContainers", req).await?;
        Ok(resp.0.into_iter().map(|c| c.0).collect())
    }

    /// One unary `RuntimeService` call whose response is decoded as `Resp` (a
    /// [`lean`] list) instead of the generated type: the generated client's call with
    /// another codec, same path, limits, deadline and errors.
    async fn lean_unary<Req, Resp>(&self, method: &'static str, req: Req) -> CriResult<Resp>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let path = match method {
            "ListPodSandbox" => "/runtime.v1.RuntimeService/ListPodSandbox",
            "ListContainers" => "/runtime.v1.RuntimeService/ListContainers",
            "ListContainerStats" => "/runtime.v1.RuntimeService/ListContainerStats",
            other => {
                let msg = format!("{other} has no lean decoding");
                return Err(self.conn.invalid(method, msg));
            }
        };
        let channel = self.conn.channel.clone();
        let d = self.default_deadline();
        self.conn
            .unary(method, d, req, |mut r| async move {
                let mut grpc = tonic::client::Grpc::new(channel)
                    .max_decoding_message_size(crate::remote::MAX_MSG_SIZE)
                    .max_encoding_message_size(crate::remote::MAX_MSG_SIZE);
                grpc.ready()
                    .await
                    .map_err(|e| tonic::Status::unknown(format!("Service was not ready: {e}")))?;
                r.extensions_mut()
                    .insert(tonic::GrpcMethod::new("runtime.v1.RuntimeService", method));
                let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
                grpc.unary(r, path, tonic_prost::ProstCodec::<Req, Resp>::default())
                    .await
            })
            .await
    }
}

#[async_trait]
impl RuntimeService for RemoteRuntimeService {
    async fn version(&self, api_version: &str) -> CriResult<VersionResponse> {
        let req = VersionRequest {
            version: api_version.to_owned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call(
                "Version",
                d,
                req,
                |mut c, r| async move { c.version(r).await },
            )
            .await?;
        verify_version(&resp).map_err(|reason| self.conn.invalid("Version", reason))?;
        Ok(resp)
    }

    async fn run_pod_sandbox(&self, config: &PodSandboxConfig, handler: &str) -> CriResult<String> {
        // Twice the timeout for sandbox creation, as upstream (4 minutes by default).
        let d = Some(self.conn.timeout * 2);
        let req = RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: handler.to_owned(),
        };
        let resp = self
            .conn
            .call("RunPodSandbox", d, req, |mut c, r| async move {
                c.run_pod_sandbox(r).await
            })
            .await?;
        if resp.pod_sandbox_id.is_empty() {
            let reason = format!("PodSandboxId is not set for sandbox {:?}", config.metadata);
            return Err(self.conn.invalid("RunPodSandbox", reason));
        }
        Ok(resp.pod_sandbox_id)
    }

    async fn stop_pod_sandbox(&self, pod_sandbox_id: &str) -> CriResult<()> {
        let req = StopPodSandboxRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
        };
        let d = self.default_deadline();
        self.conn
            .call("StopPodSandbox", d, req, |mut c, r| async move {
                c.stop_pod_sandbox(r).await
            })
            .await?;
        Ok(())
    }

    async fn remove_pod_sandbox(&self, pod_sandbox_id: &str) -> CriResult<()> {
        let req = RemovePodSandboxRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
        };
        let d = self.default_deadline();
        self.conn
            .call("RemovePodSandbox", d, req, |mut c, r| async move {
                c.remove_pod_sandbox(r).await
            })
            .await?;
        Ok(())
    }

    async fn pod_sandbox_status(
        &self,
        id: &str,
        verbose: bool,
    ) -> CriResult<PodSandboxStatusResponse> {
        let req = PodSandboxStatusRequest {
            pod_sandbox_id: id.to_owned(),
            verbose,
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("PodSandboxStatus", d, req, |mut c, r| async move {
                c.pod_sandbox_status(r).await
            })
            .await?;
        if let Some(status) = &resp.status {
            verify_sandbox_status(status)
                .map_err(|reason| self.conn.invalid("PodSandboxStatus", reason))?;
        }
        Ok(resp)
    }

    async fn list_pod_sandbox(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        let req = ListPodSandboxRequest {
            filter: filter.cloned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ListPodSandbox", d, req, |mut c, r| async move {
                c.list_pod_sandbox(r).await
            })
            .await?;
        Ok(resp.items)
    }

    async fn port_forward(&self, req: &PortForwardRequest) -> CriResult<PortForwardResponse> {
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("PortForward", d, req.clone(), |mut c, r| async move {
                c.port_forward(r).await
            })
            .await?;
        require_url(&self.conn, "PortForward", &resp.url)?;
        Ok(resp)
    }

    async fn update_pod_sandbox_resources(
        &self,
        req: &UpdatePodSandboxResourcesRequest,
    ) -> CriResult<UpdatePodSandboxResourcesResponse> {
        let d = self.default_deadline();
        self.conn
            .call(
                "UpdatePodSandboxResources",
                d,
                req.clone(),
                |mut c, r| async move { c.update_pod_sandbox_resources(r).await },
            )
            .await
    }

    async fn create_container(
        &self,
        pod_sandbox_id: &str,
        config: &ContainerConfig,
        sandbox_config: &PodSandboxConfig,
    ) -> CriResult<String> {
        let req = CreateContainerRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
            config: Some(config.clone()),
            sandbox_config: Some(sandbox_config.clone()),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("CreateContainer", d, req, |mut c, r| async move {
                c.create_container(r).await
            })
            .await?;
        if resp.container_id.is_empty() {
            let reason = format!("ContainerId is not set for container {:?}", config.metadata);
            return Err(self.conn.invalid("CreateContainer", reason));
        }
        Ok(resp.container_id)
    }

    async fn start_container(&self, container_id: &str) -> CriResult<()> {
        let req = StartContainerRequest {
            container_id: container_id.to_owned(),
        };
        let d = self.default_deadline();
        self.conn
            .call("StartContainer", d, req, |mut c, r| async move {
                c.start_container(r).await
            })
            .await?;
        Ok(())
    }

    async fn stop_container(&self, container_id: &str, timeout_seconds: i64) -> CriResult<()> {
        // The grace period plus the default timeout, to leave time for SIGKILL and latency.
        let grace = Duration::from_secs(u64::try_from(timeout_seconds).unwrap_or(0));
        let d = Some(self.conn.timeout + grace);
        let req = StopContainerRequest {
            container_id: container_id.to_owned(),
            timeout: timeout_seconds,
        };
        self.conn
            .call("StopContainer", d, req, |mut c, r| async move {
                c.stop_container(r).await
            })
            .await?;
        Ok(())
    }

    async fn remove_container(&self, container_id: &str) -> CriResult<()> {
        let req = RemoveContainerRequest {
            container_id: container_id.to_owned(),
        };
        let d = self.default_deadline();
        self.conn
            .call("RemoveContainer", d, req, |mut c, r| async move {
                c.remove_container(r).await
            })
            .await?;
        Ok(())
    }

    async fn list_containers(&self, filter: Option<&ContainerFilter>) -> CriResult<Vec<Container>> {
        let req = ListContainersRequest {
            filter: filter.cloned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ListContainers", d, req, |mut c, r| async move {
                c.list_containers(r).await
            })
            .await?;
        Ok(resp.containers)
    }

    async fn list_pod_sandbox_kubelet_keys(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        self.lean_sandboxes::<lean::KubeletKeys>(filter).await
    }

    async fn list_containers_kubelet_keys(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        self.lean_containers::<lean::KubeletKeys>(filter).await
    }

    async fn list_pod_sandbox_without_labels(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        self.lean_sandboxes::<lean::NoKeys>(filter).await
    }

    async fn list_containers_without_labels(
        &self,
        filter: Option<&ContainerFilter>,
    ) -> CriResult<Vec<Container>> {
        self.lean_containers::<lean::NoKeys>(filter).await
    }

    async fn container_status(
        &self,
        id: &str,
        verbose: bool,
    ) -> CriResult<ContainerStatusResponse> {
        let req = ContainerStatusRequest {
            container_id: id.to_owned(),
            verbose,
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ContainerStatus", d, req, |mut c, r| async move {
                c.container_status(r).await
            })
            .await?;
        if let Some(status) = &resp.status {
            verify_container_status(status)
                .map_err(|reason| self.conn.invalid("ContainerStatus", reason))?;
        }
        Ok(resp)
    }

    async fn update_container_resources(
        &self,
        container_id: &str,
        resources: &ContainerResources,
    ) -> CriResult<()> {
        let req = UpdateContainerResourcesRequest {
            container_id: container_id.to_owned(),
            linux: resources.linux.clone(),
            windows: resources.windows.clone(),
            annotations: Default::default(),
        };
        let d = self.default_deadline();
        self.conn
            .call("UpdateContainerResources", d, req, |mut c, r| async move {
                c.update_container_resources(r).await
            })
            .await?;
        Ok(())
    }

    async fn reopen_container_log(&self, container_id: &str) -> CriResult<()> {
        let req = ReopenContainerLogRequest {
            container_id: container_id.to_owned(),
        };
        let d = self.default_deadline();
        self.conn
            .call("ReopenContainerLog", d, req, |mut c, r| async move {
                c.reopen_container_log(r).await
            })
            .await?;
        Ok(())
    }

    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> CriResult<ExecSyncResponse> {
        self.exec_sync_v1(container_id, cmd, timeout).await
    }

    async fn exec(&self, req: &ExecRequest) -> CriResult<ExecResponse> {
        self.exec_v1(req).await
    }

    async fn attach(&self, req: &AttachRequest) -> CriResult<AttachResponse> {
        self.attach_v1(req).await
    }

    async fn checkpoint_container(&self, req: &CheckpointContainerRequest) -> CriResult<()> {
        self.checkpoint_container_v1(req).await
    }

    async fn get_container_events(&self) -> CriResult<ContainerEventStream> {
        self.get_container_events_v1().await
    }

    async fn container_stats(&self, container_id: &str) -> CriResult<Option<ContainerStats>> {
        self.container_stats_v1(container_id).await
    }

    async fn list_container_stats(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        self.list_container_stats_v1(filter).await
    }

    async fn list_container_stats_without_labels(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        let req = ListContainerStatsRequest {
            filter: filter.cloned(),
        };
        let resp: lean::LeanListContainerStatsResponse<lean::NoKeys> =
            self.lean_unary("ListContainerStats", req).await?;
        Ok(resp.0.into_iter().map(|c| c.0).collect())
    }

    async fn pod_sandbox_stats(&self, pod_sandbox_id: &str) -> CriResult<Option<PodSandboxStats>> {
        self.pod_sandbox_stats_v1(pod_sandbox_id).await
    }

    async fn list_pod_sandbox_stats(
        &self,
        filter: Option<&PodSandboxStatsFilter>,
    ) -> CriResult<Vec<PodSandboxStats>> {
        self.list_pod_sandbox_stats_v1(filter).await
    }

    async fn list_metric_descriptors(&self) -> CriResult<Vec<MetricDescriptor>> {
        self.list_metric_descriptors_v1().await
    }

    async fn list_pod_sandbox_metrics(&self) -> CriResult<Vec<PodSandboxMetrics>> {
        self.list_pod_sandbox_metrics_v1().await
    }

    async fn update_runtime_config(&self, runtime_config: &RuntimeConfig) -> CriResult<()> {
        let req = UpdateRuntimeConfigRequest {
            runtime_config: Some(runtime_config.clone()),
        };
        let d = self.default_deadline();
        self.conn
            .call("UpdateRuntimeConfig", d, req, |mut c, r| async move {
                c.update_runtime_config(r).await
            })
            .await?;
        Ok(())
    }

    async fn status(&self, verbose: bool) -> CriResult<StatusResponse> {
        let d = self.default_deadline();
        let req = StatusRequest { verbose };
        let resp = self
            .conn
            .call(
                "Status",
                d,
                req,
                |mut c, r| async move { c.status(r).await },
            )
            .await?;
        if resp.status.as_ref().is_none_or(|s| s.conditions.len() < 2) {
            let reason = "RuntimeReady or NetworkReady condition are not set";
            return Err(self.conn.invalid("Status", reason));
        }
        Ok(resp)
    }

    async fn runtime_config(&self) -> CriResult<RuntimeConfigResponse> {
        let d = self.default_deadline();
        self.conn
            .call(
                "RuntimeConfig",
                d,
                RuntimeConfigRequest {},
                |mut c, r| async move { c.runtime_config(r).await },
            )
            .await
    }
}
