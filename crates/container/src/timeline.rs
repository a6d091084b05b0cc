//! The pod startup timeline: a kubelet-rs addition (issue #11) with no upstream counterpart
//! (the nearest upstream code is `pkg/kubelet/util/pod_startup_latency_tracker.go`, which
//! keeps only the image pulls, [`crate::pod_startup_latency_tracker`]).
//!
//! For every pod the kubelet keeps the first time of each [`Step`] of its start, read from
//! the project's [`Clock`]: the wall time (RFC 3339 in the JSON) and a monotonic reading, from
//! which each step's offset from [`Step::Seen`] is computed (a wall-clock step between two
//! steps does not distort it). Steps are recorded by:
//!
//! | Step | Where |
//! | --- | --- |
//! | `seen` | the pod config merger, a new pod from a source (`crates/podsource/src/config/storage.rs`) |
//! | `admitted` | `HandlePodAdditions` after the admit handlers (`crates/app/src/kubelet/sync_loop.rs`) |
//! | `workerStarted` | the pod worker's first sync of the pod (`crates/podworkers/src/worker_loop.rs` `start_pod_sync`) |
//! | `sandboxCreated`, `networkReady` | the runtime's `SyncPod` after `RunPodSandbox` and the new sandbox's status (`crates/runtime/src/sync.rs`) |
//! | `imagePullStarted`, `imagePulled` (per container, naming its image) | the image manager: a pull requested; the image pulled, or already present (`crates/runtime/src/image.rs`) |
//! | `containerCreated`, `containerStarted` (per container) | `startContainer` (`crates/runtime/src/start.rs`) |
//! | `ready` | the status manager, the first status with `Ready=True` (`crates/status/src/manager.rs`) |
//!
//! Only [`Step::Seen`] creates a pod's entry (a later step of an unknown pod is dropped), and
//! `HandlePodRemoves` forgets it; [`MAX_PODS`] entries at most, the oldest going first, as a
//! safety net. The first `Ready` logs the whole timeline at V(2) (`Pod startup timeline`);
//! each step's first time in a pod is observed once in
//! `kubelet_rs_pod_startup_step_duration_seconds{step}` (seconds since `seen`). The secure
//! port serves a pod's timeline at `/debug/pods/{namespace}/{name}/timeline`
//! (`crates/server/src/timeline.rs`, JSON of [`Timeline::to_json`]).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::clock::{Clock, RealClock};

/// The most pods the kubelet keeps a timeline for; beyond it the oldest is dropped. Far
/// above what a node runs (`maxPods` 110 by default): a bound, not a policy.
pub const MAX_PODS: usize = 4096;

/// A step of a pod's start, in the order they normally happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// A pod source (file, URL, API server) delivered the pod for the first time.
    Seen,
    /// The admit handlers accepted it.
    Admitted,
    /// Its pod worker started syncing it (upstream: `Pod is being synced for the first time`).
    WorkerStarted,
    /// `RunPodSandbox` returned the new sandbox.
    SandboxCreated,
    /// The new sandbox's status was read: its IPs (a host-network pod: the node's) are known
    /// and containers can start (upstream's `PodReadyToStartContainers`).
    NetworkReady,
    /// The image manager asked the runtime to pull a container's image (per container; not
    /// when the image is already present and the pull policy lets it be used).
    ImagePullStarted,
    /// A container's image is on the node, pulled or already present (per container).
    ImagePulled,
    /// `CreateContainer` returned (per container).
    ContainerCreated,
    /// `StartContainer` returned (per container).
    ContainerStarted,
    /// The pod's `Ready` condition became `True` for the first time.
    Ready,
}

impl Step {
    /// Every step, in their usual order.
    pub const ALL: [Step; 10] = [
        Step::Seen,
        Step::Admitted,
        Step::WorkerStarted,
        Step::SandboxCreated,
        Step::NetworkReady,
        Step::ImagePullStarted,
        Step::ImagePulled,
        Step::ContainerCreated,
        Step::ContainerStarted,
        Step::Ready,
    ];

