//! In-place pod resize, the runtime's half (`InPlacePodVerticalScaling`, GA at 1.35):
//! upstream `kuberuntime_manager.go` `computePodResizeAction`, `doPodResizeAction`,
//! `updatePodContainerResources`, `IsPodResizeInProgress`, `kuberuntime_container.go`
//! `updateContainerResources` / `setActuatedContainerResources`, and the actuated resources
//! of `pkg/kubelet/allocation/state` (upstream's `actuated_pods_state` checkpoint).
//!
//! The actuated state records, per pod and container, the resources last handed to the
//! runtime (at container creation and after each `UpdateContainerResources`), checkpointed
//! by the kubelet in `<root-dir>/actuated_pods_state` ([`PodResourcesState`]). A running
//! container without a record (adopted from a kubelet that did not write one) is treated
//! as upstream does: zero values, so the next sync re-applies its allocated resources with
//! an idempotent `UpdateContainerResources`.
//!
//! Pod cgroups: `doPodResizeAction` updates the pod cgroup around the containers, memory
//! first, then CPU: a limit (memory limit; CFS quota and period) or request (CPU shares)
//! that grows is written to the pod cgroup before the containers are updated, one that
//! shrinks after them, so the pod cgroup always holds its containers (the kubelet gives
//! the manager its pod cgroups through [`PodCgroupConfig`]). Upstream's check that a
//! memory limit decrease stays above the current usage (`validateMemoryResizeAction`) is
//! not made: the kernel refuses a limit below usage itself, and the resize is reported as
//! an `Error`. After each pod cgroup write the runtime is told the pod's resources with a
//! best-effort CRI `UpdatePodSandboxResources` (overhead apart; a failure is logged, an
//! `Unimplemented` answer ignored).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubelet_apimachinery::{Format, Quantity as ParsedQuantity};
use kubelet_cm::{CgroupResource, ResourceConfig};
use kubelet_container::kubetypes::is_static_pod;
use kubelet_container::{
    ContainerId, ContainerState, PodStatus, Status, SyncAction, SyncErrorKind, SyncResult,
};
use kubelet_cri::v1::{
    ContainerResources as CriContainerResources, LinuxContainerResources,
    UpdatePodSandboxResourcesRequest,
};

use crate::actions::{ContainerToKill, KillReason, PodActions};
use crate::manager::KubeGenericRuntimeManager;
use crate::os::OsInterface;
use crate::quantity;
use crate::resources::generate_linux_container_resources;
use crate::sync::format_pod;

/// The pod cgroups a resize writes (upstream's `PodContainerManager` as
/// `doPodResizeAction` uses it, with `ResourceConfigForPod`); the kubelet implements it.
pub trait PodCgroupConfig: Send + Sync {
    /// `ResourceConfigForPod` for the pod's allocated resources; `None` when pods have no
    /// cgroups (`cgroupsPerQOS: false`).
    fn resource_config_for_pod(&self, pod: &Pod) -> Option<ResourceConfig>;
    /// `GetPodCgroupConfig`: the pod cgroup's current CPU or memory values.
    fn get_pod_cgroup_config(
        &self,
        pod: &Pod,
        resource: CgroupResource,
    ) -> Result<ResourceConfig, String>;
    /// `SetPodCgroupConfig`: writes the values set in `config`.
    fn set_pod_cgroup_config(&self, pod: &Pod, config: &ResourceConfig) -> Result<(), String>;
}

/// The resource name `cpu`.
pub const RESOURCE_CPU: &str = "cpu";
/// The resource name `memory`.
pub const RESOURCE_MEMORY: &str = "memory";
/// `resizePolicy` restart policy that restarts the container (`v1.RestartContainer`).
pub const RESTART_CONTAINER: &str = "RestartContainer";

/// Container name → resources (upstream `state.PodResourceInfo.ContainerResources`).
pub type PodResources = BTreeMap<String, ResourceRequirements>;

