//! Image GC against the recording fakes: the CRI image service, the runtime's pods, the image
//! filesystem's figures, events and a fake clock (upstream `image_gc_manager_test.go`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use kubelet_container::fake::FakeRuntime;
use kubelet_container::{Container, ContainerId, FakeClock, FakeRecorder, Pod};
use kubelet_cri::fake::FakeImageService;

const GIB: u64 = 1 << 30;

/// `images.StatsProvider` with settable figures; `None` fails.
#[derive(Default)]
struct FakeStats {
    fs: Mutex<Option<ImageFsStats>>,
}

impl FakeStats {
    fn set(&self, capacity: u64, available: u64) {
        *self.fs.lock().unwrap() = Some(ImageFsStats {
            capacity_bytes: Some(capacity),
            available_bytes: Some(available),
        });
    }
}

#[async_trait]
impl StatsProvider for FakeStats {
    async fn image_fs_stats(&self) -> Result<ImageFsStats, String> {
        self.fs
            .lock()
            .unwrap()
            .ok_or_else(|| "imageFs information is unavailable".to_string())
    }
}

/// The fake CRI image service, recording the images `RemoveImage` was asked for.
#[derive(Default)]
struct RecordingImages {
    fake: FakeImageService,
    removed: Mutex<Vec<String>>,
}

#[async_trait]
impl ImageService for RecordingImages {
    async fn list_images(
        &self,
        filter: Option<&kubelet_cri::v1::ImageFilter>,
    ) -> kubelet_cri::CriResult<Vec<kubelet_cri::v1::Image>> {
        self.fake.list_images(filter).await
    }
    async fn image_status(
        &self,
        image: &ImageSpec,
        verbose: bool,
    ) -> kubelet_cri::CriResult<kubelet_cri::v1::ImageStatusResponse> {
        self.fake.image_status(image, verbose).await
    }
    async fn pull_image(
        &self,
        image: &ImageSpec,
        auth: Option<&kubelet_cri::v1::AuthConfig>,
        sandbox_config: Option<&kubelet_cri::v1::PodSandboxConfig>,
    ) -> kubelet_cri::CriResult<String> {
        self.fake.pull_image(image, auth, sandbox_config).await
    }
    async fn remove_image(&self, image: &ImageSpec) -> kubelet_cri::CriResult<()> {
        self.removed.lock().unwrap().push(image.image.clone());
        self.fake.remove_image(image).await
    }
    async fn image_fs_info(&self) -> kubelet_cri::CriResult<kubelet_cri::v1::ImageFsInfoResponse> {
        self.fake.image_fs_info().await
    }
}

impl std::ops::Deref for RecordingImages {
    type Target = FakeImageService;
    fn deref(&self) -> &FakeImageService {
        &self.fake
    }
}

