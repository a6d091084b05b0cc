//! Upstream `policy_options_test.go`.
#![allow(clippy::unwrap_used, clippy::type_complexity)]

use super::*;
use crate::testing_topologies::*;

fn gate(value: &str) -> FeatureGate {
    let mut gate = FeatureGate::new();
    gate.set(value).unwrap();
    gate
}

fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn test_policy_defaults_available() {
    let defaults = FeatureGate::new();
    assert!(check_policy_option_available("this-option-does-not-exist", &defaults).is_err());
    assert!(check_policy_option_available(FULL_PCPUS_ONLY_OPTION, &defaults).is_ok());
}

#[test]
fn test_policy_options_available() {
    let alpha = "CPUManagerPolicyAlphaOptions";
    let beta = "CPUManagerPolicyBetaOptions";
    let cases = [
        ("this-option-does-not-exist", beta, false, false),
        ("this-option-does-not-exist", beta, true, false),
        (ALIGN_BY_SOCKET_OPTION, alpha, true, true),
        (ALIGN_BY_SOCKET_OPTION, beta, true, false),
        (DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, beta, true, true),
        (DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, beta, false, false),
        (DISTRIBUTE_CPUS_ACROSS_CORES_OPTION, alpha, true, true),
        (DISTRIBUTE_CPUS_ACROSS_CORES_OPTION, beta, true, false),
        (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, beta, false, false),
        (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, beta, true, true),
    ];
    for (option, feature, enable, expected) in cases {
        let gate = gate(&format!("{feature}={enable}"));
        assert_eq!(
            check_policy_option_available(option, &gate).is_ok(),
            expected,
            "{option} {feature}={enable}"
        );
    }
}

#[test]
fn test_policy_options_always_available_once_ga() {
    let gate = gate("CPUManagerPolicyAlphaOptions=false,CPUManagerPolicyBetaOptions=false");
    for option in [FULL_PCPUS_ONLY_OPTION, STRICT_CPU_RESERVATION_OPTION] {
        assert!(
            check_policy_option_available(option, &gate).is_ok(),
            "{option}"
        );
    }
}

#[test]
fn test_error_messages() {
    let defaults = FeatureGate::new();
    let off = gate("CPUManagerPolicyBetaOptions=false");
    assert_eq!(
        check_policy_option_available("nope", &defaults)
            .unwrap_err()
            .to_string(),
        r#"unknown CPU Manager Policy option: "nope""#
    );
    assert_eq!(
        check_policy_option_available(ALIGN_BY_SOCKET_OPTION, &defaults)
            .unwrap_err()
            .to_string(),
        r#"CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided"#
    );
    assert_eq!(
        check_policy_option_available(DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, &off)
            .unwrap_err()
            .to_string(),
        r#"CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided"#
    );
    assert_eq!(
        StaticPolicyOptions::new(&opts(&[(FULL_PCPUS_ONLY_OPTION, "yes")]), &defaults)
            .unwrap_err()
            .to_string(),
        r#"bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax"#
    );
    let all = gate("CPUManagerPolicyAlphaOptions=true");
    assert_eq!(
        StaticPolicyOptions::new(
            &opts(&[
                (FULL_PCPUS_ONLY_OPTION, "true"),
                (DISTRIBUTE_CPUS_ACROSS_CORES_OPTION, "true")
            ]),
            &all
        )
        .unwrap_err()
        .to_string(),
        "static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time"
    );
    let parsed = StaticPolicyOptions::new(
        &opts(&[
            (FULL_PCPUS_ONLY_OPTION, "1"),
            (STRICT_CPU_RESERVATION_OPTION, "True"),
            (DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, "t"),
            (ALIGN_BY_SOCKET_OPTION, "false"),
        ]),
        &all,
    )
    .unwrap();
    assert_eq!(
        parsed,
        StaticPolicyOptions {
            full_physical_cpus_only: true,
            strict_cpu_reservation: true,
            distribute_cpus_across_numa: true,
            ..StaticPolicyOptions::default()
        }
    );
}

