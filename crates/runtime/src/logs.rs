//! Container log rotation (upstream `pkg/kubelet/logs/container_log_manager.go`) and the
//! legacy `/var/log/containers` symlink names (`kuberuntime/helpers.go` `legacyLogSymlink`).
//!
//! Every monitoring period, each running container's CRI log file that reached
//! `containerLogMaxSize` is renamed to `<log>.<YYYYMMDD-hhmmss>`, the runtime is asked to
//! reopen it (`ReopenContainerLog`), older rotated files are gzip-compressed, and at most
//! `containerLogMaxFiles` files are kept (the live one included).
//!
//! Rotation runs on its own task (started by the kubelet, upstream `containerLogManager.Start`),
//! never on the sync loop. Compression streams each file through gzip on a blocking thread
//! (`spawn_blocking`), as upstream's `compressLog` copies through `gzip.Writer`: a log of
//! any size costs a small buffer, and the async workers never wait for disk I/O.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kubelet_container::Clock;
use kubelet_cri::RuntimeService;
use kubelet_cri::v1::{ContainerFilter, ContainerState};
use tokio::sync::Mutex;

use crate::error::RuntimeManagerError;
use crate::os::OsInterface;

const TIMESTAMP_FORMAT: &str = "%Y%m%d-%H%M%S";
const COMPRESS_SUFFIX: &str = ".gz";
const TMP_SUFFIX: &str = ".tmp";
const MAX_SYMLINK_NAME: usize = 255 - 4;

/// `logSymlink`: `<dir>/<pod>_<namespace>_<container>-<id>.log`, cut to fit a file name.
pub fn legacy_log_symlink(
    dir: &Path,
    container_id: &str,
    container: &str,
    pod: &str,
    namespace: &str,
) -> PathBuf {
    let mut name = format!("{pod}_{namespace}_{container}-{container_id}");
    if name.len() > MAX_SYMLINK_NAME {
        let mut cut = MAX_SYMLINK_NAME;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
    }
    dir.join(format!("{name}.log"))
}

/// Lines read from the log for a termination message (`MaxContainerTerminationMessageLogLines`).
pub const TERMINATION_MESSAGE_LOG_LINES: usize = 80;
/// Bytes kept from the log for a termination message (`MaxContainerTerminationMessageLogLength`).
pub const TERMINATION_MESSAGE_LOG_BYTES: usize = 2048;

/// The content of the last `lines` lines of a CRI log file (`<time> <stream> <P|F> <text>`),
/// partial lines joined, cut to the last `max_bytes` bytes (upstream
/// `readLastStringFromContainerLogs`).
pub fn tail_cri_log(
    os: &dyn OsInterface,
    path: &Path,
    lines: usize,
    max_bytes: usize,
) -> Result<String, String> {
    let data = os
        .read(path)
        .map_err(|e| format!("Error on reading termination message from logs: {e}"))?;
    let text = String::from_utf8_lossy(&data);
    let all: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in &all[all.len().saturating_sub(lines)..] {
        let mut parts = line.splitn(4, ' ');
        let (_time, _stream, tag, content) =
            (parts.next(), parts.next(), parts.next(), parts.next());
        out.push_str(content.unwrap_or_default());
        if tag != Some("P") {
            out.push('\n');
        }
    }
    if out.len() > max_bytes {
        let mut cut = out.len() - max_bytes;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = out[cut..].to_string();
    }
    Ok(out)
}

/// `containerLogMaxSize` / `containerLogMaxFiles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRotatePolicy {
    /// Rotate once the live file reaches this many bytes.
    pub max_size: u64,
    /// Files kept per container, the live one included (at least 2).
    pub max_files: usize,
}

impl LogRotatePolicy {
    /// Validates like `NewContainerLogManager`.
    pub fn new(max_size: i64, max_files: i32) -> Result<Self, RuntimeManagerError> {
        if max_files <= 1 {
            return Err(RuntimeManagerError::InvalidPod(format!(
                "invalid containerLogMaxFiles {max_files}: max files must be greater than 1"
            )));
        }
        let max_size = u64::try_from(max_size)
            .ok()
            .filter(|s| *s > 0)
            .ok_or_else(|| {
                RuntimeManagerError::InvalidPod(format!(
                    "invalid containerLogMaxSize {max_size}: must be positive"
                ))
            })?;
        Ok(Self {
            max_size,
            max_files: usize::try_from(max_files).unwrap_or(2),
        })
    }
}

