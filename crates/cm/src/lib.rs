//! Container manager: cgroup roots, machine info, node allocatable, OOM score adjustment,
//! kernel tunables, pod cgroups, the open-files limit (mirrors `pkg/kubelet/cm`,
//! `pkg/util/oom`, `pkg/util/rlimit` and the machine facts the kubelet takes from cAdvisor).
//!
//! All host access goes through [`HostFs`], with [`FakeHostFs`] recording for unit tests.

pub mod capacity;
pub mod cgroup_manager;
pub mod cgroups;
pub mod hostfs;
pub mod kernel_tunables;
pub mod machine;
pub mod node_allocatable;
pub mod node_config;
pub mod oom;
pub mod pod_container_manager;
pub mod qos;
pub mod rlimit;
pub mod swap;
pub mod system_containers;
pub mod systemd_cgroups;

pub use capacity::{HugePagesInfo, capacity_from_machine_info, read_hugepages};
pub use cgroup_manager::{CgroupManager, CgroupResource, ResourceConfig};
pub use cgroups::{CgroupDriver, CgroupName, CgroupVersion, node_allocatable_root};
pub use hostfs::{FakeHostFs, HostDir, HostFile, HostFs, RealHostFs};
pub use kernel_tunables::{KernelTunableBehavior, setup_kernel_tunables};
pub use machine::{MachineInfo, read_machine_info};
pub use node_allocatable::{
    EnforcementEvent, KubepodsLimits, ReservedCgroups, enforce_reserved_cgroups, pid_capacity,
};
pub use node_config::{NodeConfig, NodeConfigInput};
pub use oom::apply_oom_score_adj;
pub use pod_container_manager::{
    FakeProcessKiller, PodContainerManager, ProcessKiller, RealProcessKiller,
};
pub use qos::{
    QosCgroups, QosContainerManager, QosMemoryRequests, QosMemoryReserve, QosSetup, QosUpdate,
    setup_qos_cgroups, setup_qos_cgroups_with_manager,
};
pub use rlimit::{FakeRlimits, RealRlimits, Rlimits};
pub use swap::check_swap;
pub use system_containers::{SystemCgroup, SystemContainers};

/// Errors of the container manager.
#[derive(Debug, thiserror::Error)]
pub enum CmError {
    /// A host file could not be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A host file had unexpected content.
    #[error("failed to parse {path}: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// Setting an OOM score adjustment failed.
    #[error("failed to set oom_score_adj to {value} ({path}): {reason}")]
    OomScoreAdj {
        /// The value we tried.
        value: i32,
        /// The proc file.
        path: String,
        /// Why it failed.
        reason: String,
    },
    /// A container-manager parameter is invalid (the message names the flag).
    #[error("{0}")]
    Config(String),
    /// Kernel tunables differ from what the kubelet needs, or could not be read or set
    /// (upstream `setupKernelTunables`' aggregate error).
    #[error("{0}")]
    KernelTunables(String),
    /// A cgroup the kubelet was told to use is missing or lacks controllers (upstream
    /// `Validate`'s message).
    #[error("{0}")]
    InvalidCgroup(String),
    /// Enforcing node allocatable on a reserved cgroup failed (upstream's message, e.g.
    /// `Failed to enforce System Reserved Cgroup Limits on "/system.slice": …`).
    #[error("{0}")]
    NodeAllocatable(String),
    /// systemd refused or could not be asked (the systemd cgroup driver; upstream's
    /// libcontainer messages).
    #[error("{0}")]
    Systemd(String),
    /// A cgroup could not be created or written.
    #[error("failed to set up cgroup {path}: {reason}")]
    Cgroup {
        /// The cgroup path.
        path: String,
        /// Why.
        reason: String,
    },
}