    /// The step's name in the JSON and the log line.
    pub fn name(self) -> &'static str {
        match self {
            Step::Seen => "seen",
            Step::Admitted => "admitted",
            Step::WorkerStarted => "workerStarted",
            Step::SandboxCreated => "sandboxCreated",
            Step::NetworkReady => "networkReady",
            Step::ImagePullStarted => "imagePullStarted",
            Step::ImagePulled => "imagePulled",
            Step::ContainerCreated => "containerCreated",
            Step::ContainerStarted => "containerStarted",
            Step::Ready => "ready",
        }
    }

    /// The histogram's `step` label.
    pub fn metric_label(self) -> &'static str {
        match self {
            Step::Seen => "seen",
            Step::Admitted => "admitted",
            Step::WorkerStarted => "worker_started",
            Step::SandboxCreated => "sandbox_created",
            Step::NetworkReady => "network_ready",
            Step::ImagePullStarted => "image_pull_started",
            Step::ImagePulled => "image_pulled",
            Step::ContainerCreated => "container_created",
            Step::ContainerStarted => "container_started",
            Step::Ready => "ready",
        }
    }

    /// A per-container step: recorded once per container, the container's name its subject.
    pub fn per_container(self) -> bool {
        matches!(
            self,
            Step::ImagePullStarted
                | Step::ImagePulled
                | Step::ContainerCreated
                | Step::ContainerStarted
        )
    }
}

/// One recorded step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepTime {
    /// The step.
    pub step: Step,
    /// The container a per-container step ([`Step::per_container`]) is about.
    pub subject: Option<String>,
    /// [`Step::ImagePullStarted`], [`Step::ImagePulled`]: the container's image.
    pub image: Option<String>,
    /// [`Step::ImagePulled`] only: the image was already on the node, nothing was pulled.
    pub already_present: bool,
    /// The wall-clock time.
    pub time: Timestamp,
    /// Since [`Step::Seen`], on the monotonic clock.
    pub since_seen: Duration,
}

/// A pod's steps so far, in the order they happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// The pod's UID.
    pub uid: String,
    /// The steps, [`Step::Seen`] first.
    pub steps: Vec<StepTime>,
}

impl Timeline {
    /// The first time of `step` (any subject).
    pub fn first(&self, step: Step) -> Option<&StepTime> {
        self.steps.iter().find(|s| s.step == step)
    }

