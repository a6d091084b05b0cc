//! Steady state with N pods running (B6, B10): once every pod of the batch runs, wait
//! `settle`, then over `window` take
//! * the kubelet's CPU: its own cgroup's `cpuacct.usage` at the start and the end
//!   ([`crate::charge`]) → CPU-seconds per minute;
//! * its memory: `Rss` and `Pss` of `/proc/<pid>/smaps_rollup` every `sample_every` → median
//!   and max;
//! * its CRI calls: the counting proxy's counts ([`crate::cri_proxy`]) at the start and the end
//!   → calls per minute, in total and by method.
//!
//! Pure pieces ([`parse_smaps_rollup`], [`SteadyOutcome::from_window`]) are unit-tested.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cri_proxy::CallCounts;
use crate::stats::median;

/// What the steady-state window measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyConfig {
    /// All pods running → window start.
    pub settle: Duration,
    /// The window.
    pub window: Duration,
    /// Memory (and cumulative CPU) sample period.
    pub sample_every: Duration,
}

impl SteadyConfig {
    /// `window` seconds after a 30 s settle, sampled every 5 s.
    pub fn with_window(window: Duration) -> Self {
        Self {
            settle: Duration::from_secs(30),
            window,
            sample_every: Duration::from_secs(5),
        }
    }
}

/// One sample of the window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SteadySample {
    /// Seconds since the window began.
    pub t_s: f64,
    /// CPU-seconds charged to the kubelet since the window began.
    pub cpu_s: Option<f64>,
    /// `Rss` of smaps_rollup, KiB.
    pub rss_kib: Option<u64>,
    /// `Pss` of smaps_rollup, KiB.
    pub pss_kib: Option<u64>,
}

/// What one steady-state window measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SteadyOutcome {
    /// The window's actual length, seconds.
    pub window_s: f64,
    /// Kubelet CPU-seconds per minute over the window (`None`: CPU unreadable).
    pub cpu_s_per_min: Option<f64>,
    /// The kubelet's CPU plus that of the containerd serving it and its shims, CPU-seconds per
    /// minute over the window: what its CRI calls cost the runtime is charged to it
    /// ([`crate::charge::runtime_cpu_seconds`]; `None`: unreadable).
    pub cpu_with_runtime_s_per_min: Option<f64>,
    /// Whether the CPU is the kubelet cgroup's (children included) or its own utime+stime.
    pub cpu_in_cgroup: bool,
    /// Median RSS, MiB.
    pub rss_mib: Option<f64>,
    /// Largest RSS sampled, MiB.
    pub rss_max_mib: Option<f64>,
    /// Median PSS, MiB.
    pub pss_mib: Option<f64>,
    /// CRI calls per minute, all methods.
    pub cri_calls_per_min: f64,
    /// CRI calls per minute by method (`RuntimeService/ListContainers`, …).
    pub cri_by_method_per_min: BTreeMap<String, f64>,
    /// CRI calls from the first manifest rename to all RUNNING (start-up), in total.
    pub cri_calls_startup: Option<u64>,
    /// Every sample.
    pub samples: Vec<SteadySample>,
}

impl SteadyOutcome {
    /// From the window's CPU readings, samples and CRI counts at its start and end.
    pub fn from_window(
        window_s: f64,
        (cpu0, cpu1, cpu_in_cgroup): (Option<f64>, Option<f64>, bool),
        samples: Vec<SteadySample>,
        (cri0, cri1): (&CallCounts, &CallCounts),
    ) -> Self {
        let per_min = |x: f64| {
            if window_s > 0.0 {
                Some(x * 60.0 / window_s)
            } else {
                None
            }
        };
        let cpu = match (cpu0, cpu1) {
            (Some(a), Some(b)) if b >= a => per_min(b - a),
            _ => None,
        };
        let mib = |f: fn(&SteadySample) -> Option<u64>| -> Vec<f64> {
            samples
                .iter()
                .filter_map(f)
                .map(|k| k as f64 / 1024.0)
                .collect()
        };
        let rss = mib(|s| s.rss_kib);
        let pss = mib(|s| s.pss_kib);
        let calls = cri1.since(cri0);
        Self {
            window_s,
            cpu_s_per_min: cpu,
            cpu_with_runtime_s_per_min: None,
            cpu_in_cgroup,
            rss_mib: median(&rss),
            rss_max_mib: rss.iter().copied().reduce(f64::max),
            pss_mib: median(&pss),
            cri_calls_per_min: per_min(calls.total() as f64).unwrap_or(0.0),
            cri_by_method_per_min: calls.per_minute(window_s),
            cri_calls_startup: None,
            samples,
        }
    }
}

