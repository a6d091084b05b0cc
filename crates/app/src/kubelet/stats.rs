//! The kubelet's summary provider (`kubelet.go` `NewMainKubelet`: `NewCRIStatsProvider`,
//! `NewSummaryProvider`), built from the configuration: the pods cgroup
//! (`<cgroupRoot>/kubepods` in the driver's notation, with `cgroupsPerQOS`), `--root-dir`,
//! `podLogsDir`, `kubeletCgroups`/`--runtime-cgroups`/`systemCgroups`, over the CRI services
//! and the host's cgroup hierarchy.

use std::path::PathBuf;
use std::sync::Arc;

use kubelet_stats::{
    CgroupReader, ProviderConfig, ProviderSources, RealFsInfo, SummaryProvider, boot_time,
};

use super::KubeletDeps;

/// The provider `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor` read. What
/// upstream would report and kubelet-rs does not is said once, here, at start.
pub fn summary_provider(deps: &KubeletDeps<'_>, root_dir: PathBuf) -> Arc<SummaryProvider> {
    let s = deps.server;
    tracing::warn!(
        "/stats/summary reports no pod volume stats (upstream reports each volume's usage); /metrics/cadvisor serves the cpu, memory, process and spec families only"
    );
    let c = &s.config;
    let pods_cgroup = c
        .cgroups_per_qos
        .unwrap_or(true)
        .then(|| kubelet_cm::node_allocatable_root(&c.cgroup_root, true))
        .map(|root| root.for_driver(deps.runtime.cgroup_driver));
    let cfg = ProviderConfig {
        node_name: deps.node_name.clone(),
        root_dir,
        pod_logs_dir: PathBuf::from(&c.pod_logs_dir),
        pods_cgroup,
        kubelet_cgroup: c.kubelet_cgroups.clone(),
        runtime_cgroup: s.flags.runtime_cgroups.clone(),
        system_cgroup: c.system_cgroups.clone(),
        psi: s
            .feature_gates
            .enabled(kubelet_features::gates::KUBELET_PSI),
    };
    let host = deps.host_fs.clone();
    let sources = ProviderSources {
        runtime: deps.runtime.runtime.clone(),
        images: deps.runtime.image.clone(),
        cgroups: CgroupReader::new(host.clone(), deps.cgroup_version),
        boot_time: boot_time(host.as_ref()).unwrap_or_default(),
        host,
        fs: Arc::new(RealFsInfo),
        clock: Arc::new(jiff::Timestamp::now),
    };
    Arc::new(SummaryProvider::new(cfg, sources))
}
