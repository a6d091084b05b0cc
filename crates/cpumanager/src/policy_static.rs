//! The `static` policy: upstream `policy_static.go` (exclusive CPUs for the
//! integer CPU requests of Guaranteed pods) and the topology hints it gives the
//! topology manager.
//!
//! The metrics upstream updates on start, allocation and release are recorded by
//! [`crate::metrics`], called from here and from the kubelet side ([`crate::kubelet`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_apimachinery::{CpuSet, Quantity};
use kubelet_container::helpers::is_restartable_init_container;
use kubelet_container::qos::{QosClass, get_pod_qos, is_pod_level_resources_set};
use kubelet_features::{FeatureGate, gates};

use crate::cpu_assignment::{
    AssignmentError, CPUSortingStrategy, take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
};
use crate::policy_options::{
    PolicyOptionsError, StaticPolicyOptions, validate_static_policy_options,
};
use crate::state::State;
use crate::topology::{Allocation, CPUTopology, TopologyError};
use kubelet_topologymanager::{BitMask, Store, TopologyHint, iterate_bit_masks};

/// `PolicyStatic`.
pub const POLICY_STATIC: &str = "static";
/// `ErrorSMTAlignment`: the admission failure reason of an [`SMTAlignmentError`].
pub const ERROR_SMT_ALIGNMENT: &str = "SMTAlignmentError";

/// Upstream `SMTAlignmentError`: `full-pcpus-only` refused the request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct SMTAlignmentError {
    /// `RequestedCPUs`.
    pub requested_cpus: usize,
    /// `CpusPerCore`.
    pub cpus_per_core: usize,
    /// `AvailablePhysicalCPUs`.
    pub available_physical_cpus: usize,
    /// `CausedByPhysicalCPUs`.
    pub caused_by_physical_cpus: bool,
}

impl SMTAlignmentError {
    fn message(&self) -> String {
        if self.caused_by_physical_cpus {
            format!(
                "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = {}, requested CPUs = {}, CPUs per core = {}",
                self.available_physical_cpus, self.requested_cpus, self.cpus_per_core
            )
        } else {
            format!(
                "SMT Alignment Error: requested {} cpus not multiple cpus per core = {}",
                self.requested_cpus, self.cpus_per_core
            )
        }
    }

    /// `Type`.
    pub fn type_name(&self) -> &'static str {
        ERROR_SMT_ALIGNMENT
    }
}