/// Resources per pod UID and container, optionally checkpointed to a file (upstream
/// `allocation/state`: `stateMemory` behind `stateCheckpoint`). The kubelet keeps two: the
/// allocated resources (`allocated_pods_state`) and the actuated ones
/// (`actuated_pods_state`, [`ActuatedState`]).
///
/// The file is kubelet-rs's own JSON (`{"pods": {uid: {container: resources}}}`), not
/// upstream's checksummed checkpoint, so neither kubelet can take over the other's state;
/// an unreadable file is logged and ignored (the state starts empty).
#[derive(Default)]
pub struct PodResourcesState {
    pods: Mutex<HashMap<String, PodResources>>,
    checkpoint: Option<(Arc<dyn OsInterface>, PathBuf)>,
}

impl std::fmt::Debug for PodResourcesState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodResourcesState")
            .field("pods", &*self.lock())
            .field("checkpoint", &self.checkpoint.as_ref().map(|(_, p)| p))
            .finish()
    }
}

/// The resources last applied to each running container (upstream `actuatedState`).
pub type ActuatedState = PodResourcesState;

/// The actuated state's checkpoint file in `--root-dir` (upstream `actuatedStateFile`).
pub const ACTUATED_STATE_FILE: &str = "actuated_pods_state";
/// The allocated state's checkpoint file in `--root-dir` (upstream `allocationStateFile`).
pub const ALLOCATED_STATE_FILE: &str = "allocated_pods_state";

impl PodResourcesState {
    /// A state restored from (and saved to) `path`.
    pub fn with_checkpoint(os: Arc<dyn OsInterface>, path: PathBuf) -> Self {
        let pods = match os.read(&path) {
            Ok(data) => decode_checkpoint(&data).unwrap_or_else(|e| {
                tracing::error!(path = %path.display(), error = %e, "Failed to restore pod resources checkpoint, starting empty");
                HashMap::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "Failed to read pod resources checkpoint, starting empty");
                HashMap::new()
            }
        };
        Self {
            pods: Mutex::new(pods),
            checkpoint: Some((os, path)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PodResources>> {
        self.pods.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn store(&self, pods: &HashMap<String, PodResources>) {
        let Some((os, path)) = &self.checkpoint else {
            return;
        };
        let tmp = path.with_extension("tmp");
        let written = serde_json::to_vec(&serde_json::json!({ "pods": pods }))
            .map_err(std::io::Error::other)
            .and_then(|data| os.write_file(&tmp, &data))
            .and_then(|()| os.rename(&tmp, path));
        if let Err(e) = written {
            tracing::error!(path = %path.display(), error = %e, "Failed to write pod resources checkpoint");
        }
    }

    /// `GetContainerResources`.
    pub fn get_container_resources(&self, uid: &str, name: &str) -> Option<ResourceRequirements> {
        self.lock().get(uid).and_then(|p| p.get(name)).cloned()
    }

    /// `GetPodResourceInfo`.
    pub fn get_pod(&self, uid: &str) -> Option<PodResources> {
        self.lock().get(uid).cloned()
    }

    /// `SetContainerResources`.
    pub fn set_container_resources(&self, uid: &str, name: &str, r: ResourceRequirements) {
        let mut pods = self.lock();
        let entry = pods.entry(uid.to_string()).or_default();
        if entry.get(name) == Some(&r) {
            return;
        }
        entry.insert(name.to_string(), r);
        self.store(&pods);
    }

    /// `SetPodResourceInfo`.
    pub fn set_pod(&self, uid: &str, resources: PodResources) {
        let mut pods = self.lock();
        if pods.get(uid) == Some(&resources) {
            return;
        }
        pods.insert(uid.to_string(), resources);
        self.store(&pods);
    }

    /// `RemovePod`.
    pub fn remove_pod(&self, uid: &str) {
        let mut pods = self.lock();
        if pods.remove(uid).is_some() {
            self.store(&pods);
        }
    }

    /// `RemoveOrphanedPods`: forgets every pod not in `keep`.
    pub fn remove_orphaned_pods(&self, keep: &dyn Fn(&str) -> bool) {
        let mut pods = self.lock();
        let before = pods.len();
        pods.retain(|uid, _| keep(uid));
        if pods.len() != before {
            self.store(&pods);
        }
    }
}

fn decode_checkpoint(data: &[u8]) -> Result<HashMap<String, PodResources>, serde_json::Error> {
    let mut v: serde_json::Value = serde_json::from_slice(data)?;
    serde_json::from_value(v["pods"].take())
}

/// Upstream `IsInPlacePodVerticalScalingAllowed` (the gate is GA and locked on): `None` when
/// allowed, else the message and the metric reason.
pub fn in_place_pod_vertical_scaling_disallowed(pod: &Pod) -> Option<(&'static str, &'static str)> {
    is_static_pod(pod).then_some((
        "In-place resize of static-pods is not supported",
        "static_pod",
    ))
}

/// CPU (milli) and memory (bytes) requests and limits as numbers (upstream
/// `containerResources` from `containerResourcesFromRequirements`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerResourceValues {
    /// Memory limit in bytes (0: none).
    pub memory_limit: i64,
    /// Memory request in bytes.
    pub memory_request: i64,
    /// CPU limit in milli-CPUs (0: none).
    pub cpu_limit: i64,
    /// CPU request in milli-CPUs.
    pub cpu_request: i64,
}

fn list_get<'a>(l: &'a Option<BTreeMap<String, Quantity>>, name: &str) -> Option<&'a Quantity> {
    l.as_ref().and_then(|l| l.get(name))
}

impl ContainerResourceValues {
    /// `containerResourcesFromRequirements` (no pod-level resources).
    pub fn from_requirements(r: Option<&ResourceRequirements>) -> Self {
        let value = |q: Option<&Quantity>| q.and_then(|q| quantity::value(q).ok()).unwrap_or(0);
        let milli =
            |q: Option<&Quantity>| q.and_then(|q| quantity::milli_value(q).ok()).unwrap_or(0);
        let Some(r) = r else {
            return Self::default();
        };
        Self {
            memory_limit: value(list_get(&r.limits, RESOURCE_MEMORY)),
            memory_request: value(list_get(&r.requests, RESOURCE_MEMORY)),
            cpu_limit: milli(list_get(&r.limits, RESOURCE_CPU)),
            cpu_request: milli(list_get(&r.requests, RESOURCE_CPU)),
        }
    }
}

/// A running container whose resources change without a restart (upstream
/// `containerToUpdateInfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerToUpdate {
    /// Its (allocated) spec.
    pub container: Container,
    /// The running instance.
    pub id: ContainerId,
    /// The allocated values.
    pub desired: ContainerResourceValues,
    /// The actuated values.
    pub current: ContainerResourceValues,
}

