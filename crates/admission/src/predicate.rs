//! The general predicates a pod must pass on this node (upstream
//! `pkg/kubelet/lifecycle/predicate.go` `predicateAdmitHandler`, and the checks of
//! `scheduler.AdmissionCheck` it runs): the `kubernetes.io/os` label and `spec.os`, the
//! number of pods (`maxPods`: reason `OutOfpods`), CPU, memory and ephemeral-storage
//! requests against allocatable (`OutOfcpu`, `OutOfmemory`, `OutOfephemeral-storage`),
//! node affinity and `nodeSelector`, the
//! node name, and host ports; `supplementalGroupsPolicy: Strict` on a node whose runtime
//! does not implement it (`status.features.supplementalGroupsPolicy`, reason
//! `SupplementalGroupsPolicyNotSupported`).
//!
//! A critical pod (every static pod is one) that fails only for lack of resources is not
//! rejected for it: pods it may preempt are chosen instead ([`crate::preemption`]); when
//! none can be, it is rejected with `UnexpectedAdmissionError`, as upstream does.
//!
//! The node comes from a [`NodeGetter`] (upstream `getNodeAnyWayFunc`): in standalone
//! mode the node the kubelet would register (upstream `initialNode`: its name, its default
//! labels and its pod capacity, [`NodeInfo::standalone`]); in API server mode the Node
//! object of the node informer ([`NodeInfo::from_node`]), falling back to the standalone
//! one until it exists. `NoExecute` taints are only checked for pods that are not static
//! (reason `TaintToleration`, [`crate::taints`]), so a standalone kubelet, which has only
//! static pods, never rejects for a taint.
//! CPU, memory and ephemeral-storage requests are checked against allocatable; hugepages and extended
//! resources are not yet (ARCHITECTURE.md, "Deliberate differences").

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ContainerPort, Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint,
};

use kubelet_apimachinery::Quantity;
use kubelet_container::kubetypes::{is_static_pod, pod_uid};

use crate::preemption::{FailureOutcome, handle_admission_failure};
use crate::resources::pod_requests;
use crate::{PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};

/// `kubernetes.io/os`.
pub const LABEL_OS_STABLE: &str = "kubernetes.io/os";
/// `kubernetes.io/arch`.
pub const LABEL_ARCH_STABLE: &str = "kubernetes.io/arch";
/// `kubernetes.io/hostname`.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// Deprecated `beta.kubernetes.io/os`, still set by upstream.
pub const LABEL_OS_BETA: &str = "beta.kubernetes.io/os";
/// Deprecated `beta.kubernetes.io/arch`, still set by upstream.
pub const LABEL_ARCH_BETA: &str = "beta.kubernetes.io/arch";

/// The OS kubelet-rs runs on (Go `runtime.GOOS`).
pub const GOOS: &str = "linux";

/// Upstream reasons.
pub mod reasons {
    /// The pod's `kubernetes.io/os` label differs from the node's.
    pub const POD_OS_SELECTOR_NODE_LABEL_DOES_NOT_MATCH: &str =
        "PodOSSelectorNodeLabelDoesNotMatch";
    /// `spec.os.name` differs from the node's OS.
    pub const POD_OS_NOT_SUPPORTED: &str = "PodOSNotSupported";
    /// No room for another pod (`maxPods`, `podsPerCore`).
    pub const OUT_OF_PODS: &str = "OutOfpods";
    /// Not enough allocatable CPU.
    pub const OUT_OF_CPU: &str = "OutOfcpu";
    /// Not enough allocatable memory.
    pub const OUT_OF_MEMORY: &str = "OutOfmemory";
    /// Prefix of every insufficient-resource reason.
    pub const INSUFFICIENT_RESOURCE_PREFIX: &str = "OutOf";
    /// Predicate name of node affinity and `nodeSelector`.
    pub const NODE_AFFINITY: &str = "NodeAffinity";
    /// Predicate name of `spec.nodeName`.
    pub const NODE_NAME: &str = "NodeName";
    /// Predicate name of host ports.
    pub const NODE_PORTS: &str = "NodePorts";
    /// A critical pod did not fit and no pods could be preempted for it.
    pub const UNEXPECTED_ADMISSION_ERROR: &str = "UnexpectedAdmissionError";
    /// The pod asks for `supplementalGroupsPolicy: Strict` and the runtime does not
    /// implement it.
    pub const SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED: &str =
        "SupplementalGroupsPolicyNotSupported";
    /// Predicates failed without a reason.
    pub const UNKNOWN_REASON: &str = "UnknownReason";
    /// Predicate name of the `NoExecute` taint check (scheduler plugin `TaintToleration`).
    pub const TAINT_TOLERATION: &str = "TaintToleration";
}

