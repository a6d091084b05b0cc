//! The filesystem operations the runtime manager performs, behind a trait so tests run
//! against an in-memory fake (upstream `kubecontainer.OSInterface`).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::subpath::{self, Subpath};

/// `statfs` magic of a tmpfs (`TMPFS_MAGIC`).
pub const TMPFS_MAGIC: i64 = 0x0102_1994;

/// `statfs` magic of a hugetlbfs (`HUGETLBFS_MAGIC`).
pub const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;

/// Kind of a file (upstream `hostutil.FileType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// A directory.
    Directory,
    /// A regular file.
    File,
    /// A unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else (fifo).
    Other,
}

/// Filesystem access used by the runtime manager.
pub trait OsInterface: Send + Sync {
    /// `os.MkdirAll` with mode 0755.
    fn mkdir_all(&self, path: &Path) -> io::Result<()>;
    /// Creates (or truncates) an empty file with mode 0666.
    fn create_file(&self, path: &Path) -> io::Result<()>;
    /// Reads a whole file as UTF-8.
    fn read_to_string(&self, path: &Path) -> io::Result<String>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Writes a whole file.
    fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()>;
    /// Opens a file for streaming reads (blocking I/O: call from a blocking task).
    fn open(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>>;
    /// Creates (or truncates) a file for streaming writes (blocking I/O: call from a
    /// blocking task); the data is complete once the writer was flushed and dropped.
    fn create(&self, path: &Path) -> io::Result<Box<dyn io::Write + Send>>;
    /// Creates a symlink at `link` pointing to `target`.
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()>;
    /// Removes a file or symlink.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Removes a directory tree.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Names of the entries of a directory.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;
    /// Renames a file.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// True if the path exists (following symlinks).
    fn exists(&self, path: &Path) -> bool;
    /// True if `path` is a directory (not following a symlink).
    fn is_dir(&self, path: &Path) -> bool;
    /// `rmdir`: removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// Whether `path` is a mount point: on another device than its parent (upstream
    /// `mount.IsLikelyNotMountPoint`, negated; bind mounts of the same filesystem look
    /// like plain directories, as upstream).
    fn is_mount_point(&self, path: &Path) -> io::Result<bool>;
    /// Removes `path` and everything below it without crossing into another filesystem
    /// (upstream `removeall.RemoveAllOneFilesystem`): a mount point below it is an error and
    /// nothing on it is touched.
    fn remove_all_one_filesystem(&self, path: &Path) -> io::Result<()>;
    /// Kind of `path`, following symlinks (`hostutil.GetFileType`).
    fn file_type(&self, path: &Path) -> io::Result<FileType>;
    /// Permission bits with setuid/setgid/sticky of `path`, following symlinks
    /// (`hostutil.GetMode`).
    fn get_mode(&self, path: &Path) -> io::Result<u32>;
    /// `chmod`.
    fn chmod(&self, path: &Path, mode: u32) -> io::Result<()>;
    /// Creates `path` with `mode` (the umask applies) unless it exists; never truncates
    /// (`os.OpenFile(path, O_CREATE, mode)`).
    fn create_file_if_missing(&self, path: &Path, mode: u32) -> io::Result<()>;
    /// `statfs` filesystem type of `path` (`TMPFS_MAGIC`, ...).
    fn statfs_type(&self, path: &Path) -> io::Result<i64>;
    /// `mount -t tmpfs -o <options> tmpfs <target>`.
    fn mount_tmpfs(&self, target: &Path, options: &str) -> io::Result<()>;
    /// Mounts a hugetlbfs (source `nodev`) on the directory `target` with `options`
    /// (`pagesize=2Mi`).
    fn mount_hugetlbfs(&self, target: &Path, options: &str) -> io::Result<()>;
    /// The options of the mount whose mount point is exactly `path` (upstream
    /// `mounter.List()`, the fourth field of `/proc/mounts`); not found: an error.
    fn mount_options(&self, path: &Path) -> io::Result<Vec<String>>;
    /// `umount <target>`.
    fn unmount(&self, target: &Path) -> io::Result<()>;
    /// `SetVolumeOwnership` (`pkg/volume/volume_linux.go`): group `fs_group` and group
    /// rw(x)/setgid bits on everything below `dir`, unless `policy` is `OnRootMismatch` and
    /// the root already matches.
    fn set_volume_ownership(
        &self,
        dir: &Path,
        fs_group: i64,
        policy: Option<&str>,
        read_only: bool,
    ) -> io::Result<()>;
    /// `subpath.SafeMakeDir`: creates `subdir` below `base` without leaving it.
    fn safe_make_dir(&self, subdir: &Path, base: &Path, perm: u32) -> io::Result<()>;
    /// `subpath.PrepareSafeSubpath`: the bind target to hand to the runtime for `subpath`.
    fn prepare_safe_subpath(&self, subpath: &Subpath) -> io::Result<PathBuf>;
    /// `subpath.CleanSubPaths`: unmounts and removes the subPath targets of a volume.
    fn clean_sub_paths(&self, pod_dir: &Path, volume_name: &str) -> io::Result<()>;
    /// `securejoin.SecureJoin`: `unsafe_path` below `root`, symlinks resolved as if `root`
    /// were `/` (see [`subpath::secure_join`]).
    fn secure_join(&self, root: &Path, unsafe_path: &str) -> io::Result<PathBuf>;
    /// Opens regular file `path` (a [`OsInterface::secure_join`] result) below `base` for
    /// reading, through no symlink (see [`subpath::open_regular_file_in`]).
    fn open_in_base(&self, path: &Path, base: &Path) -> io::Result<Box<dyn io::Read + Send>>;
}

/// Recursive removal that refuses to descend into anything on another device than `dev`.
fn remove_one_filesystem(path: &Path, dev: u64) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.dev() != dev {
        return Err(io::Error::other(format!(
            "cannot delete directory {}: it is a mount point",
            path.display()
        )));
    }
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    for entry in std::fs::read_dir(path)? {
        remove_one_filesystem(&entry?.path(), dev)?;
    }
    std::fs::remove_dir(path)
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealOs;

impl OsInterface for RealOs {
    fn mkdir_all(&self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(path)
    }

