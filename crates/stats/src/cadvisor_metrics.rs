//! `/metrics/cadvisor`: the container families of cAdvisor's Prometheus collector
//! (`cadvisor/metrics/prometheus.go`, v0.53.0, as the kubelet registers it in
//! `server.go` with `containerPrometheusLabelsFunc`: labels `container`, `id`, `image`,
//! `name`, `namespace`, `pod`), for the cgroups the kubelet reads on demand: the root
//! (`id="/"`), the pods cgroup and its QoS cgroups (`/kubepods`, `/kubepods/besteffort`,
//! `/kubepods/burstable`: raw cgroups under the kubelet's `NodeAllocatableRoot`, no `pod`
//! label, creation time from the directory's mtime as cAdvisor's `getSpecInternal`), the
//! subtrees of the kubelet's other `cgroupRoots` (`kubeletCgroups` — else the kubelet's own
//! cgroup when its `cpu` and `memory` cgroups are one, `getContainer` —, `runtimeCgroups`,
//! `systemCgroups`; raw, no labels; listed when the kubelet starts, walked on each scrape),
//! every pod cgroup (`pod`/`namespace` from the sandbox), every pod's sandbox (pause) container
//! (`name` = the sandbox ID, `container` empty, `image` the runtime's sandbox image) and
//! every running container (`name` = the container ID, as cAdvisor's first alias for
//! containerd).
//!
//! Families (kubelet's `includedMetrics`: `CpuUsageMetrics`, `MemoryUsageMetrics`,
//! `CpuLoadMetrics`, `DiskIOMetrics`, `DiskUsageMetrics`, `NetworkUsageMetrics`,
//! `ProcessMetrics`, `OOMMetrics`, `PressureMetrics` with `KubeletPSI`):
//!
//! * CPU: `container_cpu_usage_seconds_total{cpu="total"}` (no per-CPU series: upstream's
//!   kubelet does not include `PerCpuUsageMetrics`), `container_cpu_{user,system}_seconds_total`,
//!   the CFS families `container_cpu_cfs_{periods,throttled_periods,throttled_seconds}_total`
//!   (cgroups with a CPU quota), `container_cpu_load_average_10s`,
//!   `container_cpu_load_d_average_10s` and `container_tasks_state{state}`: 0, as cAdvisor's
//!   in the kubelet, whose load reader is off (`--enable_load_reader` false);
//! * memory: `container_memory_{usage_bytes,working_set_bytes,rss,cache,swap}`,
//!   `container_memory_{max_usage_bytes,failcnt,kernel_usage,mapped_file}`,
//!   `container_memory_total_{active,inactive}_file_bytes`,
//!   `container_memory_failures_total{failure_type,scope}` (`memory.stat` `pgfault`/
//!   `pgmajfault`, the same value for both scopes as cAdvisor) ([`crate::cgroup::CadvisorMemory`]),
//!   `container_oom_events_total` (the cgroup's `oom_kill` count; cAdvisor counts the
//!   kernel log's OOM kills since it started);
//! * spec (no timestamp): `container_spec_memory_{limit,swap_limit,reservation_limit}_bytes`
//!   (0 when unlimited, `specMemoryValue`), `container_spec_cpu_{period,shares}` and
//!   `container_spec_cpu_quota` (with a quota) ([`crate::cgroup::CgroupSpec`]),
//!   `container_start_time_seconds`; `container_last_seen`, `container_scrape_error`;
//! * processes: `container_{processes,threads,threads_max,file_descriptors,sockets}`,
//!   `container_ulimits_soft{ulimit="max_open_files"}` (containers: of the first process of
//!   the cgroup; the root: of pid 1, as the raw root handler; none for the QoS and pod
//!   cgroups, whose raw handler has no pid);
//! * `container_pressure_{cpu,memory,io}_{stalled,waiting}_seconds_total` (`KubeletPSI`);
//! * `DiskIOMetrics` from the blkio tables (v1 `blkio.throttle.io_service_bytes`/`io_serviced`
//!   and their `_recursive`/BFQ variants, v2 `io.stat`): `container_fs_{reads,writes}_bytes_total`,
//!   `container_fs_{reads,writes}_total` (`device` = `/dev/<disk>`, [`crate::fs::disk_names`])
//!   and `container_blkio_device_usage_total{major,minor,operation}`;
//! * the root's filesystems ([`crate::root_fs`]: mountinfo's partitions, `statfs`,
//!   `/proc/diskstats`): `container_fs_{inodes_free,inodes_total,limit_bytes,usage_bytes}` and
//!   `container_fs_{reads,writes}_total`, `container_fs_sector_{reads,writes}_total`,
//!   `container_fs_{reads,writes}_merged_total`, `container_fs_{read,write}_seconds_total`,
//!   `container_fs_io_current`, `container_fs_io_time{,_weighted}_seconds_total` per
//!   filesystem (the `_seconds_` ones are the kernel's milliseconds divided by 10⁹, as
//!   cAdvisor computes them); no other cgroup has filesystems (cAdvisor's raw handler has no
//!   external mounts, its containerd handler reports none);
//! * `NetworkUsageMetrics`
//!   `container_network_{receive,transmit}_{bytes,packets,packets_dropped,errors}_total`
//!   per `interface` (on the root from `/proc/1/net/dev` and on the sandbox containers from
//!   their netns, as cAdvisor: its containerd handler drops the network families of the
//!   other containers, which share the sandbox's netns);
//! * the machine collector ([`crate::machine`], labels `boot_id`, `machine_id`,
//!   `system_uuid`, no timestamps): `machine_memory_bytes`, `machine_swap_bytes`,
//!   `machine_cpu_{cores,physical_cores,sockets}`, `machine_nvm_capacity{mode}` and
//!   `machine_nvm_avg_power_budget_watts` (0: upstream's kubelet is built without
//!   `libipmctl`), `machine_scrape_error`; and `cadvisor_version_info` (the kernel and OS;
//!   docker and cAdvisor version labels empty, as upstream's kubelet prints them).
//!
//! Not served, and said at start (`crates/app/src/kubelet/stats.rs`): the BFQ-debug blkio
//! tables (cAdvisor's `Sectors`, `IoMerged`, `IoServiceTime`, `IoQueued` of pod and container
//! cgroups, which exist only with `CONFIG_BFQ_CGROUP_DEBUG`) and devicemapper and ZFS pool
//! usage (cAdvisor asks `dmsetup`/`libzfs`). A system cgroup of `/` (a kubelet in the root
//! cgroup), which would make cAdvisor report every cgroup of the machine, is not walked.

