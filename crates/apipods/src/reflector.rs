//! client-go's `Reflector` (`tools/cache/reflector.go`) in its list+watch mode: list, hand
//! the items to the store (`Replace`), then watch from the list's resource version, apply
//! every event to the store and remember its resource version; a watch that ends is
//! restarted from the last resource version; a watch that fails with `410 Gone`/`Expired`
//! makes the reflector relist (first from the last resource version, then, if that is
//! gone too, a consistent list with `resourceVersion=""`). Every failed round waits out
//! the reflector's back-off ([`crate::backoff`]) and starts again, until cancelled: an
//! unreachable API server is never fatal.
//!
//! Not done: client-go 1.35's streaming list (`WatchListClient`, `sendInitialEvents`); the
//! reflector always lists (the fallback upstream uses when the server does not stream), and
//! it lists in one page (a node's pods, or its own Node, are few).

use std::fmt::Debug;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::backoff::ExponentialBackoff;
use crate::error::ApiError;

/// Minimum server-side timeout of a watch (upstream `defaultMinWatchTimeout`); each watch
/// asks for a random timeout between this and twice this.
pub const MIN_WATCH_TIMEOUT_SECS: u32 = 300;

/// One page of a list: the items and the list's resource version.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList<K> {
    /// The items.
    pub items: Vec<K>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
}

/// A watch event (upstream `watch.Event`).
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// An object was added.
    Added(K),
    /// An object changed.
    Modified(K),
    /// An object was deleted (its last state).
    Deleted(K),
    /// Progress: nothing changed up to this resource version.
    Bookmark(String),
    /// The server ended the watch with an error (`410 Expired` when the resource version
    /// is too old).
    Error(ApiError),
}

/// Lists and watches one kind of object with fixed selectors (upstream `ListerWatcher`).
#[async_trait]
pub trait ListerWatcher<K>: Send + Sync {
    /// Lists at `resource_version` (`"0"`: any, served from the watch cache; `""`: a
    /// consistent read; else: not older than it).
    async fn list(&self, resource_version: &str) -> Result<ObjectList<K>, ApiError>;

    /// Watches from `resource_version` with bookmarks, ending after `timeout_secs`.
    async fn watch(
        &self,
        resource_version: &str,
        timeout_secs: u32,
    ) -> Result<BoxStream<'static, Result<WatchEvent<K>, ApiError>>, ApiError>;
}

/// What a reflector fills (the part of upstream `cache.Store` a reflector calls).
#[async_trait]
pub trait Store<K>: Send {
    /// The whole content, after a list.
    async fn replace(&mut self, items: Vec<K>);
    /// An object was added or changed.
    async fn upsert(&mut self, item: K);
    /// An object was deleted.
    async fn delete(&mut self, item: K);
}

/// The resource version of an object.
pub trait Versioned {
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
}

impl<K: kube::Resource> Versioned for K {
    fn resource_version(&self) -> Option<&str> {
        self.meta().resource_version.as_deref()
    }
}

