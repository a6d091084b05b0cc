//! CPU topology: upstream `pkg/kubelet/cm/cpumanager/topology` (`topology.go`,
//! `alignment.go`).
//!
//! Upstream builds the topology from cAdvisor's `MachineInfo`
//! ([`discover`]); [`machine_info_from_sysfs`](crate::sysfs::machine_info_from_sysfs)
//! builds that `MachineInfo` from sysfs the way cAdvisor does.

use std::collections::BTreeMap;
use std::fmt;

use kubelet_apimachinery::CpuSet;

/// An error from the topology queries or [`discover`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// `CPUCoreID`/`CPUSocketID`/`CPUNUMANodeID` on a CPU the topology does not have.
    #[error("unknown CPU ID: {0}")]
    UnknownCpu(usize),
    /// `Discover` on a machine with no CPUs.
    #[error("could not detect number of cpus")]
    NoCpus,
    /// `getUniqueCoreID` on a core without threads.
    #[error("no cpus provided")]
    NoThreads,
    /// `getUniqueCoreID` on a core listing one thread twice.
    #[error("cpus provided are not unique")]
    ThreadsNotUnique,
}

/// NUMA node, socket, core and uncore cache of one logical CPU (upstream `CPUInfo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CPUInfo {
    /// `NUMANodeID`.
    pub numa_node_id: usize,
    /// `SocketID`.
    pub socket_id: usize,
    /// `CoreID` (the lowest CPU id of the core's threads, as `Discover` sets it).
    pub core_id: usize,
    /// `UncoreCacheID` (the L3 cache id; the socket id when L3 is not split).
    pub uncore_cache_id: usize,
}

/// Logical CPU id to its [`CPUInfo`] (upstream `CPUDetails`, a `map[int]CPUInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CPUDetails(BTreeMap<usize, CPUInfo>);

/// NUMA node id to its CPUs (upstream `NUMANodeInfo`).
pub type NUMANodeInfo = BTreeMap<usize, CpuSet>;

impl CPUDetails {
    /// An empty map.
    pub fn new() -> CPUDetails {
        CPUDetails::default()
    }

    /// Sets the info of `cpu`.
    pub fn insert(&mut self, cpu: usize, info: CPUInfo) {
        self.0.insert(cpu, info);
    }

    /// The info of `cpu`, if the map has it.
    pub fn get(&self, cpu: usize) -> Option<&CPUInfo> {
        self.0.get(&cpu)
    }

    /// Number of CPUs in the map.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `(cpu, info)` in ascending CPU order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &CPUInfo)> + '_ {
        self.0.iter().map(|(cpu, info)| (*cpu, info))
    }

    fn ids_where(&self, pick: impl Fn(&CPUInfo) -> usize) -> CpuSet {
        self.0.values().map(pick).collect()
    }

    fn ids_in(
        &self,
        ids: &[usize],
        key: impl Fn(&CPUInfo) -> usize,
        pick: impl Fn(usize, &CPUInfo) -> usize,
    ) -> CpuSet {
        self.0
            .iter()
            .filter(|(_, info)| ids.contains(&key(info)))
            .map(|(cpu, info)| pick(*cpu, info))
            .collect()
    }

    /// `KeepOnly`: a copy with only the CPUs in `cpus`.
    pub fn keep_only(&self, cpus: &CpuSet) -> CPUDetails {
        CPUDetails(
            self.0
                .iter()
                .filter(|(cpu, _)| cpus.contains(**cpu))
                .map(|(cpu, info)| (*cpu, *info))
                .collect(),
        )
    }

    /// `UncoreCaches`: every uncore cache id.
    pub fn uncore_caches(&self) -> CpuSet {
        self.ids_where(|i| i.uncore_cache_id)
    }

    /// `UncoreInNUMANodes`: uncore cache ids of the CPUs in these NUMA nodes.
    pub fn uncore_in_numa_nodes(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.numa_node_id, |_, i| i.uncore_cache_id)
    }

    /// `CoresNeededInUncoreCache`: the core ids in these uncore caches, at most
    /// the first `num_cores_needed` of them.
    pub fn cores_needed_in_uncore_cache(&self, num_cores_needed: usize, ids: &[usize]) -> CpuSet {
        let core_ids = self.ids_in(ids, |i| i.uncore_cache_id, |_, i| i.core_id);
        if core_ids.len() <= num_cores_needed {
            return core_ids;
        }
        core_ids.iter().take(num_cores_needed).collect()
    }

    /// `CPUsInUncoreCaches`.
    pub fn cpus_in_uncore_caches(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.uncore_cache_id, |cpu, _| cpu)
    }

    /// `NUMANodes`.
    pub fn numa_nodes(&self) -> CpuSet {
        self.ids_where(|i| i.numa_node_id)
    }

    /// `NUMANodesInSockets`.
    pub fn numa_nodes_in_sockets(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.socket_id, |_, i| i.numa_node_id)
    }

    /// `Sockets`.
    pub fn sockets(&self) -> CpuSet {
        self.ids_where(|i| i.socket_id)
    }

    /// `CPUsInSockets`.
    pub fn cpus_in_sockets(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.socket_id, |cpu, _| cpu)
    }

    /// `SocketsInNUMANodes`.
    pub fn sockets_in_numa_nodes(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.numa_node_id, |_, i| i.socket_id)
    }

    /// `Cores`.
    pub fn cores(&self) -> CpuSet {
        self.ids_where(|i| i.core_id)
    }

    /// `CoresInNUMANodes`.
    pub fn cores_in_numa_nodes(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.numa_node_id, |_, i| i.core_id)
    }

    /// `CoresInSockets`.
    pub fn cores_in_sockets(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.socket_id, |_, i| i.core_id)
    }

    /// `CPUs`: every CPU id.
    pub fn cpus(&self) -> CpuSet {
        self.0.keys().copied().collect()
    }

    /// `CPUsInNUMANodes`.
    pub fn cpus_in_numa_nodes(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.numa_node_id, |cpu, _| cpu)
    }

    /// `CPUsInCores`.
    pub fn cpus_in_cores(&self, ids: &[usize]) -> CpuSet {
        self.ids_in(ids, |i| i.core_id, |cpu, _| cpu)
    }
}

