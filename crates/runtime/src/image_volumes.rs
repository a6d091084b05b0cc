//! Image volumes (`spec.volumes[*].image`, feature gate `ImageVolume`; upstream
//! `kuberuntime_manager.go` `getImageVolumes`, `toKubeContainerImageVolumes`,
//! `imageVolumePulls`).
//!
//! `SyncPod` pulls every image volume's image once per sync, after the sandbox config and
//! before any container starts, with the volume's `pullPolicy` and the pod's pull secrets
//! (events go to the pod). A failed pull fails only the containers that mount the volume,
//! late, with the pull's reason (`ErrImagePull`, `ImagePullBackOff`, `ErrImageNeverPull`):
//! [`to_kube_container_image_volumes`]. The mounts carry the image (`Mount.image`,
//! `Mount.image_sub_path`); the runtime mounts it.
//!
//! Ours: [`ImageVolumeSupport`] decides from the runtime's `Version` whether the runtime can
//! mount image volumes at all. containerd before 2.1 (and CRI-O before 1.31) predate them
//! and ignore the CRI field: such a runtime would start the container without the volume
//! (or fail on the empty host path), so a container mounting an image volume fails to be
//! created with `CreateContainerError` and a message naming the volume, the field and the
//! runtime instead (`crates/kubelet-rs/tests/image_volumes_real.rs` shows what containerd
//! 1.6 does with the field).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use kubelet_container::SyncErrorKind;
use kubelet_container::events::{EventType, container_ref, pod_ref, reasons};
use kubelet_cri::v1::{ImageSpec, PodSandboxConfig};

use crate::events::FilteredRecorder;
use crate::helper::ImageVolumes;
use crate::image::{ImageError, ImageManager};

/// The pull result of each image volume, by volume name (upstream `imageVolumePulls`).
pub type ImageVolumePulls = HashMap<String, Result<ImageSpec, ImageError>>;

/// CRI's `ErrImageVolumeMountFailed` (`cri-api/pkg/errors`): the prefix of a create error
/// about an image volume mount.
pub const ERR_IMAGE_VOLUME_MOUNT_FAILED: &str = "ImageVolumeMountFailed";

/// `getImageVolumes`: ensures the image of every image volume of `pod` exists. Empty with
/// the gate off (upstream registers no image volume plugin then).
pub(crate) async fn get_image_volumes(
    images: &ImageManager,
    pod: &Pod,
    sandbox_config: &PodSandboxConfig,
    pull_secrets: &[Secret],
    runtime_handler: &str,
) -> ImageVolumePulls {
    let mut res = ImageVolumePulls::new();
    if !kubelet_container::gates::image_volume() {
        return res;
    }
    let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
    for volume in volumes {
        let Some(source) = &volume.image else {
            continue;
        };
        let reference = source.reference.as_deref().unwrap_or_default();
        let pulled = images
            .ensure_image_exists_for(
                &pod_ref(pod),
                None,
                pod,
                reference,
                source.pull_policy.as_deref(),
                pull_secrets,
                Some(sandbox_config),
                runtime_handler,
            )
            .await;
        let entry = match pulled {
            Ok(image_ref) => {
                tracing::debug!(image_ref = %image_ref, pod = %crate::sync::format_pod(pod), "Pulled image");
                Ok(ImageSpec {
                    image: image_ref,
                    user_specified_image: reference.to_string(),
                    runtime_handler: runtime_handler.to_string(),
                    annotations: pod
                        .metadata
                        .annotations
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .collect(),
                })
            }
            Err(e) => {
                tracing::error!(pod = %crate::sync::format_pod(pod), error = %e.kind, message = %e.message, "Failed to ensure image");
                Err(e)
            }
        };
        res.insert(volume.name.clone(), entry);
    }
    res
}

/// `toKubeContainerImageVolumes`: the pulled images of the image volumes `container`
/// mounts; a failed pull of one of them fails the container with that pull's reason and
/// message (the last one), after a `Failed` event (`Error: <reason>`) per failed volume.
pub(crate) fn to_kube_container_image_volumes(
    recorder: &FilteredRecorder,
    pulls: &ImageVolumePulls,
    pod: &Pod,
    container: &Container,
) -> Result<ImageVolumes, (SyncErrorKind, String)> {
    let mut volumes = ImageVolumes::new();
    let mut last_err = None;
    for vm in container.volume_mounts.iter().flatten() {
        match pulls.get(&vm.name) {
            None => {}
            Some(Ok(spec)) => {
                volumes.insert(vm.name.clone(), spec.clone());
            }
            Some(Err(e)) => {
                recorder.event(
                    &container_ref(pod, &container.name),
                    EventType::Warning,
                    reasons::FAILED_TO_CREATE_CONTAINER,
                    &format!("Error: {}", e.kind),
                );
                last_err = Some((e.kind, e.message.clone()));
            }
        }
    }
    match last_err {
        Some(e) => Err(e),
        None => Ok(volumes),
    }
}

