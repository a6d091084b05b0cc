//! Tests of `manager.rs` with recording fakes, after upstream's `eviction_manager_test.go`.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kubelet_admission::{PodAdmitAttributes, PodAdmitHandler};
use kubelet_apimachinery::eviction::Threshold;
use kubelet_container::FakeRecorder;
use kubelet_stats::types::{FsStats, PodStats, RlimitStats, Summary};

use crate::helpers::NodeConditionType;
use crate::helpers_tests::{mi, pod, pod_stats, summary_with_memory, t, thresholds};
use crate::manager::*;
use crate::threshold_notifier_tests::{FakeNotifierFactory, memory_summary};

#[derive(Default)]
struct FakeSummary {
    summary: Mutex<Summary>,
    /// Applied after a node-level reclaim ran (what the reclaim freed).
    after_reclaim: Mutex<Option<Summary>>,
    /// `get` (full) and `get_without_pods` calls, in order.
    calls: Mutex<Vec<&'static str>>,
}

#[async_trait::async_trait]
impl SummaryProvider for FakeSummary {
    async fn get(&self, _: bool) -> Result<Summary, String> {
        self.calls.lock().unwrap().push("full");
        Ok(self.summary.lock().unwrap().clone())
    }

    async fn get_without_pods(&self) -> Result<Summary, String> {
        self.calls.lock().unwrap().push("without pods");
        let mut s = self.summary.lock().unwrap().clone();
        s.pods.clear();
        Ok(s)
    }
}

struct FakeDisk(bool);

#[async_trait::async_trait]
impl DiskInfoProvider for FakeDisk {
    async fn has_dedicated_image_fs(&self) -> Result<bool, String> {
        Ok(self.0)
    }
}

#[derive(Default)]
struct FakeGc {
    calls: Mutex<Vec<&'static str>>,
    summary: Option<Arc<FakeSummary>>,
}

impl FakeGc {
    fn reclaim(&self, what: &'static str) {
        self.calls.lock().unwrap().push(what);
        if let Some(s) = &self.summary
            && let Some(after) = s.after_reclaim.lock().unwrap().clone()
        {
            *s.summary.lock().unwrap() = after;
        }
    }
}

#[async_trait::async_trait]
impl ContainerGc for FakeGc {
    async fn delete_all_unused_containers(&self) -> Result<(), String> {
        self.reclaim("containers");
        Ok(())
    }
    async fn is_container_fs_separate_from_image_fs(&self) -> bool {
        false
    }
}

#[async_trait::async_trait]
impl ImageGc for FakeGc {
    async fn delete_unused_images(&self) -> Result<(), String> {
        self.reclaim("images");
        Ok(())
    }
}

#[derive(Default)]
struct FakeTerminator {
    pods: Mutex<Vec<Arc<Pod>>>,
    killed: Mutex<Vec<(String, i64, EvictionStatus)>>,
}

#[async_trait::async_trait]
impl PodTerminator for FakeTerminator {
    fn active_pods(&self) -> Vec<Arc<Pod>> {
        self.pods.lock().unwrap().clone()
    }
    async fn kill_pod(&self, pod: &Pod, grace: i64, status: EvictionStatus) -> Result<(), String> {
        self.killed
            .lock()
            .unwrap()
            .push((pod.metadata.name.clone().unwrap(), grace, status));
        Ok(())
    }
    fn pod_cleaned_up(&self, _: &Pod) -> bool {
        true
    }
}

struct FakeClock(Mutex<Instant>);

impl FakeClock {
    fn step(&self, d: Duration) {
        *self.0.lock().unwrap() += d;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }
}

struct Harness {
    manager: Arc<ManagerImpl>,
    summary: Arc<FakeSummary>,
    gc: Arc<FakeGc>,
    terminator: Arc<FakeTerminator>,
    clock: Arc<FakeClock>,
    recorder: Arc<FakeRecorder>,
    time: std::cell::Cell<i64>,
}

impl Harness {
    fn new(thresholds: Vec<Threshold>, transition: Duration, max_grace: i64) -> Self {
        Self::build(thresholds, transition, max_grace, None, true)
    }

    /// With `kernelMemcgNotification` and the given notifier factory.
    fn with_memcg(thresholds: Vec<Threshold>, factory: Arc<FakeNotifierFactory>) -> Self {
        Self::build(thresholds, Duration::from_secs(300), 0, Some(factory), true)
    }

