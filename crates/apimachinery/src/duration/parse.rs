//! Go's `time.ParseDuration` (src/time/format.go), transcribed for identical results
//! and identical error messages.

use super::{HOUR, MICROSECOND, MILLISECOND, MINUTE, NANOSECOND, SECOND};

use crate::goquote::time_quote;

/// An error from [`super::Duration::parse`]; the message is Go's, word for word.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseDurationError {
    /// `time: invalid duration "<input>"`
    #[error("time: invalid duration {}", time_quote(.input))]
    Invalid {
        /// The whole input.
        input: String,
    },
    /// `time: missing unit in duration "<input>"`
    #[error("time: missing unit in duration {}", time_quote(.input))]
    MissingUnit {
        /// The whole input.
        input: String,
    },
    /// `time: unknown unit "<unit>" in duration "<input>"`
    #[error("time: unknown unit {} in duration {}", time_quote(.unit), time_quote(.input))]
    UnknownUnit {
        /// The unrecognised unit.
        unit: String,
        /// The whole input.
        input: String,
    },
}

const OVERFLOW: u64 = 1 << 63;

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => NANOSECOND,
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// Consumes the leading `[0-9]*`; `None` on overflow past 1<<63 (Go's `leadingInt`).
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let mut i = 0;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        if x > OVERFLOW / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > OVERFLOW {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Consumes the leading `[0-9]*` of a fraction; stops accumulating precision on
/// overflow instead of failing (Go's `leadingFraction`).
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let mut x: u64 = 0;
    let mut scale = 1.0_f64;
    let mut overflow = false;
    let mut i = 0;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > (OVERFLOW - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > OVERFLOW {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

/// Parses one `[0-9]*(\.[0-9]*)?unit` element, returning its nanoseconds and the rest.
fn parse_element<'a>(s: &'a str, orig: &str) -> Result<(u64, &'a str), ParseDurationError> {
    let invalid = || ParseDurationError::Invalid {
        input: orig.to_owned(),
    };
    let first = s.as_bytes().first().copied().unwrap_or(b' ');
    if !(first == b'.' || first.is_ascii_digit()) {
        return Err(invalid());
    }
    let before = s.len();
    let (mut v, mut s) = leading_int(s).ok_or_else(invalid)?;
    let pre = before != s.len();

    let (mut f, mut scale, mut post) = (0_u64, 1.0_f64, false);
    if let Some(rest) = s.strip_prefix('.') {
        let (fx, fscale, rem) = leading_fraction(rest);
        post = rest.len() != rem.len();
        (f, scale, s) = (fx, fscale, rem);
    }
    if !pre && !post {
        return Err(invalid());
    }

    let unit_len = s
        .bytes()
        .position(|c| c == b'.' || c.is_ascii_digit())
        .unwrap_or(s.len());
    if unit_len == 0 {
        return Err(ParseDurationError::MissingUnit {
            input: orig.to_owned(),
        });
    }
    let (u, rest) = s.split_at(unit_len);
    let unit = unit_nanos(u).ok_or_else(|| ParseDurationError::UnknownUnit {
        unit: u.to_owned(),
        input: orig.to_owned(),
    })?;
    if v > OVERFLOW / unit {
        return Err(invalid());
    }
    v *= unit;
    if f > 0 {
        // Go uses float64 here to stay nanosecond-accurate for fractions of hours;
        // the same expression gives the same result.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let frac = (f as f64 * (unit as f64 / scale)) as u64;
        v = v.checked_add(frac).ok_or_else(invalid)?;
        if v > OVERFLOW {
            return Err(invalid());
        }
    }
    Ok((v, rest))
}

/// Go's `time.ParseDuration`, returning nanoseconds.
pub(crate) fn parse_duration(orig: &str) -> Result<i64, ParseDurationError> {
    let invalid = || ParseDurationError::Invalid {
        input: orig.to_owned(),
    };
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let (v, rest) = parse_element(s, orig)?;
        s = rest;
        d = d.checked_add(v).ok_or_else(invalid)?;
        if d > OVERFLOW {
            return Err(invalid());
        }
    }
    if neg {
        // d <= 1<<63, so the two's-complement negation is exact (1<<63 -> i64::MIN).
        return Ok(0_i64.wrapping_sub_unsigned(d));
    }
    i64::try_from(d).map_err(|_| invalid())
}
