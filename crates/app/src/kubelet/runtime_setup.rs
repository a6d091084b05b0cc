//! Builds the kuberuntime manager from the configuration (the runtime half of
//! `NewMainKubelet`: `kuberuntime.NewKubeGenericRuntimeManager` and its helpers).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kubelet_config::KubeletServer;
use kubelet_container::{ContainerGcPolicy, PodStateProvider, RealClock, Runtime};
use kubelet_runtime::actions::NoProbes;
use kubelet_runtime::cgroup::{CgroupDriver as RuntimeCgroupDriver, PodCgroupNamer};
use kubelet_runtime::dns::DnsConfigurer;
use kubelet_runtime::env::{NoEnvObjects, NodeEnvInfo};
use kubelet_runtime::helper::KubeletRuntimeHelper;
use kubelet_runtime::image::PullConcurrency;
use kubelet_runtime::logs::{ContainerLogManager, LogRotatePolicy};
use kubelet_runtime::manager::{
    KubeGenericRuntimeManager, RuntimeManagerConfig, RuntimeManagerDeps,
};
use kubelet_runtime::os::RealOs;
use kubelet_runtime::resources::ResourceSettings;
use kubelet_runtime::volumes::LocalVolumes;

use super::KubeletDeps;
use crate::startup::RunError;

/// Container GC policy from the (deprecated) flags, with upstream's defaults.
pub fn gc_policy(server: &KubeletServer) -> ContainerGcPolicy {
    ContainerGcPolicy {
        min_age: server
            .flags
            .minimum_gc_age
            .as_std()
            .unwrap_or(Duration::ZERO),
        max_per_pod_container: server.flags.max_per_pod_container_count,
        max_containers: server.flags.max_container_count,
    }
}

fn pull_concurrency(server: &KubeletServer) -> PullConcurrency {
    let c = &server.config;
    if c.serialize_image_pulls.unwrap_or(true) {
        return PullConcurrency::Serial;
    }
    match c.max_parallel_image_pulls {
        Some(n) if n > 0 => PullConcurrency::Limited(usize::try_from(n).unwrap_or(1)),
        _ => PullConcurrency::Unlimited,
    }
}

fn err(what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::Kubelet(format!("{what}: {e}"))
}

/// The CRI-backed runtime the pod workers drive.
pub async fn build_runtime(
    deps: &KubeletDeps<'_>,
    pod_state: Arc<dyn PodStateProvider>,
) -> Result<Arc<dyn Runtime>, RunError> {
    let s = deps.server;
    let c = &s.config;
    let os = Arc::new(RealOs);
    let root_dir = PathBuf::from(&s.flags.root_directory);
    let cluster_dns: Vec<IpAddr> = c
        .cluster_dns
        .iter()
        .filter_map(|ip| ip.parse().ok())
        .collect();
    let resolv = c
        .resolver_config
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let node_ip: Option<IpAddr> = s
        .flags
        .node_ip
        .split(',')
        .next()
        .and_then(|ip| ip.parse().ok());
    let driver = match deps.runtime.cgroup_driver {
        kubelet_cm::CgroupDriver::Systemd => RuntimeCgroupDriver::Systemd,
        kubelet_cm::CgroupDriver::Cgroupfs => RuntimeCgroupDriver::Cgroupfs,
    };
    let (cpu, memory) = deps.node_config.pods_cgroup_limits(&deps.machine);
    let helper = KubeletRuntimeHelper {
        os: os.clone(),
        root_dir: root_dir.clone(),
        dns: DnsConfigurer::new(
            os.clone(),
            node_ip,
            cluster_dns,
            c.cluster_domain.clone(),
            resolv,
        ),
        cgroups: PodCgroupNamer::new(driver, &c.cgroup_root, c.cgroups_per_qos.unwrap_or(true)),
        node: NodeEnvInfo {
            host_ips: node_ip.map(|ip| ip.to_string()).into_iter().collect(),
            allocatable_milli_cpu: cpu,
            allocatable_memory: memory,
            allocatable_ephemeral_storage: 0,
        },
        env_objects: Arc::new(NoEnvObjects),
        volumes: Arc::new(LocalVolumes::new(os.clone(), root_dir.clone())),
        node_hosts_file: PathBuf::from("/etc/hosts"),
    };
    let clock = Arc::new(RealClock);
    let cri: Arc<dyn kubelet_cri::RuntimeService> = deps.runtime.runtime.clone();
    let policy = LogRotatePolicy::new(
        kubelet_apimachinery::Quantity::parse(&c.container_log_max_size)
            .map_err(|e| err("containerLogMaxSize", e))?
            .value(),
        c.container_log_max_files.unwrap_or(5),
    )
    .map_err(|e| err("container log rotation", e))?;
    let logs = ContainerLogManager::new(cri.clone(), os.clone(), clock.clone(), policy);
    let manager = KubeGenericRuntimeManager::new(
        RuntimeManagerDeps {
            runtime: cri,
            image: deps.runtime.image.clone(),
            helper: Arc::new(helper),
            os,
            probes: Arc::new(NoProbes),
            pod_state,
            clock,
        },
        RuntimeManagerConfig {
            root_dir,
            pod_logs_dir: PathBuf::from(&c.pod_logs_dir),
            legacy_container_logs_dir: PathBuf::from("/var/log/containers"),
            resources: ResourceSettings {
                cpu_cfs_quota: c.cpu_cfs_quota.unwrap_or(true),
                memory_capacity: i64::try_from(deps.machine.memory_capacity).unwrap_or(i64::MAX),
                ..ResourceSettings::default()
            },
            seccomp_default: s.flags.seccomp_default || c.seccomp_default.unwrap_or(false),
            pull_concurrency: pull_concurrency(s),
        },
        logs,
    )
    .await
    .map_err(|e| err("failed to initialize the container runtime manager", e))?;
    Ok(Arc::new(manager))
}