struct FixedSandboxImage(&'static str);

#[async_trait]
impl SandboxImageSource for FixedSandboxImage {
    async fn sandbox_image(&self) -> Option<String> {
        Some(self.0.to_string())
    }
}

struct Env {
    images: Arc<RecordingImages>,
    runtime: Arc<FakeRuntime>,
    stats: Arc<FakeStats>,
    recorder: Arc<FakeRecorder>,
    clock: Arc<FakeClock>,
    gc: RealImageGcManager,
}

fn start() -> Timestamp {
    "2026-12-01T10:00:00Z".parse().unwrap()
}

fn env(policy: ImageGcPolicy) -> Env {
    env_with(policy, Arc::new(NoSandboxImage))
}

fn env_with(policy: ImageGcPolicy, sandbox_image: Arc<dyn SandboxImageSource>) -> Env {
    let images = Arc::new(RecordingImages::default());
    let runtime = Arc::new(FakeRuntime::new());
    let stats = Arc::new(FakeStats::default());
    let recorder = Arc::new(FakeRecorder::new());
    let clock = Arc::new(FakeClock::new(start()));
    let gc = RealImageGcManager::new(
        ImageGcDeps {
            images: images.clone(),
            runtime: runtime.clone(),
            stats: stats.clone(),
            sandbox_image,
            recorder: recorder.clone(),
            clock: clock.clone(),
            node_name: "node-a".into(),
        },
        policy,
    )
    .unwrap();
    Env {
        images,
        runtime,
        stats,
        recorder,
        clock,
        gc,
    }
}

fn policy(high: i32, low: i32) -> ImageGcPolicy {
    ImageGcPolicy {
        high_threshold_percent: high,
        low_threshold_percent: low,
        min_age: Duration::ZERO,
        max_age: Duration::ZERO,
    }
}

fn image(id: &str, size: u64) -> kubelet_cri::v1::Image {
    kubelet_cri::v1::Image {
        id: id.into(),
        repo_tags: vec![format!("example.com/{id}:1")],
        size,
        ..Default::default()
    }
}

impl Env {
    fn add(&self, id: &str, size: u64) {
        self.images.add_image(image(id, size));
    }

    /// The runtime has one pod whose containers (running or exited) use `ids`.
    fn use_images(&self, ids: &[&str]) {
        let containers = ids
            .iter()
            .enumerate()
            .map(|(n, id)| Container {
                id: ContainerId::new("containerd", format!("c{n}")),
                name: format!("c{n}"),
                image: format!("example.com/{id}:1"),
                image_id: (*id).to_string(),
                ..Container::default()
            })
            .collect();
        self.runtime.set_pods(vec![Pod {
            id: "uid-1".into(),
            name: "p".into(),
            namespace: "default".into(),
            containers,
            ..Pod::default()
        }]);
    }

    fn removed(&self) -> Vec<String> {
        let present: HashSet<String> = self.images.images().into_iter().map(|i| i.id).collect();
        let mut all: Vec<String> = self.gc.records().into_keys().collect();
        all.retain(|id| !present.contains(id));
        all
    }

    fn present(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.images.images().into_iter().map(|i| i.id).collect();
        ids.sort();
        ids
    }

    /// The image IDs `RemoveImage` was called with, in order.
    fn remove_calls(&self) -> Vec<String> {
        self.images.removed.lock().unwrap().clone()
    }
}

#[test]
fn policy_is_validated_as_upstream() {
    let mk = |high, low| {
        let e = env(policy(85, 80));
        RealImageGcManager::new(
            ImageGcDeps {
                images: e.images,
                runtime: e.runtime,
                stats: e.stats,
                sandbox_image: Arc::new(NoSandboxImage),
                recorder: e.recorder,
                clock: e.clock,
                node_name: "n".into(),
            },
            policy(high, low),
        )
        .map(|_| ())
    };
    assert_eq!(
        mk(101, 80).unwrap_err().to_string(),
        "invalid HighThresholdPercent 101, must be in range [0-100]"
    );
    assert_eq!(
        mk(85, -1).unwrap_err().to_string(),
        "invalid LowThresholdPercent -1, must be in range [0-100]"
    );
    assert_eq!(
        mk(80, 85).unwrap_err().to_string(),
        "LowThresholdPercent 85 can not be higher than HighThresholdPercent 80"
    );
    assert!(mk(100, 100).is_ok());
}

#[tokio::test]
async fn detect_images_records_first_detected_last_used_size_and_pinned() {
    let e = env(policy(85, 80));
    e.add("sha256:a", 10);
    let mut pinned = image("sha256:p", 5);
    pinned.pinned = true;
    e.images.add_image(pinned);
    e.use_images(&["sha256:a"]);
    let in_use = e.gc.detect_images(start()).await.unwrap();
    assert!(in_use.contains("sha256:a"));
    let r = e.gc.records();
    assert_eq!(r["sha256:a"].first_detected, start());
    assert_eq!(r["sha256:a"].last_used, Some(start()));
    assert_eq!(r["sha256:a"].size, 10);
    assert!(r["sha256:p"].pinned);
    assert_eq!(r["sha256:p"].last_used, None);

    // Detected again later: first detection kept; a gone image is forgotten.
    e.clock.step(Duration::from_secs(60));
    e.images.with_state(|s| s.images.remove("sha256:p"));
    e.gc.detect_images(e.clock.now()).await.unwrap();
    let r = e.gc.records();
    assert_eq!(r["sha256:a"].first_detected, start());
    assert_eq!(r["sha256:a"].last_used, Some(e.clock.now()));
    assert!(!r.contains_key("sha256:p"));
}

/// Over the high threshold, unused images go least recently used first, then first detected
/// first, until the amount to reach the low threshold is freed; in-use and pinned images and
/// the runtime's sandbox image are never removed.
#[tokio::test]
async fn free_space_removes_oldest_unused_first_and_never_in_use_or_pinned() {
    let e = env_with(
        policy(80, 70),
        Arc::new(FixedSandboxImage("registry.k8s.io/pause:3.10")),
    );
    // t0: old1 and old2 in use, pinned and the sandbox image present.
    e.add("sha256:old1", GIB);
    e.add("sha256:old2", GIB);
    let mut pinned = image("sha256:pinned", GIB);
    pinned.pinned = true;
    e.images.add_image(pinned);
    let mut pause = image("sha256:pause", GIB);
    pause.repo_tags = vec!["registry.k8s.io/pause:3.10".into()];
    e.images.add_image(pause);
    e.use_images(&["sha256:old2", "sha256:old1"]);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    // t1: old2 is no longer used; new1 appears (never used).
    e.clock.step(Duration::from_secs(60));
    e.add("sha256:new1", GIB);
    e.use_images(&["sha256:old1"]);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    // t2: old1 is no longer used, inuse is.
    e.clock.step(Duration::from_secs(60));
    e.add("sha256:inuse", GIB);
    e.use_images(&["sha256:inuse"]);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    e.clock.step(Duration::from_secs(60));

    // 100 GiB, 15 GiB available: 85 % used ≥ 80 %; to reach 70 %: 30 − 15 = 15 GiB, more
    // than the three candidates: all go, in eviction order, then FreeDiskSpaceFailed.
    e.stats.set(100 * GIB, 15 * GIB);
    let err = e.gc.garbage_collect(start()).await.unwrap_err();
    // Never used (zero lastUsed) first, then old2 (last used at t0), then old1 (t1).
    assert_eq!(
        e.remove_calls(),
        ["sha256:new1", "sha256:old2", "sha256:old1"]
    );
    assert_eq!(
        e.present(),
        ["sha256:inuse", "sha256:pause", "sha256:pinned"]
    );
    let msg = "Insufficient free disk space on the node's image filesystem (85% of 100.0 GiB used). Failed to free sufficient space by deleting unused images (freed 3221225472 bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data.";
    assert_eq!(err, ImageGcError::InsufficientSpace(msg.into()));
    let events = e.recorder.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].reason, "FreeDiskSpaceFailed");
    assert_eq!(events[0].event_type, EventType::Warning);
    assert_eq!(events[0].message, msg);
    assert_eq!(events[0].object.kind.as_deref(), Some("Node"));
    assert!(e.removed().is_empty(), "removed images are forgotten");
}

