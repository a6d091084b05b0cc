//! Per-key exponential back-off (upstream `k8s.io/client-go/util/flowcontrol/backoff.go`),
//! used for container restarts (CrashLoopBackOff) and image pulls (ImagePullBackOff).
//!
//! Each key starts at `initial` and doubles on every [`Backoff::next`] up to
//! `max`. A key that saw no failure for `2 × max` is considered stable and
//! starts over (flowcontrol's default `hasExpired`); the kubelet's crash-loop
//! back-off replaces that with a fixed 600 s (`HasExpiredFunc` in `NewMainKubelet`),
//! see [`Backoff::crash_loop`]. Without jitter, as the kubelet constructs it
//! (`flowcontrol.NewBackOff(initial, max)`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;

use crate::clock::{Clock, RealClock, duration_between};

/// Initial container restart back-off (upstream `backOffPeriod`).
pub const CONTAINER_BACKOFF_INITIAL: Duration = Duration::from_secs(10);
/// Maximum container restart back-off (upstream `MaxContainerBackOff`).
pub const CONTAINER_BACKOFF_MAX: Duration = Duration::from_secs(300);
/// Initial container restart back-off with the `ReduceDefaultCrashLoopBackOffDecay` gate
/// (upstream `reducedInitialCrashLoopBackOff`).
pub const REDUCED_CONTAINER_BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// Maximum container restart back-off with the `ReduceDefaultCrashLoopBackOffDecay` gate
/// (upstream `reducedMaxCrashLoopBackOff`).
pub const REDUCED_CONTAINER_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// A crash-looping container that ran this long since its last back-off starts over at
/// the initial back-off, whatever the maximum (the kubelet's `HasExpiredFunc`).
pub const CRASH_LOOP_BACKOFF_RESET: Duration = Duration::from_secs(600);

#[derive(Clone, Copy, Debug)]
struct Entry {
    backoff: Duration,
    last_update: Timestamp,
}

/// Per-key exponential back-off with an injectable clock. Shared by
/// reference across syncs; interior mutability makes `&Backoff` enough.
#[derive(Debug)]
pub struct Backoff {
    clock: Arc<dyn Clock>,
    initial: Duration,
    max: Duration,
    /// Idle time after which a key is stable again (upstream `hasExpired`).
    stable_after: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

impl Backoff {
    /// Back-off from `initial` doubling up to `max`, on `clock`; a key idle for
    /// `2 × max` starts over (upstream `flowcontrol.NewBackOff`).
    pub fn new(initial: Duration, max: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            initial,
            max,
            stable_after: max.saturating_mul(2),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The kubelet's container restart back-off (`klet.crashLoopBackOff` in
    /// `NewMainKubelet`): `initial` doubling to `max`, and a key idle for
    /// [`CRASH_LOOP_BACKOFF_RESET`] starts over, whatever `max` is.
    pub fn crash_loop(initial: Duration, max: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            stable_after: CRASH_LOOP_BACKOFF_RESET,
            ..Self::new(initial, max, clock)
        }
    }

    /// The kubelet's default container restart back-off: 10 s doubling to 300 s, real clock.
    pub fn container_default() -> Self {
        Self::crash_loop(
            CONTAINER_BACKOFF_INITIAL,
            CONTAINER_BACKOFF_MAX,
            Arc::new(RealClock),
        )
    }

