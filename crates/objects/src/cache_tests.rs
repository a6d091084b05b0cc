//! The TTL store on the recording API: fresh copies are not fetched again, the Node's TTL
//! annotation wins over the default, registering invalidates, NotFound is fetched again,
//! a failed refresh serves the old copy.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_apipods::ApiError;
use kubelet_container::clock::FakeClock;

use super::*;
use crate::api::{FakeCall, FakeObjects};
use crate::watch::tests::cm;

fn gets(api: &FakeObjects<ConfigMap>) -> Vec<bool> {
    api.calls()
        .into_iter()
        .filter_map(|c| match c {
            FakeCall::Get(_, _, from_cache) => Some(from_cache),
            _ => None,
        })
        .collect()
}

fn store(
    api: &FakeObjects<ConfigMap>,
    clock: &FakeClock,
    ttl: Option<Duration>,
) -> ObjectStore<ConfigMap> {
    ObjectStore::new(
        Arc::new(api.clone()),
        Arc::new(clock.clone()),
        Arc::new(move || ttl),
        DEFAULT_TTL,
    )
}

#[tokio::test]
async fn fresh_copies_are_served_until_the_ttl() {
    let api = FakeObjects::default();
    api.set("ns", "a", Some(cm("a", "5", "v1", false)));
    let clock = FakeClock::default();
    let s = store(&api, &clock, None);
    assert_eq!(
        s.get("ns", "a").await.unwrap_err().to_string(),
        r#"object "ns"/"a" not registered"#
    );
    s.add_reference("ns", "a");
    assert!(s.get("ns", "a").await.is_ok());
    api.set("ns", "a", Some(cm("a", "6", "v2", false)));
    clock.step(Duration::from_secs(59));
    assert_eq!(s.get("ns", "a").await.unwrap().data.unwrap()["k"], "v1");
    clock.step(Duration::from_secs(2));
    assert_eq!(s.get("ns", "a").await.unwrap().data.unwrap()["k"], "v2");
    // The first read is consistent, the refresh of a held copy may come from the cache.
    assert_eq!(gets(&api), vec![false, true]);
    // A new registration invalidates.
    s.add_reference("ns", "a");
    assert!(s.get("ns", "a").await.is_ok());
    assert_eq!(gets(&api), vec![false, true, false]);
    s.delete_reference("ns", "a");
    assert_eq!(s.len(), 1);
    s.delete_reference("ns", "a");
    assert!(s.is_empty());
}

#[tokio::test]
async fn the_node_ttl_annotation_wins() {
    let api = FakeObjects::default();
    api.set("ns", "a", Some(cm("a", "5", "v1", false)));
    let clock = FakeClock::default();
    let s = store(&api, &clock, Some(Duration::from_secs(5)));
    s.add_reference("ns", "a");
    s.get("ns", "a").await.unwrap();
    clock.step(Duration::from_secs(6));
    s.get("ns", "a").await.unwrap();
    assert_eq!(gets(&api).len(), 2);

    let node = |v: &str| Node {
        metadata: ObjectMeta {
            annotations: Some([(OBJECT_TTL_ANNOTATION_KEY.to_string(), v.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        object_ttl_from_node(Some(&node("15"))),
        Some(Duration::from_secs(15))
    );
    assert_eq!(object_ttl_from_node(Some(&node("x"))), None);
    assert_eq!(object_ttl_from_node(Some(&Node::default())), None);
    assert_eq!(object_ttl_from_node(None), None);
}

#[tokio::test]
async fn not_found_is_fetched_again_and_a_failed_refresh_keeps_the_copy() {
    let api = FakeObjects::default();
    let clock = FakeClock::default();
    let s = store(&api, &clock, None);
    s.add_reference("ns", "a");
    assert_eq!(
        s.get("ns", "a").await.unwrap_err().to_string(),
        r#"configmaps "a" not found"#
    );
    api.set("ns", "a", Some(cm("a", "5", "v1", false)));
    assert!(
        s.get("ns", "a").await.is_ok(),
        "NotFound is not cached for the TTL"
    );
    clock.step(Duration::from_secs(61));
    api.push_get_error(ApiError::Transport("connection refused".into()));
    assert_eq!(s.get("ns", "a").await.unwrap().data.unwrap()["k"], "v1");
    // An older version than the copy (a stale API server cache) is ignored.
    api.set("ns", "a", Some(cm("a", "3", "old", false)));
    assert_eq!(s.get("ns", "a").await.unwrap().data.unwrap()["k"], "v1");

    // Nothing cached and the API server is away: its error.
    let s = store(&api, &clock, None);
    s.add_reference("ns", "a");
    api.push_get_error(ApiError::Transport("connection refused".into()));
    assert_eq!(
        s.get("ns", "a").await.unwrap_err().to_string(),
        "connection refused"
    );
}
