//! The watch-based cache on the scripted API: one reflector per object whatever the
//! number of references, `get` waiting for the first list, NotFound, watch events,
//! immutable objects, idle reflectors.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubelet_apipods::ApiError;
use kubelet_apipods::fake::FakeWatch;
use kubelet_apipods::reflector::{ObjectList, WatchEvent};
use kubelet_container::clock::FakeClock;

use super::*;
use crate::api::{FakeCall, FakeObjects};

pub(crate) fn cm(name: &str, rv: &str, value: &str, immutable: bool) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), value.to_string())].into()),
        immutable: immutable.then_some(true),
        ..Default::default()
    }
}

pub(crate) fn list(items: Vec<ConfigMap>, rv: &str) -> Result<ObjectList<ConfigMap>, ApiError> {
    Ok(ObjectList {
        items,
        resource_version: rv.into(),
    })
}

fn started(api: &FakeObjects<ConfigMap>) -> usize {
    api.calls()
        .iter()
        .filter(|c| matches!(c, FakeCall::ListerWatcher(..)))
        .count()
}

fn cache(api: &FakeObjects<ConfigMap>, clock: &FakeClock) -> ObjectCache<ConfigMap> {
    ObjectCache::new(
        Arc::new(api.clone()),
        Arc::new(clock.clone()),
        Duration::from_secs(300),
    )
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn one_reflector_per_object_stopped_with_the_last_reference() {
    let api = FakeObjects::default();
    let lw = api.lister_watcher_of("ns", "a");
    lw.push_list(list(vec![cm("a", "5", "v", false)], "5"));
    let c = cache(&api, &FakeClock::default());
    c.add_reference("ns", "a", "pod-1");
    c.add_reference("ns", "a", "pod-2");
    c.add_reference("ns", "a", "pod-2");
    assert_eq!(started(&api), 1);
    assert_eq!(
        api.calls()[0],
        FakeCall::ListerWatcher("ns".into(), "a".into())
    );
    assert_eq!(
        c.get("ns", "a").await.unwrap().data,
        cm("a", "5", "v", false).data
    );

    c.delete_reference("ns", "a", "pod-1");
    c.delete_reference("ns", "a", "pod-2");
    assert_eq!(c.len(), 1, "pod-2 referenced it twice");
    assert!(c.get("ns", "a").await.is_ok());
    c.delete_reference("ns", "a", "pod-2");
    assert!(c.is_empty());
    assert_eq!(
        c.get("ns", "a").await.unwrap_err().to_string(),
        r#"object "ns"/"a" not registered"#
    );
    // Unknown references are ignored.
    c.delete_reference("ns", "a", "pod-2");
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_the_first_list_and_times_out_after_a_second() {
    let api = FakeObjects::default();
    let lw = api.lister_watcher_of("ns", "a");
    let c = cache(&api, &FakeClock::default());
    c.add_reference("ns", "a", "pod-1");
    // Nothing listed yet (the API server is away): upstream's 1 s poll gives up.
    assert_eq!(
        c.get("ns", "a").await.unwrap_err().to_string(),
        "failed to sync configmap cache: timed out waiting for the condition"
    );
    // The list the reflector's retry gets fills it; a waiting get returns it.
    lw.push_list(list(vec![cm("a", "7", "later", false)], "7"));
    let got = loop {
        match c.get("ns", "a").await {
            Ok(o) => break o,
            Err(e) => assert!(e.to_string().contains("failed to sync"), "{e}"),
        }
    };
    assert_eq!(got.metadata.resource_version.as_deref(), Some("7"));
}

#[tokio::test(start_paused = true)]
async fn a_missing_object_is_not_found_and_watch_events_update_the_copy() {
    let api = FakeObjects::default();
    let lw = api.lister_watcher_of("ns", "a");
    lw.push_list(list(vec![], "3"));
    lw.push_watch(FakeWatch::EventsThenHang(vec![Ok(WatchEvent::Added(cm(
        "a", "4", "new", false,
    )))]));
    let c = cache(&api, &FakeClock::default());
    c.add_reference("ns", "a", "pod-1");
    let first = c.get("ns", "a").await;
    // Either the list (NotFound) or already the watch event.
    match first {
        Err(ObjectError::NotFound { kind, name }) => {
            assert_eq!((kind, name.as_str()), ("configmap", "a"));
            assert_eq!(
                ObjectError::NotFound { kind, name }.to_string(),
                r#"configmap "a" not found"#
            );
        }
        other => assert_eq!(
            other.unwrap().metadata.resource_version.as_deref(),
            Some("4")
        ),
    }
    lw.wait_for_calls(2).await;
    tokio::task::yield_now().await;
    let got = c.get("ns", "a").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "new");
}

#[tokio::test(start_paused = true)]
async fn an_immutable_object_stops_being_watched() {
    let api = FakeObjects::default();
    let lw = api.lister_watcher_of("ns", "a");
    lw.push_list(list(vec![cm("a", "5", "v", true)], "5"));
    let c = cache(&api, &FakeClock::default());
    c.add_reference("ns", "a", "pod-1");
    assert!(c.get("ns", "a").await.unwrap().immutable == Some(true));
    // Stopped, yet still served from the copy, and never restarted.
    for _ in 0..3 {
        assert!(c.get("ns", "a").await.is_ok());
    }
    c.recycle_idle_watches();
    assert_eq!(started(&api), 1);
}

#[tokio::test(start_paused = true)]
async fn an_idle_reflector_is_stopped_and_restarted_by_the_next_get() {
    let api = FakeObjects::default();
    let lw = api.lister_watcher_of("ns", "a");
    lw.push_list(list(vec![cm("a", "5", "v", false)], "5"));
    let clock = FakeClock::default();
    let c = cache(&api, &clock);
    c.add_reference("ns", "a", "pod-1");
    assert!(c.get("ns", "a").await.is_ok());
    clock.step(Duration::from_secs(299));
    c.recycle_idle_watches();
    assert!(c.get("ns", "a").await.is_ok(), "not idle yet");
    assert_eq!(started(&api), 1);
    clock.step(Duration::from_secs(301));
    c.recycle_idle_watches();
    // The next get restarts it and waits for a new list.
    lw.push_list(list(vec![cm("a", "9", "fresh", false)], "9"));
    let got = c.get("ns", "a").await.unwrap();
    assert_eq!(got.metadata.resource_version.as_deref(), Some("9"));
    assert_eq!(started(&api), 2);
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_every_reflector_and_starts_no_new_one() {
    let api = FakeObjects::default();
    api.lister_watcher_of("ns", "a")
        .push_list(list(vec![cm("a", "5", "v", false)], "5"));
    let c = Arc::new(cache(&api, &FakeClock::default()));
    c.add_reference("ns", "a", "pod-1");
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let c = c.clone();
        let cancel = cancel.clone();
        async move { c.run(cancel).await }
    });
    cancel.cancel();
    task.await.unwrap();
    c.add_reference("ns", "b", "pod-1");
    assert_eq!(started(&api), 1);
}
