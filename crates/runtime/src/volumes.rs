//! Where a pod volume lives on the host (upstream: the volume manager's mounted volumes as
//! used by `makeMounts` in `pkg/kubelet/kubelet_pods.go`).
//!
//! [`LocalVolumes`] handles the node-local types that need no API objects: `hostPath` and
//! disk-backed `emptyDir` (at `<root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>`).
//! Other types are refused with an error naming the volume; a full volume manager plugs in
//! through [`VolumeHost`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Volume};

use crate::error::RuntimeManagerError;
use crate::os::OsInterface;

/// Resolves pod volumes to host paths.
pub trait VolumeHost: Send + Sync {
    /// The host path backing `volume` of `pod`, set up and ready to bind-mount.
    fn volume_path(&self, pod: &Pod, volume: &Volume) -> Result<PathBuf, RuntimeManagerError>;
    /// The volume plugin's attributes (upstream `Mounter.GetAttributes()`); the default is
    /// a plain host directory's (all false, as `hostPath`).
    fn attributes(&self, _volume: &Volume) -> VolumeAttributes {
        VolumeAttributes::default()
    }
}

/// What `makeMounts` needs to know of a volume plugin (upstream `volume.Attributes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeAttributes {
    /// Every mount of the volume is read-only (`mustMountRO`).
    pub read_only: bool,
    /// The kubelet manages the volume's content.
    pub managed: bool,
    /// The runtime may relabel the volume for SELinux.
    pub selinux_relabel: bool,
}

/// `hostPath` and disk `emptyDir` volumes under the kubelet root directory.
pub struct LocalVolumes {
    os: Arc<dyn OsInterface>,
    root_dir: PathBuf,
}

impl LocalVolumes {
    /// Volumes under `root_dir` (the kubelet `--root-dir`).
    pub fn new(os: Arc<dyn OsInterface>, root_dir: impl Into<PathBuf>) -> Self {
        Self {
            os,
            root_dir: root_dir.into(),
        }
    }

    fn io(what: &str, path: &Path, source: std::io::Error) -> RuntimeManagerError {
        RuntimeManagerError::Io {
            what: what.to_string(),
            path: path.to_path_buf(),
            source,
        }
    }
}

impl VolumeHost for LocalVolumes {
    fn volume_path(&self, pod: &Pod, volume: &Volume) -> Result<PathBuf, RuntimeManagerError> {
        if let Some(hp) = &volume.host_path {
            let path = PathBuf::from(&hp.path);
            match hp.type_.as_deref().unwrap_or_default() {
                "DirectoryOrCreate" => self
                    .os
                    .mkdir_all(&path)
                    .map_err(|e| Self::io("create hostPath directory", &path, e))?,
                "FileOrCreate" if !self.os.exists(&path) => {
                    if let Some(parent) = path.parent() {
                        self.os
                            .mkdir_all(parent)
                            .map_err(|e| Self::io("create hostPath parent", parent, e))?;
                    }
                    self.os
                        .create_file(&path)
                        .map_err(|e| Self::io("create hostPath file", &path, e))?;
                }
                "" | "FileOrCreate" => {}
                _ if !self.os.exists(&path) => {
                    return Err(RuntimeManagerError::InvalidPod(format!(
                        "hostPath volume {:?}: {} does not exist",
                        volume.name, hp.path
                    )));
                }
                _ => {}
            }
            return Ok(path);
        }
        if let Some(ed) = &volume.empty_dir {
            if ed.medium.as_deref().is_some_and(|m| !m.is_empty()) {
                return Err(RuntimeManagerError::InvalidPod(format!(
                    "emptyDir volume {:?}: medium {:?} is not supported by this kubelet",
                    volume.name,
                    ed.medium.as_deref().unwrap_or_default()
                )));
            }
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            let path = self
                .root_dir
                .join("pods")
                .join(uid)
                .join("volumes/kubernetes.io~empty-dir")
                .join(&volume.name);
            self.os
                .mkdir_all(&path)
                .map_err(|e| Self::io("create emptyDir", &path, e))?;
            return Ok(path);
        }
        Err(RuntimeManagerError::InvalidPod(format!(
            "volume {:?}: only hostPath and emptyDir volumes are supported by this kubelet",
            volume.name
        )))
    }
}
