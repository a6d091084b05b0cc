//! The desired pods, as the sources last described them (mirrors `pkg/kubelet/pod/pod_manager.go`
//! for the parts a standalone node needs: no mirror pods yet).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use k8s_openapi::api::core::v1::Pod;

/// Pods by UID.
#[derive(Debug, Default)]
pub struct PodManager {
    pods: RwLock<HashMap<String, Arc<Pod>>>,
}

/// The UID of a pod (empty when unset; sources always set it).
pub fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

impl PodManager {
    /// Adds or replaces a pod (upstream `AddPod`/`UpdatePod`).
    pub fn add_or_update(&self, pod: Arc<Pod>) {
        let uid = pod_uid(&pod).to_string();
        self.pods
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(uid, pod);
    }

    /// Forgets a pod (upstream `RemovePod`).
    pub fn remove(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uid)
    }

    /// A pod by UID.
    pub fn get(&self, uid: &str) -> Option<Arc<Pod>> {
        self.pods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(uid)
            .cloned()
    }

    /// Every desired pod.
    pub fn pods(&self) -> Vec<Arc<Pod>> {
        self.pods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// UIDs of every desired pod.
    pub fn uids(&self) -> Vec<String> {
        self.pods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, name: &str) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(name.into());
        Arc::new(p)
    }

    #[test]
    fn add_update_remove() {
        let m = PodManager::default();
        m.add_or_update(pod("a", "one"));
        m.add_or_update(pod("a", "two"));
        m.add_or_update(pod("b", "three"));
        assert_eq!(m.pods().len(), 2);
        assert_eq!(
            m.get("a").and_then(|p| p.metadata.name.clone()).as_deref(),
            Some("two")
        );
        assert!(m.remove("a").is_some());
        assert!(m.get("a").is_none());
        assert_eq!(m.uids(), vec!["b".to_string()]);
    }
}
