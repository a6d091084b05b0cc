//! Making sure a container's image is present (upstream `pkg/kubelet/images/image_manager.go`
//! `EnsureImageExists`, `puller.go` serial/parallel pullers, `kuberuntime_image.go`).
//!
//! Pull policy decides whether to pull; failures feed a per-(pod, image) back-off
//! (10 s doubling to 300 s), during which starts fail with `ImagePullBackOff`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use kubelet_container::{Backoff, Clock, SyncErrorKind};
use kubelet_cri::ImageService;
use kubelet_cri::v1::{ImageSpec, PodSandboxConfig};
use tokio::sync::Semaphore;

use crate::image_ref::{apply_default_image_tag, parse_image_name, pull_policy, should_pull_image};
use crate::keyring::lookup_credentials;
use crate::security::ImageUser;

/// Initial image pull back-off (`backOffPeriod`).
pub const IMAGE_BACKOFF_INITIAL: Duration = Duration::from_secs(10);
/// Maximum image pull back-off (`MaxImageBackOff`).
pub const IMAGE_BACKOFF_MAX: Duration = Duration::from_secs(300);

/// A failed `EnsureImageExists`: the reason (`ErrImagePull`, ...) and a message for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageError {
    /// Waiting reason.
    pub kind: SyncErrorKind,
    /// Human-readable message.
    pub message: String,
}

/// How pulls are scheduled (`serializeImagePulls`, `maxParallelImagePulls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullConcurrency {
    /// One pull at a time (`serializeImagePulls: true`, the default).
    Serial,
    /// At most this many at once (`serializeImagePulls: false` with `maxParallelImagePulls`).
    Limited(usize),
    /// No limit (`serializeImagePulls: false`, no maximum).
    Unlimited,
}

impl PullConcurrency {
    /// From the KubeletConfiguration fields.
    pub fn from_config(serialize_image_pulls: bool, max_parallel_image_pulls: Option<i32>) -> Self {
        match (serialize_image_pulls, max_parallel_image_pulls) {
            (true, _) => Self::Serial,
            (false, Some(n)) if n > 0 => Self::Limited(usize::try_from(n).unwrap_or(1)),
            (false, _) => Self::Unlimited,
        }
    }
}

/// The kubelet's image manager.
pub struct ImageManager {
    service: Arc<dyn ImageService>,
    backoff: Backoff,
    clock: Arc<dyn Clock>,
    limiter: Option<Arc<Semaphore>>,
}

impl ImageManager {
    /// An image manager pulling through `service`.
    pub fn new(
        service: Arc<dyn ImageService>,
        concurrency: PullConcurrency,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let limiter = match concurrency {
            PullConcurrency::Serial => Some(Arc::new(Semaphore::new(1))),
            PullConcurrency::Limited(n) => Some(Arc::new(Semaphore::new(n.max(1)))),
            PullConcurrency::Unlimited => None,
        };
        Self {
            service,
            backoff: Backoff::new(IMAGE_BACKOFF_INITIAL, IMAGE_BACKOFF_MAX, clock.clone()),
            clock,
            limiter,
        }
    }

    /// `GetImageRef`: the image ID when present, `None` when absent.
    pub async fn get_image_ref(&self, spec: &ImageSpec) -> Result<Option<String>, String> {
        let resp = self
            .service
            .image_status(spec, false)
            .await
            .map_err(|e| e.to_string())?;
        Ok(resp.image.map(|i| i.id))
    }

    /// `getImageUser`: the uid or user name the image runs as (root when it names none).
    pub async fn image_user(&self, image_ref: &str) -> Result<ImageUser, String> {
        let spec = ImageSpec {
            image: image_ref.to_string(),
            ..ImageSpec::default()
        };
        let resp = self
            .service
            .image_status(&spec, false)
            .await
            .map_err(|e| e.to_string())?;
        let image = resp
            .image
            .ok_or_else(|| format!("image {image_ref:?} not found"))?;
        Ok(match (image.uid, image.username) {
            (Some(uid), _) => ImageUser {
                uid: Some(uid.value),
                username: String::new(),
            },
            (None, name) if !name.is_empty() => ImageUser {
                uid: None,
                username: name,
            },
            _ => ImageUser {
                uid: Some(0),
                username: String::new(),
            },
        })
    }