/// Rotates and cleans CRI container log files.
pub struct ContainerLogManager {
    runtime: Arc<dyn RuntimeService>,
    os: Arc<dyn OsInterface>,
    clock: Arc<dyn Clock>,
    policy: LogRotatePolicy,
    /// Held for a whole pass (upstream's `mutex`); holds the log path of each running
    /// container seen by an earlier pass.
    log_paths: Mutex<HashMap<String, PathBuf>>,
}

impl ContainerLogManager {
    /// A log manager rotating through `runtime`.
    pub fn new(
        runtime: Arc<dyn RuntimeService>,
        os: Arc<dyn OsInterface>,
        clock: Arc<dyn Clock>,
        policy: LogRotatePolicy,
    ) -> Self {
        Self {
            runtime,
            os,
            clock,
            policy,
            log_paths: Mutex::new(HashMap::new()),
        }
    }

    /// Runs [`Self::rotate_logs`] every `interval` (`containerLogMonitorInterval`, 10 s) forever.
    pub async fn run(&self, interval: Duration) {
        let mut ticker = tokio::time::interval(interval);
        loop {
            ticker.tick().await;
            if let Err(e) = self.rotate_logs().await {
                tracing::error!(error = %e, "Failed to rotate container logs");
            }
        }
    }

    /// One pass over running containers (`rotateLogs`); per-container failures are logged.
    ///
    /// Not upstream: upstream asks the runtime for each running container's status
    /// (`ContainerStatus`) on every pass, only to read its log path — 30 calls every 10 s on
    /// an idle node with 30 pods, more than the PLEG's relists. A container's log path is
    /// fixed when it is created (CRI `ContainerConfig.log_path` under the sandbox's log
    /// directory), so kubelet-rs asks once per container and keeps the answer while the
    /// container is listed as running. The rotation itself is upstream's.
    pub async fn rotate_logs(&self) -> Result<(), RuntimeManagerError> {
        let mut log_paths = self.log_paths.lock().await;
        let containers = self
            .runtime
            .list_containers(Some(&ContainerFilter::default()))
            .await
            .map_err(|e| RuntimeManagerError::Cri {
                method: "ListContainers",
                message: e.to_string(),
            })?;
        let running: std::collections::HashSet<&str> = containers
            .iter()
            .filter(|c| c.state == ContainerState::ContainerRunning as i32)
            .map(|c| c.id.as_str())
            .collect();
        log_paths.retain(|id, _| running.contains(&id.as_str()));
        for id in running {
            if let Err(e) = self.rotate_container(id, &mut log_paths).await {
                tracing::error!(container_id = %id, error = %e, "Failed to rotate log for container");
            }
        }
        Ok(())
    }

