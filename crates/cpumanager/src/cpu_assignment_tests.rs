//! Upstream `cpu_assignment_test.go`, tables ported line for line (generated from
//! v1.35.4, then reviewed).
#![allow(clippy::unwrap_used, clippy::type_complexity)]

use super::*;
use crate::testing_topologies::*;

fn cs(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

fn p(s: &str) -> CpuSet {
    CpuSet::parse(s).unwrap()
}

#[test]
fn test_cpu_accumulator_free_sockets() {
    let cases: Vec<(&str, CPUTopology, CpuSet, Vec<usize>)> = vec![
        (
            "single socket HT, 1 socket free",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![0],
        ),
        (
            "single socket HT, 0 sockets free",
            topo_single_socket_ht(),
            cs(&[1, 2, 3, 4, 5, 6, 7]),
            vec![],
        ),
        (
            "dual socket HT, 2 sockets free",
            topo_dual_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            vec![0, 1],
        ),
        (
            "dual socket HT, 1 socket free",
            topo_dual_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11]),
            vec![1],
        ),
        (
            "dual socket HT, 0 sockets free",
            topo_dual_socket_ht(),
            cs(&[0, 2, 3, 4, 5, 6, 7, 8, 9, 11]),
            vec![],
        ),
        (
            "dual socket, multi numa per socket, HT, 2 sockets free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            vec![0, 1],
        ),
        (
            "dual socket, multi numa per socket, HT, 1 sockets free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-79"),
            vec![1],
        ),
        (
            "dual socket, multi numa per socket, HT, 0 sockets free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-78"),
            vec![],
        ),
        (
            "dual numa, multi socket per per socket, HT, 4 sockets free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-79"),
            vec![0, 1, 2, 3],
        ),
        (
            "dual numa, multi socket per per socket, HT, 3 sockets free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-19,21-79"),
            vec![0, 1, 3],
        ),
        (
            "dual numa, multi socket per per socket, HT, 2 sockets free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-59,61-78"),
            vec![0, 1],
        ),
        (
            "dual numa, multi socket per per socket, HT, 1 sockets free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("1-19,21-38,41-60,61-78"),
            vec![1],
        ),
        (
            "dual numa, multi socket per per socket, HT, 0 sockets free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-40,42-49,51-68,71-79"),
            vec![],
        ),
    ];
    for (description, topo, available, expect) in cases {
        let acc = CpuAccumulator::new(&topo, &available, 0, CPUSortingStrategy::Packed);
        let mut result = acc.free_sockets();
        result.sort_unstable();
        assert_eq!(result, expect, "{description}");
    }
}

#[test]
fn test_cpu_accumulator_free_numa_nodes() {
    let cases: Vec<(&str, CPUTopology, CpuSet, Vec<usize>)> = vec![
        (
            "single socket HT, 1 NUMA node free",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![0],
        ),
        (
            "single socket HT, 0 NUMA Node free",
            topo_single_socket_ht(),
            cs(&[1, 2, 3, 4, 5, 6, 7]),
            vec![],
        ),
        (
            "dual socket HT, 2 NUMA Node free",
            topo_dual_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            vec![0, 1],
        ),
        (
            "dual socket HT, 1 NUMA Node free",
            topo_dual_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11]),
            vec![1],
        ),
        (
            "dual socket HT, 0 NUMA node free",
            topo_dual_socket_ht(),
            cs(&[0, 2, 3, 4, 5, 6, 7, 8, 9, 11]),
            vec![],
        ),
        (
            "dual socket, multi numa per socket, HT, 4 NUMA Node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            vec![0, 1, 2, 3],
        ),
        (
            "dual socket, multi numa per socket, HT, 3 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-79"),
            vec![1, 2, 3],
        ),
        (
            "dual socket, multi numa per socket, HT, 2 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-9,11-79"),
            vec![2, 3],
        ),
        (
            "dual socket, multi numa per socket, HT, 1 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-9,11-59,61-79"),
            vec![3],
        ),
        (
            "dual socket, multi numa per socket, HT, 0 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-9,11-59,61-78"),
            vec![],
        ),
        (
            "dual numa, multi socket per per socket, HT, 2 NUMA node free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-79"),
            vec![0, 1],
        ),
        (
            "dual numa, multi socket per per socket, HT, 1 NUMA node free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-9,11-79"),
            vec![1],
        ),
        (
            "dual numa, multi socket per per socket, HT, 0 sockets free",
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            p("0-9,11-59,61-79"),
            vec![],
        ),
    ];
    for (description, topo, available, expect) in cases {
        let acc = CpuAccumulator::new(&topo, &available, 0, CPUSortingStrategy::Packed);
        assert_eq!(acc.free_numa_nodes(), expect, "{description}");
    }
}

