//! Services for the service environment variables (upstream `NewMainKubelet`'s Service
//! informer, `kl.serviceLister` and `kl.serviceHasSynced`, read by `getServiceEnvVarMap`).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Service;
use kubelet_apipods::kube_lw::KubeListerWatcher;
use kubelet_apipods::reflector::{ListerWatcher, Reflector, Store};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Default)]
struct State {
    synced: bool,
    services: HashMap<(String, String), Service>,
}

/// The Service lister (cheap to clone; clones share it).
#[derive(Debug, Clone, Default)]
pub struct ServiceLister {
    state: Arc<RwLock<State>>,
}

impl ServiceLister {
    /// An empty lister, not synced; [`ServiceLister::run`] fills it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs the informer over `lw` until `cancel` fires.
    pub async fn run<L: ListerWatcher<Service>>(&self, lw: L, cancel: CancellationToken) {
        Reflector::new("service informer", lw, ServiceStore(self.clone()))
            .run(cancel)
            .await;
    }

    /// Every Service, or `None` before the informer's first list (`serviceHasSynced`).
    pub fn list(&self) -> Option<Vec<Service>> {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        state
            .synced
            .then(|| state.services.values().cloned().collect())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The informer's list+watch: every Service of every namespace.
pub fn service_lister_watcher(client: kube::Client) -> KubeListerWatcher<Service> {
    KubeListerWatcher::new(client, "")
}

fn key(s: &Service) -> (String, String) {
    (
        s.metadata.namespace.clone().unwrap_or_default(),
        s.metadata.name.clone().unwrap_or_default(),
    )
}

struct ServiceStore(ServiceLister);

#[async_trait]
impl Store<Service> for ServiceStore {
    async fn replace(&mut self, items: Vec<Service>) {
        let mut state = self.0.write();
        state.services = items.into_iter().map(|s| (key(&s), s)).collect();
        state.synced = true;
    }

    async fn upsert(&mut self, item: Service) {
        self.0.write().services.insert(key(&item), item);
    }

    async fn delete(&mut self, item: Service) {
        self.0.write().services.remove(&key(&item));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn svc(ns: &str, name: &str) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                ..ObjectMeta::default()
            },
            ..Service::default()
        }
    }

    #[tokio::test]
    async fn not_synced_until_the_first_list() {
        let lister = ServiceLister::new();
        assert!(lister.list().is_none());
        let mut store = ServiceStore(lister.clone());
        store.replace(vec![svc("a", "x"), svc("b", "x")]).await;
        assert_eq!(lister.list().unwrap().len(), 2);
        store.upsert(svc("a", "y")).await;
        store.delete(svc("b", "x")).await;
        let mut names: Vec<(String, String)> = lister.list().unwrap().iter().map(key).collect();
        names.sort();
        assert_eq!(names, [("a".into(), "x".into()), ("a".into(), "y".into())]);
    }
}
