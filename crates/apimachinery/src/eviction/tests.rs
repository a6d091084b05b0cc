//! Cases modelled on upstream helpers_test.go TestParseThresholdConfig.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

use crate::string_map as map;

fn q(s: &str) -> ThresholdValue {
    ThresholdValue::Quantity(Quantity::parse(s).unwrap())
}

fn hard(signal: Signal, value: ThresholdValue) -> Threshold {
    Threshold {
        signal,
        operator: ThresholdOperator::LessThan,
        value,
        grace_period: Duration::ZERO,
        min_reclaim: None,
    }
}

fn parse(
    alloc: &[&str],
    h: &[(&str, &str)],
    s: &[(&str, &str)],
    g: &[(&str, &str)],
    r: &[(&str, &str)],
) -> Result<Vec<Threshold>, EvictionError> {
    let alloc: Vec<String> = alloc.iter().map(|s| (*s).to_owned()).collect();
    parse_threshold_config(&alloc, &map(h), &map(s), &map(g), &map(r))
}

#[test]
fn no_values() {
    assert_eq!(parse(&[], &[], &[], &[], &[]).unwrap(), vec![]);
}

#[test]
fn all_flag_values() {
    let got = parse(
        &["pods"],
        &[("memory.available", "150Mi")],
        &[("memory.available", "300Mi")],
        &[("memory.available", "30s")],
        &[("memory.available", "0")],
    )
    .unwrap();
    let reclaim = Some(q("0"));
    let want = vec![
        Threshold {
            min_reclaim: reclaim,
            ..hard(Signal::MemoryAvailable, q("150Mi"))
        },
        Threshold {
            grace_period: Duration::from_secs(30),
            min_reclaim: reclaim,
            ..hard(Signal::MemoryAvailable, q("300Mi"))
        },
        Threshold {
            min_reclaim: reclaim,
            ..hard(Signal::AllocatableMemoryAvailable, q("150Mi"))
        },
    ];
    assert_eq!(got, want);
    assert!(got[0].is_hard() && !got[1].is_hard());
}

#[test]
fn percentages_and_ignored_extremes() {
    let got = parse(
        &[],
        &[
            ("memory.available", "10%"),
            ("nodefs.available", "0%"),
            ("imagefs.available", "100%"),
            ("pid.available", "5.5%"),
        ],
        &[],
        &[],
        &[("memory.available", "5%")],
    )
    .unwrap();
    assert_eq!(
        got,
        vec![
            Threshold {
                min_reclaim: Some(ThresholdValue::Percentage(0.05)),
                ..hard(Signal::MemoryAvailable, ThresholdValue::Percentage(0.1))
            },
            hard(Signal::PidAvailable, ThresholdValue::Percentage(0.055)),
        ]
    );
}

#[test]
fn default_eviction_hard_parses() {
    let got = parse_threshold_config(
        &[],
        &default_eviction_hard(),
        &BTreeMap::new(),
        &BTreeMap::new(),
        &BTreeMap::new(),
    )
    .unwrap();
    assert_eq!(got.len(), 5);
    assert!(
        got.iter().any(|t| t.signal == Signal::ImageFsInodesFree
            && t.value == ThresholdValue::Percentage(0.05))
    );
    assert!(
        got.iter()
            .any(|t| t.signal == Signal::MemoryAvailable && t.value == q("100Mi"))
    );
}

