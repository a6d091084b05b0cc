//! Filesystem access of the file source, behind [`ManifestFs`] so the scan and watch logic
//! can run against [`FakeFs`] in unit tests. [`RealFs`] uses `std::fs` and inotify
//! (`file_linux.go` uses fsnotify, which is inotify on Linux).

use futures::{Stream, StreamExt};
use inotify::{EventMask, Inotify, WatchMask};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use tokio::sync::mpsc;

/// What a path is, after following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    /// A socket, FIFO, device...
    Other,
}

/// One item per relevant change; an error means the watch is lost and must be re-created.
pub type ChangeStream = Pin<Box<dyn Stream<Item = io::Result<()>> + Send>>;

/// The filesystem operations the file source needs.
pub trait ManifestFs: Send + Sync + 'static {
    /// The kind of `path`, following symlinks (a symlink loop is an `ELOOP` error).
    fn kind(&self, path: &Path) -> io::Result<EntryKind>;
    /// The names of a directory's entries, in no particular order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<OsString>>;
    /// Reads at most `limit` bytes of a file.
    fn read_at_most(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>>;
    /// Watches directory `dir`; when `only` is set, only changes to that entry count.
    /// Changes to dot-files never count.
    fn watch(&self, dir: &Path, only: Option<OsString>) -> io::Result<ChangeStream>;
}

/// The real filesystem, watched with inotify.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

const WATCH_MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::DELETE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF);

impl ManifestFs for RealFs {
    fn kind(&self, path: &Path) -> io::Result<EntryKind> {
        let meta = std::fs::metadata(path)?;
        Ok(if meta.is_dir() {
            EntryKind::Dir
        } else if meta.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        })
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        std::fs::read_dir(path)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect()
    }

    fn read_at_most(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(path)?;
        let mut data = Vec::new();
        let limit = u64::try_from(limit).unwrap_or(u64::MAX);
        file.take(limit).read_to_end(&mut data)?;
        Ok(data)
    }

    fn watch(&self, dir: &Path, only: Option<OsString>) -> io::Result<ChangeStream> {
        let inotify = Inotify::init()?;
        inotify.watches().add(dir, WATCH_MASK)?;
        let events = inotify.into_event_stream(vec![0u8; 4096])?;
        let changes = events.filter_map(move |event| {
            let change = match event {
                Err(e) => Some(Err(e)),
                Ok(e) => classify(e.mask, e.name.as_deref(), only.as_deref()),
            };
            std::future::ready(change)
        });
        Ok(Box::pin(changes))
    }
}

fn classify(
    mask: EventMask,
    name: Option<&std::ffi::OsStr>,
    only: Option<&std::ffi::OsStr>,
) -> Option<io::Result<()>> {
    if mask.intersects(EventMask::IGNORED | EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
        return Some(Err(io::Error::other(
            "watched directory was removed or moved",
        )));
    }
    if mask.contains(EventMask::Q_OVERFLOW) {
        return Some(Ok(()));
    }
    let name = name?;
    if name.as_encoded_bytes().starts_with(b".") {
        return None;
    }
    match only {
        Some(only) if only != name => None,
        _ => Some(Ok(())),
    }
}

/// One entry of [`FakeFs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeEntry {
    Dir,
    File(Vec<u8>),
    Other,
    /// `kind` fails with this error (a symlink loop, a permission problem...).
    Broken(io::ErrorKind, String),
    /// `kind` says it is a file but reading it fails.
    Unreadable(io::ErrorKind, String),
}

#[derive(Default)]
struct FakeState {
    entries: BTreeMap<PathBuf, FakeEntry>,
    reads: Vec<PathBuf>,
    watches: Vec<(PathBuf, Option<OsString>)>,
    watchers: Vec<mpsc::UnboundedSender<io::Result<()>>>,
    fail_watch: bool,
}

/// An in-memory filesystem that records reads and watches; tests fire changes with
/// [`FakeFs::notify`].
#[derive(Default)]
pub struct FakeFs(Mutex<FakeState>);