const ERR_REASON_NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
const ERR_REASON_NODE_NAME: &str = "node(s) didn't match the requested node name";
const ERR_REASON_NODE_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
const ERR_REASON_TAINTS: &str = "node(s) had taints that the pod didn't tolerate";

/// The node as the predicates see it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeInfo {
    /// The node name.
    pub name: String,
    /// The node's labels.
    pub labels: BTreeMap<String, String>,
    /// Allocatable pods (`maxPods`, or fewer with `podsPerCore`).
    pub allocatable_pods: i64,
    /// Allocatable CPU in millicores.
    pub allocatable_milli_cpu: i64,
    /// Allocatable memory in bytes.
    pub allocatable_memory: i64,
    /// Allocatable ephemeral storage in bytes (0 without `localStorageCapacityIsolation`).
    pub allocatable_ephemeral_storage: i64,
    /// The node's taints (`spec.taints`; none for a standalone node).
    pub taints: Vec<Taint>,
    /// `status.features.supplementalGroupsPolicy` (false when absent): the runtime
    /// implements `SupplementalGroupsPolicy`.
    pub supplemental_groups_policy: bool,
}

/// Where the predicates get the node from on each admission (upstream
/// `getNodeAnyWayFunc`: the informer's Node, else `initialNode`).
pub trait NodeGetter: Send + Sync + std::fmt::Debug {
    /// The node as it is now.
    fn get_node_any_way(&self) -> NodeInfo;
}

/// A fixed node (standalone mode, tests).
impl NodeGetter for NodeInfo {
    fn get_node_any_way(&self) -> NodeInfo {
        self.clone()
    }
}

impl NodeInfo {
    /// The node as a Node object describes it (API server mode): name, labels, taints and
    /// `status.allocatable` pods, cpu and memory (a missing or unparsable entry is 0, as an
    /// absent resource is for the scheduler's `NodeInfo`).
    pub fn from_node(node: &Node) -> Self {
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let quantity = |name: &str| {
            allocatable
                .and_then(|a| a.get(name))
                .and_then(|q| Quantity::parse(&q.0).ok())
        };
        Self {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            allocatable_pods: quantity("pods").map_or(0, |q| q.value()),
            allocatable_milli_cpu: quantity("cpu").map_or(0, |q| q.milli_value()),
            allocatable_memory: quantity("memory").map_or(0, |q| q.value()),
            allocatable_ephemeral_storage: quantity("ephemeral-storage").map_or(0, |q| q.value()),
            taints: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default(),
            supplemental_groups_policy: node
                .status
                .as_ref()
                .and_then(|s| s.features.as_ref())
                .and_then(|f| f.supplemental_groups_policy)
                .unwrap_or(false),
        }
    }

    /// The node a standalone kubelet describes (upstream `initialNode`): the hostname, OS
    /// and architecture labels, then `--node-labels` over them, and what is allocatable.
    pub fn standalone(
        name: &str,
        hostname: &str,
        node_labels: &BTreeMap<String, String>,
        allocatable: Allocatable,
    ) -> Self {
        let mut labels = BTreeMap::new();
        labels.insert(LABEL_HOSTNAME.to_string(), hostname.to_string());
        labels.insert(LABEL_OS_STABLE.to_string(), GOOS.to_string());
        labels.insert(LABEL_ARCH_STABLE.to_string(), go_arch().to_string());
        labels.insert(LABEL_OS_BETA.to_string(), GOOS.to_string());
        labels.insert(LABEL_ARCH_BETA.to_string(), go_arch().to_string());
        labels.extend(node_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        Self {
            name: name.to_string(),
            labels,
            allocatable_pods: allocatable.pods,
            allocatable_milli_cpu: allocatable.milli_cpu,
            allocatable_memory: allocatable.memory,
            allocatable_ephemeral_storage: allocatable.ephemeral_storage,
            taints: Vec::new(),
            supplemental_groups_policy: false,
        }
    }
}

/// What the node offers to pods (upstream node status `allocatable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Allocatable {
    /// Pods ([`pod_capacity`]).
    pub pods: i64,
    /// Millicores: capacity minus kube- and system-reserved.
    pub milli_cpu: i64,
    /// Bytes: capacity minus kube- and system-reserved and the `memory.available` hard
    /// eviction threshold.
    pub memory: i64,
    /// Bytes: the root filesystem's capacity minus kube- and system-reserved and the
    /// `nodefs.available` hard eviction threshold (0 without
    /// `localStorageCapacityIsolation`).
    pub ephemeral_storage: i64,
}

