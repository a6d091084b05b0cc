//! client_golang's process collector on Linux (`prometheus/process_collector.go`,
//! `process_collector_procfs.go`), which component-base's legacyregistry registers raw
//! (no stability annotation): `process_cpu_seconds_total`, `process_open_fds`,
//! `process_max_fds`, `process_virtual_memory_bytes`, `process_virtual_memory_max_bytes`,
//! `process_resident_memory_bytes`, `process_start_time_seconds`,
//! `process_network_receive_bytes_total`, `process_network_transmit_bytes_total`, read from
//! `/proc/self` at every scrape. A value that cannot be read is left out, as upstream
//! reports a collection error for that one and serves the rest.

use std::path::PathBuf;

use nix::sys::resource::{Resource, getrlimit};
use nix::unistd::{SysconfVar, sysconf};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Gauge, Opts};

/// The process collector.
pub struct ProcessCollector {
    proc_root: PathBuf,
    cpu: Counter,
    open_fds: Gauge,
    max_fds: Gauge,
    vsize: Gauge,
    max_vsize: Gauge,
    rss: Gauge,
    start_time: Gauge,
    in_bytes: Counter,
    out_bytes: Counter,
    descs: Vec<Desc>,
}

/// The figures the collector reads from procfs.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcessFigures {
    /// utime + stime, in seconds.
    pub cpu_seconds: Option<f64>,
    /// Entries of `/proc/self/fd`.
    pub open_fds: Option<f64>,
    /// Soft `RLIMIT_NOFILE`.
    pub max_fds: Option<f64>,
    /// `vsize`.
    pub vsize: Option<f64>,
    /// Soft `RLIMIT_AS` (unlimited: 2^64-1, as procfs reads it).
    pub max_vsize: Option<f64>,
    /// `rss` × page size.
    pub rss: Option<f64>,
    /// Boot time + `starttime` / `CLK_TCK`.
    pub start_time: Option<f64>,
    /// `IpExt: InOctets` of the process' network namespace.
    pub in_bytes: Option<f64>,
    /// `IpExt: OutOctets`.
    pub out_bytes: Option<f64>,
}

impl ProcessCollector {
    /// The collector of this process (`/proc/self`).
    pub fn new() -> Result<Self, prometheus::Error> {
        Self::for_proc("/proc")
    }

    /// The collector reading `<proc_root>/self` and `<proc_root>/stat` (tests).
    pub fn for_proc(proc_root: impl Into<PathBuf>) -> Result<Self, prometheus::Error> {
        let counter = |n: &str, h: &str| Counter::with_opts(Opts::new(n, h));
        let gauge = |n: &str, h: &str| Gauge::with_opts(Opts::new(n, h));
        let mut c = ProcessCollector {
            proc_root: proc_root.into(),
            cpu: counter(
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
            )?,
            open_fds: gauge("process_open_fds", "Number of open file descriptors.")?,
            max_fds: gauge(
                "process_max_fds",
                "Maximum number of open file descriptors.",
            )?,
            vsize: gauge(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
            )?,
            max_vsize: gauge(
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
            )?,
            rss: gauge(
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
            )?,
            start_time: gauge(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
            )?,
            in_bytes: counter(
                "process_network_receive_bytes_total",
                "Number of bytes received by the process over the network.",
            )?,
            out_bytes: counter(
                "process_network_transmit_bytes_total",
                "Number of bytes sent by the process over the network.",
            )?,
            descs: Vec::new(),
        };
        c.descs = c
            .parts()
            .iter()
            .flat_map(|m| m.desc().into_iter().cloned())
            .collect();
        Ok(c)
    }

    fn parts(&self) -> [&dyn Collector; 9] {
        [
            &self.cpu,
            &self.open_fds,
            &self.max_fds,
            &self.vsize,
            &self.max_vsize,
            &self.rss,
            &self.start_time,
            &self.in_bytes,
            &self.out_bytes,
        ]
    }

