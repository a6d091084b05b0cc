//! Just enough of `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource) to turn
//! CPU and memory quantities into integers: [`value`] (`Quantity.Value()`) and
//! [`milli_value`] (`Quantity.MilliValue()`), both rounding up like upstream.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::error::RuntimeManagerError;

/// A parsed quantity as the exact fraction `num / den`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fraction {
    num: i128,
    den: i128,
}

/// `Quantity.Value()`: the quantity rounded up to an integer.
pub fn value(q: &Quantity) -> Result<i64, RuntimeManagerError> {
    scaled(q, 0)
}

/// `Quantity.MilliValue()`: the quantity times 1000, rounded up.
pub fn milli_value(q: &Quantity) -> Result<i64, RuntimeManagerError> {
    scaled(q, 3)
}

fn scaled(q: &Quantity, exp10: u32) -> Result<i64, RuntimeManagerError> {
    let f = parse(&q.0).ok_or_else(|| RuntimeManagerError::InvalidQuantity(q.0.clone()))?;
    let num = f
        .num
        .checked_mul(10_i128.pow(exp10))
        .ok_or_else(|| RuntimeManagerError::InvalidQuantity(q.0.clone()))?;
    let v = num.div_euclid(f.den) + i128::from(num.rem_euclid(f.den) != 0);
    Ok(i64::try_from(v).unwrap_or(if v > 0 { i64::MAX } else { i64::MIN }))
}

fn parse(s: &str) -> Option<Fraction> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let mut f = parse_decimal(number)?;
    match suffix {
        "" => {}
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = match suffix {
                "Ki" => 10,
                "Mi" => 20,
                "Gi" => 30,
                "Ti" => 40,
                "Pi" => 50,
                _ => 60,
            };
            f.num = f.num.checked_mul(1_i128 << power)?;
        }
        "n" => f.den = f.den.checked_mul(1_000_000_000)?,
        "u" => f.den = f.den.checked_mul(1_000_000)?,
        "m" => f.den = f.den.checked_mul(1_000)?,
        "k" => f.num = f.num.checked_mul(1_000)?,
        "M" => f.num = f.num.checked_mul(1_000_000)?,
        "G" => f.num = f.num.checked_mul(1_000_000_000)?,
        "T" => f.num = f.num.checked_mul(10_i128.pow(12))?,
        "P" => f.num = f.num.checked_mul(10_i128.pow(15))?,
        "E" => f.num = f.num.checked_mul(10_i128.pow(18))?,
        exp if exp.starts_with(['e', 'E']) => {
            let e: i32 = exp[1..].parse().ok()?;
            if e.unsigned_abs() > 30 {
                return None;
            }
            if e >= 0 {
                f.num = f.num.checked_mul(10_i128.pow(e.unsigned_abs()))?;
            } else {
                f.den = f.den.checked_mul(10_i128.pow(e.unsigned_abs()))?;
            }
        }
        _ => return None,
    }
    Some(f)
}

fn parse_decimal(s: &str) -> Option<Fraction> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        || int.len() + frac.len() > 30
    {
        return None;
    }
    let mut num: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        num = num * 10 + i128::from(b - b'0');
    }
    let den = 10_i128.pow(u32::try_from(frac.len()).ok()?);
    Some(Fraction {
        num: if negative { -num } else { num },
        den,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_string())
    }

    #[test]
    fn parses_like_upstream() {
        let cases = [
            ("100m", 1, 100),
            ("1", 1, 1000),
            ("0.5", 1, 500),
            ("2.5", 3, 2500),
            ("128Mi", 134_217_728, 134_217_728_000),
            ("1Gi", 1 << 30, (1_i64 << 30) * 1000),
            ("1k", 1000, 1_000_000),
            ("1e3", 1000, 1_000_000),
            ("1500u", 1, 2),
            ("0", 0, 0),
            ("1.1m", 1, 2),
        ];
        for (s, v, m) in cases {
            assert_eq!(value(&q(s)).unwrap(), v, "value {s}");
            assert_eq!(milli_value(&q(s)).unwrap(), m, "milli {s}");
        }
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "abc", "1Zi", "1.2.3", "m"] {
            let err = value(&q(s)).unwrap_err();
            assert!(err.to_string().contains(s), "{err}");
        }
    }
}
