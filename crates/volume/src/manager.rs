//! The volume manager for the plugins of [`crate::plugins`] (upstream
//! `pkg/kubelet/volumemanager`: `WaitForAttachAndMount`, the reconciler's `MountVolume` /
//! `UnmountVolume` with `operation_generator.go`'s messages, `WaitForUnmount`; the
//! wrapped `emptyDir` of `pkg/volume/emptydir/empty_dir.go`; `MakeNestedMountpoints` of
//! `pkg/volume/util/nested_volumes.go`).
//!
//! Upstream's reconciler mounts asynchronously and `WaitForAttachAndMount` polls; every
//! call also marks the pod's `configMap`/`secret`/`downwardAPI`/`projected` volumes for a
//! remount (`ReprocessPod`), so their content follows the objects on each pod sync (at
//! least every `syncFrequency`). Here the set-up runs inside
//! [`VolumeManager::wait_for_attach_and_mount`] itself, on every `SyncPod`: the same
//! remount cadence, without a second loop. A remount that fails leaves the volume as it
//! was (the pod keeps running) and only records `FailedMount`; a first mount that fails
//! fails the sync, so the pod worker retries.
//!
//! Volumes live at `<root-dir>/pods/<uid>/volumes/<escaped plugin name>/<volume name>`.
//! [`VolumeManager::unmount_pod`] (`SyncTerminatedPod`) and
//! [`VolumeManager::cleanup_orphaned_pods`] (housekeeping, before the orphaned pod
//! directories are removed) tear them down from what is on disk, so volumes of pods a
//! previous kubelet run mounted go too.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Pod, Volume};
use kubelet_container::events::{EventRecorder, EventType, pod_ref, reasons};
use kubelet_runtime::env::NodeEnvInfo;
use kubelet_runtime::volumes::VolumeHost;

use crate::atomic_writer::{AtomicWriter, Payload};
use crate::error::VolumeError;
use crate::mounter::Mounter;
use crate::objects::VolumeObjects;
use crate::ownership;
use crate::plugins::{self, Plugin, SetUpContext};

/// The wrapped `emptyDir`'s directory mode (upstream `perm`).
const EMPTY_DIR_PERM: u32 = 0o777;

/// `WaitForAttachAndMount` failed: the volumes that are not mounted and the first error.
#[derive(Debug, thiserror::Error)]
#[error(
    "unmounted volumes={unmounted:?}, unattached volumes=[], failed to process volumes={not_processed:?}: {source}"
)]
pub struct MountError {
    /// The volumes that could not be set up, sorted.
    pub unmounted: Vec<String>,
    /// The volumes no plugin handles (upstream's volumes not in the desired state of the
    /// world), sorted.
    pub not_processed: Vec<String>,
    /// The first set-up error.
    #[source]
    pub source: VolumeError,
}

/// Mounts and unmounts the API-backed volumes of pods.
pub struct VolumeManager {
    root_dir: PathBuf,
    objects: Arc<dyn VolumeObjects>,
    mounter: Arc<dyn Mounter>,
    recorder: Arc<dyn EventRecorder>,
    node: NodeEnvInfo,
    /// Sets up `emptyDir` volumes (the runtime's local volumes), so their set-up errors
    /// are `FailedMount`s before any container is created, as upstream's.
    local: Option<Arc<dyn VolumeHost>>,
    /// The actual state of the world: pod UID → volume name → host path.
    mounted: Mutex<HashMap<String, BTreeMap<String, PathBuf>>>,
}

impl std::fmt::Debug for VolumeManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VolumeManager")
            .field("root_dir", &self.root_dir)
            .finish_non_exhaustive()
    }
}

fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

impl VolumeManager {
    /// A manager for pods under `<root_dir>/pods`; `node` gives node allocatable (the
    /// default of unset limits in `resourceFieldRef`s and the tmpfs size).
    pub fn new(
        root_dir: impl Into<PathBuf>,
        objects: Arc<dyn VolumeObjects>,
        mounter: Arc<dyn Mounter>,
        recorder: Arc<dyn EventRecorder>,
        node: NodeEnvInfo,
    ) -> Self {
        Self {
            root_dir: root_dir.into(),
            objects,
            mounter,
            recorder,
            node,
            local: None,
            mounted: Mutex::new(HashMap::new()),
        }
    }

    /// Sets `emptyDir` volumes up through `local` in [`Self::wait_for_attach_and_mount`]
    /// (upstream's emptyDir plugin `SetUp` by the reconciler); their set-up is idempotent,
    /// so the runtime's later `makeMounts` finds them ready.
    pub fn with_local_volumes(mut self, local: Arc<dyn VolumeHost>) -> Self {
        self.local = Some(local);
        self
    }

