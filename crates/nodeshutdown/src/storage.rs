//! The graceful shutdown state file (upstream `storage.go`): `graceful_node_shutdown_state`
//! in the kubelet's root directory, `{"startTime":…,"endTime":…}` with Go's `time.Time`
//! JSON (RFC 3339 with nanoseconds, the zero time `0001-01-01T00:00:00Z`), written
//! atomically (temporary file, mode 0644, sync, rename).

use std::io::Write;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Upstream `localStorageStateFile`.
pub const LOCAL_STORAGE_STATE_FILE: &str = "graceful_node_shutdown_state";

/// Go's zero `time.Time` in JSON.
const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// Why the state file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Reading, writing or renaming failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not the state's JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Upstream `state`: when the last graceful shutdown started and ended (`None` is Go's
/// zero time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// `startTime`.
    #[serde(with = "go_time")]
    pub start_time: Option<Timestamp>,
    /// `endTime`.
    #[serde(with = "go_time")]
    pub end_time: Option<Timestamp>,
}

mod go_time {
    use super::{Deserialize, Deserializer, GO_ZERO_TIME, Serializer, Timestamp};

    #[allow(clippy::ref_option)]
    pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&t.to_string()),
            None => s.serialize_str(GO_ZERO_TIME),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        let raw = String::deserialize(d)?;
        let t: Timestamp = raw.parse().map_err(serde::de::Error::custom)?;
        Ok((t.as_second() != GO_ZERO_SECONDS).then_some(t))
    }

    /// `0001-01-01T00:00:00Z` in Unix seconds.
    const GO_ZERO_SECONDS: i64 = -62_135_596_800;
}

/// Upstream `timestamp`: Unix seconds, 0 for the zero time.
pub fn timestamp(t: Option<Timestamp>) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    t.map_or(0.0, |t| t.as_second() as f64)
}

/// Upstream `storage` (`localStorage`).
pub trait Storage: Send + Sync {
    /// Writes the state.
    fn store(&self, state: &State) -> Result<(), StorageError>;
    /// Reads the state; a missing file is the zero state.
    fn load(&self) -> Result<State, StorageError>;
}

/// Upstream `localStorage{Path}`.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    /// The state file.
    pub path: PathBuf,
}

impl Storage for LocalStorage {
    fn store(&self, state: &State) -> Result<(), StorageError> {
        let b = serde_json::to_vec(state)?;
        atomic_write(&self.path, &b, 0o644)
    }

    fn load(&self) -> Result<State, StorageError> {
        match std::fs::read(&self.path) {
            Ok(b) => Ok(serde_json::from_slice(&b)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(source) => Err(StorageError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

/// Upstream `atomicWrite`: a temporary file `.tmp-<name>…` beside `filename`, `perm`,
/// written, synced, closed and renamed over `filename`.
pub fn atomic_write(filename: &Path, data: &[u8], perm: u32) -> Result<(), StorageError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StorageError::Io { path, source }
    };
    let dir = filename.parent().unwrap_or(Path::new("."));
    let base = filename
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut f = tempfile::Builder::new()
        .prefix(&format!(".tmp-{base}"))
        .tempfile_in(dir)
        .map_err(io(dir))?;
    std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(perm))
        .map_err(io(f.path()))?;
    f.write_all(data).map_err(io(f.path()))?;
    f.as_file().sync_all().map_err(io(f.path()))?;
    f.persist(filename)
        .map_err(|e| StorageError::Io {
            path: filename.to_path_buf(),
            source: e.error,
        })
        .map(|_| ())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Upstream `TestLocalStorage`: a round trip, and the file is
    /// `{"startTime":"<RFC3339Nano>","endTime":"<RFC3339Nano>"}`.
    #[test]
    fn local_storage_round_trip_in_upstream_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCAL_STORAGE_STATE_FILE);
        let l = LocalStorage { path: path.clone() };
        let now: Timestamp = "2026-12-02T03:04:05.123456789Z".parse().unwrap();
        let want = State {
            start_time: Some(now),
            end_time: Some(now),
        };
        l.store(&want).unwrap();
        assert_eq!(l.load().unwrap(), want);
        let raw = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            raw,
            r#"{"startTime":"2026-12-02T03:04:05.123456789Z","endTime":"2026-12-02T03:04:05.123456789Z"}"#
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644
        );
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Go's zero time both ways, trailing zeros trimmed as RFC3339Nano does, a Go
    /// writer's local offset read back, and a missing file is the zero state.
    #[test]
    fn go_zero_time_offsets_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCAL_STORAGE_STATE_FILE);
        let l = LocalStorage { path: path.clone() };
        assert_eq!(l.load().unwrap(), State::default());
        let start: Timestamp = "2026-12-02T03:04:05.5Z".parse().unwrap();
        l.store(&State {
            start_time: Some(start),
            end_time: None,
        })
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"startTime":"2026-12-02T03:04:05.5Z","endTime":"0001-01-01T00:00:00Z"}"#
        );
        std::fs::write(
            &path,
            r#"{"startTime":"2026-12-02T04:04:05.5+01:00","endTime":"0001-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let s = l.load().unwrap();
        assert_eq!(s.start_time, Some(start));
        assert_eq!(s.end_time, None);
        assert!((timestamp(s.start_time) - 1_796_180_645.0).abs() < f64::EPSILON);
        assert!(timestamp(None).abs() < f64::EPSILON);
        std::fs::write(&path, "not json").unwrap();
        assert!(l.load().is_err());
    }
}
