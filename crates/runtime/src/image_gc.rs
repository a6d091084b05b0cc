//! Image garbage collection (upstream `pkg/kubelet/images/image_gc_manager.go`,
//! `realImageGCManager`; run by `kubelet.go` `StartGarbageCollection` every `ImageGCPeriod`).
//!
//! The manager keeps an [`ImageRecord`] per image the runtime lists (`detectImages`): when it
//! was first detected, when a container of the runtime (running or not, `GetPods(true)`) last
//! used it, its size and whether the runtime pins it. [`RealImageGcManager::garbage_collect`]
//! first removes images unused for longer than `imageMaximumGCAge` (`freeOldImages`), then,
//! when the image filesystem is at least `imageGCHighThresholdPercent` full, removes unused
//! images, least recently used first (ties: first detected first), skipping images younger
//! than `imageMinimumGCAge`, until the filesystem would be at `imageGCLowThresholdPercent`
//! (`freeSpace`). Images in use and pinned images are never candidates.
//!
//! Beyond upstream: the runtime's sandbox (pause) image is treated as pinned too, whatever
//! the runtime says ([`SandboxImageSource`]). containerd before 1.7 does not report the
//! CRI `pinned` flag, so upstream's kubelet would remove the pause image there and every
//! later sandbox would need a pull ("Deliberate differences" in `ARCHITECTURE.md`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use kubelet_container::events::{EventType, node_ref, reasons};
use kubelet_container::runtime::Image;
use kubelet_container::{Clock, EventRecorder, Runtime};
use kubelet_cri::ImageService;
use kubelet_cri::v1::ImageSpec;

/// Period of image garbage collection (upstream `ImageGCPeriod`).
pub const IMAGE_GC_PERIOD: Duration = Duration::from_secs(5 * 60);
/// Period of `detectImages` in `Start` (upstream: 5 minutes).
pub const IMAGE_DETECT_PERIOD: Duration = Duration::from_secs(5 * 60);
/// Period of the image list cache refresh in `Start` (upstream: 30 seconds).
pub const IMAGE_CACHE_PERIOD: Duration = Duration::from_secs(30);

/// `ImageGarbageCollectedTotalReasonAge`: removed by `imageMaximumGCAge`.
pub const REASON_AGE: &str = "age";
/// `ImageGarbageCollectedTotalReasonSpace`: removed to free disk space.
pub const REASON_SPACE: &str = "space";

/// The garbage collection policy (upstream `ImageGCPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageGcPolicy {
    /// Usage at or above this always triggers garbage collection (`imageGCHighThresholdPercent`).
    pub high_threshold_percent: i32,
    /// Garbage collection frees down to this usage (`imageGCLowThresholdPercent`).
    pub low_threshold_percent: i32,
    /// Images detected more recently are never removed (`imageMinimumGCAge`).
    pub min_age: Duration,
    /// Images unused for longer are removed whatever the disk usage; zero disables it
    /// (`imageMaximumGCAge`).
    pub max_age: Duration,
}

impl Default for ImageGcPolicy {
    /// The v1beta1 defaults: 85 %, 80 %, 2 minutes, no maximum age.
    fn default() -> Self {
        Self {
            high_threshold_percent: 85,
            low_threshold_percent: 80,
            min_age: Duration::from_secs(120),
            max_age: Duration::ZERO,
        }
    }
}

impl ImageGcPolicy {
    /// `StartGarbageCollection`: with the high threshold at 100 and no maximum age, image GC
    /// never runs.
    pub fn disabled(&self) -> bool {
        self.high_threshold_percent == 100 && self.max_age.is_zero()
    }
}

