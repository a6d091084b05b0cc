//! Image garbage collection, wired (`kubelet.go` `NewMainKubelet`: `NewImageGCManager` with
//! `imageGCHighThresholdPercent`, `imageGCLowThresholdPercent`, `imageMinimumGCAge`,
//! `imageMaximumGCAge`; `StartGarbageCollection`; `initializeModules`: `imageManager.Start`).
//! The collector is `kubelet_runtime::image_gc`; the image filesystem's figures and the
//! runtime's sandbox image come from the summary provider (`crates/stats`).

use std::sync::Arc;

use async_trait::async_trait;
use kubelet_runtime::image_gc::{
    IMAGE_GC_PERIOD, ImageFsStats, ImageGcDeps, ImageGcPolicy, RealImageGcManager,
    SandboxImageSource, StatsProvider,
};
use kubelet_stats::SummaryProvider;
use tokio::task::JoinSet;

use super::KubeletDeps;
use crate::startup::RunError;

/// The summary provider as image GC's `StatsProvider` (`criStatsProvider.ImageFsStats`) and
/// as the source of the runtime's sandbox image.
struct SummaryImageFs(Arc<SummaryProvider>);

#[async_trait]
impl StatsProvider for SummaryImageFs {
    async fn image_fs_stats(&self) -> Result<ImageFsStats, String> {
        let (image, _) = self.0.image_fs_stats().await.map_err(|e| e.to_string())?;
        Ok(ImageFsStats {
            capacity_bytes: image.capacity_bytes,
            available_bytes: image.available_bytes,
        })
    }
}

#[async_trait]
impl SandboxImageSource for SummaryImageFs {
    async fn sandbox_image(&self) -> Option<String> {
        Some(self.0.sandbox_image().await).filter(|s| !s.is_empty())
    }
}

/// `imageGCPolicy` from the configuration.
pub fn policy(c: &kubelet_config::KubeletConfiguration) -> ImageGcPolicy {
    ImageGcPolicy {
        high_threshold_percent: c.image_gc_high_threshold_percent.unwrap_or(85),
        low_threshold_percent: c.image_gc_low_threshold_percent.unwrap_or(80),
        min_age: c.image_minimum_gc_age.as_std().unwrap_or_default(),
        max_age: c.image_maximum_gc_age.as_std().unwrap_or_default(),
    }
}

/// `NewImageGCManager`.
pub fn new_image_gc_manager(
    deps: &KubeletDeps<'_>,
    runtime: Arc<dyn kubelet_container::Runtime>,
    stats: &Arc<SummaryProvider>,
) -> Result<Arc<RealImageGcManager>, RunError> {
    let fs = Arc::new(SummaryImageFs(stats.clone()));
    let images = Arc::new(
        kubelet_runtime::instrumented_services::InstrumentedImageService::new(
            deps.runtime.image.clone(),
        ),
    );
    RealImageGcManager::new(
        ImageGcDeps {
            images,
            runtime,
            stats: fs.clone(),
            sandbox_image: fs,
            recorder: deps.recorder.clone(),
            clock: Arc::new(kubelet_container::RealClock),
            node_name: deps.node_name.clone(),
        },
        policy(&deps.server.config),
    )
    .map(Arc::new)
    .map_err(|e| RunError::Kubelet(format!("failed to initialize image manager: {e}")))
}

/// `StartGarbageCollection`'s image loop (a round at once, then every `ImageGCPeriod`;
/// nothing when disabled) and `imageManager.Start` (image detection every 5 minutes, the
/// image list cache every 30 seconds), each on its own task.
pub fn spawn_image_gc(
    deps: &KubeletDeps<'_>,
    manager: &Arc<RealImageGcManager>,
    tasks: &mut JoinSet<()>,
) {
    let (cancel, gc) = (deps.shutdown.clone(), manager.clone());
    tasks.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = gc.run_garbage_collection(IMAGE_GC_PERIOD) => {}
        }
    });
    let (cancel, gc) = (deps.shutdown.clone(), manager.clone());
    tasks.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = gc.start() => {}
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration as StdDuration;

    use kubelet_apimachinery::Duration;

    use super::*;

    #[test]
    fn policy_follows_the_configuration() {
        let c = kubelet_config::KubeletConfiguration {
            image_gc_high_threshold_percent: Some(90),
            image_gc_low_threshold_percent: Some(50),
            image_minimum_gc_age: Duration::from_std(StdDuration::from_secs(30)),
            image_maximum_gc_age: Duration::from_std(StdDuration::from_secs(3600)),
            ..Default::default()
        };
        assert_eq!(
            policy(&c),
            ImageGcPolicy {
                high_threshold_percent: 90,
                low_threshold_percent: 50,
                min_age: StdDuration::from_secs(30),
                max_age: StdDuration::from_secs(3600),
            }
        );
        let off = kubelet_config::KubeletConfiguration {
            image_gc_high_threshold_percent: Some(100),
            ..Default::default()
        };
        assert!(policy(&off).disabled());
    }
}
