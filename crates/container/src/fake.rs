//! Recording in-memory [`Runtime`] for tests (upstream
//! `pkg/kubelet/container/testing/fake_runtime.go`). Enabled by the `fake`
//! cargo feature.
//!
//! Every call appends its upstream method name (`GetPods`, `SyncPod`, ...) to
//! [`FakeRuntime::calls`]. Errors are injected per method and consumed one per
//! call ([`FakeRuntime::inject_error`]). With [`FakeRuntime::set_apply_syncs`]
//! the fake also *applies* `SyncPod`/`KillPod` to its own state (containers
//! become running / exited), which lets PLEG and pod-worker tests observe
//! the effect of a sync.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod as ApiPod, Secret};

use crate::backoff::Backoff;
use crate::hash::hash_container;
use crate::runtime::{ContainerGcPolicy, Runtime, RuntimeError, RuntimeStatus, RuntimeVersion};
use crate::status::{PodStatus, SandboxState, SandboxStatus, Status};
use crate::sync_result::{PodSyncResult, SyncAction, SyncResult};
use crate::types::{Container, ContainerId, ContainerState, Pod};

/// Runtime type the fake reports.
pub const FAKE_RUNTIME_TYPE: &str = "fakeruntime";

#[derive(Debug, Default)]
struct State {
    calls: Vec<String>,
    pods: Vec<Pod>,
    statuses: HashMap<String, PodStatus>,
    started_pods: Vec<String>,
    killed_pods: Vec<String>,
    started_containers: Vec<String>,
    status_queries: Vec<String>,
    sync_results: HashMap<String, PodSyncResult>,
    errors: HashMap<String, VecDeque<RuntimeError>>,
    apply_syncs: bool,
    next_id: u64,
    runtime_status: RuntimeStatus,
    image_mounts: HashMap<String, Vec<String>>,
}

/// Recording fake runtime. Share it as `Arc<FakeRuntime>`.
#[derive(Debug, Default)]
pub struct FakeRuntime {
    state: Mutex<State>,
}

impl FakeRuntime {
    /// Empty fake with both runtime conditions true.
    pub fn new() -> Self {
        let fake = Self::default();
        fake.state().runtime_status = RuntimeStatus {
            conditions: [RuntimeStatus::RUNTIME_READY, RuntimeStatus::NETWORK_READY]
                .into_iter()
                .map(|t| crate::runtime::RuntimeCondition {
                    type_: t.into(),
                    status: true,
                    ..Default::default()
                })
                .collect(),
            features: None,
        };
        fake
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, method: &str) -> Result<(), RuntimeError> {
        let mut st = self.state();
        st.calls.push(method.to_string());
        match st.errors.get_mut(method).and_then(VecDeque::pop_front) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Queues `err` for the next call of `method` (upstream name, e.g. `GetPods`).
    pub fn inject_error(&self, method: &str, err: RuntimeError) {
        self.state()
            .errors
            .entry(method.to_string())
            .or_default()
            .push_back(err);
    }

    /// The image IDs [`Runtime::container_image_mounts`] reports for `container_id`.
    pub fn set_container_image_mounts(&self, container_id: &str, image_ids: Vec<String>) {
        self.state()
            .image_mounts
            .insert(container_id.to_string(), image_ids);
    }

    /// Replaces the runtime's pods (what `GetPods(true)` returns; `GetPods(false)`
    /// filters to running containers and ready sandboxes).
    pub fn set_pods(&self, pods: Vec<Pod>) {
        self.state().pods = pods;
    }

    /// Sets the status `GetPodStatus` returns for `status.id`.
    pub fn set_pod_status(&self, status: PodStatus) {
        self.state().statuses.insert(status.id.clone(), status);
    }

    /// Result `SyncPod` returns for the pod UID (instead of all-success).
    pub fn set_sync_result(&self, uid: &str, result: PodSyncResult) {
        self.state().sync_results.insert(uid.to_string(), result);
    }

    /// Sets the status `Status` returns.
    pub fn set_runtime_status(&self, status: RuntimeStatus) {
        self.state().runtime_status = status;
    }

    /// When true, `SyncPod` starts the pod's containers in the fake's state
    /// and `KillPod` stops them.
    pub fn set_apply_syncs(&self, apply: bool) {
        self.state().apply_syncs = apply;
    }

    /// Method names in call order.
    pub fn calls(&self) -> Vec<String> {
        self.state().calls.clone()
    }

    /// Forgets recorded calls.
    pub fn clear_calls(&self) {
        let mut st = self.state();
        st.calls.clear();
        st.status_queries.clear();
    }

    /// UIDs passed to `SyncPod`, in order.
    pub fn started_pods(&self) -> Vec<String> {
        self.state().started_pods.clone()
    }

    /// UIDs passed to `KillPod`, in order.
    pub fn killed_pods(&self) -> Vec<String> {
        self.state().killed_pods.clone()
    }

    /// Container names `SyncPod` was asked to run, in order.
    pub fn started_containers(&self) -> Vec<String> {
        self.state().started_containers.clone()
    }

    /// UIDs passed to `GetPodStatus`, in order.
    pub fn status_queries(&self) -> Vec<String> {
        self.state().status_queries.clone()
    }
}

fn running_only(pod: &Pod) -> Option<Pod> {
    let mut p = pod.clone();
    p.containers.retain(|c| c.state == ContainerState::Running);
    p.sandboxes.retain(|c| c.state == ContainerState::Running);
    (!p.is_empty()).then_some(p)
}

fn meta(pod: &ApiPod) -> (String, String, String) {
    let m = &pod.metadata;
    let get = |v: &Option<String>| v.clone().unwrap_or_default();
    (get(&m.uid), get(&m.name), get(&m.namespace))
}

impl State {
    fn apply_sync(&mut self, pod: &ApiPod) {
        let (uid, name, namespace) = meta(pod);
        let now = Timestamp::now();
        let containers = pod
            .spec
            .as_ref()
            .map(|s| s.containers.clone())
            .unwrap_or_default();
        let mut runtime_pod = Pod {
            id: uid.clone(),
            name: name.clone(),
            namespace: namespace.clone(),
            ..Pod::default()
        };
        let mut status = PodStatus::empty(uid.clone(), name, namespace);
        self.next_id += 1;
        let sandbox_id = format!("sandbox-{}", self.next_id);
        runtime_pod.sandboxes.push(Container {
            id: ContainerId::new(FAKE_RUNTIME_TYPE, sandbox_id.clone()),
            state: ContainerState::Running,
            ..Container::default()
        });
        status.sandbox_statuses.push(SandboxStatus {
            id: sandbox_id,
            uid: uid.clone(),
            state: SandboxState::Ready,
            created_at: Some(now),
            ..SandboxStatus::default()
        });
        for c in &containers {
            self.next_id += 1;
            let id = ContainerId::new(FAKE_RUNTIME_TYPE, format!("{}-{}", c.name, self.next_id));
            let image = c.image.clone().unwrap_or_default();
            let hash = hash_container(c);
            runtime_pod.containers.push(Container {
                id: id.clone(),
                name: c.name.clone(),
                image: image.clone(),
                hash,
                state: ContainerState::Running,
                ..Container::default()
            });
            status.container_statuses.push(Status {
                id,
                name: c.name.clone(),
                image,
                hash,
                state: ContainerState::Running,
                created_at: Some(now),
                started_at: Some(now),
                ..Status::default()
            });
        }
        self.pods.retain(|p| p.id != uid);
        self.pods.push(runtime_pod);
        self.statuses.insert(uid, status);
    }