/// What an image GC round or its construction failed with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageGcError {
    /// `NewImageGCManager`: the high threshold is out of range.
    #[error("invalid HighThresholdPercent {0}, must be in range [0-100]")]
    InvalidHighThreshold(i32),
    /// `NewImageGCManager`: the low threshold is out of range.
    #[error("invalid LowThresholdPercent {0}, must be in range [0-100]")]
    InvalidLowThreshold(i32),
    /// `NewImageGCManager`: low above high.
    #[error("LowThresholdPercent {low} can not be higher than HighThresholdPercent {high}")]
    LowAboveHigh {
        /// The low threshold.
        low: i32,
        /// The high threshold.
        high: i32,
    },
    /// `ListImages` or `GetPods` failed (`detectImages`).
    #[error("{0}")]
    Runtime(String),
    /// `ImageFsStats` failed.
    #[error("{0}")]
    Stats(String),
    /// The image filesystem reports no capacity.
    #[error("invalid capacity 0 on image filesystem")]
    InvalidCapacity,
    /// Not enough could be freed (the `FreeDiskSpaceFailed` event's message).
    #[error("{0}")]
    InsufficientSpace(String),
    /// `freeSpace`: some removals failed.
    #[error(
        "wanted to free {wanted} bytes, but freed {freed} bytes space with errors in image deletion: {errors}"
    )]
    Deletion {
        /// Bytes asked for.
        wanted: i64,
        /// Bytes freed.
        freed: i64,
        /// The removal errors (`errors.NewAggregate`).
        errors: String,
    },
    /// `freeOldImages`: some removals failed.
    #[error(
        "wanted to free images older than {max_age}, encountered errors in image deletion: {errors}"
    )]
    OldImages {
        /// `imageMaximumGCAge` as Go prints it.
        max_age: String,
        /// The removal errors (`errors.NewAggregate`).
        errors: String,
    },
}

/// The image filesystem's figures image GC needs (upstream `statsapi.FsStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageFsStats {
    /// Total bytes of the filesystem.
    pub capacity_bytes: Option<u64>,
    /// Bytes available to the kubelet.
    pub available_bytes: Option<u64>,
}

/// Upstream's `images.StatsProvider`: the image filesystem's capacity and availability
/// (the CRI `ImageFsInfo` mount point's `statfs`; implemented over the summary provider of
/// `crates/stats` by `crates/app`).
#[async_trait]
pub trait StatsProvider: Send + Sync {
    /// `ImageFsStats`.
    async fn image_fs_stats(&self) -> Result<ImageFsStats, String>;
}

/// The runtime's sandbox image (containerd's `sandbox_image`), never removed (beyond
/// upstream, see the module documentation). `None` when the runtime names none.
#[async_trait]
pub trait SandboxImageSource: Send + Sync {
    /// The sandbox image's name, as the runtime's configuration gives it.
    async fn sandbox_image(&self) -> Option<String>;
}

/// No sandbox image protection beyond the runtime's `pinned` flag (upstream's behaviour).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSandboxImage;

#[async_trait]
impl SandboxImageSource for NoSandboxImage {
    async fn sandbox_image(&self) -> Option<String> {
        None
    }
}

/// Information about an image the manager tracks (upstream `imageRecord`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRecord {
    /// The runtime handler the image was pulled with (`runtimeHandlerUsedToPullImage`).
    pub runtime_handler: String,
    /// When the image was first detected (`firstDetected`).
    pub first_detected: Timestamp,
    /// When a container was last seen using it; `None` is Go's zero time: never
    /// (`lastUsed`).
    pub last_used: Option<Timestamp>,
    /// Size in bytes (`size`).
    pub size: u64,
    /// Pinned by the runtime, or the sandbox image (`pinned`).
    pub pinned: bool,
}

/// A candidate for removal (upstream `evictionInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct EvictionInfo {
    id: String,
    record: ImageRecord,
}

/// Upstream's `ImageGCManager` interface; the eviction manager reclaims node disk through
/// [`delete_unused_images`](ImageGcManager::delete_unused_images).
#[async_trait]
pub trait ImageGcManager: Send + Sync {
    /// `GarbageCollect`: applies the policy; `began_gc` is when garbage collection started
    /// (the maximum age counts from then at the earliest).
    async fn garbage_collect(&self, began_gc: Timestamp) -> Result<(), ImageGcError>;
    /// `DeleteUnusedImages`: removes every unused image older than the minimum age; returns
    /// the bytes freed (upstream returns only the error; the eviction manager measures
    /// again).
    async fn delete_unused_images(&self) -> Result<u64, ImageGcError>;
    /// `GetImageList`: the images of the last cache refresh, largest first.
    fn get_image_list(&self) -> Vec<Image>;
}

