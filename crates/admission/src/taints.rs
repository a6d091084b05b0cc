//! Taints and tolerations as the kubelet's admission sees them (upstream
//! `component-helpers/scheduling/corev1/helpers.go` `FindMatchingUntoleratedTaint`,
//! `TolerationsTolerateTaint`, and `k8s.io/api/core/v1/toleration.go` `ToleratesTaint`).
//!
//! The kubelet only cares about `NoExecute` taints, and only for pods that are not static
//! (`lifecycle/predicate.go` `generalFilter`); the rejection is the scheduler plugin's:
//! predicate `TaintToleration`, "node(s) had taints that the pod didn't tolerate".

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// `v1.TaintEffectNoExecute`.
pub const TAINT_EFFECT_NO_EXECUTE: &str = "NoExecute";

/// Upstream `Toleration.ToleratesTaint`: an empty effect matches every effect, an empty key
/// (with `Exists`) every key; `Equal` (or no operator) compares the values; `Lt`/`Gt`
/// compare them as decimal integers, only with the `TaintTolerationComparisonOperators`
/// gate.
pub fn toleration_tolerates_taint(
    t: &Toleration,
    taint: &Taint,
    enable_comparison_operators: bool,
) -> bool {
    let effect = t.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    let value = t.value.as_deref().unwrap_or_default();
    let taint_value = taint.value.as_deref().unwrap_or_default();
    match t.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => value == taint_value,
        "Exists" => true,
        op @ ("Lt" | "Gt") => {
            if !enable_comparison_operators {
                return false;
            }
            let (Some(tol), Some(tnt)) = (decimal_integer(value), decimal_integer(taint_value))
            else {
                return false;
            };
            if op == "Lt" { tnt < tol } else { tnt > tol }
        }
        _ => false,
    }
}

/// Upstream `content.IsDecimalInteger` then `strconv.ParseInt`: an optional `-`, no
/// leading zeros (`0` alone is fine, `-0` is not), digits only, within `i64`.
fn decimal_integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let first = digits.bytes().next()?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if first == b'0' && (digits.len() > 1 || s.starts_with('-')) {
        return None;
    }
    s.parse().ok()
}

/// Upstream `TolerationsTolerateTaint`: some toleration tolerates the taint.
pub fn tolerations_tolerate_taint(
    tolerations: &[Toleration],
    taint: &Taint,
    enable_comparison_operators: bool,
) -> bool {
    tolerations
        .iter()
        .any(|t| toleration_tolerates_taint(t, taint, enable_comparison_operators))
}

/// Upstream `FindMatchingUntoleratedTaint` with the kubelet's filter (`NoExecute` only):
/// the first `NoExecute` taint no toleration tolerates.
pub fn find_untolerated_no_execute_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    enable_comparison_operators: bool,
) -> Option<&'a Taint> {
    taints.iter().find(|taint| {
        taint.effect == TAINT_EFFECT_NO_EXECUTE
            && !tolerations_tolerate_taint(tolerations, taint, enable_comparison_operators)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn toleration_matching_follows_upstream_rules() {
        let t = taint("k", "v", "NoExecute");
        assert!(toleration_tolerates_taint(
            &tol("k", "", "v", ""),
            &t,
            false
        ));
        assert!(toleration_tolerates_taint(
            &tol("k", "Equal", "v", "NoExecute"),
            &t,
            false
        ));
        assert!(!toleration_tolerates_taint(
            &tol("k", "Equal", "w", ""),
            &t,
            false
        ));
        assert!(!toleration_tolerates_taint(
            &tol("k", "Exists", "", "NoSchedule"),
            &t,
            false
        ));
        assert!(toleration_tolerates_taint(
            &tol("", "Exists", "", ""),
            &t,
            false
        ));
        assert!(!toleration_tolerates_taint(
            &tol("other", "Exists", "", ""),
            &t,
            false
        ));
        assert!(!toleration_tolerates_taint(
            &tol("k", "Bogus", "v", ""),
            &t,
            false
        ));
    }

    #[test]
    fn comparison_operators_only_with_the_gate() {
        let t = taint("k", "5", "NoExecute");
        let gt = tol("k", "Gt", "3", "");
        assert!(!toleration_tolerates_taint(&gt, &t, false));
        assert!(toleration_tolerates_taint(&gt, &t, true));
        assert!(!toleration_tolerates_taint(
            &tol("k", "Lt", "3", ""),
            &t,
            true
        ));
        assert!(toleration_tolerates_taint(
            &tol("k", "Lt", "6", ""),
            &t,
            true
        ));
        // Not decimal integers: no match.
        assert!(!toleration_tolerates_taint(
            &tol("k", "Gt", "03", ""),
            &t,
            true
        ));
        assert!(!toleration_tolerates_taint(
            &tol("k", "Gt", "x", ""),
            &t,
            true
        ));
        assert_eq!(decimal_integer("-0"), None);
        assert_eq!(decimal_integer("0"), Some(0));
        assert_eq!(decimal_integer("-12"), Some(12).map(|v: i64| -v));
    }

    #[test]
    fn only_no_execute_taints_count() {
        let taints = [
            taint("a", "", "NoSchedule"),
            taint("b", "", "PreferNoSchedule"),
        ];
        assert_eq!(find_untolerated_no_execute_taint(&taints, &[], false), None);
        let taints = [taint("a", "", "NoSchedule"), taint("c", "x", "NoExecute")];
        assert_eq!(
            find_untolerated_no_execute_taint(&taints, &[], false),
            Some(&taints[1])
        );
        let tolerated = [tol("c", "Exists", "", "NoExecute")];
        assert_eq!(
            find_untolerated_no_execute_taint(&taints, &tolerated, false),
            None
        );
    }
}
