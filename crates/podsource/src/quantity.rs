//! Just enough of `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource) to validate
//! static pods: parse a quantity string and compare quantities.
//!
//! Values are held as an integer count of nano-units (10^-9), which covers every quantity a
//! pod can sensibly ask for (up to about 1.7e29 units). Larger values are rejected with a
//! clear error instead of being rounded.

use std::cmp::Ordering;

/// The error upstream returns for a malformed quantity (`resource.ErrFormatWrong`).
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// A parsed quantity in nano-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity {
    nanos: i128,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("{FORMAT_WRONG}")]
    FormatWrong,
    #[error("unable to parse quantity's suffix")]
    InvalidSuffix,
    #[error("quantity is too large to be handled")]
    TooLarge,
}

impl Quantity {
    /// Parses a quantity string such as `100m`, `1.5Gi`, `2e3`.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let s = s.trim();
        let split = number_end(s).ok_or(QuantityError::FormatWrong)?;
        let (number, suffix) = s.split_at(split);
        let (negative, int_part, frac_part) = split_number(number)?;
        let (base, exp) = parse_suffix(suffix)?;
        let mut nanos = decimal_to_nanos(int_part, frac_part, exp)?;
        if base == 2 {
            nanos = nanos
                .checked_mul(1i128 << exp_binary(suffix))
                .ok_or(QuantityError::TooLarge)?;
        }
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Value in nano-units.
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    pub fn compare(&self, other: &Quantity) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// Index where the numeric part `[+-]?[0-9.]+` ends.
fn number_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    let start = i;
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
        i += 1;
    }
    (i > start).then_some(i)
}

fn split_number(number: &str) -> Result<(bool, &str, &str), QuantityError> {
    let (negative, digits) = match number.as_bytes().first() {
        Some(b'-') => (true, &number[1..]),
        Some(b'+') => (false, &number[1..]),
        _ => (false, number),
    };
    let mut parts = digits.splitn(2, '.');
    let int_part = parts.next().unwrap_or_default();
    let frac_part = parts.next().unwrap_or_default();
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(QuantityError::FormatWrong);
    }
    Ok((negative, int_part, frac_part))
}

/// Returns (base, decimal exponent). Binary suffixes report base 2 and exponent 0; their
/// power of two is applied separately.
fn parse_suffix(suffix: &str) -> Result<(u32, i32), QuantityError> {
    let exp = match suffix {
        "" => 0,
        "n" => -9,
        "u" => -6,
        "m" => -3,
        "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        "E" => 18,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => return Ok((2, 0)),
        _ => return parse_exponent(suffix).map(|e| (10, e)),
    };
    Ok((10, exp))
}

fn parse_exponent(suffix: &str) -> Result<i32, QuantityError> {
    let rest = suffix
        .strip_prefix('e')
        .or_else(|| suffix.strip_prefix('E'))
        .ok_or(QuantityError::InvalidSuffix)?;
    let digits = rest.trim_start_matches(['+', '-']);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || rest.len() - digits.len() > 1
    {
        return Err(QuantityError::InvalidSuffix);
    }
    rest.parse::<i32>().map_err(|_| QuantityError::TooLarge)
}

fn exp_binary(suffix: &str) -> u32 {
    match suffix {
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        "Ti" => 40,
        "Pi" => 50,
        _ => 60,
    }
}

/// Converts `int.frac * 10^exp` to nano-units, truncating below one nano-unit.
fn decimal_to_nanos(int_part: &str, frac_part: &str, exp: i32) -> Result<i128, QuantityError> {
    // Shift the decimal point right by 9 + exp digits.
    let shift = 9 + exp;
    let digits: String = [int_part, frac_part].concat();
    let point =
        i64::try_from(int_part.len()).map_err(|_| QuantityError::TooLarge)? + i64::from(shift);
    let mut value: i128 = 0;
    for (i, c) in digits.bytes().enumerate() {
        let pos = i64::try_from(i).map_err(|_| QuantityError::TooLarge)?;
        if pos >= point {
            break;
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(c - b'0')))
            .ok_or(QuantityError::TooLarge)?;
    }
    let digit_count = i64::try_from(digits.len()).map_err(|_| QuantityError::TooLarge)?;
    let mut pad = point - digit_count;
    while pad > 0 {
        value = value.checked_mul(10).ok_or(QuantityError::TooLarge)?;
        pad -= 1;
    }
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn n(s: &str) -> i128 {
        Quantity::parse(s).unwrap().nanos()
    }

    #[test]
    fn parses_decimal_and_binary_suffixes() {
        assert_eq!(n("1"), 1_000_000_000);
        assert_eq!(n("100m"), 100_000_000);
        assert_eq!(n("0.5"), 500_000_000);
        assert_eq!(n("1.5k"), 1_500_000_000_000);
        assert_eq!(n("1Ki"), 1024 * 1_000_000_000);
        assert_eq!(n("2Gi"), 2 * (1i128 << 30) * 1_000_000_000);
        assert_eq!(n("1e3"), 1000 * 1_000_000_000);
        assert_eq!(n("1E-3"), 1_000_000);
        assert_eq!(n("-1"), -1_000_000_000);
        assert_eq!(n("5n"), 5);
        assert_eq!(n(".5"), 500_000_000);
    }

    #[test]
    fn compares() {
        assert!(Quantity::parse("500m").unwrap() < Quantity::parse("1").unwrap());
        assert!(Quantity::parse("1Gi").unwrap() > Quantity::parse("1G").unwrap());
        assert_eq!(
            Quantity::parse("1000m")
                .unwrap()
                .compare(&Quantity::parse("1").unwrap()),
            Ordering::Equal
        );
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "abc", "1x", "1..2", "Gi", "1e", "1e+", "1Kib", "--1"] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(Quantity::parse("1e99"), Err(QuantityError::TooLarge));
    }
}
