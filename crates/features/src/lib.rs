//! Kubelet feature gates at the Kubernetes 1.35 level.
//!
//! Mirrors `staging/src/k8s.io/component-base/featuregate/feature_gate.go` (the gate type:
//! `Set`, `SetFromMap`, `Enabled`, `KnownFeatures`, the `AllAlpha`/`AllBeta` toggles, locked
//! gates and the GA/deprecated warnings) and `pkg/features/kube_features.go` (the gate table in
//! [`table`](crate)), with typed names in [`gates`] for the gates the startup path consults.

mod gate;
pub mod gates;
mod table;

pub use gate::{FeatureGate, FeatureGateError, parse_feature_gates, parse_go_bool};

/// The maturity of a gate (`featuregate.prerelease`). `Display` gives upstream's strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreRelease {
    Alpha,
    Beta,
    GA,
    Deprecated,
}

impl std::fmt::Display for PreRelease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PreRelease::Alpha => "ALPHA",
            PreRelease::Beta => "BETA",
            PreRelease::GA => "",
            PreRelease::Deprecated => "DEPRECATED",
        })
    }
}

/// The spec of one gate at the kubelet's version (`featuregate.FeatureSpec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureSpec {
    pub default: bool,
    pub pre_release: PreRelease,
    pub lock_to_default: bool,
}

/// A typed gate name (`featuregate.Feature`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Feature(pub &'static str);

impl Feature {
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