    /// Reads the figures now.
    pub fn read(&self) -> ProcessFigures {
        let ticks = sysconf(SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64;
        let page = sysconf(SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .unwrap_or(4096) as f64;
        let me = self.proc_root.join("self");
        let mut f = ProcessFigures::default();
        if let Ok(stat) = std::fs::read_to_string(me.join("stat")) {
            // Fields after the command name, which is in parentheses and may hold spaces.
            let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // fields[0] is field 3 (state): utime=14, stime=15, starttime=22, vsize=23, rss=24.
            let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
            if let (Some(u), Some(s)) = (field(14), field(15)) {
                f.cpu_seconds = Some((u + s) / ticks);
            }
            f.vsize = field(23);
            f.rss = field(24).map(|r| r * page);
            let btime = std::fs::read_to_string(self.proc_root.join("stat"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("btime "))
                        .and_then(|v| v.trim().parse::<f64>().ok())
                });
            if let (Some(b), Some(start)) = (btime, field(22)) {
                f.start_time = Some(b + start / ticks);
            }
        }
        f.open_fds = std::fs::read_dir(me.join("fd"))
            .ok()
            .map(|d| d.count() as f64);
        f.max_fds = getrlimit(Resource::RLIMIT_NOFILE)
            .ok()
            .map(|(soft, _)| soft as f64);
        f.max_vsize = getrlimit(Resource::RLIMIT_AS)
            .ok()
            .map(|(soft, _)| soft as f64);
        if let Ok(netstat) = std::fs::read_to_string(me.join("net/netstat")) {
            let (i, o) = ip_ext_octets(&netstat);
            f.in_bytes = i;
            f.out_bytes = o;
        }
        f
    }
}

/// `InOctets` and `OutOctets` of the `IpExt:` header/value line pair.
fn ip_ext_octets(netstat: &str) -> (Option<f64>, Option<f64>) {
    let lines: Vec<&str> = netstat
        .lines()
        .filter(|l| l.starts_with("IpExt:"))
        .collect();
    let (Some(names), Some(values)) = (lines.first(), lines.get(1)) else {
        return (None, None);
    };
    let pairs: Vec<(&str, &str)> = names
        .split_whitespace()
        .zip(values.split_whitespace())
        .collect();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .and_then(|(_, v)| v.parse::<f64>().ok())
    };
    (get("InOctets"), get("OutOctets"))
}

impl Collector for ProcessCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let f = self.read();
        let mut out = Vec::new();
        let mut counter = |c: &Counter, v: Option<f64>| {
            if let Some(v) = v {
                c.reset();
                c.inc_by(v);
                out.extend(c.collect());
            }
        };
        counter(&self.cpu, f.cpu_seconds);
        counter(&self.in_bytes, f.in_bytes);
        counter(&self.out_bytes, f.out_bytes);
        for (g, v) in [
            (&self.open_fds, f.open_fds),
            (&self.max_fds, f.max_fds),
            (&self.vsize, f.vsize),
            (&self.max_vsize, f.max_vsize),
            (&self.rss, f.rss),
            (&self.start_time, f.start_time),
        ] {
            if let Some(v) = v {
                g.set(v);
                out.extend(g.collect());
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_stat_fds_and_netstat() {
        let dir = std::env::temp_dir().join(format!("krs-metrics-proc-{}", std::process::id()));
        let me = dir.join("self");
        std::fs::create_dir_all(me.join("fd")).unwrap();
        std::fs::create_dir_all(me.join("net")).unwrap();
        for n in ["0", "1", "2"] {
            std::fs::write(me.join("fd").join(n), "").unwrap();
        }
        // pid (comm with ) space) state ppid ... utime=14 stime=15 ... starttime=22 vsize=23 rss=24
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[14 - 3] = "250".into();
        fields[15 - 3] = "150".into();
        fields[22 - 3] = "1000".into();
        fields[23 - 3] = "123456789".into();
        fields[24 - 3] = "10".into();
        std::fs::write(
            me.join("stat"),
            format!("42 (kube let) {}", fields.join(" ")),
        )
        .unwrap();
        std::fs::write(dir.join("stat"), "cpu  1 2 3\nbtime 1700000000\n").unwrap();
        std::fs::write(
            me.join("net/netstat"),
            "TcpExt: A B\nTcpExt: 1 2\nIpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 5000 7000\n",
        )
        .unwrap();
        let c = ProcessCollector::for_proc(&dir).unwrap();
        let f = c.read();
        let ticks = sysconf(SysconfVar::CLK_TCK).unwrap().unwrap() as f64;
        let page = sysconf(SysconfVar::PAGE_SIZE).unwrap().unwrap() as f64;
        assert_eq!(f.cpu_seconds, Some(400.0 / ticks));
        assert_eq!(f.vsize, Some(123456789.0));
        assert_eq!(f.rss, Some(10.0 * page));
        assert_eq!(f.start_time, Some(1700000000.0 + 1000.0 / ticks));
        assert_eq!(f.open_fds, Some(3.0));
        assert_eq!(f.in_bytes, Some(5000.0));
        assert_eq!(f.out_bytes, Some(7000.0));
        let names: Vec<String> = c.collect().iter().map(|m| m.name().to_string()).collect();
        assert_eq!(names.len(), 9, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
