//! The topology manager: upstream `topologymanager/topology_manager.go` (`NewManager`,
//! `Admit`, `GetAffinity`) and its scopes (`scope.go`, `scope_container.go`,
//! `scope_pod.go`, `scope_none.go`), v1.35.4.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler, PodAdmitResult};

use crate::numa_info::{NumaInfo, NumaInfoError, NumaNode};
use crate::policy::{
    BestEffortPolicy, NonePolicy, POLICY_BEST_EFFORT, POLICY_NONE, POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE, Policy, RestrictedPolicy, SingleNumaNodePolicy,
    is_alignment_guaranteed,
};
use crate::policy_options::{OptionGates, PolicyOptions, PolicyOptionsError};
use crate::{AllocateError, HintProvider, ResourceHints, Store, TopologyHint};

/// `containerTopologyScope`.
pub const CONTAINER_TOPOLOGY_SCOPE: &str = "container";
/// `podTopologyScope`.
pub const POD_TOPOLOGY_SCOPE: &str = "pod";
/// `noneTopologyScope` (the scope of the `none` policy, whatever is configured).
pub const NONE_TOPOLOGY_SCOPE: &str = "none";
/// `ErrorTopologyAffinity`: the rejection reason.
pub const ERROR_TOPOLOGY_AFFINITY: &str = "TopologyAffinityError";
/// `TopologyAffinityError.Error()`: the rejection message.
pub const TOPOLOGY_AFFINITY_MESSAGE: &str = "Resources cannot be allocated with Topology locality";
/// `admission.ErrorReasonUnexpected`.
pub const ERROR_REASON_UNEXPECTED: &str = "UnexpectedAdmissionError";
/// Upstream `metrics.AlignScopeContainer`.
pub const ALIGN_SCOPE_CONTAINER: &str = "container";
/// Upstream `metrics.AlignScopePod`.
pub const ALIGN_SCOPE_POD: &str = "pod";
/// Upstream `metrics.AlignedNUMANode`.
pub const ALIGNED_NUMA_NODE: &str = "numa_node";

/// An error of [`Manager::new`] (upstream's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NewManagerError {
    /// `topologyManagerPolicyOptions`.
    #[error(transparent)]
    Options(#[from] PolicyOptionsError),
    /// The NUMA topology (distances for `prefer-closest-numa-nodes`).
    #[error("cannot discover NUMA topology: {0}")]
    NumaInfo(#[from] NumaInfoError),
    /// More NUMA nodes than `max-allowable-numa-nodes`.
    #[error("unsupported on machines with more than {0} NUMA Nodes")]
    TooManyNumaNodes(usize),
    /// A policy name upstream does not know.
    #[error("unknown policy: \"{0}\"")]
    UnknownPolicy(String),
    /// A scope name upstream does not know.
    #[error("unknown scope: \"{0}\"")]
    UnknownScope(String),
}

/// `admission.GetPodAdmitResult`: admitted without an error; an admission error keeps
/// its reason and message, any other error is `UnexpectedAdmissionError`.
pub fn get_pod_admit_result(err: Option<&AllocateError>) -> PodAdmitResult {
    match err {
        None => PodAdmitResult::admit(),
        Some(AllocateError {
            reason: Some(reason),
            message,
        }) => PodAdmitResult::reject(reason.clone(), message.clone()),
        Some(AllocateError {
            reason: None,
            message,
        }) => PodAdmitResult::reject(
            ERROR_REASON_UNEXPECTED,
            format!("Allocate failed due to {message}, which is unexpected"),
        ),
    }
}

/// `TopologyAffinityError` as an admit result.
fn topology_affinity_error() -> PodAdmitResult {
    get_pod_admit_result(Some(&AllocateError {
        reason: Some(ERROR_TOPOLOGY_AFFINITY.to_owned()),
        message: TOPOLOGY_AFFINITY_MESSAGE.to_owned(),
    }))
}

fn metrics(f: impl FnOnce(&kubelet_metrics::ResourceManagerMetrics)) {
    kubelet_metrics::with(|m| f(&m.resource_managers));
}

fn aligned(scope: &str, ok: bool) {
    metrics(|m| {
        let family = if ok {
            &m.container_aligned_compute_resources
        } else {
            &m.container_aligned_compute_resources_failure
        };
        family.with_label_values(&[scope, ALIGNED_NUMA_NODE]).inc();
    });
}

fn admission_error() {
    metrics(|m| m.topology_manager_admission_errors_total.inc());
}

/// Which scope's `Admit` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScopeKind {
    None,
    Container,
    Pod,
}