    /// `EnsureImageExists`: returns the image reference to create the container from.
    pub async fn ensure_image_exists(
        &self,
        pod: &Pod,
        container: &Container,
        pull_secrets: &[Secret],
        sandbox_config: Option<&PodSandboxConfig>,
        runtime_handler: &str,
    ) -> Result<String, ImageError> {
        let requested = container.image.as_deref().unwrap_or_default();
        let fail = |kind, message| Err(ImageError { kind, message });
        let image = match apply_default_image_tag(requested) {
            Ok(i) => i,
            Err(e) => {
                return fail(
                    SyncErrorKind::InvalidImageName,
                    format!("Failed to apply default image tag {requested:?}: {e}"),
                );
            }
        };
        let spec = ImageSpec {
            image: image.clone(),
            runtime_handler: runtime_handler.to_string(),
            annotations: pod
                .metadata
                .annotations
                .clone()
                .unwrap_or_default()
                .into_iter()
                .collect(),
            ..ImageSpec::default()
        };
        let present = match self.get_image_ref(&spec).await {
            Ok(r) => r,
            Err(e) => {
                return fail(
                    SyncErrorKind::ImageInspect,
                    format!("Failed to inspect image {requested:?}: {e}"),
                );
            }
        };
        let policy = pull_policy(container.image_pull_policy.as_deref(), requested);
        if !should_pull_image(policy, present.is_some()) {
            return match present {
                Some(r) => {
                    tracing::debug!(
                        image = requested,
                        "Container image already present on machine"
                    );
                    Ok(r)
                }
                None => fail(
                    SyncErrorKind::ImageNeverPull,
                    format!(
                        "Container image {requested:?} is not present with pull policy of Never"
                    ),
                ),
            };
        }
        let key = format!(
            "{}_{requested}",
            pod.metadata.uid.as_deref().unwrap_or_default()
        );
        if self
            .backoff
            .is_in_backoff_since_update(&key, self.clock.now())
        {
            return fail(
                SyncErrorKind::ImagePullBackOff,
                format!("Back-off pulling image {requested:?}"),
            );
        }
        let started = Instant::now();
        match self.pull(&spec, pull_secrets, sandbox_config).await {
            Ok(image_ref) => {
                tracing::info!(image = requested, elapsed = ?started.elapsed(), "Successfully pulled image");
                self.backoff.gc();
                Ok(image_ref)
            }
            Err(e) => {
                tracing::warn!(image = requested, error = %e, "Failed to pull image");
                self.backoff.next(&key, self.clock.now());
                fail(SyncErrorKind::ImagePull, e)
            }
        }
    }

