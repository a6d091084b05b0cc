//! The gate itself (`featureGate` in `component-base/featuregate/feature_gate.go`).

use std::collections::BTreeMap;

use crate::gates::{ALL_ALPHA, ALL_BETA};
use crate::table::KNOWN_FEATURES;
use crate::{Feature, FeatureSpec, PreRelease};

/// Errors with upstream's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    #[error("unrecognized feature gate: {0}")]
    Unrecognized(String),
    #[error("cannot set feature gate {name} to {value}, feature is locked to {default}")]
    Locked {
        name: String,
        value: bool,
        default: bool,
    },
    #[error("missing bool value for {0}")]
    MissingBool(String),
    #[error(
        "invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
    )]
    InvalidBool { name: String, value: String },
    /// Several errors, printed like `utilerrors.NewAggregate`: `[a, b]`.
    #[error("[{}]", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Aggregate(Vec<FeatureGateError>),
}

impl FeatureGateError {
    fn aggregate(mut errs: Vec<FeatureGateError>) -> FeatureGateError {
        if errs.len() == 1
            && let Some(e) = errs.pop()
        {
            return e;
        }
        FeatureGateError::Aggregate(errs)
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Parses `A=true,B=false` as `featureGate.Set` does (empty items skipped, spaces trimmed).
pub fn parse_feature_gates(value: &str) -> Result<BTreeMap<String, bool>, FeatureGateError> {
    let mut m = BTreeMap::new();
    for item in value.split(',') {
        if item.is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err(FeatureGateError::MissingBool(item.trim().to_string()));
        };
        let (k, v) = (k.trim(), v.trim());
        let b = parse_go_bool(v).ok_or_else(|| FeatureGateError::InvalidBool {
            name: k.to_string(),
            value: v.to_string(),
        })?;
        m.insert(k.to_string(), b);
    }
    Ok(m)
}

/// A mutable feature gate holding the 1.35 kubelet's known gates.
#[derive(Debug, Clone)]
pub struct FeatureGate {
    known: BTreeMap<&'static str, FeatureSpec>,
    /// Every value set explicitly so far (`enabledRaw`).
    raw: BTreeMap<String, bool>,
    /// Resolved values of gates that differ from "use the default" (`enabled`).
    enabled: BTreeMap<String, bool>,
}

impl Default for FeatureGate {
    fn default() -> Self {
        Self::new()
    }
}

impl FeatureGate {
    /// The gate as the kubelet binary registers it (`utilfeature.DefaultMutableFeatureGate`).
    pub fn new() -> Self {
        let mut known: BTreeMap<&'static str, FeatureSpec> =
            KNOWN_FEATURES.iter().copied().collect();
        for special in [ALL_ALPHA, ALL_BETA] {
            let pre_release = if special == ALL_ALPHA {
                PreRelease::Alpha
            } else {
                PreRelease::Beta
            };
            known.insert(
                special.0,
                FeatureSpec {
                    default: false,
                    pre_release,
                    lock_to_default: false,
                },
            );
        }
        FeatureGate {
            known,
            raw: BTreeMap::new(),
            enabled: BTreeMap::new(),
        }
    }

    /// `SetFromMap`: merges `m` into the explicit settings and re-resolves every gate.
    /// Returns upstream's warnings for GA and deprecated gates set in `m`.
    pub fn set_from_map(
        &mut self,
        m: &BTreeMap<String, bool>,
    ) -> Result<Vec<String>, FeatureGateError> {
        let mut raw = self.raw.clone();
        raw.extend(m.iter().map(|(k, v)| (k.clone(), *v)));
        let enabled = self.resolve(&raw)?;
        self.raw = raw;
        self.enabled = enabled;
        Ok(m.iter().filter_map(|(k, v)| self.warning(k, *v)).collect())
    }

