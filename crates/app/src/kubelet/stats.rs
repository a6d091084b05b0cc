//! The kubelet's summary provider (`kubelet.go` `NewMainKubelet`: `NewCRIStatsProvider`,
//! `NewSummaryProvider`), built from the configuration: the pods cgroup
//! (`<cgroupRoot>/kubepods` in the driver's notation, with `cgroupsPerQOS`), `--root-dir`,
//! `podLogsDir`, `kubeletCgroups`/`--runtime-cgroups`/`systemCgroups`, over the CRI services
//! and the host's cgroup hierarchy; and the pod volume measures (`fsResourceAnalyzer`,
//! every `volumeStatsAggPeriod`) over the pod manager's pods and the volume layout
//! (`<root-dir>/pods/<uid>/volumes/<plugin>/<name>`, `crates/volume`, `crates/runtime`).

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Volume;
use kubelet_stats::{
    CgroupReader, FsResourceAnalyzer, PodVolume, PodVolumeSource, PodVolumes, ProviderConfig,
    ProviderSources, RealFsInfo, SummaryProvider, boot_time,
};

use super::{Kubelet, KubeletDeps};

/// The pods' volumes with metrics, as the volume plugins give them (`ListVolumesForPod`):
/// `emptyDir` (`MetricsDu`), `configMap`/`secret`/`downwardAPI`/`projected`
/// (`NewCachedMetrics(MetricsDu)`); `hostPath` has none (`MetricsNil`).
struct KubeletPodVolumes {
    kubelet: Arc<Kubelet>,
}

impl KubeletPodVolumes {
    /// The volume's plugin directory, whether it is local ephemeral
    /// (`IsLocalEphemeralVolume`) and whether its metrics are cached.
    fn plugin_of(v: &Volume) -> Option<(&'static str, bool, bool)> {
        if let Some(ed) = &v.empty_dir {
            let on_disk = ed.medium.as_deref().unwrap_or_default().is_empty();
            return Some((
                kubelet_runtime::pod_dirs::EMPTY_DIR_PLUGIN_DIR,
                on_disk,
                false,
            ));
        }
        let plugin = kubelet_volume::plugins::Plugin::of(v)?;
        Some((plugin.dir_name(), v.config_map.is_some(), true))
    }
}

impl PodVolumeSource for KubeletPodVolumes {
    fn pods(&self) -> Vec<PodVolumes> {
        let root = &self.kubelet.root_dir;
        self.kubelet
            .pod_manager
            .pods()
            .iter()
            .map(|pod| {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let volumes = pod
                    .spec
                    .iter()
                    .flat_map(|s| s.volumes.iter().flatten())
                    .filter_map(|v| {
                        let (dir, ephemeral, cached) = Self::plugin_of(v)?;
                        Some(PodVolume {
                            name: v.name.clone(),
                            path: root
                                .join("pods")
                                .join(&uid)
                                .join("volumes")
                                .join(dir)
                                .join(&v.name),
                            ephemeral,
                            cached,
                        })
                    })
                    .collect();
                PodVolumes { uid, volumes }
            })
            .collect()
    }
}

/// The provider `/stats/summary`, `/metrics/resource` and `/metrics/cadvisor` read. What
/// upstream would report and kubelet-rs does not is said once, here, at start.
pub fn summary_provider(deps: &KubeletDeps<'_>, kubelet: &Arc<Kubelet>) -> Arc<SummaryProvider> {
    let root_dir = kubelet.root_dir.clone();
    let s = deps.server;
    tracing::warn!(
        "/metrics/cadvisor reads no BFQ-debug blkio tables (the sector, merge, service-time and queue figures of pod and container cgroups, which upstream's cAdvisor reports on kernels with CONFIG_BFQ_CGROUP_DEBUG) and no devicemapper/ZFS pool usage"
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
    let clock: kubelet_stats::Clock = Arc::new(jiff::Timestamp::now);
    let volumes = Arc::new(FsResourceAnalyzer::new(
        Arc::new(KubeletPodVolumes {
            kubelet: kubelet.clone(),
        }),
        Arc::new(RealFsInfo),
        c.volume_stats_agg_period.as_std().unwrap_or_default(),
        clock.clone(),
    ));
    volumes.start(deps.shutdown.clone());
    let sources = ProviderSources {
        runtime: deps.runtime.runtime.clone(),
        images: deps.runtime.image.clone(),
        cgroups: CgroupReader::new(host.clone(), deps.cgroup_version),
        boot_time: boot_time(host.as_ref()).unwrap_or_default(),
        host,
        fs: Arc::new(RealFsInfo),
        clock,
        volumes: Some(volumes),
    };
    Arc::new(SummaryProvider::new(cfg, sources))
}
