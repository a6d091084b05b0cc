#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]

use super::*;
use kubelet_cpumanager::{FakeSysFs, RealSysFs};

fn fixture(name: &str) -> RealSysFs {
    RealSysFs::with_root(format!(
        "{}/testdata/sysfs/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn pages(page_size: u64, num_pages: u64) -> HugePagesInfo {
    HugePagesInfo {
        page_size,
        num_pages,
    }
}

/// This VM: one node; hugepage directories in name order (as `os.ReadDir`).
#[test]
fn vm_one_numa_node() {
    let m = machine_info_from_sysfs(&fixture("vm-1numa")).unwrap();
    assert_eq!(
        m.topology,
        vec![Node {
            id: 0,
            memory: 23_947_036 * 1024,
            huge_pages: vec![pages(1_048_576, 0), pages(2048, 0)],
        }]
    );
}

/// A 2-socket machine with 4 NUMA nodes and hugepages of two sizes.
#[test]
fn dual_socket_four_numa_nodes_with_hugepages() {
    let m = machine_info_from_sysfs(&fixture("dual-socket-4-numa")).unwrap();
    assert_eq!(m.topology.len(), 4);
    for (i, node) in m.topology.iter().enumerate() {
        assert_eq!(node.id, i);
        assert_eq!(node.memory, 16 * 1024 * 1024 * 1024);
        let one_gi = if i % 2 == 0 { 2 } else { 0 };
        assert_eq!(
            node.huge_pages,
            vec![pages(1_048_576, one_gi), pages(2048, 512)]
        );
    }
}

/// Node directories in glob order (`node10` before `node2`); no `meminfo`: 0; no
/// hugepages directory: none; a bad `meminfo` or page count is an error.
#[test]
fn fake_trees() {
    let fs = FakeSysFs::new()
        .with_file(
            "devices/system/node/node2/meminfo",
            "Node 2 MemTotal: 4 kB\n",
        )
        .with_file("devices/system/node/node10/cpu0", "")
        .with_file("devices/system/node/online", "0-10")
        .with_file("devices/system/node/possible", "0-10");
    let m = machine_info_from_sysfs(&fs).unwrap();
    assert_eq!(
        m.topology,
        vec![
            Node {
                id: 10,
                memory: 0,
                huge_pages: vec![]
            },
            Node {
                id: 2,
                memory: 4096,
                huge_pages: vec![]
            },
        ]
    );
    let bad = FakeSysFs::new().with_file("devices/system/node/node0/meminfo", "MemFree: 1 kB");
    assert_eq!(
        machine_info_from_sysfs(&bad).err().unwrap().to_string(),
        "failed to match regexp in output: \"MemFree: 1 kB\""
    );
    let bad = FakeSysFs::new()
        .with_file("devices/system/node/node0/meminfo", "Node 0 MemTotal: 1 kB")
        .with_file(
            "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages",
            "x\n",
        );
    assert_eq!(
        machine_info_from_sysfs(&bad).err().unwrap().to_string(),
        "could not parse file nr_hugepage for hugepages-2048kB, contents \"x\\n\""
    );
}

/// Without node directories: one node per CPU socket, no memory (cAdvisor's
/// `getCPUTopology`).
#[test]
fn no_node_directories_one_node_per_socket() {
    let fs = FakeSysFs::new()
        .with_file("devices/system/cpu/online", "0-1")
        .with_file("devices/system/cpu/cpu0/topology/core_id", "0")
        .with_file("devices/system/cpu/cpu0/topology/physical_package_id", "0")
        .with_file("devices/system/cpu/cpu1/topology/core_id", "0")
        .with_file("devices/system/cpu/cpu1/topology/physical_package_id", "1");
    let m = machine_info_from_sysfs(&fs).unwrap();
    assert_eq!(
        m.topology
            .iter()
            .map(|n| (n.id, n.memory))
            .collect::<Vec<_>>(),
        vec![(0, 0), (1, 0)]
    );
}
