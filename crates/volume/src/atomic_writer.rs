//! Atomic projection of a set of files into a volume directory (upstream
//! `pkg/volume/util/atomic_writer.go`).
//!
//! The files live in a hidden timestamped directory (`..2016_02_01_15_04_05.123456789`);
//! `..data` is a symlink to it, swapped atomically by renaming a new `..data_tmp` symlink
//! over it; every top-level entry the user sees is a symlink `key -> ..data/key`. A reader
//! following `..data` therefore always sees one complete version of the payload. Paths
//! starting with `..` are reserved. The writer is not safe for concurrent use on one
//! directory: the volume manager serialises the set-ups of a volume.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

const MAX_FILE_NAME_LENGTH: usize = 255;
const MAX_PATH_LENGTH: usize = 4096;

/// The symlink to the current timestamped directory.
pub const DATA_DIR_NAME: &str = "..data";
/// The symlink renamed over [`DATA_DIR_NAME`].
pub const NEW_DATA_DIR_NAME: &str = "..data_tmp";

/// One file of a payload (upstream `FileProjection`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileProjection {
    /// The file's content.
    pub data: Vec<u8>,
    /// The file's mode bits (`defaultMode` or the item's `mode`).
    pub mode: u32,
    /// The file's owner (upstream `FsUser`: token files when every container runs as one UID).
    pub fs_user: Option<u32>,
}

/// Sets ownership and permissions of the new timestamped directory (given by name)
/// before it is published.
pub type SetPerms<'a> = &'a dyn Fn(&str) -> io::Result<()>;

/// A payload: user-visible relative path → file.
pub type Payload = BTreeMap<String, FileProjection>;

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A payload path is not allowed (upstream `validatePath`).
    #[error("invalid path: {0}")]
    InvalidPath(String),
    /// A filesystem operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> WriteError + use<> {
    let path = path.to_path_buf();
    move |source| WriteError::Io { what, path, source }
}

/// `validatePath`: paths may not be empty or absolute, contain a `..` element, start with
/// `..`, have an element longer than 255 bytes or be longer than 4096 bytes.
pub fn validate_path(target: &str) -> Result<(), WriteError> {
    let invalid = |m: String| Err(WriteError::InvalidPath(m));
    if target.is_empty() {
        return invalid(format!("must not be empty: {target:?}"));
    }
    if target.starts_with('/') {
        return invalid(format!("must be relative path: {target}"));
    }
    if target.len() > MAX_PATH_LENGTH {
        return invalid(format!(
            "must be less than or equal to {MAX_PATH_LENGTH} characters"
        ));
    }
    let items: Vec<&str> = target.split('/').collect();
    for item in &items {
        if *item == ".." {
            return invalid(format!("must not contain '..': {target}"));
        }
        if item.len() > MAX_FILE_NAME_LENGTH {
            return invalid(format!(
                "filenames must be less than or equal to {MAX_FILE_NAME_LENGTH} characters"
            ));
        }
    }
    if items[0].starts_with("..") && items[0].len() > 2 {
        return invalid(format!("must not start with '..': {target}"));
    }
    Ok(())
}

/// `validatePayload`: validates every path and returns the payload with cleaned paths.
pub fn validate_payload(payload: &Payload) -> Result<Payload, WriteError> {
    payload
        .iter()
        .map(|(k, v)| validate_path(k).map(|()| (crate::plugins::clean_path(k), v.clone())))
        .collect()
}

/// Projects payloads into one target directory (upstream `AtomicWriter`).
#[derive(Debug)]
pub struct AtomicWriter {
    target_dir: PathBuf,
    log_context: String,
}

impl AtomicWriter {
    /// A writer for `target_dir`, which must exist (upstream `NewAtomicWriter`).
    pub fn new(target_dir: &Path, log_context: &str) -> Result<Self, WriteError> {
        std::fs::metadata(target_dir).map_err(io_err("stat target directory", target_dir))?;
        Ok(Self {
            target_dir: target_dir.to_path_buf(),
            log_context: log_context.to_string(),
        })
    }

