//! Tables transcribed (as data) from upstream
//! staging/src/k8s.io/apimachinery/pkg/api/resource/quantity_test.go.
#![allow(clippy::unwrap_used)]

use super::*;
use Format::{BinarySI as Bin, DecimalExponent as Exp, DecimalSI as Dec};

/// upstream test helper `decQuantity(i, exponent, format)`
fn dq(m: i128, e: i64, f: Format) -> Quantity {
    Quantity::from_parts(m, e, f)
}

const MAX: i128 = i64::MAX as i128;

/// TestQuantityParse: (input, mantissa, exponent, format)
const PARSE: &[(&str, i128, i64, Format)] = &[
    ("0", 0, 0, Dec),
    ("0n", 0, 0, Dec),
    ("0u", 0, 0, Dec),
    ("0m", 0, 0, Dec),
    ("0Ki", 0, 0, Bin),
    ("0k", 0, 0, Dec),
    ("0Mi", 0, 0, Bin),
    ("0M", 0, 0, Dec),
    ("0Gi", 0, 0, Bin),
    ("0G", 0, 0, Dec),
    ("0Ti", 0, 0, Bin),
    ("0T", 0, 0, Dec),
    ("1", 1, 0, Dec),
    ("1Ki", 1024, 0, Bin),
    ("8Ki", 8 * 1024, 0, Bin),
    ("7Mi", 7 << 20, 0, Bin),
    ("6Gi", 6 << 30, 0, Bin),
    ("5Ti", 5 << 40, 0, Bin),
    ("4Pi", 4 << 50, 0, Bin),
    ("3Ei", 3 << 60, 0, Bin),
    ("10Ti", 10 << 40, 0, Bin),
    ("100Ti", 100 << 40, 0, Bin),
    ("5n", 5, -9, Dec),
    ("4u", 4, -6, Dec),
    ("3m", 3, -3, Dec),
    ("9", 9, 0, Dec),
    ("8k", 8, 3, Dec),
    ("50k", 5, 4, Dec),
    ("7M", 7, 6, Dec),
    ("6G", 6, 9, Dec),
    ("5T", 5, 12, Dec),
    ("40T", 4, 13, Dec),
    ("300T", 3, 14, Dec),
    ("2P", 2, 15, Dec),
    ("1E", 1, 18, Dec),
    ("1E-3", 1, -3, Exp),
    ("1e3", 1, 3, Exp),
    ("1E6", 1, 6, Exp),
    ("1e9", 1, 9, Exp),
    ("1E12", 1, 12, Exp),
    ("1e15", 1, 15, Exp),
    ("1E18", 1, 18, Exp),
    ("1e14", 1, 14, Exp),
    ("1e13", 1, 13, Exp),
    ("100.035k", 100_035, 0, Dec),
    ("0.001", 1, -3, Dec),
    ("0.0005k", 5, -1, Dec),
    ("0.005", 5, -3, Dec),
    ("0.05", 5, -2, Dec),
    ("0.5", 5, -1, Dec),
    ("0.00050k", 5, -1, Dec),
    ("0.00500", 5, -3, Dec),
    ("0.05000", 5, -2, Dec),
    ("0.50000", 5, -1, Dec),
    ("0.5e0", 5, -1, Exp),
    ("0.5e-1", 5, -2, Exp),
    ("0.5e-2", 5, -3, Exp),
    ("10.035M", 10_035, 3, Dec),
    ("1.2e3", 12, 2, Exp),
    ("1.3E+6", 13, 5, Exp),
    ("1.40e9", 14, 8, Exp),
    ("1.53E12", 153, 10, Exp),
    ("1.6e15", 16, 14, Exp),
    ("1.7E18", 17, 17, Exp),
    ("9.01", 901, -2, Dec),
    ("8.1k", 81, 2, Dec),
    ("7.123456M", 7_123_456, 0, Dec),
    ("6.987654321G", 6_987_654_321, 0, Dec),
    ("5.444T", 5444, 9, Dec),
    ("40.1T", 401, 11, Dec),
    ("300.2T", 3002, 11, Dec),
    ("2.5P", 25, 14, Dec),
    ("1.01E", 101, 16, Dec),
    ("3.001n", 4, -9, Dec),
    ("1.1E-9", 2, -9, Exp),
    ("0.0000000001", 1, -9, Dec),
    ("0.0000000005", 1, -9, Dec),
    ("0.00000000050", 1, -9, Dec),
    ("0.5e-9", 1, -9, Exp),
    ("0.9n", 1, -9, Dec),
    ("0.00000012345", 124, -9, Dec),
    ("0.00000012354", 124, -9, Dec),
    ("9Ei", MAX, 0, Bin),
    ("9223372036854775807Ki", MAX, 0, Bin),
    ("12E", 12, 18, Dec),
    ("100.035Ki", 10_243_584, -2, Bin),
    ("0.5Mi", 512 * 1024, 0, Bin),
    ("0.05Gi", 536_870_912, -1, Bin),
    ("0.025Ti", 274_877_906_944, -1, Bin),
    ("0.000000000001Ki", 2, -9, Dec),
    (".001", 1, -3, Dec),
    (".0001k", 100, -3, Dec),
    ("1.", 1, 0, Dec),
    ("1.G", 1, 9, Dec),
];

