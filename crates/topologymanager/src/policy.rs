//! The policies: upstream `topologymanager/policy.go` (the hint merger),
//! `policy_none.go`, `policy_best_effort.go`, `policy_restricted.go` and
//! `policy_single_numa_node.go` (v1.35.4).

use crate::bitmask::{self, BitMask};
use crate::numa_info::NumaInfo;
use crate::policy_options::PolicyOptions;
use crate::{ResourceHints, TopologyHint};

/// `PolicyNone`.
pub const POLICY_NONE: &str = "none";
/// `PolicyBestEffort`.
pub const POLICY_BEST_EFFORT: &str = "best-effort";
/// `PolicyRestricted`.
pub const POLICY_RESTRICTED: &str = "restricted";
/// `PolicySingleNumaNode`.
pub const POLICY_SINGLE_NUMA_NODE: &str = "single-numa-node";

/// Upstream `Policy`.
pub trait Policy: Send + Sync + std::fmt::Debug {
    /// `Name`.
    fn name(&self) -> &'static str;
    /// `Merge`: the best hint of the providers' hints, and whether the pod may be
    /// admitted with it.
    fn merge(&self, providers_hints: &[ResourceHints]) -> (TopologyHint, bool);
}

/// `IsAlignmentGuaranteed`: only `single-numa-node` guarantees NUMA alignment.
pub fn is_alignment_guaranteed(p: &dyn Policy) -> bool {
    p.name() == POLICY_SINGLE_NUMA_NODE
}

/// `mergePermutation`: the bitwise AND of the permutation's affinities (and the
/// default affinity); preferred when every hint is preferred and every affinity is the
/// same.
pub fn merge_permutation(default_affinity: BitMask, permutation: &[TopologyHint]) -> TopologyHint {
    let mut preferred = true;
    let mut numa_affinities: Vec<BitMask> = Vec::new();
    for hint in permutation {
        if let Some(affinity) = hint.numa_node_affinity {
            numa_affinities.push(affinity);
            if !affinity.is_equal(numa_affinities[0]) {
                preferred = false;
            }
        }
        if !hint.preferred {
            preferred = false;
        }
    }
    TopologyHint {
        numa_node_affinity: Some(bitmask::and(default_affinity, &numa_affinities)),
        preferred,
    }
}

/// `filterProvidersHints`: one list of hints per resource of every provider; a
/// provider without hints, or a resource without a preference (nil), becomes
/// `[{nil, true}]`, a resource that cannot be placed (an empty list) `[{nil, false}]`.
pub fn filter_providers_hints(providers_hints: &[ResourceHints]) -> Vec<Vec<TopologyHint>> {
    let mut all = Vec::new();
    for hints in providers_hints {
        if hints.is_empty() {
            tracing::info!("Hint Provider has no preference for NUMA affinity with any resource");
            all.push(vec![TopologyHint {
                numa_node_affinity: None,
                preferred: true,
            }]);
            continue;
        }
        for (resource, resource_hints) in hints {
            match resource_hints {
                None => {
                    tracing::info!(%resource, "Hint Provider has no preference for NUMA affinity with resource");
                    all.push(vec![TopologyHint {
                        numa_node_affinity: None,
                        preferred: true,
                    }]);
                }
                Some(h) if h.is_empty() => {
                    tracing::info!(%resource, "Hint Provider has no possible NUMA affinities for resource");
                    all.push(vec![TopologyHint {
                        numa_node_affinity: None,
                        preferred: false,
                    }]);
                }
                Some(h) => all.push(h.clone()),
            }
        }
    }
    all
}

/// `narrowestHint`: the first hint with the narrowest affinity (hints without one
/// skipped).
fn narrowest_hint(hints: &[TopologyHint]) -> Option<BitMask> {
    let mut narrowest: Option<BitMask> = None;
    for affinity in hints.iter().filter_map(|h| h.numa_node_affinity) {
        match narrowest {
            None => narrowest = Some(affinity),
            Some(n) if affinity.is_narrower_than(n) => narrowest = Some(affinity),
            Some(_) => {}
        }
    }
    narrowest
}

/// `maxOfMinAffinityCounts`: the largest of each resource's narrowest affinity size.
pub fn max_of_min_affinity_counts(filtered_hints: &[Vec<TopologyHint>]) -> usize {
    filtered_hints
        .iter()
        .filter_map(|h| narrowest_hint(h))
        .map(BitMask::count)
        .max()
        .unwrap_or(0)
}

