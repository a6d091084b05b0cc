//! The [`VolumeHost`] the runtime's `makeMounts` asks for host paths: volumes of
//! [`crate::plugins`] come from the volume manager's mounted volumes (upstream
//! `GetMountedVolumesForPod`), everything else from the runtime's local volumes
//! (`hostPath`, `emptyDir`).

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Volume};
use kubelet_runtime::error::RuntimeManagerError;
use kubelet_runtime::volumes::{VolumeAttributes, VolumeHost};

use crate::manager::VolumeManager;
use crate::plugins::Plugin;

/// Mounted API-backed volumes first, then `local`.
pub struct MountedVolumes {
    manager: Arc<VolumeManager>,
    local: Arc<dyn VolumeHost>,
}

impl MountedVolumes {
    /// Serves `manager`'s volumes and delegates the others to `local`.
    pub fn new(manager: Arc<VolumeManager>, local: Arc<dyn VolumeHost>) -> Self {
        Self { manager, local }
    }
}

impl VolumeHost for MountedVolumes {
    fn volume_path(&self, pod: &Pod, volume: &Volume) -> Result<PathBuf, RuntimeManagerError> {
        if Plugin::of(volume).is_none() {
            return self.local.volume_path(pod, volume);
        }
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        self.manager.mounted_path(uid, &volume.name).ok_or_else(|| {
            RuntimeManagerError::InvalidPod(format!("volume {:?} is not mounted", volume.name))
        })
    }

    /// Ours are `ReadOnly`, `Managed` and `SELinuxRelabel`, as upstream's plugins say.
    fn attributes(&self, volume: &Volume) -> VolumeAttributes {
        match Plugin::of(volume) {
            Some(_) => VolumeAttributes {
                read_only: true,
                managed: true,
                selinux_relabel: true,
            },
            None => self.local.attributes(volume),
        }
    }
}
