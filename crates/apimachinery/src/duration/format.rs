//! Go's `Duration.String` (src/time/time.go): "72h3m0.5s", "1.5s", "100ms", "2µs", "0s".

use std::fmt;

use super::{Duration, MICROSECOND, MILLISECOND, SECOND};

/// Writes the fraction of `v / 10^prec` (".12345", trailing zeros and the point
/// omitted when zero) and returns the integer part (Go's `fmtFrac`).
fn push_frac(out: &mut Vec<u8>, mut v: u64, prec: usize) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            out.push(b'0' + digit as u8);
        }
        v /= 10;
    }
    if print {
        out.push(b'.');
    }
    v
}

/// Writes the decimal digits of `v` (reversed, like the rest of the buffer).
fn push_int(out: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        out.push(b'0');
        return;
    }
    while v > 0 {
        out.push(b'0' + (v % 10) as u8);
        v /= 10;
    }
}

/// Builds the string right to left, as Go does, then reverses it.
fn format_duration(d: i64) -> String {
    let mut rev: Vec<u8> = Vec::with_capacity(32);
    let mut u = d.unsigned_abs();
    if u < SECOND {
        rev.push(b's');
        let prec = match u {
            0 => return "0s".to_owned(),
            u if u < MICROSECOND => {
                rev.push(b'n');
                0
            }
            u if u < MILLISECOND => {
                // "µ" is U+00B5, bytes C2 B5; reversed here.
                rev.extend_from_slice(&[0xB5, 0xC2]);
                3
            }
            _ => {
                rev.push(b'm');
                6
            }
        };
        u = push_frac(&mut rev, u, prec);
        push_int(&mut rev, u);
    } else {
        rev.push(b's');
        u = push_frac(&mut rev, u, 9);
        push_int(&mut rev, u % 60);
        u /= 60;
        if u > 0 {
            rev.push(b'm');
            push_int(&mut rev, u % 60);
            u /= 60;
            if u > 0 {
                rev.push(b'h');
                push_int(&mut rev, u);
            }
        }
    }
    if d < 0 {
        rev.push(b'-');
    }
    rev.reverse();
    String::from_utf8_lossy(&rev).into_owned()
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&format_duration(self.0))
    }
}
