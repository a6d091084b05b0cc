//! Removal of the directories of pods that are gone (upstream `cleanupOrphanedPodDirs`,
//! `removeOrphanedPodVolumeDirs` and `podVolumesExist` in `pkg/kubelet/kubelet_volumes.go`).
//!
//! `<root-dir>/pods/<uid>` holds a pod's `etc-hosts`, its containers' termination-message
//! files and its `volumes/<plugin>/<name>` directories. Once the pod is neither desired, nor
//! known to the pod workers, nor running in the runtime, housekeeping removes the directory,
//! as upstream does, with upstream's safety rules:
//!
//! * a pod with a volume that is still mounted is left alone (never delete through a mount);
//! * the `volumes` directory is only ever emptied with `rmdir`, never removed recursively;
//! * every other subdirectory is removed without crossing into another filesystem.
//!
//! kubelet-rs has no volume manager yet: the only pod-directory volumes it creates are
//! disk-backed `emptyDir`s ([`crate::volumes`]), plain directories that upstream's emptyDir
//! `TearDown` would remove once the pod terminated. That teardown is done here for an
//! orphaned pod (an `emptyDir` that is not a mount point is removed on one filesystem), so the
//! `rmdir`s that follow succeed; any other volume directory must already be empty.

use std::path::{Path, PathBuf};

use crate::os::OsInterface;
use crate::volumes::tear_down_local_mounts;

/// The plugin directory of `emptyDir` volumes (`kubernetes.io~empty-dir`).
pub const EMPTY_DIR_PLUGIN_DIR: &str = "kubernetes.io~empty-dir";

/// `getPodVolumePathListFromDisk`: `volumes/<plugin>/<name>` of pod `uid`.
fn pod_volume_paths(os: &dyn OsInterface, pod_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let volumes = pod_dir.join("volumes");
    if !os.exists(&volumes) {
        return Ok(Vec::new());
    }
    let mut paths = Vec::new();
    for plugin in os.read_dir(&volumes)? {
        let plugin_dir = volumes.join(plugin);
        for name in os.read_dir(&plugin_dir)? {
            paths.push(plugin_dir.join(name));
        }
    }
    Ok(paths)
}

/// `podVolumesExist`: a volume is (or may be) still mounted.
fn pod_volumes_exist(os: &dyn OsInterface, uid: &str, pod_dir: &Path) -> bool {
    let paths = match pod_volume_paths(os, pod_dir) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(pod_uid = uid, err = %e, "Pod found, but error occurred during checking mounted volumes from disk");
            return true;
        }
    };
    let mut mounted = Vec::new();
    for p in paths {
        match os.is_mount_point(&p) {
            Ok(false) => {}
            Ok(true) => mounted.push(p),
            Err(e) => {
                tracing::error!(pod_uid = uid, err = %e, path = %p.display(), "Pod found, but error occurred during checking mounted volumes from disk");
                return true;
            }
        }
    }
    if !mounted.is_empty() {
        tracing::debug!(pod_uid = uid, paths = ?mounted, "Pod found, but volumes are still mounted on disk");
    }
    !mounted.is_empty()
}