/// Container id → (pod UID, container name) (upstream `containermap.ContainerMap`).
#[derive(Debug, Default)]
struct PodMap(BTreeMap<String, (String, String)>);

/// `podTopologyHints`: pod UID → container name → hint.
type PodTopologyHints = BTreeMap<String, BTreeMap<String, TopologyHint>>;

/// A scope (upstream `scope` with `containerScope`, `podScope` or `noneScope`).
struct Scope {
    kind: ScopeKind,
    policy: Box<dyn Policy>,
    pod_topology_hints: Mutex<PodTopologyHints>,
    hint_providers: RwLock<Vec<Arc<dyn HintProvider>>>,
    pod_map: Mutex<PodMap>,
}

impl Scope {
    fn new(kind: ScopeKind, policy: Box<dyn Policy>) -> Scope {
        Scope {
            kind,
            policy,
            pod_topology_hints: Mutex::new(BTreeMap::new()),
            hint_providers: RwLock::new(Vec::new()),
            pod_map: Mutex::new(PodMap::default()),
        }
    }

    fn name(&self) -> &'static str {
        match self.kind {
            ScopeKind::None => NONE_TOPOLOGY_SCOPE,
            ScopeKind::Container => CONTAINER_TOPOLOGY_SCOPE,
            ScopeKind::Pod => POD_TOPOLOGY_SCOPE,
        }
    }

    fn providers(&self) -> Vec<Arc<dyn HintProvider>> {
        self.hint_providers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn get_topology_hints(&self, pod_uid: &str, container_name: &str) -> TopologyHint {
        self.pod_topology_hints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(pod_uid)
            .and_then(|c| c.get(container_name))
            .copied()
            .unwrap_or_default()
    }

    fn set_topology_hints(&self, pod_uid: &str, container_name: &str, th: TopologyHint) {
        self.pod_topology_hints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(pod_uid.to_owned())
            .or_default()
            .insert(container_name.to_owned(), th);
    }

    fn add_container(&self, pod: &Pod, container: &Container, container_id: &str) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        self.pod_map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .insert(container_id.to_owned(), (uid, container.name.clone()));
    }

    fn remove_container(&self, container_id: &str) {
        tracing::info!(%container_id, "RemoveContainer");
        let mut pod_map = self.pod_map.lock().unwrap_or_else(PoisonError::into_inner);
        let Some((pod_uid, name)) = pod_map.0.remove(container_id) else {
            return;
        };
        // A restarted container may already be known under a new id: keep its hint.
        if pod_map.0.values().any(|(p, c)| *p == pod_uid && *c == name) {
            return;
        }
        let mut hints = self
            .pod_topology_hints
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(containers) = hints.get_mut(&pod_uid) {
            containers.remove(&name);
            if containers.is_empty() {
                hints.remove(&pod_uid);
            }
        }
    }

    /// `allocateAlignedResources`: every provider's `Allocate`, the first error returned.
    fn allocate_aligned_resources(
        &self,
        providers: &[Arc<dyn HintProvider>],
        pod: &Pod,
        container: &Container,
    ) -> Result<(), AllocateError> {
        for provider in providers {
            provider.allocate(pod, container)?;
        }
        Ok(())
    }

    fn admit(&self, pod: &Pod) -> PodAdmitResult {
        let providers = self.providers();
        let containers: Vec<&Container> = pod
            .spec
            .iter()
            .flat_map(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .chain(s.containers.iter())
            })
            .collect();
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        match self.kind {
            // `admitPolicyNone`: allocation only; its errors are not counted.
            ScopeKind::None => {
                for container in containers {
                    if let Err(err) = self.allocate_aligned_resources(&providers, pod, container) {
                        return get_pod_admit_result(Some(&err));
                    }
                }
                get_pod_admit_result(None)
            }
            ScopeKind::Container => {
                for container in containers {
                    let providers_hints: Vec<ResourceHints> = providers
                        .iter()
                        .map(|p| {
                            let hints = p.get_topology_hints(pod, container);
                            tracing::info!(?hints, pod = %pod_name, container_name = %container.name, "TopologyHints");
                            hints
                        })
                        .collect();
                    let (best_hint, admit) = self.policy.merge(&providers_hints);
                    tracing::info!(?best_hint, pod = %pod_name, container_name = %container.name, "Best TopologyHint");
                    if !admit {
                        if is_alignment_guaranteed(self.policy.as_ref()) {
                            aligned(ALIGN_SCOPE_CONTAINER, false);
                        }
                        admission_error();
                        return topology_affinity_error();
                    }
                    tracing::info!(?best_hint, pod = %pod_name, container_name = %container.name, "Topology Affinity");
                    self.set_topology_hints(uid, &container.name, best_hint);
                    if let Err(err) = self.allocate_aligned_resources(&providers, pod, container) {
                        admission_error();
                        return get_pod_admit_result(Some(&err));
                    }
                    if is_alignment_guaranteed(self.policy.as_ref()) {
                        tracing::debug!(pod = %pod_name, "Resource alignment at container scope guaranteed");
                        aligned(ALIGN_SCOPE_CONTAINER, true);
                    }
                }
                get_pod_admit_result(None)
            }
            ScopeKind::Pod => {
                let providers_hints: Vec<ResourceHints> = providers
                    .iter()
                    .map(|p| {
                        let hints = p.get_pod_topology_hints(pod);
                        tracing::info!(?hints, pod = %pod_name, "TopologyHints");
                        hints
                    })
                    .collect();
                let (best_hint, admit) = self.policy.merge(&providers_hints);
                tracing::info!(?best_hint, pod = %pod_name, "Best TopologyHint");
                if !admit {
                    if is_alignment_guaranteed(self.policy.as_ref()) {
                        aligned(ALIGN_SCOPE_POD, false);
                    }
                    admission_error();
                    return topology_affinity_error();
                }
                for container in containers {
                    tracing::info!(?best_hint, pod = %pod_name, container_name = %container.name, "Topology Affinity");
                    self.set_topology_hints(uid, &container.name, best_hint);
                    if let Err(err) = self.allocate_aligned_resources(&providers, pod, container) {
                        admission_error();
                        return get_pod_admit_result(Some(&err));
                    }
                }
                if is_alignment_guaranteed(self.policy.as_ref()) {
                    tracing::debug!(pod = %pod_name, "Resource alignment at pod scope guaranteed");
                    aligned(ALIGN_SCOPE_POD, true);
                }
                get_pod_admit_result(None)
            }
        }
    }
}

