//! The machine's NUMA nodes and the distances between them: upstream
//! `topologymanager/numa_info.go` (v1.35.4).

use std::collections::BTreeMap;

use crate::bitmask::BitMask;
use crate::policy_options::PolicyOptions;

/// One NUMA node of cAdvisor's machine topology, as `NewNUMAInfo` reads it: its id and
/// its `Distances` (`/sys/devices/system/node/node<N>/distance`; `None` when the file is
/// missing, as cAdvisor leaves the field nil then).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaNode {
    /// `Id`.
    pub id: usize,
    /// `Distances`: to node 0, 1, … in order.
    pub distances: Option<Vec<u64>>,
}

/// `NUMADistances`: the distances of each node to every node (empty unless
/// `prefer-closest-numa-nodes` is on, as upstream reads them only then).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaDistances(pub BTreeMap<usize, Vec<u64>>);

impl NumaDistances {
    /// `CalculateAverageFor`: the mean distance between every ordered pair of nodes of
    /// `bm` (a node with itself included); 0 for an empty mask. A distance missing from
    /// the table counts as 0 (upstream would panic on the index).
    pub fn calculate_average_for(&self, bm: BitMask) -> f64 {
        if bm.count() == 0 {
            return 0.0;
        }
        let mut count = 0.0;
        let mut sum = 0.0;
        let bits = bm.bits();
        for &node1 in &bits {
            for &node2 in &bits {
                let d = self
                    .0
                    .get(&node1)
                    .and_then(|row| row.get(node2))
                    .copied()
                    .unwrap_or(0);
                // Distances are small numbers (10, 11, 21 …): exact in f64.
                #[allow(clippy::cast_precision_loss)]
                let d = d as f64;
                sum += d;
                count += 1.0;
            }
        }
        sum / count
    }
}

/// An error of [`NumaInfo::new`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NumaInfoError {
    /// `prefer-closest-numa-nodes` on a machine whose node has no distances.
    #[error("error getting NUMA distances from cadvisor")]
    NoDistances,
}

/// `NUMAInfo`: the machine's NUMA node ids (in cAdvisor's order) and their distances.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumaInfo {
    /// `Nodes`.
    pub nodes: Vec<usize>,
    /// `NUMADistances`.
    pub numa_distances: NumaDistances,
}

impl NumaInfo {
    /// `NewNUMAInfo`: the distances are kept only with `prefer-closest-numa-nodes`, and
    /// then every node must have them.
    pub fn new(topology: &[NumaNode], opts: &PolicyOptions) -> Result<NumaInfo, NumaInfoError> {
        let mut nodes = Vec::with_capacity(topology.len());
        let mut distances = BTreeMap::new();
        for node in topology {
            nodes.push(node.id);
            let mut node_distance = Vec::new();
            if opts.prefer_closest_numa {
                node_distance = node.distances.clone().ok_or(NumaInfoError::NoDistances)?;
            }
            distances.insert(node.id, node_distance);
        }
        Ok(NumaInfo {
            nodes,
            numa_distances: NumaDistances(distances),
        })
    }

    /// `Narrowest`: `m1` when it is narrower than `m2`, else `m2`.
    pub fn narrowest(&self, m1: BitMask, m2: BitMask) -> BitMask {
        if m1.is_narrower_than(m2) { m1 } else { m2 }
    }

    /// `Closest`: the narrower mask; of two as wide, the one with the lower average
    /// distance; of two as close, the lower one.
    pub fn closest(&self, m1: BitMask, m2: BitMask) -> BitMask {
        if m1.count() != m2.count() {
            return self.narrowest(m1, m2);
        }
        let m1_distance = self.numa_distances.calculate_average_for(m1);
        let m2_distance = self.numa_distances.calculate_average_for(m2);
        #[allow(clippy::float_cmp)]
        if m1_distance == m2_distance {
            return if m1.is_less_than(m2) { m1 } else { m2 };
        }
        if m1_distance < m2_distance { m1 } else { m2 }
    }

    /// `DefaultAffinityMask`: every node.
    pub fn default_affinity_mask(&self) -> BitMask {
        BitMask::new(&self.nodes)
    }
}

#[cfg(test)]
#[path = "numa_info_tests.rs"]
mod tests;
