//! `PodConfig` (`pkg/kubelet/config/config.go` and `mux.go`): merges the pod sources into
//! one ordered stream of incremental [`PodUpdate`]s (upstream's
//! `PodConfigNotificationIncremental` mode, the only one the kubelet uses).

mod storage;

pub use storage::PodStorage;

use crate::clock::{Clock, RealClock, rfc3339_nano};
use crate::types::{FILE_SOURCE, HTTP_SOURCE, PodUpdate, SourceUpdate};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Capacity of the update channel, as upstream (`make(chan kubetypes.PodUpdate, 50)`).
pub const UPDATES_CHANNEL_CAPACITY: usize = 50;
/// Capacity of each source's snapshot channel.
pub const SOURCE_CHANNEL_CAPACITY: usize = 8;

/// Merges pod sources; cheap to clone (all clones share the same state).
#[derive(Clone)]
pub struct PodConfig {
    node_name: String,
    inner: Arc<Inner>,
}

struct Inner {
    /// Held while merging *and* sending, so updates leave in strict order (`updateLock`).
    storage: tokio::sync::Mutex<PodStorage>,
    /// A copy of the sources that delivered a snapshot, readable without awaiting.
    sources_seen: Mutex<HashSet<String>>,
    /// Registered sources and their snapshot channels.
    sources: Mutex<BTreeMap<String, mpsc::Sender<SourceUpdate>>>,
    updates: mpsc::Sender<PodUpdate>,
    clock: Arc<dyn Clock>,
}

impl PodConfig {
    /// A new merger for `node_name` and the receiving end of its update stream.
    pub fn new(node_name: impl Into<String>) -> (PodConfig, mpsc::Receiver<PodUpdate>) {
        Self::with_clock(node_name, Arc::new(RealClock))
    }

    /// Like [`PodConfig::new`] with an injected clock (for `kubernetes.io/config.seen`).
    pub fn with_clock(
        node_name: impl Into<String>,
        clock: Arc<dyn Clock>,
    ) -> (PodConfig, mpsc::Receiver<PodUpdate>) {
        let (tx, rx) = mpsc::channel(UPDATES_CHANNEL_CAPACITY);
        let inner = Inner {
            storage: tokio::sync::Mutex::new(PodStorage::default()),
            sources_seen: Mutex::new(HashSet::new()),
            sources: Mutex::new(BTreeMap::new()),
            updates: tx,
            clock,
        };
        let config = PodConfig {
            node_name: node_name.into(),
            inner: Arc::new(inner),
        };
        (config, rx)
    }

    /// The node name static pods are bound to.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Registers `source` and returns the channel it sends snapshots on (upstream
    /// `Channel`). Asking twice for the same source returns the same channel. A task merges
    /// what arrives until `cancel` fires or every sender is dropped; it must be called from
    /// within a tokio runtime.
    pub fn channel(&self, source: &str, cancel: CancellationToken) -> mpsc::Sender<SourceUpdate> {
        let Ok(mut sources) = self.inner.sources.lock() else {
            // A poisoned lock means a panic elsewhere; hand out a channel nobody reads.
            return mpsc::channel(1).0;
        };
        if let Some(tx) = sources.get(source) {
            return tx.clone();
        }
        let (tx, mut rx) = mpsc::channel::<SourceUpdate>(SOURCE_CHANNEL_CAPACITY);
        sources.insert(source.to_string(), tx.clone());
        let this = self.clone();
        let source = source.to_string();
        tokio::spawn(async move {
            loop {
                let update = tokio::select! {
                    _ = cancel.cancelled() => return,
                    update = rx.recv() => update,
                };
                let Some(update) = update else { return };
                this.merge(&source, update).await;
            }
        });
        tx
    }

    /// Merges one snapshot from `source` and delivers the resulting updates in order.
    /// Returns once they are all queued on the update channel (or the receiver is gone).
    pub async fn merge(&self, source: &str, update: SourceUpdate) {
        let mut storage = self.inner.storage.lock().await;
        let stamp = rfc3339_nano(self.inner.clock.now());
        let updates = storage.merge(source, update, &stamp);
        if let Ok(mut seen) = self.inner.sources_seen.lock() {
            seen.insert(source.to_string());
        }
        for u in updates {
            tracing::debug!(op = %u.op, source = %u.source, pods = u.pods.len(), "Pod update");
            if self.inner.updates.send(u).await.is_err() {
                tracing::debug!(source, "Pod update receiver dropped");
                return;
            }
        }
    }

    /// Registers the `file` source and starts watching `path` (`staticPodPath`), re-scanning
    /// every `period` (`fileCheckFrequency`).
    pub fn start_file_source(
        &self,
        path: impl Into<PathBuf>,
        period: Duration,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        let tx = self.channel(FILE_SOURCE, cancel.clone());
        crate::file::start_file_source(path, period, self.node_name.clone(), tx, cancel)
    }

    /// Registers the `http` source and polls `url` (`staticPodURL`) with `headers`
    /// (`staticPodURLHeader`, one pair per value) every `period` (`httpCheckFrequency`).
    pub fn start_http_source(
        &self,
        url: impl Into<String>,
        headers: Vec<(String, String)>,
        period: Duration,
        cancel: CancellationToken,
    ) -> JoinHandle<()> {
        let tx = self.channel(HTTP_SOURCE, cancel.clone());
        crate::http::start_http_source(url, headers, period, self.node_name.clone(), tx, cancel)
    }

    /// Upstream `SeenAllSources`: every registered source is in `seen_sources` (the
    /// sources the kubelet has received updates from) and has delivered a snapshot.
    pub fn seen_all_sources(&self, seen_sources: &HashSet<String>) -> bool {
        let registered = self.registered_sources();
        let Ok(merged) = self.inner.sources_seen.lock() else {
            return false;
        };
        registered
            .iter()
            .all(|s| seen_sources.contains(s) && merged.contains(s))
    }

    /// The names of the registered sources.
    pub fn registered_sources(&self) -> BTreeSet<String> {
        self.inner
            .sources
            .lock()
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