/// `incrementImageVolumeMetrics`: after a start attempt, the image volumes handed to it
/// are requested; each mount of one succeeded unless the start failed creating the
/// container with an `ImageVolumeMountFailed` message.
pub(crate) fn increment_image_volume_metrics(
    err: Option<&(SyncErrorKind, String)>,
    container: &Container,
    image_volumes: &ImageVolumes,
) {
    if !kubelet_container::gates::image_volume() {
        return;
    }
    let mount_failed = err.is_some_and(|(kind, msg)| {
        *kind == SyncErrorKind::CreateContainer && msg.starts_with(ERR_IMAGE_VOLUME_MOUNT_FAILED)
    });
    kubelet_metrics::with_image_volume(|m| {
        m.requested_total.inc_by(image_volumes.len() as f64);
        for vm in container.volume_mounts.iter().flatten() {
            if image_volumes.contains_key(&vm.name) {
                if mount_failed {
                    m.mounted_errors_total.inc();
                } else {
                    m.mounted_succeed_total.inc();
                }
            }
        }
    });
}

/// Whether the runtime can mount image volumes, from its CRI `Version` (ours, see the
/// module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageVolumeSupport {
    /// The runtime mounts them (or is not known not to: upstream's behaviour, the runtime
    /// answers).
    Supported,
    /// The runtime predates image volumes: `runtime` (name and version) and the first
    /// version that has them.
    Unsupported {
        /// `<name> <version>` as the runtime reports them.
        runtime: String,
        /// `containerd 2.1`, `cri-o 1.31`.
        needed: &'static str,
    },
}

impl ImageVolumeSupport {
    /// From the CRI `Version` answer: containerd implements image volumes since 2.1, CRI-O
    /// since 1.31; other runtimes are trusted.
    pub fn from_version(runtime_name: &str, runtime_version: &str) -> Self {
        let (major, minor) = major_minor(runtime_version);
        let needed = match runtime_name {
            "containerd" if (major, minor) < (2, 1) => Some("containerd 2.1"),
            "cri-o" if (major, minor) < (1, 31) => Some("cri-o 1.31"),
            _ => None,
        };
        match needed {
            None => Self::Supported,
            Some(needed) => Self::Unsupported {
                runtime: format!("{runtime_name} {runtime_version}"),
                needed,
            },
        }
    }

    /// The `CreateContainerError` message for `container` mounting the image volumes
    /// `volumes` (name, index in `spec.volumes`), or `None` when the runtime mounts them.
    pub fn check(
        &self,
        pod: &Pod,
        container: &Container,
        mounted: &ImageVolumes,
    ) -> Option<String> {
        let Self::Unsupported { runtime, needed } = self else {
            return None;
        };
        if mounted.is_empty() {
            return None;
        }
        let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
        let fields: Vec<String> = volumes
            .enumerate()
            .filter(|(_, v)| mounted.contains_key(&v.name))
            .map(|(i, v)| format!("{:?} (spec.volumes[{i}].image)", v.name))
            .collect();
        Some(format!(
            "{ERR_IMAGE_VOLUME_MOUNT_FAILED}: the container runtime {runtime} cannot mount image volumes ({needed} or later can): container {:?} mounts image volume {}",
            container.name,
            fields.join(", ")
        ))
    }
}

/// `major.minor` of a version (`1.6.20~ds1`, `v2.1.0`); unparsable parts are 0.
fn major_minor(version: &str) -> (u64, u64) {
    let mut parts = version
        .trim()
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_follows_the_runtime_version() {
        let unsupported = |n, v| {
            !matches!(
                ImageVolumeSupport::from_version(n, v),
                ImageVolumeSupport::Supported
            )
        };
        assert!(unsupported("containerd", "1.6.20~ds1"));
        assert!(unsupported("containerd", "v1.7.27"));
        assert!(unsupported("containerd", "v2.0.5"));
        assert!(!unsupported("containerd", "v2.1.0"));
        assert!(!unsupported("containerd", "2.2.1"));
        assert!(unsupported("cri-o", "1.30.4"));
        assert!(!unsupported("cri-o", "1.31.0"));
        assert!(!unsupported("fake", "0.1.0"));
        assert_eq!(
            ImageVolumeSupport::from_version("containerd", "1.6.20~ds1"),
            ImageVolumeSupport::Unsupported {
                runtime: "containerd 1.6.20~ds1".into(),
                needed: "containerd 2.1"
            }
        );
    }
}