    fn apply_kill(&mut self, uid: &str) {
        let now = Timestamp::now();
        for pod in self.pods.iter_mut().filter(|p| p.id == uid) {
            pod.containers
                .iter_mut()
                .chain(pod.sandboxes.iter_mut())
                .for_each(|c| c.state = ContainerState::Exited);
        }
        if let Some(status) = self.statuses.get_mut(uid) {
            for s in status
                .container_statuses
                .iter_mut()
                .filter(|s| s.state == ContainerState::Running)
            {
                s.state = ContainerState::Exited;
                s.exit_code = 137;
                s.finished_at = Some(now);
            }
            status
                .sandbox_statuses
                .iter_mut()
                .for_each(|s| s.state = SandboxState::NotReady);
        }
    }
}

#[async_trait]
impl Runtime for FakeRuntime {
    fn type_name(&self) -> &str {
        FAKE_RUNTIME_TYPE
    }

    async fn version(&self) -> Result<RuntimeVersion, RuntimeError> {
        self.record("Version")?;
        Ok(RuntimeVersion {
            runtime_name: FAKE_RUNTIME_TYPE.into(),
            runtime_version: "0.1.0".into(),
            runtime_api_version: "v1".into(),
        })
    }

    async fn status(&self) -> Result<RuntimeStatus, RuntimeError> {
        self.record("Status")?;
        Ok(self.state().runtime_status.clone())
    }

    async fn get_pods(&self, all: bool) -> Result<Vec<Pod>, RuntimeError> {
        self.record("GetPods")?;
        let st = self.state();
        Ok(if all {
            st.pods.clone()
        } else {
            st.pods.iter().filter_map(running_only).collect()
        })
    }

    async fn get_pod_status(
        &self,
        uid: &str,
        name: &str,
        namespace: &str,
    ) -> Result<PodStatus, RuntimeError> {
        self.state().status_queries.push(uid.to_string());
        self.record("GetPodStatus")?;
        let st = self.state();
        Ok(st
            .statuses
            .get(uid)
            .cloned()
            .unwrap_or_else(|| PodStatus::empty(uid, name, namespace)))
    }

