//! The static policy's options (`cpuManagerPolicyOptions`): upstream `policy_options.go`.

use std::collections::BTreeMap;

use kubelet_features::{FeatureGate, gates, parse_go_bool};

use crate::topology::CPUTopology;

/// `full-pcpus-only`.
pub const FULL_PCPUS_ONLY_OPTION: &str = "full-pcpus-only";
/// `distribute-cpus-across-numa`.
pub const DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION: &str = "distribute-cpus-across-numa";
/// `align-by-socket`.
pub const ALIGN_BY_SOCKET_OPTION: &str = "align-by-socket";
/// `distribute-cpus-across-cores`.
pub const DISTRIBUTE_CPUS_ACROSS_CORES_OPTION: &str = "distribute-cpus-across-cores";
/// `strict-cpu-reservation`.
pub const STRICT_CPU_RESERVATION_OPTION: &str = "strict-cpu-reservation";
/// `prefer-align-cpus-by-uncorecache`.
pub const PREFER_ALIGN_BY_UNCORE_CACHE_OPTION: &str = "prefer-align-cpus-by-uncorecache";

const ALPHA_OPTIONS: &[&str] = &[ALIGN_BY_SOCKET_OPTION, DISTRIBUTE_CPUS_ACROSS_CORES_OPTION];
const BETA_OPTIONS: &[&str] = &[
    DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION,
    PREFER_ALIGN_BY_UNCORE_CACHE_OPTION,
];
const STABLE_OPTIONS: &[&str] = &[FULL_PCPUS_ONLY_OPTION, STRICT_CPU_RESERVATION_OPTION];

/// The topology manager's `single-numa-node` policy name.
pub const TOPOLOGY_MANAGER_POLICY_SINGLE_NUMA_NODE: &str = "single-numa-node";

/// An error from the option parsing or validation; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyOptionsError {
    /// Not an option name.
    #[error("unknown CPU Manager Policy option: {0:?}")]
    Unknown(String),
    /// An alpha option without `CPUManagerPolicyAlphaOptions`.
    #[error("CPU Manager Policy Alpha-level Options not enabled, but option {0:?} provided")]
    AlphaNotEnabled(String),
    /// A beta option without `CPUManagerPolicyBetaOptions`.
    #[error("CPU Manager Policy Beta-level Options not enabled, but option {0:?} provided")]
    BetaNotEnabled(String),
    /// A value that is not a Go bool.
    #[error("bad value for option {name:?}: strconv.ParseBool: parsing {value:?}: invalid syntax")]
    BadValue {
        /// Option name.
        name: String,
        /// Its value.
        value: String,
    },
    /// Two options that exclude each other.
    #[error("static policy options {0} and {1} can not be used at the same time")]
    Incompatible(&'static str, &'static str),
    /// `align-by-socket` with the topology manager's `single-numa-node` policy.
    #[error(
        "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option"
    )]
    AlignBySocketSingleNumaNode,
    /// `align-by-socket` on hardware with more sockets than NUMA nodes.
    #[error(
        "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA"
    )]
    AlignBySocketTopology,
}

/// `CheckPolicyOptionAvailable`: whether `option` exists and its maturity's gate is on.
pub fn check_policy_option_available(
    option: &str,
    gate: &FeatureGate,
) -> Result<(), PolicyOptionsError> {
    let alpha = ALPHA_OPTIONS.contains(&option);
    let beta = BETA_OPTIONS.contains(&option);
    if !alpha && !beta && !STABLE_OPTIONS.contains(&option) {
        return Err(PolicyOptionsError::Unknown(option.to_owned()));
    }
    if alpha && !gate.enabled(gates::CPU_MANAGER_POLICY_ALPHA_OPTIONS) {
        return Err(PolicyOptionsError::AlphaNotEnabled(option.to_owned()));
    }
    if beta && !gate.enabled(gates::CPU_MANAGER_POLICY_BETA_OPTIONS) {
        return Err(PolicyOptionsError::BetaNotEnabled(option.to_owned()));
    }
    Ok(())
}

