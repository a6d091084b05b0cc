//! The ConfigMap and Secret managers (upstream `pkg/kubelet/configmap/configmap_manager.go`,
//! `pkg/kubelet/secret/secret_manager.go`, `pkg/kubelet/util/manager/manager.go` and
//! `cache_based_manager.go` `cacheBasedManager`), one generic type for both kinds, with
//! the store `configMapAndSecretChangeDetectionStrategy` selects.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;
use kubelet_volume::ObjectError;

use crate::api::{Object, ObjectClient};
use crate::cache::ObjectStore;
use crate::watch::ObjectCache;

/// `configMapAndSecretChangeDetectionStrategy` (upstream `ResourceChangeDetectionStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeDetectionStrategy {
    /// `Watch` (default): a watch per referenced object.
    Watch,
    /// `Cache`: a TTL cache.
    Cache,
    /// `Get`: every read GETs the object.
    Get,
}

/// A strategy kubelet-objects does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown configmap and secret manager mode: {0}")]
pub struct UnknownStrategy(pub String);

impl std::str::FromStr for ChangeDetectionStrategy {
    type Err = UnknownStrategy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "Watch" => Ok(Self::Watch),
            "Cache" => Ok(Self::Cache),
            "Get" => Ok(Self::Get),
            other => Err(UnknownStrategy(other.to_string())),
        }
    }
}

/// Where objects come from.
pub enum Backend<K> {
    /// `NewWatchingConfigMapManager` / `NewWatchingSecretManager`.
    Watch(Arc<ObjectCache<K>>),
    /// `NewCachingConfigMapManager` / `NewCachingSecretManager`.
    Cache(ObjectStore<K>),
    /// `NewSimpleConfigMapManager` / `NewSimpleSecretManager`.
    Get(Arc<dyn ObjectClient<K>>),
}

/// (namespace, name, uid) of a registered pod.
type PodKey = (String, String, String);

/// Upstream `configMapManager`/`secretManager` over `cacheBasedManager` (or the simple
/// managers for `Get`). Upstream's `registeredPods` keeps a pointer to each pod to compute
/// the names it referenced at the next registration; kubelet-rs keeps those names (a copy
/// of every pod per manager would be most of the kubelet's heap).
pub struct ObjectManager<K> {
    backend: Backend<K>,
    referenced: fn(&Pod) -> BTreeSet<String>,
    registered: Mutex<HashMap<PodKey, BTreeSet<String>>>,
}

fn pod_key(pod: &Pod) -> PodKey {
    let m = &pod.metadata;
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
        m.uid.clone().unwrap_or_default(),
    )
}

impl<K: Object> ObjectManager<K> {
    /// A manager over `backend`, registering the names `referenced` returns for a pod.
    pub fn new(backend: Backend<K>, referenced: fn(&Pod) -> BTreeSet<String>) -> Self {
        Self {
            backend,
            referenced,
            registered: Mutex::new(HashMap::new()),
        }
    }

    /// The backend (tests, and the watch cache's recycling task).
    pub fn backend(&self) -> &Backend<K> {
        &self.backend
    }

    fn add_reference(&self, namespace: &str, name: &str, uid: &str) {
        match &self.backend {
            Backend::Watch(c) => c.add_reference(namespace, name, uid),
            Backend::Cache(s) => s.add_reference(namespace, name),
            Backend::Get(_) => {}
        }
    }

    fn delete_reference(&self, namespace: &str, name: &str, uid: &str) {
        match &self.backend {
            Backend::Watch(c) => c.delete_reference(namespace, name, uid),
            Backend::Cache(s) => s.delete_reference(namespace, name),
            Backend::Get(_) => {}
        }
    }

    /// Upstream `GetConfigMap`/`GetSecret`.
    ///
    /// # Errors
    /// [`ObjectError::NotFound`] when it does not exist, else what the store says.
    pub async fn get(&self, namespace: &str, name: &str) -> Result<K, ObjectError> {
        match &self.backend {
            Backend::Watch(c) => c.get(namespace, name).await,
            Backend::Cache(s) => s.get(namespace, name).await,
            Backend::Get(client) => client.get(namespace, name, false).await.map_err(|e| {
                if e.is_not_found() {
                    ObjectError::NotFound {
                        kind: K::RESOURCE,
                        name: name.to_string(),
                    }
                } else {
                    ObjectError::Other(e.to_string())
                }
            }),
        }
    }

    /// Upstream `RegisterPod`: references the pod's objects; on an update, only the
    /// difference to the registered version. Idempotent; never blocks on the network.
    pub fn register_pod(&self, pod: &Pod) {
        if matches!(self.backend, Backend::Get(_)) {
            return;
        }
        let names = (self.referenced)(pod);
        let key = pod_key(pod);
        let (namespace, _, uid) = &key;
        let mut registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match registered.get(&key) {
            // Only the first registration references everything (fewer API calls).
            None => names
                .iter()
                .for_each(|n| self.add_reference(namespace, n, uid)),
            Some(prev_names) => {
                for n in names.difference(prev_names) {
                    self.add_reference(namespace, n, uid);
                }
                for n in prev_names.difference(&names) {
                    self.delete_reference(namespace, n, uid);
                }
            }
        }
        registered.insert(key, names);
    }

    /// Upstream `UnregisterPod`: drops the pod's references; objects no registered pod
    /// refers to stop being watched or cached. Idempotent.
    pub fn unregister_pod(&self, pod: &Pod) {
        if matches!(self.backend, Backend::Get(_)) {
            return;
        }
        let key = pod_key(pod);
        let prev = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        if let Some(prev_names) = prev {
            let (namespace, _, uid) = &key;
            for n in prev_names {
                self.delete_reference(namespace, &n, uid);
            }
        }
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
