//! Pod status cache filled by the PLEG and read by the pod workers
//! (upstream `pkg/kubelet/container/cache.go`).
//!
//! The PLEG writes the status of each pod it inspected ([`Cache::set`]) and,
//! after every relist, raises a global timestamp ([`Cache::update_time`]) that
//! says "everything is at least this fresh". A pod worker that finished a sync
//! at time `t` waits in [`Cache::get_newer_than`] until it can be handed a
//! status observed after `t`, so it never acts twice on the same stale view.
//!
//! Times are `tokio::time::Instant`s so tests can pause time.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tokio::time::Instant;

use crate::runtime::RuntimeError;
use crate::status::PodStatus;

#[derive(Clone, Debug)]
struct Data {
    status: PodStatus,
    error: Option<RuntimeError>,
    modified: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    pods: HashMap<String, Data>,
    /// Global "all entries are at least this fresh" time; `None` until the first relist.
    timestamp: Option<Instant>,
}

/// Thread-safe pod status cache with blocking freshness reads.
#[derive(Debug)]
pub struct Cache {
    inner: Mutex<Inner>,
    changed: watch::Sender<()>,
}

impl Default for Cache {
    fn default() -> Self {
        Self::new()
    }
}

impl Cache {
    /// Empty cache.
    pub fn new() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            changed: watch::channel(()).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Latest status of the pod; an empty status when unknown (upstream `Get`).
    pub fn get(&self, uid: &str) -> Result<PodStatus, RuntimeError> {
        let inner = self.lock();
        match inner.pods.get(uid) {
            Some(Data { error: Some(e), .. }) => Err(e.clone()),
            Some(d) => Ok(d.status.clone()),
            None => Ok(empty(uid)),
        }
    }

    /// Stores the result of inspecting a pod at `modified` (upstream `Set`).
    /// Returns false (and keeps the old entry) when the stored entry is newer.
    pub fn set(
        &self,
        uid: &str,
        result: Result<PodStatus, RuntimeError>,
        modified: Instant,
    ) -> bool {
        let mut inner = self.lock();
        if inner.pods.get(uid).is_some_and(|d| d.modified > modified) {
            return false;
        }
        let (status, error) = match result {
            Ok(s) => (s, None),
            Err(e) => (empty(uid), Some(e)),
        };
        inner.pods.insert(
            uid.to_string(),
            Data {
                status,
                error,
                modified,
            },
        );
        drop(inner);
        self.changed.send_replace(());
        true
    }

    /// Forgets the pod (upstream `Delete`).
    pub fn delete(&self, uid: &str) {
        self.lock().pods.remove(uid);
        self.changed.send_replace(());
    }

    /// Declares every entry fresh as of `timestamp` (upstream `UpdateTime`);
    /// wakes waiting readers.
    pub fn update_time(&self, timestamp: Instant) {
        self.lock().timestamp = Some(timestamp);
        self.changed.send_replace(());
    }

    /// The status if it is newer than `min_time` (`None` = any time), without waiting.
    pub fn get_if_newer_than(
        &self,
        uid: &str,
        min_time: Option<Instant>,
    ) -> Option<Result<PodStatus, RuntimeError>> {
        let inner = self.lock();
        let after = |t: Instant| min_time.is_none_or(|m| t > m);
        let global_newer = inner.timestamp.is_some_and(after);
        match inner.pods.get(uid) {
            None if global_newer => Some(Ok(empty(uid))),
            Some(d) if after(d.modified) || global_newer => Some(match &d.error {
                Some(e) => Err(e.clone()),
                None => Ok(d.status.clone()),
            }),
            _ => None,
        }
    }

    /// Waits until the pod's status (or the global timestamp) is newer than
    /// `min_time`, then returns it (upstream `GetNewerThan`).
    pub async fn get_newer_than(
        &self,
        uid: &str,
        min_time: Option<Instant>,
    ) -> Result<PodStatus, RuntimeError> {
        let mut rx = self.changed.subscribe();
        loop {
            if let Some(result) = self.get_if_newer_than(uid, min_time) {
                return result;
            }
            // The sender lives in `self`, so `changed` cannot fail while we borrow it.
            let _ = rx.changed().await;
        }
    }

    /// UIDs with an entry.
    pub fn uids(&self) -> Vec<String> {
        self.lock().pods.keys().cloned().collect()
    }
}

fn empty(uid: &str) -> PodStatus {
    PodStatus {
        id: uid.to_string(),
        ..PodStatus::default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn status(uid: &str, name: &str) -> PodStatus {
        PodStatus {
            id: uid.into(),
            name: name.into(),
            ..PodStatus::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn get_returns_default_for_unknown_and_errors() {
        let cache = Cache::new();
        assert_eq!(cache.get("u").unwrap(), empty("u"));
        cache.set(
            "u",
            Err(RuntimeError::Unavailable("x".into())),
            Instant::now(),
        );
        assert!(cache.get("u").is_err());
        cache.delete("u");
        assert!(cache.get("u").is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn set_keeps_newer_entry() {
        let cache = Cache::new();
        let t0 = Instant::now();
        assert!(cache.set("u", Ok(status("u", "new")), t0 + Duration::from_secs(1)));
        assert!(!cache.set("u", Ok(status("u", "old")), t0));
        assert_eq!(cache.get("u").unwrap().name, "new");
    }

    #[tokio::test(start_paused = true)]
    async fn get_newer_than_waits_for_pod_entry_or_global_time() {
        let cache = Arc::new(Cache::new());
        let t0 = Instant::now();
        cache.set("u", Ok(status("u", "old")), t0);
        assert!(
            cache.get_if_newer_than("u", Some(t0)).is_none(),
            "strictly newer required"
        );
        assert!(
            cache.get_if_newer_than("u", None).is_some(),
            "no lower bound"
        );

        let reader = tokio::spawn({
            let cache = cache.clone();
            async move { cache.get_newer_than("u", Some(t0)).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!reader.is_finished());
        cache.set("u", Ok(status("u", "fresh")), Instant::now());
        assert_eq!(reader.await.unwrap().unwrap().name, "fresh");

        // Unknown pod: answered with an empty status once a relist is newer.
        let t1 = Instant::now();
        let reader = tokio::spawn({
            let cache = cache.clone();
            async move { cache.get_newer_than("other", Some(t1)).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!reader.is_finished());
        cache.update_time(Instant::now());
        assert_eq!(reader.await.unwrap().unwrap(), empty("other"));
    }
}
