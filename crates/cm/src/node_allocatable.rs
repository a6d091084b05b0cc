//! Node allocatable enforcement beyond `pods` (mirrors
//! `pkg/kubelet/cm/node_container_manager_linux.go`): the `system-reserved`,
//! `kube-reserved` and `-compressible` parts of `enforceNodeAllocatableCgroups`, with
//! `enforceExistingCgroup` and `getCgroupConfig` / `getCgroupConfigInternal`; and the pid
//! capacity (`pidlimit.Stats`' `MaxPID`, in upstream's `internalCapacity`) that
//! `getNodeAllocatableInternalAbsolute` limits `kubepods`' pids with.

use std::collections::BTreeMap;
use std::path::Path;

use kubelet_apimachinery::Quantity;

use crate::CmError;
use crate::cgroup_manager::{CgroupManager, ResourceConfig};
use crate::hostfs::HostFs;
use crate::node_config::NodeConfig;
use crate::qos::milli_cpu_to_shares;

/// `kubetypes.NodeAllocatableEnforcementKey`.
pub const NODE_ALLOCATABLE_ENFORCEMENT_KEY: &str = "pods";
/// `kubetypes.SystemReservedEnforcementKey`.
pub const SYSTEM_RESERVED_ENFORCEMENT_KEY: &str = "system-reserved";
/// `kubetypes.SystemReservedCompressibleEnforcementKey`.
pub const SYSTEM_RESERVED_COMPRESSIBLE_ENFORCEMENT_KEY: &str = "system-reserved-compressible";
/// `kubetypes.KubeReservedEnforcementKey`.
pub const KUBE_RESERVED_ENFORCEMENT_KEY: &str = "kube-reserved";
/// `kubetypes.KubeReservedCompressibleEnforcementKey`.
pub const KUBE_RESERVED_COMPRESSIBLE_ENFORCEMENT_KEY: &str = "kube-reserved-compressible";
/// `pidlimit.PIDs`: the internal resource name of process IDs.
pub const PIDS: &str = "pid";

/// `pidlimit.Stats().MaxPID`: the smaller of `kernel.pid_max` and `kernel.threads-max`
/// (either alone when the other cannot be read; `None` when neither can).
pub fn pid_capacity(fs: &dyn HostFs) -> Option<i64> {
    ["/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"]
        .iter()
        .filter_map(|f| fs.read_to_string(Path::new(f)).ok())
        .filter_map(|s| s.trim().parse::<i64>().ok())
        .min()
}

/// What `kubepods` is limited to (upstream `enforceNodeAllocatableCgroups`' config for
/// the node allocatable cgroup): `(millicores, bytes)` and the pids limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KubepodsLimits {
    /// `(millicores, bytes)`.
    pub cpu_memory: (i64, i64),
    /// pids.max (`None` when the pid capacity is unknown).
    pub pids: Option<i64>,
}

impl NodeConfig {
    /// `kubepods`' limits: node allocatable when `pods` is enforced
    /// (`getNodeAllocatableInternalAbsolute`), the machine's capacity otherwise
    /// (`internalCapacity`: upstream limits it "no matter what", since the default CPU
    /// shares of a new cgroup are low).
    pub fn kubepods_limits(
        &self,
        machine: &crate::machine::MachineInfo,
        pid_capacity: Option<i64>,
    ) -> KubepodsLimits {
        let enforce_pods = self
            .enforce_node_allocatable
            .iter()
            .any(|k| k == NODE_ALLOCATABLE_ENFORCEMENT_KEY);
        if enforce_pods {
            return KubepodsLimits {
                cpu_memory: self.pods_cgroup_limits(machine),
                pids: self.pods_pids_limit(pid_capacity),
            };
        }
        let cpu = i64::try_from(machine.num_cores())
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        let memory = i64::try_from(machine.memory_capacity).unwrap_or(i64::MAX);
        KubepodsLimits {
            cpu_memory: (cpu, memory),
            pids: pid_capacity,
        }
    }

    /// `kubepods`' pids limit when `pods` is enforced: the pid capacity less the system-
    /// and kube-reserved `pid`, never below zero (upstream
    /// `getNodeAllocatableInternalAbsolute` for `pid`); `None` without a capacity.
    pub fn pods_pids_limit(&self, pid_capacity: Option<i64>) -> Option<i64> {
        let capacity = pid_capacity?;
        let zero = Quantity::default();
        let reserved = self
            .system_reserved
            .get(PIDS)
            .unwrap_or(&zero)
            .add(self.kube_reserved.get(PIDS).unwrap_or(&zero))
            .value();
        Some(capacity.saturating_sub(reserved).max(0))
    }
}

/// Upstream `getCgroupConfigInternal`: the CPU shares of `cpu`, and unless only the
/// compressible resources are asked for, the memory limit of `memory` and the pids limit
/// of `pid` (reserved resources never name huge pages, so there are no huge page limits;
/// the cgroup manager still sets the host's page sizes to 0, as upstream's
/// `maybeSetHugetlb` does).
pub fn cgroup_config_internal(
    rl: &BTreeMap<String, Quantity>,
    compressible_resources_only: bool,
) -> ResourceConfig {
    let mut rc = ResourceConfig::default();
    if !compressible_resources_only {
        rc.memory = rl.get("memory").map(Quantity::value);
    }
    rc.cpu_shares = rl
        .get("cpu")
        .and_then(|q| u64::try_from(milli_cpu_to_shares(q.milli_value())).ok());
    if !compressible_resources_only {
        rc.pids_limit = rl.get(PIDS).map(Quantity::value);
    }
    rc
}

