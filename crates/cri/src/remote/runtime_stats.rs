//! Stats and metrics of [`RemoteRuntimeService`] (upstream `remote_runtime.go`
//! `containerStatsV1`, `listContainerStatsV1`, `podSandboxStatsV1`, `listPodSandboxStatsV1`,
//! `ListMetricDescriptors`, `ListPodSandboxMetrics`).

use crate::error::CriResult;
use crate::remote::runtime::RemoteRuntimeService;
use crate::v1::*;

impl RemoteRuntimeService {
    pub(super) async fn container_stats_v1(
        &self,
        container_id: &str,
    ) -> CriResult<Option<ContainerStats>> {
        let req = ContainerStatsRequest {
            container_id: container_id.to_owned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ContainerStats", d, req, |mut c, r| async move {
                c.container_stats(r).await
            })
            .await?;
        Ok(resp.stats)
    }

    pub(super) async fn list_container_stats_v1(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        let req = ListContainerStatsRequest {
            filter: filter.cloned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ListContainerStats", d, req, |mut c, r| async move {
                c.list_container_stats(r).await
            })
            .await?;
        Ok(resp.stats)
    }

    pub(super) async fn pod_sandbox_stats_v1(
        &self,
        pod_sandbox_id: &str,
    ) -> CriResult<Option<PodSandboxStats>> {
        let req = PodSandboxStatsRequest {
            pod_sandbox_id: pod_sandbox_id.to_owned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("PodSandboxStats", d, req, |mut c, r| async move {
                c.pod_sandbox_stats(r).await
            })
            .await?;
        Ok(resp.stats)
    }

    pub(super) async fn list_pod_sandbox_stats_v1(
        &self,
        filter: Option<&PodSandboxStatsFilter>,
    ) -> CriResult<Vec<PodSandboxStats>> {
        let req = ListPodSandboxStatsRequest {
            filter: filter.cloned(),
        };
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ListPodSandboxStats", d, req, |mut c, r| async move {
                c.list_pod_sandbox_stats(r).await
            })
            .await?;
        Ok(resp.stats)
    }

    pub(super) async fn list_metric_descriptors_v1(&self) -> CriResult<Vec<MetricDescriptor>> {
        let req = ListMetricDescriptorsRequest {};
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ListMetricDescriptors", d, req, |mut c, r| async move {
                c.list_metric_descriptors(r).await
            })
            .await?;
        Ok(resp.descriptors)
    }

    pub(super) async fn list_pod_sandbox_metrics_v1(&self) -> CriResult<Vec<PodSandboxMetrics>> {
        let req = ListPodSandboxMetricsRequest {};
        let d = self.default_deadline();
        let resp = self
            .conn
            .call("ListPodSandboxMetrics", d, req, |mut c, r| async move {
                c.list_pod_sandbox_metrics(r).await
            })
            .await?;
        Ok(resp.pod_metrics)
    }
}
