//! The directories of one stats request opened once (kubelet-rs's own; upstream reads the
//! cgroups in cAdvisor's housekeeping): a [`HostFs`] over the host's that opens each
//! directory it reads from relative to its parent's open descriptor
//! ([`HostFs::open_dir`]), so reading `/sys/fs/cgroup/memory/kubepods/besteffort/pod<uid>/<id>`
//! walks one path component, not seven, once the pod's directory is open. The descriptors
//! live as long as the request's reader (one request), at most [`MAX_OPEN`] at a time: no
//! figure is kept from one request to the next.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};

use kubelet_cm::{HostDir, HostFs};

/// Directories kept open at most (the oldest is closed first).
pub const MAX_OPEN: usize = 64;

/// Keyed by the path's bytes (`Path`'s own hash goes component by component).
#[derive(Default)]
struct Open {
    dirs: HashMap<OsString, Arc<HostDir>>,
    order: VecDeque<OsString>,
}

/// See the module doc.
pub struct ScrapeFs {
    host: Arc<dyn HostFs>,
    open: Mutex<Open>,
}

impl ScrapeFs {
    /// Over `host`, nothing open yet.
    pub fn new(host: Arc<dyn HostFs>) -> Self {
        ScrapeFs {
            host,
            open: Mutex::new(Open::default()),
        }
    }

    /// How many directories are open.
    pub fn open_count(&self) -> usize {
        self.open.lock().map(|o| o.dirs.len()).unwrap_or_default()
    }

    /// The open directory `path`, opened relative to its parent (itself opened so) when not
    /// open yet.
    fn dir(&self, path: &Path) -> std::io::Result<Arc<HostDir>> {
        let key = path.as_os_str();
        if let Some(d) = self.open.lock().ok().and_then(|o| o.dirs.get(key).cloned()) {
            return Ok(d);
        }
        let handle = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if parent.parent().is_some() => {
                let parent = self.dir(parent)?;
                self.host.open_dir(Some(&parent), Path::new(name))?
            }
            _ => self.host.open_dir(None, path)?,
        };
        let handle = Arc::new(handle);
        if let Ok(mut o) = self.open.lock() {
            if o.dirs.len() >= MAX_OPEN
                && let Some(oldest) = o.order.pop_front()
            {
                o.dirs.remove(&oldest);
            }
            o.dirs.insert(key.to_owned(), handle.clone());
            o.order.push_back(key.to_owned());
        }
        Ok(handle)
    }

    /// The open parent of `path` and the last name.
    fn parent_of<'p>(&self, path: &'p Path) -> Option<(Arc<HostDir>, &'p str)> {
        let name = path.file_name()?.to_str()?;
        Some((self.dir(path.parent()?).ok()?, name))
    }
}

fn errors(n: usize, e: &std::io::Error) -> Vec<std::io::Result<String>> {
    (0..n)
        .map(|_| Err(std::io::Error::new(e.kind(), e.to_string())))
        .collect()
}

impl HostFs for ScrapeFs {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        match self.parent_of(path) {
            Some((dir, name)) => self
                .host
                .read_files_in(&dir, &[name])
                .pop()
                .unwrap_or_else(|| Err(std::io::ErrorKind::NotFound.into())),
            None => self.host.read_to_string(path),
        }
    }
    fn write(&self, path: &Path, data: &str) -> std::io::Result<()> {
        self.host.write(path, data)
    }
    fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        self.host.create_dir_all(path)
    }
    /// A directory is opened (and kept: a cgroup is checked before it is read), anything
    /// else looked up in its open parent.
    fn exists(&self, path: &Path) -> bool {
        match self.dir(path).as_deref() {
            Ok(HostDir::Fd(_)) => true,
            Ok(HostDir::Path(p)) => self.host.exists(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => match self.parent_of(path) {
                Some((dir, name)) => self.host.exists_in(&dir, name),
                None => self.host.exists(path),
            },
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
        match self.dir(dir) {
            Ok(d) => self.host.read_files_in(&d, names),
            Err(e) => errors(names.len(), &e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kubelet_cm::{FakeHostFs, RealHostFs};

    #[test]
    fn reads_through_the_fake_by_path() {
        let host = Arc::new(FakeHostFs::default());
        host.add_dir("/cg/memory/pod1/c1");
        host.add_file("/cg/memory/pod1/c1/memory.stat", "rss 1\n");
        host.add_file("/cg/memory/pod1/cgroup.procs", "7\n");
        let fs = ScrapeFs::new(host);
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
        assert!(fs.open_count() <= MAX_OPEN);
    }

    #[test]
    fn real_directories_open_once_relative_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..(MAX_OPEN + 5) {
            let dir = d.path().join(format!("pod{i}")).join("c");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("memory.stat"), format!("{i}\n")).unwrap();
        }
        let fs = ScrapeFs::new(Arc::new(RealHostFs));
        for i in 0..(MAX_OPEN + 5) {
            let dir = d.path().join(format!("pod{i}")).join("c");
            let r = fs.read_files(&dir, &["memory.stat", "missing"]);
            assert_eq!(r[0].as_deref().unwrap(), format!("{i}\n"));
            assert_eq!(
                r[1].as_ref().unwrap_err().kind(),
                std::io::ErrorKind::NotFound
            );
            assert!(fs.exists(&dir.join("memory.stat")));
            assert!(!fs.exists(&dir.join("gone")));
        }
        assert_eq!(fs.open_count(), MAX_OPEN);
        let missing = fs.read_files(&d.path().join("nope/c"), &["memory.stat"]);
        assert_eq!(
            missing[0].as_ref().unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        // An evicted directory opens again.
        let first = d.path().join("pod0/c/memory.stat");
        assert_eq!(fs.read_to_string(&first).unwrap(), "0\n");
    }
}
