//! The watch-based object store (upstream `pkg/kubelet/util/manager/watch_based_manager.go`
//! `objectCache`): one reflector per referenced object — a list+watch of its namespace with
//! `fieldSelector=metadata.name=<name>` — started by the first reference and stopped when
//! the last pod referencing it is unregistered. `get` waits (up to 1 s, as upstream's
//! `PollImmediate(10ms, 1s)`) until the reflector has listed, then answers from its copy.
//! An immutable object stops being watched; a reflector nobody read for `max_idle_time` is
//! stopped and restarted by the next `get`.
//!
//! Each watch lasts 30–60 min (upstream's `MinWatchTimeout: 30 * time.Minute`, so that
//! thousands of per-object watches are not recreated every few minutes). Not done: the
//! streaming list (`WatchListClient`), as for every reflector of kubelet-rs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use kubelet_apipods::reflector::{Reflector, Store};
use kubelet_container::clock::Clock;
use tokio_util::sync::CancellationToken;

use crate::api::{Object, ObjectClient};
use kubelet_volume::ObjectError;

/// Upstream `minIdleTime`.
pub const MIN_IDLE_TIME: Duration = Duration::from_secs(60);
/// How long `get` waits for a reflector's first list (upstream `PollImmediate(.., time.Second, ..)`).
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(1);
/// How often idle reflectors are looked for (upstream `wait.Until(.., time.Minute, ..)`).
pub const RECYCLE_PERIOD: Duration = Duration::from_secs(60);
/// The reflectors' `MinWatchTimeout` (upstream `newReflectorLocked`: 30 min).
pub const MIN_WATCH_TIMEOUT_SECS: u32 = 30 * 60;

/// What a reflector fills and `get` reads (upstream `objectCacheItem` + `cacheStore`).
struct ItemState<K> {
    object: Option<K>,
    /// The reflector has listed since it was (re)started (upstream `cacheStore.initialized`).
    initialized: bool,
    stopped: bool,
    immutable: bool,
    last_access: Timestamp,
    cancel: CancellationToken,
    /// Bumped on every (re)start: writes of a stopped reflector are dropped (upstream
    /// waits for the previous `reflector.Run` instead).
    generation: u64,
}

struct Item<K> {
    state: Mutex<ItemState<K>>,
    synced: tokio::sync::watch::Sender<bool>,
}

impl<K> Item<K> {
    fn lock(&self) -> MutexGuard<'_, ItemState<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Upstream `stopThreadUnsafe`; false when already stopped.
    fn stop_locked(&self, s: &mut ItemState<K>) -> bool {
        if s.stopped {
            return false;
        }
        s.stopped = true;
        s.cancel.cancel();
        if !s.immutable {
            s.initialized = false;
            self.synced.send_replace(false);
        }
        true
    }

    fn stop(&self) -> bool {
        let mut s = self.lock();
        self.stop_locked(&mut s)
    }
}

/// The reflector's store for one item.
struct ItemStore<K> {
    item: Arc<Item<K>>,
    generation: u64,
}

impl<K> ItemStore<K> {
    fn update(&self, f: impl FnOnce(&mut ItemState<K>)) {
        let mut s = self.item.lock();
        if s.generation == self.generation {
            f(&mut s);
        }
    }
}

#[async_trait]
impl<K: Send + 'static> Store<K> for ItemStore<K> {
    async fn replace(&mut self, items: Vec<K>) {
        self.update(|s| {
            // The field selector leaves at most the one object.
            s.object = items.into_iter().next();
            s.initialized = true;
            // Under the item's lock, so a concurrent stop cannot be overtaken.
            self.item.synced.send_replace(true);
        });
    }
    async fn upsert(&mut self, item: K) {
        self.update(|s| s.object = Some(item));
    }
    async fn delete(&mut self, _: K) {
        self.update(|s| s.object = None);
    }
}

struct Entry<K> {
    /// References per pod UID (upstream `refMap`).
    refs: HashMap<String, usize>,
    item: Arc<Item<K>>,
}

struct Items<K> {
    items: HashMap<(String, String), Entry<K>>,
    stopped: bool,
}

/// Upstream `objectCache`.
pub struct ObjectCache<K> {
    client: Arc<dyn ObjectClient<K>>,
    clock: Arc<dyn Clock>,
    max_idle_time: Duration,
    runtime: tokio::runtime::Handle,
    items: Mutex<Items<K>>,
}