/// The image garbage collector (upstream `realImageGCManager`).
pub struct RealImageGcManager {
    images: Arc<dyn ImageService>,
    runtime: Arc<dyn Runtime>,
    stats: Arc<dyn StatsProvider>,
    sandbox_image: Arc<dyn SandboxImageSource>,
    recorder: Arc<dyn EventRecorder>,
    clock: Arc<dyn Clock>,
    node_name: String,
    policy: ImageGcPolicy,
    /// `imageRecords`, by image ID.
    records: Mutex<HashMap<String, ImageRecord>>,
    /// `imageCache`.
    cache: Mutex<Vec<Image>>,
}

impl std::fmt::Debug for RealImageGcManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealImageGcManager")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// What a [`RealImageGcManager`] works with.
pub struct ImageGcDeps {
    /// CRI `ListImages`, `RemoveImage`.
    pub images: Arc<dyn ImageService>,
    /// `GetPods(true)`: the images of every container the runtime has.
    pub runtime: Arc<dyn Runtime>,
    /// `ImageFsStats`.
    pub stats: Arc<dyn StatsProvider>,
    /// The runtime's sandbox image.
    pub sandbox_image: Arc<dyn SandboxImageSource>,
    /// Node events (`FreeDiskSpaceFailed`, `InvalidDiskCapacity`).
    pub recorder: Arc<dyn EventRecorder>,
    /// Wall clock.
    pub clock: Arc<dyn Clock>,
    /// The node the events are about.
    pub node_name: String,
}

