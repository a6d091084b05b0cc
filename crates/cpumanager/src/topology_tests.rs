//! Upstream `topology/topology_test.go` (`Test_Discover` generated from v1.35.4's table;
//! the `CPUDetails` query tests with upstream's data).
#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::testing_topologies::build;

fn cs(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

fn node(id: usize, cores: Vec<Core>) -> Node {
    Node {
        id,
        distances: None,
        cores,
        caches: Vec::new(),
    }
}

fn core(socket_id: usize, id: usize, threads: &[usize], uncore: &[usize]) -> Core {
    Core {
        id,
        socket_id,
        threads: threads.to_vec(),
        caches: Vec::new(),
        uncore_caches: uncore
            .iter()
            .map(|id| Cache {
                id: *id,
                ..Cache::default()
            })
            .collect(),
    }
}

/// `[cpu, core, socket, numa, uncore]` rows.
fn details(rows: &[[usize; 5]]) -> CPUDetails {
    build(0, 0, 0, 0, 0, rows).cpu_details
}

#[test]
fn test_discover() {
    let cases: Vec<(&str, MachineInfo, Option<CPUTopology>)> = vec![
        (
            "EmptyUncoreCache",
            MachineInfo {
                num_cores: 8,
                num_sockets: 1,
                topology: vec![node(
                    0,
                    vec![
                        core(0, 0, &[0, 4], &[]),
                        core(0, 1, &[1, 5], &[]),
                        core(0, 2, &[2, 6], &[]),
                        core(0, 3, &[3, 7], &[]),
                    ],
                )],
            },
            Some(build(
                8,
                1,
                4,
                1,
                1,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 0, 0, 0],
                    [4, 0, 0, 0, 0],
                    [5, 1, 0, 0, 0],
                    [6, 2, 0, 0, 0],
                    [7, 3, 0, 0, 0],
                ],
            )),
        ),
        (
            "FailNumCores",
            MachineInfo {
                num_cores: 0,
                num_sockets: 0,
                topology: vec![],
            },
            None,
        ),
        (
            "OneSocketHT",
            MachineInfo {
                num_cores: 8,
                num_sockets: 1,
                topology: vec![node(
                    0,
                    vec![
                        core(0, 0, &[0, 4], &[0]),
                        core(0, 1, &[1, 5], &[0]),
                        core(0, 2, &[2, 6], &[0]),
                        core(0, 3, &[3, 7], &[0]),
                    ],
                )],
            },
            Some(build(
                8,
                1,
                4,
                1,
                1,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 0, 0, 0],
                    [4, 0, 0, 0, 0],
                    [5, 1, 0, 0, 0],
                    [6, 2, 0, 0, 0],
                    [7, 3, 0, 0, 0],
                ],
            )),
        ),
        (
            "DualSocketMultiNumaPerSocketHT",
            MachineInfo {
                num_cores: 80,
                num_sockets: 2,
                topology: vec![
                    node(
                        0,
                        vec![
                            core(0, 0, &[0, 40], &[0]),
                            core(0, 1, &[1, 41], &[0]),
                            core(0, 2, &[2, 42], &[0]),
                            core(0, 8, &[3, 43], &[0]),
                            core(0, 9, &[4, 44], &[0]),
                            core(0, 16, &[5, 45], &[0]),
                            core(0, 17, &[6, 46], &[0]),
                            core(0, 18, &[7, 47], &[0]),
                            core(0, 24, &[8, 48], &[0]),
                            core(0, 25, &[9, 49], &[0]),
                        ],
                    ),
                    node(
                        1,
                        vec![
                            core(0, 3, &[10, 50], &[0]),
                            core(0, 4, &[11, 51], &[0]),
                            core(0, 10, &[12, 52], &[0]),
                            core(0, 11, &[13, 53], &[0]),
                            core(0, 12, &[14, 54], &[0]),
                            core(0, 19, &[15, 55], &[0]),
                            core(0, 20, &[16, 56], &[0]),
                            core(0, 26, &[17, 57], &[0]),
                            core(0, 27, &[18, 58], &[0]),
                            core(0, 28, &[19, 59], &[0]),
                        ],
                    ),
                    node(
                        2,
                        vec![
                            core(1, 0, &[20, 60], &[0]),
                            core(1, 1, &[21, 61], &[0]),
                            core(1, 2, &[22, 62], &[0]),
                            core(1, 8, &[23, 63], &[0]),
                            core(1, 9, &[24, 64], &[0]),
                            core(1, 16, &[25, 65], &[0]),
                            core(1, 17, &[26, 66], &[0]),
                            core(1, 18, &[27, 67], &[0]),
                            core(1, 24, &[28, 68], &[0]),
                            core(1, 25, &[29, 69], &[0]),
                        ],
                    ),
                    node(
                        3,
                        vec![
                            core(1, 3, &[30, 70], &[0]),
                            core(1, 4, &[31, 71], &[0]),
                            core(1, 10, &[32, 72], &[0]),
                            core(1, 11, &[33, 73], &[0]),
                            core(1, 12, &[34, 74], &[0]),
                            core(1, 19, &[35, 75], &[0]),
                            core(1, 20, &[36, 76], &[0]),
                            core(1, 26, &[37, 77], &[0]),
                            core(1, 27, &[38, 78], &[0]),
                            core(1, 28, &[39, 79], &[0]),
                        ],
                    ),
                ],
            },
            Some(build(
                80,
                2,
                40,
                1,
                4,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 0, 0, 0],
                    [4, 4, 0, 0, 0],
                    [5, 5, 0, 0, 0],
                    [6, 6, 0, 0, 0],
                    [7, 7, 0, 0, 0],
                    [8, 8, 0, 0, 0],
                    [9, 9, 0, 0, 0],
                    [10, 10, 0, 1, 0],
                    [11, 11, 0, 1, 0],
                    [12, 12, 0, 1, 0],
                    [13, 13, 0, 1, 0],
                    [14, 14, 0, 1, 0],
                    [15, 15, 0, 1, 0],
                    [16, 16, 0, 1, 0],
                    [17, 17, 0, 1, 0],
                    [18, 18, 0, 1, 0],
                    [19, 19, 0, 1, 0],
                    [20, 20, 1, 2, 0],
                    [21, 21, 1, 2, 0],
                    [22, 22, 1, 2, 0],
                    [23, 23, 1, 2, 0],
                    [24, 24, 1, 2, 0],
                    [25, 25, 1, 2, 0],
                    [26, 26, 1, 2, 0],
                    [27, 27, 1, 2, 0],
                    [28, 28, 1, 2, 0],
                    [29, 29, 1, 2, 0],
                    [30, 30, 1, 3, 0],
                    [31, 31, 1, 3, 0],
                    [32, 32, 1, 3, 0],
                    [33, 33, 1, 3, 0],
                    [34, 34, 1, 3, 0],
                    [35, 35, 1, 3, 0],
                    [36, 36, 1, 3, 0],
                    [37, 37, 1, 3, 0],
                    [38, 38, 1, 3, 0],
                    [39, 39, 1, 3, 0],
                    [40, 0, 0, 0, 0],
                    [41, 1, 0, 0, 0],
                    [42, 2, 0, 0, 0],
                    [43, 3, 0, 0, 0],
                    [44, 4, 0, 0, 0],
                    [45, 5, 0, 0, 0],
                    [46, 6, 0, 0, 0],
                    [47, 7, 0, 0, 0],
                    [48, 8, 0, 0, 0],
                    [49, 9, 0, 0, 0],
                    [50, 10, 0, 1, 0],
                    [51, 11, 0, 1, 0],
                    [52, 12, 0, 1, 0],
                    [53, 13, 0, 1, 0],
                    [54, 14, 0, 1, 0],
                    [55, 15, 0, 1, 0],
                    [56, 16, 0, 1, 0],
                    [57, 17, 0, 1, 0],
                    [58, 18, 0, 1, 0],
                    [59, 19, 0, 1, 0],
                    [60, 20, 1, 2, 0],
                    [61, 21, 1, 2, 0],
                    [62, 22, 1, 2, 0],
                    [63, 23, 1, 2, 0],
                    [64, 24, 1, 2, 0],
                    [65, 25, 1, 2, 0],
                    [66, 26, 1, 2, 0],
                    [67, 27, 1, 2, 0],
                    [68, 28, 1, 2, 0],
                    [69, 29, 1, 2, 0],
                    [70, 30, 1, 3, 0],
                    [71, 31, 1, 3, 0],
                    [72, 32, 1, 3, 0],
                    [73, 33, 1, 3, 0],
                    [74, 34, 1, 3, 0],
                    [75, 35, 1, 3, 0],
                    [76, 36, 1, 3, 0],
                    [77, 37, 1, 3, 0],
                    [78, 38, 1, 3, 0],
                    [79, 39, 1, 3, 0],
                ],
            )),
        ),
        (
            "DualNumaMultiSocketPerNumaHT",
            MachineInfo {
                num_cores: 80,
                num_sockets: 4,
                topology: vec![
                    node(
                        0,
                        vec![
                            core(0, 0, &[0, 40], &[1]),
                            core(0, 1, &[1, 41], &[1]),
                            core(0, 2, &[2, 42], &[1]),
                            core(0, 8, &[3, 43], &[1]),
                            core(0, 9, &[4, 44], &[1]),
                            core(0, 16, &[5, 45], &[1]),
                            core(0, 17, &[6, 46], &[1]),
                            core(0, 18, &[7, 47], &[1]),
                            core(0, 24, &[8, 48], &[1]),
                            core(0, 25, &[9, 49], &[1]),
                            core(1, 3, &[10, 50], &[1]),
                            core(1, 4, &[11, 51], &[1]),
                            core(1, 10, &[12, 52], &[1]),
                            core(1, 11, &[13, 53], &[1]),
                            core(1, 12, &[14, 54], &[1]),
                            core(1, 19, &[15, 55], &[1]),
                            core(1, 20, &[16, 56], &[1]),
                            core(1, 26, &[17, 57], &[1]),
                            core(1, 27, &[18, 58], &[1]),
                            core(1, 28, &[19, 59], &[1]),
                        ],
                    ),
                    node(
                        1,
                        vec![
                            core(2, 0, &[20, 60], &[1]),
                            core(2, 1, &[21, 61], &[1]),
                            core(2, 2, &[22, 62], &[1]),
                            core(2, 8, &[23, 63], &[1]),
                            core(2, 9, &[24, 64], &[1]),
                            core(2, 16, &[25, 65], &[1]),
                            core(2, 17, &[26, 66], &[1]),
                            core(2, 18, &[27, 67], &[1]),
                            core(2, 24, &[28, 68], &[1]),
                            core(2, 25, &[29, 69], &[1]),
                            core(3, 3, &[30, 70], &[1]),
                            core(3, 4, &[31, 71], &[1]),
                            core(3, 10, &[32, 72], &[1]),
                            core(3, 11, &[33, 73], &[1]),
                            core(3, 12, &[34, 74], &[1]),
                            core(3, 19, &[35, 75], &[1]),
                            core(3, 20, &[36, 76], &[1]),
                            core(3, 26, &[37, 77], &[1]),
                            core(3, 27, &[38, 78], &[1]),
                            core(3, 28, &[39, 79], &[1]),
                        ],
                    ),
                ],
            },
            Some(build(
                80,
                4,
                40,
                1,
                2,
                &[
                    [0, 0, 0, 0, 1],
                    [1, 1, 0, 0, 1],
                    [2, 2, 0, 0, 1],
                    [3, 3, 0, 0, 1],
                    [4, 4, 0, 0, 1],
                    [5, 5, 0, 0, 1],
                    [6, 6, 0, 0, 1],
                    [7, 7, 0, 0, 1],
                    [8, 8, 0, 0, 1],
                    [9, 9, 0, 0, 1],
                    [10, 10, 1, 0, 1],
                    [11, 11, 1, 0, 1],
                    [12, 12, 1, 0, 1],
                    [13, 13, 1, 0, 1],
                    [14, 14, 1, 0, 1],
                    [15, 15, 1, 0, 1],
                    [16, 16, 1, 0, 1],
                    [17, 17, 1, 0, 1],
                    [18, 18, 1, 0, 1],
                    [19, 19, 1, 0, 1],
                    [20, 20, 2, 1, 1],
                    [21, 21, 2, 1, 1],
                    [22, 22, 2, 1, 1],
                    [23, 23, 2, 1, 1],
                    [24, 24, 2, 1, 1],
                    [25, 25, 2, 1, 1],
                    [26, 26, 2, 1, 1],
                    [27, 27, 2, 1, 1],
                    [28, 28, 2, 1, 1],
                    [29, 29, 2, 1, 1],
                    [30, 30, 3, 1, 1],
                    [31, 31, 3, 1, 1],
                    [32, 32, 3, 1, 1],
                    [33, 33, 3, 1, 1],
                    [34, 34, 3, 1, 1],
                    [35, 35, 3, 1, 1],
                    [36, 36, 3, 1, 1],
                    [37, 37, 3, 1, 1],
                    [38, 38, 3, 1, 1],
                    [39, 39, 3, 1, 1],
                    [40, 0, 0, 0, 1],
                    [41, 1, 0, 0, 1],
                    [42, 2, 0, 0, 1],
                    [43, 3, 0, 0, 1],
                    [44, 4, 0, 0, 1],
                    [45, 5, 0, 0, 1],
                    [46, 6, 0, 0, 1],
                    [47, 7, 0, 0, 1],
                    [48, 8, 0, 0, 1],
                    [49, 9, 0, 0, 1],
                    [50, 10, 1, 0, 1],
                    [51, 11, 1, 0, 1],
                    [52, 12, 1, 0, 1],
                    [53, 13, 1, 0, 1],
                    [54, 14, 1, 0, 1],
                    [55, 15, 1, 0, 1],
                    [56, 16, 1, 0, 1],
                    [57, 17, 1, 0, 1],
                    [58, 18, 1, 0, 1],
                    [59, 19, 1, 0, 1],
                    [60, 20, 2, 1, 1],
                    [61, 21, 2, 1, 1],
                    [62, 22, 2, 1, 1],
                    [63, 23, 2, 1, 1],
                    [64, 24, 2, 1, 1],
                    [65, 25, 2, 1, 1],
                    [66, 26, 2, 1, 1],
                    [67, 27, 2, 1, 1],
                    [68, 28, 2, 1, 1],
                    [69, 29, 2, 1, 1],
                    [70, 30, 3, 1, 1],
                    [71, 31, 3, 1, 1],
                    [72, 32, 3, 1, 1],
                    [73, 33, 3, 1, 1],
                    [74, 34, 3, 1, 1],
                    [75, 35, 3, 1, 1],
                    [76, 36, 3, 1, 1],
                    [77, 37, 3, 1, 1],
                    [78, 38, 3, 1, 1],
                    [79, 39, 3, 1, 1],
                ],
            )),
        ),
        (
            "DualSocketNoHT",
            MachineInfo {
                num_cores: 4,
                num_sockets: 2,
                topology: vec![
                    node(0, vec![core(0, 0, &[0], &[0]), core(0, 2, &[2], &[0])]),
                    node(1, vec![core(1, 1, &[1], &[0]), core(1, 3, &[3], &[0])]),
                ],
            },
            Some(build(
                4,
                2,
                4,
                1,
                2,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 1, 1, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 1, 1, 0],
                ],
            )),
        ),
        (
            "DualSocketHT - non unique Core'ID's",
            MachineInfo {
                num_cores: 12,
                num_sockets: 2,
                topology: vec![
                    node(
                        0,
                        vec![
                            core(0, 0, &[0, 6], &[0]),
                            core(0, 1, &[1, 7], &[0]),
                            core(0, 2, &[2, 8], &[0]),
                        ],
                    ),
                    node(
                        1,
                        vec![
                            core(1, 0, &[3, 9], &[0]),
                            core(1, 1, &[4, 10], &[0]),
                            core(1, 2, &[5, 11], &[0]),
                        ],
                    ),
                ],
            },
            Some(build(
                12,
                2,
                6,
                1,
                2,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 1, 1, 0],
                    [4, 4, 1, 1, 0],
                    [5, 5, 1, 1, 0],
                    [6, 0, 0, 0, 0],
                    [7, 1, 0, 0, 0],
                    [8, 2, 0, 0, 0],
                    [9, 3, 1, 1, 0],
                    [10, 4, 1, 1, 0],
                    [11, 5, 1, 1, 0],
                ],
            )),
        ),
        (
            "OneSocketHT fail",
            MachineInfo {
                num_cores: 8,
                num_sockets: 1,
                topology: vec![node(
                    0,
                    vec![
                        core(0, 0, &[0, 4], &[1]),
                        core(0, 1, &[1, 5], &[1]),
                        core(0, 2, &[2, 2], &[1]),
                        core(0, 3, &[3, 7], &[1]),
                    ],
                )],
            },
            None,
        ),
        (
            "OneSocketHT fail",
            MachineInfo {
                num_cores: 8,
                num_sockets: 1,
                topology: vec![node(
                    0,
                    vec![
                        core(0, 0, &[0, 4], &[1]),
                        core(0, 1, &[1, 5], &[1]),
                        core(0, 2, &[2, 6], &[1]),
                        core(0, 3, &[], &[1]),
                    ],
                )],
            },
            None,
        ),
        (
            "UncoreOneSocketNoSMT",
            MachineInfo {
                num_cores: 32,
                num_sockets: 1,
                topology: vec![node(
                    0,
                    vec![
                        core(0, 0, &[0], &[0]),
                        core(0, 1, &[1], &[0]),
                        core(0, 2, &[2], &[0]),
                        core(0, 3, &[3], &[0]),
                        core(0, 4, &[4], &[1]),
                        core(0, 5, &[5], &[1]),
                        core(0, 6, &[6], &[1]),
                        core(0, 7, &[7], &[1]),
                        core(0, 8, &[8], &[2]),
                        core(0, 9, &[9], &[2]),
                        core(0, 10, &[10], &[2]),
                        core(0, 11, &[11], &[2]),
                        core(0, 12, &[12], &[3]),
                        core(0, 13, &[13], &[3]),
                        core(0, 14, &[14], &[3]),
                        core(0, 15, &[15], &[3]),
                        core(0, 16, &[16], &[4]),
                        core(0, 17, &[17], &[4]),
                        core(0, 18, &[18], &[4]),
                        core(0, 19, &[19], &[4]),
                        core(0, 20, &[20], &[5]),
                        core(0, 21, &[21], &[5]),
                        core(0, 22, &[22], &[5]),
                        core(0, 23, &[23], &[5]),
                        core(0, 24, &[24], &[6]),
                        core(0, 25, &[25], &[6]),
                        core(0, 26, &[26], &[6]),
                        core(0, 27, &[27], &[6]),
                        core(0, 28, &[28], &[7]),
                        core(0, 29, &[29], &[7]),
                        core(0, 30, &[30], &[7]),
                        core(0, 31, &[31], &[7]),
                    ],
                )],
            },
            Some(build(
                32,
                1,
                32,
                8,
                1,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 0, 0, 0],
                    [4, 4, 0, 0, 1],
                    [5, 5, 0, 0, 1],
                    [6, 6, 0, 0, 1],
                    [7, 7, 0, 0, 1],
                    [8, 8, 0, 0, 2],
                    [9, 9, 0, 0, 2],
                    [10, 10, 0, 0, 2],
                    [11, 11, 0, 0, 2],
                    [12, 12, 0, 0, 3],
                    [13, 13, 0, 0, 3],
                    [14, 14, 0, 0, 3],
                    [15, 15, 0, 0, 3],
                    [16, 16, 0, 0, 4],
                    [17, 17, 0, 0, 4],
                    [18, 18, 0, 0, 4],
                    [19, 19, 0, 0, 4],
                    [20, 20, 0, 0, 5],
                    [21, 21, 0, 0, 5],
                    [22, 22, 0, 0, 5],
                    [23, 23, 0, 0, 5],
                    [24, 24, 0, 0, 6],
                    [25, 25, 0, 0, 6],
                    [26, 26, 0, 0, 6],
                    [27, 27, 0, 0, 6],
                    [28, 28, 0, 0, 7],
                    [29, 29, 0, 0, 7],
                    [30, 30, 0, 0, 7],
                    [31, 31, 0, 0, 7],
                ],
            )),
        ),
        (
            "UncoreDualSocketSMT",
            MachineInfo {
                num_cores: 96,
                num_sockets: 2,
                topology: vec![
                    node(
                        0,
                        vec![
                            core(0, 0, &[0, 48], &[0]),
                            core(0, 1, &[1, 49], &[0]),
                            core(0, 2, &[2, 50], &[0]),
                            core(0, 3, &[3, 51], &[0]),
                            core(0, 4, &[4, 52], &[1]),
                            core(0, 5, &[5, 53], &[1]),
                            core(0, 6, &[6, 54], &[1]),
                            core(0, 7, &[7, 55], &[1]),
                            core(0, 8, &[8, 56], &[2]),
                            core(0, 9, &[9, 57], &[2]),
                            core(0, 10, &[10, 58], &[2]),
                            core(0, 11, &[11, 59], &[2]),
                        ],
                    ),
                    node(
                        1,
                        vec![
                            core(0, 12, &[12, 60], &[3]),
                            core(0, 13, &[13, 61], &[3]),
                            core(0, 14, &[14, 62], &[3]),
                            core(0, 15, &[15, 63], &[3]),
                            core(0, 16, &[16, 64], &[4]),
                            core(0, 17, &[17, 65], &[4]),
                            core(0, 18, &[18, 66], &[4]),
                            core(0, 19, &[19, 67], &[4]),
                            core(0, 20, &[20, 68], &[5]),
                            core(0, 21, &[21, 69], &[5]),
                            core(0, 22, &[22, 70], &[5]),
                            core(0, 23, &[23, 71], &[5]),
                        ],
                    ),
                    node(
                        2,
                        vec![
                            core(1, 24, &[24, 72], &[6]),
                            core(1, 25, &[25, 73], &[6]),
                            core(1, 26, &[26, 74], &[6]),
                            core(1, 27, &[27, 75], &[6]),
                            core(1, 28, &[28, 76], &[7]),
                            core(1, 29, &[29, 77], &[7]),
                            core(1, 30, &[30, 78], &[7]),
                            core(1, 31, &[31, 79], &[7]),
                            core(1, 32, &[32, 80], &[8]),
                            core(1, 33, &[33, 81], &[8]),
                            core(1, 34, &[34, 82], &[8]),
                            core(1, 35, &[35, 83], &[8]),
                        ],
                    ),
                    node(
                        3,
                        vec![
                            core(1, 36, &[36, 84], &[9]),
                            core(1, 37, &[37, 85], &[9]),
                            core(1, 38, &[38, 86], &[9]),
                            core(1, 39, &[39, 87], &[9]),
                            core(1, 40, &[40, 88], &[10]),
                            core(1, 41, &[41, 89], &[10]),
                            core(1, 42, &[42, 90], &[10]),
                            core(1, 43, &[43, 91], &[10]),
                            core(1, 44, &[44, 92], &[11]),
                            core(1, 45, &[45, 93], &[11]),
                            core(1, 46, &[46, 94], &[11]),
                            core(1, 47, &[47, 95], &[11]),
                        ],
                    ),
                ],
            },
            Some(build(
                96,
                2,
                48,
                12,
                4,
                &[
                    [0, 0, 0, 0, 0],
                    [1, 1, 0, 0, 0],
                    [2, 2, 0, 0, 0],
                    [3, 3, 0, 0, 0],
                    [4, 4, 0, 0, 1],
                    [5, 5, 0, 0, 1],
                    [6, 6, 0, 0, 1],
                    [7, 7, 0, 0, 1],
                    [8, 8, 0, 0, 2],
                    [9, 9, 0, 0, 2],
                    [10, 10, 0, 0, 2],
                    [11, 11, 0, 0, 2],
                    [12, 12, 0, 1, 3],
                    [13, 13, 0, 1, 3],
                    [14, 14, 0, 1, 3],
                    [15, 15, 0, 1, 3],
                    [16, 16, 0, 1, 4],
                    [17, 17, 0, 1, 4],
                    [18, 18, 0, 1, 4],
                    [19, 19, 0, 1, 4],
                    [20, 20, 0, 1, 5],
                    [21, 21, 0, 1, 5],
                    [22, 22, 0, 1, 5],
                    [23, 23, 0, 1, 5],
                    [24, 24, 1, 2, 6],
                    [25, 25, 1, 2, 6],
                    [26, 26, 1, 2, 6],
                    [27, 27, 1, 2, 6],
                    [28, 28, 1, 2, 7],
                    [29, 29, 1, 2, 7],
                    [30, 30, 1, 2, 7],
                    [31, 31, 1, 2, 7],
                    [32, 32, 1, 2, 8],
                    [33, 33, 1, 2, 8],
                    [34, 34, 1, 2, 8],
                    [35, 35, 1, 2, 8],
                    [36, 36, 1, 3, 9],
                    [37, 37, 1, 3, 9],
                    [38, 38, 1, 3, 9],
                    [39, 39, 1, 3, 9],
                    [40, 40, 1, 3, 10],
                    [41, 41, 1, 3, 10],
                    [42, 42, 1, 3, 10],
                    [43, 43, 1, 3, 10],
                    [44, 44, 1, 3, 11],
                    [45, 45, 1, 3, 11],
                    [46, 46, 1, 3, 11],
                    [47, 47, 1, 3, 11],
                    [48, 0, 0, 0, 0],
                    [49, 1, 0, 0, 0],
                    [50, 2, 0, 0, 0],
                    [51, 3, 0, 0, 0],
                    [52, 4, 0, 0, 1],
                    [53, 5, 0, 0, 1],
                    [54, 6, 0, 0, 1],
                    [55, 7, 0, 0, 1],
                    [56, 8, 0, 0, 2],
                    [57, 9, 0, 0, 2],
                    [58, 10, 0, 0, 2],
                    [59, 11, 0, 0, 2],
                    [60, 12, 0, 1, 3],
                    [61, 13, 0, 1, 3],
                    [62, 14, 0, 1, 3],
                    [63, 15, 0, 1, 3],
                    [64, 16, 0, 1, 4],
                    [65, 17, 0, 1, 4],
                    [66, 18, 0, 1, 4],
                    [67, 19, 0, 1, 4],
                    [68, 20, 0, 1, 5],
                    [69, 21, 0, 1, 5],
                    [70, 22, 0, 1, 5],
                    [71, 23, 0, 1, 5],
                    [72, 24, 1, 2, 6],
                    [73, 25, 1, 2, 6],
                    [74, 26, 1, 2, 6],
                    [75, 27, 1, 2, 6],
                    [76, 28, 1, 2, 7],
                    [77, 29, 1, 2, 7],
                    [78, 30, 1, 2, 7],
                    [79, 31, 1, 2, 7],
                    [80, 32, 1, 2, 8],
                    [81, 33, 1, 2, 8],
                    [82, 34, 1, 2, 8],
                    [83, 35, 1, 2, 8],
                    [84, 36, 1, 3, 9],
                    [85, 37, 1, 3, 9],
                    [86, 38, 1, 3, 9],
                    [87, 39, 1, 3, 9],
                    [88, 40, 1, 3, 10],
                    [89, 41, 1, 3, 10],
                    [90, 42, 1, 3, 10],
                    [91, 43, 1, 3, 10],
                    [92, 44, 1, 3, 11],
                    [93, 45, 1, 3, 11],
                    [94, 46, 1, 3, 11],
                    [95, 47, 1, 3, 11],
                ],
            )),
        ),
    ];
    for (name, machine_info, want) in cases {
        match (discover(&machine_info), want) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{name}"),
            (Err(_), None) => {}
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
    let no_threads = MachineInfo {
        num_cores: 1,
        num_sockets: 1,
        topology: vec![node(0, vec![core(0, 0, &[], &[])])],
    };
    assert_eq!(discover(&no_threads), Err(TopologyError::NoThreads));
    let twice = MachineInfo {
        num_cores: 2,
        num_sockets: 1,
        topology: vec![node(0, vec![core(0, 0, &[2, 2], &[])])],
    };
    assert_eq!(discover(&twice), Err(TopologyError::ThreadsNotUnique));
    assert_eq!(
        discover(&MachineInfo::default()).unwrap_err().to_string(),
        "could not detect number of cpus"
    );
}

