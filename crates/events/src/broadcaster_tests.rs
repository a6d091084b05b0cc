#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kubelet_container::FakeClock;
use kubelet_container::events::{EventRecorder, EventType, node_ref};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::sink::{FakeEventSink, SinkCall, SinkError};

fn pod(name: &str) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        api_version: Some("v1".into()),
        namespace: Some("t-ns".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        field_path: Some("spec.containers{c}".into()),
        ..ObjectReference::default()
    }
}

struct Setup {
    clock: FakeClock,
    sink: Arc<FakeEventSink>,
    recorder: Recorder,
    _cancel: tokio_util::sync::DropGuard,
}

fn setup() -> Setup {
    let clock = FakeClock::default();
    let cancel = CancellationToken::new();
    let b = EventBroadcaster::new(Arc::new(clock.clone()), cancel.clone());
    let sink = Arc::new(FakeEventSink::new());
    b.start_structured_logging();
    b.start_recording_to_sink(sink.clone());
    let recorder = b.new_recorder("kubelet", "node-1");
    Setup {
        clock,
        sink,
        recorder,
        _cancel: cancel.drop_guard(),
    }
}

/// Waits (in paused tokio time) until the sink saw `n` calls, then a little longer so
/// that an extra call would show.
async fn calls(sink: &FakeEventSink, n: usize) -> Vec<SinkCall> {
    for _ in 0..100_000 {
        if sink.calls().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(600)).await;
    sink.calls()
}

fn created(call: &SinkCall) -> &k8s_openapi::api::core::v1::Event {
    match call {
        SinkCall::Create(e) => e,
        SinkCall::Patch(..) => panic!("expected a create, got {call:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn events_are_built_as_client_go_builds_them() {
    let s = setup();
    s.recorder.event(
        &pod("web"),
        EventType::Normal,
        "Started",
        "Container started",
    );
    s.recorder.event(
        &node_ref("node-1"),
        EventType::Normal,
        "Starting",
        "Starting kubelet.",
    );
    let calls = calls(&s.sink, 2).await;
    assert_eq!(calls.len(), 2);
    let nanos = s.clock.now().as_nanosecond();

    let e = created(&calls[0]);
    let json = serde_json::to_value(e).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("web.{nanos:x}"), "namespace": "t-ns"},
            "involvedObject": {
                "apiVersion": "v1", "fieldPath": "spec.containers{c}", "kind": "Pod",
                "name": "web", "namespace": "t-ns", "uid": "uid-web"
            },
            "reason": "Started",
            "message": "Container started",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:00:00Z",
            "count": 1,
            "type": "Normal",
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1"
        })
    );
    // A cluster-scoped object's events go to `default`.
    let e = created(&calls[1]);
    assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(e.metadata.name, Some(format!("node-1.{nanos:x}")));
}

