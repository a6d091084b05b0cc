//! The reflector's back-off (`apimachinery/pkg/util/wait` `NewExponentialBackoffManager`
//! as `NewReflectorWithOptions` builds it: 800 ms doubling to 30 s, jitter 1.0, back to
//! 800 ms after 2 min without a back-off).

use std::time::Duration;

use kubelet_podworkers::work_queue::jitter;
use tokio::time::Instant;

/// Upstream reflector's initial back-off.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(800);
/// Upstream reflector's maximum back-off.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Upstream reflector's back-off reset: a back-off this long after the previous one
/// starts again from [`INITIAL_BACKOFF`].
pub const BACKOFF_RESET: Duration = Duration::from_secs(120);
const FACTOR: u32 = 2;
const JITTER: f64 = 1.0;

/// Exponential back-off with reset (upstream `exponentialBackoffManagerImpl`).
#[derive(Debug, Clone)]
pub struct ExponentialBackoff {
    next: Duration,
    last_start: Option<Instant>,
}

impl Default for ExponentialBackoff {
    fn default() -> Self {
        Self {
            next: INITIAL_BACKOFF,
            last_start: None,
        }
    }
}

impl ExponentialBackoff {
    /// The un-jittered delay the next back-off will use (for tests and logs).
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// The next delay (jittered), advancing the back-off.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last_start
            .is_some_and(|t| now.duration_since(t) > BACKOFF_RESET)
        {
            self.next = INITIAL_BACKOFF;
        }
        self.last_start = Some(now);
        let current = self.next;
        self.next = (current * FACTOR).min(MAX_BACKOFF);
        jitter(current, JITTER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn doubles_to_the_cap_and_resets_after_quiet() {
        let mut b = ExponentialBackoff::default();
        let first = b.next_delay();
        assert!(first >= INITIAL_BACKOFF && first <= INITIAL_BACKOFF * 2);
        let mut seen = Vec::new();
        for _ in 0..8 {
            seen.push(b.peek());
            b.next_delay();
        }
        assert_eq!(seen[0], Duration::from_millis(1600));
        assert_eq!(seen[1], Duration::from_millis(3200));
        assert_eq!(b.peek(), MAX_BACKOFF);
        tokio::time::advance(BACKOFF_RESET + Duration::from_secs(1)).await;
        let d = b.next_delay();
        assert!(
            d <= INITIAL_BACKOFF * 2,
            "reset after a quiet period: {d:?}"
        );
    }
}