    /// `Write`: the twelve steps of upstream's algorithm (see the module docs). `set_perms`
    /// runs on the new timestamped directory's name before it is published.
    pub fn write(
        &self,
        payload: &Payload,
        set_perms: Option<SetPerms<'_>>,
    ) -> Result<(), WriteError> {
        let ctx = &self.log_context;
        // (1)
        let clean_payload = validate_payload(payload).inspect_err(|e| {
            tracing::error!("{ctx}: invalid payload: {e}");
        })?;
        // (2)
        let data_dir_path = self.target_dir.join(DATA_DIR_NAME);
        let mut old_ts_dir = match std::fs::read_link(&data_dir_path) {
            Ok(t) => t.to_string_lossy().into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                tracing::error!("{ctx}: error reading link for data directory: {e}");
                return Err(io_err("read link", &data_dir_path)(e));
            }
        };
        let old_ts_path = self.target_dir.join(&old_ts_dir);
        let mut paths_to_remove = BTreeSet::new();
        let mut should_write = true;
        if !old_ts_dir.is_empty() {
            // (3)
            paths_to_remove = paths_to_remove_from(&clean_payload, &old_ts_path)?;
            // (4)
            if !should_write_payload(&clean_payload, &old_ts_path)? && paths_to_remove.is_empty() {
                tracing::debug!("{ctx}: write not required for data directory {old_ts_dir}");
                // The user-visible symlinks are still (re)created below.
                should_write = false;
                old_ts_dir.clear();
            } else {
                tracing::debug!(
                    "{ctx}: write required for target directory {}",
                    self.target_dir.display()
                );
            }
        }
        if should_write {
            // (5)
            let ts_dir = self.new_timestamp_dir()?;
            let ts_dir_name = ts_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // (6)
            write_payload_to_dir(&clean_payload, &ts_dir).inspect_err(|e| {
                tracing::error!(
                    "{ctx}: error writing payload to ts data directory {}: {e}",
                    ts_dir.display()
                );
            })?;
            // (7)
            if let Some(f) = set_perms {
                f(&ts_dir_name).map_err(io_err("apply ownership settings", &ts_dir))?;
            }
            // (8)
            let new_data_dir_path = self.target_dir.join(NEW_DATA_DIR_NAME);
            if let Err(e) = std::os::unix::fs::symlink(&ts_dir_name, &new_data_dir_path) {
                let _ = std::fs::remove_dir_all(&ts_dir);
                tracing::error!("{ctx}: error creating symbolic link for atomic update: {e}");
                return Err(io_err("create symlink", &new_data_dir_path)(e));
            }
            // (9)
            if let Err(e) = std::fs::rename(&new_data_dir_path, &data_dir_path) {
                let _ = std::fs::remove_file(&new_data_dir_path);
                let _ = std::fs::remove_dir_all(&ts_dir);
                tracing::error!(
                    "{ctx}: error renaming symbolic link for data directory {}: {e}",
                    new_data_dir_path.display()
                );
                return Err(io_err("rename symlink", &new_data_dir_path)(e));
            }
        }
        // (10)
        self.create_user_visible_files(&clean_payload)?;
        // (11)
        self.remove_user_visible_paths(&paths_to_remove)?;
        // (12)
        if !old_ts_dir.is_empty() {
            std::fs::remove_dir_all(&old_ts_path)
                .map_err(io_err("remove old data directory", &old_ts_path))?;
        }
        Ok(())
    }

    /// `newTimestampDir`: `..<UTC time>.<random>` with mode 0755 whatever the umask.
    fn new_timestamp_dir(&self) -> Result<PathBuf, WriteError> {
        let prefix = jiff::Timestamp::now()
            .strftime("..%Y_%m_%d_%H_%M_%S.")
            .to_string();
        let mut seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
            ^ std::process::id().rotate_left(16);
        loop {
            // os.MkdirTemp: the pattern followed by a random number, retried on collision.
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let dir = self.target_dir.join(format!("{prefix}{seed}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                        .map_err(io_err("set mode on new temp directory", &dir))?;
                    return Ok(dir);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err("create new temp directory", &dir)(e)),
            }
        }
    }

    /// `createUserVisibleFiles`: `first-path-element -> ..data/first-path-element`.
    fn create_user_visible_files(&self, payload: &Payload) -> Result<(), WriteError> {
        for path in payload.keys() {
            let link_name = path.split('/').next().unwrap_or(path);
            let visible = self.target_dir.join(link_name);
            if let Err(e) = std::fs::read_link(&visible)
                && e.kind() == io::ErrorKind::NotFound
            {
                std::os::unix::fs::symlink(Path::new(DATA_DIR_NAME).join(link_name), &visible)
                    .map_err(io_err("create user-visible symlink", &visible))?;
            }
        }
        Ok(())
    }

    /// `removeUserVisiblePaths`: only top-level entries (the symlinks) are removed.
    fn remove_user_visible_paths(&self, paths: &BTreeSet<String>) -> Result<(), WriteError> {
        let mut last = None;
        for p in paths.iter().filter(|p| !p.contains('/')) {
            let path = self.target_dir.join(p);
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::error!(
                    "{}: error pruning old user-visible path {p}: {e}",
                    self.log_context
                );
                last = Some(io_err("remove user-visible path", &path)(e));
            }
        }
        last.map_or(Ok(()), Err)
    }
}