/// Lists and watches into a store until cancelled (upstream `Reflector`).
pub struct Reflector<K, L, S> {
    name: &'static str,
    lw: L,
    store: S,
    last_sync_resource_version: String,
    is_last_sync_resource_version_unavailable: bool,
    backoff: ExponentialBackoff,
    min_watch_timeout_secs: u32,
    transform: Option<fn(&mut K)>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

/// A transform (client-go `TransformFunc`) that drops `metadata.managedFields`, as the
/// informers of kube-scheduler (`scheduler.go`) and kube-controller-manager
/// (`controllermanager.go`) do "to improve memory usage": the kubelet never reads them,
/// and with `serde_json::Value` trees they were most of each cached pod's heap (about
/// 70 % of a plain pod's). The upstream kubelet keeps them, so its `/pods` shows them and
/// kubelet-rs's does not (a deliberate difference, `ARCHITECTURE.md`).
pub fn strip_managed_fields<K: kube::Resource>(obj: &mut K) {
    obj.meta_mut().managed_fields = None;
}

/// How one list+watch round ended.
enum RoundEnd {
    /// Cancelled: stop.
    Stopped,
    /// The watch expired or failed: relist after a back-off.
    Relist,
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Versioned + Send + 'static,
    L: ListerWatcher<K>,
    S: Store<K>,
{
    /// A reflector named `name` (for logs) filling `store` from `lw`.
    pub fn new(name: &'static str, lw: L, store: S) -> Self {
        Self {
            name,
            lw,
            store,
            last_sync_resource_version: String::new(),
            is_last_sync_resource_version_unavailable: false,
            backoff: ExponentialBackoff::default(),
            min_watch_timeout_secs: MIN_WATCH_TIMEOUT_SECS,
            transform: None,
            _kind: std::marker::PhantomData,
        }
    }

    /// Applies `transform` to every listed or watched object before the store sees it
    /// (client-go `SharedIndexInformer.SetTransform`), e.g. [`strip_managed_fields`].
    #[must_use]
    pub fn with_transform(mut self, transform: fn(&mut K)) -> Self {
        self.transform = Some(transform);
        self
    }

    fn transformed(&self, mut obj: K) -> K {
        if let Some(t) = self.transform {
            t(&mut obj);
        }
        obj
    }

    /// Watches last between `secs` and twice that (upstream `ReflectorOptions.MinWatchTimeout`;
    /// [`MIN_WATCH_TIMEOUT_SECS`] by default).
    #[must_use]
    pub fn with_min_watch_timeout(mut self, secs: u32) -> Self {
        self.min_watch_timeout_secs = secs;
        self
    }

    /// The resource version of the last list or event (upstream `LastSyncResourceVersion`).
    pub fn last_sync_resource_version(&self) -> &str {
        &self.last_sync_resource_version
    }

    /// Runs list+watch rounds, with the back-off between them, until `cancel` fires
    /// (upstream `RunWithContext`: `wait.BackoffUntil(ListAndWatch)`).
    pub async fn run(mut self, cancel: CancellationToken) {
        tracing::debug!(reflector = self.name, "Starting reflector");
        loop {
            match self.list_and_watch(&cancel).await {
                Ok(RoundEnd::Stopped) => break,
                Ok(RoundEnd::Relist) => {}
                Err(e) => {
                    tracing::error!(reflector = self.name, err = %e, "Failed to watch");
                }
            }
            let delay = self.backoff.next_delay();
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        tracing::debug!(reflector = self.name, "Stopping reflector");
    }

    /// Upstream `relistResourceVersion`.
    fn relist_resource_version(&self) -> &str {
        if self.is_last_sync_resource_version_unavailable {
            ""
        } else if self.last_sync_resource_version.is_empty() {
            "0"
        } else {
            &self.last_sync_resource_version
        }
    }

    /// Upstream `list`: a list whose resource version is gone is repeated as a consistent
    /// read.
    async fn list(&mut self) -> Result<(), ApiError> {
        let list = match self.lw.list(self.relist_resource_version()).await {
            Err(e) if e.is_expired() => {
                self.is_last_sync_resource_version_unavailable = true;
                tracing::info!(reflector = self.name, err = %e, "Resource version expired, listing again from the latest one");
                self.lw.list(self.relist_resource_version()).await
            }
            other => other,
        }?;
        self.is_last_sync_resource_version_unavailable = false;
        let items = list
            .items
            .into_iter()
            .map(|o| self.transformed(o))
            .collect();
        self.store.replace(items).await;
        self.last_sync_resource_version = list.resource_version;
        tracing::debug!(reflector = self.name, resource_version = %self.last_sync_resource_version, "Caches populated");
        Ok(())
    }

    /// One list, then watches until one fails (upstream `ListAndWatchWithContext`).
    async fn list_and_watch(&mut self, cancel: &CancellationToken) -> Result<RoundEnd, ApiError> {
        tokio::select! {
            () = cancel.cancelled() => return Ok(RoundEnd::Stopped),
            r = self.list() => r?,
        }
        loop {
            let timeout = watch_timeout(self.min_watch_timeout_secs);
            let watched = tokio::select! {
                () = cancel.cancelled() => return Ok(RoundEnd::Stopped),
                w = self.lw.watch(&self.last_sync_resource_version, timeout) => w,
            };
            let stream = match watched {
                Ok(s) => s,
                Err(e) if e.is_watch_retriable() => {
                    // The server is away: watch again from the same version later, no relist.
                    tracing::debug!(reflector = self.name, err = %e, "Watch failed - backing off");
                    let delay = self.backoff.next_delay();
                    tokio::select! {
                        () = cancel.cancelled() => return Ok(RoundEnd::Stopped),
                        () = tokio::time::sleep(delay) => continue,
                    }
                }
                Err(e) => return Err(e),
            };
            match self.handle_watch(stream, cancel).await {
                Ok(true) => return Ok(RoundEnd::Stopped),
                Ok(false) => {}
                Err(e) if e.is_expired() => {
                    tracing::debug!(reflector = self.name, err = %e, "Watch closed");
                    return Ok(RoundEnd::Relist);
                }
                Err(e) if e.is_too_many_requests() => {
                    tracing::debug!(reflector = self.name, "Watch returned 429 - backing off");
                    let delay = self.backoff.next_delay();
                    tokio::select! {
                        () = cancel.cancelled() => return Ok(RoundEnd::Stopped),
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                Err(e) => {
                    tracing::info!(reflector = self.name, err = %e, "Warning: watch ended with error");
                    return Ok(RoundEnd::Relist);
                }
            }
        }
    }

    /// Applies the events of one watch (upstream `handleAnyWatch`); `Ok(true)` when
    /// cancelled, `Ok(false)` when the watch ended normally.
    async fn handle_watch(
        &mut self,
        mut stream: BoxStream<'static, Result<WatchEvent<K>, ApiError>>,
        cancel: &CancellationToken,
    ) -> Result<bool, ApiError> {
        let start = tokio::time::Instant::now();
        let mut events = 0usize;
        loop {
            let next = tokio::select! {
                () = cancel.cancelled() => return Ok(true),
                n = stream.next() => n,
            };
            let Some(event) = next else { break };
            let (version, change) = match event? {
                WatchEvent::Error(e) => return Err(e),
                WatchEvent::Bookmark(rv) => (Some(rv), None),
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    (o.resource_version().map(str::to_string), Some((true, o)))
                }
                WatchEvent::Deleted(o) => {
                    (o.resource_version().map(str::to_string), Some((false, o)))
                }
            };
            match change {
                Some((true, o)) => {
                    let o = self.transformed(o);
                    self.store.upsert(o).await;
                }
                Some((false, o)) => {
                    let o = self.transformed(o);
                    self.store.delete(o).await;
                }
                None => {}
            }
            if let Some(rv) = version {
                self.last_sync_resource_version = rv;
            }
            events += 1;
        }
        if events == 0 && start.elapsed() < std::time::Duration::from_secs(1) {
            return Err(ApiError::Transport(format!(
                "very short watch: {}: Unexpected watch close - watch lasted less than a second and no items received",
                self.name
            )));
        }
        Ok(false)
    }
}

/// A random watch timeout in `[min, 2 × min)`.
fn watch_timeout(min: u32) -> u32 {
    let d =
        kubelet_podworkers::work_queue::jitter(std::time::Duration::from_secs(u64::from(min)), 1.0);
    u32::try_from(d.as_secs()).unwrap_or(min)
}

#[cfg(test)]
#[path = "reflector_tests.rs"]
mod tests;
