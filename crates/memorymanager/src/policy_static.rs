//! The `Static` policy: upstream `policy_static.go` (v1.35.4).
//!
//! Guaranteed pods get their `memory` and `hugepages-<size>` requests reserved on the
//! NUMA nodes of the topology manager's affinity (or the narrowest node group that fits,
//! grown when the affinity cannot hold the request); nodes used together form a group
//! (`cells`) no other allocation may partly overlap. Memory of regular init containers
//! is reused by the containers that follow them.
//!
//! Differences: where upstream dereferences a NUMA node or a memory resource missing
//! from the machine state (a Go nil-pointer panic), this skips it or counts it as 0.
//! Resources and nodes are visited in sorted order where upstream ranges over Go maps
//! (the blocks of a container are sorted by resource name).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_container::helpers::is_restartable_init_container;
use kubelet_container::qos::{QosClass, get_pod_qos, is_pod_level_resources_set};
use kubelet_features::{FeatureGate, gates};
use kubelet_topologymanager::{BitMask, ResourceHints, Store, TopologyHint, iterate_bit_masks};

use crate::policy::{Policy, PolicyError};
use crate::state::{Block, MemoryTable, NUMANodeMap, NUMANodeState, State};
use crate::sysfs::MachineInfo;

/// Upstream `PolicyTypeStatic`.
pub const POLICY_STATIC: &str = "Static";

/// `v1.ResourceMemory`.
pub const RESOURCE_MEMORY: &str = "memory";

/// Upstream `systemReservedMemory`: NUMA node → resource → bytes.
pub type SystemReservedMemory = BTreeMap<usize, BTreeMap<String, u64>>;

/// Upstream `reusableMemory`: pod UID → NUMA affinity → resource → bytes.
type ReusableMemory = BTreeMap<String, BTreeMap<BitMask, BTreeMap<String, u64>>>;

/// Upstream `staticPolicy`.
pub struct StaticPolicy {
    machine_info: MachineInfo,
    system_reserved: SystemReservedMemory,
    affinity: Arc<dyn Store>,
    init_containers_reusable_memory: ReusableMemory,
    pod_level_resources: bool,
}

/// `corehelper.IsHugePageResourceName`.
pub fn is_huge_page_resource_name(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `quantity.AsInt64`: the value when it is a whole number within int64.
pub fn quantity_as_i64(q: &kubelet_apimachinery::Quantity) -> Option<i64> {
    let (mantissa, exponent) = q.to_parts();
    if exponent < 0 {
        return None;
    }
    let scale = 10i128.checked_pow(u32::try_from(exponent).ok()?)?;
    i64::try_from(mantissa.checked_mul(scale)?).ok()
}

/// `getRequestedResources`: the container's `memory` and `hugepages-*` requests.
pub fn get_requested_resources(
    container: &Container,
) -> Result<BTreeMap<String, u64>, PolicyError> {
    let mut out = BTreeMap::new();
    let requests = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref());
    for (name, quantity) in requests.into_iter().flatten() {
        if name != RESOURCE_MEMORY && !is_huge_page_resource_name(name) {
            continue;
        }
        let size = kubelet_apimachinery::Quantity::parse(&quantity.0)
            .ok()
            .and_then(|q| quantity_as_i64(&q))
            .ok_or(PolicyError::QuantityNotInt)?;
        // uint64(requestedSize)
        out.insert(name.clone(), size as u64);
    }
    Ok(out)
}

/// `getPodRequestedResources`: per resource, the larger of the long-running containers'
/// sum (app and restartable init containers) and the largest regular init container's
/// need (plus the restartable init containers started before it).
pub fn get_pod_requested_resources(pod: &Pod) -> Result<BTreeMap<String, u64>, PolicyError> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(BTreeMap::new());
    };
    let mut by_init: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_restartable_init: BTreeMap<String, u64> = BTreeMap::new();
    for ctr in spec.init_containers.iter().flatten() {
        for (name, qty) in get_requested_resources(ctr)? {
            let init = by_init.entry(name.clone()).or_insert(0);
            let restartable = by_restartable_init.entry(name).or_insert(0);
            if is_restartable_init_container(ctr) {
                *restartable = restartable.wrapping_add(qty);
            } else if restartable.wrapping_add(qty) > *init {
                *init = restartable.wrapping_add(qty);
            }
        }
    }
    let mut by_app: BTreeMap<String, u64> = BTreeMap::new();
    for ctr in &spec.containers {
        for (name, qty) in get_requested_resources(ctr)? {
            let v = by_app.entry(name).or_insert(0);
            *v = v.wrapping_add(qty);
        }
    }
    let mut out = BTreeMap::new();
    for (name, app) in by_app {
        let long_running = app.wrapping_add(by_restartable_init.get(&name).copied().unwrap_or(0));
        let init = by_init.get(&name).copied().unwrap_or(0);
        out.insert(name, long_running.max(init));
    }
    Ok(out)
}

