//! Eviction thresholds as configured by `--eviction-hard`, `--eviction-soft`,
//! `--eviction-soft-grace-period` and `--eviction-minimum-reclaim`.
//!
//! Mirrors `pkg/kubelet/eviction/api/types.go` (signals, operators,
//! `Threshold`, `GetThresholdQuantity`), `pkg/kubelet/eviction/helpers.go`
//! (`ParseThresholdConfig`) and `pkg/kubelet/eviction/defaults_linux.go`.

mod langle;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;

pub use langle::{LangleMapError, format_langle_map, parse_langle_map};
pub use parse::{EvictionError, NODE_ALLOCATABLE_ENFORCEMENT_KEY, parse_threshold_config};

use crate::{Duration, Format, Quantity};

/// Linux `DefaultEvictionHard` (pkg/kubelet/eviction/defaults_linux.go).
/// `imagefs.inodesFree` joined the list in 1.30 (kubernetes/kubernetes#121834);
/// the field comment in v1beta1 `types.go` still lists only the other four.
pub const DEFAULT_EVICTION_HARD: &[(&str, &str)] = &[
    ("memory.available", "100Mi"),
    ("nodefs.available", "10%"),
    ("nodefs.inodesFree", "5%"),
    ("imagefs.available", "15%"),
    ("imagefs.inodesFree", "5%"),
];

/// [`DEFAULT_EVICTION_HARD`] as a map, as the config defaulting wants it.
pub fn default_eviction_hard() -> std::collections::BTreeMap<String, String> {
    crate::string_map(DEFAULT_EVICTION_HARD)
}

/// An eviction signal (upstream `evictionapi.Signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// `memory.available`
    MemoryAvailable,
    /// `nodefs.available`
    NodeFsAvailable,
    /// `nodefs.inodesFree`
    NodeFsInodesFree,
    /// `imagefs.available`
    ImageFsAvailable,
    /// `imagefs.inodesFree`
    ImageFsInodesFree,
    /// `containerfs.available`
    ContainerFsAvailable,
    /// `containerfs.inodesFree`
    ContainerFsInodesFree,
    /// `allocatableMemory.available`
    AllocatableMemoryAvailable,
    /// `pid.available`
    PidAvailable,
}

impl Signal {
    /// Every signal the kubelet supports (upstream `signalToResource` keys).
    pub const ALL: [Signal; 9] = [
        Signal::MemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::ContainerFsAvailable,
        Signal::ContainerFsInodesFree,
        Signal::AllocatableMemoryAvailable,
        Signal::PidAvailable,
    ];

    /// The flag/config spelling, e.g. `memory.available`.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::ContainerFsAvailable => "containerfs.available",
            Signal::ContainerFsInodesFree => "containerfs.inodesFree",
            Signal::AllocatableMemoryAvailable => "allocatableMemory.available",
            Signal::PidAvailable => "pid.available",
        }
    }

    /// Parses the flag/config spelling; `None` for unsupported signals.
    pub fn parse(s: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|sig| sig.as_str() == s)
    }

    /// The comparison the signal uses (upstream `OpForSignal`: always LessThan).
    pub fn operator(self) -> ThresholdOperator {
        ThresholdOperator::LessThan
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// How observed values are compared to a threshold (upstream `ThresholdOperator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThresholdOperator {
    /// `LessThan`
    LessThan,
}

impl fmt::Display for ThresholdOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("LessThan")
    }
}

/// A threshold amount: an absolute quantity or a fraction of capacity
/// (upstream `ThresholdValue`, which holds one of the two).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdValue {
    /// An absolute amount, e.g. `100Mi`.
    Quantity(Quantity),
    /// A fraction of capacity in `0.0..=1.0` (`"10%"` is `0.1`), as float32 upstream.
    Percentage(f32),
}

impl ThresholdValue {
    /// The amount for a resource with the given capacity (upstream
    /// `GetThresholdQuantity`): the quantity itself, or
    /// `int64(float64(capacity.Value()) * float64(percentage))` in BinarySI.
    pub fn quantity_for_capacity(&self, capacity: &Quantity) -> Quantity {
        match self {
            ThresholdValue::Quantity(q) => *q,
            ThresholdValue::Percentage(p) => {
                #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
                let amount = (capacity.value() as f64 * f64::from(*p)) as i64;
                Quantity::from_int(amount, Format::BinarySI)
            }
        }
    }
}

impl fmt::Display for ThresholdValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdValue::Quantity(q) => write!(f, "{q}"),
            ThresholdValue::Percentage(p) => write!(f, "{}%", p * 100.0),
        }
    }
}

/// One eviction threshold (upstream `evictionapi.Threshold`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// What is measured.
    pub signal: Signal,
    /// How it is compared.
    pub operator: ThresholdOperator,
    /// The amount that triggers eviction.
    pub value: ThresholdValue,
    /// How long a soft threshold must hold; zero for hard thresholds.
    pub grace_period: Duration,
    /// Extra amount to reclaim once triggered (`--eviction-minimum-reclaim`).
    pub min_reclaim: Option<ThresholdValue>,
}

impl Threshold {
    /// Upstream `isHardEvictionThreshold`: a zero grace period.
    pub fn is_hard(&self) -> bool {
        self.grace_period.is_zero()
    }
}
