//! `podStorage` from `pkg/kubelet/config/config.go`: per-source pod state, and the rules
//! that turn a source's new snapshot into ADD / UPDATE / DELETE / REMOVE / RECONCILE.

use crate::types::{
    CONFIG_FIRST_SEEN_ANNOTATION_KEY, CONFIG_MIRROR_ANNOTATION_KEY, CONFIG_SOURCE_ANNOTATION_KEY,
    PodOperation, PodUpdate, SourceUpdate, pod_full_name,
};
use k8s_openapi::api::core::v1::Pod;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Annotations the kubelet adds to pods; they never make a pod "changed".
const LOCAL_ANNOTATIONS: [&str; 3] = [
    CONFIG_SOURCE_ANNOTATION_KEY,
    CONFIG_MIRROR_ANNOTATION_KEY,
    CONFIG_FIRST_SEEN_ANNOTATION_KEY,
];

type Annotations = BTreeMap<String, String>;

/// The in-memory truth of which pods each source provides.
#[derive(Debug, Default)]
pub struct PodStorage {
    /// source -> pod UID -> pod.
    pods: HashMap<String, BTreeMap<String, Pod>>,
    /// Sources that delivered at least one snapshot.
    sources_seen: HashSet<String>,
}

#[derive(Default)]
struct Changes {
    adds: Vec<Pod>,
    updates: Vec<Pod>,
    deletes: Vec<Pod>,
    removes: Vec<Pod>,
    reconciles: Vec<Pod>,
}

impl PodStorage {
    /// True when every named source has delivered a snapshot.
    pub fn seen_sources<'a>(&self, mut sources: impl Iterator<Item = &'a str>) -> bool {
        sources.all(|s| self.sources_seen.contains(s))
    }

    /// All pods currently known, from every source.
    pub fn merged_state(&self) -> Vec<Pod> {
        self.pods
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Merges a source's snapshot (`Merge` in incremental mode) and returns the updates to
    /// deliver, in upstream's order: REMOVE, ADD, UPDATE, DELETE, (empty ADD on the first
    /// snapshot when nothing else was sent), RECONCILE.
    pub fn merge(
        &mut self,
        source: &str,
        update: SourceUpdate,
        seen_stamp: &str,
    ) -> Vec<PodUpdate> {
        let first_set = self.sources_seen.insert(source.to_string());
        let changes = self.merge_set(source, update, seen_stamp);
        let mk = |op, pods: Vec<Pod>| PodUpdate {
            op,
            pods,
            source: source.to_string(),
        };
        let mut out = Vec::new();
        let nothing_sent =
            changes.adds.is_empty() && changes.updates.is_empty() && changes.deletes.is_empty();
        for (op, pods) in [
            (PodOperation::Remove, changes.removes),
            (PodOperation::Add, changes.adds),
            (PodOperation::Update, changes.updates),
            (PodOperation::Delete, changes.deletes),
        ] {
            if !pods.is_empty() {
                out.push(mk(op, pods));
            }
        }
        if first_set && nothing_sent {
            // Tells the kubelet the source is ready even when it has no pods.
            out.push(mk(PodOperation::Add, Vec::new()));
        }
        if !changes.reconciles.is_empty() {
            out.push(mk(PodOperation::Reconcile, changes.reconciles));
        }
        out
    }

    fn merge_set(&mut self, source: &str, update: SourceUpdate, seen_stamp: &str) -> Changes {
        let mut old = self.pods.remove(source).unwrap_or_default();
        let mut pods = BTreeMap::new();
        let mut changes = Changes::default();
        for mut pod in filter_invalid_pods(update.pods, source) {
            annotations_mut(&mut pod)
                .insert(CONFIG_SOURCE_ANNOTATION_KEY.to_string(), source.to_string());
            // The pod startup SLI follows API pods only.
            if !kubelet_container::kubetypes::is_static_pod(&pod) {
                kubelet_container::pod_startup_latency_tracker::global()
                    .observed_pod_on_watch(&pod, std::time::SystemTime::now());
            }
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            if pods.contains_key(&uid) {
                tracing::warn!(pod = %pod_full_name(&pod), uid, source, "Pod has the same UID as another pod from the source, ignoring");
                continue;
            }
            match old.remove(&uid) {
                Some(mut existing) => {
                    match check_and_update_pod(&mut existing, pod) {
                        Check::Update => changes.updates.push(existing.clone()),
                        Check::Reconcile => changes.reconciles.push(existing.clone()),
                        Check::GracefulDelete => changes.deletes.push(existing.clone()),
                        Check::Unchanged => {}
                    }
                    pods.insert(uid, existing);
                }
                None => {
                    tracing::debug!(pod = %pod_full_name(&pod), source, "Receiving a new pod");
                    if !kubelet_container::kubetypes::is_mirror_pod(&pod) {
                        kubelet_container::timeline::global().seen(&uid);
                    }
                    annotations_mut(&mut pod).insert(
                        CONFIG_FIRST_SEEN_ANNOTATION_KEY.to_string(),
                        seen_stamp.to_string(),
                    );
                    changes.adds.push(pod.clone());
                    pods.insert(uid, pod);
                }
            }
        }
        changes.removes = old.into_values().collect();
        self.pods.insert(source.to_string(), pods);
        changes
    }
}