#[test]
fn test_cpu_details_keep_only() {
    let d = details(&[[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [2, 0, 0, 0, 0]]);
    assert_eq!(
        d.keep_only(&cs(&[0, 1])),
        details(&[[0, 0, 0, 0, 0], [1, 0, 0, 0, 0]])
    );
    assert_eq!(d.keep_only(&cs(&[3])), CPUDetails::new());
}

#[test]
fn test_cpu_details_numa_nodes_sockets_cores() {
    // TestCPUDetailsNUMANodes, TestCPUDetailsSockets, TestCPUDetailsCores.
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [2, 1, 1, 1, 0],
        [3, 1, 1, 1, 0],
    ]);
    assert_eq!(d.numa_nodes(), cs(&[0, 1]));
    assert_eq!(d.sockets(), cs(&[0, 1]));
    assert_eq!(d.cores(), cs(&[0, 1]));
    assert_eq!(d.cpus(), cs(&[0, 1, 2, 3]));
}

#[test]
fn test_cpu_details_numa_nodes_in_sockets() {
    let details1 = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 1, 0, 0],
        [2, 0, 2, 1, 0],
        [3, 0, 3, 1, 0],
    ]);
    // poorly designed mainboards
    let details2 = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 0, 1, 0],
        [2, 0, 1, 2, 0],
        [3, 0, 1, 3, 0],
    ]);
    assert_eq!(details1.numa_nodes_in_sockets(&[0, 1, 2]), cs(&[0, 1]));
    assert_eq!(details1.numa_nodes_in_sockets(&[4]), cs(&[]));
    assert_eq!(details2.numa_nodes_in_sockets(&[0]), cs(&[0, 1]));
    assert_eq!(details2.numa_nodes_in_sockets(&[3]), cs(&[]));
}

