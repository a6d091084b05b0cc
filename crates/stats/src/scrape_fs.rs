//! The cgroup directories and files the stats requests read, kept open from one request to
//! the next (kubelet-rs's own; upstream reads the cgroups in cAdvisor's housekeeping): a
//! [`HostFs`] over the host's that opens each directory relative to its parent's open
//! descriptor ([`HostFs::open_dir`]) and each file once ([`HostFs::open_file_in`]), then
//! reads the file again from offset 0 on every request ([`HostFs::reread`]: a cgroupfs file
//! is generated anew on each read from its start). A scrape of 100 pods so costs a `pread`
//! per cgroup file instead of an `openat`, a `read` and a `close`.
//!
//! What is kept is what the requests read, and only as long as they read it: an entry not
//! used for [`KEEP_FOR`] is closed when a request begins ([`ScrapeFs::begin`]). A cgroup
//! removed since (a container gone, or a cgroup removed and made again under the same path)
//! fails its reads (`ENODEV`, and `ENOENT` relative to its directory's descriptor): the
//! entries are dropped and the path opened afresh once, so no figure of a removed cgroup is
//! ever served. A file that a live directory lacks (`memory.memsw.*` without swap
//! accounting) is remembered as absent for [`ABSENT_FOR`]. At most [`MAX_KEPT`] descriptors are kept, and at
//! most a quarter of the process's open-file limit; past that, files are opened and closed
//! per read as before.
//!
//! A file can also be kept under a key of its own rather than its path
//! ([`ScrapeFs::read_keyed`]): a ready sandbox's `/proc/<pid>/net/dev`, under the sandbox's ID.
//! Such a descriptor holds the sandbox's network namespace: after the sandbox is gone, the
//! namespace (by then without the pod's interfaces) is freed when the entry is closed, by the
//! first request that begins [`KEEP_FOR`] after its last read.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubelet_cm::{HostDir, HostFile, HostFs};

/// An entry not used by any request for this long is closed.
pub const KEEP_FOR: Duration = Duration::from_secs(120);

/// A file found absent is looked for again after this long (on cgroup v2 a controller's
/// files appear when the parent enables it, after the cgroup was made).
pub const ABSENT_FOR: Duration = Duration::from_secs(10);

/// Descriptors (directories and files) kept at most.
pub const MAX_KEPT: usize = 4096;

/// A kept file: open, or known to be absent from its (live) directory.
#[derive(Clone)]
enum FileEntry {
    Open(Arc<Mutex<HostFile>>),
    /// Found absent at this time.
    Absent(Instant),
}

struct Kept<T> {
    value: T,
    used: Instant,
}

/// Keyed by the path's bytes (`Path`'s own hash goes component by component).
struct Cache {
    now: Instant,
    budget: usize,
    dirs: HashMap<OsString, Kept<Arc<HostDir>>>,
    files: HashMap<OsString, Kept<FileEntry>>,
    /// Entries of `files` that hold a descriptor.
    open_files: usize,
}

impl Cache {
    fn has_room(&self) -> bool {
        self.dirs.len() + self.open_files < self.budget
    }

    fn drop_file(&mut self, key: &std::ffi::OsStr) {
        if let Some(Kept {
            value: FileEntry::Open(_),
            ..
        }) = self.files.remove(key)
        {
            self.open_files -= 1;
        }
    }
}

/// See the module doc.
pub struct ScrapeFs {
    host: Arc<dyn HostFs>,
    /// The budget given, or `None`: the open-file limit's quarter, read when a request begins
    /// (the kubelet raises its limit after the provider is made).
    fixed_budget: Option<usize>,
    cache: Mutex<Cache>,
}

/// The open-file limit's quarter (at most [`MAX_KEPT`]).
fn budget_from_limit() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(soft, _)| soft);
    usize::try_from(soft / 4).map_or(MAX_KEPT, |b| b.min(MAX_KEPT))
}

impl ScrapeFs {
    /// Over `host`, nothing open yet; the budget from the open-file limit.
    pub fn new(host: Arc<dyn HostFs>) -> Self {
        Self::make(host, None)
    }

    /// Over `host`, keeping at most `budget` descriptors.
    pub fn with_budget(host: Arc<dyn HostFs>, budget: usize) -> Self {
        Self::make(host, Some(budget))
    }