/// (hard, soft, grace periods, min reclaims, expected message)
type ErrorCase = (Pairs, Pairs, Pairs, Pairs, &'static str);
type Pairs = &'static [(&'static str, &'static str)];

#[test]
fn errors_match_upstream() {
    let cases: &[ErrorCase] = &[
        (
            &[("mem.available", "150Mi")],
            &[],
            &[],
            &[],
            "unsupported eviction signal mem.available",
        ),
        (
            &[],
            &[("memory.available", "150Mi")],
            &[],
            &[],
            "grace period must be specified for the soft eviction threshold memory.available",
        ),
        (
            &[("memory.available", "-150Mi")],
            &[],
            &[],
            &[],
            "eviction threshold memory.available must be positive: -150Mi",
        ),
        (
            &[("memory.available", "0")],
            &[],
            &[],
            &[],
            "eviction threshold memory.available must be positive: 0",
        ),
        (
            &[("memory.available", "-15%")],
            &[],
            &[],
            &[],
            "eviction percentage threshold memory.available must be >= 0%: -15%",
        ),
        (
            &[("memory.available", "150%")],
            &[],
            &[],
            &[],
            "eviction percentage threshold memory.available must be <= 100%: 150%",
        ),
        (
            &[("memory.available", "ten%")],
            &[],
            &[],
            &[],
            r#"strconv.ParseFloat: parsing "ten": invalid syntax"#,
        ),
        (
            &[("memory.available", "1e50%")],
            &[],
            &[],
            &[],
            r#"strconv.ParseFloat: parsing "1e50": value out of range"#,
        ),
        (
            &[("memory.available", "abc")],
            &[],
            &[],
            &[],
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            &[],
            &[("memory.available", "150Mi")],
            &[("memory.available", "-30s")],
            &[],
            "invalid eviction grace period specified: -30s, must be a positive value",
        ),
        (
            &[],
            &[("memory.available", "150Mi")],
            &[("memory.available", "30")],
            &[],
            r#"time: missing unit in duration "30""#,
        ),
        (
            &[],
            &[],
            &[("mem.available", "30s")],
            &[],
            "unsupported eviction signal mem.available",
        ),
        (
            &[],
            &[],
            &[],
            &[("memory.available", "-15%")],
            "eviction percentage minimum reclaim memory.available must be positive: -15%",
        ),
        (
            &[],
            &[],
            &[],
            &[("memory.available", "0%")],
            "eviction percentage minimum reclaim memory.available must be positive: 0%",
        ),
        (
            &[],
            &[],
            &[],
            &[("memory.available", "-300Mi")],
            "negative eviction minimum reclaim specified for memory.available",
        ),
        (
            &[],
            &[],
            &[],
            &[("bogus", "1")],
            "unsupported eviction signal bogus",
        ),
    ];
    for (h, s, g, r, want) in cases {
        let err = parse(&["pods"], h, s, g, r).unwrap_err();
        assert_eq!(err.to_string(), *want);
    }
}

#[test]
fn threshold_quantity_for_capacity() {
    // float32(0.1) widened to float64 is 0.10000000149..., as upstream computes it.
    let capacity = Quantity::parse("10Gi").unwrap();
    assert_eq!(
        ThresholdValue::Percentage(0.1).quantity_for_capacity(&capacity),
        Quantity::from_int(1_073_741_840, Format::BinarySI)
    );
    assert_eq!(
        q("100Mi").quantity_for_capacity(&capacity).to_string(),
        "100Mi"
    );
}

#[test]
fn langle_map_flag_syntax() {
    let m = parse_langle_map("memory.available<100Mi, nodefs.available < 10%,,").unwrap();
    assert_eq!(
        m,
        map(&[("memory.available", "100Mi"), ("nodefs.available", "10%")])
    );
    assert_eq!(
        format_langle_map(&m),
        "memory.available<100Mi,nodefs.available<10%"
    );
    assert_eq!(parse_langle_map("").unwrap(), BTreeMap::new());
    assert_eq!(parse_langle_map("a<1,a<2").unwrap(), map(&[("a", "2")]));
    assert_eq!(parse_langle_map("a<b<c").unwrap(), map(&[("a", "b<c")]));
    let err = parse_langle_map("memory.available=100Mi").unwrap_err();
    assert_eq!(err.to_string(), "malformed pair, expect string<string");
    assert_eq!(err.pair, "memory.available=100Mi");
}

#[test]
fn signals_round_trip() {
    for s in Signal::ALL {
        assert_eq!(Signal::parse(s.as_str()), Some(s));
        assert_eq!(s.operator(), ThresholdOperator::LessThan);
    }
    assert_eq!(Signal::parse("memory"), None);
}

proptest! {
    #[test]
    fn langle_round_trip(m in prop::collection::btree_map("[a-z.]{1,8}", "[A-Za-z0-9%]{0,6}", 0..6)) {
        prop_assert_eq!(parse_langle_map(&format_langle_map(&m)).unwrap(), m);
    }

    #[test]
    fn percentages_in_range_parse(p in 1_u32..100) {
        let got = parse(&[], &[("nodefs.available", &format!("{p}%"))], &[], &[], &[]).unwrap();
        prop_assert_eq!(got.len(), 1);
        let ThresholdValue::Percentage(f) = got[0].value else { return Err(TestCaseError::fail("not a percentage")) };
        prop_assert!((f - p as f32 / 100.0).abs() < 1e-6);
    }
}
