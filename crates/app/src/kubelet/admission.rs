//! The kubelet's side of pod admission (`pkg/kubelet/kubelet.go` `HandlePodAdditions` →
//! `allocationManager.AddPod` → `canAdmitPod`, `rejectPod`; `kubelet_pods.go`
//! `GetActivePods`, `isPodInactive`, `isAdmittedPodTerminal`). The handlers themselves
//! live in `kubelet-admission`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use kubelet_admission::preemption;
use kubelet_admission::{
    AdmissionConfig, AdmissionError, Allocatable, NodeGetter, NodeInfo, PodAdmitAttributes,
    PodAdmitHandlers, PodAdmitResult, predicate::pod_capacity, rejection_message,
};
use kubelet_apimachinery::eviction::Signal;
use kubelet_apimachinery::{Format, Quantity};
use kubelet_container::SyncPodType;
use kubelet_podworkers::{KillPodOptions, PodStatusFn, UpdatePodOptions};
use kubelet_status::reasons::{condition, phase};

use super::pod_manager::pod_uid;
use super::sync_loop::full_name;
use super::{Kubelet, KubeletDeps};

/// The admit handlers (upstream `NewMainKubelet`), judging pods against the node `node`
/// returns; an invalid `allowedUnsafeSysctls` stops the start, as upstream's
/// `NewAllowlist` error does.
pub fn admit_handlers(
    deps: &KubeletDeps<'_>,
    node: Arc<dyn NodeGetter>,
    eviction: Arc<kubelet_eviction::ManagerImpl>,
    shutdown: Arc<dyn kubelet_nodeshutdown::Manager>,
    topology_manager: Arc<kubelet_topologymanager::Manager>,
) -> Result<PodAdmitHandlers, AdmissionError> {
    let c = &deps.server.config;
    let mut handlers = PodAdmitHandlers::new(AdmissionConfig {
        allowed_unsafe_sysctls: &c.allowed_unsafe_sysctls,
        kernel_version: &deps.machine.kernel_version,
        node,
        taint_toleration_comparison_operators: deps
            .server
            .feature_gates
            .enabled_by_name("TaintTolerationComparisonOperators")
            .unwrap_or(false),
    })?;
    // Upstream adds the eviction admit handler first; kubelet-rs's unsupported-feature
    // check stays in front of every handler.
    handlers.insert(1, kubelet_eviction::EvictionAdmitHandler(eviction));
    // Upstream's `GetAllocateResourcesPodAdmitHandler` (the topology manager: its
    // policy merges the hint providers' hints, then each provider allocates) follows the
    // sysctl allowlist and precedes the general predicates.
    handlers.insert(3, kubelet_topologymanager::AdmitHandler(topology_manager));
    // Upstream appends the node shutdown manager last (`NodeShutdown` while the node
    // shuts down).
    handlers.add(kubelet_nodeshutdown::ShutdownAdmitHandler(shutdown));
    Ok(handlers)
}

/// The node a standalone kubelet describes (upstream `initialNode`), also what admission
/// uses in API server mode until the Node object exists (`getNodeAnyWay`). Its
/// `status.features` are those of the runtime's `Status` at start (upstream refreshes
/// them every 5 s; a runtime's features do not change while it runs).
pub fn initial_node(deps: &KubeletDeps<'_>) -> NodeInfo {
    NodeInfo {
        supplemental_groups_policy: deps
            .runtime
            .features
            .is_some_and(|f| f.supplemental_groups_policy),
        ..NodeInfo::standalone(
            &deps.node_name,
            &deps.node_name,
            &deps.server.flags.node_labels,
            allocatable(deps),
        )
    }
}

