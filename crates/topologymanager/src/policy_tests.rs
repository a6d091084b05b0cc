//! Upstream's `policy_test.go`, `policy_none_test.go`, `policy_best_effort_test.go`,
//! `policy_restricted_test.go` and `policy_single_numa_node_test.go` (v1.35.4); the merge
//! tables are generated from upstream's file (`policy_cases.rs`).
#![allow(clippy::unwrap_used, clippy::type_complexity)]

use std::collections::BTreeMap;

use super::*;
use crate::numa_info::NumaDistances;

#[path = "policy_cases.rs"]
mod cases;

/// `policyMergeTestCase`: each provider's hints (`None`: a provider returning a nil map).
pub(super) struct MergeCase {
    pub name: &'static str,
    #[allow(clippy::type_complexity)]
    pub hp: Vec<Option<Vec<(&'static str, Option<Vec<TopologyHint>>)>>>,
    pub expected: TopologyHint,
}

fn numa_info(distances: &[&[u64]]) -> NumaInfo {
    NumaInfo {
        nodes: (0..distances.len()).collect(),
        numa_distances: NumaDistances(
            distances
                .iter()
                .enumerate()
                .map(|(i, d)| (i, d.to_vec()))
                .collect(),
        ),
    }
}

/// `commonNUMAInfoTwoNodes`.
pub(crate) fn common_numa_info_two_nodes() -> NumaInfo {
    numa_info(&[&[10, 11], &[11, 10]])
}

/// `commonNUMAInfoFourNodes`.
pub(crate) fn common_numa_info_four_nodes() -> NumaInfo {
    numa_info(&[
        &[10, 11, 12, 12],
        &[11, 10, 12, 12],
        &[12, 12, 10, 11],
        &[12, 12, 11, 10],
    ])
}

/// `commonNUMAInfoEightNodes`.
pub(crate) fn common_numa_info_eight_nodes() -> NumaInfo {
    numa_info(&[
        &[10, 11, 12, 12, 30, 30, 30, 30],
        &[11, 10, 12, 12, 30, 30, 30, 30],
        &[12, 12, 10, 11, 30, 30, 30, 30],
        &[12, 12, 11, 10, 30, 30, 30, 30],
        &[30, 30, 30, 30, 10, 11, 12, 12],
        &[30, 30, 30, 30, 11, 10, 12, 12],
        &[30, 30, 30, 30, 12, 12, 10, 11],
        &[30, 30, 30, 30, 12, 12, 13, 10],
    ])
}

fn providers_hints(case: &MergeCase) -> Vec<ResourceHints> {
    case.hp
        .iter()
        .map(|p| {
            p.iter()
                .flatten()
                .map(|(r, h)| ((*r).to_owned(), h.clone()))
                .collect::<BTreeMap<_, _>>()
        })
        .collect()
}

/// `testPolicyMerge`.
fn test_policy_merge(policy: &dyn Policy, cases: &[MergeCase]) {
    for case in cases {
        let (actual, _) = policy.merge(&providers_hints(case));
        assert_eq!(actual, case.expected, "{}: {}", policy.name(), case.name);
    }
}

#[test]
fn policy_best_effort_merge() {
    let info = common_numa_info_four_nodes();
    let nodes = info.nodes.clone();
    let policy = BestEffortPolicy::new(info, PolicyOptions::default());
    let mut cases = cases::common_policy_merge_test_cases(&nodes);
    cases.extend(cases::best_effort_merge_test_cases(&nodes));
    cases.extend(cases::best_effort_merge_test_cases_no_policies(&nodes));
    test_policy_merge(&policy, &cases);
}

#[test]
fn policy_best_effort_merge_closest_numa() {
    let info = common_numa_info_eight_nodes();
    let nodes = info.nodes.clone();
    let opts = PolicyOptions {
        prefer_closest_numa: true,
        ..PolicyOptions::default()
    };
    let policy = BestEffortPolicy::new(info, opts);
    let mut cases = cases::common_policy_merge_test_cases(&nodes);
    cases.extend(cases::best_effort_merge_test_cases(&nodes));
    cases.extend(cases::best_effort_merge_test_cases_closest_numa(&nodes));
    test_policy_merge(&policy, &cases);
}

#[test]
fn policy_restricted_merge() {
    let info = common_numa_info_four_nodes();
    let nodes = info.nodes.clone();
    let policy = RestrictedPolicy::new(info, PolicyOptions::default());
    let mut cases = cases::common_policy_merge_test_cases(&nodes);
    cases.extend(cases::best_effort_merge_test_cases(&nodes));
    cases.extend(cases::best_effort_merge_test_cases_no_policies(&nodes));
    test_policy_merge(&policy, &cases);
}

#[test]
fn policy_restricted_merge_closest_numa() {
    let info = common_numa_info_eight_nodes();
    let nodes = info.nodes.clone();
    let opts = PolicyOptions {
        prefer_closest_numa: true,
        ..PolicyOptions::default()
    };
    let policy = RestrictedPolicy::new(info, opts);
    let mut cases = cases::common_policy_merge_test_cases(&nodes);
    cases.extend(cases::best_effort_merge_test_cases(&nodes));
    cases.extend(cases::best_effort_merge_test_cases_closest_numa(&nodes));
    test_policy_merge(&policy, &cases);
}

#[test]
fn policy_single_numa_node_merge() {
    let info = common_numa_info_four_nodes();
    let nodes = info.nodes.clone();
    let policy = SingleNumaNodePolicy::new(info, PolicyOptions::default());
    let mut cases = cases::common_policy_merge_test_cases(&nodes);
    cases.extend(cases::single_numa_node_merge_test_cases(&nodes));
    test_policy_merge(&policy, &cases);
}

fn hint(bits: Option<&[usize]>, preferred: bool) -> TopologyHint {
    TopologyHint {
        numa_node_affinity: bits.map(BitMask::new),
        preferred,
    }
}

/// `TestPolicyNoneMerge`, `TestPolicyNoneName`, `TestPolicyNoneCanAdmitPodResult`.
#[test]
fn policy_none_merge() {
    let hints: ResourceHints = [("resource".to_owned(), Some(vec![hint(Some(&[0]), true)]))]
        .into_iter()
        .collect();
    assert_eq!(NonePolicy.name(), "none");
    assert_eq!(NonePolicy.merge(&[]), (TopologyHint::default(), true));
    assert_eq!(NonePolicy.merge(&[hints]), (TopologyHint::default(), true));
}

/// `TestPolicy{BestEffort,Restricted,SingleNumaNode}CanAdmitPodResult`: best-effort
/// admits everything, the others only a preferred hint.
#[test]
fn policies_admit_as_upstream() {
    // A provider whose resource can be placed nowhere: the merged hint is not preferred.
    let unplaceable: ResourceHints = [("resource".to_owned(), Some(vec![]))]
        .into_iter()
        .collect();
    let info = common_numa_info_two_nodes;
    let be = BestEffortPolicy::new(info(), PolicyOptions::default());
    let re = RestrictedPolicy::new(info(), PolicyOptions::default());
    let sn = SingleNumaNodePolicy::new(info(), PolicyOptions::default());
    assert_eq!(be.name(), "best-effort");
    assert_eq!(re.name(), "restricted");
    assert_eq!(sn.name(), "single-numa-node");
    for (policy, want) in [
        (&be as &dyn Policy, true),
        (&re as &dyn Policy, false),
        (&sn as &dyn Policy, false),
    ] {
        let (best, admit) = policy.merge(std::slice::from_ref(&unplaceable));
        assert!(!best.preferred, "{}", policy.name());
        assert_eq!(admit, want, "{}", policy.name());
        let (best, admit) = policy.merge(&[]);
        assert!(best.preferred && admit, "{}", policy.name());
    }
    assert!(is_alignment_guaranteed(&sn));
    assert!(!is_alignment_guaranteed(&re) && !is_alignment_guaranteed(&be));
}

/// `TestMaxOfMinAffinityCounts`.
#[test]
fn max_of_min_affinity_counts_table() {
    let h = |bits: &[usize]| hint(Some(bits), true);
    let cases: Vec<(Vec<Vec<TopologyHint>>, usize)> = vec![
        (vec![], 0),
        (vec![vec![h(&[])]], 0),
        (vec![vec![h(&[0])]], 1),
        (vec![vec![h(&[0, 1])]], 2),
        (vec![vec![h(&[0, 1]), h(&[0, 1, 2])]], 2),
        (
            vec![vec![h(&[0, 1]), h(&[0, 1, 2])], vec![h(&[0, 1, 2])]],
            3,
        ),
        (
            vec![
                vec![h(&[0, 1]), h(&[0, 1, 2])],
                vec![h(&[0, 1, 2]), h(&[0, 1, 2, 3])],
            ],
            3,
        ),
    ];
    for (hints, want) in cases {
        assert_eq!(max_of_min_affinity_counts(&hints), want, "{hints:?}");
    }
}

/// `TestPolicySingleNumaNodeFilterHints`.
#[test]
fn single_numa_node_filter_hints() {
    let cases: Vec<(Vec<Vec<TopologyHint>>, Vec<Vec<TopologyHint>>)> = vec![
        (vec![], vec![]),
        (
            vec![vec![hint(None, false)], vec![hint(None, true)]],
            vec![vec![], vec![hint(None, true)]],
        ),
        (
            vec![
                vec![hint(Some(&[0]), true), hint(None, false)],
                vec![hint(Some(&[1]), true), hint(None, true)],
            ],
            vec![
                vec![hint(Some(&[0]), true)],
                vec![hint(Some(&[1]), true), hint(None, true)],
            ],
        ),
        (
            vec![
                vec![hint(Some(&[]), true), hint(None, false)],
                vec![hint(Some(&[]), true), hint(None, true)],
            ],
            vec![vec![], vec![hint(None, true)]],
        ),
        (
            vec![
                vec![hint(Some(&[0, 1]), true), hint(Some(&[0]), false)],
                vec![hint(Some(&[0, 1]), true), hint(Some(&[1]), true)],
            ],
            vec![vec![], vec![hint(Some(&[1]), true)]],
        ),
    ];
    for (all, want) in cases {
        assert_eq!(filter_single_numa_hints(&all), want, "{all:?}");
    }
}

/// `TestCompareHintsNarrowest` (the cases with a non-negative
/// `bestNonPreferredAffinityCount`, and the early returns).
#[test]
fn compare_hints_narrowest() {
    let info = common_numa_info_four_nodes();
    let merger = |best: usize| HintMerger {
        numa_info: &info,
        hints: Vec::new(),
        best_non_preferred_affinity_count: best,
        closest: false,
    };
    let h = |bits: &[usize], p: bool| hint(Some(bits), p);
    // (best count, current, candidate, "current"/"candidate")
    let cases: Vec<(usize, Option<TopologyHint>, TopologyHint, &str)> = vec![
        (0, None, h(&[], false), "current"),
        (0, Some(h(&[], true)), h(&[], false), "current"),
        (0, None, h(&[0], true), "candidate"),
        (0, None, h(&[0], false), "candidate"),
        (0, Some(h(&[0], false)), h(&[0], true), "candidate"),
        (0, Some(h(&[0], true)), h(&[0], false), "current"),
        (0, Some(h(&[0, 1], true)), h(&[0], true), "candidate"),
        (0, Some(h(&[0], true)), h(&[0, 1], true), "current"),
        (0, Some(h(&[1], true)), h(&[0], true), "candidate"),
        (1, Some(h(&[0, 1], false)), h(&[0], false), "candidate"),
        (1, Some(h(&[0], false)), h(&[0, 1], false), "current"),
        (1, Some(h(&[1], false)), h(&[0], false), "candidate"),
        (2, Some(h(&[0, 1], false)), h(&[0, 1, 2], false), "current"),
        (2, Some(h(&[0, 2], false)), h(&[0, 1], false), "candidate"),
        (3, Some(h(&[0], false)), h(&[0, 1, 2, 3], false), "current"),
        (2, Some(h(&[0], false)), h(&[0, 1], false), "candidate"),
        (3, Some(h(&[0], false)), h(&[0, 1], false), "candidate"),
        (3, Some(h(&[0, 1], false)), h(&[0], false), "current"),
        (3, Some(h(&[1, 2], false)), h(&[0, 1], false), "candidate"),
    ];
    for (best, current, candidate, want) in cases {
        let got = merger(best).compare(current, candidate);
        let expected = if want == "current" {
            current
        } else {
            Some(candidate)
        };
        assert_eq!(got, expected, "{best} {current:?} {candidate:?}");
    }
}
