//! `topologyManagerPolicyOptions`: upstream `topologymanager/policy_options.go` (v1.35.4).

use std::collections::BTreeMap;

/// `PreferClosestNUMANodes`.
pub const PREFER_CLOSEST_NUMA_NODES: &str = "prefer-closest-numa-nodes";
/// `MaxAllowableNUMANodes`.
pub const MAX_ALLOWABLE_NUMA_NODES: &str = "max-allowable-numa-nodes";
/// `defaultMaxAllowableNUMANodes`: more NUMA nodes than this make the hint
/// permutations explode; the manager refuses such machines unless the option raises it.
pub const DEFAULT_MAX_ALLOWABLE_NUMA_NODES: usize = 8;

/// The options by maturity (upstream's `alphaOptions`, `betaOptions`, `stableOptions`);
/// in v1.35 both options are GA.
const ALPHA_OPTIONS: &[&str] = &[];
const BETA_OPTIONS: &[&str] = &[];
const STABLE_OPTIONS: &[&str] = &[PREFER_CLOSEST_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES];

/// The feature gates an option's maturity needs (`TopologyManagerPolicyAlphaOptions`,
/// `TopologyManagerPolicyBetaOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptionGates {
    /// `TopologyManagerPolicyAlphaOptions`.
    pub alpha: bool,
    /// `TopologyManagerPolicyBetaOptions`.
    pub beta: bool,
}

/// An error of the options (upstream's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyOptionsError {
    /// Not an option of any maturity.
    #[error("unknown Topology Manager Policy option: {0:?}")]
    Unknown(String),
    /// An alpha option without its gate.
    #[error("topology manager policy alpha-level options not enabled, but option {0:?} provided")]
    AlphaNotEnabled(String),
    /// A beta option without its gate.
    #[error("topology manager policy beta-level options not enabled, but option {0:?} provided")]
    BetaNotEnabled(String),
    /// `prefer-closest-numa-nodes` is not a Go boolean (`strconv.ParseBool`).
    #[error("bad value for option {name:?}: strconv.ParseBool: parsing {value:?}: invalid syntax")]
    BadBool {
        /// The option.
        name: String,
        /// Its value.
        value: String,
    },
    /// `max-allowable-numa-nodes` is not an integer (`strconv.Atoi`).
    #[error(
        "unable to convert policy option to integer {name:?}: strconv.Atoi: parsing {value:?}: {reason}"
    )]
    BadInt {
        /// The option.
        name: String,
        /// Its value.
        value: String,
        /// `invalid syntax` or `value out of range`.
        reason: &'static str,
    },
    /// An available option this version does not handle (upstream's `default` case).
    #[error("unsupported topologymanager option: {name:?} ({value})")]
    Unsupported {
        /// The option.
        name: String,
        /// Its value.
        value: String,
    },
    /// `max-allowable-numa-nodes` below the default.
    #[error(
        "the minimum value of {0:?} should not be less than {DEFAULT_MAX_ALLOWABLE_NUMA_NODES}"
    )]
    BelowMinimum(String),
}

/// `CheckPolicyOptionAvailable`.
pub fn check_policy_option_available(
    option: &str,
    gates: OptionGates,
) -> Result<(), PolicyOptionsError> {
    check_option_in(option, gates, ALPHA_OPTIONS, BETA_OPTIONS)
}

/// `CheckPolicyOptionAvailable` with the given alpha and beta option sets (upstream's
/// tests add options to them).
fn check_option_in(
    option: &str,
    gates: OptionGates,
    alpha_options: &[&str],
    beta_options: &[&str],
) -> Result<(), PolicyOptionsError> {
    let alpha = alpha_options.contains(&option);
    let beta = beta_options.contains(&option);
    if !alpha && !beta && !STABLE_OPTIONS.contains(&option) {
        return Err(PolicyOptionsError::Unknown(option.to_owned()));
    }
    if alpha && !gates.alpha {
        return Err(PolicyOptionsError::AlphaNotEnabled(option.to_owned()));
    }
    if beta && !gates.beta {
        return Err(PolicyOptionsError::BetaNotEnabled(option.to_owned()));
    }
    Ok(())
}

/// `PolicyOptions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyOptions {
    /// `PreferClosestNUMA`.
    pub prefer_closest_numa: bool,
    /// `MaxAllowableNUMANodes`.
    pub max_allowable_numa_nodes: usize,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            prefer_closest_numa: false,
            max_allowable_numa_nodes: DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
        }
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.Atoi` (64-bit `int`): an optional sign, decimal digits.
fn parse_go_int(value: &str) -> Result<i64, &'static str> {
    let digits = value
        .strip_prefix('-')
        .or_else(|| value.strip_prefix('+'))
        .unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid syntax");
    }
    value.parse::<i64>().map_err(|_| "value out of range")
}

impl PolicyOptions {
    /// `NewPolicyOptions`: each option checked (in name order; Go's map order is random,
    /// so with several bad options upstream may name any of them) and parsed.
    pub fn new(
        policy_options: &BTreeMap<String, String>,
        gates: OptionGates,
    ) -> Result<PolicyOptions, PolicyOptionsError> {
        let mut opts = PolicyOptions::default();
        for (name, value) in policy_options {
            check_policy_option_available(name, gates)?;
            match name.as_str() {
                PREFER_CLOSEST_NUMA_NODES => {
                    opts.prefer_closest_numa =
                        parse_go_bool(value).ok_or_else(|| PolicyOptionsError::BadBool {
                            name: name.clone(),
                            value: value.clone(),
                        })?;
                }
                MAX_ALLOWABLE_NUMA_NODES => {
                    let n = parse_go_int(value).map_err(|reason| PolicyOptionsError::BadInt {
                        name: name.clone(),
                        value: value.clone(),
                        reason,
                    })?;
                    let n = usize::try_from(n).unwrap_or(0);
                    if n < DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
                        return Err(PolicyOptionsError::BelowMinimum(name.clone()));
                    }
                    if n > DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
                        tracing::info!(
                            max_allowable_numa_nodes = n,
                            default_max_allowable_numa_nodes = DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
                            "WARNING: the value of max-allowable-numa-nodes is more than the default recommended value"
                        );
                    }
                    opts.max_allowable_numa_nodes = n;
                }
                // Unreachable while every available option is handled above (upstream's
                // `default` case).
                _ => {
                    return Err(PolicyOptionsError::Unsupported {
                        name: name.clone(),
                        value: value.clone(),
                    });
                }
            }
        }
        Ok(opts)
    }
}

#[cfg(test)]
#[path = "policy_options_tests.rs"]
mod tests;
