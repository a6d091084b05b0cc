//! Test-only hooks, read from the environment once. Not an upstream feature: they exist so
//! that the benchmark's quick mode (`bench/README.md`, "Quick mode") can show that it catches
//! a deliberate slowdown. Unset (the only supported production state), a hook costs one
//! `OnceLock` read.
//!
//! * `KRS_TEST_SYNC_DELAY_MS=<ms>`: `SyncPod` sleeps that long before it creates a pod's
//!   sandbox (only when the sandbox has to be created, so pod start-up slows down and the
//!   steady state does not). The kubelet logs a warning at the first delayed sync.

use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable of [`sync_delay`].
pub const SYNC_DELAY_ENV: &str = "KRS_TEST_SYNC_DELAY_MS";

/// The injected `SyncPod` delay, if `KRS_TEST_SYNC_DELAY_MS` is set to a positive integer.
pub fn sync_delay() -> Option<Duration> {
    static DELAY: OnceLock<Option<Duration>> = OnceLock::new();
    *DELAY.get_or_init(|| parse_delay(std::env::var(SYNC_DELAY_ENV).ok().as_deref()))
}

/// `Some(ms)` for a positive integer of milliseconds; anything else (unset, empty, 0,
/// garbage) is `None`.
pub fn parse_delay(value: Option<&str>) -> Option<Duration> {
    let ms: u64 = value?.trim().parse().ok()?;
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// Sleeps for the injected delay, if any (test only; see the module documentation).
pub async fn delay_sync() {
    if let Some(d) = sync_delay() {
        static WARNED: OnceLock<()> = OnceLock::new();
        WARNED.get_or_init(|| {
            tracing::warn!(
                delay_ms = d.as_millis() as u64,
                "{SYNC_DELAY_ENV} is set: every SyncPod that creates a sandbox is delayed (test-only slowdown)"
            );
        });
        tokio::time::sleep(d).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_delay_accepts_positive_milliseconds_only() {
        assert_eq!(parse_delay(Some("250")), Some(Duration::from_millis(250)));
        assert_eq!(parse_delay(Some(" 5 ")), Some(Duration::from_millis(5)));
        assert_eq!(parse_delay(Some("0")), None);
        assert_eq!(parse_delay(Some("")), None);
        assert_eq!(parse_delay(Some("-3")), None);
        assert_eq!(parse_delay(Some("1s")), None);
        assert_eq!(parse_delay(None), None);
    }
}
