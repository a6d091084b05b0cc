//! Cases transcribed from Go's src/time/time_test.go (parseDurationTests,
//! parseDurationErrorTests, durationTests) plus metav1.Duration JSON.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

const NS: i64 = 1;
const US: i64 = 1_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;
const M: i64 = 60 * S;
const H: i64 = 60 * M;

const PARSE_OK: &[(&str, i64)] = &[
    ("0", 0),
    ("5s", 5 * S),
    ("30s", 30 * S),
    ("1478s", 1478 * S),
    ("-5s", -5 * S),
    ("+5s", 5 * S),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * S),
    ("5.6s", 5 * S + 600 * MS),
    ("5.s", 5 * S),
    (".5s", 500 * MS),
    ("1.0s", S),
    ("1.00s", S),
    ("1.004s", S + 4 * MS),
    ("1.0040s", S + 4 * MS),
    ("100.00100s", 100 * S + MS),
    ("10ns", 10 * NS),
    ("11us", 11 * US),
    ("12\u{b5}s", 12 * US),
    ("12\u{3bc}s", 12 * US),
    ("13ms", 13 * MS),
    ("14s", 14 * S),
    ("15m", 15 * M),
    ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * M),
    ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    (
        "1h2m3s4ms5us6ns",
        H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS,
    ),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("52763797000ns", 52_763_797_000),
    ("0.3333333333333333333h", 20 * M),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", i64::MAX),
    ("9223372036854775.807us", i64::MAX),
    ("9223372036s854ms775us807ns", i64::MAX),
    ("-9223372036854775808ns", i64::MIN),
    ("-9223372036854775.808us", i64::MIN),
    ("-9223372036s854ms775us808ns", i64::MIN),
    ("-2562047h47m16.854775808s", i64::MIN),
    ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827),
    ("1.5h", 90 * M),
];