    /// The first back-off of a key.
    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The largest back-off.
    pub fn max(&self) -> Duration {
        self.max
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn has_expired(&self, event_time: Timestamp, last_update: Timestamp) -> bool {
        duration_between(last_update, event_time) > self.stable_after
    }

    /// Current back-off for `id` (zero when unknown) (upstream `Get`).
    pub fn get(&self, id: &str) -> Duration {
        self.entries().get(id).map_or(Duration::ZERO, |e| e.backoff)
    }

    /// Records a failure of `id` at `event_time`: starts at `initial`, or
    /// doubles up to `max` (upstream `Next`).
    pub fn next(&self, id: &str, event_time: Timestamp) {
        let now = self.clock.now();
        let mut entries = self.entries();
        let backoff = match entries.get(id) {
            Some(e) if !self.has_expired(event_time, e.last_update) => {
                e.backoff.saturating_mul(2).min(self.max)
            }
            _ => self.initial,
        };
        entries.insert(
            id.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// Forgets `id` (upstream `Reset`).
    pub fn reset(&self, id: &str) {
        self.entries().remove(id);
    }

    /// True when less than the current back-off has passed since `event_time`
    /// (upstream `IsInBackOffSince`; the kubelet passes the container's finish time).
    pub fn is_in_backoff_since(&self, id: &str, event_time: Timestamp) -> bool {
        let entries = self.entries();
        let Some(e) = entries.get(id) else {
            return false;
        };
        if self.has_expired(event_time, e.last_update) {
            return false;
        }
        self.clock.since(event_time) < e.backoff
    }

    /// True when `event_time` is within the back-off of the last update
    /// (upstream `IsInBackOffSinceUpdate`).
    pub fn is_in_backoff_since_update(&self, id: &str, event_time: Timestamp) -> bool {
        let entries = self.entries();
        let Some(e) = entries.get(id) else {
            return false;
        };
        if self.has_expired(event_time, e.last_update) {
            return false;
        }
        duration_between(e.last_update, event_time) < e.backoff
    }

    /// Drops entries that are stable again (upstream `GC`).
    pub fn gc(&self) {
        let now = self.clock.now();
        let limit = self.stable_after;
        self.entries()
            .retain(|_, e| duration_between(e.last_update, now) <= limit);
    }

    /// Number of tracked keys.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// True when no key is tracked.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn doubles_up_to_max() {
        let clock = FakeClock::default();
        let b = Backoff::new(secs(10), secs(300), Arc::new(clock.clone()));
        let mut seen = Vec::new();
        for _ in 0..7 {
            b.next("c", clock.now());
            seen.push(b.get("c").as_secs());
            clock.step(secs(1));
        }
        assert_eq!(seen, [10, 20, 40, 80, 160, 300, 300]);
    }

    #[test]
    fn in_backoff_since_event_time() {
        let clock = FakeClock::default();
        let b = Backoff::new(secs(10), secs(300), Arc::new(clock.clone()));
        let finished = clock.now();
        assert!(
            !b.is_in_backoff_since("c", finished),
            "unknown key is never backing off"
        );
        b.next("c", finished);
        clock.step(secs(9));
        assert!(b.is_in_backoff_since("c", finished));
        clock.step(secs(2));
        assert!(!b.is_in_backoff_since("c", finished));
    }

    #[test]
    fn resets_after_twice_max_of_stability() {
        let clock = FakeClock::default();
        let b = Backoff::new(secs(10), secs(300), Arc::new(clock.clone()));
        b.next("c", clock.now());
        b.next("c", clock.now());
        assert_eq!(b.get("c"), secs(20));
        clock.step(secs(601));
        b.next("c", clock.now());
        assert_eq!(b.get("c"), secs(10), "stable for 2×max starts over");
    }

    #[test]
    fn crash_loop_resets_after_600s_whatever_the_max() {
        let clock = FakeClock::default();
        let b = Backoff::crash_loop(secs(1), secs(30), Arc::new(clock.clone()));
        b.next("c", clock.now());
        b.next("c", clock.now());
        assert_eq!(b.get("c"), secs(2));
        clock.step(secs(100));
        b.next("c", clock.now());
        assert_eq!(b.get("c"), secs(4), "idle 100 s > 2×max is not yet stable");
        clock.step(secs(601));
        b.gc();
        assert!(b.is_empty(), "idle > 600 s is collected");
    }

    #[test]
    fn gc_and_reset_drop_entries() {
        let clock = FakeClock::default();
        let b = Backoff::new(secs(10), secs(300), Arc::new(clock.clone()));
        b.next("old", clock.now());
        clock.step(secs(601));
        b.next("new", clock.now());
        b.gc();
        assert_eq!(b.len(), 1);
        assert!(b.is_in_backoff_since_update("new", clock.now()));
        b.reset("new");
        assert!(b.is_empty());
    }
}
