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
    /// Usage of the files directly in directory `dir`, its subdirectories skipped (a
    /// container's log directory: upstream `hostStatsProvider.fileMetricsByDir`, one
    /// `MetricsDu` per file); `None` when it holds no file.
    fn files_usage(&self, dir: &Path) -> std::io::Result<Option<DirUsage>>;
    /// The modification time of `path` in nanoseconds since the epoch (cAdvisor's
    /// `getSpecInternal` takes a cgroup's creation time from its directory's).
    fn modified_nanos(&self, path: &Path) -> std::io::Result<i64>;
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

    fn files_usage(&self, dir: &Path) -> std::io::Result<Option<DirUsage>> {
        crate::log_usage::files_usage(dir)
    }

    fn modified_nanos(&self, path: &Path) -> std::io::Result<i64> {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(path)?;
        Ok(md.mtime().saturating_mul(1_000_000_000) + md.mtime_nsec())
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
    modified: Mutex<BTreeMap<PathBuf, i64>>,
}

impl FakeFsInfo {
    /// Sets the descriptor targets of `pid`.
    pub fn set_fds(&self, pid: u32, targets: &[&str]) {
        if let Ok(mut f) = self.fds.lock() {
            f.insert(pid, targets.iter().map(|t| t.to_string()).collect());
        }
    }

    /// Sets the modification time of `path`.
    pub fn set_modified(&self, path: impl Into<PathBuf>, nanos: i64) {
        if let Ok(mut m) = self.modified.lock() {
            m.insert(path.into(), nanos);
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
    /// The usage set for `dir` (see [`FakeFsInfo::set_usage`]).
    fn files_usage(&self, dir: &Path) -> std::io::Result<Option<DirUsage>> {
        self.dir_usage(dir).map(Some)
    }
    fn fd_targets(&self, pid: u32) -> std::io::Result<Vec<String>> {
        let path = PathBuf::from(format!("/proc/{pid}/fd"));
        let f = self.fds.lock().map_err(|_| not_found(&path))?;
        f.get(&pid).cloned().ok_or_else(|| not_found(&path))
    }
    fn modified_nanos(&self, path: &Path) -> std::io::Result<i64> {
        let m = self.modified.lock().map_err(|_| not_found(path))?;
        m.get(path).copied().ok_or_else(|| not_found(path))
    }
}

/// Block device names by `major:minor`, as cAdvisor's `MachineInfoNamer` resolves the
/// devices of the blkio tables (`AssignDeviceNamesToDiskStats`): the disks of the machine
/// (`GetBlockDeviceInfo` lists `/sys/block`: no `loop*`, `ram*`, `sr*` or hidden devices;
/// read here from `/proc/partitions`, which lists no hidden device, a partition being the
/// entry whose `/sys/dev/block/<major>:<minor>/partition` exists) as `/dev/<name>`, then
/// the devices of the mounted filesystems (`/proc/self/mountinfo` sources under `/dev/`).
pub fn disk_names(host: &dyn kubelet_cm::HostFs) -> std::collections::HashMap<(u64, u64), String> {
    let mut out = std::collections::HashMap::new();
    let major_minor = |s: &str| -> Option<(u64, u64)> {
        let (a, b) = s.trim().split_once(':')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    };
    let partitions = host
        .read_to_string(Path::new("/proc/partitions"))
        .unwrap_or_default();
    for line in partitions.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [major, minor, _blocks, name] = f.as_slice() else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (major.parse::<u64>(), minor.parse::<u64>()) else {
            continue;
        };
        let partition = format!("/sys/dev/block/{major}:{minor}/partition");
        if ["loop", "ram", "sr"].iter().any(|p| name.starts_with(p))
            || host.exists(Path::new(&partition))
        {
            continue;
        }
        out.insert((major, minor), format!("/dev/{name}"));
    }
    if let Ok(mounts) = host.read_to_string(Path::new("/proc/self/mountinfo")) {
        for line in mounts.lines() {
            let mut fields = line.split_whitespace();
            let Some(mm) = fields.nth(2).and_then(major_minor) else {
                continue;
            };
            // `... - <fstype> <source> <options>`.
            let mut rest = fields.skip_while(|f| *f != "-").skip(2);
            if let Some(source) = rest.next().filter(|s| s.starts_with("/dev/")) {
                out.entry(mm).or_insert_with(|| source.to_string());
            }
        }
    }
    out
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

    #[test]
    fn disk_names_from_proc_partitions_then_mounts() {
        let fs = kubelet_cm::FakeHostFs::default();
        fs.add_file(
            "/proc/partitions",
            "major minor  #blocks  name\n\n   7        0      1024 loop0\n   8        0  10485760 sda\n   8        1  10484736 sda1\n   8        2      1024 sda2\n",
        );
        fs.add_file("/sys/dev/block/8:1/partition", "1\n");
        fs.add_file("/sys/dev/block/8:2/partition", "2\n");
        fs.add_file(
            "/proc/self/mountinfo",
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n23 22 0:21 / /proc rw - proc proc rw\n",
        );
        let n = disk_names(&fs);
        assert_eq!(n.get(&(8, 0)).map(String::as_str), Some("/dev/sda"));
        assert_eq!(n.get(&(8, 1)).map(String::as_str), Some("/dev/sda1"));
        assert!(!n.contains_key(&(7, 0)), "loop devices are no disks");
        assert!(
            !n.contains_key(&(8, 2)),
            "an unmounted partition has no name"
        );
        assert!(!n.contains_key(&(0, 21)));
    }
}