#[test]
fn test_validate_static_policy_options() {
    let cases = [
        (
            "Align by socket not enabled",
            FULL_PCPUS_ONLY_OPTION,
            topo_dual_socket_multi_numa_per_socket_ht(),
            "single-numa-node",
            false,
        ),
        (
            "Align by socket enabled with topology manager single numa node",
            ALIGN_BY_SOCKET_OPTION,
            topo_dual_socket_multi_numa_per_socket_ht(),
            "single-numa-node",
            true,
        ),
        (
            "Align by socket enabled with num_sockets > num_numa",
            ALIGN_BY_SOCKET_OPTION,
            fake_topo_multi_socket_dual_socket_per_numa_ht(),
            "none",
            true,
        ),
        (
            "Align by socket enabled: with topology manager None policy",
            ALIGN_BY_SOCKET_OPTION,
            topo_dual_socket_multi_numa_per_socket_ht(),
            "none",
            false,
        ),
        (
            "Align by socket enabled: with topology manager best-effort policy",
            ALIGN_BY_SOCKET_OPTION,
            topo_dual_socket_multi_numa_per_socket_ht(),
            "best-effort",
            false,
        ),
        (
            "Align by socket enabled: with topology manager restricted policy",
            ALIGN_BY_SOCKET_OPTION,
            topo_dual_socket_multi_numa_per_socket_ht(),
            "restricted",
            false,
        ),
    ];
    let gate = gate("CPUManagerPolicyAlphaOptions=true");
    for (description, option, topology, tm_policy, expected_err) in cases {
        let policy_opt = StaticPolicyOptions::new(&opts(&[(option, "true")]), &gate).unwrap();
        let err = validate_static_policy_options(&policy_opt, &topology, tm_policy);
        assert_eq!(err.is_err(), expected_err, "{description}");
    }
}

#[test]
fn test_policy_options_compatibility() {
    let alpha = "CPUManagerPolicyAlphaOptions";
    let beta = "CPUManagerPolicyBetaOptions";
    let cases: [(&str, &str, &[(&str, &str)], bool); 8] = [
        (
            "FullPhysicalCPUsOnly set to true only",
            beta,
            &[(FULL_PCPUS_ONLY_OPTION, "true")],
            false,
        ),
        (
            "DistributeCPUsAcrossCores set to true only",
            alpha,
            &[(DISTRIBUTE_CPUS_ACROSS_CORES_OPTION, "true")],
            false,
        ),
        (
            "PreferAlignByUnCoreCache and StrictCPUReservation set to true",
            alpha,
            &[
                (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true"),
                (STRICT_CPU_RESERVATION_OPTION, "true"),
            ],
            false,
        ),
        (
            "PreferAlignByUnCoreCache and FullPCPUsOnly set to true",
            alpha,
            &[
                (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true"),
                (FULL_PCPUS_ONLY_OPTION, "true"),
            ],
            false,
        ),
        (
            "PreferAlignByUnCoreCache and AlignBySocket set to true",
            alpha,
            &[
                (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true"),
                (ALIGN_BY_SOCKET_OPTION, "true"),
            ],
            false,
        ),
        (
            "FullPhysicalCPUsOnly and DistributeCPUsAcrossCores options can not coexist",
            alpha,
            &[
                (FULL_PCPUS_ONLY_OPTION, "true"),
                (DISTRIBUTE_CPUS_ACROSS_CORES_OPTION, "true"),
            ],
            true,
        ),
        (
            "PreferAlignByUnCoreCache and DistributeCPUsAcrossCores options can not coexist",
            alpha,
            &[
                (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true"),
                (DISTRIBUTE_CPUS_ACROSS_CORES_OPTION, "true"),
            ],
            true,
        ),
        (
            "PreferAlignByUnCoreCache and DistributeCPUsAcrossNUMA options can not coexist",
            alpha,
            &[
                (PREFER_ALIGN_BY_UNCORE_CACHE_OPTION, "true"),
                (DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION, "true"),
            ],
            true,
        ),
    ];
    for (description, feature, options, expected_err) in cases {
        let gate = gate(&format!("{feature}=true"));
        let got = StaticPolicyOptions::new(&opts(options), &gate);
        assert_eq!(got.is_err(), expected_err, "{description}: {got:?}");
    }
}
