//! Last start failure per container (upstream `pkg/kubelet/reason_cache.go`).
//!
//! After each `SyncPod`, failed `StartContainer` results are remembered (and
//! successful ones forgotten); status generation reports them as the
//! container's waiting reason (`CrashLoopBackOff`, `ErrImagePull`, ...).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use kubelet_container::{PodSyncResult, SyncAction, SyncErrorKind};

/// Default capacity (upstream `maxReasonCacheEntries`).
pub const MAX_REASON_CACHE_ENTRIES: usize = 1000;

/// A remembered start failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReasonItem {
    /// The error (its reason string is the waiting reason).
    pub err: SyncErrorKind,
    /// Detail shown as the waiting message.
    pub message: String,
}

#[derive(Debug, Default)]
struct Inner {
    items: HashMap<String, ReasonItem>,
    order: VecDeque<String>,
}

/// Bounded map `(pod UID, container name) → last start failure`; the oldest
/// entry is dropped when full.
#[derive(Debug)]
pub struct ReasonCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

impl Default for ReasonCache {
    fn default() -> Self {
        Self::new(MAX_REASON_CACHE_ENTRIES)
    }
}

fn key(uid: &str, name: &str) -> String {
    format!("{uid}_{name}")
}

impl ReasonCache {
    /// Cache holding at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the `StartContainer` outcomes of a sync (upstream `Update`).
    pub fn update(&self, uid: &str, result: &PodSyncResult) {
        for r in result
            .sync_results
            .iter()
            .filter(|r| r.action == SyncAction::StartContainer)
        {
            match r.error {
                Some(err) => self.add(
                    uid,
                    &r.target,
                    ReasonItem {
                        err,
                        message: r.message.clone(),
                    },
                ),
                None => self.remove(uid, &r.target),
            }
        }
    }

    /// Remembers a failure.
    pub fn add(&self, uid: &str, name: &str, item: ReasonItem) {
        let k = key(uid, name);
        let mut inner = self.lock();
        inner.order.retain(|o| o != &k);
        inner.order.push_back(k.clone());
        inner.items.insert(k, item);
        while inner.items.len() > self.capacity {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            inner.items.remove(&oldest);
        }
    }

    /// Forgets a container's failure.
    pub fn remove(&self, uid: &str, name: &str) {
        let k = key(uid, name);
        let mut inner = self.lock();
        inner.items.remove(&k);
        inner.order.retain(|o| o != &k);
    }

    /// The last failure of the container, if any.
    pub fn get(&self, uid: &str, name: &str) -> Option<ReasonItem> {
        self.lock().items.get(&key(uid, name)).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubelet_container::SyncResult;

    #[test]
    fn update_adds_failures_and_clears_successes() {
        let cache = ReasonCache::default();
        let mut failed = SyncResult::new(SyncAction::StartContainer, "app");
        failed.fail(SyncErrorKind::ImagePull, "pull failed");
        let mut result = PodSyncResult::default();
        result.add_sync_result(failed);
        result.add_sync_result(SyncResult::new(SyncAction::KillContainer, "other"));
        cache.update("u", &result);
        assert_eq!(
            cache.get("u", "app"),
            Some(ReasonItem {
                err: SyncErrorKind::ImagePull,
                message: "pull failed".into()
            })
        );

        let mut ok = PodSyncResult::default();
        ok.add_sync_result(SyncResult::new(SyncAction::StartContainer, "app"));
        cache.update("u", &ok);
        assert_eq!(cache.get("u", "app"), None);
    }

    #[test]
    fn evicts_oldest_when_full() {
        let cache = ReasonCache::new(2);
        let item = ReasonItem {
            err: SyncErrorKind::CrashLoopBackOff,
            message: String::new(),
        };
        for name in ["a", "b", "c"] {
            cache.add("u", name, item.clone());
        }
        assert!(cache.get("u", "a").is_none());
        assert!(cache.get("u", "c").is_some());
    }
}
