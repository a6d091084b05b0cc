//! `/metrics/cadvisor`: the container families of cAdvisor's Prometheus collector
//! (`cadvisor/metrics/prometheus.go`, v0.53.0, as the kubelet registers it in
//! `server.go` with `containerPrometheusLabelsFunc`: labels `container`, `id`, `image`,
//! `name`, `namespace`, `pod`), for the cgroups the kubelet reads on demand: the root
//! (`id="/"`), every pod cgroup (`pod`/`namespace` from the sandbox), every pod's sandbox
//! (pause) container (`name` = the sandbox ID, `container` empty, `image` the runtime's
//! sandbox image) and every running container (`name` = the container ID, as cAdvisor's
//! first alias for containerd).
//!
//! Families: `container_cpu_usage_seconds_total{cpu="total"}`,
//! `container_cpu_{user,system}_seconds_total`, `container_memory_usage_bytes`,
//! `container_memory_working_set_bytes`, `container_memory_rss`, `container_memory_cache`,
//! `container_memory_swap`, `container_oom_events_total` (the cgroup's `oom_kill` count;
//! cAdvisor counts the kernel log's OOM kills since it started),
//! `container_{processes,threads,threads_max,file_descriptors,sockets}`,
//! `container_ulimits_soft{ulimit="max_open_files"}` (containers: of the first process of
//! the cgroup), `container_spec_memory_limit_bytes`, `container_start_time_seconds`,
//! `container_last_seen`, `container_scrape_error`,
//! `container_pressure_{cpu,memory,io}_{stalled,waiting}_seconds_total` (`KubeletPSI`),
//! `DiskIOMetrics` from the blkio tables (v1 `blkio.throttle.io_service_bytes`/`io_serviced`
//! and their `_recursive`/BFQ variants, v2 `io.stat`): `container_fs_{reads,writes}_bytes_total`,
//! `container_fs_{reads,writes}_total` (`device` = `/dev/<disk>`, [`crate::fs::disk_names`])
//! and `container_blkio_device_usage_total{major,minor,operation}`, the CFS families
//! `container_cpu_cfs_{periods,throttled_periods,throttled_seconds}_total` (cgroups with a
//! CPU quota), `NetworkUsageMetrics`
//! `container_network_{receive,transmit}_{bytes,packets,packets_dropped,errors}_total`
//! per `interface` (on the root from `/proc/1/net/dev` and on the sandbox containers from
//! their netns, as cAdvisor: its containerd handler drops the network families of the
//! other containers, which share the sandbox's netns), and the machine collector's
//! `machine_memory_bytes`. Not served (no reader yet): per-CPU usage and load, the
//! remaining memory families (`failcnt`, `mapped_file`, `max_usage`, `failures`, ...), the
//! disk I/O families cAdvisor fills only from the root's `/proc/diskstats` or the
//! CFQ/BFQ-debug tables (`container_fs_sector_*`, `_merged_`, `_seconds_`,
//! `container_fs_io_*`), and filesystem usage (`container_fs_usage_bytes`, ...: the root's
//! filesystems only, as cAdvisor's containerd handler reports none for containers).

use crate::cgroup::{CgroupSample, MAX_MEMORY_SIZE};
use crate::prom::Families;
use crate::types::{PodReference, Time};

/// What one scrape reads.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// When read.
    pub time: Time,
    /// The node's boot time (the root cgroup's creation time).
    pub boot_time: Time,
    /// `MemTotal`.
    pub machine_memory: Option<u64>,
    /// Every cgroup reported.
    pub cgroups: Vec<CgroupEntry>,
    /// Whether reading failed (`container_scrape_error 1`, nothing else).
    pub error: bool,
}

/// One cgroup's series.
#[derive(Debug, Clone, Default)]
pub struct CgroupEntry {
    /// The cgroup path (`id`).
    pub id: String,
    /// The container ID (`name`; empty for the root and pod cgroups).
    pub name: String,
    /// The image (`image`).
    pub image: String,
    /// The container's name in the pod (`container`).
    pub container: String,
    /// The pod (`pod`, `namespace`; empty for the root).
    pub pod: PodReference,
    /// Creation time.
    pub start: Time,
    /// The reading.
    pub sample: CgroupSample,
    /// Descriptors and limits of the cgroup's processes.
    pub processes: ProcessDetail,
    /// Network interfaces (`NetworkUsageMetrics`): the root's (`/proc/1/net/dev`) and a
    /// sandbox's (its netns); empty for pod and application containers, as cAdvisor's
    /// `RemoveNetMetrics` leaves them.
    pub network: Vec<crate::network::NetDevCounters>,
}