    /// `Set`: parses `A=true,B=false` then calls [`FeatureGate::set_from_map`].
    pub fn set(&mut self, value: &str) -> Result<Vec<String>, FeatureGateError> {
        let m = parse_feature_gates(value)?;
        self.set_from_map(&m)
    }

    /// Checks that `m` could be applied on top of this gate, without changing it
    /// (`DeepCopy` + `SetFromMap`, as `ValidateKubeletConfiguration` does).
    pub fn validate_map(&self, m: &BTreeMap<String, bool>) -> Result<(), FeatureGateError> {
        self.clone().set_from_map(m).map(|_| ())
    }

    fn resolve(
        &self,
        raw: &BTreeMap<String, bool>,
    ) -> Result<BTreeMap<String, bool>, FeatureGateError> {
        let mut errs = Vec::new();
        let mut enabled = BTreeMap::new();
        let mut specials = Vec::new();
        for (k, &v) in raw {
            let Some(spec) = self.known.get(k.as_str()) else {
                errs.push(FeatureGateError::Unrecognized(k.clone()));
                return Err(FeatureGateError::aggregate(errs));
            };
            if spec.lock_to_default && spec.default != v {
                errs.push(FeatureGateError::Locked {
                    name: k.clone(),
                    value: v,
                    default: spec.default,
                });
                continue;
            }
            if k == ALL_ALPHA.0 || k == ALL_BETA.0 {
                specials.push((k.as_str(), v));
            }
            enabled.insert(k.clone(), v);
        }
        if !errs.is_empty() {
            return Err(FeatureGateError::aggregate(errs));
        }
        for (special, v) in specials {
            let stage = if special == ALL_ALPHA.0 {
                PreRelease::Alpha
            } else {
                PreRelease::Beta
            };
            for (name, spec) in &self.known {
                let is_special = *name == ALL_ALPHA.0 || *name == ALL_BETA.0;
                if !is_special && spec.pre_release == stage && !raw.contains_key(*name) {
                    enabled.insert((*name).to_string(), v);
                }
            }
        }
        Ok(enabled)
    }

    fn warning(&self, name: &str, value: bool) -> Option<String> {
        match self.known.get(name)?.pre_release {
            PreRelease::Deprecated => Some(format!(
                "Setting deprecated feature gate {name}={value}. It will be removed in a future release."
            )),
            PreRelease::GA => Some(format!(
                "Setting GA feature gate {name}={value}. It will be removed in a future release."
            )),
            _ => None,
        }
    }

    /// `Enabled`: the resolved value; unknown gates are off.
    pub fn enabled(&self, feature: Feature) -> bool {
        self.enabled_by_name(feature.0).unwrap_or(false)
    }

    /// The resolved value of a gate by name, `None` when the gate is unknown.
    pub fn enabled_by_name(&self, name: &str) -> Option<bool> {
        let spec = self.known.get(name)?;
        Some(self.enabled.get(name).copied().unwrap_or(spec.default))
    }

    /// The spec of a known gate.
    pub fn spec(&self, name: &str) -> Option<FeatureSpec> {
        self.known.get(name).copied()
    }

    /// The values set explicitly so far.
    pub fn explicit(&self) -> &BTreeMap<String, bool> {
        &self.raw
    }

    /// `KnownFeatures`: `Name=true|false (STAGE - default=x)` for the alpha and beta gates
    /// (GA and deprecated gates are left out), sorted; used by the `--feature-gates` help.
    pub fn known_features(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .known
            .iter()
            .filter(|(_, s)| matches!(s.pre_release, PreRelease::Alpha | PreRelease::Beta))
            .map(|(k, s)| format!("{k}=true|false ({} - default={})", s.pre_release, s.default))
            .collect();
        out.sort();
        out
    }

    /// Every known gate with its resolved value, sorted by name.
    pub fn all(&self) -> Vec<(&'static str, FeatureSpec, bool)> {
        self.known
            .iter()
            .map(|(k, s)| (*k, *s, self.enabled.get(*k).copied().unwrap_or(s.default)))
            .collect()
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
