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
//!   makes set-up happen once, as upstream. With `medium: HugePages` or
//!   `HugePages-<size>` a hugetlbfs (`nodev`, `pagesize=<size>`) is mounted there
//!   (`setupHugepages`, `getPageSizeMountOption`): the pod must request `hugepages-<size>`
//!   of that size (any size, but only one, for `HugePages`), with upstream's messages
//!   otherwise; set-up is idempotent through the mount's type and `pagesize` option
//!   (`GetMountMedium`). Any other medium: `unknown storage medium`.
//!
//! Other types are refused with an error naming the volume; a full volume manager plugs in
//! through [`VolumeHost`]. [`tear_down_local_mounts`] unmounts what this module and the
//! subPath code mounted for a pod that is gone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, HostPathVolumeSource, Pod, Volume};

use crate::error::RuntimeManagerError;
use kubelet_apimachinery::Quantity;

use crate::os::{FileType, HUGETLBFS_MAGIC, OsInterface, TMPFS_MAGIC};
use crate::pod_dirs::EMPTY_DIR_PLUGIN_DIR;
use crate::subpath::CONTAINER_SUBPATH_DIRECTORY_NAME;

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

/// `v1.StorageMediumHugePages`.
const STORAGE_MEDIUM_HUGE_PAGES: &str = "HugePages";
/// `v1.StorageMediumHugePagesPrefix`.
const STORAGE_MEDIUM_HUGE_PAGES_PREFIX: &str = "HugePages-";
/// `v1.ResourceHugePagesPrefix`.
const RESOURCE_HUGE_PAGES_PREFIX: &str = "hugepages-";
/// `hugePagesPageSizeMountOption`.
const HUGE_PAGES_PAGE_SIZE_MOUNT_OPTION: &str = "pagesize";

/// `v1helper.IsHugePageMedium`.
pub fn is_huge_page_medium(medium: &str) -> bool {
    medium == STORAGE_MEDIUM_HUGE_PAGES || medium.starts_with(STORAGE_MEDIUM_HUGE_PAGES_PREFIX)
}

/// `v1helper.HugePageSizeFromMedium`.
fn huge_page_size_from_medium(medium: &str) -> Result<Quantity, String> {
    if !is_huge_page_medium(medium) {
        return Err(format!("medium: {medium} is not a hugepage medium"));
    }
    if medium == STORAGE_MEDIUM_HUGE_PAGES {
        return Err(format!("medium: {medium} doesn't have size information"));
    }
    let size = medium.trim_start_matches(STORAGE_MEDIUM_HUGE_PAGES_PREFIX);
    Quantity::parse(size).map_err(|e| e.to_string())
}