    fn create_file(&self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::File::create(path)?;
        // Like upstream, chmod so the umask does not matter.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        std::fs::write(path, contents)
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        Ok(Box::new(io::BufReader::new(std::fs::File::open(path)?)))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn io::Write + Send>> {
        Ok(Box::new(io::BufWriter::new(std::fs::File::create(path)?)))
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn is_dir(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }

    fn is_mount_point(&self, path: &Path) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            return Ok(false);
        }
        let parent = path.parent().unwrap_or(Path::new("/"));
        Ok(std::fs::metadata(parent)?.dev() != meta.dev())
    }

    fn remove_all_one_filesystem(&self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let parent = path.parent().unwrap_or(Path::new("/"));
        let dev = std::fs::metadata(parent)?.dev();
        remove_one_filesystem(path, dev)
    }

    fn file_type(&self, path: &Path) -> io::Result<FileType> {
        use std::os::unix::fs::FileTypeExt;
        let t = std::fs::metadata(path)?.file_type();
        Ok(if t.is_dir() {
            FileType::Directory
        } else if t.is_file() {
            FileType::File
        } else if t.is_socket() {
            FileType::Socket
        } else if t.is_char_device() {
            FileType::CharDevice
        } else if t.is_block_device() {
            FileType::BlockDevice
        } else {
            FileType::Other
        })
    }

    fn get_mode(&self, path: &Path) -> io::Result<u32> {
        use std::os::unix::fs::PermissionsExt;
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
    }

    fn chmod(&self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }

    fn create_file_if_missing(&self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(mode)
            .open(path)
            .map(drop)
    }

    fn statfs_type(&self, path: &Path) -> io::Result<i64> {
        let st = nix::sys::statfs::statfs(path)?;
        #[allow(clippy::unnecessary_cast)]
        Ok(st.filesystem_type().0 as i64)
    }

    fn mount_tmpfs(&self, target: &Path, options: &str) -> io::Result<()> {
        let data = (!options.is_empty()).then_some(options);
        nix::mount::mount(
            Some("tmpfs"),
            target,
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            data,
        )?;
        Ok(())
    }

    fn mount_hugetlbfs(&self, target: &Path, options: &str) -> io::Result<()> {
        nix::mount::mount(
            Some("nodev"),
            target,
            Some("hugetlbfs"),
            nix::mount::MsFlags::empty(),
            Some(options),
        )?;
        Ok(())
    }