/// `amountToFree = capacity × (100 − low) / 100 − available`; removal stops as soon as that
/// much is freed, and nothing happens below the high threshold.
#[tokio::test]
async fn amount_to_free_is_down_to_the_low_threshold_and_only_over_the_high_one() {
    let e = env(policy(80, 70));
    e.add("sha256:a", 4 * GIB);
    e.add("sha256:b", 4 * GIB);
    e.add("sha256:c", 4 * GIB);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    e.clock.step(Duration::from_secs(1));
    e.add("sha256:d", 4 * GIB);
    e.clock.step(Duration::from_secs(1));

    // 79 % used: below the high threshold, nothing goes.
    e.stats.set(100 * GIB, 21 * GIB);
    e.gc.garbage_collect(start()).await.unwrap();
    assert!(e.remove_calls().is_empty());

    // 80 % used: 30 − 20 = 10 GiB to free: three 4 GiB images (12 GiB ≥ 10), the one
    // detected last stays.
    e.stats.set(100 * GIB, 20 * GIB);
    e.gc.garbage_collect(start()).await.unwrap();
    assert_eq!(e.remove_calls().len(), 3, "{:?}", e.remove_calls());
    assert_eq!(e.present(), ["sha256:d"]);
    assert!(e.recorder.events().is_empty());
}