#[test]
fn test_cpu_details_by_ids() {
    // TestCPUDetailsCPUsInSockets
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [2, 0, 1, 0, 0],
        [3, 0, 2, 0, 0],
    ]);
    assert_eq!(d.cpus_in_sockets(&[0, 1]), cs(&[0, 1, 2]));
    assert_eq!(d.cpus_in_sockets(&[3]), cs(&[]));
    // TestCPUDetailsSocketsInNUMANodes
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 1, 0, 0],
        [2, 0, 2, 1, 0],
        [3, 0, 3, 2, 0],
    ]);
    assert_eq!(d.sockets_in_numa_nodes(&[0, 1]), cs(&[0, 1, 2]));
    assert_eq!(d.sockets_in_numa_nodes(&[3]), cs(&[]));
    // TestCPUDetailsCoresInNUMANodes
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [2, 2, 0, 1, 0],
        [3, 3, 0, 2, 0],
    ]);
    assert_eq!(d.cores_in_numa_nodes(&[0, 1]), cs(&[0, 1, 2]));
    assert_eq!(d.cores_in_numa_nodes(&[3]), cs(&[]));
    // TestCPUDetailsCoresInSockets
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [2, 2, 1, 0, 0],
        [3, 3, 2, 0, 0],
    ]);
    assert_eq!(d.cores_in_sockets(&[0, 1]), cs(&[0, 1, 2]));
    assert_eq!(d.cores_in_sockets(&[3]), cs(&[]));
    // TestCPUDetailsCPUsInNUMANodes
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [2, 0, 0, 1, 0],
        [3, 0, 0, 2, 0],
    ]);
    assert_eq!(d.cpus_in_numa_nodes(&[0, 1]), cs(&[0, 1, 2]));
    assert_eq!(d.cpus_in_numa_nodes(&[3]), cs(&[]));
    // TestCPUDetailsCPUsInCores
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [2, 1, 0, 0, 0],
        [3, 2, 0, 0, 0],
    ]);
    assert_eq!(d.cpus_in_cores(&[0, 1]), cs(&[0, 1, 2]));
    assert_eq!(d.cpus_in_cores(&[3]), cs(&[]));
}