    fn make(host: Arc<dyn HostFs>, fixed_budget: Option<usize>) -> Self {
        ScrapeFs {
            host,
            fixed_budget,
            cache: Mutex::new(Cache {
                now: Instant::now(),
                budget: fixed_budget.unwrap_or_else(budget_from_limit),
                dirs: HashMap::new(),
                files: HashMap::new(),
                open_files: 0,
            }),
        }
    }

    /// A request begins at `now`: what no request used for [`KEEP_FOR`] is closed.
    pub fn begin(&self, now: Instant) {
        let budget = self.fixed_budget.unwrap_or_else(budget_from_limit);
        let Ok(mut c) = self.cache.lock() else { return };
        c.now = now;
        c.budget = budget;
        let fresh = |used: Instant| now.saturating_duration_since(used) < KEEP_FOR;
        c.dirs.retain(|_, k| fresh(k.used));
        c.files.retain(|_, k| {
            fresh(k.used)
                && !matches!(k.value, FileEntry::Absent(since)
                    if now.saturating_duration_since(since) >= ABSENT_FOR)
        });
        c.open_files = c
            .files
            .values()
            .filter(|k| matches!(k.value, FileEntry::Open(_)))
            .count();
    }

    /// How many descriptors are kept (directories and files).
    pub fn open_count(&self) -> usize {
        self.cache
            .lock()
            .map(|c| c.dirs.len() + c.open_files)
            .unwrap_or_default()
    }

    /// The kept directory `path`, if any (marked used).
    fn kept_dir(&self, path: &Path) -> Option<Arc<HostDir>> {
        let mut c = self.cache.lock().ok()?;
        let now = c.now;
        let k = c.dirs.get_mut(path.as_os_str())?;
        k.used = now;
        Some(k.value.clone())
    }

    /// Keeps `dir` as `path` when there is room.
    fn keep_dir(&self, path: &Path, dir: Arc<HostDir>) {
        if let Ok(mut c) = self.cache.lock()
            && c.has_room()
        {
            let used = c.now;
            c.dirs
                .insert(path.as_os_str().to_owned(), Kept { value: dir, used });
        }
    }

