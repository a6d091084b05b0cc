//! Upstream `ParseThresholdConfig` and its helpers (pkg/kubelet/eviction/helpers.go).

use std::collections::BTreeMap;

use crate::goquote::go_quote;

use super::{Signal, Threshold, ThresholdValue};
use crate::{Duration, ParseDurationError, Quantity, QuantityError};

/// The `enforceNodeAllocatable` key that adds allocatable memory thresholds
/// (upstream `kubetypes.NodeAllocatableEnforcementKey`).
pub const NODE_ALLOCATABLE_ENFORCEMENT_KEY: &str = "pods";

/// An eviction setting that does not parse; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvictionError {
    /// A signal name the kubelet does not know.
    #[error("unsupported eviction signal {0}")]
    UnsupportedSignal(String),
    /// A percentage that is not a number (Go `strconv.ParseFloat` message).
    #[error("strconv.ParseFloat: parsing {}: {reason}", go_quote(.text))]
    Percentage {
        /// The text before the `%`.
        text: String,
        /// "invalid syntax" or "value out of range".
        reason: &'static str,
    },
    /// A threshold percentage below zero.
    #[error("eviction percentage threshold {signal} must be >= 0%: {value}")]
    PercentageNegative {
        /// The signal.
        signal: Signal,
        /// The value as written.
        value: String,
    },
    /// A threshold percentage above 100.
    #[error("eviction percentage threshold {signal} must be <= 100%: {value}")]
    PercentageAbove100 {
        /// The signal.
        signal: Signal,
        /// The value as written.
        value: String,
    },
    /// A value that is not a quantity (upstream quantity parse message).
    #[error("{source}")]
    Quantity {
        /// The signal it was given for.
        signal: Signal,
        /// The parse failure.
        #[source]
        source: QuantityError,
    },
    /// A zero or negative threshold quantity.
    #[error("eviction threshold {signal} must be positive: {value}")]
    NotPositive {
        /// The signal.
        signal: Signal,
        /// The canonical quantity.
        value: Quantity,
    },
    /// A grace period that is not a Go duration.
    #[error("{0}")]
    GracePeriod(#[from] ParseDurationError),
    /// A negative grace period.
    #[error("invalid eviction grace period specified: {0}, must be a positive value")]
    NegativeGracePeriod(String),
    /// A minimum-reclaim percentage of zero or less.
    #[error("eviction percentage minimum reclaim {signal} must be positive: {value}")]
    MinReclaimPercentage {
        /// The signal.
        signal: Signal,
        /// The value as written.
        value: String,
    },
    /// A negative minimum-reclaim quantity.
    #[error("negative eviction minimum reclaim specified for {0}")]
    NegativeMinReclaim(Signal),
    /// A soft threshold without `--eviction-soft-grace-period` for its signal.
    #[error("grace period must be specified for the soft eviction threshold {0}")]
    MissingGracePeriod(Signal),
}

fn signal(name: &str) -> Result<Signal, EvictionError> {
    Signal::parse(name).ok_or_else(|| EvictionError::UnsupportedSignal(name.to_owned()))
}

/// Upstream `parsePercentage`: `strconv.ParseFloat(TrimRight(v, "%"), 32) / 100`.
fn parse_percentage(value: &str) -> Result<f32, EvictionError> {
    let text = value.trim_end_matches('%');
    let err = |reason| EvictionError::Percentage {
        text: text.to_owned(),
        reason,
    };
    let parsed: f64 = text.parse().map_err(|_| err("invalid syntax"))?;
    let literal_inf = text.to_ascii_lowercase().contains("inf");
    #[allow(clippy::cast_possible_truncation)]
    let narrowed = parsed as f32;
    if narrowed.is_infinite() && !literal_inf {
        return Err(err("value out of range"));
    }
    Ok(narrowed / 100.0)
}

