//! Where a pod volume lives on the host (upstream: the volume manager's mounted volumes as
//! used by `makeMounts` in `pkg/kubelet/kubelet_pods.go`).
//!
//! [`LocalVolumes`] handles the node-local types that need no API objects:
//!
//! * `hostPath` (`pkg/volume/hostpath/host_path.go`): the `type` is checked as upstream's
//!   `checkType` does (`DirectoryOrCreate` creates the directory with 0755, `FileOrCreate`
//!   creates the file with 0644, the other types check the kind of the existing path) with
//!   upstream's messages (`hostPath type check failed: /x is not a directory`).
//! * `emptyDir` (`pkg/volume/emptydir/empty_dir.go`) at
//!   `<root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>`, mode 0777; with
//!   `medium: Memory` a tmpfs is mounted there, sized by `calculateEmptyDirMemorySize`
//!   (the smallest positive of node allocatable memory, the pod's memory limit and
//!   `sizeLimit`), with `noswap` where the kernel has it. The pod's `fsGroup` is applied
//!   (`SetVolumeOwnership`, always recursive for emptyDir as upstream) when the volume is
//!   set up; a `ready` file under `<root>/pods/<uid>/plugins/kubernetes.io~empty-dir/<name>`
//!   makes set-up happen once, as upstream. `HugePages` media are refused.
//!
//! Other types are refused with an error naming the volume; a full volume manager plugs in
//! through [`VolumeHost`]. [`tear_down_local_mounts`] unmounts what this module and the
//! subPath code mounted for a pod that is gone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, HostPathVolumeSource, Pod, Volume};

use crate::error::RuntimeManagerError;
use crate::os::{FileType, OsInterface, TMPFS_MAGIC};
use crate::pod_dirs::EMPTY_DIR_PLUGIN_DIR;
use crate::subpath::CONTAINER_SUBPATH_DIRECTORY_NAME;

/// Resolves pod volumes to host paths.
pub trait VolumeHost: Send + Sync {
    /// The host path backing `volume` of `pod`, set up and ready to bind-mount.
    fn volume_path(&self, pod: &Pod, volume: &Volume) -> Result<PathBuf, RuntimeManagerError>;
}

/// Mode of an emptyDir directory (upstream `perm`).
const EMPTY_DIR_PERM: u32 = 0o777;

/// `hostPath` and `emptyDir` volumes under the kubelet root directory.
pub struct LocalVolumes {
    os: Arc<dyn OsInterface>,
    root_dir: PathBuf,
    node_allocatable_memory: i64,
    tmpfs_noswap: bool,
}

impl LocalVolumes {
    /// Volumes under `root_dir` (the kubelet `--root-dir`); memory-backed emptyDirs are
    /// bounded by the pod's limits only until [`Self::with_node_allocatable_memory`].
    pub fn new(os: Arc<dyn OsInterface>, root_dir: impl Into<PathBuf>) -> Self {
        Self {
            os,
            root_dir: root_dir.into(),
            node_allocatable_memory: 0,
            tmpfs_noswap: tmpfs_noswap_supported(),
        }
    }

    /// Node allocatable memory in bytes (the upper bound of a `medium: Memory` emptyDir).
    pub fn with_node_allocatable_memory(mut self, bytes: i64) -> Self {
        self.node_allocatable_memory = bytes;
        self
    }

    /// Whether tmpfs mounts get `noswap` (detected from the kernel by [`Self::new`]).
    pub fn with_tmpfs_noswap(mut self, noswap: bool) -> Self {
        self.tmpfs_noswap = noswap;
        self
    }

    fn io(what: &str, path: &Path, source: std::io::Error) -> RuntimeManagerError {
        RuntimeManagerError::Io {
            what: what.to_string(),
            path: path.to_path_buf(),
            source,
        }
    }

    fn pod_dir(&self, pod: &Pod) -> PathBuf {
        self.root_dir
            .join("pods")
            .join(pod.metadata.uid.as_deref().unwrap_or_default())
    }

