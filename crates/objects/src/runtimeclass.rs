//! RuntimeClasses for the kubelet (upstream `pkg/kubelet/runtimeclass/runtimeclass_manager.go`):
//! an informer over every `node.k8s.io/v1` RuntimeClass (resync 0) feeding a lister, and
//! `LookupRuntimeHandler` for `createPodSandbox` (the [`RuntimeHandlerResolver`] the runtime
//! manager takes).
//!
//! As upstream, a lookup never waits for the informer: before its first list every named
//! RuntimeClass is "not found" and the sandbox creation fails and is retried by the next
//! sync. The API server's RuntimeClass admission has already copied the class's
//! `overhead` into `spec.overhead` and its scheduling into the pod, so the handler is all
//! the kubelet reads.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use k8s_openapi::api::node::v1::RuntimeClass;
use kubelet_apipods::kube_lw::KubeListerWatcher;
use kubelet_apipods::reflector::{ListerWatcher, Reflector, Store};
use kubelet_runtime::runtimeclass::{
    RuntimeClassError, RuntimeHandlerResolver, is_default_runtime_class,
};
use tokio_util::sync::CancellationToken;

/// The RuntimeClass lister: handler by RuntimeClass name (cheap to clone; clones share it).
#[derive(Debug, Clone, Default)]
pub struct RuntimeClassManager {
    handlers: Arc<RwLock<HashMap<String, String>>>,
}

impl RuntimeClassManager {
    /// An empty lister; [`RuntimeClassManager::run`] fills it.
    pub fn new() -> Self {
        Self::default()
    }

    /// `Start`: runs the informer over `lw` until `cancel` fires.
    pub async fn run<L: ListerWatcher<RuntimeClass>>(&self, lw: L, cancel: CancellationToken) {
        Reflector::new("runtimeclass informer", lw, RuntimeClassStore(self.clone()))
            .run(cancel)
            .await;
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, String>> {
        self.handlers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The informer's list+watch: every RuntimeClass (cluster-scoped, no selector).
pub fn runtime_class_lister_watcher(client: kube::Client) -> KubeListerWatcher<RuntimeClass> {
    KubeListerWatcher::new(client, "")
}

impl RuntimeHandlerResolver for RuntimeClassManager {
    fn lookup_runtime_handler(
        &self,
        runtime_class_name: Option<&str>,
    ) -> Result<String, RuntimeClassError> {
        let name = match runtime_class_name {
            Some(n) if !is_default_runtime_class(Some(n)) => n,
            // "The default RuntimeClass always resolves to the empty runtime handler."
            _ => return Ok(String::new()),
        };
        self.handlers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .ok_or_else(|| RuntimeClassError::NotFound { name: name.into() })
    }
}

struct RuntimeClassStore(RuntimeClassManager);

fn entry(rc: RuntimeClass) -> Option<(String, String)> {
    Some((rc.metadata.name?, rc.handler))
}

#[async_trait]
impl Store<RuntimeClass> for RuntimeClassStore {
    async fn replace(&mut self, items: Vec<RuntimeClass>) {
        *self.0.write() = items.into_iter().filter_map(entry).collect();
    }

    async fn upsert(&mut self, item: RuntimeClass) {
        if let Some((name, handler)) = entry(item) {
            self.0.write().insert(name, handler);
        }
    }

    async fn delete(&mut self, item: RuntimeClass) {
        if let Some(name) = item.metadata.name {
            self.0.write().remove(&name);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kubelet_apipods::fake::{FakeListerWatcher, FakeWatch};
    use kubelet_apipods::reflector::{ObjectList, WatchEvent};

    fn rc(name: &str, handler: &str, rv: &str) -> RuntimeClass {
        RuntimeClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            handler: handler.into(),
            ..RuntimeClass::default()
        }
    }

    fn not_found(name: &str) -> Result<String, RuntimeClassError> {
        Err(RuntimeClassError::NotFound { name: name.into() })
    }

    #[tokio::test]
    async fn lookups_follow_the_informer() {
        let lw = FakeListerWatcher::default();
        lw.push_list(Ok(ObjectList {
            items: vec![rc("fast", "kata", "1"), rc("std", "runc", "1")],
            resource_version: "1".into(),
        }));
        lw.push_watch(FakeWatch::EventsThenHang(vec![
            Ok(WatchEvent::Modified(rc("fast", "kata-v2", "2"))),
            Ok(WatchEvent::Deleted(rc("std", "runc", "3"))),
            Ok(WatchEvent::Added(rc("new", "crun", "4"))),
        ]));
        let m = RuntimeClassManager::new();
        assert_eq!(m.lookup_runtime_handler(Some("fast")), not_found("fast"));
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (m, lw, cancel) = (m.clone(), lw.clone(), cancel.clone());
            async move { m.run(lw, cancel).await }
        });
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while m.lookup_runtime_handler(Some("new")).is_err() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "informer never caught up"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(m.lookup_runtime_handler(Some("fast")), Ok("kata-v2".into()));
        assert_eq!(m.lookup_runtime_handler(Some("std")), not_found("std"));
        assert_eq!(m.lookup_runtime_handler(Some("new")), Ok("crun".into()));
        assert_eq!(m.lookup_runtime_handler(None), Ok(String::new()));
        assert_eq!(m.lookup_runtime_handler(Some("")), Ok(String::new()));
        cancel.cancel();
        task.await.unwrap();
    }
}