/// The topology manager (upstream `topologymanager.Manager`): the pod admit handler
/// the kubelet runs after the sysctl check, the store the hint providers read the merged
/// affinity from.
pub struct Manager {
    scope: Scope,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("policy", &self.scope.policy.name())
            .field("scope", &self.scope.name())
            .finish()
    }
}

impl Manager {
    /// `NewManager`: `topology` is cAdvisor's NUMA nodes (ids and distances),
    /// `gates` the policy-option gates. The `none` policy ignores the scope and the
    /// options.
    pub fn new(
        topology: &[NumaNode],
        topology_policy_name: &str,
        topology_scope_name: &str,
        topology_policy_options: &BTreeMap<String, String>,
        gates: OptionGates,
    ) -> Result<Manager, NewManagerError> {
        if topology_policy_name == POLICY_NONE {
            tracing::info!("Creating topology manager with none policy");
            return Ok(Manager {
                scope: Scope::new(ScopeKind::None, Box::new(NonePolicy)),
            });
        }
        let opts = PolicyOptions::new(topology_policy_options, gates)?;
        tracing::info!(
            topology_policy_name,
            topology_scope_name,
            topology_policy_options = ?opts,
            "Creating topology manager with policy per scope"
        );
        let numa_info = NumaInfo::new(topology, &opts)?;
        if numa_info.nodes.len() > opts.max_allowable_numa_nodes {
            return Err(NewManagerError::TooManyNumaNodes(
                opts.max_allowable_numa_nodes,
            ));
        }
        let policy: Box<dyn Policy> = match topology_policy_name {
            POLICY_BEST_EFFORT => Box::new(BestEffortPolicy::new(numa_info, opts)),
            POLICY_RESTRICTED => Box::new(RestrictedPolicy::new(numa_info, opts)),
            POLICY_SINGLE_NUMA_NODE => Box::new(SingleNumaNodePolicy::new(numa_info, opts)),
            other => return Err(NewManagerError::UnknownPolicy(other.to_owned())),
        };
        let kind = match topology_scope_name {
            CONTAINER_TOPOLOGY_SCOPE => ScopeKind::Container,
            POD_TOPOLOGY_SCOPE => ScopeKind::Pod,
            other => return Err(NewManagerError::UnknownScope(other.to_owned())),
        };
        // `initializeMetrics`: the alignment series exist from the start.
        metrics(|m| {
            for scope in [ALIGN_SCOPE_CONTAINER, ALIGN_SCOPE_POD] {
                for family in [
                    &m.container_aligned_compute_resources,
                    &m.container_aligned_compute_resources_failure,
                ] {
                    family
                        .with_label_values(&[scope, ALIGNED_NUMA_NODE])
                        .inc_by(0.0);
                }
            }
        });
        Ok(Manager {
            scope: Scope::new(kind, policy),
        })
    }