#[test]
fn test_cpu_accumulator_free_sockets_and_numa_nodes() {
    let cases: Vec<(&str, CPUTopology, CpuSet, Vec<usize>, Vec<usize>)> = vec![
        (
            "dual socket, multi numa per socket, HT, 2 Socket/4 NUMA Node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            vec![0, 1],
            vec![0, 1, 2, 3],
        ),
        (
            "dual socket, multi numa per socket, HT, 1 Socket/3 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-79"),
            vec![1],
            vec![1, 2, 3],
        ),
        (
            "dual socket, multi numa per socket, HT, 1 Socket/ 2 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-9,11-79"),
            vec![1],
            vec![2, 3],
        ),
        (
            "dual socket, multi numa per socket, HT, 0 Socket/ 2 NUMA node free",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-59,61-79"),
            vec![],
            vec![1, 3],
        ),
    ];
    for (description, topo, available, expect_sockets, expect_numa_nodes) in cases {
        let acc = CpuAccumulator::new(&topo, &available, 0, CPUSortingStrategy::Packed);
        assert_eq!(acc.free_numa_nodes(), expect_numa_nodes, "{description}");
        assert_eq!(acc.free_sockets(), expect_sockets, "{description}");
    }
}

#[test]
fn test_cpu_accumulator_free_cores() {
    let cases: Vec<(&str, CPUTopology, CpuSet, Vec<usize>)> = vec![
        (
            "single socket HT, 4 cores free",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![0, 1, 2, 3],
        ),
        (
            "single socket HT, 3 cores free",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 4, 5, 6]),
            vec![0, 1, 2],
        ),
        (
            "single socket HT, 3 cores free (1 partially consumed)",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6]),
            vec![0, 1, 2],
        ),
        (
            "single socket HT, 0 cores free",
            topo_single_socket_ht(),
            cs(&[]),
            vec![],
        ),
        (
            "single socket HT, 0 cores free (4 partially consumed)",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3]),
            vec![],
        ),
        (
            "dual socket HT, 6 cores free",
            topo_dual_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            vec![0, 2, 4, 1, 3, 5],
        ),
        (
            "dual socket HT, 5 cores free (1 consumed from socket 0)",
            topo_dual_socket_ht(),
            cs(&[2, 1, 3, 4, 5, 7, 8, 9, 10, 11]),
            vec![2, 4, 1, 3, 5],
        ),
        (
            "dual socket HT, 4 cores free (1 consumed from each socket)",
            topo_dual_socket_ht(),
            cs(&[2, 3, 4, 5, 8, 9, 10, 11]),
            vec![2, 4, 3, 5],
        ),
    ];
    for (description, topo, available, expect) in cases {
        let acc = CpuAccumulator::new(&topo, &available, 0, CPUSortingStrategy::Packed);
        assert_eq!(acc.free_cores(), expect, "{description}");
    }
}

