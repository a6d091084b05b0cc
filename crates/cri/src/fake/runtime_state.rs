//! In-memory state of [`super::FakeRuntimeService`]: sandboxes, containers and what the tests
//! configure (upstream `FakePodSandbox`, `FakeContainer`, `BuildSandboxName`,
//! `BuildContainerName`, `filterInLabels` in `k8s.io/cri-api/pkg/apis/testing`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::CriResult;
use crate::fake::calls::{FakeCalls, not_found};
use crate::v1::*;

/// Version reported by the fake runtime.
pub const FAKE_VERSION: &str = "0.1.0";
/// Name reported by the fake runtime.
pub const FAKE_RUNTIME_NAME: &str = "fakeRuntime";
/// IP the fake gives every sandbox (inside the test CNI range 198.18.0.0/16; never dialled).
pub const FAKE_POD_SANDBOX_IP: &str = "198.18.0.2";
/// Base of the streaming URLs returned by Exec, Attach and PortForward (never dialled).
pub const FAKE_STREAMING_URL: &str = "http://127.0.0.1:0/fake-cri-streaming";

/// Answers ExecSync: `(container_id, cmd) -> response`.
pub type ExecSyncHandler =
    Arc<dyn Fn(&str, &[String]) -> CriResult<ExecSyncResponse> + Send + Sync>;

/// A sandbox of the fake runtime.
#[derive(Clone, Debug, Default)]
pub struct FakePodSandbox {
    /// What PodSandboxStatus returns.
    pub status: PodSandboxStatus,
    /// The config it was created with.
    pub config: PodSandboxConfig,
}

/// A container of the fake runtime.
#[derive(Clone, Debug, Default)]
pub struct FakeContainer {
    /// What ContainerStatus returns.
    pub status: ContainerStatus,
    /// Sandbox the container belongs to.
    pub sandbox_id: String,
    /// The config it was created with.
    pub config: ContainerConfig,
}

/// Everything the fake runtime holds. Tests may read and change it through
/// [`super::FakeRuntimeService::with_state`].
#[derive(Default)]
pub struct FakeRuntimeState {
    /// Call log, injected errors, unimplemented methods and delays.
    pub calls: FakeCalls,
    /// Sandboxes by ID.
    pub sandboxes: BTreeMap<String, FakePodSandbox>,
    /// Containers by ID.
    pub containers: BTreeMap<String, FakeContainer>,
    /// Answer of Version; `None` means fakeRuntime 0.1.0 speaking CRI v1.
    pub version: Option<VersionResponse>,
    /// Answer of Status; `None` means RuntimeReady and NetworkReady both true.
    pub status: Option<RuntimeStatus>,
    /// `features` of the Status answer; `None` (a runtime reporting none, like
    /// containerd 1.6) by default. With `supplemental_groups_policy` set, containers
    /// report their `user` as [`fake_container_user`] computes it.
    pub features: Option<RuntimeFeatures>,
    /// `runtime_handlers` of the Status answer; empty (a runtime before CRI handlers,
    /// like containerd 1.6) by default.
    pub runtime_handlers: Vec<RuntimeHandler>,
    /// Linux section of RuntimeConfig (the cgroup driver); `None` answers without one.
    pub linux_config: Option<LinuxRuntimeConfiguration>,
    /// Stats per container ID (containers without an entry get attributes only).
    pub container_stats: HashMap<String, ContainerStats>,
    /// Stats per sandbox ID (sandboxes without an entry get attributes only).
    pub pod_sandbox_stats: HashMap<String, PodSandboxStats>,
    /// Answer of ListMetricDescriptors.
    pub metric_descriptors: Vec<MetricDescriptor>,
    /// Answer of ListPodSandboxMetrics.
    pub pod_sandbox_metrics: Vec<PodSandboxMetrics>,
    /// ExecSync answer; `None` answers exit code 0 with no output.
    pub exec_sync_handler: Option<ExecSyncHandler>,
    /// Last Exec request.
    pub last_exec_request: Option<ExecRequest>,
    /// Last Attach request.
    pub last_attach_request: Option<AttachRequest>,
    /// Last PortForward request.
    pub last_port_forward_request: Option<PortForwardRequest>,
    /// Every UpdateRuntimeConfig payload.
    pub runtime_config_updates: Vec<RuntimeConfig>,
    /// Every UpdatePodSandboxResources request.
    pub sandbox_resource_updates: Vec<UpdatePodSandboxResourcesRequest>,
    /// Every CheckpointContainer request.
    pub checkpoints: Vec<CheckpointContainerRequest>,
    /// Every ReopenContainerLog container ID.
    pub reopened_logs: Vec<String>,
    /// Every StopContainer request: container ID and timeout in seconds (the grace period).
    pub stop_timeouts: Vec<(String, i64)>,
}

