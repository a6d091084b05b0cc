//! The container manager's parameters, parsed in `run()` before `NewContainerManager`
//! (mirrors `cmd/kubelet/app/server.go`: `getReservedCPUs`, `parseResourceList`,
//! `eviction.ParseThresholdConfig`, `cm.ParseQOSReserved`) and node allocatable
//! (`pkg/kubelet/cm/node_container_manager_linux.go`).

use std::collections::BTreeMap;

use kubelet_apimachinery::{
    CpuSet, Quantity, Threshold, parse_qos_reserved, parse_resource_list, parse_threshold_config,
};

use crate::CmError;
use crate::machine::MachineInfo;

/// What the container manager is configured with (the parsed part of upstream `NodeConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    /// `reservedSystemCPUs`.
    pub reserved_system_cpus: CpuSet,
    /// `kubeReserved`, parsed.
    pub kube_reserved: BTreeMap<String, Quantity>,
    /// `systemReserved`, parsed (its `cpu` replaced by the reserved CPU count when
    /// `reservedSystemCPUs` is set).
    pub system_reserved: BTreeMap<String, Quantity>,
    /// Hard eviction thresholds taken out of allocatable.
    pub hard_eviction_thresholds: Vec<Threshold>,
    /// `qosReserved` percentages by resource.
    pub qos_reserved: BTreeMap<String, i64>,
    /// `enforceNodeAllocatable`.
    pub enforce_node_allocatable: Vec<String>,
}

/// The raw configuration values [`NodeConfig::parse`] reads.
#[derive(Debug, Clone, Copy)]
pub struct NodeConfigInput<'a> {
    /// `reservedSystemCPUs`.
    pub reserved_system_cpus: &'a str,
    /// `kubeReserved`.
    pub kube_reserved: &'a BTreeMap<String, String>,
    /// `systemReserved`.
    pub system_reserved: &'a BTreeMap<String, String>,
    /// `evictionHard`.
    pub eviction_hard: &'a BTreeMap<String, String>,
    /// `--experimental-allocatable-ignore-eviction`.
    pub ignore_eviction_for_allocatable: bool,
    /// `qosReserved`.
    pub qos_reserved: &'a BTreeMap<String, String>,
    /// `enforceNodeAllocatable`.
    pub enforce_node_allocatable: &'a [String],
}

impl NodeConfig {
    /// Parses and checks the container-manager settings against the machine.
    pub fn parse(input: NodeConfigInput<'_>, machine: &MachineInfo) -> Result<Self, CmError> {
        let reserved_system_cpus = reserved_cpus(input.reserved_system_cpus, machine)?;
        let mut kube_reserved = parse_resource_list(input.kube_reserved)
            .map_err(|e| CmError::Config(format!("--kube-reserved value failed to parse: {e}")))?;
        let mut system_reserved = parse_resource_list(input.system_reserved).map_err(|e| {
            CmError::Config(format!("--system-reserved value failed to parse: {e}"))
        })?;
        if !reserved_system_cpus.is_empty() {
            // The reserved CPUs replace any CPU quantity in kube- and system-reserved.
            kube_reserved.remove("cpu");
            let n = i64::try_from(reserved_system_cpus.len()).unwrap_or(i64::MAX);
            system_reserved.insert(
                "cpu".into(),
                Quantity::from_int(n, kubelet_apimachinery::Format::DecimalSI),
            );
        }
        let hard_eviction_thresholds = if input.ignore_eviction_for_allocatable {
            Vec::new()
        } else {
            let empty = BTreeMap::new();
            // Upstream returns the bare parse error; the value is named so the operator can
            // find it.
            parse_threshold_config(&[], input.eviction_hard, &empty, &empty, &empty).map_err(
                |e| {
                    CmError::Config(format!(
                        "evictionHard (--eviction-hard) {}: {e}",
                        kubelet_apimachinery::format_langle_map(input.eviction_hard)
                    ))
                },
            )?
        };
        let qos_reserved = parse_qos_reserved(input.qos_reserved)
            .map_err(|e| CmError::Config(format!("--qos-reserved value failed to parse: {e}")))?;
        Ok(NodeConfig {
            reserved_system_cpus,
            kube_reserved,
            system_reserved,
            hard_eviction_thresholds,
            qos_reserved,
            enforce_node_allocatable: input.enforce_node_allocatable.to_vec(),
        })
    }

    fn reserved(&self, resource: &str) -> Quantity {
        let zero = Quantity::default();
        let k = self.kube_reserved.get(resource).unwrap_or(&zero);
        let s = self.system_reserved.get(resource).unwrap_or(&zero);
        k.add(s)
    }

