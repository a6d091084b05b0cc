//! [`RuntimeService`] for [`FakeRuntimeService`]: sandbox and container lifecycle with the
//! transitions and errors of a real runtime (containerd's CRI plugin semantics).

use std::time::Duration;

use async_trait::async_trait;

use crate::error::{CriError, CriResult};
use crate::fake::FakeRuntimeService;
use crate::fake::calls::fake_err;
use crate::fake::runtime_state::*;
use crate::services::{ContainerEventStream, RuntimeService};
use crate::v1::ContainerEventType as Ev;
use crate::v1::*;

fn precondition(method: &'static str, msg: String) -> CriError {
    fake_err(method, tonic::Code::FailedPrecondition, msg)
}

fn invalid(method: &'static str, msg: &str) -> CriError {
    fake_err(method, tonic::Code::InvalidArgument, msg)
}

fn state_name(state: i32) -> &'static str {
    ContainerState::try_from(state).map_or("UNKNOWN", |s| s.as_str_name())
}

impl FakeRuntimeService {
    /// Requires container `id` to be running (exec, attach, log reopen).
    pub(super) fn running_container(&self, method: &'static str, id: &str) -> CriResult<()> {
        let st = self.lock();
        let c = st.container(method, id)?;
        if !c.is(ContainerState::ContainerRunning) {
            return Err(precondition(
                method,
                format!("container {id:?} is not running"),
            ));
        }
        Ok(())
    }

    fn stop_sandbox_containers(&self, st: &mut FakeRuntimeState, sandbox_id: &str) {
        let running: Vec<String> = st
            .containers
            .values()
            .filter(|c| c.sandbox_id == sandbox_id && c.is(ContainerState::ContainerRunning))
            .map(|c| c.status.id.clone())
            .collect();
        for id in running {
            if let Some(c) = st.containers.get_mut(&id) {
                c.mark_exited(137, "Error");
            }
            self.emit(st, &id, sandbox_id, Ev::ContainerStoppedEvent);
        }
    }
}

#[async_trait]
impl RuntimeService for FakeRuntimeService {
    async fn version(&self, _api_version: &str) -> CriResult<VersionResponse> {
        self.begin("Version").await?;
        let version = self.lock().version.clone();
        Ok(version.unwrap_or_else(|| VersionResponse {
            version: FAKE_VERSION.into(),
            runtime_name: FAKE_RUNTIME_NAME.into(),
            runtime_version: FAKE_VERSION.into(),
            runtime_api_version: "v1".into(),
        }))
    }

    async fn run_pod_sandbox(&self, config: &PodSandboxConfig, handler: &str) -> CriResult<String> {
        const M: &str = "RunPodSandbox";
        self.begin(M).await?;
        let meta = config
            .metadata
            .as_ref()
            .ok_or_else(|| invalid(M, "sandbox config must include metadata"))?;
        let id = build_sandbox_name(meta);
        let mut st = self.lock();
        if st.sandboxes.contains_key(&id) {
            let msg = format!("failed to reserve sandbox name {id:?}: name is reserved");
            return Err(fake_err(M, tonic::Code::AlreadyExists, msg));
        }
        let status = new_sandbox_status(&id, config, handler);
        let sandbox = FakePodSandbox {
            status,
            config: config.clone(),
        };
        st.sandboxes.insert(id.clone(), sandbox);
        self.emit(&st, &id, &id, Ev::ContainerCreatedEvent);
        self.emit(&st, &id, &id, Ev::ContainerStartedEvent);
        Ok(id)
    }

    async fn stop_pod_sandbox(&self, id: &str) -> CriResult<()> {
        const M: &str = "StopPodSandbox";
        self.begin(M).await?;
        let mut st = self.lock();
        let sandbox = st.sandbox_mut(M, id)?;
        let was_ready = sandbox.status.state == PodSandboxState::SandboxReady as i32;
        sandbox.status.state = PodSandboxState::SandboxNotready as i32;
        self.stop_sandbox_containers(&mut st, id);
        if was_ready {
            self.emit(&st, id, id, Ev::ContainerStoppedEvent);
        }
        Ok(())
    }

    async fn remove_pod_sandbox(&self, id: &str) -> CriResult<()> {
        self.begin("RemovePodSandbox").await?;
        let mut st = self.lock();
        if !st.sandboxes.contains_key(id) {
            return Ok(()); // Idempotent, as the CRI requires.
        }
        self.stop_sandbox_containers(&mut st, id);
        let members: Vec<String> = st
            .containers
            .values()
            .filter(|c| c.sandbox_id == id)
            .map(|c| c.status.id.clone())
            .collect();
        for cid in members {
            st.containers.remove(&cid);
            self.emit(&st, &cid, id, Ev::ContainerDeletedEvent);
        }
        st.sandboxes.remove(id);
        self.emit(&st, id, id, Ev::ContainerDeletedEvent);
        Ok(())
    }

