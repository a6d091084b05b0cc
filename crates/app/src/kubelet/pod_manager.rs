//! The desired pods, as the sources last described them, and the mirror pods of the static
//! ones (mirrors `pkg/kubelet/pod/pod_manager.go` `basicManager`).
//!
//! Mirror pods (API pods annotated `kubernetes.io/config.mirror`) are kept apart from the
//! regular pods: they are tracked by full name (`name_namespace`), never run, and a
//! mirror pod UID translates to its static pod's UID ([`PodManager::translate_pod_uid`]),
//! which is how the status manager writes a static pod's status to its mirror pod.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k8s_openapi::api::core::v1::Pod;
use kubelet_container::kubetypes::{is_mirror_pod, is_static_pod, pod_full_name};

/// Pods by UID and full name, mirror pods by UID and full name.
#[derive(Debug, Default)]
pub struct PodManager {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    pod_by_uid: HashMap<String, Arc<Pod>>,
    pod_by_full_name: HashMap<String, Arc<Pod>>,
    mirror_pod_by_uid: HashMap<String, Arc<Pod>>,
    mirror_pod_by_full_name: HashMap<String, Arc<Pod>>,
    /// Mirror pod UID → static pod UID.
    translation_by_uid: HashMap<String, String>,
}

/// The UID of a pod (empty when unset; sources always set it).
pub fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// What [`PodManager::get_pod_and_mirror_pod`] found (upstream's three return values).
#[derive(Debug, Clone, Default)]
pub struct PodAndMirror {
    /// The regular (static or API) pod, if known.
    pub pod: Option<Arc<Pod>>,
    /// Its mirror pod, if any.
    pub mirror_pod: Option<Arc<Pod>>,
    /// The pod asked about was a mirror pod.
    pub was_mirror: bool,
}

impl PodManager {
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds or replaces a pod or mirror pod (upstream `AddPod`/`UpdatePod`).
    pub fn add_or_update(&self, pod: Arc<Pod>) {
        let full_name = pod_full_name(&pod);
        let uid = pod_uid(&pod).to_string();
        let mut m = self.write();
        if is_mirror_pod(&pod) {
            if let Some(p) = m.pod_by_full_name.get(&full_name) {
                let resolved = pod_uid(p).to_string();
                m.translation_by_uid.insert(uid.clone(), resolved);
            }
            m.mirror_pod_by_uid.insert(uid, pod.clone());
            m.mirror_pod_by_full_name.insert(full_name, pod);
        } else {
            if let Some(mirror) = m.mirror_pod_by_full_name.get(&full_name) {
                let mirror_uid = pod_uid(mirror).to_string();
                m.translation_by_uid.insert(mirror_uid, uid.clone());
            }
            m.pod_by_uid.insert(uid, pod.clone());
            m.pod_by_full_name.insert(full_name, pod);
        }
    }

    /// Forgets a pod or mirror pod (upstream `RemovePod`). The full-name entry goes only
    /// when it is this pod, so removing an old UID never hides a newer pod of the same name.
    pub fn remove(&self, pod: &Pod) {
        let full_name = pod_full_name(pod);
        let uid = pod_uid(pod);
        let same = |p: Option<&Arc<Pod>>| p.is_some_and(|p| pod_uid(p) == uid);
        let mut m = self.write();
        if is_mirror_pod(pod) {
            m.mirror_pod_by_uid.remove(uid);
            if same(m.mirror_pod_by_full_name.get(&full_name)) {
                m.mirror_pod_by_full_name.remove(&full_name);
            }
            m.translation_by_uid.remove(uid);
        } else {
            m.pod_by_uid.remove(uid);
            if same(m.pod_by_full_name.get(&full_name)) {
                m.pod_by_full_name.remove(&full_name);
            }
        }
    }

    /// A regular pod by UID (upstream `GetPodByUID`; mirror pods are not found).
    pub fn get(&self, uid: &str) -> Option<Arc<Pod>> {
        self.read().pod_by_uid.get(uid).cloned()
    }