    fn mount_options(&self, path: &Path) -> io::Result<Vec<String>> {
        let mounts = std::fs::read_to_string("/proc/self/mounts")?;
        mount_options_in(&mounts, path).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("mount point for {} not found", path.display()),
            )
        })
    }

    fn unmount(&self, target: &Path) -> io::Result<()> {
        nix::mount::umount(target)?;
        Ok(())
    }

    fn set_volume_ownership(
        &self,
        dir: &Path,
        fs_group: i64,
        policy: Option<&str>,
        read_only: bool,
    ) -> io::Result<()> {
        crate::volume_ownership::set_volume_ownership(dir, fs_group, policy, read_only)
    }

    fn safe_make_dir(&self, subdir: &Path, base: &Path, perm: u32) -> io::Result<()> {
        subpath::safe_make_dir(subdir, base, perm)
    }

    fn prepare_safe_subpath(&self, subpath: &Subpath) -> io::Result<PathBuf> {
        subpath::do_bind_subpath(subpath)
    }

    fn secure_join(&self, root: &Path, unsafe_path: &str) -> io::Result<PathBuf> {
        // The volume root is the kubelet's own path: resolved once, so that
        // `open_in_base` (which refuses any symlink) can walk from it.
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        subpath::secure_join_host(&root, unsafe_path)
    }

    fn open_in_base(&self, path: &Path, base: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        let file = subpath::open_regular_file_in(path, &base)?;
        Ok(Box::new(io::BufReader::new(file)))
    }

    fn clean_sub_paths(&self, pod_dir: &Path, volume_name: &str) -> io::Result<()> {
        subpath::do_clean_sub_paths(pod_dir, volume_name)
    }
}

/// One entry of [`FakeOs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FakeEntry {
    /// A directory.
    Dir,
    /// A regular file with contents.
    File(Vec<u8>),
    /// A symlink to a target.
    Symlink(PathBuf),
    /// A socket or device node.
    Special(FileType),
}

/// The options of the last mount at `path` in `/proc/mounts` text (fields: source,
/// mount point with `\040`-style octal escapes, type, options).
pub fn mount_options_in(mounts: &str, path: &Path) -> Option<Vec<String>> {
    let want = path.to_string_lossy();
    mounts.lines().rev().find_map(|line| {
        let mut f = line.split_whitespace();
        let (_, point, _, opts) = (f.next()?, f.next()?, f.next()?, f.next()?);
        (unescape_octal(point) == want).then(|| opts.split(',').map(String::from).collect())
    })
}

/// Undoes the kernel's `\ooo` escapes of spaces, tabs, newlines and backslashes.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            out.push(u8::try_from(v).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// In-memory filesystem recording every path it holds; parents are implied.
#[derive(Debug, Default)]
pub struct FakeOs {
    entries: Arc<Mutex<BTreeMap<PathBuf, FakeEntry>>>,
    mounts: Mutex<Vec<PathBuf>>,
    /// Mode and group set through `chmod`/`create_file_if_missing`/`set_volume_ownership`.
    attrs: Mutex<BTreeMap<PathBuf, (u32, Option<i64>)>>,
    /// tmpfs mounts and their options.
    tmpfs: Mutex<BTreeMap<PathBuf, String>>,
    /// hugetlbfs mounts and their options.
    hugetlbfs: Mutex<BTreeMap<PathBuf, String>>,
}

impl FakeOs {
    /// An empty fake filesystem.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<PathBuf, FakeEntry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry at `path`, if any.
    pub fn entry(&self, path: &Path) -> Option<FakeEntry> {
        self.lock().get(path).cloned()
    }

