//! `fsGroup` ownership of a volume (upstream `pkg/volume/volume_linux.go`
//! `SetVolumeOwnership`/`ChangePermissions`) and the pod's `FsUser`
//! (`pkg/volume/util/util.go` `FsUserFrom`).

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use k8s_openapi::api::core::v1::{Container, Pod};

const RW_MASK: u32 = 0o660;
const RO_MASK: u32 = 0o440;
const EXEC_MASK: u32 = 0o110;
const SETGID: u32 = 0o2000;

/// `changePermissionsRecursively` with `fsGroupChangePolicy` unset (always recursive):
/// every entry gets group `fs_group`; files and directories (not symlinks) get the group
/// bits (read for read-only volumes, read-write otherwise), directories also the execute
/// and setgid bits. Failures of single entries are logged, as upstream.
pub fn change_permissions(dir: &Path, fs_group: u32, read_only: bool) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    change_file(dir, &meta, fs_group, read_only);
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let m = std::fs::symlink_metadata(&path)?;
            if m.is_dir() {
                change_permissions(&path, fs_group, read_only)?;
            } else {
                change_file(&path, &m, fs_group, read_only);
            }
        }
    }
    Ok(())
}

fn change_file(path: &Path, meta: &std::fs::Metadata, fs_group: u32, read_only: bool) {
    if let Err(e) = std::os::unix::fs::lchown(path, None, Some(fs_group)) {
        tracing::error!(path = %path.display(), err = %e, "Lchown failed");
    }
    if meta.file_type().is_symlink() {
        return;
    }
    let mut mask = if read_only { RO_MASK } else { RW_MASK };
    if meta.is_dir() {
        mask |= SETGID | EXEC_MASK;
    }
    let mode = (meta.mode() & 0o7777) | mask;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        tracing::error!(path = %path.display(), err = %e, "chmod failed");
    }
}

/// `DetermineEffectiveRunAsUser`: the container's `runAsUser`, else the pod's.
fn effective_run_as_user(pod: &Pod, c: &Container) -> Option<i64> {
    c.security_context
        .as_ref()
        .and_then(|s| s.run_as_user)
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.security_context.as_ref())
                .and_then(|s| s.run_as_user)
        })
}

/// `FsUserFrom`: the UID every container (init, regular, ephemeral) runs as, if they all
/// set the same one.
pub fn fs_user_from(pod: &Pod) -> Option<u32> {
    let spec = pod.spec.as_ref()?;
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter());
    let mut fs_user: Option<i64> = None;
    for c in containers {
        let uid = effective_run_as_user(pod, c)?;
        match fs_user {
            Some(u) if u != uid => return None,
            _ => fs_user = Some(uid),
        }
    }
    for c in spec.ephemeral_containers.iter().flatten() {
        let uid = c
            .security_context
            .as_ref()
            .and_then(|s| s.run_as_user)
            .or_else(|| spec.security_context.as_ref().and_then(|s| s.run_as_user))?;
        if fs_user.is_some_and(|u| u != uid) {
            return None;
        }
    }
    fs_user.and_then(|u| u32::try_from(u).ok())
}

/// `spec.securityContext.fsGroup`.
pub fn fs_group_of(pod: &Pod) -> Option<u32> {
    pod.spec
        .as_ref()
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.fs_group)
        .and_then(|g| u32::try_from(g).ok())
}