    /// The open directory `path` and whether it was kept from an earlier read; opened
    /// relative to its parent (itself opened so) when not kept.
    fn dir(&self, path: &Path) -> std::io::Result<(Arc<HostDir>, bool)> {
        if let Some(d) = self.kept_dir(path) {
            return Ok((d, true));
        }
        let handle = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if parent.parent().is_some() => {
                let (parent, _) = self.dir(parent)?;
                self.host.open_dir(Some(&parent), Path::new(name))?
            }
            _ => self.host.open_dir(None, path)?,
        };
        let handle = Arc::new(handle);
        self.keep_dir(path, handle.clone());
        Ok((handle, false))
    }

    /// `path` opened afresh from `/` (nothing kept on the way), then kept in place of the
    /// kept one. The files kept in it are left: each is opened afresh when its own read
    /// fails.
    fn fresh_dir(&self, path: &Path) -> std::io::Result<Arc<HostDir>> {
        if let Ok(mut c) = self.cache.lock() {
            c.dirs.remove(path.as_os_str());
        }
        let handle = Arc::new(self.host.open_dir(None, path)?);
        self.keep_dir(path, handle.clone());
        Ok(handle)
    }

    /// The file kept under `key`, if any (marked used).
    fn kept_file(&self, key: &OsString) -> Option<FileEntry> {
        let mut c = self.cache.lock().ok()?;
        let now = c.now;
        let k = c.files.get_mut(key)?;
        k.used = now;
        Some(k.value.clone())
    }

    /// The content of the file kept under `key`, read again through `host`; else (none
    /// kept, or the kept one fails its read) the file `open` gives (opened by `host`), read
    /// and kept (within the budget). For a file known by something other than its path, such
    /// as a sandbox's network namespace by the sandbox's ID (its `/proc/<pid>/net/dev` path
    /// is a process's): `key` never starts with `/`, so it is never a kept path's.
    pub fn read_keyed(
        &self,
        key: &str,
        host: &dyn HostFs,
        open: impl FnOnce() -> std::io::Result<HostFile>,
    ) -> std::io::Result<String> {
        let key = OsString::from(key);
        if let Some(FileEntry::Open(f)) = self.kept_file(&key) {
            let read = match f.lock() {
                Ok(f) => host.reread(&f),
                Err(_) => Err(std::io::Error::other("poisoned")),
            };
            if read.is_ok() {
                return read;
            }
        }
        self.forget(&key);
        let f = open()?;
        let content = host.reread(&f)?;
        self.keep_file(key, FileEntry::Open(Arc::new(Mutex::new(f))));
        Ok(content)
    }

    /// Closes (forgets) what is kept under `key`.
    pub fn forget(&self, key: impl AsRef<std::ffi::OsStr>) {
        if let Ok(mut c) = self.cache.lock() {
            c.drop_file(key.as_ref());
        }
    }

    /// The content of `dir/name`: the kept descriptor read again, else opened (and kept).
    fn read_in(&self, dir: &Path, name: &str) -> std::io::Result<String> {
        let key = dir.join(name).into_os_string();
        let kept = self.kept_file(&key);
        self.read_entry(dir, name, kept, || key)
    }

    /// [`ScrapeFs::read_in`] of `names` of `dir`: the kept ones looked up under one lock,
    /// their keys made in one buffer.
    fn read_all_in(&self, dir: &Path, names: &[&str]) -> Vec<std::io::Result<String>> {
        use std::os::unix::ffi::OsStrExt;
        let dir_bytes = dir.as_os_str().as_bytes();
        let mut key = Vec::with_capacity(dir_bytes.len() + 32);
        key.extend_from_slice(dir_bytes);
        key.push(b'/');
        let base = key.len();
        let kept: Vec<Option<FileEntry>> = match self.cache.lock() {
            Ok(mut c) => {
                let now = c.now;
                names
                    .iter()
                    .map(|name| {
                        key.truncate(base);
                        key.extend_from_slice(name.as_bytes());
                        let k = c.files.get_mut(std::ffi::OsStr::from_bytes(&key))?;
                        k.used = now;
                        Some(k.value.clone())
                    })
                    .collect()
            }
            Err(_) => vec![None; names.len()],
        };
        names
            .iter()
            .zip(kept)
            .map(|(name, kept)| {
                self.read_entry(dir, name, kept, || dir.join(name).into_os_string())
            })
            .collect()
    }

    /// The read of `dir/name` given what is kept of it (`key`: its key, made when needed).
    fn read_entry(
        &self,
        dir: &Path,
        name: &str,
        kept: Option<FileEntry>,
        key: impl FnOnce() -> OsString,
    ) -> std::io::Result<String> {
        match kept {
            Some(FileEntry::Absent(_)) => Err(ErrorKind::NotFound.into()),
            Some(FileEntry::Open(f)) => {
                let read = match f.lock() {
                    Ok(f) => self.host.reread(&f),
                    Err(_) => Err(std::io::Error::other("poisoned")),
                };
                match read {
                    Ok(s) => Ok(s),
                    // Removed, or removed and made again: afresh, once.
                    Err(_) => self.open_and_read(dir, name, key(), true),
                }
            }
            None => self.open_and_read(dir, name, key(), false),
        }
    }

    fn open_and_read(
        &self,
        dir: &Path,
        name: &str,
        key: OsString,
        fresh: bool,
    ) -> std::io::Result<String> {
        let (d, kept) = if fresh {
            (self.fresh_dir(dir)?, false)
        } else {
            self.dir(dir)?
        };
        match self.host.open_file_in(&d, name) {
            Ok(f) => {
                let content = self.host.reread(&f)?;
                self.keep_file(key, FileEntry::Open(Arc::new(Mutex::new(f))));
                Ok(content)
            }
            // The kept directory may be one that was removed: afresh, once.
            Err(e) if e.kind() == ErrorKind::NotFound && kept => {
                self.open_and_read(dir, name, key, true)
            }
            Err(e) => {
                if e.kind() == ErrorKind::NotFound {
                    let since = self.cache.lock().map_or_else(|_| Instant::now(), |c| c.now);
                    self.keep_file(key, FileEntry::Absent(since));
                }
                Err(e)
            }
        }
    }

    fn keep_file(&self, key: OsString, entry: FileEntry) {
        let Ok(mut c) = self.cache.lock() else { return };
        c.drop_file(&key);
        let is_open = matches!(entry, FileEntry::Open(_));
        if is_open && !c.has_room() {
            return;
        }
        let used = c.now;
        c.files.insert(key, Kept { value: entry, used });
        if is_open {
            c.open_files += 1;
        }
    }
}

