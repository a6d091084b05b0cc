//! Topology-aware CPU selection: upstream `cpu_assignment.go`
//! (`takeByTopologyNUMAPacked`, `takeByTopologyNUMADistributed`, the
//! `cpuAccumulator`).

use std::collections::BTreeMap;

use kubelet_apimachinery::CpuSet;

use crate::topology::{CPUDetails, CPUTopology};

/// An error from the CPU assignment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssignmentError {
    /// Fewer CPUs available than requested.
    #[error(
        "not enough cpus available to satisfy request: requested={requested}, available={available}"
    )]
    NotEnoughCpus {
        /// CPUs requested.
        requested: usize,
        /// CPUs available.
        available: usize,
    },
    /// The packed algorithm ran out of candidates.
    #[error("failed to allocate cpus")]
    FailedToAllocate,
    /// The distributed algorithm allocated too few CPUs.
    #[error("accounting error, not enough CPUs allocated, remaining: {0}")]
    NotEnoughAllocated(isize),
    /// The distributed algorithm allocated too many CPUs.
    #[error("accounting error, too many CPUs allocated, remaining: {0}")]
    TooManyAllocated(isize),
}

/// How CPUs are ordered within a socket (upstream `CPUSortingStrategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CPUSortingStrategy {
    /// `packed`: a core's threads together (the default).
    #[default]
    Packed,
    /// `spread`: across cores first (`distribute-cpus-across-cores`).
    Spread,
}

impl CPUSortingStrategy {
    /// Upstream's string.
    pub fn as_str(self) -> &'static str {
        match self {
            CPUSortingStrategy::Packed => "packed",
            CPUSortingStrategy::Spread => "spread",
        }
    }
}

fn mean(xs: &[usize]) -> f64 {
    let sum: f64 = xs.iter().map(|x| *x as f64).sum();
    let m = sum / xs.len() as f64;
    (m * 1000.0).round() / 1000.0
}

fn standard_deviation(xs: &[usize]) -> f64 {
    let m = mean(xs);
    let sum: f64 = xs.iter().map(|x| (*x as f64 - m) * (*x as f64 - m)).sum();
    let s = (sum / xs.len() as f64).sqrt();
    (s * 1000.0).round() / 1000.0
}

/// Upstream `cpuAccumulator`.
pub(crate) struct CpuAccumulator<'a> {
    topo: &'a CPUTopology,
    /// The free CPUs left to claim.
    pub(crate) details: CPUDetails,
    /// CPUs still needed (negative when too many were taken).
    pub(crate) num_cpus_needed: isize,
    /// CPUs claimed so far.
    pub(crate) result: CpuSet,
    /// `numaFirst` (NUMA nodes at least as big as sockets) or `socketsFirst`.
    numa_first: bool,
    strategy: CPUSortingStrategy,
}

