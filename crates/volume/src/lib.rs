//! Pod volumes: the volume manager and the volume plugins the kubelet mounts itself
//! (upstream `pkg/kubelet/volumemanager`, `pkg/volume/{configmap,secret,downwardapi,projected}`,
//! `pkg/volume/util/atomic_writer.go`).
//!
//! The API objects the plugins read come through [`VolumeObjects`] (upstream's
//! `volume.VolumeHost` `GetConfigMapFunc`/`GetSecretFunc`/`GetServiceAccountTokenFunc`,
//! `pkg/kubelet/volume_host.go`), implemented above this crate by the kubelet's
//! ConfigMap, Secret and token managers.
//!
//! | Rust module          | Upstream Go                                                        |
//! |----------------------|--------------------------------------------------------------------|
//! | [`manager`]          | `volumemanager` (`WaitForAttachAndMount`, mount/unmount), `emptydir` wrapped set-up, `nested_volumes.go` |
//! | [`atomic_writer`]    | `pkg/volume/util/atomic_writer.go`                                 |
//! | [`plugins`]          | `pkg/volume/{configmap,secret,downwardapi,projected}` payloads      |
//! | [`ownership`]        | `pkg/volume/volume_linux.go` (`fsGroup`), `util.FsUserFrom`        |
//! | [`mounter`]          | `mount-utils` (tmpfs mount/unmount, mount medium)                  |
//! | (tmpfs size)         | `cm.ResourceConfigForPod` memory: `kubelet_runtime::resources::pod_memory_limit` |
//! | [`host`]             | `GetMountedVolumesForPod` for `makeMounts`                         |
//! | [`objects`]          | `pkg/kubelet/volume_host.go` object getters                        |

pub mod atomic_writer;
pub mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod host;
pub mod manager;
pub mod mounter;
pub mod objects;
pub mod ownership;
pub mod plugins;

pub use error::VolumeError;
pub use host::MountedVolumes;
pub use manager::{MountError, VolumeManager};
pub use mounter::{FakeMounter, Mounter, RealMounter};
pub use objects::{NoVolumeObjects, ObjectError, VolumeObjects};
