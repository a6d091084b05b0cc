//! Comparison, value and arithmetic tables transcribed (as data) from upstream
//! quantity_test.go.
#![allow(clippy::unwrap_used)]

use super::*;
use Format::{BinarySI as Bin, DecimalExponent as Exp, DecimalSI as Dec};

/// upstream test helper `decQuantity(i, exponent, format)`
fn dq(m: i128, e: i64, f: Format) -> Quantity {
    Quantity::from_parts(m, e, f)
}

#[test]
fn round_up_table() {
    // TestQuantityRoundUp: (input, scale, mantissa, exponent, exact)
    let table = [
        ("9.01", -3, 901, -2, true),
        ("9.01", -2, 901, -2, true),
        ("9.01", -1, 91, -1, false),
        ("9.01", 0, 10, 0, false),
        ("9.01", 1, 10, 0, false),
        ("9.01", 2, 100, 0, false),
        ("-9.01", -3, -901, -2, true),
        ("-9.01", -2, -901, -2, true),
        ("-9.01", -1, -91, -1, false),
        ("-9.01", 0, -10, 0, false),
        ("-9.01", 1, -10, 0, false),
        ("-9.01", 2, -100, 0, false),
    ];
    for (input, scale, m, e, exact) in table {
        let (got, ok) = Quantity::parse(input).unwrap().round_up(scale);
        assert_eq!((got, ok), (dq(m, e, Dec), exact), "{input} at {scale}");
    }
}

#[test]
fn cmp_table() {
    let table = [
        ("0", "0", 0),
        ("100m", "50m", 1),
        ("50m", "100m", -1),
        ("10000T", "100Gi", 1),
    ];
    for (x, y, want) in table {
        let (a, b) = (Quantity::parse(x).unwrap(), Quantity::parse(y).unwrap());
        assert_eq!(a.cmp_value(&b) as i32, want, "{x} vs {y}");
        assert_eq!(b.cmp_value(&a) as i32, -want, "{y} vs {x}");
    }
    // TestQuantityCmpInt64AndDec
    let most_pos = i128::from(i64::MAX);
    let most_neg = i128::from(i64::MIN);
    let e18 = 1_000_000_000_000_000_000_i128;
    let table: [(i128, i64, i128, i64, i32); 20] = [
        (901, -2, 901, -2, 0),
        (90, -1, 901, -2, -1),
        (901, -2, 900, -2, 1),
        (0, 1, 0, -1, 0),
        (800, -3, 1, 0, -1),
        (800, -3, 79, -2, 1),
        (most_pos, 0, 1, -1, 1),
        (most_pos, 1, 1, 0, 1),
        (most_pos, 1, 1, 1, 1),
        (most_pos, 1, 0, 1, 1),
        (most_pos, -16, 1, 3, -1),
        (most_neg, 0, 0, 0, -1),
        (most_neg, -18, -1, 0, -1),
        (most_neg, -19, -1, 0, 1),
        (e18, -17, 1, 1, 0),
        (e18, -17, -10, 0, 1),
        (-e18, -17, -10, 0, 0),
        (e18, -17, 1, 0, 1),
        (e18 + 1, -17, 1, 1, 1),
        (e18 - 1, -17, 1, 1, -1),
    ];
    for (am, ae, bm, be, want) in table {
        let (a, b) = (dq(am, ae, Dec), dq(bm, be, Dec));
        assert_eq!(a.cmp_value(&b) as i32, want, "{a} vs {b}");
        assert_eq!(b.cmp_value(&a) as i32, -want, "{b} vs {a}");
    }
}

#[test]
fn value_and_milli_value_round_away_from_zero() {
    // TestNegativeValueRoundsAwayFromZero: (input, Value, MilliValue)
    let table = [
        ("-.484785E-7466", -1, -1),
        (".484785E-7466", 1, 1),
        ("-.484785E-1", -1, -49),
        (".484785E-1", 1, 49),
        ("-0.0005", -1, -1),
        ("0.0005", 1, 1),
        ("-1500m", -2, -1500),
        ("1500m", 2, 1500),
        ("-9.5000000001Gi", -10_200_547_329, -10_200_547_328_108),
        ("9.5000000001Gi", 10_200_547_329, 10_200_547_328_108),
        ("-1", -1, -1000),
        ("1", 1, 1000),
        ("0", 0, 0),
        ("100m", 1, 100),
        ("1.5Gi", 1_610_612_736, 1_610_612_736_000),
        ("0.1m", 1, 1),
        ("1e30", i64::MAX, i64::MAX),
        ("-1e30", i64::MIN, i64::MIN),
    ];
    for (input, value, milli) in table {
        let q = Quantity::parse(input).unwrap();
        assert_eq!((q.value(), q.milli_value()), (value, milli), "{input}");
    }
}

#[test]
fn scaled_value_table() {
    // TestScaledValue: (from scale, to scale, expected) for NewScaledQuantity(1, from)
    let table = [
        (-9, -9, 1),
        (-9, -6, 1),
        (-9, -3, 1),
        (-9, 0, 1),
        (-6, -9, 1000),
        (-6, -6, 1),
        (-6, -3, 1),
        (-6, 0, 1),
        (-3, -9, 1_000_000),
        (-3, -6, 1000),
        (-3, -3, 1),
        (-3, 0, 1),
        (0, -9, 1_000_000_000),
        (0, -6, 1_000_000),
        (0, -3, 1000),
        (0, 0, 1),
        (2, -2, 10_000),
    ];
    for (from, to, want) in table {
        assert_eq!(
            Quantity::from_scaled(1, from).scaled_value(to),
            want,
            "{from}->{to}"
        );
    }
}