/// cAdvisor's `processStatsFromProcs` beyond the count: over the processes of the cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessDetail {
    /// Open file descriptors.
    pub fds: u64,
    /// Of which sockets.
    pub sockets: u64,
    /// `Max open files` soft limit of the container's first process (`-1`: unlimited);
    /// `None` for the root and pod cgroups, as cAdvisor's raw handler has no process.
    pub max_open_files: Option<i64>,
}

mod desc {
    use crate::prom::{Desc, Kind, Stability};
    /// `containerPrometheusLabelsFunc`'s labels, then a family's own.
    macro_rules! labels {
        ($($extra:literal),*) => {
            &["container", "id", "image", "name", "namespace", "pod", $($extra),*]
        };
    }
    pub const LABELS: &[&str] = labels!();
    pub const CPU_LABELS: &[&str] = labels!("cpu");
    const fn d(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        kind: Kind,
    ) -> Desc {
        Desc::new(name, help, labels, Stability::Raw, kind)
    }
    pub const CPU: Desc = d(
        "container_cpu_usage_seconds_total",
        "Cumulative cpu time consumed in seconds.",
        CPU_LABELS,
        Kind::Counter,
    );
    pub const MEM_USAGE: Desc = d(
        "container_memory_usage_bytes",
        "Current memory usage in bytes, including all memory regardless of when it was accessed",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_WS: Desc = d(
        "container_memory_working_set_bytes",
        "Current working set in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_RSS: Desc = d(
        "container_memory_rss",
        "Size of RSS in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_CACHE: Desc = d(
        "container_memory_cache",
        "Number of bytes of page cache memory.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_SWAP: Desc = d(
        "container_memory_swap",
        "Container swap usage in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const PROCESSES: Desc = d(
        "container_processes",
        "Number of processes running inside the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_LIMIT: Desc = d(
        "container_spec_memory_limit_bytes",
        "Memory limit for the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const START: Desc = d(
        "container_start_time_seconds",
        "Start time of the container since unix epoch in seconds.",
        LABELS,
        Kind::Gauge,
    );
    pub const LAST_SEEN: Desc = d(
        "container_last_seen",
        "Last time a container was seen by the exporter",
        LABELS,
        Kind::Gauge,
    );
    pub const SCRAPE_ERROR: Desc = d(
        "container_scrape_error",
        "1 if there was an error while getting container metrics, 0 otherwise",
        &[],
        Kind::Gauge,
    );
    pub const PSI_CPU_STALLED: Desc = d(
        "container_pressure_cpu_stalled_seconds_total",
        "Total time duration no tasks in the container could make progress due to CPU congestion.",
        LABELS,
        Kind::Counter,
    );
    pub const PSI_CPU_WAITING: Desc = d(
        "container_pressure_cpu_waiting_seconds_total",
        "Total time duration tasks in the container have waited due to CPU congestion.",
        LABELS,
        Kind::Counter,
    );
    pub const PSI_MEMORY_STALLED: Desc = d(
        "container_pressure_memory_stalled_seconds_total",
        "Total time duration no tasks in the container could make progress due to memory congestion.",
        LABELS,
        Kind::Counter,
    );
    pub const PSI_MEMORY_WAITING: Desc = d(
        "container_pressure_memory_waiting_seconds_total",
        "Total time duration tasks in the container have waited due to memory congestion.",
        LABELS,
        Kind::Counter,
    );
    pub const PSI_IO_STALLED: Desc = d(
        "container_pressure_io_stalled_seconds_total",
        "Total time duration no tasks in the container could make progress due to IO congestion.",
        LABELS,
        Kind::Counter,
    );
    pub const PSI_IO_WAITING: Desc = d(
        "container_pressure_io_waiting_seconds_total",
        "Total time duration tasks in the container have waited due to IO congestion.",
        LABELS,
        Kind::Counter,
    );
    pub const CPU_USER: Desc = d(
        "container_cpu_user_seconds_total",
        "Cumulative user cpu time consumed in seconds.",
        LABELS,
        Kind::Counter,
    );
    pub const CPU_SYSTEM: Desc = d(
        "container_cpu_system_seconds_total",
        "Cumulative system cpu time consumed in seconds.",
        LABELS,
        Kind::Counter,
    );
    pub const OOM_EVENTS: Desc = d(
        "container_oom_events_total",
        "Count of out of memory events observed for the container",
        LABELS,
        Kind::Counter,
    );
    pub const FDS: Desc = d(
        "container_file_descriptors",
        "Number of open file descriptors for the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const SOCKETS: Desc = d(
        "container_sockets",
        "Number of open sockets for the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const THREADS: Desc = d(
        "container_threads",
        "Number of threads running inside the container",
        LABELS,
        Kind::Gauge,
    );
    pub const THREADS_MAX: Desc = d(
        "container_threads_max",
        "Maximum number of threads allowed inside the container, infinity if value is zero",
        LABELS,
        Kind::Gauge,
    );
    pub const ULIMITS_SOFT_LABELS: &[&str] = labels!("ulimit");
    pub const ULIMITS_SOFT: Desc = d(
        "container_ulimits_soft",
        "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice",
        ULIMITS_SOFT_LABELS,
        Kind::Gauge,
    );
    pub const DEVICE_LABELS: &[&str] = labels!("device");
    pub const FS_READS_BYTES: Desc = d(
        "container_fs_reads_bytes_total",
        "Cumulative count of bytes read",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_READS: Desc = d(
        "container_fs_reads_total",
        "Cumulative count of reads completed",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_WRITES_BYTES: Desc = d(
        "container_fs_writes_bytes_total",
        "Cumulative count of bytes written",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_WRITES: Desc = d(
        "container_fs_writes_total",
        "Cumulative count of writes completed",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const BLKIO_LABELS: &[&str] = labels!("device", "major", "minor", "operation");
    pub const BLKIO_DEVICE_USAGE: Desc = d(
        "container_blkio_device_usage_total",
        "Blkio Device bytes usage",
        BLKIO_LABELS,
        Kind::Counter,
    );
    pub const CFS_PERIODS: Desc = d(
        "container_cpu_cfs_periods_total",
        "Number of elapsed enforcement period intervals.",
        LABELS,
        Kind::Counter,
    );
    pub const CFS_THROTTLED_PERIODS: Desc = d(
        "container_cpu_cfs_throttled_periods_total",
        "Number of throttled period intervals.",
        LABELS,
        Kind::Counter,
    );
    pub const CFS_THROTTLED_SECONDS: Desc = d(
        "container_cpu_cfs_throttled_seconds_total",
        "Total time duration the container has been throttled.",
        LABELS,
        Kind::Counter,
    );
    pub const INTERFACE_LABELS: &[&str] = labels!("interface");
    pub const NET_RX_BYTES: Desc = d(
        "container_network_receive_bytes_total",
        "Cumulative count of bytes received",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_RX_PACKETS: Desc = d(
        "container_network_receive_packets_total",
        "Cumulative count of packets received",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_RX_DROPPED: Desc = d(
        "container_network_receive_packets_dropped_total",
        "Cumulative count of packets dropped while receiving",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_RX_ERRORS: Desc = d(
        "container_network_receive_errors_total",
        "Cumulative count of errors encountered while receiving",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_TX_BYTES: Desc = d(
        "container_network_transmit_bytes_total",
        "Cumulative count of bytes transmitted",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_TX_PACKETS: Desc = d(
        "container_network_transmit_packets_total",
        "Cumulative count of packets transmitted",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_TX_DROPPED: Desc = d(
        "container_network_transmit_packets_dropped_total",
        "Cumulative count of packets dropped while transmitting",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const NET_TX_ERRORS: Desc = d(
        "container_network_transmit_errors_total",
        "Cumulative count of errors encountered while transmitting",
        INTERFACE_LABELS,
        Kind::Counter,
    );
    pub const MACHINE_MEMORY: Desc = d(
        "machine_memory_bytes",
        "Amount of memory installed on the machine.",
        &[],
        Kind::Gauge,
    );
}

/// The exposition. cAdvisor's collectors are registered raw: no stability prefix in the
/// help text.
pub fn render(s: &Snapshot) -> String {
    let mut f = Families::default();
    let ts = Some(s.time.as_millis());
    if let Some(m) = s.machine_memory {
        f.push(&desc::MACHINE_MEMORY, &[], m as f64, ts);
    }
    if !s.error {
        for c in &s.cgroups {
            let l = [
                c.container.as_str(),
                c.id.as_str(),
                c.image.as_str(),
                c.name.as_str(),
                c.pod.namespace.as_str(),
                c.pod.name.as_str(),
            ];
            f.push(&desc::START, &l, c.start.0.as_second() as f64, None);
            if let Some(m) = &c.sample.memory {
                let limit = m.limit.filter(|l| *l <= MAX_MEMORY_SIZE).unwrap_or(0);
                f.push(&desc::MEM_LIMIT, &l, limit as f64, None);
            }
            f.push(&desc::LAST_SEEN, &l, s.time.0.as_second() as f64, ts);
            if let Some(cpu) = c.sample.cpu_usage_ns.filter(|v| *v > 0) {
                let mut cl = l.to_vec();
                cl.push("total");
                f.push(&desc::CPU, &cl, cpu as f64 / 1e9, ts);
            }
            if let Some(m) = &c.sample.memory {
                f.push(&desc::MEM_CACHE, &l, m.cache as f64, ts);
                f.push(&desc::MEM_RSS, &l, m.rss as f64, ts);
                f.push(
                    &desc::MEM_SWAP,
                    &l,
                    c.sample.swap.as_ref().map_or(0, |s| s.usage) as f64,
                    ts,
                );
                f.push(&desc::MEM_USAGE, &l, m.usage as f64, ts);
                f.push(&desc::MEM_WS, &l, m.working_set as f64, ts);
            }
            if let Some(x) = &c.sample.cadvisor {
                // `CpuUsageMetrics`, `OOMMetrics`, `ProcessMetrics` (threads from the pids
                // controller, as `setThreadsStats`).
                f.push(
                    &desc::CPU_USER,
                    &l,
                    x.cpu_user_ns.unwrap_or(0) as f64 / 1e9,
                    ts,
                );
                f.push(
                    &desc::CPU_SYSTEM,
                    &l,
                    x.cpu_system_ns.unwrap_or(0) as f64 / 1e9,
                    ts,
                );
                f.push(&desc::OOM_EVENTS, &l, x.oom_kills.unwrap_or(0) as f64, ts);
                f.push(&desc::THREADS, &l, x.threads.unwrap_or(0) as f64, ts);
                f.push(
                    &desc::THREADS_MAX,
                    &l,
                    x.threads_max.unwrap_or(0) as f64,
                    ts,
                );
                f.push(&desc::FDS, &l, c.processes.fds as f64, ts);
                f.push(&desc::SOCKETS, &l, c.processes.sockets as f64, ts);
                // `DiskIOMetrics` from the blkio tables (`ioValues`: one series per device
                // of the table, 0 for a missing operation).
                for (d, table, op) in [
                    (&desc::FS_READS_BYTES, &x.io_service_bytes, "Read"),
                    (&desc::FS_WRITES_BYTES, &x.io_service_bytes, "Write"),
                    (&desc::FS_READS, &x.io_serviced, "Read"),
                    (&desc::FS_WRITES, &x.io_serviced, "Write"),
                ] {
                    for disk in table {
                        let mut dl = l.to_vec();
                        dl.push(&disk.device);
                        let v = disk.stats.get(op).copied().unwrap_or(0);
                        f.push(d, &dl, v as f64, ts);
                    }
                }
                for disk in &x.io_service_bytes {
                    let (major, minor) = (disk.major.to_string(), disk.minor.to_string());
                    for (op, v) in &disk.stats {
                        let mut bl = l.to_vec();
                        bl.extend([disk.device.as_str(), &major, &minor, op]);
                        f.push(&desc::BLKIO_DEVICE_USAGE, &bl, *v as f64, ts);
                    }
                }
                if let Some(cfs) = &x.cfs {
                    f.push(&desc::CFS_PERIODS, &l, cfs.periods as f64, ts);
                    f.push(
                        &desc::CFS_THROTTLED_PERIODS,
                        &l,
                        cfs.throttled_periods as f64,
                        ts,
                    );
                    f.push(
                        &desc::CFS_THROTTLED_SECONDS,
                        &l,
                        cfs.throttled_ns as f64 / 1e9,
                        ts,
                    );
                }
                if let Some(v) = c.processes.max_open_files {
                    let mut ul = l.to_vec();
                    ul.push("max_open_files");
                    f.push(&desc::ULIMITS_SOFT, &ul, v as f64, ts);
                }
            }
            if let Some(p) = c.sample.processes {
                f.push(&desc::PROCESSES, &l, p as f64, ts);
            }
            for i in &c.network {
                let mut il = l.to_vec();
                il.push(&i.name);
                for (d, v) in [
                    (&desc::NET_RX_BYTES, i.rx_bytes),
                    (&desc::NET_RX_PACKETS, i.rx_packets),
                    (&desc::NET_RX_DROPPED, i.rx_dropped),
                    (&desc::NET_RX_ERRORS, i.rx_errors),
                    (&desc::NET_TX_BYTES, i.tx_bytes),
                    (&desc::NET_TX_PACKETS, i.tx_packets),
                    (&desc::NET_TX_DROPPED, i.tx_dropped),
                    (&desc::NET_TX_ERRORS, i.tx_errors),
                ] {
                    f.push(d, &il, v as f64, ts);
                }
            }
            // `PressureMetrics` (`KubeletPSI`): the kernel's microseconds in seconds
            // (`asMicrosecondsToSeconds`); IO zero without an io controller, as cAdvisor's
            // zero-valued `DiskIo`.
            if let Some(psi) = &c.sample.psi {
                let io = psi.io.unwrap_or_default();
                for (d, v) in [
                    (&desc::PSI_CPU_STALLED, psi.cpu.full.total),
                    (&desc::PSI_CPU_WAITING, psi.cpu.some.total),
                    (&desc::PSI_MEMORY_STALLED, psi.memory.full.total),
                    (&desc::PSI_MEMORY_WAITING, psi.memory.some.total),
                    (&desc::PSI_IO_STALLED, io.full.total),
                    (&desc::PSI_IO_WAITING, io.some.total),
                ] {
                    f.push(d, &l, v as f64 / 1e6, ts);
                }
            }
        }
    }
    f.push(
        &desc::SCRAPE_ERROR,
        &[],
        if s.error { 1.0 } else { 0.0 },
        None,
    );
    f.render()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cgroup::MemorySample;

    #[test]
    fn container_series_have_cadvisors_labels() {
        let s = Snapshot {
            time: Time::from_nanos(1_764_547_200_000_000_000),
            machine_memory: Some(8 << 30),
            cgroups: vec![CgroupEntry {
                id: "/kubepods/besteffort/podu/abc".into(),
                name: "abc".into(),
                image: "docker.io/library/busybox:1.36".into(),
                container: "app".into(),
                pod: PodReference {
                    name: "web".into(),
                    namespace: "default".into(),
                    uid: "u".into(),
                },
                start: Time::from_nanos(1_764_547_000_000_000_000),
                sample: CgroupSample {
                    cpu_usage_ns: Some(1_500_000_000),
                    memory: Some(MemorySample {
                        usage: 10,
                        working_set: 8,
                        limit: Some(u64::MAX),
                        ..Default::default()
                    }),
                    processes: Some(2),
                    cadvisor: Some(crate::cgroup::CadvisorSample {
                        cpu_user_ns: Some(1_000_000_000),
                        cpu_system_ns: Some(250_000_000),
                        threads: Some(5),
                        threads_max: Some(0),
                        oom_kills: Some(1),
                        io_service_bytes: vec![crate::cgroup::PerDiskStats {
                            major: 8,
                            minor: 0,
                            device: "/dev/sda".into(),
                            stats: [("Read".to_string(), 4096), ("Write".to_string(), 512)].into(),
                        }],
                        io_serviced: vec![crate::cgroup::PerDiskStats {
                            major: 8,
                            minor: 0,
                            device: "/dev/sda".into(),
                            stats: [("Read".to_string(), 3)].into(),
                        }],
                        cfs: Some(crate::cgroup::CfsSample {
                            periods: 10,
                            throttled_periods: 4,
                            throttled_ns: 250_000_000,
                        }),
                    }),
                    psi: Some(crate::cgroup::PsiSample {
                        cpu: crate::types::PsiStats {
                            some: crate::types::PsiData {
                                total: 2_500_000,
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                processes: ProcessDetail {
                    fds: 7,
                    sockets: 2,
                    max_open_files: Some(1_048_576),
                },
                network: vec![crate::network::NetDevCounters {
                    name: "eth0".into(),
                    rx_bytes: 5000,
                    rx_dropped: 1,
                    tx_packets: 50,
                    ..Default::default()
                }],
            }],
            ..Default::default()
        };
        let text = render(&s);
        let l = "container=\"app\",id=\"/kubepods/besteffort/podu/abc\",image=\"docker.io/library/busybox:1.36\",name=\"abc\",namespace=\"default\",pod=\"web\"";
        for want in [
            format!(
                "container_cpu_usage_seconds_total{{container=\"app\",cpu=\"total\",{}}} 1.5 1764547200000",
                &l[16..]
            ),
            format!("container_memory_working_set_bytes{{{l}}} 8 1764547200000"),
            format!("container_pressure_cpu_waiting_seconds_total{{{l}}} 2.5 1764547200000"),
            format!("container_cpu_user_seconds_total{{{l}}} 1 1764547200000"),
            format!("container_cpu_system_seconds_total{{{l}}} 0.25 1764547200000"),
            format!("container_oom_events_total{{{l}}} 1 1764547200000"),
            format!("container_processes{{{l}}} 2 1764547200000"),
            format!("container_threads{{{l}}} 5 1764547200000"),
            format!("container_threads_max{{{l}}} 0 1764547200000"),
            format!("container_file_descriptors{{{l}}} 7 1764547200000"),
            format!("container_sockets{{{l}}} 2 1764547200000"),
            format!(
                "container_ulimits_soft{{{l},ulimit=\"max_open_files\"}} 1.048576e+06 1764547200000"
            ),
            format!("container_pressure_io_stalled_seconds_total{{{l}}} 0 1764547200000"),
            format!(
                "container_fs_reads_bytes_total{{container=\"app\",device=\"/dev/sda\",{}}} 4096 1764547200000",
                &l[16..]
            ),
            format!(
                "container_fs_writes_bytes_total{{container=\"app\",device=\"/dev/sda\",{}}} 512 1764547200000",
                &l[16..]
            ),
            format!(
                "container_fs_reads_total{{container=\"app\",device=\"/dev/sda\",{}}} 3 1764547200000",
                &l[16..]
            ),
            format!(
                "container_fs_writes_total{{container=\"app\",device=\"/dev/sda\",{}}} 0 1764547200000",
                &l[16..]
            ),
            format!(
                "container_blkio_device_usage_total{{container=\"app\",device=\"/dev/sda\",{},major=\"8\",minor=\"0\",name=\"abc\",namespace=\"default\",operation=\"Write\",pod=\"web\"}} 512 1764547200000",
                &l[16..l.find(",name=").unwrap()]
            ),
            "# TYPE container_blkio_device_usage_total counter".to_string(),
            format!(
                "container_network_receive_bytes_total{{{},interface=\"eth0\",{}}} 5000 1764547200000",
                &l[..l.find(",name=").unwrap()],
                &l[l.find("name=").unwrap()..]
            ),
            format!(
                "container_network_receive_packets_dropped_total{{{},interface=\"eth0\",{}}} 1 1764547200000",
                &l[..l.find(",name=").unwrap()],
                &l[l.find("name=").unwrap()..]
            ),
            format!(
                "container_network_transmit_packets_total{{{},interface=\"eth0\",{}}} 50 1764547200000",
                &l[..l.find(",name=").unwrap()],
                &l[l.find("name=").unwrap()..]
            ),
            "# HELP container_network_transmit_errors_total Cumulative count of errors encountered while transmitting".to_string(),
            format!("container_cpu_cfs_periods_total{{{l}}} 10 1764547200000"),
            format!("container_cpu_cfs_throttled_periods_total{{{l}}} 4 1764547200000"),
            format!("container_cpu_cfs_throttled_seconds_total{{{l}}} 0.25 1764547200000"),
            "# HELP container_fs_reads_total Cumulative count of reads completed".to_string(),
            "# TYPE container_pressure_memory_waiting_seconds_total counter".to_string(),
            format!("container_spec_memory_limit_bytes{{{l}}} 0"),
            format!("container_start_time_seconds{{{l}}} 1.764547e+09"),
            "# HELP container_memory_working_set_bytes Current working set in bytes.".to_string(),
            "machine_memory_bytes 8.589934592e+09 1764547200000".to_string(),
            "container_scrape_error 0".to_string(),
        ] {
            assert!(text.lines().any(|line| line == want), "{want}\n{text}");
        }
    }
}