    /// A regular pod by `name_namespace` (upstream `GetPodByFullName`).
    pub fn get_pod_by_full_name(&self, full_name: &str) -> Option<Arc<Pod>> {
        self.read().pod_by_full_name.get(full_name).cloned()
    }

    /// The mirror pod of `pod` (upstream `GetMirrorPodByPod`).
    pub fn get_mirror_pod_by_pod(&self, pod: &Pod) -> Option<Arc<Pod>> {
        self.read()
            .mirror_pod_by_full_name
            .get(&pod_full_name(pod))
            .cloned()
    }

    /// The static pod of `mirror` (upstream `GetPodByMirrorPod`).
    pub fn get_pod_by_mirror_pod(&self, mirror: &Pod) -> Option<Arc<Pod>> {
        self.get_pod_by_full_name(&pod_full_name(mirror))
    }

    /// Upstream `GetPodAndMirrorPod`: for a mirror pod, its static pod (if known) and
    /// itself; for any other pod, itself and its mirror pod (if any).
    pub fn get_pod_and_mirror_pod(&self, pod: &Arc<Pod>) -> PodAndMirror {
        let full_name = pod_full_name(pod);
        let m = self.read();
        if is_mirror_pod(pod) {
            return PodAndMirror {
                pod: m.pod_by_full_name.get(&full_name).cloned(),
                mirror_pod: Some(pod.clone()),
                was_mirror: true,
            };
        }
        PodAndMirror {
            pod: Some(pod.clone()),
            mirror_pod: m.mirror_pod_by_full_name.get(&full_name).cloned(),
            was_mirror: false,
        }
    }

    /// Every desired pod, without mirror pods (upstream `GetPods`).
    pub fn pods(&self) -> Vec<Arc<Pod>> {
        self.read().pod_by_uid.values().cloned().collect()
    }

    /// UIDs of every desired pod (no mirror pods).
    pub fn uids(&self) -> Vec<String> {
        self.read().pod_by_uid.keys().cloned().collect()
    }

