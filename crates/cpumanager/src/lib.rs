//! The CPU manager: upstream `pkg/kubelet/cm/cpumanager` (v1.35.4), and the kubelet's
//! use of it.
//!
//! - topology (`CPUTopology`, `CPUDetails`, `Discover` from cAdvisor's machine
//!   info) in [`topology`], that machine info from sysfs in [`sysfs`];
//! - `takeByTopologyNUMAPacked` and `takeByTopologyNUMADistributed` in [`cpu_assignment`];
//! - `cpuManagerPolicyOptions` in [`policy_options`];
//! - the state and the `cpu_manager_state` checkpoint in [`state`];
//! - the `none` and `static` policies in [`policy`] and [`policy_static`];
//! - `cpu_manager.go` without its goroutine in [`manager`];
//! - the topology manager hint provider, the runtime's internal lifecycle hooks and the
//!   reconcile loop in [`kubelet`]; the `/metrics` families in [`metrics`].

pub mod cpu_assignment;
pub mod kubelet;
pub mod manager;
pub mod metrics;
pub mod policy;
pub mod policy_options;
pub mod policy_static;
pub mod state;
pub mod sysfs;
pub mod topology;

#[cfg(test)]
#[allow(dead_code)]
mod testing_topologies;

pub use cpu_assignment::{
    AssignmentError, CPUSortingStrategy, take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
};
pub use sysfs::{FakeSysFs, RealSysFs, SysFs, SysFsError, machine_info_from_sysfs};
pub use topology::{CPUDetails, CPUInfo, CPUTopology, MachineInfo, TopologyError, discover};
