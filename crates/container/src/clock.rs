//! Wall clock behind a trait (upstream `k8s.io/utils/clock`).
//!
//! Wall time matters where the kubelet compares with runtime timestamps
//! (container `finishedAt` in restart back-off). Monotonic timers in the
//! kubelet's loops use `tokio::time` so tests can use `tokio::time::pause`.

use std::fmt::Debug;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};

/// Source of wall-clock time.
pub trait Clock: Send + Sync + Debug {
    /// Current time.
    fn now(&self) -> Timestamp;

    /// Time elapsed since `t` (zero when `t` is in the future).
    fn since(&self, t: Timestamp) -> Duration {
        duration_between(t, self.now())
    }

    /// A monotonic reading: time since an arbitrary origin of this clock, never going back
    /// when the wall clock is set (Go's `time.Time` carries one next to the wall time).
    /// Only differences of two readings of the same clock mean something.
    fn monotonic(&self) -> Duration;
}

/// The origin of [`RealClock::monotonic`]: the first reading in the process.
static MONOTONIC_ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// `later - earlier`, clamped at zero.
pub fn duration_between(earlier: Timestamp, later: Timestamp) -> Duration {
    let d: SignedDuration = later.duration_since(earlier);
    Duration::try_from(d).unwrap_or(Duration::ZERO)
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    fn monotonic(&self) -> Duration {
        MONOTONIC_ORIGIN.elapsed()
    }
}

/// A clock that only moves when told (upstream `testingclock.FakeClock`).
/// Clones share the same time.
#[derive(Clone, Debug)]
pub struct FakeClock {
    now: Arc<Mutex<Timestamp>>,
}

impl FakeClock {
    /// A clock showing `start`.
    pub fn new(start: Timestamp) -> Self {
        Self {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the clock forward by `d`.
    pub fn step(&self, d: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        let step = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
        *now = now.saturating_add(step).unwrap_or(*now);
    }

    /// Sets the time.
    pub fn set(&self, t: Timestamp) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }
}

impl Default for FakeClock {
    /// Starts at 2024-01-01T00:00:00Z.
    fn default() -> Self {
        Self::new(Timestamp::from_second(1_704_067_200).unwrap_or(Timestamp::UNIX_EPOCH))
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The fake time since the Unix epoch: [`FakeClock::step`] moves it with the wall time.
    fn monotonic(&self) -> Duration {
        duration_between(Timestamp::UNIX_EPOCH, self.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_steps_and_clones_share_time() {
        let clock = FakeClock::default();
        let start = clock.now();
        let other = clock.clone();
        other.step(Duration::from_secs(5));
        assert_eq!(clock.since(start), Duration::from_secs(5));
        assert_eq!(duration_between(clock.now(), start), Duration::ZERO);
        let mono = clock.monotonic();
        other.step(Duration::from_millis(250));
        assert_eq!(clock.monotonic() - mono, Duration::from_millis(250));
    }

    #[test]
    fn real_monotonic_readings_never_go_back() {
        let a = RealClock.monotonic();
        assert!(RealClock.monotonic() >= a);
    }
}