fn to_isize(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

impl<'a> CpuAccumulator<'a> {
    /// `newCPUAccumulator`.
    pub(crate) fn new(
        topo: &'a CPUTopology,
        available_cpus: &CpuSet,
        num_cpus: usize,
        strategy: CPUSortingStrategy,
    ) -> CpuAccumulator<'a> {
        CpuAccumulator {
            topo,
            details: topo.cpu_details.keep_only(available_cpus),
            num_cpus_needed: to_isize(num_cpus),
            result: CpuSet::new(),
            numa_first: topo.num_sockets >= topo.num_numa_nodes,
            strategy,
        }
    }

    fn is_numa_node_free(&self, numa: usize) -> bool {
        self.details.cpus_in_numa_nodes(&[numa]).len()
            == self.topo.cpu_details.cpus_in_numa_nodes(&[numa]).len()
    }

    fn is_socket_free(&self, socket: usize) -> bool {
        self.details.cpus_in_sockets(&[socket]).len() == self.topo.cpus_per_socket()
    }

    fn is_uncore_cache_free(&self, uncore: usize) -> bool {
        self.details.cpus_in_uncore_caches(&[uncore]).len()
            == self.topo.cpu_details.cpus_in_uncore_caches(&[uncore]).len()
    }

    fn is_core_free(&self, core: usize) -> bool {
        self.details.cpus_in_cores(&[core]).len() == self.topo.cpus_per_core()
    }

    /// `freeNUMANodes`.
    pub(crate) fn free_numa_nodes(&self) -> Vec<usize> {
        let sorted = self.sort_available_numa_nodes();
        sorted
            .into_iter()
            .filter(|n| self.is_numa_node_free(*n))
            .collect()
    }

    /// `freeSockets`.
    pub(crate) fn free_sockets(&self) -> Vec<usize> {
        let sorted = self.sort_available_sockets();
        sorted
            .into_iter()
            .filter(|s| self.is_socket_free(*s))
            .collect()
    }

    fn free_uncore_cache(&self) -> Vec<usize> {
        let sorted = self.sort_available_uncore_caches();
        sorted
            .into_iter()
            .filter(|u| self.is_uncore_cache_free(*u))
            .collect()
    }

    /// `freeCores`.
    pub(crate) fn free_cores(&self) -> Vec<usize> {
        let sorted = self.sort_available_cores();
        sorted
            .into_iter()
            .filter(|c| self.is_core_free(*c))
            .collect()
    }

    /// `freeCPUs`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn free_cpus(&self) -> Vec<usize> {
        self.sort_available_cpus()
    }

    /// `sort`: ascending by free CPUs in each, then by id.
    fn sort(&self, ids: CpuSet, get_cpus: impl Fn(&CPUDetails, &[usize]) -> CpuSet) -> Vec<usize> {
        let mut keyed: Vec<(usize, usize)> = ids
            .iter()
            .map(|id| (get_cpus(&self.details, &[id]).len(), id))
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, id)| id).collect()
    }

    fn sort_available_numa_nodes(&self) -> Vec<usize> {
        if self.numa_first {
            self.sort(self.details.numa_nodes(), CPUDetails::cpus_in_numa_nodes)
        } else {
            let mut result = Vec::new();
            for socket in self.sort_available_sockets() {
                let numas = self.details.numa_nodes_in_sockets(&[socket]);
                result.extend(self.sort(numas, CPUDetails::cpus_in_numa_nodes));
            }
            result
        }
    }

    fn sort_available_sockets(&self) -> Vec<usize> {
        if self.numa_first {
            let mut result = Vec::new();
            for numa in self.sort_available_numa_nodes() {
                let sockets = self.details.sockets_in_numa_nodes(&[numa]);
                result.extend(self.sort(sockets, CPUDetails::cpus_in_sockets));
            }
            result
        } else {
            self.sort(self.details.sockets(), CPUDetails::cpus_in_sockets)
        }
    }

    fn sort_available_cores(&self) -> Vec<usize> {
        let mut result = Vec::new();
        if self.numa_first {
            for socket in self.sort_available_sockets() {
                let cores = self.details.cores_in_sockets(&[socket]);
                result.extend(self.sort(cores, CPUDetails::cpus_in_cores));
            }
        } else {
            for numa in self.sort_available_numa_nodes() {
                let cores = self.details.cores_in_numa_nodes(&[numa]);
                result.extend(self.sort(cores, CPUDetails::cpus_in_cores));
            }
        }
        result
    }

    fn sort_available_uncore_caches(&self) -> Vec<usize> {
        let mut result = Vec::new();
        for numa in self.sort_available_numa_nodes() {
            let uncore = self.details.uncore_in_numa_nodes(&[numa]);
            result.extend(self.sort(uncore, CPUDetails::cpus_in_uncore_caches));
        }
        result
    }

    /// `sortAvailableCPUsPacked` / `sortAvailableCPUsSpread`.
    fn sort_available_cpus(&self) -> Vec<usize> {
        let mut result = Vec::new();
        match self.strategy {
            CPUSortingStrategy::Packed => {
                for core in self.sort_available_cores() {
                    result.extend(self.details.cpus_in_cores(&[core]).iter());
                }
            }
            CPUSortingStrategy::Spread => {
                for socket in self.sort_available_sockets() {
                    result.extend(self.details.cpus_in_sockets(&[socket]).iter());
                }
            }
        }
        result
    }

    /// `take`.
    pub(crate) fn take(&mut self, cpus: &CpuSet) {
        self.result = self.result.union(cpus);
        self.details = self
            .details
            .keep_only(&self.details.cpus().difference(&self.result));
        self.num_cpus_needed -= to_isize(cpus.len());
    }

    fn take_full_numa_nodes(&mut self) {
        for numa in self.free_numa_nodes() {
            let cpus = self.topo.cpu_details.cpus_in_numa_nodes(&[numa]);
            if !self.needs_at_least(cpus.len()) {
                continue;
            }
            tracing::trace!(numa, "takeFullNUMANodes: claiming NUMA node");
            self.take(&cpus);
        }
    }

    fn take_full_sockets(&mut self) {
        for socket in self.free_sockets() {
            let cpus = self.topo.cpu_details.cpus_in_sockets(&[socket]);
            if !self.needs_at_least(cpus.len()) {
                continue;
            }
            tracing::trace!(socket, "takeFullSockets: claiming socket");
            self.take(&cpus);
        }
    }

    fn take_full_first_level(&mut self) {
        if self.numa_first {
            self.take_full_numa_nodes();
        } else {
            self.take_full_sockets();
        }
    }

    fn take_full_second_level(&mut self) {
        if self.numa_first {
            self.take_full_sockets();
        } else {
            self.take_full_numa_nodes();
        }
    }

    fn take_full_uncore(&mut self) {
        for uncore in self.free_uncore_cache() {
            let cpus = self.topo.cpu_details.cpus_in_uncore_caches(&[uncore]);
            if !self.needs_at_least(cpus.len()) {
                continue;
            }
            tracing::trace!(uncore, "takeFullUncore: claiming uncore");
            self.take(&cpus);
        }
    }

    fn take_partial_uncore(&mut self, uncore: usize) {
        let per_core = to_isize(self.topo.cpus_per_core());
        if per_core == 0 {
            return;
        }
        let num_cores_needed = (self.num_cpus_needed + per_core - 1) / per_core;
        let free_cores = self.details.cores_needed_in_uncore_cache(
            usize::try_from(num_cores_needed).unwrap_or(0),
            &[uncore],
        );
        let mut free_cpus = self.details.cpus_in_cores(&free_cores.to_vec());
        if self.num_cpus_needed % 2 != 0 && per_core > 1 {
            let mut sorted = free_cpus.to_vec();
            if to_isize(sorted.len()) > self.num_cpus_needed {
                sorted.truncate(free_cpus.len().saturating_sub(1));
            }
            free_cpus = sorted.into_iter().collect();
        }
        let claimed = self.num_cpus_needed == to_isize(free_cpus.len());
        tracing::trace!(
            uncore,
            claimed,
            needed = self.num_cpus_needed,
            cores = %free_cores,
            cpus = %free_cpus,
            "takePartialUncore: trying to claim partial uncore"
        );
        if claimed {
            self.take(&free_cpus);
        }
    }

    fn take_uncore_cache(&mut self) {
        let num_cpus_in_uncore = self.topo.cpus_per_uncore();
        for uncore in self.sort_available_uncore_caches() {
            if self.needs_at_least(num_cpus_in_uncore) {
                self.take_full_uncore();
            }
            if self.is_satisfied() {
                return;
            }
            self.take_partial_uncore(uncore);
            if self.is_satisfied() {
                return;
            }
        }
    }

    fn take_full_cores(&mut self) {
        for core in self.free_cores() {
            let cpus = self.topo.cpu_details.cpus_in_cores(&[core]);
            if !self.needs_at_least(cpus.len()) {
                continue;
            }
            tracing::trace!(core, "takeFullCores: claiming core");
            self.take(&cpus);
        }
    }

    fn take_remaining_cpus(&mut self) {
        for cpu in self.sort_available_cpus() {
            tracing::trace!(cpu, "takeRemainingCPUs: claiming CPU");
            self.take(&std::iter::once(cpu).collect());
            if self.is_satisfied() {
                return;
            }
        }
    }

    /// `rangeNUMANodesNeededToSatisfy`: (min, max) NUMA nodes for the request.
    fn range_numa_nodes_needed_to_satisfy(&self, cpu_group_size: usize) -> (usize, usize) {
        let num_numa_nodes = self.topo.cpu_details.numa_nodes().len().max(1);
        let num_numa_nodes_available = self.details.numa_nodes().len();
        let num_cpus = self.topo.cpu_details.cpus().len();
        let num_cpu_groups = num_cpus.saturating_sub(1) / cpu_group_size + 1;
        let groups_per_numa = (num_cpu_groups - 1) / num_numa_nodes + 1;
        let needed = usize::try_from(self.num_cpus_needed).unwrap_or(0);
        let groups_needed = needed.saturating_sub(1) / cpu_group_size + 1;
        let min = (groups_needed - 1) / groups_per_numa + 1;
        let max = groups_needed.min(num_numa_nodes_available);
        (min, max)
    }

    /// `needsAtLeast`.
    fn needs_at_least(&self, n: usize) -> bool {
        self.num_cpus_needed >= to_isize(n)
    }

    /// `isSatisfied`.
    pub(crate) fn is_satisfied(&self) -> bool {
        self.num_cpus_needed < 1
    }

    /// `isFailed`.
    pub(crate) fn is_failed(&self) -> bool {
        self.num_cpus_needed > to_isize(self.details.cpus().len())
    }
}