impl FromIterator<(usize, CPUInfo)> for CPUDetails {
    fn from_iter<I: IntoIterator<Item = (usize, CPUInfo)>>(iter: I) -> CPUDetails {
        CPUDetails(iter.into_iter().collect())
    }
}

/// The node's CPU layout (upstream `CPUTopology`): CPU = cAdvisor thread,
/// core = physical CPU, socket, NUMA node = cAdvisor node, uncore cache = split L3.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CPUTopology {
    /// `NumCPUs`: logical CPUs.
    pub num_cpus: usize,
    /// `NumCores`: physical cores.
    pub num_cores: usize,
    /// `NumUncoreCache`.
    pub num_uncore_cache: usize,
    /// `NumSockets`.
    pub num_sockets: usize,
    /// `NumNUMANodes`.
    pub num_numa_nodes: usize,
    /// `CPUDetails`.
    pub cpu_details: CPUDetails,
}

impl CPUTopology {
    /// `CPUsPerCore` (0 when there are no cores).
    pub fn cpus_per_core(&self) -> usize {
        self.num_cpus.checked_div(self.num_cores).unwrap_or(0)
    }

    /// `CPUsPerSocket` (0 when there are no sockets).
    pub fn cpus_per_socket(&self) -> usize {
        self.num_cpus.checked_div(self.num_sockets).unwrap_or(0)
    }

    /// `CPUsPerUncore` (0 when there are no uncore caches).
    pub fn cpus_per_uncore(&self) -> usize {
        self.num_cpus
            .checked_div(self.num_uncore_cache)
            .unwrap_or(0)
    }

    fn info(&self, cpu: usize) -> Result<&CPUInfo, TopologyError> {
        self.cpu_details
            .get(cpu)
            .ok_or(TopologyError::UnknownCpu(cpu))
    }

    /// `CPUCoreID`.
    pub fn cpu_core_id(&self, cpu: usize) -> Result<usize, TopologyError> {
        self.info(cpu).map(|i| i.core_id)
    }

    /// `CPUSocketID`.
    pub fn cpu_socket_id(&self, cpu: usize) -> Result<usize, TopologyError> {
        self.info(cpu).map(|i| i.socket_id)
    }

    /// `CPUNUMANodeID`.
    pub fn cpu_numa_node_id(&self, cpu: usize) -> Result<usize, TopologyError> {
        self.info(cpu).map(|i| i.numa_node_id)
    }

    /// `CheckAlignment`.
    pub fn check_alignment(&self, cpus: &CpuSet) -> Alignment {
        Alignment {
            uncore_cache: is_aligned_at_uncore_cache(self, &cpus.to_vec()),
        }
    }
}

/// Alignment metadata of an allocation (upstream `Alignment`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Alignment {
    /// `UncoreCache`: every CPU shares one uncore cache.
    pub uncore_cache: bool,
}

impl fmt::Display for Alignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "aligned=<uncore:{}>", self.uncore_cache)
    }
}

/// A CPU set plus its alignment (upstream `Allocation`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocation {
    /// `CPUs`.
    pub cpus: CpuSet,
    /// `Aligned`.
    pub aligned: Alignment,
}

