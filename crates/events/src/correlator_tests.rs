#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubelet_container::{Clock, FakeClock};
use serde_json::json;

use super::*;

fn pod(name: &str) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        api_version: Some("v1".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

fn event(clock: &FakeClock, object: ObjectReference, reason: &str, message: &str) -> Event {
    let t = clock.now();
    Event {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{:x}",
                object.name.clone().unwrap(),
                t.as_nanosecond()
            )),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        involved_object: object,
        reason: Some(reason.into()),
        message: Some(message.into()),
        first_timestamp: Some(Time(t)),
        last_timestamp: Some(Time(t)),
        count: Some(1),
        type_: Some("Normal".into()),
        source: Some(EventSource {
            component: Some("kubelet".into()),
            host: Some("node-1".into()),
        }),
        reporting_component: Some("kubelet".into()),
        reporting_instance: Some("node-1".into()),
        ..Event::default()
    }
}

fn correlator(clock: &FakeClock) -> EventCorrelator {
    EventCorrelator::new(CorrelatorOptions::with_clock(Arc::new(clock.clone())))
}

fn send(r: CorrelateResult) -> (Event, Option<serde_json::Value>) {
    match r {
        CorrelateResult::Send { event, patch } => (*event, patch),
        CorrelateResult::Skip => panic!("event skipped"),
    }
}

