//! The filesystem boundary for loading (`utilfs.Filesystem` / `filepath.WalkDir`), with an
//! in-memory fake for tests.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What the loader needs from the filesystem.
pub trait ConfigFs {
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Every non-directory entry under `dir`, depth first in lexical order of names,
    /// as `filepath.WalkDir` visits them.
    fn walk_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// The working directory relative `--config` paths start from.
    fn current_dir(&self) -> io::Result<PathBuf>;
}

/// The real filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl ConfigFs for RealFs {
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn walk_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        walk(dir, &mut out)?;
        Ok(out)
    }

    fn current_dir(&self) -> io::Result<PathBuf> {
        std::env::current_dir()
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_type()?.is_dir() {
            walk(&e.path(), out)?;
        } else {
            out.push(e.path());
        }
    }
    Ok(())
}

/// An in-memory filesystem for tests.
#[derive(Debug, Clone)]
pub struct FakeFs {
    pub files: BTreeMap<PathBuf, Vec<u8>>,
    pub cwd: PathBuf,
}

impl Default for FakeFs {
    fn default() -> Self {
        FakeFs {
            files: BTreeMap::new(),
            cwd: PathBuf::from("/"),
        }
    }
}

impl FakeFs {
    pub fn with_file(mut self, path: &str, content: &str) -> Self {
        self.files
            .insert(PathBuf::from(path), content.as_bytes().to_vec());
        self
    }
}

impl ConfigFs for FakeFs {
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files.get(path).cloned().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("open {}: no such file or directory", path.display()),
            )
        })
    }

    fn walk_files(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let out: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| p.starts_with(dir) && *p != dir)
            .cloned()
            .collect();
        if out.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("lstat {}: no such file or directory", dir.display()),
            ));
        }
        Ok(out)
    }

    fn current_dir(&self) -> io::Result<PathBuf> {
        Ok(self.cwd.clone())
    }
}

/// Go's `filepath.Clean` for absolute and relative paths.
pub fn clean(p: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(c),
            },
            _ => out.push(c),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// `filepath.Abs`: joins relative paths to the working directory, then cleans.
pub fn absolute(fs: &dyn ConfigFs, name: &str) -> io::Result<PathBuf> {
    let p = Path::new(name);
    if p.is_absolute() {
        return Ok(clean(p));
    }
    Ok(clean(&fs.current_dir()?.join(p)))
}