/// `iterateAllProviderTopologyHints`: `callback` on every permutation taking one hint
/// of each list (none when a list is empty; one empty permutation when there is no list).
pub fn iterate_all_provider_topology_hints(
    all_provider_hints: &[Vec<TopologyHint>],
    callback: &mut dyn FnMut(&[TopologyHint]),
) {
    fn iterate(
        all: &[Vec<TopologyHint>],
        i: usize,
        accum: &mut Vec<TopologyHint>,
        callback: &mut dyn FnMut(&[TopologyHint]),
    ) {
        if i == all.len() {
            callback(accum);
            return;
        }
        for hint in &all[i] {
            accum.push(*hint);
            iterate(all, i + 1, accum, callback);
            accum.pop();
        }
    }
    iterate(all_provider_hints, 0, &mut Vec::new(), callback);
}

/// `HintMerger`.
#[derive(Debug)]
pub struct HintMerger<'a> {
    /// `NUMAInfo`.
    pub numa_info: &'a NumaInfo,
    /// `Hints`: one list per resource (`filterProvidersHints`).
    pub hints: Vec<Vec<TopologyHint>>,
    /// `BestNonPreferredAffinityCount`.
    pub best_non_preferred_affinity_count: usize,
    /// `Closest` instead of `Narrowest` (`prefer-closest-numa-nodes`, except for
    /// `single-numa-node`).
    closest: bool,
}

fn affinity(h: &TopologyHint) -> BitMask {
    h.numa_node_affinity.unwrap_or_default()
}

impl<'a> HintMerger<'a> {
    /// `NewHintMerger`.
    pub fn new(
        numa_info: &'a NumaInfo,
        hints: Vec<Vec<TopologyHint>>,
        policy_name: &str,
        opts: &PolicyOptions,
    ) -> HintMerger<'a> {
        HintMerger {
            numa_info,
            best_non_preferred_affinity_count: max_of_min_affinity_counts(&hints),
            hints,
            closest: policy_name != POLICY_SINGLE_NUMA_NODE && opts.prefer_closest_numa,
        }
    }

    /// `CompareNUMAAffinityMasks`: the current hint unless the candidate's mask is
    /// narrower (or closer).
    fn compare_numa_affinity_masks(
        &self,
        current: TopologyHint,
        candidate: TopologyHint,
    ) -> TopologyHint {
        if affinity(&candidate).is_equal(affinity(&current)) {
            return current;
        }
        let best = if self.closest {
            self.numa_info
                .closest(affinity(&current), affinity(&candidate))
        } else {
            self.numa_info
                .narrowest(affinity(&current), affinity(&candidate))
        };
        if best.is_equal(affinity(&current)) {
            current
        } else {
            candidate
        }
    }

    /// `compare`: the better of the best hint so far and a candidate (upstream's
    /// cases 1, 2, 3a–3cc for two non-preferred hints).
    fn compare(
        &self,
        current: Option<TopologyHint>,
        candidate: TopologyHint,
    ) -> Option<TopologyHint> {
        let cand_count = affinity(&candidate).count();
        if cand_count == 0 {
            return current;
        }
        let Some(current) = current else {
            return Some(candidate);
        };
        if !current.preferred && candidate.preferred {
            return Some(candidate);
        }
        if current.preferred && !candidate.preferred {
            return Some(current);
        }
        if current.preferred && candidate.preferred {
            return Some(self.compare_numa_affinity_masks(current, candidate));
        }
        let best = self.best_non_preferred_affinity_count;
        let cur_count = affinity(&current).count();
        // Case 1
        if cur_count > best {
            return Some(self.compare_numa_affinity_masks(current, candidate));
        }
        // Case 2
        if cur_count == best {
            if cand_count != best {
                return Some(current);
            }
            return Some(self.compare_numa_affinity_masks(current, candidate));
        }
        // Case 3a
        if cand_count > best {
            return Some(current);
        }
        // Case 3b
        if cand_count == best {
            return Some(candidate);
        }
        // Case 3ca
        if cand_count > cur_count {
            return Some(candidate);
        }
        // Case 3cb
        if cand_count < cur_count {
            return Some(current);
        }
        // Case 3cc
        Some(self.compare_numa_affinity_masks(current, candidate))
    }

    /// `Merge`: the best merged permutation, or the default affinity, not preferred.
    pub fn merge(&self) -> TopologyHint {
        let default_affinity = self.numa_info.default_affinity_mask();
        let mut best: Option<TopologyHint> = None;
        iterate_all_provider_topology_hints(&self.hints, &mut |permutation| {
            let merged = merge_permutation(default_affinity, permutation);
            best = self.compare(best, merged);
        });
        best.unwrap_or(TopologyHint {
            numa_node_affinity: Some(default_affinity),
            preferred: false,
        })
    }
}

