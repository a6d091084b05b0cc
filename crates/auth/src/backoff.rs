//! The webhooks' retries (`k8s.io/apiserver/pkg/util/webhook.WithExponentialBackoff` over
//! `wait.ExponentialBackoffWithContext`, parameters of
//! `genericoptions.DefaultAuthWebhookRetryBackoff`).

use std::future::Future;
use std::time::Duration;

use ring::rand::{SecureRandom, SystemRandom};

use crate::review::ReviewError;

/// `wait.Backoff` without a cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBackoff {
    /// The first wait.
    pub duration: Duration,
    /// Each wait is the previous one times this.
    pub factor: f64,
    /// Up to this fraction of the wait is added at random.
    pub jitter: f64,
    /// Attempts in all.
    pub steps: u32,
}

impl RetryBackoff {
    /// `DefaultAuthWebhookRetryBackoff`: 500 ms, ×1.5, jitter 0.2, 5 attempts.
    pub const DEFAULT: RetryBackoff = RetryBackoff {
        duration: Duration::from_millis(500),
        factor: 1.5,
        jitter: 0.2,
        steps: 5,
    };
}

/// A number in [0, 1) (`rand.Float64`).
fn unit_random() -> f64 {
    let mut b = [0u8; 4];
    match SystemRandom::new().fill(&mut b) {
        Ok(()) => f64::from(u32::from_le_bytes(b)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.0,
    }
}

/// Calls `f` until it succeeds, fails with an error that is not
/// [`ReviewError::retryable`], or `backoff.steps` attempts were made (then the last error).
pub async fn with_exponential_backoff<T, F, Fut>(
    backoff: RetryBackoff,
    mut f: F,
) -> Result<T, ReviewError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ReviewError>>,
{
    let mut wait = backoff.duration;
    let mut steps = backoff.steps.max(1);
    loop {
        let err = match f().await {
            Ok(v) => return Ok(v),
            Err(e) if !e.retryable => return Err(e),
            Err(e) => e,
        };
        steps -= 1;
        if steps == 0 {
            return Err(err);
        }
        let jittered = wait.mul_f64(1.0 + backoff.jitter.max(0.0) * unit_random());
        wait = wait.mul_f64(backoff.factor);
        tokio::time::sleep(jittered).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn retries_retryable_errors_five_times_with_growing_waits() {
        let calls = AtomicU32::new(0);
        let start = tokio::time::Instant::now();
        let r: Result<(), _> = with_exponential_backoff(RetryBackoff::DEFAULT, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(ReviewError::retryable("500")) }
        })
        .await;
        assert_eq!(r, Err(ReviewError::retryable("500")));
        assert_eq!(calls.load(Ordering::SeqCst), 5);
        // 0.5 + 0.75 + 1.125 + 1.6875 s, each with up to 20 % jitter.
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(4062), "{waited:?}");
        assert!(waited <= Duration::from_millis(4875), "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn fatal_errors_and_success_end_at_once() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_exponential_backoff(RetryBackoff::DEFAULT, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(ReviewError::fatal("403")) }
        })
        .await;
        assert_eq!(r, Err(ReviewError::fatal("403")));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let calls = AtomicU32::new(0);
        let r = with_exponential_backoff(RetryBackoff::DEFAULT, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    Err(ReviewError::retryable("reset"))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(r, Ok(2));
    }
}
