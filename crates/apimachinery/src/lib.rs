//! Value types with upstream apimachinery semantics: Go durations
//! (`metav1.Duration`), `resource.Quantity`, cpusets, eviction thresholds,
//! reserved resources, label/taint validation helpers.
//!
//! Each module names the upstream Go file it mirrors.

pub mod duration;
mod goquote;
pub mod quantity;

pub use duration::{Duration, ParseDurationError};
pub use quantity::{Format, Quantity, QuantityError};
pub mod cpuset;

pub use cpuset::{CpuSet, CpuSetError};
pub mod eviction;

pub use eviction::{
    DEFAULT_EVICTION_HARD, EvictionError, Signal, Threshold, ThresholdOperator, ThresholdValue,
    parse_langle_map, parse_threshold_config,
};
pub mod reserved;

pub use reserved::{ReservedError, parse_qos_reserved, parse_resource_list};
pub mod taints;
pub mod validation;

pub use taints::{Taint, TaintEffect, TaintError, parse_taint, parse_taints_flag};
