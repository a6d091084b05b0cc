//! Node capacity and the node allocatable reservation: cAdvisor's `CapacityFromMachineInfo`
//! and `EphemeralStorageCapacityFromFsInfo` (`pkg/kubelet/cadvisor/util.go`), the huge
//! pages cAdvisor reads (`/sys/kernel/mm/hugepages`), the root filesystem's capacity
//! (`RootFsInfo`), and the container manager's `GetNodeAllocatableReservation` with
//! `hardEvictionReservation` (`pkg/kubelet/cm/node_container_manager_linux.go`,
//! `pkg/kubelet/cm/helpers.go`).

use std::collections::BTreeMap;
use std::path::Path;

use kubelet_apimachinery::eviction::{Signal, ThresholdOperator};
use kubelet_apimachinery::{Format, Quantity};

use crate::hostfs::HostFs;
use crate::machine::MachineInfo;
use crate::node_config::NodeConfig;

/// `v1.ResourceCPU`.
pub const RESOURCE_CPU: &str = "cpu";
/// `v1.ResourceMemory`.
pub const RESOURCE_MEMORY: &str = "memory";
/// `v1.ResourcePods`.
pub const RESOURCE_PODS: &str = "pods";
/// `v1.ResourceEphemeralStorage`.
pub const RESOURCE_EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// `v1.ResourceHugePagesPrefix`.
pub const RESOURCE_HUGE_PAGES_PREFIX: &str = "hugepages-";

/// One huge page size of the machine (cAdvisor `HugePagesInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HugePagesInfo {
    /// Page size in KiB.
    pub page_size_kib: u64,
    /// Number of pages of this size (`nr_hugepages`).
    pub num_pages: u64,
}

const HUGEPAGES_DIR: &str = "/sys/kernel/mm/hugepages";

