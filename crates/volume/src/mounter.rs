//! The mounts the volume plugins make: the tmpfs of memory-backed wrapped `emptyDir`s
//! (upstream `mount-utils` `Mounter.MountSensitiveWithoutSystemd`, `Unmount`, the
//! emptyDir `mountDetector.GetMountMedium`), behind a trait with a recording fake.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Mounting and unmounting tmpfs volumes.
pub trait Mounter: Send + Sync {
    /// Mounts a tmpfs on `dir` with `options` (`size=…`, `noswap`).
    fn mount_tmpfs(&self, dir: &Path, options: &[String]) -> io::Result<()>;
    /// Unmounts `dir`.
    fn unmount(&self, dir: &Path) -> io::Result<()>;
    /// `GetMountMedium`: whether `dir` is a mount point holding a tmpfs.
    fn is_tmpfs_mount(&self, dir: &Path) -> io::Result<bool>;
    /// Whether `dir` is a mount point (of any filesystem).
    fn is_mount_point(&self, dir: &Path) -> io::Result<bool>;
    /// `swap.IsTmpfsNoswapOptionSupported`.
    fn noswap_supported(&self) -> bool;
}

/// The host's mount table, through `mount(2)` / `umount(2)`.
#[derive(Debug)]
pub struct RealMounter {
    noswap: bool,
}

impl RealMounter {
    /// Decides once whether tmpfs takes `noswap` (kernel ≥ 6.4, not in a user namespace).
    pub fn new() -> Self {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
        Self {
            noswap: kernel_at_least(&release, 6, 4) && !in_user_namespace(&uid_map),
        }
    }
}

impl Default for RealMounter {
    fn default() -> Self {
        Self::new()
    }
}

/// `inuserns.RunningInUserNS`: the identity map is `0 0 4294967295`.
fn in_user_namespace(uid_map: &str) -> bool {
    let fields: Vec<&str> = uid_map.split_whitespace().collect();
    !(fields.is_empty() || fields == ["0", "0", "4294967295"])
}

fn kernel_at_least(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let maj = parts
        .next()
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or(0);
    let min = parts
        .next()
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or(0);
    (maj, min) >= (major, minor)
}

fn dev_differs_from_parent(dir: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return Ok(false);
    }
    let parent = dir.parent().unwrap_or(Path::new("/"));
    Ok(std::fs::metadata(parent)?.dev() != meta.dev())
}

impl Mounter for RealMounter {
    fn mount_tmpfs(&self, dir: &Path, options: &[String]) -> io::Result<()> {
        let data = options.join(",");
        nix::mount::mount(
            Some("tmpfs"),
            dir,
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            (!data.is_empty()).then_some(data.as_str()),
        )
        .map_err(io::Error::from)
    }

    fn unmount(&self, dir: &Path) -> io::Result<()> {
        nix::mount::umount(dir).map_err(io::Error::from)
    }

    fn is_tmpfs_mount(&self, dir: &Path) -> io::Result<bool> {
        if !dev_differs_from_parent(dir)? {
            return Ok(false);
        }
        let fs = nix::sys::statfs::statfs(dir).map_err(io::Error::from)?;
        Ok(fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
    }

    fn is_mount_point(&self, dir: &Path) -> io::Result<bool> {
        dev_differs_from_parent(dir)
    }

    fn noswap_supported(&self) -> bool {
        self.noswap
    }
}

/// Records mounts instead of making them (the directories stay plain directories).
#[derive(Debug, Default)]
pub struct FakeMounter {
    mounts: Mutex<BTreeMap<PathBuf, Vec<String>>>,
    log: Mutex<Vec<String>>,
}

impl FakeMounter {
    /// No mounts.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tmpfs mounts now in place, with their options.
    pub fn mounts(&self) -> BTreeMap<PathBuf, Vec<String>> {
        self.mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every `mount`/`unmount` call, in order.
    pub fn log(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Mounter for FakeMounter {
    fn mount_tmpfs(&self, dir: &Path, options: &[String]) -> io::Result<()> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!("mount {} {}", dir.display(), options.join(",")));
        self.mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(dir.to_path_buf(), options.to_vec());
        Ok(())
    }

    fn unmount(&self, dir: &Path) -> io::Result<()> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!("unmount {}", dir.display()));
        match self
            .mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(dir)
        {
            Some(_) => Ok(()),
            None => Err(io::Error::from_raw_os_error(22)),
        }
    }

    fn is_tmpfs_mount(&self, dir: &Path) -> io::Result<bool> {
        self.is_mount_point(dir)
    }

    fn is_mount_point(&self, dir: &Path) -> io::Result<bool> {
        Ok(self
            .mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(dir))
    }

    fn noswap_supported(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions() {
        assert!(kernel_at_least("6.18.44-fc-v657\n", 6, 4));
        assert!(kernel_at_least("6.4.0", 6, 4));
        assert!(!kernel_at_least("6.3.9-arch1", 6, 4));
        assert!(!kernel_at_least("5.15.0", 6, 4));
        assert!(!kernel_at_least("", 6, 4));
    }

    #[test]
    fn user_namespace_detection() {
        assert!(!in_user_namespace("         0          0 4294967295\n"));
        assert!(in_user_namespace("         0     100000      65536\n"));
    }

    /// Needs root (the dev machine runs tests as root): a real tmpfs on a temp dir.
    #[test]
    fn real_tmpfs_mount_and_unmount() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("vol");
        std::fs::create_dir(&dir).unwrap();
        let m = RealMounter::new();
        assert!(!m.is_tmpfs_mount(&dir).unwrap());
        m.mount_tmpfs(&dir, &["size=1048576".to_string()]).unwrap();
        let mounted = m.is_tmpfs_mount(&dir);
        let unmounted = m.unmount(&dir);
        assert!(mounted.unwrap(), "a tmpfs is mounted");
        unmounted.unwrap();
        assert!(!m.is_mount_point(&dir).unwrap());
    }
}