/// `getPageSizeMountOption`: `pagesize=<size>` from the pod's (pod-level, then every
/// container's and init container's) `hugepages-<size>` requests; `HugePages` takes the
/// one size requested and refuses several, `HugePages-<size>` needs a request of that size.
pub fn get_page_size_mount_option(medium: &str, pod: &Pod) -> Result<String, String> {
    let medium_page_size = if medium == STORAGE_MEDIUM_HUGE_PAGES {
        None
    } else {
        Some(huge_page_size_from_medium(medium)?)
    };
    let spec = pod.spec.as_ref();
    // Pod-level resources are set only when the PodLevelResources gate let them through.
    let pod_level = spec
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref());
    let containers = spec.into_iter().flat_map(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .filter_map(|c| c.resources.as_ref().and_then(|r| r.requests.as_ref()))
    });
    let mut page_size: Option<Quantity> = None;
    for requests in pod_level.into_iter().chain(containers) {
        for name in requests.keys() {
            let Some(size) = name.strip_prefix(RESOURCE_HUGE_PAGES_PREFIX) else {
                continue;
            };
            let current = Quantity::parse(size).map_err(|e| e.to_string())?;
            match &medium_page_size {
                None => {
                    if let Some(found) = &page_size
                        && found.value() != current.value()
                    {
                        return Err(format!(
                            "medium: {medium} can't be used if container requests multiple huge page sizes"
                        ));
                    }
                    page_size = Some(current);
                }
                Some(want) => {
                    if current.value() == want.value() {
                        page_size = Some(current);
                    }
                }
            }
        }
    }
    match page_size {
        Some(size) => Ok(format!("{HUGE_PAGES_PAGE_SIZE_MOUNT_OPTION}={size}")),
        None => Err(format!(
            "medium {medium}: hugePages storage requested, but there is no resource request for huge pages"
        )),
    }
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

    /// The `pagesize` mount option of the mount at `dir` (`getPageSize`; `2M` reads as
    /// `2Mi`).
    fn mounted_page_size(&self, dir: &Path) -> Result<Quantity, String> {
        let opts = self
            .os
            .mount_options(dir)
            .map_err(|e| format!("error listing mount points: {e}"))?;
        let prefix = format!("{HUGE_PAGES_PAGE_SIZE_MOUNT_OPTION}=");
        let Some(opt) = opts
            .iter()
            .map(|o| o.trim())
            .find(|o| o.starts_with(&prefix))
        else {
            return Err(format!(
                "no pagesize option specified for {} mount",
                dir.display()
            ));
        };
        let mut size = opt.trim_start_matches(&prefix).to_string();
        if !size.ends_with('i') {
            size.push('i');
        }
        Quantity::parse(&size)
            .map_err(|e| format!("error getting page size from '{opt}' mount option: {e}"))
    }

    /// `setupHugepages`: a hugetlbfs of the pod's page size on the directory, unless one
    /// of the same page size is mounted there already.
    fn setup_hugepages(
        &self,
        pod: &Pod,
        dir: &Path,
        medium: &str,
    ) -> Result<(), RuntimeManagerError> {
        self.setup_dir(dir)?;
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let invalid = RuntimeManagerError::InvalidPod;
        if self.is_mount_point(dir) && self.os.statfs_type(dir).ok() == Some(HUGETLBFS_MAGIC) {
            if medium == STORAGE_MEDIUM_HUGE_PAGES {
                return Ok(());
            }
            let mounted = self.mounted_page_size(dir).map_err(invalid)?;
            let wanted = huge_page_size_from_medium(medium).map_err(invalid)?;
            if mounted.value() != wanted.value() {
                return Err(RuntimeManagerError::InvalidPod(format!(
                    "pod {uid}: mounted dir {} pagesize '{mounted}' and requested medium size '{wanted}' differ",
                    dir.display()
                )));
            }
            return Ok(());
        }
        let option = get_page_size_mount_option(medium, pod).map_err(invalid)?;
        tracing::info!(pod_uid = uid, dir = %dir.display(), option, "Mounting hugepages for emptyDir volume");
        self.os
            .mount_hugetlbfs(dir, &option)
            .map_err(|e| Self::io("mount hugetlbfs on emptyDir", dir, e))
    }

    /// emptyDir `SetUpAt`.
    fn empty_dir(
        &self,
        pod: &Pod,
        volume: &Volume,
        ed: &EmptyDirVolumeSource,
    ) -> Result<PathBuf, RuntimeManagerError> {
        let medium = ed.medium.as_deref().unwrap_or_default();
        let memory = medium == "Memory";
        let hugepages = is_huge_page_medium(medium);
        if !memory && !hugepages && !medium.is_empty() {
            return Err(RuntimeManagerError::InvalidPod(format!(
                "unknown storage medium {medium:?}"
            )));
        }
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
        // Upstream's ready file short-cuts the default and Memory media only; HugePages
        // set-up checks the mount itself.
        if self.os.exists(&ready) && !hugepages {
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
        } else if hugepages {
            self.setup_hugepages(pod, &dir, medium)?;
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
/// or hugetlbfs emptyDir (emptyDir `TearDownAt`: unmount, then remove the directory). Returns the
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
            let fs = os.statfs_type(&dir).ok();
            if !mounted || (fs != Some(TMPFS_MAGIC) && fs != Some(HUGETLBFS_MAGIC)) {
                continue;
            }
            match os.unmount(&dir).and_then(|()| os.remove_dir_all(&dir)) {
                Ok(()) => {
                    tracing::info!(dir = %dir.display(), "Unmounted emptyDir tmpfs or hugetlbfs")
                }
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