/// (input, full Go error message)
const PARSE_ERR: &[(&str, &str)] = &[
    ("", r#"time: invalid duration """#),
    ("3", r#"time: missing unit in duration "3""#),
    ("1", r#"time: missing unit in duration "1""#),
    ("-", r#"time: invalid duration "-""#),
    ("s", r#"time: invalid duration "s""#),
    (".", r#"time: invalid duration ".""#),
    ("-.", r#"time: invalid duration "-.""#),
    (".s", r#"time: invalid duration ".s""#),
    ("+.s", r#"time: invalid duration "+.s""#),
    ("1d", r#"time: unknown unit "d" in duration "1d""#),
    ("\u{FFFD}", r#"time: invalid duration "\xef\xbf\xbd""#),
    (
        "1\u{FFFD}",
        r#"time: unknown unit "\xef\xbf\xbd" in duration "1\xef\xbf\xbd""#,
    ),
    ("a\"b\\", r#"time: invalid duration "a\"b\\""#),
    (
        "9223372036854775810ns",
        r#"time: invalid duration "9223372036854775810ns""#,
    ),
    (
        "9223372036854775808ns",
        r#"time: invalid duration "9223372036854775808ns""#,
    ),
    (
        "-9223372036854775809ns",
        r#"time: invalid duration "-9223372036854775809ns""#,
    ),
    (
        "9223372036854776us",
        r#"time: invalid duration "9223372036854776us""#,
    ),
    ("3000000h", r#"time: invalid duration "3000000h""#),
    (
        "9223372036854775.808us",
        r#"time: invalid duration "9223372036854775.808us""#,
    ),
    (
        "9223372036854ms775us808ns",
        r#"time: invalid duration "9223372036854ms775us808ns""#,
    ),
    ("1s ", r#"time: unknown unit "s " in duration "1s ""#),
];

const FORMAT: &[(&str, i64)] = &[
    ("0s", 0),
    ("1ns", NS),
    ("1.1\u{b5}s", 1100 * NS),
    ("2.2ms", 2200 * US),
    ("3.3s", 3300 * MS),
    ("4m5s", 4 * M + 5 * S),
    ("4m5.001s", 4 * M + 5001 * MS),
    ("5h6m7.001s", 5 * H + 6 * M + 7001 * MS),
    ("8m0.000000001s", 8 * M + NS),
    ("2562047h47m16.854775807s", i64::MAX),
    ("-2562047h47m16.854775808s", i64::MIN),
    ("1m0s", M),
    ("1h30m0s", H + 30 * M),
    ("100ms", 100 * MS),
    ("1.5s", 1500 * MS),
    ("2\u{b5}s", 2 * US),
    ("-1m30s", -(M + 30 * S)),
    ("1h0m0s", H),
];

#[test]
fn parse_matches_go() {
    for (input, want) in PARSE_OK {
        assert_eq!(
            Duration::parse(input),
            Ok(Duration::from_nanos(*want)),
            "{input}"
        );
    }
}

#[test]
fn parse_errors_match_go() {
    for (input, want) in PARSE_ERR {
        let err = Duration::parse(input).unwrap_err();
        assert_eq!(err.to_string(), *want, "{input:?}");
    }
}

#[test]
fn display_matches_go() {
    for (want, nanos) in FORMAT {
        assert_eq!(Duration::from_nanos(*nanos).to_string(), *want);
    }
}

#[test]
fn constructors_and_accessors() {
    assert_eq!(Duration::from_secs(90).to_string(), "1m30s");
    assert_eq!(Duration::from_millis(1500).as_nanos(), 1_500_000_000);
    assert_eq!(Duration::from_mins(2).as_secs(), 120);
    assert_eq!(Duration::from_hours(1).as_millis(), 3_600_000);
    assert_eq!(Duration::from_secs(i64::MAX), Duration::MAX);
    assert!(Duration::default().is_zero());
    assert!(Duration::from_nanos(-1).as_std().is_none());
    assert_eq!(
        Duration::from_millis(5).as_std(),
        Some(std::time::Duration::from_millis(5))
    );
    assert_eq!(
        Duration::from_std(std::time::Duration::from_secs(3)),
        Duration::from_secs(3)
    );
    assert!(Duration::from_secs(1) < Duration::from_secs(2));
    assert_eq!("2h".parse::<Duration>(), Ok(Duration::from_hours(2)));
    assert_eq!(Duration::MAX.checked_add(Duration::from_nanos(1)), None);
    assert_eq!(
        Duration::MIN.saturating_sub(Duration::from_secs(1)),
        Duration::MIN
    );
    assert_eq!(
        Duration::from_secs(3).checked_sub(Duration::from_secs(1)),
        Some(Duration::from_secs(2))
    );
}

#[test]
fn json_is_the_go_string() {
    let d = Duration::from_secs(4 * 60 * 60);
    assert_eq!(serde_json::to_string(&d).unwrap(), r#""4h0m0s""#);
    let back: Duration = serde_json::from_str(r#""10s""#).unwrap();
    assert_eq!(back, Duration::from_secs(10));
    let err = serde_json::from_str::<Duration>(r#""10""#).unwrap_err();
    assert!(err.to_string().contains("missing unit"), "{err}");
    assert!(serde_json::from_str::<Duration>("10").is_err());
}

proptest! {
    #[test]
    fn display_parse_round_trip(n in any::<i64>()) {
        let d = Duration::from_nanos(n);
        prop_assert_eq!(Duration::parse(&d.to_string()), Ok(d));
    }

    #[test]
    fn unit_sums_parse_exactly(h in 0_i64..1000, m in 0_i64..1000, s in 0_i64..1000, ms in 0_i64..1000) {
        let text = format!("{h}h{m}m{s}s{ms}ms");
        let want = h * H + m * M + s * S + ms * MS;
        prop_assert_eq!(Duration::parse(&text), Ok(Duration::from_nanos(want)));
        let neg = format!("-{text}");
        prop_assert_eq!(Duration::parse(&neg), Ok(Duration::from_nanos(-want)));
    }

    #[test]
    fn parse_never_panics(s in "\\PC{0,12}") {
        let _ = Duration::parse(&s);
    }
}
