//! Filesystem capacity and directory usage (cAdvisor's `GetDirFsInfo`/`statfs` and
//! `fs.DiskUsage`, as `pkg/kubelet/stats` reads them), behind [`FsInfo`] with a fake.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Capacity of the filesystem holding a path (`statfs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsCapacity {
    /// `f_blocks × f_frsize`.
    pub capacity: u64,
    /// `f_bavail × f_frsize` (what unprivileged users can use).
    pub available: u64,
    /// `(f_blocks − f_bfree) × f_frsize`.
    pub usage: u64,
    /// `f_files`.
    pub inodes: u64,
    /// `f_ffree`.
    pub inodes_free: u64,
}

/// Bytes and inodes a directory tree uses (`du`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirUsage {
    /// Allocated bytes (`st_blocks × 512`), each inode counted once.
    pub bytes: u64,
    /// Inodes (directories included).
    pub inodes: u64,
}

/// Filesystem queries.
pub trait FsInfo: Send + Sync {
    /// `statfs` of the filesystem holding `path`.
    fn capacity(&self, path: &Path) -> std::io::Result<FsCapacity>;
    /// Usage of the tree at `path` (not crossing into other filesystems).
    fn dir_usage(&self, path: &Path) -> std::io::Result<DirUsage>;
    /// The link targets of a process's open file descriptors (`/proc/<pid>/fd/*`;
    /// cAdvisor's `processStatsFromProcs`), `socket:[…]` for sockets.
    fn fd_targets(&self, pid: u32) -> std::io::Result<Vec<String>>;
}

/// The real host.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFsInfo;

impl FsInfo for RealFsInfo {
    fn capacity(&self, path: &Path) -> std::io::Result<FsCapacity> {
        let s = nix::sys::statvfs::statvfs(path).map_err(std::io::Error::from)?;
        let frsize = s.fragment_size() as u64;
        let blocks = s.blocks() as u64;
        Ok(FsCapacity {
            capacity: blocks * frsize,
            available: s.blocks_available() as u64 * frsize,
            usage: blocks.saturating_sub(s.blocks_free() as u64) * frsize,
            inodes: s.files() as u64,
            inodes_free: s.files_free() as u64,
        })
    }

    fn fd_targets(&self, pid: u32) -> std::io::Result<Vec<String>> {
        let dir = PathBuf::from(format!("/proc/{pid}/fd"));
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            // A descriptor closed while listing is skipped, as cAdvisor does.
            if let Ok(target) = entry.and_then(|e| std::fs::read_link(e.path())) {
                out.push(target.to_string_lossy().into_owned());
            }
        }
        Ok(out)
    }

    fn dir_usage(&self, path: &Path) -> std::io::Result<DirUsage> {
        use std::os::unix::fs::MetadataExt;
        let root = std::fs::symlink_metadata(path)?;
        let dev = root.dev();
        let mut seen = std::collections::HashSet::new();
        let mut usage = DirUsage::default();
        let mut stack = vec![path.to_path_buf()];
        while let Some(p) = stack.pop() {
            let Ok(md) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if md.dev() != dev || !seen.insert(md.ino()) {
                continue;
            }
            usage.bytes += md.blocks() * 512;
            usage.inodes += 1;
            if md.is_dir()
                && let Ok(rd) = std::fs::read_dir(&p)
            {
                stack.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
            }
        }
        Ok(usage)
    }
}

/// A fake: capacities by path prefix and usages by exact path.
#[derive(Debug, Default)]
pub struct FakeFsInfo {
    state: Mutex<(BTreeMap<PathBuf, FsCapacity>, BTreeMap<PathBuf, DirUsage>)>,
    fds: Mutex<BTreeMap<u32, Vec<String>>>,
}

impl FakeFsInfo {
    /// Sets the descriptor targets of `pid`.
    pub fn set_fds(&self, pid: u32, targets: &[&str]) {
        if let Ok(mut f) = self.fds.lock() {
            f.insert(pid, targets.iter().map(|t| t.to_string()).collect());
        }
    }

    /// The filesystem mounted at `mount` (and every path under it).
    pub fn set_capacity(&self, mount: impl Into<PathBuf>, c: FsCapacity) {
        if let Ok(mut s) = self.state.lock() {
            s.0.insert(mount.into(), c);
        }
    }
    /// The usage of the tree at `path`.
    pub fn set_usage(&self, path: impl Into<PathBuf>, u: DirUsage) {
        if let Ok(mut s) = self.state.lock() {
            s.1.insert(path.into(), u);
        }
    }
}

fn not_found(path: &Path) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotFound, path.display().to_string())
}

impl FsInfo for FakeFsInfo {
    fn capacity(&self, path: &Path) -> std::io::Result<FsCapacity> {
        let s = self.state.lock().map_err(|_| not_found(path))?;
        s.0.iter()
            .filter(|(m, _)| path.starts_with(m))
            .max_by_key(|(m, _)| m.as_os_str().len())
            .map(|(_, c)| *c)
            .ok_or_else(|| not_found(path))
    }
    fn dir_usage(&self, path: &Path) -> std::io::Result<DirUsage> {
        let s = self.state.lock().map_err(|_| not_found(path))?;
        s.1.get(path).copied().ok_or_else(|| not_found(path))
    }
    fn fd_targets(&self, pid: u32) -> std::io::Result<Vec<String>> {
        let path = PathBuf::from(format!("/proc/{pid}/fd"));
        let f = self.fds.lock().map_err(|_| not_found(&path))?;
        f.get(&pid).cloned().ok_or_else(|| not_found(&path))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn real_du_counts_each_inode_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::hard_link(d.path().join("a"), d.path().join("b")).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let u = RealFsInfo.dir_usage(d.path()).unwrap();
        assert_eq!(u.inodes, 3, "dir, file, sub");
        assert!(u.bytes >= 10_000 && u.bytes < 40_000, "{u:?}");
        let c = RealFsInfo.capacity(d.path()).unwrap();
        let f = std::fs::File::open(d.path().join("a")).unwrap();
        let fds = RealFsInfo.fd_targets(std::process::id()).unwrap();
        assert!(fds.iter().any(|t| t.ends_with("/a")), "{fds:?}");
        drop(f);
        assert!(c.capacity >= c.available && c.capacity > 0, "{c:?}");
    }
}