impl FakeFs {
    fn with<R>(&self, f: impl FnOnce(&mut FakeState) -> R) -> R {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Adds or replaces an entry.
    pub fn set(&self, path: impl Into<PathBuf>, entry: FakeEntry) {
        self.with(|s| s.entries.insert(path.into(), entry));
    }

    /// Adds or replaces a file.
    pub fn write(&self, path: impl Into<PathBuf>, data: impl Into<Vec<u8>>) {
        self.set(path, FakeEntry::File(data.into()));
    }

    pub fn remove(&self, path: impl AsRef<Path>) {
        self.with(|s| s.entries.remove(path.as_ref()));
    }

    /// The files read so far, in order.
    pub fn reads(&self) -> Vec<PathBuf> {
        self.with(|s| s.reads.clone())
    }

    /// The watches created so far: (directory, entry filter).
    pub fn watches(&self) -> Vec<(PathBuf, Option<OsString>)> {
        self.with(|s| s.watches.clone())
    }

    /// Makes further `watch` calls fail.
    pub fn fail_watch(&self, fail: bool) {
        self.with(|s| s.fail_watch = fail);
    }

    /// Reports a change to every live watch.
    pub fn notify(&self) {
        self.with(|s| s.watchers.retain(|w| w.send(Ok(())).is_ok()));
    }

    /// Breaks every live watch (as if the directory was removed).
    pub fn break_watches(&self) {
        self.with(|s| {
            for w in s.watchers.drain(..) {
                let _ = w.send(Err(io::Error::other("watch broken")));
            }
        });
    }

    fn entry(&self, path: &Path) -> io::Result<FakeEntry> {
        self.with(|s| s.entries.get(path).cloned()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "No such file or directory (os error 2)",
            )
        })
    }
}

impl ManifestFs for FakeFs {
    fn kind(&self, path: &Path) -> io::Result<EntryKind> {
        match self.entry(path)? {
            FakeEntry::Dir => Ok(EntryKind::Dir),
            FakeEntry::File(_) | FakeEntry::Unreadable(..) => Ok(EntryKind::File),
            FakeEntry::Other => Ok(EntryKind::Other),
            FakeEntry::Broken(kind, msg) => Err(io::Error::new(kind, msg)),
        }
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        if self.entry(path)? != FakeEntry::Dir {
            return Err(io::Error::other("Not a directory (os error 20)"));
        }
        Ok(self.with(|s| {
            s.entries
                .keys()
                .filter(|p| p.parent() == Some(path))
                .filter_map(|p| p.file_name().map(OsString::from))
                .collect()
        }))
    }

    fn read_at_most(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        self.with(|s| s.reads.push(path.to_path_buf()));
        match self.entry(path)? {
            FakeEntry::File(data) => Ok(data[..data.len().min(limit)].to_vec()),
            FakeEntry::Unreadable(kind, msg) | FakeEntry::Broken(kind, msg) => {
                Err(io::Error::new(kind, msg))
            }
            FakeEntry::Dir | FakeEntry::Other => Err(io::Error::other("not a regular file")),
        }
    }

    fn watch(&self, dir: &Path, only: Option<OsString>) -> io::Result<ChangeStream> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.with(|s| {
            if s.fail_watch {
                return Err(io::Error::other("inotify unavailable"));
            }
            s.watches.push((dir.to_path_buf(), only));
            s.watchers.push(tx);
            Ok(())
        })?;
        Ok(Box::pin(tokio_stream_from(rx)))
    }
}

fn tokio_stream_from(
    mut rx: mpsc::UnboundedReceiver<io::Result<()>>,
) -> impl Stream<Item = io::Result<()>> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn classify_filters_dot_files_and_other_entries() {
        let name = Some(std::ffi::OsStr::new("pod.yaml"));
        assert!(matches!(
            classify(EventMask::CLOSE_WRITE, name, None),
            Some(Ok(()))
        ));
        assert!(classify(EventMask::CREATE, Some(std::ffi::OsStr::new(".swp")), None).is_none());
        let other = Some(std::ffi::OsStr::new("other.yaml"));
        assert!(classify(EventMask::CREATE, other, name).is_none());
        assert!(matches!(
            classify(EventMask::DELETE, name, name),
            Some(Ok(()))
        ));
        assert!(matches!(
            classify(EventMask::IGNORED, None, None),
            Some(Err(_))
        ));
        assert!(matches!(
            classify(EventMask::Q_OVERFLOW, None, None),
            Some(Ok(()))
        ));
    }

    #[test]
    fn real_fs_reads_at_most_the_limit_and_reports_loops() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(RealFs.read_at_most(&f, 4).unwrap(), b"0123");
        assert_eq!(RealFs.kind(&f).unwrap(), EntryKind::File);
        assert_eq!(RealFs.kind(dir.path()).unwrap(), EntryKind::Dir);
        let a = dir.path().join("a");
        std::os::unix::fs::symlink(dir.path().join("b"), &a).unwrap();
        std::os::unix::fs::symlink(&a, dir.path().join("b")).unwrap();
        let err = RealFs.kind(&a).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(40), "{err}");
        let mut names = RealFs.list_dir(dir.path()).unwrap();
        names.sort();
        assert_eq!(names, ["a", "b", "f"]);
    }

    #[tokio::test]
    async fn real_fs_watch_reports_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut changes = RealFs.watch(dir.path(), None).unwrap();
        std::fs::write(dir.path().join(".hidden"), b"x").unwrap();
        std::fs::write(dir.path().join("pod.yaml"), b"x").unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), changes.next()).await;
        assert!(matches!(got, Ok(Some(Ok(())))), "{got:?}");
    }
}
