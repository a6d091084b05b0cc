//! The container restart back-off the kubelet builds in `NewMainKubelet`
//! (`pkg/kubelet/kubelet.go` `newCrashLoopBackOff`): 10 s doubling to 300 s, 1 s → 60 s
//! with the `ReduceDefaultCrashLoopBackOffDecay` gate, and with the `KubeletCrashLoopBackOffMax`
//! gate (on by default at 1.35) the maximum is `crashLoopBackOff.maxContainerRestartPeriod`.

use std::sync::Arc;
use std::time::Duration;

use kubelet_config::KubeletServer;
use kubelet_container::backoff::{
    CONTAINER_BACKOFF_INITIAL, CONTAINER_BACKOFF_MAX, REDUCED_CONTAINER_BACKOFF_INITIAL,
    REDUCED_CONTAINER_BACKOFF_MAX,
};
use kubelet_container::{Backoff, Clock};
use kubelet_features::gates;

/// Upstream `newCrashLoopBackOff`: `(max, initial)` from the gates and the configuration.
/// The operator's maximum wins when its gate is on; the initial back-off never exceeds it.
pub fn new_crash_loop_back_off(server: &KubeletServer) -> (Duration, Duration) {
    let fg = &server.feature_gates;
    let (mut max, mut initial) = (CONTAINER_BACKOFF_MAX, CONTAINER_BACKOFF_INITIAL);
    if fg.enabled(gates::REDUCE_DEFAULT_CRASH_LOOP_BACK_OFF_DECAY) {
        max = REDUCED_CONTAINER_BACKOFF_MAX;
        initial = REDUCED_CONTAINER_BACKOFF_INITIAL;
    }
    if fg.enabled(gates::KUBELET_CRASH_LOOP_BACK_OFF_MAX) {
        // Defaulting sets the field when the gate is on and validation requires it
        // (1 s..300 s), so it is always present here.
        max = server
            .config
            .crash_loop_back_off
            .max_container_restart_period
            .and_then(|d| d.as_std())
            .unwrap_or(CONTAINER_BACKOFF_MAX);
        initial = initial.min(max);
    }
    (max, initial)
}

/// `klet.crashLoopBackOff`: the back-off of [`new_crash_loop_back_off`] on `clock`.
pub fn crash_loop_back_off(server: &KubeletServer, clock: Arc<dyn Clock>) -> Backoff {
    let (max, initial) = new_crash_loop_back_off(server);
    Backoff::crash_loop(initial, max, clock)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::kubelet::test_config::server as config;
    use kubelet_container::FakeClock;

    /// The back-offs a container sees over `n` failures in a row.
    fn sequence(b: &Backoff, clock: &FakeClock, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                b.next("c", clock.now());
                clock.step(Duration::from_secs(1));
                b.get("c").as_secs()
            })
            .collect()
    }

    #[test]
    fn crashloop_max_container_restart_period_caps_backoff() {
        // Default (gate on at 1.35, field defaulted to 300 s): 10 s doubling to 300 s.
        let s = config("");
        assert_eq!(
            new_crash_loop_back_off(&s),
            (Duration::from_secs(300), Duration::from_secs(10))
        );
        let clock = FakeClock::default();
        let b = crash_loop_back_off(&s, Arc::new(clock.clone()));
        assert_eq!(sequence(&b, &clock, 7), [10, 20, 40, 80, 160, 300, 300]);

        // The operator's maximum caps the back-off.
        let s = config("crashLoopBackOff:\n  maxContainerRestartPeriod: 30s\n");
        let clock = FakeClock::default();
        let b = crash_loop_back_off(&s, Arc::new(clock.clone()));
        assert_eq!(sequence(&b, &clock, 4), [10, 20, 30, 30]);

        // Below the initial back-off, the initial back-off is the maximum too.
        let s = config("crashLoopBackOff:\n  maxContainerRestartPeriod: 4s\n");
        assert_eq!(
            new_crash_loop_back_off(&s),
            (Duration::from_secs(4), Duration::from_secs(4))
        );

        // ReduceDefaultCrashLoopBackOffDecay: 1 s doubling, the configured max still wins.
        let s = config(
            "featureGates:\n  ReduceDefaultCrashLoopBackOffDecay: true\ncrashLoopBackOff:\n  maxContainerRestartPeriod: 5s\n",
        );
        let clock = FakeClock::default();
        let b = crash_loop_back_off(&s, Arc::new(clock.clone()));
        assert_eq!(sequence(&b, &clock, 5), [1, 2, 4, 5, 5]);

        // Gate off: the field must not be set, and the fixed 10 s → 300 s applies.
        let s = config("featureGates:\n  KubeletCrashLoopBackOffMax: false\n");
        assert_eq!(
            new_crash_loop_back_off(&s),
            (Duration::from_secs(300), Duration::from_secs(10))
        );
        let s = config(
            "featureGates:\n  KubeletCrashLoopBackOffMax: false\n  ReduceDefaultCrashLoopBackOffDecay: true\n",
        );
        assert_eq!(
            new_crash_loop_back_off(&s),
            (Duration::from_secs(60), Duration::from_secs(1))
        );
    }
}