#[test]
fn a_repeated_event_becomes_a_count_patch_of_the_first() {
    let clock = FakeClock::default();
    let mut c = correlator(&clock);
    let first = event(&clock, pod("p"), "Pulled", "already present");
    let (sent, patch) = send(c.event_correlate(&first));
    assert_eq!(sent, first);
    assert_eq!(patch, None);
    // The server's copy carries the resourceVersion the patch must name.
    let mut written = sent.clone();
    written.metadata.resource_version = Some("42".into());
    c.update_state(&written);

    clock.step(Duration::from_secs(5));
    let second = event(&clock, pod("p"), "Pulled", "already present");
    let (sent, patch) = send(c.event_correlate(&second));
    assert_eq!(sent.metadata.name, first.metadata.name);
    assert_eq!(sent.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(sent.first_timestamp, first.first_timestamp);
    assert_eq!(sent.last_timestamp, second.last_timestamp);
    assert_eq!(sent.count, Some(2));
    assert_eq!(
        patch.unwrap().to_string(),
        json!({"count": 2, "lastTimestamp": "2024-01-01T00:00:05Z", "message": "already present"})
            .to_string()
    );

    let (sent, patch) = send(c.event_correlate(&second));
    assert_eq!(sent.count, Some(3));
    assert_eq!(patch.unwrap()["count"], 3);
}

#[test]
fn ten_similar_events_in_ten_minutes_are_combined() {
    let clock = FakeClock::default();
    let mut c = correlator(&clock);
    for i in 0..9 {
        let e = event(&clock, pod("p"), "BackOff", &format!("message {i}"));
        let (sent, patch) = send(c.event_correlate(&e));
        assert_eq!(sent, e, "event {i} is sent as is");
        assert_eq!(patch, None);
        clock.step(Duration::from_secs(60));
    }
    // The tenth distinct message within 10 minutes of the previous one: aggregated.
    let tenth = event(&clock, pod("p"), "BackOff", "message 9");
    let (agg, patch) = send(c.event_correlate(&tenth));
    assert_eq!(patch, None);
    assert_eq!(
        agg.message.as_deref(),
        Some("(combined from similar events): message 9")
    );
    assert_eq!(agg.reason.as_deref(), Some("BackOff"));
    assert_eq!(agg.count, Some(1));
    assert_eq!(agg.involved_object, tenth.involved_object);
    assert_eq!(agg.source, tenth.source);
    assert_eq!(
        agg.reporting_component, None,
        "client-go's aggregate has none"
    );
    assert_eq!(
        agg.metadata.name,
        Some(format!("p.{:x}", clock.now().as_nanosecond()))
    );

    // Further similar events update the aggregate.
    clock.step(Duration::from_secs(1));
    let e = event(&clock, pod("p"), "BackOff", "message 10");
    let (sent, patch) = send(c.event_correlate(&e));
    assert_eq!(sent.metadata.name, agg.metadata.name);
    assert_eq!(sent.count, Some(2));
    assert_eq!(
        patch.unwrap()["message"],
        "(combined from similar events): message 10"
    );

    // Another reason is another group; another object too.
    let other = event(&clock, pod("p"), "Pulled", "message 11");
    assert_eq!(send(c.event_correlate(&other)).0, other);
    let other = event(&clock, pod("q"), "BackOff", "message 12");
    assert_eq!(send(c.event_correlate(&other)).0, other);
}

#[test]
fn similar_events_more_than_ten_minutes_apart_are_not_combined() {
    let clock = FakeClock::default();
    let mut c = correlator(&clock);
    for i in 0..9 {
        send(c.event_correlate(&event(&clock, pod("p"), "BackOff", &format!("m{i}"))));
    }
    // Ten minutes and a second after the last one, the group starts afresh.
    clock.step(Duration::from_secs(601));
    for i in 9..18 {
        let e = event(&clock, pod("p"), "BackOff", &format!("m{i}"));
        assert_eq!(send(c.event_correlate(&e)).0, e, "event {i} aggregated");
    }
    let e = event(&clock, pod("p"), "BackOff", "m18");
    assert!(
        send(c.event_correlate(&e))
            .0
            .message
            .unwrap()
            .starts_with("(combined from similar events): ")
    );
}

#[test]
fn a_source_may_burst_25_events_per_object_then_one_every_5_minutes() {
    let clock = FakeClock::default();
    let mut c = correlator(&clock);
    let mut passed = 0;
    for i in 0..40 {
        // Different reasons: no aggregation; the spam key ignores reason and message.
        let e = event(&clock, pod("p"), &format!("Reason{i}"), "m");
        if matches!(c.event_correlate(&e), CorrelateResult::Send { .. }) {
            passed += 1;
        }
    }
    assert_eq!(passed, 25);
    // Another object, or another type, has its own bucket.
    let e = event(&clock, pod("q"), "Reason0", "m");
    assert!(matches!(
        c.event_correlate(&e),
        CorrelateResult::Send { .. }
    ));
    let mut w = event(&clock, pod("p"), "Reason0", "m");
    w.type_ = Some("Warning".into());
    assert!(matches!(
        c.event_correlate(&w),
        CorrelateResult::Send { .. }
    ));

    clock.step(Duration::from_secs(299));
    let e = event(&clock, pod("p"), "Late", "m");
    assert_eq!(c.event_correlate(&e), CorrelateResult::Skip);
    clock.step(Duration::from_secs(1));
    let e = event(&clock, pod("p"), "Late", "m");
    assert!(matches!(
        c.event_correlate(&e),
        CorrelateResult::Send { .. }
    ));
    let e = event(&clock, pod("p"), "Later", "m");
    assert_eq!(c.event_correlate(&e), CorrelateResult::Skip);
}

#[test]
fn keys_are_client_go_s() {
    let clock = FakeClock::default();
    let mut e = event(&clock, pod("p"), "Started", "Container started");
    e.involved_object.field_path = Some("spec.containers{c}".into());
    assert_eq!(
        get_event_key(&e),
        "kubeletnode-1Podnspspec.containers{c}uid-pv1NormalStartedContainer started"
    );
    assert_eq!(get_spam_key(&e), "kubeletnode-1Podnspuid-pv1Normal");
    assert_eq!(
        aggregate_key(&e),
        (
            "kubeletnode-1Podnspuid-pv1NormalStartedkubeletnode-1".to_string(),
            "Container started".to_string()
        )
    );
}

#[test]
fn caches_keep_the_most_recent_keys() {
    let clock = FakeClock::default();
    let mut opts = CorrelatorOptions::with_clock(Arc::new(clock.clone()));
    opts.lru_cache_size = 2;
    let mut c = EventCorrelator::new(opts);
    let a = event(&clock, pod("a"), "R", "m");
    let b = event(&clock, pod("b"), "R", "m");
    let d = event(&clock, pod("d"), "R", "m");
    for e in [&a, &b, &d] {
        send(c.event_correlate(e));
    }
    // `a` fell out of the logger's cache: a repeat is a new event, not a patch.
    let (sent, patch) = send(c.event_correlate(&a));
    assert_eq!((sent.count, patch), (Some(1), None));
    let (sent, _) = send(c.event_correlate(&a));
    assert_eq!(sent.count, Some(2));
}
