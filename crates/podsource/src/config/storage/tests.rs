#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

fn pod(uid: &str, name: &str, image: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            uid: Some(uid.into()),
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

fn set(pods: Vec<Pod>) -> SourceUpdate {
    SourceUpdate { pods }
}

/// (op, [names]) per update, for compact assertions.
fn summary(updates: &[PodUpdate]) -> Vec<(PodOperation, Vec<String>)> {
    updates
        .iter()
        .map(|u| {
            let names = u
                .pods
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            (u.op, names)
        })
        .collect()
}

fn ann<'a>(p: &'a Pod, key: &str) -> Option<&'a str> {
    p.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

#[test]
fn first_empty_snapshot_sends_empty_add() {
    let mut s = PodStorage::default();
    let out = s.merge("file", set(vec![]), "t0");
    assert_eq!(summary(&out), [(PodOperation::Add, vec![])]);
    assert_eq!(out[0].source, "file");
    assert!(
        s.merge("file", set(vec![]), "t1").is_empty(),
        "only the first snapshot"
    );
    assert!(s.seen_sources(["file"].into_iter()));
    assert!(!s.seen_sources(["file", "http"].into_iter()));
}

#[test]
fn new_pods_are_added_with_source_and_seen_annotations() {
    let mut s = PodStorage::default();
    let out = s.merge(
        "file",
        set(vec![pod("1", "a", "i"), pod("2", "b", "i")]),
        "t0",
    );
    assert_eq!(
        summary(&out),
        [(PodOperation::Add, vec!["a".into(), "b".into()])]
    );
    let a = &out[0].pods[0];
    assert_eq!(ann(a, CONFIG_SOURCE_ANNOTATION_KEY), Some("file"));
    assert_eq!(ann(a, CONFIG_FIRST_SEEN_ANNOTATION_KEY), Some("t0"));
    assert!(
        s.merge(
            "file",
            set(vec![pod("1", "a", "i"), pod("2", "b", "i")]),
            "t1"
        )
        .is_empty()
    );
}

#[test]
fn spec_change_is_update_and_keeps_first_seen() {
    let mut s = PodStorage::default();
    s.merge("file", set(vec![pod("1", "a", "i")]), "t0");
    let out = s.merge("file", set(vec![pod("1", "a", "j")]), "t1");
    assert_eq!(summary(&out), [(PodOperation::Update, vec!["a".into()])]);
    let p = &out[0].pods[0];
    assert_eq!(
        p.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("j")
    );
    assert_eq!(ann(p, CONFIG_FIRST_SEEN_ANNOTATION_KEY), Some("t0"));
    assert_eq!(ann(p, CONFIG_SOURCE_ANNOTATION_KEY), Some("file"));
}

#[test]
fn labels_annotations_and_grace_period_are_updates_local_annotations_are_not() {
    let mut s = PodStorage::default();
    s.merge("api", set(vec![pod("1", "a", "i")]), "t0");

    let mut local = pod("1", "a", "i");
    local.metadata.annotations =
        Some([(CONFIG_MIRROR_ANNOTATION_KEY.to_string(), "x".to_string())].into());
    assert!(
        s.merge("api", set(vec![local]), "t1").is_empty(),
        "local annotations are ignored"
    );

    let mut annotated = pod("1", "a", "i");
    annotated.metadata.annotations = Some([("team".to_string(), "x".to_string())].into());
    assert_eq!(
        summary(&s.merge("api", set(vec![annotated.clone()]), "t2"))[0].0,
        PodOperation::Update
    );

    let mut labelled = annotated.clone();
    labelled.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
    assert_eq!(
        summary(&s.merge("api", set(vec![labelled.clone()]), "t3"))[0].0,
        PodOperation::Update
    );

    let mut grace = labelled;
    grace.metadata.deletion_grace_period_seconds = Some(5);
    assert_eq!(
        summary(&s.merge("api", set(vec![grace]), "t4"))[0].0,
        PodOperation::Update
    );
}

