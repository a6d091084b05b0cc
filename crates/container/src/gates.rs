//! The feature gates the kubelet's pod logic consults deep in pure code (upstream reads
//! `utilfeature.DefaultFeatureGate` there): set once at start from the kubelet's
//! `--feature-gates`; until then the 1.35 defaults.

use std::sync::atomic::{AtomicBool, Ordering};

static CONTAINER_RESTART_RULES: AtomicBool = AtomicBool::new(true);

#[cfg(any(test, feature = "fake"))]
thread_local! {
    static CONTAINER_RESTART_RULES_OVERRIDE: std::cell::Cell<Option<bool>> =
        const { std::cell::Cell::new(None) };
}

/// `ContainerRestartRules` (beta, on by default in 1.35): container-level `restartPolicy`
/// and `restartPolicyRules` decide restarts and the pod phase.
pub fn container_restart_rules() -> bool {
    #[cfg(any(test, feature = "fake"))]
    if let Some(v) = CONTAINER_RESTART_RULES_OVERRIDE.with(std::cell::Cell::get) {
        return v;
    }
    CONTAINER_RESTART_RULES.load(Ordering::Relaxed)
}

/// Sets [`container_restart_rules`] (the kubelet, at start).
pub fn set_container_restart_rules(enabled: bool) {
    CONTAINER_RESTART_RULES.store(enabled, Ordering::Relaxed);
}

/// Overrides [`container_restart_rules`] on the current thread until the guard drops
/// (tests; upstream `featuregatetesting.SetFeatureGateDuringTest`).
#[cfg(any(test, feature = "fake"))]
pub fn set_container_restart_rules_during_test(enabled: bool) -> TestGateGuard {
    let previous = CONTAINER_RESTART_RULES_OVERRIDE.with(|c| c.replace(Some(enabled)));
    TestGateGuard { previous }
}

/// Restores the previous override when dropped.
#[cfg(any(test, feature = "fake"))]
#[must_use = "the override ends when the guard drops"]
pub struct TestGateGuard {
    previous: Option<bool>,
}

#[cfg(any(test, feature = "fake"))]
impl Drop for TestGateGuard {
    fn drop(&mut self) {
        CONTAINER_RESTART_RULES_OVERRIDE.with(|c| c.set(self.previous));
    }
}
