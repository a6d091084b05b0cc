//! The allocation manager (upstream `pkg/kubelet/allocation/allocation_manager.go`, the
//! `allocated_pods_state` checkpoint of `allocation/state`, and the resize parts of
//! `kubelet.go` `HandlePodAdditions` / `HandlePodUpdates` / `HandlePodRemoves` /
//! `HandlePodCleanups`): the CPU and memory each admitted pod's containers were given.
//!
//! A pod is allocated its spec's resources when it is admitted (`AddPod`). When the API
//! changes a running pod's resources (an in-place resize through `pods/resize`), the resize
//! is admitted like a pod (`handlePodResourcesResize` → `canResizePod`): it fits and becomes
//! the allocation (`PodResizeInProgress` until the runtime has actuated it), or it stays
//! pending with `PodResizePending` — `Infeasible` beyond the node's allocatable (or for a
//! static pod), `Deferred` when the other pods leave no room now (retried when pods are
//! removed, and every 3 minutes). Pod workers always sync the allocated pod
//! ([`AllocationManager::update_pod_from_allocation`]).
//!
//! The allocations are checkpointed in `<root-dir>/allocated_pods_state`
//! ([`kubelet_runtime::resize::PodResourcesState`], which says how the file differs from
//! upstream's), so a restarted kubelet keeps them.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod, ResourceRequirements};
use kubelet_admission::{Allocatable, PodAdmitAttributes, resources::resource_request};
use kubelet_container::events::{EventType, pod_ref};
use kubelet_container::is_restartable_init_container;
use kubelet_runtime::resize::{PodResources, PodResourcesState};
use kubelet_status::StatusManager;
use kubelet_status::resize::{REASON_DEFERRED, REASON_INFEASIBLE};

use super::Kubelet;
use super::pod_manager::pod_uid;
use super::sync_loop::full_name;

/// Deferred resizes are retried this often (upstream `retryDelay`).
pub const RETRY_DELAY: Duration = Duration::from_secs(3 * 60);

/// Event reasons of a resize (upstream `pkg/kubelet/events`).
pub mod reasons {
    /// A deferred resize.
    pub const RESIZE_DEFERRED: &str = "ResizeDeferred";
    /// An infeasible resize.
    pub const RESIZE_INFEASIBLE: &str = "ResizeInfeasible";
    /// A resize the runtime has actuated.
    pub const RESIZE_COMPLETED: &str = "ResizeCompleted";
    /// An admitted resize.
    pub const RESIZE_STARTED: &str = "ResizeStarted";
    /// A resize the runtime failed to actuate.
    pub const RESIZE_ERROR: &str = "ResizeError";
}

/// Container name → allocated resources (upstream `PodResourceInfo.ContainerResources`).
type PodAllocation = PodResources;

/// The allocated resources of every admitted pod, and the resizes waiting for room.
#[derive(Debug)]
pub struct AllocationManager {
    allocated: PodResourcesState,
    pending: Mutex<Vec<String>>,
    last_retry: Mutex<Option<Instant>>,
    /// Node allocatable CPU and memory (upstream `nodeAllocatableAbsolute`).
    allocatable: Allocatable,
    /// `cpuManagerPolicy: static` without the `InPlacePodVerticalScalingExclusiveCPUs`
    /// gate: a Guaranteed pod's CPU cannot be resized.
    static_cpu_policy: bool,
}

/// Upstream `allocationFromPod`: regular containers and sidecars.
fn allocation_from_pod(pod: &Pod) -> PodAllocation {
    let spec = pod.spec.as_ref();
    let resizable = spec.into_iter().flat_map(|s| {
        s.containers.iter().chain(
            s.init_containers
                .iter()
                .flatten()
                .filter(|c| is_restartable_init_container(c)),
        )
    });
    resizable
        .map(|c| (c.name.clone(), c.resources.clone().unwrap_or_default()))
        .collect()
}

type ResourceList = BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;

/// `apiequality.Semantic.DeepEqual` of two resource lists: absent and empty are equal,
/// quantities compare by value.
fn same_list(a: Option<&ResourceList>, b: Option<&ResourceList>) -> bool {
    let empty = ResourceList::new();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    let parse = |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
        kubelet_apimachinery::Quantity::parse(&q.0).ok()
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k).is_some_and(|w| match (parse(v), parse(w)) {
                (Some(x), Some(y)) => x.cmp_value(&y).is_eq(),
                _ => v == w,
            })
        })
}