    /// `GetPodVolumeDir`: `<root>/pods/<uid>/volumes/<plugin>/<name>`.
    pub fn pod_volume_dir(&self, uid: &str, plugin: Plugin, name: &str) -> PathBuf {
        self.root_dir
            .join("pods")
            .join(uid)
            .join("volumes")
            .join(plugin.dir_name())
            .join(name)
    }

    /// The host path of mounted volume `name` of pod `uid` (upstream
    /// `GetMountedVolumesForPod`), `None` when it is not mounted.
    pub fn mounted_path(&self, uid: &str, name: &str) -> Option<PathBuf> {
        self.state().get(uid).and_then(|v| v.get(name)).cloned()
    }

    /// Whether any volume of pod `uid` is mounted (upstream `WaitForUnmount`'s check of
    /// the actual state of the world: `GetMountedVolumesForPod` empty once the pod's
    /// volumes are torn down).
    pub fn has_mounted_volumes(&self, uid: &str) -> bool {
        self.state().get(uid).is_some_and(|v| !v.is_empty())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeMap<String, PathBuf>>> {
        self.mounted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `WaitForAttachAndMount`: sets up (or refreshes) every `configMap`, `secret`,
    /// `downwardAPI` and `projected` volume of `pod`. A failure is recorded as a
    /// `FailedMount` event (`MountVolume.SetUp failed for volume "x" : …`); it fails the
    /// call only for a volume that was not mounted before.
    ///
    /// An image volume with the gate `ImageVolume` off has no plugin (upstream registers
    /// the image plugin only with the gate): the call fails for it, so the pod's containers
    /// never start, as upstream's `WaitForAttachAndMount` times out on it on every sync
    /// (upstream polls for 2 minutes first; here the pod worker's retry takes its place).
    pub async fn wait_for_attach_and_mount(&self, pod: &Pod) -> Result<(), MountError> {
        if !kubelet_container::gates::image_volume() {
            let mut images: Vec<String> = pod
                .spec
                .iter()
                .flat_map(|s| s.volumes.iter().flatten())
                .filter(|v| v.image.is_some())
                .map(|v| v.name.clone())
                .collect();
            if !images.is_empty() {
                images.sort();
                tracing::error!(pod = %pod_uid(pod), volumes = ?images, "Failed to get Plugin from volumeSpec: no volume plugin matched");
                return Err(MountError {
                    unmounted: images.clone(),
                    not_processed: images,
                    source: VolumeError::NoPluginMatched,
                });
            }
        }
        let volumes: Vec<(&Volume, Plugin)> = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .filter_map(|v| Plugin::of(v).map(|p| (v, p)))
            .collect();
        let mut unmounted = Vec::new();
        let mut first_err = None;
        let empty_dirs = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .filter(|v| v.empty_dir.is_some());
        for volume in empty_dirs {
            let Some(local) = &self.local else { break };
            if let Err(e) = local.volume_path(pod, volume) {
                let e = VolumeError::from(e);
                self.record_failed_mount(pod, volume, &e);
                unmounted.push(volume.name.clone());
                first_err.get_or_insert(e);
            }
        }
        if volumes.is_empty() {
            return match first_err {
                None => Ok(()),
                Some(source) => Err(MountError {
                    unmounted,
                    not_processed: Vec::new(),
                    source,
                }),
            };
        }
        let uid = pod_uid(pod);
        let ctx = SetUpContext {
            pod,
            objects: self.objects.as_ref(),
            node: &self.node,
            fs_user: ownership::fs_user_from(pod),
            fs_group: ownership::fs_group_of(pod),
        };
        for (volume, plugin) in volumes {
            let was_mounted = self.mounted_path(uid, &volume.name).is_some();
            match self.set_up(&ctx, volume, plugin).await {
                Ok(path) => {
                    self.state()
                        .entry(uid.to_string())
                        .or_default()
                        .insert(volume.name.clone(), path);
                }
                Err(e) => {
                    self.record_failed_mount(pod, volume, &e);
                    let dir = self.pod_volume_dir(uid, plugin, &volume.name);
                    if was_mounted && !dir.exists() {
                        // A failed write tore the volume down (upstream's clean-up after a
                        // failed SetUp): it is no longer mounted; the next sync sets it up.
                        if let Some(v) = self.state().get_mut(uid) {
                            v.remove(&volume.name);
                        }
                    }
                    if !was_mounted {
                        unmounted.push(volume.name.clone());
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        match first_err {
            None => Ok(()),
            Some(source) => {
                unmounted.sort();
                Err(MountError {
                    unmounted,
                    not_processed: Vec::new(),
                    source,
                })
            }
        }
    }

    /// The `FailedMount` event and error log of a failed `SetUp`.
    fn record_failed_mount(&self, pod: &Pod, volume: &Volume, e: &VolumeError) {
        let msg = format!(
            "MountVolume.SetUp failed for volume {:?} : {e}",
            volume.name
        );
        tracing::error!(pod = %pod_uid(pod), volume = %volume.name, err = %e, "MountVolume.SetUp failed");
        self.recorder.event(
            &pod_ref(pod),
            EventType::Warning,
            reasons::FAILED_MOUNT_VOLUME,
            &msg,
        );
    }

    /// `SetUp` of one volume: payload, wrapped `emptyDir`, nested mount points, atomic
    /// write, `fsGroup` ownership; a failure after the `emptyDir` was set up tears it down.
    async fn set_up(
        &self,
        ctx: &SetUpContext<'_>,
        volume: &Volume,
        plugin: Plugin,
    ) -> Result<PathBuf, VolumeError> {
        let pod = ctx.pod;
        let dir = self.pod_volume_dir(pod_uid(pod), plugin, &volume.name);
        tracing::debug!(volume = %volume.name, pod = %pod_uid(pod), dir = %dir.display(), "Setting up volume");
        let payload = plugins::make_payload(ctx, volume).await?;
        let job = SetUpJob {
            dir: dir.clone(),
            plugin,
            payload,
            tmpfs_options: self.tmpfs_options(pod),
            nested: nested_mount_points(&volume.name, pod),
            fs_group: ctx.fs_group,
            log_context: format!(
                "pod {}/{} volume {}",
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default(),
                volume.name
            ),
            mounter: self.mounter.clone(),
        };
        tokio::task::spawn_blocking(move || job.run())
            .await
            .map_err(|e| VolumeError::Payload(format!("set-up task failed: {e}")))??;
        Ok(dir)
    }

    /// `generateTmpfsMountOptions`: `size=` the smaller of node allocatable memory and the
    /// pod's memory limit, and `noswap` where the kernel has it.
    fn tmpfs_options(&self, pod: &Pod) -> Vec<String> {
        let mut size = self.node.allocatable_memory;
        if let Some(limit) = kubelet_runtime::resources::pod_memory_limit(pod)
            && limit > 0
            && limit <= size
        {
            size = limit;
        }
        let mut options = Vec::new();
        if size > 0 {
            options.push(format!("size={size}"));
        }
        if self.mounter.noswap_supported() {
            options.push("noswap".into());
        }
        options
    }

    /// `WaitForUnmount` for a terminated pod: tears down its volumes (from disk) and
    /// forgets its tokens.
    pub async fn unmount_pod(&self, uid: &str) -> Result<(), VolumeError> {
        self.state().remove(uid);
        let pod_dir = self.root_dir.join("pods").join(uid);
        let mounter = self.mounter.clone();
        let torn =
            tokio::task::spawn_blocking(move || tear_down_pod_dir(&pod_dir, mounter.as_ref()))
                .await
                .map_err(|e| VolumeError::Payload(format!("tear-down task failed: {e}")))?;
        let (projected, errs) = torn;
        if projected {
            self.objects.delete_service_account_token(uid);
        }
        match VolumeError::aggregate(errs) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// Housekeeping: tears down the volumes of every pod directory whose UID is not
    /// `known` (pods of a previous run, or whose termination did not finish), so
    /// `cleanupOrphanedPodDirs` can remove the directories. Returns the errors.
    pub async fn cleanup_orphaned_pods(&self, known: impl Fn(&str) -> bool) -> Vec<String> {
        let pods = self.root_dir.join("pods");
        let uids: Vec<String> = match std::fs::read_dir(&pods) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|u| !known(u))
                .collect(),
            Err(_) => return Vec::new(),
        };
        let mut errors = Vec::new();
        for uid in uids {
            let has_ours = Plugin::ALL
                .iter()
                .any(|p| pods.join(&uid).join("volumes").join(p.dir_name()).is_dir());
            if !has_ours {
                continue;
            }
            tracing::info!(pod_uid = %uid, "Tearing down the volumes of an orphaned pod");
            if let Err(e) = self.unmount_pod(&uid).await {
                errors.push(format!("orphaned pod {uid:?}: {e}"));
            }
        }
        errors
    }
}

/// The blocking part of a set-up.
struct SetUpJob {
    dir: PathBuf,
    plugin: Plugin,
    payload: Payload,
    tmpfs_options: Vec<String>,
    nested: Vec<String>,
    fs_group: Option<u32>,
    log_context: String,
    mounter: Arc<dyn Mounter>,
}

impl SetUpJob {
    fn run(self) -> Result<(), VolumeError> {
        self.set_up_empty_dir()?;
        let result = self.write();
        if result.is_err() {
            // upstream: "Clean up directories if setup fails".
            if let Err(e) = tear_down(&self.dir, self.mounter.as_ref()) {
                tracing::error!(dir = %self.dir.display(), err = %e, "Error tearing down volume");
            }
        }
        result
    }

    /// The wrapped `emptyDir`'s `SetUpAt`: the directory with mode 0777, a tmpfs on it for
    /// memory-backed plugins (unless one is there already), `fsGroup` ownership.
    fn set_up_empty_dir(&self) -> Result<(), VolumeError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let dir = &self.dir;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(EMPTY_DIR_PERM)
            .create(dir)
            .map_err(VolumeError::io("create volume directory", dir))?;
        let meta = std::fs::symlink_metadata(dir).map_err(VolumeError::io("stat", dir))?;
        if meta.permissions().mode() & 0o777 != EMPTY_DIR_PERM {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(EMPTY_DIR_PERM))
                .map_err(VolumeError::io("chmod", dir))?;
        }
        if self.plugin.memory_backed()
            && !self
                .mounter
                .is_tmpfs_mount(dir)
                .map_err(VolumeError::io("check mount of", dir))?
        {
            tracing::debug!(dir = %dir.display(), "Mounting tmpfs for volume");
            self.mounter
                .mount_tmpfs(dir, &self.tmpfs_options)
                .map_err(VolumeError::io("mount tmpfs on", dir))?;
        }
        if let Some(g) = self.fs_group {
            // The emptyDir's own ownership change; its errors are ignored upstream.
            let _ = ownership::change_permissions(dir, g, false);
        }
        Ok(())
    }

    fn write(&self) -> Result<(), VolumeError> {
        use std::os::unix::fs::DirBuilderExt;
        for n in &self.nested {
            let p = self.dir.join(n);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&p)
                .map_err(|e| {
                    VolumeError::Payload(format!("unable to create nested volume mountpoints: {e}"))
                })?;
        }
        let writer = AtomicWriter::new(&self.dir, &self.log_context)?;
        let dir = self.dir.clone();
        let fs_group = self.fs_group;
        let set_perms = move |_: &str| match fs_group {
            // The whole volume: files may be new outside the timestamped directory.
            Some(g) => ownership::change_permissions(&dir, g, true),
            None => Ok(()),
        };
        writer.write(&self.payload, Some(&set_perms))?;
        Ok(())
    }
}

/// `emptyDir.TearDownAt`: unmount a tmpfs, then remove the directory.
fn tear_down(dir: &Path, mounter: &dyn Mounter) -> Result<(), VolumeError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(dir = %dir.display(), "Unmount skipped because path does not exist");
            return Ok(());
        }
        Err(e) => return Err(VolumeError::io("check", dir)(e)),
        Ok(_) => {}
    }
    if mounter
        .is_mount_point(dir)
        .map_err(VolumeError::io("check mount of", dir))?
    {
        mounter
            .unmount(dir)
            .map_err(VolumeError::io("unmount", dir))?;
    }
    std::fs::remove_dir_all(dir).map_err(VolumeError::io("remove", dir))
}

