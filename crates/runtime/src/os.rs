//! The filesystem operations the runtime manager performs, behind a trait so tests run
//! against an in-memory fake (upstream `kubecontainer.OSInterface`).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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
}

/// In-memory filesystem recording every path it holds; parents are implied.
#[derive(Debug, Default)]
pub struct FakeOs {
    entries: Arc<Mutex<BTreeMap<PathBuf, FakeEntry>>>,
    mounts: Mutex<Vec<PathBuf>>,
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
}