/// Upstream `parseThresholdStatement`; `None` for the ignored "0%" and "100%".
fn parse_statement(name: &str, value: &str) -> Result<Option<Threshold>, EvictionError> {
    let signal = signal(name)?;
    let threshold = |value| Threshold {
        signal,
        operator: signal.operator(),
        value,
        grace_period: Duration::ZERO,
        min_reclaim: None,
    };
    if value.ends_with('%') {
        if value == "0%" || value == "100%" {
            return Ok(None);
        }
        let percentage = parse_percentage(value)?;
        let value_owned = || value.to_owned();
        if percentage < 0.0 {
            return Err(EvictionError::PercentageNegative {
                signal,
                value: value_owned(),
            });
        }
        if percentage > 1.0 {
            return Err(EvictionError::PercentageAbove100 {
                signal,
                value: value_owned(),
            });
        }
        return Ok(Some(threshold(ThresholdValue::Percentage(percentage))));
    }
    let quantity =
        Quantity::parse(value).map_err(|source| EvictionError::Quantity { signal, source })?;
    if quantity.sign() <= 0 {
        return Err(EvictionError::NotPositive {
            signal,
            value: quantity,
        });
    }
    Ok(Some(threshold(ThresholdValue::Quantity(quantity))))
}

fn parse_statements(
    statements: &BTreeMap<String, String>,
) -> Result<Vec<Threshold>, EvictionError> {
    let mut out = Vec::with_capacity(statements.len());
    for (name, value) in statements {
        out.extend(parse_statement(name, value)?);
    }
    Ok(out)
}

fn parse_grace_periods(
    statements: &BTreeMap<String, String>,
) -> Result<BTreeMap<Signal, Duration>, EvictionError> {
    let mut out = BTreeMap::new();
    for (name, value) in statements {
        let signal = signal(name)?;
        let period = Duration::parse(value)?;
        if period.is_negative() {
            return Err(EvictionError::NegativeGracePeriod(value.clone()));
        }
        out.insert(signal, period);
    }
    Ok(out)
}

fn parse_min_reclaims(
    statements: &BTreeMap<String, String>,
) -> Result<BTreeMap<Signal, ThresholdValue>, EvictionError> {
    let mut out = BTreeMap::new();
    for (name, value) in statements {
        let signal = signal(name)?;
        let parsed = if value.ends_with('%') {
            let percentage = parse_percentage(value)?;
            if percentage <= 0.0 {
                return Err(EvictionError::MinReclaimPercentage {
                    signal,
                    value: value.clone(),
                });
            }
            ThresholdValue::Percentage(percentage)
        } else {
            let quantity = Quantity::parse(value)
                .map_err(|source| EvictionError::Quantity { signal, source })?;
            if quantity.sign() < 0 {
                return Err(EvictionError::NegativeMinReclaim(signal));
            }
            ThresholdValue::Quantity(quantity)
        };
        out.insert(signal, parsed);
    }
    Ok(out)
}

/// Upstream `addAllocatableThresholds`: copies each hard `memory.available`
/// threshold to `allocatableMemory.available`.
fn add_allocatable_thresholds(thresholds: &mut Vec<Threshold>) {
    let extra: Vec<Threshold> = thresholds
        .iter()
        .filter(|t| t.signal == Signal::MemoryAvailable && t.is_hard())
        .map(|t| Threshold {
            signal: Signal::AllocatableMemoryAvailable,
            grace_period: Duration::ZERO,
            ..*t
        })
        .collect();
    thresholds.extend(extra);
}

/// Upstream `ParseThresholdConfig`: hard thresholds, then soft ones (each
/// needing a grace period), minimum reclaims attached by signal, and
/// allocatable memory thresholds when `allocatable_config` contains "pods".
///
/// Upstream iterates Go maps in random order; here each group is in signal-name
/// order, and the first error in that order is reported.
pub fn parse_threshold_config(
    allocatable_config: &[String],
    hard: &BTreeMap<String, String>,
    soft: &BTreeMap<String, String>,
    soft_grace: &BTreeMap<String, String>,
    min_reclaim: &BTreeMap<String, String>,
) -> Result<Vec<Threshold>, EvictionError> {
    let mut results = parse_statements(hard)?;
    let mut soft_thresholds = parse_statements(soft)?;
    let grace_periods = parse_grace_periods(soft_grace)?;
    let min_reclaims = parse_min_reclaims(min_reclaim)?;
    for threshold in &mut soft_thresholds {
        threshold.grace_period = *grace_periods
            .get(&threshold.signal)
            .ok_or(EvictionError::MissingGracePeriod(threshold.signal))?;
    }
    results.extend(soft_thresholds);
    for threshold in &mut results {
        if let Some(reclaim) = min_reclaims.get(&threshold.signal) {
            threshold.min_reclaim = Some(*reclaim);
        }
    }
    if allocatable_config
        .iter()
        .any(|k| k == NODE_ALLOCATABLE_ENFORCEMENT_KEY)
    {
        add_allocatable_thresholds(&mut results);
    }
    Ok(results)
}
