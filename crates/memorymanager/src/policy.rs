//! The policy interface (upstream `policy.go`) and the `None` policy (`policy_none.go`).

use k8s_openapi::api::core::v1::{Container, Pod};
use kubelet_topologymanager::ResourceHints;

use crate::state::{Block, State};

/// Upstream `policyTypeNone`.
pub const POLICY_NONE: &str = "None";

/// A policy's error; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// `NewPolicyStatic` without any reserved `memory`.
    #[error("[memorymanager] you should specify the system reserved memory")]
    NoSystemReserved,
    /// A request that is not a whole number of bytes.
    #[error("[memorymanager] failed to represent quantity as int64")]
    QuantityNotInt,
    /// No NUMA node combination can hold the request.
    #[error(
        "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"
    )]
    NoDefaultAffinity,
    /// The topology manager's hint was preferred, the memory manager's is not.
    #[error("[memorymanager] failed to find the default preferred hint")]
    NoDefaultPreferredHint,
    /// The extended hint is not preferred while the topology manager's was.
    #[error("[memorymanager] failed to find the extended preferred hint")]
    NoExtendedPreferredHint,
    /// No NUMA node group containing the hint can hold the request.
    #[error("[memorymanager] failed to find NUMA nodes to extend the current topology hint")]
    CannotExtendHint,
    /// The hint overlaps a group of NUMA nodes other allocations use differently.
    #[error("[memorymanager] preferred hint violates NUMA node allocation")]
    HintViolatesNumaAllocation,
    /// `Start`: assignments without a machine state.
    #[error("[memorymanager] machine state can not be empty when it has memory assignments")]
    EmptyMachineState,
    /// `Start`: an assignment on a NUMA node the machine does not have.
    #[error(
        "[memorymanager] (pod: {pod}, container: {container}) the memory assignment uses the NUMA that does not exist"
    )]
    UnknownNumaNode {
        /// Pod UID.
        pod: String,
        /// Container name.
        container: String,
    },
    /// `Start`: an assignment of a resource the machine does not have.
    #[error(
        "[memorymanager] (pod: {pod}, container: {container}) the memory assignment uses memory resource that does not exist"
    )]
    UnknownResource {
        /// Pod UID.
        pod: String,
        /// Container name.
        container: String,
    },
    /// `Start`: the stored machine state does not follow from the machine and the
    /// assignments.
    #[error("[memorymanager] the expected machine state is different from the real one")]
    MachineStateDiffers,
}

/// Upstream `Policy`. `&mut self` where upstream's policy changes its own fields.
pub trait Policy: Send {
    /// `Name`.
    fn name(&self) -> &'static str;
    /// `Start`.
    fn start(&mut self, s: &mut dyn State) -> Result<(), PolicyError>;
    /// `Allocate` (idempotent).
    fn allocate(
        &mut self,
        s: &mut dyn State,
        pod: &Pod,
        container: &Container,
    ) -> Result<(), PolicyError>;
    /// `RemoveContainer` (idempotent).
    fn remove_container(&mut self, s: &mut dyn State, pod_uid: &str, container_name: &str);
    /// `GetTopologyHints` (upstream's nil map: empty).
    fn get_topology_hints(&self, s: &dyn State, pod: &Pod, container: &Container) -> ResourceHints;
    /// `GetPodTopologyHints` (upstream's nil map: empty).
    fn get_pod_topology_hints(&self, s: &dyn State, pod: &Pod) -> ResourceHints;
    /// `GetAllocatableMemory`.
    fn get_allocatable_memory(&self, s: &dyn State) -> Vec<Block>;
}

/// The `None` policy: nothing is pinned.
#[derive(Debug, Default, Clone, Copy)]
pub struct NonePolicy;

impl Policy for NonePolicy {
    fn name(&self) -> &'static str {
        POLICY_NONE
    }

    fn start(&mut self, _s: &mut dyn State) -> Result<(), PolicyError> {
        tracing::info!("Start");
        Ok(())
    }

    fn allocate(
        &mut self,
        _s: &mut dyn State,
        _pod: &Pod,
        _container: &Container,
    ) -> Result<(), PolicyError> {
        Ok(())
    }

    fn remove_container(&mut self, _s: &mut dyn State, _pod_uid: &str, _container_name: &str) {}

    fn get_topology_hints(
        &self,
        _s: &dyn State,
        _pod: &Pod,
        _container: &Container,
    ) -> ResourceHints {
        ResourceHints::new()
    }

    fn get_pod_topology_hints(&self, _s: &dyn State, _pod: &Pod) -> ResourceHints {
        ResourceHints::new()
    }

    fn get_allocatable_memory(&self, _s: &dyn State) -> Vec<Block> {
        Vec::new()
    }
}