#[tokio::test]
async fn images_younger_than_the_minimum_age_are_kept() {
    let mut p = policy(50, 40);
    p.min_age = Duration::from_secs(120);
    let e = env(p);
    e.add("sha256:old", GIB);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    e.clock.step(Duration::from_secs(100));
    e.add("sha256:young", GIB);
    e.clock.step(Duration::from_secs(30));
    // old: 130 s ≥ 2 min; young: 30 s (detected by this round).
    e.stats.set(100 * GIB, 10 * GIB);
    assert!(e.gc.garbage_collect(start()).await.is_err());
    assert_eq!(e.remove_calls(), ["sha256:old"]);
    assert_eq!(e.present(), ["sha256:young"]);
}

#[tokio::test]
async fn images_unused_longer_than_the_maximum_age_go_whatever_the_usage() {
    let mut p = policy(90, 80);
    p.max_age = Duration::from_secs(3600);
    let e = env(p);
    e.add("sha256:stale", GIB);
    e.add("sha256:recent", GIB);
    e.add("sha256:inuse", GIB);
    e.use_images(&["sha256:stale", "sha256:recent", "sha256:inuse"]);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    e.stats.set(100 * GIB, 90 * GIB); // 10 % used
    let began = e.clock.now();

    // stale unused from now on; recent used 30 min more.
    e.use_images(&["sha256:recent", "sha256:inuse"]);
    e.clock.step(Duration::from_secs(1800));
    e.gc.detect_images(e.clock.now()).await.unwrap();
    e.use_images(&["sha256:inuse"]);

    // 1 h after the start: the maximum age has not passed since GC began: nothing.
    e.clock.step(Duration::from_secs(1800));
    e.gc.garbage_collect(began).await.unwrap();
    assert!(e.remove_calls().is_empty());

    // 1 h 1 s after: stale (unused 1 h 1 s) goes, recent (unused 31 min) stays.
    e.clock.step(Duration::from_secs(1));
    e.gc.garbage_collect(began).await.unwrap();
    assert_eq!(e.remove_calls(), ["sha256:stale"]);
    assert_eq!(e.present(), ["sha256:inuse", "sha256:recent"]);
}

#[test]
fn high_threshold_100_without_maximum_age_disables_image_gc() {
    assert!(policy(100, 80).disabled());
    let mut p = policy(100, 80);
    p.max_age = Duration::from_secs(60);
    assert!(!p.disabled());
    assert!(!ImageGcPolicy::default().disabled());
}

#[tokio::test(start_paused = true)]
async fn disabled_gc_never_asks_the_runtime() {
    let e = env(policy(100, 80));
    e.add("sha256:a", GIB);
    e.stats.set(100 * GIB, 0);
    // Returns at once instead of looping.
    e.gc.run_garbage_collection(IMAGE_GC_PERIOD).await;
    assert!(e.images.called().is_empty(), "{:?}", e.images.called());
    assert_eq!(e.present(), ["sha256:a"]);
}

#[tokio::test(start_paused = true)]
async fn rounds_run_at_once_then_every_period() {
    let e = Arc::new(env(policy(50, 40)));
    e.add("sha256:a", GIB);
    e.stats.set(100 * GIB, 90 * GIB);
    let task = tokio::spawn({
        let e = e.clone();
        async move { e.gc.run_garbage_collection(IMAGE_GC_PERIOD).await }
    });
    let rounds = || {
        e.images
            .called()
            .iter()
            .filter(|c| *c == "ListImages")
            .count()
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(rounds(), 1, "the first round at start");
    tokio::time::sleep(IMAGE_GC_PERIOD).await;
    assert_eq!(rounds(), 2);
    task.abort();
}

/// `StartGarbageCollection`: a first failure is only logged, a repeated one also makes an
/// `ImageGCFailed` event; an invalid capacity makes `InvalidDiskCapacity`.
#[tokio::test]
async fn repeated_failures_make_image_gc_failed_events() {
    let e = env(policy(85, 80));
    // No image filesystem figures: fails.
    assert!(e.gc.garbage_collect_round(start(), false).await);
    assert!(e.recorder.events().is_empty());
    assert!(e.gc.garbage_collect_round(start(), true).await);
    let events = e.recorder.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, "ImageGCFailed");
    assert_eq!(events[0].message, "imageFs information is unavailable");

    e.stats.set(0, 0);
    let err = e.gc.garbage_collect(start()).await.unwrap_err();
    assert_eq!(err.to_string(), "invalid capacity 0 on image filesystem");
    assert_eq!(e.recorder.events()[1].reason, "InvalidDiskCapacity");

    e.stats.set(100 * GIB, 90 * GIB);
    assert!(!e.gc.garbage_collect_round(start(), true).await);
}

