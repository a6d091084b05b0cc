//! CPU and memory quantities from k8s-openapi as integers: [`value`] (`Quantity.Value()`) and
//! [`milli_value`] (`Quantity.MilliValue()`), both rounding up like upstream
//! (`k8s.io/apimachinery/pkg/api/resource`, implemented by `kubelet-apimachinery`).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubelet_apimachinery::Quantity as ParsedQuantity;

use crate::error::RuntimeManagerError;

fn parse(q: &Quantity) -> Result<ParsedQuantity, RuntimeManagerError> {
    ParsedQuantity::parse(&q.0).map_err(|_| RuntimeManagerError::InvalidQuantity(q.0.clone()))
}

/// `Quantity.Value()`: the quantity rounded up to an integer.
pub fn value(q: &Quantity) -> Result<i64, RuntimeManagerError> {
    Ok(parse(q)?.value())
}

/// `Quantity.MilliValue()`: the quantity times 1000, rounded up.
pub fn milli_value(q: &Quantity) -> Result<i64, RuntimeManagerError> {
    Ok(parse(q)?.milli_value())
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
        for s in ["abc", "1Zi", "1.2.3"] {
            let err = value(&q(s)).unwrap_err();
            assert!(err.to_string().contains(s), "{err}");
        }
    }
}