/// Go's `runtime.GOARCH` for this build.
pub use kubelet_apimachinery::goruntime::go_arch;

/// The node's pod capacity (upstream `MachineInfo` node status setter): `maxPods`, or
/// `podsPerCore × cores` when `podsPerCore` is set and smaller.
pub fn pod_capacity(max_pods: i32, pods_per_core: i32, num_cores: usize) -> i64 {
    let max = i64::from(max_pods);
    if pods_per_core > 0 {
        let cores = i64::try_from(num_cores).unwrap_or(i64::MAX);
        return max.min(i64::from(pods_per_core).saturating_mul(cores));
    }
    max
}

/// A predicate that failed (upstream `PredicateFailureReason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PredicateFailure {
    /// Upstream `InsufficientResourceError`.
    InsufficientResource {
        /// The resource (`pods`, `cpu` ...).
        resource: &'static str,
        /// What the pod asks for.
        requested: i64,
        /// What the other pods use.
        used: i64,
        /// What the node has.
        capacity: i64,
    },
    /// Upstream `PredicateFailureError`.
    Predicate {
        /// Predicate (plugin) name, the reason of the rejection.
        name: &'static str,
        /// Why it failed.
        desc: &'static str,
    },
}

impl PredicateFailure {
    /// The admission result for this failure (upstream `Admit`'s switch on the first
    /// reason).
    pub fn to_result(&self) -> PodAdmitResult {
        match self {
            Self::InsufficientResource {
                resource,
                requested,
                used,
                capacity,
            } => PodAdmitResult::reject(
                format!("{}{resource}", reasons::INSUFFICIENT_RESOURCE_PREFIX),
                format!(
                    "Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"
                ),
            ),
            Self::Predicate { name, desc } => {
                PodAdmitResult::reject(*name, format!("Predicate {name} failed: {desc}"))
            }
        }
    }
}

/// The general predicates (upstream `predicateAdmitHandler`).
#[derive(Debug, Clone)]
pub struct PredicateAdmitHandler {
    node: Arc<dyn NodeGetter>,
    /// The `TaintTolerationComparisonOperators` gate (`Lt`/`Gt` tolerations).
    taint_comparison_operators: bool,
}

impl PredicateAdmitHandler {
    /// A handler judging pods against a fixed `node`.
    pub fn new(node: NodeInfo) -> Self {
        Self::with_node_getter(Arc::new(node), false)
    }

    /// A handler judging pods against the node `node` returns at each admission.
    pub fn with_node_getter(node: Arc<dyn NodeGetter>, taint_comparison_operators: bool) -> Self {
        Self {
            node,
            taint_comparison_operators,
        }
    }

    /// Every general predicate that fails against the current node, in upstream's order
    /// (`generalFilter` with `includeAllFailures`).
    pub fn general_filter(&self, pod: &Pod, other_pods: &[&Pod]) -> Vec<PredicateFailure> {
        self.general_filter_on(&self.node.get_node_any_way(), pod, other_pods)
    }