impl FakeRuntimeState {
    /// The sandbox `id`, or the NotFound error `method` answers with.
    pub fn sandbox(&self, method: &'static str, id: &str) -> CriResult<&FakePodSandbox> {
        self.sandboxes
            .get(id)
            .ok_or_else(|| not_found(method, "pod sandbox", id))
    }

    /// [`FakeRuntimeState::sandbox`], mutable.
    pub fn sandbox_mut(
        &mut self,
        method: &'static str,
        id: &str,
    ) -> CriResult<&mut FakePodSandbox> {
        self.sandboxes
            .get_mut(id)
            .ok_or_else(|| not_found(method, "pod sandbox", id))
    }

    /// The container `id`, or the NotFound error `method` answers with.
    pub fn container(&self, method: &'static str, id: &str) -> CriResult<&FakeContainer> {
        self.containers
            .get(id)
            .ok_or_else(|| not_found(method, "container", id))
    }

    /// [`FakeRuntimeState::container`], mutable.
    pub fn container_mut(
        &mut self,
        method: &'static str,
        id: &str,
    ) -> CriResult<&mut FakeContainer> {
        self.containers
            .get_mut(id)
            .ok_or_else(|| not_found(method, "container", id))
    }
}

/// Sandbox ID the fake uses: `name_namespace_uid_attempt` (upstream `BuildSandboxName`).
pub fn build_sandbox_name(m: &PodSandboxMetadata) -> String {
    format!("{}_{}_{}_{}", m.name, m.namespace, m.uid, m.attempt)
}

/// Container ID the fake uses: `sandboxID_name_attempt` (upstream `BuildContainerName`).
pub fn build_container_name(m: &ContainerMetadata, sandbox_id: &str) -> String {
    format!("{sandbox_id}_{}_{}", m.name, m.attempt)
}

/// True when every selector label is present with the same value.
pub fn labels_match(selector: &HashMap<String, String>, labels: &HashMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

static LAST_NANOS: AtomicI64 = AtomicI64::new(0);

/// Wall-clock nanoseconds, strictly increasing across calls so event order is unambiguous.
pub fn now_nanos() -> i64 {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(1);
    let mut last = LAST_NANOS.load(Ordering::SeqCst);
    loop {
        let next = wall.max(last.saturating_add(1));
        match LAST_NANOS.compare_exchange_weak(last, next, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return next,
            Err(current) => last = current,
        }
    }
}

/// The `user` a runtime implementing `SupplementalGroupsPolicy` reports for a container
/// created with `config`. The fake has no image `/etc/group`: the uid and gid are
/// `run_as_user` and `run_as_group` (0 when unset), the supplemental groups the gid then
/// the configured ones (what both policies give for an image without group entries).
pub fn fake_container_user(config: &ContainerConfig) -> ContainerUser {
    let sc = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref());
    let uid = sc
        .and_then(|s| s.run_as_user.as_ref())
        .map_or(0, |v| v.value);
    let gid = sc
        .and_then(|s| s.run_as_group.as_ref())
        .map_or(0, |v| v.value);
    let mut supplemental_groups = vec![gid];
    for g in sc.iter().flat_map(|s| s.supplemental_groups.iter()) {
        if !supplemental_groups.contains(g) {
            supplemental_groups.push(*g);
        }
    }
    ContainerUser {
        linux: Some(LinuxContainerUser {
            uid,
            gid,
            supplemental_groups,
        }),
    }
}

/// The default Status answer: both conditions true.
pub fn ready_runtime_status() -> RuntimeStatus {
    let cond = |t: &str| RuntimeCondition {
        r#type: t.to_owned(),
        status: true,
        ..Default::default()
    };
    RuntimeStatus {
        conditions: vec![cond("RuntimeReady"), cond("NetworkReady")],
    }
}

impl FakePodSandbox {
    /// The ListPodSandbox view.
    pub fn to_pod_sandbox(&self) -> PodSandbox {
        let s = &self.status;
        PodSandbox {
            id: s.id.clone(),
            metadata: s.metadata.clone(),
            state: s.state,
            created_at: s.created_at,
            labels: s.labels.clone(),
            annotations: s.annotations.clone(),
            runtime_handler: s.runtime_handler.clone(),
        }
    }

