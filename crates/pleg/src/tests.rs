//! PLEG behaviour against the recording FakeRuntime (upstream `generic_test.go`, `evented_test.go`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use kubelet_container::fake::FakeRuntime;
use kubelet_container::{
    Cache, Container, ContainerId, ContainerState, Pod, PodStatus, RuntimeError, SandboxState,
    SandboxStatus,
};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::*;

fn container(id: &str, state: ContainerState) -> Container {
    Container {
        id: ContainerId::new("fakeruntime", id),
        name: id.into(),
        state,
        ..Container::default()
    }
}

fn pod(uid: &str, containers: Vec<Container>) -> Pod {
    Pod {
        id: uid.into(),
        name: format!("pod-{uid}"),
        namespace: "ns".into(),
        containers,
        ..Pod::default()
    }
}

fn setup() -> (
    Arc<FakeRuntime>,
    Arc<Cache>,
    Arc<GenericPleg>,
    mpsc::Receiver<PodLifecycleEvent>,
) {
    let runtime = Arc::new(FakeRuntime::new());
    let cache = Arc::new(Cache::new());
    let (pleg, rx) = GenericPleg::new(runtime.clone(), cache.clone(), RelistDuration::GENERIC);
    (runtime, cache, pleg, rx)
}

fn drain(
    rx: &mut mpsc::Receiver<PodLifecycleEvent>,
) -> Vec<(String, PodLifecycleEventType, String)> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push((e.id, e.type_, e.data));
    }
    out.sort_by(|a, b| (a.0.as_str(), a.2.as_str()).cmp(&(b.0.as_str(), b.2.as_str())));
    out
}

fn ev(uid: &str, t: PodLifecycleEventType, cid: &str) -> (String, PodLifecycleEventType, String) {
    (uid.into(), t, cid.into())
}

use PodLifecycleEventType as E;

#[tokio::test(start_paused = true)]
async fn relist_inspects_only_changed_pods() {
    let (runtime, cache, pleg, mut rx) = setup();
    runtime.set_pods(vec![
        pod("a", vec![container("c1", ContainerState::Running)]),
        pod("b", vec![container("c2", ContainerState::Running)]),
    ]);
    pleg.relist().await;
    assert_eq!(
        drain(&mut rx),
        [
            ev("a", E::ContainerStarted, "c1"),
            ev("b", E::ContainerStarted, "c2")
        ]
    );
    let mut queried = runtime.status_queries();
    queried.sort();
    assert_eq!(queried, ["a", "b"]);

    runtime.clear_calls();
    pleg.relist().await;
    pleg.relist().await;
    assert!(drain(&mut rx).is_empty());
    assert_eq!(
        runtime.calls(),
        ["GetPods", "GetPods"],
        "no GetPodStatus when nothing changed"
    );

    runtime.set_pods(vec![
        pod("a", vec![container("c1", ContainerState::Exited)]),
        pod("b", vec![container("c2", ContainerState::Running)]),
    ]);
    pleg.relist().await;
    assert_eq!(drain(&mut rx), [ev("a", E::ContainerDied, "c1")]);
    assert_eq!(runtime.status_queries(), ["a"]);
    assert!(cache.get("a").is_ok());
}

#[tokio::test(start_paused = true)]
async fn vanished_pod_reports_died_and_removed_and_leaves_cache() {
    let (runtime, cache, pleg, mut rx) = setup();
    runtime.set_pods(vec![pod(
        "a",
        vec![container("c1", ContainerState::Running)],
    )]);
    runtime.set_pod_status(PodStatus {
        name: "pod-a".into(),
        ..PodStatus::empty("a", "pod-a", "ns")
    });
    pleg.relist().await;
    drain(&mut rx);
    assert_eq!(cache.get("a").unwrap().name, "pod-a");
    runtime.set_pods(vec![]);
    pleg.relist().await;
    assert_eq!(
        drain(&mut rx),
        [
            ev("a", E::ContainerDied, "c1"),
            ev("a", E::ContainerRemoved, "c1")
        ]
    );
    assert_eq!(
        cache.get("a").unwrap().name,
        "",
        "deleted from the cache (empty default)"
    );
}

#[tokio::test(start_paused = true)]
async fn created_state_updates_cache_without_event() {
    let (runtime, _cache, pleg, mut rx) = setup();
    runtime.set_pods(vec![pod(
        "a",
        vec![container("c1", ContainerState::Created)],
    )]);
    pleg.relist().await;
    assert!(drain(&mut rx).is_empty(), "ContainerChanged is filtered");
    assert_eq!(runtime.status_queries(), ["a"]);
}