    /// All paths currently present, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock().keys().cloned().collect()
    }

    /// Makes `path` (a directory) a mount point.
    pub fn mount(&self, path: &Path) {
        self.mkdir_all(path).unwrap_or_default();
        self.mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path.to_path_buf());
    }

    /// Puts `entry` at `path` (parents are implied).
    pub fn insert(&self, path: &Path, entry: FakeEntry) {
        self.lock().insert(path.to_path_buf(), entry);
    }

    /// Mode and group of `path` as set through this fake (`None`: never set).
    pub fn attrs(&self, path: &Path) -> Option<(u32, Option<i64>)> {
        self.attrs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .copied()
    }

    /// The options of the tmpfs mounted at `path`, if any.
    pub fn tmpfs_options(&self, path: &Path) -> Option<String> {
        self.tmpfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .cloned()
    }

    /// The options of the hugetlbfs mounted at `path`, if any.
    pub fn hugetlbfs_options(&self, path: &Path) -> Option<String> {
        self.hugetlbfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .cloned()
    }

    /// The mount points, in mount order.
    pub fn mount_points(&self) -> Vec<PathBuf> {
        self.mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `path` with every symlink resolved (`filepath.EvalSymlinks`); missing: not found.
    pub fn eval_symlinks(&self, path: &Path) -> io::Result<PathBuf> {
        let mut resolved = PathBuf::from("/");
        let mut pending: Vec<std::ffi::OsString> = path
            .components()
            .rev()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_os_string()),
                std::path::Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        let mut hops = 0;
        while let Some(c) = pending.pop() {
            if c == ".." {
                resolved.pop();
                continue;
            }
            let next = resolved.join(&c);
            match self.entry(&next) {
                None => return Err(not_found(&next)),
                Some(FakeEntry::Symlink(target)) => {
                    hops += 1;
                    if hops > 40 {
                        return Err(io::Error::other("too many levels of symbolic links"));
                    }
                    if target.is_absolute() {
                        resolved = PathBuf::from("/");
                    }
                    for tc in target.components().rev() {
                        match tc {
                            std::path::Component::Normal(n) => pending.push(n.to_os_string()),
                            std::path::Component::ParentDir => pending.push("..".into()),
                            _ => {}
                        }
                    }
                }
                Some(_) => resolved = next,
            }
        }
        Ok(resolved)
    }

    fn set_attrs(&self, path: &Path, mode: Option<u32>, gid: Option<i64>) {
        let default = self.default_mode(path);
        let mut a = self.attrs.lock().unwrap_or_else(PoisonError::into_inner);
        let e = a.entry(path.to_path_buf()).or_insert((default, None));
        if let Some(m) = mode {
            e.0 = m;
        }
        if gid.is_some() {
            e.1 = gid;
        }
    }

    fn default_mode(&self, path: &Path) -> u32 {
        if self.is_dir(path) { 0o755 } else { 0o644 }
    }

    fn mounted_below(&self, path: &Path) -> Option<PathBuf> {
        self.mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|m| m.starts_with(path))
            .cloned()
    }
}

/// Appends to a [`FakeOs`] file as it is written.
struct FakeWriter {
    entries: Arc<Mutex<BTreeMap<PathBuf, FakeEntry>>>,
    path: PathBuf,
}

impl io::Write for FakeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match e.get_mut(&self.path) {
            Some(FakeEntry::File(data)) => {
                data.extend_from_slice(buf);
                Ok(buf.len())
            }
            _ => Err(not_found(&self.path)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: not found", path.display()),
    )
}

impl OsInterface for FakeOs {
    fn mkdir_all(&self, path: &Path) -> io::Result<()> {
        let mut e = self.lock();
        for p in path.ancestors() {
            e.entry(p.to_path_buf()).or_insert(FakeEntry::Dir);
        }
        Ok(())
    }

    fn create_file(&self, path: &Path) -> io::Result<()> {
        self.write_file(path, b"")
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        match self.lock().get(path) {
            Some(FakeEntry::File(b)) => Ok(String::from_utf8_lossy(b).into_owned()),
            _ => Err(not_found(path)),
        }
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.lock().get(path) {
            Some(FakeEntry::File(b)) => Ok(b.clone()),
            _ => Err(not_found(path)),
        }
    }