#[test]
fn test_cpu_accumulator_free_cpus() {
    let cases: Vec<(&str, CPUTopology, CpuSet, Vec<usize>)> = vec![
        (
            "single socket HT, 8 cpus free",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![0, 4, 1, 5, 2, 6, 3, 7],
        ),
        (
            "single socket HT, 5 cpus free",
            topo_single_socket_ht(),
            cs(&[3, 4, 5, 6, 7]),
            vec![4, 5, 6, 3, 7],
        ),
        (
            "dual socket HT, 12 cpus free",
            topo_dual_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            vec![0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11],
        ),
        (
            "dual socket HT, 11 cpus free",
            topo_dual_socket_ht(),
            cs(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            vec![6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11],
        ),
        (
            "dual socket HT, 10 cpus free",
            topo_dual_socket_ht(),
            cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            vec![2, 8, 4, 10, 1, 7, 3, 9, 5, 11],
        ),
        (
            "triple socket HT, 12 cpus free",
            topo_triple_socket_ht(),
            cs(&[0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13]),
            vec![12, 13, 0, 1, 2, 3, 6, 7, 8, 9, 10, 11],
        ),
    ];
    for (description, topo, available, expect) in cases {
        let acc = CpuAccumulator::new(&topo, &available, 0, CPUSortingStrategy::Packed);
        assert_eq!(acc.free_cpus(), expect, "{description}");
    }
}

#[test]
fn test_cpu_accumulator_take() {
    let cases: Vec<(&str, CPUTopology, CpuSet, Vec<CpuSet>, usize, bool, bool)> = vec![
        (
            "take 0 cpus from a single socket HT, require 1",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![cs(&[])],
            1,
            false,
            false,
        ),
        (
            "take 0 cpus from a single socket HT, require 1, none available",
            topo_single_socket_ht(),
            cs(&[]),
            vec![cs(&[])],
            1,
            false,
            true,
        ),
        (
            "take 1 cpu from a single socket HT, require 1",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![cs(&[0])],
            1,
            true,
            false,
        ),
        (
            "take 1 cpu from a single socket HT, require 2",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![cs(&[0])],
            2,
            false,
            false,
        ),
        (
            "take 2 cpu from a single socket HT, require 4, expect failed",
            topo_single_socket_ht(),
            cs(&[0, 1, 2]),
            vec![cs(&[0]), cs(&[1])],
            4,
            false,
            true,
        ),
        (
            "take all cpus one at a time from a single socket HT, require 8",
            topo_single_socket_ht(),
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            vec![
                cs(&[0]),
                cs(&[1]),
                cs(&[2]),
                cs(&[3]),
                cs(&[4]),
                cs(&[5]),
                cs(&[6]),
                cs(&[7]),
            ],
            8,
            true,
            false,
        ),
    ];
    for (description, topo, available, take_cpus, num_cpus, expect_satisfied, expect_failed) in
        cases
    {
        let mut acc = CpuAccumulator::new(&topo, &available, num_cpus, CPUSortingStrategy::Packed);
        let mut total_taken = 0;
        for cpus in &take_cpus {
            acc.take(cpus);
            total_taken += cpus.len();
        }
        assert_eq!(acc.is_satisfied(), expect_satisfied, "{description}");
        assert_eq!(acc.is_failed(), expect_failed, "{description}");
        for cpus in &take_cpus {
            assert!(
                cpus.intersection(&acc.details.cpus()).is_empty(),
                "{description}"
            );
            assert!(cpus.is_subset_of(&acc.result), "{description}");
        }
        assert_eq!(
            acc.num_cpus_needed,
            num_cpus as isize - total_taken as isize,
            "{description}"
        );
    }
}

/// `takeByTopologyTestCase`: description, topo, options, available, numCPUs, expErr, expResult.
type TakeByTopologyTestCase = (
    &'static str,
    CPUTopology,
    &'static str,
    CpuSet,
    usize,
    &'static str,
    CpuSet,
);

fn common_take_by_topology_test_cases() -> Vec<TakeByTopologyTestCase> {
    vec![
        (
            "take more cpus than are available from single socket with HT",
            topo_single_socket_ht(),
            "",
            cs(&[0, 2, 4, 6]),
            5,
            "not enough cpus available to satisfy request: requested=5, available=4",
            cs(&[]),
        ),
        (
            "take zero cpus from single socket with HT",
            topo_single_socket_ht(),
            "",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            0,
            "",
            cs(&[]),
        ),
        (
            "take one cpu from single socket with HT",
            topo_single_socket_ht(),
            "",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            1,
            "",
            cs(&[0]),
        ),
        (
            "take one cpu from single socket with HT, some cpus are taken",
            topo_single_socket_ht(),
            "",
            cs(&[1, 3, 5, 6, 7]),
            1,
            "",
            cs(&[6]),
        ),
        (
            "take two cpus from single socket with HT",
            topo_single_socket_ht(),
            "",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            2,
            "",
            cs(&[0, 4]),
        ),
        (
            "take all cpus from single socket with HT",
            topo_single_socket_ht(),
            "",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            8,
            "",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
        ),
        (
            "take two cpus from single socket with HT, only one core totally free",
            topo_single_socket_ht(),
            "",
            cs(&[0, 1, 2, 3, 6]),
            2,
            "",
            cs(&[2, 6]),
        ),
        (
            "take a socket of cpus from dual socket with HT",
            topo_dual_socket_ht(),
            "",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            6,
            "",
            cs(&[0, 2, 4, 6, 8, 10]),
        ),
        (
            "take a socket of cpus from dual socket with multi-numa-per-socket with HT",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "",
            p("0-79"),
            40,
            "",
            p("0-19,40-59"),
        ),
        (
            "take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "",
            p("0-79"),
            20,
            "",
            p("0-9,40-49"),
        ),
        (
            "take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, with 1 NUMA node already taken",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "",
            p("10-39,50-79"),
            20,
            "",
            p("10-19,50-59"),
        ),
        (
            "take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "",
            p("0-79"),
            60,
            "",
            p("0-29,40-69"),
        ),
        (
            "take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, a core taken",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "",
            p("1-39,41-79"), // reserve the first (phys) core (0,40)
            60,
            "",
            p("10-39,50-79"),
        ),
    ]
}

fn run_packed(cases: Vec<TakeByTopologyTestCase>) {
    for (description, topo, opts, available, num_cpus, exp_err, exp_result) in cases {
        let strategy = if opts == "DistributeCPUsAcrossCores" {
            CPUSortingStrategy::Spread
        } else {
            CPUSortingStrategy::Packed
        };
        let uncore = opts == "PreferAlignByUncoreCacheOption";
        let result = take_by_topology_numa_packed(&topo, &available, num_cpus, strategy, uncore);
        match result {
            Ok(result) => assert_eq!(result, exp_result, "{description}"),
            Err(err) => {
                if !exp_err.is_empty() {
                    assert_eq!(err.to_string(), exp_err, "{description}");
                }
                assert_eq!(CpuSet::new(), exp_result, "{description}: {err}");
            }
        }
    }
}

#[test]
fn test_take_by_topology_numa_packed() {
    let mut cases = common_take_by_topology_test_cases();
    cases.extend(vec![
        (
            "take one cpu from dual socket with HT - core from Socket 0",
            topo_dual_socket_ht(),
            "",
            cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            1,
            "",
            cs(&[2]),
        ),
        (
            "allocate 4 full cores with 3 coming from the first NUMA node (filling it up) and 1 coming from the second NUMA node",
            topo_dual_socket_ht(),
            "",
            p("0-11"),
            8,
            "",
            p("0,6,2,8,4,10,1,7"),
        ),
        (
            "allocate 32 full cores with 30 coming from the first 3 NUMA nodes (filling them up) and 2 coming from the fourth NUMA node",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "",
            p("0-79"),
            64,
            "",
            p("0-29,40-69,30,31,70,71"),
        ),
        // Test cases for PreferAlignByUncoreCache
        (
            "take cpus from two full UncoreCaches and partial from a single UncoreCache",
            topo_uncore_single_socket_no_smt(),
            "PreferAlignByUncoreCacheOption",
            p("1-15"),
            10,
            "",
            cs(&[1, 2, 4, 5, 6, 7, 8, 9, 10, 11]),
        ),
        (
            "take one cpu from dual socket with HT - core from Socket 0",
            topo_dual_socket_ht(),
            "PreferAlignByUncoreCacheOption",
            cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            1,
            "",
            cs(&[1]),
        ),
        (
            "take first available UncoreCache from first socket",
            topo_uncore_dual_socket_no_smt(),
            "PreferAlignByUncoreCacheOption",
            p("0-15"),
            4,
            "",
            cs(&[0, 1, 2, 3]),
        ),
        (
            "take all available UncoreCache from first socket",
            topo_uncore_dual_socket_no_smt(),
            "PreferAlignByUncoreCacheOption",
            p("2-15"),
            6,
            "",
            cs(&[2, 3, 4, 5, 6, 7]),
        ),
        (
            "take first available UncoreCache from second socket",
            topo_uncore_dual_socket_no_smt(),
            "PreferAlignByUncoreCacheOption",
            p("8-15"),
            4,
            "",
            cs(&[8, 9, 10, 11]),
        ),
        (
            "take first available UncoreCache from available NUMA",
            topo_uncore_single_socket_multi_numa(),
            "PreferAlignByUncoreCacheOption",
            p("3,4-8,12"),
            2,
            "",
            cs(&[4, 5]),
        ),
        (
            "take cpus from best available UncoreCache group of multi uncore cache single socket - SMT enabled",
            topo_uncore_single_socket_smt(),
            "PreferAlignByUncoreCacheOption",
            p("2-3,10-11,4-7,12-15"),
            6,
            "",
            cs(&[4, 5, 6, 12, 13, 14]),
        ),
        (
            "take cpus from multiple UncoreCache of single socket - SMT enabled",
            topo_uncore_single_socket_smt(),
            "PreferAlignByUncoreCacheOption",
            p("1-7,9-15"),
            10,
            "",
            p("4-7,12-15,1,9"),
        ),
    ]);
    run_packed(cases);
}

#[test]
fn test_take_by_topology_with_spread_physical_cpus_preferred_option() {
    let cases: Vec<TakeByTopologyTestCase> = vec![
        (
            "take a socket of cpus from single socket with HT, 3 cpus",
            topo_single_socket_ht(),
            "DistributeCPUsAcrossCores",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            3,
            "",
            cs(&[0, 1, 2]),
        ),
        (
            "take a socket of cpus from dual socket with HT, 2 cpus",
            topo_dual_socket_ht(),
            "DistributeCPUsAcrossCores",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            2,
            "",
            cs(&[0, 2]),
        ),
        (
            "take a socket of cpus from dual socket with HT, 3 cpus",
            topo_dual_socket_ht(),
            "DistributeCPUsAcrossCores",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            3,
            "",
            cs(&[0, 2, 4]),
        ),
        (
            "take a socket of cpus from dual socket with HT, 6 cpus",
            topo_dual_socket_ht(),
            "DistributeCPUsAcrossCores",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            6,
            "",
            cs(&[0, 2, 4, 6, 8, 10]),
        ),
        (
            "take cpus from dual socket with HT, 8 cpus",
            topo_dual_socket_ht(),
            "DistributeCPUsAcrossCores",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
            8,
            "",
            cs(&[0, 2, 4, 6, 8, 10, 1, 3]),
        ),
        (
            "take a socket of cpus from dual socket without HT, 2 cpus",
            topo_dual_socket_no_ht(),
            "DistributeCPUsAcrossCores",
            cs(&[0, 1, 2, 3, 4, 5, 6, 7]),
            2,
            "",
            cs(&[0, 1]),
        ),
        (
            // DistributeCPUsAcrossCores doesn't care socket and numa ranking. such setting in test is transparent.
            "take a socket of cpus from dual socket with multi numa per socket and HT, 12 cpus",
            topo_dual_socket_multi_numa_per_socket_ht(),
            "DistributeCPUsAcrossCores",
            p("0-79"),
            8,
            "",
            p("0-7"),
        ),
        (
            "take a socket of cpus from quad socket four way with HT, 12 cpus",
            topo_quad_socket_four_way_ht(),
            "DistributeCPUsAcrossCores",
            p("0-287"),
            12,
            "",
            p("0-2,9-10,13-14,21-22,25-26,33"),
        ),
    ];
    run_packed(cases);
}

/// `takeByTopologyExtendedTestCase`: description, topo, available, numCPUs, cpuGroupSize,
/// expErr, expResult.
type TakeByTopologyExtendedTestCase = (
    &'static str,
    CPUTopology,
    CpuSet,
    usize,
    usize,
    &'static str,
    CpuSet,
);

fn common_take_by_topology_extended_test_cases() -> Vec<TakeByTopologyExtendedTestCase> {
    let mut cases: Vec<TakeByTopologyExtendedTestCase> = common_take_by_topology_test_cases()
        .into_iter()
        .map(
            |(description, topo, _, available, num_cpus, exp_err, exp_result)| {
                (
                    description,
                    topo,
                    available,
                    num_cpus,
                    1,
                    exp_err,
                    exp_result,
                )
            },
        )
        .collect();
    cases.extend(vec![
        (
            "allocate 4 full cores with 2 distributed across each NUMA node",
            topo_dual_socket_ht(),
            p("0-11"),
            8,
            1,
            "",
            p("0,6,2,8,1,7,3,9"),
        ),
        (
            "allocate 32 full cores with 8 distributed across each NUMA node",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            64,
            1,
            "",
            p("0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77"),
        ),
        (
            "allocate 24 full cores with 8 distributed across the first 3 NUMA nodes",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            48,
            1,
            "",
            p("0-7,10-17,20-27,40-47,50-57,60-67"),
        ),
        (
            "allocate 24 full cores with 8 distributed across the first 3 NUMA nodes (taking all but 2 from the first NUMA node)",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("1-29,32-39,41-69,72-79"),
            48,
            1,
            "",
            p("1-8,10-17,20-27,41-48,50-57,60-67"),
        ),
        (
            "allocate 24 full cores with 8 distributed across the last 3 NUMA nodes (even though all 8 could be allocated from the first NUMA node)",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("2-29,31-39,42-69,71-79"),
            48,
            1,
            "",
            p("10-17,20-27,31-38,50-57,60-67,71-78"),
        ),
        (
            "allocate 8 full cores with 2 distributed across each NUMA node",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71"),
            16,
            1,
            "",
            p("0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"),
        ),
        (
            "allocate 8 full cores with 2 distributed across each NUMA node",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71"),
            16,
            1,
            "",
            p("0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"),
        ),
    ]);
    cases
}

#[test]
fn test_take_by_topology_numa_distributed() {
    let mut cases = common_take_by_topology_extended_test_cases();
    cases.extend(vec![
        (
            "take one cpu from dual socket with HT - core from Socket 0",
            topo_dual_socket_ht(),
            cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            1,
            1,
            "",
            cs(&[1]),
        ),
        (
            "take one cpu from dual socket with HT - core from Socket 0 - cpuGroupSize 2",
            topo_dual_socket_ht(),
            cs(&[1, 2, 3, 4, 5, 7, 8, 9, 10, 11]),
            1,
            2,
            "",
            cs(&[2]),
        ),
        (
            "allocate 13 full cores distributed across the first 2 NUMA nodes",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            26,
            1,
            "",
            p("0-6,10-16,40-45,50-55"),
        ),
        (
            "allocate 13 full cores distributed across the first 2 NUMA nodes (cpuGroupSize 2)",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            26,
            2,
            "",
            p("0-6,10-15,40-46,50-55"),
        ),
        (
            "allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling over to each of NUMA 0, 1",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            62,
            1,
            "",
            p("0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"),
        ),
        (
            "allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling over to each of NUMA 0, 1, 2 (cpuGroupSize 2)",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-79"),
            62,
            2,
            "",
            p("0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"),
        ),
        (
            "allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling over to each of NUMA 2, 3 (to keep balance)",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-8,10-18,20-39,40-48,50-58,60-79"),
            62,
            1,
            "",
            p("0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"),
        ),
        (
            "allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling over to each of NUMA 0, 2, 3 (to keep balance with cpuGroupSize 2)",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-8,10-18,20-39,40-48,50-58,60-79"),
            62,
            2,
            "",
            p("0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"),
        ),
        (
            "ensure bestRemainder chosen with NUMA nodes that have enough CPUs to satisfy the request",
            topo_dual_socket_multi_numa_per_socket_ht(),
            p("0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76"),
            34,
            1,
            "",
            p("0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"),
        ),
        (
            "ensure previous failure encountered on live machine has been fixed (1/1)",
            topo_dual_socket_multi_numa_per_socket_ht_large(),
            p("0,128,30,31,158,159,43-47,171-175,62,63,190,191,75-79,203-207,94,96,222,223,101-111,229-239,126,127,254,255"),
            28,
            1,
            "",
            p("43-47,75-79,96,101-105,171-174,203-206,229-232"),
        ),
    ]);
    for (description, topo, available, num_cpus, group, exp_err, exp_result) in cases {
        match take_by_topology_numa_distributed(
            &topo,
            &available,
            num_cpus,
            group,
            CPUSortingStrategy::Packed,
        ) {
            Ok(result) => assert_eq!(result, exp_result, "{description}"),
            Err(err) => {
                assert!(!exp_err.is_empty(), "{description}: unexpected error {err}");
                assert_eq!(err.to_string(), exp_err, "{description}");
            }
        }
    }
}

mod properties {
    //! Not upstream: whatever the free CPUs and the request, the assignment either
    //! fails or returns exactly the requested number of free CPUs (no panic, no hang).
    use proptest::prelude::*;

    use super::*;

    fn topologies() -> Vec<CPUTopology> {
        vec![
            topo_single_socket_ht(),
            topo_dual_socket_ht(),
            topo_dual_socket_no_ht(),
            topo_triple_socket_ht(),
            topo_dual_socket_multi_numa_per_socket_ht(),
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            topo_uncore_single_socket_smt(),
            topo_uncore_dual_socket_no_smt(),
            topo_uncore_single_socket_multi_numa(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn takes_exactly_n_free_cpus(
            which in 0usize..9,
            mask in prop::collection::vec(any::<bool>(), 80),
            n in 0usize..40,
            group in 1usize..5,
            mode in 0usize..4,
        ) {
            let topo = &topologies()[which];
            let available: CpuSet = topo
                .cpu_details
                .cpus()
                .iter()
                .filter(|c| mask.get(*c).copied().unwrap_or(true))
                .collect();
            let result = match mode {
                0 => take_by_topology_numa_packed(topo, &available, n, CPUSortingStrategy::Packed, false),
                1 => take_by_topology_numa_packed(topo, &available, n, CPUSortingStrategy::Spread, false),
                2 => take_by_topology_numa_packed(topo, &available, n, CPUSortingStrategy::Packed, true),
                _ => take_by_topology_numa_distributed(topo, &available, n, group, CPUSortingStrategy::Packed),
            };
            match result {
                Ok(cpus) => {
                    prop_assert_eq!(cpus.len(), n);
                    prop_assert!(cpus.is_subset_of(&available));
                }
                Err(e) => prop_assert!(n > available.len(), "{}", e),
            }
        }
    }
}