    /// `PullImage` with the matching pull-secret credentials (each tried in turn), or
    /// anonymously when none match; waits for a pull slot first.
    async fn pull(
        &self,
        spec: &ImageSpec,
        secrets: &[Secret],
        sandbox: Option<&PodSandboxConfig>,
    ) -> Result<String, String> {
        let _permit = match &self.limiter {
            Some(s) => Some(s.clone().acquire_owned().await.map_err(|e| e.to_string())?),
            None => None,
        };
        let creds = parse_image_name(&spec.image)
            .map(|n| lookup_credentials(secrets, &n))
            .unwrap_or_default();
        if creds.is_empty() {
            return self
                .service
                .pull_image(spec, None, sandbox)
                .await
                .map_err(|e| e.to_string());
        }
        let mut last = String::new();
        for auth in &creds {
            match self.service.pull_image(spec, Some(auth), sandbox).await {
                Ok(r) => return Ok(r),
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use jiff::Timestamp;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kubelet_container::FakeClock;
    use kubelet_cri::CriError;
    use kubelet_cri::fake::FakeImageService;

    fn setup() -> (Arc<FakeImageService>, FakeClock, ImageManager) {
        let fake = Arc::new(FakeImageService::new());
        let clock = FakeClock::new(Timestamp::UNIX_EPOCH);
        let m = ImageManager::new(
            fake.clone(),
            PullConcurrency::Serial,
            Arc::new(clock.clone()),
        );
        (fake, clock, m)
    }

    fn pod() -> Pod {
        Pod {
            metadata: ObjectMeta {
                uid: Some("u1".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn container(image: &str, policy: Option<&str>) -> Container {
        Container {
            name: "c".into(),
            image: Some(image.into()),
            image_pull_policy: policy.map(String::from),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn pull_policy_decides() {
        let (fake, _, m) = setup();
        fake.set_fake_images(&["busybox:1.36"]);
        let r = m
            .ensure_image_exists(&pod(), &container("busybox:1.36", None), &[], None, "")
            .await
            .unwrap();
        assert!(r.starts_with("sha256:"));
        assert!(
            fake.pulled().is_empty(),
            "IfNotPresent must not pull a present image"
        );

        m.ensure_image_exists(
            &pod(),
            &container("busybox:1.36", Some("Always")),
            &[],
            None,
            "",
        )
        .await
        .unwrap();
        assert_eq!(fake.pulled().len(), 1);
        assert_eq!(fake.pulled()[0].image.image, "busybox:1.36");

        let e = m
            .ensure_image_exists(&pod(), &container("nginx:1", Some("Never")), &[], None, "")
            .await
            .unwrap_err();
        assert_eq!(e.kind, SyncErrorKind::ImageNeverPull);
        let e = m
            .ensure_image_exists(&pod(), &container("Bad Name", None), &[], None, "")
            .await
            .unwrap_err();
        assert_eq!(e.kind, SyncErrorKind::InvalidImageName);

        // Untagged images get :latest and are pulled (policy Always by default).
        m.ensure_image_exists(&pod(), &container("alpine", None), &[], None, "")
            .await
            .unwrap();
        assert_eq!(fake.pulled().last().unwrap().image.image, "alpine:latest");
    }

    #[tokio::test]
    async fn failed_pulls_back_off() {
        let (fake, clock, m) = setup();
        let err = || {
            CriError::status(
                "fake",
                "PullImage",
                tonic::Code::Unavailable,
                "registry down",
            )
        };
        fake.inject_error("PullImage", err());
        let c = container("app:1", None);
        let e = m
            .ensure_image_exists(&pod(), &c, &[], None, "")
            .await
            .unwrap_err();
        assert_eq!(e.kind, SyncErrorKind::ImagePull);
        assert!(e.message.contains("registry down"), "{}", e.message);

        let e = m
            .ensure_image_exists(&pod(), &c, &[], None, "")
            .await
            .unwrap_err();
        assert_eq!(e.kind, SyncErrorKind::ImagePullBackOff);
        assert_eq!(fake.pulled().len(), 0, "no pull during back-off");

        clock.step(Duration::from_secs(11));
        m.ensure_image_exists(&pod(), &c, &[], None, "")
            .await
            .unwrap();
        assert_eq!(fake.pulled().len(), 1);
    }

    #[test]
    fn concurrency_from_config() {
        assert_eq!(
            PullConcurrency::from_config(true, Some(5)),
            PullConcurrency::Serial
        );
        assert_eq!(
            PullConcurrency::from_config(false, Some(5)),
            PullConcurrency::Limited(5)
        );
        assert_eq!(
            PullConcurrency::from_config(false, None),
            PullConcurrency::Unlimited
        );
    }
}