/// `errors.NewAggregate(errs).Error()`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `formatSize`: a human-readable size.
pub fn format_size(size_bytes: i64) -> String {
    const KIB: f64 = 1024.0;
    const MIB: f64 = 1024.0 * KIB;
    const GIB: f64 = 1024.0 * MIB;
    const TIB: f64 = 1024.0 * GIB;
    #[allow(clippy::cast_precision_loss)]
    let size = size_bytes as f64;
    if size < KIB {
        format!("{size_bytes} B")
    } else if size < MIB {
        format!("{:.1} KiB", size / KIB)
    } else if size < GIB {
        format!("{:.1} MiB", size / MIB)
    } else if size < TIB {
        format!("{:.1} GiB", size / GIB)
    } else {
        format!("{:.1} TiB", size / TIB)
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl RealImageGcManager {
    /// `NewImageGCManager`: validates the policy.
    pub fn new(deps: ImageGcDeps, policy: ImageGcPolicy) -> Result<Self, ImageGcError> {
        let (high, low) = (policy.high_threshold_percent, policy.low_threshold_percent);
        if !(0..=100).contains(&high) {
            return Err(ImageGcError::InvalidHighThreshold(high));
        }
        if !(0..=100).contains(&low) {
            return Err(ImageGcError::InvalidLowThreshold(low));
        }
        if low > high {
            return Err(ImageGcError::LowAboveHigh { low, high });
        }
        Ok(Self {
            images: deps.images,
            runtime: deps.runtime,
            stats: deps.stats,
            sandbox_image: deps.sandbox_image,
            recorder: deps.recorder,
            clock: deps.clock,
            node_name: deps.node_name,
            policy,
            records: Mutex::new(HashMap::new()),
            cache: Mutex::new(Vec::new()),
        })
    }

    /// The policy.
    pub fn policy(&self) -> &ImageGcPolicy {
        &self.policy
    }

    /// The records (tests, debugging).
    pub fn records(&self) -> HashMap<String, ImageRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `detectImages`: records new images (first detected at `detect_time`), marks those a
    /// container of the runtime uses as used now, forgets images that are gone. Returns the
    /// IDs in use.
    pub async fn detect_images(
        &self,
        detect_time: Timestamp,
    ) -> Result<HashSet<String>, ImageGcError> {
        let images = self
            .images
            .list_images(None)
            .await
            .map_err(|e| ImageGcError::Runtime(e.to_string()))?;
        let pods = self
            .runtime
            .get_pods(true)
            .await
            .map_err(|e| ImageGcError::Runtime(e.to_string()))?;
        let sandbox_image = self.sandbox_image.sandbox_image().await;
        let mut in_use = HashSet::new();
        let image_ids: HashSet<&str> = images.iter().map(|i| i.id.as_str()).collect();
        for pod in &pods {
            for c in &pod.containers {
                // `handleImageVolumes`: the images the container mounts are in use too.
                if kubelet_container::gates::image_volume() {
                    let mounts = self
                        .runtime
                        .container_image_mounts(&c.id)
                        .await
                        .map_err(|e| ImageGcError::Runtime(format!("get container status: {e}")))?;
                    for id in mounts {
                        if image_ids.contains(id.as_str()) {
                            tracing::trace!(pod = %pod.full_name(), container = %c.name, image_id = %id, "Container uses image as mount");
                            in_use.insert(id);
                        }
                    }
                }
                tracing::trace!(pod = %pod.full_name(), container = %c.name, image = %c.image, image_id = %c.image_id, "Container uses image");
                in_use.insert(c.image_id.clone());
            }
        }
        let now = self.clock.now();
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut current = HashSet::new();
        for image in &images {
            let key = image.id.clone();
            current.insert(key.clone());
            let record = records.entry(key.clone()).or_insert_with(|| {
                tracing::trace!(image_id = %key, "Image ID is new");
                ImageRecord {
                    runtime_handler: image
                        .spec
                        .as_ref()
                        .map(|s| s.runtime_handler.clone())
                        .unwrap_or_default(),
                    first_detected: detect_time,
                    last_used: None,
                    size: 0,
                    pinned: false,
                }
            });
            if in_use.contains(&key) {
                record.last_used = Some(now);
            }
            record.size = image.size;
            let is_sandbox = sandbox_image
                .as_deref()
                .is_some_and(|s| image.repo_tags.iter().any(|t| t == s) || image.id == s);
            record.pinned = image.pinned || is_sandbox;
        }
        records.retain(|id, _| current.contains(id));
        Ok(in_use)
    }

    /// `imagesInEvictionOrder`: the unused, unpinned images, least recently used first,
    /// then first detected first.
    async fn images_in_eviction_order(
        &self,
        free_time: Timestamp,
    ) -> Result<Vec<EvictionInfo>, ImageGcError> {
        let in_use = self.detect_images(free_time).await?;
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut images: Vec<EvictionInfo> = records
            .iter()
            .filter(|(id, r)| !in_use.contains(*id) && !r.pinned)
            .map(|(id, r)| EvictionInfo {
                id: id.clone(),
                record: r.clone(),
            })
            .collect();
        // `byLastUsedAndDetected` (the ID only makes the order of full ties stable).
        images.sort_by(|a, b| {
            (a.record.last_used, a.record.first_detected, &a.id).cmp(&(
                b.record.last_used,
                b.record.first_detected,
                &b.id,
            ))
        });
        Ok(images)
    }

    /// `freeImage`: removes one image and forgets it.
    async fn free_image(&self, image: &EvictionInfo, reason: &str) -> Result<(), String> {
        tracing::info!(image_id = %image.id, size = image.record.size, runtime_handler = %image.record.runtime_handler, "Removing image to free bytes");
        let spec = ImageSpec {
            image: image.id.clone(),
            runtime_handler: image.record.runtime_handler.clone(),
            ..ImageSpec::default()
        };
        self.images
            .remove_image(&spec)
            .await
            .map_err(|e| e.to_string())?;
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&image.id);
        if let Some(m) = kubelet_metrics::kubelet() {
            m.image_garbage_collected_total
                .with_label_values(&[reason])
                .inc();
        }
        Ok(())
    }

    /// `freeOldImages`: removes the images unused for longer than the maximum age, once the
    /// maximum age has passed since `began_gc`; returns the others.
    async fn free_old_images(
        &self,
        images: Vec<EvictionInfo>,
        free_time: Timestamp,
        began_gc: Timestamp,
    ) -> Result<Vec<EvictionInfo>, ImageGcError> {
        let max_age = self.policy.max_age;
        if max_age.is_zero() {
            return Ok(images);
        }
        // Wait until the maximum age has passed since the kubelet started, or else images
        // could be collected prematurely.
        if kubelet_container::clock::duration_between(began_gc, free_time) <= max_age {
            return Ok(images);
        }
        let mut errors = Vec::new();
        let mut remaining = Vec::new();
        for image in images {
            let unused_for = match image.record.last_used {
                Some(t) => kubelet_container::clock::duration_between(t, free_time),
                None => Duration::MAX,
            };
            if unused_for > max_age {
                if let Err(e) = self.free_image(&image, REASON_AGE).await {
                    errors.push(e);
                    remaining.push(image);
                }
                continue;
            }
            remaining.push(image);
        }
        if !errors.is_empty() {
            return Err(ImageGcError::OldImages {
                max_age: kubelet_apimachinery::duration::Duration::from_std(max_age).to_string(),
                errors: aggregate(&errors),
            });
        }
        Ok(remaining)
    }

    /// `freeSpace`: removes eligible images in order until `bytes_to_free` are freed; returns
    /// the bytes freed.
    async fn free_space(
        &self,
        bytes_to_free: i64,
        free_time: Timestamp,
        images: &[EvictionInfo],
    ) -> Result<i64, ImageGcError> {
        let mut errors = Vec::new();
        let mut freed: i64 = 0;
        for image in images {
            // Images in use were given a newer lastUsed.
            if image.record.last_used.is_some_and(|t| t >= free_time) {
                tracing::trace!(image_id = %image.id, "Image ID was used too recently, not eligible for garbage collection");
                continue;
            }
            // An image younger than the minimum age may have just been pulled for a
            // container about to start.
            let age =
                kubelet_container::clock::duration_between(image.record.first_detected, free_time);
            if age < self.policy.min_age {
                tracing::trace!(image_id = %image.id, ?age, "Image ID's age is less than the policy's minAge, not eligible for garbage collection");
                continue;
            }
            if let Err(e) = self.free_image(image, REASON_SPACE).await {
                errors.push(e);
                continue;
            }
            freed = freed.saturating_add(to_i64(image.record.size));
            if freed >= bytes_to_free {
                break;
            }
        }
        if !errors.is_empty() {
            return Err(ImageGcError::Deletion {
                wanted: bytes_to_free,
                freed,
                errors: aggregate(&errors),
            });
        }
        Ok(freed)
    }

    /// One refresh of the image cache (`Start`'s 30 s loop): the runtime's images, largest
    /// first (`sliceutils.ByImageSize`).
    pub async fn refresh_image_cache(&self) {
        match self.images.list_images(None).await {
            Ok(list) => {
                let mut images: Vec<Image> = list
                    .into_iter()
                    .map(|i| Image {
                        spec: kubelet_container::ImageSpec {
                            image: i.id.clone(),
                            runtime_handler: i
                                .spec
                                .as_ref()
                                .map(|s| s.runtime_handler.clone())
                                .unwrap_or_default(),
                            annotations: Vec::new(),
                        },
                        id: i.id,
                        repo_tags: i.repo_tags,
                        repo_digests: i.repo_digests,
                        size: i.size,
                        pinned: i.pinned,
                    })
                    .collect();
                images.sort_by_key(|i| std::cmp::Reverse(i.size));
                *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = images;
            }
            Err(e) => tracing::info!(err = %e, "Failed to update image list"),
        }
    }

    /// `Start`: `detectImages` every 5 minutes and the image cache every 30 seconds, both
    /// at once first (`wait.Until`). Never returns; drop the future to stop it.
    pub async fn start(&self) {
        let detect = async {
            let mut ticker = tokio::time::interval(IMAGE_DETECT_PERIOD);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                if let Err(e) = self.detect_images(self.clock.now()).await {
                    tracing::info!(err = %e, "Failed to monitor images");
                }
            }
        };
        let cache = async {
            let mut ticker = tokio::time::interval(IMAGE_CACHE_PERIOD);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                self.refresh_image_cache().await;
            }
        };
        tokio::join!(detect, cache);
    }

    /// `StartGarbageCollection`'s image loop: a round at once, then every `period`; a
    /// failure is logged, and a failure after a failure also makes an `ImageGCFailed`
    /// event. Nothing runs when the policy [disables](ImageGcPolicy::disabled) image GC.
    /// Never returns otherwise; drop the future to stop it.
    pub async fn run_garbage_collection(&self, period: Duration) {
        if self.policy.disabled() {
            tracing::debug!(
                "ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC"
            );
            return;
        }
        let began_gc = self.clock.now();
        let mut prev_failed = false;
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            prev_failed = self.garbage_collect_round(began_gc, prev_failed).await;
        }
    }

    /// One round of [`run_garbage_collection`](Self::run_garbage_collection); returns
    /// whether it failed.
    pub async fn garbage_collect_round(&self, began_gc: Timestamp, prev_failed: bool) -> bool {
        match self.garbage_collect(began_gc).await {
            Err(e) => {
                if prev_failed {
                    tracing::error!(err = %e, "Image garbage collection failed multiple times in a row");
                    // Only repeated failures make an event.
                    self.recorder.event(
                        &node_ref(&self.node_name),
                        EventType::Warning,
                        reasons::IMAGE_GC_FAILED,
                        &e.to_string(),
                    );
                } else {
                    tracing::error!(err = %e, "Image garbage collection failed once. Stats initialization may not have completed yet");
                }
                true
            }
            Ok(()) => {
                if prev_failed {
                    tracing::info!("Image garbage collection succeeded");
                } else {
                    tracing::debug!("Image garbage collection succeeded");
                }
                false
            }
        }
    }

    fn node_event(&self, reason: &str, message: &str) {
        self.recorder.event(
            &node_ref(&self.node_name),
            EventType::Warning,
            reason,
            message,
        );
    }
}