fn resize_policy_restarts(container: &Container, resource: &str) -> bool {
    container
        .resize_policy
        .iter()
        .flatten()
        .find(|p| p.resource_name == resource)
        .is_some_and(|p| p.restart_policy == RESTART_CONTAINER)
}

/// Queues `info` for `resource`: decreases first, increases last (upstream
/// `markContainerForUpdate`).
fn mark_container_for_update(
    changes: &mut PodActions,
    resource: &str,
    desired: i64,
    current: i64,
    info: ContainerToUpdate,
) {
    let list = changes
        .containers_to_update
        .entry(resource.to_string())
        .or_default();
    match desired.cmp(&current) {
        std::cmp::Ordering::Greater => list.push(info),
        std::cmp::Ordering::Less => list.insert(0, info),
        std::cmp::Ordering::Equal => {}
    }
}

/// `computePodResizeAction`: for a running container whose allocated resources differ from
/// the actuated ones, either queues an in-place update or, when a changed resource's
/// `resizePolicy` is `RestartContainer`, kills and restarts it. Returns whether the container
/// is kept.
pub fn compute_pod_resize_action(
    pod: &Pod,
    container_idx: usize,
    container: &Container,
    status: &Status,
    actuated: &ActuatedState,
    changes: &mut PodActions,
) -> bool {
    if in_place_pod_vertical_scaling_disallowed(pod).is_some()
        || status.state != ContainerState::Running
    {
        return true;
    }
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let actuated_resources = actuated.get_container_resources(uid, &container.name);
    if actuated_resources.is_none() {
        // Proceed with zero values: an idempotent update (or a restart, per policy).
        tracing::debug!(pod = %format_pod(pod), container = %container.name, "Missing actuated resource record");
    }
    let desired = ContainerResourceValues::from_requirements(container.resources.as_ref());
    let current = ContainerResourceValues::from_requirements(actuated_resources.as_ref());
    if desired == current {
        return true;
    }
    let determine = |resource: &str, d: i64, c: i64| -> (bool, bool) {
        if d == c {
            return (false, false);
        }
        (true, resize_policy_restarts(container, resource))
    };
    let (resize_mem_lim, restart_mem_lim) =
        determine(RESOURCE_MEMORY, desired.memory_limit, current.memory_limit);
    let (resize_mem_req, restart_mem_req) = determine(
        RESOURCE_MEMORY,
        desired.memory_request,
        current.memory_request,
    );
    let (resize_cpu_lim, restart_cpu_lim) =
        determine(RESOURCE_CPU, desired.cpu_limit, current.cpu_limit);
    let (resize_cpu_req, restart_cpu_req) =
        determine(RESOURCE_CPU, desired.cpu_request, current.cpu_request);
    if restart_cpu_lim || restart_cpu_req || restart_mem_lim || restart_mem_req {
        changes.containers_to_kill.insert(
            status.id.clone(),
            ContainerToKill {
                name: status.name.clone(),
                container: container.clone(),
                message: format!("Container {} resize requires restart", container.name),
                reason: KillReason::Unknown,
            },
        );
        changes.containers_to_start.push(container_idx);
        changes.update_pod_resources = true;
        return false;
    }
    let info = ContainerToUpdate {
        container: container.clone(),
        id: status.id.clone(),
        desired,
        current,
    };
    if resize_mem_lim {
        mark_container_for_update(
            changes,
            RESOURCE_MEMORY,
            desired.memory_limit,
            current.memory_limit,
            info.clone(),
        );
    } else if resize_mem_req {
        mark_container_for_update(
            changes,
            RESOURCE_MEMORY,
            desired.memory_request,
            current.memory_request,
            info.clone(),
        );
    }
    if resize_cpu_lim {
        mark_container_for_update(
            changes,
            RESOURCE_CPU,
            desired.cpu_limit,
            current.cpu_limit,
            info,
        );
    } else if resize_cpu_req {
        mark_container_for_update(
            changes,
            RESOURCE_CPU,
            desired.cpu_request,
            current.cpu_request,
            info,
        );
    }
    true
}