fn same_resources(a: Option<&ResourceRequirements>, b: Option<&ResourceRequirements>) -> bool {
    same_list(
        a.and_then(|r| r.limits.as_ref()),
        b.and_then(|r| r.limits.as_ref()),
    ) && same_list(
        a.and_then(|r| r.requests.as_ref()),
        b.and_then(|r| r.requests.as_ref()),
    )
}

/// Upstream `updatePodFromAllocation`: the pod with its containers' resources replaced by
/// the allocation, and whether anything differed.
fn update_pod_from_allocation(pod: &Pod, allocated: &PodAllocation) -> (Pod, bool) {
    let mut out = pod.clone();
    let mut updated = false;
    let mut apply = |c: &mut Container| {
        if let Some(a) = allocated.get(&c.name)
            && !same_resources(c.resources.as_ref(), Some(a))
        {
            c.resources = Some(a.clone());
            updated = true;
        }
    };
    if let Some(spec) = out.spec.as_mut() {
        spec.containers.iter_mut().for_each(&mut apply);
        spec.init_containers
            .iter_mut()
            .flatten()
            .for_each(&mut apply);
    }
    (out, updated)
}

/// The `"<prefix>: <summary>"` message of resize events (upstream `podResizeMessage` with
/// `makeResourceSummaryFromSpec`).
pub fn pod_resize_message(pod: &Pod, generation: Option<i64>, error: &str, prefix: &str) -> String {
    let entry = |c: &Container| {
        let resources =
            serde_json::to_string(&c.resources.clone().unwrap_or_default()).unwrap_or_default();
        format!(
            "{{\"name\":{},\"resources\":{resources}}}",
            serde_json::Value::String(c.name.clone())
        )
    };
    let spec = pod.spec.as_ref();
    let inits: Vec<String> = spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .map(entry)
        .collect();
    let containers: Vec<String> = spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(entry)
        .collect();
    let mut parts = Vec::new();
    if !inits.is_empty() {
        parts.push(format!("\"initContainers\":[{}]", inits.join(",")));
    }
    if !containers.is_empty() {
        parts.push(format!("\"containers\":[{}]", containers.join(",")));
    }
    parts.push(format!("\"generation\":{}", generation.unwrap_or(0)));
    if !error.is_empty() {
        parts.push(format!(
            "\"error\":{}",
            serde_json::Value::String(error.to_string())
        ));
    }
    format!("{prefix}: {{{}}}", parts.join(","))
}

impl AllocationManager {
    /// A manager keeping allocations in `allocated`, judging resizes against `allocatable`.
    pub fn new(allocated: PodResourcesState, allocatable: Allocatable) -> Self {
        Self {
            allocated,
            pending: Mutex::default(),
            last_retry: Mutex::default(),
            allocatable,
            static_cpu_policy: false,
        }
    }

    /// Refuses CPU resizes of Guaranteed pods as `Infeasible` (upstream `canResizePod`
    /// with `cpuManagerPolicy: static` and the `InPlacePodVerticalScalingExclusiveCPUs`
    /// gate off).
    #[must_use]
    pub fn with_static_cpu_policy(mut self, on: bool) -> Self {
        self.static_cpu_policy = on;
        self
    }