    fn general_filter_on(
        &self,
        node: &NodeInfo,
        pod: &Pod,
        other_pods: &[&Pod],
    ) -> Vec<PredicateFailure> {
        let mut reasons = Vec::new();
        let used = i64::try_from(other_pods.len()).unwrap_or(i64::MAX);
        if used.saturating_add(1) > node.allocatable_pods {
            reasons.push(PredicateFailure::InsufficientResource {
                resource: "pods",
                requested: 1,
                used,
                capacity: node.allocatable_pods,
            });
        }
        reasons.extend(fits_cpu_and_memory(node, pod, other_pods));
        if !matches_node_selector_and_affinity(pod, node) {
            reasons.push(PredicateFailure::Predicate {
                name: reasons::NODE_AFFINITY,
                desc: ERR_REASON_NODE_AFFINITY,
            });
        }
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or_default();
        if !node_name.is_empty() && node_name != node.name {
            reasons.push(PredicateFailure::Predicate {
                name: reasons::NODE_NAME,
                desc: ERR_REASON_NODE_NAME,
            });
        }
        if !fits_ports(pod, other_pods) {
            reasons.push(PredicateFailure::Predicate {
                name: reasons::NODE_PORTS,
                desc: ERR_REASON_NODE_PORTS,
            });
        }
        // The kubelet checks only NoExecute taints, and not for static pods.
        if !is_static_pod(pod) {
            let tolerations = pod
                .spec
                .as_ref()
                .and_then(|s| s.tolerations.as_deref())
                .unwrap_or_default();
            if crate::taints::find_untolerated_no_execute_taint(
                &node.taints,
                tolerations,
                self.taint_comparison_operators,
            )
            .is_some()
            {
                reasons.push(PredicateFailure::Predicate {
                    name: reasons::TAINT_TOLERATION,
                    desc: ERR_REASON_TAINTS,
                });
            }
        }
        reasons
    }
}

/// The CPU, memory and ephemeral-storage part of upstream `noderesources.Fits`: nothing
/// is checked when the pod requests none; the others' requests count as used.
fn fits_cpu_and_memory(node: &NodeInfo, pod: &Pod, other_pods: &[&Pod]) -> Vec<PredicateFailure> {
    let want = pod_requests(pod);
    if want.is_zero() {
        return Vec::new();
    }
    let used =
        other_pods
            .iter()
            .map(|p| pod_requests(p))
            .fold((0i64, 0i64, 0i64), |(c, m, e), r| {
                (
                    c.saturating_add(r.milli_cpu),
                    m.saturating_add(r.memory),
                    e.saturating_add(r.ephemeral_storage),
                )
            });
    let mut out = Vec::new();
    let checks = [
        ("cpu", want.milli_cpu, used.0, node.allocatable_milli_cpu),
        ("memory", want.memory, used.1, node.allocatable_memory),
        (
            "ephemeral-storage",
            want.ephemeral_storage,
            used.2,
            node.allocatable_ephemeral_storage,
        ),
    ];
    for (resource, requested, used, capacity) in checks {
        if requested > 0 && requested > capacity.saturating_sub(used) {
            out.push(PredicateFailure::InsufficientResource {
                resource,
                requested,
                used,
                capacity,
            });
        }
    }
    out
}

impl PodAdmitHandler for PredicateAdmitHandler {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        let pod = attrs.pod;
        let node = self.node.get_node_any_way();
        if reject_based_on_os_selector(pod, &node) {
            return PodAdmitResult::reject(
                reasons::POD_OS_SELECTOR_NODE_LABEL_DOES_NOT_MATCH,
                "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
            );
        }
        if reject_based_on_os_field(pod) {
            return PodAdmitResult::reject(
                reasons::POD_OS_NOT_SUPPORTED,
                "Failed to admit pod as the OS field doesn't match node OS",
            );
        }
        if reject_based_on_supplemental_groups_policy(pod, &node) {
            let message = format!(
                "SupplementalGroupsPolicy={SUPPLEMENTAL_GROUPS_POLICY_STRICT} is not supported in this node"
            );
            return PodAdmitResult::reject(
                reasons::SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED,
                message,
            );
        }
        let failures = self.general_filter_on(&node, pod, attrs.other_pods);
        if failures.is_empty() {
            return PodAdmitResult::admit();
        }
        match handle_admission_failure(pod, failures, attrs.other_pods) {
            FailureOutcome::Reject(reasons) => match reasons.first() {
                Some(first) => first.to_result(),
                None => PodAdmitResult::reject(
                    reasons::UNKNOWN_REASON,
                    "GeneralPredicates failed due to unknown reason, which is unexpected.",
                ),
            },
            FailureOutcome::Preempt(pods) => PodAdmitResult {
                preempt: pods.iter().map(|p| pod_uid(p).to_string()).collect(),
                ..PodAdmitResult::admit()
            },
            FailureOutcome::Error(e) => PodAdmitResult::reject(
                reasons::UNEXPECTED_ADMISSION_ERROR,
                format!("Unexpected error while attempting to recover from admission failure: {e}"),
            ),
        }
    }
}