/// The `none` policy: no hint, every pod admitted.
#[derive(Clone, Copy, Debug, Default)]
pub struct NonePolicy;

impl Policy for NonePolicy {
    fn name(&self) -> &'static str {
        POLICY_NONE
    }

    fn merge(&self, _providers_hints: &[ResourceHints]) -> (TopologyHint, bool) {
        (TopologyHint::default(), true)
    }
}

/// The `best-effort` policy: the best hint, every pod admitted.
#[derive(Clone, Debug)]
pub struct BestEffortPolicy {
    numa_info: NumaInfo,
    opts: PolicyOptions,
}

impl BestEffortPolicy {
    /// `NewBestEffortPolicy`.
    pub fn new(numa_info: NumaInfo, opts: PolicyOptions) -> BestEffortPolicy {
        BestEffortPolicy { numa_info, opts }
    }
}

impl Policy for BestEffortPolicy {
    fn name(&self) -> &'static str {
        POLICY_BEST_EFFORT
    }

    fn merge(&self, providers_hints: &[ResourceHints]) -> (TopologyHint, bool) {
        let filtered = filter_providers_hints(providers_hints);
        let best = HintMerger::new(&self.numa_info, filtered, self.name(), &self.opts).merge();
        (best, true)
    }
}

/// The `restricted` policy: the best hint; admitted only when it is preferred.
#[derive(Clone, Debug)]
pub struct RestrictedPolicy {
    numa_info: NumaInfo,
    opts: PolicyOptions,
}

impl RestrictedPolicy {
    /// `NewRestrictedPolicy`.
    pub fn new(numa_info: NumaInfo, opts: PolicyOptions) -> RestrictedPolicy {
        RestrictedPolicy { numa_info, opts }
    }
}

impl Policy for RestrictedPolicy {
    fn name(&self) -> &'static str {
        POLICY_RESTRICTED
    }

    fn merge(&self, providers_hints: &[ResourceHints]) -> (TopologyHint, bool) {
        let filtered = filter_providers_hints(providers_hints);
        let best = HintMerger::new(&self.numa_info, filtered, self.name(), &self.opts).merge();
        let admit = best.preferred;
        (best, admit)
    }
}

/// The `single-numa-node` policy: only hints of one NUMA node (or no preference);
/// admitted only when the best is preferred.
#[derive(Clone, Debug)]
pub struct SingleNumaNodePolicy {
    numa_info: NumaInfo,
    opts: PolicyOptions,
}

impl SingleNumaNodePolicy {
    /// `NewSingleNumaNodePolicy`.
    pub fn new(numa_info: NumaInfo, opts: PolicyOptions) -> SingleNumaNodePolicy {
        SingleNumaNodePolicy { numa_info, opts }
    }
}

/// `filterSingleNumaHints`: per resource, the preferred hints without an affinity or
/// with exactly one NUMA node.
pub fn filter_single_numa_hints(
    all_resources_hints: &[Vec<TopologyHint>],
) -> Vec<Vec<TopologyHint>> {
    all_resources_hints
        .iter()
        .map(|hints| {
            hints
                .iter()
                .filter(|h| h.preferred && h.numa_node_affinity.is_none_or(|m| m.count() == 1))
                .copied()
                .collect()
        })
        .collect()
}

impl Policy for SingleNumaNodePolicy {
    fn name(&self) -> &'static str {
        POLICY_SINGLE_NUMA_NODE
    }

    fn merge(&self, providers_hints: &[ResourceHints]) -> (TopologyHint, bool) {
        let filtered = filter_providers_hints(providers_hints);
        let single = filter_single_numa_hints(&filtered);
        let mut best = HintMerger::new(&self.numa_info, single, self.name(), &self.opts).merge();
        if affinity(&best).is_equal(self.numa_info.default_affinity_mask()) {
            best = TopologyHint {
                numa_node_affinity: None,
                preferred: best.preferred,
            };
        }
        let admit = best.preferred;
        (best, admit)
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