fn resource_list(cpu_milli: i64, memory: i64) -> BTreeMap<String, Quantity> {
    [
        (
            RESOURCE_CPU.to_string(),
            Quantity(ParsedQuantity::from_milli(cpu_milli, Format::DecimalSI).to_string()),
        ),
        (
            RESOURCE_MEMORY.to_string(),
            Quantity(ParsedQuantity::from_int(memory, Format::BinarySI).to_string()),
        ),
    ]
    .into()
}

/// Upstream `IsPodResizeInProgress` (container part): some running resizable container's
/// allocated CPU or memory differs from its actuated resources.
pub fn is_pod_resize_in_progress(
    allocated_pod: &Pod,
    status: &PodStatus,
    actuated: &ActuatedState,
) -> bool {
    let uid = allocated_pod.metadata.uid.as_deref().unwrap_or_default();
    let spec = allocated_pod.spec.as_ref();
    let resizable = spec.into_iter().flat_map(|s| {
        s.init_containers
            .iter()
            .flatten()
            .filter(|c| kubelet_container::is_restartable_init_container(c))
            .chain(s.containers.iter())
    });
    resizable.into_iter().any(|c| {
        let running = status
            .find_container_status_by_name(&c.name)
            .is_some_and(|s| s.state == ContainerState::Running);
        running
            && ContainerResourceValues::from_requirements(c.resources.as_ref())
                != ContainerResourceValues::from_requirements(
                    actuated.get_container_resources(uid, &c.name).as_ref(),
                )
    })
}