impl Allocation {
    /// `EmptyAllocation`: no CPUs, aligned every way.
    pub fn empty() -> Allocation {
        Allocation {
            cpus: CpuSet::new(),
            aligned: Alignment { uncore_cache: true },
        }
    }
}

impl fmt::Display for Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.cpus, self.aligned)
    }
}

fn is_aligned_at_uncore_cache(topo: &CPUTopology, cpus: &[usize]) -> bool {
    let [first, rest @ ..] = cpus else {
        return true;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(reference) = topo.cpu_details.get(*first) else {
        return false;
    };
    rest.iter().all(|cpu| {
        topo.cpu_details
            .get(*cpu)
            .is_some_and(|i| i.uncore_cache_id == reference.uncore_cache_id)
    })
}

/// The part of cAdvisor's `MachineInfo` that `Discover` reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineInfo {
    /// `NumCores`: logical CPUs (cAdvisor counts threads).
    pub num_cores: usize,
    /// `NumSockets`.
    pub num_sockets: usize,
    /// `Topology`: the NUMA nodes.
    pub topology: Vec<Node>,
}

impl MachineInfo {
    /// The NUMA nodes as the topology manager's `NewManager` takes them (ids and
    /// distances).
    pub fn numa_nodes(&self) -> Vec<kubelet_topologymanager::NumaNode> {
        self.topology
            .iter()
            .map(|n| kubelet_topologymanager::NumaNode {
                id: n.id,
                distances: n.distances.clone(),
            })
            .collect()
    }
}

/// A cAdvisor `Node` (NUMA node).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// `Id`.
    pub id: usize,
    /// `Cores`.
    pub cores: Vec<Core>,
    /// `Caches`: caches shared by the whole node.
    pub caches: Vec<Cache>,
    /// `Distances`: to node 0, 1, … (`None` without a `distance` file, or when the
    /// topology comes from the packages, not from NUMA node directories).
    pub distances: Option<Vec<u64>>,
}

/// A cAdvisor `Core` (physical core).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Core {
    /// `Id`: the kernel's `core_id` (not unique across sockets).
    pub id: usize,
    /// `Threads`: its logical CPUs.
    pub threads: Vec<usize>,
    /// `SocketID`.
    pub socket_id: usize,
    /// `Caches`: per-core caches.
    pub caches: Vec<Cache>,
    /// `UncoreCaches`: L3 caches shared by some, not all, cores of the node.
    pub uncore_caches: Vec<Cache>,
}

/// A cAdvisor `Cache`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cache {
    /// `Id`.
    pub id: usize,
    /// `Size` in bytes.
    pub size: u64,
    /// `Type` ("Data", "Instruction", "Unified").
    pub cache_type: String,
    /// `Level`.
    pub level: usize,
}

fn get_uncore_cache_id(core: &Core) -> usize {
    // No uncore cache: fall back to socket alignment, as upstream.
    core.uncore_caches
        .first()
        .map_or(core.socket_id, |cache| cache.id)
}

/// `getUniqueCoreID`: the lowest thread id of a core.
fn get_unique_core_id(threads: &[usize]) -> Result<usize, TopologyError> {
    let min = threads.iter().min().ok_or(TopologyError::NoThreads)?;
    if threads
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        != threads.len()
    {
        return Err(TopologyError::ThreadsNotUnique);
    }
    Ok(*min)
}

/// `Discover`: the CPU topology from cAdvisor's machine info.
pub fn discover(machine_info: &MachineInfo) -> Result<CPUTopology, TopologyError> {
    if machine_info.num_cores == 0 {
        return Err(TopologyError::NoCpus);
    }
    let mut details = CPUDetails::new();
    let mut num_physical_cores = 0;
    for node in &machine_info.topology {
        num_physical_cores += node.cores.len();
        for core in &node.cores {
            let core_id = get_unique_core_id(&core.threads).inspect_err(|_| {
                tracing::info!(
                    socket = core.socket_id,
                    core = core.id,
                    threads = ?core.threads,
                    "Could not get unique coreID for socket"
                );
            })?;
            for cpu in &core.threads {
                details.insert(
                    *cpu,
                    CPUInfo {
                        core_id,
                        socket_id: core.socket_id,
                        numa_node_id: node.id,
                        uncore_cache_id: get_uncore_cache_id(core),
                    },
                );
            }
        }
    }
    Ok(CPUTopology {
        num_cpus: machine_info.num_cores,
        num_sockets: machine_info.num_sockets,
        num_cores: num_physical_cores,
        num_numa_nodes: details.numa_nodes().len(),
        num_uncore_cache: details.uncore_caches().len(),
        cpu_details: details,
    })
}

#[cfg(test)]
#[path = "topology_tests.rs"]
mod tests;
