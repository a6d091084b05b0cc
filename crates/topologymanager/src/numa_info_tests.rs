//! Upstream's `numa_info_test.go` (v1.35.4).
#![allow(clippy::unwrap_used, clippy::float_cmp, clippy::type_complexity)]

use super::*;

fn node(id: usize, distances: Option<&[u64]>) -> NumaNode {
    NumaNode {
        id,
        distances: distances.map(<[u64]>::to_vec),
    }
}

fn closest() -> PolicyOptions {
    PolicyOptions {
        prefer_closest_numa: true,
        ..PolicyOptions::default()
    }
}

fn distances(rows: &[(usize, &[u64])]) -> NumaDistances {
    NumaDistances(rows.iter().map(|(i, d)| (*i, d.to_vec())).collect())
}

/// `TestNUMAInfo`: the distances are kept only with `prefer-closest-numa-nodes`; a node
/// without them is then an error; node ids need not start at 0 or be sequential.
#[test]
fn numa_info_from_the_topology() {
    let d4: [&[u64]; 4] = [
        &[10, 11, 12, 12],
        &[11, 10, 12, 12],
        &[12, 12, 10, 11],
        &[12, 12, 11, 10],
    ];
    let four: Vec<NumaNode> = (0..4).map(|i| node(i, Some(d4[i]))).collect();
    let info = NumaInfo::new(&four, &PolicyOptions::default()).unwrap();
    assert_eq!(info.nodes, vec![0, 1, 2, 3]);
    assert_eq!(
        info.numa_distances,
        distances(&[(0, &[]), (1, &[]), (2, &[]), (3, &[])])
    );
    let info = NumaInfo::new(&four, &closest()).unwrap();
    assert_eq!(
        info.numa_distances,
        distances(&[(0, d4[0]), (1, d4[1]), (2, d4[2]), (3, d4[3])])
    );
    // "negative test 1 node, no distance file with PreferClosestNUMA"
    let err = NumaInfo::new(&[node(0, None)], &closest()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "error getting NUMA distances from cadvisor"
    );
    assert!(NumaInfo::new(&[node(0, None)], &PolicyOptions::default()).is_ok());
    // "one node and its id is 1, with PreferClosestNUMA"
    let info = NumaInfo::new(&[node(1, Some(&[10]))], &closest()).unwrap();
    assert_eq!(info.nodes, vec![1]);
    assert_eq!(info.numa_distances, distances(&[(1, &[10])]));
    // "two nodes not sequential, with PreferClosestNUMA"
    let info = NumaInfo::new(
        &[node(0, Some(&[10, 0, 20])), node(2, Some(&[20, 0, 10]))],
        &closest(),
    )
    .unwrap();
    assert_eq!(info.nodes, vec![0, 2]);
    assert_eq!(info.default_affinity_mask(), BitMask::new(&[0, 2]));
    assert_eq!(
        info.numa_distances,
        distances(&[(0, &[10, 0, 20]), (2, &[20, 0, 10])])
    );
}

/// `TestCalculateAvgDistanceFor`.
#[test]
fn calculate_average_distance_for() {
    let four: [(usize, &[u64]); 4] = [
        (0, &[10, 11, 12, 12]),
        (1, &[11, 10, 12, 12]),
        (2, &[12, 12, 10, 11]),
        (3, &[12, 12, 11, 10]),
    ];
    let two: [(usize, &[u64]); 2] = [(0, &[10, 11]), (1, &[11, 10])];
    let cases: Vec<(&str, &[usize], NumaDistances, f64)> = vec![
        ("1 NUMA node", &[0], distances(&[(0, &[10])]), 10.0),
        ("2 NUMA node, 1 set in bitmask", &[0], distances(&two), 10.0),
        (
            "2 NUMA node, 2 set in bitmask",
            &[0, 1],
            distances(&two),
            10.5,
        ),
        (
            "4 NUMA node, 2 set in bitmask",
            &[0, 2],
            distances(&four),
            11.0,
        ),
        (
            "4 NUMA node, 3 set in bitmask",
            &[0, 2, 3],
            distances(&four),
            11.111_111_111_111_11,
        ),
        (
            "0 NUMA node, 0 set in bitmask",
            &[],
            NumaDistances::default(),
            0.0,
        ),
    ];
    for (name, bits, d, want) in cases {
        let bm = BitMask::try_new(bits).unwrap();
        assert_eq!(d.calculate_average_for(bm), want, "{name}");
    }
}

/// `TestClosest` (upstream calls `Closest(candidate, current)`).
#[test]
fn closest_mask() {
    let same3: [(usize, &[u64]); 3] = [(0, &[10, 10, 10]), (1, &[10, 10, 10]), (2, &[10, 10, 10])];
    let same4: [(usize, &[u64]); 4] = [
        (0, &[10, 10, 10, 10]),
        (1, &[10, 10, 10, 10]),
        (2, &[10, 10, 10, 10]),
        (3, &[10, 10, 10, 10]),
    ];
    let four: [(usize, &[u64]); 4] = [
        (0, &[10, 11, 12, 12]),
        (1, &[11, 10, 12, 12]),
        (2, &[12, 12, 10, 11]),
        (3, &[12, 12, 11, 10]),
    ];
    let info = |d: NumaDistances| NumaInfo {
        nodes: Vec::new(),
        numa_distances: d,
    };
    let cases: Vec<(&str, &[usize], &[usize], &str, NumaInfo)> = vec![
        (
            "current and candidate length is not the same, current narrower",
            &[0],
            &[0, 2],
            "current",
            NumaInfo::default(),
        ),
        (
            "current and candidate length is the same, distance is the same, current more lower bits set",
            &[0, 1],
            &[0, 2],
            "current",
            info(distances(&same3)),
        ),
        (
            "current and candidate length is the same, distance is the same, candidate more lower bits set",
            &[0, 3],
            &[0, 2],
            "candidate",
            info(distances(&same4)),
        ),
        (
            "current and candidate length is the same, candidate average distance is smaller",
            &[0, 3],
            &[0, 1],
            "candidate",
            info(distances(&four)),
        ),
        (
            "current and candidate length is the same, current average distance is smaller",
            &[2, 3],
            &[0, 3],
            "current",
            info(distances(&four)),
        ),
    ];
    for (name, current, candidate, want, info) in cases {
        let (current, candidate) = (BitMask::new(current), BitMask::new(candidate));
        let got = info.closest(candidate, current);
        let expected = if want == "current" {
            current
        } else {
            candidate
        };
        assert_eq!(got, expected, "{name}");
    }
}