    async fn pod_sandbox_status(
        &self,
        id: &str,
        _verbose: bool,
    ) -> CriResult<PodSandboxStatusResponse> {
        const M: &str = "PodSandboxStatus";
        self.begin(M).await?;
        let st = self.lock();
        let s = st.sandbox(M, id)?;
        Ok(PodSandboxStatusResponse {
            status: Some(s.status.clone()),
            ..Default::default()
        })
    }

    async fn list_pod_sandbox(
        &self,
        filter: Option<&PodSandboxFilter>,
    ) -> CriResult<Vec<PodSandbox>> {
        self.begin("ListPodSandbox").await?;
        let st = self.lock();
        let selected = st
            .sandboxes
            .values()
            .filter(|s| filter.is_none_or(|f| s.matches(f)));
        Ok(selected.map(FakePodSandbox::to_pod_sandbox).collect())
    }

    async fn port_forward(&self, req: &PortForwardRequest) -> CriResult<PortForwardResponse> {
        const M: &str = "PortForward";
        self.begin(M).await?;
        let mut st = self.lock();
        st.sandbox(M, &req.pod_sandbox_id)?;
        st.last_port_forward_request = Some(req.clone());
        let url = format!("{FAKE_STREAMING_URL}/portforward/{}", req.pod_sandbox_id);
        Ok(PortForwardResponse { url })
    }