    fn write_file(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        self.lock()
            .insert(path.to_path_buf(), FakeEntry::File(contents.to_vec()));
        Ok(())
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        Ok(Box::new(io::Cursor::new(self.read(path)?)))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn io::Write + Send>> {
        self.write_file(path, b"")?;
        Ok(Box::new(FakeWriter {
            entries: self.entries.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        self.lock()
            .insert(link.to_path_buf(), FakeEntry::Symlink(target.to_path_buf()));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut e = self.lock();
        e.retain(|p, _| !p.starts_with(path));
        Ok(())
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let e = self.lock();
        if !e.contains_key(path) {
            return Err(not_found(path));
        }
        Ok(e.keys()
            .filter(|p| p.parent() == Some(path))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        match self.lock().get(path) {
            Some(FakeEntry::File(b)) => Ok(b.len() as u64),
            _ => Err(not_found(path)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut e = self.lock();
        let v = e.remove(from).ok_or_else(|| not_found(from))?;
        e.insert(to.to_path_buf(), v);
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.lock().contains_key(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.lock().get(path) == Some(&FakeEntry::Dir)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut e = self.lock();
        if e.get(path) != Some(&FakeEntry::Dir) {
            return Err(not_found(path));
        }
        if e.keys().any(|p| p.parent() == Some(path)) {
            return Err(io::Error::new(
                io::ErrorKind::DirectoryNotEmpty,
                format!("{}: directory not empty", path.display()),
            ));
        }
        e.remove(path);
        Ok(())
    }

    fn is_mount_point(&self, path: &Path) -> io::Result<bool> {
        if !self.exists(path) {
            return Err(not_found(path));
        }
        Ok(self.mounted_below(path).is_some_and(|m| m == path))
    }

    fn remove_all_one_filesystem(&self, path: &Path) -> io::Result<()> {
        if let Some(m) = self.mounted_below(path) {
            return Err(io::Error::other(format!(
                "cannot delete directory {}: it is a mount point",
                m.display()
            )));
        }
        self.remove_dir_all(path)
    }

    fn file_type(&self, path: &Path) -> io::Result<FileType> {
        let real = self.eval_symlinks(path)?;
        Ok(match self.entry(&real) {
            Some(FakeEntry::Dir) => FileType::Directory,
            Some(FakeEntry::File(_)) => FileType::File,
            Some(FakeEntry::Special(t)) => t,
            _ => return Err(not_found(path)),
        })
    }

    fn get_mode(&self, path: &Path) -> io::Result<u32> {
        let real = self.eval_symlinks(path)?;
        Ok(self
            .attrs(&real)
            .map_or_else(|| self.default_mode(&real), |(m, _)| m))
    }

    fn chmod(&self, path: &Path, mode: u32) -> io::Result<()> {
        let real = self.eval_symlinks(path)?;
        self.set_attrs(&real, Some(mode), None);
        Ok(())
    }

    fn create_file_if_missing(&self, path: &Path, mode: u32) -> io::Result<()> {
        if self.entry(path).is_some() {
            return Ok(());
        }
        match path.parent() {
            Some(p) if self.is_dir(p) => {}
            _ => return Err(not_found(path)),
        }
        self.write_file(path, b"")?;
        self.set_attrs(path, Some(mode), None);
        Ok(())
    }

    fn statfs_type(&self, path: &Path) -> io::Result<i64> {
        if !self.exists(path) {
            return Err(not_found(path));
        }
        let tmpfs = self.tmpfs.lock().unwrap_or_else(PoisonError::into_inner);
        let hugetlbfs = self
            .hugetlbfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(if tmpfs.keys().any(|m| path.starts_with(m)) {
            TMPFS_MAGIC
        } else if hugetlbfs.keys().any(|m| path.starts_with(m)) {
            HUGETLBFS_MAGIC
        } else {
            0xEF53
        })
    }

    fn mount_tmpfs(&self, target: &Path, options: &str) -> io::Result<()> {
        if !self.is_dir(target) {
            return Err(not_found(target));
        }
        self.mount(target);
        self.tmpfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(target.to_path_buf(), options.to_string());
        Ok(())
    }

    fn mount_hugetlbfs(&self, target: &Path, options: &str) -> io::Result<()> {
        if !self.is_dir(target) {
            return Err(not_found(target));
        }
        self.mount(target);
        self.hugetlbfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(target.to_path_buf(), options.to_string());
        Ok(())
    }

    fn mount_options(&self, path: &Path) -> io::Result<Vec<String>> {
        let opts = |m: &Mutex<BTreeMap<PathBuf, String>>| {
            m.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(path)
                .map(|o| o.split(',').map(String::from).collect())
        };
        let mut found = opts(&self.tmpfs).or_else(|| opts(&self.hugetlbfs));
        if found.is_none() && self.mount_points().iter().any(|m| m == path) {
            found = Some(vec!["rw".to_string()]);
        }
        found.ok_or_else(|| not_found(path))
    }

    fn unmount(&self, target: &Path) -> io::Result<()> {
        let mut mounts = self.mounts.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(i) = mounts.iter().rposition(|m| m == target) else {
            return Err(io::Error::other(format!(
                "{}: not mounted",
                target.display()
            )));
        };
        mounts.remove(i);
        self.tmpfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(target);
        self.hugetlbfs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(target);
        Ok(())
    }

    fn set_volume_ownership(
        &self,
        dir: &Path,
        fs_group: i64,
        policy: Option<&str>,
        read_only: bool,
    ) -> io::Result<()> {
        let root_ok = self.attrs(dir).is_some_and(|(m, g)| {
            let want = if read_only { 0o440 } else { 0o660 } | 0o110;
            g == Some(fs_group) && m & want == want && m & 0o2000 != 0
        });
        if policy == Some("OnRootMismatch") && root_ok {
            return Ok(());
        }
        let paths: Vec<PathBuf> = self
            .paths()
            .into_iter()
            .filter(|p| p.starts_with(dir))
            .collect();
        for p in paths {
            let (mode, entry) = (self.get_mode(&p).unwrap_or(0), self.entry(&p));
            let mask = match entry {
                Some(FakeEntry::Symlink(_)) => {
                    self.set_attrs(&p, None, Some(fs_group));
                    continue;
                }
                Some(FakeEntry::Dir) => (if read_only { 0o440 } else { 0o660 }) | 0o2110,
                _ => {
                    if read_only {
                        0o440
                    } else {
                        0o660
                    }
                }
            };
            self.set_attrs(&p, Some(mode | mask), Some(fs_group));
        }
        Ok(())
    }

    fn safe_make_dir(&self, subdir: &Path, base: &Path, perm: u32) -> io::Result<()> {
        let base = self.eval_symlinks(base)?;
        let full = base.join(subdir);
        // The longest existing prefix, symlinks resolved, must stay inside the base.
        let mut existing = full.clone();
        while self.entry(&existing).is_none() {
            if !existing.pop() {
                break;
            }
        }
        let real = self.eval_symlinks(&existing)?;
        if !subpath::path_within_base(&real, &base) {
            return Err(io::Error::other(format!(
                "path {} is outside of allowed base {}",
                real.display(),
                base.display()
            )));
        }
        if let Some(FakeEntry::Symlink(_)) = self.entry(&full) {
            return Err(io::Error::other("cannot create directory: file exists"));
        }
        let rest = full.strip_prefix(&existing).unwrap_or(Path::new(""));
        let mut cur = real;
        for c in rest.components() {
            cur = cur.join(c);
            self.mkdir_all(&cur)?;
            self.set_attrs(&cur, Some(perm), None);
        }
        Ok(())
    }

    fn prepare_safe_subpath(&self, sp: &Subpath) -> io::Result<PathBuf> {
        let volume_path = self.eval_symlinks(&sp.volume_path)?;
        let path = self.eval_symlinks(&sp.path)?;
        if !subpath::path_within_base(&path, &volume_path) {
            return Err(io::Error::other(format!(
                "subpath {path:?} not within volume path {volume_path:?}"
            )));
        }
        let target = subpath::subpath_bind_target(sp);
        if !self.mount_points().contains(&target) {
            if self.is_dir(&path) {
                self.mount(&target);
            } else {
                if let Some(parent) = target.parent() {
                    self.mkdir_all(parent)?;
                }
                self.write_file(&target, b"")?;
                self.mounts
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(target.clone());
            }
        }
        Ok(target)
    }

    fn secure_join(&self, root: &Path, unsafe_path: &str) -> io::Result<PathBuf> {
        subpath::secure_join(root, unsafe_path, &|p| match self.entry(p) {
            Some(FakeEntry::Symlink(target)) => Ok(Some(target)),
            _ => Ok(None),
        })
    }

    fn open_in_base(&self, path: &Path, base: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        // As `do_safe_open`: no component below `base` may be a symlink.
        let below = path.strip_prefix(base).map_err(|_| {
            io::Error::other(format!(
                "path {} is outside of allowed base {}",
                path.display(),
                base.display()
            ))
        })?;
        let mut current = base.to_path_buf();
        for c in below.components() {
            current.push(c);
            if let Some(FakeEntry::Symlink(_)) = self.entry(&current) {
                return Err(io::Error::other(format!(
                    "unexpected symlink found {}",
                    current.display()
                )));
            }
        }
        match self.entry(path) {
            Some(FakeEntry::File(_)) => self.open(path),
            Some(_) => Err(io::Error::other(format!(
                "{} is not a regular file",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }

    fn clean_sub_paths(&self, pod_dir: &Path, volume_name: &str) -> io::Result<()> {
        let dir = pod_dir
            .join(subpath::CONTAINER_SUBPATH_DIRECTORY_NAME)
            .join(volume_name);
        self.mounts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|m| !m.starts_with(&dir));
        self.remove_dir_all(&dir)?;
        let parent = pod_dir.join(subpath::CONTAINER_SUBPATH_DIRECTORY_NAME);
        if self.read_dir(&parent).is_ok_and(|e| e.is_empty()) {
            self.remove_dir(&parent)?;
        }
        Ok(())
    }
}
