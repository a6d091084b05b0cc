//! Pod volumes: the volume manager and the volume plugins the kubelet mounts itself
//! (upstream `pkg/kubelet/volumemanager`, `pkg/volume/{configmap,secret,downwardapi,projected}`,
//! `pkg/volume/util/atomic_writer.go`).
//!
//! The API objects the plugins read come through [`VolumeObjects`] (upstream's
//! `volume.VolumeHost` `GetConfigMapFunc`/`GetSecretFunc`/`GetServiceAccountTokenFunc`,
//! `pkg/kubelet/volume_host.go`), implemented above this crate by the kubelet's
//! ConfigMap, Secret and token managers.

pub mod objects;

pub use objects::{NoVolumeObjects, ObjectError, VolumeObjects};
