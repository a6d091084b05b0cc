//! `--kube-reserved` / `--system-reserved` maps (cmd/kubelet/app/server.go
//! `parseResourceList`) and `--qos-reserved` (pkg/kubelet/cm/container_manager.go
//! `ParseQOSReserved`).

use std::collections::BTreeMap;

use crate::goquote::go_quote;
use crate::quantity::scale;
use crate::{Quantity, QuantityError};

/// Resources that `--kube-reserved` / `--system-reserved` accept.
pub const RESERVABLE_RESOURCES: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "pid"];

/// A reserved-resource map that does not parse; messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReservedError {
    /// A value that is not a quantity.
    #[error("failed to parse quantity {} for {} resource: {source}", go_quote(.value), go_quote(.resource))]
    Quantity {
        /// The resource name.
        resource: String,
        /// The value as written.
        value: String,
        /// The parse failure.
        #[source]
        source: QuantityError,
    },
    /// A negative amount.
    #[error("resource quantity for {} cannot be negative: {value}", go_quote(.resource))]
    Negative {
        /// The resource name.
        resource: String,
        /// The value as written.
        value: String,
    },
    /// A resource that cannot be reserved.
    #[error("cannot reserve {} resource", go_quote(.0))]
    Unsupported(String),
    /// A `--qos-reserved` value that is not a valid percentage.
    #[error("failed to parse percentage {} for {} resource: {reason}", go_quote(.value), go_quote(.resource))]
    Percentage {
        /// The resource name.
        resource: String,
        /// The value as written.
        value: String,
        /// Upstream `parsePercentage` message.
        reason: String,
    },
}

/// Upstream `parseResourceList`: only cpu, memory, ephemeral-storage and pid;
/// no negative amounts; cpu rounded half-up to whole millicores.
pub fn parse_resource_list(
    m: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, Quantity>, ReservedError> {
    let mut out = BTreeMap::new();
    for (resource, value) in m {
        if !RESERVABLE_RESOURCES.contains(&resource.as_str()) {
            return Err(ReservedError::Unsupported(resource.clone()));
        }
        let mut q = Quantity::parse(value).map_err(|source| ReservedError::Quantity {
            resource: resource.clone(),
            value: value.clone(),
            source,
        })?;
        if q.sign() < 0 {
            return Err(ReservedError::Negative {
                resource: resource.clone(),
                value: value.clone(),
            });
        }
        if resource == "cpu" {
            // q.SetMilli((q.ScaledValue(resource.Micro) + 500) / 1000)
            let micro = q.scaled_value(scale::MICRO);
            q = Quantity::from_milli(micro.saturating_add(500) / 1000, q.format());
        }
        out.insert(resource.clone(), q);
    }
    Ok(out)
}

/// Upstream `parsePercentage` (cm): "N%" with 0 <= N <= 100.
fn parse_percentage(v: &str) -> Result<i64, String> {
    if !v.ends_with('%') {
        return Err(format!("percentage expected, got '{v}'"));
    }
    let n: i64 = v
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("invalid number in percentage '{v}'"))?;
    if !(0..=100).contains(&n) {
        return Err("percentage must be between 0 and 100".to_owned());
    }
    Ok(n)
}

