//! `resource.Quantity`: a fixed-point number with a remembered suffix format.
//!
//! Mirrors `k8s.io/apimachinery/pkg/api/resource/quantity.go`, `amount.go`
//! and `suffix.go`. The value is held exactly as `mantissa * 10^exponent` with
//! an `i128` mantissa (at most 38 significant digits); no floating point is
//! ever involved. Parsing rounds up (away from zero) to nano precision and caps
//! BinarySI values at 2^63-1, as upstream does.

mod arith;
mod format;
mod parse;
mod serde_impl;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_arith;
#[cfg(test)]
mod tests_prop;

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

pub use parse::QuantityError;

/// The three serialisations of a quantity (upstream `resource.Format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`
    DecimalExponent,
    /// `12Mi` (12 * 2^20)
    BinarySI,
    /// `12M` (12 * 10^6)
    #[default]
    DecimalSI,
}

impl Format {
    /// The upstream name ("DecimalExponent", "BinarySI", "DecimalSI").
    pub fn as_str(self) -> &'static str {
        match self {
            Format::DecimalExponent => "DecimalExponent",
            Format::BinarySI => "BinarySI",
            Format::DecimalSI => "DecimalSI",
        }
    }
}

/// Exclusive bound on the mantissa magnitude: 38 significant decimal digits.
const MANTISSA_LIMIT: i128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// Upstream scales (power-of-ten exponents) for [`Quantity::scaled_value`].
pub mod scale {
    /// 10^-9
    pub const NANO: i32 = -9;
    /// 10^-6
    pub const MICRO: i32 = -6;
    /// 10^-3
    pub const MILLI: i32 = -3;
    /// 10^3
    pub const KILO: i32 = 3;
    /// 10^6
    pub const MEGA: i32 = 6;
    /// 10^9
    pub const GIGA: i32 = 9;
}

/// A Kubernetes resource quantity ("100m", "1.5Gi", "1e3").
///
/// Equality, ordering and hashing compare the numeric value only (upstream
/// `Quantity.Cmp` / `Equal`); the [`Format`] only affects [`std::fmt::Display`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Quantity {
    /// Normalised: no trailing decimal zeros; zero is `(0, 0)`; |m| < 10^38.
    mantissa: i128,
    exponent: i64,
    format: Format,
}

/// Strips trailing zeros; `None` when the magnitude needs more than 38 digits
/// or the exponent overflows.
fn normalize(mut m: i128, mut e: i64) -> Option<(i128, i64)> {
    if m == 0 {
        return Some((0, 0));
    }
    while m % 10 == 0 {
        m /= 10;
        e = e.checked_add(1)?;
    }
    (m.unsigned_abs() < MANTISSA_LIMIT.unsigned_abs()).then_some((m, e))
}

pub(crate) fn pow10(n: u64) -> Option<i128> {
    10_i128.checked_pow(u32::try_from(n).ok()?)
}

/// Number of decimal digits of a non-zero magnitude.
fn digit_count(m: u128) -> i64 {
    i64::from(m.checked_ilog10().unwrap_or(0)) + 1
}

impl Quantity {
    /// Builds from parts already known to be in range; out-of-range parts are
    /// clamped to the largest representable magnitude (never reached by callers
    /// that pass i64 values).
    fn from_parts(m: i128, e: i64, format: Format) -> Quantity {
        let (mantissa, exponent) =
            normalize(m, e).unwrap_or((m.signum() * (MANTISSA_LIMIT - 1), e));
        Quantity {
            mantissa,
            exponent,
            format,
        }
    }