/// An error of the static policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaticPolicyError {
    /// Bad `cpuManagerPolicyOptions`.
    #[error(transparent)]
    Options(#[from] PolicyOptionsError),
    /// The reserved CPUs could not be picked.
    #[error(
        "[cpumanager] unable to reserve the required amount of CPUs (size of {reserved} did not equal {wanted})"
    )]
    Reserve {
        /// What was reserved.
        reserved: CpuSet,
        /// How many were wanted.
        wanted: usize,
    },
    /// A reserved CPU the topology does not have.
    #[error("[cpumanager] unable to build the reserved physical CPUs from the reserved set: {0}")]
    ReservedPhysical(TopologyError),
    /// `Start`: the state does not match the machine (upstream's messages).
    #[error("{0}")]
    InvalidState(String),
    /// `full-pcpus-only` refused the request.
    #[error(transparent)]
    SMTAlignment(#[from] SMTAlignmentError),
    /// Not enough CPUs.
    #[error(transparent)]
    Assignment(#[from] AssignmentError),
}

/// The static policy (upstream `staticPolicy`).
pub struct StaticPolicy<A: Store> {
    topology: CPUTopology,
    reserved_cpus: CpuSet,
    reserved_physical_cpus: CpuSet,
    affinity: A,
    cpus_to_reuse: BTreeMap<String, CpuSet>,
    options: StaticPolicyOptions,
    cpu_group_size: usize,
    pod_level_resources: bool,
}

impl<A: Store> StaticPolicy<A> {
    /// `NewStaticPolicy`: `reserved_cpus` when not empty (`reservedSystemCPUs`),
    /// else `num_reserved_cpus` picked by topology (kube+system reserved CPUs, rounded up).
    pub fn new(
        topology: CPUTopology,
        num_reserved_cpus: usize,
        reserved_cpus: &CpuSet,
        affinity: A,
        cpu_policy_options: &BTreeMap<String, String>,
        gate: &FeatureGate,
    ) -> Result<StaticPolicy<A>, StaticPolicyError> {
        let options = StaticPolicyOptions::new(cpu_policy_options, gate)?;
        validate_static_policy_options(&options, &topology, &affinity.policy_name())?;
        let cpu_group_size = topology.cpus_per_core();
        tracing::info!(?options, cpu_group_size, "created with configuration");
        let mut policy = StaticPolicy {
            topology,
            reserved_cpus: CpuSet::new(),
            reserved_physical_cpus: CpuSet::new(),
            affinity,
            cpus_to_reuse: BTreeMap::new(),
            options,
            cpu_group_size,
            pod_level_resources: gate.enabled(gates::POD_LEVEL_RESOURCES),
        };
        let all_cpus = policy.topology.cpu_details.cpus();
        let reserved = if reserved_cpus.is_empty() {
            policy
                .take_by_topology(&all_cpus, num_reserved_cpus)
                .unwrap_or_default()
        } else {
            reserved_cpus.clone()
        };
        if reserved.len() != num_reserved_cpus {
            return Err(StaticPolicyError::Reserve {
                reserved,
                wanted: num_reserved_cpus,
            });
        }
        let mut reserved_physical = CpuSet::new();
        for cpu in &reserved {
            let core = policy
                .topology
                .cpu_core_id(cpu)
                .map_err(StaticPolicyError::ReservedPhysical)?;
            reserved_physical =
                reserved_physical.union(&policy.topology.cpu_details.cpus_in_cores(&[core]));
        }
        tracing::info!(
            reserved_size = reserved.len(),
            %reserved,
            reserved_physical_cpus = %reserved_physical,
            "Reserved CPUs not available for exclusive assignment"
        );
        policy.reserved_cpus = reserved;
        policy.reserved_physical_cpus = reserved_physical;
        Ok(policy)
    }

    /// `Name`.
    pub fn name(&self) -> &'static str {
        POLICY_STATIC
    }

    /// The reserved CPUs.
    pub fn reserved_cpus(&self) -> &CpuSet {
        &self.reserved_cpus
    }

    /// The options.
    pub fn options(&self) -> &StaticPolicyOptions {
        &self.options
    }

    /// `Start`: validates (or initializes) the state.
    pub fn start(&mut self, s: &mut dyn State) -> Result<(), StaticPolicyError> {
        self.validate_state(s).inspect_err(|err| {
            tracing::error!(%err, "invalid state, please drain node and remove policy state file");
        })?;
        // `initializeMetrics`.
        crate::metrics::initialize(
            &self.topology,
            self.get_available_cpus(s).len(),
            &total_assigned_exclusive_cpus(s),
        );
        Ok(())
    }

    fn validate_state(&self, s: &mut dyn State) -> Result<(), StaticPolicyError> {
        let assignments = s.get_cpu_assignments();
        let default = s.get_default_cpu_set();
        let mut all_cpus = self.topology.cpu_details.cpus();
        if self.options.strict_cpu_reservation {
            all_cpus = all_cpus.difference(&self.reserved_cpus);
        }
        let invalid = |m: String| Err(StaticPolicyError::InvalidState(m));
        if default.is_empty() {
            if !assignments.is_empty() {
                return invalid("default cpuset cannot be empty".to_owned());
            }
            tracing::info!(default_cpu_set = %all_cpus, "Static policy initialized");
            s.set_default_cpu_set(all_cpus);
            return Ok(());
        }
        if self.options.strict_cpu_reservation {
            let overlap = self.reserved_cpus.intersection(&default);
            if !overlap.is_empty() {
                return invalid(format!(
                    "some of strictly reserved cpus: {:?} are present in defaultCpuSet: {:?}",
                    overlap.to_string(),
                    default.to_string()
                ));
            }
        } else if self.reserved_cpus.intersection(&default) != self.reserved_cpus {
            return invalid(format!(
                "not all reserved cpus: {:?} are present in defaultCpuSet: {:?}",
                self.reserved_cpus.to_string(),
                default.to_string()
            ));
        }
        for (pod, containers) in &assignments {
            for (container, cpus) in containers {
                if !default.intersection(cpus).is_empty() {
                    return invalid(format!(
                        "pod: {pod}, container: {container} cpuset: {:?} overlaps with default cpuset {:?}",
                        cpus.to_string(),
                        default.to_string()
                    ));
                }
            }
        }
        let total_known = assignments
            .values()
            .flat_map(|c| c.values())
            .fold(default.clone(), |acc, cpus| acc.union(cpus));
        if total_known != all_cpus {
            return invalid(format!(
                "current set of available CPUs {:?} doesn't match with CPUs in state {:?}",
                all_cpus.to_string(),
                total_known.to_string()
            ));
        }
        Ok(())
    }

    /// `GetAllocatableCPUs`: every CPU but the reserved ones.
    pub fn get_allocatable_cpus(&self, _s: &dyn State) -> CpuSet {
        self.topology
            .cpu_details
            .cpus()
            .difference(&self.reserved_cpus)
    }

    /// `GetAvailableCPUs`: the shared pool without the reserved CPUs.
    pub fn get_available_cpus(&self, s: &dyn State) -> CpuSet {
        s.get_default_cpu_set().difference(&self.reserved_cpus)
    }

    /// `GetAvailablePhysicalCPUs`: the shared pool without the reserved CPUs' cores.
    pub fn get_available_physical_cpus(&self, s: &dyn State) -> CpuSet {
        s.get_default_cpu_set()
            .difference(&self.reserved_physical_cpus)
    }

    fn update_cpus_to_reuse(&mut self, pod: &Pod, container: &Container, cpus: &CpuSet) {
        let uid = pod_uid(pod);
        self.cpus_to_reuse.retain(|k, _| *k == uid);
        let entry = self.cpus_to_reuse.entry(uid).or_default();
        for init in init_containers(pod) {
            if container.name == init.name {
                if is_restartable_init_container(init) {
                    // Sidecars keep their CPUs for the pod's lifetime: not reusable.
                    break;
                }
                *entry = entry.union(cpus);
                return;
            }
        }
        *entry = entry.difference(cpus);
    }

    /// `Allocate`: exclusive CPUs for the container when the pod is Guaranteed and
    /// the container requests an integer number of CPUs.
    pub fn allocate(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Result<(), StaticPolicyError> {
        let uid = pod_uid(pod);
        tracing::info!(pod_uid = %uid, container_name = %container.name, "Allocate start");
        let num_cpus = guaranteed_cpus(pod, container);
        if num_cpus == 0 {
            return Ok(());
        }
        if self.pod_level_resources && is_pod_level_resources_set(pod) {
            tracing::info!(
                "CPU Manager allocation skipped, pod is using pod-level resources which are not supported by the static CPU manager policy"
            );
            return Ok(());
        }
        tracing::info!("Static policy: Allocate");
        // The container needs exclusive CPUs: a pinning request, and its outcome counted
        // (upstream's deferred function).
        crate::metrics::pinning_requested();
        let result = self.allocate_exclusive(s, pod, container, num_cpus);
        crate::metrics::pinning_done(result.is_ok(), self.options.full_physical_cpus_only);
        result
    }

    /// The part of `Allocate` that pins `num_cpus` CPUs for the container.
    fn allocate_exclusive(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
        num_cpus: usize,
    ) -> Result<(), StaticPolicyError> {
        let uid = pod_uid(pod);
        if self.options.full_physical_cpus_only {
            let group = self.cpu_group_size.max(1);
            if !num_cpus.is_multiple_of(group) {
                return Err(SMTAlignmentError {
                    requested_cpus: num_cpus,
                    cpus_per_core: self.cpu_group_size,
                    available_physical_cpus: 0,
                    caused_by_physical_cpus: false,
                }
                .into());
            }
            let available = self.get_available_physical_cpus(s).len();
            if num_cpus > available {
                return Err(SMTAlignmentError {
                    requested_cpus: num_cpus,
                    cpus_per_core: self.cpu_group_size,
                    available_physical_cpus: available,
                    caused_by_physical_cpus: true,
                }
                .into());
            }
        }
        if let Some(cpus) = s.get_cpu_set(&uid, &container.name) {
            self.update_cpus_to_reuse(pod, container, &cpus);
            tracing::info!("Static policy: container already present in state, skipping");
            return Ok(());
        }
        let hint = self.affinity.get_affinity(&uid, &container.name);
        tracing::info!(?hint, "Topology Affinity");
        let reusable = self.cpus_to_reuse.get(&uid).cloned().unwrap_or_default();
        let allocation = self
            .allocate_cpus(s, num_cpus, hint.numa_node_affinity, &reusable)
            .inspect_err(|err| tracing::error!(%err, num_cpus, "Unable to allocate CPUs"))?;
        s.set_cpu_set(&uid, &container.name, allocation.cpus.clone());
        self.update_cpus_to_reuse(pod, container, &allocation.cpus);
        // `updateMetricsOnAllocate`.
        crate::metrics::on_allocate(
            &self.topology,
            allocation.cpus.len(),
            allocation.aligned.uncore_cache,
            &total_assigned_exclusive_cpus(s),
        );
        tracing::debug!(cpuset = %allocation.cpus, "Allocated exclusive CPUs");
        Ok(())
    }

    /// `RemoveContainer`: returns the container's CPUs (those no sibling still holds)
    /// to the shared pool.
    pub fn remove_container(&mut self, s: &mut dyn State, pod_uid: &str, container_name: &str) {
        let in_use = get_assigned_cpus_of_siblings(s, pod_uid, container_name);
        let Some(to_release) = s.get_cpu_set(pod_uid, container_name) else {
            return;
        };
        s.delete(pod_uid, container_name);
        let to_release = to_release.difference(&in_use);
        let updated = s.get_default_cpu_set().union(&to_release);
        s.set_default_cpu_set(updated.clone());
        // `updateMetricsOnRelease`.
        crate::metrics::on_release(
            &self.topology,
            &to_release,
            &total_assigned_exclusive_cpus(s),
        );
        tracing::info!(default_cpu_set = %updated, "RemoveContainer end");
    }

    fn allocate_cpus(
        &self,
        s: &mut dyn State,
        num_cpus: usize,
        numa_affinity: Option<BitMask>,
        reusable: &CpuSet,
    ) -> Result<Allocation, StaticPolicyError> {
        tracing::info!(num_cpus, socket = ?numa_affinity, "AllocateCPUs");
        let allocatable = self.get_available_cpus(s).union(reusable);
        let mut result = Allocation::empty();
        if let Some(mask) = numa_affinity {
            let aligned = self.get_aligned_cpus(mask, &allocatable);
            let n = num_cpus.min(aligned.len());
            let cpus = self.take_by_topology(&aligned, n)?;
            result.cpus = result.cpus.union(&cpus);
        }
        let remaining = self.take_by_topology(
            &allocatable.difference(&result.cpus),
            num_cpus - result.cpus.len(),
        )?;
        result.cpus = result.cpus.union(&remaining);
        result.aligned = self.topology.check_alignment(&result.cpus);
        s.set_default_cpu_set(s.get_default_cpu_set().difference(&result.cpus));
        tracing::info!(result = %result, "AllocateCPUs");
        Ok(result)
    }

    /// `podGuaranteedCPUs`: the CPUs the whole pod needs exclusively (init containers
    /// run one at a time; sidecars add up with the app containers).
    pub fn pod_guaranteed_cpus(&self, pod: &Pod) -> usize {
        let mut by_init = 0;
        let mut by_restartable_init = 0;
        for container in init_containers(pod) {
            if !requests_cpu(container) {
                continue;
            }
            let requested = guaranteed_cpus(pod, container);
            if is_restartable_init_container(container) {
                by_restartable_init += requested;
            } else if by_restartable_init + requested > by_init {
                by_init = by_restartable_init + requested;
            }
        }
        let by_app: usize = app_containers(pod)
            .iter()
            .filter(|c| requests_cpu(c))
            .map(|c| guaranteed_cpus(pod, c))
            .sum();
        by_init.max(by_app + by_restartable_init)
    }

    fn take_by_topology(
        &self,
        available: &CpuSet,
        num_cpus: usize,
    ) -> Result<CpuSet, AssignmentError> {
        let strategy = if self.options.distribute_cpus_across_cores {
            CPUSortingStrategy::Spread
        } else {
            CPUSortingStrategy::Packed
        };
        if self.options.distribute_cpus_across_numa {
            let group = if self.options.full_physical_cpus_only {
                self.cpu_group_size
            } else {
                1
            };
            return take_by_topology_numa_distributed(
                &self.topology,
                available,
                num_cpus,
                group,
                strategy,
            );
        }
        take_by_topology_numa_packed(
            &self.topology,
            available,
            num_cpus,
            strategy,
            self.options.prefer_align_by_uncore_cache_option,
        )
    }

    /// `GetTopologyHints` for one container: `None` when the policy has no say
    /// (upstream's nil map), else the hints for `cpu`.
    pub fn get_topology_hints(
        &self,
        s: &dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Option<Vec<TopologyHint>> {
        let requested = guaranteed_cpus(pod, container);
        if requested == 0 {
            return None;
        }
        if self.pod_level_resources && is_pod_level_resources_set(pod) {
            return None;
        }
        let uid = pod_uid(pod);
        if let Some(allocated) = s.get_cpu_set(&uid, &container.name) {
            if allocated.len() != requested {
                tracing::info!(
                    requested_size = requested,
                    allocated_size = allocated.len(),
                    "CPUs already allocated to container with different number than request"
                );
                return Some(Vec::new());
            }
            tracing::info!("Regenerating TopologyHints for CPUs already allocated");
            return Some(self.generate_cpu_topology_hints(&allocated, &CpuSet::new(), requested));
        }
        let available = self.get_available_cpus(s);
        let reusable = self.cpus_to_reuse.get(&uid).cloned().unwrap_or_default();
        Some(self.generate_cpu_topology_hints(&available, &reusable, requested))
    }

    /// `GetPodTopologyHints` (topology manager `pod` scope).
    pub fn get_pod_topology_hints(&self, s: &dyn State, pod: &Pod) -> Option<Vec<TopologyHint>> {
        let requested = self.pod_guaranteed_cpus(pod);
        if requested == 0 {
            return None;
        }
        if self.pod_level_resources && is_pod_level_resources_set(pod) {
            return None;
        }
        let uid = pod_uid(pod);
        let mut assigned = CpuSet::new();
        for container in init_containers(pod).iter().chain(app_containers(pod)) {
            let by_container = guaranteed_cpus(pod, container);
            if let Some(allocated) = s.get_cpu_set(&uid, &container.name) {
                if allocated.len() != by_container {
                    return Some(Vec::new());
                }
                assigned = assigned.union(&allocated);
            }
        }
        if assigned.len() == requested {
            return Some(self.generate_cpu_topology_hints(&assigned, &CpuSet::new(), requested));
        }
        let available = self.get_available_cpus(s);
        let reusable = self
            .cpus_to_reuse
            .get(&uid)
            .cloned()
            .unwrap_or_default()
            .union(&assigned);
        Some(self.generate_cpu_topology_hints(&available, &reusable, requested))
    }

    /// `generateCPUTopologyHints`: every NUMA node mask that can hold the request
    /// (and all of `reusable`), preferred when of the smallest size that could.
    pub fn generate_cpu_topology_hints(
        &self,
        available: &CpuSet,
        reusable: &CpuSet,
        request: usize,
    ) -> Vec<TopologyHint> {
        let details = &self.topology.cpu_details;
        let numa_nodes = details.numa_nodes().to_vec();
        let mut min_affinity_size = numa_nodes.len();
        let mut hints = Vec::new();
        let numa_of = |cpu: usize| details.get(cpu).map_or(0, |i| i.numa_node_id);
        iterate_bit_masks(&numa_nodes, &mut |mask| {
            let cpus_in_mask = details.cpus_in_numa_nodes(&mask.bits()).len();
            if cpus_in_mask >= request && mask.count() < min_affinity_size {
                min_affinity_size = mask.count();
            }
            let mut matching = 0;
            for cpu in reusable {
                if !mask.is_set(numa_of(cpu)) {
                    return;
                }
                matching += 1;
            }
            matching += available
                .iter()
                .filter(|c| mask.is_set(numa_of(*c)))
                .count();
            if matching < request {
                return;
            }
            hints.push(TopologyHint {
                numa_node_affinity: Some(mask),
                preferred: false,
            });
        });
        for hint in &mut hints {
            let Some(mask) = hint.numa_node_affinity else {
                continue;
            };
            if self.options.align_by_socket && self.is_hint_socket_aligned(mask, min_affinity_size)
            {
                hint.preferred = true;
                continue;
            }
            if mask.count() == min_affinity_size {
                hint.preferred = true;
            }
        }
        hints
    }

    fn is_hint_socket_aligned(&self, mask: BitMask, min_affinity_size: usize) -> bool {
        let per_socket = self
            .topology
            .num_numa_nodes
            .checked_div(self.topology.num_sockets)
            .unwrap_or(0);
        if per_socket == 0 {
            return false;
        }
        let min_sockets = min_affinity_size.div_ceil(per_socket);
        self.topology
            .cpu_details
            .sockets_in_numa_nodes(&mask.bits())
            .len()
            == min_sockets
    }

    fn get_aligned_cpus(&self, mask: BitMask, allocatable: &CpuSet) -> CpuSet {
        let details = &self.topology.cpu_details;
        let numa_bits = mask.bits();
        if self.options.align_by_socket {
            let sockets = details.sockets_in_numa_nodes(&numa_bits);
            return allocatable.intersection(&details.cpus_in_sockets(&sockets.to_vec()));
        }
        allocatable.intersection(&details.cpus_in_numa_nodes(&numa_bits))
    }
}

fn pod_uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
}

fn app_containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

fn cpu_request(container: &Container) -> Option<Quantity> {
    let q = container
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get("cpu")?;
    Quantity::parse(&q.0).ok()
}

fn requests_cpu(container: &Container) -> bool {
    container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| r.contains_key("cpu"))
}

