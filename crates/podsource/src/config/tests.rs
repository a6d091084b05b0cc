#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::clock::FakeClock;
use crate::types::{CONFIG_FIRST_SEEN_ANNOTATION_KEY, PodOperation};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn pod(uid: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            uid: Some(uid.into()),
            name: Some(format!("p{uid}")),
            namespace: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn config() -> (PodConfig, mpsc::Receiver<PodUpdate>) {
    let clock = FakeClock::new("2024-05-06T07:08:09.5Z".parse().unwrap());
    PodConfig::with_clock("node", Arc::new(clock))
}

#[tokio::test]
async fn channel_merges_snapshots_into_updates() {
    let (config, mut rx) = config();
    let cancel = CancellationToken::new();
    let tx = config.channel("file", cancel.clone());
    tx.send(SourceUpdate {
        pods: vec![pod("1")],
    })
    .await
    .unwrap();
    let u = rx.recv().await.unwrap();
    assert_eq!(
        (u.op, u.source.as_str(), u.pods.len()),
        (PodOperation::Add, "file", 1)
    );
    let seen =
        u.pods[0].metadata.annotations.as_ref().unwrap()[CONFIG_FIRST_SEEN_ANNOTATION_KEY].clone();
    assert_eq!(seen, "2024-05-06T07:08:09.5Z");

    tx.send(SourceUpdate { pods: vec![] }).await.unwrap();
    let u = rx.recv().await.unwrap();
    assert_eq!((u.op, u.pods.len()), (PodOperation::Remove, 1));
    cancel.cancel();
}

#[tokio::test]
async fn same_source_gets_same_channel() {
    let (config, _rx) = config();
    let cancel = CancellationToken::new();
    let a = config.channel("file", cancel.clone());
    let b = config.channel("file", cancel.clone());
    assert!(a.same_channel(&b));
    assert!(!a.same_channel(&config.channel("http", cancel)));
    assert_eq!(config.registered_sources().len(), 2);
}

#[tokio::test]
async fn seen_all_sources_needs_a_snapshot_from_each_source() {
    let (config, mut rx) = config();
    let cancel = CancellationToken::new();
    let file = config.channel("file", cancel.clone());
    let http = config.channel("http", cancel.clone());
    let kubelet_seen: HashSet<String> = ["file".to_string(), "http".to_string()].into();
    assert!(!config.seen_all_sources(&kubelet_seen));

    file.send(SourceUpdate::default()).await.unwrap();
    assert_eq!(rx.recv().await.unwrap().source, "file");
    assert!(!config.seen_all_sources(&kubelet_seen));

    http.send(SourceUpdate::default()).await.unwrap();
    let ready = rx.recv().await.unwrap();
    assert_eq!(
        (ready.op, ready.source.as_str(), ready.pods.len()),
        (PodOperation::Add, "http", 0)
    );
    assert!(config.seen_all_sources(&kubelet_seen));
    assert!(
        !config.seen_all_sources(&["file".to_string()].into()),
        "kubelet has not seen http"
    );
}

#[tokio::test]
async fn cancel_stops_the_merge_task() {
    let (config, mut rx) = config();
    let cancel = CancellationToken::new();
    let tx = config.channel("file", cancel.clone());
    cancel.cancel();
    tokio::task::yield_now().await;
    // The receiver side is gone once the task exits: sends fail or are never merged.
    let _ = tx
        .send(SourceUpdate {
            pods: vec![pod("1")],
        })
        .await;
    let got = tokio::time::timeout(std::time::Duration::from_millis(50), rx.recv()).await;
    assert!(got.is_err(), "no update after cancel: {got:?}");
}