/// `iterateCombinations`: calls `f` on every `k`-subset of `n` (in order);
/// `f` returns `false` to stop (upstream `Break`).
fn iterate_combinations(n: &[usize], k: usize, f: &mut dyn FnMut(&[usize]) -> bool) {
    fn helper(
        n: &[usize],
        k: usize,
        start: usize,
        accum: &mut Vec<usize>,
        f: &mut dyn FnMut(&[usize]) -> bool,
    ) -> bool {
        if k == 0 {
            return f(accum);
        }
        let mut i = start;
        while i + k <= n.len() {
            accum.push(n[i]);
            let go_on = helper(n, k - 1, i + 1, accum, f);
            accum.pop();
            if !go_on {
                return false;
            }
            i += 1;
        }
        true
    }
    if k < 1 {
        return;
    }
    helper(n, k, 0, &mut Vec::new(), f);
}

/// `takeByTopologyNUMAPacked`: `num_cpus` CPUs out of `available_cpus`, whole NUMA
/// nodes/sockets first, then (with `prefer_align_by_uncore_cache`) uncore caches,
/// then whole cores (not with [`CPUSortingStrategy::Spread`]), then single threads.
pub fn take_by_topology_numa_packed(
    topo: &CPUTopology,
    available_cpus: &CpuSet,
    num_cpus: usize,
    strategy: CPUSortingStrategy,
    prefer_align_by_uncore_cache: bool,
) -> Result<CpuSet, AssignmentError> {
    let mut acc = CpuAccumulator::new(topo, available_cpus, num_cpus, strategy);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(AssignmentError::NotEnoughCpus {
            requested: num_cpus,
            available: available_cpus.len(),
        });
    }
    acc.take_full_first_level();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    acc.take_full_second_level();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if prefer_align_by_uncore_cache {
        acc.take_uncore_cache();
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
    }
    if strategy != CPUSortingStrategy::Spread {
        acc.take_full_cores();
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
    }
    acc.take_remaining_cpus();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    Err(AssignmentError::FailedToAllocate)
}