/// `guaranteedCPUs`: the container's integer CPU request when the pod is Guaranteed, else 0.
pub fn guaranteed_cpus(pod: &Pod, container: &Container) -> usize {
    if get_pod_qos(pod) != QosClass::Guaranteed {
        return 0;
    }
    let Some(q) = cpu_request(container) else {
        return 0;
    };
    let value = q.value();
    if value.checked_mul(1000) != Some(q.milli_value()) {
        return 0;
    }
    usize::try_from(value).unwrap_or(0)
}

/// `getAssignedCPUsOfSiblings`.
/// `getTotalAssignedExclusiveCPUs`: every CPU some container holds exclusively.
fn total_assigned_exclusive_cpus(s: &dyn State) -> CpuSet {
    s.get_cpu_assignments()
        .values()
        .flat_map(|containers| containers.values())
        .fold(CpuSet::new(), |acc, cpus| acc.union(cpus))
}

fn get_assigned_cpus_of_siblings(s: &dyn State, pod_uid: &str, container_name: &str) -> CpuSet {
    s.get_cpu_assignments()
        .get(pod_uid)
        .map(|containers| {
            containers
                .iter()
                .filter(|(name, _)| name.as_str() != container_name)
                .fold(CpuSet::new(), |acc, (_, cpus)| acc.union(cpus))
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "policy_static_tests.rs"]
mod tests;
