//! Reading container log files (mirrors `k8s.io/cri-client/pkg/logs/logs.go` `ReadLogs` and
//! `tail.go` `findTailLineStartIndex`), as `kubectl logs` gets them through the kubelet.
//!
//! The runtime writes each container's output to a file in the CRI log format, one record
//! per line: `<RFC 3339 nano time> <stdout|stderr> <P|F>[:<more tags>] <content>`; `P` marks a
//! partial line continued by the next record, `F` a full one. [`read_logs`] reads the live
//! file only (rotated `<log>.<stamp>` files are not read, as upstream), starting `tail` lines
//! from the end, writes the wanted streams' content (with the time prefixed when asked, only
//! at the start of a line, so joined partial lines get one prefix), stops after `bytes` bytes,
//! and with `follow` waits for more (inotify on the directory, re-checked every second) until
//! the container is no longer running; a file recreated by log rotation is reopened.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use inotify::{EventMask, Inotify, WatchMask};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, BufReader};

use crate::RuntimeService;
use crate::v1::ContainerState;

/// `logForceCheckPeriod`: how often `follow` re-checks the file without a notification.
pub const LOG_FORCE_CHECK_PERIOD: Duration = Duration::from_secs(1);
const BLOCK_SIZE: u64 = 1024;

/// Where log content goes (upstream passes `io.Writer`s).
#[async_trait]
pub trait LogWriter: Send {
    /// Writes all of `buf`.
    async fn write_log(&mut self, buf: &[u8]) -> io::Result<()>;
}

#[async_trait]
impl LogWriter for Vec<u8> {
    async fn write_log(&mut self, buf: &[u8]) -> io::Result<()> {
        self.extend_from_slice(buf);
        Ok(())
    }
}

/// A channel of chunks (the kubelet server streams them as the response body); a closed
/// receiver (the client went away) is a broken pipe.
#[async_trait]
impl LogWriter for tokio::sync::mpsc::Sender<Vec<u8>> {
    async fn write_log(&mut self, buf: &[u8]) -> io::Result<()> {
        self.send(buf.to_vec())
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }
}

/// `LogOptions` (built by the kubelet from `v1.PodLogOptions`, `NewLogOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Lines from the end to start at; `None` reads the whole file.
    pub tail: Option<u64>,
    /// Stop after this many bytes; `None`: no limit.
    pub bytes: Option<u64>,
    /// Skip records older than this.
    pub since: Option<jiff::Timestamp>,
    /// Keep reading while the container runs.
    pub follow: bool,
    /// Prefix each line with its time (`RFC3339NanoFixed`).
    pub timestamp: bool,
    /// Write stdout records.
    pub stdout: bool,
    /// Write stderr records.
    pub stderr: bool,
}

impl LogOptions {
    /// `NewLogOptions`: `since` is the later of `now - since_seconds` and `since_time`.
    pub fn new(
        tail_lines: Option<i64>,
        limit_bytes: Option<i64>,
        since_seconds: Option<i64>,
        since_time: Option<jiff::Timestamp>,
        now: jiff::Timestamp,
    ) -> Self {
        let mut since =
            since_seconds.and_then(|s| now.checked_sub(jiff::SignedDuration::from_secs(s)).ok());
        if let Some(t) = since_time
            && since.is_none_or(|s| t > s)
        {
            since = Some(t);
        }
        LogOptions {
            tail: tail_lines.and_then(|t| u64::try_from(t).ok()),
            bytes: limit_bytes.and_then(|b| u64::try_from(b).ok()),
            since,
            stdout: true,
            stderr: true,
            ..LogOptions::default()
        }
    }
}

