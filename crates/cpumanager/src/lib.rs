//! The CPU manager's core: upstream `pkg/kubelet/cm/cpumanager` (v1.35.4).
//!
//! Not wired into the kubelet yet: the `static` policy stays refused at start.
//!
//! - topology (`CPUTopology`, `CPUDetails`, `Discover` from cAdvisor's machine
//!   info) in [`topology`], that machine info from sysfs in [`sysfs`];
//! - `takeByTopologyNUMAPacked` and `takeByTopologyNUMADistributed` in [`cpu_assignment`];
//! - `cpuManagerPolicyOptions` in [`policy_options`];
//! - the state and the `cpu_manager_state` checkpoint in [`state`];
//! - the `none` and `static` policies in [`policy`] and [`policy_static`];
//! - `cpu_manager.go` without its goroutine in [`manager`].

pub mod cpu_assignment;
pub mod manager;
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