#[tokio::test]
async fn removal_errors_are_aggregated_and_the_rest_still_go() {
    let e = env(policy(50, 40));
    e.add("sha256:a", GIB);
    e.add("sha256:b", GIB);
    e.gc.detect_images(e.clock.now()).await.unwrap();
    e.clock.step(Duration::from_secs(1));
    e.images.inject_error(
        "RemoveImage",
        kubelet_cri::CriError::Status {
            endpoint: "fake".into(),
            method: "RemoveImage",
            code: tonic::Code::Internal,
            message: "read-only file system".into(),
        },
    );
    e.stats.set(100 * GIB, 10 * GIB);
    let err = e.gc.garbage_collect(start()).await.unwrap_err();
    match err {
        ImageGcError::Deletion { freed, errors, .. } => {
            assert_eq!(freed, i64::try_from(GIB).unwrap());
            assert!(errors.contains("read-only file system"), "{errors}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.remove_calls().len(), 2);
}

/// The eviction manager's `DeleteUnusedImages`: every unused image past the minimum age,
/// whatever the usage; returns the bytes freed.
#[tokio::test]
async fn delete_unused_images_frees_every_unused_image() {
    let e = env(policy(85, 80));
    e.add("sha256:a", 3);
    e.add("sha256:b", 4);
    e.add("sha256:inuse", 5);
    e.use_images(&["sha256:inuse"]);
    assert_eq!(e.gc.delete_unused_images().await.unwrap(), 7);
    assert_eq!(e.present(), ["sha256:inuse"]);
}

#[tokio::test]
async fn image_cache_is_largest_first() {
    let e = env(policy(85, 80));
    e.add("sha256:small", 1);
    e.add("sha256:big", 100);
    assert!(e.gc.get_image_list().is_empty());
    e.gc.refresh_image_cache().await;
    let ids: Vec<String> = e.gc.get_image_list().into_iter().map(|i| i.id).collect();
    assert_eq!(ids, ["sha256:big", "sha256:small"]);
}

#[test]
fn sizes_are_formatted_as_upstream() {
    assert_eq!(format_size(512), "512 B");
    assert_eq!(format_size(1536), "1.5 KiB");
    assert_eq!(format_size(100 * 1024 * 1024 * 1024), "100.0 GiB");
}

/// `handleImageVolumes`: an image a container mounts as an image volume is in use (and
/// kept by a GC round) like the container's own image; an unknown mounted ID adds nothing;
/// with the gate off only the containers' images count.
#[tokio::test]
async fn images_mounted_as_image_volumes_are_in_use() {
    for gate in [true, false] {
        let _gate = kubelet_container::gates::set_image_volume_during_test(gate);
        let e = env(policy(50, 40));
        e.add("sha256:a", 10);
        e.add("sha256:vol", 10);
        e.add("sha256:other", 10);
        e.use_images(&["sha256:a"]);
        e.runtime
            .set_container_image_mounts("c0", vec!["sha256:vol".into(), "sha256:gone".into()]);
        let in_use = e.gc.detect_images(start()).await.unwrap();
        let mut in_use: Vec<&str> = in_use.iter().map(String::as_str).collect();
        in_use.sort_unstable();
        if gate {
            assert_eq!(in_use, ["sha256:a", "sha256:vol"]);
        } else {
            assert_eq!(in_use, ["sha256:a"]);
        }
        e.stats.set(100 * GIB, 0);
        e.clock.step(Duration::from_secs(60));
        let _ = e.gc.garbage_collect(e.clock.now()).await;
        let mut want = vec!["sha256:a", "sha256:vol"];
        if !gate {
            want.retain(|i| *i != "sha256:vol");
        }
        let present = e.present();
        for id in &want {
            assert!(
                present.iter().any(|p| p == id),
                "gate {gate}: {id} kept: {present:?}"
            );
        }
        assert!(!present.iter().any(|p| p == "sha256:other"), "{present:?}");
        if !gate {
            assert!(!present.iter().any(|p| p == "sha256:vol"), "{present:?}");
        }
    }
}