    fn build(
        thresholds: Vec<Threshold>,
        transition: Duration,
        max_grace: i64,
        memcg: Option<Arc<FakeNotifierFactory>>,
        local_storage_capacity_isolation: bool,
    ) -> Self {
        let summary = Arc::new(FakeSummary::default());
        let gc = Arc::new(FakeGc {
            summary: Some(summary.clone()),
            ..FakeGc::default()
        });
        let terminator = Arc::new(FakeTerminator::default());
        let clock = Arc::new(FakeClock(Mutex::new(Instant::now())));
        let recorder = Arc::new(FakeRecorder::new());
        let manager = ManagerImpl::new(
            Config {
                pressure_transition_period: transition,
                max_pod_grace_period_seconds: max_grace,
                thresholds,
                kernel_memcg_notification: memcg.is_some(),
                pod_cgroup_root: "/kubepods".to_string(),
                separate_disk_gc: true,
                local_storage_capacity_isolation,
                pod_level_resources: true,
            },
            Deps {
                summary: summary.clone(),
                disk_info: Arc::new(FakeDisk(false)),
                terminator: terminator.clone(),
                image_gc: Some(gc.clone()),
                container_gc: gc.clone(),
                recorder: recorder.clone(),
                node_ref: kubelet_container::events::node_ref("node"),
                clock: clock.clone(),
                notifier_factory: memcg.unwrap_or_default(),
            },
        );
        Harness {
            manager,
            summary,
            gc,
            terminator,
            clock,
            recorder,
            time: std::cell::Cell::new(0),
        }
    }

    /// A fresh summary (newer stats time) with node memory and the given pod stats.
    fn memory(&self, available: u64, pods: Vec<PodStats>) {
        self.time.set(self.time.get() + 10);
        let mut s = summary_with_memory(available, mi(8000), t(self.time.get()));
        s.pods = pods;
        *self.summary.summary.lock().unwrap() = s;
    }

    fn killed(&self) -> Vec<(String, i64, EvictionStatus)> {
        self.terminator.killed.lock().unwrap().clone()
    }

    fn admit(&self, p: &Pod) -> kubelet_admission::PodAdmitResult {
        EvictionAdmitHandler(self.manager.clone()).admit(&PodAdmitAttributes {
            pod: p,
            other_pods: &[],
        })
    }
}

fn static_pod(name: &str) -> Arc<Pod> {
    let mut p = (*pod(name, 0, &[], &[])).clone();
    p.metadata.annotations = Some(
        [(
            "kubernetes.io/config.source".to_string(),
            "file".to_string(),
        )]
        .into_iter()
        .collect(),
    );
    Arc::new(p)
}