use crate::cgroup::{CgroupSample, MAX_MEMORY_SIZE};
use crate::machine::MachineFacts;
use crate::prom::Families;
use crate::root_fs::FsStats;
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
    /// The machine collector's facts (read once).
    pub machine: MachineFacts,
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
    /// The root's filesystems (`DiskUsageMetrics` and the `/proc/diskstats` part of
    /// `DiskIOMetrics`); empty for every other cgroup, as cAdvisor's raw handler (no
    /// external mounts) and containerd handler report none.
    pub filesystems: Vec<FsStats>,
}

/// cAdvisor's `processStatsFromProcs` beyond the count: over the processes of the cgroup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessDetail {
    /// Open file descriptors.
    pub fds: u64,
    /// Of which sockets.
    pub sockets: u64,
    /// `Max open files` soft limit of the container's first process, of pid 1 for the root
    /// (`-1`: unlimited); `None` for the QoS and pod cgroups, as cAdvisor's raw handler has
    /// no process for them.
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
    pub const CPU_LOAD: Desc = d(
        "container_cpu_load_average_10s",
        "Value of container cpu load average over the last 10 seconds.",
        LABELS,
        Kind::Gauge,
    );
    pub const CPU_LOAD_D: Desc = d(
        "container_cpu_load_d_average_10s",
        "Value of container cpu load.d average over the last 10 seconds.",
        LABELS,
        Kind::Gauge,
    );
    pub const TASKS_STATE_LABELS: &[&str] = labels!("state");
    pub const TASKS_STATE: Desc = d(
        "container_tasks_state",
        "Number of tasks in given state",
        TASKS_STATE_LABELS,
        Kind::Gauge,
    );
    pub const MEM_KERNEL: Desc = d(
        "container_memory_kernel_usage",
        "Size of kernel memory allocated in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_MAPPED_FILE: Desc = d(
        "container_memory_mapped_file",
        "Size of memory mapped files in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_FAILCNT: Desc = d(
        "container_memory_failcnt",
        "Number of memory usage hits limits",
        LABELS,
        Kind::Counter,
    );
    pub const MEM_MAX_USAGE: Desc = d(
        "container_memory_max_usage_bytes",
        "Maximum memory usage recorded in bytes",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_ACTIVE_FILE: Desc = d(
        "container_memory_total_active_file_bytes",
        "Current total active file in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_INACTIVE_FILE: Desc = d(
        "container_memory_total_inactive_file_bytes",
        "Current total inactive file in bytes.",
        LABELS,
        Kind::Gauge,
    );
    pub const MEM_FAILURES_LABELS: &[&str] = labels!("failure_type", "scope");
    pub const MEM_FAILURES: Desc = d(
        "container_memory_failures_total",
        "Cumulative count of memory allocation failures.",
        MEM_FAILURES_LABELS,
        Kind::Counter,
    );
    pub const SPEC_CPU_PERIOD: Desc = d(
        "container_spec_cpu_period",
        "CPU period of the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const SPEC_CPU_QUOTA: Desc = d(
        "container_spec_cpu_quota",
        "CPU quota of the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const SPEC_CPU_SHARES: Desc = d(
        "container_spec_cpu_shares",
        "CPU share of the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const SPEC_MEM_RESERVATION: Desc = d(
        "container_spec_memory_reservation_limit_bytes",
        "Memory reservation limit for the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const SPEC_MEM_SWAP: Desc = d(
        "container_spec_memory_swap_limit_bytes",
        "Memory swap limit for the container.",
        LABELS,
        Kind::Gauge,
    );
    pub const FS_INODES_FREE: Desc = d(
        "container_fs_inodes_free",
        "Number of available Inodes",
        DEVICE_LABELS,
        Kind::Gauge,
    );
    pub const FS_INODES_TOTAL: Desc = d(
        "container_fs_inodes_total",
        "Number of Inodes",
        DEVICE_LABELS,
        Kind::Gauge,
    );
    pub const FS_LIMIT: Desc = d(
        "container_fs_limit_bytes",
        "Number of bytes that can be consumed by the container on this filesystem.",
        DEVICE_LABELS,
        Kind::Gauge,
    );
    pub const FS_USAGE: Desc = d(
        "container_fs_usage_bytes",
        "Number of bytes that are consumed by the container on this filesystem.",
        DEVICE_LABELS,
        Kind::Gauge,
    );
    pub const FS_SECTOR_READS: Desc = d(
        "container_fs_sector_reads_total",
        "Cumulative count of sector reads completed",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_READS_MERGED: Desc = d(
        "container_fs_reads_merged_total",
        "Cumulative count of reads merged",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_READ_SECONDS: Desc = d(
        "container_fs_read_seconds_total",
        "Cumulative count of seconds spent reading",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_SECTOR_WRITES: Desc = d(
        "container_fs_sector_writes_total",
        "Cumulative count of sector writes completed",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_WRITES_MERGED: Desc = d(
        "container_fs_writes_merged_total",
        "Cumulative count of writes merged",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_WRITE_SECONDS: Desc = d(
        "container_fs_write_seconds_total",
        "Cumulative count of seconds spent writing",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_IO_CURRENT: Desc = d(
        "container_fs_io_current",
        "Number of I/Os currently in progress",
        DEVICE_LABELS,
        Kind::Gauge,
    );
    pub const FS_IO_TIME: Desc = d(
        "container_fs_io_time_seconds_total",
        "Cumulative count of seconds spent doing I/Os",
        DEVICE_LABELS,
        Kind::Counter,
    );
    pub const FS_IO_TIME_WEIGHTED: Desc = d(
        "container_fs_io_time_weighted_seconds_total",
        "Cumulative weighted I/O time in seconds",
        DEVICE_LABELS,
        Kind::Counter,
    );
    /// The machine collector's labels (`baseLabels`).
    pub const MACHINE_LABELS: &[&str] = &["boot_id", "machine_id", "system_uuid"];
    pub const MACHINE_NVM_LABELS: &[&str] = &["boot_id", "machine_id", "mode", "system_uuid"];
    pub const MACHINE_MEMORY: Desc = d(
        "machine_memory_bytes",
        "Amount of memory installed on the machine.",
        MACHINE_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_CPU_CORES: Desc = d(
        "machine_cpu_cores",
        "Number of logical CPU cores.",
        MACHINE_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_CPU_PHYSICAL_CORES: Desc = d(
        "machine_cpu_physical_cores",
        "Number of physical CPU cores.",
        MACHINE_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_CPU_SOCKETS: Desc = d(
        "machine_cpu_sockets",
        "Number of CPU sockets.",
        MACHINE_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_SWAP: Desc = d(
        "machine_swap_bytes",
        "Amount of swap memory available on the machine.",
        MACHINE_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_NVM_CAPACITY: Desc = d(
        "machine_nvm_capacity",
        "NVM capacity value labeled by NVM mode (memory mode or app direct mode).",
        MACHINE_NVM_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_NVM_POWER: Desc = d(
        "machine_nvm_avg_power_budget_watts",
        "NVM power budget.",
        MACHINE_LABELS,
        Kind::Gauge,
    );
    pub const MACHINE_SCRAPE_ERROR: Desc = d(
        "machine_scrape_error",
        "1 if there was an error while getting machine metrics, 0 otherwise.",
        &[],
        Kind::Gauge,
    );
    pub const VERSION_INFO: Desc = d(
        "cadvisor_version_info",
        "A metric with a constant '1' value labeled by kernel version, OS version, docker version, cadvisor version & cadvisor revision.",
        &[
            "cadvisorRevision",
            "cadvisorVersion",
            "dockerVersion",
            "kernelVersion",
            "osVersion",
        ],
        Kind::Gauge,
    );
}

/// The exposition. cAdvisor's collectors are registered raw: no stability prefix in the
/// help text.
pub fn render(s: &Snapshot) -> String {
    let mut f = Families::default();
    let ts = Some(s.time.as_millis());
    machine(&mut f, s);
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
            // `specMemoryValue`: above `MaxMemorySize` is unlimited, 0.
            let spec_memory = |v: u64| if v > MAX_MEMORY_SIZE { 0.0 } else { v as f64 };
            if let Some(m) = &c.sample.memory {
                f.push(
                    &desc::MEM_LIMIT,
                    &l,
                    spec_memory(m.limit.unwrap_or(0)),
                    None,
                );
                if let Some(x) = &c.sample.cadvisor {
                    let spec = &x.spec;
                    f.push(&desc::SPEC_MEM_SWAP, &l, spec_memory(spec.swap_limit), None);
                    f.push(
                        &desc::SPEC_MEM_RESERVATION,
                        &l,
                        spec_memory(spec.memory_reservation),
                        None,
                    );
                }
            }
            if let Some(x) = &c.sample.cadvisor {
                let spec = &x.spec;
                f.push(&desc::SPEC_CPU_PERIOD, &l, spec.cpu_period as f64, None);
                if spec.cpu_quota != 0 {
                    f.push(&desc::SPEC_CPU_QUOTA, &l, spec.cpu_quota as f64, None);
                }
                f.push(&desc::SPEC_CPU_SHARES, &l, spec.cpu_shares as f64, None);
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
                if let Some(x) = &c.sample.cadvisor {
                    let xm = &x.memory;
                    for (d, v) in [
                        (&desc::MEM_KERNEL, xm.kernel_usage),
                        (&desc::MEM_MAPPED_FILE, xm.mapped_file),
                        (&desc::MEM_FAILCNT, xm.failcnt),
                        (&desc::MEM_MAX_USAGE, xm.max_usage),
                        (&desc::MEM_ACTIVE_FILE, xm.active_file),
                        (&desc::MEM_INACTIVE_FILE, xm.inactive_file),
                    ] {
                        f.push(d, &l, v as f64, ts);
                    }
                    for (kind, scope, v) in [
                        ("pgfault", "container", xm.pgfault),
                        ("pgmajfault", "container", xm.pgmajfault),
                        ("pgfault", "hierarchy", xm.pgfault),
                        ("pgmajfault", "hierarchy", xm.pgmajfault),
                    ] {
                        let mut ml = l.to_vec();
                        ml.extend([kind, scope]);
                        f.push(&desc::MEM_FAILURES, &ml, v as f64, ts);
                    }
                }
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
                filesystems(&mut f, &l, x, &c.filesystems, ts);
                // `CpuLoadMetrics`: cAdvisor's load reader is off in the kubelet
                // (`--enable_load_reader` defaults to false), so the load averages and the
                // task counts stay at their zero values.
                f.push(&desc::CPU_LOAD, &l, 0.0, ts);
                f.push(&desc::CPU_LOAD_D, &l, 0.0, ts);
                for state in [
                    "sleeping",
                    "running",
                    "stopped",
                    "uninterruptible",
                    "iowaiting",
                ] {
                    let mut tl = l.to_vec();
                    tl.push(state);
                    f.push(&desc::TASKS_STATE, &tl, 0.0, ts);
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

/// The machine collector (`PrometheusMachineCollector`) and `cadvisor_version_info`: no
/// timestamps, as upstream prints them.
fn machine(f: &mut Families, s: &Snapshot) {
    let m = &s.machine;
    let l = [
        m.boot_id.as_str(),
        m.machine_id.as_str(),
        m.system_uuid.as_str(),
    ];
    if let Some(mem) = s.machine_memory {
        f.push(&desc::MACHINE_MEMORY, &l, mem as f64, None);
    }
    for (d, v) in [
        (&desc::MACHINE_CPU_CORES, m.cores),
        (&desc::MACHINE_CPU_PHYSICAL_CORES, m.physical_cores),
        (&desc::MACHINE_CPU_SOCKETS, m.sockets),
        (&desc::MACHINE_SWAP, m.swap),
        // No NVM without libipmctl (module doc of `machine`).
        (&desc::MACHINE_NVM_POWER, 0),
    ] {
        f.push(d, &l, v as f64, None);
    }
    for mode in ["memory_mode", "app_direct_mode"] {
        let nl = [l[0], l[1], mode, l[2]];
        f.push(&desc::MACHINE_NVM_CAPACITY, &nl, 0.0, None);
    }
    f.push(&desc::MACHINE_SCRAPE_ERROR, &[], 0.0, None);
    f.push(
        &desc::VERSION_INFO,
        &["", "", "", &m.kernel_version, &m.os_version],
        1.0,
        None,
    );
}

/// The filesystem families of a cgroup: `DiskUsageMetrics` (`fsValues`) and the
/// filesystem half of `DiskIOMetrics` (`ioValues`: after a blkio series of the same device,
/// which the registry keeps as the first of the duplicates). The kernel's milliseconds of
/// `/proc/diskstats` are divided by 10⁹, as cAdvisor does (`float64(fs.ReadTime) /
/// float64(time.Second)`), so the `_seconds_` values are upstream's.
fn filesystems(
    f: &mut Families,
    l: &[&str],
    x: &crate::cgroup::CadvisorSample,
    filesystems: &[FsStats],
    ts: Option<i64>,
) {
    let ms = |v: u64| v as f64 / 1e9;
    for fs in filesystems {
        let mut dl = l.to_vec();
        dl.push(&fs.device);
        let d = &fs.disk;
        let in_blkio =
            |table: &[crate::cgroup::PerDiskStats]| table.iter().any(|t| t.device == fs.device);
        for (desc, v) in [
            (&desc::FS_INODES_FREE, fs.inodes_free as f64),
            (&desc::FS_INODES_TOTAL, fs.inodes as f64),
            (&desc::FS_LIMIT, fs.limit as f64),
            (&desc::FS_USAGE, fs.usage as f64),
            (&desc::FS_SECTOR_READS, d.sectors_read as f64),
            (&desc::FS_READS_MERGED, d.reads_merged as f64),
            (&desc::FS_READ_SECONDS, ms(d.read_time)),
            (&desc::FS_SECTOR_WRITES, d.sectors_written as f64),
            (&desc::FS_WRITES_MERGED, d.writes_merged as f64),
            (&desc::FS_WRITE_SECONDS, ms(d.write_time)),
            (&desc::FS_IO_CURRENT, d.io_in_progress as f64),
            (&desc::FS_IO_TIME, ms(d.io_time)),
            (&desc::FS_IO_TIME_WEIGHTED, ms(d.weighted_io_time)),
        ] {
            f.push(desc, &dl, v, ts);
        }
        if !in_blkio(&x.io_serviced) {
            f.push(&desc::FS_READS, &dl, d.reads_completed as f64, ts);
            f.push(&desc::FS_WRITES, &dl, d.writes_completed as f64, ts);
        }
    }
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
                        ..Default::default()
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
                filesystems: Vec::new(),
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
            r#"machine_memory_bytes{boot_id="",machine_id="",system_uuid=""} 8.589934592e+09"#
                .to_string(),
            "container_scrape_error 0".to_string(),
        ] {
            assert!(text.lines().any(|line| line == want), "{want}\n{text}");
        }
    }

    #[test]
    fn root_filesystems_memory_spec_load_and_machine_families() {
        use crate::cgroup::{CadvisorMemory, CadvisorSample, CgroupSpec, PerDiskStats};
        use crate::root_fs::DiskStats;
        let root = |io_serviced: Vec<PerDiskStats>| CgroupEntry {
            id: "/".into(),
            sample: CgroupSample {
                memory: Some(MemorySample {
                    usage: 100,
                    limit: Some(8 << 30),
                    ..Default::default()
                }),
                cadvisor: Some(CadvisorSample {
                    io_serviced,
                    memory: CadvisorMemory {
                        max_usage: 200,
                        failcnt: 3,
                        kernel_usage: 40,
                        mapped_file: 50,
                        active_file: 60,
                        inactive_file: 70,
                        pgfault: 80,
                        pgmajfault: 9,
                    },
                    spec: CgroupSpec {
                        cpu_period: 100_000,
                        cpu_quota: 0,
                        cpu_shares: 1024,
                        memory_reservation: u64::MAX >> 1,
                        swap_limit: 4096,
                    },
                    ..Default::default()
                }),
                ..Default::default()
            },
            filesystems: vec![crate::root_fs::FsStats {
                device: "/dev/vda".into(),
                limit: 1000,
                usage: 400,
                inodes: 30,
                inodes_free: 20,
                disk: DiskStats {
                    reads_completed: 11,
                    reads_merged: 36,
                    sectors_read: 427,
                    read_time: 27_625_174,
                    writes_completed: 27,
                    writes_merged: 28,
                    sectors_written: 118,
                    write_time: 10,
                    io_in_progress: 1,
                    io_time: 1_400_368,
                    weighted_io_time: 38_564_860,
                    ..Default::default()
                },
            }],
            ..Default::default()
        };
        let mut s = Snapshot {
            time: Time::from_nanos(1_764_547_200_000_000_000),
            machine_memory: Some(8 << 30),
            machine: MachineFacts {
                cores: 2,
                physical_cores: 2,
                sockets: 1,
                swap: 0,
                machine_id: "m1".into(),
                boot_id: "b1".into(),
                system_uuid: "m1".into(),
                kernel_version: "6.1.0".into(),
                os_version: "Debian GNU/Linux 12 (bookworm)".into(),
            },
            cgroups: vec![root(Vec::new())],
            ..Default::default()
        };
        let text = render(&s);
        let l = r#"container="",id="/",image="",name="",namespace="",pod="""#;
        let dl = r#"container="",device="/dev/vda",id="/",image="",name="",namespace="",pod="""#;
        let m = r#"boot_id="b1",machine_id="m1",system_uuid="m1""#;
        let t = " 1764547200000";
        for want in [
            format!("container_fs_inodes_free{{{dl}}} 20{t}"),
            format!("container_fs_inodes_total{{{dl}}} 30{t}"),
            format!("container_fs_limit_bytes{{{dl}}} 1000{t}"),
            format!("container_fs_usage_bytes{{{dl}}} 400{t}"),
            format!("container_fs_reads_total{{{dl}}} 11{t}"),
            format!("container_fs_writes_total{{{dl}}} 27{t}"),
            format!("container_fs_reads_merged_total{{{dl}}} 36{t}"),
            format!("container_fs_writes_merged_total{{{dl}}} 28{t}"),
            format!("container_fs_sector_reads_total{{{dl}}} 427{t}"),
            format!("container_fs_sector_writes_total{{{dl}}} 118{t}"),
            format!("container_fs_read_seconds_total{{{dl}}} 0.027625174{t}"),
            format!("container_fs_write_seconds_total{{{dl}}} 1e-08{t}"),
            format!("container_fs_io_current{{{dl}}} 1{t}"),
            format!("container_fs_io_time_seconds_total{{{dl}}} 0.001400368{t}"),
            format!("container_fs_io_time_weighted_seconds_total{{{dl}}} 0.03856486{t}"),
            "# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.".into(),
            "# TYPE container_fs_io_current gauge".into(),
            format!("container_memory_max_usage_bytes{{{l}}} 200{t}"),
            format!("container_memory_failcnt{{{l}}} 3{t}"),
            "# TYPE container_memory_failcnt counter".into(),
            format!("container_memory_kernel_usage{{{l}}} 40{t}"),
            format!("container_memory_mapped_file{{{l}}} 50{t}"),
            format!("container_memory_total_active_file_bytes{{{l}}} 60{t}"),
            format!("container_memory_total_inactive_file_bytes{{{l}}} 70{t}"),
            format!(
                r#"container_memory_failures_total{{container="",failure_type="pgfault",id="/",image="",name="",namespace="",pod="",scope="hierarchy"}} 80{t}"#
            ),
            format!(
                r#"container_memory_failures_total{{container="",failure_type="pgmajfault",id="/",image="",name="",namespace="",pod="",scope="container"}} 9{t}"#
            ),
            format!("container_spec_cpu_period{{{l}}} 100000"),
            format!("container_spec_cpu_shares{{{l}}} 1024"),
            format!("container_spec_memory_reservation_limit_bytes{{{l}}} 0"),
            format!("container_spec_memory_swap_limit_bytes{{{l}}} 4096"),
            format!("container_cpu_load_average_10s{{{l}}} 0{t}"),
            format!("container_cpu_load_d_average_10s{{{l}}} 0{t}"),
            format!(
                r#"container_tasks_state{{container="",id="/",image="",name="",namespace="",pod="",state="iowaiting"}} 0{t}"#
            ),
            format!("machine_cpu_cores{{{m}}} 2"),
            format!("machine_cpu_physical_cores{{{m}}} 2"),
            format!("machine_cpu_sockets{{{m}}} 1"),
            format!("machine_memory_bytes{{{m}}} 8.589934592e+09"),
            format!("machine_swap_bytes{{{m}}} 0"),
            format!("machine_nvm_avg_power_budget_watts{{{m}}} 0"),
            r#"machine_nvm_capacity{boot_id="b1",machine_id="m1",mode="app_direct_mode",system_uuid="m1"} 0"#.into(),
            "machine_scrape_error 0".into(),
            r#"cadvisor_version_info{cadvisorRevision="",cadvisorVersion="",dockerVersion="",kernelVersion="6.1.0",osVersion="Debian GNU/Linux 12 (bookworm)"} 1"#.into(),
            "# HELP cadvisor_version_info A metric with a constant '1' value labeled by kernel version, OS version, docker version, cadvisor version & cadvisor revision.".into(),
        ] {
            assert!(text.lines().any(|line| line == want), "{want}\n{text}");
        }
        assert!(
            !text.contains("container_spec_cpu_quota"),
            "no quota: no family"
        );
        assert_eq!(text.matches("container_tasks_state{").count(), 5);

        // A blkio series of the same device comes first; the filesystem's is dropped, as
        // the registry drops the duplicate.
        s.cgroups = vec![root(vec![PerDiskStats {
            major: 254,
            minor: 0,
            device: "/dev/vda".into(),
            stats: [("Read".to_string(), 5)].into(),
        }])];
        let text = render(&s);
        assert!(
            text.contains(&format!("container_fs_reads_total{{{dl}}} 5{t}\n")),
            "{text}"
        );
        assert_eq!(text.matches("container_fs_reads_total{").count(), 1);
        assert_eq!(text.matches("container_fs_writes_total{").count(), 1);
    }
}