impl KubeGenericRuntimeManager {
    /// The actuated resources (shared with the kubelet, which reads them for the resize
    /// conditions and forgets removed pods).
    pub fn actuated_state(&self) -> &Arc<ActuatedState> {
        &self.actuated
    }

    /// Keeps the actuated resources in `state` (checkpointed by the kubelet) instead of
    /// an empty in-memory state.
    #[must_use]
    pub fn with_actuated_state(mut self, state: Arc<ActuatedState>) -> Self {
        self.actuated = state;
        self
    }

    /// `setActuatedContainerResources`.
    pub(crate) fn set_actuated_container_resources(&self, pod: &Pod, container: &Container) {
        self.actuated.set_container_resources(
            pod.metadata.uid.as_deref().unwrap_or_default(),
            &container.name,
            container.resources.clone().unwrap_or_default(),
        );
    }

    /// `updateContainerResources`: `UpdateContainerResources` with the container's
    /// resources, then the actuated record.
    async fn update_container_resources(
        &self,
        pod: &Pod,
        container: &Container,
        id: &ContainerId,
    ) -> Result<(), String> {
        let linux = generate_linux_container_resources(
            &self.config.resources,
            pod,
            container,
            self.cpu_allocation
                .container_has_exclusive_cpus(pod, container),
        );
        let resources = CriContainerResources {
            linux: Some(linux),
            ..CriContainerResources::default()
        };
        self.runtime
            .update_container_resources(&id.id, &resources)
            .await
            .map_err(|e| e.to_string())?;
        self.set_actuated_container_resources(pod, container);
        Ok(())
    }

    /// `updatePodContainerResources`: updates `resource` of each queued container in order,
    /// keeping the other resource at its most recently applied values (`current`, updated
    /// after each success, as upstream updates the shared `currentContainerResources`);
    /// stops at the first failure.
    async fn update_pod_container_resources(
        &self,
        pod: &Pod,
        resource: &str,
        to_update: &[ContainerToUpdate],
        current: &mut HashMap<String, ContainerResourceValues>,
    ) -> Result<(), String> {
        tracing::trace!(pod = %format_pod(pod), resource, "Updating container resources");
        for info in to_update {
            let mut container = info.container.clone();
            let now = current
                .entry(container.name.clone())
                .or_insert(info.current);
            let mut next = *now;
            if resource == RESOURCE_MEMORY {
                next.memory_limit = info.desired.memory_limit;
                next.memory_request = info.desired.memory_request;
            } else {
                next.cpu_limit = info.desired.cpu_limit;
                next.cpu_request = info.desired.cpu_request;
            }
            container.resources = Some(ResourceRequirements {
                limits: Some(resource_list(next.cpu_limit, next.memory_limit)),
                requests: Some(resource_list(next.cpu_request, next.memory_request)),
                ..container.resources.clone().unwrap_or_default()
            });
            if let Err(e) = self
                .update_container_resources(pod, &container, &info.id)
                .await
            {
                tracing::error!(container = %container.name, container_id = %info.id, pod = %format_pod(pod), resource, error = %e, "updateContainerResources failed");
                return Err(e);
            }
            *now = next;
        }
        Ok(())
    }

    /// The pod cgroups a resize writes; without them only containers are resized.
    pub fn set_pod_cgroup_config(&self, pcm: Arc<dyn PodCgroupConfig>) {
        let _ = self.pod_cgroups.set(pcm);
    }