/// Why reading stopped early (the kubelet writes the message into the response).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// `filepath.EvalSymlinks` failed.
    #[error("failed to try resolving symlinks in path {path:?}: {source}")]
    Resolve {
        /// The log path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Opening, seeking or reading the file failed.
    #[error("failed to {what} log file {path:?}: {source}")]
    Io {
        /// `open`, `read`, `tail`, `seek`.
        what: &'static str,
        /// The log path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The first line is in no known format.
    #[error("failed to get parse function: unsupported log format: {0:?}")]
    Format(String),
    /// The notification watch could not be set up or failed.
    #[error("failed to watch directory {dir:?}: {source}")]
    Watch {
        /// The log directory.
        dir: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Asking the runtime whether the container still runs failed.
    #[error("{0}")]
    Runtime(crate::CriError),
    /// The writer failed (e.g. the client went away).
    #[error("{0}")]
    Write(io::Error),
}

/// `LogStreamType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    /// `stdout`.
    Stdout,
    /// `stderr`.
    Stderr,
}

/// One parsed record (`logMessage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMessage {
    /// When the runtime wrote it.
    pub timestamp: jiff::Timestamp,
    /// The offset it was written with (kept for the `timestamps` prefix, as Go keeps the zone).
    pub offset_seconds: i32,
    /// Which stream.
    pub stream: LogStream,
    /// The content, with its newline for full lines and without for partial ones.
    pub log: Vec<u8>,
}

fn parse_offset(ts: &str) -> i32 {
    if ts.ends_with('Z') || ts.ends_with('z') || ts.len() < 6 {
        return 0;
    }
    let tail = &ts[ts.len() - 6..];
    let sign = match tail.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return 0,
    };
    let hours: i32 = tail.get(1..3).and_then(|h| h.parse().ok()).unwrap_or(0);
    let minutes: i32 = tail.get(4..6).and_then(|m| m.parse().ok()).unwrap_or(0);
    sign * (hours * 3600 + minutes * 60)
}

/// `parseCRILog`: `<time> <stream> <tags> <content>`.
pub fn parse_cri_log(line: &[u8]) -> Result<LogMessage, String> {
    let mut rest = line;
    let mut next = |what: &str| -> Result<&[u8], String> {
        let idx = rest
            .iter()
            .position(|b| *b == b' ')
            .ok_or_else(|| format!("{what} is not found"))?;
        let field = &rest[..idx];
        rest = &rest[idx + 1..];
        Ok(field)
    };
    let ts = std::str::from_utf8(next("timestamp")?).map_err(|e| e.to_string())?;
    let timestamp: jiff::Timestamp = ts
        .parse()
        .map_err(|e| format!("unexpected timestamp format {ts:?}: {e}"))?;
    let stream = match next("stream type")? {
        b"stdout" => LogStream::Stdout,
        b"stderr" => LogStream::Stderr,
        other => {
            return Err(format!(
                "unexpected stream type {:?}",
                String::from_utf8_lossy(other)
            ));
        }
    };
    let tags = next("log tag")?;
    let partial = tags.split(|b| *b == b':').next() == Some(b"P");
    let mut log = rest;
    if partial && log.last() == Some(&b'\n') {
        log = &log[..log.len() - 1];
    }
    Ok(LogMessage {
        offset_seconds: parse_offset(ts),
        timestamp,
        stream,
        log: log.to_vec(),
    })
}

/// `RFC3339NanoFixed` (`2006-01-02T15:04:05.000000000Z07:00`) in the record's own offset.
pub fn format_timestamp(ts: jiff::Timestamp, offset_seconds: i32) -> String {
    let offset = jiff::tz::Offset::from_seconds(offset_seconds).unwrap_or(jiff::tz::Offset::UTC);
    let dt = offset.to_datetime(ts);
    let zone = if offset_seconds == 0 {
        "Z".to_string()
    } else {
        let sign = if offset_seconds < 0 { '-' } else { '+' };
        let abs = offset_seconds.unsigned_abs();
        format!("{sign}{:02}:{:02}", abs / 3600, (abs % 3600) / 60)
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}{zone}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond()
    )
}

/// `logWriter`: applies `since`, the time prefix, the stream choice and the byte limit.
struct Writer<'w> {
    out: &'w mut dyn LogWriter,
    opts: &'w LogOptions,
    remain: u64,
}

