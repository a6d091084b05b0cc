//! One-call construction of the runtime manager from KubeletConfiguration values (what
//! upstream `NewMainKubelet` does when it calls `NewKubeGenericRuntimeManager`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubelet_container::events::EventRecorder;
use kubelet_container::runtime::PodStateProvider;
use kubelet_container::{Clock, RuntimeError};
use kubelet_cri::{ImageService, RuntimeService};

use crate::cgroup::{CgroupDriver, PodCgroupNamer};
use crate::dns::DnsConfigurer;
use crate::env::{EnvObjects, NodeEnvInfo};
use crate::helper::KubeletRuntimeHelper;
use crate::image::PullConcurrency;
use crate::logs::{ContainerLogManager, LogRotatePolicy};
use crate::manager::{KubeGenericRuntimeManager, RuntimeManagerConfig, RuntimeManagerDeps};
use crate::os::OsInterface;
use crate::resources::{ResourceSettings, discover_hugepage_sizes};
use crate::volumes::{LocalVolumes, VolumeHost};
use kubelet_container::ProbeResults;

/// KubeletConfiguration fields (and node facts) the runtime manager depends on.
#[derive(Clone, Debug)]
pub struct RuntimeManagerSettings {
    /// `--root-dir`.
    pub root_dir: PathBuf,
    /// `podLogsDir`.
    pub pod_logs_dir: PathBuf,
    /// `cgroupDriver`.
    pub cgroup_driver: CgroupDriver,
    /// `cgroupRoot`.
    pub cgroup_root: String,
    /// `cgroupsPerQOS`.
    pub cgroups_per_qos: bool,
    /// The host runs cgroup v2 only.
    pub cgroup_v2: bool,
    /// `resolvConf`; `None` for `""`.
    pub resolv_conf: Option<PathBuf>,
    /// `clusterDNS`.
    pub cluster_dns: Vec<IpAddr>,
    /// `clusterDomain`.
    pub cluster_domain: String,
    /// `serializeImagePulls`.
    pub serialize_image_pulls: bool,
    /// `maxParallelImagePulls`.
    pub max_parallel_image_pulls: Option<i32>,
    /// Feature gate `KubeletEnsureSecretPulledImages`.
    pub ensure_secret_pulled_images: bool,
    /// Feature gate `EnvFiles`.
    pub env_files: bool,
    /// Feature gate `HostnameOverride`.
    pub hostname_override: bool,
    /// `containerLogMaxSize` in bytes.
    pub container_log_max_size: i64,
    /// `containerLogMaxFiles`.
    pub container_log_max_files: i32,
    /// `cpuCFSQuota`.
    pub cpu_cfs_quota: bool,
    /// `cpuCFSQuotaPeriod`.
    pub cpu_cfs_quota_period: Duration,
    /// `seccompDefault`.
    pub seccomp_default: bool,
    /// `singleProcessOOMKill`.
    pub single_process_oom_kill: bool,
    /// Node memory capacity in bytes.
    pub memory_capacity: i64,
    /// Swap per container.
    pub swap: crate::swap::SwapSettings,
    /// MemoryQoS (gate on, cgroup v2).
    pub memory_qos: bool,
    /// `memoryThrottlingFactor`.
    pub memory_throttling_factor: f64,
    /// Node IPs (`status.hostIPs`); the first decides the localhost DNS family.
    pub node_ips: Vec<IpAddr>,
    /// Allocatable CPU (millicores) and memory/ephemeral storage (bytes), for downward API limits.
    pub allocatable_milli_cpu: i64,
    /// See `allocatable_milli_cpu`.
    pub allocatable_memory: i64,
    /// See `allocatable_milli_cpu`.
    pub allocatable_ephemeral_storage: i64,
}

