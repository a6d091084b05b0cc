//! Upstream `ParseQuantity` / `parseQuantityString` / `suffixer.interpret`
//! (quantity.go, suffix.go).

use super::{Format, MANTISSA_LIMIT, Quantity, normalize};

/// The regular expression upstream names in its format error.
pub const SPLIT_RE: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// A quantity that failed to parse. `Display` is upstream's message word for
/// word; [`QuantityError::input`] gives the offending text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Upstream `ErrFormatWrong`.
    #[error("quantities must match the regular expression '{SPLIT_RE}'")]
    FormatWrong {
        /// The rejected text.
        input: String,
    },
    /// Upstream `ErrNumeric`.
    #[error("unable to parse numeric part of quantity")]
    Numeric {
        /// The rejected text.
        input: String,
    },
    /// Upstream `ErrSuffix`.
    #[error("unable to parse quantity's suffix")]
    Suffix {
        /// The rejected text.
        input: String,
    },
    /// Not upstream: more than 38 significant digits (upstream uses
    /// arbitrary precision there).
    #[error("quantity {input:?} has more significant digits than can be represented exactly")]
    OutOfRange {
        /// The rejected text.
        input: String,
    },
}

impl QuantityError {
    /// The text that failed to parse.
    pub fn input(&self) -> &str {
        match self {
            QuantityError::FormatWrong { input }
            | QuantityError::Numeric { input }
            | QuantityError::Suffix { input }
            | QuantityError::OutOfRange { input } => input,
        }
    }
}

/// The pieces `parseQuantityString` splits a quantity into.
struct Parts<'a> {
    positive: bool,
    /// Integer digits without leading zeros ("0" when none).
    num: &'a str,
    /// Fraction digits (may be empty).
    denom: &'a str,
    suffix: &'a str,
}