    /// True when the filter selects this sandbox.
    pub fn matches(&self, f: &PodSandboxFilter) -> bool {
        let s = &self.status;
        (f.id.is_empty() || f.id == s.id)
            && f.state.as_ref().is_none_or(|v| v.state == s.state)
            && labels_match(&f.label_selector, &s.labels)
    }

    /// Stats attributes of this sandbox.
    pub fn attributes(&self) -> PodSandboxAttributes {
        PodSandboxAttributes {
            id: self.status.id.clone(),
            metadata: self.status.metadata.clone(),
            labels: self.status.labels.clone(),
            annotations: self.status.annotations.clone(),
        }
    }
}

impl FakeContainer {
    /// The ListContainers view.
    pub fn to_container(&self) -> Container {
        let s = &self.status;
        Container {
            id: s.id.clone(),
            pod_sandbox_id: self.sandbox_id.clone(),
            metadata: s.metadata.clone(),
            image: s.image.clone(),
            image_ref: s.image_ref.clone(),
            state: s.state,
            created_at: s.created_at,
            labels: s.labels.clone(),
            annotations: s.annotations.clone(),
            image_id: s.image_id.clone(),
        }
    }

    /// True when the filter selects this container.
    pub fn matches(&self, f: &ContainerFilter) -> bool {
        let s = &self.status;
        (f.id.is_empty() || f.id == s.id)
            && (f.pod_sandbox_id.is_empty() || f.pod_sandbox_id == self.sandbox_id)
            && f.state.as_ref().is_none_or(|v| v.state == s.state)
            && labels_match(&f.label_selector, &s.labels)
    }

    /// Stats attributes of this container.
    pub fn attributes(&self) -> ContainerAttributes {
        ContainerAttributes {
            id: self.status.id.clone(),
            metadata: self.status.metadata.clone(),
            labels: self.status.labels.clone(),
            annotations: self.status.annotations.clone(),
        }
    }

    /// Is the container in `state`?
    pub fn is(&self, state: ContainerState) -> bool {
        self.status.state == state as i32
    }

    /// Marks the container exited with `exit_code` and `reason` now.
    pub fn mark_exited(&mut self, exit_code: i32, reason: &str) {
        self.status.state = ContainerState::ContainerExited as i32;
        self.status.finished_at = now_nanos();
        self.status.exit_code = exit_code;
        self.status.reason = reason.to_owned();
    }
}

/// Upstream-style exit reason: `Completed` for 0, `Error` otherwise.
pub fn exit_reason(exit_code: i32) -> &'static str {
    if exit_code == 0 { "Completed" } else { "Error" }
}

/// The status a newly run sandbox gets.
pub fn new_sandbox_status(id: &str, config: &PodSandboxConfig, handler: &str) -> PodSandboxStatus {
    let namespace_options = config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.clone());
    PodSandboxStatus {
        id: id.to_owned(),
        metadata: config.metadata.clone(),
        state: PodSandboxState::SandboxReady as i32,
        created_at: now_nanos(),
        network: Some(PodSandboxNetworkStatus {
            ip: FAKE_POD_SANDBOX_IP.to_owned(),
            additional_ips: Vec::new(),
        }),
        linux: Some(LinuxPodSandboxStatus {
            namespaces: Some(Namespace {
                options: namespace_options,
            }),
        }),
        labels: config.labels.clone(),
        annotations: config.annotations.clone(),
        runtime_handler: handler.to_owned(),
    }
}

/// The status a newly created container gets.
pub fn new_container_status(
    id: &str,
    config: &ContainerConfig,
    sandbox_config: &PodSandboxConfig,
) -> ContainerStatus {
    let image = config.image.clone().unwrap_or_default();
    let log_path = if sandbox_config.log_directory.is_empty() || config.log_path.is_empty() {
        String::new()
    } else {
        format!("{}/{}", sandbox_config.log_directory, config.log_path)
    };
    ContainerStatus {
        id: id.to_owned(),
        metadata: config.metadata.clone(),
        state: ContainerState::ContainerCreated as i32,
        created_at: now_nanos(),
        image_ref: image.image.clone(),
        image_id: image.image.clone(),
        image: Some(image),
        labels: config.labels.clone(),
        annotations: config.annotations.clone(),
        mounts: config.mounts.clone(),
        log_path,
        resources: config.linux.as_ref().map(|l| ContainerResources {
            linux: l.resources.clone(),
            windows: None,
        }),
        ..Default::default()
    }
}