/// The node's allocatable pods, CPU, memory and ephemeral storage (upstream node status
/// setters: capacity minus `GetNodeAllocatableReservation`, never below zero).
fn allocatable(deps: &KubeletDeps<'_>) -> Allocatable {
    let root = std::path::Path::new(&deps.server.flags.root_directory);
    let root_fs_capacity = kubelet_cm::capacity::fs_capacity(root).map_err(|e| e.to_string());
    Allocatable {
        ephemeral_storage: allocatable_ephemeral_storage(
            &deps.server.config,
            &deps.node_config,
            root_fs_capacity,
        ),
        ..node_allocatable(&deps.server.config, &deps.machine, &deps.node_config)
    }
}

/// Allocatable `ephemeral-storage`: with `localStorageCapacityIsolation`, the root
/// directory's filesystem capacity (cAdvisor `RootFsInfo`) minus kube- and
/// system-reserved ephemeral-storage and the hard `nodefs.available` threshold, never
/// below zero; without it (or when the filesystem cannot be read), none, so a pod
/// requesting ephemeral storage is rejected `OutOfephemeral-storage`, as upstream.
pub(crate) fn allocatable_ephemeral_storage(
    c: &kubelet_config::KubeletConfiguration,
    node_config: &kubelet_cm::NodeConfig,
    root_fs_capacity: Result<u64, String>,
) -> i64 {
    if !c.local_storage_capacity_isolation.unwrap_or(true) {
        return 0;
    }
    let bytes = match root_fs_capacity {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(err = %e, "Failed to get the root filesystem's capacity: no allocatable ephemeral-storage");
            return 0;
        }
    };
    let res = kubelet_cm::capacity::RESOURCE_EPHEMERAL_STORAGE;
    let capacity: std::collections::BTreeMap<String, Quantity> = [(
        res.to_string(),
        kubelet_cm::capacity::ephemeral_storage_capacity(bytes),
    )]
    .into_iter()
    .collect();
    let reserved = node_config
        .node_allocatable_reservation(&capacity)
        .get(res)
        .map_or(0, Quantity::value);
    capacity
        .get(res)
        .map_or(0, Quantity::value)
        .saturating_sub(reserved)
        .max(0)
}

/// [`allocatable`] from its inputs: the configuration, the machine and the parsed
/// container-manager settings (whose hard eviction thresholds are empty under
/// `--experimental-allocatable-ignore-eviction`).
pub(crate) fn node_allocatable(
    c: &kubelet_config::KubeletConfiguration,
    machine: &kubelet_cm::MachineInfo,
    node_config: &kubelet_cm::NodeConfig,
) -> Allocatable {
    let (milli_cpu, memory_unreserved) = node_config.pods_cgroup_limits(machine);
    let capacity = Quantity::from_int(
        i64::try_from(machine.memory_capacity).unwrap_or(i64::MAX),
        Format::BinarySI,
    );
    let eviction: i64 = node_config
        .hard_eviction_thresholds
        .iter()
        .filter(|t| t.signal == Signal::MemoryAvailable)
        .map(|t| t.value.quantity_for_capacity(&capacity).value())
        .sum();
    Allocatable {
        pods: pod_capacity(c.max_pods, c.pods_per_core, machine.num_cores()),
        milli_cpu,
        memory: memory_unreserved.saturating_sub(eviction).max(0),
        ephemeral_storage: 0,
    }
}

fn is_terminal(status: Option<&PodStatus>) -> bool {
    status
        .and_then(|s| s.phase.as_deref())
        .is_some_and(phase::is_terminal)
}

impl Kubelet {
    /// The pod's source or the kubelet has recorded a terminal phase: it never runs again
    /// (upstream `isAdmittedPodTerminal`; a rejected pod is one).
    pub fn is_admitted_pod_terminal(&self, pod: &Pod) -> bool {
        is_terminal(pod.status.as_ref())
            || is_terminal(self.status_manager.get_pod_status(pod_uid(pod)).as_ref())
    }

    /// Upstream `isPodInactive`: fully terminated, or terminal and not terminating.
    pub fn is_pod_inactive(&self, pod: &Pod) -> bool {
        let uid = pod_uid(pod);
        self.pod_workers.is_pod_known_terminated(uid)
            || (self.is_admitted_pod_terminal(pod)
                && !self.pod_workers.is_pod_termination_requested(uid))
    }

