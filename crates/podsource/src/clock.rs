//! Wall clock behind a trait so the `kubernetes.io/config.seen` timestamp is testable.

use std::sync::Mutex;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> jiff::Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
}

/// A clock that returns a settable time.
#[derive(Debug)]
pub struct FakeClock(Mutex<jiff::Timestamp>);

impl FakeClock {
    pub fn new(t: jiff::Timestamp) -> Self {
        FakeClock(Mutex::new(t))
    }

    pub fn set(&self, t: jiff::Timestamp) {
        if let Ok(mut g) = self.0.lock() {
            *g = t;
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> jiff::Timestamp {
        self.0
            .lock()
            .map(|g| *g)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }
}

/// Go's `time.RFC3339Nano` rendering in UTC (fraction without trailing zeros), the format
/// of `kubetypes.NewTimestamp().GetString()`.
pub fn rfc3339_nano(t: jiff::Timestamp) -> String {
    t.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go_rfc3339_nano() {
        let t: jiff::Timestamp = "2024-05-06T07:08:09.120Z".parse().unwrap();
        assert_eq!(rfc3339_nano(t), "2024-05-06T07:08:09.12Z");
        let t: jiff::Timestamp = "2024-05-06T07:08:09Z".parse().unwrap();
        assert_eq!(rfc3339_nano(t), "2024-05-06T07:08:09Z");
        let t: jiff::Timestamp = "2024-05-06T07:08:09.000000001Z".parse().unwrap();
        assert_eq!(rfc3339_nano(t), "2024-05-06T07:08:09.000000001Z");
    }
}