    /// `doPodResizeAction`: memory, then CPU; for each, the pod cgroup's limit and request
    /// grow before the queued containers are updated and shrink after them. A failure is
    /// the sync result's error (`ResizePodInPlaceError`), reported on the
    /// `PodResizeInProgress` condition.
    pub(crate) async fn do_pod_resize_action(&self, pod: &Pod, changes: &PodActions) -> SyncResult {
        let mut result = SyncResult::new(SyncAction::ResizePodInPlace, format_pod(pod));
        let mut plan = match self.pod_cgroup_resize_plan(pod) {
            Ok(plan) => plan,
            Err(e) => {
                tracing::error!(pod = %format_pod(pod), error = %e, "Unable to get pod cgroup config");
                result.fail(SyncErrorKind::ResizePodInPlace, e);
                return result;
            }
        };
        let mut current = HashMap::new();
        for resource in [RESOURCE_MEMORY, RESOURCE_CPU] {
            let list = changes
                .containers_to_update
                .get(resource)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if list.is_empty() && !changes.update_pod_resources {
                continue;
            }
            if let Err(e) = self
                .resize_containers(pod, changes, resource, plan.as_mut(), list, &mut current)
                .await
            {
                tracing::error!(pod = %format_pod(pod), resource, error = %e, "updatePodContainerResources failed");
                result.fail(SyncErrorKind::ResizePodInPlace, e);
                return result;
            }
        }
        result
    }

    /// The pod cgroup's wanted (`ResourceConfigForPod`) and current values, with upstream's
    /// defaults: an unset memory limit or CFS quota stays at the current value.
    fn pod_cgroup_resize_plan(&self, pod: &Pod) -> Result<Option<PodCgroupPlan>, String> {
        let Some(pcm) = self.pod_cgroups.get() else {
            return Ok(None);
        };
        let Some(mut want) = pcm.resource_config_for_pod(pod) else {
            return Ok(None);
        };
        let name = format_pod(pod);
        let memory = pcm
            .get_pod_cgroup_config(pod, CgroupResource::Memory)
            .map_err(|e| format!("unable to get pod cgroup memory config for pod {name:?}: {e}"))?;
        let cpu = pcm
            .get_pod_cgroup_config(pod, CgroupResource::Cpu)
            .map_err(|e| format!("unable to get pod cgroup cpu config for pod {name:?}: {e}"))?;
        want.memory = want.memory.or(memory.memory);
        want.cpu_quota = want.cpu_quota.or(cpu.cpu_quota);
        Ok(Some(PodCgroupPlan {
            pcm: pcm.clone(),
            want,
            current: ResourceConfig {
                memory: memory.memory,
                ..cpu
            },
        }))
    }