/// Upstream `ParseQOSReserved`: only `memory`, as a percentage 0..=100.
pub fn parse_qos_reserved(
    m: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, i64>, ReservedError> {
    let mut out = BTreeMap::new();
    for (resource, value) in m {
        if resource != "memory" {
            return Err(ReservedError::Unsupported(resource.clone()));
        }
        let percentage = parse_percentage(value).map_err(|reason| ReservedError::Percentage {
            resource: resource.clone(),
            value: value.clone(),
            reason,
        })?;
        out.insert(resource.clone(), percentage);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use proptest::prelude::*;

    use super::*;

    use crate::string_map as map;

    #[test]
    fn resource_list_accepts_the_four_resources() {
        let got = parse_resource_list(&map(&[
            ("cpu", "100m"),
            ("memory", "1Gi"),
            ("ephemeral-storage", "10G"),
            ("pid", "1000"),
        ]))
        .unwrap();
        let shown: Vec<String> = got.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            shown,
            ["cpu=100m", "ephemeral-storage=10G", "memory=1Gi", "pid=1k"]
        );
        assert!(parse_resource_list(&BTreeMap::new()).unwrap().is_empty());
    }

    #[test]
    fn cpu_is_rounded_half_up_to_millicores() {
        let table = [
            ("100.4m", "100m"),
            ("100.5m", "101m"),
            ("0.0004", "0"),
            ("0.0005", "1m"),
            ("1n", "0"),
            ("1.5", "1500m"),
            ("2", "2"),
        ];
        for (input, want) in table {
            let got = parse_resource_list(&map(&[("cpu", input)])).unwrap();
            assert_eq!(got["cpu"].to_string(), want, "{input}");
        }
        // Only cpu is rounded.
        let got = parse_resource_list(&map(&[("memory", "1.5n")])).unwrap();
        assert_eq!(got["memory"].to_string(), "2n");
    }

    #[test]
    fn resource_list_errors_match_upstream() {
        let table = [
            (
                ("nvidia.com/gpu", "1"),
                r#"cannot reserve "nvidia.com/gpu" resource"#,
            ),
            (
                ("memory", "-1Gi"),
                r#"resource quantity for "memory" cannot be negative: -1Gi"#,
            ),
            (
                ("cpu", "abc"),
                r#"failed to parse quantity "abc" for "cpu" resource: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
            ),
            (
                ("pid", "1x1"),
                r#"failed to parse quantity "1x1" for "pid" resource: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
            ),
            (
                ("memory", "1Q"),
                r#"failed to parse quantity "1Q" for "memory" resource: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
            ),
            (
                ("memory", "1Zi"),
                r#"failed to parse quantity "1Zi" for "memory" resource: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
            ),
            (
                ("memory", "1mi"),
                r#"failed to parse quantity "1mi" for "memory" resource: unable to parse quantity's suffix"#,
            ),
        ];
        for ((k, v), want) in table {
            assert_eq!(
                parse_resource_list(&map(&[(k, v)]))
                    .unwrap_err()
                    .to_string(),
                want
            );
        }
    }

    #[test]
    fn qos_reserved() {
        assert_eq!(
            parse_qos_reserved(&map(&[("memory", "50%")])).unwrap(),
            BTreeMap::from([("memory".to_owned(), 50)])
        );
        assert_eq!(
            parse_qos_reserved(&map(&[("memory", "0%")])).unwrap()["memory"],
            0
        );
        assert_eq!(
            parse_qos_reserved(&map(&[("memory", "100%")])).unwrap()["memory"],
            100
        );
        assert!(parse_qos_reserved(&BTreeMap::new()).unwrap().is_empty());
        let table = [
            (("cpu", "50%"), r#"cannot reserve "cpu" resource"#),
            (
                ("memory", "50"),
                r#"failed to parse percentage "50" for "memory" resource: percentage expected, got '50'"#,
            ),
            (
                ("memory", "x%"),
                r#"failed to parse percentage "x%" for "memory" resource: invalid number in percentage 'x%'"#,
            ),
            (
                ("memory", "1.5%"),
                r#"failed to parse percentage "1.5%" for "memory" resource: invalid number in percentage '1.5%'"#,
            ),
            (
                ("memory", "101%"),
                r#"failed to parse percentage "101%" for "memory" resource: percentage must be between 0 and 100"#,
            ),
            (
                ("memory", "-1%"),
                r#"failed to parse percentage "-1%" for "memory" resource: percentage must be between 0 and 100"#,
            ),
        ];
        for ((k, v), want) in table {
            assert_eq!(
                parse_qos_reserved(&map(&[(k, v)])).unwrap_err().to_string(),
                want
            );
        }
    }

    proptest! {
        #[test]
        fn cpu_millis_round_trip(m in 0_i64..10_000_000) {
            let got = parse_resource_list(&map(&[("cpu", &format!("{m}m"))])).unwrap();
            prop_assert_eq!(got["cpu"].milli_value(), m);
        }

        #[test]
        fn qos_percentages(p in -200_i64..300) {
            let got = parse_qos_reserved(&map(&[("memory", &format!("{p}%"))]));
            prop_assert_eq!(got.is_ok(), (0..=100).contains(&p));
        }
    }
}
