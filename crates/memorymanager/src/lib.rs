//! The memory manager: upstream `pkg/kubelet/cm/memorymanager` (v1.35.4), and the
//! kubelet's use of it.
//!
//! - the state and the `memory_manager_state` checkpoint in [`state`];
//! - memory and hugepages per NUMA node from sysfs in [`sysfs`];
//! - the `None` and `Static` policies in [`policy`] and [`policy_static`];
//! - `memory_manager.go` (`NewManager` with the `reservedMemory` checks) in [`manager`];
//! - the shared manager (the topology manager's hint provider) and the runtime's internal
//!   lifecycle hooks in [`kubelet`]; the `/metrics` counters in [`metrics`].

pub mod kubelet;
pub mod manager;
pub mod metrics;
pub mod policy;
pub mod policy_static;
pub mod state;
pub mod sysfs;

#[cfg(test)]
#[allow(dead_code, clippy::unwrap_used)]
mod test_util;

pub use manager::{Manager, ManagerError, MemoryReservation};
pub use sysfs::{HugePagesInfo, MachineInfo, Node, machine_info_from_sysfs};
