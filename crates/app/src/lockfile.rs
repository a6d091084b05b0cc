//! `--lock-file` and `--exit-on-lock-contention` (mirrors `cmd/kubelet/app/server.go` `run()`
//! and `server_linux.go` `watchForLockfileContention`).

use std::fs::File;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

/// Errors of the lock-file step.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// `--exit-on-lock-contention` was given without `--lock-file`.
    #[error("cannot exit on lock file contention: no lock file specified")]
    NoLockFile,
    /// Opening or locking the file failed.
    #[error("unable to acquire file lock on {path:?}: {reason}")]
    Acquire {
        /// The lock file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Setting up the inotify watch failed.
    #[error("unable to watch lockfile {path:?}: {reason}")]
    Watch {
        /// The lock file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct LockFile {
    path: PathBuf,
    _file: nix::fcntl::Flock<File>,
}

impl LockFile {
    /// The locked path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens (creating, mode 0600) and exclusively `flock`s `path`, waiting for the lock as
/// upstream's `flock.Acquire` does.
pub async fn acquire(path: &Path) -> Result<LockFile, LockError> {
    let owned = path.to_path_buf();
    let err = |reason: String| LockError::Acquire {
        path: path.to_path_buf(),
        reason,
    };
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&owned)
            .map_err(|e| e.to_string())?;
        let locked = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| e.to_string())?;
        Ok::<_, String>(LockFile {
            path: owned,
            _file: locked,
        })
    })
    .await
    .map_err(|e| err(e.to_string()))?
    .map_err(err)
}

/// Watches the lock file for `IN_OPEN | IN_DELETE_SELF`: the first event (another kubelet
/// opening the file to take the lock, or the file being deleted) cancels `contention`.
pub fn watch_for_contention(
    lock: &LockFile,
    contention: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, LockError> {
    use inotify::{Inotify, WatchMask};
    let werr = |reason: String| LockError::Watch {
        path: lock.path.clone(),
        reason,
    };
    let inotify = Inotify::init().map_err(|e| werr(e.to_string()))?;
    inotify
        .watches()
        .add(&lock.path, WatchMask::OPEN | WatchMask::DELETE_SELF)
        .map_err(|e| werr(e.to_string()))?;
    let path = lock.path.clone();
    let stream = inotify
        .into_event_stream(vec![0u8; 1024])
        .map_err(|e| werr(e.to_string()))?;
    Ok(tokio::spawn(async move {
        use futures::StreamExt;
        let mut stream = stream;
        let event = stream.next().await;
        tracing::info!(path = %path.display(), event = ?event.map(|e| e.map(|e| e.mask)), "inotify event on lock file, exiting on lock contention");
        contention.cancel();
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn second_acquire_waits_until_first_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubelet.lock");
        let first = acquire(&path).await.unwrap();
        let p2 = path.clone();
        let second = tokio::spawn(async move { acquire(&p2).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!second.is_finished(), "lock must be exclusive");
        drop(first);
        let got = tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .unwrap()
            .unwrap();
        assert!(got.is_ok());
    }

    #[tokio::test]
    async fn open_by_another_process_signals_contention() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubelet.lock");
        let lock = acquire(&path).await.unwrap();
        let token = CancellationToken::new();
        let _h = watch_for_contention(&lock, token.clone()).unwrap();
        assert!(!token.is_cancelled());
        let _f = std::fs::File::open(&path).unwrap();
        tokio::time::timeout(Duration::from_secs(5), token.cancelled())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn unwritable_lock_path_names_the_file() {
        let err = acquire(Path::new("/nonexistent-dir/x.lock"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir/x.lock"), "{err}");
    }
}