/// Upstream TestMemoryPressure: a hard memory threshold; the BestEffort pod using the most
/// is evicted with grace 1 and upstream's message; MemoryPressure holds for the transition
/// period; admission refuses BestEffort pods meanwhile.
#[tokio::test]
async fn memory_pressure_evicts_best_effort_and_holds_condition() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::from_secs(300),
        5,
    );
    let best_effort = pod("best-effort-hog", 0, &[], &[]);
    let guaranteed = pod(
        "guaranteed",
        0,
        &[("memory", "1Gi"), ("cpu", "100m")],
        &[("memory", "1Gi"), ("cpu", "100m")],
    );
    let burstable = pod("burstable", 0, &[("memory", "100Mi")], &[]);
    *h.terminator.pods.lock().unwrap() =
        vec![guaranteed.clone(), best_effort.clone(), burstable.clone()];
    let stats = || {
        vec![
            pod_stats(&best_effort, mi(600), 0, 0, 0, 0),
            pod_stats(&guaranteed, mi(500), 0, 0, 0, 0),
            pod_stats(&burstable, mi(50), 0, 0, 0, 0),
        ]
    };

    // No pressure.
    h.memory(mi(2048), stats());
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert!(!h.manager.is_under_memory_pressure());
    assert!(h.admit(&best_effort).admit);

    // Under the threshold: evict the BestEffort pod.
    h.clock.step(Duration::from_secs(10));
    h.memory(mi(500), stats());
    let evicted = h.manager.synchronize().await.unwrap().remove(0);
    assert_eq!(evicted.metadata.name.as_deref(), Some("best-effort-hog"));
    assert!(h.manager.is_under_memory_pressure());
    let killed = h.killed();
    assert_eq!(killed.len(), 1);
    assert_eq!(
        killed[0].1, 1,
        "hard threshold: immediateEvictionGracePeriodSeconds"
    );
    assert_eq!(killed[0].2.reason, "Evicted");
    assert_eq!(
        killed[0].2.message,
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. \
         Container best-effort-hog was using 600Mi, request is 0, has larger consumption of memory. "
    );
    assert!(
        h.recorder
            .lines()
            .contains(&"Warning EvictionThresholdMet Attempting to reclaim memory".to_string())
    );
    assert!(
        h.recorder
            .lines()
            .contains(&format!("Warning Evicted {}", killed[0].2.message))
    );
    // The Evicted event carries upstream's annotations.
    let evicted_event = h
        .recorder
        .events()
        .into_iter()
        .find(|e| e.reason == "Evicted")
        .unwrap();
    assert_eq!(
        evicted_event.annotations["offending_containers"],
        "best-effort-hog"
    );
    assert_eq!(evicted_event.annotations["starved_resource"], "memory");
    // Memory signals have no node-level reclaim.
    assert!(h.gc.calls.lock().unwrap().is_empty());

    // Admission under memory pressure: BestEffort refused, others admitted, critical too.
    let r = h.admit(&best_effort);
    assert!(!r.admit);
    assert_eq!(r.reason, "Evicted");
    assert_eq!(r.message, "The node had condition: [MemoryPressure]. ");
    assert!(h.admit(&guaranteed).admit);
    assert!(h.admit(&burstable).admit);
    assert!(h.admit(&static_pod("static-best-effort")).admit);
    let mut tolerating = (*best_effort).clone();
    tolerating.spec.as_mut().unwrap().tolerations =
        Some(vec![k8s_openapi::api::core::v1::Toleration {
            key: Some("node.kubernetes.io/memory-pressure".into()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        }]);
    assert!(h.admit(&tolerating).admit);

    // Pressure relieved: the condition holds for the transition period, nothing evicted.
    *h.terminator.pods.lock().unwrap() = vec![guaranteed.clone(), burstable.clone()];
    h.clock.step(Duration::from_secs(10));
    h.memory(mi(2048), stats());
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert!(h.manager.is_under_memory_pressure());
    h.clock.step(Duration::from_secs(301));
    h.memory(mi(2048), stats());
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert!(!h.manager.is_under_memory_pressure());
    assert!(h.admit(&best_effort).admit);
    assert_eq!(h.killed().len(), 1);
}

/// Upstream: a critical pod is never evicted; the next ranked one is.
#[tokio::test]
async fn critical_pods_are_not_evicted() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::from_secs(0),
        0,
    );
    let critical = static_pod("static-hog");
    let mut system = (*pod("system-critical", 2_000_000_000, &[], &[])).clone();
    system.metadata.name = Some("system-critical".into());
    let system = Arc::new(system);
    let other = pod("other", 0, &[], &[]);
    *h.terminator.pods.lock().unwrap() = vec![critical.clone(), system.clone(), other.clone()];
    h.memory(
        mi(100),
        vec![
            pod_stats(&critical, mi(900), 0, 0, 0, 0),
            pod_stats(&system, mi(800), 0, 0, 0, 0),
            pod_stats(&other, mi(10), 0, 0, 0, 0),
        ],
    );
    let evicted = h.manager.synchronize().await.unwrap().remove(0);
    assert_eq!(evicted.metadata.name.as_deref(), Some("other"));
    // Only critical pods: nothing evicted.
    *h.terminator.pods.lock().unwrap() = vec![critical, system];
    h.memory(mi(100), vec![]);
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(h.killed().len(), 1);
}