    async fn update_pod_sandbox_resources(
        &self,
        req: &UpdatePodSandboxResourcesRequest,
    ) -> CriResult<UpdatePodSandboxResourcesResponse> {
        const M: &str = "UpdatePodSandboxResources";
        self.begin(M).await?;
        let mut st = self.lock();
        st.sandbox(M, &req.pod_sandbox_id)?;
        st.sandbox_resource_updates.push(req.clone());
        Ok(UpdatePodSandboxResourcesResponse {})
    }

    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &ContainerConfig,
        sandbox_config: &PodSandboxConfig,
    ) -> CriResult<String> {
        const M: &str = "CreateContainer";
        self.begin(M).await?;
        let meta = config
            .metadata
            .as_ref()
            .ok_or_else(|| invalid(M, "container config must include metadata"))?;
        if config.image.as_ref().is_none_or(|i| i.image.is_empty()) {
            return Err(invalid(M, "container config must include an image"));
        }
        let mut st = self.lock();
        let sandbox = st.sandbox(M, sandbox_id)?;
        if sandbox.status.state != PodSandboxState::SandboxReady as i32 {
            return Err(precondition(
                M,
                format!("sandbox {sandbox_id:?} is not ready"),
            ));
        }
        let id = build_container_name(meta, sandbox_id);
        if st.containers.contains_key(&id) {
            let msg = format!("failed to reserve container name {id:?}: name is reserved");
            return Err(fake_err(M, tonic::Code::AlreadyExists, msg));
        }
        let mut status = new_container_status(&id, config, sandbox_config);
        if st.features.is_some_and(|f| f.supplemental_groups_policy) {
            status.user = Some(fake_container_user(config));
        }
        let container = FakeContainer {
            status,
            sandbox_id: sandbox_id.to_owned(),
            config: config.clone(),
        };
        st.containers.insert(id.clone(), container);
        self.emit(&st, &id, sandbox_id, Ev::ContainerCreatedEvent);
        Ok(id)
    }

    async fn start_container(&self, id: &str) -> CriResult<()> {
        const M: &str = "StartContainer";
        self.begin(M).await?;
        let mut st = self.lock();
        let c = st.container_mut(M, id)?;
        if !c.is(ContainerState::ContainerCreated) {
            let state = state_name(c.status.state);
            return Err(precondition(
                M,
                format!("container {id:?} is in {state} state"),
            ));
        }
        c.status.state = ContainerState::ContainerRunning as i32;
        c.status.started_at = now_nanos();
        let sandbox_id = c.sandbox_id.clone();
        self.emit(&st, id, &sandbox_id, Ev::ContainerStartedEvent);
        Ok(())
    }

    async fn stop_container(&self, id: &str, timeout_seconds: i64) -> CriResult<()> {
        const M: &str = "StopContainer";
        self.begin(M).await?;
        let mut st = self.lock();
        st.stop_timeouts.push((id.to_owned(), timeout_seconds));
        let c = st.container_mut(M, id)?;
        // Stopping a created or exited container is a no-op, as in containerd.
        if c.is(ContainerState::ContainerRunning) {
            c.mark_exited(0, exit_reason(0));
            let sandbox_id = c.sandbox_id.clone();
            self.emit(&st, id, &sandbox_id, Ev::ContainerStoppedEvent);
        }
        Ok(())
    }

    async fn remove_container(&self, id: &str) -> CriResult<()> {
        self.begin("RemoveContainer").await?;
        let mut st = self.lock();
        // Idempotent, and a running container is removed by force, as the CRI requires.
        if let Some(c) = st.containers.remove(id) {
            self.emit(&st, id, &c.sandbox_id, Ev::ContainerDeletedEvent);
        }
        Ok(())
    }

    async fn list_containers(&self, filter: Option<&ContainerFilter>) -> CriResult<Vec<Container>> {
        self.begin("ListContainers").await?;
        let st = self.lock();
        let selected = st
            .containers
            .values()
            .filter(|c| filter.is_none_or(|f| c.matches(f)));
        Ok(selected.map(FakeContainer::to_container).collect())
    }

    async fn container_status(
        &self,
        id: &str,
        _verbose: bool,
    ) -> CriResult<ContainerStatusResponse> {
        const M: &str = "ContainerStatus";
        self.begin(M).await?;
        let st = self.lock();
        let c = st.container(M, id)?;
        Ok(ContainerStatusResponse {
            status: Some(c.status.clone()),
            ..Default::default()
        })
    }

    async fn update_container_resources(
        &self,
        id: &str,
        resources: &ContainerResources,
    ) -> CriResult<()> {
        const M: &str = "UpdateContainerResources";
        self.begin(M).await?;
        let mut st = self.lock();
        let c = st.container_mut(M, id)?;
        c.status.resources = Some(resources.clone());
        Ok(())
    }

    async fn reopen_container_log(&self, id: &str) -> CriResult<()> {
        const M: &str = "ReopenContainerLog";
        self.begin(M).await?;
        self.running_container(M, id)?;
        self.lock().reopened_logs.push(id.to_owned());
        Ok(())
    }

    async fn exec_sync(
        &self,
        id: &str,
        cmd: &[String],
        timeout: Duration,
    ) -> CriResult<ExecSyncResponse> {
        self.exec_sync_impl(id, cmd, timeout).await
    }

    async fn exec(&self, req: &ExecRequest) -> CriResult<ExecResponse> {
        self.exec_impl(req).await
    }

    async fn attach(&self, req: &AttachRequest) -> CriResult<AttachResponse> {
        self.attach_impl(req).await
    }

    async fn checkpoint_container(&self, req: &CheckpointContainerRequest) -> CriResult<()> {
        self.checkpoint_container_impl(req).await
    }

    async fn get_container_events(&self) -> CriResult<ContainerEventStream> {
        self.get_container_events_impl().await
    }

    async fn container_stats(&self, id: &str) -> CriResult<Option<ContainerStats>> {
        self.container_stats_impl(id).await
    }

    async fn list_container_stats(
        &self,
        filter: Option<&ContainerStatsFilter>,
    ) -> CriResult<Vec<ContainerStats>> {
        self.list_container_stats_impl(filter).await
    }

    async fn pod_sandbox_stats(&self, id: &str) -> CriResult<Option<PodSandboxStats>> {
        self.pod_sandbox_stats_impl(id).await
    }

    async fn list_pod_sandbox_stats(
        &self,
        filter: Option<&PodSandboxStatsFilter>,
    ) -> CriResult<Vec<PodSandboxStats>> {
        self.list_pod_sandbox_stats_impl(filter).await
    }

    async fn list_metric_descriptors(&self) -> CriResult<Vec<MetricDescriptor>> {
        self.begin("ListMetricDescriptors").await?;
        Ok(self.lock().metric_descriptors.clone())
    }

    async fn list_pod_sandbox_metrics(&self) -> CriResult<Vec<PodSandboxMetrics>> {
        self.begin("ListPodSandboxMetrics").await?;
        Ok(self.lock().pod_sandbox_metrics.clone())
    }

    async fn update_runtime_config(&self, runtime_config: &RuntimeConfig) -> CriResult<()> {
        self.begin("UpdateRuntimeConfig").await?;
        self.lock()
            .runtime_config_updates
            .push(runtime_config.clone());
        Ok(())
    }

    async fn status(&self, _verbose: bool) -> CriResult<StatusResponse> {
        self.begin("Status").await?;
        let status = self
            .lock()
            .status
            .clone()
            .unwrap_or_else(ready_runtime_status);
        let st = self.lock();
        Ok(StatusResponse {
            status: Some(status),
            features: st.features,
            runtime_handlers: st.runtime_handlers.clone(),
            ..Default::default()
        })
    }

    async fn runtime_config(&self) -> CriResult<RuntimeConfigResponse> {
        self.begin("RuntimeConfig").await?;
        Ok(RuntimeConfigResponse {
            linux: self.lock().linux_config,
        })
    }
}
