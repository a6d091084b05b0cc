//! The volume plugins the kubelet sets up from API objects and the pod itself (upstream
//! `pkg/volume/{configmap,secret,downwardapi,projected}`): each builds a payload that the
//! [`crate::atomic_writer`] projects into a wrapped `emptyDir` (tmpfs for `secret`,
//! `downwardAPI` and `projected`, a disk directory for `configMap`, as upstream's
//! `wrappedVolumeSpec`s say).

pub mod configmap;
pub mod downwardapi;
pub mod projected;
pub mod secret;

use k8s_openapi::api::core::v1::{Pod, Volume};
use kubelet_runtime::env::NodeEnvInfo;

use crate::atomic_writer::Payload;
use crate::error::VolumeError;
use crate::objects::VolumeObjects;

/// The API default of every `defaultMode` (`0644`).
pub const DEFAULT_MODE: i32 = 0o644;

/// A volume plugin kubelet-volume implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Plugin {
    /// `kubernetes.io/configmap`.
    ConfigMap,
    /// `kubernetes.io/secret`.
    Secret,
    /// `kubernetes.io/downward-api`.
    DownwardApi,
    /// `kubernetes.io/projected`.
    Projected,
}

impl Plugin {
    /// Every plugin.
    pub const ALL: [Plugin; 4] = [
        Self::ConfigMap,
        Self::Secret,
        Self::DownwardApi,
        Self::Projected,
    ];

    /// The plugin of `volume`, if it is one of ours.
    pub fn of(volume: &Volume) -> Option<Self> {
        if volume.config_map.is_some() {
            Some(Self::ConfigMap)
        } else if volume.secret.is_some() {
            Some(Self::Secret)
        } else if volume.downward_api.is_some() {
            Some(Self::DownwardApi)
        } else if volume.projected.is_some() {
            Some(Self::Projected)
        } else {
            None
        }
    }

    /// The escaped plugin name, the directory under `<pod>/volumes`
    /// (`utilstrings.EscapeQualifiedName`).
    pub fn dir_name(self) -> &'static str {
        match self {
            Self::ConfigMap => "kubernetes.io~configmap",
            Self::Secret => "kubernetes.io~secret",
            Self::DownwardApi => "kubernetes.io~downward-api",
            Self::Projected => "kubernetes.io~projected",
        }
    }

    /// The plugin whose directory is `name`.
    pub fn from_dir_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.dir_name() == name)
    }

    /// Whether the wrapped `emptyDir` has `medium: Memory` (a tmpfs).
    pub fn memory_backed(self) -> bool {
        !matches!(self, Self::ConfigMap)
    }
}

/// What a set-up reads besides the volume.
pub struct SetUpContext<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// ConfigMaps, Secrets, tokens.
    pub objects: &'a dyn VolumeObjects,
    /// Node allocatable, the default of unset limits in `resourceFieldRef`s.
    pub node: &'a NodeEnvInfo,
    /// `FsUserFrom(pod)`: the one UID every container runs as, if any.
    pub fs_user: Option<u32>,
    /// `spec.securityContext.fsGroup`.
    pub fs_group: Option<u32>,
}

/// `os.FileMode(mode)` of an API mode: the permission bits.
pub(crate) fn mode_bits(mode: i32) -> u32 {
    u32::try_from(mode).unwrap_or(0) & 0o777
}

/// `filepath.Clean` of a relative path.
pub(crate) fn clean_path(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The payload of `volume` (one of [`Plugin::of`]).
pub async fn make_payload(ctx: &SetUpContext<'_>, volume: &Volume) -> Result<Payload, VolumeError> {
    let namespace = ctx.pod.metadata.namespace.as_deref().unwrap_or_default();
    if let Some(s) = &volume.config_map {
        let items = s.items.as_deref().unwrap_or_default();
        let mode = s.default_mode.unwrap_or(DEFAULT_MODE);
        let optional = s.optional == Some(true);
        return configmap::read_and_make_payload(
            ctx.objects,
            namespace,
            &s.name,
            items,
            mode,
            optional,
        )
        .await;
    }
    if let Some(s) = &volume.secret {
        let name = s.secret_name.as_deref().unwrap_or_default();
        let items = s.items.as_deref().unwrap_or_default();
        let mode = s.default_mode.unwrap_or(DEFAULT_MODE);
        let optional = s.optional == Some(true);
        return secret::read_and_make_payload(ctx.objects, namespace, name, items, mode, optional)
            .await;
    }
    if let Some(d) = &volume.downward_api {
        let items = d.items.as_deref().unwrap_or_default();
        let mode = d.default_mode.unwrap_or(DEFAULT_MODE);
        return downwardapi::collect_data(items, ctx.pod, ctx.node, mode);
    }
    if let Some(p) = &volume.projected {
        return projected::collect_data(ctx, &volume.name, p).await;
    }
    Err(VolumeError::Payload(format!(
        "volume {:?} is not a configMap, secret, downwardAPI or projected volume",
        volume.name
    )))
}

#[cfg(test)]
#[path = "plugins_tests.rs"]
mod tests;