/// Upstream TestMinReclaim: once met, a threshold stays met until available exceeds the
/// threshold plus the minimum reclaim.
#[tokio::test]
async fn min_reclaim_keeps_evicting_until_reclaimed() {
    let h = Harness::new(
        thresholds(
            &[("memory.available", "1Gi")],
            &[],
            &[],
            &[("memory.available", "500Mi")],
        ),
        Duration::from_secs(0),
        0,
    );
    let a = pod("a", 0, &[], &[]);
    *h.terminator.pods.lock().unwrap() = vec![a.clone()];
    let stats = || vec![pod_stats(&a, mi(100), 0, 0, 0, 0)];
    h.memory(mi(500), stats());
    assert!(!h.manager.synchronize().await.unwrap().is_empty());
    // 1.2Gi: above 1Gi, but not above 1Gi + 500Mi.
    h.memory(mi(1229), stats());
    assert!(!h.manager.synchronize().await.unwrap().is_empty());
    // 2Gi: resolved.
    h.memory(mi(2048), stats());
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(h.killed().len(), 2);
}

/// Soft thresholds wait for their grace period and evict with `evictionMaxPodGracePeriod`,
/// capped by the pod's own grace period.
#[tokio::test]
async fn soft_threshold_waits_for_grace_period() {
    let h = Harness::new(
        thresholds(
            &[],
            &[("memory.available", "2Gi")],
            &[("memory.available", "1m30s")],
            &[],
        ),
        Duration::from_secs(300),
        30,
    );
    let a = pod("a", 0, &[], &[]);
    let mut short = (*pod("short", 0, &[], &[])).clone();
    short
        .spec
        .as_mut()
        .unwrap()
        .termination_grace_period_seconds = Some(5);
    let short = Arc::new(short);
    *h.terminator.pods.lock().unwrap() = vec![a.clone()];
    h.memory(mi(1500), vec![pod_stats(&a, mi(100), 0, 0, 0, 0)]);
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    // The condition is reported at once, eviction waits.
    assert!(h.manager.is_under_memory_pressure());
    h.clock.step(Duration::from_secs(60));
    h.memory(mi(1500), vec![pod_stats(&a, mi(100), 0, 0, 0, 0)]);
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    h.clock.step(Duration::from_secs(31));
    h.memory(mi(1500), vec![pod_stats(&a, mi(100), 0, 0, 0, 0)]);
    assert!(!h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(h.killed()[0].1, 30);
    *h.terminator.pods.lock().unwrap() = vec![short.clone()];
    h.clock.step(Duration::from_secs(10));
    h.memory(mi(1500), vec![pod_stats(&short, mi(100), 0, 0, 0, 0)]);
    assert!(!h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(h.killed()[1].1, 5);
}

/// Stats not refreshed since the last round: no eviction (`thresholdsUpdatedStats`).
#[tokio::test]
async fn stale_stats_do_not_evict_twice() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::from_secs(0),
        0,
    );
    let a = pod("a", 0, &[], &[]);
    *h.terminator.pods.lock().unwrap() = vec![a.clone()];
    h.memory(mi(100), vec![pod_stats(&a, mi(100), 0, 0, 0, 0)]);
    assert!(!h.manager.synchronize().await.unwrap().is_empty());
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(h.killed().len(), 1);
}

fn disk_summary(h: &Harness, available: u64, pods: Vec<PodStats>) -> Summary {
    h.time.set(h.time.get() + 10);
    let fs = FsStats {
        time: t(h.time.get()),
        available_bytes: Some(available),
        capacity_bytes: Some(mi(100_000)),
        inodes_free: Some(1_000_000),
        inodes: Some(2_000_000),
        ..FsStats::default()
    };
    let mut s = summary_with_memory(mi(8000), mi(8000), t(h.time.get()));
    s.node.fs = Some(fs.clone());
    s.node.runtime = Some(kubelet_stats::types::RuntimeStats {
        image_fs: Some(fs.clone()),
        container_fs: Some(fs),
    });
    s.pods = pods;
    s
}

