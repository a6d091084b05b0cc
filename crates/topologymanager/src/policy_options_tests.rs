//! Upstream's `policy_options_test.go` (v1.35.4).
#![allow(clippy::unwrap_used)]

use super::*;

const FANCY_ALPHA: &str = "fancy-alpha";
const FANCY_BETA: &str = "fancy-beta";

fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// `TestNewTopologyManagerOptions` (the stable options; the alpha/beta cases are in
/// [`options_available_by_gate`]).
#[test]
fn new_topology_manager_options() {
    let none = OptionGates::default();
    assert_eq!(
        PolicyOptions::new(
            &opts(&[
                (PREFER_CLOSEST_NUMA_NODES, "true"),
                (MAX_ALLOWABLE_NUMA_NODES, "8")
            ]),
            none
        )
        .unwrap(),
        PolicyOptions {
            prefer_closest_numa: true,
            max_allowable_numa_nodes: 8
        }
    );
    assert_eq!(
        PolicyOptions::new(&opts(&[(MAX_ALLOWABLE_NUMA_NODES, "12")]), none).unwrap(),
        PolicyOptions {
            prefer_closest_numa: false,
            max_allowable_numa_nodes: 12
        }
    );
    assert_eq!(
        PolicyOptions::new(&opts(&[]), none).unwrap(),
        PolicyOptions {
            prefer_closest_numa: false,
            max_allowable_numa_nodes: 8
        }
    );
    let err = PolicyOptions::new(&opts(&[(PREFER_CLOSEST_NUMA_NODES, "not a boolean")]), none)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad value for option \"prefer-closest-numa-nodes\": strconv.ParseBool: parsing \"not a boolean\": invalid syntax"
    );
    let err = PolicyOptions::new(
        &opts(&[(MAX_ALLOWABLE_NUMA_NODES, "can't parse to int")]),
        none,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unable to convert policy option to integer \"max-allowable-numa-nodes\": strconv.Atoi: parsing \"can't parse to int\": invalid syntax"
    );
    let err = PolicyOptions::new(&opts(&[(MAX_ALLOWABLE_NUMA_NODES, "4")]), none).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8"
    );
    let err = PolicyOptions::new(&opts(&[("this-option-does-not-exist", "1")]), none).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown Topology Manager Policy option: \"this-option-does-not-exist\""
    );
}

/// `TestPolicyDefaultsAvailable`, `TestPolicyOptionsAvailable` and the alpha/beta cases of
/// `TestNewTopologyManagerOptions` (upstream adds `fancy` options to the sets).
#[test]
fn options_available_by_gate() {
    let gates = |alpha, beta| OptionGates { alpha, beta };
    let cases = [
        ("this-option-does-not-exist", gates(false, false), false),
        ("this-option-does-not-exist", gates(false, true), false),
        (PREFER_CLOSEST_NUMA_NODES, gates(false, false), true),
        (MAX_ALLOWABLE_NUMA_NODES, gates(false, false), true),
        (FANCY_ALPHA, gates(true, false), true),
        (FANCY_ALPHA, gates(false, false), false),
        (FANCY_BETA, gates(false, true), true),
        (FANCY_BETA, gates(false, false), false),
    ];
    for (option, g, want) in cases {
        let got = check_option_in(option, g, &[FANCY_ALPHA], &[FANCY_BETA]);
        assert_eq!(got.is_ok(), want, "{option} {g:?}: {got:?}");
    }
    assert_eq!(
        check_option_in(
            FANCY_BETA,
            gates(false, false),
            &[FANCY_ALPHA],
            &[FANCY_BETA]
        )
        .unwrap_err()
        .to_string(),
        "topology manager policy beta-level options not enabled, but option \"fancy-beta\" provided"
    );
    assert_eq!(
        check_option_in(
            FANCY_ALPHA,
            gates(false, false),
            &[FANCY_ALPHA],
            &[FANCY_BETA]
        )
        .unwrap_err()
        .to_string(),
        "topology manager policy alpha-level options not enabled, but option \"fancy-alpha\" provided"
    );
    // In v1.35 every option is stable: no gate needed.
    for option in [PREFER_CLOSEST_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES] {
        assert!(check_policy_option_available(option, OptionGates::default()).is_ok());
    }
}
