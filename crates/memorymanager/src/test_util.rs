//! Builders shared by the unit tests (upstream's test helpers).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubelet_apimachinery::{Format, Quantity};

use crate::state::{MemoryTable, NUMANodeMap, NUMANodeState};
use crate::sysfs::{HugePagesInfo, MachineInfo, Node};

pub const MB: u64 = 1024 * 1024;
pub const GB: u64 = 1024 * MB;
pub const HUGEPAGES_2M: &str = "hugepages-2Mi";
pub const HUGEPAGES_1G: &str = "hugepages-1Gi";

/// A resource list of decimal quantities.
pub fn res(items: &[(&str, i64)]) -> BTreeMap<String, Quantity> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity::from_int(*v, Format::DecimalSI)))
        .collect()
}

/// A resource list of binary quantities.
pub fn res_bin(items: &[(&str, u64)]) -> BTreeMap<String, Quantity> {
    items
        .iter()
        .map(|(k, v)| {
            (
                (*k).to_owned(),
                Quantity::from_int(i64::try_from(*v).unwrap(), Format::BinarySI),
            )
        })
        .collect()
}

/// Upstream `returnMachineInfo`: two NUMA nodes of 10 GiB with 5 one-GiB pages each.
pub fn return_machine_info() -> MachineInfo {
    MachineInfo {
        topology: (0..2)
            .map(|id| Node {
                id,
                memory: 10 * GB,
                huge_pages: vec![HugePagesInfo {
                    page_size: 1024 * 1024,
                    num_pages: 5,
                }],
            })
            .collect(),
    }
}

/// A container whose requests and limits are `requests` (quantities as text).
pub fn container(name: &str, requests: &[(&str, &str)]) -> Container {
    let list: BTreeMap<String, ApiQuantity> = requests
        .iter()
        .map(|(k, v)| ((*k).to_owned(), ApiQuantity((*v).to_owned())))
        .collect();
    Container {
        name: name.to_owned(),
        resources: Some(ResourceRequirements {
            requests: Some(list.clone()),
            limits: Some(list),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    }
}

/// A container with requests below its limits (a Burstable pod).
pub fn burstable_container(name: &str) -> Container {
    let mut c = container(name, &[("cpu", "1"), ("memory", "1Gi")]);
    if let Some(r) = c.resources.as_mut() {
        r.limits = Some(
            [("cpu", "2"), ("memory", "2Gi")]
                .iter()
                .map(|(k, v)| ((*k).to_owned(), ApiQuantity((*v).to_owned())))
                .collect(),
        );
    }
    c
}

/// A Guaranteed container: 1 CPU, `memory` and optionally 1 GiB pages.
pub fn guaranteed(name: &str, memory: &str, hugepages_1g: Option<&str>) -> Container {
    let mut r = vec![("cpu", "1"), ("memory", memory)];
    if let Some(h) = hugepages_1g {
        r.push((HUGEPAGES_1G, h));
    }
    container(name, &r)
}

/// A pod with UID `uid`.
pub fn pod(uid: &str, init: Vec<Container>, containers: Vec<Container>) -> Pod {
    let mut p = Pod::default();
    p.metadata.uid = Some(uid.to_owned());
    p.metadata.name = Some(format!("pod-{uid}"));
    p.spec = Some(PodSpec {
        init_containers: if init.is_empty() { None } else { Some(init) },
        containers,
        ..PodSpec::default()
    });
    p
}

/// A memory table with `reserved` taken from `allocatable`.
pub fn table(total: u64, system_reserved: u64, allocatable: u64, reserved: u64) -> MemoryTable {
    MemoryTable {
        total_mem_size: total,
        system_reserved,
        allocatable,
        reserved,
        free: allocatable - reserved,
    }
}

/// A node state.
pub fn node(
    assignments: i64,
    cells: &[usize],
    memory: MemoryTable,
    hugepages_1g: MemoryTable,
) -> NUMANodeState {
    NUMANodeState {
        number_of_assignments: assignments,
        memory_map: [
            ("memory".to_owned(), memory),
            (HUGEPAGES_1G.to_owned(), hugepages_1g),
        ]
        .into_iter()
        .collect(),
        cells: cells.to_vec(),
    }
}

/// The default machine state of [`return_machine_info`] with 1 GiB of memory reserved
/// per node, as upstream's tests write it.
pub fn default_two_node_state() -> NUMANodeMap {
    (0..2)
        .map(|id| {
            (
                id,
                node(
                    0,
                    &[id],
                    table(10 * GB, GB, 4 * GB, 0),
                    table(5 * GB, 0, 5 * GB, 0),
                ),
            )
        })
        .collect()
}