    async fn rotate_container(
        &self,
        id: &str,
        log_paths: &mut HashMap<String, PathBuf>,
    ) -> Result<(), String> {
        let path = match log_paths.get(id) {
            Some(p) => p.clone(),
            None => {
                let resp = self
                    .runtime
                    .container_status(id, false)
                    .await
                    .map_err(|e| e.to_string())?;
                let p = PathBuf::from(resp.status.map(|s| s.log_path).unwrap_or_default());
                log_paths.insert(id.to_owned(), p.clone());
                p
            }
        };
        if path.as_os_str().is_empty() {
            return Ok(());
        }
        let size = match self.os.file_size(&path) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A previous rotation may have lost the file: ask the runtime to recreate it.
                self.runtime
                    .reopen_container_log(id)
                    .await
                    .map_err(|e| e.to_string())?;
                self.os.file_size(&path).map_err(|e| e.to_string())?
            }
            Err(e) => return Err(e.to_string()),
        };
        if size < self.policy.max_size {
            return Ok(());
        }
        self.rotate_log(id, &path).await
    }

    /// Rotated siblings of `log` (`<log>.*`), sorted oldest first.
    fn rotated_files(&self, log: &Path) -> Vec<PathBuf> {
        let (Some(dir), Some(base)) = (
            log.parent(),
            log.file_name().map(|n| n.to_string_lossy().into_owned()),
        ) else {
            return Vec::new();
        };
        let prefix = format!("{base}.");
        let mut files: Vec<PathBuf> = self
            .os
            .read_dir(dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .map(|n| dir.join(n))
            .collect();
        files.sort();
        files
    }

    /// `rotateLog`.
    async fn rotate_log(&self, id: &str, log: &Path) -> Result<(), String> {
        let all = self.rotated_files(log);
        // cleanupUnusedLogs: temporaries and originals already compressed are garbage.
        let mut in_use = Vec::new();
        for l in &all {
            let s = l.to_string_lossy();
            let compressed_twin = all
                .iter()
                .any(|o| o.to_string_lossy() == format!("{s}{COMPRESS_SUFFIX}"));
            if s.ends_with(TMP_SUFFIX) || (!s.ends_with(COMPRESS_SUFFIX) && compressed_twin) {
                let _ = self.os.remove_file(l);
            } else {
                in_use.push(l.clone());
            }
        }
        // removeExcessLogs: keep max_files - 2 rotated files (+ the one rotated now + the live one).
        let keep = self.policy.max_files.saturating_sub(2);
        let excess = in_use.len().saturating_sub(keep);
        for l in in_use.drain(..excess) {
            self.os
                .remove_file(&l)
                .map_err(|e| format!("failed to remove old log {}: {e}", l.display()))?;
        }
        for l in in_use
            .iter()
            .filter(|l| !l.to_string_lossy().ends_with(COMPRESS_SUFFIX))
        {
            self.compress(l).await?;
        }
        // rotateLatestLog.
        let stamp = self
            .clock
            .now()
            .to_zoned(jiff::tz::TimeZone::system())
            .strftime(TIMESTAMP_FORMAT)
            .to_string();
        let rotated = PathBuf::from(format!("{}.{stamp}", log.display()));
        self.os
            .rename(log, &rotated)
            .map_err(|e| format!("failed to rotate log {}: {e}", log.display()))?;
        if let Err(e) = self.runtime.reopen_container_log(id).await {
            if let Err(re) = self.os.rename(&rotated, log) {
                tracing::error!(rotated = %rotated.display(), error = %re, "Failed to rename rotated log");
            }
            return Err(format!("failed to reopen container log {id:?}: {e}"));
        }
        Ok(())
    }

    /// `compressLog` on a blocking thread (see [`compress_log`]).
    async fn compress(&self, log: &Path) -> Result<(), String> {
        let os = self.os.clone();
        let path = log.to_path_buf();
        tokio::task::spawn_blocking(move || compress_log(os.as_ref(), &path))
            .await
            .map_err(|e| format!("failed to compress log {}: {e}", log.display()))?
    }

    /// `Clean`: removes a container's log file and all its rotations.
    pub fn clean(&self, log_path: &str) {
        if log_path.is_empty() {
            return;
        }
        let log = Path::new(log_path);
        for l in std::iter::once(log.to_path_buf()).chain(self.rotated_files(log)) {
            if let Err(e) = self.os.remove_file(&l)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::error!(path = %l.display(), error = %e, "Failed to remove container log");
            }
        }
    }
}

/// `compressLog`: streams `log` through gzip into `<log>.tmp`, renames it to `<log>.gz` and
/// removes the original. Blocking I/O: run it on a blocking thread.
pub fn compress_log(os: &dyn OsInterface, log: &Path) -> Result<(), String> {
    let tmp = PathBuf::from(format!("{}{TMP_SUFFIX}", log.display()));
    let out = PathBuf::from(format!("{}{COMPRESS_SUFFIX}", log.display()));
    let mut src = os
        .open(log)
        .map_err(|e| format!("failed to open log {}: {e}", log.display()))?;
    let written = os.create(&tmp).and_then(|dst| {
        let mut enc = flate2::write::GzEncoder::new(dst, flate2::Compression::default());
        std::io::copy(&mut src, &mut enc)?;
        let mut dst = enc.finish()?;
        dst.flush()
    });
    let result = written
        .and_then(|()| os.rename(&tmp, &out))
        .and_then(|()| os.remove_file(log))
        .map_err(|e| format!("failed to compress log {}: {e}", log.display()));
    if result.is_err() {
        let _ = os.remove_file(&tmp);
    }
    result
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::os::RealOs;

    #[test]
    fn compress_log_streams_a_large_file_through_gzip() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("0.log.20260101-000000");
        // 4 MiB of varied lines: far more than one copy buffer.
        let line = |i: usize| {
            format!(
                "2026-01-01T00:00:00Z stdout F line {i} {}\n",
                "x".repeat(i % 97)
            )
        };
        let content: String = (0..50_000).map(line).collect();
        std::fs::write(&log, &content).unwrap();

        compress_log(&RealOs, &log).unwrap();

        assert!(!log.exists(), "the original is removed");
        assert!(!tmp.path().join("0.log.20260101-000000.tmp").exists());
        let gz = std::fs::File::open(tmp.path().join("0.log.20260101-000000.gz")).unwrap();
        let mut back = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back.len(), content.len());
        assert!(back == content);
    }

    #[test]
    fn compress_log_of_a_missing_file_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("gone.log.1");
        let err = compress_log(&RealOs, &log).unwrap_err();
        assert!(err.contains("failed to open log"), "{err}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
