//! The checkpoint file store (upstream `checkpointmanager` over `util/store.FileStore`).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Reads and writes checkpoint blobs by key (file name).
pub trait CheckpointStore: Send + Sync {
    /// The blob, `None` when there is none.
    fn read(&self, key: &str) -> io::Result<Option<Vec<u8>>>;
    /// Replaces the blob atomically.
    fn write(&self, key: &str, data: &[u8]) -> io::Result<()>;
    /// Removes the blob (no error when absent).
    fn remove(&self, key: &str) -> io::Result<()>;
}

/// Files in a directory, written as upstream's `FileStore` does: a `.`-prefixed
/// temporary file in the same directory, synced, then renamed over the key.
#[derive(Clone, Debug)]
pub struct FileCheckpointStore {
    dir: PathBuf,
}

impl FileCheckpointStore {
    /// A store in `dir` (created on first write, mode 0755 as upstream's `MkdirAll`).
    pub fn new(dir: impl Into<PathBuf>) -> FileCheckpointStore {
        FileCheckpointStore { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> io::Result<PathBuf> {
        // upstream ValidateKey: [a-zA-Z0-9._-]+, at most 250 characters.
        let valid = !key.is_empty()
            && key.len() <= 250
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid key: {key:?}"),
            ));
        }
        Ok(self.dir.join(key))
    }
}

impl CheckpointStore for FileCheckpointStore {
    fn read(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.path(key)?) {
            Ok(data) => Ok(Some(data)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write(&self, key: &str, data: &[u8]) -> io::Result<()> {
        let path = self.path(key)?;
        std::fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".")
            .tempfile_in(&self.dir)?;
        tmp.write_all(data)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    fn remove(&self, key: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(key)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// An in-memory store recording every write (key, blob).
#[derive(Debug, Default)]
pub struct FakeCheckpointStore {
    blobs: Mutex<BTreeMap<String, Vec<u8>>>,
    writes: Mutex<Vec<(String, Vec<u8>)>>,
    /// When set, every write fails with this message.
    pub fail_writes: Option<String>,
}

impl FakeCheckpointStore {
    /// An empty store.
    pub fn new() -> FakeCheckpointStore {
        FakeCheckpointStore::default()
    }

    /// A store holding one blob.
    pub fn with_blob(key: &str, data: &[u8]) -> FakeCheckpointStore {
        let store = FakeCheckpointStore::new();
        if let Ok(mut blobs) = store.blobs.lock() {
            blobs.insert(key.to_owned(), data.to_vec());
        }
        store
    }

    /// A store whose writes fail with `message`.
    pub fn failing(message: &str) -> FakeCheckpointStore {
        FakeCheckpointStore {
            fail_writes: Some(message.to_owned()),
            ..FakeCheckpointStore::default()
        }
    }

    /// Every write so far.
    pub fn writes(&self) -> Vec<(String, Vec<u8>)> {
        self.writes.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// The current blob of `key`.
    pub fn blob(&self, key: &str) -> Option<Vec<u8>> {
        self.blobs.lock().ok().and_then(|b| b.get(key).cloned())
    }
}

fn poisoned() -> io::Error {
    io::Error::other("fake store lock poisoned")
}

impl CheckpointStore for FakeCheckpointStore {
    fn read(&self, key: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(self.blobs.lock().map_err(|_| poisoned())?.get(key).cloned())
    }

    fn write(&self, key: &str, data: &[u8]) -> io::Result<()> {
        if let Some(msg) = &self.fail_writes {
            return Err(io::Error::other(msg.clone()));
        }
        self.writes
            .lock()
            .map_err(|_| poisoned())?
            .push((key.to_owned(), data.to_vec()));
        self.blobs
            .lock()
            .map_err(|_| poisoned())?
            .insert(key.to_owned(), data.to_vec());
        Ok(())
    }

    fn remove(&self, key: &str) -> io::Result<()> {
        self.blobs.lock().map_err(|_| poisoned())?.remove(key);
        Ok(())
    }
}