/// `AnnotatedEventf` (the eviction manager's events): the annotations are in the created
/// Event's metadata; a plain event has none.
#[tokio::test(start_paused = true)]
async fn annotated_events_carry_their_annotations() {
    let s = setup();
    let annotations: kubelet_container::events::Annotations = [
        ("offending_containers".to_string(), "hog".to_string()),
        ("starved_resource".to_string(), "memory".to_string()),
    ]
    .into();
    s.recorder.annotated_event(
        &pod("hog"),
        &annotations,
        EventType::Warning,
        "Evicted",
        "The node was low on resource: memory. ",
    );
    s.recorder.event(
        &pod("web"),
        EventType::Normal,
        "Started",
        "Container started",
    );
    let calls = calls(&s.sink, 2).await;
    let e = created(&calls[0]);
    assert_eq!(e.metadata.annotations.as_ref(), Some(&annotations));
    let json = serde_json::to_value(e).unwrap();
    assert_eq!(
        json["metadata"]["annotations"]["starved_resource"],
        "memory"
    );
    assert_eq!(created(&calls[1]).metadata.annotations, None);
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_is_patched_with_count_2() {
    let s = setup();
    s.recorder
        .event(&pod("web"), EventType::Warning, "BackOff", "Back-off");
    let first = created(&calls(&s.sink, 1).await[0]).clone();
    s.clock.step(Duration::from_secs(10));
    s.recorder
        .event(&pod("web"), EventType::Warning, "BackOff", "Back-off");
    let calls = calls(&s.sink, 2).await;
    let SinkCall::Patch(event, patch) = &calls[1] else {
        panic!("expected a patch: {calls:?}");
    };
    assert_eq!(event.metadata.name, first.metadata.name);
    // The fake's resourceVersion of the created event.
    assert_eq!(event.metadata.resource_version.as_deref(), Some("1"));
    assert_eq!(
        patch,
        &serde_json::json!({"count": 2, "lastTimestamp": "2024-01-01T00:00:10Z", "message": "Back-off"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_patch_of_a_deleted_event_creates_it_again() {
    let s = setup();
    let ev = || {
        s.recorder
            .event(&pod("web"), EventType::Normal, "Pulled", "present")
    };
    ev();
    calls(&s.sink, 1).await;
    s.sink.fail_next([SinkError::Status {
        code: 404,
        reason: "NotFound".into(),
        message: "not found".into(),
        causes: vec![],
    }]);
    ev();
    let calls = calls(&s.sink, 3).await;
    assert_eq!(calls.len(), 3);
    assert!(matches!(calls[1], SinkCall::Patch(..)));
    let again = created(&calls[2]);
    assert_eq!(again.count, Some(2));
    assert_eq!(again.metadata.resource_version, None);
}

#[tokio::test(start_paused = true)]
async fn transport_errors_are_retried_12_times_rejections_never() {
    let s = setup();
    let transport = || SinkError::Transport("connection refused".into());
    s.sink.fail_next([transport(), transport(), transport()]);
    s.recorder.event(&pod("a"), EventType::Normal, "R", "m");
    assert_eq!(calls(&s.sink, 4).await.len(), 4, "3 failures then success");

    s.sink.fail_next((0..12).map(|_| transport()));
    s.recorder.event(&pod("b"), EventType::Normal, "R", "m");
    assert_eq!(
        calls(&s.sink, 16).await.len(),
        16,
        "12 tries, then given up"
    );

    s.sink.fail_next((0..8).map(|_| transport()));
    s.sink.fail_next([SinkError::Status {
        code: 403,
        reason: "Forbidden".into(),
        message: "no".into(),
        causes: vec![],
    }]);
    s.recorder.event(&pod("c"), EventType::Normal, "R", "m");
    assert_eq!(
        calls(&s.sink, 25).await.len(),
        25,
        "stopped at the rejection"
    );
    s.recorder.event(&pod("d"), EventType::Normal, "R", "m");
    assert_eq!(calls(&s.sink, 26).await.len(), 26);
}

#[tokio::test(start_paused = true)]
async fn retries_sleep_about_10_seconds() {
    let s = setup();
    s.sink
        .fail_next((0..3).map(|_| SinkError::Transport("down".into())));
    let start = tokio::time::Instant::now();
    s.recorder.event(&pod("a"), EventType::Normal, "R", "m");
    for _ in 0..100_000 {
        if s.sink.calls().len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let waited = start.elapsed();
    // A random fraction of 10 s, then 10 s twice.
    assert!(waited >= Duration::from_secs(20), "{waited:?}");
    assert!(waited <= Duration::from_secs(31), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_drops_events_and_never_blocks() {
    let s = setup();
    // Nothing runs between these calls (current-thread runtime): the 1001st does not fit.
    for i in 0..=MAX_QUEUED_EVENTS {
        s.recorder
            .event(&pod(&format!("p{i}")), EventType::Normal, "R", "m");
    }
    let calls = calls(&s.sink, MAX_QUEUED_EVENTS).await;
    assert_eq!(calls.len(), MAX_QUEUED_EVENTS);
    assert_eq!(
        created(&calls[MAX_QUEUED_EVENTS - 1])
            .involved_object
            .name
            .as_deref(),
        Some("p999")
    );
}

#[tokio::test(start_paused = true)]
async fn a_crash_looping_container_does_not_flood_the_sink() {
    let s = setup();
    // 100 restarts, each with a distinct message: aggregated after 10, filtered after 25.
    for i in 0..100 {
        s.recorder.event(
            &pod("loop"),
            EventType::Warning,
            "BackOff",
            &format!("Back-off restarting failed container c in pod loop (attempt {i})"),
        );
        s.clock.step(Duration::from_secs(1));
    }
    let calls = calls(&s.sink, 25).await;
    assert_eq!(calls.len(), 25);
    let creates = calls
        .iter()
        .filter(|c| matches!(c, SinkCall::Create(_)))
        .count();
    assert_eq!(creates, 10, "9 originals and the aggregate");
}

#[test]
fn event_names_are_valid_or_a_uuid() {
    assert_eq!(generate_event_name("web", 0x1f), "web.1f");
    let long = "a".repeat(250);
    let name = generate_event_name(&long, 0x1234_5678);
    assert_eq!(name.len(), 36, "{name}");
    assert_eq!(&name[14..15], "4");
    assert!(matches!(&name[19..20], "8" | "9" | "a" | "b"), "{name}");
}