/// The parsed options (upstream `StaticPolicyOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StaticPolicyOptions {
    /// `full-pcpus-only`: only whole physical cores.
    pub full_physical_cpus_only: bool,
    /// `distribute-cpus-across-numa`.
    pub distribute_cpus_across_numa: bool,
    /// `align-by-socket`: alignment at socket rather than NUMA boundary.
    pub align_by_socket: bool,
    /// `distribute-cpus-across-cores`: spread threads over cores (preferred, not required).
    pub distribute_cpus_across_cores: bool,
    /// `strict-cpu-reservation`: reserved CPUs out of the shared pool too.
    pub strict_cpu_reservation: bool,
    /// `prefer-align-cpus-by-uncorecache`.
    pub prefer_align_by_uncore_cache_option: bool,
}

impl StaticPolicyOptions {
    /// `NewStaticPolicyOptions`. Upstream walks a Go map (random order); this walks the
    /// names in sorted order, so with several bad options the first reported is the
    /// lowest name.
    pub fn new(
        policy_options: &BTreeMap<String, String>,
        gate: &FeatureGate,
    ) -> Result<StaticPolicyOptions, PolicyOptionsError> {
        let mut opts = StaticPolicyOptions::default();
        for (name, value) in policy_options {
            check_policy_option_available(name, gate)?;
            let v = parse_go_bool(value).ok_or_else(|| PolicyOptionsError::BadValue {
                name: name.clone(),
                value: value.clone(),
            })?;
            match name.as_str() {
                FULL_PCPUS_ONLY_OPTION => opts.full_physical_cpus_only = v,
                DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION => opts.distribute_cpus_across_numa = v,
                ALIGN_BY_SOCKET_OPTION => opts.align_by_socket = v,
                DISTRIBUTE_CPUS_ACROSS_CORES_OPTION => opts.distribute_cpus_across_cores = v,
                STRICT_CPU_RESERVATION_OPTION => opts.strict_cpu_reservation = v,
                PREFER_ALIGN_BY_UNCORE_CACHE_OPTION => {
                    opts.prefer_align_by_uncore_cache_option = v;
                }
                // Unreachable: check_policy_option_available knows the same names.
                _ => return Err(PolicyOptionsError::Unknown(name.clone())),
            }
        }
        if opts.full_physical_cpus_only && opts.distribute_cpus_across_cores {
            return Err(PolicyOptionsError::Incompatible(
                FULL_PCPUS_ONLY_OPTION,
                DISTRIBUTE_CPUS_ACROSS_CORES_OPTION,
            ));
        }
        if opts.distribute_cpus_across_numa && opts.distribute_cpus_across_cores {
            return Err(PolicyOptionsError::Incompatible(
                DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION,
                DISTRIBUTE_CPUS_ACROSS_CORES_OPTION,
            ));
        }
        if opts.prefer_align_by_uncore_cache_option && opts.distribute_cpus_across_cores {
            return Err(PolicyOptionsError::Incompatible(
                PREFER_ALIGN_BY_UNCORE_CACHE_OPTION,
                DISTRIBUTE_CPUS_ACROSS_CORES_OPTION,
            ));
        }
        if opts.prefer_align_by_uncore_cache_option && opts.distribute_cpus_across_numa {
            return Err(PolicyOptionsError::Incompatible(
                PREFER_ALIGN_BY_UNCORE_CACHE_OPTION,
                DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION,
            ));
        }
        Ok(opts)
    }
}

/// `ValidateStaticPolicyOptions`: the options against the machine and the topology
/// manager's policy name (upstream passes the topology manager store).
pub fn validate_static_policy_options(
    opts: &StaticPolicyOptions,
    topology: &CPUTopology,
    topology_manager_policy: &str,
) -> Result<(), PolicyOptionsError> {
    if opts.align_by_socket {
        if topology_manager_policy == TOPOLOGY_MANAGER_POLICY_SINGLE_NUMA_NODE {
            return Err(PolicyOptionsError::AlignBySocketSingleNumaNode);
        }
        if topology.num_sockets > topology.num_numa_nodes {
            return Err(PolicyOptionsError::AlignBySocketTopology);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "policy_options_tests.rs"]
mod tests;