#[test]
fn test_cpu_core_socket_numa_id() {
    // TestCPUCoreID, TestCPUSocketID, TestCPUNUMANodeID on topoDualSocketHT.
    let topo = crate::testing_topologies::topo_dual_socket_ht();
    assert_eq!(topo.cpu_core_id(2), Ok(2));
    assert_eq!(topo.cpu_core_id(8), Ok(2));
    assert_eq!(topo.cpu_core_id(99), Err(TopologyError::UnknownCpu(99)));
    assert_eq!(topo.cpu_socket_id(3), Ok(1));
    assert_eq!(topo.cpu_socket_id(9), Ok(1));
    assert!(topo.cpu_socket_id(99).is_err());
    assert_eq!(topo.cpu_numa_node_id(3), Ok(1));
    assert_eq!(topo.cpu_numa_node_id(9), Ok(1));
    assert_eq!(
        topo.cpu_numa_node_id(99).unwrap_err().to_string(),
        "unknown CPU ID: 99"
    );
}

#[test]
fn test_uncore_queries() {
    // TestCPUsInUncoreCaches
    let d = details(&[[0, 0, 0, 0, 0], [1, 1, 0, 0, 0]]);
    assert_eq!(d.cpus_in_uncore_caches(&[0]), cs(&[0, 1]));
    let d = details(&[[0, 0, 0, 0, 0], [1, 1, 0, 0, 0], [2, 2, 0, 0, 1]]);
    assert_eq!(d.cpus_in_uncore_caches(&[0, 1]), cs(&[0, 1, 2]));
    let d = details(&[[0, 0, 0, 0, 0], [1, 1, 0, 0, 0]]);
    assert_eq!(d.cpus_in_uncore_caches(&[1]), cs(&[]));
    // TestUncoreInNUMANodes
    let d = details(&[[0, 0, 0, 0, 0], [1, 0, 0, 0, 1], [2, 0, 0, 1, 2]]);
    assert_eq!(d.uncore_in_numa_nodes(&[0]), cs(&[0, 1]));
    let d = details(&[[0, 0, 0, 0, 0], [1, 0, 0, 1, 1]]);
    assert_eq!(d.uncore_in_numa_nodes(&[0, 1]), cs(&[0, 1]));
    let d = details(&[[0, 0, 0, 1, 0]]);
    assert_eq!(d.uncore_in_numa_nodes(&[0]), cs(&[]));
    // TestUncoreCaches
    let d = details(&[[0, 0, 0, 0, 0], [1, 0, 0, 0, 1], [2, 0, 0, 0, 2]]);
    assert_eq!(d.uncore_caches(), cs(&[0, 1, 2]));
    assert_eq!(CPUDetails::new().uncore_caches(), cs(&[]));
    let d = details(&[[0, 0, 0, 0, 0], [1, 0, 0, 0, 0]]);
    assert_eq!(d.uncore_caches(), cs(&[0]));
    // TestCPUsPerUncore
    let per = |num_cpus, num_uncore_cache| {
        CPUTopology {
            num_cpus,
            num_uncore_cache,
            ..CPUTopology::default()
        }
        .cpus_per_uncore()
    };
    assert_eq!(per(8, 0), 0);
    assert_eq!(per(16, 2), 8);
    assert_eq!(per(8, 1), 8);
    // CoresNeededInUncoreCache
    let d = details(&[
        [0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [2, 2, 0, 0, 0],
        [3, 3, 0, 0, 1],
    ]);
    assert_eq!(d.cores_needed_in_uncore_cache(2, &[0]), cs(&[0, 1]));
    assert_eq!(d.cores_needed_in_uncore_cache(5, &[0]), cs(&[0, 1, 2]));
}

#[test]
fn test_check_alignment() {
    // alignment_test.go: uncore alignment of a cpuset.
    let topo = crate::testing_topologies::topo_uncore_single_socket_no_smt();
    assert!(topo.check_alignment(&cs(&[])).uncore_cache);
    assert!(topo.check_alignment(&cs(&[0])).uncore_cache);
    assert!(topo.check_alignment(&cs(&[0, 1, 2, 3])).uncore_cache);
    assert!(!topo.check_alignment(&cs(&[3, 4])).uncore_cache);
    assert!(!topo.check_alignment(&cs(&[0, 999])).uncore_cache);
    assert_eq!(Allocation::empty().to_string(), " aligned=<uncore:true>");
}