/// Upstream TestDiskPressureNodeFs + TestNodeReclaimFuncs: node-level reclaim first (dead
/// containers, then unused images); no eviction when it freed enough; all pods refused
/// under disk pressure.
#[tokio::test]
async fn disk_pressure_reclaims_node_resources_first() {
    let h = Harness::new(
        thresholds(&[("nodefs.available", "1Gi")], &[], &[], &[]),
        Duration::from_secs(300),
        0,
    );
    let a = pod("a", 0, &[], &[]);
    let b = pod("b", 0, &[], &[]);
    *h.terminator.pods.lock().unwrap() = vec![a.clone(), b.clone()];
    let stats = || {
        vec![
            pod_stats(&a, 0, mi(10), mi(1), mi(1), 0),
            pod_stats(&b, 0, mi(500), mi(1), mi(1), 0),
        ]
    };
    // Reclaim frees enough.
    let low = disk_summary(&h, mi(500), stats());
    *h.summary.summary.lock().unwrap() = low;
    *h.summary.after_reclaim.lock().unwrap() = Some(disk_summary(&h, mi(5000), stats()));
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(*h.gc.calls.lock().unwrap(), ["containers", "images"]);
    assert!(h.manager.is_under_disk_pressure());
    let r = h.admit(&pod(
        "guaranteed",
        0,
        &[("memory", "1Gi"), ("cpu", "1")],
        &[("memory", "1Gi"), ("cpu", "1")],
    ));
    assert!(!r.admit);
    assert_eq!(r.message, "The node had condition: [DiskPressure]. ");
    assert!(h.killed().is_empty());

    // Reclaim does not free enough: the largest disk user is evicted.
    h.clock.step(Duration::from_secs(10));
    *h.summary.after_reclaim.lock().unwrap() = None;
    let low = disk_summary(&h, mi(500), stats());
    *h.summary.summary.lock().unwrap() = low;
    let evicted = h.manager.synchronize().await.unwrap().remove(0);
    assert_eq!(evicted.metadata.name.as_deref(), Some("b"));
    let killed = h.killed();
    assert!(
        killed[0]
            .2
            .message
            .starts_with("The node was low on resource: ephemeral-storage. Threshold quantity: 1Gi, available: 500Mi. "),
        "{}",
        killed[0].2.message
    );
}

/// PID pressure: `pid.available` from the rlimit stats; the pod with the most processes
/// (lowest priority first) is evicted.
#[tokio::test]
async fn pid_pressure_evicts_by_process_count() {
    let h = Harness::new(
        thresholds(&[("pid.available", "10%")], &[], &[], &[]),
        Duration::from_secs(300),
        0,
    );
    let few = pod("few", 0, &[], &[]);
    let many = pod("many", 0, &[], &[]);
    *h.terminator.pods.lock().unwrap() = vec![few.clone(), many.clone()];
    let mut s = summary_with_memory(mi(8000), mi(8000), t(1));
    s.node.rlimit = Some(RlimitStats {
        time: t(1),
        max_pid: Some(1000),
        num_of_running_processes: Some(950),
    });
    s.pods = vec![
        pod_stats(&few, 0, 0, 0, 0, 2),
        pod_stats(&many, 0, 0, 0, 0, 400),
    ];
    *h.summary.summary.lock().unwrap() = s;
    let evicted = h.manager.synchronize().await.unwrap().remove(0);
    assert_eq!(evicted.metadata.name.as_deref(), Some("many"));
    assert!(h.manager.is_under_pid_pressure());
    assert_eq!(
        h.manager.node_conditions(),
        [NodeConditionType::PidPressure]
    );
    assert!(h.killed()[0].2.message.starts_with(
        "The node was low on resource: pids. Threshold quantity: 100, available: 50. "
    ));
}

/// No thresholds: nothing is read (upstream returns at once).
#[tokio::test]
async fn no_thresholds_no_work() {
    let h = Harness::new(Vec::new(), Duration::from_secs(0), 0);
    h.memory(1, vec![]);
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert!(!h.manager.is_under_memory_pressure());
}

/// The loop wakes on `trigger` (memcg notification path) instead of waiting the period.
#[tokio::test(start_paused = true)]
async fn run_synchronizes_periodically_and_on_trigger() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::from_secs(300),
        0,
    );
    h.memory(mi(4000), vec![]);
    let m = h.manager.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(async move { m.run(Duration::from_secs(10)).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!h.manager.is_under_memory_pressure());
    h.memory(mi(100), vec![]);
    h.manager.trigger();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(h.manager.is_under_memory_pressure());
    stop.store(true, Ordering::Relaxed);
    task.abort();
}