    /// Upstream `guaranteedPodResourceResizeRequired`: a resizable container's request of
    /// `resource` differs from its allocation.
    fn guaranteed_pod_resource_resize_required(&self, pod: &Pod, resource: &str) -> bool {
        let allocated = self.allocated.get_pod(pod_uid(pod)).unwrap_or_default();
        let request = |r: Option<&ResourceRequirements>| {
            r.and_then(|r| r.requests.as_ref())
                .and_then(|l| l.get(resource))
                .cloned()
        };
        allocation_from_pod(pod).iter().any(|(name, wanted)| {
            let want = request(Some(wanted));
            let have = request(allocated.get(name));
            let parse = |q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
                q.as_ref()
                    .map(|q| kubelet_apimachinery::Quantity::parse(&q.0).map_err(|_| q.0.clone()))
            };
            match (parse(&want), parse(&have)) {
                (None, None) => false,
                (Some(Ok(a)), Some(Ok(b))) => !a.cmp_value(&b).is_eq(),
                (Some(Err(a)), Some(Err(b))) => a != b,
                _ => true,
            }
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `UpdatePodFromAllocation`: the pod as allocated, and whether its spec differs.
    pub fn update_pod_from_allocation(&self, pod: &Pod) -> (Pod, bool) {
        match self.allocated.get_pod(pod_uid(pod)) {
            Some(a) => update_pod_from_allocation(pod, &a),
            None => (pod.clone(), false),
        }
    }

    /// `SetAllocatedResources`: checkpoints the pod's current container resources.
    pub fn set_allocated_resources(&self, pod: &Pod) {
        self.allocated
            .set_pod(pod_uid(pod), allocation_from_pod(pod));
    }

    /// `RemovePod`.
    pub fn remove_pod(&self, uid: &str) {
        self.allocated.remove_pod(uid);
    }

    /// `RemoveOrphanedPods`: forgets the pods `keep` does not name.
    pub fn remove_orphaned_pods(&self, keep: &dyn Fn(&str) -> bool) {
        self.allocated.remove_orphaned_pods(keep);
    }

    /// `PushPendingResize`.
    pub fn push_pending_resize(&self, uid: &str) {
        let mut pending = self.pending();
        if !pending.iter().any(|u| u == uid) {
            pending.push(uid.to_string());
        }
    }

    /// Whether a deferred resize is due for its periodic retry (`retryDelay`).
    fn retry_due(&self) -> bool {
        let mut last = self
            .last_retry
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let due = last.is_none_or(|t| t.elapsed() >= RETRY_DELAY);
        if due {
            *last = Some(Instant::now());
        }
        due
    }
}

/// Upstream `recordContainerResizeOperations`: some container's CPU or memory requests or
/// limits differ between the old and the new pod.
pub fn has_resize_operations(old: &Pod, new: &Pod) -> bool {
    let containers = |p: &Pod| -> Vec<Container> {
        p.spec
            .iter()
            .flat_map(|s| {
                s.containers
                    .iter()
                    .chain(s.init_containers.iter().flatten())
            })
            .cloned()
            .collect()
    };
    let old_containers = containers(old);
    containers(new).iter().any(|n| {
        old_containers
            .iter()
            .find(|o| o.name == n.name)
            .is_some_and(|o| !same_resources(o.resources.as_ref(), n.resources.as_ref()))
    })
}

/// The allocation manager's decisions that need the kubelet (admission, the pod manager,
/// the status manager, the recorder).
impl Kubelet {
    /// The active pods other than `uid`, as allocated (upstream `getAllocatedPods` of
    /// `GetActivePods`).
    fn other_allocated_pods(&self, uid: &str) -> Vec<Pod> {
        self.pod_manager
            .pods()
            .iter()
            .filter(|p| pod_uid(p) != uid && !self.is_pod_inactive(p))
            .map(|p| self.allocation.update_pod_from_allocation(p).0)
            .collect()
    }

    /// `canResizePod`: `Infeasible` beyond the node's allocatable, `Deferred` when the admit
    /// handlers reject the resized pod among the others.
    fn can_resize_pod(&self, pod: &Pod) -> Result<(), (&'static str, String)> {
        if self.allocation.static_cpu_policy
            && kubelet_container::get_pod_qos(pod) == kubelet_container::QosClass::Guaranteed
            && self
                .allocation
                .guaranteed_pod_resource_resize_required(pod, "cpu")
        {
            return Err((
                REASON_INFEASIBLE,
                "Resize is infeasible for Guaranteed Pods alongside CPU Manager policy \"static\""
                    .to_owned(),
            ));
        }
        let a = &self.allocation.allocatable;
        let cpu = resource_request(pod, "cpu");
        let memory = resource_request(pod, "memory");
        if cpu > a.milli_cpu || memory > a.memory {
            let msg = if memory > a.memory {
                format!("memory, requested: {memory}, capacity: {}", a.memory)
            } else {
                format!("cpu, requested: {cpu}, capacity: {}", a.milli_cpu)
            };
            return Err((
                REASON_INFEASIBLE,
                format!("Node didn't have enough capacity: {msg}"),
            ));
        }
        let others = self.other_allocated_pods(pod_uid(pod));
        let refs: Vec<&Pod> = others.iter().collect();
        let result = self.admit_handlers.can_admit_pod(&PodAdmitAttributes {
            pod,
            other_pods: &refs,
        });
        if !result.admit {
            tracing::debug!(pod = %full_name(pod), reason = %result.reason, message = %result.message, "Resize cannot be accommodated");
            return Err((REASON_DEFERRED, result.message));
        }
        Ok(())
    }

    /// `handlePodResourcesResize`: admits the pod's desired resources, or records why not.
    /// Returns whether the allocation changed.
    pub fn handle_pod_resources_resize(&self, pod: &Pod) -> bool {
        let uid = pod_uid(pod);
        let sm: &StatusManager = &self.status_manager;
        let (_, updated) = self.allocation.update_pod_from_allocation(pod);
        if !updated {
            sm.clear_pod_resize_pending_condition(uid);
            return false;
        }
        let generation = pod.metadata.generation;
        if let Some((msg, _)) =
            kubelet_runtime::resize::in_place_pod_vertical_scaling_disallowed(pod)
        {
            sm.set_pod_resize_pending_condition(uid, REASON_INFEASIBLE, msg, generation);
            return false;
        }
        match self.can_resize_pod(pod) {
            Ok(()) => {
                self.allocation.set_allocated_resources(pod);
                sm.clear_pod_resize_pending_condition(uid);
                sm.clear_pod_resize_in_progress_condition(uid);
                sm.set_pod_resize_in_progress_condition(uid, "", "", generation);
                let msg = pod_resize_message(pod, generation, "", "Pod resize started");
                self.recorder.event(
                    &pod_ref(pod),
                    EventType::Normal,
                    reasons::RESIZE_STARTED,
                    &msg,
                );
                true
            }
            Err((reason, message)) => {
                if sm.set_pod_resize_pending_condition(uid, reason, &message, generation) {
                    let event_reason = if reason == REASON_INFEASIBLE {
                        reasons::RESIZE_INFEASIBLE
                    } else {
                        reasons::RESIZE_DEFERRED
                    };
                    let msg = pod_resize_message(
                        pod,
                        generation,
                        &message,
                        &format!("Pod resize {reason}"),
                    );
                    self.recorder
                        .event(&pod_ref(pod), EventType::Warning, event_reason, &msg);
                }
                false
            }
        }
    }

    /// `RetryPendingResizes`: re-evaluates every pending resize, keeps the deferred ones,
    /// and resyncs the pods whose allocation or resize conditions changed.
    pub fn retry_pending_resizes(&self) {
        if !self.sources_ready() {
            return;
        }
        let pending = std::mem::take(&mut *self.allocation.pending());
        let mut still_pending = Vec::new();
        for uid in pending {
            let Some(pod) = self.pod_manager.get(&uid) else {
                continue;
            };
            let before = self.status_manager.get_pod_resize_conditions(&uid);
            let allocated = self.handle_pod_resources_resize(&pod);
            if self
                .status_manager
                .is_pod_resize_pending_with(&uid, REASON_DEFERRED)
            {
                still_pending.push(uid.clone());
            }
            if allocated || before != self.status_manager.get_pod_resize_conditions(&uid) {
                self.pod_workers
                    .update_pod(super::sync_loop::update_options(
                        self,
                        kubelet_container::SyncPodType::Sync,
                        pod,
                    ));
            }
        }
        let mut pending = self.allocation.pending();
        for uid in still_pending {
            if !pending.contains(&uid) {
                pending.push(uid);
            }
        }
    }

    /// Housekeeping's part: forget the allocations and actuated resources of pods not in
    /// `keep` (desired or with a worker), and retry deferred resizes every [`RETRY_DELAY`].
    pub fn allocation_housekeeping(&self, keep: &std::collections::HashSet<&str>) {
        let keep = |uid: &str| keep.contains(uid);
        self.allocation.remove_orphaned_pods(&keep);
        self.actuated.remove_orphaned_pods(&keep);
        if !self.allocation.pending().is_empty() && self.allocation.retry_due() {
            self.retry_pending_resizes();
        }
    }
}

#[cfg(test)]
#[path = "allocation_tests.rs"]
mod tests;