    /// Whether `pod` must go through admission: not already asked to terminate and not in
    /// a terminal phase (upstream `HandlePodAdditions`).
    pub fn needs_admission(&self, pod: &Pod) -> bool {
        !self.pod_workers.is_pod_termination_requested(pod_uid(pod))
            && !is_terminal(pod.status.as_ref())
    }

    /// Runs the admit handlers against the active pods (upstream `canAdmitPod` with
    /// `GetActivePods`, the pod itself left out).
    pub fn can_admit_pod(&self, pod: &Pod) -> PodAdmitResult {
        let uid = pod_uid(pod);
        let all = self.pod_manager.pods();
        // The other pods count with their allocated resources (`getAllocatedPods`).
        let allocated: Vec<Pod> = all
            .iter()
            .map(AsRef::as_ref)
            .filter(|p| pod_uid(p) != uid && !self.is_pod_inactive(p))
            .map(|p| self.allocation.update_pod_from_allocation(p).0)
            .collect();
        let others: Vec<&Pod> = allocated.iter().collect();
        let result = self.admit_handlers.can_admit_pod(&PodAdmitAttributes {
            pod,
            other_pods: &others,
        });
        if !result.admit {
            tracing::info!(pod_uid = %uid, pod = %full_name(pod), reason = %result.reason, detail = %result.message, "Pod admission denied");
        }
        result
    }

    /// Kills the pods admission chose to preempt for `for_pod`, marking them `Failed` with
    /// reason `Preempting` (upstream `evictPodsToFreeRequests` through `killPodNow`; upstream
    /// waits for the kills before it starts the new pod, kubelet-rs does not wait).
    pub fn preempt_pods(&self, uids: &[String], for_pod: &Pod) {
        for uid in uids {
            let Some(victim) = self.pod_manager.get(uid) else {
                continue;
            };
            tracing::info!(pod = %full_name(&victim), pod_uid = %uid, requesting_pod = %full_name(for_pod), "Preempting pod to free up resources");
            let generation = victim.metadata.generation;
            let status_fn: PodStatusFn = Arc::new(move |s: &mut PodStatus| {
                s.phase = Some(phase::FAILED.to_string());
                s.reason = Some(preemption::PREEMPTING_REASON.to_string());
                s.message = Some(preemption::PREEMPTING_MESSAGE.to_string());
                let conditions = s.conditions.get_or_insert_with(Vec::new);
                conditions.retain(|c| c.type_ != condition::DISRUPTION_TARGET);
                conditions.push(PodCondition {
                    type_: condition::DISRUPTION_TARGET.to_string(),
                    status: "True".to_string(),
                    reason: Some("TerminationByKubelet".to_string()),
                    message: Some(preemption::PREEMPTED_CONDITION_MESSAGE.to_string()),
                    observed_generation: generation,
                    ..PodCondition::default()
                });
            });
            let mut opts = UpdatePodOptions::new(SyncPodType::Kill, victim);
            opts.kill_pod_options = Some(KillPodOptions {
                evict: true,
                pod_status_fn: Some(status_fn),
                ..KillPodOptions::default()
            });
            self.pod_workers.update_pod(opts);
        }
    }

    /// Records a rejected pod as `Failed` with a `Warning` event of the same reason
    /// (upstream `rejectPod`); it is never started.
    pub fn reject_pod(&self, pod: &Pod, result: &PodAdmitResult) {
        self.recorder.event(
            &kubelet_container::events::pod_ref(pod),
            kubelet_container::EventType::Warning,
            &result.reason,
            &result.message,
        );
        let status = PodStatus {
            qos_class: Some(kubelet_container::get_pod_qos(pod).as_str().to_string()),
            phase: Some(phase::FAILED.to_string()),
            reason: Some(result.reason.clone()),
            message: Some(rejection_message(&result.message)),
            ..PodStatus::default()
        };
        self.status_manager.set_pod_status(pod, status);
    }
}