const INVALID: &[&str] = &[
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    "1e4294967297",
    " 1",
    "1 ",
    "1K",
    "1e",
    "1x",
    "1Mi ",
    "µ",
];

#[test]
fn parse_table() {
    for &(input, m, e, f) in PARSE {
        let want = dq(m, e, f);
        for (prefix, sign) in [("", 1), ("+", 1), ("-", -1)] {
            let text = format!("{prefix}{input}");
            let got = Quantity::parse(&text).unwrap();
            assert_eq!(got, dq(sign * m, e, f), "{text}: got {got}, want {want}");
            assert_eq!(got.format(), f, "{text}");
        }
    }
}

#[test]
fn parse_invalid() {
    for input in INVALID {
        let err = Quantity::parse(input).unwrap_err();
        assert_eq!(err.input(), *input);
    }
}

#[test]
fn error_messages_match_upstream() {
    let wrong = Quantity::parse("1x").unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert!(matches!(
        Quantity::parse("").unwrap_err(),
        QuantityError::FormatWrong { .. }
    ));
    let suffix = Quantity::parse("1i").unwrap_err();
    assert_eq!(suffix.to_string(), "unable to parse quantity's suffix");
    assert!(matches!(
        Quantity::parse("0.1mi"),
        Err(QuantityError::Suffix { .. })
    ));
}

#[test]
fn upstream_scanner_quirks() {
    // parseQuantityString accepts these and they mean zero.
    for input in [".", "-.", "+", "-", "000"] {
        assert!(Quantity::parse(input).unwrap().is_zero(), "{input}");
    }
    assert_eq!(Quantity::parse("-.484785E-7466").unwrap(), dq(-1, -9, Exp));
    assert_eq!(
        Quantity::parse("1e2147483647").unwrap(),
        dq(1, 2_147_483_647, Exp)
    );
    assert_eq!(Quantity::parse("1e-2147483647").unwrap(), dq(1, -9, Exp));
    assert!(Quantity::parse("1E2147483648").is_err());
    assert!(Quantity::parse("1E-2147483648").is_err());
}

