//! client-go's `UndeltaStore` (`tools/cache/undelta_store.go`): a store keyed by
//! `namespace/name` (`MetaNamespaceKeyFunc`) that, after every change, pushes its whole
//! content. The pod source uses it to turn the reflector's events into the full snapshots
//! `PodConfig` expects.

use std::collections::BTreeMap;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::reflector::Store;

/// Receives the store's whole content after each change.
pub type PushFn<K> = Box<dyn FnMut(Vec<K>) -> BoxFuture<'static, ()> + Send>;

/// A store that pushes a snapshot on every `replace`, `upsert` and `delete`.
pub struct UndeltaStore<K> {
    items: BTreeMap<String, K>,
    push: PushFn<K>,
}

/// `cache.MetaNamespaceKeyFunc`: `namespace/name`, or `name` without a namespace.
pub fn meta_namespace_key<K: kube::Resource>(o: &K) -> String {
    let m = o.meta();
    let name = m.name.as_deref().unwrap_or_default();
    match m.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

impl<K: kube::Resource + Clone + Send> UndeltaStore<K> {
    /// An empty store pushing to `push`.
    pub fn new(push: PushFn<K>) -> Self {
        Self {
            items: BTreeMap::new(),
            push,
        }
    }

    async fn push_all(&mut self) {
        let all = self.items.values().cloned().collect();
        (self.push)(all).await;
    }
}

#[async_trait]
impl<K: kube::Resource + Clone + Send + Sync> Store<K> for UndeltaStore<K> {
    async fn replace(&mut self, items: Vec<K>) {
        self.items = items
            .into_iter()
            .map(|o| (meta_namespace_key(&o), o))
            .collect();
        self.push_all().await;
    }

    async fn upsert(&mut self, item: K) {
        self.items.insert(meta_namespace_key(&item), item);
        self.push_all().await;
    }

    async fn delete(&mut self, item: K) {
        self.items.remove(&meta_namespace_key(&item));
        self.push_all().await;
    }
}
