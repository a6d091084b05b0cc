//! The kubelet's resource usage reporting (upstream `pkg/kubelet/server/stats`,
//! `pkg/kubelet/stats`, `pkg/kubelet/metrics/collectors/resource_metrics.go` and the
//! cAdvisor Prometheus collector behind `/metrics/cadvisor`), with the summary API types of
//! `k8s.io/kubelet/pkg/apis/stats/v1alpha1` ([`types`]).
//!
//! Upstream runs cAdvisor, which samples every cgroup on a housekeeping timer all the time;
//! kubelet-rs reads what a request needs when it comes: the runtime over CRI, the cgroup
//! files (v1 and v2, [`cgroup`]), `statfs`/`du` ([`fs`]) and `/proc/<pid>/net/dev`
//! ([`network`]), every host access behind a trait with a fake. CPU rates (`usageNanoCores`)
//! come from the previous request's sample ([`cpu`]).
//!
//! * `/stats/summary` (`?only_cpu_and_memory=true`): [`SummaryProvider::get`] /
//!   [`SummaryProvider::get_cpu_and_memory_stats`];
//! * `/metrics/resource`: [`resource_metrics::render`];
//! * `/metrics/cadvisor`: [`cadvisor_metrics::render`].
//!
//! Pod volume usage is measured in the background ([`volume_stats`]), as upstream.
//!
//! Not reported: accelerators, user-defined metrics; in `/metrics/cadvisor`, the BFQ-debug
//! blkio figures and devicemapper/ZFS pools (see that module;
//! its machine facts: [`machine`], the root's filesystems: [`root_fs`]).

pub mod cadvisor_metrics;
pub mod cgroup;
pub mod cpu;
pub mod fs;
mod log_usage;
pub mod machine;
pub mod network;
pub mod prom;
pub mod provider;
pub mod resource_metrics;
pub mod root_fs;
pub mod scrape_fs;
pub mod types;
pub mod volume_stats;

pub use cgroup::CgroupReader;
pub use fs::{FakeFsInfo, FsInfo, RealFsInfo};
pub use provider::{Clock, ContainerInfo, ProviderConfig, ProviderSources, SummaryProvider};
pub use types::Summary;
pub use volume_stats::{FsResourceAnalyzer, PodVolume, PodVolumeSource, PodVolumes};

/// Why stats could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// A cgroup does not exist.
    #[error("cgroup {0:?} not found")]
    CgroupNotFound(String),
    /// A runtime call failed.
    #[error("{0}")]
    Runtime(String),
    /// A filesystem could not be read.
    #[error("{0}")]
    Fs(String),
    /// The summary could not be built (upstream's `failed to get ...: <cause>` messages).
    #[error("{0}")]
    Summary(String),
}

/// Boot time from `/proc/stat`'s `btime` (upstream `util.GetBootTime`).
pub fn boot_time(host: &dyn kubelet_cm::HostFs) -> Option<types::Time> {
    let s = host
        .read_to_string(std::path::Path::new("/proc/stat"))
        .ok()?;
    let secs: i64 = s
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    jiff::Timestamp::from_second(secs).ok().map(types::Time)
}