/// Tears down every volume of our plugins under `pod_dir/volumes`. Returns whether a
/// projected volume was among them, and the errors.
fn tear_down_pod_dir(pod_dir: &Path, mounter: &dyn Mounter) -> (bool, Vec<VolumeError>) {
    let mut projected = false;
    let mut errs = Vec::new();
    for plugin in Plugin::ALL {
        let plugin_dir = pod_dir.join("volumes").join(plugin.dir_name());
        let Ok(entries) = std::fs::read_dir(&plugin_dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let dir = entry.path();
            tracing::debug!(dir = %dir.display(), "Tearing down volume");
            projected |= plugin == Plugin::Projected;
            if let Err(e) = tear_down(&dir, mounter) {
                errs.push(e);
            }
        }
    }
    (projected, errs)
}

/// `filepath.Clean` of an absolute container path.
fn clean_abs(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

/// `getNestedMountpoints`: where other volumes are mounted beneath this one in some
/// container, relative to this volume (only the outermost of double-nested ones).
fn nested_mount_points(name: &str, pod: &Pod) -> Vec<String> {
    let mut out = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return out;
    };
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    for c in containers {
        let mounts = c.volume_mounts.iter().flatten();
        let mut all: Vec<String> = mounts.clone().map(|m| clean_abs(&m.mount_path)).collect();
        all.sort();
        let mine = mounts
            .filter(|m| m.name == name)
            .map(|m| clean_abs(&m.mount_path));
        for my in mine {
            let with_slash = format!("{my}/");
            let mut prev: Vec<String> = Vec::new();
            for mp in &all {
                if !mp.starts_with(&with_slash) || prev.iter().any(|p| mp.starts_with(p)) {
                    continue;
                }
                prev.push(format!("{mp}/"));
                out.push(mp[with_slash.len()..].to_string());
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
