#![allow(clippy::unwrap_used)]

use super::*;
use crate::topology::{CPUInfo, CPUTopology, discover};

fn fixture(name: &str) -> RealSysFs {
    RealSysFs::with_root(format!(
        "{}/testdata/sysfs/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn info(core_id: usize, socket_id: usize, numa_node_id: usize, uncore_cache_id: usize) -> CPUInfo {
    CPUInfo {
        numa_node_id,
        socket_id,
        core_id,
        uncore_cache_id,
    }
}

#[test]
fn discover_this_vm_layout() {
    let machine = machine_info_from_sysfs(&fixture("vm-2cpu")).unwrap();
    assert_eq!(machine.num_cores, 2);
    assert_eq!(machine.num_sockets, 1);
    // The L3 spans the whole node: a node cache, not an uncore cache.
    assert_eq!(machine.topology[0].caches.len(), 1);
    assert!(
        machine.topology[0]
            .cores
            .iter()
            .all(|c| c.uncore_caches.is_empty())
    );
    assert!(
        machine.topology[0]
            .cores
            .iter()
            .all(|c| c.caches.len() == 1)
    );
    let topo = discover(&machine).unwrap();
    assert_eq!(
        topo,
        CPUTopology {
            num_cpus: 2,
            num_cores: 2,
            num_uncore_cache: 1,
            num_sockets: 1,
            num_numa_nodes: 1,
            cpu_details: [(0, info(0, 0, 0, 0)), (1, info(1, 0, 0, 0))]
                .into_iter()
                .collect(),
        }
    );
}

#[test]
fn discover_dual_socket_four_numa_nodes_split_l3() {
    let machine = machine_info_from_sysfs(&fixture("dual-socket-4-numa")).unwrap();
    assert_eq!(machine.num_cores, 32);
    assert_eq!(machine.num_sockets, 2);
    assert_eq!(machine.topology.len(), 4);
    let topo = discover(&machine).unwrap();
    assert_eq!(topo.num_cpus, 32);
    assert_eq!(topo.num_cores, 16);
    assert_eq!(topo.num_sockets, 2);
    assert_eq!(topo.num_numa_nodes, 4);
    assert_eq!(topo.num_uncore_cache, 8);
    for cpu in 0..32 {
        let p = cpu % 16;
        assert_eq!(
            topo.cpu_details.get(cpu),
            Some(&info(p, p / 8, p / 4, p / 2)),
            "cpu {cpu}"
        );
    }
    assert_eq!(topo.cpus_per_core(), 2);
    assert_eq!(topo.cpus_per_socket(), 16);
    assert_eq!(topo.cpus_per_uncore(), 4);
}

/// A fake tree: `(cpu, core_id, package)`; node dirs from `nodes`.
fn fake(cpus: &[(usize, usize, usize)], nodes: &[(usize, &[usize])]) -> FakeSysFs {
    let mut sys = FakeSysFs::new();
    for (cpu, core, package) in cpus {
        let base = format!("devices/system/cpu/cpu{cpu}/topology");
        sys = sys
            .with_file(&format!("{base}/core_id"), &format!("{core}\n"))
            .with_file(
                &format!("{base}/physical_package_id"),
                &format!("{package}\n"),
            );
    }
    for (node, cpus) in nodes {
        for cpu in *cpus {
            sys = sys.with_file(&format!("devices/system/node/node{node}/cpu{cpu}"), "");
        }
        sys = sys.with_file(&format!("devices/system/node/node{node}/cpulist"), "");
    }
    sys
}

#[test]
fn without_node_directories_one_node_per_package() {
    let sys = fake(&[(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)], &[]);
    let machine = machine_info_from_sysfs(&sys).unwrap();
    assert_eq!(machine.num_cores, 4);
    assert_eq!(
        machine.topology.iter().map(|n| n.id).collect::<Vec<_>>(),
        [0, 1]
    );
    let topo = discover(&machine).unwrap();
    assert_eq!(topo.num_sockets, 2);
    assert_eq!(topo.num_numa_nodes, 2);
    // No cache information: the uncore cache is the socket.
    assert_eq!(topo.cpu_details.get(3), Some(&info(3, 1, 1, 1)));
    assert!(sys.reads().iter().any(|p| p == "devices/system/node"));
}

#[test]
fn offline_and_incomplete_cpus_are_skipped() {
    let sys = fake(&[(0, 0, 0), (1, 1, 0), (2, 2, 0)], &[(0, &[0, 1, 2, 3])])
        .with_file("devices/system/cpu/online", "0-1,3\n");
    // cpu2 is offline; cpu3 is online but has no topology files.
    let machine = machine_info_from_sysfs(&sys).unwrap();
    assert_eq!(machine.num_cores, 2);
    let topo = discover(&machine).unwrap();
    assert_eq!(topo.cpu_details.cpus().to_string(), "0-1");
}

#[test]
fn malformed_topology_file_is_an_error() {
    let sys = fake(&[(0, 0, 0)], &[(0, &[0])])
        .with_file("devices/system/cpu/cpu0/topology/core_id", "zero\n");
    let err = machine_info_from_sysfs(&sys).unwrap_err();
    assert!(matches!(err, SysFsError::Number { .. }), "{err}");
}

/// cAdvisor's `getDistances`: each node's `distance` file, space-separated; a node
/// without one has no distances, a malformed one is an error; the topology from the
/// packages (no node directories) has none.
#[test]
fn numa_distances_are_read_per_node() {
    let machine = machine_info_from_sysfs(&fixture("dual-socket-4-numa")).unwrap();
    let distances: Vec<_> = machine
        .topology
        .iter()
        .map(|n| (n.id, n.distances.clone()))
        .collect();
    assert_eq!(
        distances,
        vec![
            (0, Some(vec![10, 11, 21, 21])),
            (1, Some(vec![11, 10, 21, 21])),
            (2, Some(vec![21, 21, 10, 11])),
            (3, Some(vec![21, 21, 11, 10])),
        ]
    );
    assert_eq!(
        machine.numa_nodes()[2],
        kubelet_topologymanager::NumaNode {
            id: 2,
            distances: Some(vec![21, 21, 10, 11])
        }
    );
    let sys = fake(&[(0, 0, 0), (1, 1, 0)], &[(0, &[0]), (1, &[1])])
        .with_file("devices/system/node/node0/distance", "10 20\n");
    let machine = machine_info_from_sysfs(&sys).unwrap();
    assert_eq!(machine.topology[0].distances, Some(vec![10, 20]));
    assert_eq!(machine.topology[1].distances, None);
    let sys =
        fake(&[(0, 0, 0)], &[(0, &[0])]).with_file("devices/system/node/node0/distance", "10  x\n");
    let err = machine_info_from_sysfs(&sys).unwrap_err();
    assert_eq!(err.to_string(), "cannot convert  to int");
    let sys = fake(&[(0, 0, 0), (1, 0, 1)], &[]);
    let machine = machine_info_from_sysfs(&sys).unwrap();
    assert!(machine.topology.iter().all(|n| n.distances.is_none()));
}

#[test]
fn no_cpus_at_all() {
    let err = machine_info_from_sysfs(&FakeSysFs::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Any CPU is not available, cpusPath: /sys/devices/system/cpu"
    );
    // A node without CPUs is kept, empty; then Discover finds no CPU.
    let sys = fake(&[], &[(0, &[])]);
    let machine = machine_info_from_sysfs(&sys).unwrap();
    assert_eq!(machine.topology.len(), 1);
    assert!(discover(&machine).is_err());
}

#[test]
fn broken_cache_files_drop_the_uncore_information() {
    let sys = fake(&[(0, 0, 0), (1, 1, 0)], &[(0, &[0, 1])])
        .with_file("devices/system/cpu/cpu0/cache/index3/id", "7\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/level", "3\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/type", "Unified\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/size", "not-a-size\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/shared_cpu_map", "1\n");
    let topo = discover(&machine_info_from_sysfs(&sys).unwrap()).unwrap();
    assert_eq!(topo.cpu_details.get(0), Some(&info(0, 0, 0, 0)));
    let sys = fake(&[(0, 0, 0), (1, 1, 0)], &[(0, &[0, 1])])
        .with_file("devices/system/cpu/cpu0/cache/index3/id", "7\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/level", "3\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/type", "Unified\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/size", "16384K\n")
        .with_file("devices/system/cpu/cpu0/cache/index3/shared_cpu_map", "1\n");
    let machine = machine_info_from_sysfs(&sys).unwrap();
    assert_eq!(
        machine.topology[0].cores[0].uncore_caches[0].size,
        16384 * 1024
    );
    let topo = discover(&machine).unwrap();
    // cpu0's L3 (id 7) is its own; cpu1 has no cache directory at all, so cAdvisor's
    // addCacheInfo stops there and cpu1 falls back to its socket.
    assert_eq!(topo.cpu_details.get(0), Some(&info(0, 0, 0, 7)));
    assert_eq!(topo.cpu_details.get(1), Some(&info(1, 0, 0, 0)));
}

#[test]
fn real_sysfs_of_this_machine_discovers() {
    // Read-only, and only when this machine has a sysfs CPU tree.
    let sys = RealSysFs::new();
    if sys.read_dir("devices/system/cpu").is_err() {
        return;
    }
    let topo = discover(&machine_info_from_sysfs(&sys).unwrap()).unwrap();
    assert!(topo.num_cpus >= 1);
    assert_eq!(topo.cpu_details.len(), topo.num_cpus);
}
