//! Delayed re-sync queue (upstream `pkg/kubelet/util/queue/work_queue.go`)
//! and `wait.Jitter`.
//!
//! The pod workers enqueue a pod after each sync (resync interval on success,
//! back-off on error); the kubelet sync loop drains due items every second
//! with [`WorkQueue::get_work`] and sends them a `Sync` update. Time comes from
//! `tokio::time::Instant`, so tests control it with `tokio::time::pause`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Pod UIDs with the time they are due.
#[derive(Debug, Default)]
pub struct WorkQueue {
    queue: Mutex<HashMap<String, Instant>>,
}

impl WorkQueue {
    /// Empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Instant>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Schedules `uid` after `delay`, replacing any earlier schedule (upstream `Enqueue`).
    pub fn enqueue(&self, uid: &str, delay: Duration) {
        self.lock().insert(uid.to_string(), Instant::now() + delay);
    }

    /// Removes and returns every due UID (upstream `GetWork`).
    pub fn get_work(&self) -> Vec<String> {
        let now = Instant::now();
        let mut queue = self.lock();
        let due: Vec<String> = queue
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        due.iter().for_each(|k| {
            queue.remove(k);
        });
        due
    }

    /// When `uid` is due, if queued.
    pub fn due_at(&self, uid: &str) -> Option<Instant> {
        self.lock().get(uid).copied()
    }

    /// Number of queued UIDs.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// `d` plus a random extra of up to `max_factor × d` (upstream `wait.Jitter`;
/// a factor ≤ 0 means 1.0).
pub fn jitter(d: Duration, max_factor: f64) -> Duration {
    let factor = if max_factor <= 0.0 { 1.0 } else { max_factor };
    // RandomState is randomly keyed per instance: a cheap, dependency-free random source.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let unit = (random >> 11) as f64 / (1u64 << 53) as f64;
    d + d.mul_f64(unit * factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn returns_only_due_items_once() {
        let q = WorkQueue::new();
        q.enqueue("a", Duration::ZERO);
        q.enqueue("b", Duration::from_secs(10));
        assert_eq!(q.get_work(), ["a"]);
        assert!(q.get_work().is_empty());
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(q.get_work(), ["b"]);
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn enqueue_replaces_schedule() {
        let q = WorkQueue::new();
        q.enqueue("a", Duration::from_secs(60));
        q.enqueue("a", Duration::from_secs(1));
        assert_eq!(q.len(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(q.get_work(), ["a"]);
    }

    #[test]
    fn jitter_stays_in_range() {
        let d = Duration::from_secs(10);
        for _ in 0..100 {
            let j = jitter(d, 0.5);
            assert!(j >= d && j <= Duration::from_secs(15), "{j:?}");
        }
    }
}