/// `kernelMemcgNotification`: `Start` creates a notifier per memory threshold (the node one
/// on the memory mount, the allocatable one under the pod cgroup root, none for other
/// signals); each synchronize re-arms them at most every 10 s (`notifierRefreshInterval`),
/// and a kernel event triggers a round before the monitoring period.
#[tokio::test(start_paused = true)]
async fn memcg_notifiers_are_armed_after_synchronize_and_trigger_a_round() {
    let factory = Arc::new(FakeNotifierFactory::default());
    let h = Harness::with_memcg(
        thresholds(
            &[("memory.available", "1Gi"), ("nodefs.available", "10%")],
            &[],
            &[],
            &[],
        ),
        factory.clone(),
    );
    let mut s = memory_summary(mi(3000), mi(1000), mi(2000), false);
    s.node.fs = None;
    *h.summary.summary.lock().unwrap() = s;
    let m = h.manager.clone();
    let task = tokio::spawn(async move { m.run(Duration::from_secs(1000)).await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        h.manager.threshold_notifier_paths(),
        [std::path::PathBuf::from("/sys/fs/cgroup/memory")]
    );
    // capacity 4000Mi − 1Gi + inactive_file 1000Mi.
    assert_eq!(
        factory.armed(),
        [(
            "/sys/fs/cgroup/memory/memory.usage_in_bytes".to_string(),
            (mi(5000) - mi(1024)).cast_signed()
        )]
    );

    // The kernel signals: a round runs now (the period is 1000 s) and sees the pressure;
    // the refresh interval has not passed, so nothing is re-armed.
    *h.summary.summary.lock().unwrap() = memory_summary(mi(100), mi(3900), mi(3900), false);
    factory.fire_last();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(h.manager.is_under_memory_pressure());
    assert_eq!(factory.armed().len(), 1);

    // 11 s later the next triggered round re-arms, stopping the previous notifier.
    h.clock.step(Duration::from_secs(11));
    factory.fire_last();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(factory.armed().len(), 2);
    assert_eq!(factory.stopped(), 1);

    // Stopping the loop stops the armed notifier too.
    task.abort();
    let _ = task.await;
    assert!(h.manager.threshold_notifier_paths().is_empty());
    assert_eq!(factory.stopped(), 2);
}

/// Without `kernelMemcgNotification` no notifier is made.
#[tokio::test(start_paused = true)]
async fn no_memcg_notifiers_without_the_setting() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::from_secs(300),
        0,
    );
    h.memory(mi(4000), vec![]);
    let m = h.manager.clone();
    let task = tokio::spawn(async move { m.run(Duration::from_secs(10)).await });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(h.manager.threshold_notifier_paths().is_empty());
    task.abort();
}

/// A pod from JSON (name, namespace `default`, uid `uid-<name>`).
fn pod_json(name: &str, spec: serde_json::Value) -> Arc<Pod> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": spec,
        }))
        .unwrap(),
    )
}

fn empty_dir_pod(name: &str, size_limit: &str) -> Arc<Pod> {
    pod_json(
        name,
        serde_json::json!({
            "containers": [{"name": name, "image": "busybox"}],
            "volumes": [
                {"name": "plain", "emptyDir": {}},
                {"name": "scratch", "emptyDir": {"sizeLimit": size_limit}},
            ],
        }),
    )
}

fn fs(used: u64) -> FsStats {
    FsStats {
        time: crate::helpers_tests::t(0),
        used_bytes: Some(used),
        ..FsStats::default()
    }
}

/// Stats of a pod: its first container's rootfs and logs, the named volumes' usage, the
/// pod's ephemeral-storage usage.
fn storage_stats(
    p: &Pod,
    rootfs: u64,
    logs: u64,
    volumes: &[(&str, u64)],
    pod_total: Option<u64>,
) -> PodStats {
    let mut s = pod_stats(p, 0, rootfs, logs, 0, 0);
    if let Some(c) = p.spec.as_ref().and_then(|s| s.containers.first()) {
        s.containers[0].name.clone_from(&c.name);
    }
    s.volume_stats = volumes
        .iter()
        .map(|(n, u)| kubelet_stats::types::VolumeStats {
            name: (*n).to_string(),
            fs: fs(*u),
        })
        .collect();
    s.ephemeral_storage = pod_total.map(fs);
    s
}