/// Everything that is not a setting.
pub struct RuntimeManagerParts {
    /// CRI runtime service (`RemoteRuntimeService`, with `runtimeRequestTimeout` applied).
    pub runtime: Arc<dyn RuntimeService>,
    /// CRI image service.
    pub image: Arc<dyn ImageService>,
    /// Filesystem (`RealOs` in production).
    pub os: Arc<dyn OsInterface>,
    /// Probe results.
    pub probes: Arc<dyn ProbeResults>,
    /// Pod lifecycle state (pod workers).
    pub pod_state: Arc<dyn PodStateProvider>,
    /// ConfigMaps/Secrets (`NoEnvObjects` in standalone mode).
    pub env_objects: Arc<dyn EnvObjects>,
    /// Where pod volumes live (`None`: `LocalVolumes`, hostPath and emptyDir only).
    pub volumes: Option<Arc<dyn VolumeHost>>,
    /// Clock.
    pub clock: Arc<dyn Clock>,
    /// The kubelet's event recorder.
    pub recorder: Arc<dyn EventRecorder>,
}

/// Builds the helper, log manager and runtime manager, and does the CRI version handshake.
pub async fn new_runtime_manager(
    s: &RuntimeManagerSettings,
    parts: RuntimeManagerParts,
) -> Result<KubeGenericRuntimeManager, RuntimeError> {
    let os = parts.os;
    let helper = KubeletRuntimeHelper {
        os: os.clone(),
        root_dir: s.root_dir.clone(),
        dns: DnsConfigurer::new(
            os.clone(),
            s.node_ips.first().copied(),
            s.cluster_dns.clone(),
            s.cluster_domain.clone(),
            s.resolv_conf.clone(),
        ),
        cgroups: PodCgroupNamer::new(s.cgroup_driver, &s.cgroup_root, s.cgroups_per_qos),
        node: NodeEnvInfo {
            host_ips: s.node_ips.iter().map(ToString::to_string).collect(),
            allocatable_milli_cpu: s.allocatable_milli_cpu,
            allocatable_memory: s.allocatable_memory,
            allocatable_ephemeral_storage: s.allocatable_ephemeral_storage,
        },
        env_objects: parts.env_objects,
        volumes: parts.volumes.unwrap_or_else(|| {
            Arc::new(
                LocalVolumes::new(os.clone(), s.root_dir.clone())
                    .with_node_allocatable_memory(s.allocatable_memory),
            )
        }),
        node_hosts_file: PathBuf::from("/etc/hosts"),
        env_files: s.env_files,
        hostname_override: s.hostname_override,
    };
    let policy = LogRotatePolicy::new(s.container_log_max_size, s.container_log_max_files)
        .map_err(|e| RuntimeError::Invalid(e.to_string()))?;
    let logs = ContainerLogManager::new(
        parts.runtime.clone(),
        os.clone(),
        parts.clock.clone(),
        policy,
    );
    let config = RuntimeManagerConfig {
        root_dir: s.root_dir.clone(),
        pod_logs_dir: s.pod_logs_dir.clone(),
        legacy_container_logs_dir: PathBuf::from("/var/log/containers"),
        resources: ResourceSettings {
            cpu_cfs_quota: s.cpu_cfs_quota,
            cpu_cfs_quota_period_us: i64::try_from(s.cpu_cfs_quota_period.as_micros())
                .unwrap_or(100_000),
            memory_capacity: s.memory_capacity,
            cgroup_v2: s.cgroup_v2,
            single_process_oom_kill: s.single_process_oom_kill,
            hugepage_sizes: discover_hugepage_sizes(std::path::Path::new(
                "/sys/kernel/mm/hugepages",
            )),
            swap: s.swap.clone(),
            memory_qos: s.memory_qos,
            memory_throttling_factor: s.memory_throttling_factor,
            allocatable_memory: s.allocatable_memory,
        },
        seccomp_default: s.seccomp_default,
        pull_concurrency: PullConcurrency::from_config(
            s.serialize_image_pulls,
            s.max_parallel_image_pulls,
        ),
        ensure_secret_pulled_images: s.ensure_secret_pulled_images,
    };
    let deps = RuntimeManagerDeps {
        runtime: parts.runtime,
        image: parts.image,
        helper: Arc::new(helper),
        os,
        probes: parts.probes,
        pod_state: parts.pod_state,
        clock: parts.clock,
        recorder: parts.recorder,
    };
    KubeGenericRuntimeManager::new(deps, config, logs).await
}