/// `removeOrphanedPodVolumeDirs` (with the emptyDir teardown described in the module docs).
fn remove_orphaned_pod_volume_dirs(os: &dyn OsInterface, uid: &str, pod_dir: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let paths = match pod_volume_paths(os, pod_dir) {
        Ok(p) => p,
        Err(e) => {
            return vec![format!(
                "orphaned pod {uid:?} found, but error occurred during reading volume dir from disk: {e}"
            )];
        }
    };
    for path in paths {
        let empty_dir = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|p| p == EMPTY_DIR_PLUGIN_DIR);
        let result = if empty_dir && os.is_dir(&path) {
            os.remove_all_one_filesystem(&path)
        } else {
            os.remove_dir(&path)
        };
        match result {
            Ok(()) => {
                tracing::info!(pod_uid = uid, path = %path.display(), "Cleaned up orphaned volume from pod")
            }
            Err(e) => errors.push(format!(
                "orphaned pod {uid:?} found, but failed to rmdir() volume at path {}: {e}",
                path.display()
            )),
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    // RemoveDirsOneFilesystem: only empty directories may remain.
    let volumes = pod_dir.join("volumes");
    if os.exists(&volumes) {
        let plugins = os.read_dir(&volumes).unwrap_or_default();
        let removed = plugins
            .iter()
            .try_for_each(|p| os.remove_dir(&volumes.join(p)))
            .and_then(|()| os.remove_dir(&volumes));
        match removed {
            Ok(()) => {
                tracing::info!(pod_uid = uid, path = %volumes.display(), "Cleaned up orphaned pod volumes dir")
            }
            Err(e) => errors.push(format!(
                "orphaned pod {uid:?} found, but error occurred when trying to remove the volumes dir: {e}"
            )),
        }
    }
    errors
}

/// Removes `<root_dir>/pods/<uid>` of every pod for which `known(uid)` is false (upstream
/// `cleanupOrphanedPodDirs`; `known` covers the desired pods, the pods the workers still
/// track and the pods running in the runtime). Returns the errors; a pod that could not be
/// cleaned is retried at the next housekeeping.
pub fn cleanup_orphaned_pod_dirs(
    os: &dyn OsInterface,
    root_dir: &Path,
    known: impl Fn(&str) -> bool,
) -> Vec<String> {
    let pods_dir = root_dir.join("pods");
    let found = match os.read_dir(&pods_dir) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            return vec![format!(
                "could not read directory {}: {e}",
                pods_dir.display()
            )];
        }
    };
    let mut errors = Vec::new();
    for uid in found.iter().filter(|u| !known(u)) {
        let pod_dir = pods_dir.join(uid);
        let teardown_errors = tear_down_local_mounts(os, &pod_dir);
        if !teardown_errors.is_empty() {
            errors.extend(teardown_errors);
            continue;
        }
        if pod_volumes_exist(os, uid, &pod_dir) {
            tracing::debug!(pod_uid = %uid, "Orphaned pod found, but volumes are not cleaned up");
            continue;
        }
        let volume_errors = remove_orphaned_pod_volume_dirs(os, uid, &pod_dir);
        if !volume_errors.is_empty() {
            errors.extend(volume_errors);
            continue;
        }
        let subdirs = match os.read_dir(&pod_dir) {
            Ok(s) => s,
            Err(e) => {
                errors.push(format!("orphaned pod {uid:?} found, but error occurred during reading the pod dir from disk: {e}"));
                continue;
            }
        };
        for sub in subdirs {
            let path = pod_dir.join(&sub);
            if sub == "volumes" {
                errors.push(format!("orphaned pod {uid:?} found, but failed to remove volumes subdir {}: volumes subdir was found after it was removed", path.display()));
                continue;
            }
            if let Err(e) = os.remove_all_one_filesystem(&path) {
                errors.push(format!("orphaned pod {uid:?} found, but error occurred when trying to remove subdir {:?}: {e}", path.display()));
            }
        }
        tracing::debug!(pod_uid = %uid, "Orphaned pod found, removing");
        if let Err(e) = os.remove_dir(&pod_dir) {
            errors.push(format!("orphaned pod {uid:?} found, but error occurred when trying to remove the pod directory: {e}"));
        }
    }
    errors
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::os::FakeOs;

    const ROOT: &str = "/var/lib/kubelet";

    fn pod_with_files(os: &FakeOs, uid: &str) -> PathBuf {
        let dir = Path::new(ROOT).join("pods").join(uid);
        os.mkdir_all(&dir.join("containers/web")).unwrap();
        os.write_file(&dir.join("containers/web/1a2b"), b"bye")
            .unwrap();
        os.write_file(&dir.join("etc-hosts"), b"127.0.0.1 localhost")
            .unwrap();
        let ed = dir.join("volumes").join(EMPTY_DIR_PLUGIN_DIR).join("cache");
        os.mkdir_all(&ed).unwrap();
        os.write_file(&ed.join("data"), b"x").unwrap();
        dir
    }

    #[test]
    fn removes_only_unknown_pods_dirs() {
        let os = FakeOs::new();
        let gone = pod_with_files(&os, "gone");
        let kept = pod_with_files(&os, "kept");
        let errors = cleanup_orphaned_pod_dirs(&os, Path::new(ROOT), |u| u == "kept");
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!os.exists(&gone), "{:?}", os.paths());
        assert!(os.exists(&kept.join("etc-hosts")));
        assert!(
            os.exists(
                &kept
                    .join("volumes")
                    .join(EMPTY_DIR_PLUGIN_DIR)
                    .join("cache/data")
            )
        );
        assert!(os.exists(&Path::new(ROOT).join("pods")));
    }

    #[test]
    fn never_removes_a_pod_dir_with_a_mounted_volume() {
        let os = FakeOs::new();
        let dir = pod_with_files(&os, "gone");
        let mounted = dir.join("volumes/kubernetes.io~secret/token");
        os.mount(&mounted);
        os.write_file(&mounted.join("token"), b"secret").unwrap();
        let errors = cleanup_orphaned_pod_dirs(&os, Path::new(ROOT), |_| false);
        assert!(errors.is_empty(), "skipped, not an error: {errors:?}");
        assert!(os.exists(&mounted.join("token")));
        assert!(
            os.exists(&dir.join("etc-hosts")),
            "nothing of the pod is removed"
        );
    }

    #[test]
    fn a_non_empty_volume_dir_of_another_plugin_is_kept_and_reported() {
        let os = FakeOs::new();
        let dir = pod_with_files(&os, "gone");
        let other = dir.join("volumes/kubernetes.io~configmap/cfg");
        os.mkdir_all(&other).unwrap();
        os.write_file(&other.join("key"), b"v").unwrap();
        let errors = cleanup_orphaned_pod_dirs(&os, Path::new(ROOT), |_| false);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("failed to rmdir() volume"), "{errors:?}");
        assert!(os.exists(&other.join("key")), "only rmdir on volume dirs");
        assert!(
            os.exists(&dir.join("etc-hosts")),
            "the pod dir stays until volumes are gone"
        );
    }

    #[test]
    fn a_mount_below_another_subdir_stops_its_removal() {
        let os = FakeOs::new();
        let dir = pod_with_files(&os, "gone");
        let mnt = dir.join("plugins/some/mnt");
        os.mount(&mnt);
        let errors = cleanup_orphaned_pod_dirs(&os, Path::new(ROOT), |_| false);
        assert!(
            errors.iter().any(|e| e.contains("mount point")),
            "{errors:?}"
        );
        assert!(os.exists(&mnt));
        assert!(
            !os.exists(&dir.join("etc-hosts")),
            "other subdirs are removed"
        );
    }

    #[test]
    fn real_filesystem_removal() {
        let tmp = tempfile::tempdir().unwrap();
        let os = crate::os::RealOs;
        let dir = tmp.path().join("pods/gone");
        let ed = dir.join("volumes").join(EMPTY_DIR_PLUGIN_DIR).join("cache");
        std::fs::create_dir_all(&ed).unwrap();
        std::fs::write(ed.join("data"), b"x").unwrap();
        std::fs::create_dir_all(dir.join("containers/web")).unwrap();
        std::fs::write(dir.join("containers/web/1a2b"), b"bye").unwrap();
        std::fs::write(dir.join("etc-hosts"), b"").unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"k").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("containers/link")).unwrap();
        let errors = cleanup_orphaned_pod_dirs(&os, tmp.path(), |_| false);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!dir.exists());
        assert!(
            outside.join("keep").exists(),
            "symlinks are removed, not followed"
        );
    }
}