fn table<'a>(ms: &'a NUMANodeMap, node: usize, resource: &str) -> Option<&'a MemoryTable> {
    ms.get(&node).and_then(|n| n.memory_map.get(resource))
}

/// `areGroupsEqual` (as sets of sorted ids).
pub fn are_groups_equal(group1: &[usize], group2: &[usize]) -> bool {
    let mut a = group1.to_vec();
    let mut b = group2.to_vec();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

/// `isHintInGroup`: every id of `hint` is in `group`.
pub fn is_hint_in_group(hint: &[usize], group: &[usize]) -> bool {
    let mut hint = hint.to_vec();
    let mut group = group.to_vec();
    hint.sort_unstable();
    group.sort_unstable();
    let mut idx = 0;
    for g in &group {
        if idx == hint.len() {
            return true;
        }
        if *g != hint[idx] {
            continue;
        }
        idx += 1;
    }
    idx == hint.len()
}

/// `bitmask.IsNarrowerThan`: fewer nodes, or as many and a lower mask.
fn is_narrower_than(a: BitMask, b: BitMask) -> bool {
    if a.count() == b.count() {
        return a.0 < b.0;
    }
    a.count() < b.count()
}

/// `findBestHint`: a preferred hint first, then the narrowest.
pub fn find_best_hint(hints: &[TopologyHint]) -> TopologyHint {
    let mut best = TopologyHint::default();
    for hint in hints {
        let Some(best_mask) = best.numa_node_affinity else {
            best = *hint;
            continue;
        };
        if hint.preferred && !best.preferred {
            best = *hint;
            continue;
        }
        if hint.preferred == best.preferred
            && hint
                .numa_node_affinity
                .is_some_and(|m| is_narrower_than(m, best_mask))
        {
            best = *hint;
        }
    }
    best
}

/// `isAffinitySatisfyRequest`: the mask's nodes have enough free memory of every
/// requested resource.
pub fn is_affinity_satisfy_request(
    ms: &NUMANodeMap,
    mask: BitMask,
    requested: &BTreeMap<String, u64>,
) -> bool {
    requested.iter().all(|(name, size)| {
        let free = mask
            .bits()
            .iter()
            .map(|n| table(ms, *n, name).map_or(0, |t| t.free))
            .fold(0u64, u64::wrapping_add);
        free >= *size
    })
}

/// `isAffinityViolatingNUMAAllocations`: a multi-node mask overlaps a node used alone
/// or by another group.
pub fn is_affinity_violating_numa_allocations(ms: &NUMANodeMap, mask: BitMask) -> bool {
    let bits = mask.bits();
    let single = bits.len() == 1;
    for node in &bits {
        let Some(state) = ms.get(node) else {
            continue;
        };
        if state.number_of_assignments == 0 || single {
            continue;
        }
        if state.cells.len() == 1 || !are_groups_equal(&state.cells, &bits) {
            return true;
        }
    }
    false
}

/// `updateMachineState`: the request taken from the nodes' free memory, in order.
fn update_machine_state(ms: &mut NUMANodeMap, affinity: &[usize], resource: &str, mut size: u64) {
    for node in affinity {
        let Some(state) = ms.get_mut(node) else {
            continue;
        };
        state.number_of_assignments += 1;
        state.cells = affinity.to_vec();
        if size == 0 {
            continue;
        }
        let Some(t) = state.memory_map.get_mut(resource) else {
            continue;
        };
        if t.free == 0 {
            continue;
        }
        if t.free >= size {
            t.reserved += size;
            t.free -= size;
            size = 0;
            continue;
        }
        size -= t.free;
        t.reserved += t.free;
        t.free = 0;
    }
}

fn is_regular_init_container(pod: &Pod, container: &Container) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .and_then(|inits| inits.iter().find(|c| c.name == container.name))
        .is_some_and(|c| !is_restartable_init_container(c))
}

fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

impl StaticPolicy {
    /// `NewPolicyStatic`: some `memory` must be reserved.
    pub fn new(
        machine_info: MachineInfo,
        reserved: SystemReservedMemory,
        affinity: Arc<dyn Store>,
        gate: &FeatureGate,
    ) -> Result<StaticPolicy, PolicyError> {
        let total: u64 = reserved
            .values()
            .filter_map(|n| n.get(RESOURCE_MEMORY))
            .fold(0, |a, b| a.wrapping_add(*b));
        if total == 0 {
            return Err(PolicyError::NoSystemReserved);
        }
        Ok(StaticPolicy {
            machine_info,
            system_reserved: reserved,
            affinity,
            init_containers_reusable_memory: ReusableMemory::new(),
            pod_level_resources: gate.enabled(gates::POD_LEVEL_RESOURCES),
        })
    }

    fn skips_pod_level_resources(&self, pod: &Pod) -> bool {
        self.pod_level_resources && is_pod_level_resources_set(pod)
    }

    fn allocate_inner(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Result<(), PolicyError> {
        let uid = pod_uid(pod);
        if let Some(blocks) = s.get_memory_blocks(uid, &container.name) {
            self.update_pod_reusable_memory(pod, container, &blocks);
            tracing::info!(pod_uid = uid, container = %container.name, "Container already present in state, skipping");
            return Ok(());
        }
        let hint = self.affinity.get_affinity(uid, &container.name);
        tracing::info!(pod_uid = uid, container = %container.name, ?hint, "Got topology affinity");
        let requested = get_requested_resources(container)?;
        let mut machine_state = s.get_machine_state();
        let mut best = hint;
        if hint.numa_node_affinity.is_none() {
            let default = self.get_default_hint(&machine_state, pod, &requested)?;
            if !default.preferred && best.preferred {
                return Err(PolicyError::NoDefaultPreferredHint);
            }
            best = default;
        }
        let mask = best.numa_node_affinity.unwrap_or_default();
        if !is_affinity_satisfy_request(&machine_state, mask, &requested) {
            let extended =
                self.extend_topology_manager_hint(&machine_state, pod, &requested, mask)?;
            if !extended.preferred && best.preferred {
                return Err(PolicyError::NoExtendedPreferredHint);
            }
            best = extended;
        }
        let mask = best.numa_node_affinity.unwrap_or_default();
        if is_affinity_violating_numa_allocations(&machine_state, mask) {
            return Err(PolicyError::HintViolatesNumaAllocation);
        }
        let bits = mask.bits();
        let mut blocks = Vec::new();
        for (name, size) in &requested {
            blocks.push(Block {
                numa_affinity: bits.clone(),
                type_: name.clone(),
                size: *size,
            });
            let reusable = self.get_pod_reusable_memory(pod, mask, name);
            let size = size.saturating_sub(reusable);
            update_machine_state(&mut machine_state, &bits, name, size);
        }
        self.update_pod_reusable_memory(pod, container, &blocks);
        s.set_machine_state(machine_state);
        s.set_memory_blocks(uid, &container.name, blocks.clone());
        self.update_init_containers_memory_blocks(s, pod, container, &blocks);
        tracing::debug!(pod_uid = uid, container = %container.name, "Allocated exclusive memory");
        Ok(())
    }

    fn get_pod_reusable_memory(&self, pod: &Pod, mask: BitMask, resource: &str) -> u64 {
        self.init_containers_reusable_memory
            .get(pod_uid(pod))
            .and_then(|p| p.get(&mask))
            .and_then(|m| m.get(resource))
            .copied()
            .unwrap_or(0)
    }

    /// `calculateHints`.
    fn calculate_hints(
        &self,
        ms: &NUMANodeMap,
        pod: &Pod,
        requested: &BTreeMap<String, u64>,
    ) -> ResourceHints {
        let numa_nodes: Vec<usize> = ms.keys().copied().collect();
        let mut min_affinity_size = numa_nodes.len();
        let mut hints = ResourceHints::new();
        iterate_bit_masks(&numa_nodes, &mut |mask: BitMask| {
            let bits = mask.bits();
            let single = bits.len() == 1;
            let total = |f: fn(&MemoryTable) -> u64, name: &str| {
                bits.iter()
                    .map(|n| table(ms, *n, name).map_or(0, f))
                    .fold(0u64, u64::wrapping_add)
            };
            if requested
                .iter()
                .any(|(name, size)| total(|t| t.allocatable, name) < *size)
            {
                return;
            }
            if mask.count() < min_affinity_size {
                min_affinity_size = mask.count();
            }
            if single && ms.get(&bits[0]).is_some_and(|n| n.cells.len() > 1) {
                return;
            }
            for node in &bits {
                let Some(state) = ms.get(node) else {
                    continue;
                };
                if !single
                    && state.number_of_assignments > 0
                    && (state.cells.len() == 1 || !are_groups_equal(&state.cells, &bits))
                {
                    return;
                }
            }
            for (name, size) in requested {
                let reusable = self.get_pod_reusable_memory(pod, mask, name);
                if total(|t| t.free, name).wrapping_add(reusable) < *size {
                    return;
                }
            }
            for name in requested.keys() {
                hints
                    .entry(name.clone())
                    .or_insert_with(|| Some(Vec::new()))
                    .get_or_insert_with(Vec::new)
                    .push(TopologyHint {
                        numa_node_affinity: Some(mask),
                        preferred: false,
                    });
            }
        });
        for list in hints.values_mut().flatten() {
            for hint in list {
                hint.preferred = hint
                    .numa_node_affinity
                    .is_some_and(|m| m.count() == min_affinity_size);
            }
        }
        hints
    }

    fn get_default_hint(
        &self,
        ms: &NUMANodeMap,
        pod: &Pod,
        requested: &BTreeMap<String, u64>,
    ) -> Result<TopologyHint, PolicyError> {
        let hints = self.calculate_hints(ms, pod, requested);
        if hints.is_empty() {
            return Err(PolicyError::NoDefaultAffinity);
        }
        let memory = hints
            .get(RESOURCE_MEMORY)
            .cloned()
            .flatten()
            .unwrap_or_default();
        Ok(find_best_hint(&memory))
    }

    fn extend_topology_manager_hint(
        &self,
        ms: &NUMANodeMap,
        pod: &Pod,
        requested: &BTreeMap<String, u64>,
        mask: BitMask,
    ) -> Result<TopologyHint, PolicyError> {
        let hints = self.calculate_hints(ms, pod, requested);
        let filtered: Vec<TopologyHint> = hints
            .get(RESOURCE_MEMORY)
            .cloned()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .filter(|h| {
                let bits = h.numa_node_affinity.unwrap_or_default().bits();
                is_hint_in_group(&mask.bits(), &bits)
            })
            .collect();
        if filtered.is_empty() {
            return Err(PolicyError::CannotExtendHint);
        }
        Ok(find_best_hint(&filtered))
    }

    /// `getDefaultMachineState`: every node's memory and hugepages, less the reserved.
    pub fn get_default_machine_state(&self) -> NUMANodeMap {
        let mut ms = NUMANodeMap::new();
        for node in &self.machine_info.topology {
            let mut state = NUMANodeState {
                number_of_assignments: 0,
                memory_map: BTreeMap::new(),
                cells: vec![node.id],
            };
            let mut hugepages_total: Option<u64> = None;
            for hp in &node.huge_pages {
                let page_bytes = hp.page_size.wrapping_mul(1024);
                let name = kubelet_cm::capacity::huge_page_resource_name(
                    i64::try_from(page_bytes).unwrap_or(i64::MAX),
                );
                let reserved = self.get_resource_system_reserved(node.id, &name);
                let total = hp.num_pages.wrapping_mul(page_bytes);
                let allocatable = total.wrapping_sub(reserved);
                state.memory_map.insert(
                    name,
                    MemoryTable {
                        total_mem_size: total,
                        system_reserved: reserved,
                        allocatable,
                        reserved: 0,
                        free: allocatable,
                    },
                );
                hugepages_total = Some(hugepages_total.unwrap_or(0).wrapping_add(total));
            }
            let reserved = self.get_resource_system_reserved(node.id, RESOURCE_MEMORY);
            let allocatable = node
                .memory
                .wrapping_sub(reserved)
                .wrapping_sub(hugepages_total.unwrap_or(0));
            state.memory_map.insert(
                RESOURCE_MEMORY.to_owned(),
                MemoryTable {
                    total_mem_size: node.memory,
                    system_reserved: reserved,
                    allocatable,
                    reserved: 0,
                    free: allocatable,
                },
            );
            ms.insert(node.id, state);
        }
        ms
    }

    fn get_resource_system_reserved(&self, node: usize, resource: &str) -> u64 {
        self.system_reserved
            .get(&node)
            .and_then(|n| n.get(resource))
            .copied()
            .unwrap_or(0)
    }

    /// `validateState`.
    fn validate_state(&self, s: &mut dyn State) -> Result<(), PolicyError> {
        let ms = s.get_machine_state();
        let assignments = s.get_memory_assignments();
        if ms.is_empty() {
            if !assignments.is_empty() {
                return Err(PolicyError::EmptyMachineState);
            }
            s.set_machine_state(self.get_default_machine_state());
            return Ok(());
        }
        let mut expected = self.get_default_machine_state();
        for (pod, containers) in &assignments {
            for (container, blocks) in containers {
                for b in blocks {
                    let mut size = b.size;
                    for node in &b.numa_affinity {
                        let Some(state) = expected.get_mut(node) else {
                            return Err(PolicyError::UnknownNumaNode {
                                pod: pod.clone(),
                                container: container.clone(),
                            });
                        };
                        state.number_of_assignments += 1;
                        state.cells = b.numa_affinity.clone();
                        let Some(t) = state.memory_map.get_mut(&b.type_) else {
                            return Err(PolicyError::UnknownResource {
                                pod: pod.clone(),
                                container: container.clone(),
                            });
                        };
                        if size == 0 || t.free == 0 {
                            continue;
                        }
                        if t.free >= size {
                            t.reserved += size;
                            t.free -= size;
                            size = 0;
                            continue;
                        }
                        size -= t.free;
                        t.reserved += t.free;
                        t.free = 0;
                    }
                }
            }
        }
        if !are_machine_states_equal(&ms, &expected) {
            return Err(PolicyError::MachineStateDiffers);
        }
        Ok(())
    }

    /// `updatePodReusableMemory`.
    fn update_pod_reusable_memory(&mut self, pod: &Pod, container: &Container, blocks: &[Block]) {
        let uid = pod_uid(pod).to_owned();
        // Only the pod being admitted keeps reusable memory.
        self.init_containers_reusable_memory
            .retain(|k, _| *k == uid);
        if is_regular_init_container(pod, container) {
            let pod_map = self.init_containers_reusable_memory.entry(uid).or_default();
            for b in blocks {
                let entry = pod_map
                    .entry(BitMask::new(&b.numa_affinity))
                    .or_default()
                    .entry(b.type_.clone())
                    .or_insert(0);
                if b.size > *entry {
                    *entry = b.size;
                }
            }
            return;
        }
        for b in blocks {
            let mask = BitMask::new(&b.numa_affinity);
            let reusable = self.get_pod_reusable_memory(pod, mask, &b.type_);
            if reusable == 0 {
                continue;
            }
            if let Some(v) = self
                .init_containers_reusable_memory
                .get_mut(&uid)
                .and_then(|p| p.get_mut(&mask))
                .and_then(|m| m.get_mut(&b.type_))
            {
                *v = if b.size >= reusable { 0 } else { *v - b.size };
            }
        }
    }

    /// `updateInitContainersMemoryBlocks`: the memory a container takes over from the
    /// init containers before it is subtracted from their blocks.
    fn update_init_containers_memory_blocks(
        &self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
        blocks: &[Block],
    ) {
        let uid = pod_uid(pod);
        let inits = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or_default();
        for block in blocks {
            let mut size = block.size;
            for init in inits {
                if init.name == container.name || size == 0 {
                    break;
                }
                if is_restartable_init_container(init) {
                    continue;
                }
                let Some(mut init_blocks) = s.get_memory_blocks(uid, &init.name) else {
                    continue;
                };
                if init_blocks.is_empty() {
                    continue;
                }
                for ib in &mut init_blocks {
                    if ib.size == 0
                        || ib.type_ != block.type_
                        || BitMask::new(&ib.numa_affinity) != BitMask::new(&block.numa_affinity)
                    {
                        continue;
                    }
                    if ib.size > size {
                        ib.size -= size;
                        size = 0;
                    } else {
                        size -= ib.size;
                        ib.size = 0;
                    }
                }
                s.set_memory_blocks(uid, &init.name, init_blocks);
            }
        }
    }
}

/// `regenerateHints`: the hints of memory already allocated (empty when the allocation
/// does not match the request).
fn regenerate_hints(
    container: &Container,
    blocks: &[Block],
    requested: &BTreeMap<String, u64>,
) -> ResourceHints {
    let mut hints: ResourceHints = requested
        .keys()
        .map(|k| (k.clone(), Some(Vec::new())))
        .collect();
    if blocks.len() != requested.len() {
        tracing::info!(container = %container.name, "The number of requested resources by the container differs from the number of memory blocks");
        return ResourceHints::new();
    }
    for b in blocks {
        let Some(size) = requested.get(&b.type_) else {
            tracing::info!(container = %container.name, r#type = %b.type_, "Container requested resources but none available of this type");
            return ResourceHints::new();
        };
        if b.size != *size {
            tracing::info!(container = %container.name, r#type = %b.type_, requested = size, allocated = b.size, "Memory already allocated with different numbers than requested");
            return ResourceHints::new();
        }
        tracing::info!(resource = %b.type_, container = %container.name, "Regenerating TopologyHints, resource was already allocated to pod");
        if let Some(Some(list)) = hints.get_mut(&b.type_) {
            list.push(TopologyHint {
                numa_node_affinity: Some(BitMask::new(&b.numa_affinity)),
                preferred: true,
            });
        }
    }
    hints
}

/// `areMachineStatesEqual`.
pub fn are_machine_states_equal(ms1: &NUMANodeMap, ms2: &NUMANodeMap) -> bool {
    if ms1.len() != ms2.len() {
        tracing::info!(
            length_node1 = ms1.len(),
            length_node2 = ms2.len(),
            "Node states were different"
        );
        return false;
    }
    for (node, s1) in ms1 {
        let Some(s2) = ms2.get(node) else {
            tracing::info!(node_id = node, "Node state didn't have node ID");
            return false;
        };
        if s1.number_of_assignments != s2.number_of_assignments {
            tracing::info!(
                assignment1 = s1.number_of_assignments,
                assignment2 = s2.number_of_assignments,
                "Node state had a different number of memory assignments."
            );
            return false;
        }
        if !are_groups_equal(&s1.cells, &s2.cells) {
            tracing::info!(state_node1 = ?s1.cells, state_node2 = ?s2.cells, "Node states had different groups");
            return false;
        }
        if s1.memory_map.len() != s2.memory_map.len() {
            tracing::info!("Node state had memory maps of different lengths");
            return false;
        }
        for (resource, t1) in &s1.memory_map {
            let Some(t2) = s2.memory_map.get(resource) else {
                tracing::info!(resource = %resource, "Memory state didn't have resource");
                return false;
            };
            if t1.total_mem_size != t2.total_mem_size
                || t1.system_reserved != t2.system_reserved
                || t1.allocatable != t2.allocatable
            {
                tracing::info!(node = node, resource = %resource, ?t1, ?t2, "Memory states for the NUMA node and resource are different");
                return false;
            }
            let sum = |ms: &NUMANodeMap, f: fn(&MemoryTable) -> u64| {
                s1.cells
                    .iter()
                    .map(|n| table(ms, *n, resource).map_or(0, f))
                    .fold(0u64, u64::wrapping_add)
            };
            if sum(ms1, |t| t.free) != sum(ms2, |t| t.free)
                || sum(ms1, |t| t.reserved) != sum(ms2, |t| t.reserved)
            {
                tracing::info!(node = node, resource = %resource, ?t1, ?t2, "NUMA node and resource had different memory states");
                return false;
            }
        }
    }
    true
}

impl Policy for StaticPolicy {
    fn name(&self) -> &'static str {
        POLICY_STATIC
    }

    fn start(&mut self, s: &mut dyn State) -> Result<(), PolicyError> {
        self.validate_state(s).inspect_err(|err| {
            tracing::error!(%err, "Invalid state, please drain node and remove policy state file");
        })
    }

    fn allocate(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Result<(), PolicyError> {
        let qos = get_pod_qos(pod);
        if qos != QosClass::Guaranteed {
            tracing::trace!(
                ?qos,
                "Exclusive memory allocation skipped, pod QoS is not guaranteed"
            );
            return Ok(());
        }
        if self.skips_pod_level_resources(pod) {
            tracing::debug!(
                pod_uid = pod_uid(pod),
                "Allocation skipped, pod is using pod-level resources which are not supported by the static Memory manager policy"
            );
            return Ok(());
        }
        tracing::info!(pod_uid = pod_uid(pod), container = %container.name, "Allocate");
        crate::metrics::pinning_requested();
        let result = self.allocate_inner(s, pod, container);
        if result.is_err() {
            crate::metrics::pinning_failed();
        }
        result
    }

    fn remove_container(&mut self, s: &mut dyn State, pod_uid: &str, container_name: &str) {
        let Some(blocks) = s.get_memory_blocks(pod_uid, container_name) else {
            return;
        };
        tracing::info!(pod_uid, container_name, "RemoveContainer");
        s.delete(pod_uid, container_name);
        let mut ms = s.get_machine_state();
        for b in &blocks {
            let mut released = b.size;
            for node in &b.numa_affinity {
                let Some(state) = ms.get_mut(node) else {
                    continue;
                };
                state.number_of_assignments -= 1;
                if state.number_of_assignments == 0 {
                    state.cells = vec![*node];
                }
                if released == 0 {
                    continue;
                }
                let Some(t) = state.memory_map.get_mut(&b.type_) else {
                    continue;
                };
                if t.reserved == 0 {
                    continue;
                }
                if t.reserved < released {
                    released -= t.reserved;
                    t.free += t.reserved;
                    t.reserved = 0;
                    continue;
                }
                t.free += released;
                t.reserved -= released;
                released = 0;
            }
        }
        s.set_machine_state(ms);
    }

    fn get_topology_hints(&self, s: &dyn State, pod: &Pod, container: &Container) -> ResourceHints {
        if get_pod_qos(pod) != QosClass::Guaranteed {
            return ResourceHints::new();
        }
        let requested = match get_requested_resources(container) {
            Ok(r) => r,
            Err(err) => {
                tracing::error!(%err, pod_uid = pod_uid(pod), container = %container.name, "Failed to get container requested resources");
                return ResourceHints::new();
            }
        };
        if self.skips_pod_level_resources(pod) {
            return ResourceHints::new();
        }
        if let Some(blocks) = s.get_memory_blocks(pod_uid(pod), &container.name) {
            return regenerate_hints(container, &blocks, &requested);
        }
        self.calculate_hints(&s.get_machine_state(), pod, &requested)
    }

    fn get_pod_topology_hints(&self, s: &dyn State, pod: &Pod) -> ResourceHints {
        if get_pod_qos(pod) != QosClass::Guaranteed {
            return ResourceHints::new();
        }
        let requested = match get_pod_requested_resources(pod) {
            Ok(r) => r,
            Err(err) => {
                tracing::error!(%err, pod_uid = pod_uid(pod), "Failed to get pod requested resources");
                return ResourceHints::new();
            }
        };
        if self.skips_pod_level_resources(pod) {
            return ResourceHints::new();
        }
        let spec = pod.spec.as_ref();
        for ctn in spec
            .and_then(|s| s.init_containers.as_ref())
            .into_iter()
            .flatten()
            .chain(spec.map(|s| s.containers.iter()).into_iter().flatten())
        {
            if let Some(blocks) = s.get_memory_blocks(pod_uid(pod), &ctn.name) {
                return regenerate_hints(ctn, &blocks, &requested);
            }
        }
        self.calculate_hints(&s.get_machine_state(), pod, &requested)
    }

    fn get_allocatable_memory(&self, s: &dyn State) -> Vec<Block> {
        let mut out = Vec::new();
        for (node, state) in s.get_machine_state() {
            for (name, t) in state.memory_map {
                if t.allocatable == 0 {
                    continue;
                }
                out.push(Block {
                    numa_affinity: vec![node],
                    type_: name,
                    size: t.allocatable,
                });
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "policy_static_tests.rs"]
mod tests;
