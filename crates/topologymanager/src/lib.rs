//! The topology manager: upstream `pkg/kubelet/cm/topologymanager` (v1.35.4).
//!
//! - NUMA node sets (`bitmask`) in [`bitmask`];
//! - the machine's NUMA nodes and distances (`numa_info.go`) in [`numa_info`];
//! - `topologyManagerPolicyOptions` (`policy_options.go`) in [`policy_options`];
//! - the hint merger and the `none`, `best-effort`, `restricted` and `single-numa-node`
//!   policies in [`policy`];
//! - `NewManager`, the `container`, `pod` and `none` scopes, `Admit` in [`manager`];
//! - `TopologyHint`, the `HintProvider` interface the CPU and memory managers implement,
//!   and the `Store` the managers read a container's merged affinity from, here.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};

pub mod bitmask;
pub mod manager;
pub mod numa_info;
pub mod policy;
pub mod policy_options;

pub use bitmask::{BitMask, iterate_bit_masks};
pub use manager::{AdmitHandler, Manager, NewManagerError};
pub use numa_info::{NumaInfo, NumaNode};
pub use policy_options::{OptionGates, PolicyOptions};

/// A topology hint (upstream `topologymanager.TopologyHint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopologyHint {
    /// `NUMANodeAffinity` (`None`: no preference).
    pub numa_node_affinity: Option<BitMask>,
    /// `Preferred`.
    pub preferred: bool,
}

impl TopologyHint {
    /// `IsEqual`: the same preference and the same affinity (both absent, or equal).
    pub fn is_equal(&self, other: &TopologyHint) -> bool {
        self == other
    }

    /// `LessThan`: preferred before not preferred, then the narrower affinity (an absent
    /// affinity counts as empty).
    pub fn less_than(&self, other: &TopologyHint) -> bool {
        if self.preferred != other.preferred {
            return self.preferred;
        }
        self.numa_node_affinity
            .unwrap_or_default()
            .is_narrower_than(other.numa_node_affinity.unwrap_or_default())
    }
}

/// The hints of one provider, per resource name. As in upstream's
/// `map[string][]TopologyHint`, a resource mapped to `None` (a nil slice) has no
/// preference, and one mapped to `Some(vec![])` (an empty slice) can be placed nowhere.
pub type ResourceHints = BTreeMap<String, Option<Vec<TopologyHint>>>;

/// An `Allocate` failure of a hint provider. Upstream's admit handler turns an
/// `admission.Error` into a rejection with that error's `Type()` as the reason, and any
/// other error into `UnexpectedAdmissionError` (`admission.GetPodAdmitResult`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AllocateError {
    /// The admission reason (`admission.Error.Type()`); `None` for any other error.
    pub reason: Option<String>,
    /// The error's text.
    pub message: String,
}

/// A resource manager that gives topology hints and allocates by the merged affinity
/// (upstream `topologymanager.HintProvider`).
pub trait HintProvider: Send + Sync {
    /// `GetTopologyHints` for one container.
    fn get_topology_hints(&self, pod: &Pod, container: &Container) -> ResourceHints;
    /// `GetPodTopologyHints` for the whole pod (`pod` scope).
    fn get_pod_topology_hints(&self, pod: &Pod) -> ResourceHints;
    /// `Allocate`: called by the admit handler for every container once the affinity is
    /// stored.
    fn allocate(&self, pod: &Pod, container: &Container) -> Result<(), AllocateError>;
}

/// The topology manager's affinity for a container (upstream `topologymanager.Store`).
pub trait Store: Send + Sync {
    /// `GetAffinity`.
    fn get_affinity(&self, pod_uid: &str, container_name: &str) -> TopologyHint;
    /// `GetPolicy().Name()`.
    fn policy_name(&self) -> String;
}

impl<T: Store + ?Sized> Store for Arc<T> {
    fn get_affinity(&self, pod_uid: &str, container_name: &str) -> TopologyHint {
        (**self).get_affinity(pod_uid, container_name)
    }

    fn policy_name(&self) -> String {
        (**self).policy_name()
    }
}

/// A fixed affinity per container (tests; upstream `topologymanager.NewFakeManager*`).
#[derive(Clone, Debug, Default)]
pub struct FakeStore {
    /// The policy name (`none` when empty).
    pub policy: String,
    /// Hint per (pod UID, container name); others get the default (no affinity).
    pub hints: BTreeMap<(String, String), TopologyHint>,
    /// Hint for every container not in `hints`.
    pub default_hint: TopologyHint,
}

impl Store for FakeStore {
    fn get_affinity(&self, pod_uid: &str, container_name: &str) -> TopologyHint {
        self.hints
            .get(&(pod_uid.to_owned(), container_name.to_owned()))
            .copied()
            .unwrap_or(self.default_hint)
    }

    fn policy_name(&self) -> String {
        if self.policy.is_empty() {
            "none".to_owned()
        } else {
            self.policy.clone()
        }
    }
}