    /// `checkType` of the hostPath plugin.
    fn host_path(&self, hp: &HostPathVolumeSource) -> Result<PathBuf, RuntimeManagerError> {
        let path = PathBuf::from(&hp.path);
        let exists = self.os.exists(&path);
        let kind = || self.os.file_type(&path).ok();
        let fail = |what: &str| {
            Err(RuntimeManagerError::InvalidPod(format!(
                "hostPath type check failed: {} is not {what}",
                hp.path
            )))
        };
        match hp.type_.as_deref().unwrap_or_default() {
            "" => {}
            "DirectoryOrCreate" if !exists => self
                .os
                .mkdir_all(&path)
                .map_err(|e| Self::io("create hostPath directory", &path, e))?,
            "DirectoryOrCreate" | "Directory" => {
                if !exists || kind() != Some(FileType::Directory) {
                    return fail("a directory");
                }
            }
            "FileOrCreate" if !exists => self
                .os
                .create_file_if_missing(&path, 0o644)
                .map_err(|e| Self::io("create hostPath file", &path, e))?,
            "FileOrCreate" | "File" => {
                if !exists || kind() != Some(FileType::File) {
                    return fail("a file");
                }
            }
            "Socket" if kind() != Some(FileType::Socket) => return fail("a socket file"),
            "CharDevice" if kind() != Some(FileType::CharDevice) => {
                return fail("a character device");
            }
            "BlockDevice" if kind() != Some(FileType::BlockDevice) => {
                return fail("a block device");
            }
            "Socket" | "CharDevice" | "BlockDevice" => {}
            other => {
                return Err(RuntimeManagerError::InvalidPod(format!(
                    "{other} is an invalid volume type"
                )));
            }
        }
        Ok(path)
    }

    /// `calculateEmptyDirMemorySize`: node allocatable memory, lowered to the pod's memory
    /// limit and then to `sizeLimit` when those are positive and smaller.
    pub fn empty_dir_memory_size(&self, pod: &Pod, ed: &EmptyDirVolumeSource) -> i64 {
        let mut size = self.node_allocatable_memory;
        let lower = |size: i64, v: i64| {
            if v > 0 && (size <= 0 || v <= size) {
                v
            } else {
                size
            }
        };
        if let Some(limit) = crate::resources::pod_memory_limit(pod) {
            size = lower(size, limit);
        }
        if let Some(q) = ed.size_limit.as_ref()
            && let Ok(v) = crate::quantity::value(q)
        {
            size = lower(size, v);
        }
        size
    }

    /// `setupDir`: the directory with exactly mode 0777.
    fn setup_dir(&self, dir: &Path) -> Result<(), RuntimeManagerError> {
        self.os
            .mkdir_all(dir)
            .map_err(|e| Self::io("create emptyDir", dir, e))?;
        let mode = self
            .os
            .get_mode(dir)
            .map_err(|e| Self::io("stat emptyDir", dir, e))?;
        if mode & 0o777 != EMPTY_DIR_PERM {
            self.os
                .chmod(dir, EMPTY_DIR_PERM)
                .map_err(|e| Self::io("chmod emptyDir", dir, e))?;
        }
        Ok(())
    }

    fn is_mount_point(&self, dir: &Path) -> bool {
        self.os.is_mount_point(dir).unwrap_or(false)
    }

    /// `setupTmpfs`: a tmpfs on the directory, unless one is mounted there already.
    fn setup_tmpfs(
        &self,
        pod: &Pod,
        dir: &Path,
        ed: &EmptyDirVolumeSource,
    ) -> Result<(), RuntimeManagerError> {
        self.setup_dir(dir)?;
        if self.is_mount_point(dir) && self.os.statfs_type(dir).ok() == Some(TMPFS_MAGIC) {
            return Ok(());
        }
        let mut options = Vec::new();
        let size = self.empty_dir_memory_size(pod, ed);
        if size > 0 {
            options.push(format!("size={size}"));
        }
        if self.tmpfs_noswap {
            options.push("noswap".to_string());
        }
        tracing::info!(pod_uid = ?pod.metadata.uid, dir = %dir.display(), "Mounting tmpfs for emptyDir volume");
        self.os
            .mount_tmpfs(dir, &options.join(","))
            .map_err(|e| Self::io("mount tmpfs on emptyDir", dir, e))
    }