/// `Rss` and `Pss` (KiB) of a `/proc/<pid>/smaps_rollup`.
pub fn parse_smaps_rollup(text: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
    };
    (field("Rss"), field("Pss"))
}

/// `Rss` and `Pss` (KiB) of `pid` now; `VmRSS` of `/proc/<pid>/status` for the RSS when
/// smaps_rollup is unreadable.
pub fn memory_kib(pid: u32) -> (Option<u64>, Option<u64>) {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        let (rss, pss) = parse_smaps_rollup(&text);
        if rss.is_some() {
            return (rss, pss);
        }
    }
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("VmRSS:")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
        });
    (rss, None)
}

/// Kubelet CPU-seconds per minute plus the runtime's CPU-seconds `runtime` (start, end) over a
/// window of `window_s` seconds.
pub fn with_runtime(
    kubelet_per_min: Option<f64>,
    runtime: (Option<f64>, Option<f64>),
    window_s: f64,
) -> Option<f64> {
    match (kubelet_per_min, runtime) {
        (Some(k), (Some(a), Some(b))) if b >= a && window_s > 0.0 => {
            Some(k + (b - a) * 60.0 / window_s)
        }
        _ => None,
    }
}

/// The window over the running `proc`: `cri` reads the proxy's counts, `runtime_cpu` the
/// CPU-seconds so far of the runtime serving it. Starts after `cfg.settle`; fails if the
/// kubelet exits.
pub async fn measure(
    proc: &mut crate::process::KubeletProcess,
    cfg: &SteadyConfig,
    cri: impl Fn() -> CallCounts,
    runtime_cpu: impl Fn() -> Option<f64>,
) -> crate::BenchResult<SteadyOutcome> {
    tokio::time::sleep(cfg.settle).await;
    proc.check_alive()?;
    let pid = proc
        .pid()
        .ok_or_else(|| crate::BenchError::Kubelet("the kubelet has no process ID".into()))?;
    let t0 = Instant::now();
    let cpu0 = proc.cpu_seconds();
    let rt0 = runtime_cpu();
    let cri0 = cri();
    let sample = |proc: &crate::process::KubeletProcess| {
        let (rss_kib, pss_kib) = memory_kib(pid);
        SteadySample {
            t_s: t0.elapsed().as_secs_f64(),
            cpu_s: proc.cpu_seconds().zip(cpu0).map(|(c, c0)| c - c0),
            rss_kib,
            pss_kib,
        }
    };
    let mut samples = vec![sample(proc)];
    let end = t0 + cfg.window;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let next = (now + cfg.sample_every).min(end);
        tokio::time::sleep_until(next.into()).await;
        proc.check_alive()?;
        samples.push(sample(proc));
    }
    let cri1 = cri();
    let cpu1 = proc.cpu_seconds();
    let rt1 = runtime_cpu();
    let window_s = t0.elapsed().as_secs_f64();
    let mut o = SteadyOutcome::from_window(
        window_s,
        (cpu0, cpu1, proc.in_cgroup()),
        samples,
        (&cri0, &cri1),
    );
    o.cpu_with_runtime_s_per_min = with_runtime(o.cpu_s_per_min, (rt0, rt1), window_s);
    Ok(o)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn smaps_rollup_fields() {
        let text = "\
55d0c0a00000-7ffd1c3fe000 ---p 00000000 00:00 0                          [rollup]
Rss:               41236 kB
Pss:               38011 kB
Pss_Anon:          30000 kB
Shared_Clean:       3000 kB
";
        assert_eq!(parse_smaps_rollup(text), (Some(41236), Some(38011)));
        assert_eq!(parse_smaps_rollup("garbage"), (None, None));
        // Pss_Anon must not be taken for Pss.
        assert_eq!(
            parse_smaps_rollup("Pss_Anon: 5 kB\nRss: 7 kB\n"),
            (Some(7), None)
        );
    }

    #[test]
    fn window_figures() {
        let counts =
            |v: &[(&str, u64)]| CallCounts(v.iter().map(|(m, n)| ((*m).to_owned(), *n)).collect());
        let s = |t: f64, rss: u64| SteadySample {
            t_s: t,
            cpu_s: None,
            rss_kib: Some(rss * 1024),
            pss_kib: Some(rss * 512),
        };
        let o = SteadyOutcome::from_window(
            120.0,
            (Some(10.0), Some(12.5), true),
            vec![s(0.0, 40), s(5.0, 44), s(10.0, 42)],
            (
                &counts(&[("/runtime.v1.RuntimeService/ListPodSandbox", 5)]),
                &counts(&[
                    ("/runtime.v1.RuntimeService/ListPodSandbox", 125),
                    ("/runtime.v1.RuntimeService/ListContainers", 120),
                    ("/runtime.v1.ImageService/ImageFsInfo", 4),
                ]),
            ),
        );
        assert_eq!(o.cpu_s_per_min, Some(1.25));
        assert_eq!(o.rss_mib, Some(42.0));
        assert_eq!(o.rss_max_mib, Some(44.0));
        assert_eq!(o.pss_mib, Some(21.0));
        assert_eq!(o.cri_calls_per_min, 122.0);
        assert_eq!(
            o.cri_by_method_per_min["RuntimeService/ListPodSandbox"],
            60.0
        );
        assert_eq!(o.cri_by_method_per_min["ImageService/ImageFsInfo"], 2.0);
        assert_eq!(
            crate::suite_report::top_methods(&o.cri_by_method_per_min, 2),
            "ListContainers 60.0, ListPodSandbox 60.0, +1 more"
        );
        // CPU that went backwards (a new cgroup) or a zero window: no figure.
        let bad = SteadyOutcome::from_window(
            0.0,
            (Some(3.0), Some(2.0), false),
            Vec::new(),
            (&CallCounts::default(), &CallCounts::default()),
        );
        assert_eq!(bad.cpu_s_per_min, None);
        assert_eq!(bad.cpu_with_runtime_s_per_min, None);
        assert_eq!(bad.rss_mib, None);
        assert_eq!(bad.cri_calls_per_min, 0.0);
    }

    #[test]
    fn kubelet_plus_runtime_cpu() {
        // 0.5 CPU-s/min of the kubelet, the runtime 3 CPU-s over 60 s.
        assert_eq!(
            with_runtime(Some(0.5), (Some(10.0), Some(13.0)), 60.0),
            Some(3.5)
        );
        assert_eq!(
            with_runtime(Some(0.5), (Some(10.0), Some(11.0)), 120.0),
            Some(1.0)
        );
        // Unreadable or going backwards (a restarted runtime): no figure.
        assert_eq!(with_runtime(None, (Some(1.0), Some(2.0)), 60.0), None);
        assert_eq!(with_runtime(Some(0.5), (None, Some(2.0)), 60.0), None);
        assert_eq!(with_runtime(Some(0.5), (Some(3.0), Some(2.0)), 60.0), None);
        assert_eq!(with_runtime(Some(0.5), (Some(1.0), Some(2.0)), 0.0), None);
    }
}