    async fn sync_pod(
        &self,
        pod: &ApiPod,
        _status: &PodStatus,
        _secrets: &[Secret],
        _backoff: &Backoff,
    ) -> PodSyncResult {
        let recorded = self.record("SyncPod");
        let (uid, ..) = meta(pod);
        let mut st = self.state();
        st.started_pods.push(uid.clone());
        let containers: Vec<String> = pod
            .spec
            .iter()
            .flat_map(|s| s.containers.iter().map(|c| c.name.clone()))
            .collect();
        st.started_containers.extend(containers.iter().cloned());
        if let Err(err) = recorded {
            let mut result = PodSyncResult::default();
            result.fail(err.to_string());
            return result;
        }
        if let Some(result) = st.sync_results.get(&uid) {
            return result.clone();
        }
        if st.apply_syncs {
            st.apply_sync(pod);
        }
        let mut result = PodSyncResult::default();
        containers
            .into_iter()
            .for_each(|c| result.add_sync_result(SyncResult::new(SyncAction::StartContainer, c)));
        result
    }

    async fn kill_pod(
        &self,
        _pod: Option<&ApiPod>,
        running_pod: &Pod,
        _grace: Option<i64>,
    ) -> Result<(), RuntimeError> {
        self.record("KillPod")?;
        let mut st = self.state();
        st.killed_pods.push(running_pod.id.clone());
        if st.apply_syncs {
            st.apply_kill(&running_pod.id);
        }
        Ok(())
    }

    async fn garbage_collect(
        &self,
        _policy: &ContainerGcPolicy,
        _ready: bool,
        evict: bool,
    ) -> Result<(), RuntimeError> {
        if evict {
            return self.record("GarbageCollect(evictNonDeletedPods)");
        }
        self.record("GarbageCollect")
    }

    async fn container_image_mounts(&self, id: &ContainerId) -> Result<Vec<String>, RuntimeError> {
        self.record("ContainerImageMounts")?;
        Ok(self
            .state()
            .image_mounts
            .get(&id.id)
            .cloned()
            .unwrap_or_default())
    }

    async fn delete_container(&self, id: &ContainerId) -> Result<(), RuntimeError> {
        self.record("DeleteContainer")?;
        let mut st = self.state();
        for pod in &mut st.pods {
            pod.containers.retain(|c| &c.id != id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::api::core::v1::{Container as ApiContainer, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn api_pod(uid: &str) -> ApiPod {
        ApiPod {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                name: Some("web".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: vec![ApiContainer {
                    name: "app".into(),
                    image: Some("busybox".into()),
                    ..ApiContainer::default()
                }],
                ..PodSpec::default()
            }),
            ..ApiPod::default()
        }
    }

    #[tokio::test]
    async fn records_calls_and_injected_errors() {
        let rt = FakeRuntime::new();
        rt.inject_error("GetPods", RuntimeError::Unavailable("down".into()));
        assert!(rt.get_pods(true).await.is_err());
        assert!(
            rt.get_pods(true).await.unwrap().is_empty(),
            "error consumed once"
        );
        let status = rt.get_pod_status("u1", "web", "ns").await.unwrap();
        assert_eq!(status, PodStatus::empty("u1", "web", "ns"));
        assert_eq!(rt.calls(), ["GetPods", "GetPods", "GetPodStatus"]);
        assert_eq!(rt.status_queries(), ["u1"]);
        assert!(
            rt.status()
                .await
                .unwrap()
                .condition(RuntimeStatus::RUNTIME_READY)
                .unwrap()
                .status
        );
    }

    #[tokio::test]
    async fn sync_and_kill_apply_when_enabled() {
        let rt = FakeRuntime::new();
        rt.set_apply_syncs(true);
        let pod = api_pod("u1");
        let backoff = Backoff::container_default();
        let result = rt
            .sync_pod(&pod, &PodStatus::default(), &[], &backoff)
            .await;
        assert_eq!(result.error(), None);
        assert_eq!(rt.started_pods(), ["u1"]);
        assert_eq!(rt.started_containers(), ["app"]);
        let running = rt.get_pods(false).await.unwrap();
        assert_eq!(running[0].containers[0].name, "app");
        let status = rt.get_pod_status("u1", "web", "ns").await.unwrap();
        assert!(status.is_running());

        rt.kill_pod(Some(&pod), &running[0], None).await.unwrap();
        assert_eq!(rt.killed_pods(), ["u1"]);
        assert!(rt.get_pods(false).await.unwrap().is_empty());
        assert_eq!(rt.get_pods(true).await.unwrap().len(), 1);
        assert!(
            !rt.get_pod_status("u1", "web", "ns")
                .await
                .unwrap()
                .is_running()
        );
    }

    #[tokio::test]
    async fn sync_reports_injected_error_and_result() {
        let rt = FakeRuntime::new();
        rt.inject_error("SyncPod", RuntimeError::Unavailable("down".into()));
        let backoff = Backoff::container_default();
        let result = rt
            .sync_pod(&api_pod("u1"), &PodStatus::default(), &[], &backoff)
            .await;
        assert!(result.error().unwrap().contains("down"));
        let mut canned = PodSyncResult::default();
        canned.fail("canned");
        rt.set_sync_result("u1", canned.clone());
        assert_eq!(
            rt.sync_pod(&api_pod("u1"), &PodStatus::default(), &[], &backoff)
                .await,
            canned
        );
        assert!(
            rt.get_pods(true).await.unwrap().is_empty(),
            "apply_syncs is off by default"
        );
    }
}