    /// emptyDir `SetUpAt`.
    fn empty_dir(
        &self,
        pod: &Pod,
        volume: &Volume,
        ed: &EmptyDirVolumeSource,
    ) -> Result<PathBuf, RuntimeManagerError> {
        let memory = match ed.medium.as_deref().unwrap_or_default() {
            "" => false,
            "Memory" => true,
            other => {
                return Err(RuntimeManagerError::InvalidPod(format!(
                    "emptyDir volume {:?}: medium {other:?} is not supported by this kubelet",
                    volume.name
                )));
            }
        };
        let pod_dir = self.pod_dir(pod);
        let dir = pod_dir
            .join("volumes")
            .join(EMPTY_DIR_PLUGIN_DIR)
            .join(&volume.name);
        let ready_dir = pod_dir
            .join("plugins")
            .join(EMPTY_DIR_PLUGIN_DIR)
            .join(&volume.name);
        let ready = ready_dir.join("ready");
        if self.os.exists(&ready) {
            if memory && self.is_mount_point(&dir) {
                return Ok(dir);
            }
            if !memory && self.os.is_dir(&dir) {
                return Ok(dir);
            }
            tracing::warn!(ready = %ready_dir.display(), dir = %dir.display(), "volume ready file dir exists, but volume dir does not. Remove ready dir");
            if let Err(e) = self.os.remove_dir_all(&ready_dir) {
                tracing::warn!(ready = %ready_dir.display(), error = %e, "failed to remove ready dir");
            }
        }
        if memory {
            self.setup_tmpfs(pod, &dir, ed)?;
        } else {
            self.setup_dir(&dir)?;
        }
        let fs_group = pod
            .spec
            .as_ref()
            .and_then(|s| s.security_context.as_ref())
            .and_then(|sc| sc.fs_group);
        if let Some(gid) = fs_group
            // emptyDir passes no fsGroupChangePolicy upstream: always recursive.
            && let Err(e) = self.os.set_volume_ownership(&dir, gid, None, false)
        {
            tracing::error!(dir = %dir.display(), error = %e, "Failed to set volume ownership");
        }
        // volumeutil.SetReady
        self.os
            .mkdir_all(&ready_dir)
            .and_then(|()| self.os.create_file_if_missing(&ready, 0o600))
            .map_err(|e| Self::io("mark emptyDir ready", &ready, e))?;
        Ok(dir)
    }
}

impl VolumeHost for LocalVolumes {
    fn volume_path(&self, pod: &Pod, volume: &Volume) -> Result<PathBuf, RuntimeManagerError> {
        if let Some(hp) = &volume.host_path {
            return self.host_path(hp);
        }
        if let Some(ed) = &volume.empty_dir {
            return self.empty_dir(pod, volume, ed);
        }
        Err(RuntimeManagerError::InvalidPod(format!(
            "volume {:?}: only hostPath and emptyDir volumes are supported by this kubelet",
            volume.name
        )))
    }
}

/// `swap.IsTmpfsNoswapOptionSupported` for a kubelet outside a user namespace: kernel 6.4
/// or later.
pub fn tmpfs_noswap_supported() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").is_ok_and(|r| noswap_for_release(&r))
}

/// Kernel `release` (`6.8.0-generic`) is 6.4 or later.
fn noswap_for_release(release: &str) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 4)
}

/// Unmounts what was mounted for the pod at `pod_dir`, which must be gone: every subPath
/// bind mount (`CleanSubPaths` of each volume, as upstream's unmount does) and every tmpfs
/// emptyDir (emptyDir `TearDownAt`: unmount, then remove the directory). Returns the
/// errors; the pod directory is kept while any remain.
pub fn tear_down_local_mounts(os: &dyn OsInterface, pod_dir: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let subpaths = pod_dir.join(CONTAINER_SUBPATH_DIRECTORY_NAME);
    if os.exists(&subpaths) {
        for volume in os.read_dir(&subpaths).unwrap_or_default() {
            if let Err(e) = os.clean_sub_paths(pod_dir, &volume) {
                errors.push(format!(
                    "error cleaning subpath mounts for volume {volume:?} of {}: {e}",
                    pod_dir.display()
                ));
            }
        }
    }
    let empty_dirs = pod_dir.join("volumes").join(EMPTY_DIR_PLUGIN_DIR);
    if os.exists(&empty_dirs) {
        for name in os.read_dir(&empty_dirs).unwrap_or_default() {
            let dir = empty_dirs.join(name);
            let mounted = os.is_mount_point(&dir).unwrap_or(false);
            if !mounted || os.statfs_type(&dir).ok() != Some(TMPFS_MAGIC) {
                continue;
            }
            match os.unmount(&dir).and_then(|()| os.remove_dir_all(&dir)) {
                Ok(()) => tracing::info!(dir = %dir.display(), "Unmounted emptyDir tmpfs"),
                Err(e) => errors.push(format!(
                    "error tearing down emptyDir {}: {e}",
                    dir.display()
                )),
            }
        }
    }
    errors
}

#[cfg(test)]
#[path = "volumes_tests.rs"]
mod tests;