/// An event `enforceNodeAllocatableCgroups` records on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnforcementEvent {
    /// Normal `NodeAllocatableEnforced`.
    Enforced(String),
    /// Warning `FailedNodeAllocatableEnforcement`.
    Failed(String),
}

/// The reserved cgroups, as configured (`systemReservedCgroup`, `kubeReservedCgroup`, in
/// the cgroup driver's notation), and every CPU of the machine: upstream's
/// `getCgroupConfig` sets the cpuset to all CPUs under the `none` CPU manager policy, the
/// only one kubelet-rs runs.
#[derive(Debug, Clone, Copy)]
pub struct ReservedCgroups<'a> {
    /// `systemReservedCgroup`.
    pub system_reserved_cgroup: &'a str,
    /// `kubeReservedCgroup`.
    pub kube_reserved_cgroup: &'a str,
    /// `cpuManager.GetAllCPUs()` (e.g. `0-3`).
    pub all_cpus: &'a str,
    /// The `MemoryQoS` gate: the reserved memory also becomes the cgroup's `memory.min`
    /// (upstream checks the gate only, so on cgroup v1 the update fails, as libcontainer
    /// refuses unified files there).
    pub memory_qos: bool,
}

/// Upstream `enforceExistingCgroup`: the cgroup must exist (`Validate`); then the
/// reservation is written as its limits (`Update`), with MemoryQoS also as `memory.min`.
pub fn enforce_existing_cgroup(
    cgroups: &CgroupManager,
    name: &str,
    rl: &BTreeMap<String, Quantity>,
    compressible_resources_only: bool,
    (all_cpus, memory_qos): (&str, bool),
) -> Result<(), CmError> {
    let c_name = cgroups.cgroup_name(name);
    let mut rp = cgroup_config_internal(rl, compressible_resources_only);
    if !all_cpus.is_empty() {
        rp.cpuset_cpus = Some(all_cpus.to_string());
    }
    // MemoryQoS for the reserved cgroups (KEP 2570).
    if memory_qos && let Some(memory) = rp.memory {
        rp.unified
            .insert(crate::qos::MEMORY_MIN.to_string(), memory.to_string());
    }
    tracing::debug!(
        cgroup_name = %c_name.go_quoted(),
        cpu_shares = ?rp.cpu_shares,
        memory = ?rp.memory,
        pids_limit = ?rp.pids_limit,
        "Enforcing limits on cgroup"
    );
    cgroups.validate(&c_name)?;
    cgroups.update(&c_name, &rp)
}

/// The reserved part of upstream `enforceNodeAllocatableCgroups`, in its order:
/// `system-reserved`, `kube-reserved`, `system-reserved-compressible`,
/// `kube-reserved-compressible`. Each enforced cgroup gives a Normal event; the first
/// failure gives a Warning event and is the error (the container manager does not start).
/// The events come back in both cases.
pub fn enforce_reserved_cgroups(
    cgroups: &CgroupManager,
    nc: &NodeConfig,
    reserved: ReservedCgroups<'_>,
) -> (Vec<EnforcementEvent>, Result<(), CmError>) {
    let system = (
        reserved.system_reserved_cgroup,
        &nc.system_reserved,
        "system reserved",
    );
    let kube = (
        reserved.kube_reserved_cgroup,
        &nc.kube_reserved,
        "kube reserved",
    );
    let steps = [
        (
            SYSTEM_RESERVED_ENFORCEMENT_KEY,
            system,
            false,
            "System Reserved",
        ),
        (KUBE_RESERVED_ENFORCEMENT_KEY, kube, false, "Kube Reserved"),
        (
            SYSTEM_RESERVED_COMPRESSIBLE_ENFORCEMENT_KEY,
            system,
            true,
            "System Reserved Compressible",
        ),
        (
            KUBE_RESERVED_COMPRESSIBLE_ENFORCEMENT_KEY,
            kube,
            true,
            "Kube Reserved Compressible",
        ),
    ];
    let mut events = Vec::new();
    for (key, (cgroup, rl, what), compressible, title) in steps {
        if !nc.enforce_node_allocatable.iter().any(|k| k == key) {
            continue;
        }
        tracing::info!(cgroup_name = cgroup, limits = ?rl, "Enforcing {what} on cgroup");
        if let Err(e) = enforce_existing_cgroup(
            cgroups,
            cgroup,
            rl,
            compressible,
            (reserved.all_cpus, reserved.memory_qos),
        ) {
            let message = format!("Failed to enforce {title} Cgroup Limits on {cgroup:?}: {e}");
            events.push(EnforcementEvent::Failed(message.clone()));
            return (events, Err(CmError::NodeAllocatable(message)));
        }
        events.push(EnforcementEvent::Enforced(format!(
            "Updated limits on {what} cgroup {cgroup}"
        )));
    }
    (events, Ok(()))
}

#[cfg(test)]
#[path = "node_allocatable_tests.rs"]
mod tests;
