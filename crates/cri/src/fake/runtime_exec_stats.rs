//! Exec, attach, checkpoint, container events and stats of [`FakeRuntimeService`].

use std::time::Duration;

use futures::StreamExt;
use tokio_stream::wrappers::BroadcastStream;

use crate::error::{CriError, CriResult};
use crate::fake::FakeRuntimeService;
use crate::fake::calls::FAKE_ENDPOINT;
use crate::fake::runtime_state::*;
use crate::services::ContainerEventStream;
use crate::v1::*;

impl FakeRuntimeService {
    pub(super) async fn exec_sync_impl(
        &self,
        id: &str,
        cmd: &[String],
        _timeout: Duration,
    ) -> CriResult<ExecSyncResponse> {
        const M: &str = "ExecSync";
        self.begin(M).await?;
        self.running_container(M, id)?;
        let handler = self.lock().exec_sync_handler.clone();
        match handler {
            Some(h) => h(id, cmd),
            None => Ok(ExecSyncResponse::default()),
        }
    }

    pub(super) async fn exec_impl(&self, req: &ExecRequest) -> CriResult<ExecResponse> {
        const M: &str = "Exec";
        self.begin(M).await?;
        self.running_container(M, &req.container_id)?;
        self.lock().last_exec_request = Some(req.clone());
        let url = format!("{FAKE_STREAMING_URL}/exec/{}", req.container_id);
        Ok(ExecResponse { url })
    }

    pub(super) async fn attach_impl(&self, req: &AttachRequest) -> CriResult<AttachResponse> {
        const M: &str = "Attach";
        self.begin(M).await?;
        self.running_container(M, &req.container_id)?;
        self.lock().last_attach_request = Some(req.clone());
        let url = format!("{FAKE_STREAMING_URL}/attach/{}", req.container_id);
        Ok(AttachResponse { url })
    }

    pub(super) async fn checkpoint_container_impl(
        &self,
        req: &CheckpointContainerRequest,
    ) -> CriResult<()> {
        const M: &str = "CheckpointContainer";
        self.begin(M).await?;
        let mut st = self.lock();
        st.container(M, &req.container_id)?;
        st.checkpoints.push(req.clone());
        Ok(())
    }

    pub(super) async fn get_container_events_impl(&self) -> CriResult<ContainerEventStream> {
        const M: &str = "GetContainerEvents";
        self.begin(M).await?;
        let stream = BroadcastStream::new(self.subscribe_events()).map(|item| {
            item.map_err(|lagged| {
                let msg = format!("container events subscriber {lagged}");
                CriError::status(FAKE_ENDPOINT, M, tonic::Code::ResourceExhausted, msg)
            })
        });
        Ok(Box::pin(stream))
    }

    pub(super) async fn container_stats_impl(&self, id: &str) -> CriResult<Option<ContainerStats>> {
        const M: &str = "ContainerStats";
        self.begin(M).await?;
        let st = self.lock();
        let c = st.container(M, id)?;
        Ok(Some(container_stats_of(&st, c)))
    }

    pub(super) async fn list_container_stats_impl(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        self.begin("ListContainerStats").await?;
        let st = self.lock();
        let selected = st.containers.values().filter(|c| {
            filter.is_none_or(|f| {
                (f.id.is_empty() || f.id == c.status.id)
                    && (f.pod_sandbox_id.is_empty() || f.pod_sandbox_id == c.sandbox_id)
                    && labels_match(&f.label_selector, &c.status.labels)
            })
        });
        Ok(selected.map(|c| container_stats_of(&st, c)).collect())
    }

    pub(super) async fn pod_sandbox_stats_impl(
        &self,
        id: &str,
    ) -> CriResult<Option<PodSandboxStats>> {
        const M: &str = "PodSandboxStats";
        self.begin(M).await?;
        let st = self.lock();
        let s = st.sandbox(M, id)?;
        Ok(Some(sandbox_stats_of(&st, s)))
    }

    pub(super) async fn list_pod_sandbox_stats_impl(
        &self,
        filter: Option<&PodSandboxStatsFilter>,
    ) -> CriResult<Vec<PodSandboxStats>> {
        self.begin("ListPodSandboxStats").await?;
        let st = self.lock();
        let selected = st.sandboxes.values().filter(|s| {
            filter.is_none_or(|f| {
                (f.id.is_empty() || f.id == s.status.id)
                    && labels_match(&f.label_selector, &s.status.labels)
            })
        });
        Ok(selected.map(|s| sandbox_stats_of(&st, s)).collect())
    }
}

fn container_stats_of(st: &FakeRuntimeState, c: &FakeContainer) -> ContainerStats {
    st.container_stats
        .get(&c.status.id)
        .cloned()
        .unwrap_or_else(|| ContainerStats {
            attributes: Some(c.attributes()),
            ..Default::default()
        })
}

fn sandbox_stats_of(st: &FakeRuntimeState, s: &FakePodSandbox) -> PodSandboxStats {
    st.pod_sandbox_stats
        .get(&s.status.id)
        .cloned()
        .unwrap_or_else(|| PodSandboxStats {
            attributes: Some(s.attributes()),
            ..Default::default()
        })
}