fn annotations_mut(pod: &mut Pod) -> &mut Annotations {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
}

/// Drops pods whose full name (`name_namespace`) repeats within one snapshot.
fn filter_invalid_pods(pods: Vec<Pod>, source: &str) -> Vec<Pod> {
    let mut names = HashSet::new();
    pods.into_iter()
        .enumerate()
        .filter(|(i, pod)| {
            let name = pod_full_name(pod);
            let fresh = names.insert(name.clone());
            if !fresh {
                tracing::warn!(index = i, pod = %name, source, "Pod failed validation due to duplicate pod name, ignoring");
            }
            fresh
        })
        .map(|(_, pod)| pod)
        .collect()
}

fn is_local_annotation(key: &str) -> bool {
    LOCAL_ANNOTATIONS.contains(&key)
}

/// Equal except for the kubelet's local annotations.
fn is_annotation_map_equal(
    existing: Option<&Annotations>,
    candidate: Option<&Annotations>,
) -> bool {
    let empty = Annotations::new();
    let existing = existing.unwrap_or(&empty);
    let candidate = candidate.unwrap_or(&empty);
    let strip = |m: &Annotations| -> Vec<(String, String)> {
        m.iter()
            .filter(|(k, _)| !is_local_annotation(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    strip(existing) == strip(candidate)
}

fn pods_differ_semantically(existing: &Pod, r: &Pod) -> bool {
    let (e, n) = (&existing.metadata, &r.metadata);
    existing.spec != r.spec
        || e.labels != n.labels
        || e.deletion_timestamp != n.deletion_timestamp
        || e.deletion_grace_period_seconds != n.deletion_grace_period_seconds
        || !is_annotation_map_equal(e.annotations.as_ref(), n.annotations.as_ref())
}

#[derive(Debug, PartialEq, Eq)]
enum Check {
    Unchanged,
    Update,
    Reconcile,
    GracefulDelete,
}

/// Upstream `checkAndUpdatePod`: folds `r` into `existing` and says what changed.
fn check_and_update_pod(existing: &mut Pod, mut r: Pod) -> Check {
    if !pods_differ_semantically(existing, &r) {
        if existing.status != r.status {
            existing.status = r.status;
            return Check::Reconcile;
        }
        return Check::Unchanged;
    }
    let first_seen = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONFIG_FIRST_SEEN_ANNOTATION_KEY))
        .cloned()
        .unwrap_or_default();
    annotations_mut(&mut r).insert(CONFIG_FIRST_SEEN_ANNOTATION_KEY.to_string(), first_seen);

    existing.spec = r.spec;
    existing.metadata.labels = r.metadata.labels;
    existing.metadata.deletion_timestamp = r.metadata.deletion_timestamp;
    existing.metadata.deletion_grace_period_seconds = r.metadata.deletion_grace_period_seconds;
    existing.metadata.generation = r.metadata.generation;
    existing.status = r.status;
    update_annotations(existing, r.metadata.annotations.unwrap_or_default());

    if existing.metadata.deletion_timestamp.is_some() {
        Check::GracefulDelete
    } else {
        Check::Update
    }
}

/// The new pod's annotations plus the kubelet's local annotations of the existing pod.
fn update_annotations(existing: &mut Pod, mut annotations: Annotations) {
    if let Some(old) = existing.metadata.annotations.as_ref() {
        for key in LOCAL_ANNOTATIONS {
            if let Some(v) = old.get(key) {
                annotations.insert(key.to_string(), v.clone());
            }
        }
    }
    existing.metadata.annotations = Some(annotations);
}

#[cfg(test)]
mod tests;
