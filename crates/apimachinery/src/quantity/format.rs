//! Canonical serialisation (upstream `CanonicalizeBytes`, `AsCanonicalBytes`,
//! `AsCanonicalBase1024Bytes`, `suffixer.constructBytes`).
//!
//! Where no suffix exists for the canonical exponent (DecimalSI beyond `E` or
//! below `n`, BinarySI beyond `Ei`), the value is written in exponent notation,
//! as current upstream does, so that it always parses back to itself.

use std::fmt;

use super::{Format, Quantity, pow10};

const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

fn decimal_si_suffix(exponent: i64) -> Option<&'static str> {
    Some(match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

/// Writes |value| in base 10 with the exponent lowered to a multiple of 3.
fn write_decimal(out: &mut String, q: &Quantity, format: Format) {
    let r = q.exponent.rem_euclid(3);
    let exponent = q.exponent - r;
    out.push_str(&q.mantissa.unsigned_abs().to_string());
    for _ in 0..r {
        out.push('0');
    }
    let suffix = match format {
        Format::DecimalSI => decimal_si_suffix(exponent),
        _ => None,
    };
    match suffix {
        Some(s) => out.push_str(s),
        None if exponent == 0 => {}
        None => {
            out.push('e');
            out.push_str(&exponent.to_string());
        }
    }
}

/// Writes an integral |value| as `n * 1024^k` with a binary suffix, or `false`
/// when it has no binary suffix (too large, or more than `Ei`).
fn write_binary(out: &mut String, q: &Quantity) -> bool {
    let Some(mut n) = pow10(q.exponent.unsigned_abs())
        .and_then(|p| q.mantissa.unsigned_abs().checked_mul(p.unsigned_abs()))
    else {
        return false;
    };
    let mut k = 0;
    while n >= 1024 && n % 1024 == 0 {
        n /= 1024;
        k += 1;
    }
    let Some(suffix) = BINARY_SUFFIXES.get(k) else {
        return false;
    };
    out.push_str(&n.to_string());
    out.push_str(suffix);
    true
}

impl Quantity {
    /// The canonical string (upstream `String()`).
    fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".to_owned();
        }
        let mut out = String::with_capacity(20);
        if self.mantissa < 0 {
            out.push('-');
        }
        let format = match self.format {
            Format::BinarySI if self.cmp_int64(-1024).is_gt() && self.cmp_int64(1024).is_lt() => {
                Format::DecimalSI
            }
            // A fractional value cannot be shown in BinarySI without rounding.
            Format::BinarySI if self.exponent < 0 => Format::DecimalSI,
            Format::BinarySI => {
                if write_binary(&mut out, self) {
                    return out;
                }
                Format::DecimalExponent
            }
            other => other,
        };
        write_decimal(&mut out, self, format);
        out
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.canonical())
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
