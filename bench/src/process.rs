//! The kubelet under test as a child process: start, `/healthz` wait, SIGTERM stop.
//!
//! The child is killed (SIGKILL) if the handle is dropped without [`KubeletProcess::stop`], e.g.
//! when the benchmark is interrupted.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::charge::{KubeletCgroup, proc_cpu_seconds};
use crate::error::{BenchError, BenchResult};
use crate::manifest::NODE_NAME;

/// A running kubelet.
#[derive(Debug)]
pub struct KubeletProcess {
    child: Child,
    log: PathBuf,
    binary: PathBuf,
    /// Its own cgroup (`crate::charge`), when one could be made.
    cgroup: Option<KubeletCgroup>,
}

impl KubeletProcess {
    /// Starts `binary --config <config> --root-dir <root> --hostname-override krsbench-node --v 2`
    /// and `extra`, with stdout and stderr going to `log`.
    pub fn spawn(
        binary: &Path,
        config: &Path,
        root_dir: &Path,
        log: &Path,
        extra: &[String],
    ) -> BenchResult<Self> {
        let out = std::fs::File::create(log).map_err(BenchError::io("create", log))?;
        let err = out.try_clone().map_err(BenchError::io("dup", log))?;
        let child = Command::new(binary)
            .arg("--config")
            .arg(config)
            .arg("--root-dir")
            .arg(root_dir)
            .args(["--hostname-override", NODE_NAME, "--v", "2"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(BenchError::io("start", binary))?;
        // Its own cgroup, named after the run directory (unique per run).
        let name = log.parent().and_then(Path::file_name).map_or_else(
            || "kubelet".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        let cgroup = child.id().and_then(|pid| KubeletCgroup::create(&name, pid));
        Ok(Self {
            child,
            log: log.to_owned(),
            binary: binary.to_owned(),
            cgroup,
        })
    }

    /// CPU-seconds charged to the kubelet so far: its cgroup's `cpuacct.usage` (children
    /// included), or its own `utime + stime` without a cgroup.
    pub fn cpu_seconds(&self) -> Option<f64> {
        match &self.cgroup {
            Some(cg) => cg.cpu_seconds(),
            None => proc_cpu_seconds(self.child.id()?).map(|(own, _)| own),
        }
    }

    /// Peak memory of the kubelet's cgroup in MiB (`None` without a memory cgroup).
    pub fn memory_peak_mib(&self) -> Option<f64> {
        self.cgroup
            .as_ref()
            .and_then(KubeletCgroup::memory_peak_mib)
    }

    /// Whether the CPU figures come from a cgroup (children included).
    pub fn in_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// Its process ID (`None` once reaped).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// An error if the process has exited.
    pub fn check_alive(&mut self) -> BenchResult<()> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(self.exited(status)),
            Err(e) => Err(BenchError::io("wait for", &self.binary)(e)),
        }
    }

    fn exited(&self, status: ExitStatus) -> BenchError {
        BenchError::Kubelet(format!(
            "{} exited ({status}); last lines of {}:\n{}",
            self.binary.display(),
            self.log.display(),
            tail(&self.log, 15)
        ))
    }

    /// Waits until `GET http://127.0.0.1:<port>/healthz` answers 200 `ok`; returns how long
    /// that took.
    pub async fn wait_healthy(&mut self, port: u16, timeout: Duration) -> BenchResult<Duration> {
        let t0 = Instant::now();
        loop {
            self.check_alive()?;
            if healthz_ok(port).await {
                return Ok(t0.elapsed());
            }
            if t0.elapsed() > timeout {
                return Err(BenchError::Timeout(format!(
                    "{} not healthy on 127.0.0.1:{port}/healthz after {} s; last lines of {}:\n{}",
                    self.binary.display(),
                    timeout.as_secs(),
                    self.log.display(),
                    tail(&self.log, 15)
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace`; then its cgroup is removed.
    pub async fn stop(mut self, grace: Duration) -> BenchResult<()> {
        let cgroup = self.cgroup.take();
        let r = self.stop_process(grace).await;
        if let Some(cg) = cgroup {
            // Children (if any) may outlive it for a moment.
            for _ in 0..20 {
                cg.remove();
                if !Path::new("/proc").join(cg.pid().to_string()).exists() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            cg.remove();
        }
        r
    }

    async fn stop_process(&mut self, grace: Duration) -> BenchResult<()> {
        if self.child.try_wait().ok().flatten().is_some() {
            return Ok(());
        }
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(BenchError::io("wait for", &self.binary)(e)),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(BenchError::Kubelet(format!(
                    "{} ignored SIGTERM for {} s and was killed",
                    self.binary.display(),
                    grace.as_secs()
                )))
            }
        }
    }
}

/// One plain HTTP/1.1 `GET /healthz` on 127.0.0.1.
async fn healthz_ok(port: u16) -> bool {
    let attempt = async {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        Some(is_healthz_ok(&buf))
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// Whether a raw HTTP response is `200` with body `ok` (plain or chunked).
pub fn is_healthz_ok(response: &[u8]) -> bool {
    let text = String::from_utf8_lossy(response);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let status_ok = head
        .lines()
        .next()
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("200"));
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body_ok = if chunked {
        body.split("\r\n").any(|l| l == "ok")
    } else {
        body.trim() == "ok"
    };
    status_ok && body_ok
}

/// The last `n` lines of a file (empty when unreadable).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthz_responses() {
        assert!(is_healthz_ok(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        ));
        assert!(is_healthz_ok(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
        ));
        assert!(!is_healthz_ok(
            b"HTTP/1.1 500 Internal Server Error\r\n\r\nok"
        ));
        assert!(!is_healthz_ok(b"HTTP/1.1 200 OK\r\n\r\n[-]pleg failed"));
        assert!(!is_healthz_ok(b"HTTP/1.1 200 OK"));
    }

    #[test]
    fn tail_of_missing_file_is_empty() {
        assert_eq!(tail(Path::new("/nonexistent/krsbench.log"), 3), "");
    }
}
