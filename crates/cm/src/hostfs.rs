//! The host filesystem boundary (`/proc`, `/sys`, cgroupfs) behind a trait, with a
//! recording fake for unit tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Host filesystem access the container manager needs.
pub trait HostFs: Send + Sync {
    /// Reads a whole file as text.
    fn read_to_string(&self, path: &Path) -> std::io::Result<String>;
    /// Writes (truncating) a file.
    fn write(&self, path: &Path, data: &str) -> std::io::Result<()>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()>;
    /// Whether the path exists.
    fn exists(&self, path: &Path) -> bool;
    /// The filesystem magic number (`statfs.f_type`) of the filesystem holding `path`.
    fn fs_type(&self, path: &Path) -> std::io::Result<i64>;
    /// The names of the subdirectories of a directory (cgroup children), sorted.
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>>;
    /// Removes an empty directory (`rmdir`; how a cgroup is deleted).
    fn remove_dir(&self, path: &Path) -> std::io::Result<()>;
    /// The target of a symbolic link (`/proc/<pid>/exe`, `/proc/<pid>/ns/pid`).
    fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("{}: links are not read here", path.display()),
        ))
    }
    /// Reads files `names` of directory `dir` (a cgroup's files), each result in order.
    fn read_files(&self, dir: &Path, names: &[&str]) -> Vec<std::io::Result<String>> {
        names
            .iter()
            .map(|n| self.read_to_string(&dir.join(n)))
            .collect()
    }
    /// Opens directory `name` of `parent` (`None`: `name` is a path from `/`) for access
    /// relative to it. The default (fakes) opens nothing: the handle is the path.
    fn open_dir(&self, parent: Option<&HostDir>, name: &Path) -> std::io::Result<HostDir> {
        match parent {
            None => Ok(HostDir::Path(name.to_path_buf())),
            Some(HostDir::Path(p)) => Ok(HostDir::Path(p.join(name))),
            Some(HostDir::Fd(_)) => Err(std::io::ErrorKind::Unsupported.into()),
        }
    }
    /// [`HostFs::read_files`] of an opened directory.
    fn read_files_in(&self, dir: &HostDir, names: &[&str]) -> Vec<std::io::Result<String>> {
        match dir {
            HostDir::Path(p) => self.read_files(p, names),
            HostDir::Fd(_) => names
                .iter()
                .map(|_| Err(std::io::ErrorKind::Unsupported.into()))
                .collect(),
        }
    }
    /// [`HostFs::exists`] of `name` in an opened directory.
    fn exists_in(&self, dir: &HostDir, name: &str) -> bool {
        match dir {
            HostDir::Path(p) => self.exists(&p.join(name)),
            HostDir::Fd(_) => false,
        }
    }
    /// Opens file `name` of an opened directory to be read again and again
    /// ([`HostFs::reread`]). The default (fakes) opens nothing: the handle is the path of a
    /// file that exists.
    fn open_file_in(&self, dir: &HostDir, name: &str) -> std::io::Result<HostFile> {
        match dir {
            HostDir::Path(p) => {
                let path = p.join(name);
                self.read_to_string(&path)?;
                Ok(HostFile::Path(path))
            }
            HostDir::Fd(_) => Err(std::io::ErrorKind::Unsupported.into()),
        }
    }
    /// The whole content of an opened file, read anew from its start.
    fn reread(&self, file: &HostFile) -> std::io::Result<String> {
        match file {
            HostFile::Path(p) => self.read_to_string(p),
            HostFile::Fd(_) => Err(std::io::ErrorKind::Unsupported.into()),
        }
    }
}

/// A file opened by [`HostFs::open_file_in`] for [`HostFs::reread`]. A cgroupfs or procfs
/// file read again from offset 0 is generated anew; once its cgroup is removed, reading it
/// fails (`ENODEV`), also when a cgroup of the same path was made since.
#[derive(Debug)]
pub enum HostFile {
    /// The real host's open descriptor (`O_RDONLY`).
    Fd(std::fs::File),
    /// The file's path (fakes).
    Path(PathBuf),
}

/// A directory opened by [`HostFs::open_dir`]: the names in it are reached without walking
/// its path again (a deep cgroupfs path costs a lookup and a revalidation per component).
#[derive(Debug)]
pub enum HostDir {
    /// The real host's `O_PATH` descriptor.
    Fd(std::os::fd::OwnedFd),
    /// The directory's path (fakes).
    Path(PathBuf),
}