/// `takeByTopologyNUMADistributed` (KEP-2902): spreads the request evenly, in groups
/// of `cpu_group_size` CPUs, over the smallest set of NUMA nodes that can balance it;
/// falls back to [`take_by_topology_numa_packed`]. A `cpu_group_size` of 0 is taken
/// as 1 (upstream would divide by zero).
pub fn take_by_topology_numa_distributed(
    topo: &CPUTopology,
    available_cpus: &CpuSet,
    num_cpus: usize,
    cpu_group_size: usize,
    strategy: CPUSortingStrategy,
) -> Result<CpuSet, AssignmentError> {
    let group = cpu_group_size.max(1);
    if !num_cpus.is_multiple_of(group) {
        return take_by_topology_numa_packed(topo, available_cpus, num_cpus, strategy, false);
    }
    let mut acc = CpuAccumulator::new(topo, available_cpus, num_cpus, strategy);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(AssignmentError::NotEnoughCpus {
            requested: num_cpus,
            available: available_cpus.len(),
        });
    }
    let numas = acc.sort_available_numa_nodes();
    let (min_numas, max_numas) = acc.range_numa_nodes_needed_to_satisfy(group);
    let free_in =
        |acc: &CpuAccumulator<'_>, numa: usize| acc.details.cpus_in_numa_nodes(&[numa]).len();

    for k in min_numas..=max_numas {
        let mut best_balance = f64::MAX;
        let mut best_remainder: Option<Vec<usize>> = None;
        let mut best_combo: Option<Vec<usize>> = None;
        iterate_combinations(&numas, k, &mut |combo: &[usize]| {
            if best_balance == 0.0 {
                return false;
            }
            if acc.details.cpus_in_numa_nodes(combo).len() < num_cpus {
                return true;
            }
            let num_cpu_groups: usize = combo.iter().map(|n| free_in(&acc, *n) / group).sum();
            if num_cpu_groups * group < num_cpus {
                return true;
            }
            let distribution = (num_cpus / combo.len() / group) * group;
            if combo.iter().any(|n| free_in(&acc, *n) < distribution) {
                return true;
            }
            let mut available_after: BTreeMap<usize, usize> =
                numas.iter().map(|n| (*n, free_in(&acc, *n))).collect();
            for numa in combo {
                if let Some(v) = available_after.get_mut(numa) {
                    *v -= distribution;
                }
            }
            let remainder = num_cpus - distribution * combo.len();
            let remainder_combo: Vec<usize> = combo
                .iter()
                .copied()
                .filter(|n| available_after.get(n).copied().unwrap_or(0) >= group)
                .collect();
            let mut best_local_balance = f64::MAX;
            let mut best_local_remainder: Option<Vec<usize>> = None;
            if remainder == 0 {
                let values: Vec<usize> = available_after.values().copied().collect();
                best_local_balance = standard_deviation(&values);
            }
            let mut k2 = remainder_combo.len();
            while remainder > 0 && k2 >= 1 {
                iterate_combinations(&remainder_combo, k2, &mut |subset: &[usize]| {
                    let mut remainder = remainder;
                    let mut available_after = available_after.clone();
                    let subset_sum: usize = subset
                        .iter()
                        .map(|n| available_after.get(n).copied().unwrap_or(0))
                        .sum();
                    if subset_sum < remainder {
                        return true;
                    }
                    while remainder > 0 {
                        let mut progressed = false;
                        for numa in subset {
                            if remainder == 0 {
                                break;
                            }
                            let Some(v) = available_after.get_mut(numa) else {
                                continue;
                            };
                            if *v < group {
                                continue;
                            }
                            *v -= group;
                            remainder = remainder.saturating_sub(group);
                            progressed = true;
                        }
                        // Upstream would loop forever here; nothing left to take.
                        if !progressed {
                            return true;
                        }
                    }
                    let values: Vec<usize> = available_after.values().copied().collect();
                    let balance = standard_deviation(&values);
                    if balance < best_local_balance {
                        best_local_balance = balance;
                        best_local_remainder = Some(subset.to_vec());
                    }
                    true
                });
                k2 -= 1;
            }
            if best_local_balance < best_balance {
                best_balance = best_local_balance;
                best_remainder = best_local_remainder;
                best_combo = Some(combo.to_vec());
            }
            true
        });

        let Some(best_combo) = best_combo else {
            continue;
        };
        let distribution = (num_cpus / best_combo.len() / group) * group;
        for numa in &best_combo {
            let free = acc.details.cpus_in_numa_nodes(&[*numa]);
            let cpus = take_by_topology_numa_packed(topo, &free, distribution, strategy, false)
                .unwrap_or_default();
            acc.take(&cpus);
        }
        let mut remainder = num_cpus - distribution * best_combo.len();
        let best_remainder = best_remainder.unwrap_or_default();
        while remainder > 0 {
            let mut progressed = false;
            for numa in &best_remainder {
                if remainder == 0 {
                    break;
                }
                let free = acc.details.cpus_in_numa_nodes(&[*numa]);
                if free.len() < group {
                    continue;
                }
                let cpus = take_by_topology_numa_packed(topo, &free, group, strategy, false)
                    .unwrap_or_default();
                acc.take(&cpus);
                remainder = remainder.saturating_sub(group);
                progressed = true;
            }
            // Upstream would loop forever here; the accounting check below reports it.
            if !progressed {
                break;
            }
        }
        if acc.num_cpus_needed > 0 {
            return Err(AssignmentError::NotEnoughAllocated(acc.num_cpus_needed));
        }
        if acc.num_cpus_needed < 0 {
            return Err(AssignmentError::TooManyAllocated(acc.num_cpus_needed));
        }
        return Ok(acc.result);
    }
    take_by_topology_numa_packed(topo, available_cpus, num_cpus, strategy, false)
}

#[cfg(test)]
#[path = "cpu_assignment_tests.rs"]
mod tests;