impl HostFs for ScrapeFs {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
            (Some(dir), Some(name)) if dir.parent().is_some() => self.read_in(dir, name),
            _ => self.host.read_to_string(path),
        }
    }
    fn write(&self, path: &Path, data: &str) -> std::io::Result<()> {
        self.host.write(path, data)
    }
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        self.host.create_dir_all(path)
    }
    /// A kept directory exists (a removed one fails its reads and is then forgotten); any
    /// other directory is opened (and kept: a cgroup is checked before it is read), anything
    /// else looked up in its open parent.
    fn exists(&self, path: &Path) -> bool {
        match self.dir(path) {
            Ok((d, _)) => match d.as_ref() {
                HostDir::Fd(_) => true,
                HostDir::Path(p) => self.host.exists(p),
            },
            Err(e) if e.kind() == ErrorKind::NotADirectory => {
                match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
                    (Some(dir), Some(name)) => match self.dir(dir) {
                        Ok((d, _)) => self.host.exists_in(&d, name),
                        Err(_) => false,
                    },
                    _ => self.host.exists(path),
                }
            }
            Err(_) => false,
        }
    }
    fn fs_type(&self, path: &Path) -> std::io::Result<i64> {
        self.host.fs_type(path)
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        self.host.read_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        self.host.remove_dir(path)
    }
    fn read_files(&self, dir: &Path, names: &[&str]) -> Vec<std::io::Result<String>> {
        self.read_all_in(dir, names)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use kubelet_cm::{FakeHostFs, RealHostFs};

    /// A file kept under a key: opened once, read again from its start on every request,
    /// closed by `forget`; an `open` that fails keeps nothing.
    #[test]
    fn a_keyed_file_is_opened_once_and_read_again() {
        let d = std::env::temp_dir().join(format!("krs-scrape-keyed-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("dev"), "one\n").unwrap();
        let host = RealHostFs;
        let fs = ScrapeFs::with_budget(Arc::new(host), 16);
        let opened = std::cell::Cell::new(0);
        let open = || {
            opened.set(opened.get() + 1);
            host.open_file_in(&host.open_dir(None, &d)?, "dev")
        };
        assert_eq!(
            fs.read_keyed("net/dev of s1", &host, open).unwrap(),
            "one\n"
        );
        std::fs::write(d.join("dev"), "two\n").unwrap();
        assert_eq!(
            fs.read_keyed("net/dev of s1", &host, open).unwrap(),
            "two\n"
        );
        assert_eq!((opened.get(), fs.open_count()), (1, 1));
        fs.forget("net/dev of s1");
        assert_eq!(fs.open_count(), 0);
        assert_eq!(
            fs.read_keyed("net/dev of s1", &host, open).unwrap(),
            "two\n"
        );
        assert_eq!(opened.get(), 2);
        let missing = || host.open_file_in(&host.open_dir(None, &d)?, "none");
        assert!(fs.read_keyed("net/dev of s2", &host, missing).is_err());
        assert_eq!(fs.open_count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_through_the_fake_by_path() {
        let host = Arc::new(FakeHostFs::default());
        host.add_dir("/cg/memory/pod1/c1");
        host.add_file("/cg/memory/pod1/c1/memory.stat", "rss 1\n");
        host.add_file("/cg/memory/pod1/cgroup.procs", "7\n");
        let fs = ScrapeFs::new(host.clone());
        fs.begin(Instant::now());
        let r = fs.read_files(Path::new("/cg/memory/pod1/c1"), &["memory.stat", "nope"]);
        assert_eq!(r[0].as_deref().unwrap(), "rss 1\n");
        assert!(r[1].is_err());
        assert_eq!(
            fs.read_to_string(Path::new("/cg/memory/pod1/cgroup.procs"))
                .unwrap(),
            "7\n"
        );
        assert!(fs.exists(Path::new("/cg/memory/pod1/c1")));
        assert!(!fs.exists(Path::new("/cg/memory/pod1/c2")));
        // The next request reads the file anew.
        host.add_file("/cg/memory/pod1/c1/memory.stat", "rss 2\n");
        fs.begin(Instant::now());
        let r = fs.read_files(Path::new("/cg/memory/pod1/c1"), &["memory.stat"]);
        assert_eq!(r[0].as_deref().unwrap(), "rss 2\n");
    }

    /// Files stay open from one request to the next and are read again from their start;
    /// what no request read for `KEEP_FOR` is closed; never more than the budget is open.
    #[test]
    fn real_files_stay_open_between_requests_within_the_budget() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..10 {
            let dir = d.path().join(format!("pod{i}")).join("c");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("memory.stat"), format!("{i}\n")).unwrap();
        }
        let fs = ScrapeFs::with_budget(Arc::new(RealHostFs), 1000);
        let t0 = Instant::now();
        fs.begin(t0);
        let dir0 = d.path().join("pod0/c");
        let r = fs.read_files(&dir0, &["memory.stat", "missing"]);
        assert_eq!(r[0].as_deref().unwrap(), "0\n");
        assert_eq!(r[1].as_ref().unwrap_err().kind(), ErrorKind::NotFound);
        let kept = fs.open_count();
        assert!(kept >= 2, "the directory and the file: {kept}");
        // Rewritten in place (same inode, as a cgroup file is): read again, nothing opened.
        std::fs::write(dir0.join("memory.stat"), "changed\n").unwrap();
        fs.begin(t0 + Duration::from_secs(1));
        let r = fs.read_files(&dir0, &["memory.stat", "missing"]);
        assert_eq!(r[0].as_deref().unwrap(), "changed\n");
        assert_eq!(r[1].as_ref().unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(fs.open_count(), kept);
        // An absent file is looked for again after ABSENT_FOR.
        std::fs::write(dir0.join("missing"), "now here\n").unwrap();
        fs.begin(t0 + Duration::from_secs(1) + ABSENT_FOR);
        let r = fs.read_files(&dir0, &["missing"]);
        assert_eq!(r[0].as_deref().unwrap(), "now here\n");
        // Unused for KEEP_FOR: closed.
        fs.begin(t0 + Duration::from_secs(1) + ABSENT_FOR + KEEP_FOR);
        assert_eq!(fs.open_count(), 0);
        // A small budget bounds what is kept; reads past it still work.
        let small = ScrapeFs::with_budget(Arc::new(RealHostFs), 3);
        small.begin(t0);
        for i in 1..10 {
            let dir = d.path().join(format!("pod{i}")).join("c");
            let r = small.read_files(&dir, &["memory.stat"]);
            assert_eq!(r[0].as_deref().unwrap(), format!("{i}\n"));
            assert!(small.exists(&dir.join("memory.stat")));
            assert!(!small.exists(&dir.join("gone")));
            assert!(small.open_count() <= 3);
        }
        let missing = small.read_files(&d.path().join("nope/c"), &["memory.stat"]);
        assert_eq!(missing[0].as_ref().unwrap_err().kind(), ErrorKind::NotFound);
    }

    /// On cgroupfs, a kept descriptor of a removed cgroup fails its reads: a cgroup removed
    /// and made again under the same path is read afresh (its new figures), and a removed
    /// one is reported gone, never with the figures of before. Needs root, as the real
    /// runtime tests.
    #[test]
    fn a_removed_and_remade_cgroup_is_read_afresh() {
        let hierarchy = if Path::new("/sys/fs/cgroup/memory/memory.stat").exists() {
            Path::new("/sys/fs/cgroup/memory") // v1
        } else {
            Path::new("/sys/fs/cgroup") // v2
        };
        let parent = hierarchy.join(format!("krs-scrape-fs-{}", std::process::id()));
        let cg = parent.join("c");
        let _ = std::fs::remove_dir(&cg);
        let _ = std::fs::remove_dir(&parent);
        std::fs::create_dir_all(&cg).unwrap_or_else(|e| panic!("mkdir {}: {e}", cg.display()));
        let file = "cgroup.procs";
        let fs = ScrapeFs::with_budget(Arc::new(RealHostFs), 100);
        let t0 = Instant::now();
        fs.begin(t0);
        assert_eq!(fs.read_files(&cg, &[file])[0].as_deref().unwrap(), "");
        assert!(fs.exists(&cg));
        let kept = fs.open_count();
        // Removed and made again; a process put in the new one.
        std::fs::remove_dir(&cg).unwrap();
        std::fs::create_dir(&cg).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(cg.join("cgroup.procs"), child.id().to_string()).unwrap();
        fs.begin(t0 + Duration::from_secs(1));
        let read = fs.read_files(&cg, &[file]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(read[0].as_deref().unwrap().trim(), child.id().to_string());
        assert_eq!(fs.open_count(), kept, "the stale descriptors were replaced");
        // Removed: gone, also for `exists` once a read has failed.
        std::fs::remove_dir(&cg).unwrap();
        fs.begin(t0 + Duration::from_secs(2));
        let read = fs.read_files(&cg, &[file]);
        assert_eq!(read[0].as_ref().unwrap_err().kind(), ErrorKind::NotFound);
        assert!(!fs.exists(&cg));
        std::fs::remove_dir(&parent).unwrap();
    }
}