/// Reads a whole file through a page-sized stack buffer: cgroupfs and procfs files report a
/// size of 0, on which `std::fs::read_to_string` does a `statx` and doubling reads from 32
/// bytes (9 syscalls for a v1 `memory.stat`); this is `open`, `read` until 0, `close`, and
/// one allocation of the content's size (small enough for the allocator's thread cache).
fn read_pseudo_file(path: &Path) -> std::io::Result<String> {
    read_whole(std::fs::File::open(path)?)
}

fn read_whole(mut f: std::fs::File) -> std::io::Result<String> {
    use std::io::Read;
    let mut page = [0u8; 4096];
    let mut out: Vec<u8> = Vec::new();
    loop {
        match f.read(&mut page) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&page[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The read buffer of [`HostFs::reread`]: the kernel's page (a `seq_file` buffer's
/// smallest size).
const PAGE: usize = 4096;

/// A `pread` of a page that returns fewer bytes than this is taken as the end of the file,
/// without the `pread` that would return 0. The files reread are cgroupfs and procfs
/// `seq_file`s, whose read fills the caller's buffer until the end of the file, or until the
/// kernel's own buffer (a page at least) cannot take the next record: a short read ends at
/// the end unless the next record is longer than the page's unused part, and no record of
/// these files (a whole cgroup control file is one record; `cgroup.procs` and
/// `/proc/<pid>/net/dev` have a line per record) comes near half a page. Regular files
/// return short only at their end. The second `pread` costs as much as the first for a
/// small cgroup file (the kernel's `seq_file` start and stop, a lookup of the cgroup): a
/// stats request reads ~1000 of them.
pub const SHORT_READ_IS_END: usize = PAGE / 2;

/// The real host.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealHostFs;

impl HostFs for RealHostFs {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        read_pseudo_file(path)
    }
    fn write(&self, path: &Path, data: &str) -> std::io::Result<()> {
        std::fs::write(path, data)
    }
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(path)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn fs_type(&self, path: &Path) -> std::io::Result<i64> {
        let st = nix::sys::statfs::statfs(path).map_err(std::io::Error::from)?;
        #[allow(clippy::unnecessary_cast)]
        Ok(st.filesystem_type().0 as i64)
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_dir(path)
    }
    fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
        std::fs::read_link(path)
    }
    /// The directory is opened once and each file relative to it (`openat`): one path walk
    /// of a deep cgroupfs path instead of one per file.
    fn read_files(&self, dir: &Path, names: &[&str]) -> Vec<std::io::Result<String>> {
        match self.open_dir(None, dir) {
            Ok(d) => self.read_files_in(&d, names),
            Err(e) => names
                .iter()
                .map(|_| Err(std::io::Error::new(e.kind(), e.to_string())))
                .collect(),
        }
    }
    /// `open(O_PATH | O_DIRECTORY)`, relative to `parent` (`openat`) when given.
    fn open_dir(&self, parent: Option<&HostDir>, name: &Path) -> std::io::Result<HostDir> {
        use nix::fcntl::{OFlag, open, openat};
        use nix::sys::stat::Mode;
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = match parent {
            None => open(name, flags, Mode::empty()),
            Some(HostDir::Fd(p)) => openat(p, name, flags, Mode::empty()),
            Some(HostDir::Path(p)) => open(&p.join(name), flags, Mode::empty()),
        };
        Ok(HostDir::Fd(fd.map_err(std::io::Error::from)?))
    }
    fn read_files_in(&self, dir: &HostDir, names: &[&str]) -> Vec<std::io::Result<String>> {
        use nix::fcntl::{OFlag, openat};
        use nix::sys::stat::Mode;
        let dirfd = match dir {
            HostDir::Fd(fd) => fd,
            HostDir::Path(p) => return self.read_files(p, names),
        };
        names
            .iter()
            .map(|n| {
                let fd = openat(dirfd, *n, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())
                    .map_err(std::io::Error::from)?;
                read_whole(std::fs::File::from(fd))
            })
            .collect()
    }
    /// `openat(O_RDONLY)` relative to the directory.
    fn open_file_in(&self, dir: &HostDir, name: &str) -> std::io::Result<HostFile> {
        use nix::fcntl::{OFlag, openat};
        use nix::sys::stat::Mode;
        let fd = match dir {
            HostDir::Fd(fd) => openat(fd, name, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()),
            HostDir::Path(p) => nix::fcntl::open(
                &p.join(name),
                OFlag::O_RDONLY | OFlag::O_CLOEXEC,
                Mode::empty(),
            ),
        };
        Ok(HostFile::Fd(std::fs::File::from(
            fd.map_err(std::io::Error::from)?,
        )))
    }
    /// `pread` from offset 0 through a stack page until the end: no `open` nor `close`,
    /// and for content shorter than [`SHORT_READ_IS_END`] (nearly every cgroup file) a
    /// single `pread`.
    fn reread(&self, file: &HostFile) -> std::io::Result<String> {
        use std::os::unix::fs::FileExt;
        let f = match file {
            HostFile::Fd(f) => f,
            HostFile::Path(p) => return self.read_to_string(p),
        };
        let mut page = [0u8; PAGE];
        let mut out: Vec<u8> = Vec::new();
        loop {
            match f.read_at(&mut page, out.len() as u64) {
                Ok(0) => break,
                Ok(n) if n < SHORT_READ_IS_END => {
                    out.extend_from_slice(&page[..n]);
                    break;
                }
                Ok(n) => out.extend_from_slice(&page[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        String::from_utf8(out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
    /// `fstatat` (following a symbolic link, as [`Path::exists`]).
    fn exists_in(&self, dir: &HostDir, name: &str) -> bool {
        match dir {
            HostDir::Fd(fd) => {
                nix::sys::stat::fstatat(fd, name, nix::fcntl::AtFlags::empty()).is_ok()
            }
            HostDir::Path(p) => p.join(name).exists(),
        }
    }
}

/// A recording in-memory fake: files are a map; every write and mkdir is recorded;
/// paths listed in `deny_writes` fail with `PermissionDenied`.
#[derive(Debug, Default)]
pub struct FakeHostFs {
    state: Mutex<FakeState>,
}

#[derive(Debug, Default)]
struct FakeState {
    files: BTreeMap<PathBuf, String>,
    dirs: Vec<PathBuf>,
    fs_types: BTreeMap<PathBuf, i64>,
    links: BTreeMap<PathBuf, PathBuf>,
    deny_writes: Vec<PathBuf>,
    writes: Vec<(PathBuf, String)>,
    removed: Vec<PathBuf>,
}

impl FakeHostFs {
    fn with<R>(&self, f: impl FnOnce(&mut FakeState) -> R) -> R {
        match self.state.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }
    /// Adds a file.
    pub fn add_file(&self, path: impl Into<PathBuf>, content: impl Into<String>) {
        self.with(|s| s.files.insert(path.into(), content.into()));
    }
    /// Adds a symbolic link.
    pub fn add_link(&self, path: impl Into<PathBuf>, target: impl Into<PathBuf>) {
        self.with(|s| s.links.insert(path.into(), target.into()));
    }
    /// Sets the filesystem type reported for a path.
    pub fn set_fs_type(&self, path: impl Into<PathBuf>, magic: i64) {
        self.with(|s| s.fs_types.insert(path.into(), magic));
    }
    /// Makes writes to `path` fail with `PermissionDenied`.
    pub fn deny_writes(&self, path: impl Into<PathBuf>) {
        self.with(|s| s.deny_writes.push(path.into()));
    }
    /// Every write made, in order.
    pub fn writes(&self) -> Vec<(PathBuf, String)> {
        self.with(|s| s.writes.clone())
    }
    /// Every directory created (and not removed since), in order.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.with(|s| s.dirs.clone())
    }
    /// Adds a directory (and, implicitly, its parents).
    pub fn add_dir(&self, path: impl Into<PathBuf>) {
        self.with(|s| s.dirs.push(path.into()));
    }
    /// Every directory removed, in order.
    pub fn removed(&self) -> Vec<PathBuf> {
        self.with(|s| s.removed.clone())
    }
}

fn not_found(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl HostFs for FakeHostFs {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        self.with(|s| s.files.get(path).cloned().ok_or_else(|| not_found(path)))
    }
    fn write(&self, path: &Path, data: &str) -> std::io::Result<()> {
        self.with(|s| {
            if s.deny_writes.iter().any(|p| p == path) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "permission denied",
                ));
            }
            s.writes.push((path.to_path_buf(), data.to_string()));
            s.files.insert(path.to_path_buf(), data.to_string());
            Ok(())
        })
    }
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        self.with(|s| s.dirs.push(path.to_path_buf()));
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        self.with(|s| {
            s.files.contains_key(path)
                || s.dirs.iter().any(|d| d.starts_with(path))
                || s.fs_types.contains_key(path)
        })
    }
    fn fs_type(&self, path: &Path) -> std::io::Result<i64> {
        self.with(|s| s.fs_types.get(path).copied().ok_or_else(|| not_found(path)))
    }
    fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.with(|s| s.links.get(path).cloned().ok_or_else(|| not_found(path)))
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        self.with(|s| {
            let mut names: Vec<String> = s
                .dirs
                .iter()
                .filter_map(|d| d.strip_prefix(path).ok())
                .filter_map(|rest| rest.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if names.is_empty() && !s.dirs.iter().any(|d| d == path) {
                return Err(not_found(path));
            }
            names.sort();
            names.dedup();
            Ok(names)
        })
    }
    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        self.with(|s| {
            if s.dirs.iter().any(|d| d.starts_with(path) && d != path) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::DirectoryNotEmpty,
                    format!("{}: directory not empty", path.display()),
                ));
            }
            let before = s.dirs.len();
            s.dirs.retain(|d| d != path);
            if s.dirs.len() == before {
                return Err(not_found(path));
            }
            s.removed.push(path.to_path_buf());
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod read_tests {
    use super::*;

    #[test]
    fn real_reads_small_large_and_pseudo_files_whole() {
        let d = std::env::temp_dir().join(format!("krs-hostfs-read-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let big: String = (0..3000).map(|i| format!("{i}\n")).collect();
        std::fs::write(d.join("big"), &big).unwrap();
        std::fs::write(d.join("small"), "42\n").unwrap();
        assert_eq!(RealHostFs.read_to_string(&d.join("big")).unwrap(), big);
        assert_eq!(RealHostFs.read_to_string(&d.join("small")).unwrap(), "42\n");
        let stat = RealHostFs
            .read_to_string(Path::new("/proc/self/status"))
            .unwrap();
        assert!(stat.starts_with("Name:") && stat.ends_with('\n'), "{stat}");
        assert!(RealHostFs.read_to_string(&d.join("none")).is_err());
        let r = RealHostFs.read_files(&d, &["small", "none", "big"]);
        assert_eq!(r[0].as_deref().unwrap(), "42\n");
        assert_eq!(
            r[1].as_ref().unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        assert_eq!(r[2].as_deref().unwrap(), big);
        let gone = RealHostFs.read_files(&d.join("none"), &["a", "b"]);
        assert!(gone.iter().all(|r| r.is_err()) && gone.len() == 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// `reread` stops at a short read ([`SHORT_READ_IS_END`]): whole content at every size
    /// around the page and the threshold, content changed between rereads, and procfs
    /// `seq_file`s of many records (a page and more).
    #[test]
    fn reread_returns_whole_contents_around_the_short_read_threshold() {
        let d = std::env::temp_dir().join(format!("krs-hostfs-reread-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let dir = RealHostFs.open_dir(None, &d).unwrap();
        for len in [
            0,
            1,
            SHORT_READ_IS_END - 1,
            SHORT_READ_IS_END,
            PAGE - 1,
            PAGE,
            PAGE + 1,
        ]
        .into_iter()
        .chain([2 * PAGE + 7, 10_000])
        {
            let content: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            std::fs::write(d.join("f"), &content).unwrap();
            let f = RealHostFs.open_file_in(&dir, "f").unwrap();
            assert_eq!(RealHostFs.reread(&f).unwrap(), content, "length {len}");
            let shorter = &content[..len / 2];
            std::fs::write(d.join("f"), shorter).unwrap();
            assert_eq!(
                RealHostFs.reread(&f).unwrap(),
                shorter,
                "length {len}, rewritten"
            );
        }
        // A sleeping child's `smaps` (records of ~1 KiB, pages of them, a page's read
        // short of the page) and `maps` do not change while it sleeps.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let (smaps, maps) = (
            format!("/proc/{}/smaps", child.id()),
            format!("/proc/{}/maps", child.id()),
        );
        for file in [
            "/proc/self/mountinfo",
            "/proc/self/net/dev",
            "/proc/self/limits",
            &smaps,
            &maps,
        ] {
            let path = Path::new(file);
            let proc_dir = RealHostFs.open_dir(None, path.parent().unwrap()).unwrap();
            let name = path.file_name().unwrap().to_str().unwrap();
            let f = RealHostFs.open_file_in(&proc_dir, name).unwrap();
            // The child may still be starting: compared once the file reads the same
            // before and after the reread.
            let whole = (0..100)
                .find_map(|_| {
                    let before = std::fs::read_to_string(path).unwrap();
                    let reread = RealHostFs.reread(&f).unwrap();
                    let stable = before == std::fs::read_to_string(path).unwrap();
                    if !stable {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    stable.then(|| {
                        assert_eq!(reread, before, "{file}");
                        before
                    })
                })
                .unwrap();
            if file == smaps {
                assert!(whole.len() > 2 * PAGE, "{file}: {} bytes", whole.len());
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }
}