    /// The scope's name (`none` with the `none` policy).
    pub fn scope_name(&self) -> &'static str {
        self.scope.name()
    }

    /// `GetPolicy().Name()`.
    pub fn policy(&self) -> &dyn Policy {
        self.scope.policy.as_ref()
    }

    /// `AddHintProvider`: `provider` is asked for hints and allocates at every
    /// admission, after the providers added before it.
    pub fn add_hint_provider(&self, provider: Arc<dyn HintProvider>) {
        self.scope
            .hint_providers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(provider);
    }

    /// `AddContainer` (`PreStartContainer`): remembers the container's id.
    pub fn add_container(&self, pod: &Pod, container: &Container, container_id: &str) {
        self.scope.add_container(pod, container, container_id);
    }

    /// `RemoveContainer` (`PostStopContainer`): forgets the container's hint, unless
    /// the same container runs again under another id. Unknown ids are ignored.
    pub fn remove_container(&self, container_id: &str) {
        self.scope.remove_container(container_id);
    }

    /// `Admit` for one pod: counted and timed in `kubelet_topology_manager_admission_*`.
    pub fn admit_pod(&self, pod: &Pod) -> PodAdmitResult {
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        tracing::debug!(pod = %pod_name, "Topology manager admission check");
        metrics(|m| m.topology_manager_admission_requests_total.inc());
        let start = Instant::now();
        let result = self.scope.admit(pod);
        metrics(|m| {
            // Upstream observes whole milliseconds (`time.Since(startTime).Milliseconds()`).
            #[allow(clippy::cast_precision_loss)]
            let ms = start.elapsed().as_millis() as f64;
            m.topology_manager_admission_duration_ms.observe(ms);
        });
        tracing::debug!(message = %result.message, pod = %pod_name, "Pod Admit Result");
        result
    }
}

impl PodAdmitHandler for Manager {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        self.admit_pod(attrs.pod)
    }
}

/// The manager shared as the kubelet's pod admit handler (`GetAllocateResourcesPodAdmitHandler`).
#[derive(Clone, Debug)]
pub struct AdmitHandler(pub Arc<Manager>);

impl PodAdmitHandler for AdmitHandler {
    fn admit(&self, attrs: &PodAdmitAttributes<'_>) -> PodAdmitResult {
        self.0.admit_pod(attrs.pod)
    }
}

impl Store for Manager {
    fn get_affinity(&self, pod_uid: &str, container_name: &str) -> TopologyHint {
        self.scope.get_topology_hints(pod_uid, container_name)
    }

    fn policy_name(&self) -> String {
        self.scope.policy.name().to_owned()
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