fn take_digits(s: &str, from: usize) -> usize {
    from + s.as_bytes()[from..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

/// Upstream `parseQuantityString`: a permissive scanner, checked later.
fn split(s: &str) -> Option<Parts<'_>> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match bytes.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    pos += bytes[pos..].iter().take_while(|&&b| b == b'0').count();
    let num_end = take_digits(s, pos);
    let num = if num_end == pos {
        "0"
    } else {
        &s[pos..num_end]
    };
    pos = num_end;
    let mut denom = "";
    if bytes.get(pos) == Some(&b'.') {
        let end = take_digits(s, pos + 1);
        denom = &s[pos + 1..end];
        pos = end;
    }
    let suffix_start = pos;
    pos += bytes[pos..]
        .iter()
        .take_while(|b| b"eEinumkKMGTP".contains(b))
        .count();
    if matches!(bytes.get(pos), Some(b'-' | b'+')) {
        pos += 1;
    }
    if take_digits(s, pos) != s.len() {
        return None;
    }
    Some(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Upstream `suffixer.interpret`: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    let (base, exp, format) = match suffix {
        "" => (10, 0, Format::DecimalSI),
        "n" => (10, -9, Format::DecimalSI),
        "u" => (10, -6, Format::DecimalSI),
        "m" => (10, -3, Format::DecimalSI),
        "k" => (10, 3, Format::DecimalSI),
        "M" => (10, 6, Format::DecimalSI),
        "G" => (10, 9, Format::DecimalSI),
        "T" => (10, 12, Format::DecimalSI),
        "P" => (10, 15, Format::DecimalSI),
        "E" => (10, 18, Format::DecimalSI),
        "Ki" => (2, 10, Format::BinarySI),
        "Mi" => (2, 20, Format::BinarySI),
        "Gi" => (2, 30, Format::BinarySI),
        "Ti" => (2, 40, Format::BinarySI),
        "Pi" => (2, 50, Format::BinarySI),
        "Ei" => (2, 60, Format::BinarySI),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
            let exp: i64 = rest.parse().ok()?;
            // An exponent outside the int32 scale is rejected, not truncated.
            if exp.unsigned_abs() > u64::from(i32::MAX.unsigned_abs()) {
                return None;
            }
            (10, exp, Format::DecimalExponent)
        }
    };
    Some((base, exp, format))
}

/// Upstream `ParseQuantity`.
pub(crate) fn parse_quantity(s: &str) -> Result<Quantity, QuantityError> {
    let input = || s.to_owned();
    if s.is_empty() {
        return Err(QuantityError::FormatWrong { input: input() });
    }
    let parts = split(s).ok_or_else(|| QuantityError::FormatWrong { input: input() })?;
    let (base, exp, mut format) =
        interpret(parts.suffix).ok_or_else(|| QuantityError::Suffix { input: input() })?;
    let magnitude = if base == 10 {
        decimal_magnitude(&parts, exp)
    } else {
        binary_magnitude(&parts, exp)
    };
    let (m, e) = magnitude.ok_or_else(|| QuantityError::OutOfRange { input: input() })?;
    if format == Format::BinarySI && m != 0 && digits_order(m, e) <= 0 {
        // 0 < |value| < 1: upstream switches to DecimalSI to avoid rounding.
        format = Format::DecimalSI;
    }
    let signed = if parts.positive { m } else { -m };
    let (mantissa, exponent) =
        normalize(signed, e).ok_or_else(|| QuantityError::OutOfRange { input: input() })?;
    Ok(Quantity {
        mantissa,
        exponent,
        format,
    })
}

/// The order of magnitude (`digits + exponent`) of a non-zero magnitude.
fn digits_order(m: i128, e: i64) -> i64 {
    super::digit_count(m.unsigned_abs()).saturating_add(e)
}

/// Parses ASCII digits (leading zeros allowed) into a magnitude.
fn parse_digits(digits: &[u8]) -> Option<i128> {
    digits.iter().try_fold(0_i128, |acc, &d| {
        let v = acc.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
        (v < MANTISSA_LIMIT).then_some(v)
    })
}

/// `digits * 10^exp`, rounded up (away from zero) to nano precision; digits
/// below 10^-9 only decide whether to round.
fn decimal_magnitude(parts: &Parts<'_>, exp: i64) -> Option<(i128, i64)> {
    let mut digits = parts.num.as_bytes().to_vec();
    digits.extend_from_slice(parts.denom.as_bytes());
    let mut last_exp = exp.checked_sub(i64::try_from(parts.denom.len()).ok()?)?;
    let drop = if last_exp < -9 {
        usize::try_from(-9 - last_exp)
            .unwrap_or(usize::MAX)
            .min(digits.len())
    } else {
        0
    };
    let (keep, dropped) = digits.split_at(digits.len() - drop);
    let round_up = dropped.iter().any(|&d| d != b'0');
    if drop > 0 {
        last_exp = -9;
    }
    let mut keep = keep;
    if !round_up {
        while let [rest @ .., b'0'] = keep {
            keep = rest;
            last_exp = last_exp.checked_add(1)?;
        }
    }
    let m = parse_digits(keep)?;
    if round_up {
        return Some((m.checked_add(1)?, -9));
    }
    Some((m, last_exp))
}

/// `digits * 2^exp`, rounded up to nano precision and capped at 2^63-1.
fn binary_magnitude(parts: &Parts<'_>, exp: i64) -> Option<(i128, i64)> {
    let cap = (i128::from(i64::MAX), 0);
    // num has no leading zeros: 20+ integer digits times >= 2^10 exceeds the cap.
    if parts.num.len() > 19 {
        return Some(cap);
    }
    let denom = parts.denom.trim_end_matches('0');
    let mut digits = parts.num.as_bytes().to_vec();
    digits.extend_from_slice(denom.as_bytes());
    let d = parse_digits(&digits)?;
    let scaled = d.checked_mul(1_i128.checked_shl(u32::try_from(exp).ok()?)?)?;
    let last_exp = -i64::try_from(denom.len()).ok()?;
    let (m, e) = if last_exp < -9 {
        let shift = (-9 - last_exp).unsigned_abs();
        (super::div_away_from_zero(scaled, shift), -9)
    } else {
        (scaled, last_exp)
    };
    let max = Quantity::from_int(i64::MAX, Format::BinarySI);
    if m != 0
        && Quantity::from_parts(m, e, Format::BinarySI)
            .cmp_value(&max)
            .is_gt()
    {
        return Some(cap);
    }
    Some((m, e))
}