/// Upstream `TestStorageLimitEvictions` (emptyDir case): with no threshold configured, a
/// pod whose emptyDir grows past its `sizeLimit` is evicted at once (grace 1) with
/// upstream's message and no `DisruptionTarget` condition; a pod under its limit and a
/// volume without limit are left alone.
#[tokio::test]
async fn local_storage_eviction_empty_dir_size_limit() {
    let h = Harness::new(Vec::new(), Duration::ZERO, 0);
    let over = empty_dir_pod("over", "10Mi");
    let under = empty_dir_pod("under", "100Mi");
    *h.terminator.pods.lock().unwrap() = vec![under.clone(), over.clone()];
    h.memory(
        mi(4000),
        vec![
            storage_stats(
                &under,
                0,
                0,
                &[("plain", mi(500)), ("scratch", mi(30))],
                None,
            ),
            storage_stats(&over, 0, 0, &[("plain", mi(1)), ("scratch", mi(30))], None),
        ],
    );
    let evicted = h.manager.synchronize().await.unwrap();
    let names: Vec<_> = evicted
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["over"]);
    let killed = h.killed();
    assert_eq!(killed.len(), 1);
    assert_eq!(killed[0].0, "over");
    assert_eq!(killed[0].1, 1, "immediateEvictionGracePeriodSeconds");
    assert_eq!(
        killed[0].2,
        EvictionStatus {
            reason: "Evicted".into(),
            message: "Usage of EmptyDir volume \"scratch\" exceeds the limit \"10Mi\". ".into(),
            condition_message: None,
        }
    );
    assert!(
        h.recorder
            .lines()
            .contains(&format!("Warning Evicted {}", killed[0].2.message))
    );
    // Node status is untouched: no pressure.
    assert!(h.manager.node_conditions().is_empty());
}

/// Upstream `podEphemeralStorageLimitEviction`: the pod's ephemeral-storage usage above
/// the sum of its containers' limits (the sum is shown in canonical form).
#[tokio::test]
async fn local_storage_eviction_pod_ephemeral_storage_limit() {
    let h = Harness::new(Vec::new(), Duration::ZERO, 0);
    let p = pod_json(
        "two",
        serde_json::json!({"containers": [
            {"name": "a", "image": "busybox", "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
            {"name": "b", "image": "busybox", "resources": {"limits": {"ephemeral-storage": "512Mi"}}},
        ]}),
    );
    *h.terminator.pods.lock().unwrap() = vec![p.clone()];
    // 1.4Gi in all: under the pod's 1536Mi.
    h.memory(
        mi(4000),
        vec![storage_stats(&p, mi(10), 0, &[], Some(mi(1434)))],
    );
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    h.memory(
        mi(4000),
        vec![storage_stats(&p, mi(10), 0, &[], Some(mi(1600)))],
    );
    assert_eq!(h.manager.synchronize().await.unwrap().len(), 1);
    assert_eq!(
        h.killed()[0].2.message,
        "Pod ephemeral local storage usage exceeds the total limit of containers 1536Mi. "
    );
}

/// Upstream `containerEphemeralStorageLimitEviction`: a container's writable layer plus
/// logs above its own limit.
#[tokio::test]
async fn local_storage_eviction_container_ephemeral_storage_limit() {
    let h = Harness::new(Vec::new(), Duration::ZERO, 0);
    let p = pod_json(
        "writer",
        serde_json::json!({"containers": [
            {"name": "w", "image": "busybox", "resources": {"limits": {"ephemeral-storage": "100Mi"}}},
        ]}),
    );
    *h.terminator.pods.lock().unwrap() = vec![p.clone()];
    h.memory(mi(4000), vec![storage_stats(&p, mi(80), mi(20), &[], None)]);
    assert!(
        h.manager.synchronize().await.unwrap().is_empty(),
        "100Mi is not above 100Mi"
    );
    h.memory(mi(4000), vec![storage_stats(&p, mi(80), mi(30), &[], None)]);
    assert_eq!(h.manager.synchronize().await.unwrap().len(), 1);
    assert_eq!(
        h.killed()[0].2.message,
        "Container w exceeded its local ephemeral storage limit \"100Mi\". "
    );
}

/// `localStorageCapacityIsolation: false`: upstream ignores the local storage limits (and
/// with no threshold the round does nothing).
#[tokio::test]
async fn local_storage_eviction_off_without_capacity_isolation() {
    let h = Harness::build(Vec::new(), Duration::ZERO, 0, None, false);
    let over = empty_dir_pod("over", "10Mi");
    *h.terminator.pods.lock().unwrap() = vec![over.clone()];
    h.memory(
        mi(4000),
        vec![storage_stats(&over, 0, 0, &[("scratch", mi(30))], None)],
    );
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    let h = Harness::build(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::ZERO,
        0,
        None,
        false,
    );
    *h.terminator.pods.lock().unwrap() = vec![over.clone()];
    h.memory(
        mi(4000),
        vec![storage_stats(&over, 0, 0, &[("scratch", mi(30))], None)],
    );
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert!(h.killed().is_empty());
}

/// A local storage eviction ends the round (upstream: "skip the rest of eviction
/// action"): under memory pressure too, only the pod past its emptyDir limit goes; a
/// critical (static) pod past its limit is never evicted.
#[tokio::test]
async fn local_storage_eviction_precedes_pressure_and_spares_critical_pods() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::ZERO,
        0,
    );
    let over = empty_dir_pod("over", "10Mi");
    let hog = pod("hog", 0, &[], &[]);
    let mut critical = (*static_pod("static")).clone();
    critical.spec = over.spec.clone();
    let critical = Arc::new(critical);
    *h.terminator.pods.lock().unwrap() = vec![critical.clone(), hog.clone(), over.clone()];
    h.memory(
        mi(500),
        vec![
            storage_stats(&critical, 0, 0, &[("scratch", mi(30))], None),
            pod_stats(&hog, mi(3000), 0, 0, 0, 0),
            storage_stats(&over, 0, 0, &[("scratch", mi(30))], None),
        ],
    );
    let evicted = h.manager.synchronize().await.unwrap();
    assert_eq!(evicted.len(), 1);
    assert_eq!(evicted[0].metadata.name.as_deref(), Some("over"));
    assert_eq!(h.killed().len(), 1);
    // The next round handles the pressure.
    h.memory(mi(500), vec![pod_stats(&hog, mi(3000), 0, 0, 0, 0)]);
    *h.terminator.pods.lock().unwrap() = vec![critical.clone(), hog.clone()];
    let evicted = h.manager.synchronize().await.unwrap();
    assert_eq!(evicted[0].metadata.name.as_deref(), Some("hog"));
    assert!(h.killed()[1].2.condition_message.is_some());
}