#[test]
fn constructors_match_new_set_tables() {
    // TestMilliNewSet / TestNewSet / TestNewScaledSet
    let milli = [
        (1, Dec, "1m"),
        (1000, Dec, "1"),
        (1_234_000, Dec, "1234"),
        (1024, Bin, "1024m"),
        (1_000_000, Exp, "1e3"),
        (1 << 20, Bin, "1048576m"),
    ];
    for (v, f, want) in milli {
        assert_eq!(Quantity::from_milli(v, f).to_string(), want);
    }
    let ints = [
        (1, Dec, "1"),
        (1000, Dec, "1k"),
        (1_234_000, Dec, "1234k"),
        (1024, Bin, "1Ki"),
        (1_000_000, Exp, "1e6"),
        (1 << 20, Bin, "1Mi"),
    ];
    for (v, f, want) in ints {
        let q = Quantity::from_int(v, f);
        assert_eq!(q.to_string(), want);
        assert_eq!(Quantity::parse(want).unwrap().value(), v);
    }
    let scaled = [
        (1, -9, "1n"),
        (1000, -9, "1u"),
        (1, -6, "1u"),
        (1000, -6, "1m"),
        (1, -3, "1m"),
        (1000, -3, "1"),
        (1, 0, "1"),
        (0, -9, "0"),
        (0, 0, "0"),
    ];
    for (v, s, want) in scaled {
        let q = Quantity::from_scaled(v, s);
        assert_eq!(q.to_string(), want);
        assert_eq!(Quantity::parse(want).unwrap().scaled_value(s), v);
    }
}

#[test]
fn add_sub_neg_follow_upstream_formats() {
    // TestSub
    let table = [
        (dq(10, 0, Dec), dq(1, 1, Dec), dq(0, 0, Dec), Dec),
        (dq(10, 0, Dec), dq(1, 0, Bin), dq(9, 0, Dec), Dec),
        (dq(10, 0, Bin), dq(1, 0, Dec), dq(9, 0, Bin), Bin),
        (Quantity::default(), dq(50, 0, Dec), dq(-50, 0, Dec), Dec),
        (dq(50, 0, Dec), Quantity::default(), dq(50, 0, Dec), Dec),
    ];
    for (a, b, want, format) in table {
        let got = a.sub(&b);
        assert_eq!(got, want);
        assert_eq!(got.format(), format);
    }
    // TestQuantityAddZeroPreservesSuffix / SubZero
    let zero = Quantity::parse("0").unwrap();
    for s in ["100m", "1Gi"] {
        let v = Quantity::parse(s).unwrap();
        assert_eq!(v.add(&zero).to_string(), s);
        assert_eq!(zero.add(&v).to_string(), s);
        assert_eq!(v.sub(&zero).to_string(), s);
        assert_eq!(zero.sub(&v).to_string(), v.neg().to_string());
    }
    // TestQuantityNeg
    assert_eq!(dq(901, -2, Dec).neg().to_string(), "-9010m");
    // TestNegAndSubAtMostNegative
    let most_neg = Quantity::from_int(i64::MIN, Dec);
    assert_eq!(most_neg.neg().to_string(), "9223372036854775808");
    assert_eq!(
        Quantity::from_int(1, Dec).sub(&most_neg).to_string(),
        "9223372036854775809"
    );
    assert_eq!(
        Quantity::from_milli(i64::MIN, Dec).neg().to_string(),
        "9223372036854775808m"
    );
}

#[test]
fn add_beyond_38_digits_rounds_instead_of_failing() {
    let big = Quantity::parse("1e100").unwrap();
    let tiny = Quantity::parse("1n").unwrap();
    assert!(big.checked_add(&tiny).is_none());
    let sum = big.add(&tiny);
    assert!(sum > big);
    assert_eq!(
        sum.sub(&big)
            .checked_add(&Quantity::default())
            .map(|q| q.is_zero()),
        Some(false)
    );
}

#[test]
fn json_round_trip_and_inputs() {
    let q = Quantity::parse("1.5Gi").unwrap();
    assert_eq!(serde_json::to_string(&q).unwrap(), r#""1536Mi""#);
    // TestJSONWhitespace
    for (json, want) in [
        (r#"" 1""#, "1"),
        (r#""1 ""#, "1"),
        ("1", "1"),
        (" 1", "1"),
        ("10", "10"),
        ("-1", "-1"),
        ("0.5", "500m"),
        ("null", "0"),
    ] {
        let got: Quantity = serde_json::from_str(json).unwrap();
        assert_eq!(got.to_string(), want, "{json}");
    }
    let err = serde_json::from_str::<Quantity>(r#""12x""#).unwrap_err();
    assert!(err.to_string().contains("12x"), "{err}");
    assert!(serde_json::from_str::<Quantity>("true").is_err());
}

#[test]
fn hash_and_eq_ignore_format() {
    use std::collections::HashSet;
    let a = Quantity::parse("1Ki").unwrap();
    let b = Quantity::parse("1024").unwrap();
    assert_eq!(a, b);
    assert_ne!(a.to_string(), b.to_string());
    let set: HashSet<Quantity> = [a, b].into_iter().collect();
    assert_eq!(set.len(), 1);
}