enum Wrote {
    More,
    /// `errMaximumWrite`.
    LimitReached,
}

impl Writer<'_> {
    async fn write(&mut self, msg: &LogMessage, add_prefix: bool) -> Result<Wrote, LogError> {
        if self.opts.since.is_some_and(|s| msg.timestamp < s) {
            return Ok(Wrote::More);
        }
        let mut line = Vec::with_capacity(msg.log.len() + 36);
        if self.opts.timestamp && add_prefix {
            line.extend_from_slice(format_timestamp(msg.timestamp, msg.offset_seconds).as_bytes());
            line.push(b' ');
        }
        line.extend_from_slice(&msg.log);
        let keep = usize::try_from(self.remain).unwrap_or(usize::MAX);
        line.truncate(keep);
        let wanted = match msg.stream {
            LogStream::Stdout => self.opts.stdout,
            LogStream::Stderr => self.opts.stderr,
        };
        if !wanted {
            return Ok(Wrote::More);
        }
        self.out.write_log(&line).await.map_err(LogError::Write)?;
        self.remain = self.remain.saturating_sub(line.len() as u64);
        Ok(if self.remain == 0 {
            Wrote::LimitReached
        } else {
            Wrote::More
        })
    }
}

/// `findTailLineStartIndex`: the offset of the `n`-th line from the end (counting raw lines,
/// partial records included, as upstream does).
pub async fn find_tail_line_start_index(
    f: &mut tokio::fs::File,
    n: Option<u64>,
) -> io::Result<u64> {
    let Some(n) = n else {
        return Ok(0);
    };
    let size = f.seek(io::SeekFrom::End(0)).await?;
    let mut left = 0;
    let mut count = 0_u64;
    let mut buf = Vec::new();
    let mut right = size;
    while right > 0 && count <= n {
        left = right.saturating_sub(BLOCK_SIZE);
        buf = vec![0; usize::try_from(right - left).unwrap_or(0)];
        f.seek(io::SeekFrom::Start(left)).await?;
        f.read_exact(&mut buf).await?;
        count += buf.iter().filter(|b| **b == b'\n').count() as u64;
        right = left;
    }
    let mut view = &buf[..];
    while count > n {
        let idx = view.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
        view = &view[idx..];
        left += idx as u64;
        count -= 1;
    }
    Ok(left)
}

