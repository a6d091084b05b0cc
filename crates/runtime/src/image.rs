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

use crate::events::FilteredRecorder;
use crate::image_ref::{apply_default_image_tag, parse_image_name, pull_policy, should_pull_image};
use crate::keyring::lookup_credentials;
use crate::security::ImageUser;
use kubelet_container::events::{EventType, container_ref, reasons};

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

/// A finished pull (`pullResult`).
struct Pulled {
    image_ref: String,
    size: u64,
    /// From the start of the pull (after waiting for a slot) to the size lookup.
    pull_duration: Duration,
}

/// `d.Truncate(time.Millisecond)` printed as Go prints durations.
fn go_millis(d: Duration) -> kubelet_apimachinery::duration::Duration {
    let ms = Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    kubelet_apimachinery::duration::Duration::from_std(ms)
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
    recorder: FilteredRecorder,
    ensure_secret_pulled_images: bool,
}

impl ImageManager {
    /// An image manager pulling through `service`.
    pub fn new(
        service: Arc<dyn ImageService>,
        concurrency: PullConcurrency,
        clock: Arc<dyn Clock>,
        recorder: FilteredRecorder,
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
            recorder,
            ensure_secret_pulled_images: true,
        }
    }

    /// Feature gate `KubeletEnsureSecretPulledImages`: with it (the 1.35 default) a present
    /// image's `Pulled` event says it "can be accessed by the pod". kubelet-rs has no
    /// image pull manager: a present image is always used, as the gate's default policy
    /// does for images pulled without credentials and for preloaded ones.
    pub fn ensure_secret_pulled_images(mut self, enabled: bool) -> Self {
        self.ensure_secret_pulled_images = enabled;
        self
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
    /// Events (`logIt`) go to the container's reference.
    pub async fn ensure_image_exists(
        &self,
        pod: &Pod,
        container: &Container,
        pull_secrets: &[Secret],
        sandbox_config: Option<&PodSandboxConfig>,
        runtime_handler: &str,
    ) -> Result<String, ImageError> {
        self.ensure_image_exists_for(
            &container_ref(pod, &container.name),
            Some(&container.name),
            pod,
            container.image.as_deref().unwrap_or_default(),
            container.image_pull_policy.as_deref(),
            pull_secrets,
            sandbox_config,
            runtime_handler,
        )
        .await
    }

    /// `EnsureImageExists` of upstream's signature: `requested` with `pull_policy`, events
    /// to `object` (the container for a container's image, the pod for an image volume's).
    /// The startup timeline's image steps are recorded for `container` (none for an image
    /// volume: the timeline times containers' images).
    #[allow(clippy::too_many_arguments)]
    pub async fn ensure_image_exists_for(
        &self,
        object: &k8s_openapi::api::core::v1::ObjectReference,
        container: Option<&str>,
        pod: &Pod,
        requested: &str,
        pull_policy_field: Option<&str>,
        pull_secrets: &[Secret],
        sandbox_config: Option<&PodSandboxConfig>,
        runtime_handler: &str,
    ) -> Result<String, ImageError> {
        let event = |t, reason, message: &str| self.recorder.event(object, t, reason, message);
        let fail = |kind, message| Err(ImageError { kind, message });
        let image = match apply_default_image_tag(requested) {
            Ok(i) => i,
            Err(e) => {
                let msg = format!("Failed to apply default image tag {requested:?}: {e}");
                event(EventType::Warning, reasons::FAILED_TO_INSPECT_IMAGE, &msg);
                return fail(SyncErrorKind::InvalidImageName, msg);
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
                let msg = format!("Failed to inspect image {requested:?}: {e}");
                event(EventType::Warning, reasons::FAILED_TO_INSPECT_IMAGE, &msg);
                return fail(SyncErrorKind::ImageInspect, msg);
            }
        };
        let policy = pull_policy(pull_policy_field, requested);
        if !should_pull_image(policy, present.is_some()) {
            return match present {
                Some(r) => {
                    let msg = if self.ensure_secret_pulled_images {
                        format!(
                            "Container image {requested:?} already present on machine and can be accessed by the pod"
                        )
                    } else {
                        format!("Container image {requested:?} already present on machine")
                    };
                    event(EventType::Normal, reasons::PULLED_IMAGE, &msg);
                    if let Some(name) = container {
                        kubelet_container::timeline::global().record_image(
                            pod.metadata.uid.as_deref().unwrap_or_default(),
                            name,
                            requested,
                            true,
                        );
                    }
                    Ok(r)
                }
                None => {
                    let msg = format!(
                        "Container image {requested:?} is not present with pull policy of Never"
                    );
                    event(
                        EventType::Warning,
                        reasons::ERR_IMAGE_NEVER_PULL_POLICY,
                        &msg,
                    );
                    fail(SyncErrorKind::ImageNeverPull, msg)
                }
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
            let msg = format!("Back-off pulling image {requested:?}");
            event(EventType::Normal, reasons::BACK_OFF_PULL_IMAGE, &msg);
            return fail(SyncErrorKind::ImagePullBackOff, msg);
        }
        event(
            EventType::Normal,
            reasons::PULLING_IMAGE,
            &format!("Pulling image {requested:?}"),
        );
        let started = Instant::now();
        let tracker = kubelet_container::pod_startup_latency_tracker::global();
        let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
        tracker.record_image_started_pulling(pod_uid);
        // Requested: a serialized or limited puller may still wait for a slot.
        if let Some(name) = container {
            kubelet_container::timeline::global()
                .record_image_pull_started(pod_uid, name, requested);
        }
        let pulled = self.pull(&spec, pull_secrets, sandbox_config).await;
        tracker.record_image_finished_pulling(pod_uid);
        match pulled {
            Ok(pulled) => {
                let total = started.elapsed();
                tracing::info!(image = requested, elapsed = ?total, "Successfully pulled image");
                event(
                    EventType::Normal,
                    reasons::PULLED_IMAGE,
                    &format!(
                        "Successfully pulled image {requested:?} in {} ({} including waiting). Image size: {} bytes.",
                        go_millis(pulled.pull_duration),
                        go_millis(total),
                        pulled.size
                    ),
                );
                self.backoff.gc();
                if let Some(name) = container {
                    kubelet_container::timeline::global()
                        .record_image(pod_uid, name, requested, false);
                }
                Ok(pulled.image_ref)
            }
            Err(e) => {
                tracing::warn!(image = requested, error = %e, "Failed to pull image");
                event(
                    EventType::Warning,
                    reasons::FAILED_TO_PULL_IMAGE,
                    &format!("Failed to pull image {requested:?}: {e}"),
                );
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
    ) -> Result<Pulled, String> {
        let _permit = match &self.limiter {
            Some(s) => Some(s.clone().acquire_owned().await.map_err(|e| e.to_string())?),
            None => None,
        };
        let started = Instant::now();
        let image_ref = self.pull_with_credentials(spec, secrets, sandbox).await?;
        // The image size, best effort (`GetImageSize`); part of the pull's duration.
        let size = match image_ref.is_empty() {
            true => 0,
            false => self
                .service
                .image_status(spec, false)
                .await
                .ok()
                .and_then(|r| r.image)
                .map_or(0, |i| i.size),
        };
        Ok(Pulled {
            image_ref,
            size,
            pull_duration: started.elapsed(),
        })
    }

    async fn pull_with_credentials(
        &self,
        spec: &ImageSpec,
        secrets: &[Secret],
        sandbox: Option<&PodSandboxConfig>,
    ) -> Result<String, String> {
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
    use kubelet_container::events::FakeRecorder;
    use kubelet_cri::CriError;
    use kubelet_cri::fake::{FakeImageService, fake_image};

    fn setup() -> (Arc<FakeImageService>, FakeClock, ImageManager) {
        let (fake, clock, m, _) = setup_recorded();
        (fake, clock, m)
    }

    fn setup_recorded() -> (
        Arc<FakeImageService>,
        FakeClock,
        ImageManager,
        Arc<FakeRecorder>,
    ) {
        let fake = Arc::new(FakeImageService::new());
        let clock = FakeClock::new(Timestamp::UNIX_EPOCH);
        let recorder = Arc::new(FakeRecorder::new());
        let m = ImageManager::new(
            fake.clone(),
            PullConcurrency::Serial,
            Arc::new(clock.clone()),
            FilteredRecorder::new(recorder.clone()),
        );
        (fake, clock, m, recorder)
    }

    /// (type, reason, message) of the events so far, all about container `c` of the pod.
    fn events(recorder: &FakeRecorder) -> Vec<(EventType, String, String)> {
        recorder
            .events()
            .into_iter()
            .map(|e| {
                assert_eq!(e.object.field_path.as_deref(), Some("spec.containers{c}"));
                assert_eq!(e.object.name.as_deref(), Some("web"));
                (e.event_type, e.reason, e.message)
            })
            .collect()
    }

    #[tokio::test]
    async fn image_events_are_upstream_s() {
        use EventType::{Normal, Warning};
        let (fake, _, m, recorder) = setup_recorded();
        let mut pod = pod();
        pod.metadata.name = Some("web".into());
        pod.spec = Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![container("busybox:1.36", None)],
            ..Default::default()
        });
        let ev = |t, r: &str, m: &str| (t, r.to_string(), m.to_string());

        fake.set_fake_images(&["busybox:1.36"]);
        m.ensure_image_exists(&pod, &container("busybox:1.36", None), &[], None, "")
            .await
            .unwrap();
        assert_eq!(
            events(&recorder),
            vec![ev(
                Normal,
                "Pulled",
                "Container image \"busybox:1.36\" already present on machine and can be accessed by the pod"
            )]
        );

        m.ensure_image_exists(&pod, &container("alpine:3", None), &[], None, "")
            .await
            .unwrap();
        let got = events(&recorder);
        assert_eq!(got[1], ev(Normal, "Pulling", "Pulling image \"alpine:3\""));
        let (t, reason, msg) = &got[2];
        assert_eq!((*t, reason.as_str()), (Normal, "Pulled"));
        let size = fake_image("alpine:3").size;
        assert!(
            msg.starts_with("Successfully pulled image \"alpine:3\" in ")
                && msg.ends_with(&format!(" including waiting). Image size: {size} bytes.")),
            "{msg}"
        );

        fake.inject_error(
            "PullImage",
            CriError::status("fake", "PullImage", tonic::Code::NotFound, "no such image"),
        );
        let c = container("nope:1", None);
        m.ensure_image_exists(&pod, &c, &[], None, "")
            .await
            .unwrap_err();
        let e = m
            .ensure_image_exists(&pod, &c, &[], None, "")
            .await
            .unwrap_err();
        assert_eq!(e.message, "Back-off pulling image \"nope:1\"");
        let got = events(&recorder);
        assert_eq!(got[3], ev(Normal, "Pulling", "Pulling image \"nope:1\""));
        assert_eq!(got[4].0, Warning);
        assert_eq!(got[4].1, "Failed");
        assert!(
            got[4].2.starts_with("Failed to pull image \"nope:1\": ")
                && got[4].2.contains("no such image"),
            "{}",
            got[4].2
        );
        assert_eq!(
            got[5],
            ev(Normal, "BackOff", "Back-off pulling image \"nope:1\"")
        );

        m.ensure_image_exists(&pod, &container("absent:1", Some("Never")), &[], None, "")
            .await
            .unwrap_err();
        assert_eq!(
            events(&recorder)[6],
            ev(
                Warning,
                "ErrImageNeverPull",
                "Container image \"absent:1\" is not present with pull policy of Never"
            )
        );
        assert_eq!(events(&recorder).len(), 7);

        // Without the gate, the older wording.
        let m = m.ensure_secret_pulled_images(false);
        m.ensure_image_exists(&pod, &container("busybox:1.36", None), &[], None, "")
            .await
            .unwrap();
        assert_eq!(
            events(&recorder)[7].2,
            "Container image \"busybox:1.36\" already present on machine"
        );
    }

    #[test]
    fn pull_durations_are_printed_as_go_truncated_to_milliseconds() {
        assert_eq!(
            go_millis(Duration::from_micros(1_234_567)).to_string(),
            "1.234s"
        );
        assert_eq!(
            go_millis(Duration::from_micros(523_999)).to_string(),
            "523ms"
        );
        assert_eq!(go_millis(Duration::from_micros(999)).to_string(), "0s");
        assert_eq!(
            go_millis(Duration::from_millis(123_456)).to_string(),
            "2m3.456s"
        );
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

    /// The startup timeline's image steps: per container, `imagePullStarted` only when the
    /// image is pulled, `imagePulled` naming the image and whether it was already present.
    #[tokio::test]
    async fn image_steps_of_the_startup_timeline() {
        use kubelet_container::timeline::{Step, global};
        let (fake, _, m) = setup();
        fake.set_fake_images(&["busybox:1.36"]);
        let uid = "uid-image-timeline";
        let mut p = pod();
        p.metadata.uid = Some(uid.into());
        global().seen(uid);
        let named = |name: &str, image: &str, policy| Container {
            name: name.into(),
            ..container(image, policy)
        };
        for c in [
            named("present", "busybox:1.36", None),
            named("pulled", "nginx:1", None),
        ] {
            m.ensure_image_exists(&p, &c, &[], None, "").await.unwrap();
        }
        let t = global().get(uid).unwrap();
        global().remove(uid);
        let steps: Vec<_> = t
            .steps
            .iter()
            .map(|s| {
                (
                    s.step,
                    s.subject.as_deref(),
                    s.image.as_deref(),
                    s.already_present,
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                (Step::Seen, None, None, false),
                (
                    Step::ImagePulled,
                    Some("present"),
                    Some("busybox:1.36"),
                    true
                ),
                (
                    Step::ImagePullStarted,
                    Some("pulled"),
                    Some("nginx:1"),
                    false
                ),
                (Step::ImagePulled, Some("pulled"), Some("nginx:1"), false),
            ]
        );
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