#[tokio::test(start_paused = true)]
async fn status_error_is_reinspected_next_relist() {
    let (runtime, cache, pleg, mut rx) = setup();
    runtime.set_pods(vec![pod(
        "a",
        vec![container("c1", ContainerState::Running)],
    )]);
    runtime.inject_error("GetPodStatus", RuntimeError::Unavailable("timeout".into()));
    pleg.relist().await;
    assert!(
        drain(&mut rx).is_empty(),
        "events held back until the status is known"
    );
    assert!(cache.get("a").is_err());
    pleg.relist().await;
    assert_eq!(drain(&mut rx), [ev("a", E::ContainerStarted, "c1")]);
    assert!(cache.get("a").is_ok());
    assert_eq!(runtime.status_queries(), ["a", "a"]);
}

#[tokio::test(start_paused = true)]
async fn healthy_tracks_last_successful_relist() {
    let (runtime, _cache, pleg, _rx) = setup();
    assert_eq!(pleg.healthy(), Err(PlegError::NeverSucceeded));
    pleg.relist().await;
    assert_eq!(pleg.healthy(), Ok(()));
    runtime.inject_error("GetPods", RuntimeError::Unavailable("hung".into()));
    tokio::time::advance(Duration::from_secs(181)).await;
    pleg.relist().await;
    let err = pleg.healthy().unwrap_err();
    assert_eq!(
        err.to_string(),
        "pleg was last seen active 3m1s ago; threshold is 3m0s"
    );
}

#[tokio::test(start_paused = true)]
async fn relist_raises_cache_time_for_waiting_workers() {
    let (_runtime, cache, pleg, _rx) = setup();
    let before = Instant::now();
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(cache.get_if_newer_than("unknown", Some(before)).is_none());
    pleg.relist().await;
    assert!(cache.get_if_newer_than("unknown", Some(before)).is_some());
}

#[tokio::test(start_paused = true)]
async fn pod_ips_survive_teardown() {
    let (runtime, cache, pleg, _rx) = setup();
    let sandbox = |state| SandboxStatus {
        id: "s1".into(),
        state,
        ..SandboxStatus::default()
    };
    runtime.set_pods(vec![pod(
        "a",
        vec![container("c1", ContainerState::Running)],
    )]);
    runtime.set_pod_status(PodStatus {
        ips: vec!["198.18.0.5".into()],
        sandbox_statuses: vec![sandbox(SandboxState::Ready)],
        ..PodStatus::empty("a", "pod-a", "ns")
    });
    pleg.relist().await;
    runtime.set_pods(vec![pod(
        "a",
        vec![container("c1", ContainerState::Exited)],
    )]);
    runtime.set_pod_status(PodStatus {
        sandbox_statuses: vec![sandbox(SandboxState::NotReady)],
        ..PodStatus::empty("a", "pod-a", "ns")
    });
    pleg.relist().await;
    assert_eq!(cache.get("a").unwrap().ips, ["198.18.0.5"]);
}

