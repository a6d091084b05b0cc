//! Behaviour of the real pod workers against the recording syncer
//! (upstream `pod_workers_test.go`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod as ApiPod, PodSpec, PodStatus as ApiPodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubelet_container::kubetypes::{CONFIG_SOURCE_ANNOTATION_KEY, FILE_SOURCE};
use kubelet_container::{Cache, Pod as RuntimePod, SyncPodType};
use tokio::time::Instant;

use crate::fake::{FakePodSyncer, FakePodWorkers, SyncerCall};
use crate::*;

struct Harness {
    workers: PodWorkers,
    syncer: Arc<FakePodSyncer>,
    cache: Arc<Cache>,
    queue: Arc<WorkQueue>,
}

/// Real workers with a fake syncer and a fake PLEG refreshing the cache every 10 ms.
fn harness() -> Harness {
    let syncer = Arc::new(FakePodSyncer::new());
    let cache = Arc::new(Cache::new());
    let queue = Arc::new(WorkQueue::new());
    let config = PodWorkersConfig {
        jitter: false,
        ..PodWorkersConfig::default()
    };
    let workers = PodWorkers::new(syncer.clone(), cache.clone(), queue.clone(), config);
    let pleg_cache = cache.clone();
    tokio::spawn(async move {
        loop {
            pleg_cache.update_time(Instant::now());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    Harness {
        workers,
        syncer,
        cache,
        queue,
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

fn pod(uid: &str, generation: i64) -> Arc<ApiPod> {
    Arc::new(ApiPod {
        metadata: ObjectMeta {
            uid: Some(uid.into()),
            name: Some(format!("pod-{uid}")),
            namespace: Some("ns".into()),
            generation: Some(generation),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            termination_grace_period_seconds: Some(30),
            ..PodSpec::default()
        }),
        ..ApiPod::default()
    })
}

fn static_pod(uid: &str) -> Arc<ApiPod> {
    let mut p = (*pod(uid, 1)).clone();
    p.metadata.name = Some("etcd".into());
    p.metadata.annotations = Some(
        [(
            CONFIG_SOURCE_ANNOTATION_KEY.to_string(),
            FILE_SOURCE.to_string(),
        )]
        .into(),
    );
    Arc::new(p)
}

fn update(t: SyncPodType, p: &Arc<ApiPod>) -> UpdatePodOptions {
    UpdatePodOptions::new(t, p.clone())
}

fn kill(p: &Arc<ApiPod>, grace: Option<i64>) -> UpdatePodOptions {
    UpdatePodOptions {
        kill_pod_options: Some(KillPodOptions {
            grace_period_override: grace,
            ..KillPodOptions::default()
        }),
        ..update(SyncPodType::Kill, p)
    }
}

fn sync_call(uid: &str, t: SyncPodType, generation: i64) -> SyncerCall {
    SyncerCall::SyncPod {
        uid: uid.into(),
        update_type: t,
        generation: Some(generation),
    }
}

fn terminating(uid: &str, grace: i64) -> SyncerCall {
    SyncerCall::SyncTerminatingPod {
        uid: uid.into(),
        grace_period: Some(grace),
        has_status_fn: false,
    }
}

fn terminated(uid: &str) -> SyncerCall {
    SyncerCall::SyncTerminatedPod { uid: uid.into() }
}

#[tokio::test(start_paused = true)]
async fn create_calls_sync_pod_and_schedules_resync() {
    let h = harness();
    assert!(
        h.workers.could_have_running_containers("a"),
        "true before the first sync_known_pods"
    );
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    assert_eq!(h.syncer.calls(), [sync_call("a", SyncPodType::Create, 1)]);
    assert_eq!(h.workers.pod_state("a"), Some(PodWorkerState::Sync));
    assert!(!h.workers.is_working("a"));
    let due = h.queue.due_at("a").unwrap() - Instant::now();
    assert!(
        due > Duration::from_secs(59) && due <= DEFAULT_RESYNC_INTERVAL,
        "{due:?}"
    );
    assert_eq!(
        h.workers.active_pod("a").unwrap().metadata.generation,
        Some(1)
    );
}

#[tokio::test(start_paused = true)]
async fn rapid_updates_coalesce_to_the_latest() {
    let h = harness();
    h.syncer.block("a");
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    for generation in 2..=4 {
        h.workers
            .update_pod(update(SyncPodType::Update, &pod("a", generation)));
    }
    h.syncer.release("a");
    settle().await;
    assert_eq!(
        h.syncer.calls(),
        [
            sync_call("a", SyncPodType::Create, 1),
            sync_call("a", SyncPodType::Update, 4)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn kill_runs_terminating_then_terminated() {
    let h = harness();
    let p = pod("a", 1);
    h.workers.update_pod(update(SyncPodType::Create, &p));
    settle().await;
    assert_eq!(h.workers.last_termination(), None);
    let before_kill = tokio::time::Instant::now();
    h.workers.update_pod(kill(&p, None));
    assert!(h.workers.is_pod_termination_requested("a"));
    settle().await;
    assert!(
        h.workers.last_termination() >= Some(before_kill),
        "a finished termination is noted for housekeeping"
    );
    assert_eq!(
        h.syncer.calls(),
        [
            sync_call("a", SyncPodType::Create, 1),
            terminating("a", 30),
            terminated("a")
        ]
    );
    assert!(h.workers.is_pod_known_terminated("a"));
    assert!(!h.workers.could_have_running_containers("a"));
    assert!(h.workers.should_pod_containers_be_terminating("a"));
    assert!(h.workers.should_pod_runtime_be_removed("a"));
    assert!(h.workers.should_pod_be_finished("a"));
    assert!(
        !h.workers.should_pod_content_be_removed("a"),
        "killed, not deleted nor evicted"
    );

    // A finished pod ignores further updates.
    h.workers
        .update_pod(update(SyncPodType::Update, &pod("a", 2)));
    settle().await;
    assert_eq!(h.syncer.calls().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn deletion_timestamp_starts_termination_with_deletion_grace() {
    let h = harness();
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    let mut deleted = (*pod("a", 2)).clone();
    deleted.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    deleted.metadata.deletion_grace_period_seconds = Some(7);
    h.workers
        .update_pod(update(SyncPodType::Update, &Arc::new(deleted)));
    settle().await;
    assert_eq!(
        h.syncer.calls()[1..],
        [terminating("a", 7), terminated("a")]
    );
    assert!(
        h.workers.should_pod_content_be_removed("a"),
        "deleted and terminated"
    );
}

#[tokio::test(start_paused = true)]
async fn grace_period_can_only_shorten_and_cancels_running_sync() {
    let h = harness();
    let p = pod("a", 1);
    h.workers.update_pod(update(SyncPodType::Create, &p));
    settle().await;
    h.syncer.block("a");
    h.workers.update_pod(kill(&p, Some(30)));
    settle().await;
    h.workers.update_pod(kill(&p, Some(5)));
    settle().await;
    h.workers.update_pod(kill(&p, Some(60)));
    h.syncer.release("a");
    settle().await;
    assert_eq!(
        h.syncer.calls(),
        [
            sync_call("a", SyncPodType::Create, 1),
            terminating("a", 30),
            terminating("a", 5),
            terminated("a")
        ],
        "the 30 s call is cancelled and retried at 5 s; the 60 s kill neither lengthens nor cancels"
    );
}

#[tokio::test(start_paused = true)]
async fn errors_requeue_with_backoff() {
    let h = harness();
    h.syncer
        .inject_error("sync_pod", PodSyncError::Failed("boom".into()));
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    let due = h.queue.due_at("a").unwrap() - Instant::now();
    assert!(
        due > Duration::from_secs(9) && due <= DEFAULT_BACKOFF_PERIOD,
        "{due:?}"
    );

    h.syncer
        .inject_error("sync_pod", PodSyncError::NetworkNotReady("cni".into()));
    h.workers
        .update_pod(update(SyncPodType::Sync, &pod("a", 1)));
    settle().await;
    let due = h.queue.due_at("a").unwrap() - Instant::now();
    assert!(due <= TRANSIENT_ERROR_BACKOFF, "{due:?}");
    assert_eq!(h.syncer.calls().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn terminating_error_is_retried_on_next_update() {
    let h = harness();
    let p = pod("a", 1);
    h.workers.update_pod(update(SyncPodType::Create, &p));
    settle().await;
    h.syncer.inject_error(
        "sync_terminating_pod",
        PodSyncError::Failed("kill failed".into()),
    );
    h.workers.update_pod(kill(&p, None));
    settle().await;
    assert!(!h.workers.is_pod_known_terminated("a"));
    // The sync loop resyncs queued pods with a Sync update; it becomes a kill.
    h.workers.update_pod(update(SyncPodType::Sync, &p));
    settle().await;
    assert_eq!(
        h.syncer.calls()[1..],
        [terminating("a", 30), terminating("a", 30), terminated("a")]
    );
}

#[tokio::test(start_paused = true)]
async fn terminal_sync_pod_moves_to_terminated() {
    let h = harness();
    h.syncer.set_terminal("a");
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    // Natural completion passes no grace period: the runtime uses the pod's own (as upstream).
    let natural = SyncerCall::SyncTerminatingPod {
        uid: "a".into(),
        grace_period: None,
        has_status_fn: false,
    };
    assert_eq!(
        h.syncer.calls(),
        [
            sync_call("a", SyncPodType::Create, 1),
            natural,
            terminated("a")
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn sync_known_pods_forgets_finished_and_terminates_orphans() {
    let h = harness();
    let (a, b) = (pod("a", 1), pod("b", 1));
    h.workers.update_pod(update(SyncPodType::Create, &a));
    h.workers.update_pod(update(SyncPodType::Create, &b));
    settle().await;
    h.workers.update_pod(kill(&a, None));
    settle().await;
    assert!(h.workers.should_pod_be_finished("a"));

    let known = h.workers.sync_known_pods(["b"]);
    assert!(!known.contains_key("a"), "finished orphan is forgotten");
    assert_eq!(
        known["b"],
        PodWorkerSync {
            state: PodWorkerState::Sync,
            orphan: false,
            has_config: true,
            static_: false
        }
    );
    assert!(!h.workers.is_pod_known_terminated("a"));
    assert!(
        h.workers.should_pod_content_be_removed("a"),
        "unknown pods after the first sync"
    );
    assert!(!h.workers.could_have_running_containers("a"));

    // b is no longer desired: it is terminated by the workers themselves.
    let known = h.workers.sync_known_pods([]);
    assert_eq!(known["b"].state, PodWorkerState::Terminating);
    assert!(known["b"].orphan);
    settle().await;
    assert_eq!(
        h.syncer.calls_for("b")[1..],
        [terminating("b", 30), terminated("b")]
    );
    assert!(h.workers.sync_known_pods([]).is_empty());
}

#[tokio::test(start_paused = true)]
async fn unstarted_orphan_is_forgotten_without_sync() {
    let h = harness();
    // s2 cannot start while s1 (same static pod full name) runs.
    h.workers
        .update_pod(update(SyncPodType::Create, &static_pod("s1")));
    h.workers
        .update_pod(update(SyncPodType::Create, &static_pod("s2")));
    settle().await;
    assert_eq!(h.workers.pod_state("s2"), Some(PodWorkerState::Sync));
    let known = h.workers.sync_known_pods(["s1"]);
    assert!(!known.contains_key("s2"));
    settle().await;
    assert!(
        h.syncer.calls_for("s2").is_empty(),
        "never started, so no terminating sync"
    );
    assert_eq!(h.workers.pod_state("s2"), None);
    assert!(!h.workers.could_have_running_containers("s2"));
}

#[tokio::test(start_paused = true)]
async fn runtime_pod_kill_calls_runtime_terminate_and_forgets() {
    let h = harness();
    let rp = RuntimePod {
        id: "orphan".into(),
        name: "old".into(),
        namespace: "ns".into(),
        ..RuntimePod::default()
    };
    h.workers.update_pod(UpdatePodOptions {
        update_type: SyncPodType::Sync,
        ..UpdatePodOptions::kill_runtime_pod(Arc::new(rp.clone()))
    });
    settle().await;
    assert!(
        h.syncer.calls().is_empty(),
        "runtime pods can only be killed"
    );
    h.workers
        .update_pod(UpdatePodOptions::kill_runtime_pod(Arc::new(rp)));
    settle().await;
    assert_eq!(
        h.syncer.calls(),
        [SyncerCall::SyncTerminatingRuntimePod {
            uid: "orphan".into()
        }]
    );
    assert_eq!(
        h.workers.pod_state("orphan"),
        None,
        "transient, not tracked after termination"
    );
    assert!(h.workers.last_termination().is_some());
}

#[tokio::test(start_paused = true)]
async fn kill_pod_now_waits_for_termination_or_times_out() {
    let h = harness();
    let p = pod("a", 1);
    h.workers.update_pod(update(SyncPodType::Create, &p));
    settle().await;
    let status_fn: PodStatusFn = Arc::new(|s: &mut ApiPodStatus| s.phase = Some("Failed".into()));
    h.workers
        .kill_pod_now(p, true, Some(0), Some(status_fn))
        .await
        .unwrap();
    assert!(h.workers.is_pod_known_terminated("a"));
    assert!(h.workers.should_pod_content_be_removed("a"), "evicted");
    assert_eq!(
        h.syncer.calls()[1],
        SyncerCall::SyncTerminatingPod {
            uid: "a".into(),
            grace_period: Some(1),
            has_status_fn: true
        }
    );

    let b = pod("b", 1);
    h.workers.update_pod(update(SyncPodType::Create, &b));
    settle().await;
    h.syncer.block("b");
    let start = Instant::now();
    let err = h
        .workers
        .kill_pod_now(b, false, Some(2), None)
        .await
        .unwrap_err();
    assert_eq!(err.waited, Duration::from_secs(10));
    assert!(Instant::now() - start >= Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn static_pods_with_same_name_start_one_at_a_time() {
    let h = harness();
    let (first, second) = (static_pod("s1"), static_pod("s2"));
    h.workers.update_pod(update(SyncPodType::Create, &first));
    h.workers.update_pod(update(SyncPodType::Create, &second));
    settle().await;
    assert!(
        h.syncer.calls_for("s2").is_empty(),
        "waits for s1 with the same full name"
    );
    assert!(h.queue.due_at("s2").is_some(), "requeued for a later try");
    assert!(
        !h.workers
            .is_pod_for_mirror_pod_terminating_by_full_name("etcd_ns")
    );

    h.syncer.block("s1");
    h.workers.update_pod(kill(&first, None));
    settle().await;
    assert!(
        h.workers
            .is_pod_for_mirror_pod_terminating_by_full_name("etcd_ns")
    );
    h.syncer.release("s1");
    settle().await;
    h.workers.update_pod(update(SyncPodType::Sync, &second));
    settle().await;
    assert_eq!(
        h.syncer.calls_for("s2"),
        [sync_call("s2", SyncPodType::Sync, 1)]
    );
}

#[tokio::test(start_paused = true)]
async fn create_while_terminating_restarts_after_sync_known_pods() {
    let h = harness();
    let p = pod("a", 1);
    h.workers.update_pod(update(SyncPodType::Create, &p));
    settle().await;
    h.syncer.block("a");
    h.workers.update_pod(kill(&p, None));
    settle().await;
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 2)));
    h.syncer.release("a");
    settle().await;
    assert!(h.workers.should_pod_be_finished("a"));
    let known = h.workers.sync_known_pods(["a"]);
    assert!(
        !known.contains_key("a"),
        "history removed so the caller re-adds it"
    );
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 2)));
    settle().await;
    assert_eq!(
        h.syncer.calls().last(),
        Some(&sync_call("a", SyncPodType::Create, 2))
    );
}

#[tokio::test(start_paused = true)]
async fn terminal_pod_seen_first_after_restart_only_runs_terminated() {
    let h = harness();
    let mut p = (*pod("a", 1)).clone();
    p.status = Some(ApiPodStatus {
        phase: Some("Succeeded".into()),
        ..ApiPodStatus::default()
    });
    h.workers
        .update_pod(update(SyncPodType::Create, &Arc::new(p)));
    assert!(h.workers.is_pod_known_terminated("a"));
    settle().await;
    assert_eq!(h.syncer.calls(), [terminated("a")]);
    assert!(h.cache.get("a").is_ok());
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_workers() {
    let h = harness();
    h.syncer.block("a");
    h.workers
        .update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    h.workers.shutdown();
    settle().await;
    h.workers
        .update_pod(update(SyncPodType::Update, &pod("a", 2)));
    settle().await;
    assert_eq!(h.syncer.calls().len(), 1, "no sync after shutdown");
}

/// The fake pod workers call the syncer like the real ones do (upstream `TestFakePodWorkers`).
#[tokio::test(start_paused = true)]
async fn fake_pod_workers_match_real_contract() {
    let real = harness();
    let fake_syncer = Arc::new(FakePodSyncer::new());
    let fake = FakePodWorkers::new(fake_syncer.clone(), Arc::new(Cache::new()));
    let steps = [
        (SyncPodType::Create, 1),
        (SyncPodType::Update, 2),
        (SyncPodType::Sync, 2),
    ];
    for (t, generation) in steps {
        let p = pod("a", generation);
        real.workers.update_pod(update(t, &p));
        settle().await;
        fake.update_pod(update(t, &p)).await.unwrap();
    }
    assert_eq!(real.syncer.calls(), fake_syncer.calls());

    fake_syncer.set_terminal("a");
    fake.update_pod(update(SyncPodType::Sync, &pod("a", 2)))
        .await
        .unwrap();
    fake.update_pod(kill(&pod("a", 2), None)).await.unwrap();
    fake.with_state(|s| {
        assert_eq!(s.triggered_terminal, ["a"]);
        assert_eq!(s.triggered_deletion, ["a"]);
    });
}

/// A syncer whose `sync_pod` hangs in a CRI call and never looks at its token, as a
/// hung image pull or postStart hook does.
struct HungPullSyncer {
    image: Arc<kubelet_cri::fake::FakeImageService>,
}

#[async_trait::async_trait]
impl PodSyncer for HungPullSyncer {
    async fn sync_pod(
        &self,
        _cancel: &tokio_util::sync::CancellationToken,
        _update_type: SyncPodType,
        _pod: &ApiPod,
        _mirror_pod: Option<&ApiPod>,
        _pod_status: &kubelet_container::PodStatus,
    ) -> Result<bool, PodSyncError> {
        use kubelet_cri::ImageService;
        let spec = kubelet_cri::v1::ImageSpec {
            image: "busybox:1.36".into(),
            ..Default::default()
        };
        self.image
            .pull_image(&spec, None, None)
            .await
            .map_err(|e| PodSyncError::Failed(e.to_string()))?;
        Ok(false)
    }

    async fn sync_terminating_pod(
        &self,
        _cancel: &tokio_util::sync::CancellationToken,
        _pod: &ApiPod,
        _pod_status: &kubelet_container::PodStatus,
        _grace_period: Option<i64>,
        _pod_status_fn: Option<&PodStatusFn>,
    ) -> Result<(), PodSyncError> {
        Ok(())
    }

    async fn sync_terminating_runtime_pod(
        &self,
        _cancel: &tokio_util::sync::CancellationToken,
        _running_pod: &RuntimePod,
    ) -> Result<(), PodSyncError> {
        Ok(())
    }

    async fn sync_terminated_pod(
        &self,
        _cancel: &tokio_util::sync::CancellationToken,
        _pod: &ApiPod,
        _pod_status: &kubelet_container::PodStatus,
    ) -> Result<(), PodSyncError> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn killing_a_pod_cancels_a_sync_stuck_in_the_runtime() {
    let image = Arc::new(kubelet_cri::fake::FakeImageService::new());
    image.set_delay("PullImage", Duration::from_secs(24 * 3600));
    let cache = Arc::new(Cache::new());
    let workers = PodWorkers::new(
        Arc::new(HungPullSyncer {
            image: image.clone(),
        }),
        cache.clone(),
        Arc::new(WorkQueue::new()),
        PodWorkersConfig {
            jitter: false,
            ..PodWorkersConfig::default()
        },
    );
    let pleg_cache = cache.clone();
    tokio::spawn(async move {
        loop {
            pleg_cache.update_time(Instant::now());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let p = pod("a", 1);
    workers.update_pod(update(SyncPodType::Create, &p));
    settle().await;
    assert_eq!(
        image.called(),
        ["PullImage"],
        "the sync is stuck in the pull"
    );
    assert!(image.abandoned().is_empty());

    let killed = workers.kill_pod_now(p, false, Some(0), None).await;
    assert_eq!(
        killed,
        Ok(()),
        "the kill completes although the pull never returns"
    );
    assert!(workers.is_pod_known_terminated("a"));
    assert_eq!(
        image.abandoned(),
        ["PullImage"],
        "the hung pull's future was dropped (its gRPC call cancelled)"
    );
}

/// `syncFrequency` (the support table's proof): the resync interval decides when a synced
/// pod is due again.
#[tokio::test(start_paused = true)]
async fn resync_interval_decides_when_a_synced_pod_is_due_again() {
    let syncer = Arc::new(FakePodSyncer::new());
    let cache = Arc::new(Cache::new());
    cache.update_time(Instant::now());
    let queue = Arc::new(WorkQueue::new());
    let config = PodWorkersConfig {
        resync_interval: Duration::from_secs(7),
        jitter: false,
        ..PodWorkersConfig::default()
    };
    let workers = PodWorkers::new(syncer.clone(), cache, queue.clone(), config);
    workers.update_pod(update(SyncPodType::Create, &pod("a", 1)));
    settle().await;
    assert_eq!(syncer.calls(), [sync_call("a", SyncPodType::Create, 1)]);
    let due = queue.due_at("a").unwrap() - Instant::now();
    assert!(
        due > Duration::from_secs(6) && due <= Duration::from_secs(7),
        "{due:?}"
    );
}
