//! Stats scrapes against a running kubelet (issue 8's benchmark): with the pods up, the
//! kubelet's CPU while idle (upstream pays cAdvisor's housekeeping all the time), then for
//! each endpoint (`/stats/summary`, `/metrics/resource`, on the read-only port) `count`
//! sequential scrapes one `interval` apart: each scrape's latency, and the kubelet's CPU per
//! scrape = (CPU during the scrapes − idle rate × their duration) / count. CPU is the
//! process's `utime + stime` from `/proc/<pid>/stat` (clock ticks, 10 ms); the runtime's CPU
//! (containerd answering `ListContainerStats`) is not counted for either kubelet.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{BenchError, BenchResult};
use crate::stats::percentile;

/// What to scrape.
#[derive(Clone, Debug)]
pub struct ScrapeConfig {
    /// The read-only port.
    pub port: u16,
    /// Paths, each scraped `count` times.
    pub paths: Vec<String>,
    /// Scrapes per path.
    pub count: usize,
    /// Pause between two scrapes.
    pub interval: Duration,
    /// Wait after the pods are running (upstream's cAdvisor discovers the new cgroups).
    pub warmup: Duration,
    /// The idle CPU window.
    pub idle_window: Duration,
    /// `perf record` of the kubelet during each path's scrapes, to `<profile>.<n>` (`n`:
    /// the path's index); `None`: no profile.
    pub profile: Option<std::path::PathBuf>,
    /// `perf record --call-graph` mode (`fp`, `dwarf`).
    pub call_graph: String,
    /// Each path's last answer is written to `<dump>.<n>`; `None`: not kept.
    pub dump: Option<std::path::PathBuf>,
}

/// One endpoint's figures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EndpointOutcome {
    /// The path.
    pub path: String,
    /// Latency p50 in ms.
    pub p50_ms: f64,
    /// Latency p99 (the maximum of 20) in ms.
    pub p99_ms: f64,
    /// Kubelet CPU per scrape (idle subtracted) in ms.
    pub cpu_ms_per_scrape: f64,
    /// Size of the last answer in bytes.
    pub bytes: usize,
}

/// One kubelet's figures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScrapeOutcome {
    /// Kubelet CPU while nobody asks, in ms per second.
    pub idle_cpu_ms_per_s: f64,
    /// Per endpoint.
    pub endpoints: Vec<EndpointOutcome>,
}

/// `utime + stime` of `pid` in ms (USER_HZ = 100).
pub fn cpu_ms(pid: u32) -> BenchResult<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat =
        std::fs::read_to_string(&path).map_err(|e| BenchError::Kubelet(format!("{path}: {e}")))?;
    parse_cpu_ms(&stat).ok_or_else(|| BenchError::Kubelet(format!("{path}: cannot parse {stat:?}")))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line, in ms.
pub fn parse_cpu_ms(stat: &str) -> Option<f64> {
    // The command may contain spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) * 10.0)
}

/// `GET path` over HTTP/1.0; the body, or an error unless 200.
pub(crate) async fn get(port: u16, path: &str) -> BenchResult<String> {
    let fail = |e: std::io::Error| BenchError::Kubelet(format!("GET {path}: {e}"));
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(fail)?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .await
        .map_err(fail)?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.map_err(fail)?;
    let text = String::from_utf8_lossy(&buf);
    if !text.starts_with("HTTP/1.0 200") && !text.starts_with("HTTP/1.1 200") {
        let head: String = text.chars().take(300).collect();
        return Err(BenchError::Kubelet(format!("GET {path}: {head}")));
    }
    Ok(text
        .split_once("\r\n\r\n")
        .map_or_else(String::new, |(_, b)| b.to_string()))
}

/// Measures the kubelet `pid` (see the module doc).
pub async fn measure(pid: u32, cfg: &ScrapeConfig) -> BenchResult<ScrapeOutcome> {
    tokio::time::sleep(cfg.warmup).await;
    // One scrape of each path first: caches (and kubelet-rs's CPU rate samples) warm.
    for p in &cfg.paths {
        get(cfg.port, p).await?;
    }
    let (c0, t0) = (cpu_ms(pid)?, Instant::now());
    tokio::time::sleep(cfg.idle_window).await;
    let idle = (cpu_ms(pid)? - c0) / t0.elapsed().as_secs_f64();
    let mut endpoints = Vec::new();
    for (i, path) in cfg.paths.iter().enumerate() {
        let perf = match &cfg.profile {
            Some(p) => Some(Perf::record(
                pid,
                &format!("{}.{i}", p.display()),
                &cfg.call_graph,
            )?),
            None => None,
        };
        let (c0, t0) = (cpu_ms(pid)?, Instant::now());
        let mut latencies = Vec::with_capacity(cfg.count);
        let mut body = String::new();
        for _ in 0..cfg.count {
            let start = Instant::now();
            body = get(cfg.port, path).await?;
            latencies.push(start.elapsed());
            tokio::time::sleep(cfg.interval).await;
        }
        let busy = cpu_ms(pid)? - c0 - idle * t0.elapsed().as_secs_f64();
        if let Some(perf) = perf {
            perf.stop().await?;
        }
        let ms = |d: Option<Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        endpoints.push(EndpointOutcome {
            path: path.clone(),
            p50_ms: ms(percentile(&latencies, 50.0)),
            p99_ms: ms(percentile(&latencies, 99.0)),
            cpu_ms_per_scrape: busy / cfg.count.max(1) as f64,
            bytes: body.len(),
        });
        if let Some(d) = &cfg.dump {
            let file = format!("{}.{i}", d.display());
            std::fs::write(&file, &body)
                .map_err(|e| BenchError::Kubelet(format!("{file}: {e}")))?;
        }
    }
    Ok(ScrapeOutcome {
        idle_cpu_ms_per_s: idle,
        endpoints,
    })
}

/// A `perf record --call-graph <mode> -p <pid>` child, stopped with SIGINT (perf then writes its file).
pub(crate) struct Perf(tokio::process::Child);

impl Perf {
    pub(crate) fn record(pid: u32, out: &str, call_graph: &str) -> BenchResult<Perf> {
        let child = tokio::process::Command::new("perf")
            .args(["record", "-q", "--call-graph", call_graph, "-o", out])
            .args(["-p", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| BenchError::Kubelet(format!("perf record: {e}")))?;
        Ok(Perf(child))
    }

    pub(crate) async fn stop(mut self) -> BenchResult<()> {
        if let Some(id) = self.0.id() {
            let pid = nix::unistd::Pid::from_raw(id as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        }
        self.0
            .wait()
            .await
            .map_err(|e| BenchError::Kubelet(format!("perf record: {e}")))?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cpu_from_proc_stat() {
        let stat = "42 (kube let) S 1 42 42 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 12 0 100 0 0";
        assert_eq!(parse_cpu_ms(stat), Some(3800.0));
        assert_eq!(parse_cpu_ms("garbage"), None);
        assert!(cpu_ms(std::process::id()).unwrap() >= 0.0);
    }
}