    /// Upstream `GetPodsAndMirrorPods`: the pods, the mirror pods, and the full names of
    /// mirror pods whose static pod is gone.
    pub fn get_pods_and_mirror_pods(&self) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>, Vec<String>) {
        let m = self.read();
        let orphaned = m
            .mirror_pod_by_full_name
            .keys()
            .filter(|n| !m.pod_by_full_name.contains_key(*n))
            .cloned()
            .collect();
        (
            m.pod_by_uid.values().cloned().collect(),
            m.mirror_pod_by_uid.values().cloned().collect(),
            orphaned,
        )
    }

    /// Upstream `GetStaticPodToMirrorPodMap`: every static pod with its mirror pod.
    pub fn get_static_pod_to_mirror_pod_map(&self) -> Vec<(Arc<Pod>, Option<Arc<Pod>>)> {
        let m = self.read();
        m.pod_by_uid
            .values()
            .filter(|p| is_static_pod(p))
            .map(|p| {
                let mirror = m.mirror_pod_by_full_name.get(&pod_full_name(p)).cloned();
                (p.clone(), mirror)
            })
            .collect()
    }

    /// Upstream `TranslatePodUID`: a mirror pod's UID becomes its static pod's; any other
    /// UID is returned as is.
    pub fn translate_pod_uid(&self, uid: &str) -> String {
        if uid.is_empty() {
            return String::new();
        }
        self.read()
            .translation_by_uid
            .get(uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }

    /// Upstream `GetUIDTranslations`: static pod UID → mirror pod UID (empty when it has
    /// none yet), and mirror pod UID → static pod UID.
    pub fn get_uid_translations(&self) -> (HashMap<String, String>, HashMap<String, String>) {
        let m = self.read();
        let mut pod_to_mirror: HashMap<String, String> = m
            .pod_by_uid
            .iter()
            .filter(|(_, p)| is_static_pod(p))
            .map(|(uid, _)| (uid.clone(), String::new()))
            .collect();
        let mut mirror_to_pod = HashMap::new();
        for (mirror, pod) in &m.translation_by_uid {
            mirror_to_pod.insert(mirror.clone(), pod.clone());
            pod_to_mirror.insert(pod.clone(), mirror.clone());
        }
        (pod_to_mirror, mirror_to_pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str, name: &str) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.uid = Some(uid.into());
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("ns".into());
        Arc::new(p)
    }

    fn annotated(uid: &str, name: &str, key: &str, value: &str) -> Arc<Pod> {
        let mut p = (*pod(uid, name)).clone();
        p.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        Arc::new(p)
    }

    fn static_pod(uid: &str, name: &str) -> Arc<Pod> {
        annotated(uid, name, "kubernetes.io/config.source", "file")
    }

    fn mirror(uid: &str, name: &str) -> Arc<Pod> {
        annotated(uid, name, "kubernetes.io/config.mirror", "hash")
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
        m.remove(&pod("a", "two"));
        assert!(m.get("a").is_none());
        assert_eq!(m.uids(), vec!["b".to_string()]);
    }

    #[test]
    fn mirror_pods_are_kept_apart_and_translated() {
        let m = PodManager::default();
        // The mirror pod may arrive before its static pod (API source first).
        m.add_or_update(mirror("m1", "etcd"));
        m.add_or_update(static_pod("s1", "etcd"));
        assert_eq!(m.uids(), ["s1"], "a mirror pod is never a desired pod");
        assert!(m.get("m1").is_none());
        assert_eq!(m.translate_pod_uid("m1"), "s1");
        assert_eq!(m.translate_pod_uid("s1"), "s1");
        assert_eq!(m.translate_pod_uid(""), "");

        let found = m.get_pod_and_mirror_pod(&mirror("m1", "etcd"));
        assert!(found.was_mirror);
        assert_eq!(found.pod.as_deref().map(pod_uid), Some("s1"));
        let found = m.get_pod_and_mirror_pod(&static_pod("s1", "etcd"));
        assert!(!found.was_mirror);
        assert_eq!(found.mirror_pod.as_deref().map(pod_uid), Some("m1"));

        let (pod_to_mirror, mirror_to_pod) = m.get_uid_translations();
        assert_eq!(pod_to_mirror.get("s1").map(String::as_str), Some("m1"));
        assert_eq!(mirror_to_pod.get("m1").map(String::as_str), Some("s1"));
        let map = m.get_static_pod_to_mirror_pod_map();
        assert_eq!(map.len(), 1);
        assert!(map[0].1.is_some());

        let (_, mirrors, orphaned) = m.get_pods_and_mirror_pods();
        assert_eq!(mirrors.len(), 1);
        assert!(orphaned.is_empty());
        // The static pod goes: its mirror pod is an orphan.
        m.remove(&static_pod("s1", "etcd"));
        let (pods, _, orphaned) = m.get_pods_and_mirror_pods();
        assert!(pods.is_empty());
        assert_eq!(orphaned, ["etcd_ns"]);
        // An older mirror pod of the same name going does not hide the current one.
        m.remove(&mirror("m0", "etcd"));
        assert_eq!(m.get_pods_and_mirror_pods().2, ["etcd_ns"]);
        m.remove(&mirror("m1", "etcd"));
        assert_eq!(m.translate_pod_uid("m1"), "m1");
        assert!(m.get_pods_and_mirror_pods().2.is_empty());
    }

    #[test]
    fn a_static_pod_without_mirror_translates_to_nothing() {
        let m = PodManager::default();
        m.add_or_update(static_pod("s1", "etcd"));
        m.add_or_update(pod("a1", "web"));
        let (pod_to_mirror, mirror_to_pod) = m.get_uid_translations();
        assert_eq!(pod_to_mirror.len(), 1, "API pods have no mirror pods");
        assert_eq!(pod_to_mirror.get("s1").map(String::as_str), Some(""));
        assert!(mirror_to_pod.is_empty());
    }
}