/// `ReadLogs`: writes the container's log at `path` to `out` per `opts`. `container_id` is
/// asked about (`ContainerStatus`) only when following.
pub async fn read_logs(
    path: &Path,
    container_id: &str,
    opts: &LogOptions,
    runtime: &dyn RuntimeService,
    out: &mut dyn LogWriter,
) -> Result<(), LogError> {
    let path = tokio::fs::canonicalize(path)
        .await
        .map_err(|source| LogError::Resolve {
            path: path.to_path_buf(),
            source,
        })?;
    let io_err = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| LogError::Io { what, path, source }
    };
    let mut f = tokio::fs::File::open(&path)
        .await
        .map_err(io_err("open", &path))?;
    let start = find_tail_line_start_index(&mut f, opts.tail)
        .await
        .map_err(io_err("tail", &path))?;
    f.seek(io::SeekFrom::Start(start))
        .await
        .map_err(io_err("seek", &path))?;
    let limited = opts.tail.filter(|_| !opts.follow);
    let mut remaining = limited;
    let mut reader = BufReader::new(f);
    // Upstream creates the watcher at the first end of file; it is made before reading here,
    // so a rotation between the first read and the first wait is not missed.
    let mut watcher = if opts.follow {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        Some(LogWatcher::new(&dir, &base).map_err(|source| LogError::Watch { dir, source })?)
    } else {
        None
    };
    let mut found = true;
    let mut is_new_line = true;
    let mut writer = Writer {
        out,
        opts,
        remain: opts.bytes.unwrap_or(u64::MAX),
    };
    let mut line = Vec::new();
    let mut have_parser = false;
    loop {
        if remaining == Some(0) {
            return Ok(());
        }
        let n = reader
            .read_until(b'\n', &mut line)
            .await
            .map_err(io_err("read", &path))?;
        let complete = line.last() == Some(&b'\n');
        if !complete {
            // EOF (with a partial line in `line`, kept for the next read).
            if opts.follow {
                if !found {
                    return Ok(());
                }
                let Some(w) = &mut watcher else {
                    return Ok(());
                };
                let (still, recreated) = w.wait(container_id, runtime).await?;
                found = still;
                if recreated {
                    match tokio::fs::File::open(&path).await {
                        Ok(newf) => {
                            reader = BufReader::new(newf);
                            line.clear();
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io_err("open", &path)(e)),
                    }
                }
                continue;
            }
            let _ = n;
            if line.is_empty() {
                return Ok(());
            }
            tracing::info!(path = %path.display(), line = %String::from_utf8_lossy(&line), "Incomplete line in log file");
        }
        let parsed = parse_cri_log(&line);
        if !have_parser {
            // `getParseFunc`: the first line decides the format; the CRI format is the only
            // one a CRI runtime writes (the Docker JSON format of dockershim is not read).
            if parsed.is_err() {
                return Err(LogError::Format(
                    String::from_utf8_lossy(&line).into_owned(),
                ));
            }
            have_parser = true;
        }
        let msg = match parsed {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(path = %path.display(), err = %e, "Failed when parsing line in log file");
                line.clear();
                if !complete {
                    return Ok(());
                }
                continue;
            }
        };
        line.clear();
        if let Wrote::LimitReached = writer.write(&msg, is_new_line).await? {
            return Ok(());
        }
        if let Some(r) = &mut remaining {
            *r -= 1;
        }
        is_new_line = msg.log.last().is_none_or(|b| *b == b'\n');
        if !complete {
            return Ok(());
        }
    }
}

/// `waitLogs`' fsnotify watcher on the log directory.
struct LogWatcher {
    events: inotify::EventStream<Vec<u8>>,
    base: std::ffi::OsString,
}

impl LogWatcher {
    fn new(dir: &Path, base: &std::ffi::OsStr) -> io::Result<Self> {
        let inotify = Inotify::init()?;
        inotify.watches().add(
            dir,
            WatchMask::MODIFY
                | WatchMask::CREATE
                | WatchMask::MOVED_TO
                | WatchMask::MOVED_FROM
                | WatchMask::DELETE
                | WatchMask::ATTRIB,
        )?;
        Ok(LogWatcher {
            events: inotify.into_event_stream(vec![0; 4096])?,
            base: base.to_os_string(),
        })
    }