    /// Parses a quantity string exactly as upstream `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        parse::parse_quantity(s)
    }

    /// `value` in the given format (upstream `NewQuantity`).
    pub fn from_int(value: i64, format: Format) -> Quantity {
        Quantity::from_parts(i128::from(value), 0, format)
    }

    /// `value / 1000` in the given format (upstream `NewMilliQuantity`).
    pub fn from_milli(value: i64, format: Format) -> Quantity {
        Quantity::from_parts(i128::from(value), -3, format)
    }

    /// `value * 10^scale` in DecimalSI (upstream `NewScaledQuantity`).
    pub fn from_scaled(value: i64, scale: i32) -> Quantity {
        Quantity::from_parts(i128::from(value), i64::from(scale), Format::DecimalSI)
    }

    /// The remembered format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The same value with another format (upstream lets callers set `Format`).
    pub fn with_format(self, format: Format) -> Quantity {
        Quantity { format, ..self }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        match self.mantissa.cmp(&0) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// Numeric comparison (upstream `Cmp`).
    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        let by_sign = self.sign().cmp(&other.sign());
        if by_sign != Ordering::Equal || self.is_zero() {
            return by_sign;
        }
        let magnitude = cmp_magnitude(self, other);
        if self.mantissa > 0 {
            magnitude
        } else {
            magnitude.reverse()
        }
    }

    /// Compares with an integer (upstream `CmpInt64`).
    pub fn cmp_int64(&self, y: i64) -> Ordering {
        self.cmp_value(&Quantity::from_int(y, Format::DecimalSI))
    }

    /// `ceil(q / 10^scale)` rounded away from zero, saturating at the i64 range
    /// (upstream `ScaledValue`).
    pub fn scaled_value(&self, scale: i32) -> i64 {
        if self.is_zero() {
            return 0;
        }
        let saturated = if self.mantissa > 0 {
            i64::MAX
        } else {
            i64::MIN
        };
        let shift = self.exponent.saturating_sub(i64::from(scale));
        let scaled = if shift >= 0 {
            pow10(shift.unsigned_abs()).and_then(|p| self.mantissa.checked_mul(p))
        } else {
            Some(div_away_from_zero(self.mantissa, shift.unsigned_abs()))
        };
        scaled
            .and_then(|v| i64::try_from(v).ok())
            .unwrap_or(saturated)
    }

    /// The value rounded up (away from zero) to an integer (upstream `Value`).
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// `ceil(q * 1000)` away from zero (upstream `MilliValue`).
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(scale::MILLI)
    }

    /// The value rounded away from zero to a multiple of `10^scale`, and
    /// whether that was exact (upstream `RoundUp`).
    pub fn round_up(&self, scale: i32) -> (Quantity, bool) {
        let scale = i64::from(scale);
        if self.exponent >= scale || self.is_zero() {
            return (*self, true);
        }
        let rounded = div_away_from_zero(self.mantissa, (scale - self.exponent).unsigned_abs());
        let q = Quantity::from_parts(rounded, scale, self.format);
        (q, q == *self)
    }

    /// The value as `(mantissa, exponent)` with `value = mantissa * 10^exponent`,
    /// normalised (no trailing zeros in the mantissa).
    pub fn to_parts(&self) -> (i128, i64) {
        (self.mantissa, self.exponent)
    }
}

/// `m / 10^n` rounded away from zero.
pub(crate) fn div_away_from_zero(m: i128, n: u64) -> i128 {
    match pow10(n) {
        Some(p) => {
            let q = m / p;
            if m % p != 0 { q + m.signum() } else { q }
        }
        // 10^n exceeds any i128: |m / 10^n| < 1, which rounds to one unit.
        None => m.signum(),
    }
}

/// Compares |a| and |b| for non-zero a, b.
fn cmp_magnitude(a: &Quantity, b: &Quantity) -> Ordering {
    let (am, bm) = (a.mantissa.unsigned_abs(), b.mantissa.unsigned_abs());
    let a_order = digit_count(am).saturating_add(a.exponent);
    let b_order = digit_count(bm).saturating_add(b.exponent);
    if a_order != b_order {
        return a_order.cmp(&b_order);
    }
    // Same order of magnitude: the exponents differ by fewer than 38, and the
    // aligned mantissa has as many digits as the other one, so it fits.
    let align = |m: u128, by: i64| {
        pow10(by.unsigned_abs())
            .and_then(|p| m.checked_mul(p.unsigned_abs()))
            .unwrap_or(u128::MAX)
    };
    if a.exponent >= b.exponent {
        align(am, a.exponent - b.exponent).cmp(&bm)
    } else {
        am.cmp(&align(bm, b.exponent - a.exponent))
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.mantissa == other.mantissa && self.exponent == other.exponent
    }
}

impl Eq for Quantity {}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.mantissa.hash(state);
        self.exponent.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Quantity) -> Ordering {
        self.cmp_value(other)
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}