/// Beyond upstream: a round reads the pods' stats only when it must rank pods (a threshold
/// is met) or check a local storage limit; otherwise the summary without pods is enough.
#[tokio::test]
async fn pod_stats_are_read_only_to_rank_or_to_check_local_storage_limits() {
    let h = Harness::new(
        thresholds(&[("memory.available", "1Gi")], &[], &[], &[]),
        Duration::ZERO,
        0,
    );
    let best_effort = pod_json("be", serde_json::json!({"containers": [{"name": "c"}]}));
    *h.terminator.pods.lock().unwrap() = vec![best_effort.clone()];
    h.memory(mi(4000), vec![pod_stats(&best_effort, mi(100), 0, 0, 0, 0)]);
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(*h.summary.calls.lock().unwrap(), ["without pods"]);

    // Under pressure: the signals from the summary without pods, then the full one to rank.
    h.summary.calls.lock().unwrap().clear();
    h.memory(mi(500), vec![pod_stats(&best_effort, mi(3000), 0, 0, 0, 0)]);
    let evicted = h.manager.synchronize().await.unwrap();
    assert_eq!(evicted.len(), 1);
    let calls = h.summary.calls.lock().unwrap().clone();
    assert_eq!(calls.first(), Some(&"without pods"));
    assert!(calls.contains(&"full"), "{calls:?}");

    // A pod with an emptyDir sizeLimit: its stats are needed every round.
    let limited = empty_dir_pod("limited", "10Mi");
    *h.terminator.pods.lock().unwrap() = vec![limited.clone()];
    h.summary.calls.lock().unwrap().clear();
    h.memory(
        mi(4000),
        vec![storage_stats(&limited, 0, 0, &[("scratch", mi(1))], None)],
    );
    assert!(h.manager.synchronize().await.unwrap().is_empty());
    assert_eq!(*h.summary.calls.lock().unwrap(), ["full"]);
}