#[test]
fn status_only_change_is_reconcile() {
    let mut s = PodStorage::default();
    s.merge("api", set(vec![pod("1", "a", "i")]), "t0");
    let mut p = pod("1", "a", "i");
    p.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    let out = s.merge("api", set(vec![p]), "t1");
    assert_eq!(summary(&out), [(PodOperation::Reconcile, vec!["a".into()])]);
    assert_eq!(
        out[0].pods[0].status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );
}

#[test]
fn deletion_timestamp_is_graceful_delete() {
    let mut s = PodStorage::default();
    s.merge("api", set(vec![pod("1", "a", "i")]), "t0");
    let mut p = pod("1", "a", "i");
    p.metadata.deletion_timestamp = Some(Time("2024-01-01T00:00:00Z".parse().unwrap()));
    p.metadata.deletion_grace_period_seconds = Some(30);
    let out = s.merge("api", set(vec![p]), "t1");
    assert_eq!(summary(&out), [(PodOperation::Delete, vec!["a".into()])]);
}

#[test]
fn missing_pods_are_removed_in_upstream_order() {
    let mut s = PodStorage::default();
    s.merge(
        "file",
        set(vec![pod("1", "a", "i"), pod("2", "b", "i")]),
        "t0",
    );
    let out = s.merge(
        "file",
        set(vec![pod("2", "b", "j"), pod("3", "c", "i")]),
        "t1",
    );
    assert_eq!(
        summary(&out),
        [
            (PodOperation::Remove, vec!["a".into()]),
            (PodOperation::Add, vec!["c".into()]),
            (PodOperation::Update, vec!["b".into()]),
        ]
    );
    assert_eq!(s.merged_state().len(), 2);
}

#[test]
fn sources_are_independent() {
    let mut s = PodStorage::default();
    s.merge("file", set(vec![pod("1", "a", "i")]), "t0");
    let out = s.merge("http", set(vec![pod("2", "b", "i")]), "t1");
    assert_eq!(summary(&out), [(PodOperation::Add, vec!["b".into()])]);
    let out = s.merge("http", set(vec![]), "t2");
    assert_eq!(summary(&out), [(PodOperation::Remove, vec!["b".into()])]);
    assert_eq!(s.merged_state().len(), 1, "file pod untouched");
}

#[test]
fn duplicate_full_names_and_uids_are_dropped() {
    let mut s = PodStorage::default();
    let out = s.merge(
        "file",
        set(vec![
            pod("1", "a", "i"),
            pod("2", "a", "j"),
            pod("1", "z", "i"),
        ]),
        "t0",
    );
    assert_eq!(summary(&out), [(PodOperation::Add, vec!["a".into()])]);
    assert_eq!(out[0].pods[0].metadata.uid.as_deref(), Some("1"));
}

/// A new pod starts its startup timeline (`kubelet_container::timeline`, step `seen`); an
/// update does not restart it; a mirror pod gets none.
#[test]
fn new_pods_start_their_startup_timeline() {
    let timeline = kubelet_container::timeline::global();
    let mut s = PodStorage::default();
    let mut mirror = pod("uid-seen-mirror", "m", "img");
    mirror.metadata.annotations = Some(
        [(CONFIG_MIRROR_ANNOTATION_KEY.to_string(), "x".to_string())]
            .into_iter()
            .collect(),
    );
    s.merge(
        "api",
        set(vec![pod("uid-seen-1", "a", "img"), mirror.clone()]),
        "t0",
    );
    let first = timeline.get("uid-seen-1").unwrap();
    assert_eq!(first.steps.len(), 1);
    assert_eq!(first.steps[0].step, kubelet_container::timeline::Step::Seen);
    assert!(timeline.get("uid-seen-mirror").is_none());
    s.merge(
        "api",
        set(vec![pod("uid-seen-1", "a", "img2"), mirror]),
        "t1",
    );
    assert_eq!(timeline.get("uid-seen-1").unwrap(), first);
    timeline.remove("uid-seen-1");
}