    /// Upstream `resizeContainers` for one resource.
    async fn resize_containers(
        &self,
        pod: &Pod,
        changes: &PodActions,
        resource: &str,
        mut plan: Option<&mut PodCgroupPlan>,
        list: &[ContainerToUpdate],
        current: &mut HashMap<String, ContainerResourceValues>,
    ) -> Result<(), String> {
        let (lim, req) = plan
            .as_ref()
            .map_or(((0, 0), (0, 0)), |p| p.values(resource));
        let before = [(lim.1 > lim.0, true), (req.1 > req.0, false)];
        let after = [(req.1 < req.0, false), (lim.1 < lim.0, true)];
        if let Some(p) = plan.as_deref_mut() {
            for (wanted, limit) in before {
                if wanted {
                    self.apply_pod_cgroup_config(p, pod, changes, resource, limit)
                        .await?;
                }
            }
        }
        if !list.is_empty() {
            self.update_pod_container_resources(pod, resource, list, current)
                .await?;
        }
        if let Some(p) = plan {
            for (wanted, limit) in after {
                if wanted {
                    self.apply_pod_cgroup_config(p, pod, changes, resource, limit)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Upstream `setPodCgroupConfig`: the pod cgroup write, then the runtime told.
    async fn apply_pod_cgroup_config(
        &self,
        plan: &mut PodCgroupPlan,
        pod: &Pod,
        changes: &PodActions,
        resource: &str,
        limit: bool,
    ) -> Result<(), String> {
        if plan.set(pod, resource, limit)? {
            self.update_pod_sandbox_resources(&changes.sandbox_id, pod, &plan.current)
                .await;
        }
        Ok(())
    }

    /// Upstream `updatePodSandboxResources` (best-effort: errors are logged).
    async fn update_pod_sandbox_resources(
        &self,
        sandbox_id: &str,
        pod: &Pod,
        current: &ResourceConfig,
    ) {
        let req = UpdatePodSandboxResourcesRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            overhead: Some(crate::resources::overhead_resources(
                &self.config.resources,
                pod,
            )),
            resources: Some(resource_config_to_linux(&subtract_overhead(current, pod))),
        };
        match self.runtime.update_pod_sandbox_resources(&req).await {
            Ok(_) => {}
            Err(e) if e.is_unimplemented() => {
                tracing::trace!(
                    sandbox_id,
                    "updatePodSandboxResources failed: unimplemented; this call is best-effort: proceeding with resize"
                );
            }
            Err(e) => {
                tracing::error!(sandbox_id, pod = %format_pod(pod), error = %e, "Failed to notify runtime for UpdatePodSandboxResources");
            }
        }
    }
}

/// Upstream `convertResourceConfigToLinuxContainerResources`.
fn resource_config_to_linux(rc: &ResourceConfig) -> LinuxContainerResources {
    LinuxContainerResources {
        cpu_period: rc
            .cpu_period
            .map_or(0, |p| i64::try_from(p).unwrap_or(i64::MAX)),
        cpu_quota: rc.cpu_quota.unwrap_or(0),
        cpu_shares: rc
            .cpu_shares
            .map_or(0, |s| i64::try_from(s).unwrap_or(i64::MAX)),
        memory_limit_in_bytes: rc.memory.unwrap_or(0),
        ..LinuxContainerResources::default()
    }
}

/// Upstream `subtractOverheadFromResourceConfig`: the pod's resources without
/// `spec.overhead`.
fn subtract_overhead(rc: &ResourceConfig, pod: &Pod) -> ResourceConfig {
    let mut rc = rc.clone();
    let Some(overhead) = pod.spec.as_ref().and_then(|s| s.overhead.as_ref()) else {
        return rc;
    };
    if let Some(cpu) = overhead.get(RESOURCE_CPU) {
        let milli = quantity::milli_value(cpu).unwrap_or(0);
        if let (Some(period), Some(quota)) = (rc.cpu_period, rc.cpu_quota) {
            let period = i64::try_from(period).unwrap_or(i64::MAX);
            rc.cpu_quota = Some(quota - crate::resources::milli_cpu_to_quota(milli, period));
        }
        if let Some(shares) = rc.cpu_shares {
            let total = shares_to_milli_cpu(i64::try_from(shares).unwrap_or(i64::MAX));
            rc.cpu_shares =
                u64::try_from(crate::resources::milli_cpu_to_shares(total - milli)).ok();
        }
    }
    if let (Some(memory), Some(mem)) = (overhead.get(RESOURCE_MEMORY), rc.memory) {
        rc.memory = Some(mem - quantity::value(memory).unwrap_or(0));
    }
    rc
}

/// What a resize writes to the pod cgroup.
struct PodCgroupPlan {
    pcm: Arc<dyn PodCgroupConfig>,
    want: ResourceConfig,
    current: ResourceConfig,
}

impl PodCgroupPlan {
    /// `((current, new) limit, (current, new) request)` of `resource`: memory limit (no
    /// request is written), CFS quota and CPU shares.
    fn values(&self, resource: &str) -> ((i64, i64), (i64, i64)) {
        let (c, w) = (&self.current, &self.want);
        let shares = |r: &ResourceConfig| {
            r.cpu_shares
                .map_or(0, |s| i64::try_from(s).unwrap_or(i64::MAX))
        };
        if resource == RESOURCE_MEMORY {
            ((c.memory.unwrap_or(0), w.memory.unwrap_or(0)), (0, 0))
        } else {
            (
                (c.cpu_quota.unwrap_or(0), w.cpu_quota.unwrap_or(0)),
                (shares(c), shares(w)),
            )
        }
    }

    /// The pod cgroup half of upstream `setPodCgroupConfig`: the limit (memory; CFS period
    /// and quota) or the request (CPU shares; memory requests are not written), merged
    /// into the current values; whether anything was written.
    fn set(&mut self, pod: &Pod, resource: &str, limit: bool) -> Result<bool, String> {
        let mut config = ResourceConfig::default();
        match (resource == RESOURCE_MEMORY, limit) {
            (true, true) => config.memory = self.want.memory,
            (true, false) => return Ok(false),
            (false, true) => {
                config.cpu_period = self.want.cpu_period;
                config.cpu_quota = self.want.cpu_quota;
            }
            (false, false) => config.cpu_shares = self.want.cpu_shares,
        }
        self.pcm.set_pod_cgroup_config(pod, &config).map_err(|e| {
            tracing::error!(resource, pod = %format_pod(pod), error = %e, "Failed to set cgroup config");
            e
        })?;
        // Upstream `mergeResourceConfig`.
        let c = &mut self.current;
        c.memory = config.memory.or(c.memory);
        c.cpu_period = config.cpu_period.or(c.cpu_period);
        c.cpu_quota = config.cpu_quota.or(c.cpu_quota);
        c.cpu_shares = config.cpu_shares.or(c.cpu_shares);
        Ok(true)
    }
}

/// `toKubeContainerResources` (linux): the CPU and memory the runtime reports for a container.
pub fn to_kube_container_resources(
    r: Option<&CriContainerResources>,
) -> Option<kubelet_container::ContainerResources> {
    let linux = r.and_then(|r| r.linux.as_ref())?;
    let mut out = kubelet_container::ContainerResources::default();
    if linux.cpu_period > 0 {
        let milli = quota_to_milli_cpu(linux.cpu_quota, linux.cpu_period);
        if milli > 0 {
            out.cpu_limit = Some(Quantity(
                ParsedQuantity::from_milli(milli, Format::DecimalSI).to_string(),
            ));
        }
    }
    if linux.cpu_shares > 0 {
        let milli = shares_to_milli_cpu(linux.cpu_shares);
        if milli > 0 {
            out.cpu_request = Some(Quantity(
                ParsedQuantity::from_milli(milli, Format::DecimalSI).to_string(),
            ));
        }
    }
    if linux.memory_limit_in_bytes > 0 {
        out.memory_limit = Some(Quantity(
            ParsedQuantity::from_int(linux.memory_limit_in_bytes, Format::BinarySI).to_string(),
        ));
    }
    (out.cpu_limit.is_some() || out.memory_limit.is_some() || out.cpu_request.is_some())
        .then_some(out)
}

/// Fills what the runtime did not report from the actuated resources (upstream
/// `toKubeContainerStatus`).
pub fn fill_from_actuated(
    reported: Option<kubelet_container::ContainerResources>,
    actuated: Option<&ResourceRequirements>,
) -> Option<kubelet_container::ContainerResources> {
    let Some(a) = actuated else {
        return reported;
    };
    let nonzero = |q: Option<&Quantity>| {
        q.filter(|q| ParsedQuantity::parse(&q.0).is_ok_and(|p| !p.is_zero()))
            .cloned()
    };
    match reported {
        None => Some(kubelet_container::ContainerResources {
            cpu_request: list_get(&a.requests, RESOURCE_CPU).cloned(),
            cpu_limit: list_get(&a.limits, RESOURCE_CPU).cloned(),
            memory_request: list_get(&a.requests, RESOURCE_MEMORY).cloned(),
            memory_limit: list_get(&a.limits, RESOURCE_MEMORY).cloned(),
        }),
        Some(mut r) => {
            if r.memory_request.is_none() {
                r.memory_request = nonzero(list_get(&a.requests, RESOURCE_MEMORY));
            }
            Some(r)
        }
    }
}

/// `quotaToMilliCPU`.
fn quota_to_milli_cpu(quota: i64, period: i64) -> i64 {
    if quota == -1 {
        return -1;
    }
    quota * 1000 / period
}

/// `sharesToMilliCPU`.
fn shares_to_milli_cpu(shares: i64) -> i64 {
    if shares < crate::resources::MIN_SHARES {
        return 0;
    }
    (shares * 1000 + 1023) / 1024
}

#[cfg(test)]
#[path = "resize_tests.rs"]
mod tests;