/// Upstream `rejectPodAdmissionBasedOnOSSelector`: the node's OS label is taken as GOOS.
fn reject_based_on_os_selector(pod: &Pod, node: &NodeInfo) -> bool {
    let node_os = match node.labels.get(LABEL_OS_STABLE) {
        Some(os) if os == GOOS => os.as_str(),
        _ => GOOS,
    };
    let pod_os = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_OS_STABLE));
    pod_os.is_some_and(|os| os != node_os)
}

/// Upstream `rejectPodAdmissionBasedOnOSField`.
fn reject_based_on_os_field(pod: &Pod) -> bool {
    let os = pod.spec.as_ref().and_then(|s| s.os.as_ref());
    os.is_some_and(|os| os.name != GOOS)
}

/// `v1.SupplementalGroupsPolicyStrict`.
pub const SUPPLEMENTAL_GROUPS_POLICY_STRICT: &str = "Strict";

/// Upstream `rejectPodAdmissionBasedOnSupplementalGroupsPolicy`: the pod sets
/// `supplementalGroupsPolicy: Strict` and the node does not report the feature (the gate
/// is GA, so upstream's admit-while-alpha branch never applies).
fn reject_based_on_supplemental_groups_policy(pod: &Pod, node: &NodeInfo) -> bool {
    let policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .and_then(|sc| sc.supplemental_groups_policy.as_deref());
    policy == Some(SUPPLEMENTAL_GROUPS_POLICY_STRICT) && !node.supplemental_groups_policy
}

/// `nodeSelector` and required node affinity (upstream `GetRequiredNodeAffinity(pod).Match`).
pub fn matches_node_selector_and_affinity(pod: &Pod, node: &NodeInfo) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    let selector_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(k, v)| node.labels.get(k) == Some(v));
    if !selector_ok {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        // A selector with no terms matches nothing (upstream `NodeSelector` semantics).
        Some(sel) => sel
            .node_selector_terms
            .iter()
            .any(|t| term_matches(t, node)),
        None => true,
    }
}

/// A term matches when all its requirements do; an empty term matches no node.
fn term_matches(term: &NodeSelectorTerm, node: &NodeInfo) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs
        .iter()
        .all(|r| requirement_matches(r, node.labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            let value = (r.key == "metadata.name").then_some(node.name.as_str());
            matches!(r.operator.as_str(), "In" | "NotIn") && requirement_matches(r, value)
        })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let int = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), [want]) = (value.and_then(int), values) else {
                return false;
            };
            let Some(want) = int(want) else {
                return false;
            };
            if r.operator == "Gt" {
                have > want
            } else {
                have < want
            }
        }
        _ => false,
    }
}

/// Host ports of the containers running for the pod's whole life: sidecars and regular
/// containers (upstream `util.GetHostPorts`).
fn host_ports(pod: &Pod) -> Vec<&ContainerPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    sidecars
        .chain(spec.containers.iter())
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.is_some_and(|hp| hp > 0))
        .collect()
}

/// `(ip, protocol, port)` with upstream's defaults (`HostPortInfo.sanitize`).
fn host_port_key(p: &ContainerPort) -> (&str, &str, i32) {
    let ip = p
        .host_ip
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("0.0.0.0");
    let proto = p
        .protocol
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("TCP");
    (ip, proto, p.host_port.unwrap_or(0))
}

/// Upstream `nodeports.Fits`: no wanted host port conflicts with one in use
/// (`HostPortInfo.CheckConflict`: `0.0.0.0` conflicts with every address).
fn fits_ports(pod: &Pod, other_pods: &[&Pod]) -> bool {
    let in_use: Vec<(&str, &str, i32)> = other_pods
        .iter()
        .flat_map(|p| host_ports(p))
        .map(host_port_key)
        .collect();
    host_ports(pod)
        .into_iter()
        .map(host_port_key)
        .all(|(ip, proto, port)| {
            !in_use.iter().any(|(uip, uproto, uport)| {
                *uproto == proto
                    && *uport == port
                    && (ip == "0.0.0.0" || *uip == "0.0.0.0" || *uip == ip)
            })
        })
}

#[cfg(test)]
#[path = "predicate_tests.rs"]
mod tests;