/// The huge page sizes of the machine, as cAdvisor's `GetHugePagesInfo` reads them: one per
/// `hugepages-<size>kB` directory, with its `nr_hugepages`. A machine without the directory
/// has none; an unreadable count counts as 0 pages.
pub fn read_hugepages(fs: &dyn HostFs) -> Vec<HugePagesInfo> {
    let Ok(dirs) = fs.read_dir(Path::new(HUGEPAGES_DIR)) else {
        return Vec::new();
    };
    dirs.iter()
        .filter_map(|name| {
            let kib = name.strip_prefix("hugepages-")?.strip_suffix("kB")?;
            let page_size_kib = kib.parse().ok()?;
            let num_pages = fs
                .read_to_string(&Path::new(HUGEPAGES_DIR).join(name).join("nr_hugepages"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            Some(HugePagesInfo {
                page_size_kib,
                num_pages,
            })
        })
        .collect()
}

/// `v1helper.HugePageResourceName`: `hugepages-<page size as a BinarySI quantity>`.
pub fn huge_page_resource_name(page_size_bytes: i64) -> String {
    format!(
        "{RESOURCE_HUGE_PAGES_PREFIX}{}",
        Quantity::from_int(page_size_bytes, Format::BinarySI)
    )
}

/// `v1helper.IsHugePageResourceName`.
pub fn is_huge_page_resource_name(name: &str) -> bool {
    name.starts_with(RESOURCE_HUGE_PAGES_PREFIX)
}

/// `cadvisor.CapacityFromMachineInfo`: cpu (cores × 1000m), memory, and one
/// `hugepages-<size>` entry per page size (page size × pages).
pub fn capacity_from_machine_info(
    machine: &MachineInfo,
    hugepages: &[HugePagesInfo],
) -> BTreeMap<String, Quantity> {
    let cores = i64::try_from(machine.num_cores()).unwrap_or(i64::MAX);
    let mut c = BTreeMap::new();
    c.insert(
        RESOURCE_CPU.to_string(),
        Quantity::from_milli(cores.saturating_mul(1000), Format::DecimalSI),
    );
    c.insert(
        RESOURCE_MEMORY.to_string(),
        Quantity::from_int(
            i64::try_from(machine.memory_capacity).unwrap_or(i64::MAX),
            Format::BinarySI,
        ),
    );
    for hp in hugepages {
        let page = i64::try_from(hp.page_size_kib.saturating_mul(1024)).unwrap_or(i64::MAX);
        let total = page.saturating_mul(i64::try_from(hp.num_pages).unwrap_or(i64::MAX));
        c.insert(
            huge_page_resource_name(page),
            Quantity::from_int(total, Format::BinarySI),
        );
    }
    c
}

/// `cadvisor.EphemeralStorageCapacityFromFsInfo`: the root filesystem's capacity in bytes.
pub fn ephemeral_storage_capacity(capacity_bytes: u64) -> Quantity {
    Quantity::from_int(
        i64::try_from(capacity_bytes).unwrap_or(i64::MAX),
        Format::BinarySI,
    )
}

/// The capacity in bytes of the filesystem holding `path` (cAdvisor `RootFsInfo().Capacity`
/// for the kubelet's root directory: fragment size × blocks).
pub fn fs_capacity(path: &Path) -> std::io::Result<u64> {
    let st = nix::sys::statvfs::statvfs(path).map_err(std::io::Error::from)?;
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let (frsize, blocks) = (st.fragment_size() as u64, u64::from(st.blocks()));
    Ok(frsize.saturating_mul(blocks))
}

/// `hardEvictionReservation`: what the hard `memory.available` and `nodefs.available`
/// thresholds take out of allocatable memory and ephemeral storage.
fn hard_eviction_reservation(
    node_config: &NodeConfig,
    capacity: &BTreeMap<String, Quantity>,
) -> BTreeMap<String, Quantity> {
    let zero = Quantity::default();
    let mut ret = BTreeMap::new();
    for t in &node_config.hard_eviction_thresholds {
        if t.operator != ThresholdOperator::LessThan {
            continue;
        }
        let resource = match t.signal {
            Signal::MemoryAvailable => RESOURCE_MEMORY,
            Signal::NodeFsAvailable => RESOURCE_EPHEMERAL_STORAGE,
            _ => continue,
        };
        let cap = capacity.get(resource).unwrap_or(&zero);
        ret.insert(resource.to_string(), t.value.quantity_for_capacity(cap));
    }
    ret
}

impl NodeConfig {
    /// `GetNodeAllocatableReservation`: for each resource of `capacity` (the container
    /// manager's capacity), system-reserved + kube-reserved + the hard eviction
    /// reservation, left out when zero.
    pub fn node_allocatable_reservation(
        &self,
        capacity: &BTreeMap<String, Quantity>,
    ) -> BTreeMap<String, Quantity> {
        let eviction = hard_eviction_reservation(self, capacity);
        let mut result = BTreeMap::new();
        for k in capacity.keys() {
            let mut value = Quantity::from_int(0, Format::DecimalSI);
            for part in [
                self.system_reserved.get(k),
                self.kube_reserved.get(k),
                eviction.get(k),
            ]
            .into_iter()
            .flatten()
            {
                value = value.add(part);
            }
            if !value.is_zero() {
                result.insert(k.clone(), value);
            }
        }
        result
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::hostfs::FakeHostFs;
    use crate::node_config::NodeConfigInput;
    use kubelet_apimachinery::CpuSet;

    fn machine() -> MachineInfo {
        MachineInfo {
            online_cpus: CpuSet::parse("0-3").unwrap(),
            memory_capacity: 8 << 30,
            machine_id: String::new(),
            boot_id: String::new(),
            system_uuid: String::new(),
            kernel_version: String::new(),
            os_image: String::new(),
        }
    }

    #[test]
    fn hugepages_from_sysfs() {
        let fs = FakeHostFs::default();
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-2048kB");
        fs.add_dir("/sys/kernel/mm/hugepages/hugepages-1048576kB");
        fs.add_file(
            "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
            "3\n",
        );
        let hp = read_hugepages(&fs);
        assert_eq!(hp.len(), 2);
        let cap = capacity_from_machine_info(&machine(), &hp);
        let shown: Vec<String> = cap.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            shown,
            [
                "cpu=4",
                "hugepages-1Gi=0",
                "hugepages-2Mi=6Mi",
                "memory=8Gi"
            ]
        );
        assert!(read_hugepages(&FakeHostFs::default()).is_empty());
    }

    #[test]
    fn reservation_sums_reserved_and_hard_eviction() {
        let kube = BTreeMap::from([("cpu".to_string(), "100m".to_string())]);
        let sys = BTreeMap::from([
            ("cpu".to_string(), "200m".to_string()),
            ("memory".to_string(), "1Gi".to_string()),
        ]);
        let hard = BTreeMap::from([
            ("memory.available".to_string(), "100Mi".to_string()),
            ("nodefs.available".to_string(), "50%".to_string()),
        ]);
        let e = BTreeMap::new();
        let nc = NodeConfig::parse(
            NodeConfigInput {
                reserved_system_cpus: "",
                kube_reserved: &kube,
                system_reserved: &sys,
                eviction_hard: &hard,
                ignore_eviction_for_allocatable: false,
                qos_reserved: &e,
                enforce_node_allocatable: &[],
            },
            &machine(),
        )
        .unwrap();
        let mut cap = capacity_from_machine_info(&machine(), &[]);
        cap.insert(
            RESOURCE_EPHEMERAL_STORAGE.into(),
            ephemeral_storage_capacity(100 << 30),
        );
        let r = nc.node_allocatable_reservation(&cap);
        assert_eq!(r["cpu"].milli_value(), 300);
        assert_eq!(r["memory"].value(), (1 << 30) + (100 << 20));
        assert_eq!(r["ephemeral-storage"].value(), 50 << 30);
        assert_eq!(r.len(), 3);
    }
}
