//! Recording in-memory CRI runtime, mirroring `FakeRuntimeService` of
//! `k8s.io/cri-api/pkg/apis/testing/fake_runtime_service.go`, with real state transitions
//! (created → running → exited), NotFound errors like containerd, and container events.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::broadcast;

use crate::error::{CriError, CriResult};
use crate::fake::calls::{fake_err, settle};
use crate::fake::runtime_state::{
    ExecSyncHandler, FakeContainer, FakePodSandbox, FakeRuntimeState, exit_reason,
};
use crate::v1::{
    CgroupDriver, ContainerEventResponse, ContainerEventType, ContainerState, ExecSyncResponse,
    LinuxRuntimeConfiguration, RuntimeStatus,
};

/// Events buffered for slow GetContainerEvents subscribers.
const EVENT_BUFFER: usize = 1024;

/// Recording fake [`crate::RuntimeService`]. Use it directly as `Arc<dyn RuntimeService>`, or
/// over a socket with [`crate::fake::serve_fake`].
pub struct FakeRuntimeService {
    state: Mutex<FakeRuntimeState>,
    events: broadcast::Sender<ContainerEventResponse>,
}

impl Default for FakeRuntimeService {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeRuntimeService {
    /// An empty, ready runtime.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        FakeRuntimeService {
            state: Mutex::new(FakeRuntimeState::default()),
            events,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, FakeRuntimeState> {
        // A panic in another test thread must not hide this fake's state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the whole state (to read it or to set it up).
    pub fn with_state<R>(&self, f: impl FnOnce(&mut FakeRuntimeState) -> R) -> R {
        f(&mut self.lock())
    }

    /// CRI method names called so far, in order (upstream `GetCalls`).
    pub fn called(&self) -> Vec<String> {
        self.lock().calls.called.clone()
    }

    /// Calls dropped before they answered (see [`crate::fake::FakeCalls::abandoned`]).
    pub fn abandoned(&self) -> Vec<String> {
        self.lock().calls.abandoned()
    }

    /// Forgets the recorded calls.
    pub fn clear_calls(&self) {
        self.lock().calls.called.clear();
    }

    /// Checks the recorded calls equal `expected` (upstream `AssertCalls`).
    pub fn assert_calls(&self, expected: &[&str]) -> Result<(), String> {
        let called = self.called();
        if called == expected {
            Ok(())
        } else {
            Err(format!("expected {expected:?}, got {called:?}"))
        }
    }

    /// Queues `err` as the answer of the next call of `method` (upstream `InjectError`).
    pub fn inject_error(&self, method: &str, err: CriError) {
        self.lock().calls.inject_error(method, err);
    }

    /// Makes `method` always answer gRPC `Unimplemented`.
    pub fn set_unimplemented(&self, method: &str) {
        self.lock().calls.unimplemented.insert(method.to_owned());
    }

    /// Makes `method` sleep `delay` before answering.
    pub fn set_delay(&self, method: &str, delay: Duration) {
        self.lock().calls.delays.insert(method.to_owned(), delay);
    }

    /// Sets the cgroup driver RuntimeConfig reports (`None`: no Linux section).
    pub fn set_cgroup_driver(&self, driver: Option<CgroupDriver>) {
        self.lock().linux_config = driver.map(|d| LinuxRuntimeConfiguration {
            cgroup_driver: d as i32,
        });
    }

    /// Sets the Status answer.
    pub fn set_status(&self, status: RuntimeStatus) {
        self.lock().status = Some(status);
    }

    /// Sets the ExecSync answer.
    pub fn set_exec_sync_handler(
        &self,
        handler: impl Fn(&str, &[String]) -> CriResult<ExecSyncResponse> + Send + Sync + 'static,
    ) {
        let handler: ExecSyncHandler = std::sync::Arc::new(handler);
        self.lock().exec_sync_handler = Some(handler);
    }

    /// Replaces all sandboxes (upstream `SetFakeSandboxes`).
    pub fn set_fake_sandboxes(&self, sandboxes: Vec<FakePodSandbox>) {
        self.lock().sandboxes = sandboxes
            .into_iter()
            .map(|s| (s.status.id.clone(), s))
            .collect();
    }

    /// Replaces all containers (upstream `SetFakeContainers`).
    pub fn set_fake_containers(&self, containers: Vec<FakeContainer>) {
        self.lock().containers = containers
            .into_iter()
            .map(|c| (c.status.id.clone(), c))
            .collect();
    }

    /// Snapshot of all sandboxes, by ID order.
    pub fn sandboxes(&self) -> Vec<FakePodSandbox> {
        self.lock().sandboxes.values().cloned().collect()
    }

    /// Snapshot of all containers, by ID order.
    pub fn containers(&self) -> Vec<FakeContainer> {
        self.lock().containers.values().cloned().collect()
    }

    /// One sandbox.
    pub fn sandbox(&self, id: &str) -> Option<FakePodSandbox> {
        self.lock().sandboxes.get(id).cloned()
    }

    /// One container.
    pub fn container(&self, id: &str) -> Option<FakeContainer> {
        self.lock().containers.get(id).cloned()
    }

    /// ID of the container `name`/`attempt` in `sandbox_id` (upstream `GetContainerID`).
    pub fn get_container_id(&self, sandbox_id: &str, name: &str, attempt: u32) -> Option<String> {
        let st = self.lock();
        st.containers
            .values()
            .find(|c| {
                c.sandbox_id == sandbox_id
                    && c.status
                        .metadata
                        .as_ref()
                        .is_some_and(|m| m.name == name && m.attempt == attempt)
            })
            .map(|c| c.status.id.clone())
    }

    /// Simulates the process of a running container exiting with `exit_code`
    /// (reason `Completed` for 0, `Error` otherwise).
    pub fn exit_container(&self, id: &str, exit_code: i32) -> CriResult<()> {
        self.exit_container_with_reason(id, exit_code, exit_reason(exit_code))
    }

    /// Like [`Self::exit_container`] with an explicit reason (e.g. `OOMKilled`).
    pub fn exit_container_with_reason(
        &self,
        id: &str,
        exit_code: i32,
        reason: &str,
    ) -> CriResult<()> {
        const METHOD: &str = "exit_container";
        let mut st = self.lock();
        let c = st.container_mut(METHOD, id)?;
        if !c.is(ContainerState::ContainerRunning) {
            let msg = format!("container {id:?} is not running");
            return Err(fake_err(METHOD, tonic::Code::FailedPrecondition, msg));
        }
        c.mark_exited(exit_code, reason);
        let sandbox_id = c.sandbox_id.clone();
        self.emit(
            &st,
            id,
            &sandbox_id,
            ContainerEventType::ContainerStoppedEvent,
        );
        Ok(())
    }

    /// Subscribes to the container events the fake emits.
    pub fn subscribe_events(&self) -> broadcast::Receiver<ContainerEventResponse> {
        self.events.subscribe()
    }

    /// Records the call and applies the configured delay and injected error.
    pub(crate) async fn begin(&self, method: &'static str) -> CriResult<()> {
        let begun = self.lock().calls.begin(method);
        settle(begun).await
    }

    /// Emits an event about `id` (a container, or the sandbox itself when `id == sandbox_id`)
    /// carrying the current statuses of the sandbox and its containers.
    pub(crate) fn emit(
        &self,
        st: &FakeRuntimeState,
        id: &str,
        sandbox_id: &str,
        kind: ContainerEventType,
    ) {
        let event = ContainerEventResponse {
            container_id: id.to_owned(),
            container_event_type: kind as i32,
            created_at: crate::fake::runtime_state::now_nanos(),
            pod_sandbox_status: st.sandboxes.get(sandbox_id).map(|s| s.status.clone()),
            containers_statuses: st
                .containers
                .values()
                .filter(|c| c.sandbox_id == sandbox_id)
                .map(|c| c.status.clone())
                .collect(),
        };
        // No subscriber is fine: nobody is watching events.
        let _ = self.events.send(event);
    }
}