/// TestQuantityString: (mantissa, exponent, format, canonical, alternate)
const STRING: &[(i128, i64, Format, &str, &str)] = &[
    (1 << 30, 0, Bin, "1Gi", "1024Mi"),
    (300 << 20, 0, Bin, "300Mi", "307200Ki"),
    (6 * 1024, 0, Bin, "6Ki", ""),
    (1001 << 30, 0, Bin, "1001Gi", "1025024Mi"),
    (1 << 40, 0, Bin, "1Ti", "1024Gi"),
    (5, 0, Bin, "5", "5000m"),
    (500, -3, Bin, "500m", "0.5"),
    (1, 9, Dec, "1G", "1000M"),
    (1000, 6, Dec, "1G", "0.001T"),
    (1_000_000, 3, Dec, "1G", ""),
    (1_000_000_000, 0, Dec, "1G", ""),
    (1, -3, Dec, "1m", "1000u"),
    (80, -3, Dec, "80m", ""),
    (1080, -3, Dec, "1080m", "1.08"),
    (108, -2, Dec, "1080m", "1080000000n"),
    (10800, -4, Dec, "1080m", ""),
    (300, 6, Dec, "300M", ""),
    (1, 12, Dec, "1T", ""),
    (1, 18, Dec, "1E", ""),
    (1, 21, Dec, "1e21", "1000E"),
    (5, 21, Dec, "5e21", "5000E"),
    (1, 24, Dec, "1e24", "1000000E"),
    (1, 70, Bin, "10e69", ""),
    (2, 70, Bin, "20e69", ""),
    (1, 72, Bin, "1e72", ""),
    (1_234_567, 6, Dec, "1234567M", ""),
    (1_234_567, -3, Bin, "1234567m", ""),
    (3, 3, Dec, "3k", ""),
    (1025, 0, Bin, "1025", ""),
    (0, 0, Dec, "0", ""),
    (0, 0, Bin, "0", ""),
    (1, 9, Exp, "1e9", ".001e12"),
    (1, -3, Exp, "1e-3", "0.001e0"),
    (1, -9, Exp, "1e-9", "1000e-12"),
    (80, -3, Exp, "80e-3", ""),
    (300, 6, Exp, "300e6", ""),
    (1, 12, Exp, "1e12", ""),
    (1, 3, Exp, "1e3", ""),
    (3, 3, Exp, "3e3", ""),
    (0, 0, Exp, "0", "00"),
    (1, -9, Dec, "1n", ""),
    (80, -9, Dec, "80n", ""),
    (1080, -9, Dec, "1080n", ""),
    (108, -8, Dec, "1080n", ""),
    (10800, -10, Dec, "1080n", ""),
    (1, -6, Dec, "1u", ""),
    (80, -6, Dec, "80u", ""),
    (1080, -6, Dec, "1080u", ""),
];

#[test]
fn string_table() {
    for &(m, e, f, canonical, alternate) in STRING {
        let q = dq(m, e, f);
        assert_eq!(q.to_string(), canonical, "{m}e{e} {f}");
        let reparsed = Quantity::parse(canonical).unwrap();
        assert_eq!(reparsed, q, "{canonical}");
        assert_eq!(reparsed.to_string(), canonical);
        if !alternate.is_empty() {
            assert_eq!(
                Quantity::parse(alternate).unwrap().to_string(),
                canonical,
                "{alternate}"
            );
        }
        if m != 0 {
            assert_eq!(q.neg().to_string(), format!("-{canonical}"));
        }
    }
}

#[test]
fn binary_si_without_binary_suffix() {
    // TestBinarySIZeroExponentString
    assert_eq!(dq(2000, 0, Bin).to_string(), "2000");
    assert_eq!(dq(-2000, 0, Bin).to_string(), "-2000");
    // Fractional BinarySI values are shown in DecimalSI rather than rounded.
    assert_eq!(Quantity::parse("1.1Ki").unwrap().to_string(), "1126400m");
}

#[test]
fn below_nano_and_beyond_ei_use_exponent_notation() {
    assert_eq!(dq(1, -12, Dec).to_string(), "1e-12");
    assert_eq!(dq(1, -10, Dec).to_string(), "100e-12");
    // 2^70 has no binary suffix and no trailing zeros: plain digits.
    let q = Quantity::parse("1Ei").unwrap();
    let big = (0..10).fold(q, |acc, _| acc + acc);
    assert_eq!(big.to_string(), "1180591620717411303424");
    assert_eq!(Quantity::parse(&big.to_string()).unwrap(), big);
}

/// TestQuantityParseEmit
const PARSE_EMIT: &[(&str, &str)] = &[
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
    // from the brief and upstream doc comments
    ("1.5Gi", "1536Mi"),
    ("0.5", "500m"),
    ("1.5", "1500m"),
    ("1000m", "1"),
    ("100M", "100M"),
    ("1e3", "1e3"),
    ("2000", "2k"),
    ("2.5Mi", "2560Ki"),
    ("12345678901234567890", "12345678901234567890"),
];

#[test]
fn parse_emit() {
    for (input, want) in PARSE_EMIT {
        let q = Quantity::parse(input).unwrap();
        assert_eq!(q.to_string(), *want, "{input}");
        assert_eq!(
            Quantity::parse(&format!("-{input}")).unwrap().to_string(),
            format!("-{want}")
        );
    }
}
