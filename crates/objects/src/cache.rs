//! The TTL-based object store (upstream `pkg/kubelet/util/manager/cache_based_manager.go`
//! `objectStore`): `get` answers from the cached copy while it is younger than the TTL —
//! the Node's `node.alpha.kubernetes.io/ttl` annotation (seconds) when set, else one
//! minute — and otherwise GETs the object again (from the API server's cache when a copy
//! is held). Registering a pod invalidates its objects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use kubelet_container::clock::Clock;
use kubelet_volume::ObjectError;

use crate::api::{Object, ObjectClient};

/// Upstream `defaultTTL` of the caching managers.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Upstream `v1.ObjectTTLAnnotationKey`.
pub const OBJECT_TTL_ANNOTATION_KEY: &str = "node.alpha.kubernetes.io/ttl";

/// The TTL the Node asks for, if any (upstream `GetObjectTTLFunc`).
pub type GetObjectTtl = Arc<dyn Fn() -> Option<Duration> + Send + Sync>;

/// Upstream `GetObjectTTLFromNodeFunc`: the annotation's value as whole seconds, when the
/// node is known and the value parses as an integer.
pub fn object_ttl_from_node(node: Option<&k8s_openapi::api::core::v1::Node>) -> Option<Duration> {
    let value = node?
        .metadata
        .annotations
        .as_ref()?
        .get(OBJECT_TTL_ANNOTATION_KEY)?;
    // Go's `time.Duration(intValue) * time.Second`: a negative TTL makes every copy stale.
    let secs: i64 = value.parse().ok()?;
    Some(Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
}

/// Upstream `objectData`: the last answer and when it was fetched.
struct Data<K> {
    object: Option<K>,
    /// The last fetch said `NotFound` (upstream stores only that error).
    not_found: bool,
    last_update: Option<Timestamp>,
}

impl<K> Data<K> {
    fn empty() -> Arc<tokio::sync::Mutex<Self>> {
        Arc::new(tokio::sync::Mutex::new(Self {
            object: None,
            not_found: false,
            last_update: None,
        }))
    }
}

struct StoreItem<K> {
    ref_count: usize,
    data: Arc<tokio::sync::Mutex<Data<K>>>,
}

/// Upstream `objectStore`.
pub struct ObjectStore<K> {
    client: Arc<dyn ObjectClient<K>>,
    clock: Arc<dyn Clock>,
    get_ttl: GetObjectTtl,
    default_ttl: Duration,
    items: Mutex<HashMap<(String, String), StoreItem<K>>>,
}

fn resource_version<K: kube::Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl<K: Object> ObjectStore<K> {
    /// A store reading through `client` with `get_ttl` (or `default_ttl`).
    pub fn new(
        client: Arc<dyn ObjectClient<K>>,
        clock: Arc<dyn Clock>,
        get_ttl: GetObjectTtl,
        default_ttl: Duration,
    ) -> Self {
        Self {
            client,
            clock,
            get_ttl,
            default_ttl,
            items: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), StoreItem<K>>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Upstream `AddReference`: counts the reference and invalidates the cached copy.
    pub fn add_reference(&self, namespace: &str, name: &str) {
        let mut items = self.lock();
        let item = items
            .entry((namespace.to_string(), name.to_string()))
            .or_insert_with(|| StoreItem {
                ref_count: 0,
                data: Data::empty(),
            });
        item.ref_count += 1;
        item.data = Data::empty();
    }

    /// Upstream `DeleteReference`.
    pub fn delete_reference(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let mut items = self.lock();
        if let Some(item) = items.get_mut(&key) {
            item.ref_count = item.ref_count.saturating_sub(1);
            if item.ref_count == 0 {
                items.remove(&key);
            }
        }
    }

    /// How many objects are registered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// No object is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn is_fresh(&self, last_update: Option<Timestamp>) -> bool {
        let ttl = (self.get_ttl)().unwrap_or(self.default_ttl);
        let ttl = jiff::SignedDuration::try_from(ttl).unwrap_or(jiff::SignedDuration::MAX);
        last_update.is_some_and(|t| self.clock.now() < t.saturating_add(ttl).unwrap_or(t))
    }

    /// Upstream `Get`.
    ///
    /// # Errors
    /// Not registered, the API server's error when nothing is cached, or
    /// [`ObjectError::NotFound`].
    pub async fn get(&self, namespace: &str, name: &str) -> Result<K, ObjectError> {
        let data = self
            .lock()
            .get(&(namespace.to_string(), name.to_string()))
            .map(|i| i.data.clone());
        let Some(data) = data else {
            return Err(ObjectError::Other(format!(
                "object {namespace:?}/{name:?} not registered"
            )));
        };
        let mut data = data.lock().await;
        if data.not_found || !self.is_fresh(data.last_update) {
            // A periodic refresh of a copy we hold may be served from the API server's cache.
            let from_cache = data.object.is_some() && !data.not_found;
            match self.client.get(namespace, name, from_cache).await {
                Ok(object) => {
                    let older = data
                        .object
                        .as_ref()
                        .is_some_and(|old| resource_version(&object) < resource_version(old));
                    if !older {
                        data.object = Some(object);
                        data.not_found = false;
                        data.last_update = Some(self.clock.now());
                    }
                }
                Err(e) if e.is_not_found() => {
                    data.object = None;
                    data.not_found = true;
                    data.last_update = Some(self.clock.now());
                }
                Err(e) if data.object.is_none() && !data.not_found => {
                    return Err(ObjectError::Other(e.to_string()));
                }
                Err(e) => {
                    tracing::debug!(namespace, name, err = %e, "Refresh failed, serving the cached copy");
                }
            }
        }
        match &data.object {
            Some(o) if !data.not_found => Ok(o.clone()),
            _ => Err(ObjectError::NotFound {
                kind: K::RESOURCE,
                name: name.to_string(),
            }),
        }
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