    /// Millicores and bytes the pods' cgroup (`kubepods`) is limited to when `pods` is
    /// enforced: capacity minus kube- and system-reserved (upstream
    /// `getNodeAllocatableInternalAbsolute`; eviction thresholds are not subtracted here).
    pub fn pods_cgroup_limits(&self, machine: &MachineInfo) -> (i64, i64) {
        let cpu_capacity = i64::try_from(machine.num_cores()).unwrap_or(i64::MAX) * 1000;
        let mem_capacity = i64::try_from(machine.memory_capacity).unwrap_or(i64::MAX);
        let cpu = (cpu_capacity - self.reserved("cpu").milli_value()).max(0);
        let mem = (mem_capacity - self.reserved("memory").value()).max(0);
        (cpu, mem)
    }
}

/// Upstream `getReservedCPUs`.
fn reserved_cpus(cpus: &str, machine: &MachineInfo) -> Result<CpuSet, CmError> {
    if cpus.is_empty() {
        return Ok(CpuSet::new());
    }
    let set = CpuSet::parse(cpus)
        .map_err(|e| CmError::Config(format!("unable to parse reserved-cpus list: {e}")))?;
    if !set.is_subset_of(&machine.online_cpus) {
        return Err(CmError::Config(format!(
            "reserved-cpus: {cpus} is not a subset of online-cpus: {}",
            machine.online_cpus
        )));
    }
    Ok(set)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn machine() -> MachineInfo {
        MachineInfo {
            online_cpus: CpuSet::parse("0-1").unwrap(),
            memory_capacity: 4 << 30,
            machine_id: String::new(),
            boot_id: String::new(),
            system_uuid: String::new(),
            kernel_version: String::new(),
            os_image: String::new(),
        }
    }

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn input<'a>(
        cpus: &'a str,
        kube: &'a BTreeMap<String, String>,
        sys: &'a BTreeMap<String, String>,
        hard: &'a BTreeMap<String, String>,
        qos: &'a BTreeMap<String, String>,
    ) -> NodeConfigInput<'a> {
        NodeConfigInput {
            reserved_system_cpus: cpus,
            kube_reserved: kube,
            system_reserved: sys,
            eviction_hard: hard,
            ignore_eviction_for_allocatable: false,
            qos_reserved: qos,
            enforce_node_allocatable: &[],
        }
    }

    #[test]
    fn reserved_cpus_replace_cpu_reservations() {
        let kube = map(&[("cpu", "200m"), ("memory", "1Gi")]);
        let sys = map(&[("cpu", "100m")]);
        let e = BTreeMap::new();
        let nc = NodeConfig::parse(input("1", &kube, &sys, &e, &e), &machine()).unwrap();
        assert!(!nc.kube_reserved.contains_key("cpu"));
        assert_eq!(nc.system_reserved["cpu"].to_string(), "1");
        let (cpu, mem) = nc.pods_cgroup_limits(&machine());
        assert_eq!(cpu, 1000);
        assert_eq!(mem, 3 << 30);
    }

    #[test]
    fn reserved_cpus_must_be_online() {
        let e = BTreeMap::new();
        let err = NodeConfig::parse(input("0-3", &e, &e, &e, &e), &machine()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "reserved-cpus: 0-3 is not a subset of online-cpus: 0-1"
        );
    }

    #[test]
    fn errors_name_the_flag() {
        let e = BTreeMap::new();
        let bad = map(&[("gpu", "1")]);
        let err = NodeConfig::parse(input("", &bad, &e, &e, &e), &machine()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--kube-reserved value failed to parse"),
            "{err}"
        );
        let err = NodeConfig::parse(input("", &e, &bad, &e, &e), &machine()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--system-reserved value failed to parse"),
            "{err}"
        );
        let qos = map(&[("memory", "150%")]);
        let err = NodeConfig::parse(input("", &e, &e, &e, &qos), &machine()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--qos-reserved value failed to parse"),
            "{err}"
        );
        let hard = map(&[("memory.available", "lots")]);
        assert!(NodeConfig::parse(input("", &e, &e, &hard, &e), &machine()).is_err());
    }

    #[test]
    fn eviction_thresholds_parsed() {
        let e = BTreeMap::new();
        let hard = map(&[("memory.available", "100Mi"), ("nodefs.available", "10%")]);
        let nc = NodeConfig::parse(input("", &e, &e, &hard, &e), &machine()).unwrap();
        assert_eq!(nc.hard_eviction_thresholds.len(), 2);
    }
}
