//! Volume ownership for `fsGroup` (upstream `pkg/volume/volume_linux.go`:
//! `SetVolumeOwnership`, `changeFilePermission`, `skipPermissionChange`,
//! `requiresPermissionChange`, `walkDeep`).
//!
//! Every file and directory below the volume gets group `fsGroup` (`lchown`, symlinks
//! included, never followed) and the group bits `rw` (`r` for a read-only volume), plus
//! `x` and setgid on directories. With `fsGroupChangePolicy: OnRootMismatch` nothing is
//! done when the volume root already has that group, those bits and setgid.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const RW_MASK: u32 = 0o660;
const RO_MASK: u32 = 0o440;
const EXEC_MASK: u32 = 0o110;
const SETGID: u32 = 0o2000;

/// `changeFilePermission`: errors are logged, not returned, as upstream.
fn change_file_permission(path: &Path, fs_group: u32, read_only: bool, meta: &std::fs::Metadata) {
    if let Err(e) = std::os::unix::fs::lchown(path, None, Some(fs_group)) {
        tracing::error!(path = %path.display(), error = %e, "Lchown failed");
    }
    if meta.file_type().is_symlink() {
        return;
    }
    let mut mask = if read_only { RO_MASK } else { RW_MASK };
    if meta.is_dir() {
        mask |= SETGID | EXEC_MASK;
    }
    let mode = (meta.permissions().mode() & 0o7777) | mask;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        tracing::error!(path = %path.display(), error = %e, "chmod failed");
    }
}

/// `requiresPermissionChange`: the volume root does not have the group, bits and setgid.
fn requires_permission_change(root: &Path, fs_group: u32, read_only: bool) -> bool {
    let meta = match std::fs::metadata(root) {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(path = %root.display(), error = %e, "Performing recursive ownership change on rootDir because reading permissions of root volume failed");
            return true;
        }
    };
    if meta.gid() != fs_group || !meta.is_dir() {
        return true;
    }
    let want = if read_only { RO_MASK } else { RW_MASK } | EXEC_MASK;
    let perm = meta.permissions().mode();
    perm & want != want || perm & SETGID == 0
}

/// `walkDeep`: children first, then the directory itself; symlinks are not followed.
fn walk_deep(
    path: &Path,
    meta: &std::fs::Metadata,
    f: &dyn Fn(&Path, &std::fs::Metadata),
) -> io::Result<()> {
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            let child = entry?.path();
            let child_meta = std::fs::symlink_metadata(&child)?;
            walk_deep(&child, &child_meta, f)?;
        }
    }
    f(path, meta);
    Ok(())
}

/// `SetVolumeOwnership`/`ChangePermissions` of `dir` for `fs_group` with
/// `fsGroupChangePolicy` `policy` (`None`: `Always`).
pub fn set_volume_ownership(
    dir: &Path,
    fs_group: i64,
    policy: Option<&str>,
    read_only: bool,
) -> io::Result<()> {
    let gid = u32::try_from(fs_group).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid fsGroup {fs_group}"),
        )
    })?;
    if policy == Some("OnRootMismatch") && !requires_permission_change(dir, gid, read_only) {
        tracing::debug!(path = %dir.display(), "Skipping permission and ownership change for volume");
        return Ok(());
    }
    let meta = std::fs::symlink_metadata(dir)?;
    walk_deep(dir, &meta, &|p, m| {
        change_file_permission(p, gid, read_only, m)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn sets_group_bits_and_setgid_on_dirs_without_following_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let vol = tmp.path().join("vol");
        std::fs::create_dir_all(vol.join("sub")).unwrap();
        std::fs::write(vol.join("sub/f"), b"x").unwrap();
        std::fs::set_permissions(vol.join("sub/f"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o700)).unwrap();
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"o").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&outside, vol.join("link")).unwrap();
        let gid = nix::unistd::getegid().as_raw();

        set_volume_ownership(&vol, i64::from(gid), None, false).unwrap();
        assert_eq!(mode(&vol), 0o2770);
        assert_eq!(mode(&vol.join("sub")), 0o2775);
        assert_eq!(mode(&vol.join("sub/f")), 0o660);
        assert_eq!(mode(&outside), 0o600, "symlink target untouched");
        assert_eq!(std::fs::metadata(vol.join("sub/f")).unwrap().gid(), gid);
    }

    #[test]
    fn on_root_mismatch_skips_a_matching_root() {
        let tmp = tempfile::tempdir().unwrap();
        let vol = tmp.path().join("vol");
        std::fs::create_dir_all(&vol).unwrap();
        std::fs::write(vol.join("f"), b"x").unwrap();
        std::fs::set_permissions(vol.join("f"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o2770)).unwrap();
        let gid = i64::from(nix::unistd::getegid().as_raw());
        set_volume_ownership(&vol, gid, Some("OnRootMismatch"), false).unwrap();
        assert_eq!(mode(&vol.join("f")), 0o600, "root matched: nothing walked");
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o770)).unwrap();
        set_volume_ownership(&vol, gid, Some("OnRootMismatch"), false).unwrap();
        assert_eq!(mode(&vol.join("f")), 0o660, "no setgid on the root: walked");
        assert!(set_volume_ownership(&vol, -1, None, false).is_err());
    }
}