impl<K: Object> ObjectCache<K> {
    /// A cache reading through `client`; reflectors run on the current tokio runtime.
    /// `max_idle_time` is raised to [`MIN_IDLE_TIME`].
    ///
    /// # Errors
    /// Outside a tokio runtime.
    pub fn new(
        client: Arc<dyn ObjectClient<K>>,
        clock: Arc<dyn Clock>,
        max_idle_time: Duration,
    ) -> Result<Self, tokio::runtime::TryCurrentError> {
        Ok(Self {
            client,
            clock,
            max_idle_time: max_idle_time.max(MIN_IDLE_TIME),
            runtime: tokio::runtime::Handle::try_current()?,
            items: Mutex::new(Items {
                items: HashMap::new(),
                stopped: false,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Items<K>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the reflector of `item` with a fresh generation (upstream `startReflector`).
    fn start_reflector(
        &self,
        namespace: &str,
        name: &str,
        item: &Arc<Item<K>>,
        s: &mut ItemState<K>,
    ) {
        s.generation += 1;
        s.stopped = false;
        s.cancel = CancellationToken::new();
        let reflector = Reflector::new(
            K::GROUP_RESOURCE,
            self.client.lister_watcher(namespace, name),
            ItemStore {
                item: item.clone(),
                generation: s.generation,
            },
        )
        .with_min_watch_timeout(MIN_WATCH_TIMEOUT_SECS);
        self.runtime.spawn(reflector.run(s.cancel.clone()));
    }

    /// Upstream `AddReference`: the first reference starts the object's reflector.
    pub fn add_reference(&self, namespace: &str, name: &str, referenced_from: &str) {
        let mut items = self.lock();
        let stopped = items.stopped;
        let entry = items
            .items
            .entry((namespace.to_string(), name.to_string()))
            .or_insert_with(|| {
                let item = Arc::new(Item {
                    state: Mutex::new(ItemState {
                        object: None,
                        initialized: false,
                        stopped: true,
                        immutable: false,
                        last_access: Timestamp::UNIX_EPOCH,
                        cancel: CancellationToken::new(),
                        generation: 0,
                    }),
                    synced: tokio::sync::watch::Sender::new(false),
                });
                // Not started while the kubelet shuts down.
                if !stopped {
                    let mut s = item.lock();
                    self.start_reflector(namespace, name, &item, &mut s);
                }
                Entry {
                    refs: HashMap::new(),
                    item,
                }
            });
        *entry.refs.entry(referenced_from.to_string()).or_default() += 1;
    }

    /// Upstream `DeleteReference`: the last reference stops the reflector and forgets the
    /// object.
    pub fn delete_reference(&self, namespace: &str, name: &str, referenced_from: &str) {
        let key = (namespace.to_string(), name.to_string());
        let mut items = self.lock();
        let Some(entry) = items.items.get_mut(&key) else {
            return;
        };
        if let Some(n) = entry.refs.get_mut(referenced_from) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                entry.refs.remove(referenced_from);
            }
        }
        if entry.refs.is_empty() {
            entry.item.stop();
            items.items.remove(&key);
        }
    }

    /// How many objects are watched or cached (registered), for tests and metrics.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// No object is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Upstream `Get`.
    ///
    /// # Errors
    /// Not registered, not synced within [`SYNC_TIMEOUT`], or [`ObjectError::NotFound`].
    pub async fn get(&self, namespace: &str, name: &str) -> Result<K, ObjectError> {
        let (item, stopped) = {
            let items = self.lock();
            let item = items
                .items
                .get(&(namespace.to_string(), name.to_string()))
                .map(|e| e.item.clone());
            (item, items.stopped)
        };
        let Some(item) = item else {
            return Err(ObjectError::Other(format!(
                "object {namespace:?}/{name:?} not registered"
            )));
        };
        {
            let mut s = item.lock();
            // Recorded whether the read succeeds or not: protects from a racy idle stop.
            s.last_access = self.clock.now();
            // Upstream `restartReflectorIfNeeded`, not while shutting down.
            if !stopped && !s.immutable && s.stopped {
                self.start_reflector(namespace, name, &item, &mut s);
            }
        }
        let mut synced = item.synced.subscribe();
        if tokio::time::timeout(SYNC_TIMEOUT, synced.wait_for(|s| *s))
            .await
            .is_err()
        {
            return Err(ObjectError::Other(format!(
                "failed to sync {} cache: timed out waiting for the condition",
                K::GROUP_RESOURCE
            )));
        }
        let mut s = item.lock();
        let Some(object) = s.object.clone() else {
            return Err(ObjectError::NotFound {
                kind: K::GROUP_RESOURCE,
                name: name.to_string(),
            });
        };
        if object.is_immutable() {
            s.immutable = true;
            if item.stop_locked(&mut s) {
                tracing::debug!(
                    namespace,
                    name,
                    "Stopped watching for changes - object is immutable"
                );
            }
        }
        Ok(object)
    }

    /// Upstream `startRecycleIdleWatch`: stops the reflectors nobody read for
    /// `max_idle_time` (only synced ones, so a slow first list is not thrown away).
    pub fn recycle_idle_watches(&self) {
        let now = self.clock.now();
        let max_idle =
            jiff::SignedDuration::try_from(self.max_idle_time).unwrap_or(jiff::SignedDuration::MAX);
        let items = self.lock();
        for ((namespace, name), entry) in &items.items {
            let mut s = entry.item.lock();
            let idle_since = s
                .last_access
                .saturating_add(max_idle)
                .unwrap_or(s.last_access);
            if !s.stopped && s.initialized && now > idle_since && entry.item.stop_locked(&mut s) {
                tracing::debug!(%namespace, %name, max_idle_time = ?self.max_idle_time, "Not acquired for long time, Stopped watching for changes");
            }
        }
    }

    /// Recycles idle watches every minute; on `cancel` stops every reflector (upstream
    /// `shutdownWhenStopped`).
    pub async fn run(&self, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(RECYCLE_PERIOD);
        tick.tick().await;
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                _ = tick.tick() => self.recycle_idle_watches(),
            }
        }
        let mut items = self.lock();
        items.stopped = true;
        for entry in items.items.values() {
            entry.item.stop();
        }
    }
}

#[cfg(test)]
#[path = "watch_tests.rs"]
pub(crate) mod tests;
