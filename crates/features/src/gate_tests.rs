#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use super::*;
use crate::gates;

fn map(items: &[(&str, bool)]) -> BTreeMap<String, bool> {
    items.iter().map(|(k, v)| ((*k).to_string(), *v)).collect()
}

#[test]
fn defaults_at_1_35() {
    let g = FeatureGate::new();
    assert!(g.enabled(gates::KUBELET_CRASH_LOOP_BACK_OFF_MAX));
    assert!(g.enabled(gates::KUBELET_ENSURE_SECRET_PULLED_IMAGES));
    assert!(g.enabled(gates::GRACEFUL_NODE_SHUTDOWN));
    assert!(g.enabled(gates::ROTATE_KUBELET_SERVER_CERTIFICATE));
    assert!(!g.enabled(gates::MEMORY_QOS));
    assert!(!g.enabled(gates::NODE_LOG_QUERY));
    assert!(!g.enabled(gates::QOS_RESERVED));
    assert!(!g.enabled(gates::CPU_CFS_QUOTA_PERIOD));
    assert!(g.enabled(gates::IMAGE_MAXIMUM_GC_AGE));
    assert_eq!(
        g.spec("ImageMaximumGCAge").unwrap().pre_release,
        PreRelease::GA
    );
    assert!(g.spec("SystemdWatchdog").unwrap().lock_to_default);
    assert!(!g.enabled(gates::ALLOW_OVERWRITE_TERMINATION_GRACE_PERIOD_SECONDS));
    assert_eq!(g.enabled_by_name("WatchListClient"), Some(true));
    assert_eq!(g.enabled_by_name("Bogus"), None);
}

#[test]
fn every_typed_name_is_registered() {
    let g = FeatureGate::new();
    for f in gates::ALL {
        assert!(g.spec(f.name()).is_some(), "{f} not registered");
    }
}

#[test]
fn set_flag_syntax() {
    let mut g = FeatureGate::new();
    g.set("MemoryQoS=true, NodeLogQuery = false,,").unwrap();
    assert!(g.enabled(gates::MEMORY_QOS));
    assert!(!g.enabled(gates::NODE_LOG_QUERY));
    g.set("QOSReserved=t").unwrap();
    assert!(g.enabled(gates::QOS_RESERVED));
}

#[test]
fn unknown_gate_is_refused() {
    let mut g = FeatureGate::new();
    let err = g.set("NoSuchGate=true").unwrap_err();
    assert_eq!(err.to_string(), "unrecognized feature gate: NoSuchGate");
    // the failed call changed nothing
    assert!(g.explicit().is_empty());
}

#[test]
fn locked_gate_to_non_default_is_refused() {
    let mut g = FeatureGate::new();
    let err = g.set("NodeSwap=false").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot set feature gate NodeSwap to false, feature is locked to true"
    );
    let err = g
        .set("AllowOverwriteTerminationGracePeriodSeconds=true")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot set feature gate AllowOverwriteTerminationGracePeriodSeconds to true, feature is locked to false"
    );
}

#[test]
fn locked_gate_to_default_is_accepted_with_ga_warning() {
    let mut g = FeatureGate::new();
    let warnings = g.set("NodeSwap=true").unwrap();
    assert_eq!(
        warnings,
        vec!["Setting GA feature gate NodeSwap=true. It will be removed in a future release."]
    );
    let warnings = g.set("KMSv1=false").unwrap();
    assert_eq!(
        warnings,
        vec![
            "Setting deprecated feature gate KMSv1=false. It will be removed in a future release."
        ]
    );
    assert!(g.set("MemoryQoS=true").unwrap().is_empty());
}

#[test]
fn several_locked_errors_aggregate() {
    let mut g = FeatureGate::new();
    let err = g
        .set_from_map(&map(&[("NodeSwap", false), ("SidecarContainers", false)]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "[cannot set feature gate NodeSwap to false, feature is locked to true, \
         cannot set feature gate SidecarContainers to false, feature is locked to true]"
    );
}

#[test]
fn bad_bool_and_missing_value() {
    let mut g = FeatureGate::new();
    assert_eq!(
        g.set("MemoryQoS").unwrap_err().to_string(),
        "missing bool value for MemoryQoS"
    );
    assert_eq!(
        g.set("MemoryQoS=yes").unwrap_err().to_string(),
        "invalid value of MemoryQoS=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax"
    );
}

#[test]
fn set_from_map_merges_across_calls() {
    let mut g = FeatureGate::new();
    g.set_from_map(&map(&[("MemoryQoS", true)])).unwrap();
    g.set_from_map(&map(&[("NodeLogQuery", true)])).unwrap();
    assert!(g.enabled(gates::MEMORY_QOS));
    assert!(g.enabled(gates::NODE_LOG_QUERY));
    g.set_from_map(&map(&[("MemoryQoS", false)])).unwrap();
    assert!(!g.enabled(gates::MEMORY_QOS));
}

#[test]
fn all_alpha_and_all_beta_with_explicit_override() {
    let mut g = FeatureGate::new();
    g.set("AllAlpha=true,QOSReserved=false").unwrap();
    assert!(g.enabled(gates::MEMORY_QOS));
    assert!(!g.enabled(gates::QOS_RESERVED));
    assert!(g.enabled(gates::ALL_ALPHA));
    // GA gates are untouched
    assert!(g.enabled(gates::SIDECAR_CONTAINERS));
    let mut g = FeatureGate::new();
    g.set("AllBeta=false").unwrap();
    assert!(!g.enabled(gates::GRACEFUL_NODE_SHUTDOWN));
    assert!(!g.enabled(gates::MEMORY_QOS));
}

#[test]
fn validate_map_does_not_mutate() {
    let g = FeatureGate::new();
    assert!(g.validate_map(&map(&[("MemoryQoS", true)])).is_ok());
    assert!(!g.enabled(gates::MEMORY_QOS));
    assert!(g.validate_map(&map(&[("Bogus", true)])).is_err());
}

#[test]
fn known_features_lists_alpha_and_beta_only() {
    let g = FeatureGate::new();
    let known = g.known_features();
    assert!(known.contains(&"MemoryQoS=true|false (ALPHA - default=false)".to_string()));
    assert!(known.contains(&"AllBeta=true|false (BETA - default=false)".to_string()));
    assert!(known.contains(&"GracefulNodeShutdown=true|false (BETA - default=true)".to_string()));
    assert!(!known.iter().any(|k| k.starts_with("NodeSwap=")));
    let mut sorted = known.clone();
    sorted.sort();
    assert_eq!(known, sorted);
}

#[test]
fn go_bool_parsing() {
    for t in ["1", "t", "T", "TRUE", "true", "True"] {
        assert_eq!(parse_go_bool(t), Some(true));
    }
    for f in ["0", "f", "F", "FALSE", "false", "False"] {
        assert_eq!(parse_go_bool(f), Some(false));
    }
    assert_eq!(parse_go_bool("tRue"), None);
}