    /// The log line's form: `seen=0s admitted=412µs … imagePulled(c)=900ms
    /// containerStarted(c)=1.02s ready=2.1s`, each step with its offset from `seen` as Go
    /// prints a `time.Duration`, per-container steps naming the container (the JSON names the
    /// image too).
    pub fn summary(&self) -> String {
        self.steps
            .iter()
            .map(|s| {
                let since = kubelet_apimachinery::Duration::from_nanos(
                    i64::try_from(s.since_seen.as_nanos()).unwrap_or(i64::MAX),
                );
                match &s.subject {
                    Some(subject) => format!("{}({subject})={since}", s.step.name()),
                    None => format!("{}={since}", s.step.name()),
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The body of `/debug/pods/{namespace}/{name}/timeline`:
    /// `{"namespace", "name", "uid", "steps": [{"step", "container", "image", "alreadyPresent",
    /// "time", "sinceSeenSeconds"}]}` (`container` for per-container steps, `image` for the
    /// image steps, `alreadyPresent` for `imagePulled`).
    pub fn to_json(&self, namespace: &str, name: &str) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| {
                let mut o = Map::new();
                o.insert("step".into(), s.step.name().into());
                if let Some(container) = &s.subject {
                    o.insert("container".into(), container.as_str().into());
                }
                if let Some(image) = &s.image {
                    o.insert("image".into(), image.as_str().into());
                }
                if s.step == Step::ImagePulled {
                    o.insert("alreadyPresent".into(), s.already_present.into());
                }
                o.insert("time".into(), s.time.to_string().into());
                // Nanoseconds over 1e9 in one division: the decimal's nearest double
                // (`1.65730359`, not `as_secs_f64`'s `1.6573035900000002`).
                let nanos = u64::try_from(s.since_seen.as_nanos()).unwrap_or(u64::MAX);
                o.insert("sinceSeenSeconds".into(), (nanos as f64 / 1e9).into());
                Value::Object(o)
            })
            .collect();
        json!({
            "namespace": namespace,
            "name": name,
            "uid": self.uid,
            "steps": steps,
        })
    }
}

/// Called with the first time of each step in a pod (`seen` excluded) and its offset from
/// `seen`: the histogram for the kubelet, a recorder in tests.
pub type StepObserver = Arc<dyn Fn(Step, Duration) + Send + Sync>;

#[derive(Debug)]
struct Recorded {
    step: Step,
    subject: Option<String>,
    image: Option<String>,
    already_present: bool,
    time: Timestamp,
    monotonic: Duration,
}

#[derive(Debug)]
struct Entry {
    /// Insertion order, for dropping the oldest.
    seq: u64,
    records: Vec<Recorded>,
}

#[derive(Debug, Default)]
struct Inner {
    pods: HashMap<String, Entry>,
    next_seq: u64,
}

/// The timelines of the kubelet's pods, by pod UID.
pub struct PodTimelines {
    clock: Arc<dyn Clock>,
    cap: usize,
    observer: StepObserver,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for PodTimelines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodTimelines")
            .field("cap", &self.cap)
            .field("pods", &self.len())
            .finish_non_exhaustive()
    }
}

impl PodTimelines {
    /// Timelines read from `clock`, at most `cap` pods (at least one), each step's first time
    /// in a pod reported to `observer`.
    pub fn new(clock: Arc<dyn Clock>, cap: usize, observer: StepObserver) -> Self {
        Self {
            clock,
            cap: cap.max(1),
            observer,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A source delivered the pod: starts its timeline (nothing when it has one).
    pub fn seen(&self, uid: &str) {
        if uid.is_empty() {
            return;
        }
        let mut inner = self.lock();
        if inner.pods.contains_key(uid) {
            return;
        }
        if inner.pods.len() >= self.cap {
            let oldest = inner
                .pods
                .iter()
                .min_by_key(|(_, e)| e.seq)
                .map(|(uid, _)| uid.clone());
            if let Some(oldest) = oldest {
                inner.pods.remove(&oldest);
            }
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let record = self.now(Step::Seen, None, None, false);
        inner.pods.insert(
            uid.to_string(),
            Entry {
                seq,
                records: vec![record],
            },
        );
    }

    /// Records `step` of the pod unless it has been recorded; `true` when recorded now.
    /// Nothing for a pod without a timeline.
    pub fn record(&self, uid: &str, step: Step) -> bool {
        self.record_inner(uid, step, None, None, false)
    }

    /// Records a per-container step ([`Step::ContainerCreated`], [`Step::ContainerStarted`])
    /// for `container`, once per container.
    pub fn record_container(&self, uid: &str, step: Step, container: &str) -> bool {
        self.record_inner(uid, step, Some(container), None, false)
    }

    /// Records [`Step::ImagePullStarted`] for `container`'s `image`, once per container.
    pub fn record_image_pull_started(&self, uid: &str, container: &str, image: &str) -> bool {
        self.record_inner(
            uid,
            Step::ImagePullStarted,
            Some(container),
            Some(image),
            false,
        )
    }

    /// Records [`Step::ImagePulled`] for `container`'s `image`, once per container;
    /// `already_present` when no pull was needed.
    pub fn record_image(
        &self,
        uid: &str,
        container: &str,
        image: &str,
        already_present: bool,
    ) -> bool {
        self.record_inner(
            uid,
            Step::ImagePulled,
            Some(container),
            Some(image),
            already_present,
        )
    }

    /// Records [`Step::Ready`]; the first time, logs the pod's timeline at V(2). `pod` names
    /// the pod in the log (`namespace/name`).
    pub fn record_ready(&self, uid: &str, pod: &str) -> bool {
        if !self.record(uid, Step::Ready) {
            return false;
        }
        if let Some(t) = self.get(uid) {
            tracing::debug!(pod, podUID = uid, steps = %t.summary(), "Pod startup timeline");
        }
        true
    }

    fn now(
        &self,
        step: Step,
        subject: Option<&str>,
        image: Option<&str>,
        already_present: bool,
    ) -> Recorded {
        Recorded {
            step,
            subject: subject.map(str::to_string),
            image: image.map(str::to_string),
            already_present,
            time: self.clock.now(),
            monotonic: self.clock.monotonic(),
        }
    }

    fn record_inner(
        &self,
        uid: &str,
        step: Step,
        subject: Option<&str>,
        image: Option<&str>,
        already_present: bool,
    ) -> bool {
        if step == Step::Seen {
            return false;
        }
        let observe = {
            let mut inner = self.lock();
            let Some(entry) = inner.pods.get_mut(uid) else {
                return false;
            };
            if entry
                .records
                .iter()
                .any(|r| r.step == step && r.subject.as_deref() == subject)
            {
                return false;
            }
            let first_of_step = !entry.records.iter().any(|r| r.step == step);
            // Read under the lock, so the order of the records is the order of the readings.
            let record = self.now(step, subject, image, already_present);
            let seen = entry
                .records
                .first()
                .map_or(record.monotonic, |r| r.monotonic);
            let since_seen = record.monotonic.saturating_sub(seen);
            entry.records.push(record);
            first_of_step.then_some(since_seen)
        };
        if let Some(since_seen) = observe {
            (self.observer)(step, since_seen);
        }
        true
    }

    /// Forgets the pod (it left the kubelet).
    pub fn remove(&self, uid: &str) {
        self.lock().pods.remove(uid);
    }

    /// The pod's timeline, if it has one.
    pub fn get(&self, uid: &str) -> Option<Timeline> {
        let inner = self.lock();
        let entry = inner.pods.get(uid)?;
        let seen = entry.records.first()?.monotonic;
        Some(Timeline {
            uid: uid.to_string(),
            steps: entry
                .records
                .iter()
                .map(|r| StepTime {
                    step: r.step,
                    subject: r.subject.clone(),
                    image: r.image.clone(),
                    already_present: r.already_present,
                    time: r.time,
                    since_seen: r.monotonic.saturating_sub(seen),
                })
                .collect(),
        })
    }

    /// How many pods have a timeline.
    pub fn len(&self) -> usize {
        self.lock().pods.len()
    }

    /// No pod has a timeline.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

static GLOBAL: LazyLock<PodTimelines> = LazyLock::new(|| {
    PodTimelines::new(
        Arc::new(RealClock),
        MAX_PODS,
        Arc::new(|step, since_seen| {
            kubelet_metrics::with(|m| {
                m.pod_startup_step_duration
                    .with_label_values(&[step.metric_label()])
                    .observe(since_seen.as_secs_f64());
            });
        }),
    )
});

/// The kubelet's timelines (one per process, like the metrics they feed): the system clock,
/// [`MAX_PODS`], `kubelet_rs_pod_startup_step_duration_seconds`.
pub fn global() -> &'static PodTimelines {
    &GLOBAL
}

/// The pod status's `Ready` condition is `True`.
pub fn is_ready(status: &k8s_openapi::api::core::v1::PodStatus) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::clock::FakeClock;

    type Observed = Arc<Mutex<Vec<(Step, Duration)>>>;

    fn timelines(cap: usize) -> (PodTimelines, FakeClock, Observed) {
        let clock = FakeClock::default();
        let observed: Observed = Arc::default();
        let sink = observed.clone();
        let t = PodTimelines::new(
            Arc::new(clock.clone()),
            cap,
            Arc::new(move |step, d| sink.lock().unwrap().push((step, d))),
        );
        (t, clock, observed)
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn every_step_once_with_its_offset_from_seen() {
        let (t, clock, observed) = timelines(10);
        t.seen("u1");
        clock.step(2 * MS);
        assert!(t.record("u1", Step::Admitted));
        clock.step(3 * MS);
        assert!(t.record("u1", Step::WorkerStarted));
        clock.step(100 * MS);
        assert!(t.record("u1", Step::SandboxCreated));
        clock.step(5 * MS);
        assert!(t.record("u1", Step::NetworkReady));
        clock.step(MS);
        assert!(t.record_image("u1", "init", "busybox:1.36", true));
        clock.step(MS);
        assert!(t.record_container("u1", Step::ContainerCreated, "init"));
        assert!(t.record_container("u1", Step::ContainerStarted, "init"));
        assert!(t.record_image_pull_started("u1", "main", "nginx:1"));
        clock.step(10 * MS);
        assert!(t.record_image("u1", "main", "nginx:1", false));
        assert!(t.record_container("u1", Step::ContainerCreated, "main"));
        clock.step(MS);
        assert!(t.record_container("u1", Step::ContainerStarted, "main"));
        clock.step(MS);
        // Repeats (a restart, a second sync) keep the first time.
        assert!(!t.record("u1", Step::Admitted));
        assert!(!t.record_container("u1", Step::ContainerStarted, "main"));
        assert!(!t.record_image("u1", "main", "nginx:1", true));
        assert!(!t.record_image_pull_started("u1", "main", "nginx:1"));
        assert!(t.record_ready("u1", "default/web"));
        assert!(!t.record_ready("u1", "default/web"));

        let tl = t.get("u1").unwrap();
        let steps: Vec<(&str, Option<&str>, u128)> = tl
            .steps
            .iter()
            .map(|s| {
                (
                    s.step.name(),
                    s.subject.as_deref(),
                    s.since_seen.as_millis(),
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                ("seen", None, 0),
                ("admitted", None, 2),
                ("workerStarted", None, 5),
                ("sandboxCreated", None, 105),
                ("networkReady", None, 110),
                ("imagePulled", Some("init"), 111),
                ("containerCreated", Some("init"), 112),
                ("containerStarted", Some("init"), 112),
                ("imagePullStarted", Some("main"), 112),
                ("imagePulled", Some("main"), 122),
                ("containerCreated", Some("main"), 122),
                ("containerStarted", Some("main"), 123),
                ("ready", None, 124),
            ]
        );
        assert_eq!(
            tl.summary(),
            "seen=0s admitted=2ms workerStarted=5ms sandboxCreated=105ms networkReady=110ms \
             imagePulled(init)=111ms containerCreated(init)=112ms \
             containerStarted(init)=112ms imagePullStarted(main)=112ms imagePulled(main)=122ms \
             containerCreated(main)=122ms containerStarted(main)=123ms ready=124ms"
        );
        // The histogram: once per pod and step (the first image, the first container).
        let observed: Vec<(&str, u128)> = observed
            .lock()
            .unwrap()
            .iter()
            .map(|(s, d)| (s.metric_label(), d.as_millis()))
            .collect();
        assert_eq!(
            observed,
            [
                ("admitted", 2),
                ("worker_started", 5),
                ("sandbox_created", 105),
                ("network_ready", 110),
                ("image_pulled", 111),
                ("container_created", 112),
                ("container_started", 112),
                ("image_pull_started", 112),
                ("ready", 124),
            ]
        );
    }

    #[test]
    fn offsets_follow_the_monotonic_reading_and_times_the_wall_clock() {
        let (t, clock, _) = timelines(10);
        let start = clock.now();
        t.seen("u1");
        clock.step(Duration::from_millis(1500));
        t.record("u1", Step::Admitted);
        let tl = t.get("u1").unwrap();
        assert_eq!(tl.steps[0].time, start);
        assert_eq!(
            tl.first(Step::Admitted).unwrap().time,
            start + Duration::from_millis(1500)
        );
        assert_eq!(
            tl.first(Step::Admitted).unwrap().since_seen,
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn only_seen_pods_have_a_timeline_and_removal_forgets_them() {
        let (t, _, observed) = timelines(10);
        assert!(!t.record("nobody", Step::Admitted));
        assert!(!t.record_ready("nobody", "ns/p"));
        assert!(t.get("nobody").is_none());
        t.seen("");
        assert!(t.is_empty());
        t.seen("u1");
        t.seen("u1");
        assert_eq!(t.get("u1").unwrap().steps.len(), 1);
        assert!(!t.record("u1", Step::Seen));
        t.remove("u1");
        assert!(t.get("u1").is_none());
        assert!(t.is_empty());
        assert!(observed.lock().unwrap().is_empty());
    }

    #[test]
    fn the_cap_drops_the_oldest_pod() {
        let (t, clock, _) = timelines(2);
        t.seen("a");
        clock.step(MS);
        t.seen("b");
        t.record("a", Step::Admitted);
        clock.step(MS);
        t.seen("c");
        assert_eq!(t.len(), 2);
        assert!(t.get("a").is_none(), "the first seen goes first");
        assert!(t.get("b").is_some() && t.get("c").is_some());
    }

    #[test]
    fn json_names_steps_subjects_and_times() {
        let (t, clock, _) = timelines(10);
        t.seen("u1");
        t.record_image_pull_started("u1", "c", "busybox");
        clock.step(Duration::from_millis(250));
        t.record_image("u1", "c", "busybox", false);
        t.record_container("u1", Step::ContainerStarted, "c");
        let v = t.get("u1").unwrap().to_json("default", "web");
        let mut odd = t.get("u1").unwrap();
        odd.steps[2].since_seen = Duration::new(1, 657_303_590);
        assert_eq!(
            odd.to_json("ns", "p")["steps"][2]["sinceSeenSeconds"].to_string(),
            "1.65730359"
        );
        assert_eq!(
            v,
            json!({
                "namespace": "default",
                "name": "web",
                "uid": "u1",
                "steps": [
                    {"step": "seen", "time": "2024-01-01T00:00:00Z", "sinceSeenSeconds": 0.0},
                    {"step": "imagePullStarted", "container": "c", "image": "busybox",
                     "time": "2024-01-01T00:00:00Z", "sinceSeenSeconds": 0.0},
                    {"step": "imagePulled", "container": "c", "image": "busybox",
                     "alreadyPresent": false,
                     "time": "2024-01-01T00:00:00.25Z", "sinceSeenSeconds": 0.25},
                    {"step": "containerStarted", "container": "c",
                     "time": "2024-01-01T00:00:00.25Z", "sinceSeenSeconds": 0.25},
                ],
            })
        );
    }

    #[test]
    fn ready_is_the_ready_condition_true() {
        use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
        let cond = |type_: &str, status: &str| PodCondition {
            type_: type_.into(),
            status: status.into(),
            ..PodCondition::default()
        };
        let status = |c: Vec<PodCondition>| PodStatus {
            conditions: Some(c),
            ..PodStatus::default()
        };
        assert!(is_ready(&status(vec![
            cond("Initialized", "True"),
            cond("Ready", "True")
        ])));
        assert!(!is_ready(&status(vec![cond("Ready", "False")])));
        assert!(!is_ready(&status(vec![cond("ContainersReady", "True")])));
        assert!(!is_ready(&PodStatus::default()));
    }

    #[test]
    fn step_names_are_distinct() {
        let names: std::collections::HashSet<_> = Step::ALL.iter().map(|s| s.name()).collect();
        let labels: std::collections::HashSet<_> =
            Step::ALL.iter().map(|s| s.metric_label()).collect();
        assert_eq!((names.len(), labels.len()), (10, 10));
    }
}