    /// `waitLogs`: `(found, recreated)`; `found` is false once the container is not running.
    async fn wait(
        &mut self,
        container_id: &str,
        runtime: &dyn RuntimeService,
    ) -> Result<(bool, bool), LogError> {
        match runtime.container_status(container_id, false).await {
            Ok(resp) => {
                let running = resp
                    .status
                    .is_some_and(|s| s.state == ContainerState::ContainerRunning as i32);
                if !running {
                    return Ok((false, false));
                }
            }
            // A runtime restarting is treated as running (`codes.Unavailable`).
            Err(e) if e.code() == Some(tonic::Code::Unavailable) => {}
            Err(e) => return Err(LogError::Runtime(e)),
        }
        let mut retries = 5;
        loop {
            let ev = tokio::time::timeout(LOG_FORCE_CHECK_PERIOD, self.events.next()).await;
            match ev {
                Err(_) => return Ok((true, false)),
                Ok(None) => {
                    return Err(LogError::Watch {
                        dir: PathBuf::new(),
                        source: io::Error::other("inotify stream ended"),
                    });
                }
                Ok(Some(Ok(e))) => {
                    let created = e.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO);
                    let recreated = created && e.name.as_deref() == Some(self.base.as_os_str());
                    return Ok((true, recreated));
                }
                Ok(Some(Err(err))) => {
                    tracing::error!(err = %err, retries, "Received fsnotify watch error, retrying unless no more retries left");
                    if retries == 0 {
                        return Err(LogError::Watch {
                            dir: PathBuf::new(),
                            source: err,
                        });
                    }
                    retries -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::fake::{FakeRuntimeService, container_config, sandbox_config};

    const LOG: &str = "2016-10-06T00:17:09.669794202Z stdout F line one\n\
2016-10-06T00:17:10.113242941Z stderr F line two\n\
2016-10-06T00:17:10.113242941Z stdout P part-\n\
2016-10-06T00:17:10.213242941Z stdout F joined\n\
2016-10-06T00:17:11.000000000+02:00 stdout F offset\n";

    fn write_log(content: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        std::fs::write(&path, content).unwrap();
        (dir, path)
    }

    async fn read(content: &str, opts: LogOptions) -> String {
        let (_dir, path) = write_log(content);
        let rt = FakeRuntimeService::new();
        let mut out = Vec::new();
        read_logs(&path, "", &opts, &rt, &mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    fn all() -> LogOptions {
        LogOptions::new(None, None, None, None, jiff::Timestamp::now())
    }

    #[test]
    fn parses_cri_records() {
        let m = parse_cri_log(b"2016-10-06T00:17:09.669794202Z stdout P:x part\n").unwrap();
        assert_eq!(m.stream, LogStream::Stdout);
        assert_eq!(m.log, b"part");
        let m = parse_cri_log(b"2016-10-06T00:17:09.669794202Z stderr F full\n").unwrap();
        assert_eq!(m.log, b"full\n");
        for bad in [
            &b"nospace"[..],
            b"notatime stdout F x\n",
            b"2016-10-06T00:17:09Z stdin F x\n",
            b"2016-10-06T00:17:09Z stdout\n",
        ] {
            assert!(parse_cri_log(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn timestamps_are_rfc3339_nano_fixed_in_their_offset() {
        let m = parse_cri_log(b"2016-10-06T00:17:09.5Z stdout F x\n").unwrap();
        assert_eq!(
            format_timestamp(m.timestamp, m.offset_seconds),
            "2016-10-06T00:17:09.500000000Z"
        );
        let m = parse_cri_log(b"2016-10-06T00:17:09.000000001-05:30 stdout F x\n").unwrap();
        assert_eq!(
            format_timestamp(m.timestamp, m.offset_seconds),
            "2016-10-06T00:17:09.000000001-05:30"
        );
    }

    #[tokio::test]
    async fn whole_log_with_partial_lines_joined() {
        assert_eq!(
            read(LOG, all()).await,
            "line one\nline two\npart-joined\noffset\n"
        );
    }

    #[tokio::test]
    async fn timestamps_prefix_each_line_once() {
        let opts = LogOptions {
            timestamp: true,
            ..all()
        };
        assert_eq!(
            read(LOG, opts).await,
            "2016-10-06T00:17:09.669794202Z line one\n\
2016-10-06T00:17:10.113242941Z line two\n\
2016-10-06T00:17:10.113242941Z part-joined\n\
2016-10-06T00:17:11.000000000+02:00 offset\n"
        );
    }

    #[tokio::test]
    async fn tail_counts_raw_lines() {
        let tail = |n| LogOptions::new(Some(n), None, None, None, jiff::Timestamp::now());
        assert_eq!(read(LOG, tail(0)).await, "");
        assert_eq!(read(LOG, tail(1)).await, "offset\n");
        assert_eq!(read(LOG, tail(2)).await, "joined\noffset\n");
        assert_eq!(
            read(LOG, tail(100)).await,
            "line one\nline two\npart-joined\noffset\n"
        );
        // Tail over more than one 1 KiB block.
        let long: String = (0..500)
            .map(|i| format!("2016-10-06T00:17:09.669794202Z stdout F l{i}\n"))
            .collect();
        assert_eq!(read(&long, tail(3)).await, "l497\nl498\nl499\n");
    }

    #[tokio::test]
    async fn limit_bytes_cuts_the_output() {
        let opts = LogOptions::new(None, Some(12), None, None, jiff::Timestamp::now());
        assert_eq!(read(LOG, opts).await, "line one\nlin");
    }

    #[tokio::test]
    async fn since_skips_older_records() {
        let since: jiff::Timestamp = "2016-10-06T00:17:10Z".parse().unwrap();
        let opts = LogOptions::new(None, None, None, Some(since), jiff::Timestamp::now());
        assert_eq!(read(LOG, opts).await, "line two\npart-joined\n");
        // sinceSeconds relative to now: the later bound wins.
        let now: jiff::Timestamp = "2016-10-06T00:17:11Z".parse().unwrap();
        let opts = LogOptions::new(None, None, Some(1), None, now);
        assert_eq!(read(LOG, opts).await, "line two\npart-joined\n");
    }

    #[tokio::test]
    async fn one_stream_only() {
        let opts = LogOptions {
            stdout: false,
            ..all()
        };
        assert_eq!(read(LOG, opts).await, "line two\n");
    }

    #[tokio::test]
    async fn an_unknown_format_is_an_error_and_a_missing_file_too() {
        let (_dir, path) = write_log("{\"log\":\"docker\"}\n");
        let rt = FakeRuntimeService::new();
        let err = read_logs(&path, "", &all(), &rt, &mut Vec::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("unsupported log format"), "{err}");
        let err = read_logs(
            Path::new("/nonexistent/0.log"),
            "",
            &all(),
            &rt,
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("failed to try resolving symlinks in path"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn follow_streams_until_the_container_stops_and_survives_rotation() {
        let rt = std::sync::Arc::new(FakeRuntimeService::new());
        let sb_cfg = sandbox_config("web", "default", "uid-1", 0);
        let sb = rt.run_pod_sandbox(&sb_cfg, "").await.unwrap();
        let c_cfg = container_config("app", 0, "busybox", &["sleep", "3600"]);
        let id = rt.create_container(&sb, &c_cfg, &sb_cfg).await.unwrap();
        rt.start_container(&id).await.unwrap();
        let (dir, path) = write_log("2016-10-06T00:17:09.1Z stdout F first\n");
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
        let opts = LogOptions {
            follow: true,
            ..all()
        };
        let reader = {
            let rt = rt.clone();
            let path = path.clone();
            tokio::spawn(async move {
                let mut tx = tx;
                read_logs(&path, &id, &opts, rt.as_ref(), &mut tx).await
            })
        };
        assert_eq!(rx.recv().await.unwrap(), b"first\n");
        // A partial write is held until its newline arrives.
        let append = |s: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(s.as_bytes()).unwrap();
        };
        append("2016-10-06T00:17:09.2Z stdout F sec");
        append("ond\n");
        assert_eq!(rx.recv().await.unwrap(), b"second\n");
        // Rotation: the file is renamed and recreated; the new one is followed.
        std::fs::rename(&path, dir.path().join("0.log.20161006-001709")).unwrap();
        std::fs::write(&path, "2016-10-06T00:17:09.3Z stderr F third\n").unwrap();
        assert_eq!(rx.recv().await.unwrap(), b"third\n");
        // The container exits: the rest is read, then the stream ends.
        let cid = rt.containers()[0].status.id.clone();
        rt.exit_container(&cid, 0).unwrap();
        append("2016-10-06T00:17:09.4Z stdout F last\n");
        let mut rest = Vec::new();
        while let Some(chunk) = rx.recv().await {
            rest.extend(chunk);
        }
        assert_eq!(rest, b"last\n");
        reader.await.unwrap().unwrap();
    }
}