/// `shouldWritePayload`: a file is missing or differs.
fn should_write_payload(payload: &Payload, old_ts_dir: &Path) -> Result<bool, WriteError> {
    for (path, file) in payload {
        let p = old_ts_dir.join(path);
        match std::fs::symlink_metadata(&p) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            _ => {}
        }
        let on_disk = std::fs::read(&p).map_err(io_err("read", &p))?;
        if on_disk != file.data {
            return Ok(true);
        }
    }
    Ok(false)
}

fn walk(dir: &Path, base: &Path, out: &mut BTreeSet<String>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if let Ok(rel) = path.strip_prefix(base) {
            out.insert(rel.to_string_lossy().into_owned());
        }
        if entry.file_type()?.is_dir() {
            walk(&path, base, out)?;
        }
    }
    Ok(())
}

/// `pathsToRemove`: the paths of the old version that are neither in the payload nor a
/// parent directory of a payload path.
fn paths_to_remove_from(
    payload: &Payload,
    old_ts_dir: &Path,
) -> Result<BTreeSet<String>, WriteError> {
    let mut paths = BTreeSet::new();
    match walk(old_ts_dir, old_ts_dir, &mut paths) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        r => r.map_err(io_err("walk old data directory", old_ts_dir))?,
    }
    let mut new_paths = BTreeSet::new();
    for file in payload.keys() {
        let mut sub = file.as_str();
        loop {
            new_paths.insert(sub.to_string());
            match sub.rfind('/') {
                Some(i) => sub = &sub[..i],
                None => break,
            }
        }
    }
    Ok(paths.difference(&new_paths).cloned().collect())
}

/// `writePayloadToDir`: parent directories with mode 0777 (umask applies, as upstream),
/// files with their mode whatever the umask, owned by `fs_user` when set.
fn write_payload_to_dir(payload: &Payload, dir: &Path) -> Result<(), WriteError> {
    for (path, file) in payload {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o777)
                .create(parent)
                .map_err(io_err("create directory", parent))?;
        }
        std::fs::write(&full, &file.data).map_err(io_err("write file", &full))?;
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(file.mode & 0o777))
            .map_err(io_err("change file mode", &full))?;
        if let Some(uid) = file.fs_user {
            std::os::unix::fs::lchown(&full, Some(uid), None)
                .map_err(io_err("change file owner", &full))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "atomic_writer_tests.rs"]
mod tests;