#[async_trait]
impl ImageGcManager for RealImageGcManager {
    async fn garbage_collect(&self, began_gc: Timestamp) -> Result<(), ImageGcError> {
        let free_time = self.clock.now();
        let images = self.images_in_eviction_order(free_time).await?;
        let images = self.free_old_images(images, free_time, began_gc).await?;

        let fs = self
            .stats
            .image_fs_stats()
            .await
            .map_err(ImageGcError::Stats)?;
        let capacity = to_i64(fs.capacity_bytes.unwrap_or(0));
        let mut available = to_i64(fs.available_bytes.unwrap_or(0));
        if available > capacity {
            tracing::info!(available, capacity, "Availability is larger than capacity");
            available = capacity;
        }
        if capacity == 0 {
            let err = ImageGcError::InvalidCapacity;
            self.node_event(reasons::INVALID_DISK_CAPACITY, &err.to_string());
            return Err(err);
        }

        // Over the high threshold: free enough to get to the low one.
        let usage_percent = 100 - available.saturating_mul(100) / capacity;
        let (high, low) = (
            i64::from(self.policy.high_threshold_percent),
            i64::from(self.policy.low_threshold_percent),
        );
        if usage_percent >= high {
            let amount_to_free = capacity.saturating_mul(100 - low) / 100 - available;
            tracing::info!(
                usage = usage_percent,
                high_threshold = high,
                amount_to_free,
                low_threshold = low,
                "Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold"
            );
            let freed = self.free_space(amount_to_free, free_time, &images).await?;
            if freed < amount_to_free {
                let message = format!(
                    "Insufficient free disk space on the node's image filesystem ({usage_percent}% of {} used). Failed to free sufficient space by deleting unused images (freed {freed} bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
                    format_size(capacity)
                );
                self.node_event(reasons::FREE_DISK_SPACE_FAILED, &message);
                return Err(ImageGcError::InsufficientSpace(message));
            }
        }
        Ok(())
    }

    async fn delete_unused_images(&self) -> Result<u64, ImageGcError> {
        tracing::info!("Attempting to delete unused images");
        let free_time = self.clock.now();
        let images = self.images_in_eviction_order(free_time).await?;
        let freed = self.free_space(i64::MAX, free_time, &images).await?;
        Ok(u64::try_from(freed).unwrap_or(0))
    }

    fn get_image_list(&self) -> Vec<Image> {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[cfg(test)]
#[path = "image_gc_tests.rs"]
mod tests;