#[tokio::test(start_paused = true)]
async fn run_relists_every_period_and_follows_updates() {
    let (runtime, _cache, pleg, _rx) = setup();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(pleg.clone().run(shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(runtime.calls().len(), 4, "t=0,1,2,3");
    pleg.update_relist_duration(RelistDuration::EVENTED_FALLBACK);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        runtime.calls().len(),
        5,
        "one relist on the change, then 300 s"
    );
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn requested_relist_runs_before_the_period_ends() {
    let (runtime, _cache, pleg, _rx) = setup();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(pleg.clone().run(shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(runtime.calls().len(), 1, "the first relist at t=0");
    pleg.request_relist();
    pleg.request_relist();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        runtime.calls().len(),
        2,
        "one more relist at once for both requests, not at t=1s"
    );
    tokio::time::sleep(Duration::from_millis(1050)).await;
    assert_eq!(runtime.calls().len(), 3, "then the period again");
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn evented_pleg_updates_cache_and_falls_back_when_stream_ends() {
    let (runtime, cache, pleg, mut rx) = setup();
    let (events_tx, mut events_rx) = mpsc::channel(8);
    let evented = EventedPleg::new(runtime.clone(), cache.clone(), pleg.clone(), events_tx);
    let (stream_tx, stream_rx) = mpsc::channel(8);
    let status = PodStatus {
        ips: vec!["198.18.0.9".into()],
        sandbox_statuses: vec![SandboxStatus {
            id: "s1".into(),
            state: SandboxState::Ready,
            ..SandboxStatus::default()
        }],
        ..PodStatus::empty("a", "pod-a", "ns")
    };
    let event = |cid: &str, t, status: Option<PodStatus>| ContainerEvent {
        pod_uid: "a".into(),
        pod_name: "pod-a".into(),
        pod_namespace: "ns".into(),
        container_id: cid.into(),
        event_type: t,
        pod_status: status,
    };
    stream_tx
        .send(event(
            "c1",
            ContainerEventType::Started,
            Some(status.clone()),
        ))
        .await
        .unwrap();
    stream_tx
        .send(event("c1", ContainerEventType::Created, None))
        .await
        .unwrap();
    stream_tx
        .send(event("s1", ContainerEventType::Deleted, Some(status)))
        .await
        .unwrap();
    drop(stream_tx);
    let closed = evented.run(stream_rx, CancellationToken::new()).await;
    assert!(closed);
    assert_eq!(
        drain(&mut events_rx),
        [
            ev("a", E::ContainerStarted, "c1"),
            ev("a", E::ContainerDied, "s1"),
            ev("a", E::ContainerRemoved, "s1")
        ]
    );
    assert_eq!(
        runtime.status_queries(),
        ["a"],
        "only the event without a status asks the runtime"
    );
    assert_eq!(
        cache.get("a").unwrap(),
        PodStatus {
            id: "a".into(),
            ..PodStatus::default()
        },
        "sandbox deleted: pod dropped"
    );
    assert_eq!(pleg.relist_duration(), RelistDuration::GENERIC);
    assert!(evented.healthy().is_ok());
    assert!(drain(&mut rx).is_empty());
}

/// A relist updates upstream's PLEG metrics: the relist duration and interval, the
/// running pods and containers; a health check sets `kubelet_pleg_last_seen_seconds`.
#[tokio::test]
async fn relist_updates_the_pleg_metrics() {
    let (runtime, _cache, pleg, _rx) = setup();
    let mut running = pod(
        "m1",
        vec![
            container("a", ContainerState::Running),
            container("b", ContainerState::Running),
            container("c", ContainerState::Exited),
        ],
    );
    running.sandboxes = vec![container("s1", ContainerState::Running)];
    let mut stopped = pod("m2", vec![]);
    stopped.sandboxes = vec![container("s2", ContainerState::Exited)];
    runtime.set_pods(vec![running, stopped]);
    let m = kubelet_metrics::kubelet().unwrap();
    let durations = m.pleg_relist_duration.get_sample_count();
    let intervals = m.pleg_relist_interval.get_sample_count();
    pleg.relist().await;
    pleg.relist().await;
    assert!(m.pleg_relist_duration.get_sample_count() >= durations + 2);
    assert!(m.pleg_relist_interval.get_sample_count() > intervals);
    // Other tests relist other pods concurrently; these are the gauges' last values of
    // this test's relists only when no other runs in between, so check the family.
    let text = String::from_utf8(
        kubelet_metrics::scrape(kubelet_metrics::legacy_registry().unwrap(), None).body,
    )
    .unwrap();
    assert!(text.contains("kubelet_running_containers{container_state=\"running\"}"));
    assert!(text.contains("\nkubelet_running_pods "));
    pleg.healthy().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as f64;
    assert!(
        (now - m.pleg_last_seen.get()).abs() <= 2.0,
        "{}",
        m.pleg_last_seen.get()
    );
}

#[tokio::test(start_paused = true)]
async fn running_pods_of_the_last_listing_only_when_listed_after() {
    let (runtime, _cache, pleg, _rx) = setup();
    let before = Instant::now();
    assert!(pleg.running_pods_listed_after(before).await.is_none());
    let mut exited_only = pod("b", vec![container("c3", ContainerState::Exited)]);
    exited_only
        .sandboxes
        .push(container("s2", ContainerState::Exited));
    let mut mixed = pod(
        "a",
        vec![
            container("c1", ContainerState::Running),
            container("c2", ContainerState::Exited),
        ],
    );
    mixed
        .sandboxes
        .push(container("s1", ContainerState::Running));
    runtime.set_pods(vec![mixed, exited_only]);
    tokio::time::advance(Duration::from_millis(10)).await;
    pleg.relist().await;

    let running = pleg.running_pods_listed_after(before).await.unwrap();
    assert_eq!(running.len(), 1, "the pod with nothing running is left out");
    assert_eq!(running[0].id, "a");
    let ids = |cs: &[Container]| cs.iter().map(|c| c.id.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&running[0].containers), ["c1"]);
    assert_eq!(ids(&running[0].sandboxes), ["s1"]);

    // A listing started before `after` does not count.
    tokio::time::advance(Duration::from_millis(10)).await;
    assert!(
        pleg.running_pods_listed_after(Instant::now())
            .await
            .is_none()
    );
}
